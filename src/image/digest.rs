//! Content digests (`sha256:<64 hex>`).

use std::fmt;
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
        Self::from_output(hasher.finalize())
    }

    /// The digest of a finished sha256.
    pub(crate) fn from_output(sha256: sha2::digest::Output<Sha256>) -> Self {
        Digest {
            hex: hex::encode(sha256),
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
}
