//! Container images: references, the on-disk transports, layers and the merged
//! filesystem view. Nothing here touches the network or knows of `registry`, which
//! builds on this module; `transport::open` dispatches among them.
//!
//! [`open_local`] turns an on-disk [`ImageRef`] into an [`Image`]: its manifest,
//! configuration and layer list, read and digest-checked, plus the source its layers
//! stream from. The merged view (`fs::MergedFs`, inside the crate) answers path
//! questions over the layers, top-down, reading as few layers as the answer needs.

pub(crate) mod digest;
mod docker_archive;
mod files;
pub(crate) mod fs;
pub(crate) mod layer;
pub(crate) mod oci;
pub(crate) mod reference;

use std::io::Read;

use anyhow::{bail, Result};
use serde::Serialize;

pub use digest::Digest;
pub use reference::{DockerRef, ImageRef, Platform};

/// Manifests, indexes and configs larger than this are refused: they are hostile input.
pub(crate) const MAX_METADATA_BYTES: u64 = 8 * 1024 * 1024;

/// How a layer blob is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// A plain tar.
    None,
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
    /// Unknown from metadata (docker-archive): decided by the blob's magic bytes.
    Detect,
}

/// Which digest proves a layer intact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verification {
    /// The digest and size of the blob as stored (OCI layouts, registries).
    Blob {
        /// The blob's digest.
        digest: Digest,
        /// The blob's size in bytes.
        size: u64,
    },
    /// The digest of the uncompressed tar (docker-archive: `rootfs.diff_ids`).
    DiffId(Digest),
}

/// One layer of an image, as the manifest describes it.
#[derive(Clone, Debug, Serialize)]
pub struct LayerInfo {
    /// Content digest: the blob digest, or the diff ID where only that is known.
    pub digest: Digest,
    /// Stored size in bytes.
    pub size: u64,
    /// The layer's media type, as the manifest gives it.
    pub media_type: String,
    /// How the blob is compressed.
    pub compression: Compression,
    /// Where the blob lives in its transport (layout path, archive member, cache path).
    #[serde(skip)]
    pub location: String,
    /// How the layer is checked as it is read.
    #[serde(skip)]
    pub verification: Verification,
}

/// What an image is, once its metadata has been read and verified.
#[derive(Clone, Debug, Serialize)]
pub struct ImageInfo {
    /// The reference as the user gave it, normalised.
    pub reference: String,
    /// The image's own name in its layout or archive (the `ref.name` annotation of an
    /// OCI layout's entry, a docker archive's `RepoTags` name), when it has one; not
    /// for registry images, which the reference names.
    #[serde(skip)]
    pub name: Option<String>,
    /// Digest of the image manifest (absent for docker-archive, which has none).
    pub manifest_digest: Option<Digest>,
    /// Digest of what a registry reference's tag names (an index for a multi-arch image,
    /// else the manifest); `None` for images read from disk.
    #[serde(skip)]
    pub tag_digest: Option<Digest>,
    /// Digest of the image configuration (the image ID).
    pub config_digest: Digest,
    /// The platform of the image read (an index's entry for `--platform`).
    pub platform: Platform,
    /// Layers bottom first, as in the manifest.
    pub layers: Vec<LayerInfo>,
    /// The image config's labels (string values only). Red Hat's MCO images say their
    /// OpenShift version in `version` (`v4.15.0`).
    #[serde(skip)]
    pub labels: std::collections::BTreeMap<String, String>,
    /// The registry repository that served it, when a mirror did (or when mirrors were
    /// configured for it): `host/repo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_by: Option<String>,
}

/// Streams stored blobs. Implementations hand out raw bytes; callers verify them.
pub(crate) trait BlobSource {
    /// Opens the stored bytes of a layer.
    fn open_layer(&self, layer: &LayerInfo) -> Result<Box<dyn Read + '_>>;

    /// True when the readers it hands out check the blob's size and digest themselves
    /// and fail at the end of a blob that does not match (the registry source does this
    /// on a second thread); the layer scanner then does not hash the blob again.
    fn verifies_blobs(&self) -> bool {
        false
    }
}

/// An opened image: verified metadata plus where to read its layers from.
pub struct Image {
    /// What the image's metadata says.
    pub info: ImageInfo,
    source: Box<dyn BlobSource>,
    max_file_size: u64,
}

/// The default limit on a file read out of an image: an MCD is under 200 MB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1 << 30;

impl Image {
    /// An image whose layers `source` reads.
    pub(crate) fn new(info: ImageInfo, source: Box<dyn BlobSource>) -> Self {
        Image {
            info,
            source,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }

    /// The largest regular file (by its tar header) that may be read out.
    pub fn max_file_size(&self) -> u64 {
        self.max_file_size
    }

    /// Sets the limit of [`Image::max_file_size`].
    pub fn set_max_file_size(&mut self, bytes: u64) {
        self.max_file_size = bytes;
    }

    /// Where the layers are read from.
    pub(crate) fn source(&self) -> &dyn BlobSource {
        self.source.as_ref()
    }
}

/// Opens an image stored on disk (`oci:`, `oci-archive:`, `docker-archive:`): reads and
/// verifies its manifest and configuration. Registry references are opened by
/// `transport::open`, which knows every transport.
pub fn open_local(reference: &ImageRef, platform: &Platform) -> Result<Image> {
    match reference {
        ImageRef::Oci { dir, tag } => oci::open(
            reference,
            files::DirTree::new(dir)?,
            tag.as_deref(),
            platform,
        ),
        ImageRef::OciArchive { file, tag } => oci::open(
            reference,
            files::ArchiveTree::open(file)?,
            tag.as_deref(),
            platform,
        ),
        ImageRef::DockerArchive { file, reference: r } => {
            docker_archive::open(reference, file, r.as_deref(), platform)
        }
        ImageRef::Docker(_) => {
            bail!("{reference}: a registry reference, not an image on disk")
        }
    }
}

/// The compression a layer media type implies, or an error for types that are no layer.
pub(crate) fn compression_of(media_type: &str) -> Result<Compression> {
    const GZIP: &[&str] = &[
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
    ];
    const ZSTD: &[&str] = &[
        "application/vnd.oci.image.layer.v1.tar+zstd",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
        "application/vnd.docker.image.rootfs.diff.tar.zstd",
    ];
    const PLAIN: &[&str] = &[
        "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.oci.image.layer.nondistributable.v1.tar",
        "application/vnd.docker.image.rootfs.diff.tar",
    ];
    if GZIP.contains(&media_type) {
        Ok(Compression::Gzip)
    } else if ZSTD.contains(&media_type) {
        Ok(Compression::Zstd)
    } else if PLAIN.contains(&media_type) {
        Ok(Compression::None)
    } else {
        bail!("unsupported layer media type {media_type:?}")
    }
}

#[cfg(test)]
pub(crate) mod testutil;
