//! OpenShift release images: which machine-config-operator image a release names.
//!
//! A release image (as `oc adm release new` builds it) holds
//! `/release-manifests/image-references`, an `image.openshift.io/v1` ImageStream whose
//! `spec.tags[]` map component names to image references (`from.name`, by digest), and
//! `/release-manifests/release-metadata`, whose `version` is the release's version.
//! [`resolve`] reads these two files, reading only the layers that settle them, and
//! returns the `machine-config-operator` reference.

use std::io::Read;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::image::fs::MergedFs;
use crate::image::{Digest, DockerRef, ImageRef};
use crate::transport::{self, OpenOptions};
use crate::warnings::Warnings;

/// Where a release image lists the images of its payload.
pub const IMAGE_REFERENCES: &str = "/release-manifests/image-references";
/// Where a release image keeps its version and metadata.
pub const RELEASE_METADATA: &str = "/release-manifests/release-metadata";
/// The ImageStream tag of the machine-config-operator image.
pub const MCO_TAG: &str = "machine-config-operator";
/// The release manifests are small; anything bigger is refused.
const MAX_MANIFEST_BYTES: u64 = 16 * 1024 * 1024;

/// What a release image says about itself and its MCO image.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Release {
    /// The release reference as given.
    pub reference: String,
    /// The release image's own name in its layout or archive, when read from disk.
    #[serde(skip)]
    pub name: Option<String>,
    /// The digest the release reference names, or its tag named when it was read (an
    /// index for multi-arch releases).
    pub digest: Option<Digest>,
    /// The digest of the release's image manifest for the chosen platform.
    pub manifest_digest: Option<Digest>,
    /// `version` of release-metadata.
    pub version: String,
    /// The MCO image named by the release, by digest.
    pub mco_image: String,
    /// The MCO digest.
    pub mco_digest: Digest,
    /// The registry repository that served the release, when mirrors were in play.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_by: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageStream {
    kind: String,
    api_version: String,
    spec: StreamSpec,
}

#[derive(Deserialize)]
struct StreamSpec {
    #[serde(default)]
    tags: Vec<StreamTag>,
}

#[derive(Deserialize)]
struct StreamTag {
    name: String,
    from: Option<ObjectRef>,
}

#[derive(Deserialize)]
struct ObjectRef {
    #[serde(default)]
    kind: String,
    name: String,
}

#[derive(Deserialize)]
struct Metadata {
    version: String,
}

/// The MCO reference in an image-references document.
fn mco_reference(bytes: &[u8], at: &str) -> Result<DockerRef> {
    let stream: ImageStream = serde_json::from_slice(bytes)
        .map_err(|e| anyhow!("{at} is not a valid ImageStream: {e}"))?;
    if stream.kind != "ImageStream" || !stream.api_version.starts_with("image.openshift.io/") {
        bail!(
            "{at}: expected an image.openshift.io ImageStream, found kind {:?} ({})",
            stream.kind,
            stream.api_version
        );
    }
    let tag = stream
        .spec
        .tags
        .iter()
        .find(|t| t.name == MCO_TAG)
        .ok_or_else(|| {
            anyhow!(
                "{at}: no {MCO_TAG:?} tag among its {} tags; is this an OpenShift release image?",
                stream.spec.tags.len()
            )
        })?;
    let from = tag
        .from
        .as_ref()
        .ok_or_else(|| anyhow!("{at}: tag {MCO_TAG:?} has no \"from\""))?;
    if from.kind != "DockerImage" {
        bail!(
            "{at}: tag {MCO_TAG:?} is from a {:?}, not a DockerImage",
            from.kind
        );
    }
    let r: DockerRef = from
        .name
        .parse()
        .map_err(|e| anyhow!("{at}: tag {MCO_TAG:?}: {e}"))?;
    if r.digest.is_none() {
        bail!(
            "{at}: tag {MCO_TAG:?} names {:?}, which is not by digest; a release must pin \
             its images by digest",
            from.name
        );
    }
    Ok(r)
}

fn version_of(bytes: &[u8], at: &str) -> Result<String> {
    let m: Metadata = serde_json::from_slice(bytes)
        .map_err(|e| anyhow!("{at} is not valid release metadata: {e}"))?;
    if m.version.is_empty() {
        bail!("{at}: empty version");
    }
    Ok(m.version)
}

