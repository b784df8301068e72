//! The `sigstoreSigned` requirement of containers-policy.json(5): cosign signatures
//! made with a public key, as containers/image reads and checks them.
//!
//! - The requirement is parsed as containers/image's `prSigstoreSigned.UnmarshalJSON`
//!   does: unknown and duplicate keys are errors, exactly one of `keyPath`, `keyPaths`,
//!   `keyData`, `keyDatas`, `fulcio`, `pki`, at most one Rekor key source, Rekor keys
//!   required with `fulcio` and refused with `pki`. A valid requirement this module cannot
//!   check (`fulcio`, `pki`, or keys with `rekorPublicKey*`) is then refused by name,
//!   when the policy is loaded.
//! - Public keys are PEM (`PUBLIC KEY`, or `RSA PUBLIC KEY`), as sigstore's
//!   `cryptoutils.UnmarshalPEMToPublicKey` reads them: ECDSA P-256 (what `cosign
//!   generate-key-pair` makes) and P-384, Ed25519 and RSA (PKCS #1 v1.5), each over
//!   SHA-256 as sigstore's `LoadVerifier(key, crypto.SHA256)` verifies. ECDSA P-224 and
//!   P-521 keys are refused by name.
//! - Signatures come from the image's sigstore attachments (the OCI manifest at tag
//!   `sha256-HEX.sig` in the repository of the endpoint that served the image, when
//!   registries.d says `use-sigstore-attachments: true` for it), and from the lookaside
//!   store in containers/image's own format for them (read by [`super::registries_d`]). Only
//!   layers of media type [`SIGNATURE_MEDIA_TYPE`] are signatures; each carries its
//!   base64 signature in the [`SIGNATURE_ANNOTATION`] annotation, over the layer's bytes,
//!   the payload.
//! - A payload is accepted as `signature/internal.VerifySigstorePayload` accepts it:
//!   signed by one of the keys, exactly `critical` and `optional`, `critical.type`
//!   "cosign container image signature", `critical.image.docker-manifest-digest` the
//!   image's manifest digest, and `critical.identity.docker-reference` accepted by the
//!   policy's `signedIdentity` (both decided by the caller, [`super::policy`]).
//!
//! Bounds: an attachment manifest with more than [`MAX_ATTACHMENT_LAYERS`] layers is
//! refused; a signature (layer) bigger than [`MAX_SIGNATURE_BYTES`] is refused before
//! it is fetched; signature layers are fetched one at a time and no more once one is
//! accepted.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use super::strict_json::{self, Object};
use crate::image::Digest;

/// The media type of a cosign signature layer (cosign's `SimpleSigningMediaType`).
pub(crate) const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature of the layer's bytes.
pub(crate) const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type an attachment manifest must be served with.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// At most this many layers in an attachment manifest.
pub(crate) const MAX_ATTACHMENT_LAYERS: usize = 64;
/// At most this many bytes per signature (containers/image's `MaxSignatureBodySize`).
pub(crate) const MAX_SIGNATURE_BYTES: u64 = 4 * 1024 * 1024;
/// The `critical.type` of a sigstore payload.
const SIGNATURE_TYPE: &str = "cosign container image signature";

// ------------------------------------------------------------------ the requirement

/// A `sigstoreSigned` requirement, `I` being the policy's `signedIdentity` type: its
/// public keys, and what mcd-inject does not verify when the requirement asks for it.
#[derive(Clone, Debug)]
pub(crate) struct SigstoreSigned<I> {
    keys: KeySource,
    unsupported: Option<&'static str>,
    signed_identity: I,
}

/// Where the public keys are (`keyPath`, `keyPaths`, `keyData`, `keyDatas`).
#[derive(Clone, Debug)]
enum KeySource {
    None,
    Path(String),
    Paths(Vec<String>),
    Data(Vec<u8>),
    Datas(Vec<Vec<u8>>),
}

const KEYS: &[&str] = &[
    "type",
    "keyPath",
    "keyPaths",
    "keyData",
    "keyDatas",
    "fulcio",
    "rekorPublicKeyPath",
    "rekorPublicKeyPaths",
    "rekorPublicKeyData",
    "rekorPublicKeyDatas",
    "pki",
    "signedIdentity",
];

/// A `[]byte` as Go's encoding/json reads it: standard base64, line breaks ignored;
/// `null` is none.
fn bytes(o: &Object, key: &str) -> Result<Option<Vec<u8>>> {
    match o.parse::<Option<String>>(key)?.flatten() {
        None => Ok(None),
        Some(s) => base64::engine::general_purpose::STANDARD
            .decode(s.replace(['\r', '\n'], ""))
            .map(Some)
            .map_err(|_| anyhow!("{key} is not base64")),
    }
}

/// A list of `[]byte`; a `null` item is an empty value.
fn bytes_list(o: &Object, key: &str) -> Result<Option<Vec<Vec<u8>>>> {
    let Some(list) = o.parse::<Option<Vec<Option<String>>>>(key)?.flatten() else {
        return Ok(None);
    };
    list.into_iter()
        .map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s.unwrap_or_default().replace(['\r', '\n'], ""))
                .map_err(|_| anyhow!("{key} holds a value that is not base64"))
        })
        .collect::<Result<_>>()
        .map(Some)
}

/// A string key that counts when it is present and not empty (Go's `!= ""`).
fn nonempty(o: &Object, key: &str) -> Result<Option<String>> {
    Ok(o.parse::<Option<String>>(key)?
        .flatten()
        .filter(|s| !s.is_empty()))
}

/// `fulcio`, as `prSigstoreSignedFulcio.UnmarshalJSON` and `newPRSigstoreSignedFulcio`
/// check it.
fn fulcio(text: &str) -> Result<()> {
    let o = strict_json::object(text).map_err(|e| anyhow!("fulcio: {e}"))?;
    o.only(&["caPath", "caData", "oidcIssuer", "subjectEmail"])
        .map_err(|e| anyhow!("fulcio: {e}"))?;
    let path = nonempty(&o, "caPath")?.is_some();
    let data = bytes(&o, "caData")?.is_some();
    match (path, data) {
        (true, true) => bail!("fulcio: caPath and caData cannot be used simultaneously"),
        (false, false) => bail!("fulcio: at least one of caPath and caData must be specified"),
        _ => {}
    }
    if nonempty(&o, "oidcIssuer")?.is_none() {
        bail!("fulcio: oidcIssuer not specified");
    }
    if nonempty(&o, "subjectEmail")?.is_none() {
        bail!("fulcio: subjectEmail not specified");
    }
    Ok(())
}

