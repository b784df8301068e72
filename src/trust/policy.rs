//! Signature policy, as containers-policy.json(5) describes it and containers/image
//! decides it (`signature/policy_config.go`, `policy_eval*.go`,
//! `policy_reference_match.go`), for images from registries.
//!
//! - **Parsing is strict**: an unknown or duplicated key anywhere, a missing `default`,
//!   an empty requirement list, an unknown requirement or identity type, a `signedBy`
//!   without exactly one of `keyPath`/`keyPaths`/`keyData`, an `exactReference` without
//!   tag or digest, or a `remapIdentity` prefix that is no registry or repository name
//!   (one ending in `/`, say) makes the whole policy invalid: nothing is accepted.
//! - **Scopes**: the requirements for an image are those of its most specific `docker`
//!   scope (`host/repo:tag` or `host/repo@digest`, `host/repo`, parent namespaces,
//!   `host`, `*.domain`), else the transport's `""` entry, else `default`; every one
//!   must accept. The scope is the image as asked for, even when a mirror serves it.
//! - `insecureAcceptAnything` accepts; `reject` refuses; `signedBaseLayer` refuses, as in
//!   containers/image, which does not implement it; `signedBy` needs one simple signing
//!   signature ([`super::simple_signing`]) by its keys (keyType `GPGKeys`; the other key
//!   types parse and then refuse, as there) over the image's manifest digest and an
//!   identity its `signedIdentity` accepts (default `matchRepoDigestOrExact`);
//!   `sigstoreSigned` needs one cosign signature by its public keys
//!   ([`super::sigstore`]), from the lookaside store or the image's sigstore attachments.
//!   Its keyless forms (`fulcio`, `pki`, keys with Rekor) are valid but not implemented:
//!   a policy holding one is refused when it is loaded.
//! - Signatures are read once per image from the lookaside store that registries.d
//!   gives for the registry that served it ([`super::registries_d`]).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use sha2::Digest as _;

use super::registries_d::{self, RegistriesD, Signature};
use super::sigstore::{self, AttachmentSource, Attachments, SigstoreSigned};
use super::simple_signing;
use super::strict_json::{self, Object};
use crate::image::{Digest, DockerRef};
use crate::io::parse;

/// The default policy file, as the containers tools read it.
pub const DEFAULT_POLICY: &str = "/etc/containers/policy.json";
/// The default registries.d directory.
pub const DEFAULT_REGISTRIES_D: &str = "/etc/containers/registries.d";

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

#[derive(Clone, Debug)]
enum Requirement {
    InsecureAcceptAnything,
    Reject,
    SignedBy(SignedBy),
    SignedBaseLayer,
    SigstoreSigned(Box<SigstoreSigned<Identity>>),
}

#[derive(Clone, Debug)]
struct SignedBy {
    key_type: String,
    keys: KeySource,
    identity: Identity,
}

#[derive(Clone, Debug)]
enum KeySource {
    Path(PathBuf),
    Paths(Vec<PathBuf>),
    Data(Vec<u8>),
}

/// A `signedIdentity` (containers-policy.json(5)), named as there.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
enum Identity {
    MatchExact,
    MatchRepoDigestOrExact,
    MatchRepository,
    ExactReference(DockerRef),
    ExactRepository(DockerRef),
    RemapIdentity {
        prefix: String,
        signed_prefix: String,
    },
}

/// One transport's scopes and their requirements, in order.
type Scopes = Vec<(String, Vec<Requirement>)>;

/// A signature policy and where its signatures are looked up.
#[derive(Clone, Debug)]
pub struct Policy {
    default: Vec<Requirement>,
    /// `transports`: each transport's scopes, in order.
    transports: Vec<(String, Scopes)>,
    origin: String,
    registries_d: Option<PathBuf>,
    /// The registries.d namespaces `--image-policy` gives sigstore attachments
    /// ([`Policy::from_image_policies`]).
    sigstore_namespaces: Vec<String>,
}

/// The image a policy judges: as asked for (the scope and the identity signatures must
/// match), as served (where its signatures are looked up: a mirror's repository), and
/// its top-level manifest.
pub struct Judged<'a> {
    /// The reference the user gave.
    pub logical: &'a DockerRef,
    /// The registry and repository that served it, with the same tag or digest.
    pub physical: &'a DockerRef,
    /// The top-level manifest's digest, as fetched and checked.
    pub digest: &'a Digest,
    /// The top-level manifest's bytes.
    pub manifest: &'a [u8],
    /// Whether the network may not be used (signatures then come from files only).
    pub offline: bool,
}

