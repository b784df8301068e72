//! Reading one layer: decompression, digest checks, and an index of its tar entries.
//!
//! A layer is always read to its end and its digest checked before anything taken from
//! it is returned. While reading, the content of the entries a caller wants is spooled
//! to temp files, so that the common case reads each layer once.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::rc::Rc;

use anyhow::{anyhow, bail, Context, Result};
use flate2::bufread::MultiGzDecoder;
use tempfile::NamedTempFile;

use super::digest::Digest;
use super::{BlobSource, Compression, LayerInfo, Verification};
use crate::io::{read_at_most, HashState, HashWriter, HashingReader, SharedReader, TarPad};

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_MARKER: &str = ".wh..wh..opq";
const META_PREFIX: &str = ".wh..wh.";

/// What kind of filesystem object a tar entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Hardlink,
    /// Devices, FIFOs and other special files.
    Other,
}

/// What the index keeps of one entry.
#[derive(Clone, Debug)]
pub struct EntryMeta {
    pub kind: EntryKind,
    /// Symlink target as written, or hardlink target as a normalised name.
    pub link: Option<String>,
    /// Position of the entry in its layer (hardlinks may only point backwards).
    pub ordinal: usize,
    /// A directory that exists only because entries below it do.
    pub implicit: bool,
    /// Found by the hash of its name only (see [`LayerIndex`]): whoever reads it
    /// checks the name of the entry at `ordinal`.
    pub by_hash: bool,
}

/// A regular file or special file kept only as a hash of its name: what a lookup
/// needs of the files nobody asked for (is there a non-directory here, and which entry
/// is it), in 16 bytes instead of its name and metadata.
#[derive(Clone, Copy, Debug)]
struct Hashed {
    hash: u64,
    ordinal: u32,
    kind: EntryKind,
}

/// An entry whose parent path the layers below decide: a component of the parent is
/// not a directory written earlier in the same layer, so it may be a symlink below
/// (`bin/tool` over `bin -> usr/bin`), or it is a symlink of this layer. Kept in 24
/// bytes (names in [`PendingSet`]), since a layer without directory entries makes every
/// entry pending.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    /// Index into [`PendingSet::parents`]: one per run of entries with the same parent
    /// and no directory or symlink of the layer between them (their parent is then in
    /// the same place).
    parent: u32,
    ordinal: u32,
    base_off: u32,
    base_len: u16,
    pub what: PendingKind,
}

const _: () = assert!(std::mem::size_of::<Pending>() == 16);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingKind {
    /// A directory, link or spooled file: kept whole once placed.
    Entry,
    /// A regular or special file nobody asked for by its name as written.
    File(EntryKind),
    Whiteout,
    Opaque,
}

/// The pending entries of a layer and the names they refer to.
#[derive(Debug, Default)]
pub struct PendingSet {
    pub items: Vec<Pending>,
    /// The metadata of [`PendingKind::Entry`] items, by ordinal.
    metas: HashMap<u32, EntryMeta>,
    /// Parent paths as written; consecutive entries share one.
    parents: Vec<String>,
    /// The epoch of the last parent pushed: how many directories and symlinks the
    /// layer held before it.
    parent_epoch: u32,
    /// Base names as written, end to end.
    bases: String,
    /// Base names, for [`LayerIndex::pending_concerns`]; `None` when there are too
    /// many to keep (then every lookup is concerned).
    base_set: Option<HashSet<String>>,
    /// An opaque marker is pending: every lookup is concerned.
    opaque: bool,
}

/// Past this many distinct pending base names, any lookup settles the pending entries.
const MAX_PENDING_BASES: usize = 1 << 16;

impl PendingSet {
    pub fn parent(&self, p: &Pending) -> &str {
        &self.parents[p.parent as usize]
    }

    pub fn base(&self, p: &Pending) -> &str {
        &self.bases[p.base_off as usize..p.base_off as usize + p.base_len as usize]
    }

    pub fn ordinal(&self, p: &Pending) -> usize {
        p.ordinal as usize
    }

    /// The parent's identity, for caching where it leads.
    pub fn parent_id(&self, p: &Pending) -> u32 {
        p.parent
    }

    pub fn take_meta(&mut self, p: &Pending) -> Option<EntryMeta> {
        self.metas.remove(&p.ordinal)
    }

