//! "Simple signing" signatures: an OpenPGP signed message whose payload names a manifest
//! digest and an identity. Judged as containers/image judges them with GPGME
//! (`signature/mechanism_gpgme.go`, `signature/simple.go`):
//!
//! - the message has exactly one signature, made by one of the policy's keys or by a
//!   signing subkey of one of them (containers/image accepts subkeys since its 5.36
//!   release; earlier ones, skopeo 1.9 among them, refuse them);
//! - the key is neither revoked nor expired now (a subkey: neither it nor its primary
//!   key), the subkey's binding says it may sign, and the signature has not expired;
//! - the payload is exactly `{"critical": {"type", "image", "identity"}, "optional"}`
//!   with no unknown key in `critical`, `optional` an object (its `creator` a string and
//!   `timestamp` an integer when there), and a valid `docker-manifest-digest`.
//!
//! The OpenPGP work is done by rPGP (`pgp`), in pure Rust: no gpg binary or C library.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Result};
use pgp::composed::{Message, SignedPublicKey, SignedPublicSubKey};
use pgp::packet::{Signature, SignatureType};
use pgp::types::{KeyDetails, Tag, VerifyingKey};

use super::registries_d::MAX_SIGNATURE_BYTES;
use super::strict_json;
use crate::io::read_at_most;

/// The `critical.type` of a simple signing payload.
const SIGNATURE_TYPE: &str = "atomic container signature";

/// A key as GPGME verifies with it: rPGP's, except that a secp256k1 ECDSA signature is
/// brought to low S first. libgcrypt (GnuPG's) signs with either half of the curve
/// order and verifies both, as ECDSA allows; k256, which rPGP verifies with, accepts
/// only the lower half (a rule of Bitcoin's), and so refused about half of the
/// signatures GnuPG makes with such keys. `n - s` signs the same hash. And brainpool
/// P-256r1 and P-384r1 keys, which rPGP reads but does not verify with, are verified
/// by RustCrypto's curves.
#[derive(Debug)]
struct AsGnupg<'a, K>(&'a K);

impl<K: KeyDetails> KeyDetails for AsGnupg<'_, K> {
    fn version(&self) -> pgp::types::KeyVersion {
        self.0.version()
    }
    fn legacy_key_id(&self) -> pgp::types::KeyId {
        self.0.legacy_key_id()
    }
    fn fingerprint(&self) -> pgp::types::Fingerprint {
        self.0.fingerprint()
    }
    fn algorithm(&self) -> pgp::crypto::public_key::PublicKeyAlgorithm {
        self.0.algorithm()
    }
    fn created_at(&self) -> pgp::types::Timestamp {
        self.0.created_at()
    }
    fn legacy_v3_expiration_days(&self) -> Option<u16> {
        self.0.legacy_v3_expiration_days()
    }
    fn public_params(&self) -> &pgp::types::PublicParams {
        self.0.public_params()
    }
}

impl<K: VerifyingKey> VerifyingKey for AsGnupg<'_, K> {
    fn verify(
        &self,
        hash: pgp::crypto::hash::HashAlgorithm,
        data: &[u8],
        sig: &pgp::types::SignatureBytes,
    ) -> pgp::errors::Result<()> {
        use pgp::types::{EcdsaPublicParams, PublicParams, SignatureBytes};
        if let (
            PublicParams::ECDSA(EcdsaPublicParams::Unsupported { curve, opaque }),
            SignatureBytes::Mpis(m),
        ) = (self.0.public_params(), sig)
        {
            if let Some(verified) = brainpool(curve, opaque, data, m) {
                return if verified {
                    Ok(())
                } else {
                    Err("brainpool ECDSA signature verification failed"
                        .to_string()
                        .into())
                };
            }
        }
        let secp256k1 = matches!(
            self.0.public_params(),
            PublicParams::ECDSA(EcdsaPublicParams::Secp256k1 { .. })
        );
        if let (true, SignatureBytes::Mpis(m)) = (secp256k1, sig) {
            if let [r, s] = &m[..] {
                if let Some(low) = low_s(r.as_ref(), s.as_ref()) {
                    return self.0.verify(hash, data, &SignatureBytes::Mpis(low));
                }
            }
        }
        self.0.verify(hash, data, sig)
    }
}

