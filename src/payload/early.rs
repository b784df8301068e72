//! Compressing the likely build while its layer streams. The layer is read on one core;
//! the build `inject` will most likely choose (named before the read) is compressed on
//! another, piece by piece as its spool file grows. The tap the layer reader calls
//! (`image::layer::Tap`) says how far the file is written: no polling, no guessing of
//! file names.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::Result;

use super::{compress, piece_range, pieces, MemberMaker, Partial, Payload, GZIP_CHUNK};
use crate::image::layer::Tap;

/// Compresses the pieces of one build (by its name in the image) as they are spooled,
/// in order, into a payload file of its own, on a thread of its own; [`Early::finish`]
/// makes the payload of the chosen build, going on from those pieces when it is that
/// build.
pub(crate) struct Early {
    name: String,
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<Option<Partial>>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// The spool file followed and how far it is written.
#[derive(Default)]
struct State {
    file: Option<PathBuf>,
    /// Bumped when another capture of the name is followed.
    generation: u64,
    written: u64,
    size: u64,
    /// The next piece to compress.
    next: usize,
    stop: bool,
}

/// A piece to compress: of which capture, and which.
struct Job {
    file: PathBuf,
    generation: u64,
    size: u64,
    index: usize,
}

impl State {
    /// Whether the next piece of the file followed is all written.
    fn next_written(&self) -> bool {
        let (at, len) = piece_range(self.size, self.next);
        self.file.is_some() && self.next < pieces(self.size) && self.written >= at + len as u64
    }

