//! What an image holds that matters here: its layers, os-release and MCD builds.

use std::io::Read;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::image::digest::digest_reader;
use crate::image::fs::{FileContent, MergedFs, NotFound};
use crate::image::{Digest, Image, ImageInfo};
use crate::osrelease::OsRelease;

/// Where MCO images keep their binaries.
pub const BIN_DIR: &str = "/usr/bin";
/// The name every MCD build starts with.
pub const MCD_NAME: &str = "machine-config-daemon";
/// os-release(5): the first of these that exists is the one.
const OS_RELEASE_PATHS: [&str; 2] = ["/etc/os-release", "/usr/lib/os-release"];

/// One machine-config-daemon build found in the image.
#[derive(Debug, Serialize)]
pub struct Binary {
    pub path: String,
    /// The path holding the bytes, after links.
    pub resolved: String,
    pub size: u64,
    pub mode: u32,
    pub sha256: Digest,
    #[serde(skip)]
    pub content: FileContent,
}

/// The result of inspecting an image.
#[derive(Debug, Serialize)]
pub struct Inspection {
    pub image: ImageInfo,
    pub os_release: Option<OsRelease>,
    pub binaries: Vec<Binary>,
    /// Layers read to answer.
    pub layer_reads: usize,
}

impl std::fmt::Debug for FileContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileContent")
            .field("resolved", &self.resolved)
            .field("size", &self.size)
            .finish()
    }
}

fn is_absent(e: &anyhow::Error) -> bool {
    e.downcast_ref::<NotFound>().is_some()
}

/// Reads the os-release and every `/usr/bin/machine-config-daemon*` of an image.
/// Their content is spooled in `spool`.
pub fn inspect(image: &Image, spool: &std::path::Path) -> Result<Inspection> {
    let prefix = format!("{}/{MCD_NAME}", BIN_DIR.trim_start_matches('/'));
    let mut fs = MergedFs::new(image, spool, move |n| {
        n.starts_with(&prefix) || n.ends_with("os-release")
    });
    let mut os_release = None;
    for p in OS_RELEASE_PATHS {
        match fs.read_file(p) {
            Ok(c) => {
                let mut text = String::new();
                c.file
                    .reopen()?
                    .take(64 * 1024)
                    .read_to_string(&mut text)
                    .with_context(|| format!("reading {p}"))?;
                os_release = Some(OsRelease::parse(&text));
                break;
            }
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    let names = match fs.list_dir(BIN_DIR, |n| n.starts_with(MCD_NAME)) {
        Ok(n) => n,
        Err(e) if is_absent(&e) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut binaries = Vec::new();
    for name in names {
        let path = format!("{BIN_DIR}/{name}");
        let content = match fs.read_file(&path) {
            Ok(c) => c,
            // A directory or a dangling link of that name is no candidate.
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        let (sha256, _) =
            digest_reader(content.file.reopen()?).with_context(|| format!("hashing {path}"))?;
        binaries.push(Binary {
            path,
            resolved: content.resolved.clone(),
            size: content.size,
            mode: content.mode,
            sha256,
            content,
        });
    }
    Ok(Inspection {
        image: image.info.clone(),
        os_release,
        binaries,
        layer_reads: fs.layer_reads(),
    })
}

impl Inspection {
    /// The human-readable report.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let i = &self.image;
        s += &format!("Image:     {}\n", i.reference);
        if let Some(d) = &i.manifest_digest {
            s += &format!("Manifest:  {d}\n");
        }
        s += &format!("Config:    {}\n", i.config_digest);
        s += &format!("Platform:  {}\n", i.platform);
        s += "Layers (bottom first):\n";
        for (n, l) in i.layers.iter().enumerate() {
            s += &format!(
                "  {:>2}  {}  {:>12} B  {}\n",
                n + 1,
                l.digest,
                l.size,
                l.media_type
            );
        }
        match &self.os_release {
            Some(o) => {
                let f = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                s += &format!(
                    "os-release: ID={} VERSION_ID={} RHEL_VERSION={}\n",
                    f(&o.id),
                    f(&o.version_id),
                    f(&o.rhel_version)
                );
            }
            None => s += "os-release: (none)\n",
        }
        s += &format!("{MCD_NAME} builds in {BIN_DIR}:\n");
        if self.binaries.is_empty() {
            s += "  (none)\n";
        }
        for b in &self.binaries {
            let via = if b.resolved != b.path {
                format!(" -> {}", b.resolved)
            } else {
                String::new()
            };
            s += &format!(
                "  {}{via}  {} B  mode {:o}  {}\n",
                b.path, b.size, b.mode, b.sha256
            );
        }
        s
    }
}
