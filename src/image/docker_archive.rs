//! `docker save` / `podman save` / `skopeo copy docker-archive:` tarballs.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use super::files::{read_member, ArchiveTree, FileTree};
use super::oci::{check_blob, ConfigFacts};
use super::{
    BlobSource, Compression, Digest, DockerRef, Image, ImageInfo, ImageRef, LayerInfo, Platform,
    Verification, MAX_METADATA_BYTES,
};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ManifestEntry {
    config: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    layers: Vec<String>,
}

fn same_name(a: &str, b: &str) -> bool {
    match (a.parse::<DockerRef>(), b.parse::<DockerRef>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

fn choose<'a>(
    entries: &'a [ManifestEntry],
    want: Option<&str>,
    what: &str,
) -> Result<&'a ManifestEntry> {
    let names = || {
        entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let tags = e.repo_tags.clone().unwrap_or_default().join(" ");
                format!("@{i} {tags}").trim_end().to_string()
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match want {
        None => match entries {
            [only] => Ok(only),
            [] => bail!("{what}: manifest.json lists no images"),
            _ => bail!(
                "{what}: holds several images; name one with :NAME or :@N ({})",
                names()
            ),
        },
        Some(w) => {
            if let Some(n) = w.strip_prefix('@') {
                let i: usize = n
                    .parse()
                    .map_err(|_| anyhow!("{what}: bad image index {w:?}"))?;
                return entries
                    .get(i)
                    .ok_or_else(|| anyhow!("{what}: no image {w}; it holds {}", names()));
            }
            entries
                .iter()
                .find(|e| e.repo_tags.iter().flatten().any(|t| same_name(t, w)))
                .ok_or_else(|| anyhow!("{what}: no image named {w:?}; it holds {}", names()))
        }
    }
}

/// The digest a member name promises (`<hex>.json`, `blobs/sha256/<hex>`), if any.
fn digest_in_name(name: &str) -> Option<Digest> {
    let base = name.rsplit('/').next()?;
    let hex = base.strip_suffix(".json").unwrap_or(base);
    format!("sha256:{hex}").parse().ok()
}

struct ArchiveSource {
    tree: ArchiveTree,
}

impl BlobSource for ArchiveSource {
    fn open_layer(&self, layer: &LayerInfo) -> Result<Box<dyn std::io::Read + '_>> {
        let m = self.tree.open(&layer.location)?.ok_or_else(|| {
            anyhow!(
                "{}: layer {} is missing",
                self.tree.describe(),
                layer.location
            )
        })?;
        Ok(m.reader)
    }
}

pub(crate) fn open(
    reference: &ImageRef,
    file: &Path,
    want: Option<&str>,
    platform: &Platform,
) -> Result<Image> {
    let tree = ArchiveTree::open(file)?;
    let what = tree.describe();
    let manifest = read_member(&tree, "manifest.json", MAX_METADATA_BYTES)?
        .ok_or_else(|| anyhow!("{what}: not a docker archive (no manifest.json)"))?;
    let entries: Vec<ManifestEntry> = serde_json::from_slice(&manifest)
        .with_context(|| format!("{what}: malformed manifest.json"))?;
    let entry = choose(&entries, want, &what)?;
    let tags = entry.repo_tags.iter().flatten();
    let name = match want {
        Some(w) if !w.starts_with('@') => tags.clone().find(|t| same_name(t, w)),
        _ => None,
    }
    .or_else(|| tags.clone().next())
    .cloned();
    let config = read_member(&tree, &entry.config, MAX_METADATA_BYTES)?
        .ok_or_else(|| anyhow!("{what}: config {} is missing", entry.config))?;
    let config_digest = Digest::of(&config);
    if let Some(named) = digest_in_name(&entry.config) {
        check_blob(&config, &named, None, &what)?;
    }
    let facts: ConfigFacts = serde_json::from_slice(&config)
        .with_context(|| format!("{what}: malformed image config {}", entry.config))?;
    let diff_ids = facts
        .rootfs
        .as_ref()
        .map(|r| r.diff_ids.clone())
        .unwrap_or_default();
    if diff_ids.len() != entry.layers.len() {
        bail!(
            "{what}: manifest.json lists {} layers but the config has {} diff_ids",
            entry.layers.len(),
            diff_ids.len()
        );
    }
    let layers = entry
        .layers
        .iter()
        .zip(&diff_ids)
        .map(|(location, diff_id)| {
            let digest: Digest = diff_id
                .parse()
                .map_err(|e| anyhow!("{what}: config diff_id: {e}"))?;
            let size = tree
                .open(location)?
                .ok_or_else(|| anyhow!("{what}: layer {location} is missing"))?
                .size;
            Ok(LayerInfo {
                verification: Verification::DiffId(digest.clone()),
                digest,
                size,
                media_type: "application/vnd.docker.image.rootfs.diff.tar".to_string(),
                compression: Compression::Detect,
                location: location.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let info = ImageInfo {
        reference: reference.to_string(),
        name,
        manifest_digest: None,
        tag_digest: None,
        config_digest,
        platform: facts.checked_platform(platform, &what)?,
        layers,
        labels: facts.labels(),
        served_by: None,
    };
    Ok(Image::new(info, Box::new(ArchiveSource { tree })))
}
