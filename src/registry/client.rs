//! An HTTP client for one repository of a registry (OCI distribution API): TLS,
//! authentication challenges, retries with backoff, and blob streams that resume.

use std::cell::RefCell;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Once;
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
}

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
        }
    }
}

impl RetryPolicy {
    fn delay(&self, retry: u32) -> Duration {
        self.backoff
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max_backoff)
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

pub(super) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already; that is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
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
    let mut certs = Vec::new();
    let entries =
        fs::read_dir(dir).with_context(|| format!("reading CA directory {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "crt") {
            let pem = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
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
fn error_code(resp: Response) -> Option<String> {
    let bytes = read_limited(resp, 64 * 1024, "error").ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["errors"][0]["code"].as_str().map(str::to_string)
}

impl Client {
    /// A client for `registry/repository` with the options' TLS and credential settings.
    pub fn new(
        registry: &str,
        repository: &str,
        opts: &RegistryOptions,
        credentials: Option<Credentials>,
    ) -> Result<Self> {
        install_crypto_provider();
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
        let mut retries = 0;
        let mut timeouts = 0;
        let mut authenticated = false;
        loop {
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
                    self.check_tls(&e)?;
                    if e.is_timeout() {
                        // A registry that does not answer at all is given one more
                        // chance, not the full set of attempts.
                        timeouts += 1;
                        if timeouts >= SILENT_ATTEMPTS {
                            bail!(
                                "{}: fetching {what}: no answer within {:.0} s, {SILENT_ATTEMPTS} times; gave up",
                                self.describe(),
                                self.retry.read_timeout.as_secs_f64()
                            );
                        }
                    }
                    let e = anyhow::Error::new(e.without_url());
                    self.backoff(&mut retries, what, &format!("{e:#}"), None)
                        .with_context(|| format!("{}: fetching {what}", self.describe()))?;
                    continue;
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
            match status {
                StatusCode::UNAUTHORIZED if !authenticated => {
                    authenticated = true;
                    self.authenticate(resp.headers())?;
                }
                StatusCode::UNAUTHORIZED => bail!(
                    "{}: fetching {what}: authentication failed (401){}",
                    self.describe(),
                    self.credential_hint()
                ),
                StatusCode::FORBIDDEN => bail!(
                    "{}: fetching {what}: access denied (403){}",
                    self.describe(),
                    self.credential_hint()
                ),
                StatusCode::NOT_FOUND => {
                    let code = error_code(resp);
                    match code.as_deref() {
                        Some("NAME_UNKNOWN") => bail!(
                            "{}: the repository does not exist (404, looking for {what})",
                            self.describe()
                        ),
                        Some("MANIFEST_UNKNOWN") if !self.repository_exists() => bail!(
                            "{}: the repository does not exist (404, looking for {what})",
                            self.describe()
                        ),
                        Some("MANIFEST_UNKNOWN") => {
                            bail!("{}: {what} does not exist (404)", self.describe())
                        }
                        _ => bail!("{}: {what} not found (404)", self.describe()),
                    }
                }
                StatusCode::TOO_MANY_REQUESTS => {
                    let asked = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
                    let (after, why) = retry_after(asked.as_deref())
                        .map_err(|why| anyhow!("{}: fetching {what}: {why}", self.describe()))?;
                    self.backoff(&mut retries, what, &why, after)
                        .with_context(|| format!("{}: fetching {what}", self.describe()))?;
                }
                s if s.is_server_error() => {
                    self.backoff(&mut retries, what, &format!("server error ({s})"), None)
                        .with_context(|| format!("{}: fetching {what}", self.describe()))?;
                }
                s => bail!(
                    "{}: fetching {what}: unexpected status {s}",
                    self.describe()
                ),
            }
        }
    }

    /// Fails at once on a TLS error: a certificate does not get better by retrying.
    fn check_tls(&self, e: &reqwest::Error) -> Result<()> {
        if let Some(tls) = rustls_error(e) {
            bail!(
                "{}: TLS failed: {tls}; if the registry's certificate is signed by a \
                 private CA, pass its certificate with --cert-dir DIR \
                 (or --tls-verify=false for plain http or an unverified certificate)",
                self.describe()
            );
        }
        Ok(())
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
                error_code(r).as_deref() != Some("NAME_UNKNOWN")
            }
            _ => true,
        }
    }

    /// Waits before the next attempt, or fails when the attempts are used up.
    fn backoff(
        &self,
        retries: &mut u32,
        what: &str,
        why: &str,
        wait: Option<Duration>,
    ) -> Result<()> {
        if *retries + 1 >= self.retry.attempts {
            bail!("{why}; gave up after {} attempts", self.retry.attempts);
        }
        let delay = wait.unwrap_or_else(|| self.retry.delay(*retries));
        *retries += 1;
        if self.progress != ProgressMode::Quiet {
            eprintln!(
                "{}: {what}: {why}; retrying in {:.1} s",
                self.registry,
                delay.as_secs_f64()
            );
        }
        std::thread::sleep(delay);
        Ok(())
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
        let mut retries = 0;
        // An identity token is an OAuth2 refresh token: POSTed to the realm, as
        // containers/image does (distribution's oauth.md).
        let refresh = self
            .credentials
            .as_ref()
            .and_then(|c| c.identity_token.as_deref())
            .map(|rt| oauth_form(&url, rt));
        let resp = loop {
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
                    let why = format!("token issuer answered {}", r.status());
                    self.backoff(&mut retries, what, &why, None)?;
                }
                Ok(r) => break r,
                Err(e) => {
                    let e = anyhow::Error::new(e.without_url());
                    self.backoff(&mut retries, what, &format!("{e:#}"), None)
                        .with_context(|| format!("{}: fetching a token", self.describe()))?;
                }
            }
        };
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
        let mut retries = 0;
        loop {
            let resp = self.send(what, build)?;
            let claimed = resp
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body =
                LowSpeedReader::new(resp, self.retry.low_speed_limit, self.retry.low_speed_time);
            match read_limited(body, MAX_METADATA_BYTES, what) {
                Ok(bytes) => return Ok((bytes, claimed)),
                Err(e) if e.downcast_ref::<io::Error>().is_some() => {
                    self.backoff(&mut retries, what, &format!("{e:#}"), None)
                        .with_context(|| format!("{}: fetching {what}", self.describe()))?;
                }
                Err(e) => return Err(e.context(self.describe())),
            }
        }
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
            resumes: 0,
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
    resumes: u32,
    progress: Progress,
    window: SpeedWindow,
}

impl ResumingBody<'_> {
    fn interrupted(&mut self, why: &str) -> io::Result<()> {
        self.response = None;
        if self.resumes >= self.client.retry.resumes {
            return Err(io::Error::other(format!(
                "{}: blob {} was cut {} times, last: {why}",
                self.client.describe(),
                self.digest,
                self.resumes + 1
            )));
        }
        let delay = self.client.retry.delay(self.resumes);
        self.resumes += 1;
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
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0), Duration::from_millis(500));
        assert_eq!(p.delay(2), Duration::from_secs(2));
        assert_eq!(p.delay(30), p.max_backoff);
    }
}
