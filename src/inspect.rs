//! What an image holds that matters here: its layers, os-release and MCD builds.

use std::io::Read;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::elf::{self, ElfFacts};
use crate::image::digest::digest_reader;
use crate::image::fs::{FileContent, MergedFs, NotFound};
use crate::image::layer::normalize_name;
use crate::image::{Digest, Image, ImageInfo};
use crate::osrelease::OsRelease;
use crate::select::{self, Candidate, Verdict};
use crate::target::{self, OcpVersion, Target};

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
    /// The ELF facts, when the file is an ELF binary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elf: Option<ElfFacts>,
    /// Why the ELF facts could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elf_error: Option<String>,
    /// The verdict for each bootimage of the table, on the image's platform.
    pub verdicts: Vec<BootimageVerdict>,
    #[serde(skip)]
    pub content: FileContent,
}

/// Whether a binary fits one bootimage.
#[derive(Debug, Serialize)]
pub struct BootimageVerdict {
    pub bootimage: OcpVersion,
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Binary {
    /// This binary as a selection candidate.
    pub fn candidate(&self) -> Candidate {
        Candidate {
            path: self.path.clone(),
            sha256: self.sha256.hex().to_string(),
            facts: match (&self.elf, &self.elf_error) {
                (Some(f), _) => Ok(f.clone()),
                (None, e) => Err(e.clone().unwrap_or_default()),
            },
        }
    }
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
    inspect_with(image, spool, None)
}

/// Like [`inspect`], with one more binary to read (`--binary-path`).
pub fn inspect_with(
    image: &Image,
    spool: &std::path::Path,
    extra: Option<&str>,
) -> Result<Inspection> {
    let prefix = format!("{}/{MCD_NAME}", BIN_DIR.trim_start_matches('/'));
    let extra_name = match extra {
        Some(p) if p.starts_with('/') => Some(normalize_name(p.trim_start_matches('/'))?),
        Some(p) => anyhow::bail!("--binary-path {p:?} must be absolute"),
        None => None,
    };
    let wanted_extra = extra_name.clone();
    let mut fs = MergedFs::new(image, spool, move |n| {
        n.starts_with(&prefix) || n.ends_with("os-release") || wanted_extra.as_deref() == Some(n)
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
    let mut paths: Vec<String> = names.iter().map(|n| format!("{BIN_DIR}/{n}")).collect();
    if let Some(x) = extra_name.map(|n| format!("/{n}")) {
        if !paths.contains(&x) {
            // The user named it: its absence is an error, not a skip.
            fs.read_file(&x)?;
            paths.push(x);
        }
    }
    let arch = image.info.platform.architecture.clone();
    let mut binaries = Vec::new();
    for path in paths {
        let content = match fs.read_file(&path) {
            Ok(c) => c,
            // A directory or a dangling link of that name is no candidate.
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        let (sha256, _) =
            digest_reader(content.file.reopen()?).with_context(|| format!("hashing {path}"))?;
        let (elf, elf_error) = match elf::read_facts(content.file.path()) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let mut b = Binary {
            path,
            resolved: content.resolved.clone(),
            size: content.size,
            mode: content.mode,
            sha256,
            elf,
            elf_error,
            verdicts: Vec::new(),
            content,
        };
        let cand = b.candidate();
        b.verdicts = target::BOOTIMAGES
            .iter()
            .filter_map(|row| Target::new(row.version, None, None, &arch).ok())
            .map(|t| BootimageVerdict {
                bootimage: t.bootimage,
                verdict: cand.verdict(&t),
            })
            .collect();
        binaries.push(b);
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
            match (&b.elf, &b.elf_error) {
                (Some(f), _) => {
                    s += &format!("      ELF: {}\n", f.summary());
                    if let Some(i) = &f.interpreter {
                        s += &format!("      interpreter: {i}\n");
                    }
                    if !f.openssl_versions.is_empty() {
                        s += &format!("      OpenSSL nodes: {}\n", f.openssl_versions.join(" "));
                    }
                }
                (None, e) => s += &format!("      not ELF: {}\n", e.as_deref().unwrap_or("")),
            }
            // One line per run of bootimages with the same verdict.
            let mut runs: Vec<(String, String, &Verdict)> = Vec::new();
            for v in &b.verdicts {
                match runs.last_mut() {
                    Some(r) if r.2 == &v.verdict => r.1 = v.bootimage.to_string(),
                    _ => runs.push((v.bootimage.to_string(), v.bootimage.to_string(), &v.verdict)),
                }
            }
            for (first, last, v) in runs {
                let span = if first == last {
                    first
                } else {
                    format!("{first}-{last}")
                };
                let word = if v.compatible { "fits" } else { "does not fit" };
                s += &format!("      {span}: {word}: {}\n", v.because());
            }
        }
        if let Some(os) = &self.os_release {
            s += &format!(
                "os-release orders candidates as RHEL {}\n",
                select::image_rhel(os)
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "unknown".into())
            );
        }
        s
    }
}