fn invalid(origin: &str, at: &str, why: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{origin} is not a valid signature policy (nothing is accepted under it): {at}: {why}")
}

impl Policy {
    /// Reads a policy file; `registries_d` is where lookaside configuration is read.
    pub fn load(path: &Path, registries_d: Option<PathBuf>) -> Result<Policy> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("reading signature policy {}", path.display()))?;
        Self::parse(&bytes, &path.display().to_string(), registries_d)
    }

    fn parse(bytes: &[u8], origin: &str, registries_d: Option<PathBuf>) -> Result<Policy> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| invalid(origin, "the file", "not UTF-8 text"))?;
        let top = strict_json::object(text).map_err(|e| invalid(origin, "the file", e))?;
        top.only(&["default", "transports"])
            .map_err(|e| invalid(origin, "the top level", e))?;
        let default = match top.get("default") {
            Some(v) if v.get() != "null" => {
                requirements(v.get()).map_err(|e| invalid(origin, "default", format!("{e:#}")))?
            }
            _ => return Err(invalid(origin, "the top level", "\"default\" is missing")),
        };
        let mut all = Vec::new();
        if let Some(t) = top.get("transports") {
            let transports =
                strict_json::object(t.get()).map_err(|e| invalid(origin, "transports", e))?;
            for (name, scopes) in transports.fields() {
                let at = format!("transports.{}", parse::name_shown(name));
                let scopes =
                    strict_json::object(scopes.get()).map_err(|e| invalid(origin, &at, e))?;
                let mut these = Vec::new();
                for (scope, reqs) in scopes.fields() {
                    let at = format!("{at}.{}", parse::name_shown(scope));
                    if !scope.is_empty() {
                        valid_scope(name, scope).map_err(|e| invalid(origin, &at, e))?;
                    }
                    let reqs = requirements(reqs.get())
                        .map_err(|e| invalid(origin, &at, format!("{e:#}")))?;
                    these.push((scope.to_string(), reqs));
                }
                all.push((name.to_string(), these));
            }
        }
        Ok(Policy {
            default,
            transports: all,
            origin: origin.to_string(),
            registries_d,
            sigstore_namespaces: Vec::new(),
        })
    }

    /// The policy MCO renders from image policies (`policy`: the policy.json, read as
    /// any policy file, named `origin` in messages), with the registries.d namespaces
    /// its `sigstore-registries.yaml` gives `use-sigstore-attachments: true`.
    pub(crate) fn from_image_policies(
        policy: &[u8],
        origin: &str,
        registries_d: Option<PathBuf>,
        sigstore_namespaces: Vec<String>,
    ) -> Result<Policy> {
        let mut p = Self::parse(policy, origin, registries_d)?;
        p.sigstore_namespaces = sigstore_namespaces;
        Ok(p)
    }

    /// The requirements of `transport` for an image whose scopes, most specific first,
    /// are `scopes`, and the scope they come from.
    fn requirements_in(&self, transport: &str, scopes: &[String]) -> (&[Requirement], String) {
        if let Some((_, t)) = self.transports.iter().find(|(n, _)| n == transport) {
            let find = |s: &str| t.iter().find(|(k, _)| k == s).map(|(_, v)| v);
            for s in scopes.iter().map(String::as_str).chain([""]) {
                if let Some(reqs) = find(s) {
                    return (reqs, format!("transports.{transport}.{s:?}"));
                }
            }
        }
        (&self.default, "default".to_string())
    }

    /// The requirements for a registry reference, and the scope they come from.
    fn requirements(&self, r: &DockerRef) -> (&[Requirement], String) {
        self.requirements_in("docker", &registries_d::scopes(r))
    }

    /// Whether the policy accepts an image read from disk: `transport` is its
    /// containers-transports(5) name (`oci`, `oci-archive`, `docker-archive`) and `path`
    /// the layout or archive (`None` for `docker-archive`, which has no scopes). Such
    /// images carry no signatures, so only `insecureAcceptAnything` lets them through,
    /// as in containers/image.
    pub fn check_local(&self, transport: &str, path: Option<&Path>, shown: &str) -> Result<()> {
        let scopes: Vec<String> = match path {
            Some(p) => {
                let resolved = std::fs::canonicalize(p)
                    .with_context(|| format!("resolving {}", p.display()))?;
                let mut out = Vec::new();
                let mut s = resolved.to_string_lossy().into_owned();
                while s != "/" && !s.is_empty() {
                    out.push(s.clone());
                    match s.rfind('/') {
                        Some(i) => s.truncate(i),
                        None => break,
                    }
                }
                out
            }
            None => Vec::new(),
        };
        let (reqs, scope) = self.requirements_in(transport, &scopes);
        for req in reqs {
            let why = match req {
                Requirement::InsecureAcceptAnything => continue,
                Requirement::Reject => "images here are rejected",
                Requirement::SignedBaseLayer => "signedBaseLayer accepts no image",
                _ => "a signature was required, but an image read from disk has none",
            };
            return Err(PolicyRejected {
                reference: shown.to_string(),
                policy: self.origin.clone(),
                why: format!("{scope}: {why}"),
            }
            .into());
        }
        Ok(())
    }

    /// Whether the policy accepts the image. An error that is a [`PolicyRejected`] when
    /// it does not.
    pub fn check(&self, image: &Judged) -> Result<()> {
        self.check_with(image, &sigstore::NoAttachments)
    }

    /// [`Policy::check`], with the endpoint that served the image, from which its
    /// sigstore attachments are read.
    pub(crate) fn check_with(
        &self,
        image: &Judged,
        served_by: &dyn AttachmentSource,
    ) -> Result<()> {
        let (reqs, scope) = self.requirements(image.logical);
        let reject = |why: String| -> anyhow::Error {
            PolicyRejected {
                reference: image.logical.to_string(),
                policy: self.origin.clone(),
                why: format!("{scope}: {why}"),
            }
            .into()
        };
        let mut signatures: Option<Signatures> = None;
        for req in reqs {
            match req {
                Requirement::InsecureAcceptAnything => {}
                Requirement::Reject => return Err(reject("images here are rejected".into())),
                Requirement::SignedBaseLayer => {
                    return Err(reject(
                        "signedBaseLayer is not implemented (in containers/image either), so \
                         it accepts no image"
                            .into(),
                    ))
                }
                Requirement::SigstoreSigned(_) | Requirement::SignedBy(_) => {
                    if signatures.is_none() {
                        signatures = Some(self.signatures(image, served_by).map_err(|e| {
                            reject(format!("reading the image's signatures: {e:#}"))
                        })?);
                    }
                    let sigs = signatures.as_ref().expect("just read");
                    match req {
                        Requirement::SigstoreSigned(s) => sigstore_signed(s, image, sigs),
                        Requirement::SignedBy(sb) => signed_by(sb, image, sigs),
                        _ => unreachable!("matched above"),
                    }
                    .map_err(reject)?;
                }
            }
        }
        Ok(())
    }

    /// The image's signatures, read once, as containers/image's
    /// `GetSignaturesWithFormat` reads them: from the lookaside store of the registry that
    /// served it, then, when registries.d asks for them, every layer of its sigstore
    /// attachments. Failing to read any of them refuses the image, whatever the others.
    fn signatures(&self, image: &Judged, served_by: &dyn AttachmentSource) -> Result<Signatures> {
        let config =
            RegistriesD::load_with(self.registries_d.as_deref(), &self.sigstore_namespaces)?;
        let base = config.lookaside_base(image.physical)?;
        let store = parse::url_shown(base.as_str());
        let mut list: Vec<(String, Signature)> =
            registries_d::lookaside_signatures(&base, image.digest, image.offline)?
                .into_iter()
                .enumerate()
                .map(|(i, s)| (format!("signature {} in {store}", i + 1), s))
                .collect();
        let name = image.physical.name();
        let attachments = if !config.use_sigstore_attachments(image.physical) {
            format!(
                "sigstore attachments are not read for {name}: registries.d does not set \
                 use-sigstore-attachments: true for it"
            )
        } else {
            match Attachments::read(served_by, &name, image.digest)? {
                None => format!(
                    "{name} has no tag {}",
                    sigstore::attachment_tag(image.digest)
                ),
                Some(a) => {
                    for i in 0..a.len() {
                        let s = a.fetch(served_by, i)?;
                        list.push((
                            s.origin,
                            Signature::Sigstore {
                                media_type: s.media_type,
                                payload: s.payload,
                                annotations: s.annotations,
                            },
                        ));
                    }
                    format!("{} holds {} attachment(s)", a.origin, a.len())
                }
            }
        };
        Ok(Signatures {
            list,
            store,
            attachments,
        })
    }
}

