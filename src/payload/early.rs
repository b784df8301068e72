//! Compressing the likely build while its layer streams. The layer is read on one core;
//! the build `inject` will most likely choose (named before the read) is compressed on
//! another, piece by piece as its spool file grows. The tap the layer reader calls
//! (`image::layer::Tap`) says how far the file is written: no polling, no guessing of
//! file names.

use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::Result;

use super::{compress, piece_range, pieces, MemberMaker, Members, Payload, GZIP_CHUNK};
use crate::image::layer::Tap;

/// Compresses the pieces of one build (by its name in the image) as they are spooled,
/// on a thread of its own; [`Early::finish`] makes the payload of the chosen build,
/// with those pieces when it is that build.
pub(crate) struct Early {
    name: String,
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// The spool file followed and what of it is compressed.
#[derive(Default)]
struct State {
    file: Option<PathBuf>,
    written: u64,
    size: u64,
    /// The next piece to compress.
    next: usize,
    done: Members,
    stop: bool,
}

impl State {
    /// The next piece, when its bytes are all written.
    fn ready(&self) -> Option<(PathBuf, u64, usize)> {
        let file = self.file.as_ref()?;
        let (at, len) = piece_range(self.size, self.next);
        (self.next < pieces(self.size) && self.written >= at + len as u64)
            .then(|| (file.clone(), self.size, self.next))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The worker: compresses each piece when it is written, until stopped.
    fn work(&self) {
        let mut maker = MemberMaker::new();
        let mut buf = vec![0; GZIP_CHUNK];
        let mut open: Option<(PathBuf, std::fs::File)> = None;
        loop {
            let (path, size, index) = {
                let mut st = self.lock();
                loop {
                    if st.stop {
                        return;
                    }
                    if let Some(job) = st.ready() {
                        st.next += 1;
                        break job;
                    }
                    st = self
                        .changed
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            if open.as_ref().is_none_or(|(p, _)| *p != path) {
                open = std::fs::File::open(&path).ok().map(|f| (path.clone(), f));
            }
            // A piece that cannot be read here is compressed again at the end.
            let Some((_, file)) = &open else { continue };
            let (at, len) = piece_range(size, index);
            let member = file
                .read_exact_at(&mut buf[..len], at)
                .and_then(|()| maker.member(&buf[..len]));
            let mut st = self.lock();
            if let (Ok(m), Some(true)) = (member, st.file.as_ref().map(|f| *f == path)) {
                st.done.insert(index, m);
                self.changed.notify_all();
            }
        }
    }
}

impl Early {
    /// Begins following the build named `name` (normalised, as in the image's tar).
    pub(crate) fn start(name: &str) -> Early {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || shared.work())
        };
        Early {
            name: name.to_string(),
            shared,
            worker: Some(worker),
        }
    }

    fn stop(&mut self) -> Members {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        std::mem::take(&mut self.shared.lock().done)
    }

    /// The payload of the build spooled at `path` (`size` bytes), on `threads` threads;
    /// the pieces compressed early are kept when it is the file followed.
    pub(crate) fn finish(
        mut self,
        path: &Path,
        size: u64,
        spool: &Path,
        threads: usize,
    ) -> Result<Payload> {
        let done = self.stop();
        let followed = {
            let st = self.shared.lock();
            st.file.as_deref() == Some(path) && st.size == size
        };
        let done = if followed { done } else { Members::new() };
        log::info!(
            "payload: {} of {} pieces compressed while the image was read",
            done.len(),
            pieces(size)
        );
        compress(path, size, spool, threads, done)
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
            st.file = Some(file.to_path_buf());
            st.next = 0;
            st.done.clear();
        }
        st.written = written;
        st.size = size;
        if st.ready().is_some() {
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

    use super::*;

    #[test]
    fn pieces_compressed_early_give_the_same_payload() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..2 * GZIP_CHUNK + 777).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("build");
        let early = Early::start("usr/bin/machine-config-daemon.rhel8");
        let mut f = std::fs::File::create(&path).unwrap();
        let size = data.len() as u64;
        for chunk in data.chunks(1 << 20) {
            f.write_all(chunk).unwrap();
            let written = f.metadata().unwrap().len();
            early.spooled("usr/bin/machine-config-daemon.rhel8", &path, written, size);
            // Another name is not followed.
            early.spooled("usr/bin/machine-config-daemon", &path, 0, size);
        }
        // Wait until the worker has taken every piece (a condition, not a pause).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let st = early.shared.lock();
            if st.done.len() == pieces(size) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the worker never caught up"
            );
            drop(
                early
                    .shared
                    .changed
                    .wait_timeout(st, std::time::Duration::from_millis(50))
                    .unwrap(),
            );
        }
        let early_payload = early.finish(&path, size, dir.path(), 2).unwrap();
        let plain = compress(&path, size, dir.path(), 1, Members::new()).unwrap();
        assert_eq!(
            std::fs::read(early_payload.file.path()).unwrap(),
            std::fs::read(plain.file.path()).unwrap()
        );
        assert_eq!(early_payload.sha512, plain.sha512);
    }

    #[test]
    fn another_build_chosen_is_compressed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let followed = dir.path().join("twin");
        let chosen = dir.path().join("plain");
        std::fs::write(&followed, vec![1u8; GZIP_CHUNK + 1]).unwrap();
        std::fs::write(&chosen, vec![2u8; GZIP_CHUNK + 1]).unwrap();
        let early = Early::start("twin");
        let size = GZIP_CHUNK as u64 + 1;
        early.spooled("twin", &followed, size, size);
        let p = early.finish(&chosen, size, dir.path(), 2).unwrap();
        let want = compress(&chosen, size, dir.path(), 1, Members::new()).unwrap();
        assert_eq!(p.sha512, want.sha512);
    }
}