    fn push(
        &mut self,
        parent: &str,
        base: &str,
        ordinal: usize,
        epoch: u32,
        what: PendingKind,
        meta: Option<EntryMeta>,
    ) -> Result<()> {
        if self.parents.last().map(String::as_str) != Some(parent) || self.parent_epoch != epoch {
            self.parents.push(parent.to_string());
            self.parent_epoch = epoch;
        }
        let too_big = || anyhow!("too many pending entries");
        let base_off = u32::try_from(self.bases.len()).map_err(|_| too_big())?;
        self.bases.push_str(base);
        let ordinal = u32::try_from(ordinal).map_err(|_| too_big())?;
        if let Some(m) = meta {
            self.metas.insert(ordinal, m);
        }
        if what == PendingKind::Opaque {
            self.opaque = true;
        }
        if let Some(set) = &mut self.base_set {
            if set.len() >= MAX_PENDING_BASES {
                self.base_set = None;
            } else if !set.contains(base) {
                set.insert(base.to_string());
            }
        }
        self.items.push(Pending {
            parent: u32::try_from(self.parents.len() - 1).map_err(|_| too_big())?,
            ordinal,
            base_off,
            base_len: u16::try_from(base.len()).map_err(|_| too_big())?,
            what,
        });
        Ok(())
    }
}

/// The entries, whiteouts and opaque markers of one layer, by canonical name (no
/// leading `/`, the root is `""`; parents resolved through symlinks as when the layer
/// is unpacked).
///
/// Directories, links and the files `wanted` accepted are kept whole; other files only
/// as a hash of their name (a collision could only make a lookup find a file that a
/// second read then does not hold, never return other bytes). Entries whose parents
/// depend on the layers below wait in `pending` until a lookup needs them.
#[derive(Debug)]
pub struct LayerIndex {
    pub entries: HashMap<String, EntryMeta>,
    hashed: Vec<Hashed>,
    hasher: RandomState,
    pub whiteouts: HashSet<String>,
    pub opaque: HashSet<String>,
    pub pending: PendingSet,
}

impl Default for LayerIndex {
    fn default() -> Self {
        LayerIndex {
            entries: HashMap::new(),
            hashed: Vec::new(),
            hasher: RandomState::new(),
            whiteouts: HashSet::new(),
            opaque: HashSet::new(),
            pending: PendingSet {
                base_set: Some(HashSet::new()),
                ..Default::default()
            },
        }
    }
}

/// The content of a wanted regular file, spooled while its layer was read.
pub enum Capture {
    File {
        file: NamedTempFile,
        mode: u32,
        size: u64,
        /// The sha256 of the content, taken as it was spooled.
        sha256: Digest,
        /// The entry's name as written (normalised).
        name: String,
    },
    /// Larger than the limit: nothing was written.
    TooBig { size: u64 },
}

/// Told how far each wanted entry is spooled, as its layer streams: `inject` compresses
/// the build it will likely choose meanwhile. The bytes are in the spool file, not yet
/// verified (the layer's digest is checked at its end).
pub trait Tap: Sync {
    /// `written` of the `size` bytes of the entry `name` (normalised) are in `file`.
    fn spooled(&self, name: &str, file: &Path, written: u64, size: u64);
}

/// The spool file of a capture: hashes what is written, and tells the tap.
struct Spooling<'a> {
    out: HashWriter<&'a mut std::fs::File, sha2::Sha256>,
    tap: Option<(&'a dyn Tap, &'a str, &'a Path, u64)>,
}

