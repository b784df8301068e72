//! Public keys sigstore signatures and Rekor SETs are verified with, read as sigstore's
//! `cryptoutils.UnmarshalPEMToPublicKey` reads them: PEM `PUBLIC KEY` (PKIX) or `RSA
//! PUBLIC KEY` (PKCS #1); ECDSA P-224, P-256, P-384 and P-521 (the curves Go's
//! crypto/ecdsa has), Ed25519 and RSA.

use anyhow::{anyhow, bail, Result};
use spki::der::{asn1::BitString, Encode as _};

use super::pem;

/// A public key a sigstore signature can be verified with.
#[derive(Clone)]
pub(crate) enum PublicKey {
    P224(ecdsa17::VerifyingKey<p224::NistP224>),
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
    P521(p521::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
    Rsa(rsa::RsaPublicKey),
}

const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";
const OID_P224: &str = "1.3.132.0.33";
const OID_P521: &str = "1.3.132.0.35";
const OID_ED25519: &str = "1.3.101.112";
const OID_RSA: &str = "1.2.840.113549.1.1.1";
/// The DER DigestInfo prefix of a SHA-256 hash (RFC 8017, 9.2).
const SHA256_DIGEST_INFO: &[u8] = &[
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

/// The first PEM block of `text`, as `cryptoutils.UnmarshalPEMToPublicKey` takes it
/// (Go's `pem.Decode`): its type and bytes.
fn first_pem_block(text: &[u8]) -> Result<(String, Vec<u8>)> {
    let (b, _) = pem::decode(text).ok_or_else(|| anyhow!("PEM decoding failed"))?;
    Ok((b.kind, b.bytes))
}

/// A PKCS #1 RSA public key, of 1024 to 16384 bits (Go's crypto/rsa refuses smaller
/// ones; the rsa crate's default limit, 4096, would refuse keys Go takes).
fn rsa_key(der: &[u8]) -> Result<rsa::RsaPublicKey> {
    use rsa::pkcs1::der::Decode as _;
    use rsa::traits::PublicKeyParts as _;
    let k = rsa::pkcs1::RsaPublicKey::from_der(der)
        .map_err(|e| anyhow!("not a PKCS #1 RSA public key: {e}"))?;
    let n = rsa::BigUint::from_bytes_be(k.modulus.as_bytes());
    let e = rsa::BigUint::from_bytes_be(k.public_exponent.as_bytes());
    let key = rsa::RsaPublicKey::new_with_max_size(n, e, 16384)
        .map_err(|e| anyhow!("not a valid RSA key: {e}"))?;
    if key.n().bits() < 1024 {
        bail!(
            "an RSA key of {} bits is refused (less than 1024)",
            key.n().bits()
        );
    }
    Ok(key)
}

impl PublicKey {
    /// A PKCS #1 RSA key (a certificate's `subjectPublicKey`), as Go reads one.
    pub(crate) fn rsa_from_pkcs1(der: &[u8]) -> Result<PublicKey> {
        rsa_key(der).map(PublicKey::Rsa)
    }

    /// A key as `cryptoutils.UnmarshalPEMToPublicKey` reads it.
    pub(crate) fn from_pem(pem: &[u8]) -> Result<PublicKey> {
        let (kind, der) = first_pem_block(pem)?;
        match kind.as_str() {
            "PUBLIC KEY" => Self::from_spki(&der),
            "RSA PUBLIC KEY" => rsa_key(&der).map(PublicKey::Rsa),
            other => bail!(
                "unknown public key PEM type {} (expected PUBLIC KEY)",
                pem_label_shown(other)
            ),
        }
    }

    /// A PKIX (SubjectPublicKeyInfo) DER key, as Go's `x509.ParsePKIXPublicKey` reads
    /// the keys sigstore verifies with.
    pub(crate) fn from_spki(der: &[u8]) -> Result<PublicKey> {
        let info = spki::SubjectPublicKeyInfoRef::try_from(der)
            .map_err(|e| anyhow!("not a PKIX public key: {e}"))?;
        let bits = info
            .subject_public_key
            .as_bytes()
            .ok_or_else(|| anyhow!("not a PKIX public key: unused bits in the key"))?;
        let alg = info.algorithm.oid.to_string();
        match alg.as_str() {
            OID_EC => {
                let curve = info
                    .algorithm
                    .parameters_oid()
                    .map_err(|e| anyhow!("an ECDSA key without a named curve: {e}"))?
                    .to_string();
                match curve.as_str() {
                    OID_P256 => p256::ecdsa::VerifyingKey::from_sec1_bytes(bits)
                        .map(PublicKey::P256)
                        .map_err(|_| anyhow!("not a valid ECDSA P-256 point")),
                    OID_P384 => p384::ecdsa::VerifyingKey::from_sec1_bytes(bits)
                        .map(PublicKey::P384)
                        .map_err(|_| anyhow!("not a valid ECDSA P-384 point")),
                    OID_P224 => ecdsa17::VerifyingKey::<p224::NistP224>::from_sec1_bytes(bits)
                        .map(PublicKey::P224)
                        .map_err(|_| anyhow!("not a valid ECDSA P-224 point")),
                    OID_P521 => p521::ecdsa::VerifyingKey::from_sec1_bytes(bits)
                        .map(PublicKey::P521)
                        .map_err(|_| anyhow!("not a valid ECDSA P-521 point")),
                    other => bail!("ECDSA curve {other} is not supported (P-224, P-256, P-384 and P-521 are)"),
                }
            }
            OID_ED25519 => {
                let b: [u8; 32] = bits
                    .try_into()
                    .map_err(|_| anyhow!("an Ed25519 key is 32 bytes"))?;
                ed25519_dalek::VerifyingKey::from_bytes(&b)
                    .map(PublicKey::Ed25519)
                    .map_err(|_| anyhow!("not a valid Ed25519 key"))
            }
            OID_RSA => rsa_key(bits).map(PublicKey::Rsa),
            other => bail!("public key algorithm {other} is not supported (ECDSA P-224/P-256/P-384/P-521, Ed25519, RSA are)"),
        }
    }

    /// The kind of key, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            PublicKey::P224(_) => "ECDSA P-224",
            PublicKey::P256(_) => "ECDSA P-256",
            PublicKey::P384(_) => "ECDSA P-384",
            PublicKey::P521(_) => "ECDSA P-521",
            PublicKey::Ed25519(_) => "Ed25519",
            PublicKey::Rsa(_) => "RSA",
        }
    }

