//! Rekor signed entry timestamps, as containers/image's `internal.VerifyRekorSET`
//! checks them, offline: the SET (cosign's `dev.sigstore.cosign/bundle` annotation) is
//! `{"SignedEntryTimestamp": base64, "Payload": {...}}`, exactly those keys; the
//! timestamp is an ECDSA signature, by one of the policy's Rekor keys, of the SHA-256
//! of the RFC 8785 canonical JSON of the payload; the payload is exactly `body`,
//! `integratedTime`, `logIndex` and `logID`; the body is a `hashedrekord` entry of API
//! version 0.0.1 whose public key (a PEM key or certificate) is the signer's, whose
//! signature is the signature's, and whose SHA-256 data hash is the payload's. The
//! entry's integrated time is what a Fulcio certificate is checked at.
//!
//! The SET and its payload are read as strictly as containers/image reads them
//! (`ParanoidUnmarshalJSONObjectExactFields`); the body as Go's `encoding/json` reads
//! the Rekor types (unknown keys ignored, `null` as missing).

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use sha2::Digest as _;

use super::keys::PublicKey;
use super::pem;
use super::strict_json;

/// The `hashedrekord` API version containers/image accepts.
const HASHEDREKORD_V001: &str = "0.0.1";

/// A Go `[]byte` in JSON: a base64 string, or `null` for none.
fn go_bytes(o: &strict_json::Object, key: &str) -> Result<Vec<u8>> {
    match o.parse::<Option<String>>(key)?.flatten() {
        None => Ok(Vec::new()),
        Some(s) => pem::go_base64(s.as_bytes()).ok_or_else(|| anyhow!("{key} is not base64")),
    }
}

#[derive(Deserialize)]
struct Hashedrekord {
    #[serde(default)]
    kind: Option<String>,
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    spec: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Deserialize)]
struct Spec {
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    signature: Option<SpecSignature>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(default)]
    hash: Option<Hash>,
}

#[derive(Deserialize)]
struct Hash {
    #[serde(default)]
    algorithm: Option<String>,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct SpecSignature {
    #[serde(default, deserialize_with = "go_bytes_field")]
    content: Vec<u8>,
    #[serde(rename = "publicKey", default)]
    public_key: Option<SpecKey>,
}

#[derive(Deserialize)]
struct SpecKey {
    #[serde(default, deserialize_with = "go_bytes_field")]
    content: Vec<u8>,
}

fn go_bytes_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(Vec::new()),
        Some(s) => pem::go_base64(s.as_bytes())
            .ok_or_else(|| serde::de::Error::custom("a []byte field is not base64")),
    }
}

/// A serde_json message without its position or any quoted value.
fn brief(e: &serde_json::Error) -> String {
    let s = e.to_string();
    s.split(" at line ")
        .next()
        .unwrap_or(&s)
        .chars()
        .take(160)
        .collect()
}

/// The single PEM block of `bytes`, nothing after it (`pem.Decode` with an empty rest).
fn only_block(bytes: &[u8], what: &str) -> Result<Vec<u8>> {
    let (b, rest) = pem::decode(bytes).ok_or_else(|| anyhow!("{what} is not in PEM format"))?;
    if !rest.is_empty() {
        bail!("{what} has trailing data");
    }
    Ok(b.bytes)
}

