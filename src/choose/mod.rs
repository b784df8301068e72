//! The one place that decides the build. What an image holds that matters here (its
//! layers, os-release and MCD builds, with their ELF facts and a verdict per bootimage:
//! [`inspect`]), and the build for each boot of a node's first boot, read in one pass
//! from as few layers as settle it ([`select_boots`]), by the rules of [`rules`] on the facts of [`elf`] and [`osrelease`],
//! for the bootimages of [`target`].

pub mod boots;
pub mod closure;
pub mod elf;
pub mod mco;
pub mod osrelease;
pub mod rules;
pub mod target;

use std::io::Read;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::image::fs::{FileContent, MergedFs, NotFound};
use crate::image::layer::normalize_name;
use crate::image::layer::Tap;
use crate::image::{Digest, Image, ImageInfo};
use closure::Closure;
use elf::ElfFacts;
use mco::{BIN_DIR, MCD_NAME};
use osrelease::OsRelease;
use rules::{Candidate, Choice, ClosureFit, SelectError, Verdict};
use target::{BootimageId, HostOs, Target};

pub use boots::ClusterOs;

/// os-release(5): the first of these that exists is the one.
const OS_RELEASE_PATHS: [&str; 2] = ["/etc/os-release", "/usr/lib/os-release"];

/// One machine-config-daemon build found in the image.
#[derive(Debug, Serialize)]
pub struct Binary {
    /// The path in the image (`/usr/bin/machine-config-daemon*`).
    pub path: String,
    /// The path holding the bytes, after links.
    pub resolved: String,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// The digest of its content.
    pub sha256: Digest,
    /// The ELF facts, when the file is an ELF binary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elf: Option<ElfFacts>,
    /// Why the ELF facts could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elf_error: Option<String>,
    /// The verdict for each bootimage of the table, on the image's platform.
    pub verdicts: Vec<BootimageVerdict>,
    /// The verdict on the cluster's OS, which nodes run from the second boot of their
    /// first boot on, when the image says what it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_os_verdict: Option<Verdict>,
    #[serde(skip)]
    pub(crate) content: FileContent,
}

/// Whether a binary fits one bootimage.
#[derive(Debug, Serialize)]
pub struct BootimageVerdict {
    /// The bootimage.
    pub bootimage: BootimageId,
    /// Fits or not, and why.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// When it does not fit natively: whether it runs there through the loader and
    /// libraries of its own image, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure: Option<Verdict>,
}

