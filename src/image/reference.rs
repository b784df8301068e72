//! Image references in the containers-transports syntax, and platforms.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::digest::{Digest, DigestError};

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRef {
    /// `oci:DIR[:TAG]`: an OCI image layout directory.
    Oci {
        /// The layout directory.
        dir: PathBuf,
        /// The `org.opencontainers.image.ref.name` to pick; the only image without it.
        tag: Option<String>,
    },
    /// `oci-archive:FILE[:TAG]`: a tar of an OCI image layout.
    OciArchive {
        /// The archive.
        file: PathBuf,
        /// As for [`ImageRef::Oci`].
        tag: Option<String>,
    },
    /// `docker-archive:FILE[:REF]`: `docker save` output; REF is a name or `@N`.
    DockerArchive {
        /// The archive.
        file: PathBuf,
        /// A name of `manifest.json`'s `RepoTags`, or `@N` for the N-th image.
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
    /// The tag; `latest` is implied when neither tag nor digest is given (but not by
    /// [`DockerRef::parse_normalized_named`]).
    pub tag: Option<String>,
    /// The manifest digest, which pins the image.
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
    #[error("{input:?}: a registry image is written with two slashes: docker://{rest}")]
    DockerOneColon { input: String, rest: String },
    #[error(
        "{input:?} is a path on this machine, not a registry image: {}",
        path_hint(.input, *.directory)
    )]
    LooksLikePath { input: String, directory: bool },
    #[error("invalid repository name {name:?} in {input:?}: {why}")]
    BadRepository {
        name: String,
        input: String,
        why: &'static str,
    },
    #[error("invalid tag {tag:?} in {input:?}")]
    BadTag { tag: String, input: String },
    #[error("invalid digest in {input:?}: {source}")]
    BadDigest { input: String, source: DigestError },
}

const DOCKER_HUB: &str = "docker.io";

/// What to write instead of a bare path.
fn path_hint(input: &str, directory: bool) -> String {
    let how = if directory {
        format!("an OCI image layout is read with oci:{input} (oci:{input}:TAG for one of several images)")
    } else {
        format!(
            "an archive is read with oci-archive:{input} (a tar of an OCI layout) or \
             docker-archive:{input} (docker save)"
        )
    };
    format!("{how}; a registry image is docker://HOST/REPO[:TAG|@DIGEST]")
}

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
        if let Some((transport, rest)) = input.split_once(':') {
            // "host:port/repo" and "repo:tag" are bare docker references; anything else
            // with a ':' before any '/' that looks like a word is an unknown transport.
            let looks_like_transport = !transport.contains('/')
                && !transport.contains('.')
                && transport != "localhost"
                && rest.contains('/')
                && !rest.starts_with(|c: char| c.is_ascii_digit());
            if looks_like_transport && transport == "docker" {
                return Err(ReferenceError::DockerOneColon {
                    input: input.to_string(),
                    rest: rest.trim_start_matches('/').to_string(),
                });
            }
            if looks_like_transport {
                return Err(ReferenceError::UnknownTransport(transport.to_string()));
            }
        }
        // A path given without its transport: a registry reference never starts like
        // a path, and one that names an existing file or directory is ambiguous.
        let path = std::path::Path::new(input);
        let path_like = input.starts_with(['/', '~'])
            || input.starts_with("./")
            || input.starts_with("../")
            || input == "."
            || input == "..";
        if path_like || path.exists() {
            return Err(ReferenceError::LooksLikePath {
                input: input.to_string(),
                directory: path.is_dir() || (path_like && !path.is_file()),
            });
        }
        Ok(ImageRef::Docker(input.parse()?))
    }
}

