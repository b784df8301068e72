//! OCI image layouts (directories and archives): index, tags, nested indexes, platforms.

use anyhow::{anyhow, bail, Context, Result};
use oci_spec::image::{Descriptor, ImageIndex, ImageManifest};
use serde::Deserialize;

use super::files::{read_member, FileTree};
use super::{
    compression_of, BlobSource, Digest, Image, ImageInfo, ImageRef, LayerInfo, Platform,
    Verification, MAX_METADATA_BYTES,
};

const REF_NAME: &str = "org.opencontainers.image.ref.name";
const MAX_INDEX_DEPTH: usize = 8;

/// What kind of document a manifest-like blob is.
pub(crate) enum Document {
    Index(Box<ImageIndex>),
    Manifest(Box<ImageManifest>),
}

/// Classifies and parses a manifest or index, refusing schema1 and unknown kinds.
pub(crate) fn parse_document(bytes: &[u8], what: &str) -> Result<Document> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Peek {
        schema_version: Option<u32>,
        media_type: Option<String>,
        manifests: Option<serde_json::Value>,
        layers: Option<serde_json::Value>,
    }
    let peek: Peek =
        serde_json::from_slice(bytes).with_context(|| format!("{what}: malformed JSON"))?;
    let media_type = peek.media_type.as_deref().unwrap_or("");
    if peek.schema_version == Some(1)
        || media_type.starts_with("application/vnd.docker.distribution.manifest.v1+")
    {
        bail!("{what}: Docker schema1 manifests are unsupported; convert the image to schema2 or OCI (skopeo copy --format v2s2)");
    }
    if peek.schema_version != Some(2) {
        bail!(
            "{what}: unsupported schemaVersion {:?}",
            peek.schema_version
        );
    }
    let is_index = match media_type {
        "application/vnd.oci.image.index.v1+json"
        | "application/vnd.docker.distribution.manifest.list.v2+json" => true,
        "application/vnd.oci.image.manifest.v1+json"
        | "application/vnd.docker.distribution.manifest.v2+json" => false,
        "" if peek.manifests.is_some() => true,
        "" if peek.layers.is_some() => false,
        other => bail!("{what}: unsupported manifest media type {other:?}"),
    };
    if is_index {
        Ok(Document::Index(Box::new(
            serde_json::from_slice(bytes).with_context(|| format!("{what}: malformed index"))?,
        )))
    } else {
        Ok(Document::Manifest(Box::new(
            serde_json::from_slice(bytes).with_context(|| format!("{what}: malformed manifest"))?,
        )))
    }
}

/// The descriptor's digest in our form (sha256 only).
pub(crate) fn descriptor_digest(desc: &Descriptor) -> Result<Digest> {
    desc.digest()
        .to_string()
        .parse()
        .map_err(|e| anyhow!("descriptor: {e}"))
}

fn platform_of(desc: &Descriptor) -> Option<Platform> {
    desc.platform().as_ref().map(|p| Platform {
        os: p.os().to_string(),
        architecture: p.architecture().to_string(),
        variant: p.variant().clone(),
    })
}

/// Picks the manifest for `want` out of an index; the error lists what is offered.
pub(crate) fn choose_platform<'a>(
    manifests: &'a [Descriptor],
    want: &Platform,
    what: &str,
) -> Result<&'a Descriptor> {
    let matches = |d: &&Descriptor| {
        platform_of(d).is_some_and(|p| {
            p.os == want.os
                && p.architecture == want.architecture
                && (want.variant.is_none() || p.variant == want.variant)
        })
    };
    // Without a requested variant, prefer an entry with none (or the first one).
    let mut found: Vec<&Descriptor> = manifests.iter().filter(matches).collect();
    found.sort_by_key(|d| platform_of(d).and_then(|p| p.variant).is_some());
    if let Some(d) = found.first() {
        return Ok(d);
    }
    // An entry without `platform` matches any platform (as containers/image reads
    // it); the image's config still has to name the platform asked for.
    if let Some(d) = manifests.iter().find(|d| d.platform().is_none()) {
        return Ok(d);
    }
    let offered: Vec<String> = manifests
        .iter()
        .map(|d| platform_of(d).map_or("(no platform)".to_string(), |p| p.to_string()))
        .collect();
    bail!(
        "{what}: no image for platform {want}; the index offers: {}",
        offered.join(", ")
    )
}

