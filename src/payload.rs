//! The payload: the chosen build, gzip-compressed in fixed pieces (byte-reproducible
//! whatever the number of cores), compressed as far as possible while the image is
//! still read.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use sha2::Sha512;

/// Compression level of the payload (libdeflate's scale): fixed, so the same binary
/// gives the same bytes. libdeflate at 6 makes a real 80 MB MCD 0.2% smaller than one
/// `gzip -6` stream, in 4 MiB members, where zlib-rs at 6 made it 2.35% bigger
/// (BENCHMARKS.md, "Payload size").
const GZIP_LEVEL: i32 = 6;

/// A compressed payload, spooled to a temp file.
pub(crate) struct Payload {
    pub(crate) file: tempfile::NamedTempFile,
    pub(crate) len: u64,
    pub(crate) sha512: String,
}

/// Writes through to `inner` and hashes what passes (sha512 for the payload, the spec
/// 2.x hash; sha256 for the config as written).
pub(crate) struct HashWriter<W, H> {
    pub(crate) inner: W,
    pub(crate) hasher: H,
    pub(crate) len: u64,
}

impl<W: Write, H: sha2::Digest> HashWriter<W, H> {
    pub(crate) fn new(inner: W) -> Self {
        HashWriter {
            inner,
            hasher: H::new(),
            len: 0,
        }
    }

    /// The hex digest of what was written.
    pub(crate) fn hex(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

impl<W: Write, H: sha2::Digest> Write for HashWriter<W, H> {
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
pub(crate) const GZIP_CHUNK: usize = 4 * 1024 * 1024;

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

pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// [`gzip_file`] with `threads` pieces compressed at a time, the first `done.len()`
/// pieces being already compressed (`done`, from [`Follower`]).
pub(crate) fn gzip_file_on(
    path: &std::path::Path,
    spool: &std::path::Path,
    threads: usize,
    done: Vec<Vec<u8>>,
) -> Result<Payload> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let file = tempfile::NamedTempFile::new_in(spool).context("creating the payload file")?;
    let mut sink: HashWriter<_, Sha512> = HashWriter::new(std::io::BufWriter::new(file.reopen()?));
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
    let len = sink.len;
    Ok(Payload {
        file,
        len,
        sha512: sink.hex(),
    })
}

/// Compresses the likely build while the image is still read, on a thread of its own:
/// the [`GZIP_CHUNK`] pieces that are already spooled, one after another, as
/// [`gzip_file`] would. It follows the capture of a name given at the start as it grows
/// (the build most likely chosen, while its layer streams), or, when told with
/// [`Follower::prefer`] before that name turns up, a build already read whole (the one
/// the choice is likely to settle on while lower layers are read). The result is used
/// only if the file followed turns out to be the chosen binary, verified with its layer;
/// the rest is then compressed by [`gzip_file_on`]. The output is the same bytes either
/// way.
pub(crate) struct Follower {
    shared: std::sync::Arc<Shared>,
    job: Option<std::thread::JoinHandle<Option<Followed>>>,
}

/// What the caller tells a [`Follower`].
#[derive(Default)]
struct Shared {
    stop: std::sync::atomic::AtomicBool,
    /// A complete file to follow (with its size) if none is followed yet.
    prefer: std::sync::Mutex<Option<(PathBuf, u64)>>,
}

/// The file followed and the members compressed from it so far.
type Followed = (PathBuf, Vec<Vec<u8>>);

/// The file a [`Follower`] compresses: its size once known to be complete.
struct Followed1 {
    path: PathBuf,
    file: std::fs::File,
    complete: Option<u64>,
}

impl Follower {
    /// Follows the capture of `name` (normalised, no leading `/`) in `spool`.
    pub(crate) fn start(spool: &std::path::Path, name: &str) -> Follower {
        let shared = std::sync::Arc::new(Shared::default());
        let (state, dir) = (shared.clone(), spool.to_path_buf());
        let prefix = crate::image::layer::capture_prefix(name);
        let job = std::thread::spawn(move || follow(&state, &dir, &prefix));
        Follower {
            shared,
            job: Some(job),
        }
    }

    /// Follows `path`, a complete file of `size` bytes, unless the capture named at the
    /// start has turned up already.
    pub(crate) fn prefer(&self, path: &std::path::Path, size: u64) {
        *self.shared.prefer.lock().expect("follower state") = Some((path.to_path_buf(), size));
    }

    /// Stops following; the pieces compressed so far if `path` is the file followed.
    pub(crate) fn finish(mut self, path: &std::path::Path) -> Vec<Vec<u8>> {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Release);
        match self.job.take().map(|j| j.join()) {
            Some(Ok(Some((p, done)))) if p == path => done,
            _ => Vec::new(),
        }
    }
}

/// The follower's thread: see [`Follower`].
fn follow(state: &Shared, dir: &std::path::Path, prefix: &str) -> Option<Followed> {
    use std::sync::atomic::Ordering;
    let pause = std::time::Duration::from_millis(3);
    let mut cur: Option<Followed1> = None;
    let mut done = Vec::new();
    let mut buf = vec![0; GZIP_CHUNK];
    loop {
        // Once stopped, the rest is compressed on all cores instead.
        if state.stop.load(Ordering::Acquire) {
            return cur.map(|c| (c.path, done));
        }
        if cur.is_none() {
            let found = std::fs::read_dir(dir).ok()?.find_map(|e| {
                let e = e.ok()?;
                e.file_name()
                    .to_str()?
                    .starts_with(prefix)
                    .then(|| e.path())
            });
            let (path, complete) = match found {
                Some(p) => (p, None),
                None => match state.prefer.lock().ok()?.take() {
                    Some((p, size)) => (p, Some(size)),
                    None => {
                        std::thread::sleep(pause);
                        continue;
                    }
                },
            };
            let file = std::fs::File::open(&path).ok()?;
            cur = Some(Followed1 {
                path,
                file,
                complete,
            });
        }
        let c = cur.as_mut().expect("set above");
        let at = (done.len() * GZIP_CHUNK) as u64;
        let ready = match c.complete {
            // A complete file: every piece, the last one possibly short.
            Some(size) => at < size,
            // A growing one: whole pieces only.
            None => c.file.metadata().ok()?.len() >= at + GZIP_CHUNK as u64,
        };
        if ready {
            let n = read_full(&mut c.file, &mut buf).ok()?;
            done.push(gzip_member(&buf[..n]).ok()?);
        } else {
            std::thread::sleep(pause);
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(j) = self.job.take() {
            let _ = j.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;

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
        // A complete file preferred before the name turns up: every piece, the last
        // one short, and the same bytes.
        let f = Follower::start(spool.path(), "usr/bin/y");
        f.prefer(&p, big.len() as u64);
        // Time enough for three pieces even on a busy machine.
        std::thread::sleep(std::time::Duration::from_millis(3000));
        let done = f.finish(&p);
        assert_eq!(done.len(), 3, "pieces of the preferred file");
        let followed = gzip_file_on(&p, dir.path(), 2, done).unwrap();
        assert!(std::fs::read(followed.file.path()).unwrap() == gz);
        // A capture of the name, once it turns up, wins over a file preferred later.
        let f = Follower::start(spool.path(), "usr/bin/x");
        std::thread::sleep(std::time::Duration::from_millis(300));
        f.prefer(&p, big.len() as u64);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(f.finish(&p).is_empty());
        std::fs::write(&p, b"").unwrap();
        let gz = std::fs::read(gzip_file(&p, dir.path()).unwrap().file.path()).unwrap();
        assert!(gz.starts_with(&[0x1f, 0x8b]));
    }
}