impl<K: pgp::ser::Serialize> pgp::ser::Serialize for AsGnupg<'_, K> {
    fn to_writer<W: std::io::Write>(&self, w: &mut W) -> pgp::errors::Result<()> {
        self.0.to_writer(w)
    }
    fn write_len(&self) -> usize {
        self.0.write_len()
    }
}

/// An ECDSA verdict on brainpoolP256r1 or brainpoolP384r1, which rPGP reads but does not
/// verify with (libgcrypt does): `opaque` is the key's point as rPGP keeps it (an MPI:
/// a two-byte bit count, then the SEC1 point), `digest` what was signed. `None` for
/// another curve, which rPGP then refuses.
fn brainpool(
    curve: &pgp::crypto::ecc_curve::ECCCurve,
    opaque: &[u8],
    digest: &[u8],
    sig: &[pgp::types::Mpi],
) -> Option<bool> {
    use pgp::crypto::ecc_curve::ECCCurve;
    let verify = match curve {
        ECCCurve::BrainpoolP256r1 => brainpool_p256,
        ECCCurve::BrainpoolP384r1 => brainpool_p384,
        _ => return None,
    };
    let (Some(point), [r, s]) = (opaque.get(2..), sig) else {
        return Some(false);
    };
    Some(verify(point, digest, r.as_ref(), s.as_ref()))
}

/// ECDSA over a prehashed `digest` on a brainpool curve: `fn NAME(point, digest, r, s)`,
/// `r` and `s` big-endian integers of at most `SIZE` bytes.
macro_rules! ecdsa_prehash {
    ($name:ident, $curve:ty, $size:expr) => {
        fn $name(point: &[u8], digest: &[u8], r: &[u8], s: &[u8]) -> bool {
            use ecdsa17::signature::hazmat::PrehashVerifier as _;
            let pad = |x: &[u8]| -> Option<[u8; $size]> {
                let mut out = [0u8; $size];
                out.get_mut($size.checked_sub(x.len())?..)?
                    .copy_from_slice(x);
                Some(out)
            };
            let (Some(r), Some(s)) = (pad(r), pad(s)) else {
                return false;
            };
            let (Ok(key), Ok(sig)) = (
                ecdsa17::VerifyingKey::<$curve>::from_sec1_bytes(point),
                ecdsa17::Signature::<$curve>::from_scalars(r, s),
            ) else {
                return false;
            };
            key.verify_prehash(digest, &sig).is_ok()
        }
    };
}
ecdsa_prehash!(brainpool_p256, bp256::BrainpoolP256r1, 32usize);
ecdsa_prehash!(brainpool_p384, bp384::BrainpoolP384r1, 48usize);

/// `(r, n - s)` when `s` is in the upper half of secp256k1's order; `None` when it is
/// low already or not a scalar.
fn low_s(r: &[u8], s: &[u8]) -> Option<Vec<pgp::types::Mpi>> {
    let pad = |x: &[u8]| -> Option<[u8; 32]> {
        let mut out = [0u8; 32];
        out.get_mut(32usize.checked_sub(x.len())?..)?
            .copy_from_slice(x);
        Some(out)
    };
    let sig = k256::ecdsa::Signature::from_scalars(pad(r)?, pad(s)?).ok()?;
    let low = sig.normalize_s()?;
    let (r, s) = low.split_bytes();
    Some(vec![
        pgp::types::Mpi::from_slice(&r),
        pgp::types::Mpi::from_slice(&s),
    ])
}

/// The policy's keys for one `signedBy` requirement.
pub(crate) struct Keyring {
    keys: Vec<SignedPublicKey>,
}

/// Reads the keys of key files (armored or binary, several keys each). Keys without a
/// valid self-signed user ID are left out, as gpg leaves them out when importing; no key
/// at all is an error ("No public keys imported").
pub(crate) fn load_keys(blobs: &[(String, Vec<u8>)]) -> Result<Keyring> {
    let mut keys = Vec::new();
    for (name, blob) in blobs {
        for b in armor_blocks(blob) {
            let Ok((iter, _)) = pgp::composed::PublicOrSecret::from_reader_many(b) else {
                continue;
            };
            for k in iter {
                let k = match k {
                    Ok(pgp::composed::PublicOrSecret::Public(k)) => k,
                    Ok(pgp::composed::PublicOrSecret::Secret(k)) => k.to_public_key(),
                    Err(e) => bail!("{name}: not an OpenPGP key: {}", brief(&e.to_string())),
                };
                if latest_self_signature(&k).is_some() {
                    keys.push(k);
                }
            }
        }
    }
    if keys.is_empty() {
        bail!("no public key could be read from the signedBy key files");
    }
    Ok(Keyring { keys })
}