/// Reads a blob of at most [`MAX_METADATA_BYTES`] and checks its size and digest.
fn read_blob(tree: &dyn FileTree, desc: &Descriptor) -> Result<(Digest, Vec<u8>)> {
    let digest = descriptor_digest(desc)?;
    let path = digest.layout_path();
    let limit = desc.size().min(MAX_METADATA_BYTES);
    let bytes = read_member(tree, &path, limit)?
        .ok_or_else(|| anyhow!("{}: blob {digest} is missing", tree.describe()))?;
    check_blob(&bytes, &digest, Some(desc.size()), &tree.describe())?;
    Ok((digest, bytes))
}

/// Checks a whole blob against its descriptor.
pub(crate) fn check_blob(
    bytes: &[u8],
    digest: &Digest,
    size: Option<u64>,
    where_: &str,
) -> Result<()> {
    if let Some(size) = size {
        if bytes.len() as u64 != size {
            bail!(
                "{where_}: blob {digest} is {} bytes, its descriptor says {size}",
                bytes.len()
            );
        }
    }
    let actual = Digest::of(bytes);
    if &actual != digest {
        bail!("{where_}: blob {digest} is corrupt: its content hashes to {actual}");
    }
    Ok(())
}

/// The parts of an image configuration that matter here.
#[derive(Deserialize)]
pub(crate) struct ConfigFacts {
    pub architecture: Option<String>,
    pub os: Option<String>,
    pub variant: Option<String>,
    pub rootfs: Option<RootFs>,
    /// The runtime config, for its `Labels`: any JSON, so that a config this reader
    /// does not need cannot make the image unreadable ([`ConfigFacts::labels`]).
    pub config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
pub(crate) struct RootFs {
    pub diff_ids: Vec<String>,
}

impl ConfigFacts {
    /// The image's platform, refused when it is not the one asked for.
    pub fn checked_platform(&self, want: &Platform, what: &str) -> Result<Platform> {
        let have = self.platform();
        let variant_ok = match (&want.variant, &have.variant) {
            (Some(w), Some(h)) => w == h,
            _ => true,
        };
        if have.os != want.os || have.architecture != want.architecture || !variant_ok {
            bail!("{what}: the image is for {have}, not {want} (choose with --platform)");
        }
        Ok(have)
    }

    /// The config's `rootfs.diff_ids` must list one diff ID per manifest layer.
    pub fn check_layer_count(&self, layers: usize, what: &str) -> Result<()> {
        let Some(rootfs) = &self.rootfs else {
            bail!("{what}: the image config has no rootfs.diff_ids");
        };
        if rootfs.diff_ids.len() != layers {
            bail!(
                "{what}: the manifest lists {layers} layers but the config's rootfs.diff_ids has {}",
                rootfs.diff_ids.len()
            );
        }
        Ok(())
    }

    /// The image's labels whose values are strings.
    pub fn labels(&self) -> std::collections::BTreeMap<String, String> {
        self.config
            .as_ref()
            .and_then(|c| c.get("Labels")?.as_object())
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    }

    pub fn platform(&self) -> Platform {
        let d = Platform::default();
        Platform {
            os: self.os.clone().unwrap_or(d.os),
            architecture: self.architecture.clone().unwrap_or(d.architecture),
            variant: self.variant.clone(),
        }
    }
}

/// The `oci-layout` file must exist and name a layout version this reader knows (1.x).
fn check_layout_version(tree: &dyn FileTree) -> Result<()> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Layout {
        image_layout_version: String,
    }
    let what = tree.describe();
    let bytes = read_member(tree, "oci-layout", 64 * 1024)?
        .ok_or_else(|| anyhow!("{what}: not an OCI image layout (no oci-layout file)"))?;
    let layout: Layout = serde_json::from_slice(&bytes).with_context(|| {
        format!("{what}: oci-layout is not a JSON object with imageLayoutVersion")
    })?;
    let v = &layout.image_layout_version;
    if v.split('.').next() != Some("1") || v.split('.').count() != 3 {
        bail!("{what}: oci-layout has imageLayoutVersion {v:?}; only 1.x layouts are supported");
    }
    Ok(())
}

