//! The payload: the chosen build, gzip-compressed in fixed members, the same bytes
//! whatever the number of cores. [`Early`] compresses the first pieces of the build
//! `inject` will likely choose while its layer still streams, writing them to the
//! payload file; [`compress`] makes the rest of the payload of the chosen build on
//! every core. The members go to the file in order as they are made: nothing the size
//! of the payload is held in memory.

mod early;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use anyhow::{Context, Result};
use sha2::Sha512;

use crate::io::HashWriter;

pub(crate) use early::Early;

/// Compression level of the payload (libdeflate's scale): fixed, so the same binary
/// gives the same bytes. libdeflate at 6 makes a real 80 MB MCD 0.2% smaller than one
/// `gzip -6` stream, in 4 MiB members, where zlib-rs at 6 made it 2.35% bigger
/// (BENCHMARKS.md, "Payload size").
pub(crate) const GZIP_LEVEL: i32 = 6;

/// The payload is compressed in pieces of this size, each a gzip member of its own, so
/// that the pieces can be compressed in parallel. The output does not depend on the
/// number of threads; `gzip -d` reads the members as one stream. Larger pieces gain
/// almost nothing (0.05% at 8 MiB for a real MCD).
pub(crate) const GZIP_CHUNK: usize = 4 * 1024 * 1024;

/// A compressed payload, spooled to a temp file.
pub(crate) struct Payload {
    pub(crate) file: tempfile::NamedTempFile,
    pub(crate) len: u64,
    pub(crate) sha512: String,
}

/// A payload being written: its file, and the members written so far (the first
/// `pieces` pieces of the build at `capture`, `size` bytes), hashed as they are
/// written.
struct Partial {
    tmp: tempfile::NamedTempFile,
    out: HashWriter<BufWriter<File>, Sha512>,
    pieces: usize,
    capture: std::path::PathBuf,
    size: u64,
}

impl Partial {
    /// An empty payload file in `spool`, for the build at `capture`.
    fn new(spool: &Path, capture: &Path, size: u64) -> Result<Partial> {
        let tmp = tempfile::Builder::new()
            .prefix(".payload-")
            .tempfile_in(spool)
            .with_context(|| format!("creating a temp file in {}", spool.display()))?;
        let file = tmp
            .as_file()
            .try_clone()
            .context("opening the payload file")?;
        Ok(Partial {
            tmp,
            out: HashWriter::new(BufWriter::with_capacity(crate::io::WIDE_BUF, file)),
            pieces: 0,
            capture: capture.to_path_buf(),
            size,
        })
    }

    /// Appends the next member.
    fn push(&mut self, member: &[u8]) -> std::io::Result<()> {
        self.out.write_all(member)?;
        self.pieces += 1;
        Ok(())
    }
}

/// Compresses gzip members, reusing its compressor and output buffer from one piece to
/// the next (a thread's own).
struct MemberMaker {
    compressor: libdeflater::Compressor,
    out: Vec<u8>,
}

impl MemberMaker {
    fn new() -> Self {
        let level = libdeflater::CompressionLvl::new(GZIP_LEVEL).expect("a valid libdeflate level");
        MemberMaker {
            compressor: libdeflater::Compressor::new(level),
            out: Vec::new(),
        }
    }

    /// One gzip member, exactly as long as it is: libdeflate's header has no name,
    /// mtime 0, OS 255 (unknown).
    fn member(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let bound = self.compressor.gzip_compress_bound(data.len());
        if self.out.len() < bound {
            self.out.resize(bound, 0);
        }
        let n = self
            .compressor
            .gzip_compress(data, &mut self.out)
            .map_err(|e| std::io::Error::other(format!("libdeflate: {e:?}")))?;
        Ok(self.out[..n].to_vec())
    }

    /// Reads piece `index` of `file` (`size` bytes in all) into `buf` and compresses it.
    fn piece(
        &mut self,
        file: &std::fs::File,
        size: u64,
        index: usize,
        buf: &mut [u8],
    ) -> std::io::Result<Vec<u8>> {
        let (at, len) = piece_range(size, index);
        let data = &mut buf[..len];
        file.read_exact_at(data, at)?;
        self.member(data)
    }
}

/// The cores this process may use.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How many pieces a file of `size` bytes has (an empty file has one, empty, member).
fn pieces(size: u64) -> usize {
    size.div_ceil(GZIP_CHUNK as u64).max(1) as usize
}

/// Where piece `index` of a file of `size` bytes starts, and its length.
fn piece_range(size: u64, index: usize) -> (u64, usize) {
    let at = index as u64 * GZIP_CHUNK as u64;
    (
        at,
        (size.saturating_sub(at)).min(GZIP_CHUNK as u64) as usize,
    )
}

