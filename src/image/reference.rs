//! Image references in the containers-transports syntax, and platforms.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use oci_spec::distribution::{ParseError, Reference};

use super::digest::Digest;

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRef {
    /// `oci:DIR[:TAG]`: an OCI image layout directory.
    Oci { dir: PathBuf, tag: Option<String> },
    /// `oci-archive:FILE[:TAG]`: a tar of an OCI image layout.
    OciArchive { file: PathBuf, tag: Option<String> },
    /// `docker-archive:FILE[:REF]`: `docker save` output; REF is a name or `@N`.
    DockerArchive {
        file: PathBuf,
        reference: Option<String>,
    },
    /// `docker://HOST/REPO[:TAG][@DIGEST]` or a bare reference.
    Docker(DockerRef),
}

/// A registry reference, normalised the way docker and podman do it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DockerRef {
    /// Registry host (and port), `docker.io` for Docker Hub.
    pub registry: String,
    /// Repository path, `library/NAME` for official Docker Hub images.
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<Digest>,
}

/// Why an image reference was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReferenceError {
    #[error("empty image reference")]
    Empty,
    #[error("{transport}: missing path in {input:?}")]
    MissingPath {
        transport: &'static str,
        input: String,
    },
    #[error("unknown transport {0:?} (expected docker://, oci:, oci-archive: or docker-archive:)")]
    UnknownTransport(String),
    #[error(
        "invalid image reference {input:?}: expected [HOST[:PORT]/]REPOSITORY[:TAG][@DIGEST], \
         with repository components of lowercase letters, digits and separators (. _ __ -), \
         and a tag of at most 128 letters, digits, '_', '.' and '-' that does not start \
         with '.' or '-'"
    )]
    BadFormat { input: String },
    #[error("invalid repository name in {input:?}: {why}")]
    BadRepository { input: String, why: String },
    #[error("invalid tag in {input:?}")]
    BadTag { input: String },
    #[error("invalid digest in {input:?}: {why}")]
    BadDigest { input: String, why: String },
}

impl ReferenceError {
    /// The error for a reference that oci-spec's parser (distribution's grammar) refused.
    fn from_parse(input: &str, e: ParseError) -> Self {
        let input = input.to_string();
        match e {
            ParseError::DigestInvalidFormat
            | ParseError::DigestInvalidLength
            | ParseError::DigestUnsupported => ReferenceError::BadDigest {
                input,
                why: e.to_string(),
            },
            ParseError::NameContainsUppercase | ParseError::NameEmpty | ParseError::NameTooLong => {
                ReferenceError::BadRepository {
                    input,
                    why: e.to_string(),
                }
            }
            ParseError::TagInvalidFormat => ReferenceError::BadTag { input },
            ParseError::ReferenceInvalidFormat => ReferenceError::BadFormat { input },
        }
    }
}

const DOCKER_HUB: &str = "docker.io";

