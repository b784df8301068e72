//! The main job: choose the MCD build that fits the target bootimage and write an
//! Ignition config that delivers it; and `verify`, which checks such a config.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::elf;
use crate::ignition::units::{self, Delivery};
use crate::ignition::{self, merge, schema, verify, Source, SpecVersion};
use crate::image::layer::normalize_name;
use crate::image::{self, ImageInfo, ImageRef, OpenOptions};
use crate::inspect::{self, Inspection};
use crate::output::Output;
use crate::payload::{gzip_file_on, threads, Follower, HashWriter, GZIP_CHUNK};
use crate::release::Release;
use crate::select::{self, Candidate, Choice};
use crate::target::{OcpVersion, Target};

/// Spec 2.x inline configs above this size get a warning about Ignition v0.x cost
/// (about 8 s of CPU and 210 MB of RAM at the rates below): every inline config of a
/// real MCD build (18 MB for a 4.12 build, 29 MB for a current one) gets it.
pub const V2_INLINE_WARN_BYTES: u64 = 10_000_000;
/// What Ignition v0.35 (bootimages 4.1-4.5) spends on an inline spec 2.2 config, per
/// byte of config, as `benches/node.sh` measured it (BENCHMARKS.md, "Node cost"): CPU
/// seconds per MB in the `fetch` stage (0.74-0.82 s measured; the `files` stage adds
/// 0.02 s), and peak RSS per config byte (18.2-20.9 measured, Go's collector varying
/// between runs; `files`: 4.3-5.4).
const V0_CPU_S_PER_MB: f64 = 0.8;
const V0_RSS_PER_BYTE: f64 = 21.0;

/// A named input; `-` is stdin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl std::str::FromStr for Input {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s == "-" {
            Input::Stdin
        } else {
            Input::File(PathBuf::from(s))
        })
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Stdin => f.write_str("<stdin>"),
            Input::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Input {
    /// Reads it all.
    pub fn read(&self) -> Result<Vec<u8>> {
        match self {
            Input::Stdin => {
                let mut b = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut b)
                    .context("reading stdin")?;
                Ok(b)
            }
            Input::File(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display())),
        }
    }
}

/// What the target is, as the user gave it.
#[derive(Clone, Debug)]
pub struct TargetArgs {
    pub bootimage: OcpVersion,
    pub spec: Option<SpecVersion>,
    pub rhel: Option<u32>,
}

/// Remote mode: the config references a served copy of the payload.
#[derive(Clone, Debug)]
pub struct Remote {
    pub url: String,
    pub out: Output,
}

/// Everything `inject` needs, parsed.
#[derive(Clone, Debug)]
pub struct InjectConfig {
    pub image: ImageRef,
    pub open: OpenOptions,
    pub target: TargetArgs,
    pub binary_path: Option<String>,
    pub force: bool,
    pub ign: Output,
    pub base: Option<Input>,
    pub remote: Option<Remote>,
    /// The release the image was taken from (`--release`).
    pub release: Option<Release>,
}

/// What `inject` did, for the caller to report.
#[derive(Debug)]
pub struct InjectReport {
    pub chosen: String,
    pub binary_sha256: String,
    pub target: Target,
    pub config_bytes: u64,
    /// Which layers the choice needed, and their share of the image's stored bytes.
    pub layers_read: String,
    /// Lines for stderr: replacements, translations, warnings.
    pub notes: Vec<String>,
    /// The image the binary came from.
    pub image: ImageInfo,
    /// sha256 of the config as written.
    pub config_sha256: String,
    /// sha512 of the (gzip) payload, as the config checks it.
    pub payload_sha512: String,
    pub release: Option<Release>,
}

/// The image's candidates, inspected.
fn candidates(ins: &Inspection) -> Vec<Candidate> {
    ins.binaries.iter().map(|b| b.candidate()).collect()
}

/// Chooses a binary for a target from an inspected image.
pub fn choose(
    ins: &Inspection,
    target: &Target,
    binary_path: Option<&str>,
    force: bool,
) -> Result<Choice> {
    let c = candidates(ins);
    Ok(select::choose(
        &c,
        ins.os_release.as_ref(),
        target,
        binary_path,
        force,
    )?)
}