impl ImageRef {
    /// The transport of an image stored on disk (`oci`, `oci-archive`,
    /// `docker-archive`); `None` for a registry reference.
    pub fn local_transport(&self) -> Option<&'static str> {
        match self {
            ImageRef::Oci { .. } => Some("oci"),
            ImageRef::OciArchive { .. } => Some("oci-archive"),
            ImageRef::DockerArchive { .. } => Some("docker-archive"),
            ImageRef::Docker(_) => None,
        }
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

fn valid_path_component(c: &str) -> bool {
    // distribution/reference: [a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*
    !c.is_empty()
        && c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        && c.as_bytes()[0].is_ascii_alphanumeric()
        && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
}

fn valid_tag(t: &str) -> bool {
    // [\w][\w.-]{0,127}
    !t.is_empty()
        && t.len() <= 128
        && (t.as_bytes()[0].is_ascii_alphanumeric() || t.as_bytes()[0] == b'_')
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

impl FromStr for DockerRef {
    type Err = ReferenceError;

    /// A reference as docker and podman take it from a user: `registry-1.docker.io` is
    /// Docker Hub, and `:latest` is implied without a tag or digest.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut r = DockerRef::parse_normalized_named(input)?;
        if r.registry == "registry-1.docker.io" {
            r.registry = DOCKER_HUB.to_string();
            if !r.repository.contains('/') {
                r.repository = format!("library/{}", r.repository);
            }
        }
        if r.tag.is_none() && r.digest.is_none() {
            r.tag = Some("latest".to_string());
        }
        Ok(r)
    }
}

impl DockerRef {
    /// A reference as containers/image's `reference.ParseNormalizedNamed` reads one, the
    /// way signed identities and policy identities are read: a name alone stays a name
    /// (no `:latest`), `index.docker.io` is Docker Hub, `registry-1.docker.io` is not.
    pub fn parse_normalized_named(input: &str) -> Result<DockerRef, ReferenceError> {
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        let (name_tag, digest) = match input.split_once('@') {
            Some((n, d)) => (
                n,
                Some(
                    d.parse::<Digest>()
                        .map_err(|source| ReferenceError::BadDigest {
                            input: input.to_string(),
                            source,
                        })?,
                ),
            ),
            None => (input, None),
        };
        // A tag is after the last ':' that follows the last '/'.
        let last_slash = name_tag.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => (
                &name_tag[..last_slash + i],
                Some(name_tag[last_slash + i + 1..].to_string()),
            ),
            None => (name_tag, None),
        };
        if let Some(t) = &tag {
            if !valid_tag(t) {
                return Err(ReferenceError::BadTag {
                    tag: t.clone(),
                    input: input.to_string(),
                });
            }
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), rest.to_string())
            }
            _ => (DOCKER_HUB.to_string(), name.to_string()),
        };
        let registry = match registry.as_str() {
            "index.docker.io" => DOCKER_HUB.to_string(),
            _ => registry,
        };
        let bad = |why| ReferenceError::BadRepository {
            name: name.to_string(),
            input: input.to_string(),
            why,
        };
        if repository.is_empty() {
            return Err(bad("no repository"));
        }
        if !repository.split('/').all(valid_path_component) {
            return Err(bad(
                "components must be lowercase letters, digits and separators",
            ));
        }
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        Ok(DockerRef {
            registry,
            repository,
            tag,
            digest,
        })
    }
}

impl DockerRef {
    /// `registry/repository`, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
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
    /// `linux`.
    pub os: String,
    /// The OCI architecture name (`amd64`, `arm64`, `ppc64le`, `s390x`).
    pub architecture: String,
    /// The variant (`v8` for `arm64/v8`), when given.
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
        let ok = |p: &&str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        let (os, arch, variant) = match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => (*os, *arch, None),
            [os, arch, variant] if ok(os) && ok(arch) && ok(variant) => {
                (*os, *arch, Some(*variant))
            }
            _ => return Err(PlatformError(s.to_string())),
        };
        let (architecture, variant) = normalize_architecture(arch, variant);
        Ok(Platform {
            os: os.to_string(),
            architecture,
            variant,
        })
    }
}