impl FromStr for ImageRef {
    type Err = ReferenceError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if let Some(rest) = input.strip_prefix("docker://") {
            return Ok(ImageRef::Docker(rest.parse()?));
        }
        // containers-transports(5): the path ends at the first ':'.
        let split = |transport: &'static str, rest: &str| {
            let (path, extra) = match rest.split_once(':') {
                Some((p, e)) => (p, Some(e.to_string()).filter(|e| !e.is_empty())),
                None => (rest, None),
            };
            if path.is_empty() {
                return Err(ReferenceError::MissingPath {
                    transport,
                    input: input.to_string(),
                });
            }
            Ok((PathBuf::from(path), extra))
        };
        if let Some(rest) = input.strip_prefix("oci:") {
            let (dir, tag) = split("oci", rest)?;
            return Ok(ImageRef::Oci { dir, tag });
        }
        if let Some(rest) = input.strip_prefix("oci-archive:") {
            let (file, tag) = split("oci-archive", rest)?;
            return Ok(ImageRef::OciArchive { file, tag });
        }
        if let Some(rest) = input.strip_prefix("docker-archive:") {
            let (file, reference) = split("docker-archive", rest)?;
            return Ok(ImageRef::DockerArchive { file, reference });
        }
        if let Some((transport, _)) = input.split_once(':') {
            // "host:port/repo" and "repo:tag" are bare docker references; anything else
            // with a ':' before any '/' that looks like a word is an unknown transport.
            let looks_like_transport = !transport.contains('/')
                && !transport.contains('.')
                && transport != "localhost"
                && input[transport.len() + 1..].contains('/')
                && !input[transport.len() + 1..].starts_with(|c: char| c.is_ascii_digit());
            if looks_like_transport {
                return Err(ReferenceError::UnknownTransport(transport.to_string()));
            }
        }
        Ok(ImageRef::Docker(input.parse()?))
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |o: &Option<String>| o.as_ref().map(|t| format!(":{t}")).unwrap_or_default();
        match self {
            ImageRef::Oci { dir, tag } => write!(f, "oci:{}{}", dir.display(), opt(tag)),
            ImageRef::OciArchive { file, tag } => {
                write!(f, "oci-archive:{}{}", file.display(), opt(tag))
            }
            ImageRef::DockerArchive { file, reference } => {
                write!(f, "docker-archive:{}{}", file.display(), opt(reference))
            }
            ImageRef::Docker(r) => write!(f, "docker://{r}"),
        }
    }
}

/// Docker Hub's other names, which docker and podman treat as `docker.io` (oci-spec
/// knows only `index.docker.io`).
const DOCKER_HUB_ALIASES: &[&str] = &["index.docker.io", "registry-1.docker.io"];

impl FromStr for DockerRef {
    type Err = ReferenceError;

    /// Parses with oci-spec's `distribution::Reference` (the grammar of
    /// distribution/reference, docker.io normalisation, `latest` by default), then
    /// checks the digest as this crate's [`Digest`] (sha256 only).
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        let parsed: Reference = input
            .parse()
            .map_err(|e| ReferenceError::from_parse(input, e))?;
        let digest = parsed
            .digest()
            .map(|d| {
                d.parse::<Digest>().map_err(|e| ReferenceError::BadDigest {
                    input: input.to_string(),
                    why: e.to_string(),
                })
            })
            .transpose()?;
        let (registry, repository) = if DOCKER_HUB_ALIASES.contains(&parsed.registry()) {
            let repo = parsed.repository();
            let repo = if repo.contains('/') {
                repo.to_string()
            } else {
                format!("library/{repo}")
            };
            (DOCKER_HUB.to_string(), repo)
        } else {
            (
                parsed.registry().to_string(),
                parsed.repository().to_string(),
            )
        };
        Ok(DockerRef {
            registry,
            repository,
            tag: parsed.tag().map(str::to_string),
            digest,
        })
    }
}

impl fmt::Display for DockerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// An OCI platform, `os/arch[/variant]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Default for Platform {
    fn default() -> Self {
        Platform {
            os: "linux".into(),
            architecture: "amd64".into(),
            variant: None,
        }
    }
}

/// Why a platform string was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid platform {0:?}: expected os/arch[/variant], e.g. linux/amd64")]
pub struct PlatformError(String);

impl FromStr for Platform {
    type Err = PlatformError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok =
            |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: None,
            }),
            [os, arch, variant] if ok(os) && ok(arch) && ok(variant) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: Some(variant.to_string()),
            }),
            _ => Err(PlatformError(s.to_string())),
        }
    }
}

impl serde::Serialize for Platform {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker(s: &str) -> DockerRef {
        match s.parse::<ImageRef>().unwrap() {
            ImageRef::Docker(d) => d,
            other => panic!("{s} parsed as {other:?}"),
        }
    }