/// Reads a small file of an image whole.
fn read_small(fs: &mut MergedFs, path: &str, release: &str) -> Result<Vec<u8>> {
    let content = fs
        .read_file(path)
        .with_context(|| format!("release image {release}: reading {path}"))?;
    if content.size > MAX_MANIFEST_BYTES {
        bail!(
            "release image {release}: {path} is {} bytes, more than a release manifest can be",
            content.size
        );
    }
    let mut bytes = Vec::new();
    content
        .file
        .reopen()?
        .take(MAX_MANIFEST_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Reads a release image and returns what it says, with the MCO reference.
pub fn resolve(release: &ImageRef, opts: &OpenOptions, warnings: &Warnings) -> Result<Release> {
    // A tag is resolved to the digest it names now; mirrors of the OpenShift mirror
    // objects serve pulls by digest only, so with them a tag would be asked of the source.
    let given = match release {
        ImageRef::Docker(d) => {
            if let (None, Some(origin)) = (&d.digest, opts.registry.mirrors.digest_only_rule(d)) {
                bail!(
                    "--release {release}: a release must be given by digest \
                     (REPO@sha256:...), as `oc adm release info` prints it, when mirrors are \
                     in play ({origin}): they only serve pulls by digest"
                );
            }
            d.digest.clone()
        }
        _ => None,
    };
    let img = transport::open(release, opts, warnings)?;
    let spool = tempfile::tempdir().context("creating a spool directory")?;
    let wanted = [IMAGE_REFERENCES, RELEASE_METADATA].map(|p| p.trim_start_matches('/'));
    let mut fs = MergedFs::new(&img, spool.path(), move |n| wanted.contains(&n));
    let name = release.to_string();
    let refs = read_small(&mut fs, IMAGE_REFERENCES, &name)?;
    let meta = read_small(&mut fs, RELEASE_METADATA, &name)?;
    let mco = mco_reference(&refs, &format!("{name}: {IMAGE_REFERENCES}"))?;
    let version = version_of(&meta, &format!("{name}: {RELEASE_METADATA}"))?;
    Ok(Release {
        reference: name,
        name: img.info.name.clone(),
        digest: given
            .or_else(|| img.info.tag_digest.clone())
            .or_else(|| img.info.manifest_digest.clone()),
        manifest_digest: img.info.manifest_digest.clone(),
        version,
        mco_digest: mco.digest.clone().expect("checked above"),
        mco_image: mco.to_string(),
        served_by: img.info.served_by.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn stream(tags: &str) -> String {
        format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1",
                "metadata":{{"name":"4.16.3"}},"spec":{{"lookupPolicy":{{"local":false}},"tags":[{tags}]}}}}"#
        )
    }

    #[test]
    fn finds_the_mco_tag() {
        let s = stream(&format!(
            r#"{{"name":"cli","from":{{"kind":"DockerImage","name":"registry.example/o/art@{D}"}}}},
               {{"name":"machine-config-operator","annotations":{{}},
                 "from":{{"kind":"DockerImage","name":"registry.example/o/art@{D}"}}}}"#
        ));
        let r = mco_reference(s.as_bytes(), "x").unwrap();
        assert_eq!(r.to_string(), format!("registry.example/o/art@{D}"));
    }

    #[test]
    fn refuses_what_is_not_a_pinned_mco() {
        for (doc, want) in [
            (stream(""), "no \"machine-config-operator\" tag"),
            (
                stream(
                    r#"{"name":"machine-config-operator","from":{"kind":"DockerImage","name":"registry.example/o/art:latest"}}"#,
                ),
                "not by digest",
            ),
            (
                stream(
                    r#"{"name":"machine-config-operator","from":{"kind":"ImageStreamTag","name":"x:y"}}"#,
                ),
                "not a DockerImage",
            ),
            (
                r#"{"kind":"ConfigMap","apiVersion":"v1","spec":{}}"#.to_string(),
                "expected an image.openshift.io ImageStream",
            ),
            ("{not json".to_string(), "not a valid ImageStream"),
        ] {
            let e = format!("{:#}", mco_reference(doc.as_bytes(), "rel").unwrap_err());
            assert!(e.starts_with("rel") && e.contains(want), "{e}");
        }
    }

    #[test]
    fn version_from_metadata() {
        let m =
            br#"{"kind":"cincinnati-metadata-v0","version":"4.16.3","previous":[],"metadata":{}}"#;
        assert_eq!(version_of(m, "m").unwrap(), "4.16.3");
        assert!(version_of(br#"{"kind":"x"}"#, "m").is_err());
    }

    #[test]
    fn a_release_tag_is_refused_before_any_network_when_mirrors_serve_digests_only() {
        let dir = tempfile::tempdir().unwrap();
        let idms = dir.path().join("idms.yaml");
        std::fs::write(
            &idms,
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\n\
             metadata:\n  name: m\nspec:\n  imageDigestMirrors:\n\
             \x20 - source: 127.0.0.1:1/ocp/release\n    mirrors: [127.0.0.1:2/mirror/release]\n",
        )
        .unwrap();
        let mut opts = OpenOptions::default();
        opts.registry.mirrors.add_openshift_file(&idms).unwrap();
        let r: ImageRef = "docker://127.0.0.1:1/ocp/release:4.16".parse().unwrap();
        let e = format!(
            "{:#}",
            resolve(&r, &opts, &Warnings::default()).unwrap_err()
        );
        assert!(
            e.contains("by digest") && e.contains("idms.yaml") && e.contains("mirrors are in play"),
            "{e}"
        );
        // Another repository's mirrors are not in play for it: the source is asked (and,
        // here, refuses the connection).
        let other: ImageRef = "docker://127.0.0.1:1/ocp/other:4.16".parse().unwrap();
        let e = format!(
            "{:#}",
            resolve(&other, &opts, &Warnings::default()).unwrap_err()
        );
        assert!(!e.contains("by digest"), "{e}");
    }
}