/// The OCI name of an architecture and its variant, from the other names in use
/// (`uname -m`'s `x86_64` and `aarch64`, Debian's `armhf`), as the containers tools
/// read them: `x86_64`/`x86-64` are `amd64`, `aarch64` is `arm64`, `i386` is `386`,
/// `armhf` is `arm/v7`, `armel` is `arm/v6`, and an `arm` variant `N` is `vN`.
fn normalize_architecture(arch: &str, variant: Option<&str>) -> (String, Option<String>) {
    let variant = variant.map(str::to_string);
    match arch {
        "x86_64" | "x86-64" => ("amd64".into(), variant),
        "aarch64" => ("arm64".into(), variant),
        "i386" => ("386".into(), None),
        "armhf" => ("arm".into(), Some("v7".into())),
        "armel" => ("arm".into(), Some("v6".into())),
        "arm" => match variant.as_deref() {
            Some(n @ ("5" | "6" | "7" | "8")) => ("arm".into(), Some(format!("v{n}"))),
            _ => ("arm".into(), variant),
        },
        other => (other.to_string(), variant),
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
        // As containers/image reads a signed identity: no implied tag, and
        // registry-1.docker.io is a registry of its own.
        let n = |s: &str| DockerRef::parse_normalized_named(s).unwrap().to_string();
        assert_eq!(n("busybox"), "docker.io/library/busybox");
        assert_eq!(
            n("registry-1.docker.io/busybox:1"),
            "registry-1.docker.io/busybox:1"
        );
        assert_eq!(
            n("index.docker.io/busybox:1"),
            "docker.io/library/busybox:1"
        );
        let d = docker("index.docker.io/a/b");
        assert_eq!(d.to_string(), "docker.io/a/b:latest");
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
        assert!(matches!(
            "docker://Quay.io/UPPER".parse::<ImageRef>(),
            Err(ReferenceError::BadRepository { .. })
        ));
        assert!(matches!(
            "registry.example/a:-bad".parse::<ImageRef>(),
            Err(ReferenceError::BadTag { .. })
        ));
        assert!(matches!(
            "registry.example/a@sha256:zz".parse::<ImageRef>(),
            Err(ReferenceError::BadDigest { .. })
        ));
        assert!(matches!(
            "containers-storage:foo/bar".parse::<ImageRef>(),
            Err(ReferenceError::UnknownTransport(_))
        ));
    }

    #[test]
    fn near_misses_get_a_hint() {
        let e = "docker:registry.example/a/b:1"
            .parse::<ImageRef>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("docker://registry.example/a/b:1"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let e = d.parse::<ImageRef>().unwrap_err().to_string();
        assert!(e.contains(&format!("oci:{d}")), "{e}");
        let f = dir.path().join("img.tar");
        std::fs::write(&f, b"").unwrap();
        let f = f.display().to_string();
        let e = f.parse::<ImageRef>().unwrap_err().to_string();
        assert!(e.contains(&format!("oci-archive:{f}")), "{e}");
        assert!(e.contains(&format!("docker-archive:{f}")), "{e}");
        for p in ["./layout", "../layout", "/no/such/layout"] {
            let e = p.parse::<ImageRef>().unwrap_err().to_string();
            assert!(e.contains(&format!("oci:{p}")), "{e}");
        }
        // Names that are no path stay registry references.
        assert!(matches!(
            "registry.example/a/b".parse::<ImageRef>(),
            Ok(ImageRef::Docker(_))
        ));
    }

    /// The parser agrees with oci-spec's `distribution::Reference` (distribution's
    /// grammar and normalisation) on what it accepts, and refuses what that refuses,
    /// apart from the deviations docs/architecture.md lists.
    #[test]
    fn agrees_with_oci_spec_distribution_reference() {
        use oci_spec::distribution::Reference;
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let good = [
            "busybox".to_string(),
            "busybox:1.36".into(),
            "library/busybox".into(),
            "opensuse/leap:15.3".into(),
            "docker.io/busybox".into(),
            "index.docker.io/a/b:c".into(),
            "localhost/a".into(),
            "localhost:5000/a/b:v1".into(),
            "127.0.0.1:5000/a/b:t".into(),
            "registry.example/openshift/origin-machine-config-operator:4.2".into(),
            "sub-dom1.registry.example/bar/baz/quux:some-long-tag".into(),
            "registry.example/test.example.com/my-app:test.example.com".into(),
            "registry.example/a__b/c-d/e.f_g:T_a.g-1".into(),
            "test.com:5000".into(),
            "foo_bar.com:8080".into(),
            format!("registry.example/a@sha256:{hex}"),
            format!("registry.example:443/a/b:t@sha256:{hex}"),
            format!("{}:{}", "r.example/x", "a".repeat(128)),
        ];
        for input in &good {
            let theirs: Reference = input
                .parse()
                .unwrap_or_else(|e| panic!("oci-spec refuses {input:?}: {e}"));
            let ours: DockerRef = input
                .parse()
                .unwrap_or_else(|e| panic!("we refuse {input:?}: {e}"));
            assert_eq!(
                (
                    ours.registry.as_str(),
                    ours.repository.as_str(),
                    ours.tag.as_deref(),
                    ours.digest.map(|d| d.to_string()),
                ),
                (
                    theirs.registry(),
                    theirs.repository(),
                    theirs.tag(),
                    theirs.digest().map(str::to_string),
                ),
                "{input}"
            );
        }
        let bad = [
            ":tag".to_string(),
            "@sha256:0".into(),
            "registry.example/UPPER".into(),
            "registry.example/a:-bad".into(),
            "registry.example/a:.bad".into(),
            format!("{}:{}", "r.example/x", "a".repeat(129)),
            "registry.example/a//b".into(),
            "registry.example/a-".into(),
            "registry.example/-a".into(),
            "registry.example/a$b".into(),
            "registry.example/a@sha256:zz".into(),
            format!("registry.example/a@sha256:{}", &hex[..40]),
            format!("registry.example/a@md5:{hex}"),
        ];
        for input in &bad {
            assert!(
                input.parse::<Reference>().is_err(),
                "oci-spec accepts {input:?}"
            );
            assert!(input.parse::<DockerRef>().is_err(), "we accept {input:?}");
        }
        // Deviations. oci-spec's regex lets an upper-case first component through as a
        // host, then normalises it into a Docker Hub repository that distribution
        // refuses; a repository of more than 255 characters is over distribution's
        // limit, which we do not check; IPv6 literal hosts are newer than oci-spec's
        // grammar.
        assert!("UPPER/x".parse::<Reference>().is_ok());
        assert!("UPPER/x".parse::<DockerRef>().is_err());
        let long = format!("registry.example/{}", "a".repeat(256));
        assert!(long.parse::<Reference>().is_err());
        assert!(long.parse::<DockerRef>().is_ok());
        assert!("[::1]:5000/a".parse::<Reference>().is_err());
        assert_eq!(docker("docker://[::1]:5000/a").registry, "[::1]:5000");
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

    #[test]
    fn platforms_are_read_under_their_oci_names() {
        for (given, read) in [
            ("linux/x86_64", "linux/amd64"),
            ("linux/x86-64", "linux/amd64"),
            ("linux/aarch64", "linux/arm64"),
            ("linux/aarch64/v8", "linux/arm64/v8"),
            ("linux/i386", "linux/386"),
            ("linux/armhf", "linux/arm/v7"),
            ("linux/armel", "linux/arm/v6"),
            ("linux/arm/7", "linux/arm/v7"),
            ("linux/ppc64le", "linux/ppc64le"),
            ("linux/s390x", "linux/s390x"),
        ] {
            assert_eq!(
                given.parse::<Platform>().unwrap().to_string(),
                read,
                "{given}"
            );
        }
    }
}