impl Write for Spooling<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some((tap, name, file, size)) = self.tap {
            tap.spooled(name, file, self.out.len, size);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A verified layer: its index and the content spooled for wanted entries, by ordinal.
pub struct LayerScan {
    pub index: LayerIndex,
    pub captures: HashMap<usize, Capture>,
}

/// Which regular files a scan spools.
#[derive(Clone, Copy)]
pub enum Want<'a> {
    /// Those whose name (as written) the predicate accepts.
    Names(&'a dyn Fn(&str) -> bool),
    /// The entries at these ordinals only.
    Ordinals(&'a [usize]),
}

/// How a layer is read.
pub struct ScanOptions<'a> {
    pub want: Want<'a>,
    pub spool: &'a Path,
    /// Regular files larger than this are not spooled (reading one is an error).
    pub max_file_size: u64,
    /// The bottom layer: nothing below it can redirect its entries.
    pub bottom: bool,
    /// Told how far wanted entries are spooled.
    pub tap: Option<&'a dyn Tap>,
}

/// Normalises a tar entry name: strips `./`, refuses absolute names and `..`. A name
/// that is only slashes and dots (`/`, `./`, as kaniko writes) is the root, `""`.
pub fn normalize_name(raw: &str) -> Result<String> {
    let mut parts = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => bail!("entry name {raw:?} contains '..'"),
            c => parts.push(c),
        }
    }
    if raw.starts_with('/') && !parts.is_empty() {
        bail!("entry name {raw:?} is absolute");
    }
    Ok(parts.join("/"))
}

/// The parent of a normalised name (`""` for top-level names).
pub fn parent_of(name: &str) -> &str {
    name.rfind('/').map_or("", |i| &name[..i])
}

/// `dir/base`, or `base` at the root.
pub fn child_of(dir: &str, base: &str) -> String {
    if dir.is_empty() {
        base.to_string()
    } else {
        format!("{dir}/{base}")
    }
}

fn decompressor<'a>(raw: impl Read + 'a, compression: Compression) -> Result<Box<dyn Read + 'a>> {
    let mut buffered = BufReader::with_capacity(crate::io::WIDE_BUF, raw);
    let compression = match compression {
        Compression::Detect => {
            let head = buffered.fill_buf().context("reading layer")?;
            if head.starts_with(&[0x1f, 0x8b]) {
                Compression::Gzip
            } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
                Compression::Zstd
            } else {
                Compression::None
            }
        }
        c => c,
    };
    Ok(match compression {
        Compression::Gzip => Box::new(MultiGzDecoder::new(buffered)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(buffered)?),
        Compression::None | Compression::Detect => Box::new(buffered),
    })
}

fn entry_kind(t: tar::EntryType) -> EntryKind {
    if t.is_file() || t == tar::EntryType::Continuous {
        EntryKind::File
    } else if t.is_dir() {
        EntryKind::Dir
    } else if t.is_symlink() {
        EntryKind::Symlink
    } else if t.is_hard_link() {
        EntryKind::Hardlink
    } else {
        EntryKind::Other
    }
}

impl LayerIndex {
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// Adds a kept entry under its canonical name, with implicit directories for
    /// parents the layer does not hold. A later entry of the same name wins.
    pub fn insert_entry(&mut self, name: String, meta: EntryMeta) {
        let mut parent = parent_of(&name).to_string();
        while !parent.is_empty() && !self.entries.contains_key(&parent) {
            let next = parent_of(&parent).to_string();
            self.entries.insert(
                parent,
                EntryMeta {
                    kind: EntryKind::Dir,
                    link: None,
                    ordinal: meta.ordinal,
                    implicit: true,
                    by_hash: false,
                },
            );
            parent = next;
        }
        if self
            .entries
            .get(&name)
            .is_none_or(|old| old.implicit || old.ordinal <= meta.ordinal)
        {
            self.entries.insert(name, meta);
        }
    }

    fn insert_hashed(&mut self, name: &str, ordinal: usize, kind: EntryKind) -> Result<()> {
        let parent = parent_of(name);
        if !parent.is_empty() && !self.entries.contains_key(parent) {
            self.insert_entry(
                parent.to_string(),
                EntryMeta {
                    kind: EntryKind::Dir,
                    link: None,
                    ordinal,
                    implicit: true,
                    by_hash: false,
                },
            );
        }
        let ordinal = u32::try_from(ordinal).map_err(|_| anyhow!("more than 2^32 entries"))?;
        let hash = self.hash(name);
        self.hashed.push(Hashed {
            hash,
            ordinal,
            kind,
        });
        Ok(())
    }

