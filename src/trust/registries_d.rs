//! Where an image's signatures are, as containers-registries.d(5) says and
//! containers/image reads it (`docker/registries_d.go`), and reading them from a
//! lookaside store.
//!
//! - Only `*.yaml` files of the directory are read; a `docker` namespace or
//!   `default-docker` defined in two files is an error. Keys this tool does not use are
//!   ignored, as containers/image ignores them.
//! - For an image, the first of its scopes (`host/repo:tag` or `host/repo@digest`,
//!   `host/repo`, its parent namespaces, `host`, `*.domain`...) whose namespace gives a
//!   `lookaside` (or the old name `sigstore`) wins, then `default-docker`, then the
//!   built-in store: `/var/lib/containers/sigstore` for root, else
//!   `~/.local/share/containers/sigstore`.
//! - The store holds `BASE/REPO@sha256=HEX/signature-N`, N from 1 until one is missing
//!   (at most [`MAX_LOOKASIDE_SIGNATURES`]; reaching that is an error, as there). REPO is
//!   the repository of the registry that served the image, a mirror included.
//! - A signature file in no signature format is an error for the whole image, not one
//!   signature that fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::image::{Digest, DockerRef};
use crate::io::{parse, read_at_most};

/// containers/image's limit (`maxLookasideSignatures`): a store that has this many
/// signatures for one image is taken for a broken server.
pub const MAX_LOOKASIDE_SIGNATURES: usize = 128;
/// containers/image's `iolimits.MaxSignatureBodySize`.
pub const MAX_SIGNATURE_BYTES: u64 = 4 * 1024 * 1024;

/// The file MCO writes into registries.d for its image policies
/// (`sigstoreRegistriesConfigFilePath`).
pub(crate) const SIGSTORE_REGISTRIES_FILE: &str = "sigstore-registries.yaml";

/// The namespaces a registries.d directory defines.
#[derive(Clone, Debug, Default)]
pub(crate) struct RegistriesD {
    default_docker: Option<Namespace>,
    docker: BTreeMap<String, Namespace>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    default_docker: Option<Namespace>,
    docker: Option<BTreeMap<String, Namespace>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct Namespace {
    #[serde(default)]
    lookaside: String,
    #[serde(default)]
    sigstore: String,
    use_sigstore_attachments: Option<bool>,
}

impl Namespace {
    /// Where signatures are read from: `lookaside`, else `sigstore`.
    fn read_url(&self) -> Option<&str> {
        [&self.lookaside, &self.sigstore]
            .into_iter()
            .find(|u| !u.is_empty())
            .map(String::as_str)
    }
}

/// The scopes of a registry reference, most specific first, as containers/image's
/// `PolicyConfigurationIdentity` and `PolicyConfigurationNamespaces` give them; both
/// the policy's `docker` scopes and registries.d namespaces are looked up in this order.
pub(crate) fn scopes(r: &DockerRef) -> Vec<String> {
    let name = r.name();
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
    let host = n.split(':').next().unwrap_or(n);
    let mut labels: &str = host;
    while let Some(i) = labels.find('.') {
        labels = &labels[i + 1..];
        out.push(format!("*.{labels}"));
    }
    out
}

impl RegistriesD {
    /// Reads a registries.d directory; a missing one defines nothing.
    #[cfg(test)]
    pub(crate) fn load(dir: &Path) -> Result<RegistriesD> {
        Self::load_with(Some(dir), &[])
    }

