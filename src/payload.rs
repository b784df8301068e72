//! The payload: the chosen build, gzip-compressed in fixed pieces (byte-reproducible
//! whatever the number of cores), compressed as far as possible while the image is
//! still read.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use sha2::Sha512;

/// Compression level of the payload (libdeflate's scale): fixed, so the same binary
/// gives the same bytes. libdeflate at 6 makes a real 80 MB MCD 0.2% smaller than one
/// `gzip -6` stream, in 4 MiB members, where zlib-rs at 6 made it 2.35% bigger
/// (BENCHMARKS.md, "Payload size").
pub(crate) const GZIP_LEVEL: i32 = 6;

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

/// Compresses gzip members, reusing its compressor and output buffer from one piece to
/// the next (a thread's own: freeing 4 MiB buffers piece after piece would leave the
/// allocator holding more memory than the pieces in flight need).
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
}

pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Compresses a file with fixed gzip header fields (no name, mtime 0, fixed level) into
/// a temp file in `spool`, hashing the compressed bytes on the way. Pieces of
/// [`GZIP_CHUNK`] bytes are compressed on `threads` threads, each taking the next piece
/// when it is free; the members are written in order. What [`Follower::compress`] gives
/// whatever it compressed before.
#[cfg(test)]
fn gzip_file(path: &std::path::Path, spool: &std::path::Path, threads: usize) -> Result<Payload> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    Shared::new(None).compress(path, size, spool, threads.max(1))
}

/// Works beside the image read of `inject`, on a thread of its own, while the other
/// core reads the layer:
///
/// - it compresses the likely build, the [`GZIP_CHUNK`] pieces that are already spooled,
///   one after another: the capture of a name given at the start as it grows (the
///   build most likely chosen, while its layer streams), or, when told with
///   [`Follower::prefer`] before that name turns up, a build already read whole (the one
///   the choice is likely to settle on while lower layers are read);
/// - when no piece is ready, it takes the sha256 of every capture spooled so far, as far
///   as it is written ([`Follower::digest`] finishes it);
/// - before any piece, it compresses the samples a splice tells ([`Follower::sample_sink`];
///   `crate::splice`) as soon as their capture holds them, and while those favour the
///   splice it compresses no piece of that build early.
///
/// The chosen build's payload is then made of its layer's blocks, or
/// [`Follower::compress`] compresses the chosen build on every core, this thread
/// among them, keeping the pieces already compressed if it is the file followed. The
/// output is the same bytes either way, and the same as [`gzip_file`]'s.
pub(crate) struct Follower {
    shared: Arc<Shared>,
    job: Option<std::thread::JoinHandle<()>>,
}

/// The state the threads of a compression share.
struct Shared {
    state: Mutex<State>,
    /// Signalled when a piece is done or the state changes.
    changed: Condvar,
    /// Where captures are spooled, and the capture prefix of the name followed (a
    /// [`Follower`] only).
    follow: Option<(PathBuf, String)>,
}

#[derive(Default)]
struct State {
    /// Every thread leaves.
    stop: bool,
    /// A complete file to follow (with its size) if none is followed yet.
    prefer: Option<(PathBuf, u64)>,
    /// The file compressed, and its size once it is complete.
    target: Option<Arc<Target>>,
    complete: Option<u64>,
    /// The members are being collected: a thread with no piece left leaves.
    collecting: bool,
    /// Changes with the target, so that a piece of the one before is dropped.
    generation: u64,
    /// The next piece to take.
    next: usize,
    /// The members compressed, by piece.
    done: std::collections::BTreeMap<usize, std::io::Result<Vec<u8>>>,
    /// The sha256 of each capture so far.
    hashing: std::collections::HashMap<PathBuf, Arc<Mutex<Hashing>>>,
    /// The captures whose sha256 the caller finished.
    finished: std::collections::HashSet<PathBuf>,
    /// When the spool was last listed for new captures.
    listed: Option<std::time::Instant>,
    /// Ranges of captures to compress alone, for their length (a splice's samples).
    samples: Vec<SampleJob>,
}

struct SampleJob {
    path: PathBuf,
    range: (u64, u64),
    /// Its compressed bytes in the layer.
    theirs: u64,
    taken: bool,
    len: Option<u64>,
}