/// The output spec: `--spec`, else the base's own spec when the bootimage reads it and
/// it is newer than the default, else the table's default.
fn output_spec(t: &TargetArgs, base: Option<&Value>, arch: &str) -> Result<Target> {
    let default = Target::new(t.bootimage, t.spec, t.rhel, arch)?;
    if t.spec.is_some() {
        return Ok(default);
    }
    match base.and_then(merge::declared_spec) {
        Some(b) if b > default.spec && default.reads(b) => {
            Ok(Target::new(t.bootimage, Some(b), t.rhel, arch)?)
        }
        _ => Ok(default),
    }
}

fn provenance(
    ins: &Inspection,
    path: &str,
    sha256: &str,
    target: &Target,
    release: Option<&Release>,
) -> Vec<u8> {
    let mut p = json!({
        "image": ins.image.reference,
        "manifest_digest": ins.image.manifest_digest.as_ref().map(|d| d.to_string()),
        "config_digest": ins.image.config_digest.to_string(),
        "platform": ins.image.platform.to_string(),
        "binary_path": path,
        "binary_sha256": sha256,
        "target": {
            "bootimage": target.bootimage.to_string(),
            "rhel": target.rhel,
            "spec": target.spec.as_str(),
        },
        "tool": format!("mcd-inject {}", env!("CARGO_PKG_VERSION")),
    });
    if let Some(r) = release {
        p["release"] = json!({
            "reference": r.reference,
            "digest": r.digest.as_ref().map(|d| d.to_string()),
            "version": r.version,
            "mco_digest": r.mco_digest.to_string(),
        });
    }
    ignition::to_bytes(&p)
}

/// Runs `inject`. Nothing is written unless everything succeeded.
pub fn inject(cfg: &InjectConfig) -> Result<InjectReport> {
    let base = match &cfg.base {
        Some(input) => {
            let bytes = input.read()?;
            Some(ignition::parse_json(&input.to_string(), &bytes)?)
        }
        None => None,
    };
    let arch = cfg.open.platform.architecture.clone();
    let target = output_spec(&cfg.target, base.as_ref(), &arch)?;

    let binary_path = match &cfg.binary_path {
        Some(p) if p.starts_with('/') => Some(format!(
            "/{}",
            normalize_name(p.trim_start_matches('/'))
                .with_context(|| format!("--binary-path {p:?}"))?
        )),
        Some(p) => bail!("--binary-path {p:?} must be absolute"),
        None => None,
    };
    let img = image::open(&cfg.image, &cfg.open)?;
    // Spool beside the output, not in a possibly memory-backed /tmp: the binary and its
    // compressed copy are as big as the MCD.
    let spool_in = cfg.ign.spool_dir()?;
    let spool = crate::tempfiles::dir_in(&spool_in)
        .with_context(|| format!("creating a spool directory in {}", spool_in.display()))?;
    // The build most likely chosen, compressed while its layer streams: the one named,
    // else the twin for the target's RHEL (MCO's choice for a host of the other major).
    let likely = match &binary_path {
        Some(p) => p.trim_start_matches('/').to_string(),
        None => format!(
            "{}/{}.rhel{}",
            inspect::BIN_DIR.trim_start_matches('/'),
            inspect::MCD_NAME,
            target.rhel
        ),
    };
    let follower = Follower::start(spool.path(), &likely);
    // The choice of the full view, from as few layers as settle it.
    // The choice of the full view, from as few layers as settle it; when lower layers
    // must be read for it, the build it is likely to settle on is compressed meanwhile.
    let (ins, choice) = inspect::select_with_hint(
        &img,
        spool.path(),
        &target,
        binary_path.as_deref(),
        cfg.force,
        &|b| follower.prefer(b.content.file.path(), b.size),
    )?;
    let bin = &ins.binaries[choice.index];
    let mut notes = Vec::new();
    if choice.forced {
        notes.push(format!(
            "WARNING: --force: delivering {} although it does NOT fit {}: {}. \
             The node's first boot will likely fail.",
            bin.path,
            select::describe(&target),
            choice.verdict.because()
        ));
    }

    log::info!("chose {}", bin.path);
    let done = follower.finish(bin.content.file.path());
    let early = done.len();
    let gz = gzip_file_on(bin.content.file.path(), spool.path(), threads(), done)?;
    log::info!(
        "payload: {} bytes of gzip, {} of its {} pieces compressed while the image was read",
        gz.len,
        early,
        bin.size.div_ceil(GZIP_CHUNK as u64).max(1)
    );
    let sha256 = bin.sha256.hex().to_string();
    // Remote mode stages the payload file now; inline mode streams it into the config
    // when that is written.
    let mut staged = Vec::new();
    let payload = match &cfg.remote {
        Some(r) => {
            if r.out == Output::Stdout || r.out == cfg.ign {
                bail!("--payload-out must be a file other than --ign");
            }
            let mut t = r.out.temp_file()?;
            std::io::copy(&mut gz.file.reopen()?, t.as_file_mut())
                .with_context(|| format!("writing {}", r.out))?;
            staged.push((r.out.clone(), t));
            Source::Url(r.url.clone())
        }
        None => Source::Streamed,
    };
    let delivery = Delivery {
        payload,
        payload_sha512: gz.sha512.clone(),
        binary_sha256: sha256.clone(),
        provenance: provenance(&ins, &bin.path, &sha256, &target, cfg.release.as_ref()),
        legacy_firstboot: target.has_legacy_firstboot(),
    };
    let ours = units::config(&delivery).render(target.spec)?;
    let merged = match &base {
        Some(b) => {
            let (m, n) = merge::merge(b, &ours, target.spec, cfg.force)?;
            notes.extend(n);
            m
        }
        None => ours,
    };
    let report = schema::validate(&merged, target.spec);
    if !report.is_clean() {
        bail!(
            "internal error: the config is not valid spec {}: {report:?}",
            target.spec
        );
    }
    let rendered = ignition::to_bytes(&merged);
    let mut t = cfg.ign.temp_file()?;
    // The config's sha256 is taken as it is written.
    let mut w: HashWriter<_, sha2::Sha256> =
        HashWriter::new(std::io::BufWriter::new(t.as_file_mut()));
    let size = if cfg.remote.is_none() {
        ignition::write_streamed(&rendered, gz.file.reopen()?, gz.len, &mut w)
            .with_context(|| format!("writing {}", cfg.ign))?
    } else {
        w.write_all(&rendered)
            .with_context(|| format!("writing {}", cfg.ign))?;
        rendered.len() as u64
    };
    w.flush().with_context(|| format!("writing {}", cfg.ign))?;
    if w.len != size {
        bail!(
            "internal error: wrote {} bytes of config, expected {size}",
            w.len
        );
    }
    let config_sha256 = w.hex();
    log::info!("config written: {size} bytes");
    if target.spec.is_v2() && cfg.remote.is_none() && size > V2_INLINE_WARN_BYTES {
        notes.push(v2_size_warning(size));
    }

    // Everything is ready: commit the payload (remote mode), then the config.
    staged.push((cfg.ign.clone(), t));
    for (out, t) in staged {
        out.commit(t, 0o644)?;
    }
    Ok(InjectReport {
        chosen: bin.path.clone(),
        binary_sha256: sha256,
        target,
        config_bytes: size,
        layers_read: ins.read_summary(),
        notes,
        image: ins.image.clone(),
        config_sha256,
        payload_sha512: gz.sha512.clone(),
        release: cfg.release.clone(),
    })
}

