//! An HTTP client for one repository of a registry (OCI distribution API): TLS,
//! authentication challenges, retries with backoff, and blob streams that resume.

use std::cell::RefCell;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use reqwest::blocking::{RequestBuilder, Response};
use reqwest::header::{
    HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_RANGE, CONTENT_TYPE, RANGE, WWW_AUTHENTICATE,
};
use reqwest::StatusCode;

use super::auth::Credentials;
use super::progress::{Progress, ProgressMode};
use super::verify::{Spool, VerifyingReader};
use super::RegistryOptions;
use crate::image::{Digest, MAX_METADATA_BYTES};
use crate::io::{read_at_most, LowSpeedReader, SpeedWindow};
use crate::registry::cache::Cache;

/// Manifest media types we ask for. Schema1 is accepted on the wire only so that it can
/// be refused with a clear message.
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.docker.distribution.manifest.v2+json, \
    application/vnd.docker.distribution.manifest.v1+prettyjws;q=0.1, \
    application/vnd.docker.distribution.manifest.v1+json;q=0.1";

/// The longest `Retry-After` honoured: a registry that asks for more makes the run fail
/// at once, with a message that says what it asked, rather than stall it.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Retry and timeout policy.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Attempts per request (connection errors, 429 and 5xx are retried).
    pub attempts: u32,
    /// Resumptions of one blob download after it was cut.
    pub resumes: u32,
    /// First backoff delay; it doubles on each retry.
    pub backoff: Duration,
    /// Longest backoff delay.
    pub max_backoff: Duration,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest wait for response headers or for the next chunk of a body.
    pub read_timeout: Duration,
    /// A blob download slower than this (bytes per second) over `low_speed_time` is cut
    /// and resumed like a dropped connection; 0 turns the check off.
    pub low_speed_limit: u64,
    /// How long a download may stay under `low_speed_limit`.
    pub low_speed_time: Duration,
    /// For tests only: every backoff wait is this long instead (a `Retry-After` a
    /// registry asks for is still honoured as asked). Set from the hidden environment
    /// variable `MCD_INJECT_TEST_BACKOFF_MS` (milliseconds), so that tests of faults retry for real without
    /// waiting through the real backoff; `None` otherwise.
    pub test_backoff: Option<Duration>,
}

/// The hidden environment variable, in milliseconds, of
/// [`RetryPolicy::test_backoff`]: for the tests of this tool, not a user setting.
const TEST_BACKOFF_VAR: &str = "MCD_INJECT_TEST_BACKOFF_MS";

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            resumes: 5,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(30),
            low_speed_limit: 1024,
            low_speed_time: Duration::from_secs(30),
            test_backoff: std::env::var(TEST_BACKOFF_VAR)
                .ok()
                .and_then(|ms| ms.trim().parse().ok())
                .map(Duration::from_millis),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, retry: u32) -> Duration {
        if let Some(fixed) = self.test_backoff {
            return fixed;
        }
        self.backoff
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max_backoff)
    }
}

/// The tries left of one request (or the resumptions of one download) and the wait
/// before the next.
struct Backoff<'p> {
    policy: &'p RetryPolicy,
    /// Retries allowed after the first try.
    allowed: u32,
    done: u32,
}

impl<'p> Backoff<'p> {
    fn new(policy: &'p RetryPolicy, allowed: u32) -> Self {
        Backoff {
            policy,
            allowed,
            done: 0,
        }
    }

    /// The wait before the next try (`asked` by the registry, else the policy's), or
    /// `None` when the retries are used up.
    fn next(&mut self, asked: Option<Duration>) -> Option<Duration> {
        if self.done >= self.allowed {
            return None;
        }
        let delay = asked.unwrap_or_else(|| self.policy.delay(self.done));
        self.done += 1;
        Some(delay)
    }
}

/// An error code of a registry's error body (`{"errors":[{"code":...}]}`), as the OCI
/// distribution spec names them: the ones this client decides on, and the others as
/// they are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// `MANIFEST_UNKNOWN`: no such tag or digest.
    ManifestUnknown,
    /// `NAME_UNKNOWN`: no such repository.
    NameUnknown,
    /// Any other code.
    Other(String),
}

