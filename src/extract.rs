//! One file out of an image, written atomically (like `oc image extract`).

use anyhow::{Context, Result};
use serde::Serialize;

use crate::image::fs::MergedFs;
use crate::image::layer::normalize_name;
use crate::image::Image;
use crate::io::output::Output;
use crate::io::tempfiles;
use crate::warnings::{Warning, Warnings};

/// What an extraction produced.
#[derive(Debug, Serialize)]
pub struct ExtractReport {
    /// The path that held the content, after links.
    pub resolved: String,
    /// Bytes written.
    pub size: u64,
    /// Digest of the bytes written, `sha256:HEX`.
    pub sha256: String,
    /// Permission bits of the entry in the image.
    pub mode: u32,
    /// Layers read to find the answer.
    pub layer_reads: usize,
    /// The warnings of the run, the image's opening included.
    #[serde(skip)]
    pub warnings: Vec<Warning>,
}

/// Setuid, setgid and sticky bits from an image are not carried to the host.
const MODE_MASK: u32 = 0o777;

/// Writes the file at `path` in `image` to `out`, unless the run's `warnings` (those of
/// the image's opening and its layer reads) fail it.
pub fn extract(
    image: &Image,
    path: &str,
    out: &Output,
    warnings: &Warnings,
) -> Result<ExtractReport> {
    let wanted = normalize_name(path.trim_start_matches('/')).unwrap_or_default();
    // Spool in a directory of this run beside the output, so that an interrupted run
    // can remove what it wrote (crate::io::tempfiles).
    let spool_in = out.spool_dir()?;
    let spool = tempfiles::dir_in(&spool_in)
        .with_context(|| format!("creating a spool directory in {}", spool_in.display()))?;
    let mut fs = MergedFs::new(image, spool.path(), move |n| n == wanted);
    let content = fs.read_file(path)?;
    let (resolved, size, mode) = (content.resolved, content.size, content.mode & MODE_MASK);
    let sha256 = content.sha256.to_string();
    warnings.check_strict()?;
    out.commit(content.file, mode)?;
    Ok(ExtractReport {
        resolved,
        size,
        sha256,
        mode,
        layer_reads: fs.layer_reads(),
        warnings: warnings.list(),
    })
}