/// `pki`, as `prSigstoreSignedPKI.UnmarshalJSON` and `newPRSigstoreSignedPKI` check it.
fn pki(text: &str) -> Result<()> {
    let o = strict_json::object(text).map_err(|e| anyhow!("pki: {e}"))?;
    o.only(&[
        "caRootsPath",
        "caRootsData",
        "caIntermediatesPath",
        "caIntermediatesData",
        "subjectEmail",
        "subjectHostname",
    ])
    .map_err(|e| anyhow!("pki: {e}"))?;
    match (
        nonempty(&o, "caRootsPath")?.is_some(),
        bytes(&o, "caRootsData")?.is_some(),
    ) {
        (true, true) => bail!("pki: caRootsPath and caRootsData cannot be used simultaneously"),
        (false, false) => {
            bail!("pki: at least one of caRootsPath and caRootsData must be specified")
        }
        _ => {}
    }
    if nonempty(&o, "caIntermediatesPath")?.is_some() && bytes(&o, "caIntermediatesData")?.is_some()
    {
        bail!("pki: caIntermediatesPath and caIntermediatesData cannot be used simultaneously");
    }
    if nonempty(&o, "subjectEmail")?.is_none() && nonempty(&o, "subjectHostname")?.is_none() {
        bail!("pki: at least one of subjectEmail, subjectHostname must be specified");
    }
    Ok(())
}

impl<I> SigstoreSigned<I> {
    /// Reads a `sigstoreSigned` requirement (its `type` already read) as
    /// `prSigstoreSigned.UnmarshalJSON` and `newPRSigstoreSigned` do: unknown keys,
    /// values of the wrong type and every inconsistency they refuse are errors.
    /// `identity` reads a `signedIdentity`; `default` is `matchRepoDigestOrExact`.
    pub(crate) fn parse(
        o: &Object,
        identity: impl Fn(&str) -> Result<I>,
        default: I,
    ) -> Result<SigstoreSigned<I>> {
        o.only(KEYS)?;
        let signed_identity = match o.get("signedIdentity") {
            Some(v) => identity(v.get())?,
            None => default,
        };
        for key in [
            "keyPaths",
            "keyDatas",
            "rekorPublicKeyPaths",
            "rekorPublicKeyDatas",
        ] {
            if o.get(key).is_some()
                && o.parse::<Option<Vec<serde_json::Value>>>(key)?
                    .flatten()
                    .is_none_or(|l| l.is_empty())
            {
                bail!("{key:?} contains no entries");
            }
        }
        let key_path = nonempty(o, "keyPath")?;
        let key_paths = o.parse::<Option<Vec<String>>>("keyPaths")?.flatten();
        let key_data = bytes(o, "keyData")?;
        let key_datas = bytes_list(o, "keyDatas")?;
        // A `null` fulcio or pki is a (zero) value in containers/image, and counts.
        if let Some(v) = o.get("fulcio").filter(|v| v.get() != "null") {
            fulcio(v.get())?;
        }
        if let Some(v) = o.get("pki").filter(|v| v.get() != "null") {
            pki(v.get())?;
        }
        let has_fulcio = o.get("fulcio").is_some();
        let has_pki = o.get("pki").is_some();
        let sources = [
            key_path.is_some(),
            key_paths.is_some(),
            key_data.is_some(),
            key_datas.is_some(),
            has_fulcio,
            has_pki,
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            bail!("exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, and pki must be specified");
        }
        let rekor = [
            nonempty(o, "rekorPublicKeyPath")?.is_some(),
            o.get("rekorPublicKeyPaths").is_some(),
            bytes(o, "rekorPublicKeyData")?.is_some(),
            bytes_list(o, "rekorPublicKeyDatas")?.is_some(),
        ]
        .iter()
        .filter(|s| **s)
        .count();
        if rekor > 1 {
            bail!(
                "at most one of rekorPublicKeyPath, rekorPublicKeyPaths, rekorPublicKeyData and \
                 rekorPublicKeyDatas can be used"
            );
        }
        if has_fulcio && rekor == 0 {
            bail!(
                "one of rekorPublicKeyPath, rekorPublicKeyPaths, rekorPublicKeyData and \
                 rekorPublicKeyDatas must be specified with fulcio"
            );
        }
        if has_pki && rekor > 0 {
            bail!(
                "rekorPublicKeyPath, rekorPublicKeyPaths, rekorPublicKeyData and \
                 rekorPublicKeyDatas are not supported with pki"
            );
        }
        let unsupported = if has_fulcio {
            Some(
                "sigstoreSigned with fulcio (keyless signatures: Fulcio certificates and Rekor \
                 SETs) is not supported by mcd-inject; only public keys (keyPath, keyPaths, \
                 keyData, keyDatas) without Rekor are",
            )
        } else if has_pki {
            Some(
                "sigstoreSigned with pki (certificates from a private CA) is not supported by \
                 mcd-inject; only public keys (keyPath, keyPaths, keyData, keyDatas) without \
                 Rekor are",
            )
        } else if rekor > 0 {
            Some(
                "sigstoreSigned with rekorPublicKeyPath, rekorPublicKeyPaths, \
                 rekorPublicKeyData or rekorPublicKeyDatas (Rekor SETs required with the keys) \
                 is not supported by mcd-inject",
            )
        } else {
            None
        };
        let keys = match (key_path, key_paths, key_data, key_datas) {
            (Some(p), ..) => KeySource::Path(p),
            (_, Some(ps), ..) => KeySource::Paths(ps),
            (_, _, Some(d), _) => KeySource::Data(d),
            (.., Some(ds)) => KeySource::Datas(ds),
            _ => KeySource::None,
        };
        Ok(SigstoreSigned {
            keys,
            unsupported,
            signed_identity,
        })
    }

