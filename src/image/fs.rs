//! The merged filesystem of an image, answered top-down and lazily (DESIGN.md §4).
//!
//! A path is walked from the root one component at a time, as the kernel would, with
//! symlinks resolved inside the image. Each component is looked up from the top layer
//! down, and layers are read only when an answer needs them: when the MCD sits in the
//! top layer, the lower layers are never opened.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use tempfile::NamedTempFile;

use super::layer::{parent_of, scan_layer, EntryKind, EntryMeta, LayerScan};
use super::Image;

/// Symlinks followed while resolving one path before it counts as a loop (Linux: 40).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Why a path does not exist in the merged view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Absence {
    /// No layer has it.
    NotPresent,
    /// A whiteout in the named layer deletes it (or an ancestor).
    WhitedOut { layer: String },
    /// An opaque directory marker in the named layer hides it.
    Opaque { layer: String },
    /// An ancestor is not a directory.
    NotADirectory { ancestor: String },
    /// The final component is a directory.
    IsADirectory,
}

impl fmt::Display for Absence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Absence::NotPresent => write!(f, "no such file"),
            Absence::WhitedOut { layer } => write!(f, "deleted by a whiteout in layer {layer}"),
            Absence::Opaque { layer } => {
                write!(f, "hidden by an opaque directory in layer {layer}")
            }
            Absence::NotADirectory { ancestor } => write!(f, "/{ancestor} is not a directory"),
            Absence::IsADirectory => write!(f, "is a directory"),
        }
    }
}

/// A path that the image does not hold as a file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why} in image {image}")]
pub struct NotFound {
    pub path: String,
    pub image: String,
    pub why: Absence,
}

/// A node found in the merged view.
#[derive(Clone, Debug)]
pub struct Found {
    /// Index of the layer that provides it (0 is the bottom layer).
    pub layer: usize,
    /// Its normalised name after symlinks (no leading `/`).
    pub name: String,
    pub meta: EntryMeta,
}

/// A regular file read out of the image.
pub struct FileContent {
    /// The verified bytes, in a temp file in the spool directory.
    pub file: NamedTempFile,
    /// Permission bits from the tar header.
    pub mode: u32,
    pub size: u64,
    /// The path that holds the content, after symlinks and hardlinks.
    pub resolved: String,
}

type Wanted = Box<dyn Fn(&str) -> bool>;

/// Lazily-read merged view of an image's layers.
pub struct MergedFs<'a> {
    image: &'a Image,
    spool: PathBuf,
    wanted: Wanted,
    scans: HashMap<usize, LayerScan>,
    reads: usize,
}

enum Lookup {
    Found(usize, EntryMeta),
    Absent(Absence),
}

impl<'a> MergedFs<'a> {
    /// A view whose file contents are spooled into `spool`. Files whose normalised
    /// names `wanted` accepts are captured on the first read of their layer.
    pub fn new(image: &'a Image, spool: &Path, wanted: impl Fn(&str) -> bool + 'static) -> Self {
        MergedFs {
            image,
            spool: spool.to_path_buf(),
            wanted: Box::new(wanted),
            scans: HashMap::new(),
            reads: 0,
        }
    }

    /// How many layer reads the answers so far have needed.
    pub fn layer_reads(&self) -> usize {
        self.reads
    }