    #[test]
    fn local_transports() {
        assert_eq!(
            "oci:/tmp/layout:v1".parse::<ImageRef>().unwrap(),
            ImageRef::Oci {
                dir: "/tmp/layout".into(),
                tag: Some("v1".into())
            }
        );
        assert_eq!(
            "oci-archive:img.tar".parse::<ImageRef>().unwrap(),
            ImageRef::OciArchive {
                file: "img.tar".into(),
                tag: None
            }
        );
        assert_eq!(
            "docker-archive:a.tar:registry.example/x/y:1"
                .parse::<ImageRef>()
                .unwrap(),
            ImageRef::DockerArchive {
                file: "a.tar".into(),
                reference: Some("registry.example/x/y:1".into())
            }
        );
        assert!(matches!(
            "oci:".parse::<ImageRef>(),
            Err(ReferenceError::MissingPath { .. })
        ));
    }

    #[test]
    fn docker_normalisation() {
        let d = docker("busybox");
        assert_eq!(d.to_string(), "docker.io/library/busybox:latest");
        let d = docker("docker://registry.example/openshift/origin-machine-config-operator:4.2");
        assert_eq!(d.registry, "registry.example");
        assert_eq!(d.repository, "openshift/origin-machine-config-operator");
        assert_eq!(d.tag.as_deref(), Some("4.2"));
        let d = docker("localhost:5000/mco@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(d.registry, "localhost:5000");
        assert_eq!(d.tag, None);
        assert!(d.digest.is_some());
        let d = docker("registry-1.docker.io/busybox:1");
        assert_eq!(d.to_string(), "docker.io/library/busybox:1");
        let d = docker("index.docker.io/a/b");
        assert_eq!(d.to_string(), "docker.io/a/b:latest");
        let d = docker("registry.example/a/b:t@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!((d.tag.as_deref(), d.digest.is_some()), (Some("t"), true));
        let d = docker("localhost/a");
        assert_eq!(
            (d.registry.as_str(), d.repository.as_str()),
            ("localhost", "a")
        );
        let d = docker("127.0.0.1:5000/a/b:t");
        assert_eq!(
            (d.registry.as_str(), d.repository.as_str()),
            ("127.0.0.1:5000", "a/b")
        );
    }

    #[test]
    fn refuses_bad_references() {
        // distribution's grammar has no rule of its own for upper case: the error lists
        // what a reference is made of.
        let e = "docker://Quay.io/UPPER".parse::<ImageRef>().unwrap_err();
        assert!(matches!(e, ReferenceError::BadFormat { .. }), "{e:?}");
        assert!(e.to_string().contains("lowercase letters"), "{e}");
        assert!(matches!(
            "registry.example/a:-bad".parse::<ImageRef>(),
            Err(ReferenceError::BadFormat { .. })
        ));
        assert!(matches!(
            "registry.example/a@sha256:zz".parse::<ImageRef>(),
            Err(ReferenceError::BadFormat { .. })
        ));
        for bad_digest in [
            "registry.example/a@sha256:0123456789abcdef0123456789abcdef01234567",
            "registry.example/a@sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "registry.example/a@sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        ] {
            assert!(
                matches!(
                    bad_digest.parse::<ImageRef>(),
                    Err(ReferenceError::BadDigest { .. })
                ),
                "{bad_digest}"
            );
        }
        let long = format!("registry.example/{}", "a".repeat(256));
        assert!(matches!(
            long.parse::<ImageRef>(),
            Err(ReferenceError::BadRepository { .. })
        ));
        // distribution's grammar (as oci-spec has it) has no IPv6 literal hosts.
        assert!("[::1]:5000/a".parse::<DockerRef>().is_err());
        let e = "registry.example/A:t".parse::<ImageRef>().unwrap_err();
        assert!(e.to_string().contains("\"registry.example/A:t\""), "{e}");
        assert!(matches!(
            "containers-storage:foo/bar".parse::<ImageRef>(),
            Err(ReferenceError::UnknownTransport(_))
        ));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "oci:dir:tag",
            "oci-archive:f.tar",
            "docker-archive:f.tar:@0",
            "docker://registry.example/a/b:c",
        ] {
            assert_eq!(s.parse::<ImageRef>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn platforms() {
        assert_eq!(
            "linux/arm64/v8".parse::<Platform>().unwrap().to_string(),
            "linux/arm64/v8"
        );
        assert!("linux".parse::<Platform>().is_err());
        assert!("linux/amd64/v1/x".parse::<Platform>().is_err());
    }
}
