//! The closure of a dynamic build: its ELF interpreter and every library it needs, to a
//! fixed point, found in the image as the image's loader finds them (`DT_RPATH`,
//! `DT_RUNPATH`, the image's `/etc/ld.so.cache`, then the loader's default directories),
//! symlinks followed inside the image. A build delivered with its closure runs through
//! that loader with those libraries on a host whose own glibc is too old for it.

use std::collections::BTreeSet;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::choose::elf::{self, DottedVersion, ElfFacts, Linkage};
use crate::choose::rules::ClosureFit;
use crate::ignition::units::is_closure_name;
use crate::image::fs::{FileContent, MergedFs, NotFound};
use crate::image::Digest;

/// The image's loader cache.
const LD_SO_CACHE: &str = "/etc/ld.so.cache";
/// Its name in a layer's tar.
pub const LD_SO_CACHE_NAME: &str = "etc/ld.so.cache";

/// Why a build's closure cannot be taken from its image (a library it needs is not
/// there, or is no object for its machine); other errors are the image's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unresolved(pub String);

macro_rules! unresolved {
    ($($arg:tt)*) => {
        return Err(Unresolved(format!($($arg)*)).into())
    };
}

/// One file of a closure.
#[derive(Debug, Serialize)]
pub struct ClosureFile {
    /// The name it is installed as: the soname asked for, or the interpreter's file name.
    pub name: String,
    /// The path the loader would open in the image.
    pub path: String,
    /// The path holding the bytes, after links.
    pub resolved: String,
    /// Size in bytes.
    pub size: u64,
    /// The digest of its content.
    pub sha256: Digest,
    #[serde(skip)]
    pub(crate) content: FileContent,
}

impl ClosureFile {
    /// The file's verified bytes, spooled.
    pub fn file(&self) -> &std::path::Path {
        self.content.file.path()
    }
}

/// A build's ELF interpreter and libraries, from its image.
#[derive(Debug, Serialize)]
pub struct Closure {
    /// The interpreter first, then the libraries in the order they were found.
    pub files: Vec<ClosureFile>,
    /// The oldest kernel the closure runs on (the newest `NT_GNU_ABI_TAG` among its
    /// files), when they say.
    pub min_kernel: Option<DottedVersion>,
}

impl Closure {
    /// What it offers a target, for the verdict.
    pub fn fit(&self) -> ClosureFit {
        ClosureFit {
            files: self.files.len(),
            bytes: self.bytes(),
            min_kernel: self.min_kernel.clone(),
        }
    }

    /// Bytes of all its files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// One entry of an `ld.so.cache`: a soname and the path the loader maps for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The soname the entry is for.
    pub soname: String,
    /// The file the loader maps for it.
    pub path: String,
}

/// The `FLAG_*` bits of `ld.so.cache` entries the loader of an architecture uses
/// (glibc `sysdeps/generic/ldconfig.h`): libc6 ELF objects of that ABI.
fn cache_flags(arch: &str) -> Option<u32> {
    const FLAG_ELF_LIBC6: u32 = 0x0003;
    let abi = match arch {
        "amd64" => 0x0300,
        "s390x" => 0x0400,
        "ppc64le" | "ppc64" => 0x0500,
        "arm64" => 0x0a00,
        _ => return None,
    };
    Some(FLAG_ELF_LIBC6 | abi)
}

/// The loader's default directories on an architecture, after the cache: RHEL's
/// `/lib64` pair and the Debian multiarch pair.
fn default_dirs(arch: &str) -> Vec<String> {
    let triplet = match arch {
        "amd64" => "x86_64-linux-gnu",
        "arm64" => "aarch64-linux-gnu",
        "ppc64le" => "powerpc64le-linux-gnu",
        "s390x" => "s390x-linux-gnu",
        _ => "",
    };
    let mut d = vec!["/lib64".to_string(), "/usr/lib64".to_string()];
    if !triplet.is_empty() {
        d.push(format!("/lib/{triplet}"));
        d.push(format!("/usr/lib/{triplet}"));
    }
    d
}