    /// The layers read so far (0 is the bottom), ascending.
    pub fn layers_read(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.scans.keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn scan(&mut self, i: usize) -> Result<&LayerScan> {
        if !self.scans.contains_key(&i) {
            let layer = &self.image.info.layers[i];
            let scan = scan_layer(self.image.source(), layer, &self.wanted, &self.spool)?;
            self.reads += 1;
            self.scans.insert(i, scan);
        }
        Ok(&self.scans[&i])
    }

    fn not_found(&self, path: &str, why: Absence) -> anyhow::Error {
        NotFound {
            path: path.to_string(),
            image: self.image.info.reference.clone(),
            why,
        }
        .into()
    }

    /// Looks `name` up top-down in the layers below `top`, its ancestors being
    /// directories in that merged view.
    fn lookup(&mut self, name: &str, top: usize) -> Result<Lookup> {
        let mut ancestors = vec![String::new()];
        let mut a = parent_of(name);
        while !a.is_empty() {
            ancestors.push(a.to_string());
            a = parent_of(a);
        }
        for i in (0..top).rev() {
            let digest = self.image.info.layers[i].digest.to_string();
            let idx = &self.scan(i)?.index;
            if let Some(meta) = idx.entries.get(name) {
                return Ok(Lookup::Found(i, meta.clone()));
            }
            if idx.whiteouts.contains(name) {
                return Ok(Lookup::Absent(Absence::WhitedOut { layer: digest }));
            }
            for anc in &ancestors {
                if idx.whiteouts.contains(anc) {
                    return Ok(Lookup::Absent(Absence::WhitedOut { layer: digest }));
                }
                if idx
                    .entries
                    .get(anc)
                    .is_some_and(|m| m.kind != EntryKind::Dir)
                {
                    return Ok(Lookup::Absent(Absence::NotADirectory {
                        ancestor: anc.clone(),
                    }));
                }
                if idx.opaque.contains(anc) {
                    return Ok(Lookup::Absent(Absence::Opaque { layer: digest }));
                }
            }
        }
        Ok(Lookup::Absent(Absence::NotPresent))
    }

    /// Resolves an absolute path to the node it names, following symlinks inside the
    /// image (the final one too when `follow_last`).
    pub fn resolve(&mut self, path: &str, follow_last: bool) -> Result<Found> {
        self.resolve_in(path, follow_last, self.image.info.layers.len())
    }

    /// [`Self::resolve`] in the merged view of the layers below `top`.
    fn resolve_in(&mut self, path: &str, follow_last: bool, top: usize) -> Result<Found> {
        if !path.starts_with('/') {
            bail!("{path:?} is not an absolute path");
        }
        let mut pending: Vec<String> = path.split('/').rev().map(str::to_string).collect();
        let mut dir: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            match c.as_str() {
                "" | "." => continue,
                ".." => {
                    dir.pop();
                    continue;
                }
                _ => {}
            }
            let name = if dir.is_empty() {
                c.clone()
            } else {
                format!("{}/{c}", dir.join("/"))
            };
            let last = pending.iter().all(|p| p.is_empty() || p == ".");
            let (layer, meta) = match self.lookup(&name, top)? {
                Lookup::Found(layer, meta) => (layer, meta),
                Lookup::Absent(why) => return Err(self.not_found(path, why)),
            };
            match meta.kind {
                EntryKind::Dir => dir.push(c),
                EntryKind::Symlink if !last || follow_last => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        bail!(
                            "{path}: too many levels of symbolic links in image {}",
                            self.image.info.reference
                        );
                    }
                    let target = meta.link.clone().unwrap_or_default();
                    if target.starts_with('/') {
                        dir.clear();
                    }
                    pending.extend(target.split('/').rev().map(str::to_string));
                }
                // "file/" names a directory, as for the kernel.
                _ if !last || path.ends_with('/') => {
                    return Err(self.not_found(path, Absence::NotADirectory { ancestor: name }))
                }
                _ => return Ok(Found { layer, name, meta }),
            }
        }
        Ok(Found {
            layer: usize::MAX,
            name: dir.join("/"),
            meta: EntryMeta {
                kind: EntryKind::Dir,
                mode: 0o755,
                size: 0,
                link: None,
                ordinal: 0,
                implicit: true,
            },
        })
    }

    /// Reads the regular file at `path` (symlinks and hardlinks followed).
    pub fn read_file(&mut self, path: &str) -> Result<FileContent> {
        let mut found = self.resolve(path, true)?;
        // A hardlink points at what its target was when the layer was unpacked: an
        // earlier entry of its own layer, else the file the layers below hold.
        for _ in 0..MAX_SYMLINK_HOPS {
            if found.meta.kind != EntryKind::Hardlink {
                break;
            }
            let target = found.meta.link.clone().unwrap_or_default();
            let meta = self.scan(found.layer)?.index.entries.get(&target).cloned();
            found = match meta {
                Some(m) if m.ordinal < found.meta.ordinal && !m.implicit => Found {
                    layer: found.layer,
                    name: target,
                    meta: m,
                },
                _ => match self.resolve_in(&format!("/{target}"), false, found.layer) {
                    Ok(below) => below,
                    Err(e) if e.is::<NotFound>() => bail!(
                        "{path}: hardlink to /{target}, which neither layer {} holds before it \
                         nor the layers below it do",
                        self.image.info.layers[found.layer].digest
                    ),
                    Err(e) => return Err(e),
                },
            };
        }
        match found.meta.kind {
            EntryKind::File => {}
            EntryKind::Dir => return Err(self.not_found(path, Absence::IsADirectory)),
            other => bail!(
                "{path}: not a regular file ({other:?}) in image {}",
                self.image.info.reference
            ),
        }
        let file = self.take_capture(found.layer, &found.name)?;
        Ok(FileContent {
            file,
            mode: found.meta.mode,
            size: found.meta.size,
            resolved: format!("/{}", found.name),
        })
    }

    fn take_capture(&mut self, layer: usize, name: &str) -> Result<NamedTempFile> {
        if let Some(f) = self
            .scans
            .get_mut(&layer)
            .and_then(|s| s.captures.remove(name))
        {
            return Ok(f);
        }
        // Not spooled on the first read (a hardlink or symlink target): read it again.
        let wanted = name.to_string();
        let info = &self.image.info.layers[layer];
        let mut scan = scan_layer(
            self.image.source(),
            info,
            &move |n: &str| n == wanted,
            &self.spool,
        )?;
        self.reads += 1;
        scan.captures.remove(name).ok_or_else(|| {
            anyhow::anyhow!("layer {}: /{name} vanished on a second read", info.digest)
        })
    }

    /// Names of the entries of directory `dir` (merged view) that `filter` accepts.
    /// Every layer that can contribute is read.
    pub fn list_dir(&mut self, dir: &str, filter: impl Fn(&str) -> bool) -> Result<Vec<String>> {
        let found = self.resolve(dir, true)?;
        if found.meta.kind != EntryKind::Dir {
            return Err(self.not_found(
                dir,
                Absence::NotADirectory {
                    ancestor: found.name,
                },
            ));
        }
        let dir_name = found.name;
        let mut decided: BTreeMap<String, bool> = BTreeMap::new();
        for i in (0..self.image.info.layers.len()).rev() {
            let idx = &self.scan(i)?.index;
            for (name, _) in idx.entries.iter().filter(|(n, _)| parent_of(n) == dir_name) {
                let base = name.rsplit('/').next().unwrap_or_default();
                if filter(base) {
                    decided.entry(base.to_string()).or_insert(true);
                }
            }
            for name in idx.whiteouts.iter().filter(|n| parent_of(n) == dir_name) {
                let base = name.rsplit('/').next().unwrap_or_default();
                decided.entry(base.to_string()).or_insert(false);
            }
            // Does this layer hide everything below it in `dir`?
            let mut hides = false;
            let mut a = dir_name.as_str();
            loop {
                hides |= idx.opaque.contains(a);
                if a.is_empty() {
                    break;
                }
                hides |= idx.whiteouts.contains(a)
                    || idx.entries.get(a).is_some_and(|m| m.kind != EntryKind::Dir);
                a = parent_of(a);
            }
            if hides {
                break;
            }
        }
        Ok(decided
            .into_iter()
            .filter_map(|(name, present)| present.then_some(name))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::image::testutil::{layout, tar_bytes, E};
    use crate::image::{open, ImageRef, OpenOptions};

    struct Fixture {
        dir: tempfile::TempDir,
        image: Image,
    }

    fn image(layers: &[&[E]]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let tars: Vec<Vec<u8>> = layers.iter().map(|l| tar_bytes(l)).collect();
        layout(&dir.path().join("img"), &tars);
        let r: ImageRef = format!("oci:{}/img", dir.path().display()).parse().unwrap();
        let image = open(&r, &OpenOptions::default()).unwrap();
        Fixture { dir, image }
    }

    fn read(f: &Fixture, path: &str) -> Result<Vec<u8>> {
        let mut fs = MergedFs::new(&f.image, f.dir.path(), |_| true);
        let c = fs.read_file(path)?;
        let mut v = Vec::new();
        c.file.reopen()?.read_to_end(&mut v)?;
        Ok(v)
    }

    fn absence(f: &Fixture, path: &str) -> Absence {
        let e = read(f, path).unwrap_err();
        e.downcast::<NotFound>().expect("a NotFound error").why
    }

    #[test]
    fn top_layer_wins_and_lower_layers_are_not_read() {
        let f = image(&[
            &[E::File("usr/bin/mcd", b"old", 0o755)],
            &[E::File("usr/bin/mcd", b"new", 0o755)],
        ]);
        let mut fs = MergedFs::new(&f.image, f.dir.path(), |_| true);
        let c = fs.read_file("/usr/bin/mcd").unwrap();
        assert_eq!(std::fs::read(c.file.path()).unwrap(), b"new");
        assert_eq!(fs.layer_reads(), 1);
    }

    #[test]
    fn whiteouts_and_opaque_directories() {
        let f = image(&[
            &[
                E::File("a/x", b"x", 0o644),
                E::File("a/y", b"y", 0o644),
                E::File("b/z", b"z", 0o644),
                E::File("c/w", b"w", 0o644),
            ],
            &[
                E::File("a/.wh.x", b"", 0o644),
                E::Dir("./b/"),
                E::File("b/.wh..wh..opq", b"", 0o644),
                E::File("b/new", b"n", 0o644),
                E::File(".wh.c", b"", 0o644),
            ],
        ]);
        assert!(matches!(absence(&f, "/a/x"), Absence::WhitedOut { .. }));
        assert_eq!(read(&f, "/a/y").unwrap(), b"y");
        assert!(matches!(absence(&f, "/b/z"), Absence::Opaque { .. }));
        assert_eq!(read(&f, "/b/new").unwrap(), b"n");
        assert!(matches!(absence(&f, "/c/w"), Absence::WhitedOut { .. }));
        assert_eq!(absence(&f, "/nope"), Absence::NotPresent);
    }

    #[test]
    fn a_file_over_an_ancestor_hides_what_was_below() {
        let f = image(&[
            &[E::File("d/f", b"f", 0o644)],
            &[E::File("d", b"file", 0o644)],
        ]);
        assert!(matches!(absence(&f, "/d/f"), Absence::NotADirectory { .. }));
        assert_eq!(read(&f, "/d").unwrap(), b"file");
    }

    #[test]
    fn symlinks_resolve_inside_the_image() {
        let f = image(&[
            &[
                E::Symlink("bin", "usr/bin"),
                E::File("usr/bin/mcd", b"m", 0o755),
                E::Symlink("usr/bin/abs", "/usr/bin/mcd"),
                E::Symlink("usr/bin/esc", "../../../../usr/bin/mcd"),
                E::Symlink("loop1", "loop2"),
                E::Symlink("loop2", "loop1"),
            ],
            &[E::Symlink("usr/bin/rel", "mcd")],
        ]);
        for p in [
            "/bin/mcd",
            "/usr/bin/abs",
            "/usr/bin/rel",
            "/bin/esc",
            "/usr/../bin/rel",
        ] {
            assert_eq!(read(&f, p).unwrap(), b"m", "{p}");
        }
        let e = read(&f, "/loop1").unwrap_err();
        assert!(e.to_string().contains("too many levels"), "{e}");
    }

    #[test]
    fn hardlinks_resolve_in_their_own_layer() {
        let f = image(&[
            &[
                E::File("a/orig", b"data", 0o755),
                E::Hardlink("a/link", "a/orig"),
            ],
            &[E::File("a/.wh.orig", b"", 0o644)],
        ]);
        assert_eq!(read(&f, "/a/link").unwrap(), b"data");
        assert!(matches!(absence(&f, "/a/orig"), Absence::WhitedOut { .. }));
        let g = image(&[&[
            E::Hardlink("a/link", "a/later"),
            E::File("a/later", b"x", 0o644),
        ]]);
        assert!(read(&g, "/a/link").is_err());
        // A link to a file of a lower layer gets that file, even where a later entry of
        // its own layer replaces the name.
        let h = image(&[
            &[E::File("a/orig", b"lower", 0o755)],
            &[
                E::Hardlink("a/link", "a/orig"),
                E::File("a/orig", b"upper", 0o755),
            ],
        ]);
        assert_eq!(read(&h, "/a/link").unwrap(), b"lower");
        assert_eq!(read(&h, "/a/orig").unwrap(), b"upper");
    }

    #[test]
    fn directory_listing_merges_layers() {
        let f = image(&[
            &[
                E::File("usr/bin/machine-config-daemon", b"1", 0o755),
                E::File("usr/bin/machine-config-daemon.rhel8", b"2", 0o755),
                E::File("usr/bin/other", b"3", 0o755),
            ],
            &[
                E::File("usr/bin/.wh.machine-config-daemon.rhel8", b"", 0o644),
                E::File("usr/bin/machine-config-daemon.rhel9", b"4", 0o755),
            ],
        ]);
        let mut fs = MergedFs::new(&f.image, f.dir.path(), |_| false);
        let names = fs
            .list_dir("/usr/bin", |n| n.starts_with("machine-config-daemon"))
            .unwrap();
        assert_eq!(
            names,
            ["machine-config-daemon", "machine-config-daemon.rhel9"]
        );
    }

    #[test]
    fn a_changed_byte_is_refused() {
        let f = image(&[&[E::File("x", b"content", 0o644)]]);
        let blob = f
            .dir
            .path()
            .join("img")
            .join(f.image.info.layers[0].location.clone());
        let mut bytes = std::fs::read(&blob).unwrap();
        let n = bytes.len();
        bytes[n - 5] ^= 1;
        std::fs::write(&blob, bytes).unwrap();
        let e = read(&f, "/x").unwrap_err();
        assert!(
            format!("{e:#}").contains(&f.image.info.layers[0].digest.to_string()),
            "{e:#}"
        );
    }
}