/// The warning for big inline spec 2.x configs: what Ignition v0.x will spend on it,
/// at the rates `benches/node.sh` measured with v0.35, and how remote mode avoids it.
pub fn v2_size_warning(len: u64) -> String {
    let mb = len as f64 / 1e6;
    format!(
        "warning: the spec 2.2 config is {mb:.1} MB with the payload inline; Ignition v0.x \
         (bootimages 4.1-4.5) spends about {V0_CPU_S_PER_MB} s of CPU per MB and about \
         {V0_RSS_PER_BYTE:.0} bytes of RAM per config byte parsing it (measured with \
         v0.35): expect about {:.0} s of CPU and {:.2} GB of RAM in its fetch stage at \
         first boot. Remote mode (--payload-url URL --payload-out FILE) keeps the config \
         to a few kB; the node then downloads the payload in the files stage for a \
         fraction of a second of CPU and about 13 MB of RAM.",
        mb * V0_CPU_S_PER_MB,
        len as f64 * V0_RSS_PER_BYTE / 1e9
    )
}

/// Everything `verify` needs, parsed.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    pub ign: Input,
    pub target: Option<TargetArgs>,
    pub image: Option<(ImageRef, OpenOptions)>,
    pub payload: Option<PathBuf>,
    pub arch: String,
}