impl Binary {
    /// The build's bytes, verified, in a temp file of the spool directory (removed when
    /// the inspection is dropped).
    pub fn file(&self) -> &std::path::Path {
        self.content.file.path()
    }

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
    /// The image inspected.
    pub image: ImageInfo,
    /// The os-release; from [`select_boots`], only when the choice needed it.
    pub os_release: Option<OsRelease>,
    /// The builds read: all of them from [`inspect`], those the choice needed from
    /// [`select_boots`].
    pub binaries: Vec<Binary>,
    /// Layer reads the answer needed (a layer read twice counts twice).
    pub layer_reads: usize,
    /// The layers read, bottom first, numbered from 1 as in the layer list.
    pub layers_read: Vec<usize>,
    /// Stored bytes of the layers read, and of all the layers of the image.
    pub bytes_read: u64,
    /// Stored bytes of all the layers of the image.
    pub image_bytes: u64,
    /// The cluster's OS as the image tells it (its os-release and `.rhelN` builds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_os: Option<ClusterOs>,
    /// The chosen build's loader and libraries from the image, when it runs through
    /// them on the bootimage ([`select_boots`] only).
    #[serde(skip)]
    pub closure: Option<Closure>,
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

/// The normalised name of `--binary-path`.
fn extra_name(extra: Option<&str>) -> Result<Option<String>> {
    match extra {
        Some(p) if p.starts_with('/') => Ok(Some(
            normalize_name(p.trim_start_matches('/'))
                .with_context(|| format!("--binary-path {p:?}"))?,
        )),
        Some(p) => anyhow::bail!("--binary-path {p:?} must be absolute"),
        None => Ok(None),
    }
}

/// The build [`select_boots`] most likely settles on for the first boot, by its name in
/// the image's tar (normalised): `binary_path` when given (checked here); else, when the
/// MCO release is known (`release`: the image's version label, or `--release`), the twin
/// that release ships for hosts like the bootimage, or its plain build; else, for a host
/// like RHEL 8 (or older) the twin `machine-config-daemon.rhelN`, which current images
/// carry for it beside a plain build that does not run there, and the plain build for
/// the others, which current images build for RHEL 9. A Fedora CoreOS host is like RHEL 9
/// from OpenSSL 3 on, like RHEL 8 before.
pub fn likely(
    binary_path: Option<&str>,
    target: &Target,
    release: Option<target::OcpVersion>,
) -> Result<String> {
    let dir = BIN_DIR.trim_start_matches('/');
    let plain = format!("{dir}/{MCD_NAME}");
    let rhel = target
        .os
        .rhel()
        .unwrap_or(if target.libcrypto == "libcrypto.so.3" {
            9
        } else {
            8
        });
    Ok(match (extra_name(binary_path)?, release) {
        (Some(name), _) => name,
        // The twin serves the hosts on its side of the plain build: older RHEL for an
        // older twin, newer for a newer one.
        (None, Some(v)) => match mco::builds_of_release(v) {
            (home, Some(twin))
                if (twin < home && rhel <= twin) || (twin > home && rhel >= twin) =>
            {
                format!("{plain}.rhel{twin}")
            }
            _ => plain,
        },
        (None, None) if rhel < 9 => format!("{plain}.rhel{rhel}"),
        (None, None) => plain,
    })
}

/// The merged view an inspection reads, with what it has read so far.
struct Reader<'a> {
    image: &'a Image,
    fs: MergedFs<'a>,
}

impl<'a> Reader<'a> {
    fn new(
        image: &'a Image,
        spool: &std::path::Path,
        extra: Option<String>,
        tap: Option<&'a dyn Tap>,
    ) -> Self {
        let prefix = format!("{}/{MCD_NAME}", BIN_DIR.trim_start_matches('/'));
        // The loader cache too (a few kB): a build delivered with its closure needs it,
        // and the layer that holds it is then read once less.
        let fs = MergedFs::new(image, spool, move |n| {
            n.starts_with(&prefix)
                || n.ends_with("os-release")
                || n == closure::LD_SO_CACHE_NAME
                || extra.as_deref() == Some(n)
        });
        let mut fs = fs;
        fs.set_tap(tap);
        Reader { image, fs }
    }