    /// The last entry named `name` (canonical) whose ordinal is below `before`.
    pub fn get(&self, name: &str, before: usize) -> Option<EntryMeta> {
        let kept = self
            .entries
            .get(name)
            .filter(|m| m.ordinal < before)
            .cloned();
        let hash = self.hash(name);
        let start = self.hashed.partition_point(|h| h.hash < hash);
        let hashed = self.hashed[start..]
            .iter()
            .take_while(|h| h.hash == hash)
            .filter(|h| (h.ordinal as usize) < before)
            .max_by_key(|h| h.ordinal)
            .map(|h| EntryMeta {
                kind: h.kind,
                link: None,
                ordinal: h.ordinal as usize,
                implicit: false,
                by_hash: true,
            });
        match (kept, hashed) {
            (Some(k), Some(h)) if h.ordinal > k.ordinal || k.implicit => Some(h),
            (Some(k), _) => Some(k),
            (None, h) => h,
        }
    }

    /// Whether a lookup of `name` must first settle the pending entries.
    pub fn pending_concerns(&self, name: &str) -> bool {
        let p = &self.pending;
        !p.items.is_empty()
            && (p.opaque
                || p.base_set
                    .as_ref()
                    .is_none_or(|set| name.split('/').any(|c| set.contains(c))))
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.items.is_empty()
    }

    /// Takes the pending entries out, to be settled by the caller.
    pub fn take_pending(&mut self) -> PendingSet {
        std::mem::replace(
            &mut self.pending,
            PendingSet {
                base_set: Some(HashSet::new()),
                ..Default::default()
            },
        )
    }

    /// Adds a regular or special file under its canonical name, kept whole when
    /// `keep`, else as a hash.
    pub fn insert_file(
        &mut self,
        name: &str,
        ordinal: usize,
        kind: EntryKind,
        keep: bool,
    ) -> Result<()> {
        if keep {
            self.insert_entry(
                name.to_string(),
                EntryMeta {
                    kind,
                    link: None,
                    ordinal,
                    implicit: false,
                    by_hash: false,
                },
            );
            Ok(())
        } else {
            self.insert_hashed(name, ordinal, kind)
        }
    }

    /// Room for `n` more hashed entries.
    pub fn reserve_hashed(&mut self, n: usize) {
        self.hashed.reserve_exact(n);
    }

    /// Sorts the hashed entries after additions (lookups binary-search them).
    pub fn finish_hashed(&mut self) {
        self.hashed.sort_unstable_by_key(|h| (h.hash, h.ordinal));
    }

    /// True when every component of `parent` is a directory written earlier in this
    /// layer, so that nothing below can redirect an entry under it. In the bottom
    /// layer, components it does not hold are plain directories too.
    fn settles(&self, parent: &str, bottom: bool) -> bool {
        let mut end = 0;
        while end < parent.len() {
            end = parent[end..].find('/').map_or(parent.len(), |i| end + i);
            let prefix = &parent[..end];
            match self.entries.get(prefix) {
                Some(m) if m.kind == EntryKind::Dir && (bottom || !m.implicit) => {}
                Some(m) if m.kind == EntryKind::Dir => return false,
                Some(m) if m.kind == EntryKind::Symlink => return false,
                Some(_) => {}
                None if bottom => {}
                None => return false,
            }
            end += 1;
        }
        true
    }
}

/// PAX extended headers and GNU long names larger than this are refused: a real name
/// is at most a few KiB, and these are read into memory.
pub const MAX_TAR_METADATA: u64 = 1024 * 1024;

/// The extended metadata that applies to the next entry.
#[derive(Default)]
struct NextMeta {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Option<Vec<u8>>,
}

impl NextMeta {
    fn is_empty(&self) -> bool {
        self.long_name.is_none() && self.long_link.is_none() && self.pax.is_none()
    }
}

fn without_nuls(mut v: Vec<u8>) -> Vec<u8> {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The tar stream of a layer: decompressed, padded, shared between the tar parser and
/// the reads behind it, with the counts and hashes its verification needs.
struct LayerStream<'a> {
    tar: SharedReader<TarPad<HashingReader<Box<dyn Read + 'a>>>>,
    /// The stored blob (hashed unless the source verifies it, or a diff ID does).
    raw: HashState,
    /// The uncompressed tar (hashed for a diff ID only).
    plain: HashState,
    /// Real (unpadded) bytes of the tar stream.
    real: Rc<Cell<u64>>,
}