impl ErrorCode {
    pub fn parse(code: &str) -> ErrorCode {
        match code {
            "MANIFEST_UNKNOWN" => ErrorCode::ManifestUnknown,
            "NAME_UNKNOWN" => ErrorCode::NameUnknown,
            other => ErrorCode::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::ManifestUnknown => "MANIFEST_UNKNOWN",
            ErrorCode::NameUnknown => "NAME_UNKNOWN",
            ErrorCode::Other(code) => code,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one try of a request to a registry (or its token issuer) failed; whether it is
/// tried again is [`RegistryError::is_retryable`]. The messages the user sees are
/// made from these by the request that failed, which knows the registry and object.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No response: the connection failed or was reset, or no answer in time.
    #[error("{message}")]
    Transport { message: String, timeout: bool },
    /// TLS failed: a certificate does not get better by retrying.
    #[error("TLS failed: {0}")]
    Tls(String),
    /// Timeouts, as many as this client allows: the registry does not answer at all.
    #[error("no answer within {:.0} s, {SILENT_ATTEMPTS} times; gave up", .0.as_secs_f64())]
    Silent(Duration),
    /// A response body cut short or stalled.
    #[error("{0}")]
    Body(String),
    /// 429, waiting what the registry asked in `Retry-After`, if it said.
    #[error("{why}")]
    TooManyRequests { wait: Option<Duration>, why: String },
    /// 429 with a `Retry-After` longer than this tool waits.
    #[error("{0}")]
    RetryAfterTooLong(String),
    /// A 5xx.
    #[error("server error ({0})")]
    Server(StatusCode),
    /// The token issuer answered 429 or 5xx.
    #[error("token issuer answered {0}")]
    Issuer(StatusCode),
    /// Another status that is not success, with the error code of the body when read.
    #[error("unexpected status {status}")]
    Status {
        status: StatusCode,
        code: Option<ErrorCode>,
    },
    /// The last retryable error, when the tries are used up.
    #[error("{last}; gave up after {attempts} attempts")]
    GaveUp {
        last: Box<RegistryError>,
        attempts: u32,
    },
    /// A failure already explained, returned as it is.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl RegistryError {
    /// Whether another try may succeed: a transport failure, a cut body, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            RegistryError::Transport { .. }
            | RegistryError::Body(_)
            | RegistryError::TooManyRequests { .. }
            | RegistryError::Server(_) => true,
            RegistryError::Issuer(status) => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            RegistryError::Tls(_)
            | RegistryError::Silent(_)
            | RegistryError::RetryAfterTooLong(_)
            | RegistryError::Status { .. }
            | RegistryError::GaveUp { .. }
            | RegistryError::Other(_) => false,
        }
    }

    /// The wait the registry asked for before the next try.
    fn asked_wait(&self) -> Option<Duration> {
        match self {
            RegistryError::TooManyRequests { wait, .. } => *wait,
            _ => None,
        }
    }

    /// A request error without a response, its URL left out (it may hold a token).
    fn transport(e: reqwest::Error) -> RegistryError {
        let timeout = e.is_timeout();
        RegistryError::Transport {
            message: format!("{:#}", anyhow::Error::new(e.without_url())),
            timeout,
        }
    }
}

/// A client bound to `registry/repository`.
pub struct Client {
    http: reqwest::blocking::Client,
    base: String,
    registry: String,
    repository: String,
    credentials: Option<Credentials>,
    authorization: RefCell<Option<String>>,
    retry: RetryPolicy,
    progress: ProgressMode,
}

/// A parsed `WWW-Authenticate` challenge: scheme and parameter names in lower case,
/// values unescaped.
#[derive(Debug, PartialEq, Eq)]
struct Challenge {
    scheme: String,
    params: Vec<(String, String)>,
}

impl Challenge {
    /// Every challenge of a `WWW-Authenticate` header (RFC 9110: several per header,
    /// quoted strings with escapes), parsed by `http-auth`.
    fn parse_all(header: &str) -> Result<Vec<Challenge>, String> {
        let parsed = http_auth::parse_challenges(header).map_err(|e| e.to_string())?;
        Ok(parsed
            .into_iter()
            .map(|c| Challenge {
                scheme: c.scheme.to_ascii_lowercase(),
                params: c
                    .params
                    .into_iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v.to_unescaped()))
                    .collect(),
            })
            .collect())
    }

    /// The challenge to answer among all those of the response's `WWW-Authenticate`
    /// headers: Bearer before Basic; else the first, whose scheme is then reported as
    /// unsupported.
    fn choose<'h>(headers: impl IntoIterator<Item = &'h str>) -> Result<Challenge, String> {
        let mut all = Vec::new();
        for header in headers {
            all.extend(Self::parse_all(header)?);
        }
        let rank = |c: &Challenge| match c.scheme.as_str() {
            "bearer" => 0,
            "basic" => 1,
            _ => 2,
        };
        all.into_iter()
            .enumerate()
            .min_by_key(|(i, c)| (rank(c), *i))
            .map(|(_, c)| c)
            .ok_or_else(|| "no challenge".to_string())
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The parameters of a challenge, in order.
#[doc(hidden)]
pub type ChallengeParams = Vec<(String, String)>;

/// Parses a `WWW-Authenticate` header into its challenges, each a scheme (lower case)
/// and parameters (keys lower case, values unescaped): the entry point of the fuzz
/// target for challenges.
#[doc(hidden)]
pub fn parse_challenge(header: &str) -> Result<Vec<(String, ChallengeParams)>, String> {
    Challenge::parse_all(header).map(|all| all.into_iter().map(|c| (c.scheme, c.params)).collect())
}

/// CA certificates from a directory: every `*.crt` file, as skopeo's `--cert-dir`.
/// Where the containers tools keep per-registry CAs (containers-certs.d(5)).
const CERTS_D: [&str; 2] = ["/etc/containers/certs.d", "/etc/docker/certs.d"];

/// The directories of extra CAs for `registry`: `--cert-dir`, else the registry's own
/// directory under the system certs.d trees, as skopeo does.
fn cert_dirs(cert_dir: Option<&Path>, registry: &str) -> Vec<PathBuf> {
    match cert_dir {
        Some(d) => vec![d.to_path_buf()],
        None => CERTS_D
            .iter()
            .map(|base| Path::new(base).join(registry))
            .filter(|d| d.is_dir())
            .collect(),
    }
}

fn load_cas(dir: &Path) -> Result<Vec<reqwest::Certificate>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut certs = Vec::new();
    let entries =
        fs::read_dir(dir).with_context(|| format!("reading CA directory {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "crt") {
            let pem = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            // Each certificate is checked here, so that a bad one is named by its file
            // (the HTTP client's own error would not say which); nothing of the file is
            // quoted.
            for c in CertificateDer::pem_slice_iter(&pem) {
                let bad = || anyhow!("{} holds no valid PEM certificate", path.display());
                let c = c.map_err(|_| bad())?;
                rustls::RootCertStore::empty().add(c).map_err(|_| bad())?;
            }
            let found = reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("{} holds no valid PEM certificate", path.display()))?;
            certs.extend(found);
        }
    }
    Ok(certs)
}