    /// Why mcd-inject cannot check this requirement, valid as it is, if it cannot:
    /// `fulcio`, `pki`, or keys with Rekor.
    pub(crate) fn unsupported(&self) -> Option<&'static str> {
        self.unsupported
    }

    /// The `signedIdentity` (`matchRepoDigestOrExact` when not given).
    pub(crate) fn signed_identity(&self) -> &I {
        &self.signed_identity
    }

    /// The public keys, read and parsed (`prepareTrustRoot`): an error names the key
    /// (its path, or `keyData`/`keyDatas[N]`) and what is wrong with it.
    pub(crate) fn public_keys(&self) -> Result<Vec<PublicKey>> {
        let read = |p: &str| -> Result<(String, Vec<u8>)> {
            let b = std::fs::read(p).with_context(|| format!("reading sigstore public key {p}"))?;
            Ok((p.to_string(), b))
        };
        let pems: Vec<(String, Vec<u8>)> = match &self.keys {
            KeySource::None => bail!(
                "{}",
                self.unsupported
                    .unwrap_or("sigstoreSigned has no public key")
            ),
            KeySource::Path(p) => vec![read(p)?],
            KeySource::Paths(ps) => ps.iter().map(|p| read(p)).collect::<Result<_>>()?,
            KeySource::Data(d) => vec![("keyData".to_string(), d.clone())],
            KeySource::Datas(ds) => ds
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("keyDatas[{i}]"), d.clone()))
                .collect(),
        };
        pems.iter()
            .map(|(name, pem)| {
                PublicKey::from_pem(pem).with_context(|| format!("sigstore public key {name}"))
            })
            .collect()
    }
}

// ------------------------------------------------------------------ keys

/// A public key a sigstore signature can be verified with.
#[derive(Clone, Debug)]
pub(crate) enum PublicKey {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
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

/// The first PEM block of `text` (as Go's `pem.Decode` finds it): its type and bytes.
fn first_pem_block(text: &[u8]) -> Result<(String, Vec<u8>)> {
    let text = String::from_utf8_lossy(text);
    let start = text
        .find("-----BEGIN ")
        .ok_or_else(|| anyhow!("PEM decoding failed (no BEGIN line)"))?;
    let rest = &text[start + "-----BEGIN ".len()..];
    let end_type = rest
        .find("-----")
        .ok_or_else(|| anyhow!("PEM decoding failed"))?;
    let kind = rest[..end_type].to_string();
    let body = &rest[end_type + 5..];
    let end_line = format!("-----END {kind}-----");
    let end = body
        .find(&end_line)
        .ok_or_else(|| anyhow!("PEM decoding failed (no {end_line:?})"))?;
    let b64: String = body[..end]
        .lines()
        .filter(|l| !l.contains(':'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| anyhow!("PEM decoding failed (the {kind} block is not base64)"))?;
    Ok((kind, der))
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

    fn from_spki(der: &[u8]) -> Result<PublicKey> {
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
                    OID_P224 => bail!("ECDSA P-224 keys are not supported by mcd-inject (P-256, P-384, Ed25519 and RSA are)"),
                    OID_P521 => bail!("ECDSA P-521 keys are not supported by mcd-inject (P-256, P-384, Ed25519 and RSA are)"),
                    other => bail!("ECDSA curve {other} is not supported"),
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
            other => bail!("public key algorithm {other} is not supported (ECDSA P-256/P-384, Ed25519, RSA are)"),
        }
    }

    /// The kind of key, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            PublicKey::P256(_) => "ECDSA P-256",
            PublicKey::P384(_) => "ECDSA P-384",
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
            PublicKey::P256(k) => {
                use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
                p256::ecdsa::Signature::from_der(sig)
                    .is_ok_and(|s| k.verify_prehash(&hash, &s).is_ok())
            }
            PublicKey::P384(k) => {
                use p384::ecdsa::signature::hazmat::PrehashVerifier as _;
                p384::ecdsa::Signature::from_der(sig)
                    .is_ok_and(|s| k.verify_prehash(&hash, &s).is_ok())
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

// ------------------------------------------------------------------ signatures

/// Checks one sigstore signature (its payload and the annotations of its layer) as
/// `prSigstoreSigned.isSignatureAccepted` and `VerifySigstorePayload` do: made by one of
/// `keys`, over a valid payload whose digest `digest` accepts and whose
/// `docker-reference` `identity` accepts, in that order. The error says why not.
pub(crate) fn verify(
    payload: &[u8],
    annotations: &BTreeMap<String, String>,
    keys: &[PublicKey],
    digest: &dyn Fn(&str) -> Result<()>,
    identity: &dyn Fn(&str) -> Result<()>,
) -> Result<()> {
    let b64 = annotations
        .get(SIGNATURE_ANNOTATION)
        .ok_or_else(|| anyhow!("missing {SIGNATURE_ANNOTATION} annotation"))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.replace(['\r', '\n'], ""))
        .map_err(|_| anyhow!("the {SIGNATURE_ANNOTATION} annotation is not base64"))?;
    if !keys.iter().any(|k| k.verifies(payload, &raw)) {
        let kinds: Vec<&str> = keys.iter().map(PublicKey::kind).collect();
        bail!(
            "cryptographic signature verification failed: not a signature of its payload by \
             any of the policy's {} key(s) ({})",
            keys.len(),
            kinds.join(", ")
        );
    }
    let p = Payload::parse(payload)?;
    digest(&p.digest)?;
    identity(&p.reference)
}

/// What a sigstore payload says, once parsed as strictly as containers/image does.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Payload {
    pub digest: String,
    pub reference: String,
}

/// A JSON string that may be `null` (Go leaves the string empty then).
fn nullable_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPayload {
    critical: RawCritical,
    #[allow(dead_code)]
    optional: Optional,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCritical {
    #[serde(rename = "type", deserialize_with = "nullable_string")]
    kind: String,
    image: RawImage,
    identity: RawIdentity,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImage {
    #[serde(
        rename = "docker-manifest-digest",
        deserialize_with = "nullable_string"
    )]
    digest: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdentity {
    #[serde(rename = "docker-reference", deserialize_with = "nullable_string")]
    reference: String,
}

/// `optional`: `null` or an object without duplicate keys, whose `creator` is a string
/// and whose `timestamp` is an integer; other keys are anything.
struct Optional;

impl<'de> Deserialize<'de> for Optional {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Optional, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Optional;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("null or a JSON object")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Optional, E> {
                Ok(Optional)
            }
            fn visit_none<E: de::Error>(self) -> Result<Optional, E> {
                Ok(Optional)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Optional, A::Error> {
                let mut seen = std::collections::BTreeSet::new();
                while let Some(k) = m.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        return Err(de::Error::custom(format!(
                            "duplicate key {k:?} in optional"
                        )));
                    }
                    match k.as_str() {
                        "creator" => {
                            m.next_value::<Option<String>>()?;
                        }
                        "timestamp" => {
                            if let Some(t) = m.next_value::<Option<f64>>()? {
                                if t.trunc() != t || t.abs() >= 9.223_372_036_854_776e18 {
                                    return Err(de::Error::custom(
                                        "optional.timestamp is not an integer",
                                    ));
                                }
                            }
                        }
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Optional)
            }
        }
        d.deserialize_any(V)
    }
}