impl<'a> LayerStream<'a> {
    fn open(source: &'a dyn BlobSource, layer: &LayerInfo, what: &str) -> Result<Self> {
        let raw = source.open_layer(layer)?;
        let by_diff_id = matches!(layer.verification, Verification::DiffId(_));
        let (raw, raw_state) = HashingReader::maybe(raw, !by_diff_id && !source.verifies_blobs());
        let (plain, plain_state) = HashingReader::maybe(
            decompressor(raw, layer.compression).with_context(|| what.to_string())?,
            by_diff_id,
        );
        let (padded, real) = TarPad::new(plain);
        Ok(LayerStream {
            tar: SharedReader::new(padded),
            raw: raw_state,
            plain: plain_state,
            real,
        })
    }

    /// Checks the layer's digest (and size) once the stream has been read to its end.
    fn verify(&self, layer: &LayerInfo, what: &str) -> Result<()> {
        match &layer.verification {
            Verification::Blob { digest, size } => {
                if self.raw.len() != *size {
                    bail!(
                        "{what} is corrupt: {} bytes read, the manifest says {size}",
                        self.raw.len()
                    );
                }
                match self.raw.sha256().map(Digest::from_hasher) {
                    Some(actual) if &actual != digest => {
                        bail!("{what} is corrupt: its content hashes to {actual}")
                    }
                    Some(_) => {}
                    // A self-verifying source checks the digest when its reader reaches
                    // the end, and fails that read on a mismatch: the end must have been
                    // reached.
                    None if self.raw.at_end() => {}
                    None => bail!("{what} was not read to its end, so its digest is unchecked"),
                }
            }
            Verification::DiffId(diff_id) => {
                let actual = self
                    .plain
                    .sha256()
                    .map(Digest::from_hasher)
                    .expect("the uncompressed stream is hashed for a diff ID");
                if &actual != diff_id {
                    bail!("{what} is corrupt: its uncompressed content hashes to {actual}, the config's diff_id is {diff_id}");
                }
            }
        }
        Ok(())
    }
}

/// A tar entry with its extended headers applied: the names to use, and the size of
/// data that only a PAX record gives (read from the stream behind the parser).
struct TarItem {
    name: Vec<u8>,
    link: Option<Vec<u8>>,
    beside: u64,
}

/// Walks the tar stream: reads GNU long names and PAX headers (with a size cap) and
/// applies them to the entry they precede, and tracks where the data of the entries
/// ends, to tell a truncated stream from a short one.
struct TarWalk<'w> {
    what: &'w str,
    next: NextMeta,
    /// Bytes read behind the parser (see `LayerStream`), which its positions do not
    /// count.
    behind: u64,
    data_end: u64,
}

impl<'w> TarWalk<'w> {
    fn new(what: &'w str) -> Self {
        TarWalk {
            what,
            next: NextMeta::default(),
            behind: 0,
            data_end: 0,
        }
    }

    /// The entry as an item, or `None` for an extended header (kept for the next entry)
    /// and a PAX global header.
    fn item<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<Option<TarItem>> {
        self.data_end = self
            .data_end
            .max(self.behind + entry.raw_file_position() + entry.size());
        let header = entry.header();
        let etype = header.entry_type();
        let recognised = header.as_gnu().is_some() || header.as_ustar().is_some();
        if etype.is_pax_global_extensions() {
            return Ok(None); // `git archive`'s comment: no entry, and no file
        }
        if recognised
            && (etype.is_gnu_longname()
                || etype.is_gnu_longlink()
                || etype.is_pax_local_extensions())
        {
            self.keep_extended(entry)?;
            return Ok(None);
        }
        let item = self.apply_extended(entry)?;
        if item.beside > 0 {
            self.data_end = self
                .data_end
                .max(self.behind + entry.raw_file_position() + item.beside);
        }
        Ok(Some(item))
    }

    /// Reads a GNU long name or link, or a PAX header, for the next entry.
    fn keep_extended<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<()> {
        let what = self.what;
        let etype = entry.header().entry_type();
        let kind = if etype.is_pax_local_extensions() {
            "PAX extended header"
        } else {
            "GNU long name"
        };
        let size = entry.size();
        if size > MAX_TAR_METADATA {
            bail!(
                "{what}: {kind} {:?} at byte {} is {size} bytes, over the limit of \
                 {MAX_TAR_METADATA}",
                String::from_utf8_lossy(&entry.path_bytes()),
                entry.raw_header_position()
            );
        }
        let buf = read_at_most(&mut *entry, MAX_TAR_METADATA)
            .with_context(|| format!("{what}: reading a {kind}"))?
            .ok_or_else(|| anyhow!("{what}: a {kind} over the limit of {MAX_TAR_METADATA}"))?;
        let slot = if etype.is_pax_local_extensions() {
            &mut self.next.pax
        } else if etype.is_gnu_longname() {
            &mut self.next.long_name
        } else {
            &mut self.next.long_link
        };
        if slot.is_some() {
            bail!(
                "{what}: two {kind}s for one entry at byte {}",
                entry.raw_header_position()
            );
        }
        *slot = Some(buf);
        Ok(())
    }