/// Whether the layer's blocks of `path` may well be its payload: the samples compressed
/// so far say so. Then compressing its pieces early is likely wasted, and the follower
/// leaves the cores to the layer read. (Only the work is scheduled by this; the bytes
/// are decided by all the samples.)
fn splice_likely(st: &State, path: &std::path::Path) -> bool {
    let (mut theirs, mut ours, mut any) = (0, 0, false);
    for j in st.samples.iter().filter(|j| j.path == path) {
        any = true;
        if let Some(len) = j.len {
            theirs += j.theirs;
            ours += len;
        }
    }
    any && crate::splice::good_enough(theirs, ours)
}

struct Target {
    path: PathBuf,
    file: std::fs::File,
}

/// The sha256 of a file's first `at` bytes; `taken` once the caller finishes it.
struct Hashing {
    file: std::fs::File,
    hasher: sha2::Sha256,
    at: u64,
    taken: bool,
}

impl Hashing {
    /// Hashes the next bytes of the file as far as they are written, up to the size of
    /// `buf`.
    fn advance(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt as _;
        let n = self.file.read_at(buf, self.at)?;
        sha2::Digest::update(&mut self.hasher, &buf[..n]);
        self.at += n as u64;
        Ok(n)
    }
}

/// Begins the sha256 of a capture, unless it is begun already.
fn track(st: &mut State, path: PathBuf) {
    if st.hashing.contains_key(&path)
        || st.finished.contains(&path)
        || st.hashing.len() >= MAX_TRACKED
    {
        return;
    }
    if let Ok(file) = std::fs::File::open(&path) {
        let h = Hashing {
            file,
            hasher: sha2::Digest::new(),
            at: 0,
            taken: false,
        };
        st.hashing.insert(path, Arc::new(Mutex::new(h)));
    }
}

/// At most this many captures are hashed at once (each holds a file open); the others
/// are hashed when the choice asks for them.
const MAX_TRACKED: usize = 64;

/// Forgets the captures removed (replaced by a later entry of the same name, or their
/// layer's scan failed), closing their files.
fn prune(st: &mut State) {
    use std::os::unix::fs::MetadataExt as _;
    st.hashing.retain(|_, h| {
        h.try_lock()
            .map_or(true, |g| g.file.metadata().is_ok_and(|m| m.nlink() > 0))
    });
}

/// What a thread does next.
enum Step {
    Leave,
    Piece {
        target: Arc<Target>,
        generation: u64,
        index: usize,
        len: usize,
    },
    Hash(Arc<Mutex<Hashing>>),
    Sample(usize, PathBuf, (u64, u64)),
    Wait,
}

/// The length of `data` compressed alone at the payload's level, without the member's
/// gzip header and trailer.
fn sample_len(maker: &mut MemberMaker, data: &[u8]) -> std::io::Result<u64> {
    // libdeflate's gzip header (10 bytes) and trailer (8).
    const FRAMING: u64 = 18;
    Ok(maker.member(data)?.len() as u64 - FRAMING)
}

fn read_range(path: &std::path::Path, range: (u64, u64), buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize((range.1 - range.0) as usize, 0);
    std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::open(path)?, buf, range.0)
}

/// How long an idle follower waits before it looks at the spool again.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(3);

/// The pieces of a file of `size` bytes (an empty file still gets one, empty, member).
fn pieces(size: u64) -> usize {
    (size.div_ceil(GZIP_CHUNK as u64) as usize).max(1)
}