impl Payload {
    /// Parses a payload as `UntrustedSigstorePayload.strictUnmarshalJSON` does.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Payload> {
        let p: RawPayload = serde_json::from_slice(bytes).map_err(|e| {
            anyhow!(
                "the signed payload is not a sigstore payload: {}",
                // serde's messages name fields and types, not values.
                brief(&e.to_string())
            )
        })?;
        // serde reads a struct from a JSON array too; containers/image wants objects.
        let v: serde_json::Value = serde_json::from_slice(bytes)?;
        let c = &v["critical"];
        if !(v.is_object() && c.is_object() && c["image"].is_object() && c["identity"].is_object())
        {
            bail!("the signed payload is not a sigstore payload: JSON objects expected");
        }
        if p.critical.kind != SIGNATURE_TYPE {
            bail!(
                "the signed payload's type is {:?}, not {SIGNATURE_TYPE:?}",
                shown(&p.critical.kind)
            );
        }
        valid_digest(&p.critical.image.digest)
            .map_err(|e| anyhow!("the signed payload's docker-manifest-digest is invalid: {e}"))?;
        Ok(Payload {
            digest: p.critical.image.digest,
            reference: p.critical.identity.reference,
        })
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

/// A short printable value (a PEM label, a payload's type, a media type) as it is; any
/// other is not quoted. None of them comes from a secret.
fn shown(s: &str) -> String {
    if s.len() <= 80 && s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        s.to_string()
    } else {
        "(a value not shown)".to_string()
    }
}

/// A serde_json message without its position and any quoted value.
fn brief(s: &str) -> String {
    let s = s.split(" at line ").next().unwrap_or(s);
    s.chars().take(200).collect()
}

/// go-digest's `Parse`: a registered algorithm and its hex encoding.
fn valid_digest(d: &str) -> Result<(), String> {
    let (alg, hex) = d.split_once(':').ok_or("no algorithm")?;
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return Err("unsupported algorithm".into()),
    };
    if hex.len() != len || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!("not {len} lowercase hex characters after {alg}:"));
    }
    Ok(())
}

// ------------------------------------------------------------------ attachments

/// Reads an image's sigstore attachments from the endpoint that served it.
pub(crate) trait AttachmentSource {
    /// The manifest at `tag`, with the media type it was served as; `None` when the
    /// registry has no such tag (404).
    fn tagged_manifest(&self, tag: &str) -> Result<Option<(Vec<u8>, Option<String>)>>;
    /// A blob by digest, whole (checked against `digest` by the caller).
    fn blob(&self, digest: &Digest) -> Result<Vec<u8>>;
}

/// No endpoint: nothing can be read from it.
pub(crate) struct NoAttachments;

impl AttachmentSource for NoAttachments {
    fn tagged_manifest(&self, _: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
        Ok(None)
    }
    fn blob(&self, d: &Digest) -> Result<Vec<u8>> {
        bail!("no registry to read {d} from")
    }
}

