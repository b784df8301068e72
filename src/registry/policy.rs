//! Signature policy, as containers-policy.json(5) and containers-registries.d(5) describe
//! it, for images from registries.
//!
//! The policy's requirements for a reference are those of its most specific `docker`
//! scope (`host/ns/repo:tag` or `@digest`, `host/ns/repo`, `host/ns`, `host`,
//! `*.domain`), else the transport's `""` entry, else `default`; every requirement must
//! accept. `insecureAcceptAnything` and `reject` need nothing; `signedBy` (keyType
//! `GPGKeys`) needs one "simple signing" signature made by one of its keys, whose
//! `docker-manifest-digest` is the image's and whose `docker-reference` matches the
//! reference as `signedIdentity` says (default `matchRepoDigestOrExact`).
//!
//! Signatures are found through the registries.d lookaside configuration of the
//! reference (`lookaside` or its old name `sigstore`; `file://` or `http(s)://`), laid out
//! as `BASE/REPO@sha256=HEX/signature-N`, N from 1 until one is missing. The OpenPGP work
//! is done by rPGP (`pgp`), a pure-Rust implementation: no gpg binary or C library at run
//! time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use serde::Deserialize;

use crate::image::{Digest, DockerRef};
use crate::io::parse;
use crate::io::read_at_most;

/// The default policy file, as the containers tools read it.
pub const DEFAULT_POLICY: &str = "/etc/containers/policy.json";
/// The default registries.d directory.
pub const DEFAULT_REGISTRIES_D: &str = "/etc/containers/registries.d";
/// At most this many signatures are read per image, each at most this big.
const MAX_SIGNATURES: usize = 32;
const MAX_SIGNATURE_BYTES: u64 = 4 * 1024 * 1024;
/// The `critical.type` of a simple signing payload.
const SIGNATURE_TYPE: &str = "atomic container signature";

/// An image the policy refused. Not an endpoint's fault: no mirror is tried after it.
#[derive(Debug, thiserror::Error)]
#[error("{reference}: refused by the signature policy {policy}: {why}")]
pub struct PolicyRejected {
    /// The image refused.
    pub reference: String,
    /// The policy file.
    pub policy: String,
    /// Which requirement failed, and why.
    pub why: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyDoc {
    default: Vec<Requirement>,
    #[serde(default)]
    transports: BTreeMap<String, BTreeMap<String, Vec<Requirement>>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "type")]
enum Requirement {
    #[serde(rename = "insecureAcceptAnything")]
    InsecureAcceptAnything,
    #[serde(rename = "reject")]
    Reject,
    #[serde(rename = "signedBy", rename_all = "camelCase")]
    SignedBy {
        key_type: String,
        key_path: Option<PathBuf>,
        key_paths: Option<Vec<PathBuf>>,
        key_data: Option<String>,
        signed_identity: Option<SignedIdentity>,
    },
    #[serde(rename = "signedBaseLayer")]
    SignedBaseLayer {},
    #[serde(rename = "sigstoreSigned")]
    SigstoreSigned {},
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "camelCase")]
enum SignedIdentity {
    MatchExact,
    MatchRepoDigestOrExact,
    MatchRepository,
    #[serde(rename_all = "camelCase")]
    ExactReference {
        docker_reference: String,
    },
    #[serde(rename_all = "camelCase")]
    ExactRepository {
        docker_repository: String,
    },
    #[serde(rename_all = "camelCase")]
    RemapIdentity {
        prefix: String,
        signed_prefix: String,
    },
}