/// An image's signatures, each with where it was read, and where they were looked for.
struct Signatures {
    list: Vec<(String, Signature)>,
    /// The lookaside store.
    store: String,
    /// What was found of sigstore attachments.
    attachments: String,
}

/// Whether `scope` (not `""`) is a valid scope of `transport`, as that transport's
/// `ValidatePolicyConfigurationScope` in containers/image says; transports it does not
/// know take any scope.
fn valid_scope(transport: &str, scope: &str) -> Result<(), String> {
    let absolute_clean = |s: &str| -> Result<(), String> {
        if !s.starts_with('/') {
            return Err("must be an absolute path".into());
        }
        if s == "/" {
            return Err("\"/\" is not a scope: use the default scope \"\"".into());
        }
        let clean = s.len() > 1
            && !s.ends_with('/')
            && !s.contains("//")
            && !s.split('/').any(|c| c == "." || c == "..");
        if !clean {
            return Err("not a canonical path".into());
        }
        Ok(())
    };
    match transport {
        "dir" | "oci" | "oci-archive" | "sif" => absolute_clean(scope),
        "docker-archive" | "tarball" => Err(format!(
            "{transport}: does not support any scope but the default \"\""
        )),
        "docker-daemon" if simple_signing::valid_digest(scope).is_ok() => {
            Err("docker-daemon: a digest is not a scope".into())
        }
        "containers-storage" => {
            // `[STORE]NAME...`: STORE is `DRIVER@/PATH` or `/PATH`.
            let store = scope
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .map(|(store, _)| store)
                .filter(|s| !s.is_empty())
                .ok_or("not a valid containers-storage scope ([STORE]NAME)")?;
            let path = match store.split_once('@') {
                Some((d, p)) if !d.is_empty() && !p.is_empty() => p,
                Some(_) => return Err("not a valid containers-storage scope ([STORE]NAME)".into()),
                None => store,
            };
            if !path.starts_with('/') {
                return Err("containers-storage: the store path must be absolute".into());
            }
            Ok(())
        }
        "openshift" => {
            // ^[^/]*(/[^:/]*(/[^:/]*(:[^:/]*)?)?)?$
            let parts: Vec<&str> = scope.split('/').collect();
            let ok = parts.len() <= 3
                && parts[1..].iter().enumerate().all(|(i, p)| {
                    let colons = p.matches(':').count();
                    colons == 0 || (i == 1 && colons == 1)
                });
            if ok {
                Ok(())
            } else {
                Err("not a valid openshift scope".into())
            }
        }
        _ => Ok(()),
    }
}