    /// Whether `sig` is this key's signature of `payload`, as sigstore's verifier for
    /// the key with SHA-256 decides: ECDSA (ASN.1 DER) of SHA-256(payload), Ed25519 of the
    /// payload itself, RSA PKCS #1 v1.5 of SHA-256(payload).
    pub(crate) fn verifies(&self, payload: &[u8], sig: &[u8]) -> bool {
        use sha2::Digest as _;
        let hash = sha2::Sha256::digest(payload);
        match self {
            PublicKey::P224(_) | PublicKey::P256(_) | PublicKey::P384(_) | PublicKey::P521(_) => {
                self.verifies_ecdsa_hash(&hash, sig)
            }
            // Go's ed25519.Verify: cofactorless, S canonical; small-order keys are not
            // refused (so not verify_strict).
            PublicKey::Ed25519(k) => {
                use ed25519_dalek::Verifier as _;
                ed25519_dalek::Signature::from_slice(sig)
                    .is_ok_and(|s| k.verify(payload, &s).is_ok())
            }
            PublicKey::Rsa(k) => {
                let scheme = rsa::Pkcs1v15Sign {
                    hash_len: Some(32),
                    prefix: SHA256_DIGEST_INFO.into(),
                };
                k.verify(scheme, &hash, sig).is_ok()
            }
        }
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.kind())
    }
}

/// A PEM label as it is when it is a usual one; another is not quoted (a key file may
/// hold anything).
fn pem_label_shown(label: &str) -> String {
    const USUAL: &[&str] = &[
        "CERTIFICATE",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "EC PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PARAMETERS",
        "OPENSSH PRIVATE KEY",
        "PGP PUBLIC KEY BLOCK",
        "PGP PRIVATE KEY BLOCK",
        "SIGSTORE PRIVATE KEY",
        "ENCRYPTED SIGSTORE PRIVATE KEY",
        "ENCRYPTED COSIGN PRIVATE KEY",
    ];
    if USUAL.contains(&label) {
        format!("{label:?}")
    } else {
        "(a label not shown)".to_string()
    }
}

