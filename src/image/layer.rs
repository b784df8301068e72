//! Reading one layer: decompression, digest checks, and an index of its tar entries.
//!
//! A layer is always read to its end and its digest checked before anything taken from
//! it is returned. While reading, the content of the entries a caller wants is spooled
//! to temp files, so that the common case reads each layer once.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use anyhow::{anyhow, bail, Context, Result};
use flate2::bufread::MultiGzDecoder;
use tempfile::NamedTempFile;

use super::digest::HashingReader;
use super::{BlobSource, Compression, LayerInfo, Verification};

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_MARKER: &str = ".wh..wh..opq";
const META_PREFIX: &str = ".wh..wh.";
const COPY_BUFFER: usize = 256 * 1024;

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
    pub mode: u32,
    pub size: u64,
    /// Symlink target as written, or hardlink target as a normalised name.
    pub link: Option<String>,
    /// Position of the entry in its layer (hardlinks may only point backwards).
    pub ordinal: usize,
    /// A directory that exists only because entries below it do.
    pub implicit: bool,
}

/// The entries, whiteouts and opaque markers of one layer, by normalised name
/// (no leading `/`, the root is `""`).
#[derive(Default, Debug)]
pub struct LayerIndex {
    pub entries: HashMap<String, EntryMeta>,
    pub whiteouts: HashSet<String>,
    pub opaque: HashSet<String>,
}

/// How the spool file of a captured entry is named: this prefix (a hash of the name,
/// short whatever the name's length), then random letters. A reader may follow a capture
/// while its layer still streams (it is not verified before the layer's end).
pub fn capture_prefix(name: &str) -> String {
    use sha2::Digest as _;
    let h = sha2::Sha256::digest(name.as_bytes());
    format!(".cap-{}-", hex::encode(&h[..8]))
}

/// A verified layer: its index and the content spooled for wanted entries.
pub struct LayerScan {
    pub index: LayerIndex,
    pub captures: HashMap<String, NamedTempFile>,
}

/// Normalises a tar entry name: strips `./`, refuses absolute names and `..`.
pub fn normalize_name(raw: &str) -> Result<String> {
    if raw.starts_with('/') {
        bail!("entry name {raw:?} is absolute");
    }
    let mut parts = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => bail!("entry name {raw:?} contains '..'"),
            c => parts.push(c),
        }
    }
    Ok(parts.join("/"))
}

/// The parent of a normalised name (`""` for top-level names).
pub fn parent_of(name: &str) -> &str {
    name.rfind('/').map_or("", |i| &name[..i])
}

fn child_of(dir: &str, base: &str) -> String {
    if dir.is_empty() {
        base.to_string()
    } else {
        format!("{dir}/{base}")
    }
}

/// Pads a layer stream that ends without tar's end-of-archive blocks (some tools write
/// such layers), and remembers how many real bytes there were.
struct TarPad<R> {
    inner: R,
    real: Rc<Cell<u64>>,
    padding_left: Option<u64>,
}

impl<R: Read> Read for TarPad<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(left) = self.padding_left.as_mut() {
            let n = buf.len().min(*left as usize);
            buf[..n].fill(0);
            *left -= n as u64;
            return Ok(n);
        }
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            let real = self.real.get();
            let left = (512 - real % 512) % 512 + 1024;
            self.padding_left = Some(left);
            return self.read(buf);
        }
        self.real.set(self.real.get() + n as u64);
        Ok(n)
    }
}

fn decompressor<'a>(raw: impl Read + 'a, compression: Compression) -> Result<Box<dyn Read + 'a>> {
    let mut buffered = BufReader::with_capacity(COPY_BUFFER, raw);
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
    fn insert_entry(&mut self, name: String, meta: EntryMeta) {
        let mut parent = parent_of(&name).to_string();
        while !parent.is_empty() && !self.entries.contains_key(&parent) {
            let next = parent_of(&parent).to_string();
            self.entries.insert(
                parent,
                EntryMeta {
                    kind: EntryKind::Dir,
                    mode: 0o755,
                    size: 0,
                    link: None,
                    ordinal: meta.ordinal,
                    implicit: true,
                },
            );
            parent = next;
        }
        self.entries.insert(name, meta);
    }
}