    /// The next piece, when its bytes are all written.
    fn ready(&self) -> Option<Job> {
        self.next_written().then(|| Job {
            file: self.file.clone().expect("a file is followed"),
            generation: self.generation,
            size: self.size,
            index: self.next,
        })
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next piece to compress, once written; `None` once stopped.
    fn take(&self) -> Option<Job> {
        let mut st = self.lock();
        loop {
            if st.stop {
                return None;
            }
            if let Some(job) = st.ready() {
                st.next += 1;
                return Some(job);
            }
            st = self
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The worker: compresses each piece when it is written and appends it to the
    /// payload of its capture, until stopped; gives that payload, as far as it got.
    /// A failure gives up the capture (its pieces are then all compressed at the end).
    fn work(&self, spool: &Path) -> Option<Partial> {
        let mut maker = MemberMaker::new();
        let mut buf = vec![0; GZIP_CHUNK];
        let mut current: Option<(u64, std::fs::File, Partial)> = None;
        let mut failed = None;
        while let Some(job) = self.take() {
            if failed == Some(job.generation) {
                continue;
            }
            if current.as_ref().is_none_or(|c| c.0 != job.generation) {
                // Pieces are taken in order: a new capture starts at piece 0.
                current = std::fs::File::open(&job.file)
                    .ok()
                    .zip(Partial::new(spool, &job.file, job.size).ok())
                    .map(|(f, p)| (job.generation, f, p));
            }
            let done = current.as_mut().is_some_and(|(_, file, partial)| {
                partial.pieces == job.index
                    && maker
                        .piece(file, job.size, job.index, &mut buf)
                        .and_then(|m| partial.push(&m))
                        .is_ok()
            });
            if !done {
                failed = Some(job.generation);
                current = None;
            }
        }
        current.map(|(_, _, partial)| partial)
    }
}

impl Early {
    /// Begins following the build named `name` (normalised, as in the image's tar);
    /// its payload file is made in `spool`.
    pub(crate) fn start(name: &str, spool: &Path) -> Early {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let worker = {
            let shared = Arc::clone(&shared);
            let spool = spool.to_path_buf();
            std::thread::spawn(move || shared.work(&spool))
        };
        Early {
            name: name.to_string(),
            shared,
            worker: Some(worker),
        }
    }

    /// Stops the worker after its piece; what it made.
    fn stop(&mut self) -> Option<Partial> {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        self.worker.take().and_then(|w| w.join().ok().flatten())
    }

    /// The payload of the build spooled at `path` (`size` bytes), on `threads` threads,
    /// going on from the pieces compressed early when it is the capture followed.
    pub(crate) fn finish(
        mut self,
        path: &Path,
        size: u64,
        spool: &Path,
        threads: usize,
    ) -> Result<Payload> {
        let begun = self.stop().filter(|p| p.capture == path && p.size == size);
        log::info!(
            "payload: {} of {} pieces compressed while the image was read",
            begun.as_ref().map_or(0, |p| p.pieces),
            pieces(size)
        );
        compress(path, size, spool, threads, begun)
    }
}

impl Tap for Early {
    fn spooled(&self, name: &str, file: &Path, written: u64, size: u64) {
        if name != self.name {
            return;
        }
        let mut st = self.shared.lock();
        if st.file.as_deref() != Some(file) {
            // Another capture of that name (a lower layer, or a second read): start over.
            log::debug!("payload: {name} streams in; its pieces are compressed as it is spooled");
            st.file = Some(file.to_path_buf());
            st.generation += 1;
            st.next = 0;
        }
        st.written = written;
        st.size = size;
        if st.next_written() {
            self.shared.changed.notify_one();
        }
    }
}

impl Drop for Early {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::time::{Duration, Instant};

    use super::super::compress_whole;
    use super::*;

    const TWIN: &str = "usr/bin/machine-config-daemon.rhel8";

    /// Writes `data` to `path` as a layer read would, telling `early` after each write.
    fn spool(early: &Early, path: &Path, data: &[u8]) {
        let mut f = std::fs::File::create(path).unwrap();
        for chunk in data.chunks(1 << 20) {
            f.write_all(chunk).unwrap();
            let written = f.metadata().unwrap().len();
            early.spooled(TWIN, path, written, data.len() as u64);
            // Another name is not followed.
            early.spooled("usr/bin/machine-config-daemon", path, 0, data.len() as u64);
        }
    }

    /// Waits until the worker has taken every piece of the file followed (it takes a
    /// piece when it is done with the one before).
    fn wait_all_taken(early: &Early, size: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut st = early.shared.lock();
        while st.next < pieces(size) {
            assert!(Instant::now() < deadline, "the worker never caught up");
            st = early
                .shared
                .changed
                .wait_timeout(st, Duration::from_millis(20))
                .unwrap()
                .0;
        }
    }

    #[test]
    fn pieces_compressed_early_give_the_same_payload() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..2 * GZIP_CHUNK + 777).map(|i| (i % 251) as u8).collect();
        let size = data.len() as u64;
        let path = dir.path().join("build");
        let mut early = Early::start(TWIN, dir.path());
        spool(&early, &path, &data);
        wait_all_taken(&early, size);
        let begun = early.stop().expect("the pieces compressed early");
        assert_eq!(begun.pieces, pieces(size));
        let from_early = compress(&path, size, dir.path(), 2, Some(begun)).unwrap();
        let whole = compress_whole(&path, size, dir.path(), 1).unwrap();
        assert_eq!(
            std::fs::read(from_early.file.path()).unwrap(),
            std::fs::read(whole.file.path()).unwrap()
        );
        assert_eq!(from_early.sha512, whole.sha512);
    }

    #[test]
    fn a_second_capture_of_the_name_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let first: Vec<u8> = vec![7; GZIP_CHUNK + 10];
        let second: Vec<u8> = (0..GZIP_CHUNK + 10).map(|i| (i % 13) as u8).collect();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let early = Early::start(TWIN, dir.path());
        spool(&early, &a, &first);
        spool(&early, &b, &second);
        wait_all_taken(&early, second.len() as u64);
        let p = early
            .finish(&b, second.len() as u64, dir.path(), 2)
            .unwrap();
        let want = compress_whole(&b, second.len() as u64, dir.path(), 1).unwrap();
        assert_eq!(p.sha512, want.sha512);
    }

    #[test]
    fn another_build_chosen_is_compressed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let followed = dir.path().join("twin");
        let chosen = dir.path().join("plain");
        std::fs::write(&chosen, vec![2u8; GZIP_CHUNK + 1]).unwrap();
        let early = Early::start(TWIN, dir.path());
        spool(&early, &followed, &[1u8; GZIP_CHUNK + 1]);
        let size = GZIP_CHUNK as u64 + 1;
        let p = early.finish(&chosen, size, dir.path(), 2).unwrap();
        let want = compress_whole(&chosen, size, dir.path(), 1).unwrap();
        assert_eq!(p.sha512, want.sha512);
    }
}
