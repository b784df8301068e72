//! Content digests (`sha256:<64 hex>`), and readers that compute them while streaming.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A sha256 content digest as written in OCI descriptors.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

/// Why a digest string was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    #[error("digest {0:?} has no algorithm prefix (expected sha256:<hex>)")]
    NoAlgorithm(String),
    #[error("digest algorithm {0:?} is not supported (only sha256)")]
    UnsupportedAlgorithm(String),
    #[error("digest {0:?} is not 64 lowercase hex characters after sha256:")]
    BadHex(String),
}

impl Digest {
    /// The digest of a byte slice.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_hasher(Sha256::new_with_prefix(bytes))
    }

    pub(crate) fn from_hasher(hasher: Sha256) -> Self {
        Digest {
            hex: hex::encode(hasher.finalize()),
        }
    }

    /// The 64 hex characters, without the algorithm.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// Relative path of this blob in an OCI image layout.
    pub fn layout_path(&self) -> String {
        format!("blobs/sha256/{}", self.hex)
    }
}

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (algo, hex) = s
            .split_once(':')
            .ok_or_else(|| DigestError::NoAlgorithm(s.to_string()))?;
        if algo != "sha256" {
            return Err(DigestError::UnsupportedAlgorithm(algo.to_string()));
        }
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(DigestError::BadHex(s.to_string()));
        }
        Ok(Digest {
            hex: hex.to_string(),
        })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a [`HashingReader`] has seen so far; shared so that it can be read after the
/// reader has been moved into a decompressor or a tar parser.
#[derive(Clone, Default)]
pub struct HashState(Rc<RefCell<Seen>>);

#[derive(Clone, Default)]
struct Seen {
    /// `None` when the reader only counts.
    hasher: Option<Sha256>,
    len: u64,
    at_end: bool,
}

impl HashState {
    /// Bytes seen so far.
    pub fn len(&self) -> u64 {
        self.0.borrow().len
    }

    /// True once the inner reader has reported its end.
    pub fn at_end(&self) -> bool {
        self.0.borrow().at_end
    }

    /// The digest of everything read so far, when the reader hashes.
    pub fn digest(&self) -> Option<Digest> {
        self.0.borrow().hasher.clone().map(Digest::from_hasher)
    }
}

/// A reader that counts, and optionally hashes, every byte that passes through it, and
/// notes when its inner reader ends.
pub struct HashingReader<R> {
    inner: R,
    state: HashState,
}

impl<R: Read> HashingReader<R> {
    /// A reader that hashes.
    #[cfg(test)]
    pub fn new(inner: R) -> (Self, HashState) {
        Self::maybe(inner, true)
    }

    /// A reader that hashes only when `hash`, so that a chain can skip digests it
    /// does not need; it always counts.
    pub fn maybe(inner: R, hash: bool) -> (Self, HashState) {
        let state = HashState(Rc::new(RefCell::new(Seen {
            hasher: hash.then(Sha256::new),
            ..Seen::default()
        })));
        (
            HashingReader {
                inner,
                state: state.clone(),
            },
            state,
        )
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut seen = self.state.0.borrow_mut();
        if n == 0 && !buf.is_empty() {
            seen.at_end = true;
        }
        if let Some(h) = seen.hasher.as_mut() {
            h.update(&buf[..n]);
        }
        seen.len += n as u64;
        Ok(n)
    }
}

/// Hash a whole reader (used for files already on disk).
pub fn digest_reader(mut r: impl Read) -> io::Result<(Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((Digest::from_hasher(hasher), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let s = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let d: Digest = s.parse().unwrap();
        assert_eq!(d.to_string(), s);
        assert_eq!(d, Digest::of(b""));
    }

    #[test]
    fn refuses_bad_digests() {
        assert!(matches!(
            "sha512:00".parse::<Digest>(),
            Err(DigestError::UnsupportedAlgorithm(_))
        ));
        assert!(matches!(
            "abc".parse::<Digest>(),
            Err(DigestError::NoAlgorithm(_))
        ));
        assert!(matches!(
            "sha256:ABC".parse::<Digest>(),
            Err(DigestError::BadHex(_))
        ));
    }

    #[test]
    fn hashing_reader_matches_digest_of() {
        let data = b"hello layer";
        let (mut r, st) = HashingReader::new(&data[..]);
        io::copy(&mut r, &mut io::sink()).unwrap();
        assert_eq!(st.digest(), Some(Digest::of(data)));
        assert_eq!(st.len(), data.len() as u64);
        assert!(st.at_end());
        let (mut r, st) = HashingReader::maybe(&data[..], false);
        io::copy(&mut (&mut r).take(3), &mut io::sink()).unwrap();
        assert_eq!((st.digest(), st.len(), st.at_end()), (None, 3, false));
    }
}