    fn os_release(&mut self) -> Result<Option<OsRelease>> {
        for p in OS_RELEASE_PATHS {
            match self.fs.read_file(p) {
                Ok(c) => {
                    let mut text = String::new();
                    c.file
                        .reopen()?
                        .take(64 * 1024)
                        .read_to_string(&mut text)
                        .with_context(|| format!("reading {p}"))?;
                    return Ok(Some(OsRelease::parse(&text)));
                }
                Err(e) if is_absent(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The names of every `/usr/bin/machine-config-daemon*` (all layers that can add one).
    fn list(&mut self) -> Result<Vec<String>> {
        match self.fs.list_dir(BIN_DIR, |n| n.starts_with(MCD_NAME)) {
            Ok(n) => Ok(n.iter().map(|n| format!("{BIN_DIR}/{n}")).collect()),
            Err(e) if is_absent(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// The binary at `path`, hashed, with its ELF facts and verdicts; `None` when the
    /// merged view holds no regular file there.
    fn binary(&mut self, path: &str) -> Result<Option<Binary>> {
        let content = match self.fs.read_file(path) {
            Ok(c) => c,
            // A directory or a dangling link of that name is no candidate.
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let sha256 = content.sha256.clone();
        let (elf, elf_error) = match elf::read_facts(content.file.path()) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let mut b = Binary {
            path: path.to_string(),
            resolved: content.resolved.clone(),
            size: content.size,
            mode: content.mode,
            sha256,
            elf,
            elf_error,
            verdicts: Vec::new(),
            cluster_os_verdict: None,
            content,
        };
        let arch = &self.image.info.platform.architecture;
        let cand = b.candidate();
        b.verdicts = target::BOOTIMAGES
            .iter()
            .filter_map(|row| Target::new(row.id, None, None, arch).ok())
            .map(|t| BootimageVerdict {
                bootimage: t.bootimage,
                verdict: cand.verdict(&t),
                closure: None,
            })
            .collect();
        Ok(Some(b))
    }

    fn finish(self, os_release: Option<OsRelease>, mut binaries: Vec<Binary>) -> Inspection {
        let cands: Vec<Candidate> = binaries.iter().map(Binary::candidate).collect();
        let cluster_os = boots::label_os(&self.image.info.labels, None)
            .or_else(|| boots::cluster_os(None, None, os_release.as_ref(), &cands));
        let arch = &self.image.info.platform.architecture;
        let on_cluster = cluster_os.as_ref().and_then(|c| {
            let first = Target::new(BootimageId::Rhcos(target::first_known()), None, None, arch);
            first.and_then(|t| boots::on_os(&t, c.os)).ok()
        });
        if let Some(t) = &on_cluster {
            for (b, c) in binaries.iter_mut().zip(&cands) {
                b.cluster_os_verdict = Some(c.verdict(t));
            }
        }
        let layers = &self.image.info.layers;
        let read = self.fs.layers_read();
        Inspection {
            image: self.image.info.clone(),
            os_release,
            binaries,
            layer_reads: self.fs.layer_reads(),
            bytes_read: read.iter().map(|&i| layers[i].size).sum(),
            layers_read: read.iter().map(|i| i + 1).collect(),
            image_bytes: layers.iter().map(|l| l.size).sum(),
            cluster_os,
            closure: None,
        }
    }

    /// The closure of a dynamic build, as its verdicts need it.
    fn closure_fit(&mut self, facts: &ElfFacts) -> Result<Result<(ClosureFit, Closure), String>> {
        match closure::resolve(&mut self.fs, facts) {
            Ok(c) => Ok(Ok((c.fit(), c))),
            // A layer that cannot be read is the image's fault, not the closure's.
            Err(e) => match e.downcast::<closure::Unresolved>() {
                Ok(why) => Ok(Err(why.0)),
                Err(e) => Err(e),
            },
        }
    }

    /// Adds to the verdicts of each dynamic build that does not fit some bootimage
    /// natively whether it fits there through its closure.
    fn closure_verdicts(&mut self, binaries: &mut [Binary]) -> Result<()> {
        for b in binaries.iter_mut() {
            let Some(facts) = b.elf.clone() else { continue };
            if facts.linkage != elf::Linkage::Dynamic
                || b.verdicts.iter().all(|v| v.verdict.compatible)
            {
                continue;
            }
            let fit = self.closure_fit(&facts)?.map(|(fit, _)| fit);
            let arch = self.image.info.platform.architecture.clone();
            for v in b.verdicts.iter_mut().filter(|v| !v.verdict.compatible) {
                if let Ok(t) = Target::new(v.bootimage, None, None, &arch) {
                    v.closure = Some(rules::closure_verdict(&facts, &fit, &t));
                }
            }
        }
        Ok(())
    }

    /// The build that runs on `target` through its closure: the one that fits the
    /// image's own OS natively (`only`, when the user named it), with its loader and
    /// libraries from the image; or why there is none.
    fn through_closure(
        &mut self,
        binaries: &[Binary],
        os: Option<&OsRelease>,
        target: &Target,
        only: Option<usize>,
    ) -> Result<Result<(Choice, Closure), String>> {
        let Some(home) = os.and_then(rules::image_rhel) else {
            return Ok(Err(
                "the image's os-release names no RHEL whose build to take".into(),
            ));
        };
        let home_t = boots::on_os(target, HostOs::Rhel(home))?;
        let cands: Vec<Candidate> = binaries.iter().map(Binary::candidate).collect();
        let index = match only {
            Some(i) if cands[i].verdict(&home_t).compatible => i,
            Some(_) => {
                return Ok(Err(format!(
                    "it does not run on the image's own RHEL {home} either"
                )))
            }
            None => match rules::choose(&cands, os, &home_t, None, false) {
                Ok(c) => c.index,
                Err(_) => return Ok(Err(format!("no build fits the image's own RHEL {home}"))),
            },
        };
        let Some(facts) = binaries[index].elf.clone() else {
            return Ok(Err("the build is not ELF".into()));
        };
        if facts.linkage != elf::Linkage::Dynamic {
            return Ok(Err("the build is static".into()));
        }
        let (fit, closure) = match self.closure_fit(&facts)? {
            Ok(x) => x,
            Err(why) => return Ok(Err(format!("{}: {why}", binaries[index].path))),
        };
        let verdict = rules::closure_verdict(&facts, &Ok(fit), target);
        if !verdict.compatible {
            return Ok(Err(format!(
                "{}: {}",
                binaries[index].path,
                verdict.because()
            )));
        }
        log::info!(
            "{} runs on {} through its closure: {}",
            binaries[index].path,
            rules::describe(target),
            closure
                .files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        );
        Ok(Ok((
            Choice {
                index,
                verdict,
                forced: false,
                closure: true,
            },
            closure,
        )))
    }
}

/// Like [`inspect`], with one more binary to read (`--binary-path`).
pub fn inspect_with(
    image: &Image,
    spool: &std::path::Path,
    extra: Option<&str>,
) -> Result<Inspection> {
    let extra_name = extra_name(extra)?;
    let mut r = Reader::new(image, spool, extra_name.clone(), None);
    let os_release = r.os_release()?;
    let (os_release, mut binaries) = read_all(&mut r, os_release, extra_name)?;
    r.closure_verdicts(&mut binaries)?;
    Ok(r.finish(os_release, binaries))
}

/// The full view: every candidate the merged `/usr/bin` holds, plus `extra`.
fn read_all(
    r: &mut Reader,
    os_release: Option<OsRelease>,
    extra_name: Option<String>,
) -> Result<(Option<OsRelease>, Vec<Binary>)> {
    let mut paths = r.list()?;
    if let Some(x) = extra_name.map(|n| format!("/{n}")) {
        if !paths.contains(&x) {
            // The user named it: its absence is an error, not a skip.
            r.fs.read_file(&x)?;
            paths.push(x);
        }
    }
    let mut binaries = Vec::new();
    for path in paths {
        if let Some(b) = r.binary(&path)? {
            binaries.push(b);
        }
    }
    Ok((os_release, binaries))
}

/// What is known of the cluster before the image is read.
#[derive(Clone, Debug, Default)]
pub struct ClusterHint {
    /// `--cluster-rhel`.
    pub rhel: Option<u32>,
    /// The release's version (`--release`).
    pub release_version: Option<String>,
}

/// The builds for the boots of a first boot.
#[derive(Clone, Debug)]
pub struct Boots {
    /// The bootimage's build, for the first boot (an index into the inspection's
    /// binaries).
    pub first: Choice,
    /// The cluster's OS, when it had to be learnt or was given.
    pub cluster_os: Option<boots::ClusterOs>,
    /// The first build's verdict on the cluster's OS, when that is known.
    pub first_on_cluster: Option<Verdict>,
    /// The build for the cluster's OS, when the first does not run there.
    pub second: Option<Choice>,
}

/// Why no build can serve the boots on the cluster's OS.
#[derive(Debug, thiserror::Error)]
pub enum BootsError {
    /// The cluster's OS could not be told, and the first build does not run everywhere.
    #[error(
        "{first} fits the first boot, on {boot}, but not every OS the node may run after it \
         ({because}), and the cluster's OS cannot be told: the MCO image's os-release names no RHEL. \
         Give the cluster's RHEL major with --cluster-rhel N, or the release with --release"
    )]
    UnknownClusterOs {
        /// The first build.
        first: String,
        /// The bootimage, described.
        boot: String,
        /// Why it does not run on some later RHEL.
        because: String,
    },
    /// No build runs on the cluster's OS.
    #[error(
        "no {MCD_NAME} build fits the second boot of the first boot, on {cluster} (the node \
         runs it after the in-place OS update, and the firstboot runs again there): {first} \
         fits the first boot only: {because}.{rejected}\nIf the cluster's OS is another RHEL, \
         say so with --cluster-rhel N; else take the MCO image of a release whose builds \
         cover both (4.16-4.22 ship a .rhel8 twin beside the RHEL 9 build)"
    )]
    NothingFitsSecondBoot {
        /// The first build.
        first: String,
        /// The cluster's OS, described.
        cluster: String,
        /// Why the first build does not run there.
        because: String,
        /// Each other build and why it does not run there.
        rejected: String,
    },
}

/// How much of the image a pass reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Top-down, and only as far as the questions need: what `inject` does.
    Lazy,
    /// Every build first, then the same questions: the full view, which the lazy pass
    /// must agree with (tests compare them).
    Everything,
}

/// What a choice is asked for: the bootimage, what is known of the cluster, and the
/// user's say (`--binary-path`, `--force`).
#[derive(Clone, Copy, Debug)]
pub struct Query<'q> {
    /// The bootimage, which the first boot runs.
    pub target: &'q Target,
    /// What is known of the cluster before the image is read.
    pub hint: &'q ClusterHint,
    /// `--binary-path`: the build for the first boot, named.
    pub binary_path: Option<&'q str>,
    /// `--force`.
    pub force: bool,
}

/// One pass over the image: the os-release once asked for, each build looked up by name
/// once (found or not), and the merged `/usr/bin` listed whole only when a question
/// needs every build.
struct Pass<'a> {
    r: Reader<'a>,
    os: Option<Option<OsRelease>>,
    binaries: Vec<Binary>,
    absent: Vec<String>,
    listed: bool,
}

/// `/usr/bin/machine-config-daemon`, and its twin for RHEL `n`.
fn plain_path() -> String {
    format!("{BIN_DIR}/{MCD_NAME}")
}

fn twin_path(rhel: u32) -> String {
    format!("{BIN_DIR}/{MCD_NAME}.rhel{rhel}")
}

impl<'a> Pass<'a> {
    fn os(&mut self) -> Result<Option<OsRelease>> {
        if self.os.is_none() {
            self.os = Some(self.r.os_release()?);
        }
        Ok(self.os.clone().flatten())
    }