impl Shared {
    fn new(follow: Option<(PathBuf, String)>) -> Shared {
        Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            follow,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic of a compression thread is a bug; its state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Compresses `path`, complete at `size` bytes, on `helpers` threads of its own
    /// besides a follower's, and writes the payload. Pieces of `path` done before are
    /// kept, those of another file forgotten.
    fn compress(
        &self,
        path: &std::path::Path,
        size: u64,
        spool: &std::path::Path,
        helpers: usize,
    ) -> Result<Payload> {
        self.aim(path, size)?;
        std::thread::scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|| self.work(false));
            }
            self.collect(path, size, spool)
        })
    }

    /// Collects `path` from now on, complete at `size` bytes.
    fn aim(&self, path: &std::path::Path, size: u64) -> Result<()> {
        let mut st = self.lock();
        if st.target.as_ref().is_none_or(|t| t.path != path) {
            let file =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            st.target = Some(Arc::new(Target {
                path: path.to_path_buf(),
                file,
            }));
            st.generation += 1;
            st.next = 0;
            st.done.clear();
        }
        st.complete = Some(size);
        st.collecting = true;
        self.changed.notify_all();
        Ok(())
    }

    /// A compression thread: takes pieces until none is left. The follower (`follows`)
    /// also finds its file, hashes captures when idle, and waits for more.
    fn work(&self, follows: bool) {
        let mut buf = vec![0; GZIP_CHUNK];
        let mut maker = MemberMaker::new();
        loop {
            match self.next_step(follows) {
                Step::Leave => return,
                Step::Piece {
                    target,
                    generation,
                    index,
                    len,
                } => {
                    let at = (index * GZIP_CHUNK) as u64;
                    let member = std::os::unix::fs::FileExt::read_exact_at(
                        &target.file,
                        &mut buf[..len],
                        at,
                    )
                    .and_then(|()| {
                        self.hash_piece(&target.path, at, &buf[..len]);
                        // A piece taken always gets a result, or the collector would
                        // wait for it for ever.
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            maker.member(&buf[..len])
                        }))
                        .unwrap_or_else(|_| {
                            Err(std::io::Error::other("a compression thread panicked"))
                        })
                    });
                    let mut st = self.lock();
                    if st.generation == generation {
                        st.done.insert(index, member);
                        self.changed.notify_all();
                    }
                }
                Step::Sample(i, path, range) => {
                    let mut data = Vec::new();
                    let len = read_range(&path, range, &mut data)
                        .and_then(|()| sample_len(&mut maker, &data))
                        .ok();
                    self.lock().samples[i].len = len;
                }
                Step::Hash(h) => {
                    let mut h = h.lock().unwrap_or_else(PoisonError::into_inner);
                    if !h.taken {
                        // A read error leaves the rest to the caller's hashing.
                        let _ = h.advance(&mut buf[..1 << 20]);
                    }
                }
                Step::Wait => {
                    let st = self.lock();
                    if !st.stop {
                        let _ = self.changed.wait_timeout(st, PAUSE);
                    }
                }
            }
        }
    }

    fn next_step(&self, follows: bool) -> Step {
        let mut st = self.lock();
        if st.stop {
            return Step::Leave;
        }
        if follows {
            self.look(&mut st);
            // A splice's samples first: the choice needs them at once.
            let ready = st.samples.iter().position(|j| {
                !j.taken && std::fs::metadata(&j.path).is_ok_and(|m| m.len() >= j.range.1)
            });
            if let Some(i) = ready {
                let j = &mut st.samples[i];
                j.taken = true;
                return Step::Sample(i, j.path.clone(), j.range);
            }
        }
        let early = st.complete.is_none() || !st.collecting;
        if let Some(target) = st
            .target
            .clone()
            .filter(|t| !(follows && early && splice_likely(&st, &t.path)))
        {
            let at = (st.next * GZIP_CHUNK) as u64;
            let len = match st.complete {
                Some(size) if st.next < pieces(size) => Some((size - at).min(GZIP_CHUNK as u64)),
                // Every piece is taken: the rest is the collector's.
                Some(_) if st.collecting => return Step::Leave,
                Some(_) => None,
                // A growing file: whole pieces only.
                None => target
                    .file
                    .metadata()
                    .is_ok_and(|m| m.len() >= at + GZIP_CHUNK as u64)
                    .then_some(GZIP_CHUNK as u64),
            };
            if let Some(len) = len {
                let index = st.next;
                st.next += 1;
                return Step::Piece {
                    generation: st.generation,
                    target,
                    index,
                    len: len as usize,
                };
            }
        }
        if follows {
            if let Some(h) = Self::capture_to_hash(&st) {
                return Step::Hash(h);
            }
        }
        Step::Wait
    }

    /// The follower's look at the spool, once per pause: forgets the captures removed,
    /// begins the sha256 of new ones and, while it follows no file yet, follows the
    /// capture of its name, else the file preferred.
    fn look(&self, st: &mut State) {
        let Some((dir, prefix)) = &self.follow else {
            return;
        };
        if st.listed.is_some_and(|t| t.elapsed() < PAUSE) {
            return;
        }
        st.listed = Some(std::time::Instant::now());
        prune(st);
        let mut named = None;
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if name.starts_with(crate::image::layer::CAPTURE_MARK) {
                track(st, e.path());
            }
            if named.is_none() && name.starts_with(prefix.as_str()) {
                named = Some(e.path());
            }
        }
        if st.target.is_some() {
            return;
        }
        let (path, complete) = match named {
            Some(p) => (p, None),
            None => match st.prefer.take() {
                Some((p, size)) => (p, Some(size)),
                None => return,
            },
        };
        if let Ok(file) = std::fs::File::open(&path) {
            st.target = Some(Arc::new(Target { path, file }));
            st.complete = complete;
            st.generation += 1;
        }
    }

    /// A capture of the spool with bytes not hashed yet, if any, other than the file
    /// compressed.
    fn capture_to_hash(st: &State) -> Option<Arc<Mutex<Hashing>>> {
        // The file compressed is hashed piece by piece as it is compressed.
        let target = st.target.as_ref().map(|t| t.path.as_path());
        st.hashing.iter().find_map(|(path, h)| {
            if Some(path.as_path()) == target {
                return None;
            }
            let g = h.try_lock().ok()?;
            let more = !g.taken && g.file.metadata().is_ok_and(|m| m.len() > g.at);
            drop(g);
            more.then(|| h.clone())
        })
    }

    /// Hashes a piece of the file compressed when it is the next bytes of its capture.
    fn hash_piece(&self, path: &std::path::Path, at: u64, piece: &[u8]) {
        let Some(h) = self.lock().hashing.get(path).cloned() else {
            return;
        };
        let mut h = h.lock().unwrap_or_else(PoisonError::into_inner);
        if !h.taken && h.at == at {
            sha2::Digest::update(&mut h.hasher, piece);
            h.at += piece.len() as u64;
        }
    }

    /// Writes the members of `path` (`size` bytes, the target) in order as they are
    /// done, into a temp file in `spool`, with their sha512.
    fn collect(
        &self,
        path: &std::path::Path,
        size: u64,
        spool: &std::path::Path,
    ) -> Result<Payload> {
        let result = self.collect_members(size, spool);
        // On error, the other threads leave.
        self.lock().stop = true;
        self.changed.notify_all();
        result.with_context(|| format!("compressing {}", path.display()))
    }

    fn collect_members(&self, size: u64, spool: &std::path::Path) -> Result<Payload> {
        let file = tempfile::NamedTempFile::new_in(spool).context("creating the payload file")?;
        let mut sink: HashWriter<_, Sha512> = HashWriter::new(std::io::BufWriter::with_capacity(
            crate::io::WIDE_BUF,
            file.reopen()?,
        ));
        for index in 0..pieces(size) {
            let member = {
                let mut st = self.lock();
                loop {
                    if let Some(m) = st.done.remove(&index) {
                        break m;
                    }
                    st = self
                        .changed
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            sink.write_all(&member?).context("writing the payload")?;
        }
        sink.flush().context("writing the payload")?;
        let len = sink.len;
        Ok(Payload {
            file,
            len,
            sha512: sink.hex(),
        })
    }
}

impl Follower {
    /// Follows the capture of `name` (normalised, no leading `/`) in `spool`.
    pub(crate) fn start(spool: &std::path::Path, name: &str) -> Follower {
        let prefix = crate::image::layer::capture_prefix(name);
        let shared = Arc::new(Shared::new(Some((spool.to_path_buf(), prefix))));
        let state = shared.clone();
        let job = std::thread::spawn(move || state.work(true));
        Follower {
            shared,
            job: Some(job),
        }
    }

    /// Follows `path`, a complete file of `size` bytes, unless the capture named at the
    /// start has turned up already.
    pub(crate) fn prefer(&self, path: &std::path::Path, size: u64) {
        self.shared.lock().prefer = Some((path.to_path_buf(), size));
    }

    /// The sha256 of a spooled capture, whole: what the follower hashed of it so far,
    /// and the rest.
    pub(crate) fn digest(&self, path: &std::path::Path) -> std::io::Result<crate::image::Digest> {
        // Finished here, and never hashed by the follower again.
        let h = {
            let mut st = self.shared.lock();
            st.finished.insert(path.to_path_buf());
            st.hashing.remove(path)
        };
        let Some(h) = h else {
            return crate::image::digest::digest_file(path);
        };
        let mut h = h.lock().unwrap_or_else(PoisonError::into_inner);
        h.taken = true;
        let mut buf = vec![0; crate::io::WIDE_BUF];
        while h.advance(&mut buf)? > 0 {}
        let hasher = std::mem::take(&mut h.hasher);
        Ok(crate::image::Digest::from_hasher(hasher))
    }

    /// Compresses `path` (`size` bytes, complete) on `threads` threads, this one's
    /// among them, keeping what it compressed if it followed that file. Also returns
    /// how many pieces were compressed before.
    pub(crate) fn compress(
        mut self,
        path: &std::path::Path,
        size: u64,
        spool: &std::path::Path,
        threads: usize,
    ) -> Result<(Payload, usize)> {
        let early = {
            let st = self.shared.lock();
            let same = st.target.as_ref().is_some_and(|t| t.path == path);
            if same {
                st.done.len()
            } else {
                0
            }
        };
        let payload = self
            .shared
            .compress(path, size, spool, threads.max(1) - 1)?;
        if let Some(j) = self.job.take() {
            let _ = j.join();
        }
        Ok((payload, early))
    }
}

impl Follower {
    /// Where a splice tells its samples: the follower compresses each (alone, at the
    /// payload's level) as soon as its capture holds it, before any piece.
    pub(crate) fn sample_sink(&self) -> crate::image::blocks::SampleSink {
        let shared = self.shared.clone();
        Box::new(move |path, range, theirs| {
            shared.lock().samples.push(SampleJob {
                path: path.to_path_buf(),
                range,
                theirs,
                taken: false,
                len: None,
            });
            shared.changed.notify_all();
        })
    }

    /// The compressed length of these ranges of `path` (each alone, at the payload's
    /// level), in total: what the follower compressed of them, and the rest now.
    pub(crate) fn sampled_len(&self, path: &std::path::Path, ranges: &[(u64, u64)]) -> Result<u64> {
        let (mut maker, mut data, mut total) = (MemberMaker::new(), Vec::new(), 0);
        for &range in ranges {
            let done = self
                .shared
                .lock()
                .samples
                .iter()
                .find(|j| j.path == path && j.range == range)
                .and_then(|j| j.len);
            total += match done {
                Some(n) => n,
                None => {
                    read_range(path, range, &mut data)
                        .with_context(|| format!("reading {}", path.display()))?;
                    sample_len(&mut maker, &data)?
                }
            };
        }
        Ok(total)
    }

    /// Stops following without waiting for the piece in hand: the payload is made
    /// otherwise.
    pub(crate) fn abandon(mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        drop(self.job.take());
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(j) = self.job.take() {
            let _ = j.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest as _;
    use std::io::Read as _;

    fn bytes(p: &Payload) -> Vec<u8> {
        std::fs::read(p.file.path()).unwrap()
    }

    /// Writes `data` as a capture of `name` in `spool` grows: in thirds of a piece.
    fn capture(spool: &std::path::Path, name: &str, data: &[u8]) -> tempfile::NamedTempFile {
        let mut cap = tempfile::Builder::new()
            .prefix(&crate::image::layer::capture_prefix(name))
            .tempfile_in(spool)
            .unwrap();
        for piece in data.chunks(GZIP_CHUNK / 3) {
            cap.write_all(piece).unwrap();
            cap.flush().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        cap
    }

    fn big() -> Vec<u8> {
        (0..GZIP_CHUNK * 2 + 5)
            .map(|i| (i * 7 % 251) as u8)
            .collect()
    }

    #[test]
    fn gzip_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b");
        std::fs::write(&p, b"same bytes, same gzip").unwrap();
        let gz = gzip_file(&p, dir.path(), 2).unwrap();
        let a = bytes(&gz);
        assert_eq!(a, bytes(&gzip_file(&p, dir.path(), 2).unwrap()));
        assert_eq!(gz.len, a.len() as u64);
        assert_eq!(gz.sha512, hex::encode(Sha512::digest(&a)));
        // No name, mtime 0.
        assert_eq!(&a[3..8], &[0, 0, 0, 0, 0]);
        // Pieces become members; they decompress to the whole input.
        let big = big();
        std::fs::write(&p, &big).unwrap();
        let gz = bytes(&gzip_file(&p, dir.path(), 1).unwrap());
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == big);
        assert!(gz.len() > 3 * 18, "three members");
        // The same bytes whatever the number of cores.
        for threads in [2, 3, 8] {
            let other = gzip_file(&p, dir.path(), threads).unwrap();
            assert!(bytes(&other) == gz, "{threads} threads");
        }
        // An empty file is one empty member.
        std::fs::write(&p, b"").unwrap();
        let gz = bytes(&gzip_file(&p, dir.path(), 2).unwrap());
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(gz.starts_with(&[0x1f, 0x8b]) && back.is_empty());
    }

    #[test]
    fn a_follower_gives_the_same_bytes_whatever_it_did_before() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b");
        let big = big();
        std::fs::write(&p, &big).unwrap();
        let gz = bytes(&gzip_file(&p, dir.path(), 2).unwrap());

        // A follower that saw the capture grow compressed its whole pieces before.
        let spool = tempfile::tempdir().unwrap();
        let f = Follower::start(spool.path(), "usr/bin/x");
        let cap = capture(spool.path(), "usr/bin/x", &big);
        // Time enough for two pieces even on a busy machine.
        std::thread::sleep(std::time::Duration::from_millis(2000));
        let (followed, early) = f
            .compress(cap.path(), big.len() as u64, dir.path(), 2)
            .unwrap();
        assert_eq!(early, 2, "whole pieces of the growing capture");
        assert!(bytes(&followed) == gz);

        // Another file than the one followed: nothing is kept, same bytes.
        let f = Follower::start(spool.path(), "usr/bin/x");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (other, early) = f.compress(&p, big.len() as u64, dir.path(), 1).unwrap();
        assert_eq!(early, 0);
        assert!(bytes(&other) == gz);

        // A complete file preferred before the name turns up: every piece, the last
        // one short, and the same bytes.
        let f = Follower::start(spool.path(), "usr/bin/y");
        f.prefer(&p, big.len() as u64);
        // Time enough for three pieces even on a busy machine.
        std::thread::sleep(std::time::Duration::from_millis(3000));
        let (preferred, early) = f.compress(&p, big.len() as u64, dir.path(), 2).unwrap();
        assert_eq!(early, 3, "pieces of the preferred file");
        assert!(bytes(&preferred) == gz);

        // A capture of the name, once it turns up, wins over a file preferred later.
        let f = Follower::start(spool.path(), "usr/bin/x");
        std::thread::sleep(std::time::Duration::from_millis(300));
        f.prefer(&p, big.len() as u64);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (_, early) = f.compress(&p, big.len() as u64, dir.path(), 2).unwrap();
        assert_eq!(early, 0);
    }

    #[test]
    fn a_follower_hashes_the_captures_as_they_grow() {
        let spool = tempfile::tempdir().unwrap();
        let big = big();
        let f = Follower::start(spool.path(), "usr/bin/x");
        // Followed and compressed, or only hashed: the same digest as a whole read.
        let followed = capture(spool.path(), "usr/bin/x", &big);
        let other = capture(spool.path(), "usr/bin/other", &big[5..]);
        std::thread::sleep(std::time::Duration::from_millis(500));
        for (cap, data) in [(&followed, &big[..]), (&other, &big[5..])] {
            let d = f.digest(cap.path()).unwrap();
            assert_eq!(d.hex(), hex::encode(sha2::Sha256::digest(data)));
        }
        // Asked again: the same digest.
        let d = f.digest(other.path()).unwrap();
        assert_eq!(d.hex(), hex::encode(sha2::Sha256::digest(&big[5..])));
        // More captures than are followed at once: each digest is still whole.
        let many: Vec<_> = (0..MAX_TRACKED + 6)
            .map(|i| {
                let mut cap = tempfile::Builder::new()
                    .prefix(&crate::image::layer::capture_prefix(&format!(
                        "usr/bin/m{i}"
                    )))
                    .tempfile_in(spool.path())
                    .unwrap();
                cap.write_all(format!("capture {i}").as_bytes()).unwrap();
                cap
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(100));
        for (i, cap) in many.iter().enumerate() {
            let want = hex::encode(sha2::Sha256::digest(format!("capture {i}").as_bytes()));
            assert_eq!(f.digest(cap.path()).unwrap().hex(), want, "capture {i}");
        }
        // A capture that turns up late, and a file that is no capture.
        let late = capture(spool.path(), "usr/bin/late", b"late");
        let plain = spool.path().join("plain");
        std::fs::write(&plain, b"plain").unwrap();
        assert_eq!(
            f.digest(late.path()).unwrap().hex(),
            hex::encode(sha2::Sha256::digest(b"late"))
        );
        assert_eq!(
            f.digest(&plain).unwrap().hex(),
            hex::encode(sha2::Sha256::digest(b"plain"))
        );
        // The followed capture's pieces are still kept.
        let dir = tempfile::tempdir().unwrap();
        let (_, early) = f
            .compress(followed.path(), big.len() as u64, dir.path(), 2)
            .unwrap();
        assert!(early >= 1, "{early} pieces");
    }
}