/// The TLS error behind a request error, looking through the io::Errors that wrap it.
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = match e.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
        Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
        None => e.source(),
    };
    inner.and_then(rustls_error)
}

/// Attempts that end without any answer (a timeout) before a request is given up.
const SILENT_ATTEMPTS: u32 = 2;

/// How long to wait after a 429, from its `Retry-After` (seconds): the wait and the
/// reason to print, or an error when the registry asks for more than
/// [`MAX_RETRY_AFTER`].
fn retry_after(asked: Option<&str>) -> std::result::Result<(Option<Duration>, String), String> {
    let Some(asked) = asked else {
        return Ok((None, "too many requests (429)".to_string()));
    };
    match asked.parse::<u64>() {
        Ok(secs) if Duration::from_secs(secs) > MAX_RETRY_AFTER => Err(format!(
            "too many requests (429): the registry asked to wait {secs} s before retrying \
             (Retry-After: {secs}), more than the {} s this tool waits; try again later",
            MAX_RETRY_AFTER.as_secs()
        )),
        Ok(secs) => Ok((
            Some(Duration::from_secs(secs)),
            format!("too many requests (429), the registry asked to wait {secs} s (Retry-After)"),
        )),
        Err(_) => Ok((
            None,
            format!("too many requests (429), Retry-After {asked:?} not understood"),
        )),
    }
}

/// Reads a response body whole, up to `limit` bytes.
fn read_limited(resp: impl Read, limit: u64, what: &str) -> Result<Vec<u8>> {
    read_at_most(resp, limit)?.ok_or_else(|| anyhow!("{what}: more than {limit} bytes, refused"))
}

/// The first error code of a registry error body (`{"errors":[{"code":...}]}`).
fn error_code(resp: Response) -> Option<ErrorCode> {
    let bytes = read_limited(resp, 64 * 1024, "error").ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["errors"][0]["code"].as_str().map(ErrorCode::parse)
}

