//! The merged filesystem of an image, answered top-down and lazily (docs/design.md, "Reading one file from a layered image").
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

use super::layer::{
    child_of, parent_of, scan_layer, Capture, EntryKind, EntryMeta, LayerIndex, LayerScan,
    PendingKind, ScanOptions, Tap, Want,
};
use super::Digest;
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
    /// The sha256 of the content.
    pub sha256: Digest,
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
    tap: Option<&'a dyn Tap>,
}

enum Lookup {
    Found(usize, EntryMeta),
    Absent(Absence),
}

/// How a walk treats components that are missing or not directories.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// A lookup: they make the path absent.
    Strict,
    /// Where an unpacker puts an entry: missing directories are created, so the walk
    /// goes on with the name as it is.
    Unpack,
}

/// The entries of one layer that come before a given entry: a walk that unpacks that
/// entry sees them above the layers below.
#[derive(Clone, Copy)]
struct Before {
    layer: usize,
    ordinal: usize,
}

impl<'a> MergedFs<'a> {
    /// A view whose file contents are spooled into `spool`. Files whose canonical
    /// names `wanted` accepts are captured on the first read of their layer; only they
    /// (and directories and links) are listed by [`Self::list_dir`].
    pub fn new(image: &'a Image, spool: &Path, wanted: impl Fn(&str) -> bool + 'static) -> Self {
        MergedFs {
            image,
            spool: spool.to_path_buf(),
            wanted: Box::new(wanted),
            scans: HashMap::new(),
            reads: 0,
            tap: None,
        }
    }

    /// Captures also the files `more` accepts, in the layers read from now on.
    pub fn also_want(&mut self, more: impl Fn(&str) -> bool + 'static) {
        let wanted = std::mem::replace(&mut self.wanted, Box::new(|_| false));
        self.wanted = Box::new(move |n| wanted(n) || more(n));
    }

