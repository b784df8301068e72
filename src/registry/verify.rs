//! A reader that checks a blob's size and digest itself, hashing (and copying into the
//! cache) on a second thread so that decompression on the caller's thread does not
//! wait for it. At the end of the blob it fails unless size and digest match; a
//! fetched blob enters the cache only then.

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use sha2::{Digest as _, Sha256};
use tempfile::NamedTempFile;

use crate::image::Digest;
use crate::registry::cache::Cache;

/// Chunks in flight between the reader and the hashing thread.
const QUEUE: usize = 32;

type Outcome = io::Result<(Digest, Option<NamedTempFile>)>;

/// Where a verified blob goes once it is complete.
pub struct Spool {
    pub file: NamedTempFile,
    pub cache: Cache,
}

pub struct VerifyingReader<R> {
    inner: R,
    digest: Digest,
    size: u64,
    received: u64,
    /// Names the blob in messages.
    what: String,
    sender: Option<SyncSender<Vec<u8>>>,
    worker: Option<JoinHandle<Outcome>>,
    cache: Option<Cache>,
    done: bool,
}

impl<R: Read> VerifyingReader<R> {
    pub fn new(inner: R, digest: &Digest, size: u64, what: String, spool: Option<Spool>) -> Self {
        let (sender, receiver) = sync_channel::<Vec<u8>>(QUEUE);
        let (mut file, cache) = match spool {
            Some(s) => (Some(s.file), Some(s.cache)),
            None => (None, None),
        };
        let worker = std::thread::spawn(move || -> Outcome {
            let mut hasher = Sha256::new();
            for chunk in receiver {
                hasher.update(&chunk);
                if let Some(f) = file.as_mut() {
                    f.write_all(&chunk)?;
                }
            }
            Ok((Digest::from_hasher(hasher), file))
        });
        VerifyingReader {
            inner,
            digest: digest.clone(),
            size,
            received: 0,
            what,
            sender: Some(sender),
            worker: Some(worker),
            cache,
            done: false,
        }
    }

    fn outcome(&mut self) -> Outcome {
        self.sender = None;
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(io::Error::other("the hashing thread panicked")),
            None => Err(io::Error::other("blob already finished")),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        self.done = true;
        let (actual, file) = self.outcome()?;
        if self.received != self.size {
            return Err(corrupt(format!(
                "{} is corrupt: {} bytes read, its descriptor says {}",
                self.what, self.received, self.size
            )));
        }
        if actual != self.digest {
            return Err(corrupt(format!(
                "{} is corrupt: its content hashes to {actual}; nothing was cached",
                self.what
            )));
        }
        if let (Some(file), Some(cache)) = (file, &self.cache) {
            cache
                .commit_blob(file, &self.digest)
                .map_err(|e| io::Error::other(format!("{e:#}")))?;
        }
        Ok(())
    }
}

fn corrupt(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl<R: Read> Read for VerifyingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            self.finish()?;
            return Ok(0);
        }
        self.received += n as u64;
        if self.received > self.size {
            self.done = true;
            let _ = self.outcome();
            return Err(corrupt(format!(
                "{} is longer than its descriptor's {} bytes",
                self.what, self.size
            )));
        }
        let sent = self
            .sender
            .as_ref()
            .is_some_and(|s| s.send(buf[..n].to_vec()).is_ok());
        if !sent {
            // The worker stopped: it has an error to tell.
            self.done = true;
            return Err(match self.outcome() {
                Err(e) => e,
                Ok(_) => io::Error::other("the hashing thread stopped early"),
            });
        }
        Ok(n)
    }
}

impl<R> Drop for VerifyingReader<R> {
    fn drop(&mut self) {
        // Let the worker end and drop its temp file before the process can exit.
        self.sender = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(r: &mut impl Read) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn good_blobs_pass_and_enter_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let data = vec![7u8; 300_000];
        let d = Digest::of(&data);
        let spool = Spool {
            file: cache.temp_blob().unwrap(),
            cache: cache.clone(),
        };
        let mut r = VerifyingReader::new(&data[..], &d, data.len() as u64, "b".into(), Some(spool));
        assert_eq!(read_all(&mut r).unwrap(), data);
        assert!(cache.has_blob(&d));
    }

    #[test]
    fn bad_blobs_fail_at_the_end_and_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let data = b"some blob".to_vec();
        let d = Digest::of(b"another blob");
        let spool = Spool {
            file: cache.temp_blob().unwrap(),
            cache: cache.clone(),
        };
        let mut r = VerifyingReader::new(&data[..], &d, data.len() as u64, "b".into(), Some(spool));
        let e = read_all(&mut r).unwrap_err();
        assert!(e.to_string().contains("is corrupt"), "{e}");
        drop(r);
        assert!(!cache.has_blob(&d));
        assert_eq!(
            std::fs::read_dir(dir.path().join("blobs/sha256"))
                .unwrap()
                .count(),
            0
        );
        let short = VerifyingReader::new(&data[..4], &Digest::of(&data), 9, "b".into(), None);
        assert!(read_all(&mut { short }).is_err());
        let long = VerifyingReader::new(&data[..], &Digest::of(&data), 4, "b".into(), None);
        assert!(read_all(&mut { long }).is_err());
    }
}