/// The armored blocks of a key file (gpg imports every one of them), or the whole file
/// when it is binary.
fn armor_blocks(blob: &[u8]) -> Vec<&[u8]> {
    const BEGIN: &[u8] = b"-----BEGIN PGP";
    let starts: Vec<usize> = (0..blob.len())
        .filter(|&i| blob[i..].starts_with(BEGIN))
        .collect();
    if starts.is_empty() {
        return vec![blob];
    }
    starts
        .iter()
        .enumerate()
        .map(|(n, &a)| &blob[a..starts.get(n + 1).copied().unwrap_or(blob.len())])
        .collect()
}

impl Keyring {
    /// The primary keys' fingerprints.
    pub(crate) fn fingerprints(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| k.fingerprint().to_string().to_uppercase())
            .collect()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// When a component made at `created` expires, if `sig` gives it a lifetime.
fn expiry(created: u64, sig: &Signature) -> Option<u64> {
    sig.key_expiration_time()
        .map(|d| u64::from(d.as_secs()))
        .filter(|s| *s > 0)
        .map(|s| created + s)
}

/// The primary key's newest valid self-signature (user ID certifications and direct
/// key signatures): the one whose key flags and expiry apply.
fn latest_self_signature(k: &SignedPublicKey) -> Option<&Signature> {
    let certs = k.details.users.iter().flat_map(|u| {
        u.signatures.iter().filter(move |s| {
            s.verify_certification(&AsGnupg(&k.primary_key), Tag::UserId, &u.id)
                .is_ok()
        })
    });
    let direct = k
        .details
        .direct_signatures
        .iter()
        .filter(|s| s.verify_key(&AsGnupg(&k.primary_key)).is_ok());
    certs
        .chain(direct)
        .max_by_key(|s| s.created().map(|t| t.as_secs()).unwrap_or(0))
}

fn primary_revoked(k: &SignedPublicKey) -> bool {
    k.details
        .revocation_signatures
        .iter()
        .any(|s| s.verify_key(&AsGnupg(&k.primary_key)).is_ok())
}

/// Why the signing key cannot sign now, if it cannot.
fn key_unusable(k: &SignedPublicKey, sub: Option<&SignedPublicSubKey>, at: u64) -> Option<String> {
    let fpr = k.fingerprint().to_string().to_uppercase();
    if primary_revoked(k) {
        return Some(format!("key {fpr} is revoked"));
    }
    let selfsig = latest_self_signature(k)?;
    if let Some(exp) = expiry(k.primary_key.created_at().as_secs().into(), selfsig) {
        if exp <= at {
            return Some(format!("key {fpr} expired (at {exp}, Unix time)"));
        }
    }
    let sub = sub?;
    let sfpr = sub.key.fingerprint().to_string().to_uppercase();
    let mut bindings = Vec::new();
    for s in &sub.signatures {
        if s.verify_subkey_binding(&AsGnupg(&k.primary_key), &sub.key)
            .is_err()
        {
            continue;
        }
        match s.typ() {
            Some(SignatureType::SubkeyRevocation) => {
                return Some(format!("subkey {sfpr} of key {fpr} is revoked"))
            }
            Some(SignatureType::SubkeyBinding) => bindings.push(s),
            _ => {}
        }
    }
    let Some(binding) = bindings
        .into_iter()
        .max_by_key(|s| s.created().map(|t| t.as_secs()).unwrap_or(0))
    else {
        return Some(format!("subkey {sfpr} of key {fpr} has no valid binding"));
    };
    if !binding.key_flags().sign() {
        return Some(format!("subkey {sfpr} of key {fpr} may not sign"));
    }
    let backsig_ok = binding.embedded_signature().is_some_and(|b| {
        b.verify_primary_key_binding(&AsGnupg(&sub.key), &k.primary_key)
            .is_ok()
    });
    if !backsig_ok {
        return Some(format!(
            "subkey {sfpr} of key {fpr} has no valid back signature"
        ));
    }
    if let Some(exp) = expiry(sub.key.created_at().as_secs().into(), binding) {
        if exp <= at {
            return Some(format!(
                "subkey {sfpr} of key {fpr} expired (at {exp}, Unix time)"
            ));
        }
    }
    None
}

/// The payload of a simple signing signature, if it is a valid signature by one of the
/// keyring's keys (or their signing subkeys) that can sign now.
pub(crate) fn verify(sig: &[u8], keyring: &Keyring) -> Result<Vec<u8>> {
    let mut msg = Message::from_bytes(sig)
        .map_err(|e| anyhow!("not an OpenPGP message: {}", brief(&e.to_string())))?;
    for _ in 0..4 {
        if !msg.is_compressed() {
            break;
        }
        msg = msg
            .decompress()
            .map_err(|e| anyhow!("cannot decompress the signature: {}", brief(&e.to_string())))?;
    }
    if !msg.is_signed() {
        bail!("the OpenPGP message is not signed");
    }
    let payload = read_at_most(&mut msg, MAX_SIGNATURE_BYTES)
        .map_err(|e| anyhow!("cannot read the signed message: {}", brief(&e.to_string())))?
        .ok_or_else(|| anyhow!("the signed payload is too big"))?;
    if let Message::Signed { reader, .. } = &msg {
        let n = reader.num_signatures();
        if n != 1 {
            bail!("the message has {n} signatures; exactly one is accepted");
        }
    }
    let at = now();
    for k in &keyring.keys {
        let found = match msg.verify(&AsGnupg(k)) {
            Ok(signature) => Some((signature, None)),
            Err(_) => k.public_subkeys.iter().find_map(|s| {
                msg.verify(&AsGnupg(s))
                    .ok()
                    .map(|signature| (signature, Some(s)))
            }),
        };
        let Some((signature, sub)) = found else {
            continue;
        };
        if let Some(why) = key_unusable(k, sub, at) {
            bail!("{why}");
        }
        if let Some(why) = unhandled_critical(signature) {
            bail!("{why}");
        }
        if let (Some(created), Some(life)) =
            (signature.created(), signature.signature_expiration_time())
        {
            let exp = u64::from(created.as_secs()) + u64::from(life.as_secs());
            if life.as_secs() > 0 && exp <= at {
                bail!("the signature expired (at {exp}, Unix time)");
            }
        }
        return Ok(payload);
    }
    bail!(
        "it is not a valid signature by any of the policy's keys ({})",
        keyring.fingerprints().join(", ")
    )
}

/// The notations GnuPG handles when critical (g10/parse-packet.c,
/// `can_handle_critical_notation`), short of `--known-notation`, which GPGME does not set.
const KNOWN_CRITICAL_NOTATIONS: [&[u8]; 2] = [
    b"preferred-email-encoding@pgp.com",
    b"pka-address@gnupg.org",
];

/// Why GnuPG refuses a signature for a critical subpacket it cannot handle, if it does:
/// a critical notation it does not know, or a critical subpacket of an experimental or
/// unknown type (RFC 4880 5.2.3.1: such a signature must be treated as invalid).
fn unhandled_critical(sig: &Signature) -> Option<String> {
    use pgp::packet::SubpacketData;
    let config = sig.config()?;
    config
        .hashed_subpackets()
        .filter(|p| p.is_critical)
        .find_map(|p| match &p.data {
            SubpacketData::Notation(n) if !KNOWN_CRITICAL_NOTATIONS.contains(&n.name.as_ref()) => {
                Some(if n.name.iter().all(|c| c.is_ascii_graphic()) && n.name.len() <= 64 {
                    format!(
                        "the signature has a critical notation GnuPG does not know ({}): it is invalid",
                        String::from_utf8_lossy(&n.name)
                    )
                } else {
                    "the signature has a critical notation GnuPG does not know: it is invalid".into()
                })
            }
            SubpacketData::Experimental(t, _) | SubpacketData::Other(t, _) => Some(format!(
                "the signature has a critical subpacket of unknown type {t}: it is invalid"
            )),
            _ => None,
        })
}

/// What a simple signing payload claims.
#[derive(Debug)]
pub(crate) struct Claims {
    /// `critical.image.docker-manifest-digest`, validated as a digest.
    pub digest: String,
    /// `critical.identity.docker-reference`, unparsed.
    pub reference: String,
}

/// Reads a simple signing payload as containers/image's `untrustedSignature` does.
pub(crate) fn claims(payload: &[u8]) -> Result<Claims> {
    let text = std::str::from_utf8(payload).map_err(|_| anyhow!("the payload is not UTF-8"))?;
    let bad = |e: strict_json::StrictError| anyhow!("invalid signature payload: {e}");
    let top = strict_json::object(text).map_err(bad)?;
    top.exactly(&["critical", "optional"]).map_err(bad)?;
    let optional = top.object("optional").map_err(bad)?;
    optional.parse::<String>("creator").map_err(bad)?;
    if let Some(t) = optional.parse::<f64>("timestamp").map_err(bad)? {
        if t.fract() != 0.0 {
            bail!("invalid signature payload: optional.timestamp is not an integer");
        }
    }
    let critical = top.object("critical").map_err(bad)?;
    critical
        .exactly(&["type", "image", "identity"])
        .map_err(bad)?;
    let kind: String = critical.require("type").map_err(bad)?;
    if kind != SIGNATURE_TYPE {
        bail!("invalid signature payload: unrecognized signature type");
    }
    let image = critical.object("image").map_err(bad)?;
    image.exactly(&["docker-manifest-digest"]).map_err(bad)?;
    let digest: String = image.require("docker-manifest-digest").map_err(bad)?;
    valid_digest(&digest)?;
    let identity = critical.object("identity").map_err(bad)?;
    identity.exactly(&["docker-reference"]).map_err(bad)?;
    let reference: String = identity.require("docker-reference").map_err(bad)?;
    Ok(Claims { digest, reference })
}

/// A digest as go-digest's `Parse` accepts one: `ALG:HEX` of a known algorithm.
pub(crate) fn valid_digest(d: &str) -> Result<()> {
    let ok = match d.split_once(':') {
        Some(("sha256", h)) => h.len() == 64,
        Some(("sha384", h)) => h.len() == 96,
        Some(("sha512", h)) => h.len() == 128,
        _ => false,
    } && d.split_once(':').is_some_and(|(_, h)| {
        h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if !ok {
        bail!("invalid signature payload: docker-manifest-digest is not a valid digest");
    }
    Ok(())
}

/// An OpenPGP library message without the debugging detail some of them carry.
fn brief(s: &str) -> String {
    let s = s.split(", backtrace").next().unwrap_or(s);
    let s: String = s.chars().take(200).collect();
    s.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secp256k1_signatures_are_brought_to_low_s() {
        // n - 1 is the highest s: it becomes 1; a low s stays as it is (None).
        let n_minus_1 =
            hex::decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140")
                .unwrap();
        let low = low_s(&[7], &n_minus_1).unwrap();
        assert_eq!(low[0].as_ref(), [7]);
        assert_eq!(low[1].as_ref(), [1]);
        assert!(low_s(&[7], &[1]).is_none());
        // Not scalars: zero, or longer than the order.
        assert!(low_s(&[7], &[0]).is_none());
        assert!(low_s(&[7], &[1u8; 33]).is_none());
    }

    const D: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn payload(critical: &str, optional: Option<&str>) -> Vec<u8> {
        match optional {
            Some(o) => format!(r#"{{"critical":{critical},"optional":{o}}}"#),
            None => format!(r#"{{"critical":{critical}}}"#),
        }
        .into_bytes()
    }

    fn critical(extra: &str) -> String {
        format!(
            r#"{{"type":"atomic container signature","image":{{"docker-manifest-digest":"{D}"}},"identity":{{"docker-reference":"reg.example/a:1"}}{extra}}}"#
        )
    }

    #[test]
    fn payloads_as_containers_image_reads_them() {
        let c = claims(&payload(
            &critical(""),
            Some(r#"{"creator":"x","timestamp":1,"other":[1]}"#),
        ))
        .unwrap();
        assert_eq!(c.digest, D);
        assert_eq!(c.reference, "reg.example/a:1");
        // `optional` is required; unknown critical keys, a fractional timestamp, a creator
        // that is no string and a malformed digest are refused.
        assert!(claims(&payload(&critical(""), None)).is_err());
        assert!(claims(&payload(&critical(r#","x":1"#), Some("{}"))).is_err());
        assert!(claims(&payload(&critical(""), Some(r#"{"timestamp":1.5}"#))).is_err());
        assert!(claims(&payload(&critical(""), Some(r#"{"creator":1}"#))).is_err());
        let bad_digest = critical("").replace(D, "sha256:22");
        assert!(claims(&payload(&bad_digest, Some("{}"))).is_err());
        let other_type = critical("").replace("atomic container signature", "other");
        assert!(claims(&payload(&other_type, Some("{}"))).is_err());
    }
}