    /// Reads a registries.d directory (a missing one defines nothing), with the file MCO
    /// writes for image policies,
    /// [`SIGSTORE_REGISTRIES_FILE`], in memory: `use-sigstore-attachments: true` for each
    /// of `sigstore` (none: no such file). It replaces a file of that name in `dir`, as
    /// MCO's replaces it on the node; a namespace also defined in another file is an
    /// error there, as between any two files.
    pub(crate) fn load_with(dir: Option<&Path>, sigstore: &[String]) -> Result<RegistriesD> {
        let mut merged = RegistriesD::default();
        let entries = match dir.map(std::fs::read_dir) {
            Some(Ok(e)) => Some(e),
            None => None,
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
            Some(Err(e)) => {
                let dir = dir.expect("read");
                return Err(e).with_context(|| format!("reading {}", dir.display()));
            }
        };
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(".yaml"))
            })
            .filter(|p| {
                sigstore.is_empty()
                    || p.file_name()
                        .is_none_or(|n| n.to_string_lossy() != SIGSTORE_REGISTRIES_FILE)
            })
            .collect();
        files.sort();
        let mut default_from: Option<PathBuf> = None;
        let mut ns_from: BTreeMap<String, PathBuf> = BTreeMap::new();
        for f in files {
            let text = match std::fs::read_to_string(&f) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {}", f.display())),
            };
            let shown = f.display().to_string();
            let c: Option<File> = parse::yaml(&text, &shown, "registries.d file")?;
            let c = c.unwrap_or_default();
            if let Some(d) = c.default_docker {
                if let Some(first) = &default_from {
                    bail!(
                        "registries.d: \"default-docker\" is defined both in {} and {shown}; \
                         keep one",
                        first.display()
                    );
                }
                merged.default_docker = Some(d);
                default_from = Some(f.clone());
            }
            for (name, ns) in c.docker.unwrap_or_default() {
                if let Some(first) = ns_from.get(&name) {
                    bail!(
                        "registries.d: the \"docker\" namespace {} is defined both in {} and \
                         {shown}; keep one",
                        parse::name_shown(&name),
                        first.display()
                    );
                }
                ns_from.insert(name.clone(), f.clone());
                merged.docker.insert(name, ns);
            }
        }
        for name in sigstore {
            if let Some(first) = ns_from.get(name) {
                bail!(
                    "registries.d: the \"docker\" namespace {} is defined both in {} and in \
                     the {SIGSTORE_REGISTRIES_FILE} that --image-policy adds (as MCO writes it \
                     for the node); keep one",
                    parse::name_shown(name),
                    first.display()
                );
            }
            merged.docker.insert(
                name.clone(),
                Namespace {
                    use_sigstore_attachments: Some(true),
                    ..Namespace::default()
                },
            );
        }
        Ok(merged)
    }

    /// The namespaces that apply to `r`, most specific first, then `default-docker`.
    fn namespaces<'a>(&'a self, r: &DockerRef) -> impl Iterator<Item = &'a Namespace> {
        let scoped: Vec<&Namespace> = scopes(r)
            .iter()
            .filter_map(|s| self.docker.get(s))
            .collect();
        scoped.into_iter().chain(self.default_docker.as_ref())
    }

    /// The lookaside store's base URL for `r` (the reference of the registry that
    /// serves the image), with `r`'s repository appended.
    pub(crate) fn lookaside_base(&self, r: &DockerRef) -> Result<url::Url> {
        let top = self.namespaces(r).find_map(Namespace::read_url);
        let mut base = match top {
            Some(u) => url::Url::parse(u).map_err(|e| {
                anyhow!(
                    "registries.d: invalid signature storage URL {}: {e}",
                    parse::url_shown(u)
                )
            })?,
            None => builtin_store(),
        };
        let path = format!("{}/{}", base.path(), r.repository);
        base.set_path(&path);
        Ok(base)
    }

    /// Whether sigstore signatures are read from `sha256-HEX.sig` tags for `r`.
    pub(crate) fn use_sigstore_attachments(&self, r: &DockerRef) -> bool {
        self.namespaces(r)
            .find_map(|n| n.use_sigstore_attachments)
            .unwrap_or(false)
    }
}

/// containers/image's built-in lookaside store.
fn builtin_store() -> url::Url {
    let dir = if rustix::process::geteuid().is_root() {
        PathBuf::from("/var/lib/containers/sigstore")
    } else {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(".local/share/containers/sigstore")
    };
    url::Url::from_file_path(&dir).unwrap_or_else(|_| {
        url::Url::parse("file:///var/lib/containers/sigstore").expect("a valid URL")
    })
}

/// One signature as a store holds it.
#[derive(Clone, Debug)]
pub(crate) enum Signature {
    /// An OpenPGP "simple signing" signature.
    SimpleSigning(Vec<u8>),
    /// A sigstore signature: the payload's media type, the payload and its annotations.
    Sigstore {
        media_type: String,
        payload: Vec<u8>,
        annotations: BTreeMap<String, String>,
    },
}

/// What a signature blob holds, as containers/image's `signature.FromBlob` tells.
pub(crate) fn from_blob(blob: &[u8]) -> Result<Signature> {
    let Some(&first) = blob.first() else {
        bail!("an empty signature");
    };
    match first {
        // OpenPGP: compressed data, a one-pass signature or a signature packet.
        0xA0..=0xA3 | 0xC8 | 0x90..=0x92 | 0x3d | 0xC4 | 0x88..=0x8B | 0xC2 => {
            Ok(Signature::SimpleSigning(blob.to_vec()))
        }
        0x00 => {
            let rest = &blob[1..];
            let nl = rest
                .iter()
                .position(|b| *b == b'\n')
                .ok_or_else(|| anyhow!("invalid signature format, missing newline"))?;
            let (format, chunk) = (&rest[..nl], &rest[nl + 1..]);
            if format.iter().any(|b| *b < 32 || *b >= 0x7f) {
                bail!("invalid signature format, non-ASCII byte");
            }
            match format {
                b"simple-signing" => Ok(Signature::SimpleSigning(chunk.to_vec())),
                b"sigstore-json" => sigstore_from_chunk(chunk),
                _ => bail!(
                    "unrecognized signature format {}",
                    parse::name_shown(&String::from_utf8_lossy(format))
                ),
            }
        }
        b => bail!("unrecognized signature format, starting with binary {b:#x}"),
    }
}