/// Reads a requirement list.
fn requirements(text: &str) -> Result<Vec<Requirement>> {
    let list = strict_json::array(text)?;
    if list.is_empty() {
        bail!("the list of requirements must not be empty");
    }
    list.iter()
        .enumerate()
        .map(|(i, r)| requirement(r.get()).with_context(|| format!("requirement {}", i + 1)))
        .collect()
}

fn requirement(text: &str) -> Result<Requirement> {
    let o = strict_json::object(text)?;
    let kind: String = o.parse("type")?.unwrap_or_default();
    Ok(match kind.as_str() {
        "insecureAcceptAnything" => {
            o.exactly(&["type"])?;
            Requirement::InsecureAcceptAnything
        }
        "reject" => {
            o.exactly(&["type"])?;
            Requirement::Reject
        }
        "signedBy" => Requirement::SignedBy(signed_by_requirement(&o)?),
        "signedBaseLayer" => {
            o.exactly(&["type", "baseLayerIdentity"])?;
            identity(o.get("baseLayerIdentity").expect("checked").get())?;
            Requirement::SignedBaseLayer
        }
        "sigstoreSigned" => Requirement::SigstoreSigned(Box::new(
            SigstoreSigned::parse(&o, identity, Identity::MatchRepoDigestOrExact)
                .context("sigstoreSigned")?,
        )),
        other => bail!("unknown requirement type {}", parse::name_shown(other)),
    })
}

/// The key types containers/image parses; only `GPGKeys` is implemented (there too).
const KEY_TYPES: &[&str] = &[
    "GPGKeys",
    "signedByGPGKeys",
    "X509Certificates",
    "signedByX509CAs",
];