    /// Tells `tap` how far wanted entries are spooled as their layers stream.
    pub fn set_tap(&mut self, tap: Option<&'a dyn Tap>) {
        self.tap = tap;
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

    fn read_layer(&mut self, i: usize, want: Want) -> Result<LayerScan> {
        let layer = &self.image.info.layers[i];
        let started = std::time::Instant::now();
        log::info!(
            "reading layer {}/{} {} ({}, {} bytes stored)",
            i + 1,
            self.image.info.layers.len(),
            layer.digest,
            layer.media_type,
            layer.size
        );
        let scan = scan_layer(
            self.image.source(),
            layer,
            &ScanOptions {
                want,
                spool: &self.spool,
                max_file_size: self.image.max_file_size(),
                bottom: i == 0,
                tap: self.tap,
            },
        )?;
        log::info!(
            "layer {}/{} read and verified in {:.3} s",
            i + 1,
            self.image.info.layers.len(),
            started.elapsed().as_secs_f64()
        );
        self.reads += 1;
        Ok(scan)
    }

    fn scan(&mut self, i: usize) -> Result<&mut LayerScan> {
        if !self.scans.contains_key(&i) {
            let wanted = std::mem::replace(&mut self.wanted, Box::new(|_| false));
            let scan = self.read_layer(i, Want::Names(&wanted));
            self.wanted = wanted;
            self.scans.insert(i, scan?);
        }
        Ok(self.scans.get_mut(&i).expect("just scanned"))
    }

    /// Reads layer `i`, and settles its pending entries when a lookup of `name` (or
    /// any lookup, for `None`) could be concerned by them.
    fn layer(&mut self, i: usize, name: Option<&str>) -> Result<&LayerIndex> {
        let idx = &self.scan(i)?.index;
        if name.map_or(idx.has_pending(), |n| idx.pending_concerns(n)) {
            self.settle(i)?;
        }
        Ok(&self.scans[&i].index)
    }

    /// Puts the pending entries of layer `i` where unpacking the layer would: each
    /// parent path is walked through the layer's earlier entries and the layers below,
    /// symlinks followed inside the root.
    fn settle(&mut self, i: usize) -> Result<()> {
        let mut pending = self.scan(i)?.index.take_pending();
        let image = self.image;
        let digest = &image.info.layers[i].digest;
        let items = std::mem::take(&mut pending.items);
        let files = items
            .iter()
            .filter(|p| matches!(p.what, PendingKind::File(_)))
            .count();
        self.scans
            .get_mut(&i)
            .expect("scanned")
            .index
            .reserve_hashed(files);
        // Entries with the same parent as written, and no directory or symlink of the
        // layer between them, have their parent in the same place.
        let mut last: Option<(u32, String)> = None;
        for p in &items {
            let id = pending.parent_id(p);
            let parent = match &last {
                Some((key, place)) if *key == id => place.clone(),
                _ => {
                    let before = Before {
                        layer: i,
                        ordinal: pending.ordinal(p),
                    };
                    let raw = format!("/{}", pending.parent(p));
                    let place = self
                        .walk(&raw, true, i, Some(before), Walk::Unpack)
                        .map_err(|e| {
                            let shown = child_of(pending.parent(p), pending.base(p));
                            e.context(format!("layer {digest}: placing entry {shown:?}"))
                        })?
                        .name;
                    last = Some((id, place.clone()));
                    place
                }
            };
            let name = child_of(&parent, pending.base(p));
            let keep = p.what == PendingKind::Entry || (self.wanted)(&name);
            let idx = &mut self.scans.get_mut(&i).expect("scanned").index;
            match p.what {
                PendingKind::Entry => {
                    if let Some(meta) = pending.take_meta(p) {
                        idx.insert_entry(name, meta)
                    }
                }
                PendingKind::File(kind) => {
                    idx.insert_file(&name, pending.ordinal(p), kind, keep)?
                }
                PendingKind::Whiteout => {
                    idx.whiteouts.insert(name);
                }
                PendingKind::Opaque => {
                    idx.opaque.insert(parent);
                }
            }
        }
        drop(items);
        self.scans
            .get_mut(&i)
            .expect("scanned")
            .index
            .finish_hashed();
        Ok(())
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
        let (found, decided_in) = self.lookup_once(name, top)?;
        if let Lookup::Absent(_) = found {
            // A pending entry of a layer above the one that decided may create the
            // directories of this path where its own parents lead: settle them all.
            let unsettled: Vec<usize> = (decided_in..top)
                .filter(|i| self.scans.get(i).is_some_and(|s| s.index.has_pending()))
                .collect();
            if !unsettled.is_empty() {
                for i in unsettled {
                    self.settle(i)?;
                }
                return Ok(self.lookup_once(name, top)?.0);
            }
        }
        Ok(found)
    }

    /// One top-down pass of [`Self::lookup`]; also says which layer decided.
    fn lookup_once(&mut self, name: &str, top: usize) -> Result<(Lookup, usize)> {
        let mut ancestors = vec![String::new()];
        let mut a = parent_of(name);
        while !a.is_empty() {
            ancestors.push(a.to_string());
            a = parent_of(a);
        }
        for i in (0..top).rev() {
            let digest = self.image.info.layers[i].digest.to_string();
            let idx = self.layer(i, Some(name))?;
            if let Some(meta) = idx.get(name, usize::MAX) {
                return Ok((Lookup::Found(i, meta), i));
            }
            if idx.whiteouts.contains(name) {
                return Ok((Lookup::Absent(Absence::WhitedOut { layer: digest }), i));
            }
            for anc in &ancestors {
                if idx.whiteouts.contains(anc) {
                    return Ok((Lookup::Absent(Absence::WhitedOut { layer: digest }), i));
                }
                if idx
                    .get(anc, usize::MAX)
                    .is_some_and(|m| m.kind != EntryKind::Dir)
                {
                    let why = Absence::NotADirectory {
                        ancestor: anc.clone(),
                    };
                    return Ok((Lookup::Absent(why), i));
                }
                if idx.opaque.contains(anc) {
                    return Ok((Lookup::Absent(Absence::Opaque { layer: digest }), i));
                }
            }
        }
        Ok((Lookup::Absent(Absence::NotPresent), 0))
    }

    /// [`Self::lookup`], with the entries of one layer before a given entry on top.
    fn lookup_before(&mut self, name: &str, top: usize, before: Option<Before>) -> Result<Lookup> {
        if let Some(b) = before {
            let idx = self.layer(b.layer, Some(name))?;
            if let Some(meta) = idx.get(name, b.ordinal) {
                return Ok(Lookup::Found(b.layer, meta));
            }
        }
        self.lookup(name, top)
    }

    /// Resolves an absolute path to the node it names, following symlinks inside the
    /// image (the final one too when `follow_last`).
    pub fn resolve(&mut self, path: &str, follow_last: bool) -> Result<Found> {
        self.walk(
            path,
            follow_last,
            self.image.info.layers.len(),
            None,
            Walk::Strict,
        )
    }

    /// Walks `path` in the merged view of the layers below `top` (with `before` on
    /// top of them), one component at a time, as the kernel does: `..` stops at the
    /// root, symlinks are followed inside the image, at most 40 of them.
    fn walk(
        &mut self,
        path: &str,
        follow_last: bool,
        top: usize,
        before: Option<Before>,
        mode: Walk,
    ) -> Result<Found> {
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
            let (layer, meta) = match self.lookup_before(&name, top, before)? {
                Lookup::Found(layer, meta) => (layer, meta),
                Lookup::Absent(_) if mode == Walk::Unpack => {
                    dir.push(c);
                    continue;
                }
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
                _ if mode == Walk::Unpack => dir.push(c),
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
                link: None,
                ordinal: 0,
                implicit: true,
                by_hash: false,
            },
        })
    }

    /// Reads the regular file at `path` (symlinks and hardlinks followed).
    pub fn read_file(&mut self, path: &str) -> Result<FileContent> {
        let found = self.locate_file(path)?;
        self.content(&found)
    }

    /// Reads the regular files at `paths`, each layer read again at most once for the
    /// files its first read did not spool; a path that is no such file gets its error.
    pub fn read_files(&mut self, paths: &[String]) -> Result<Vec<Result<FileContent>>> {
        let found: Vec<Result<Found>> = paths.iter().map(|p| self.locate_file(p)).collect();
        let mut missing: HashMap<usize, Vec<usize>> = HashMap::new();
        for f in found.iter().flatten() {
            let spooled = self
                .scans
                .get(&f.layer)
                .is_some_and(|s| s.captures.contains_key(&f.meta.ordinal));
            if !spooled {
                missing.entry(f.layer).or_default().push(f.meta.ordinal);
            }
        }
        let mut layers: Vec<_> = missing.into_iter().collect();
        layers.sort_unstable();
        for (layer, ordinals) in layers {
            let captures = self.read_layer(layer, Want::Ordinals(&ordinals))?.captures;
            if let Some(scan) = self.scans.get_mut(&layer) {
                scan.captures.extend(captures);
            }
        }
        Ok(found
            .into_iter()
            .map(|f| f.and_then(|f| self.content(&f)))
            .collect())
    }

    /// The regular file `path` names, symlinks and hardlinks followed.
    fn locate_file(&mut self, path: &str) -> Result<Found> {
        let mut found = self.resolve(path, true)?;
        // A hardlink points at what its target was when the layer was unpacked: an
        // earlier entry of its own layer, else the file the layers below hold.
        for _ in 0..MAX_SYMLINK_HOPS {
            if found.meta.kind != EntryKind::Hardlink {
                break;
            }
            let target = found.meta.link.clone().unwrap_or_default();
            let before = Before {
                layer: found.layer,
                ordinal: found.meta.ordinal,
            };
            found = match self.walk(
                &format!("/{target}"),
                false,
                found.layer,
                Some(before),
                Walk::Strict,
            ) {
                Ok(f) => f,
                Err(e) if e.is::<NotFound>() => bail!(
                    "{path}: hardlink to /{target}, which neither layer {} holds before it \
                     nor the layers below it do",
                    self.image.info.layers[found.layer].digest
                ),
                Err(e) => return Err(e),
            };
        }
        match found.meta.kind {
            EntryKind::File => Ok(found),
            EntryKind::Dir => Err(self.not_found(path, Absence::IsADirectory)),
            other => bail!(
                "{path}: not a regular file ({other:?}) in image {}",
                self.image.info.reference
            ),
        }
    }

    fn content(&mut self, found: &Found) -> Result<FileContent> {
        let (file, mode, size, sha256) =
            self.take_capture(found.layer, &found.meta, &found.name)?;
        Ok(FileContent {
            file,
            mode,
            size,
            sha256,
            resolved: format!("/{}", found.name),
        })
    }

    fn take_capture(
        &mut self,
        layer: usize,
        meta: &EntryMeta,
        name: &str,
    ) -> Result<(NamedTempFile, u32, u64, Digest)> {
        let ordinal = meta.ordinal;
        let digest = self.image.info.layers[layer].digest.clone();
        let capture = match self
            .scans
            .get_mut(&layer)
            .and_then(|s| s.captures.remove(&ordinal))
        {
            Some(c) => c,
            // Not spooled on the first read (a link target, or a name not asked for
            // up front): read the layer again for that entry.
            None => self
                .read_layer(layer, Want::Ordinals(&[ordinal]))?
                .captures
                .remove(&ordinal)
                .ok_or_else(|| {
                    anyhow::anyhow!("layer {digest}: /{name} vanished on a second read")
                })?,
        };
        match capture {
            // Entries kept as a hash are never pending ones: their name as written is
            // their canonical name. Another name means two names hashed alike.
            Capture::File { name: written, .. } if meta.by_hash && written != name => bail!(
                "layer {digest}: /{name} and /{written} have the same name hash; \
                 refusing to guess"
            ),
            Capture::File {
                file,
                mode,
                size,
                sha256,
                ..
            } => Ok((file, mode, size, sha256)),
            Capture::TooBig { size } => bail!(
                "layer {digest}: entry /{name} is {size} bytes, over the limit of {} bytes \
                 (raise it with --max-file-size)",
                self.image.max_file_size()
            ),
        }
    }

    /// Names of the entries of directory `dir` (merged view) that `filter` accepts.
    /// Every layer that can contribute is read. Regular files are listed when the
    /// view's `wanted` predicate accepted them (the others are kept only as hashes).
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
            let idx = self.layer(i, None)?;
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
                    || idx
                        .get(a, usize::MAX)
                        .is_some_and(|m| m.kind != EntryKind::Dir);
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
    use crate::image::{open_local, ImageRef, Platform};

    struct Fixture {
        dir: tempfile::TempDir,
        image: Image,
    }

    fn image(layers: &[&[E]]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let tars: Vec<Vec<u8>> = layers.iter().map(|l| tar_bytes(l)).collect();
        layout(&dir.path().join("img"), &tars);
        let r: ImageRef = format!("oci:{}/img", dir.path().display()).parse().unwrap();
        let image = open_local(&r, &Platform::default()).unwrap();
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
            &[
                E::Dir("usr/"),
                E::Dir("usr/bin/"),
                E::File("usr/bin/mcd", b"new", 0o755),
            ],
        ]);
        let mut fs = MergedFs::new(&f.image, f.dir.path(), |_| true);
        let c = fs.read_file("/usr/bin/mcd").unwrap();
        assert_eq!(std::fs::read(c.file.path()).unwrap(), b"new");
        assert_eq!(fs.layer_reads(), 1);
        // Without its parent directories, the top layer cannot tell alone where its
        // entry lands (`usr` could be a symlink below): the layer below is read too.
        let g = image(&[
            &[E::File("usr/bin/mcd", b"old", 0o755)],
            &[E::File("usr/bin/mcd", b"new", 0o755)],
        ]);
        let mut fs = MergedFs::new(&g.image, g.dir.path(), |_| true);
        let c = fs.read_file("/usr/bin/mcd").unwrap();
        assert_eq!(std::fs::read(c.file.path()).unwrap(), b"new");
        assert_eq!(fs.layer_reads(), 2);
    }

    #[test]
    fn entries_under_symlinked_parents_land_where_unpacking_puts_them() {
        let f = image(&[
            &[
                E::Dir("usr/"),
                E::Dir("usr/bin/"),
                E::File("usr/bin/tool", b"v1", 0o755),
                E::File("usr/bin/other", b"other", 0o755),
                E::Symlink("bin", "usr/bin"),
            ],
            &[E::File("bin/tool", b"v2", 0o755)],
            &[E::File("bin/.wh.other", b"", 0o644)],
            &[
                E::Symlink("symldir1", ".."),
                E::File("symldir1/etc/myfile", b"mine", 0o644),
            ],
        ]);
        assert_eq!(read(&f, "/usr/bin/tool").unwrap(), b"v2");
        assert_eq!(read(&f, "/bin/tool").unwrap(), b"v2");
        assert!(matches!(
            absence(&f, "/usr/bin/other"),
            Absence::WhitedOut { .. }
        ));
        assert!(matches!(
            absence(&f, "/bin/other"),
            Absence::WhitedOut { .. }
        ));
        assert_eq!(read(&f, "/etc/myfile").unwrap(), b"mine");
    }

    #[test]
    fn the_size_limit_refuses_before_writing() {
        let f = image(&[&[E::File("big", &[0u8; 4096], 0o644)]]);
        let mut image = open_local(
            &format!("oci:{}/img", f.dir.path().display())
                .parse()
                .unwrap(),
            &Platform::default(),
        )
        .unwrap();
        image.set_max_file_size(4095);
        let spool = tempfile::tempdir().unwrap();
        let mut fs = MergedFs::new(&image, spool.path(), |_| true);
        let e = format!("{:#}", fs.read_file("/big").err().unwrap());
        assert!(
            e.contains("/big is 4096 bytes, over the limit of 4095"),
            "{e}"
        );
        assert!(e.contains(&image.info.layers[0].digest.to_string()), "{e}");
        assert_eq!(std::fs::read_dir(spool.path()).unwrap().count(), 0);
        image.set_max_file_size(4096);
        let mut fs = MergedFs::new(&image, spool.path(), |_| true);
        assert_eq!(fs.read_file("/big").unwrap().size, 4096);
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
        let mut fs = MergedFs::new(&f.image, f.dir.path(), |n| {
            n.starts_with("usr/bin/machine-config-daemon")
        });
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