    /// The entry's names and PAX size, from the extended headers before it or its own
    /// header.
    fn apply_extended<R: Read>(&mut self, entry: &tar::Entry<'_, R>) -> Result<TarItem> {
        let what = self.what;
        let meta = std::mem::take(&mut self.next);
        let mut name = meta
            .long_name
            .map(without_nuls)
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        let mut link = meta
            .long_link
            .map(without_nuls)
            .or_else(|| entry.link_name_bytes().map(|b| b.into_owned()));
        let mut pax_size = None;
        if let Some(pax) = &meta.pax {
            for ext in tar::PaxExtensions::new(pax) {
                let ext = ext.with_context(|| format!("{what}: malformed PAX header"))?;
                match ext.key_bytes() {
                    b"path" => name = ext.value_bytes().to_vec(),
                    b"linkpath" => link = Some(ext.value_bytes().to_vec()),
                    b"size" => {
                        pax_size = Some(ext.value().ok().and_then(|v| v.parse::<u64>().ok()));
                    }
                    _ => {}
                }
            }
        }
        // Data the parser does not know of: a size that only a PAX record gives.
        let beside = match pax_size {
            None => 0,
            Some(Some(s)) if s == entry.size() => 0,
            Some(Some(s)) if entry.size() == 0 => s,
            Some(bad) => bail!(
                "{what}: entry {:?} has a PAX size record ({}) that contradicts its header \
                 size ({})",
                String::from_utf8_lossy(&name),
                bad.map_or("unreadable".to_string(), |s| s.to_string()),
                entry.size()
            ),
        };
        Ok(TarItem { name, link, beside })
    }

    /// Reads what is left of an item's data behind the parser, and its padding to the
    /// next 512-byte block.
    fn skip_beside(
        &mut self,
        len: u64,
        data: &mut impl Read,
        stream: &mut impl Read,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let padding = len.wrapping_neg() % 512;
        crate::io::copy_wide(data, &mut io::sink(), len)
            .and_then(|_| io::copy(&mut stream.take(padding), &mut io::sink()))
            .with_context(|| format!("{}: reading entry data", self.what))?;
        self.behind += len + padding;
        Ok(())
    }

    /// Checks that no extended header is left over at the last entry.
    fn finish(&self) -> Result<()> {
        if !self.next.is_empty() {
            bail!(
                "{}: the tar stream ends with extended headers but no entry for them",
                self.what
            );
        }
        Ok(())
    }

    /// Checks that the stream (its real bytes) was long enough for the data of every
    /// entry.
    fn check_length(&self, real_len: u64) -> Result<()> {
        let what = self.what;
        if self.data_end > real_len {
            bail!(
                "{what} is truncated: its last entry ends at byte {}, the stream at {real_len}",
                self.data_end
            );
        }
        Ok(())
    }
}

/// Places the entries of one layer in its index (path resolution against the parents
/// seen so far, whiteouts, pending entries) and spools the wanted files.
struct Placer<'o> {
    opts: &'o ScanOptions<'o>,
    what: &'o str,
    index: LayerIndex,
    captures: HashMap<usize, Capture>,
    ordinal: usize,
    /// The parent of the last entry, when it was settled (a cache for runs of
    /// siblings).
    settled_parent: Option<String>,
    /// Bumped by each directory or symlink: what a pending entry's parent resolves to
    /// may change there.
    epoch: u32,
}

/// AUFS metadata (`.wh..wh.plnk` and the like) other than the opaque marker.
fn is_aufs_metadata(name: &str) -> bool {
    name.split('/')
        .any(|c| c.starts_with(META_PREFIX) && c != OPAQUE_MARKER)
}