/// Resolves the manifest that `tag` and the platform name, following nested indexes.
/// The manifest for `platform` of the image `tag` names (else the only one), with the
/// name the layout's index gives that image.
fn resolve_manifest(
    tree: &dyn FileTree,
    tag: Option<&str>,
    platform: &Platform,
) -> Result<(Digest, ImageManifest, Option<String>)> {
    let what = tree.describe();
    check_layout_version(tree)?;
    let index_bytes = read_member(tree, "index.json", MAX_METADATA_BYTES)?
        .ok_or_else(|| anyhow!("{what}: not an OCI image layout (no index.json)"))?;
    let index: ImageIndex = serde_json::from_slice(&index_bytes)
        .with_context(|| format!("{what}: malformed index.json"))?;
    let tags: Vec<&str> = index
        .manifests()
        .iter()
        .filter_map(|d| d.annotations().as_ref()?.get(REF_NAME).map(String::as_str))
        .collect();
    let top = match tag {
        Some(t) => index
            .manifests()
            .iter()
            .find(|d| {
                d.annotations()
                    .as_ref()
                    .and_then(|a| a.get(REF_NAME))
                    .is_some_and(|n| n == t)
            })
            .ok_or_else(|| {
                anyhow!(
                    "{what}: no image tagged {t:?}; tags present: {}",
                    if tags.is_empty() {
                        "(none)".to_string()
                    } else {
                        tags.join(", ")
                    }
                )
            })?,
        None => match index.manifests().as_slice() {
            [only] => only,
            [] => bail!("{what}: index.json lists no images"),
            _ => bail!(
                "{what}: index.json lists several images; name one with :TAG (tags: {})",
                if tags.is_empty() {
                    "(none)".to_string()
                } else {
                    tags.join(", ")
                }
            ),
        },
    };
    let name = top
        .annotations()
        .as_ref()
        .and_then(|a| a.get(REF_NAME))
        .cloned();
    let mut desc = top.clone();
    for _ in 0..MAX_INDEX_DEPTH {
        let (digest, bytes) = read_blob(tree, &desc)?;
        match parse_document(&bytes, &format!("{what}: {digest}"))? {
            Document::Manifest(m) => return Ok((digest, *m, name)),
            Document::Index(idx) => {
                desc = choose_platform(
                    idx.manifests(),
                    platform,
                    &format!("{what}: index {digest}"),
                )?
                .clone();
            }
        }
    }
    bail!("{what}: indexes nested more than {MAX_INDEX_DEPTH} deep")
}

/// Layer descriptors of a manifest as [`LayerInfo`]s.
pub(crate) fn layers_of(manifest: &ImageManifest) -> Result<Vec<LayerInfo>> {
    manifest
        .layers()
        .iter()
        .map(|d| {
            let digest = descriptor_digest(d)?;
            let media_type = d.media_type().to_string();
            Ok(LayerInfo {
                compression: compression_of(&media_type)
                    .with_context(|| format!("layer {digest}"))?,
                location: digest.layout_path(),
                verification: Verification::Blob {
                    digest: digest.clone(),
                    size: d.size(),
                },
                size: d.size(),
                media_type,
                digest,
            })
        })
        .collect()
}

struct LayoutSource<T: FileTree> {
    tree: T,
}

impl<T: FileTree> BlobSource for LayoutSource<T> {
    fn open_layer(&self, layer: &LayerInfo) -> Result<Box<dyn std::io::Read + '_>> {
        let m = self.tree.open(&layer.location)?.ok_or_else(|| {
            anyhow!(
                "{}: layer blob {} is missing",
                self.tree.describe(),
                layer.digest
            )
        })?;
        if m.size != layer.size {
            bail!(
                "{}: layer blob {} is {} bytes, the manifest says {}",
                self.tree.describe(),
                layer.digest,
                m.size,
                layer.size
            );
        }
        Ok(m.reader)
    }
}

pub(crate) fn open<T: FileTree + 'static>(
    reference: &ImageRef,
    tree: T,
    tag: Option<&str>,
    platform: &Platform,
) -> Result<Image> {
    let (manifest_digest, manifest, name) = resolve_manifest(&tree, tag, platform)?;
    let (config_digest, config_bytes) = read_blob(&tree, manifest.config())?;
    let facts: ConfigFacts = serde_json::from_slice(&config_bytes).with_context(|| {
        format!(
            "{}: malformed image config {config_digest}",
            tree.describe()
        )
    })?;
    let layers = layers_of(&manifest)?;
    facts.check_layer_count(
        layers.len(),
        &format!("{}: image config {config_digest}", tree.describe()),
    )?;
    let info = ImageInfo {
        reference: reference.to_string(),
        name,
        manifest_digest: Some(manifest_digest),
        tag_digest: None,
        config_digest,
        platform: facts.checked_platform(platform, &tree.describe())?,
        layers,
        labels: facts.labels(),
        served_by: None,
    };
    Ok(Image::new(info, Box::new(LayoutSource { tree })))
}