/// Compresses the file at `path`, `size` bytes, into a payload in `spool`: each piece of
/// [`GZIP_CHUNK`] bytes a gzip member. The members `start` holds (the first pieces of
/// this build, made early) are kept; the others are compressed on `threads` scoped
/// threads, each taking the next piece left, and written in order as they are ready,
/// the payload's sha512 taken as it is written.
fn compress(
    path: &Path,
    size: u64,
    spool: &Path,
    threads: usize,
    start: Option<Partial>,
) -> Result<Payload> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut partial = match start {
        Some(p) => p,
        None => Partial::new(spool, path, size)?,
    };
    let todo: Vec<usize> = (partial.pieces..pieces(size)).collect();
    let next = AtomicUsize::new(0);
    let ready: Mutex<BTreeMap<usize, std::io::Result<Vec<u8>>>> = Mutex::new(BTreeMap::new());
    let changed = Condvar::new();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads.clamp(1, todo.len().max(1)) {
            scope.spawn(|| {
                let mut maker = MemberMaker::new();
                let mut buf = vec![0; GZIP_CHUNK.min(size as usize)];
                while let Some(&index) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                    // A piece taken always gets a result, or the writer would wait for
                    // it for ever.
                    let member = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        maker.piece(&file, size, index, &mut buf)
                    }))
                    .unwrap_or_else(|_| {
                        Err(std::io::Error::other("a compression thread panicked"))
                    });
                    let mut r = ready.lock().unwrap_or_else(PoisonError::into_inner);
                    r.insert(index, member);
                    changed.notify_all();
                }
            });
        }
        let mut write = || -> Result<()> {
            for &index in &todo {
                let mut r = ready.lock().unwrap_or_else(PoisonError::into_inner);
                let member = loop {
                    match r.remove(&index) {
                        Some(m) => break m,
                        None => r = changed.wait(r).unwrap_or_else(PoisonError::into_inner),
                    }
                };
                drop(r);
                let member = member.with_context(|| format!("compressing {}", path.display()))?;
                partial.push(&member).context("writing the payload")?;
            }
            Ok(())
        };
        let written = write();
        if written.is_err() {
            // The threads stop after their piece: none is left to take.
            next.store(usize::MAX / 2, Ordering::Relaxed);
        }
        written
    })?;
    partial.out.flush().context("writing the payload")?;
    let len = partial.out.len;
    Ok(Payload {
        file: partial.tmp,
        len,
        sha512: partial.out.hex(),
    })
}

/// [`compress`] from the start, for a build nothing was compressed of early.
pub(crate) fn compress_whole(
    path: &Path,
    size: u64,
    spool: &Path,
    threads: usize,
) -> Result<Payload> {
    compress(path, size, spool, threads, None)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// Bytes that compress like a binary: runs of text and noise.
    fn sample(len: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_u32;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if (i / 4096) % 3 == 0 {
                    b"machine-config-daemon "[i % 22]
                } else {
                    x as u8
                }
            })
            .collect()
    }

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(gz)
            .read_to_end(&mut out)
            .expect("the payload decompresses");
        out
    }

    #[test]
    fn members_are_the_same_bytes_on_any_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let data = sample(2 * GZIP_CHUNK + 12_345);
        let path = dir.path().join("build");
        std::fs::write(&path, &data).unwrap();
        let one = compress_whole(&path, data.len() as u64, dir.path(), 1).unwrap();
        let bytes = std::fs::read(one.file.path()).unwrap();
        assert_eq!(gunzip(&bytes), data);
        assert_eq!(one.len, bytes.len() as u64);
        use sha2::Digest as _;
        assert_eq!(one.sha512, hex::encode(Sha512::digest(&bytes)));
        // Three members, each a gzip stream of its own piece.
        assert!(bytes.windows(3).filter(|w| w == &[0x1f, 0x8b, 8]).count() >= 3);
        for threads in [2, 3, 8] {
            let p = compress_whole(&path, data.len() as u64, dir.path(), threads).unwrap();
            assert_eq!(
                std::fs::read(p.file.path()).unwrap(),
                bytes,
                "{threads} threads"
            );
        }
        // A payload begun with its first member is finished with the others.
        let mut maker = MemberMaker::new();
        let mut begun = Partial::new(dir.path(), &path, data.len() as u64).unwrap();
        begun
            .push(&maker.member(&data[..GZIP_CHUNK]).unwrap())
            .unwrap();
        let p = compress(&path, data.len() as u64, dir.path(), 2, Some(begun)).unwrap();
        assert_eq!(std::fs::read(p.file.path()).unwrap(), bytes);
        assert_eq!(p.sha512, one.sha512);
    }

    #[test]
    fn an_empty_build_is_one_empty_member() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        std::fs::write(&path, b"").unwrap();
        let p = compress_whole(&path, 0, dir.path(), 2).unwrap();
        let bytes = std::fs::read(p.file.path()).unwrap();
        assert!(!bytes.is_empty());
        assert!(gunzip(&bytes).is_empty());
    }

    #[test]
    fn a_file_shorter_than_said_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        std::fs::write(&path, sample(1000)).unwrap();
        let err = compress_whole(&path, GZIP_CHUNK as u64 + 5, dir.path(), 2)
            .err()
            .expect("a short file fails");
        assert!(format!("{err:#}").contains("compressing"), "{err:#}");
    }
}