/// The target of a link entry: hardlinks name another entry (normalised), symlinks keep
/// theirs as written.
fn link_target(
    kind: EntryKind,
    link: Option<Vec<u8>>,
    raw_name: &str,
    what: &str,
) -> Result<Option<String>> {
    if !matches!(kind, EntryKind::Symlink | EntryKind::Hardlink) {
        return Ok(None);
    }
    let target = link
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(|| anyhow!("{what}: link {raw_name:?} has no target"))?;
    Ok(Some(if kind == EntryKind::Hardlink {
        normalize_name(&target).with_context(|| format!("{what}: hardlink {raw_name:?}"))?
    } else {
        target
    }))
}

impl<'o> Placer<'o> {
    fn new(opts: &'o ScanOptions<'o>, what: &'o str) -> Self {
        Placer {
            opts,
            what,
            index: LayerIndex::default(),
            captures: HashMap::new(),
            ordinal: 0,
            settled_parent: None,
            epoch: 0,
        }
    }

    /// Places one entry; `beside` reads its data when only a PAX record gives its size.
    fn place<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        item: TarItem,
        beside: &mut impl Read,
    ) -> Result<()> {
        let what = self.what;
        let this = self.ordinal;
        self.ordinal += 1;
        let raw_name = String::from_utf8_lossy(&item.name).into_owned();
        let name = normalize_name(&raw_name).with_context(|| what.to_string())?;
        if is_aufs_metadata(&name) || name.is_empty() {
            return Ok(()); // the root itself is `./` or kaniko's `/`
        }
        let settled = self.settle(parent_of(&name));
        if self.place_whiteout(&name, this, settled)? {
            return Ok(());
        }
        let header = entry.header();
        let kind = entry_kind(header.entry_type());
        let link = link_target(kind, item.link, &raw_name, what)?;
        let mode = header
            .mode()
            .with_context(|| format!("{what}: {raw_name:?}: bad mode"))?;
        let size = entry.size().max(item.beside);
        let wanted = kind == EntryKind::File && self.wants(&name, this);
        if wanted {
            let data: &mut dyn Read = if item.beside > 0 { beside } else { entry };
            let capture = self.capture(data, &name, &raw_name, mode, size)?;
            self.captures.insert(this, capture);
        }
        let meta = EntryMeta {
            kind,
            link,
            ordinal: this,
            implicit: false,
            by_hash: false,
        };
        self.record(name, meta, wanted, settled)
    }

    /// Whether entries in `parent` can be placed now (else they wait for the layers
    /// below), remembered for the next sibling.
    fn settle(&mut self, parent: &str) -> bool {
        let settled = self.settled_parent.as_deref() == Some(parent)
            || self.index.settles(parent, self.opts.bottom);
        self.settled_parent = settled.then(|| parent.to_string());
        settled
    }

    fn wants(&self, name: &str, ordinal: usize) -> bool {
        match self.opts.want {
            Want::Names(f) => f(name),
            Want::Ordinals(o) => o.contains(&ordinal),
        }
    }

    /// Records an opaque marker or a whiteout; false for other entries.
    fn place_whiteout(&mut self, name: &str, this: usize, settled: bool) -> Result<bool> {
        let base = name.rsplit('/').next().unwrap_or("");
        let parent = parent_of(name);
        let (hidden, kind) = if base == OPAQUE_MARKER {
            ("", PendingKind::Opaque)
        } else if let Some(hidden) = base.strip_prefix(WHITEOUT_PREFIX) {
            (hidden, PendingKind::Whiteout)
        } else {
            return Ok(false);
        };
        if !settled {
            self.index
                .pending
                .push(parent, hidden, this, self.epoch, kind, None)
                .with_context(|| self.what.to_string())?;
        } else if kind == PendingKind::Opaque {
            self.index.opaque.insert(parent.to_string());
        } else {
            self.index.whiteouts.insert(child_of(parent, hidden));
        }
        Ok(true)
    }

    /// Copies a wanted file's data to a temp file in the spool directory, unless it is
    /// larger than the limit.
    fn capture(
        &self,
        data: &mut dyn Read,
        name: &str,
        raw_name: &str,
        mode: u32,
        size: u64,
    ) -> Result<Capture> {
        if size > self.opts.max_file_size {
            return Ok(Capture::TooBig { size });
        }
        let spool = self.opts.spool;
        let mut tmp = tempfile::Builder::new()
            .prefix(".cap-")
            .tempfile_in(spool)
            .with_context(|| format!("creating a temp file in {}", spool.display()))?;
        let path = tmp.path().to_path_buf();
        let mut out = Spooling {
            out: HashWriter::new(tmp.as_file_mut()),
            tap: self.opts.tap.map(|t| (t, name, path.as_path(), size)),
        };
        crate::io::copy_wide(data, &mut out, size)
            .with_context(|| format!("{}: reading {raw_name:?}", self.what))?;
        let (sha256, _) = out.out.finish();
        Ok(Capture::File {
            file: tmp,
            mode,
            size,
            sha256: Digest::from_output(sha256),
            name: name.to_string(),
        })
    }

    /// Puts an entry in the index, or among the pending ones when its parent is not
    /// settled.
    fn record(&mut self, name: String, meta: EntryMeta, wanted: bool, settled: bool) -> Result<()> {
        let (kind, this) = (meta.kind, meta.ordinal);
        if kind != EntryKind::Dir
            && self.settled_parent.as_deref().is_some_and(|p| {
                p.strip_prefix(name.as_str())
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
            })
        {
            self.settled_parent = None; // it replaces a directory named before
        }
        let this_epoch = self.epoch;
        if matches!(kind, EntryKind::Dir | EntryKind::Symlink) {
            self.epoch = self.epoch.saturating_add(1);
        }
        let plain_file = matches!(kind, EntryKind::File | EntryKind::Other) && !wanted;
        if settled && plain_file {
            return self.index.insert_hashed(&name, this, kind);
        }
        if settled {
            self.index.insert_entry(name, meta);
            return Ok(());
        }
        let (pending_kind, meta) = if plain_file {
            (PendingKind::File(kind), None)
        } else {
            (PendingKind::Entry, Some(meta))
        };
        let base = name.rsplit('/').next().unwrap_or("");
        self.index
            .pending
            .push(parent_of(&name), base, this, this_epoch, pending_kind, meta)
            .with_context(|| self.what.to_string())
    }

    fn finish(mut self) -> LayerScan {
        self.index.finish_hashed();
        self.index.hashed.shrink_to_fit();
        LayerScan {
            index: self.index,
            captures: self.captures,
        }
    }
}