fn signed_by_requirement(o: &Object) -> Result<SignedBy> {
    o.only(&[
        "type",
        "keyType",
        "keyPath",
        "keyPaths",
        "keyData",
        "signedIdentity",
    ])?;
    let key_type: String = o.parse("keyType")?.unwrap_or_default();
    if !KEY_TYPES.contains(&key_type.as_str()) {
        bail!("unrecognized keyType {}", parse::name_shown(&key_type));
    }
    // As containers/image: exactly one of the three keys present, then its value given.
    let present = ["keyPath", "keyPaths", "keyData"]
        .iter()
        .filter(|k| o.get(k).is_some())
        .count();
    if present != 1 {
        bail!("exactly one of keyPath, keyPaths and keyData must be specified");
    }
    let keys = if let Some(p) = o.parse::<Option<String>>("keyPath")?.flatten() {
        KeySource::Path(p.into())
    } else if let Some(ps) = o.parse::<Option<Vec<String>>>("keyPaths")?.flatten() {
        KeySource::Paths(ps.into_iter().map(PathBuf::from).collect())
    } else if let Some(d) = o.parse::<Option<String>>("keyData")?.flatten() {
        KeySource::Data(
            base64::engine::general_purpose::STANDARD
                .decode(d.replace(['\r', '\n'], ""))
                .map_err(|_| anyhow!("keyData is not base64"))?,
        )
    } else {
        bail!("exactly one of keyPath, keyPaths and keyData must be specified");
    };
    if matches!(&keys, KeySource::Path(p) if p.as_os_str().is_empty()) {
        bail!("exactly one of keyPath, keyPaths and keyData must be specified");
    }
    let identity = match o.get("signedIdentity") {
        Some(v) => identity(v.get())?,
        None => Identity::MatchRepoDigestOrExact,
    };
    Ok(SignedBy {
        key_type,
        keys,
        identity,
    })
}

fn identity(text: &str) -> Result<Identity> {
    let o = strict_json::object(text).map_err(|e| anyhow!("signedIdentity: {e}"))?;
    let kind: String = o.parse("type")?.unwrap_or_default();
    let at = |e: strict_json::StrictError| anyhow!("signedIdentity: {e}");
    Ok(match kind.as_str() {
        "matchExact" | "matchRepoDigestOrExact" | "matchRepository" => {
            o.exactly(&["type"]).map_err(at)?;
            match kind.as_str() {
                "matchExact" => Identity::MatchExact,
                "matchRepository" => Identity::MatchRepository,
                _ => Identity::MatchRepoDigestOrExact,
            }
        }
        "exactReference" => {
            o.exactly(&["type", "dockerReference"]).map_err(at)?;
            let s: String = o.require("dockerReference").map_err(at)?;
            let r = DockerRef::parse_normalized_named(&s)
                .map_err(|e| anyhow!("exactReference: invalid dockerReference: {e}"))?;
            if name_only(&r) {
                bail!("exactReference: dockerReference {s:?} has neither a tag nor a digest");
            }
            Identity::ExactReference(r)
        }
        "exactRepository" => {
            o.exactly(&["type", "dockerRepository"]).map_err(at)?;
            let s: String = o.require("dockerRepository").map_err(at)?;
            let r = DockerRef::parse_normalized_named(&s)
                .map_err(|e| anyhow!("exactRepository: invalid dockerRepository: {e}"))?;
            Identity::ExactRepository(r)
        }
        "remapIdentity" => {
            o.exactly(&["type", "prefix", "signedPrefix"]).map_err(at)?;
            let prefix: String = o.require("prefix").map_err(at)?;
            let signed_prefix: String = o.require("signedPrefix").map_err(at)?;
            for p in [&prefix, &signed_prefix] {
                if !valid_remap_prefix(p) {
                    bail!("remapIdentity: prefix {p:?} is not valid (a registry, or a registry and repository path, with no trailing /)");
                }
            }
            Identity::RemapIdentity {
                prefix,
                signed_prefix,
            }
        }
        other => bail!("signedIdentity: unknown type {}", parse::name_shown(other)),
    })
}

