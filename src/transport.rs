//! Transport dispatch: the one module that knows every kind of image reference.
//!
//! [`open`] sends on-disk references (`oci:`, `oci-archive:`, `docker-archive:`) to
//! [`crate::image`] and `docker://` references to [`crate::registry`]. It sits above
//! both, so that `image` holds no network code and knows nothing of `registry`, and
//! `registry` depends on `image` only.

use anyhow::Result;

use crate::image::{self, Image, ImageRef, Platform, DEFAULT_MAX_FILE_SIZE};
use crate::registry::{self, RegistryOptions};
use crate::warnings::Warnings;

/// Options that choose among the images a reference may name, and how to reach them.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The platform to pick from a multi-arch index.
    pub platform: Platform,
    /// Registry access and the cache, for `docker://` references.
    pub registry: RegistryOptions,
    /// The largest file (by its tar header) that may be read out of the image.
    pub max_file_size: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            platform: Platform::default(),
            registry: RegistryOptions::default(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

/// Opens an image of any transport: reads and verifies its manifest and configuration.
/// What the registry and its cache warn about, now or as layers are read, goes to
/// `warnings`.
pub fn open(reference: &ImageRef, opts: &OpenOptions, warnings: &Warnings) -> Result<Image> {
    let mut image = match reference {
        ImageRef::Docker(docker) => {
            registry::open(reference, docker, &opts.platform, &opts.registry, warnings)?
        }
        _ => {
            if let Some(policy) = &opts.registry.policy {
                let (transport, path) = match reference {
                    ImageRef::Oci { dir, .. } => ("oci", Some(dir.as_path())),
                    ImageRef::OciArchive { file, .. } => ("oci-archive", Some(file.as_path())),
                    _ => ("docker-archive", None),
                };
                policy.check_local(transport, path, &reference.to_string())?;
            }
            image::open_local(reference, &opts.platform)?
        }
    };
    image.set_max_file_size(opts.max_file_size);
    Ok(image)
}