impl Client {
    /// A client for `registry/repository` with the options' TLS and credential settings.
    pub fn new(
        registry: &str,
        repository: &str,
        opts: &RegistryOptions,
        credentials: Option<Credentials>,
    ) -> Result<Self> {
        crate::io::install_tls_provider();
        let retry = opts.retry.clone();
        let mut builder = reqwest::blocking::Client::builder()
            .user_agent(concat!("mcd-inject/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(retry.connect_timeout)
            .timeout(retry.read_timeout);
        for dir in cert_dirs(opts.cert_dir.as_deref(), registry) {
            for cert in load_cas(&dir)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        if !opts.tls_verify {
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        let http = builder.build().context("setting up the HTTP client")?;
        let mut client = Client {
            http,
            base: format!("https://{registry}"),
            registry: registry.to_string(),
            repository: repository.to_string(),
            credentials,
            authorization: RefCell::new(None),
            retry,
            progress: opts.progress,
        };
        if !opts.tls_verify && !client.speaks_tls() {
            // --tls-verify=false allows plain http, as skopeo does.
            client.base = format!("http://{registry}");
        }
        Ok(client)
    }

    /// Whether the registry answers over TLS at all (one probe, no retries).
    fn speaks_tls(&self) -> bool {
        self.http.get(format!("{}/v2/", self.base)).send().is_ok()
    }

    fn describe(&self) -> String {
        format!("registry {}, repository {}", self.registry, self.repository)
    }

    /// Sends a request with authentication and retries; returns a success response.
    /// `what` names the object for messages (`tag "v1"`, `blob sha256:...`).
    fn send(&self, what: &str, build: &dyn Fn() -> RequestBuilder) -> Result<Response> {
        self.try_send(what, build)
            .map_err(|e| self.explain(e, what))
    }

    /// [`Client::send`], its failure not yet explained.
    fn try_send(
        &self,
        what: &str,
        build: &dyn Fn() -> RequestBuilder,
    ) -> std::result::Result<Response, RegistryError> {
        let mut timeouts = 0;
        let mut authenticated = false;
        let result = self.retrying(what, || loop {
            let mut req = build();
            if let Some(a) = self.authorization.borrow().as_deref() {
                req = req.header(AUTHORIZATION, a);
            }
            // Logged by endpoint and object only: headers carry credentials.
            let started = std::time::Instant::now();
            log::debug!("{}/v2/{}: requesting {what}", self.base, self.repository);
            let resp = match req.send() {
                Ok(r) => r,
                Err(e) => {
                    if let Some(tls) = rustls_error(&e) {
                        return Err(RegistryError::Tls(tls.to_string()));
                    }
                    let e = RegistryError::transport(e);
                    if let RegistryError::Transport { timeout: true, .. } = e {
                        // A registry that does not answer at all is given one more
                        // chance, not the full set of attempts.
                        timeouts += 1;
                        if timeouts >= SILENT_ATTEMPTS {
                            return Err(RegistryError::Silent(self.retry.read_timeout));
                        }
                    }
                    return Err(e);
                }
            };
            let status = resp.status();
            log::info!(
                "{}/v2/{}: {what}: {status} in {:.3} s",
                self.base,
                self.repository,
                started.elapsed().as_secs_f64()
            );
            if status.is_success() {
                return Ok(resp);
            }
            return Err(match status {
                StatusCode::UNAUTHORIZED if !authenticated => {
                    authenticated = true;
                    self.authenticate(resp.headers())?;
                    continue;
                }
                StatusCode::NOT_FOUND => RegistryError::Status {
                    status,
                    code: error_code(resp),
                },
                StatusCode::TOO_MANY_REQUESTS => {
                    let asked = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
                    match retry_after(asked.as_deref()) {
                        Ok((wait, why)) => RegistryError::TooManyRequests { wait, why },
                        Err(why) => RegistryError::RetryAfterTooLong(why),
                    }
                }
                s if s.is_server_error() => RegistryError::Server(s),
                status => RegistryError::Status { status, code: None },
            });
        });
        result
    }

    /// A manifest by tag, with the media type it is served as (`Content-Type`); `None`
    /// when the registry answers 404 (as containers/image's `isManifestUnknownError`).
    pub fn manifest_if_any(
        &self,
        tag: &str,
        what: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let url = format!("{}/v2/{}/manifests/{tag}", self.base, self.repository);
        let resp = match self.try_send(what, &|| {
            self.http.get(&url).header(ACCEPT, MANIFEST_ACCEPT)
        }) {
            Ok(r) => r,
            Err(RegistryError::Status {
                status: StatusCode::NOT_FOUND,
                ..
            }) => return Ok(None),
            Err(e) => return Err(self.explain(e, what)),
        };
        let media_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = LowSpeedReader::new(resp, self.retry.low_speed_limit, self.retry.low_speed_time);
        let bytes = read_limited(body, MAX_METADATA_BYTES, what)
            .with_context(|| format!("{}: fetching {what}", self.describe()))?;
        Ok(Some((bytes, media_type)))
    }

    /// The message of a request for `what` that failed for good.
    fn explain(&self, e: RegistryError, what: &str) -> anyhow::Error {
        let describe = self.describe();
        match e {
            RegistryError::Tls(tls) => anyhow!(
                "{describe}: TLS failed: {tls}; if the registry's certificate is signed by a \
                 private CA, pass its certificate with --cert-dir DIR \
                 (or --tls-verify=false for plain http or an unverified certificate)"
            ),
            RegistryError::Silent(_) | RegistryError::RetryAfterTooLong(_) => {
                anyhow!("{describe}: fetching {what}: {e}")
            }
            RegistryError::Status { status, code } => match status {
                StatusCode::UNAUTHORIZED => anyhow!(
                    "{describe}: fetching {what}: authentication failed (401){}",
                    self.credential_hint()
                ),
                StatusCode::FORBIDDEN => anyhow!(
                    "{describe}: fetching {what}: access denied (403){}",
                    self.credential_hint()
                ),
                StatusCode::NOT_FOUND => match code {
                    Some(ErrorCode::NameUnknown) => anyhow!(
                        "{describe}: the repository does not exist (404, looking for {what})"
                    ),
                    Some(ErrorCode::ManifestUnknown) if !self.repository_exists() => anyhow!(
                        "{describe}: the repository does not exist (404, looking for {what})"
                    ),
                    Some(ErrorCode::ManifestUnknown) => {
                        anyhow!("{describe}: {what} does not exist (404)")
                    }
                    _ => anyhow!("{describe}: {what} not found (404)"),
                },
                s => anyhow!("{describe}: fetching {what}: unexpected status {s}"),
            },
            RegistryError::Other(e) => e,
            e => anyhow::Error::new(e).context(format!("{describe}: fetching {what}")),
        }
    }

    /// Whether the repository exists, to tell a missing repository from a missing tag
    /// (distribution answers MANIFEST_UNKNOWN for both).
    fn repository_exists(&self) -> bool {
        let url = format!("{}/v2/{}/tags/list?n=1", self.base, self.repository);
        let mut req = self.http.get(url);
        if let Some(a) = self.authorization.borrow().as_deref() {
            req = req.header(AUTHORIZATION, a);
        }
        match req.send() {
            Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                error_code(r) != Some(ErrorCode::NameUnknown)
            }
            _ => true,
        }
    }

    /// Runs `attempt` until it succeeds or fails for good: the one place where requests
    /// are retried. An error that [`RegistryError::is_retryable`] is tried again after
    /// a backoff (or the wait the registry asked for), up to the policy's attempts, and
    /// then given up ([`RegistryError::GaveUp`]); any other is returned at once.
    fn retrying<T>(
        &self,
        what: &str,
        mut attempt: impl FnMut() -> std::result::Result<T, RegistryError>,
    ) -> std::result::Result<T, RegistryError> {
        let mut backoff = Backoff::new(&self.retry, self.retry.attempts.saturating_sub(1));
        loop {
            let e = match attempt() {
                Ok(value) => return Ok(value),
                Err(e) if e.is_retryable() => e,
                Err(e) => return Err(e),
            };
            let Some(delay) = backoff.next(e.asked_wait()) else {
                return Err(RegistryError::GaveUp {
                    last: Box::new(e),
                    attempts: self.retry.attempts,
                });
            };
            if self.progress != ProgressMode::Quiet {
                eprintln!(
                    "{}: {what}: {e}; retrying in {:.1} s",
                    self.registry,
                    delay.as_secs_f64()
                );
            }
            std::thread::sleep(delay);
        }
    }

    fn credential_hint(&self) -> String {
        match &self.credentials {
            Some(c) if c.identity_token.is_some() => {
                format!("; credentials used: an identity token from {}", c.source)
            }
            Some(c) => format!(
                "; credentials used: user {:?} from {}",
                c.username, c.source
            ),
            None => "; no credentials were found for it (see --authfile)".to_string(),
        }
    }

    /// Answers a `WWW-Authenticate` challenge: Basic, or a Bearer token from its realm.
    fn authenticate(&self, headers: &HeaderMap) -> Result<()> {
        let values = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .map(|v| {
                v.to_str()
                    .map_err(|_| "a header that is not text".to_string())
            })
            .collect::<Result<Vec<_>, _>>();
        let challenge = values.and_then(Challenge::choose).map_err(|why| {
            anyhow!(
                "{}: 401 without a usable WWW-Authenticate challenge ({why})",
                self.describe()
            )
        })?;
        let basic = self.credentials.as_ref().map(|c| {
            let pair = format!("{}:{}", c.username, c.password);
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        log::debug!(
            "{}: {} challenge; credentials: {}",
            self.describe(),
            challenge.scheme,
            if self.credentials.is_some() {
                "yes"
            } else {
                "none"
            }
        );
        match challenge.scheme.as_str() {
            "basic" => {
                let Some(b) = basic else {
                    bail!(
                        "{}: the registry requires credentials{}",
                        self.describe(),
                        self.credential_hint()
                    );
                };
                *self.authorization.borrow_mut() = Some(b);
            }
            "bearer" => {
                let token = self.fetch_token(&challenge, basic.as_deref())?;
                *self.authorization.borrow_mut() = Some(format!("Bearer {token}"));
            }
            other => bail!(
                "{}: unsupported authentication scheme {other:?}",
                self.describe()
            ),
        }
        Ok(())
    }

    fn fetch_token(&self, challenge: &Challenge, basic: Option<&str>) -> Result<String> {
        let realm = challenge
            .param("realm")
            .ok_or_else(|| anyhow!("{}: Bearer challenge without a realm", self.describe()))?;
        let mut url = reqwest::Url::parse(realm)
            .with_context(|| format!("{}: invalid token realm", self.describe()))?;
        {
            let mut q = url.query_pairs_mut();
            if let Some(service) = challenge.param("service") {
                q.append_pair("service", service);
            }
            let scope = format!("repository:{}:pull", self.repository);
            q.append_pair("scope", challenge.param("scope").unwrap_or(&scope));
        }
        let what = "a token";
        log::info!("{}: asking {realm} for a token", self.describe());
        // An identity token is an OAuth2 refresh token: POSTed to the realm, as
        // containers/image does (distribution's oauth.md).
        let refresh = self
            .credentials
            .as_ref()
            .and_then(|c| c.identity_token.as_deref())
            .map(|rt| oauth_form(&url, rt));
        let result = self.retrying(what, || {
            let mut req = match &refresh {
                Some((realm, form)) => self
                    .http
                    .post(realm.clone())
                    .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(form.clone()),
                None => self.http.get(url.clone()),
            };
            if let (Some(b), None) = (basic, &refresh) {
                req = req.header(AUTHORIZATION, b);
            }
            match req.send() {
                Ok(r) if r.status().is_server_error() || r.status() == 429 => {
                    Err(RegistryError::Issuer(r.status()))
                }
                Ok(r) => Ok(r),
                Err(e) => Err(RegistryError::transport(e)),
            }
        });
        let resp = result.map_err(|e| match &e {
            // The issuer's own answers say enough.
            RegistryError::GaveUp { last, .. } if matches!(**last, RegistryError::Issuer(_)) => {
                anyhow::Error::new(e)
            }
            _ => anyhow::Error::new(e).context(format!("{}: fetching a token", self.describe())),
        })?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            bail!(
                "{}: the token issuer refused the request ({status}){}",
                self.describe(),
                self.credential_hint()
            );
        }
        if !status.is_success() {
            bail!("{}: the token issuer answered {status}", self.describe());
        }
        let body = read_limited(resp, 1024 * 1024, "token response")?;
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| anyhow!("{}: the token response is not JSON", self.describe()))?;
        v["token"]
            .as_str()
            .or_else(|| v["access_token"].as_str())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| anyhow!("{}: the token response has no token", self.describe()))
    }

    /// Fetches a manifest or index by tag or digest: its bytes and the digest the
    /// registry claims for it (`Docker-Content-Digest`).
    pub fn manifest(&self, reference: &str, what: &str) -> Result<(Vec<u8>, Option<String>)> {
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        self.fetch_small(what, &|| {
            self.http.get(&url).header(ACCEPT, MANIFEST_ACCEPT)
        })
    }

    /// Fetches a small blob (an image config) whole.
    pub fn small_blob(&self, digest: &Digest) -> Result<Vec<u8>> {
        let what = format!("blob {digest}");
        Ok(self
            .fetch_small(&what, &|| self.http.get(self.blob_url(digest)))?
            .0)
    }

    /// Sends a request and reads the (small) body whole; a body cut short is fetched
    /// again like any other transient failure.
    fn fetch_small(
        &self,
        what: &str,
        build: &dyn Fn() -> RequestBuilder,
    ) -> Result<(Vec<u8>, Option<String>)> {
        self.retrying(what, || {
            let resp = self.send(what, build)?;
            let claimed = resp
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body =
                LowSpeedReader::new(resp, self.retry.low_speed_limit, self.retry.low_speed_time);
            match read_limited(body, MAX_METADATA_BYTES, what) {
                Ok(bytes) => Ok((bytes, claimed)),
                Err(e) if e.downcast_ref::<io::Error>().is_some() => {
                    Err(RegistryError::Body(format!("{e:#}")))
                }
                Err(e) => Err(RegistryError::Other(e.context(self.describe()))),
            }
        })
        .map_err(|e| match e {
            RegistryError::Other(e) => e,
            e => anyhow::Error::new(e).context(format!("{}: fetching {what}", self.describe())),
        })
    }

    fn blob_url(&self, digest: &Digest) -> String {
        format!("{}/v2/{}/blobs/{digest}", self.base, self.repository)
    }

    /// Opens a blob at byte `offset`, positioned there whether or not the registry
    /// honours the Range header.
    fn blob_at(&self, digest: &Digest, offset: u64) -> Result<Response> {
        let what = format!("blob {digest}");
        let url = self.blob_url(digest);
        let mut resp = self.send(&what, &|| {
            let req = self.http.get(&url);
            if offset > 0 {
                req.header(RANGE, format!("bytes={offset}-"))
            } else {
                req
            }
        })?;
        if offset > 0 {
            let start = resp
                .headers()
                .get(CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("bytes "))
                .and_then(|v| v.split('-').next())
                .and_then(|v| v.parse::<u64>().ok());
            match (resp.status(), start) {
                (StatusCode::PARTIAL_CONTENT, Some(s)) if s == offset => {}
                (StatusCode::PARTIAL_CONTENT, _) => {
                    bail!(
                        "{}: {what}: the registry sent a range we did not ask for",
                        self.describe()
                    )
                }
                _ => {
                    // The whole blob again: skip what we already have.
                    let skipped = io::copy(&mut (&mut resp).take(offset), &mut io::sink())
                        .with_context(|| format!("{}: {what}", self.describe()))?;
                    if skipped != offset {
                        bail!("{}: {what} ended early", self.describe());
                    }
                }
            }
        }
        Ok(resp)
    }

    /// Streams a blob, resuming with Range when the connection is cut. Its bytes are
    /// also written to a temp file in `cache`, which enters the cache only when the
    /// whole blob has been read and its digest matches.
    pub fn blob_stream<'a>(
        &'a self,
        digest: &Digest,
        size: u64,
        cache: &Cache,
    ) -> Result<VerifyingReader<ResumingBody<'a>>> {
        let spool = Spool {
            file: cache.temp_blob()?,
            cache: cache.clone(),
        };
        let response = self.blob_at(digest, 0)?;
        let label = format!("{} {}", self.repository, short(digest));
        let body = ResumingBody {
            client: self,
            digest: digest.clone(),
            size,
            received: 0,
            response: Some(response),
            resumes: Backoff::new(&self.retry, self.retry.resumes),
            progress: Progress::new(self.progress, label, size),
            window: SpeedWindow::default(),
        };
        let what = format!("{}: blob {digest}", self.describe());
        Ok(VerifyingReader::new(body, digest, size, what, Some(spool)))
    }
}