/// The tag of the attachments of `digest` (`sigstoreAttachmentTag`).
pub(crate) fn attachment_tag(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

#[derive(Deserialize)]
struct AttachmentManifestDoc {
    #[serde(rename = "mediaType", default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<serde_json::Value>,
    #[serde(default)]
    layers: Vec<Layer>,
}

#[derive(Clone, Debug, Deserialize)]
struct Layer {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: i64,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// The attachment manifest of an image: its layers (signatures, attestations, ...), not
/// yet fetched.
pub(crate) struct Attachments {
    /// `HOST/REPO:TAG`, for messages.
    pub origin: String,
    layers: Vec<Layer>,
}

impl Attachments {
    /// Reads the attachment manifest of `digest` from `src`, the repository `name`
    /// (`getSigstoreAttachmentManifest`): `None` when there is none. An error for a
    /// manifest served with another media type than an OCI image manifest, a malformed
    /// one, or one with too many layers.
    pub(crate) fn read(
        src: &dyn AttachmentSource,
        name: &str,
        digest: &Digest,
    ) -> Result<Option<Attachments>> {
        let tag = attachment_tag(digest);
        let origin = format!("{name}:{tag}");
        let Some((bytes, media_type)) = src.tagged_manifest(&tag)? else {
            return Ok(None);
        };
        let served_as = media_type
            .as_deref()
            .map(|m| m.split(';').next().unwrap_or(m).trim().to_string());
        if served_as.as_deref() != Some(OCI_MANIFEST) {
            bail!(
                "{origin}: unexpected media type {} for a sigstore attachment manifest (expected {OCI_MANIFEST})",
                served_as.map_or("(none)".to_string(), |m| format!("{:?}", shown(&m)))
            );
        }
        let doc: AttachmentManifestDoc = serde_json::from_slice(&bytes).map_err(|e| {
            anyhow!(
                "{origin}: not an OCI image manifest: {}",
                brief(&e.to_string())
            )
        })?;
        if doc.media_type.as_deref().is_some_and(|m| m != OCI_MANIFEST) || doc.manifests.is_some() {
            bail!("{origin}: not an OCI image manifest");
        }
        if doc.layers.len() > MAX_ATTACHMENT_LAYERS {
            bail!(
                "{origin}: {} attachments, more than the {MAX_ATTACHMENT_LAYERS} mcd-inject reads",
                doc.layers.len()
            );
        }
        Ok(Some(Attachments {
            origin,
            layers: doc.layers,
        }))
    }

    /// How many layers there are.
    pub(crate) fn len(&self) -> usize {
        self.layers.len()
    }

    /// Fetches layer `i` (`getOCIDescriptorContents`), whatever its media type, as
    /// containers/image fetches every one: at most [`MAX_SIGNATURE_BYTES`], its digest
    /// checked.
    pub(crate) fn fetch(&self, src: &dyn AttachmentSource, i: usize) -> Result<Attached> {
        let l = &self.layers[i];
        let origin = format!("{} layer {}", self.origin, i + 1);
        let d: Digest = l
            .digest
            .parse()
            .map_err(|e| anyhow!("{origin}: invalid digest: {e}"))?;
        if l.size < 0 || l.size as u64 > MAX_SIGNATURE_BYTES {
            bail!(
                "{origin}: {} bytes, more than the {MAX_SIGNATURE_BYTES} a signature may have",
                l.size
            );
        }
        let payload = src
            .blob(&d)
            .with_context(|| format!("{origin}: fetching {d}"))?;
        if payload.len() as u64 > MAX_SIGNATURE_BYTES {
            bail!("{origin}: more than the {MAX_SIGNATURE_BYTES} bytes a signature may have");
        }
        if Digest::of(&payload) != d {
            bail!("{origin}: the blob does not match its digest {d}");
        }
        Ok(Attached {
            origin,
            media_type: l.media_type.clone(),
            payload,
            annotations: l.annotations.clone().unwrap_or_default(),
        })
    }
}

/// One signature layer of an attachment manifest, fetched.
#[derive(Debug)]
pub(crate) struct Attached {
    /// `HOST/REPO:TAG layer N`, for messages.
    pub origin: String,
    /// The layer's media type: a signature's is [`SIGNATURE_MEDIA_TYPE`].
    pub media_type: String,
    /// The signed payload.
    pub payload: Vec<u8>,
    /// The layer's annotations (the signature among them).
    pub annotations: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::EncodePublicKey as _;

    /// A test key pair, from a fixed scalar: (signing key, PEM public key).
    fn key(seed: u8) -> (p256::ecdsa::SigningKey, String) {
        let sk = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = sk
            .verifying_key()
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .unwrap();
        (sk, pem)
    }

    const D: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    const REF: &str = "registry.example/ocp/release:4.16.3";

    fn payload(digest: &str, reference: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "critical": {
                "identity": {"docker-reference": reference},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature"
            },
            "optional": {"creator": "cosign", "timestamp": 1_700_000_000}
        }))
        .unwrap()
    }

    /// A signature layer's payload and annotations.
    #[derive(Clone)]
    struct Sig {
        payload: Vec<u8>,
        annotations: BTreeMap<String, String>,
    }

    /// A signature as cosign attaches it: the payload, its base64 DER signature in the
    /// layer annotation.
    fn signed(sk: &p256::ecdsa::SigningKey, payload: &[u8]) -> Sig {
        let sig: p256::ecdsa::Signature = sk.sign(payload);
        Sig {
            payload: payload.to_vec(),
            annotations: [(
                SIGNATURE_ANNOTATION.to_string(),
                base64::engine::general_purpose::STANDARD.encode(sig.to_der()),
            )]
            .into(),
        }
    }

    fn keys(pems: &[&str]) -> Vec<PublicKey> {
        pems.iter()
            .map(|p| PublicKey::from_pem(p.as_bytes()).unwrap())
            .collect()
    }

    fn same_digest(signed: &str) -> Result<()> {
        if signed == D {
            Ok(())
        } else {
            bail!("it signs manifest {signed}, the image is {D}")
        }
    }

    fn same_ref(signed: &str) -> Result<()> {
        if signed == REF {
            Ok(())
        } else {
            bail!("identity {signed} not accepted")
        }
    }

    #[test]
    fn requirement_fields_as_containers_image_parses_them() {
        let parse = |text: &str| -> Result<(), String> {
            let o = strict_json::object(text).map_err(|e| e.to_string())?;
            let s = SigstoreSigned::parse(&o, |t| Ok(t.to_string()), "default".to_string())
                .map_err(|e| format!("{e:#}"))?;
            match s.unsupported() {
                Some(why) => Err(why.to_string()),
                None => Ok(()),
            }
        };
        let ok = [
            r#"{"keyPath":"/k"}"#,
            r#"{"keyPaths":["/k","/l"]}"#,
            r#"{"keyData":"AA=="}"#,
            r#"{"keyDatas":["AA==","AQ=="]}"#,
            r#"{"keyPath":"/k","signedIdentity":{"type":"matchRepository"}}"#,
            r#"{"keyPath":"/k","keyData":null}"#,
        ];
        for t in ok {
            parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        }
        let exactly_one = "exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, and pki";
        let fulcio = r#""fulcio":{"caPath":"/ca","oidcIssuer":"https://issuer.example","subjectEmail":"a@example.com"}"#;
        let pki = r#""pki":{"caRootsPath":"/ca","subjectHostname":"signer.example"}"#;
        for (t, want) in [
            ("{}", exactly_one),
            (r#"{"keyPath":""}"#, exactly_one),
            (r#"{"keyData":null}"#, exactly_one),
            (r#"{"keyPath":"/k","keyData":"AA=="}"#, exactly_one),
            (r#"{"keyPath":"/k","keyPaths":["/l"]}"#, exactly_one),
            (r#"{"keyPaths":[]}"#, "\"keyPaths\" contains no entries"),
            (r#"{"keyPaths":null}"#, "\"keyPaths\" contains no entries"),
            (r#"{"keyDatas":[]}"#, "\"keyDatas\" contains no entries"),
            (r#"{"keyPath":"/k","extra":1}"#, "unknown key"),
            (r#"{"keyPath":"/k","keyPath":"/l"}"#, "duplicate key"),
            (r#"{"keyPath":5}"#, "expected a string"),
            (r#"{"keyData":"not base64!"}"#, "keyData is not base64"),
            (
                r#"{"keyPath":"/k","rekorPublicKeyPath":"/r","rekorPublicKeyData":"AA=="}"#,
                "at most one of rekorPublicKeyPath",
            ),
            (
                r#"{"keyPath":"/k","rekorPublicKeyPaths":[]}"#,
                "\"rekorPublicKeyPaths\" contains no entries",
            ),
            (&format!("{{{fulcio}}}"), "must be specified with fulcio"),
            (
                r#"{"fulcio":{"caPath":"/ca","caData":"AA==","oidcIssuer":"i","subjectEmail":"e"},"rekorPublicKeyPath":"/r"}"#,
                "caPath and caData cannot be used simultaneously",
            ),
            (
                r#"{"fulcio":{"caPath":"/ca","subjectEmail":"e"},"rekorPublicKeyPath":"/r"}"#,
                "oidcIssuer not specified",
            ),
            (
                r#"{"fulcio":{"caPath":"/ca","oidcIssuer":"i","subjectEmail":"e","x":1},"rekorPublicKeyPath":"/r"}"#,
                "fulcio: unknown key",
            ),
            (
                r#"{"pki":{"caRootsPath":"/ca"}}"#,
                "at least one of subjectEmail, subjectHostname",
            ),
            (
                &format!(r#"{{{pki},"rekorPublicKeyPath":"/r"}}"#),
                "not supported with pki",
            ),
            // Valid for containers/image, refused here, by name.
            (
                &format!(r#"{{{fulcio},"rekorPublicKeyPath":"/r"}}"#),
                "sigstoreSigned with fulcio (keyless signatures",
            ),
            (&format!("{{{pki}}}"), "sigstoreSigned with pki"),
            (
                r#"{"keyPath":"/k","rekorPublicKeyPath":"/r"}"#,
                "rekorPublicKeyData or rekorPublicKeyDatas (Rekor SETs required",
            ),
        ] {
            let e = parse(t).expect_err(t);
            assert!(e.contains(want), "{t}: {e}");
        }
    }

    #[test]
    fn policies_with_sigstore_signed() {
        let dir = tempfile::tempdir().unwrap();
        let load = |req: &str| {
            let p = dir.path().join("policy.json");
            std::fs::write(
                &p,
                format!(r#"{{"default":[{{"type":"insecureAcceptAnything"}}],"transports":{{"docker":{{"registry.example/ocp":[{req}]}}}}}}"#),
            )
            .unwrap();
            crate::trust::Policy::load(&p, None)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        load(r#"{"type":"sigstoreSigned","keyPath":"/k","signedIdentity":{"type":"matchRepository"}}"#).unwrap();
        for (req, want) in [
            (
                r#"{"type":"sigstoreSigned","keyPath":"/k","keyPath":"/l"}"#,
                "policy.json",
            ),
            (
                r#"{"type":"sigstoreSigned","keyPath":"/k","keyType":"GPGKeys"}"#,
                "policy.json",
            ),
            (
                r#"{"type":"sigstoreSigned"}"#,
                "sigstoreSigned: exactly one of",
            ),
            (
                r#"{"type":"sigstoreSigned","keyPath":"/k","signedIdentity":null}"#,
                "signedIdentity",
            ),
            (
                r#"{"type":"sigstoreSigned","pki":{"caRootsData":"AA==","subjectEmail":"a@example.com"}}"#,
                "requirement 1: sigstoreSigned with pki (certificates from a private CA) is not supported",
            ),
        ] {
            let e = load(req).expect_err(req);
            assert!(e.contains("policy.json") && e.contains(want), "{req}: {e}");
        }
    }

    #[test]
    fn public_keys_of_every_kind_sigstore_loads() {
        // Independent vectors, made with openssl: an RSA key (PKIX and PKCS #1 PEM), a
        // P-384 key and an Ed25519 key, each with its signature of PAYLOAD (RSA and
        // P-384 over SHA-256, as sigstore's LoadVerifier(key, crypto.SHA256) checks).
        const PAYLOAD: &[u8] = b"payload for rsa";
        let rsa = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA3H1WpAiS+5gNETza16EM
AxcANulbDBMxNWJJ2XPA4DM84iEISU4exXzzQNrdkDt7L8uKfS3g1TFRYPgrJuND
ElUIkj2L+lq3u48ayyVJKy3qwydVmrLgKF46sXHiDIyTjjcvFYLypRTqsFQoHwTd
serLP5Pwlv4cEV4aoxmpLSaoxp5oT5e1wNvxH9xoCKt6XlOzcjF2HOxjQIjY95pW
ui3YTRLOjbqqBNEDn/zHtgi0BQ7lqo6oGSVNg19aWPFX/GsEIaMJvg21sU56UC05
fsoSuMQhDgfIIVli417fLmLrmLJP9Aq8I44YPEWeiKbF2dTUEHnaU4u7nA6VsoTl
fQIDAQAB
-----END PUBLIC KEY-----
";
        let rsa1 = "-----BEGIN RSA PUBLIC KEY-----
MIIBCgKCAQEA3H1WpAiS+5gNETza16EMAxcANulbDBMxNWJJ2XPA4DM84iEISU4e
xXzzQNrdkDt7L8uKfS3g1TFRYPgrJuNDElUIkj2L+lq3u48ayyVJKy3qwydVmrLg
KF46sXHiDIyTjjcvFYLypRTqsFQoHwTdserLP5Pwlv4cEV4aoxmpLSaoxp5oT5e1
wNvxH9xoCKt6XlOzcjF2HOxjQIjY95pWui3YTRLOjbqqBNEDn/zHtgi0BQ7lqo6o
GSVNg19aWPFX/GsEIaMJvg21sU56UC05fsoSuMQhDgfIIVli417fLmLrmLJP9Aq8
I44YPEWeiKbF2dTUEHnaU4u7nA6VsoTlfQIDAQAB
-----END RSA PUBLIC KEY-----
";
        let rsa_sig = "d/a4AAXVqnoZ5MT666UUNwjyQtBcpc9X2zRa6twzQssDaLUc3PsHxPQKglMm7bYpNzLy839/hRgYGHcnGqgOeGz9mMWwydpPb1uqBruTjoIOoiBUm8+HHKwaJ5NxuulX68DWn6XjJTDmWm1Ld1IBXUqzKDt1oIxQC3xrdqpkjqSmX9PaWNv/+p6ZtIIokGid8MbQB8SFrtXEOaKKMfRyF7IG5jgYFZDmI9suk8l8BWeDyCu+ju6MSNC2daliS7GxWEr3RRKQ/3H2mTlOf4zJv7wzdNKDs7LHFXx2Tj4c1nrfTyP+AXkgYVPn4G6+w240KxQZ/SlsWO00mkRjzpX63A==";
        let p384 = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEUZUwPk0EJkwkGZMrJhxaYXQVcave8xwd
owxdjjKuU2Cyi27Atyi45DgQ0xnW/MJ3Y9NYqxUjWuF48EITO3evN3nb4zannk3u
/aA10M8YB6HD+i3IAhISn04dXbYlWFrW
-----END PUBLIC KEY-----
";
        let p384_sig = "MGUCME06Ke1pSzaj7eAlk8WvJE2B7e0Jcd5RYb0PSp3Xmmeb57L6oH0Gm5VgUU2ZdqnDxAIxAM9Ij57MmRubhnewAJSo7BoCejjiGWGCLlDR7nDXXxFuo57am9W4wepFXvOWV7D0YA==";
        let ed = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA41Ge5byhAWWVzGn+pUHRFKYt5OfXxGXPLHCSdVOkbHo=
-----END PUBLIC KEY-----
";
        let ed_sig = "xgqjAplZ2KdiJ+p9+JObSmsnukONP5CaA5mkJ+i1gKmmGtQjOvwSnrdlEywJC7uDnkqogbpj4xC37wsx3rlsBA==";
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).unwrap();
        for (pem, sig, kind) in [
            (rsa, rsa_sig, "RSA"),
            (rsa1, rsa_sig, "RSA"),
            (p384, p384_sig, "ECDSA P-384"),
            (ed, ed_sig, "Ed25519"),
        ] {
            let k = PublicKey::from_pem(pem.as_bytes()).unwrap();
            assert_eq!(k.kind(), kind);
            let sig = b64(sig);
            assert!(k.verifies(PAYLOAD, &sig), "{kind}");
            assert!(!k.verifies(b"another payload", &sig), "{kind}");
            let mut bad = sig.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(!k.verifies(PAYLOAD, &bad), "{kind}");
        }
        // P-521 and P-224 are refused by name; other PEM blocks are not keys.
        for (pem, want) in [
            (
                "-----BEGIN PUBLIC KEY-----
MIGbMBAGByqGSM49AgEGBSuBBAAjA4GGAAQBGU4bIjVQ4aMTAw+O1Vd+k38Wv8q8
KlYXkDR+qTQyLKCEivzu+lseRgZZAOeSIE/grJDr0HV/yXEAvyjVKsnesJIAVVGP
ISxlspJgAXIJE0NLz8jGk0L0RAFVQ17ydVnha9qoiB0YxiQUj47ZooTL9Q3fWwB1
AZ5FewYMTjaXhd44k7I=
-----END PUBLIC KEY-----
",
                "ECDSA P-521 keys are not supported",
            ),
            (
                "-----BEGIN PUBLIC KEY-----
ME4wEAYHKoZIzj0CAQYFK4EEACEDOgAE81NaKZv7lPoJnlRGJbzkxNqRysXJeRq2
cOW6vWRDLtyrJG6bY+h5f8tXQEre/9eGr3U54XMhWJQ=
-----END PUBLIC KEY-----
",
                "ECDSA P-224 keys are not supported",
            ),
            (
                "-----BEGIN PUBLIC KEY-----
MHwwDQYJKoZIhvcNAQEBBQADawAwaAJhAMpu5+glFMHe9wVM/R6hIv3HYbADaD5y
KWA3vQlXXNuPqMWaV/ByJ53kcZcOk2AatoHud6rtdzsisxwOWJDL6iO5JWucSaF0
JbanvZAU0hS8forSO8rLX07mDSadKRoF0QIDAQAB
-----END PUBLIC KEY-----
",
                "an RSA key of 768 bits is refused",
            ),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "unknown public key PEM type \"CERTIFICATE\"",
            ),
            (
                "-----BEGIN Not Shown-----\nAAAA\n-----END Not Shown-----\n",
                "unknown public key PEM type (a label not shown)",
            ),
            ("not a key", "PEM decoding failed"),
        ] {
            let e = format!("{:#}", PublicKey::from_pem(pem.as_bytes()).unwrap_err());
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn signatures_checked_as_verify_sigstore_payload_does() {
        let (sk, pem) = key(7);
        let (other_sk, other_pem) = key(9);
        let good = signed(&sk, &payload(D, REF));
        let check = |s: &Sig, k: &[&str]| {
            verify(
                &s.payload,
                &s.annotations,
                &keys(k),
                &same_digest,
                &same_ref,
            )
        };
        check(&good, &[&pem]).unwrap();
        // Any of the keys may have made it.
        check(&good, &[&other_pem, &pem]).unwrap();

        let why = |s: &Sig, k: &[&str]| format!("{:#}", check(s, k).unwrap_err());
        assert!(why(&good, &[&other_pem]).contains("cryptographic signature verification failed"));
        assert!(why(&signed(&other_sk, &payload(D, REF)), &[&pem]).contains("verification failed"));
        // A tampered signature, a tampered payload.
        let mut t = good.clone();
        let mut raw = base64::engine::general_purpose::STANDARD
            .decode(&t.annotations[SIGNATURE_ANNOTATION])
            .unwrap();
        let n = raw.len();
        raw[n - 3] ^= 0x10;
        t.annotations.insert(
            SIGNATURE_ANNOTATION.into(),
            base64::engine::general_purpose::STANDARD.encode(raw),
        );
        assert!(why(&t, &[&pem]).contains("verification failed"));
        let mut t = good.clone();
        t.payload = payload(D, "registry.example/ocp/release:4.16.4");
        assert!(why(&t, &[&pem]).contains("verification failed"));
        // Another manifest; another identity.
        let other_digest =
            "sha256:3333333333333333333333333333333333333333333333333333333333333333";
        assert!(
            why(&signed(&sk, &payload(other_digest, REF)), &[&pem]).contains(&format!(
                "it signs manifest {other_digest}, the image is {D}"
            ))
        );
        assert!(
            why(&signed(&sk, &payload(D, "registry.example/x:1")), &[&pem])
                .contains("identity registry.example/x:1 not accepted")
        );
        // No signature annotation; not base64.
        let mut t = good.clone();
        t.annotations.clear();
        assert!(why(&t, &[&pem]).contains("missing dev.cosignproject.cosign/signature annotation"));
        t.annotations
            .insert(SIGNATURE_ANNOTATION.into(), "%%%".into());
        assert!(why(&t, &[&pem]).contains("not base64"));
    }

    #[test]
    fn payloads_parsed_as_strictly_as_containers_image() {
        let crit = format!(
            r#"{{"type":"cosign container image signature","image":{{"docker-manifest-digest":"{D}"}},"identity":{{"docker-reference":"{REF}"}}}}"#
        );
        for optional in [
            "null",
            "{}",
            r#"{"creator":"c","timestamp":1700000000,"anything":{"a":[1,2]}}"#,
            r#"{"timestamp":1e3}"#,
        ] {
            let p = Payload::parse(
                format!(r#"{{"critical":{crit},"optional":{optional}}}"#).as_bytes(),
            )
            .unwrap_or_else(|e| panic!("{optional}: {e:#}"));
            assert_eq!(
                p,
                Payload {
                    digest: D.into(),
                    reference: REF.into()
                }
            );
        }
        for (text, want) in [
            (
                format!(r#"{{"critical":{crit}}}"#),
                "missing field `optional`",
            ),
            (
                format!(r#"{{"critical":{crit},"optional":{{}},"x":1}}"#),
                "unknown field `x`",
            ),
            (
                format!(r#"{{"critical":{crit},"critical":{crit},"optional":{{}}}}"#),
                "duplicate field `critical`",
            ),
            (
                format!(r#"{{"critical":{crit},"optional":{{"timestamp":1.5}}}}"#),
                "not an integer",
            ),
            (
                format!(r#"{{"critical":{crit},"optional":{{"creator":1}}}}"#),
                "invalid type",
            ),
            (
                format!(r#"{{"critical":{crit},"optional":{{"a":1,"a":2}}}}"#),
                "duplicate key \"a\"",
            ),
            (
                format!(r#"{{"critical":{crit},"optional":[]}}"#),
                "null or a JSON object",
            ),
            (
                format!(
                    r#"{{"critical":["cosign container image signature",{{"docker-manifest-digest":"{D}"}},{{"docker-reference":"{REF}"}}],"optional":null}}"#
                ),
                "JSON objects expected",
            ),
            (format!(r#"[{crit},null]"#), "JSON objects expected"),
            (
                format!(
                    r#"{{"critical":{},"optional":null}}"#,
                    crit.replace(
                        "cosign container image signature",
                        "atomic container signature"
                    )
                ),
                "type is \"atomic container signature\"",
            ),
            (
                format!(
                    r#"{{"critical":{},"optional":null}}"#,
                    crit.replace(D, "sha256:abc")
                ),
                "docker-manifest-digest is invalid",
            ),
            (
                format!(
                    r#"{{"critical":{},"optional":null}}"#,
                    crit.replace(r#","identity""#, r#","extra":{},"identity""#)
                ),
                "unknown field `extra`",
            ),
        ] {
            let e = format!("{:#}", Payload::parse(text.as_bytes()).unwrap_err());
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// An endpoint serving one attachment manifest and its blobs.
    struct Fake {
        manifest: Option<(Vec<u8>, Option<String>)>,
        blobs: BTreeMap<String, Vec<u8>>,
        fetched: std::cell::Cell<usize>,
    }

    impl AttachmentSource for Fake {
        fn tagged_manifest(&self, tag: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
            assert_eq!(tag, format!("sha256-{}.sig", &D[7..]));
            Ok(self.manifest.clone())
        }
        fn blob(&self, d: &Digest) -> Result<Vec<u8>> {
            self.fetched.set(self.fetched.get() + 1);
            self.blobs
                .get(&d.to_string())
                .cloned()
                .ok_or_else(|| anyhow!("no blob {d}"))
        }
    }

    fn layer(media_type: &str, bytes: &[u8]) -> serde_json::Value {
        serde_json::json!({"mediaType": media_type, "digest": Digest::of(bytes).to_string(),
                           "size": bytes.len(), "annotations": {SIGNATURE_ANNOTATION: "AA=="}})
    }

    fn fake(layers: Vec<serde_json::Value>, media_type: &str, blobs: &[&[u8]]) -> Fake {
        let m = serde_json::json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": Digest::of(b"{}").to_string(), "size": 2},
            "layers": layers});
        Fake {
            manifest: Some((
                serde_json::to_vec(&m).unwrap(),
                Some(media_type.to_string()),
            )),
            blobs: blobs
                .iter()
                .map(|b| (Digest::of(b).to_string(), b.to_vec()))
                .collect(),
            fetched: Default::default(),
        }
    }

    #[test]
    fn attachment_manifests_and_their_bounds() {
        let d: Digest = D.parse().unwrap();
        let none = Fake {
            manifest: None,
            blobs: BTreeMap::new(),
            fetched: Default::default(),
        };
        assert!(Attachments::read(&none, "registry.example/ocp/release", &d)
            .unwrap()
            .is_none());

        let p1: &[u8] = b"{\"one\":1}";
        let att: &[u8] = b"an attestation";
        let f = fake(
            vec![
                layer(SIGNATURE_MEDIA_TYPE, p1),
                layer("application/vnd.in-toto+json", att),
            ],
            "application/vnd.oci.image.manifest.v1+json; charset=utf-8",
            &[p1, att],
        );
        let a = Attachments::read(&f, "registry.example/ocp/release", &d)
            .unwrap()
            .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(
            a.origin,
            format!("registry.example/ocp/release:sha256-{}.sig", &D[7..])
        );
        let s = a.fetch(&f, 0).unwrap();
        assert_eq!(s.payload, p1);
        assert_eq!(s.media_type, SIGNATURE_MEDIA_TYPE);
        assert_eq!(s.annotations[SIGNATURE_ANNOTATION], "AA==");
        // Every layer is fetched, as containers/image fetches them (an attestation too).
        let s = a.fetch(&f, 1).unwrap();
        assert_eq!(
            (s.payload.as_slice(), s.media_type.as_str()),
            (att, "application/vnd.in-toto+json")
        );
        assert_eq!(f.fetched.get(), 2);

        // Served as another media type (getSigstoreAttachmentManifest refuses it).
        let f = fake(
            vec![layer(SIGNATURE_MEDIA_TYPE, p1)],
            "application/vnd.docker.distribution.manifest.v2+json",
            &[p1],
        );
        let e = format!(
            "{:#}",
            Attachments::read(&f, "registry.example/ocp/release", &d)
                .err()
                .unwrap()
        );
        assert!(e.contains("unexpected media type"), "{e}");
        // Too many layers.
        let many = vec![layer(SIGNATURE_MEDIA_TYPE, p1); MAX_ATTACHMENT_LAYERS + 1];
        let f = fake(many, OCI_MANIFEST, &[p1]);
        let e = format!(
            "{:#}",
            Attachments::read(&f, "registry.example/ocp/release", &d)
                .err()
                .unwrap()
        );
        assert!(
            e.contains(&format!("more than the {MAX_ATTACHMENT_LAYERS}")),
            "{e}"
        );
        // A blob that is not what its digest says; one declared too big (not fetched).
        let mut f = fake(vec![layer(SIGNATURE_MEDIA_TYPE, p1)], OCI_MANIFEST, &[]);
        f.blobs
            .insert(Digest::of(p1).to_string(), b"something else".to_vec());
        let a = Attachments::read(&f, "registry.example/ocp/release", &d)
            .unwrap()
            .unwrap();
        let e = format!("{:#}", a.fetch(&f, 0).unwrap_err());
        assert!(e.contains("does not match its digest"), "{e}");
        let mut big = layer(SIGNATURE_MEDIA_TYPE, p1);
        big["size"] = serde_json::json!(MAX_SIGNATURE_BYTES + 1);
        let f = fake(vec![big], OCI_MANIFEST, &[p1]);
        let a = Attachments::read(&f, "registry.example/ocp/release", &d)
            .unwrap()
            .unwrap();
        let e = format!("{:#}", a.fetch(&f, 0).unwrap_err());
        assert!(e.contains("more than the"), "{e}");
        assert_eq!(f.fetched.get(), 0);
    }
}