/// Whether the file of a layer's tar named `name` (normalised) may be a library some
/// closure on `arch` needs: a `lib*.so*` or the loader (`ld*.so*`) in one of the loader's
/// default directories, where RHEL keeps its libraries. A pass that may need a closure
/// captures them on its first read of their layer, so that the rounds of the fixed
/// point read no layer again; a library elsewhere is still found, by another read.
pub fn may_be_needed(name: &str, arch: &str) -> bool {
    let Some((dir, file)) = name.rsplit_once('/') else {
        return false;
    };
    (file.starts_with("lib") || file.starts_with("ld"))
        && file.contains(".so")
        && default_dirs(arch)
            .iter()
            .any(|d| d.trim_start_matches('/') == dir)
}

/// Parses an `ld.so.cache` (glibc's new format, after the old one when the file holds
/// both), keeping the entries of `arch`'s ABI without hardware capabilities, in file
/// order (the loader's preference). An unknown format gives no entries: the loader
/// then falls back to its default directories, as glibc's does.
pub fn parse_cache(data: &[u8], arch: &str) -> Vec<CacheEntry> {
    const OLD: &[u8] = b"ld.so-1.7.0";
    const NEW: &[u8] = b"glibc-ld.so.cache1.1";
    let Some(want) = cache_flags(arch) else {
        return Vec::new();
    };
    let le32 = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let mut base = 0usize;
    if data.starts_with(OLD) {
        let Some(n) = le32(data, 12) else {
            return Vec::new();
        };
        base = (16 + n as usize * 12 + 7) & !7;
    }
    let Some(new) = data.get(base..) else {
        return Vec::new();
    };
    if !new.starts_with(NEW) {
        return Vec::new();
    }
    // The cache flags say its byte order: 2 little-endian, 3 big-endian.
    let big = new.get(28) == Some(&3);
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = new.get(at..at + 4)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let u64_at = |at: usize| -> Option<u64> {
        Some(if big {
            (u64::from(u32_at(at)?) << 32) | u64::from(u32_at(at + 4)?)
        } else {
            u64::from(u32_at(at)?) | (u64::from(u32_at(at + 4)?) << 32)
        })
    };
    let string = |at: u32| -> Option<String> {
        let s = new.get(at as usize..)?;
        let end = s.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&s[..end]).ok().map(str::to_string)
    };
    let Some(n) = u32_at(20) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..n as usize {
        let e = 48 + i * 24;
        let (Some(flags), Some(key), Some(value), Some(hwcap)) =
            (u32_at(e), u32_at(e + 4), u32_at(e + 8), u64_at(e + 16))
        else {
            break;
        };
        if flags != want || hwcap != 0 {
            continue;
        }
        if let (Some(soname), Some(path)) = (string(key), string(value)) {
            out.push(CacheEntry { soname, path });
        }
    }
    out
}

/// Where an object that needs libraries was found, and what it says of its search.
#[derive(Clone)]
struct Requester {
    dir: String,
    runpath: Vec<String>,
    rpath: Vec<String>,
}

/// `$ORIGIN` and `$LIB` in a search directory, as the loader expands them.
fn expand(dir: &str, origin: &str) -> String {
    dir.replace("${ORIGIN}", origin)
        .replace("$ORIGIN", origin)
        .replace("${LIB}", "lib64")
        .replace("$LIB", "lib64")
}

fn parent(path: &str) -> String {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/".into(),
        Some((d, _)) => d.into(),
    }
}

