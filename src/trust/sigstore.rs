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
//!   generate-key-pair` makes), P-224, P-384 and P-521, Ed25519 and RSA (PKCS #1 v1.5),
//!   each over SHA-256 as sigstore's `LoadVerifier(key, crypto.SHA256)` verifies.
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

use super::certificates;
use super::keys::PublicKey;
use super::rekor;
use super::strict_json::{self, Object};
use crate::image::Digest;

/// The media type of a cosign signature layer (cosign's `SimpleSigningMediaType`).
pub(crate) const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature of the layer's bytes.
pub(crate) const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The layer annotation holding the Rekor SET (cosign's "bundle").
pub(crate) const SET_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// The layer annotation holding the signing certificate (PEM).
pub(crate) const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The layer annotation holding the certificate chain (PEM, intermediates then root).
pub(crate) const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// The media type an attachment manifest must be served with.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// At most this many layers in an attachment manifest.
pub(crate) const MAX_ATTACHMENT_LAYERS: usize = 64;
/// At most this many bytes per signature (containers/image's `MaxSignatureBodySize`).
pub(crate) const MAX_SIGNATURE_BYTES: u64 = 4 * 1024 * 1024;
/// The `critical.type` of a sigstore payload.
const SIGNATURE_TYPE: &str = "cosign container image signature";

// ------------------------------------------------------------------ the requirement

/// A `sigstoreSigned` requirement, `I` being the policy's `signedIdentity` type: where
/// its root of trust is (public keys, a Fulcio CA, or a private CA), its Rekor keys.
#[derive(Clone, Debug)]
pub(crate) struct SigstoreSigned<I> {
    root: RootSource,
    rekor: Option<KeySource>,
    signed_identity: I,
}

/// Where some PEM data is (`…Path`, `…Paths`, `…Data`, `…Datas`).
#[derive(Clone, Debug)]
enum KeySource {
    Path(String),
    Paths(Vec<String>),
    Data(Vec<u8>),
    Datas(Vec<Vec<u8>>),
}

/// The root of trust a requirement names.
#[derive(Clone, Debug)]
enum RootSource {
    Keys(KeySource),
    Fulcio {
        ca: KeySource,
        oidc_issuer: String,
        subject_email: String,
    },
    Pki {
        roots: KeySource,
        intermediates: Option<KeySource>,
        subject_email: Option<String>,
        subject_hostname: Option<String>,
    },
    /// `fulcio: null` or `pki: null`: why no trust root can be read.
    Empty(&'static str),
}

/// A requirement's root of trust, read and parsed (`prepareTrustRoot`).
pub(crate) struct TrustRoot {
    kind: RootKind,
    /// The Rekor keys (ECDSA); empty when the policy names none.
    rekor: Vec<PublicKey>,
}

enum RootKind {
    Keys(Vec<PublicKey>),
    Fulcio(certificates::Fulcio),
    Pki(certificates::Pki),
}

impl KeySource {
    /// The PEM data, each with a name for messages (its path, or `FIELD[N]`).
    fn load(&self, field: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let read = |p: &str| -> Result<(String, Vec<u8>)> {
            let b = std::fs::read(p).with_context(|| format!("reading {p} ({field})"))?;
            Ok((p.to_string(), b))
        };
        Ok(match self {
            KeySource::Path(p) => vec![read(p)?],
            KeySource::Paths(ps) => ps.iter().map(|p| read(p)).collect::<Result<_>>()?,
            KeySource::Data(d) => vec![(format!("{field}Data"), d.clone())],
            KeySource::Datas(ds) => ds
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("{field}Datas[{i}]"), d.clone()))
                .collect(),
        })
    }

    /// The one PEM file or value of a single source (`caPath`/`caData`...).
    fn load_one(&self, field: &str) -> Result<Vec<u8>> {
        Ok(self.load(field)?.remove(0).1)
    }
}