/// A host name or address with an optional port, as docker/reference's `DomainRegexp`.
fn valid_domain(d: &str) -> bool {
    let (host, port) = match d.rsplit_once(':') {
        Some((h, p)) if !h.contains(']') || h.ends_with(']') => (h, Some(p)),
        _ => (d, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
    }
    !host.is_empty()
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// A repository path component, as docker/reference's `PathComponent`.
fn valid_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let x = b[i];
        if x.is_ascii_lowercase() || x.is_ascii_digit() {
            i += 1;
            continue;
        }
        // A separator: `.`, `_`, `__` or a run of `-`, between alphanumerics.
        let start = i;
        while i < b.len() && !(b[i].is_ascii_lowercase() || b[i].is_ascii_digit()) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|s| s == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// containers/image's `validateIdentityRemappingPrefix`.
fn valid_remap_prefix(s: &str) -> bool {
    if valid_domain(s) {
        return true;
    }
    match s.split_once('/') {
        Some((domain, path)) => valid_domain(domain) && path.split('/').all(valid_component),
        None => false,
    }
}

fn name_only(r: &DockerRef) -> bool {
    r.tag.is_none() && r.digest.is_none()
}

/// `matchRepoDigestOrExactReferenceValues`.
fn repo_digest_or_exact(intended: &DockerRef, signed: &DockerRef) -> bool {
    if name_only(signed) {
        return false;
    }
    if intended.tag.is_some() {
        signed.to_string() == intended.to_string()
    } else if intended.digest.is_some() {
        signed.name() == intended.name()
    } else {
        false
    }
}

/// Whether `identity` accepts the signed reference `signed` (unparsed, as signed) for
/// the image asked for as `intended`.
fn identity_matches(identity: &Identity, intended: &DockerRef, signed: &str) -> bool {
    let Ok(signed) = DockerRef::parse_normalized_named(signed) else {
        return false;
    };
    match identity {
        Identity::MatchExact => {
            !name_only(intended)
                && !name_only(&signed)
                && signed.to_string() == intended.to_string()
        }
        Identity::MatchRepoDigestOrExact => repo_digest_or_exact(intended, &signed),
        Identity::MatchRepository => signed.name() == intended.name(),
        Identity::ExactReference(want) => {
            !name_only(&signed) && signed.to_string() == want.to_string()
        }
        Identity::ExactRepository(want) => signed.name() == want.name(),
        Identity::RemapIdentity {
            prefix,
            signed_prefix,
        } => {
            let name = intended.name();
            let matches = name == *prefix
                || (name.starts_with(prefix.as_str())
                    && name.as_bytes().get(prefix.len()) == Some(&b'/'));
            let remapped = if matches {
                let s = intended
                    .to_string()
                    .replacen(prefix.as_str(), signed_prefix, 1);
                // reference.ParseNamed: the rewritten reference must be in canonical form.
                match DockerRef::parse_normalized_named(&s) {
                    Ok(r) if r.to_string() == s => r,
                    _ => return false,
                }
            } else {
                intended.clone()
            };
            repo_digest_or_exact(&remapped, &signed)
        }
    }
}

/// The bytes of a `signedBy` requirement's keys.
fn key_blobs(keys: &KeySource) -> Result<Vec<(String, Vec<u8>)>> {
    let read = |p: &Path| -> Result<(String, Vec<u8>)> {
        let b = std::fs::read(p).with_context(|| format!("reading key {}", p.display()))?;
        Ok((p.display().to_string(), b))
    };
    Ok(match keys {
        KeySource::Path(p) => vec![read(p)?],
        KeySource::Paths(ps) => ps.iter().map(|p| read(p)).collect::<Result<_>>()?,
        KeySource::Data(d) => vec![("keyData".to_string(), d.clone())],
    })
}

/// Whether the manifest's sha256 digest is `claimed` (`manifest.MatchesDigest`).
fn manifest_matches(manifest: &[u8], claimed: &str) -> bool {
    // containers/image's `manifest.MatchesDigest` compares the manifest's sha256 digest
    // only ("This should eventually support various digest types"): a signature that
    // names a sha384 or sha512 digest of the same manifest matches nothing.
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(manifest))) == claimed
}