    /// The build at `path`, read once; `None` when the image has no regular file there.
    fn build(&mut self, path: &str) -> Result<Option<usize>> {
        if let Some(i) = self.binaries.iter().position(|b| b.path == path) {
            return Ok(Some(i));
        }
        let in_listing = path.starts_with(&plain_path());
        if (self.listed && in_listing) || self.absent.iter().any(|p| p == path) {
            return Ok(None);
        }
        match self.r.binary(path)? {
            Some(b) => {
                self.binaries.push(b);
                Ok(Some(self.binaries.len() - 1))
            }
            None => {
                self.absent.push(path.to_string());
                Ok(None)
            }
        }
    }

    /// Every build of the merged `/usr/bin` (every layer that can add one).
    fn read_every_build(&mut self) -> Result<()> {
        if !self.listed {
            for path in self.r.list()? {
                self.build(&path)?;
            }
            self.listed = true;
        }
        Ok(())
    }

    fn candidates(&self) -> Vec<Candidate> {
        self.binaries.iter().map(Binary::candidate).collect()
    }

    fn fits(&self, i: Option<usize>, t: &Target) -> bool {
        i.is_some_and(|i| self.binaries[i].candidate().verdict(t).compatible)
    }

    /// The build its name settles for a host of `t`'s OS, read by name: the plain build
    /// when its ELF fits there, else `.rhel{t}` when it fits. `None` when only the full
    /// view can tell. The ELF proves that a build runs; the os-release only orders builds
    /// that all do. MCO's re-exec would take `.rhel{t}` before a plain build that fits too
    /// on a host whose RHEL is not the image's; MCO's images have no such pair (a twin
    /// serves the hosts its plain build does not run on), and both would run.
    ///
    /// When the plain build is dynamic and does not fit `t` and `closure_ok`, it may have
    /// to run there through its closure: the libraries of the layers read from then on
    /// are captured as they stream (`closure::may_be_needed`).
    fn by_name(&mut self, t: &Target, closure_ok: bool) -> Result<Option<usize>> {
        let plain = self.build(&plain_path())?;
        if self.fits(plain, t) {
            return Ok(plain);
        }
        let dynamic = plain
            .and_then(|i| self.binaries[i].elf.as_ref())
            .map(|f| f.linkage)
            == Some(elf::Linkage::Dynamic);
        if closure_ok && dynamic {
            let arch = self.r.image.info.platform.architecture.clone();
            self.r
                .fs
                .also_want(move |n| closure::may_be_needed(n, &arch));
        }
        let Some(rhel) = t.os.rhel() else {
            // Fedora CoreOS: no `.rhelN` name is for it.
            return Ok(None);
        };
        let twin = self.build(&twin_path(rhel))?;
        Ok(twin.filter(|_| self.fits(twin, t)))
    }