/// `…Path` or `…Data` of an object, one of them set (checked by the parser).
fn path_or_data(o: &Object, field: &str) -> Result<Option<KeySource>> {
    Ok(
        match (
            nonempty(o, &format!("{field}Path"))?,
            bytes(o, &format!("{field}Data"))?,
        ) {
            (Some(p), _) => Some(KeySource::Path(p)),
            (_, Some(d)) => Some(KeySource::Data(d)),
            _ => None,
        },
    )
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
fn fulcio(text: &str) -> Result<RootSource> {
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
    let Some(oidc_issuer) = nonempty(&o, "oidcIssuer")? else {
        bail!("fulcio: oidcIssuer not specified");
    };
    let Some(subject_email) = nonempty(&o, "subjectEmail")? else {
        bail!("fulcio: subjectEmail not specified");
    };
    Ok(RootSource::Fulcio {
        ca: path_or_data(&o, "ca")?.expect("one of caPath and caData"),
        oidc_issuer,
        subject_email,
    })
}

/// `pki`, as `prSigstoreSignedPKI.UnmarshalJSON` and `newPRSigstoreSignedPKI` check it.
fn pki(text: &str) -> Result<RootSource> {
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
    let subject_email = nonempty(&o, "subjectEmail")?;
    let subject_hostname = nonempty(&o, "subjectHostname")?;
    if subject_email.is_none() && subject_hostname.is_none() {
        bail!("pki: at least one of subjectEmail, subjectHostname must be specified");
    }
    Ok(RootSource::Pki {
        roots: path_or_data(&o, "caRoots")?.expect("one of caRootsPath and caRootsData"),
        intermediates: path_or_data(&o, "caIntermediates")?,
        subject_email,
        subject_hostname,
    })
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
        // A `null` fulcio or pki is a (zero) value in containers/image, and counts: the
        // policy loads, and its trust root fails to load for every image.
        let mut root = None;
        if let Some(v) = o.get("fulcio") {
            root = Some(if v.get() == "null" {
                RootSource::Empty(
                    "Fulcio specified with not exactly one of \"caPath\" nor \"caData\"",
                )
            } else {
                fulcio(v.get())?
            });
        }
        if let Some(v) = o.get("pki") {
            root = Some(if v.get() == "null" {
                RootSource::Empty(
                    "PKI specified with not exactly one of \"caRootsPath\" nor \"caRootsData\"",
                )
            } else {
                pki(v.get())?
            });
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
        let rekor_path = nonempty(o, "rekorPublicKeyPath")?;
        let rekor_paths = o
            .parse::<Option<Vec<String>>>("rekorPublicKeyPaths")?
            .flatten();
        let rekor_data = bytes(o, "rekorPublicKeyData")?;
        let rekor_datas = bytes_list(o, "rekorPublicKeyDatas")?;
        let rekor = [
            rekor_path.is_some(),
            rekor_paths.is_some(),
            rekor_data.is_some(),
            rekor_datas.is_some(),
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
        let rekor = match (rekor_path, rekor_paths, rekor_data, rekor_datas) {
            (Some(p), ..) => Some(KeySource::Path(p)),
            (_, Some(ps), ..) => Some(KeySource::Paths(ps)),
            (_, _, Some(d), _) => Some(KeySource::Data(d)),
            (.., Some(ds)) => Some(KeySource::Datas(ds)),
            _ => None,
        };
        let root = match (root, key_path, key_paths, key_data, key_datas) {
            (Some(r), ..) => r,
            (_, Some(p), ..) => RootSource::Keys(KeySource::Path(p)),
            (_, _, Some(ps), ..) => RootSource::Keys(KeySource::Paths(ps)),
            (_, _, _, Some(d), _) => RootSource::Keys(KeySource::Data(d)),
            (.., Some(ds)) => RootSource::Keys(KeySource::Datas(ds)),
            _ => unreachable!("exactly one source, checked above"),
        };
        Ok(SigstoreSigned {
            root,
            rekor,
            signed_identity,
        })
    }

    /// The `signedIdentity` (`matchRepoDigestOrExact` when not given).
    pub(crate) fn signed_identity(&self) -> &I {
        &self.signed_identity
    }

    /// The root of trust, read and parsed (`prepareTrustRoot`): an error names the file
    /// or field (its path, or `keyData`/`keyDatas[N]`...) and what is wrong with it.
    pub(crate) fn trust_root(&self) -> Result<TrustRoot> {
        let kind = match &self.root {
            RootSource::Empty(why) => bail!("{why}"),
            RootSource::Keys(src) => RootKind::Keys(
                src.load("key")?
                    .iter()
                    .map(|(name, pem)| {
                        PublicKey::from_pem(pem)
                            .with_context(|| format!("sigstore public key {name}"))
                    })
                    .collect::<Result<_>>()?,
            ),
            RootSource::Fulcio {
                ca,
                oidc_issuer,
                subject_email,
            } => {
                let ca = certificates::pool_from_pem(&ca.load_one("ca")?);
                if ca.is_empty() {
                    bail!("error loading Fulcio CA certificates (fulcio: no PEM CERTIFICATE in caPath or caData)");
                }
                RootKind::Fulcio(certificates::Fulcio {
                    ca,
                    oidc_issuer: oidc_issuer.clone(),
                    subject_email: subject_email.clone(),
                })
            }
            RootSource::Pki {
                roots,
                intermediates,
                subject_email,
                subject_hostname,
            } => {
                let roots = certificates::pool_from_pem(&roots.load_one("caRoots")?);
                if roots.is_empty() {
                    bail!("error loading PKI CA Roots certificates (pki: no PEM CERTIFICATE in caRootsPath or caRootsData)");
                }
                let intermediates = match intermediates {
                    Some(i) => {
                        certificates::Pki::intermediates_from_pem(&i.load_one("caIntermediates")?)?
                    }
                    None => Vec::new(),
                };
                RootKind::Pki(certificates::Pki {
                    roots,
                    intermediates,
                    subject_email: subject_email.clone(),
                    subject_hostname: subject_hostname.clone(),
                })
            }
        };
        let mut rekor = Vec::new();
        if let Some(src) = &self.rekor {
            for (i, (name, pem)) in src.load("rekorPublicKey")?.iter().enumerate() {
                let k = PublicKey::from_pem(pem)
                    .with_context(|| format!("parsing Rekor public key {} ({name})", i + 1))?;
                if !k.is_ecdsa() {
                    bail!("Rekor public key {} ({name}) is not using ECDSA", i + 1);
                }
                rekor.push(k);
            }
        }
        Ok(TrustRoot { kind, rekor })
    }
}

// ------------------------------------------------------------------ signatures

/// A PEM `PUBLIC KEY` block of `key` (`cryptoutils.MarshalPublicKeyToPEM`).
fn public_key_pem(key: &PublicKey) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(key.pkix_der());
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem.into_bytes()
}

/// Checks one sigstore signature (its payload and the annotations of its layer) as
/// `prSigstoreSigned.isSignatureAccepted` and `VerifySigstorePayload` do: the key that
/// must have made it (one of the public keys, with a Rekor SET naming it when the
/// policy has Rekor keys; or the key of a certificate that chains to the Fulcio CA at
/// the SET's time, or to the PKI roots now), then the signature by that key, over a
/// valid payload whose digest `digest` accepts and whose `docker-reference` `identity`
/// accepts, in that order. The error says why not.
pub(crate) fn verify(
    payload: &[u8],
    annotations: &BTreeMap<String, String>,
    root: &TrustRoot,
    digest: &dyn Fn(&str) -> Result<()>,
    identity: &dyn Fn(&str) -> Result<()>,
) -> Result<()> {
    let b64 = annotations
        .get(SIGNATURE_ANNOTATION)
        .ok_or_else(|| anyhow!("missing {SIGNATURE_ANNOTATION} annotation"))?;
    let annotation = |key: &str| {
        annotations
            .get(key)
            .map(|v| v.as_bytes())
            .ok_or_else(|| anyhow!("missing {key} annotation"))
    };
    let chain = annotations.get(CHAIN_ANNOTATION).map(|v| v.as_bytes());
    let (keys, whose): (Vec<PublicKey>, String) = match &root.kind {
        RootKind::Keys(keys) if root.rekor.is_empty() => {
            let kinds: Vec<&str> = keys.iter().map(PublicKey::kind).collect();
            let whose = format!(
                "any of the policy's {} key(s) ({})",
                keys.len(),
                kinds.join(", ")
            );
            (keys.clone(), whose)
        }
        RootKind::Keys(keys) => {
            let set = annotation(SET_ANNOTATION)?;
            let mut failures = Vec::new();
            let mut found = None;
            for k in keys {
                match rekor::verify_set(&root.rekor, set, &public_key_pem(k), b64, payload) {
                    Ok(_) => {
                        found = Some(k.clone());
                        break;
                    }
                    Err(e) => failures.push(format!("{e:#}")),
                }
            }
            let k = found.ok_or_else(|| {
                anyhow!(
                    "No public key verified against the RekorSET: {}",
                    failures.join(", ")
                )
            })?;
            let whose = format!("the policy's {} key the Rekor SET names", k.kind());
            (vec![k], whose)
        }
        RootKind::Fulcio(f) => {
            let set = annotation(SET_ANNOTATION)?;
            let cert = annotation(CERTIFICATE_ANNOTATION)?;
            let time = rekor::verify_set(&root.rekor, set, cert, b64, payload)?;
            let k = f.verify_at(time, cert, chain)?;
            let whose = format!("the {} key of its Fulcio certificate", k.kind());
            (vec![k], whose)
        }
        RootKind::Pki(p) => {
            let cert = annotation(CERTIFICATE_ANNOTATION)?;
            let k = p.verify(cert, chain)?;
            let whose = format!("the {} key of its certificate", k.kind());
            (vec![k], whose)
        }
    };
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.replace(['\r', '\n'], ""))
        .map_err(|_| anyhow!("the {SIGNATURE_ANNOTATION} annotation is not base64"))?;
    if !keys.iter().any(|k| k.verifies(payload, &raw)) {
        bail!(
            "cryptographic signature verification failed: not a signature of its payload by \
             {whose}"
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
            SigstoreSigned::parse(&o, |t| Ok(t.to_string()), "default".to_string())
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        let ok = [
            r#"{"keyPath":"/k"}"#,
            r#"{"keyPaths":["/k","/l"]}"#,
            r#"{"keyData":"AA=="}"#,
            r#"{"keyDatas":["AA==","AQ=="]}"#,
            r#"{"keyPath":"/k","signedIdentity":{"type":"matchRepository"}}"#,
            r#"{"keyPath":"/k","keyData":null}"#,
            // Keyless, private CA, keys with Rekor.
            r#"{"fulcio":{"caPath":"/ca","oidcIssuer":"https://issuer.example","subjectEmail":"a@example.com"},"rekorPublicKeyPath":"/r"}"#,
            r#"{"fulcio":{"caData":"AA==","oidcIssuer":"i","subjectEmail":"e"},"rekorPublicKeyDatas":["AA=="]}"#,
            r#"{"pki":{"caRootsPath":"/ca","subjectHostname":"signer.example"}}"#,
            r#"{"pki":{"caRootsData":"AA==","caIntermediatesData":"AA==","subjectEmail":"e"}}"#,
            r#"{"keyPath":"/k","rekorPublicKeyPath":"/r"}"#,
            r#"{"keyData":"AA==","rekorPublicKeyPaths":["/r","/s"]}"#,
            // A null fulcio or pki counts as one (and fails for every image).
            r#"{"fulcio":null,"rekorPublicKeyPath":"/r"}"#,
            r#"{"pki":null}"#,
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
        load(r#"{"type":"sigstoreSigned","pki":{"caRootsData":"AA==","subjectEmail":"a@example.com"}}"#).unwrap();
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
        // P-521 and P-224 keys (Go's crypto/ecdsa has them; cosign signs with SHA-256 on
        // any curve) are read, and written back as PKIX as they were.
        for (pem, kind) in [
            (
                "-----BEGIN PUBLIC KEY-----
MIGbMBAGByqGSM49AgEGBSuBBAAjA4GGAAQBGU4bIjVQ4aMTAw+O1Vd+k38Wv8q8
KlYXkDR+qTQyLKCEivzu+lseRgZZAOeSIE/grJDr0HV/yXEAvyjVKsnesJIAVVGP
ISxlspJgAXIJE0NLz8jGk0L0RAFVQ17ydVnha9qoiB0YxiQUj47ZooTL9Q3fWwB1
AZ5FewYMTjaXhd44k7I=
-----END PUBLIC KEY-----
",
                "ECDSA P-521",
            ),
            (
                "-----BEGIN PUBLIC KEY-----
ME4wEAYHKoZIzj0CAQYFK4EEACEDOgAE81NaKZv7lPoJnlRGJbzkxNqRysXJeRq2
cOW6vWRDLtyrJG6bY+h5f8tXQEre/9eGr3U54XMhWJQ=
-----END PUBLIC KEY-----
",
                "ECDSA P-224",
            ),
        ] {
            let k = PublicKey::from_pem(pem.as_bytes()).unwrap();
            assert_eq!(k.kind(), kind);
            let (block, _) = crate::trust::pem::decode(pem.as_bytes()).unwrap();
            assert_eq!(k.pkix_der(), block.bytes, "{kind}");
        }
        // Other PEM blocks are not keys; small RSA keys are refused.
        for (pem, want) in [
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
                &TrustRoot {
                    kind: RootKind::Keys(keys(k)),
                    rekor: Vec::new(),
                },
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