/// A signature policy and where its signatures are looked up.
#[derive(Clone, Debug)]
pub struct Policy {
    doc: PolicyDoc,
    origin: String,
    registries_d: Option<PathBuf>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RegistriesD {
    default_docker: Option<Lookaside>,
    #[serde(default)]
    docker: BTreeMap<String, Lookaside>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Lookaside {
    lookaside: Option<String>,
    sigstore: Option<String>,
}

impl Lookaside {
    fn url(&self) -> Option<&str> {
        self.lookaside.as_deref().or(self.sigstore.as_deref())
    }
}

/// The scopes of a reference, most specific first (containers-policy.json(5)).
fn scopes(r: &DockerRef) -> Vec<String> {
    let name = format!("{}/{}", r.registry, r.repository);
    let mut out = Vec::new();
    match (&r.digest, &r.tag) {
        (Some(d), _) => out.push(format!("{name}@{d}")),
        (None, Some(t)) => out.push(format!("{name}:{t}")),
        (None, None) => {}
    }
    let mut n = name.as_str();
    loop {
        out.push(n.to_string());
        match n.rfind('/') {
            Some(i) => n = &n[..i],
            None => break,
        }
    }
    let host = r.registry.split(':').next().unwrap_or(&r.registry);
    let mut labels: &str = host;
    while let Some(i) = labels.find('.') {
        labels = &labels[i + 1..];
        out.push(format!("*.{labels}"));
    }
    out
}

impl Policy {
    /// Reads a policy file; `registries_d` is where lookaside configuration is read.
    pub fn load(path: &Path, registries_d: Option<PathBuf>) -> Result<Policy> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("reading signature policy {}", path.display()))?;
        Self::parse(&bytes, &path.display().to_string(), registries_d)
    }

    fn parse(bytes: &[u8], origin: &str, registries_d: Option<PathBuf>) -> Result<Policy> {
        let doc: PolicyDoc = parse::json(bytes, origin, "signature policy")?;
        let check = |reqs: &[Requirement], scope: &str| -> Result<()> {
            if reqs.is_empty() {
                bail!("signature policy {origin}: {scope} has no requirements");
            }
            for r in reqs {
                if let Requirement::SignedBy {
                    key_type,
                    key_path,
                    key_paths,
                    key_data,
                    ..
                } = r
                {
                    if key_type != "GPGKeys" {
                        bail!("signature policy {origin}: {scope}: this keyType is not supported (only GPGKeys)");
                    }
                    let given = [key_path.is_some(), key_paths.is_some(), key_data.is_some()];
                    if given.iter().filter(|g| **g).count() != 1 {
                        bail!("signature policy {origin}: {scope}: signedBy needs exactly one of keyPath, keyPaths, keyData");
                    }
                }
            }
            Ok(())
        };
        check(&doc.default, "default")?;
        for (t, scopes) in &doc.transports {
            for (s, reqs) in scopes {
                check(
                    reqs,
                    &format!(
                        "transports.{}.{}",
                        parse::name_shown(t).trim_matches('"'),
                        parse::name_shown(s)
                    ),
                )?;
            }
        }
        Ok(Policy {
            doc,
            origin: origin.to_string(),
            registries_d,
        })
    }

    /// The requirements for a registry reference, and the scope they come from.
    fn requirements(&self, r: &DockerRef) -> (&[Requirement], String) {
        if let Some(t) = self.doc.transports.get("docker") {
            for s in scopes(r) {
                if let Some(reqs) = t.get(&s) {
                    return (reqs, format!("transports.docker.{s:?}"));
                }
            }
            if let Some(reqs) = t.get("") {
                return (reqs, "transports.docker.\"\"".to_string());
            }
        }
        (&self.doc.default, "default".to_string())
    }