/// The paths the loader tries for `soname` needed by `req` (of the executable `exe`),
/// in its order.
fn search(
    soname: &str,
    req: &Requester,
    exe: &Requester,
    cache: &[CacheEntry],
    arch: &str,
) -> Vec<String> {
    if soname.contains('/') {
        return vec![soname.to_string()];
    }
    let mut dirs: Vec<String> = Vec::new();
    // DT_RPATH counts only without DT_RUNPATH, the requester's then the executable's.
    if req.runpath.is_empty() {
        dirs.extend(req.rpath.iter().map(|d| expand(d, &req.dir)));
        if exe.runpath.is_empty() {
            dirs.extend(exe.rpath.iter().map(|d| expand(d, &exe.dir)));
        }
    }
    dirs.extend(req.runpath.iter().map(|d| expand(d, &req.dir)));
    let mut paths: Vec<String> = dirs
        .iter()
        .map(|d| format!("{}/{soname}", d.trim_end_matches('/')))
        .collect();
    paths.extend(
        cache
            .iter()
            .filter(|e| e.soname == soname)
            .map(|e| e.path.clone()),
    );
    paths.extend(default_dirs(arch).iter().map(|d| format!("{d}/{soname}")));
    // Each path once, at its first place (the executable is its own requester).
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    paths
}