/// Reads a layer to its end, verifies it, and indexes it. Regular files that
/// `opts.want` selects are spooled into temp files in `opts.spool`.
pub fn scan_layer(
    source: &dyn BlobSource,
    layer: &LayerInfo,
    opts: &ScanOptions,
) -> Result<LayerScan> {
    let what = format!("layer {}", layer.digest);
    let stream = LayerStream::open(source, layer, &what)?;
    let mut archive = tar::Archive::new(stream.tar.clone());
    let mut walk = TarWalk::new(&what);
    let mut placer = Placer::new(opts, &what);
    // Raw entries: GNU long names and PAX headers are read by the walk, with a size
    // cap, rather than whole by the tar crate.
    let entries = archive
        .entries()
        .with_context(|| format!("{what}: reading tar"))?
        .raw(true);
    for entry in entries {
        let mut entry = entry.with_context(|| format!("{what}: corrupt tar stream"))?;
        let Some(item) = walk.item(&mut entry)? else {
            continue;
        };
        let beside_len = item.beside;
        let mut beside = stream.tar.clone().take(beside_len);
        placer.place(&mut entry, item, &mut beside)?;
        walk.skip_beside(beside_len, &mut beside, &mut stream.tar.clone())?;
    }
    walk.finish()?;
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).with_context(|| format!("{what}: reading to the end"))?;
    drop(rest);
    walk.check_length(stream.real.get())?;
    stream.verify(layer, &what)?;
    Ok(placer.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise() {
        assert_eq!(normalize_name("./usr/bin/").unwrap(), "usr/bin");
        assert_eq!(normalize_name("././a//b").unwrap(), "a/b");
        assert_eq!(normalize_name("./").unwrap(), "");
        assert!(normalize_name("/etc/passwd").is_err());
        assert!(normalize_name("a/../../etc").is_err());
        assert_eq!(parent_of("a/b/c"), "a/b");
        assert_eq!(parent_of("a"), "");
    }
}
