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

    fn from_hasher(hasher: Sha256) -> Self {
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
pub struct HashState(Rc<RefCell<(Sha256, u64)>>);

impl HashState {
    /// Bytes seen so far.
    pub fn len(&self) -> u64 {
        self.0.borrow().1
    }

    /// True when nothing has been read yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digest of everything read so far.
    pub fn digest(&self) -> Digest {
        Digest::from_hasher(self.0.borrow().0.clone())
    }
}

/// A reader that hashes every byte that passes through it.
pub struct HashingReader<R> {
    inner: R,
    state: HashState,
    enabled: bool,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> (Self, HashState) {
        let state = HashState::default();
        (
            HashingReader {
                inner,
                state: state.clone(),
                enabled: true,
            },
            state,
        )
    }
}

impl<R: Read> HashingReader<R> {
    /// A reader that hashes only when `enabled`, so that a chain can skip digests it
    /// does not need.
    pub fn maybe(inner: R, enabled: bool) -> (Self, Option<HashState>) {
        let (r, st) = Self::new(inner);
        let r = HashingReader { enabled, ..r };
        (r, enabled.then_some(st))
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.enabled {
            return Ok(n);
        }
        let mut st = self.state.0.borrow_mut();
        st.0.update(&buf[..n]);
        st.1 += n as u64;
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
        assert_eq!(st.digest(), Digest::of(data));
        assert_eq!(st.len(), data.len() as u64);
    }
}