/// The outcome of `verify`.
#[derive(Debug)]
pub struct VerifyReport {
    pub passed: Vec<String>,
    pub problems: Vec<String>,
    /// The config's spec.
    pub spec: String,
    /// sha256 of the binary the payload holds, when it could be read.
    pub binary_sha256: Option<String>,
    /// The config's provenance record.
    pub provenance: Option<Value>,
}

/// Runs `verify`.
pub fn verify(cfg: &VerifyConfig) -> Result<VerifyReport> {
    let bytes = cfg.ign.read()?;
    let spool =
        crate::tempfiles::dir_in(&std::env::temp_dir()).context("creating a spool directory")?;
    let v = verify::verify(
        &cfg.ign.to_string(),
        &bytes,
        cfg.payload.as_deref(),
        spool.path(),
    )?;
    let mut passed = v.passed.clone();
    let mut problems = v.problems.clone();

    let from_provenance = v
        .provenance
        .as_ref()
        .and_then(|p| p["target"]["bootimage"].as_str())
        .and_then(|s| s.parse::<OcpVersion>().ok());
    let target_args = match (&cfg.target, from_provenance) {
        (Some(t), _) => Some(TargetArgs {
            spec: Some(v.spec),
            ..t.clone()
        }),
        (None, Some(b)) => Some(TargetArgs {
            bootimage: b,
            spec: Some(v.spec),
            rhel: v.provenance.as_ref().and_then(|p| {
                p["target"]["rhel"]
                    .as_u64()
                    .and_then(|r| u32::try_from(r).ok())
            }),
        }),
        (None, None) => None,
    };
    let target = match &target_args {
        Some(t) => match Target::new(t.bootimage, t.spec, t.rhel, &cfg.arch) {
            Ok(target) => {
                passed.push(format!(
                    "bootimage {} reads spec {}",
                    target.bootimage, target.spec
                ));
                Some(target)
            }
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        },
        None => {
            problems.push("no target: pass --bootimage (the config has no provenance)".into());
            None
        }
    };
    if let Some(t) = &target {
        if t.has_legacy_firstboot() != verify::masks_legacy(&v) {
            problems.push(format!(
                "bootimage {} {} pivot.service masked",
                t.bootimage,
                if t.has_legacy_firstboot() {
                    "needs"
                } else {
                    "should not have"
                }
            ));
        }
        if let Some(bin) = &v.binary {
            match elf::read_facts(bin.path()) {
                Ok(f) => {
                    let verdict = select::verdict(&f, t);
                    let line = format!(
                        "the binary ({}) {} {}: {}",
                        f.summary(),
                        if verdict.compatible {
                            "fits"
                        } else {
                            "does NOT fit"
                        },
                        select::describe(t),
                        verdict.because()
                    );
                    if verdict.compatible {
                        passed.push(line);
                    } else {
                        problems.push(line);
                    }
                }
                Err(e) => problems.push(format!("the payload is not an ELF binary: {e:#}")),
            }
        }
    }
    if let (Some((r, o)), Some(t)) = (&cfg.image, &target) {
        let img = image::open(r, o)?;
        let ins = inspect::inspect(&img, spool.path())?;
        match choose(&ins, t, None, false) {
            Ok(c) => {
                let want = ins.binaries[c.index].sha256.hex().to_string();
                if v.binary_sha256.as_deref() == Some(want.as_str()) {
                    passed.push(format!(
                        "the payload is {} of {r}, the binary inject chooses",
                        ins.binaries[c.index].path
                    ));
                } else {
                    problems.push(format!(
                        "inject would choose {} (sha256 {want}), the payload is {}",
                        ins.binaries[c.index].path,
                        v.binary_sha256.as_deref().unwrap_or("unreadable")
                    ));
                }
            }
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    Ok(VerifyReport {
        passed,
        problems,
        spec: v.spec.as_str().to_string(),
        binary_sha256: v.binary_sha256.clone(),
        provenance: v.provenance.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_warning_gives_the_cost_and_points_to_remote_mode() {
        // A current MCD's inline config, as benches/node.sh measured it: 28.87 MB,
        // 21.25-21.96 s of CPU and 500-539 MiB (up to 0.57 GB) in the fetch stage.
        let w = v2_size_warning(28_870_000);
        assert!(w.contains("28.9 MB"), "{w}");
        assert!(w.contains("about 23 s of CPU"), "{w}");
        assert!(w.contains("0.61 GB"), "{w}");
        assert!(w.contains("--payload-url"), "{w}");
        const { assert!(V2_INLINE_WARN_BYTES < 18_000_000) };
    }
}