    /// Whether the policy accepts the image `r` whose top manifest is `digest`. An error
    /// that is a [`PolicyRejected`] when it does not.
    pub fn check(&self, r: &DockerRef, digest: &Digest) -> Result<()> {
        let (reqs, scope) = self.requirements(r);
        let reject = |why: String| -> anyhow::Error {
            PolicyRejected {
                reference: r.to_string(),
                policy: self.origin.clone(),
                why: format!("{scope}: {why}"),
            }
            .into()
        };
        let mut signatures: Option<Vec<(String, Vec<u8>)>> = None;
        for req in reqs {
            match req {
                Requirement::InsecureAcceptAnything => {}
                Requirement::Reject => return Err(reject("images here are rejected".into())),
                Requirement::SignedBaseLayer {} | Requirement::SigstoreSigned {} => {
                    return Err(reject(
                        "this requirement type is not supported by mcd-inject (only \
                         insecureAcceptAnything, reject and signedBy GPGKeys)"
                            .into(),
                    ))
                }
                Requirement::SignedBy {
                    key_path,
                    key_paths,
                    key_data,
                    signed_identity,
                    ..
                } => {
                    let keys = load_keys(key_path, key_paths, key_data)
                        .with_context(|| format!("signature policy {}: {scope}", self.origin))?;
                    if signatures.is_none() {
                        signatures = Some(self.signatures(r, digest)?);
                    }
                    let sigs = signatures.as_ref().expect("just set");
                    if sigs.is_empty() {
                        return Err(reject(format!(
                            "a signature is required and none was found{}",
                            self.where_signatures(r)
                        )));
                    }
                    let identity = signed_identity
                        .clone()
                        .unwrap_or(SignedIdentity::MatchRepoDigestOrExact);
                    let mut whys = Vec::new();
                    let mut ok = false;
                    for (name, sig) in sigs {
                        match verify_signature(sig, &keys, r, digest, &identity) {
                            Ok(()) => {
                                ok = true;
                                break;
                            }
                            Err(e) => whys.push(format!("{name}: {e:#}")),
                        }
                    }
                    if !ok {
                        return Err(reject(format!(
                            "no signature is acceptable: {}",
                            whys.join("; ")
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn lookaside_config(&self) -> Result<RegistriesD> {
        let mut merged = RegistriesD::default();
        let Some(dir) = &self.registries_d else {
            return Ok(merged);
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(merged),
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        for f in files {
            let text =
                std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            let c: RegistriesD = parse::yaml(&text, &f.display().to_string(), "registries.d file")?;
            if c.default_docker.is_some() {
                merged.default_docker = c.default_docker;
            }
            merged.docker.extend(c.docker);
        }
        Ok(merged)
    }

    /// The lookaside base URL for a reference.
    fn lookaside(&self, r: &DockerRef) -> Result<Option<String>> {
        let c = self.lookaside_config()?;
        let name = format!("{}/{}", r.registry, r.repository);
        let mut n = name.as_str();
        loop {
            if let Some(u) = c.docker.get(n).and_then(|l| l.url()) {
                return Ok(Some(u.to_string()));
            }
            match n.rfind('/') {
                Some(i) => n = &n[..i],
                None => break,
            }
        }
        Ok(c.default_docker
            .as_ref()
            .and_then(|l| l.url())
            .map(str::to_string))
    }

    fn where_signatures(&self, r: &DockerRef) -> String {
        match (self.lookaside(r), &self.registries_d) {
            (Ok(Some(u)), _) => format!(" under {}", parse::url_shown(&u)),
            (_, Some(d)) => format!(
                " (no lookaside is configured for {}/{} in {})",
                r.registry,
                r.repository,
                d.display()
            ),
            (_, None) => " (no registries.d directory)".to_string(),
        }
    }

    /// The signatures of `digest` in the lookaside store: (where, bytes).
    fn signatures(&self, r: &DockerRef, digest: &Digest) -> Result<Vec<(String, Vec<u8>)>> {
        let Some(base) = self.lookaside(r)? else {
            return Ok(Vec::new());
        };
        let base = base.trim_end_matches('/');
        let mut out = Vec::new();
        for n in 1..=MAX_SIGNATURES {
            let url = format!(
                "{base}/{}@sha256={}/signature-{n}",
                r.repository,
                digest.hex()
            );
            match fetch(&url)? {
                Some(bytes) => out.push((parse::url_shown(&url), bytes)),
                None => break,
            }
        }
        Ok(out)
    }
}

/// Reads a lookaside URL: `None` when there is no such signature.
fn fetch(url: &str) -> Result<Option<Vec<u8>>> {
    if let Some(path) = url.strip_prefix("file://") {
        return match std::fs::File::open(path) {
            Ok(f) => {
                let b = read_at_most(f, MAX_SIGNATURE_BYTES)
                    .with_context(|| format!("reading {path}"))?
                    .ok_or_else(|| anyhow!("{path}: too big for a signature"))?;
                Ok(Some(b))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {path}")),
        };
    }
    if url.starts_with("https://") || url.starts_with("http://") {
        super::client::install_crypto_provider();
        let resp = reqwest::blocking::Client::builder()
            .user_agent(concat!("mcd-inject/", env!("CARGO_PKG_VERSION")))
            .build()?
            .get(url)
            .send()
            // Neither the URL nor the error (which would name it) keeps its user.
            .map_err(reqwest::Error::without_url)
            .with_context(|| format!("fetching signature {}", parse::url_shown(url)))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !resp.status().is_success() {
            bail!(
                "fetching signature {}: {}",
                parse::url_shown(url),
                resp.status()
            );
        }
        let b = read_at_most(resp, MAX_SIGNATURE_BYTES)?
            .ok_or_else(|| anyhow!("{}: too big for a signature", parse::url_shown(url)))?;
        return Ok(Some(b));
    }
    bail!(
        "lookaside {:?}: only file://, http:// and https:// are supported",
        parse::url_shown(url)
    )
}

fn load_keys(
    key_path: &Option<PathBuf>,
    key_paths: &Option<Vec<PathBuf>>,
    key_data: &Option<String>,
) -> Result<Vec<pgp::composed::SignedPublicKey>> {
    let mut blobs = Vec::new();
    if let Some(p) = key_path {
        blobs.push((p.display().to_string(), read_key(p)?));
    }
    for p in key_paths.iter().flatten() {
        blobs.push((p.display().to_string(), read_key(p)?));
    }
    if let Some(d) = key_data {
        let b = base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map_err(|_| anyhow!("keyData is not base64"))?;
        blobs.push(("keyData".to_string(), b));
    }
    let mut keys = Vec::new();
    for (name, b) in blobs {
        let (iter, _) = pgp::composed::PublicOrSecret::from_reader_many(&b[..])
            .map_err(|e| anyhow!("{name}: not an OpenPGP key: {e}"))?;
        for k in iter {
            match k.map_err(|e| anyhow!("{name}: not an OpenPGP key: {e}"))? {
                pgp::composed::PublicOrSecret::Public(k) => keys.push(k),
                pgp::composed::PublicOrSecret::Secret(k) => keys.push(k.to_public_key()),
            }
        }
    }
    if keys.is_empty() {
        bail!("no OpenPGP key in the signedBy key files");
    }
    Ok(keys)
}

fn read_key(p: &Path) -> Result<Vec<u8>> {
    std::fs::read(p).with_context(|| format!("reading key {}", p.display()))
}

/// The simple signing payload.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Payload {
    critical: Critical,
    #[serde(default)]
    #[allow(dead_code)]
    optional: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Critical {
    #[serde(rename = "type")]
    kind: String,
    image: CriticalImage,
    identity: CriticalIdentity,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriticalImage {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriticalIdentity {
    #[serde(rename = "docker-reference")]
    reference: String,
}

/// Checks one signature: made by one of `keys`, over a payload that names `digest` and
/// an identity that `identity` accepts for `r`.
fn verify_signature(
    sig: &[u8],
    keys: &[pgp::composed::SignedPublicKey],
    r: &DockerRef,
    digest: &Digest,
    identity: &SignedIdentity,
) -> Result<()> {
    let payload = signed_payload(sig, keys)?;
    let p: Payload = serde_json::from_slice(&payload)
        .map_err(|e| anyhow!("the signed payload is not a simple signing payload: {e}"))?;
    if p.critical.kind != SIGNATURE_TYPE {
        bail!("the signed payload's type is {:?}", p.critical.kind);
    }
    if p.critical.image.digest != digest.to_string() {
        bail!(
            "it signs manifest {}, the image is {digest}",
            p.critical.image.digest
        );
    }
    let signed: DockerRef = p
        .critical
        .identity
        .reference
        .parse()
        .map_err(|e| anyhow!("the signed docker-reference is invalid: {e}"))?;
    if !identity_matches(identity, r, &signed)? {
        bail!(
            "it signs the identity {}, which does not match {r} ({identity:?})",
            p.critical.identity.reference
        );
    }
    Ok(())
}

/// The payload of an OpenPGP signed message, if one of `keys` (or a subkey) signed it.
fn signed_payload(sig: &[u8], keys: &[pgp::composed::SignedPublicKey]) -> Result<Vec<u8>> {
    use pgp::types::KeyDetails as _;
    let mut msg = pgp::composed::Message::from_bytes(sig)
        .map_err(|e| anyhow!("not an OpenPGP message: {}", brief(&e.to_string())))?;
    for _ in 0..4 {
        if !msg.is_compressed() {
            break;
        }
        msg = msg
            .decompress()
            .map_err(|e| anyhow!("cannot decompress the signature: {}", brief(&e.to_string())))?;
    }
    if !msg.is_signed() {
        bail!("the OpenPGP message is not signed");
    }
    let payload = read_at_most(&mut msg, MAX_SIGNATURE_BYTES)
        .map_err(|e| anyhow!("cannot read the signed message: {}", brief(&e.to_string())))?
        .ok_or_else(|| anyhow!("the signed payload is too big"))?;
    for k in keys {
        if msg.verify(k).is_ok() {
            return Ok(payload);
        }
        for sub in &k.public_subkeys {
            if sub.verify_bindings(&k.primary_key).is_ok() && msg.verify(sub).is_ok() {
                return Ok(payload);
            }
        }
    }
    let fps: Vec<String> = keys.iter().map(|k| k.fingerprint().to_string()).collect();
    bail!(
        "it is not a valid signature by any of the policy's keys ({})",
        fps.join(", ")
    )
}

/// An OpenPGP library message without the debugging detail some of them carry.
fn brief(s: &str) -> String {
    let s = s.split(", backtrace").next().unwrap_or(s);
    let s: String = s.chars().take(200).collect();
    s.replace('\n', " ")
}

fn same_repo(a: &DockerRef, b: &DockerRef) -> bool {
    a.registry == b.registry && a.repository == b.repository
}

fn same_exact(a: &DockerRef, b: &DockerRef) -> bool {
    same_repo(a, b) && a.tag == b.tag && a.digest == b.digest
}

fn identity_matches(id: &SignedIdentity, r: &DockerRef, signed: &DockerRef) -> Result<bool> {
    Ok(match id {
        SignedIdentity::MatchExact => same_exact(r, signed),
        SignedIdentity::MatchRepoDigestOrExact => {
            if r.digest.is_some() {
                same_repo(r, signed)
            } else {
                same_exact(r, signed)
            }
        }
        SignedIdentity::MatchRepository => same_repo(r, signed),
        SignedIdentity::ExactReference { docker_reference } => {
            let want: DockerRef = docker_reference
                .parse()
                .map_err(|e| anyhow!("exactReference {docker_reference:?}: {e}"))?;
            same_exact(&want, signed)
        }
        SignedIdentity::ExactRepository { docker_repository } => {
            let want: DockerRef = docker_repository
                .parse()
                .map_err(|e| anyhow!("exactRepository {docker_repository:?}: {e}"))?;
            same_repo(&want, signed)
        }
        SignedIdentity::RemapIdentity {
            prefix,
            signed_prefix,
        } => {
            let name = format!("{}/{}", r.registry, r.repository);
            let remapped = match name.strip_prefix(prefix.as_str()) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') || prefix.ends_with('/') => {
                    let mut s = format!("{signed_prefix}{rest}");
                    if let Some(t) = &r.tag {
                        s.push_str(&format!(":{t}"));
                    }
                    if let Some(d) = &r.digest {
                        s.push_str(&format!("@{d}"));
                    }
                    s.parse::<DockerRef>()
                        .map_err(|e| anyhow!("remapIdentity gives {s:?}: {e}"))?
                }
                _ => r.clone(),
            };
            identity_matches(&SignedIdentity::MatchRepoDigestOrExact, &remapped, signed)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> DockerRef {
        s.parse().unwrap()
    }

    const D: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn scopes_most_specific_first() {
        assert_eq!(
            scopes(&r(&format!("reg.example.com:5000/ocp/release@{D}"))),
            [
                format!("reg.example.com:5000/ocp/release@{D}"),
                "reg.example.com:5000/ocp/release".into(),
                "reg.example.com:5000/ocp".into(),
                "reg.example.com:5000".into(),
                "*.example.com".into(),
                "*.com".into(),
            ]
        );
    }

    #[test]
    fn requirements_by_scope() {
        let p = Policy::parse(
            br#"{"default":[{"type":"reject"}],
                "transports":{"docker":{
                    "registry.example/ocp":[{"type":"insecureAcceptAnything"}],
                    "*.example.com":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k"}]},
                  "docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}"#,
            "p.json",
            None,
        )
        .unwrap();
        let scope = |s: &str| p.requirements(&r(s)).1;
        assert_eq!(
            scope("registry.example/ocp/release:1"),
            "transports.docker.\"registry.example/ocp\""
        );
        assert_eq!(
            scope("a.example.com/x:1"),
            "transports.docker.\"*.example.com\""
        );
        assert_eq!(scope("docker.io/library/x:1"), "default");
        let e = p
            .check(&r("docker.io/library/x:1"), &D.parse().unwrap())
            .unwrap_err();
        assert!(e.downcast_ref::<PolicyRejected>().is_some());
        assert!(format!("{e}").contains("rejected"), "{e}");
        p.check(&r("registry.example/ocp/release:1"), &D.parse().unwrap())
            .unwrap();
    }

    #[test]
    fn malformed_policies_are_refused() {
        for (text, want) in [
            (r#"{"default":[]}"#, "no requirements"),
            (
                r#"{"default":[{"type":"maybe"}]}"#,
                "not a valid signature policy",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"X509","keyPath":"/k"}]}"#,
                "keyType",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"GPGKeys"}]}"#,
                "exactly one of",
            ),
        ] {
            let e = format!(
                "{:#}",
                Policy::parse(text.as_bytes(), "p.json", None).unwrap_err()
            );
            assert!(e.contains("p.json") && e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn identities() {
        let by_digest = r(&format!("registry.example/ocp/release@{D}"));
        let tagged = r("registry.example/ocp/release:4.16.3");
        let signed = r("registry.example/ocp/release:4.16.3");
        let other = r("registry.example/ocp/other:4.16.3");
        let m =
            |id: &SignedIdentity, a: &DockerRef, s: &DockerRef| identity_matches(id, a, s).unwrap();
        use SignedIdentity::*;
        assert!(m(&MatchRepoDigestOrExact, &by_digest, &signed));
        assert!(!m(&MatchRepoDigestOrExact, &by_digest, &other));
        assert!(m(&MatchRepoDigestOrExact, &tagged, &signed));
        assert!(!m(
            &MatchRepoDigestOrExact,
            &r("registry.example/ocp/release:4.16.4"),
            &signed
        ));
        assert!(!m(&MatchExact, &by_digest, &signed));
        assert!(m(
            &MatchRepository,
            &r("registry.example/ocp/release:x"),
            &signed
        ));
        let remap = RemapIdentity {
            prefix: "mirror.example/ocp".into(),
            signed_prefix: "registry.example/ocp".into(),
        };
        assert!(m(
            &remap,
            &r(&format!("mirror.example/ocp/release@{D}")),
            &signed
        ));
        assert!(!m(
            &remap,
            &r(&format!("mirror.example/ocpx/release@{D}")),
            &signed
        ));
    }
}