/// One `sigstoreSigned` requirement (`prSigstoreSigned.isRunningImageAllowed`): `Ok`
/// when one sigstore signature is acceptable, else why none is.
fn sigstore_signed(
    req: &SigstoreSigned<Identity>,
    image: &Judged,
    sigs: &Signatures,
) -> Result<(), String> {
    // A key or certificate that cannot be read or parsed refuses the image
    // (prepareTrustRoot).
    let root = req.trust_root().map_err(|e| format!("{e:#}"))?;
    let digest_ok = |claimed: &str| -> Result<()> {
        if !manifest_matches(image.manifest, claimed) {
            bail!(
                "it signs manifest {claimed}, not the image's {}",
                image.digest
            );
        }
        Ok(())
    };
    let identity_ok = |signed: &str| -> Result<()> {
        if !identity_matches(req.signed_identity(), image.logical, signed) {
            bail!(
                "it signs the identity {signed:?}, which signedIdentity does not accept for {}",
                image.logical
            );
        }
        Ok(())
    };
    let mut whys = Vec::new();
    let (mut simple, mut others) = (0, 0);
    for (origin, sig) in &sigs.list {
        match sig {
            Signature::SimpleSigning(_) => simple += 1,
            Signature::Sigstore { media_type, .. }
                if media_type != sigstore::SIGNATURE_MEDIA_TYPE =>
            {
                others += 1
            }
            Signature::Sigstore {
                payload,
                annotations,
                ..
            } => match sigstore::verify(payload, annotations, &root, &digest_ok, &identity_ok) {
                Ok(()) => return Ok(()),
                Err(e) => whys.push(format!("{origin}: {e:#}")),
            },
        }
    }
    if whys.is_empty() {
        return Err(format!(
            "a sigstore signature was required, but none was found ({}; the signature \
             store {} holds {simple} simple signing signature(s), and {others} other \
             attachment(s) are not signatures)",
            sigs.attachments, sigs.store
        ));
    }
    Err(format!(
        "no sigstore signature is acceptable: {}",
        whys.join("; ")
    ))
}

