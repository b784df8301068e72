//! The main job: choose the MCD build that fits the target bootimage and write an
//! Ignition config that delivers it; and `verify`, which checks such a config.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest as _, Sha512};

use crate::elf;
use crate::ignition::document::Document;
use crate::ignition::schema::Schema;
use crate::ignition::units::{self, Delivery};
use crate::ignition::{self, merge, verify, Source, SpecVersion};
use crate::image::layer::normalize_name;
use crate::image::{self, ImageInfo, ImageRef, OpenOptions};
use crate::inspect::{self, Inspection};
use crate::output::Output;
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
/// Compression level of the payload (libdeflate's scale): fixed, so the same binary
/// gives the same bytes. libdeflate at 6 makes a real 80 MB MCD 0.2% smaller than one
/// `gzip -6` stream, in 4 MiB members, where zlib-rs at 6 made it 2.35% bigger
/// (BENCHMARKS.md, "Payload size").
const GZIP_LEVEL: i32 = 6;

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
fn output_spec(t: &TargetArgs, base: Option<&Document>, arch: &str) -> Result<Target> {
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

/// A compressed payload, spooled to a temp file.
struct Payload {
    file: tempfile::NamedTempFile,
    len: u64,
    sha512: String,
}

/// Writes through to `inner` and hashes what passes (sha512, the spec 2.x hash).
struct Sha512Writer<W> {
    inner: W,
    hasher: Sha512,
    len: u64,
}

impl<W: Write> Write for Sha512Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The payload is compressed in pieces of this size, each a gzip member of its own, so
/// that the pieces can be compressed in parallel. The output does not depend on the
/// number of threads; `gzip -d` reads the members as one stream. Larger pieces gain
/// almost nothing (0.05% at 8 MiB for a real MCD).
const GZIP_CHUNK: usize = 4 * 1024 * 1024;

/// One gzip member: libdeflate's header has no name, mtime 0, OS 255 (unknown).
fn gzip_member(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let level = libdeflater::CompressionLvl::new(GZIP_LEVEL).expect("a valid libdeflate level");
    let mut c = libdeflater::Compressor::new(level);
    let mut out = vec![0; c.gzip_compress_bound(data.len())];
    let n = c
        .gzip_compress(data, &mut out)
        .map_err(|e| std::io::Error::other(format!("libdeflate: {e:?}")))?;
    out.truncate(n);
    Ok(out)
}

/// Reads up to `buf.len()` bytes, fewer only at the end of the input.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Compresses a file with fixed gzip header fields (no name, mtime 0, fixed level) into
/// a temp file in `spool`, hashing the compressed bytes on the way. Pieces of
/// [`GZIP_CHUNK`] bytes are compressed on all cores, a batch at a time.
#[cfg(test)]
fn gzip_file(path: &std::path::Path, spool: &std::path::Path) -> Result<Payload> {
    gzip_file_on(path, spool, threads(), Vec::new())
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// [`gzip_file`] with `threads` pieces compressed at a time, the first `done.len()`
/// pieces being already compressed (`done`, from [`Follower`]).
fn gzip_file_on(
    path: &std::path::Path,
    spool: &std::path::Path,
    threads: usize,
    done: Vec<Vec<u8>>,
) -> Result<Payload> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let file = tempfile::NamedTempFile::new_in(spool).context("creating the payload file")?;
    let mut sink = Sha512Writer {
        inner: std::io::BufWriter::new(file.reopen()?),
        hasher: Sha512::new(),
        len: 0,
    };
    let mut written_any = !done.is_empty();
    std::io::Seek::seek(
        &mut f,
        std::io::SeekFrom::Start((done.len() * GZIP_CHUNK) as u64),
    )
    .with_context(|| format!("reading {}", path.display()))?;
    for m in done {
        sink.write_all(&m).context("writing the payload")?;
    }
    let mut at_end = false;
    while !at_end {
        let mut pieces = Vec::with_capacity(threads);
        while pieces.len() < threads && !at_end {
            let mut buf = vec![0; GZIP_CHUNK];
            let n = read_full(&mut f, &mut buf)
                .with_context(|| format!("reading {}", path.display()))?;
            buf.truncate(n);
            at_end = n < GZIP_CHUNK;
            // An empty input still gets one (empty) member.
            if n > 0 || !written_any && pieces.is_empty() {
                pieces.push(buf);
            }
        }
        let members = std::thread::scope(|scope| {
            let jobs: Vec<_> = pieces
                .iter()
                .map(|piece| scope.spawn(|| gzip_member(piece)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("a compression thread panicked"))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .context("compressing the binary")?;
        for m in members {
            sink.write_all(&m).context("writing the payload")?;
            written_any = true;
        }
    }
    sink.flush().context("writing the payload")?;
    Ok(Payload {
        file,
        len: sink.len,
        sha512: hex::encode(sink.hasher.finalize()),
    })
}

/// Compresses a captured file while its layer still streams, on a thread of its own:
/// the [`GZIP_CHUNK`] pieces that are already spooled, one after another, as
/// [`gzip_file`] would. The result is used only if the file turns out to be the chosen
/// binary, verified with its layer; the rest is then compressed by [`gzip_file_on`]. The
/// output is the same bytes either way.
struct Follower {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    job: Option<std::thread::JoinHandle<Option<Followed>>>,
}

/// The file followed and the members compressed from it so far.
type Followed = (PathBuf, Vec<Vec<u8>>);

impl Follower {
    /// Follows the capture of `name` (normalised, no leading `/`) in `spool`.
    fn start(spool: &std::path::Path, name: &str) -> Follower {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, dir) = (stop.clone(), spool.to_path_buf());
        let prefix = crate::image::layer::capture_prefix(name);
        let job = std::thread::spawn(move || {
            let pause = std::time::Duration::from_millis(3);
            let path = loop {
                if flag.load(Ordering::Acquire) {
                    return None;
                }
                let found = std::fs::read_dir(&dir).ok()?.find_map(|e| {
                    let e = e.ok()?;
                    e.file_name()
                        .to_str()?
                        .starts_with(&prefix)
                        .then(|| e.path())
                });
                match found {
                    Some(p) => break p,
                    None => std::thread::sleep(pause),
                }
            };
            let mut f = std::fs::File::open(&path).ok()?;
            let mut done = Vec::new();
            let mut buf = vec![0; GZIP_CHUNK];
            loop {
                // Once stopped, the rest is compressed on all cores instead.
                if flag.load(Ordering::Acquire) {
                    return Some((path, done));
                }
                let want = ((done.len() + 1) * GZIP_CHUNK) as u64;
                if f.metadata().ok()?.len() >= want {
                    read_full(&mut f, &mut buf).ok()?;
                    done.push(gzip_member(&buf).ok()?);
                } else {
                    std::thread::sleep(pause);
                }
            }
        });
        Follower {
            stop,
            job: Some(job),
        }
    }

    /// Stops following; the pieces compressed so far if `path` is the file followed.
    fn finish(mut self, path: &std::path::Path) -> Vec<Vec<u8>> {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        match self.job.take().map(|j| j.join()) {
            Some(Ok(Some((p, done)))) if p == path => done,
            _ => Vec::new(),
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(j) = self.job.take() {
            let _ = j.join();
        }
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
    // The base stays as read; its entries are parsed one at a time (docs/inject.md).
    let base_bytes = cfg.base.as_ref().map(Input::read).transpose()?;
    let base = match (&cfg.base, &base_bytes) {
        (Some(input), Some(bytes)) => Some(Document::parse(&input.to_string(), bytes)?),
        _ => None,
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
    let (ins, choice) = inspect::select(
        &img,
        spool.path(),
        &target,
        binary_path.as_deref(),
        cfg.force,
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

    let done = follower.finish(bin.content.file.path());
    let gz = gzip_file_on(bin.content.file.path(), spool.path(), threads(), done)?;
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
    let merged = match base {
        Some(b) => {
            let (m, n) = merge::merge(b, &ours, target.spec, cfg.force)?;
            notes.extend(n);
            m
        }
        None => Document::from_value(ours),
    };
    let report = merged.validate(&Schema::load(target.spec));
    if !report.is_clean() {
        bail!(
            "internal error: the config is not valid spec {}: {report:?}",
            target.spec
        );
    }
    let mut t = cfg.ign.temp_file()?;
    let mut w = std::io::BufWriter::new(t.as_file_mut());
    match cfg.remote {
        None => {
            let write = |s: &mut ignition::Splice<_>| merged.write(s).map_err(Into::into);
            ignition::write_streamed(write, gz.file.reopen()?, gz.len, &mut w).map(drop)
        }
        Some(_) => merged.write(&mut w).map_err(Into::into),
    }
    .and_then(|()| Ok(w.flush()?))
    .with_context(|| format!("writing {}", cfg.ign))?;
    drop(w);
    let size = t.as_file().metadata()?.len();
    if target.spec.is_v2() && cfg.remote.is_none() && size > V2_INLINE_WARN_BYTES {
        notes.push(v2_size_warning(size));
    }

    let config_sha256 =
        sha256_of(t.as_file_mut()).with_context(|| format!("reading back {}", cfg.ign))?;

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

/// The sha256 of a file from its start, in hex.
fn sha256_of(f: &mut std::fs::File) -> std::io::Result<String> {
    use sha2::Sha256;
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(0))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf)? {
            0 => break,
            n => h.update(&buf[..n]),
        }
    }
    Ok(hex::encode(h.finalize()))
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

    #[test]
    fn gzip_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b");
        std::fs::write(&p, b"same bytes, same gzip").unwrap();
        let gz = gzip_file(&p, dir.path()).unwrap();
        let a = std::fs::read(gz.file.path()).unwrap();
        let b = std::fs::read(gzip_file(&p, dir.path()).unwrap().file.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(gz.len, a.len() as u64);
        assert_eq!(gz.sha512, hex::encode(Sha512::digest(&a)));
        // No name, mtime 0.
        assert_eq!(&a[3..8], &[0, 0, 0, 0, 0]);
        // Pieces become members; they decompress to the whole input.
        let big: Vec<u8> = (0..GZIP_CHUNK * 2 + 5)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&p, &big).unwrap();
        let gz = std::fs::read(gzip_file(&p, dir.path()).unwrap().file.path()).unwrap();
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == big);
        // The same bytes whatever the number of cores.
        for threads in [1, 2, 3, 8] {
            let other = gzip_file_on(&p, dir.path(), threads, Vec::new()).unwrap();
            assert!(
                std::fs::read(other.file.path()).unwrap() == gz,
                "{threads} threads"
            );
        }
        // A follower that saw the file grow gives the same bytes.
        let spool = tempfile::tempdir().unwrap();
        let f = Follower::start(spool.path(), "usr/bin/x");
        let mut cap = tempfile::Builder::new()
            .prefix(&crate::image::layer::capture_prefix("usr/bin/x"))
            .tempfile_in(spool.path())
            .unwrap();
        for piece in big.chunks(GZIP_CHUNK / 3) {
            cap.write_all(piece).unwrap();
            cap.flush().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Time enough for two pieces even on a busy machine (it stops once told to).
        std::thread::sleep(std::time::Duration::from_millis(2000));
        let done = f.finish(cap.path());
        assert!(!done.is_empty() && done.len() <= 2, "{} pieces", done.len());
        let followed = gzip_file_on(cap.path(), dir.path(), 2, done).unwrap();
        assert!(std::fs::read(followed.file.path()).unwrap() == gz);
        // Another file than the one followed: nothing is taken from the follower.
        let f = Follower::start(spool.path(), "usr/bin/x");
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(f.finish(&p).is_empty());
        std::fs::write(&p, b"").unwrap();
        let gz = std::fs::read(gzip_file(&p, dir.path()).unwrap().file.path()).unwrap();
        assert!(gz.starts_with(&[0x1f, 0x8b]));
    }
}