/// The lookaside form of a sigstore signature: JSON with `mimeType`, `payload` (base64)
/// and `annotations` (containers/image's `internal/signature/sigstore.go`).
fn sigstore_from_chunk(chunk: &[u8]) -> Result<Signature> {
    // Missing fields are empty, as Go's json.Unmarshal leaves them: such a signature
    // then fails on its own, without refusing the others.
    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct Stored {
        mime_type: String,
        #[serde(with = "base64_bytes")]
        payload: Vec<u8>,
        annotations: BTreeMap<String, String>,
    }

    mod base64_bytes {
        use base64::Engine as _;
        use serde::{Deserialize, Deserializer};
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            let s = String::deserialize(d)?;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| serde::de::Error::custom("payload is not base64"))
        }
    }
    let s: Stored = serde_json::from_slice(chunk)
        .map_err(|e| anyhow!("invalid sigstore signature: {}", parse::json_kind(&e)))?;
    Ok(Signature::Sigstore {
        media_type: s.mime_type,
        payload: s.payload,
        annotations: s.annotations,
    })
}

/// The signatures of manifest `digest` in the lookaside store at `base`. `offline`: a
/// store on the network is an error, not a store without signatures.
pub(crate) fn lookaside_signatures(
    base: &url::Url,
    digest: &Digest,
    offline: bool,
) -> Result<Vec<Signature>> {
    if offline && base.scheme() != "file" {
        bail!(
            "the signature store {} is on the network and --offline forbids the network; \
             run once online, or keep the signatures in a file:// store",
            parse::url_shown(base.as_str())
        );
    }
    let mut out = Vec::new();
    for n in 1..=MAX_LOOKASIDE_SIGNATURES + 1 {
        if n > MAX_LOOKASIDE_SIGNATURES {
            bail!(
                "the signature store has {MAX_LOOKASIDE_SIGNATURES} or more signatures for \
                 {digest}, taken for a broken store (as containers/image does)"
            );
        }
        let mut url = base.clone();
        let (alg, hex) = digest
            .to_string()
            .split_once(':')
            .map(|(a, h)| (a.to_string(), h.to_string()))
            .ok_or_else(|| anyhow!("invalid digest {digest}"))?;
        url.set_path(&format!("{}@{alg}={hex}/signature-{n}", base.path()));
        match fetch(&url)? {
            None => break,
            Some(blob) => out.push(from_blob(&blob).with_context(|| {
                format!("parsing signature {}", parse::url_shown(url.as_str()))
            })?),
        }
    }
    Ok(out)
}