/// Reads a layer to its end, verifies it, and indexes it. Regular files whose name
/// `wanted` accepts are spooled into temp files in `spool`.
pub fn scan_layer(
    source: &dyn BlobSource,
    layer: &LayerInfo,
    wanted: &dyn Fn(&str) -> bool,
    spool: &Path,
) -> Result<LayerScan> {
    let what = format!("layer {}", layer.digest);
    let raw = source.open_layer(layer)?;
    let by_diff_id = matches!(layer.verification, Verification::DiffId(_));
    let (raw, raw_state) = HashingReader::maybe(raw, !by_diff_id && !source.verifies_blobs());
    let (plain, plain_state) = HashingReader::maybe(
        decompressor(raw, layer.compression).with_context(|| what.clone())?,
        by_diff_id,
    );
    let real = Rc::new(Cell::new(0));
    let padded = TarPad {
        inner: plain,
        real: real.clone(),
        padding_left: None,
    };
    let mut archive = tar::Archive::new(padded);
    let mut index = LayerIndex::default();
    let mut captures = HashMap::new();
    let mut data_end = 0u64;
    let entries = archive
        .entries()
        .with_context(|| format!("{what}: reading tar"))?;
    for (ordinal, entry) in entries.enumerate() {
        let mut entry = entry.with_context(|| format!("{what}: corrupt tar stream"))?;
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let name = normalize_name(&raw_name).with_context(|| what.clone())?;
        data_end = data_end.max(entry.raw_file_position() + entry.size());
        let base = name.rsplit('/').next().unwrap_or("");
        let parent = parent_of(&name);
        if name
            .split('/')
            .any(|c| c.starts_with(META_PREFIX) && c != OPAQUE_MARKER)
        {
            continue; // .wh..wh.plnk and other AUFS metadata
        }
        if base == OPAQUE_MARKER {
            index.opaque.insert(parent.to_string());
            continue;
        }
        if let Some(hidden) = base.strip_prefix(WHITEOUT_PREFIX) {
            index.whiteouts.insert(child_of(parent, hidden));
            continue;
        }
        if name.is_empty() {
            continue; // the root directory itself
        }
        let header = entry.header();
        let kind = entry_kind(header.entry_type());
        let link = match kind {
            EntryKind::Symlink | EntryKind::Hardlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .ok_or_else(|| anyhow!("{what}: link {raw_name:?} has no target"))?;
                Some(if kind == EntryKind::Hardlink {
                    normalize_name(&target)
                        .with_context(|| format!("{what}: hardlink {raw_name:?}"))?
                } else {
                    target
                })
            }
            _ => None,
        };
        let meta = EntryMeta {
            kind,
            mode: header
                .mode()
                .with_context(|| format!("{what}: {raw_name:?}: bad mode"))?,
            size: entry.size(),
            link,
            ordinal,
            implicit: false,
        };
        if kind == EntryKind::File && wanted(&name) {
            let mut tmp = tempfile::Builder::new()
                .prefix(&capture_prefix(&name))
                .tempfile_in(spool)
                .with_context(|| format!("creating a temp file in {}", spool.display()))?;
            io::copy(&mut entry, tmp.as_file_mut())
                .with_context(|| format!("{what}: reading {raw_name:?}"))?;
            captures.insert(name.clone(), tmp);
        } else {
            captures.remove(&name);
        }
        index.insert_entry(name, meta);
    }
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).with_context(|| format!("{what}: reading to the end"))?;
    drop(rest);
    if data_end > real.get() {
        bail!(
            "{what} is truncated: its last entry ends at byte {data_end}, the stream at {}",
            real.get()
        );
    }
    match &layer.verification {
        Verification::Blob { digest, size } => {
            if raw_state.len() != *size {
                bail!(
                    "{what} is corrupt: {} bytes read, the manifest says {size}",
                    raw_state.len()
                );
            }
            match raw_state.digest() {
                Some(actual) if &actual != digest => {
                    bail!("{what} is corrupt: its content hashes to {actual}")
                }
                Some(_) => {}
                // A self-verifying source checks the digest when its reader reaches the
                // end, and fails that read on a mismatch: the end must have been reached.
                None if raw_state.at_end() => {}
                None => bail!("{what} was not read to its end, so its digest is unchecked"),
            }
        }
        Verification::DiffId(diff_id) => {
            let actual = plain_state
                .digest()
                .expect("the uncompressed stream is hashed for a diff ID");
            if &actual != diff_id {
                bail!("{what} is corrupt: its uncompressed content hashes to {actual}, the config's diff_id is {diff_id}");
            }
        }
    }
    Ok(LayerScan { index, captures })
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

    #[test]
    fn padding_completes_a_short_stream() {
        let real = Rc::new(Cell::new(0));
        let mut pad = TarPad {
            inner: &[1u8; 700][..],
            real: real.clone(),
            padding_left: None,
        };
        let mut out = Vec::new();
        pad.read_to_end(&mut out).unwrap();
        assert_eq!(out.len(), 1024 + 1024);
        assert_eq!(real.get(), 700);
        assert!(out[700..].iter().all(|&b| b == 0));
    }
}