/// The OAuth2 refresh-token request for a token URL (`realm?service&scope`): the realm,
/// and the form body with the service and scope moved into it.
fn oauth_form(url: &reqwest::Url, refresh_token: &str) -> (reqwest::Url, String) {
    let mut realm = url.clone();
    realm.set_query(None);
    let mut form = reqwest::Url::parse("form:").expect("a valid URL");
    {
        let mut q = form.query_pairs_mut();
        q.append_pair("grant_type", "refresh_token");
        q.append_pair("refresh_token", refresh_token);
        q.append_pair("client_id", "mcd-inject");
        for (k, v) in url.query_pairs() {
            q.append_pair(&k, &v);
        }
    }
    (realm, form.query().unwrap_or_default().to_string())
}

fn short(d: &Digest) -> String {
    format!("sha256:{}", &d.hex()[..12])
}

/// The body of a blob download: when the connection is cut, it asks again from the
/// byte where it stopped. It ends after the size the descriptor gives; checking the
/// content is [`VerifyingReader`]'s job.
pub struct ResumingBody<'a> {
    client: &'a Client,
    digest: Digest,
    size: u64,
    received: u64,
    response: Option<Response>,
    /// The resumptions of this download, on the same backoff as requests.
    resumes: Backoff<'a>,
    progress: Progress,
    window: SpeedWindow,
}