    /// Which build runs on a boot's OS (`t`: the bootimage's, or the `cluster`'s), and
    /// how: natively, by the names ([`Pass::by_name`]), else by MCO's order of every
    /// build; else, on the bootimage, the build of the image's own RHEL with its loader
    /// and libraries; else, with `force`, the first in that order; else why none does.
    /// `forced_path` (`--binary-path`) is then the only candidate.
    fn answer(
        &mut self,
        t: &Target,
        cluster: bool,
        forced_path: Option<&str>,
        force: bool,
    ) -> Result<(Choice, Option<Closure>)> {
        let closure_ok = !cluster;
        let settled = match forced_path {
            Some(path) => {
                let Some(i) = self.build(path)? else {
                    // Fails with the reason (deleted, a directory, dangling link...).
                    self.r.fs.read_file(path).with_context(|| {
                        format!(
                            "--binary-path {path}: no such build (`mcd-inject inspect` lists \
                             the image's builds; without --binary-path, inject chooses one)"
                        )
                    })?;
                    anyhow::bail!("{path} is not a regular file in the image");
                };
                Some(i).filter(|_| self.fits(Some(i), t))
            }
            None => self.by_name(t, closure_ok)?,
        };
        if let Some(index) = settled {
            let verdict = self.binaries[index].candidate().verdict(t);
            let choice = Choice {
                index,
                verdict,
                forced: false,
                closure: false,
            };
            return Ok((choice, None));
        }
        if forced_path.is_none() {
            self.read_every_build()?;
        }
        let os = self.os()?;
        let cands = self.candidates();
        let mut err = match rules::choose(&cands, os.as_ref(), t, forced_path, false) {
            Ok(c) => return Ok((c, None)),
            Err(e @ SelectError::NotACandidate { .. }) => return Err(e.into()),
            Err(e) => e,
        };
        let why = if closure_ok {
            let only = forced_path.and_then(|p| cands.iter().position(|c| c.path == p));
            match self
                .r
                .through_closure(&self.binaries, os.as_ref(), t, only)?
            {
                Ok((choice, closure)) => return Ok((choice, Some(closure))),
                Err(why) => Some(why),
            }
        } else {
            None
        };
        if force {
            if let Ok(c) = rules::choose(&cands, os.as_ref(), t, forced_path, true) {
                return Ok((c, None));
            }
        }
        if let Some(why) = why {
            let more = format!(
                "\nNo build runs there with its own loader and libraries from the image either: {why}."
            );
            match &mut err {
                SelectError::NothingFits { advice, .. } => advice.push_str(&more),
                SelectError::Incompatible { verdict, .. } => {
                    verdict.reasons.push(more.trim().into())
                }
                SelectError::NotACandidate { .. } => {}
            }
        }
        Err(err.into())
    }