/// Reads one lookaside URL: `None` when there is no such signature.
fn fetch(url: &url::Url) -> Result<Option<Vec<u8>>> {
    let shown = parse::url_shown(url.as_str());
    match url.scheme() {
        "file" => {
            let path = url
                .to_file_path()
                .map_err(|_| anyhow!("{shown}: not a local path"))?;
            match std::fs::File::open(&path) {
                Ok(f) => {
                    let b = read_at_most(f, MAX_SIGNATURE_BYTES)
                        .with_context(|| format!("reading {}", path.display()))?
                        .ok_or_else(|| anyhow!("{}: too big for a signature", path.display()))?;
                    Ok(Some(b))
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
            }
        }
        "http" | "https" => {
            crate::io::install_tls_provider();
            let resp = reqwest::blocking::Client::builder()
                .user_agent(concat!("mcd-inject/", env!("CARGO_PKG_VERSION")))
                .build()?
                .get(url.as_str())
                .send()
                // Neither the URL nor the error (which would name it) keeps its user.
                .map_err(reqwest::Error::without_url)
                .with_context(|| format!("fetching signature {shown}"))?;
            if resp.status() == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if resp.status() != reqwest::StatusCode::OK {
                bail!("fetching signature {shown}: {}", resp.status());
            }
            let b = read_at_most(resp, MAX_SIGNATURE_BYTES)?
                .ok_or_else(|| anyhow!("{shown}: too big for a signature"))?;
            Ok(Some(b))
        }
        _ => bail!("signature store {shown}: only file://, http:// and https:// are supported"),
    }
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

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        d
    }

    #[test]
    fn only_yaml_files_and_no_namespace_twice() {
        let d = dir_with(&[
            (
                "a.yaml",
                "docker:\n  reg.example/ocp:\n    lookaside: file:///a\n",
            ),
            ("b.yml", "default-docker:\n  lookaside: file:///yml\n"),
        ]);
        let c = RegistriesD::load(d.path()).unwrap();
        let base = c.lookaside_base(&r("reg.example/ocp/x:1")).unwrap();
        assert_eq!(base.as_str(), "file:///a/ocp/x");
        // The .yml file is not read: the built-in store.
        let other = c.lookaside_base(&r("other.example/x:1")).unwrap();
        assert!(other.path().ends_with("/containers/sigstore/x"), "{other}");

        let d = dir_with(&[
            (
                "a.yaml",
                "docker:\n  reg.example/ocp:\n    lookaside: file:///a\n",
            ),
            (
                "b.yaml",
                "docker:\n  reg.example/ocp:\n    lookaside: file:///b\n",
            ),
        ]);
        let e = format!("{:#}", RegistriesD::load(d.path()).unwrap_err());
        assert!(e.contains("defined both in"), "{e}");
    }

    /// `--image-policy`'s namespaces, as MCO's sigstore-registries.yaml: that file of
    /// the directory is replaced, another file's namespace is kept, a namespace in both
    /// is an error, and without a directory they are all there is.
    #[test]
    fn the_image_policies_sigstore_registries_file() {
        let d = dir_with(&[
            (
                "sigstore-registries.yaml",
                "docker:\n  old.example:\n    use-sigstore-attachments: true\n",
            ),
            (
                "other.yaml",
                "docker:\n  reg.example:\n    use-sigstore-attachments: false\n    lookaside: file:///o\n",
            ),
        ]);
        let scopes = ["new.example/ns".to_string(), "mirror.example".to_string()];
        let c = RegistriesD::load_with(Some(d.path()), &scopes).unwrap();
        assert!(c.use_sigstore_attachments(&r("new.example/ns/x:1")));
        assert!(c.use_sigstore_attachments(&r("mirror.example/a/b:1")));
        assert!(!c.use_sigstore_attachments(&r("new.example/other:1")));
        assert!(!c.use_sigstore_attachments(&r("old.example/x:1")));
        assert!(!c.use_sigstore_attachments(&r("reg.example/x:1")));
        assert_eq!(
            c.lookaside_base(&r("reg.example/x:1")).unwrap().as_str(),
            "file:///o/x"
        );
        // Without image policies, the directory's file is read as any other.
        let c = RegistriesD::load_with(Some(d.path()), &[]).unwrap();
        assert!(c.use_sigstore_attachments(&r("old.example/x:1")));
        let e = format!(
            "{:#}",
            RegistriesD::load_with(Some(d.path()), &["reg.example".to_string()]).unwrap_err()
        );
        assert!(
            e.contains("\"reg.example\" is defined both in")
                && e.contains(
                    "other.yaml and in the sigstore-registries.yaml that --image-policy adds"
                ),
            "{e}"
        );
        let c = RegistriesD::load_with(None, &scopes).unwrap();
        assert!(c.use_sigstore_attachments(&r("mirror.example/a:1")));
    }

    #[test]
    fn tagged_and_wildcard_scopes() {
        let d = dir_with(&[(
            "a.yaml",
            "docker:\n  reg.example/ocp/x:1:\n    lookaside: file:///tag\n  \
             '*.example':\n    lookaside: file:///wild\n    use-sigstore-attachments: true\n",
        )]);
        let c = RegistriesD::load(d.path()).unwrap();
        assert_eq!(
            c.lookaside_base(&r("reg.example/ocp/x:1"))
                .unwrap()
                .as_str(),
            "file:///tag/ocp/x"
        );
        assert_eq!(
            c.lookaside_base(&r("reg.example/ocp/x:2"))
                .unwrap()
                .as_str(),
            "file:///wild/ocp/x"
        );
        assert!(c.use_sigstore_attachments(&r("reg.example/ocp/x:2")));
        assert!(!c.use_sigstore_attachments(&r("reg.other/ocp/x:2")));
    }

    #[test]
    fn blobs_in_no_format_are_errors() {
        assert!(from_blob(b"").is_err());
        assert!(from_blob(b"hello").is_err());
        assert!(from_blob(b"\x00other\n{}").is_err());
        assert!(matches!(
            from_blob(b"\xa3\x01\x02").unwrap(),
            Signature::SimpleSigning(_)
        ));
        assert!(matches!(
            from_blob(b"\x00simple-signing\n\x01").unwrap(),
            Signature::SimpleSigning(b) if b == [1]
        ));
    }
}