/// Verifies the SET `set` with `keys` (ECDSA) for a signature made by `key_or_cert` (a
/// PEM public key or certificate), its base64 signature `signature` and the signed
/// `payload`, as `VerifyRekorSET` does: the entry's integrated time (Unix seconds), or
/// why the SET is refused.
pub(crate) fn verify_set(
    keys: &[PublicKey],
    set: &[u8],
    key_or_cert: &[u8],
    signature: &str,
    payload: &[u8],
) -> Result<i64> {
    let text = std::str::from_utf8(set).map_err(|_| anyhow!("the Rekor SET is not UTF-8"))?;
    let o = strict_json::object(text).map_err(|e| anyhow!("the Rekor SET: {e}"))?;
    o.exactly(&["SignedEntryTimestamp", "Payload"])
        .map_err(|e| anyhow!("the Rekor SET: {e}"))?;
    let timestamp =
        go_bytes(&o, "SignedEntryTimestamp").map_err(|e| anyhow!("the Rekor SET: {e}"))?;
    let raw = o.get("Payload").expect("checked by exactly").get();
    let value: serde_json::Value = serde_json::from_str(raw)
        .map_err(|e| anyhow!("canonicalizing Rekor SET JSON: {}", brief(&e)))?;
    let canonical = serde_json_canonicalizer::to_vec(&value)
        .map_err(|e| anyhow!("canonicalizing Rekor SET JSON: {}", brief(&e)))?;
    let hash = sha2::Sha256::digest(&canonical);
    if !keys
        .iter()
        .any(|k| k.verifies_ecdsa_hash(&hash, &timestamp))
    {
        bail!("cryptographic signature verification of Rekor SET failed");
    }

    let text = std::str::from_utf8(&canonical).expect("canonical JSON is UTF-8");
    let p = strict_json::object(text).map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;
    p.exactly(&["body", "integratedTime", "logIndex", "logID"])
        .map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;
    let body = go_bytes(&p, "body").map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;
    let integrated: i64 = p
        .require("integratedTime")
        .map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;
    p.require::<i64>("logIndex")
        .map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;
    p.require::<String>("logID")
        .map_err(|e| anyhow!("parsing Rekor SET payload: {e}"))?;

    let entry: Hashedrekord = serde_json::from_slice(&body)
        .map_err(|e| anyhow!("decoding the body of a Rekor SET payload: {}", brief(&e)))?;
    if entry.kind.as_deref() != Some("hashedrekord") {
        bail!("decoding the body of a Rekor SET payload: invalid kind value (not hashedrekord)");
    }
    let version = entry
        .api_version
        .ok_or_else(|| anyhow!("missing Rekor SET Payload API version"))?;
    if version != HASHEDREKORD_V001 {
        bail!(
            "unsupported Rekor SET Payload hashedrekord version {:?}",
            version.chars().take(32).collect::<String>()
        );
    }
    let spec = entry
        .spec
        .ok_or_else(|| anyhow!("decoding hashedrekord spec: no spec"))?;
    let spec: Spec = serde_json::from_str(spec.get())
        .map_err(|e| anyhow!("decoding hashedrekord spec: {}", brief(&e)))?;
    let sig = spec
        .signature
        .ok_or_else(|| anyhow!(r#"Missing "signature" field in hashedrekord"#))?;
    let key = sig
        .public_key
        .ok_or_else(|| anyhow!(r#"Missing "signature.publicKey" field in hashedrekord"#))?;
    let logged = only_block(&key.content, "publicKey in Rekor SET")?;
    let given = only_block(
        key_or_cert,
        "public key or cert to be matched against publicKey in Rekor SET",
    )?;
    if logged != given {
        bail!("publicKey in Rekor SET does not match");
    }
    let raw_sig = pem::go_base64(signature.as_bytes())
        .ok_or_else(|| anyhow!("decoding signature base64 failed"))?;
    if sig.content != raw_sig {
        bail!("signature in Rekor SET does not match");
    }
    let hash = spec
        .data
        .ok_or_else(|| anyhow!(r#"Missing "data" field in hashedrekord"#))?
        .hash
        .ok_or_else(|| anyhow!(r#"Missing "data.hash" field in hashedrekord"#))?;
    let algorithm = hash
        .algorithm
        .ok_or_else(|| anyhow!(r#"Missing "data.hash.algorithm" field in hashedrekord"#))?;
    if algorithm != "sha256" {
        bail!(
            r#"Unexpected "data.hash.algorithm" value {:?}"#,
            algorithm.chars().take(32).collect::<String>()
        );
    }
    let value = hash
        .value
        .ok_or_else(|| anyhow!(r#"Missing "data.hash.value" field in hashedrekord"#))?;
    let logged_hash = hex::decode(&value)
        .map_err(|_| anyhow!(r#"Invalid "data.hash.value" field in hashedrekord"#))?;
    if logged_hash != sha2::Sha256::digest(payload).as_slice() {
        bail!("payload in Rekor SET does not match");
    }
    Ok(integrated)
}
