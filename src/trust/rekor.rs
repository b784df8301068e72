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
    spec: Option<serde_json::Value>,
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

/// The field names of the hashedrekord entry's Go structs.
const FIELDS: &[&str] = &[
    "kind",
    "apiVersion",
    "spec",
    "data",
    "hash",
    "algorithm",
    "value",
    "signature",
    "content",
    "publicKey",
];

/// `value` with its object keys spelled as the struct fields Go's encoding/json decodes
/// them into: an exact name, else one equal under Unicode case folding (`Spec`,
/// `SPEC`, `ſpec` are `spec`), the later of two keys for one field winning.
fn go_field_names(value: serde_json::Value) -> serde_json::Value {
    fn fold(c: char) -> Option<char> {
        match c {
            '\u{17f}' => Some('s'),
            '\u{212a}' => Some('k'),
            c if c.is_ascii() => Some(c.to_ascii_lowercase()),
            _ => None,
        }
    }
    let folded = |s: &str| -> Option<String> { s.chars().map(fold).collect() };
    match value {
        serde_json::Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, v) in map {
                let name = if FIELDS.contains(&key.as_str()) {
                    key
                } else {
                    let f = folded(&key);
                    FIELDS
                        .iter()
                        .find(|n| f.is_some() && folded(n) == f)
                        .map_or(key, |n| n.to_string())
                };
                out.remove(&name);
                out.insert(name, go_field_names(v));
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(go_field_names).collect())
        }
        other => other,
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

    // The entry's keys are folded at every level against the names of all its structs:
    // a key that folds to another level's name is one no struct reads there.
    let entry: Hashedrekord = serde_json::from_slice::<serde_json::Value>(&body)
        .map(go_field_names)
        .and_then(serde_json::from_value)
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
    let spec: Spec = serde_json::from_value(spec)
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use p256::ecdsa::signature::Signer as _;

    const KEY_PEM: &str = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n";

    fn b64(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    /// A SET signed by `sk` over the canonical form of `payload` (a JSON object text),
    /// written as `payload` is.
    fn set(sk: &p256::ecdsa::SigningKey, payload: &str) -> Vec<u8> {
        let v: serde_json::Value = serde_json::from_str(payload).unwrap();
        let canonical = serde_json_canonicalizer::to_vec(&v).unwrap();
        let sig: p256::ecdsa::Signature = sk.sign(&canonical);
        format!(
            r#"{{"SignedEntryTimestamp":"{}","Payload":{payload}}}"#,
            b64(sig.to_der().as_bytes())
        )
        .into_bytes()
    }

    fn body(api: &str, algorithm: &str, payload: &[u8], sig: &str) -> String {
        b64(serde_json::json!({
            "apiVersion": api, "kind": "hashedrekord", "unknown": true,
            "spec": {"data": {"hash": {"algorithm": algorithm,
                                       "value": hex::encode(sha2::Sha256::digest(payload))}},
                     "signature": {"content": sig, "publicKey": {"content": b64(KEY_PEM.as_bytes())}}}
        })
        .to_string()
        .as_bytes())
    }

    #[test]
    fn sets_checked_as_verify_rekor_set_does() {
        let sk = p256::ecdsa::SigningKey::from_slice(&[5; 32]).unwrap();
        let keys = [PublicKey::P256(*sk.verifying_key())];
        let payload = b"the signed payload";
        let sig = b64(b"signature bytes");
        let entry = |body: &str, extra: &str| {
            format!(
                r#"{{"logID": "ab", "logIndex": 7, "integratedTime": 1700000000, "body": "{body}"{extra}}}"#
            )
        };
        let good = body("0.0.1", "sha256", payload, &sig);
        let check = |set: &[u8]| verify_set(&keys, set, KEY_PEM.as_bytes(), &sig, payload);
        // Unknown keys of the body are ignored (Go's encoding/json); the time comes back.
        assert_eq!(check(&set(&sk, &entry(&good, ""))).unwrap(), 1_700_000_000);
        // The body's keys match its fields as Go's encoding/json matches them: exactly,
        // else under case folding (the long s folds to s); the later of two wins.
        let decoded = |b: &str| {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b).unwrap()).unwrap()
        };
        for spelling in [r#""Spec""#, r#""SPEC""#, "\"\u{17f}pec\"", r#""PublicKey""#] {
            let from = if spelling.contains("ublic") {
                r#""publicKey""#
            } else {
                r#""spec""#
            };
            let folded = b64(decoded(&good).replacen(from, spelling, 1).as_bytes());
            assert_eq!(
                check(&set(&sk, &entry(&folded, ""))).unwrap(),
                1_700_000_000,
                "{spelling}"
            );
        }
        let shadowed = decoded(&good).replacen(r#""spec":"#, r#""spec":{},"Spec":"#, 1);
        assert_eq!(
            check(&set(&sk, &entry(&b64(shadowed.as_bytes()), ""))).unwrap(),
            1_700_000_000
        );
        let not_folded = decoded(&good).replacen(r#""spec""#, r#""spec_""#, 1);
        assert!(check(&set(&sk, &entry(&b64(not_folded.as_bytes()), ""))).is_err());

        let why = |set: &[u8]| format!("{:#}", check(set).unwrap_err());
        // The SET and its payload: exactly their keys (ParanoidUnmarshalJSONObjectExactFields).
        assert!(why(&set(&sk, &entry(&good, r#", "extra": 1"#))).contains("unknown key"));
        let mut extra_top = set(&sk, &entry(&good, ""));
        extra_top.pop();
        extra_top.extend_from_slice(br#","x":1}"#);
        assert!(why(&extra_top).contains("the Rekor SET: unknown key"));
        let no_index = r#"{"logID":"ab","integratedTime":1,"body":"e30="}"#;
        let e = why(&set(&sk, no_index));
        assert!(e.contains("logIndex") && e.contains("is missing"), "{e}");
        let float_time = entry(&good, "").replace("1700000000", "1.5");
        assert!(why(&set(&sk, &float_time)).contains("integratedTime"));
        // The entry: its version, its hash algorithm, its kind.
        assert!(why(&set(
            &sk,
            &entry(&body("0.0.2", "sha256", payload, &sig), "")
        ))
        .contains("unsupported Rekor SET Payload hashedrekord version"));
        assert!(why(&set(
            &sk,
            &entry(&body("0.0.1", "sha512", payload, &sig), "")
        ))
        .contains(r#"Unexpected "data.hash.algorithm""#));
        let other_kind = b64(br#"{"kind":"intoto","apiVersion":"0.0.1","spec":{}}"#);
        assert!(why(&set(&sk, &entry(&other_kind, ""))).contains("invalid kind"));
        let no_spec = b64(br#"{"kind":"hashedrekord","apiVersion":"0.0.1"}"#);
        assert!(why(&set(&sk, &entry(&no_spec, ""))).contains("hashedrekord spec"));
        let no_sig = b64(br#"{"kind":"hashedrekord","apiVersion":"0.0.1","spec":{"data":{}}}"#);
        assert!(why(&set(&sk, &entry(&no_sig, ""))).contains(r#"Missing "signature" field"#));
        // Another signature than the one logged.
        let other = verify_set(
            &keys,
            &set(&sk, &entry(&good, "")),
            KEY_PEM.as_bytes(),
            "AAAA",
            payload,
        );
        assert!(
            format!("{:#}", other.unwrap_err()).contains("signature in Rekor SET does not match")
        );
        // A key PEM with something after it.
        let trailing = format!("{KEY_PEM}\n");
        let e = verify_set(
            &keys,
            &set(&sk, &entry(&good, "")),
            trailing.as_bytes(),
            &sig,
            payload,
        );
        assert!(format!("{:#}", e.unwrap_err()).contains("has trailing data"));
        // Not JSON, not UTF-8.
        assert!(why(b"{").contains("the Rekor SET"));
        assert!(why(&[0xff]).contains("not UTF-8"));
    }
}