impl PublicKey {
    /// The key as Go's `x509.MarshalPKIXPublicKey` writes it (what
    /// `cryptoutils.MarshalPublicKeyToPEM` wraps in a `PUBLIC KEY` block): ECDSA points
    /// uncompressed with their named curve, RSA as PKCS #1 with NULL parameters.
    pub(crate) fn pkix_der(&self) -> Vec<u8> {
        use spki::der::asn1::{Any, ObjectIdentifier};
        let oid = ObjectIdentifier::new_unwrap;
        let curve = |c: &str| Some(Any::encode_from(&oid(c)).expect("an OID encodes"));
        let (alg, parameters, key) = match self {
            PublicKey::P224(k) => (
                OID_EC,
                curve(OID_P224),
                k.to_sec1_point(false).as_bytes().to_vec(),
            ),
            PublicKey::P256(k) => (
                OID_EC,
                curve(OID_P256),
                k.to_encoded_point(false).as_bytes().to_vec(),
            ),
            PublicKey::P521(k) => (
                OID_EC,
                curve(OID_P521),
                k.to_encoded_point(false).as_bytes().to_vec(),
            ),
            PublicKey::P384(k) => (
                OID_EC,
                curve(OID_P384),
                k.to_encoded_point(false).as_bytes().to_vec(),
            ),
            PublicKey::Ed25519(k) => (OID_ED25519, None, k.as_bytes().to_vec()),
            PublicKey::Rsa(k) => {
                use rsa::pkcs1::EncodeRsaPublicKey as _;
                let der = k.to_pkcs1_der().expect("an RSA key encodes");
                (OID_RSA, Some(Any::null()), der.as_bytes().to_vec())
            }
        };
        spki::SubjectPublicKeyInfoOwned {
            algorithm: spki::AlgorithmIdentifierOwned {
                oid: oid(alg),
                parameters,
            },
            subject_public_key: BitString::from_bytes(&key).expect("a key fits a BIT STRING"),
        }
        .to_der()
        .expect("a SubjectPublicKeyInfo encodes")
    }

    /// Whether `sig` (ASN.1 DER) is this ECDSA key's signature of the hash `hash`, as
    /// Go's `ecdsa.VerifyASN1` decides (signatures, Rekor SETs); always false for other
    /// keys. Go takes the hash as an integer of at most the order's bits (its leftmost
    /// ones); a hash shorter than half a P-521 scalar, which the ecdsa crate refuses, is
    /// the same integer with leading zero bytes.
    pub(crate) fn verifies_ecdsa_hash(&self, hash: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        match self {
            PublicKey::P224(k) => {
                use ecdsa17::signature::hazmat::PrehashVerifier as _;
                ecdsa17::der::Signature::<p224::NistP224>::try_from(sig)
                    .ok()
                    .and_then(|s| ecdsa17::Signature::<p224::NistP224>::try_from(s).ok())
                    .is_some_and(|s| k.verify_prehash(hash, &s).is_ok())
            }
            PublicKey::P256(k) => p256::ecdsa::Signature::from_der(sig)
                .is_ok_and(|s| k.verify_prehash(hash, &s).is_ok()),
            PublicKey::P384(k) => p384::ecdsa::Signature::from_der(sig)
                .is_ok_and(|s| k.verify_prehash(hash, &s).is_ok()),
            PublicKey::P521(k) => {
                const SCALAR: usize = 66;
                let mut padded = [0u8; SCALAR];
                let hash = if hash.len() < SCALAR {
                    padded[SCALAR - hash.len()..].copy_from_slice(hash);
                    &padded[..]
                } else {
                    hash
                };
                p521::ecdsa::Signature::from_der(sig)
                    .is_ok_and(|s| k.verify_prehash(hash, &s).is_ok())
            }
            _ => false,
        }
    }

    /// Whether this is an ECDSA key (the only kind a Rekor key may be).
    pub(crate) fn is_ecdsa(&self) -> bool {
        matches!(
            self,
            PublicKey::P224(_) | PublicKey::P256(_) | PublicKey::P384(_) | PublicKey::P521(_)
        )
    }
}