/// One `signedBy` requirement: `Ok` when one simple signing signature is acceptable,
/// else why none is.
fn signed_by(sb: &SignedBy, image: &Judged, sigs: &Signatures) -> Result<(), String> {
    let simple: Vec<(&str, &[u8])> = sigs
        .list
        .iter()
        .filter_map(|(origin, s)| match s {
            Signature::SimpleSigning(b) => Some((origin.as_str(), b.as_slice())),
            Signature::Sigstore { .. } => None,
        })
        .collect();
    if simple.is_empty() {
        return Err(format!(
            "a signature was required, but none was found (in the signature store {}, \
             which registries.d gives for {})",
            sigs.store,
            image.physical.name()
        ));
    }
    let judge = |sig: &[u8]| -> Result<()> {
        if sb.key_type != "GPGKeys" {
            bail!("keyType {:?} is not implemented", sb.key_type);
        }
        let keyring = simple_signing::load_keys(&key_blobs(&sb.keys)?)?;
        let payload = simple_signing::verify(sig, &keyring)?;
        let claims = simple_signing::claims(&payload)?;
        if !manifest_matches(image.manifest, &claims.digest) {
            bail!(
                "it signs manifest {}, not the image's {}",
                claims.digest,
                image.digest
            );
        }
        if !identity_matches(&sb.identity, image.logical, &claims.reference) {
            bail!(
                "it signs the identity {:?}, which signedIdentity does not accept for {}",
                claims.reference,
                image.logical
            );
        }
        Ok(())
    };
    let mut whys = Vec::new();
    for (origin, sig) in simple {
        match judge(sig) {
            Ok(()) => return Ok(()),
            Err(e) => whys.push(format!("{origin}: {e:#}")),
        }
    }
    Err(format!("no signature is acceptable: {}", whys.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> DockerRef {
        s.parse().unwrap()
    }

    const D: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn judged<'a>(r: &'a DockerRef, d: &'a Digest) -> Judged<'a> {
        Judged {
            logical: r,
            physical: r,
            digest: d,
            manifest: b"{}",
            offline: false,
        }
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
        let d: Digest = D.parse().unwrap();
        let refused = r("docker.io/library/x:1");
        let e = p.check(&judged(&refused, &d)).unwrap_err();
        assert!(e.downcast_ref::<PolicyRejected>().is_some());
        assert!(format!("{e}").contains("rejected"), "{e}");
        let accepted = r("registry.example/ocp/release:1");
        p.check(&judged(&accepted, &d)).unwrap();
    }

    #[test]
    fn invalid_policies_are_refused_whole() {
        for (text, want) in [
            (r#"{"default":[]}"#, "must not be empty"),
            (r#"{}"#, "\"default\" is missing"),
            (
                r#"{"default":[{"type":"maybe"}]}"#,
                "unknown requirement type",
            ),
            (r#"{"default":[{"type":"reject"}],"x":1}"#, "unknown key"),
            (
                r#"{"default":[{"type":"reject"}],"default":[]}"#,
                "duplicate key",
            ),
            (
                r#"{"default":[{"type":"insecureAcceptAnything","keyPath":"/k"}]}"#,
                "unknown key",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"X509","keyPath":"/k"}]}"#,
                "keyType",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"GPGKeys"}]}"#,
                "exactly one of",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k","signedIdentty":{"type":"matchExact"}}]}"#,
                "unknown key",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k","signedIdentity":{"type":"exactReference","dockerReference":"reg.example/a"}}]}"#,
                "neither a tag nor a digest",
            ),
            (
                r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k","signedIdentity":{"type":"remapIdentity","prefix":"reg.example/a/","signedPrefix":"reg.example/b"}}]}"#,
                "not valid",
            ),
        ] {
            let e = format!(
                "{:#}",
                Policy::parse(text.as_bytes(), "p.json", None).unwrap_err()
            );
            assert!(e.contains("p.json") && e.contains(want), "{text}: {e}");
        }
        // Another transport's scopes are checked too; a key type containers/image parses
        // but does not implement is valid until an image needs it.
        Policy::parse(
            br#"{"default":[{"type":"signedBy","keyType":"X509Certificates","keyPath":"/k"}],
                "transports":{"atomic":{"x":[{"type":"insecureAcceptAnything"}]}}}"#,
            "p.json",
            None,
        )
        .unwrap();
    }

    #[test]
    fn identities() {
        let by_digest = r(&format!("registry.example/ocp/release@{D}"));
        let tagged = r("registry.example/ocp/release:4.16.3");
        let signed = "registry.example/ocp/release:4.16.3";
        let other = "registry.example/ocp/other:4.16.3";
        use Identity::*;
        let m = identity_matches;
        assert!(m(&MatchRepoDigestOrExact, &by_digest, signed));
        assert!(!m(&MatchRepoDigestOrExact, &by_digest, other));
        assert!(m(&MatchRepoDigestOrExact, &tagged, signed));
        // A signed identity without tag or digest matches nothing here.
        assert!(!m(
            &MatchRepoDigestOrExact,
            &by_digest,
            "registry.example/ocp/release"
        ));
        assert!(!m(
            &MatchRepoDigestOrExact,
            &r("registry.example/ocp/release:latest"),
            "registry.example/ocp/release"
        ));
        assert!(!m(
            &MatchRepoDigestOrExact,
            &r("registry.example/ocp/release:4.16.4"),
            signed
        ));
        assert!(!m(&MatchExact, &by_digest, signed));
        assert!(m(
            &MatchRepository,
            &r("registry.example/ocp/release:x"),
            signed
        ));
        // registry-1.docker.io is not docker.io in a signed identity; index.docker.io is.
        let hub = r("docker.io/library/busybox:1");
        assert!(!m(
            &MatchRepoDigestOrExact,
            &hub,
            "registry-1.docker.io/library/busybox:1"
        ));
        assert!(m(
            &MatchRepoDigestOrExact,
            &hub,
            "index.docker.io/library/busybox:1"
        ));
        assert!(m(&MatchRepoDigestOrExact, &hub, "busybox:1"));
        let remap = RemapIdentity {
            prefix: "mirror.example/ocp".into(),
            signed_prefix: "registry.example/ocp".into(),
        };
        assert!(m(
            &remap,
            &r(&format!("mirror.example/ocp/release@{D}")),
            signed
        ));
        assert!(!m(
            &remap,
            &r(&format!("mirror.example/ocpx/release@{D}")),
            signed
        ));
    }

    #[test]
    fn remap_prefixes() {
        for ok in [
            "reg.example",
            "reg.example:5000",
            "reg.example/ocp",
            "ocp/release",
            "[::1]:5000/a",
        ] {
            assert!(valid_remap_prefix(ok), "{ok}");
        }
        for bad in [
            "reg.example/",
            "reg.example/ocp/",
            "reg.example/UP",
            "",
            "a//b",
        ] {
            assert!(!valid_remap_prefix(bad), "{bad}");
        }
    }
}