/// The first of `paths` that the image holds as a file; `None` when none is.
fn first_present(fs: &mut MergedFs, paths: &[String]) -> Result<Option<String>> {
    for p in paths {
        match fs.resolve(p, true) {
            Ok(_) => return Ok(Some(p.clone())),
            Err(e) if e.downcast_ref::<NotFound>().is_some() => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Resolves the closure of a dynamic build whose ELF facts are `facts`, from the image
/// `fs` views, reading only the layers that hold its files (each once more at most per
/// round of the fixed point).
pub fn resolve(fs: &mut MergedFs, facts: &ElfFacts) -> Result<Closure> {
    if facts.linkage == Linkage::Static {
        unresolved!("a static build needs no closure");
    }
    let Some(interp) = facts.interpreter.clone() else {
        unresolved!("the build names no ELF interpreter (PT_INTERP)");
    };
    let cache = match fs.read_file(LD_SO_CACHE) {
        Ok(c) => parse_cache(
            &std::fs::read(c.file.path()).context("reading the image's ld.so.cache")?,
            &facts.arch,
        ),
        Err(e) if e.downcast_ref::<NotFound>().is_some() => Vec::new(),
        Err(e) => return Err(e),
    };
    // `$ORIGIN` of the build: where MCO keeps its builds.
    let exe = Requester {
        dir: "/usr/bin".into(),
        runpath: facts.runpath.clone(),
        rpath: facts.rpath.clone(),
    };
    let interp_name = interp.rsplit('/').next().unwrap_or(&interp).to_string();
    // Round by round: the names asked for, with who asked; each round's files are read
    // together.
    let mut files: Vec<ClosureFile> = Vec::new();
    // The loader is loaded already: it satisfies libc's need of its soname.
    let mut found: BTreeSet<String> = BTreeSet::from([interp_name.clone()]);
    let mut round: Vec<(String, String)> = vec![(interp_name, interp)];
    let mut asked: Vec<(String, Requester, String)> = facts
        .needed
        .iter()
        .map(|n| (n.clone(), exe.clone(), "the build".to_string()))
        .collect();
    let mut min_kernel: Option<DottedVersion> = None;
    loop {
        for (name, req, by) in asked.drain(..) {
            if found.contains(&name) {
                continue;
            }
            // Installed under this name in one directory, read by a shell script.
            if !is_closure_name(&name) {
                unresolved!("{by} needs {name:?}, which cannot be installed as a file name");
            }
            let tried = search(&name, &req, &exe, &cache, &facts.arch);
            let Some(path) = first_present(fs, &tried)? else {
                unresolved!(
                    "{name}, which {by} needs, is not in the image (looked in {})",
                    tried.join(", ")
                );
            };
            found.insert(name.clone());
            round.push((name, path));
        }
        if round.is_empty() {
            break;
        }
        let paths: Vec<String> = round.iter().map(|(_, p)| p.clone()).collect();
        let contents = fs.read_files(&paths)?;
        for ((name, path), content) in round.drain(..).zip(contents) {
            let content = content.with_context(|| format!("reading {path} ({name})"))?;
            let f = match elf::read_facts(content.file.path()) {
                Ok(f) => f,
                Err(e) => unresolved!("{path} ({name}) in the image: {e:#}"),
            };
            if f.arch != facts.arch || f.class != facts.class {
                unresolved!(
                    "{path} ({name}) is a {} ELF{} object; the build is {} ELF{}",
                    f.arch,
                    f.class,
                    facts.arch,
                    facts.class
                );
            }
            if let Some(k) = &f.min_kernel {
                if min_kernel.as_ref().is_none_or(|m| k > m) {
                    min_kernel = Some(k.clone());
                }
            }
            let req = Requester {
                dir: parent(&content.resolved),
                runpath: f.runpath.clone(),
                rpath: f.rpath.clone(),
            };
            for n in &f.needed {
                asked.push((n.clone(), req.clone(), name.clone()));
            }
            files.push(ClosureFile {
                name,
                path,
                resolved: content.resolved.clone(),
                size: content.size,
                sha256: content.sha256.clone(),
                content,
            });
        }
        if asked.is_empty() {
            break;
        }
    }
    Ok(Closure { files, min_kernel })
}

/// Whether delivered files (by the name each is installed as, the loader first) are a
/// closure of the build `build`: the first is its interpreter by file name, every
/// `DT_NEEDED` of the build and of each file is one of them, each an object of the
/// build's machine. Returns what the closure offers, or what is wrong.
pub fn check_delivered(
    build: &ElfFacts,
    files: &[(String, &std::path::Path)],
) -> Result<ClosureFit, String> {
    let Some(interp) = &build.interpreter else {
        return Err("the build names no ELF interpreter".into());
    };
    let interp_name = interp.rsplit('/').next().unwrap_or(interp);
    match files.first() {
        Some((n, _)) if n == interp_name => {}
        _ => {
            return Err(format!(
                "the first closure file is not the build's loader {interp_name}"
            ))
        }
    }
    let mut needed: Vec<(String, String)> = build
        .needed
        .iter()
        .map(|n| (n.clone(), "the build".into()))
        .collect();
    let mut min_kernel: Option<DottedVersion> = None;
    let mut bytes = 0;
    for (name, path) in files {
        let f = elf::read_facts(path).map_err(|e| format!("closure file {name}: {e:#}"))?;
        if f.arch != build.arch || f.class != build.class {
            return Err(format!(
                "closure file {name} is a {} ELF{} object; the build is {} ELF{}",
                f.arch, f.class, build.arch, build.class
            ));
        }
        if let Some(k) = f.min_kernel {
            if min_kernel.as_ref().is_none_or(|m| k > *m) {
                min_kernel = Some(k);
            }
        }
        bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        needed.extend(f.needed.iter().map(|n| (n.clone(), name.clone())));
    }
    let missing: Vec<String> = needed
        .iter()
        .filter(|(n, _)| !files.iter().any(|(f, _)| f == n))
        .map(|(n, by)| format!("{n} (needed by {by})"))
        .collect();
    if !missing.is_empty() {
        return Err(format!("the closure lacks {}", missing.join(", ")));
    }
    Ok(ClosureFit {
        files: files.len(),
        bytes,
        min_kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `ldconfig -p` prints of a cache (the host's, or `-C FILE`): its x86-64 libc6
    /// entries, soname and path, in order.
    fn ldconfig_p(cache: Option<&std::path::Path>) -> Vec<CacheEntry> {
        let mut cmd = std::process::Command::new("ldconfig");
        cmd.arg("-p");
        if let Some(c) = cache {
            cmd.arg("-C").arg(c);
        }
        let out = cmd.output().expect("ldconfig -p (libc-bin)");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut theirs = Vec::new();
        for line in text.lines().skip(1) {
            // "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"
            let Some((left, path)) = line.trim().split_once(" => ") else {
                continue;
            };
            let Some((soname, kind)) = left.split_once(' ') else {
                continue;
            };
            if kind == "(libc6,x86-64)" {
                theirs.push(CacheEntry {
                    soname: soname.to_string(),
                    path: path.to_string(),
                });
            }
        }
        assert!(!theirs.is_empty(), "ldconfig -p printed:\n{text}");
        theirs
    }

    /// The host's own cache reads as `ldconfig -p` reads it.
    #[test]
    fn the_hosts_cache_reads_as_ldconfig_prints_it() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let data = std::fs::read("/etc/ld.so.cache").expect("the host has /etc/ld.so.cache");
        assert_eq!(parse_cache(&data, "amd64"), ldconfig_p(None));
    }

    /// Caches `ldconfig -r` writes for a RHEL-like root, in the new format and in the
    /// compat one (the old format, then the new: what RHEL 8's ldconfig writes), read as
    /// `ldconfig -p -C` reads them.
    #[test]
    fn new_and_compat_caches_read_as_ldconfig_prints_them() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let host_libc = ldconfig_p(None)
            .into_iter()
            .find(|e| e.soname == "libc.so.6")
            .unwrap();
        for format in ["new", "compat"] {
            let root = tempfile::tempdir().unwrap();
            let lib64 = root.path().join("usr/lib64");
            std::fs::create_dir_all(&lib64).unwrap();
            std::fs::create_dir_all(root.path().join("etc")).unwrap();
            std::fs::write(root.path().join("etc/ld.so.conf"), "/usr/lib64\n").unwrap();
            std::fs::copy(&host_libc.path, lib64.join("libc.so.6")).unwrap();
            let st = std::process::Command::new("ldconfig")
                .arg("-r")
                .arg(root.path())
                .args(["-X", "-c", format])
                .status()
                .unwrap();
            assert!(st.success(), "ldconfig -c {format}");
            let cache = root.path().join("etc/ld.so.cache");
            let data = std::fs::read(&cache).unwrap();
            assert_eq!(data.starts_with(b"ld.so-1.7.0"), format == "compat");
            let ours = parse_cache(&data, "amd64");
            assert_eq!(ours, ldconfig_p(Some(&cache)), "{format}");
            assert_eq!(ours[0].path, "/usr/lib64/libc.so.6", "{format}");
        }
    }

    #[test]
    fn foreign_or_truncated_caches_give_nothing() {
        assert!(parse_cache(b"", "amd64").is_empty());
        assert!(parse_cache(b"glibc-ld.so.cache1.1\x05\0\0\0", "amd64").is_empty());
        assert!(parse_cache(b"not a cache at all", "amd64").is_empty());
    }

    #[test]
    fn search_order_is_the_loaders() {
        let exe = Requester {
            dir: "/usr/bin".into(),
            runpath: vec![],
            rpath: vec!["$ORIGIN/../lib".into()],
        };
        let req = Requester {
            dir: "/opt/x/lib".into(),
            runpath: vec!["$ORIGIN/sub".into()],
            rpath: vec!["/ignored".into()],
        };
        let cache = vec![CacheEntry {
            soname: "libz.so.1".into(),
            path: "/usr/lib64/libz.so.1".into(),
        }];
        assert_eq!(
            search("libz.so.1", &req, &exe, &cache, "amd64"),
            [
                "/opt/x/lib/sub/libz.so.1",
                "/usr/lib64/libz.so.1",
                "/lib64/libz.so.1",
                "/lib/x86_64-linux-gnu/libz.so.1",
                "/usr/lib/x86_64-linux-gnu/libz.so.1"
            ]
        );
        // Without DT_RUNPATH, DT_RPATH first, then the executable's.
        let req = Requester {
            dir: "/opt/x/lib".into(),
            runpath: vec![],
            rpath: vec!["/r".into()],
        };
        assert_eq!(
            search("libq.so", &req, &exe, &[], "amd64")[..2],
            ["/r/libq.so", "/usr/bin/../lib/libq.so"]
        );
    }
}