impl ResumingBody<'_> {
    fn interrupted(&mut self, why: &str) -> io::Result<()> {
        self.response = None;
        let Some(delay) = self.resumes.next(None) else {
            return Err(io::Error::other(format!(
                "{}: blob {} was cut {} times, last: {why}",
                self.client.describe(),
                self.digest,
                self.resumes.done + 1
            )));
        };
        self.progress.note(&format!(
            "{}: blob {}: {why}; resuming at byte {} in {:.1} s",
            self.client.registry,
            short(&self.digest),
            self.received,
            delay.as_secs_f64()
        ));
        std::thread::sleep(delay);
        Ok(())
    }
}

impl Read for ResumingBody<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let response = match self.response.as_mut() {
                Some(r) => r,
                None if self.received >= self.size => return Ok(0),
                None => {
                    let r = self
                        .client
                        .blob_at(&self.digest, self.received)
                        .map_err(|e| io::Error::other(format!("{e:#}")))?;
                    self.response.insert(r)
                }
            };
            match response.read(buf) {
                Ok(0) if self.received >= self.size => {
                    self.response = None;
                    self.progress.finish();
                    return Ok(0);
                }
                Ok(0) => self.interrupted("the connection closed early")?,
                Ok(n) => {
                    self.received += n as u64;
                    self.progress.advance(n as u64);
                    let retry = &self.client.retry;
                    if let Some(slow) =
                        self.window
                            .add(n as u64, retry.low_speed_limit, retry.low_speed_time)
                    {
                        // Too slow: drop this connection and ask again from here. The
                        // bytes read so far are good; they are returned now.
                        self.interrupted(&slow.to_string())?;
                        self.window = SpeedWindow::default();
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.interrupted(&e.to_string())?;
                    self.window = SpeedWindow::default();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(header: &str) -> Challenge {
        Challenge::choose([header]).unwrap()
    }

    #[test]
    fn challenges_parse() {
        let c = one(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
        );
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("https://auth.example/token"));
        assert_eq!(c.param("service"), Some("registry.example"));
        assert_eq!(c.param("scope"), Some("repository:a/b:pull"));
        let c = one(r#"Basic realm="Registry Realm""#);
        assert_eq!(c.scheme, "basic");
        assert_eq!(c.param("realm"), Some("Registry Realm"));
        let c = one("Basic");
        assert!(c.params.is_empty());
        let c = one("BASIC Realm=unquoted");
        assert_eq!(
            (c.scheme.as_str(), c.param("realm")),
            ("basic", Some("unquoted"))
        );
    }

    #[test]
    fn several_challenges_in_one_header_prefer_bearer() {
        let header =
            r#"Basic realm="r", Bearer realm="https://auth.example/token",service="s", Negotiate"#;
        let c = one(header);
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("https://auth.example/token"));
        assert_eq!(c.param("service"), Some("s"));
        assert_eq!(parse_challenge(header).unwrap().len(), 3);
        let c = one(r#"Negotiate, Basic realm="r""#);
        assert_eq!((c.scheme.as_str(), c.param("realm")), ("basic", Some("r")));
        assert_eq!(one("Negotiate, NTLM").scheme, "negotiate");
        // Several headers count as one list.
        let c = Challenge::choose([r#"Basic realm="a""#, r#"Bearer realm="b""#]).unwrap();
        assert_eq!(c.param("realm"), Some("b"));
    }

    #[test]
    fn quoted_strings_keep_commas_and_escapes() {
        let c = one(
            r#"Bearer realm="https://a.example/t?x=1,2",scope="repository:a/b:pull,push",error="say \"no\"""#,
        );
        assert_eq!(c.param("realm"), Some("https://a.example/t?x=1,2"));
        assert_eq!(c.param("scope"), Some("repository:a/b:pull,push"));
        assert_eq!(c.param("error"), Some(r#"say "no""#));
        let c = one(r#"Basic realm="a \\ b \x""#);
        assert_eq!(c.param("realm"), Some(r"a \ b x"));
    }

    #[test]
    fn malformed_challenges_are_errors() {
        for bad in [
            "",
            r#"Bearer realm="unterminated"#,
            "Bearer realm=a b",
            "Basic realm=\"x\" junk",
        ] {
            assert!(Challenge::choose([bad]).is_err(), "{bad:?} parsed");
        }
        assert!(Challenge::choose(std::iter::empty()).is_err());
    }

    #[test]
    fn retry_after_is_honoured_up_to_a_cap() {
        assert_eq!(retry_after(None).unwrap().0, None);
        assert_eq!(
            retry_after(Some("2")).unwrap().0,
            Some(Duration::from_secs(2))
        );
        let e = retry_after(Some("3600")).unwrap_err();
        assert!(e.contains("asked to wait 3600 s"), "{e}");
        assert!(e.contains("60 s"), "{e}");
        let (wait, why) = retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")).unwrap();
        assert_eq!(wait, None);
        assert!(why.contains("not understood"), "{why}");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            test_backoff: None,
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay(0), Duration::from_millis(500));
        assert_eq!(p.delay(2), Duration::from_secs(2));
        assert_eq!(p.delay(30), p.max_backoff);
    }

    #[test]
    fn a_test_backoff_replaces_every_wait_but_retry_after() {
        let p = RetryPolicy {
            test_backoff: Some(Duration::from_millis(10)),
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay(0), Duration::from_millis(10));
        assert_eq!(p.delay(30), Duration::from_millis(10));
        let mut b = Backoff::new(&p, 2);
        assert_eq!(b.next(None), Some(Duration::from_millis(10)));
        assert_eq!(
            b.next(Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(b.next(None), None);
    }

    #[test]
    fn error_codes_are_typed() {
        for code in [
            "MANIFEST_UNKNOWN",
            "NAME_UNKNOWN",
            "DENIED",
            "SOMETHING_NEW",
        ] {
            assert_eq!(ErrorCode::parse(code).to_string(), code);
        }
        assert_eq!(ErrorCode::parse("NAME_UNKNOWN"), ErrorCode::NameUnknown);
        assert_eq!(
            ErrorCode::parse("SOMETHING_NEW"),
            ErrorCode::Other("SOMETHING_NEW".into())
        );
    }

    #[test]
    fn transient_failures_are_retried_and_answers_are_not() {
        let transport = RegistryError::Transport {
            message: "connection refused".into(),
            timeout: false,
        };
        assert!(transport.is_retryable());
        assert!(RegistryError::Body("cut".into()).is_retryable());
        assert!(RegistryError::Server(StatusCode::BAD_GATEWAY).is_retryable());
        assert!(RegistryError::Issuer(StatusCode::SERVICE_UNAVAILABLE).is_retryable());
        assert!(RegistryError::TooManyRequests {
            wait: None,
            why: "too many requests (429)".into()
        }
        .is_retryable());
        for status in [
            StatusCode::UNAUTHORIZED,
            StatusCode::FORBIDDEN,
            StatusCode::NOT_FOUND,
        ] {
            let e = RegistryError::Status {
                status,
                code: Some(ErrorCode::Other("DENIED".into())),
            };
            assert!(!e.is_retryable(), "{status}");
        }
        assert!(!RegistryError::Tls("bad certificate".into()).is_retryable());
        assert!(!RegistryError::Silent(Duration::from_secs(1)).is_retryable());
        assert!(!RegistryError::RetryAfterTooLong("3600 s".into()).is_retryable());
        let gave_up = RegistryError::GaveUp {
            last: Box::new(RegistryError::Server(StatusCode::INTERNAL_SERVER_ERROR)),
            attempts: 5,
        };
        assert!(!gave_up.is_retryable());
        assert_eq!(
            gave_up.to_string(),
            "server error (500 Internal Server Error); gave up after 5 attempts"
        );
    }
}