    /// The cluster's OS: `--cluster-rhel`, the release, the image's version label, and
    /// else the image's os-release raised by a `.rhelN` twin of the next RHEL (MCO
    /// 4.13-4.15 images are RHEL 8 with `.rhel9` twins for their RHEL 9 nodes), looked up
    /// by name when `ask_image`, else from what was read only.
    fn cluster_os(
        &mut self,
        boot: &Target,
        hint: &ClusterHint,
        ask_image: bool,
    ) -> Result<Option<ClusterOs>> {
        let told = boots::cluster_os(hint.rhel, hint.release_version.as_deref(), None, &[])
            .or_else(|| boots::label_os(&self.r.image.info.labels, Some(boot)));
        if told.is_some() {
            return Ok(told);
        }
        if !ask_image {
            // Not needed: given only as far as what was read tells it.
            let os = self.os.clone().flatten();
            return Ok(self
                .os
                .is_some()
                .then(|| boots::from_image(boot, os.as_ref(), &self.candidates()))
                .flatten());
        }
        let os = self.os()?;
        if let Some(image) = os.as_ref().and_then(rules::image_rhel) {
            self.build(&twin_path(image + 1))?;
        }
        Ok(boots::from_image(boot, os.as_ref(), &self.candidates()))
    }

    fn finish(self, closure: Option<Closure>) -> Inspection {
        let os = self.os.flatten();
        let mut ins = self.r.finish(os, self.binaries);
        ins.closure = closure;
        ins
    }
}

/// The builds for every boot of a node's first boot (docs/firstboot.md, "The three
/// boots"), in one pass: the first boot runs the bootimage's OS, the later ones the
/// cluster's. One question per OS, `Pass::answer`: which build runs there. The cluster's
/// OS is asked for only when the first boot's build does not run on every OS a node may
/// update to, and a second build only when it does not run on the cluster's.
pub fn select_boots(
    image: &Image,
    spool: &std::path::Path,
    q: &Query,
    reading: Reading,
    tap: Option<&dyn Tap>,
) -> Result<(Inspection, Boots)> {
    let extra = extra_name(q.binary_path)?;
    let forced_path = extra.as_ref().map(|x| format!("/{x}"));
    let mut p = Pass {
        r: Reader::new(image, spool, extra, tap),
        os: None,
        binaries: Vec::new(),
        absent: Vec::new(),
        listed: false,
    };
    if reading == Reading::Everything {
        p.os()?;
        p.read_every_build()?;
    }
    let target = q.target;
    let (first, closure) = p.answer(target, false, forced_path.as_deref(), q.force)?;
    // The closure serves every host its build does not run on natively.
    let closure_fit = closure.as_ref().map(Closure::fit);
    let first_c = p.binaries[first.index].candidate();
    let verdict_on = |t: &Target| -> Verdict {
        let native = first_c.verdict(t);
        match (&closure_fit, &first_c.facts) {
            (Some(fit), Ok(facts)) if !native.compatible => {
                rules::closure_verdict(facts, &Ok(fit.clone()), t)
            }
            _ => native,
        }
    };
    let everywhere = closure.is_some() || boots::runs_on_every_later_os(&first_c, target);
    let cluster = p.cluster_os(target, q.hint, !everywhere)?;
    let mut result = Boots {
        first: first.clone(),
        cluster_os: cluster.clone(),
        first_on_cluster: None,
        second: None,
    };
    let Some(cluster) = cluster else {
        if everywhere || q.force {
            return Ok((p.finish(closure), result));
        }
        let later = boots::later_oses(target)
            .into_iter()
            .filter(|&os| os != target.os)
            .filter_map(|os| boots::on_os(target, os).ok())
            .map(|t| format!("{}: {}", t.os, first_c.verdict(&t).because()))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(BootsError::UnknownClusterOs {
            first: first_c.path.clone(),
            boot: rules::describe(target),
            because: later,
        }
        .into());
    };
    let ct = boots::on_os(target, cluster.os)?;
    let on_cluster = verdict_on(&ct);
    result.first_on_cluster = Some(on_cluster.clone());
    // The install script tells hosts apart by their RHEL: a Fedora host always gets the
    // first build, so only a cluster OS like RHEL can have a second one.
    if !on_cluster.compatible && !first.forced && cluster.os.rhel().is_some() {
        match p.answer(&ct, true, None, false) {
            Ok((c, _)) => result.second = Some(c),
            Err(_) if q.force => {}
            Err(_) => {
                let rejected = p
                    .candidates()
                    .iter()
                    .filter(|c| c.path != first_c.path)
                    .map(|c| format!("\n  {}: {}", c.path, c.verdict(&ct).because()))
                    .collect();
                return Err(BootsError::NothingFitsSecondBoot {
                    first: first_c.path.clone(),
                    cluster: boots::describe(&cluster, &ct),
                    because: on_cluster.because(),
                    rejected,
                }
                .into());
            }
        }
    }
    Ok((p.finish(closure), result))
}

impl Inspection {
    /// Which layers were read, and how many of the image's stored bytes they are.
    pub fn read_summary(&self) -> String {
        let list: Vec<String> = self.layers_read.iter().map(usize::to_string).collect();
        format!(
            "read {} of {} layers ({}): {} of {} stored bytes ({:.1}%)",
            self.layers_read.len(),
            self.image.layers.len(),
            if list.is_empty() {
                "none".to_string()
            } else {
                list.join(", ")
            },
            self.bytes_read,
            self.image_bytes,
            if self.image_bytes == 0 {
                0.0
            } else {
                self.bytes_read as f64 * 100.0 / self.image_bytes as f64
            }
        )
    }

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
        s += "Layers (bottom first; * = read for this report):\n";
        for (n, l) in i.layers.iter().enumerate() {
            let mark = if self.layers_read.contains(&(n + 1)) {
                '*'
            } else {
                ' '
            };
            s += &format!(
                "  {:>2}{mark} {}  {:>12} B  {}\n",
                n + 1,
                l.digest,
                l.size,
                l.media_type
            );
        }
        s += &format!("{}\n", self.read_summary());
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
        if let Some(c) = &self.cluster_os {
            s += &format!(
                "cluster's OS: {} ({}); nodes run it from the second boot of their first boot on\n",
                c.os, c.source
            );
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
            type Run<'v> = (String, String, &'v Verdict, Option<&'v Verdict>);
            let mut runs: Vec<Run> = Vec::new();
            for v in &b.verdicts {
                let c = v.closure.as_ref();
                match runs.last_mut() {
                    Some(r) if r.2 == &v.verdict && r.3 == c => r.1 = v.bootimage.to_string(),
                    _ => runs.push((
                        v.bootimage.to_string(),
                        v.bootimage.to_string(),
                        &v.verdict,
                        c,
                    )),
                }
            }
            for (first, last, v, closure) in runs {
                let span = if first == last {
                    first
                } else {
                    format!("{first}-{last}")
                };
                let word = if v.compatible { "fits" } else { "does not fit" };
                s += &format!("      {span}: {word}: {}\n", v.because());
                if let Some(c) = closure {
                    let word = if c.compatible {
                        "fits through its closure"
                    } else {
                        "nor through its closure"
                    };
                    s += &format!("      {span}: {word}: {}\n", c.because());
                }
            }
            if let (Some(v), Some(c)) = (&b.cluster_os_verdict, &self.cluster_os) {
                let word = if v.compatible { "fits" } else { "does not fit" };
                s += &format!(
                    "      the cluster's OS ({}, later boots): {word}: {}\n",
                    c.os,
                    v.because()
                );
            }
        }
        if let Some(os) = &self.os_release {
            s += &format!(
                "os-release orders candidates as RHEL {}\n",
                rules::image_rhel(os)
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "unknown".into())
            );
        }
        s
    }
}
