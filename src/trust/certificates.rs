//! The certificates of keyless (Fulcio) and PKI sigstore signatures, checked as
//! containers/image checks them (signature/fulcio_cert.go, signature/pki_cert.go):
//!
//! - the signing certificate is the one PEM certificate of the
//!   `dev.sigstore.cosign/certificate` annotation (`parseLeafCertFromPEM`); the
//!   `dev.sigstore.cosign/chain` annotation's certificates but the last are untrusted
//!   intermediates;
//! - the chain is verified to the policy's CA certificates (`fulcio.caData`, or
//!   `pki.caRootsData` with the trusted `pki.caIntermediatesData`) as Go's
//!   `x509.Certificate.Verify` does with the code-signing usage: every certificate of the
//!   path valid at the time (the Rekor SET's integrated time for Fulcio, now for PKI),
//!   signed by its issuer, issuers CAs within their path length, no unknown critical
//!   extension, and each certificate's extended key usages, when it has some, including
//!   code signing or any usage. Path building and signatures are rustls' WebPKI;
//! - Fulcio: the OIDC issuer extension (1.3.6.1.4.1.57264.1.1, raw, and/or
//!   1.3.6.1.4.1.57264.1.8, a DER string; both present must agree, duplicates are
//!   refused) is the policy's `oidcIssuer`, and one of the certificate's email SANs is
//!   `subjectEmail`;
//! - PKI: one email SAN is `subjectEmail` when given, and the certificate is valid for
//!   `subjectHostname` when given (DNS SANs, wildcards as Go's `VerifyHostname`, or IP
//!   SANs for an address);
//! - the certificate's public key then verifies the signature ([`super::sigstore`]).
//!
//! The certificates' signatures are verified as Go verifies them ([`CHAIN_ALGORITHMS`]):
//! WebPKI's algorithms, and before them RSA PKCS #1 v1.5 with keys from 1024 bits (Go's
//! floor; WebPKI's is 2048) and ECDSA P-224 and P-521 (which WebPKI lacks), with RustCrypto.
//! Where WebPKI is stricter than Go otherwise (a leaf that is itself a CA, a critical
//! certificatePolicies extension), such a chain is refused; docs/release.md says so.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Result};
use rustls::pki_types::{
    alg_id, AlgorithmIdentifier, CertificateDer, InvalidSignature, ServerName,
    SignatureVerificationAlgorithm, UnixTime,
};
use x509_cert::der::{Decode as _, Encode as _};

use super::keys::PublicKey;
use super::pem;

/// The Fulcio OIDC issuer extension, v1: the issuer as raw bytes (deprecated, still
/// accepted).
const OID_ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// The Fulcio OIDC issuer extension, v2: a DER string.
const OID_ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// id-ce-subjectAltName.
const OID_SAN: &str = "2.5.29.17";
/// id-kp-codeSigning, DER contents.
const EKU_CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
/// anyExtendedKeyUsage, DER contents.
const EKU_ANY: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// Parsed enough to be checked: the DER and the parsed certificate.
pub(crate) struct Certificate {
    der: Vec<u8>,
    cert: x509_cert::Certificate,
}

impl Certificate {
    fn parse(der: Vec<u8>) -> Result<Certificate> {
        let cert = x509_cert::Certificate::from_der(&der)
            .map_err(|e| anyhow!("not an X.509 certificate: {e}"))?;
        Ok(Certificate { der, cert })
    }

    fn extensions(&self) -> impl Iterator<Item = &x509_cert::ext::Extension> {
        self.cert.tbs_certificate.extensions.iter().flatten()
    }

    /// The email SANs (`Certificate.EmailAddresses`).
    fn emails(&self) -> Result<Vec<String>> {
        use x509_cert::ext::pkix::name::GeneralName;
        let mut out = Vec::new();
        for e in self
            .extensions()
            .filter(|e| e.extn_id.to_string() == OID_SAN)
        {
            let san = x509_cert::ext::pkix::SubjectAltName::from_der(e.extn_value.as_bytes())
                .map_err(|e| anyhow!("the certificate's subject alternative names: {e}"))?;
            for n in san.0 {
                if let GeneralName::Rfc822Name(m) = n {
                    out.push(m.to_string());
                }
            }
        }
        Ok(out)
    }

    /// The OIDC issuer of a Fulcio certificate (`fulcioIssuerInCertificate`).
    fn oidc_issuer(&self) -> Result<String> {
        let (mut v1, mut v2) = (None, None);
        for e in self.extensions() {
            let id = e.extn_id.to_string();
            if id == OID_ISSUER_V1 {
                if v1.is_some() {
                    bail!("Fulcio certificate has a duplicate OIDC issuer v1 extension");
                }
                v1 = Some(String::from_utf8_lossy(e.extn_value.as_bytes()).into_owned());
            } else if id == OID_ISSUER_V2 {
                if v2.is_some() {
                    bail!("Fulcio certificate has a duplicate OIDC issuer v2 extension");
                }
                v2 = Some(der_string(e.extn_value.as_bytes())?);
            }
        }
        match (v1, v2) {
            (Some(a), Some(b)) if a != b => {
                bail!("inconsistent OIDC issuer extension values (v1 and v2 differ)")
            }
            (Some(a), _) | (None, Some(a)) => Ok(a),
            (None, None) => bail!("Fulcio certificate is missing the issuer extension"),
        }
    }

    /// The certificate's public key.
    fn public_key(&self) -> Result<PublicKey> {
        let spki = self
            .cert
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .map_err(|e| anyhow!("the certificate's public key: {e}"))?;
        PublicKey::from_spki(&spki).map_err(|e| anyhow!("the certificate's public key: {e:#}"))
    }

    /// Verifies the path from this certificate to one of `roots` through
    /// `intermediates` at `time` (Unix seconds) for code signing.
    fn verify_chain(&self, roots: &[Vec<u8>], intermediates: &[Vec<u8>], time: i64) -> Result<()> {
        let leaf = CertificateDer::from(self.der.as_slice());
        let ee = webpki::EndEntityCert::try_from(&leaf)
            .map_err(|e| anyhow!("veryfing leaf certificate failed: {e}"))?;
        let root_ders: Vec<CertificateDer> = roots
            .iter()
            .map(|r| CertificateDer::from(r.as_slice()))
            .collect();
        let anchors: Vec<_> = root_ders
            .iter()
            .filter_map(|r| webpki::anchor_from_trusted_cert(r).ok())
            .collect();
        let inter: Vec<CertificateDer> = intermediates
            .iter()
            .map(|r| CertificateDer::from(r.as_slice()))
            .collect();
        let at = UnixTime::since_unix_epoch(Duration::from_secs(time.max(0) as u64));
        ee.verify_for_usage(
            CHAIN_ALGORITHMS,
            &anchors,
            &inter,
            at,
            CodeSigning,
            None,
            None,
        )
        .map_err(|e| anyhow!("veryfing leaf certificate failed: {}", chain_error(&e)))?;
        Ok(())
    }
}

/// A WebPKI verdict in words that do not quote the certificate.
fn chain_error(e: &webpki::Error) -> String {
    use webpki::Error as E;
    match e {
        E::CertExpired { .. } => {
            "the certificate has expired (at the time it is checked at)".into()
        }
        E::CertNotValidYet { .. } => {
            "the certificate is not valid yet (at the time it is checked at)".into()
        }
        E::UnknownIssuer => "x509: certificate signed by unknown authority".into(),
        E::RequiredEkuNotFoundContext(_) => {
            "x509: certificate specifies an incompatible key usage (not code signing)".into()
        }
        E::CaUsedAsEndEntity => "the signing certificate is a CA certificate".into(),
        E::UnsupportedCriticalExtension => {
            "a certificate has an unhandled critical extension".into()
        }
        E::InvalidSignatureForPublicKey => {
            "a certificate's signature does not verify with its issuer's public key".into()
        }
        E::UnsupportedSignatureAlgorithmContext(_)
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
            "a certificate is signed with an algorithm or an issuer key mcd-inject does not \
             support (RSA of 1024 to 16384 bits, ECDSA P-224/P-256/P-384/P-521, Ed25519 are)"
                .into()
        }
        // The variant's name only: the context some carry can quote the certificate.
        other => {
            let name: String = format!("{other:?}")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            format!("the certificate path is refused by WebPKI ({name})")
        }
    }
}

/// The algorithms a certificate path is verified with: Go's that WebPKI lacks first
/// (the first whose identifiers match decides), then WebPKI's own.
static CHAIN_ALGORITHMS: &[&dyn SignatureVerificationAlgorithm] = &[
    &RsaPkcs1 { hash: Hash::Sha256 },
    &RsaPkcs1 { hash: Hash::Sha384 },
    &RsaPkcs1 { hash: Hash::Sha512 },
    &Ecdsa {
        curve: Curve::P224,
        hash: Hash::Sha256,
    },
    &Ecdsa {
        curve: Curve::P224,
        hash: Hash::Sha384,
    },
    &Ecdsa {
        curve: Curve::P224,
        hash: Hash::Sha512,
    },
    &Ecdsa {
        curve: Curve::P521,
        hash: Hash::Sha256,
    },
    &Ecdsa {
        curve: Curve::P521,
        hash: Hash::Sha384,
    },
    &Ecdsa {
        curve: Curve::P521,
        hash: Hash::Sha512,
    },
    webpki::ring::ECDSA_P256_SHA256,
    webpki::ring::ECDSA_P256_SHA384,
    webpki::ring::ECDSA_P384_SHA256,
    webpki::ring::ECDSA_P384_SHA384,
    webpki::ring::ED25519,
    webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
];

#[derive(Debug, Clone, Copy)]
enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// The DER DigestInfo prefix of a hash of this kind (RFC 8017, 9.2).
    fn digest_info_prefix(self) -> &'static [u8] {
        match self {
            Hash::Sha256 => &[
                0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                0x01, 0x05, 0x00, 0x04, 0x20,
            ],
            Hash::Sha384 => &[
                0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                0x02, 0x05, 0x00, 0x04, 0x30,
            ],
            Hash::Sha512 => &[
                0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                0x03, 0x05, 0x00, 0x04, 0x40,
            ],
        }
    }

    fn digest(self, message: &[u8]) -> Vec<u8> {
        use sha2::Digest as _;
        match self {
            Hash::Sha256 => sha2::Sha256::digest(message).to_vec(),
            Hash::Sha384 => sha2::Sha384::digest(message).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(message).to_vec(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Curve {
    P224,
    P521,
}

/// RSA PKCS #1 v1.5 as Go's crypto/x509 verifies it: keys of 1024 to 16384 bits.
#[derive(Debug)]
struct RsaPkcs1 {
    hash: Hash,
}

impl SignatureVerificationAlgorithm for RsaPkcs1 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key = match PublicKey::rsa_from_pkcs1(public_key) {
            Ok(PublicKey::Rsa(k)) => k,
            _ => return Err(InvalidSignature),
        };
        let digest = self.hash.digest(message);
        let scheme = rsa::Pkcs1v15Sign {
            hash_len: Some(digest.len()),
            prefix: self.hash.digest_info_prefix().into(),
        };
        key.verify(scheme, &digest, signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        match self.hash {
            Hash::Sha256 => alg_id::RSA_PKCS1_SHA256,
            Hash::Sha384 => alg_id::RSA_PKCS1_SHA384,
            Hash::Sha512 => alg_id::RSA_PKCS1_SHA512,
        }
    }
}

/// ECDSA on the curves Go has and WebPKI lacks.
#[derive(Debug)]
struct Ecdsa {
    curve: Curve,
    hash: Hash,
}

/// The AlgorithmIdentifier contents of an EC key on P-224 (id-ecPublicKey, secp224r1).
const ECDSA_P224: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x21,
]);

impl SignatureVerificationAlgorithm for Ecdsa {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let key = match self.curve {
            Curve::P224 => ecdsa17::VerifyingKey::<p224::NistP224>::from_sec1_bytes(public_key)
                .map(PublicKey::P224)
                .map_err(|_| InvalidSignature)?,
            Curve::P521 => p521::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                .map(PublicKey::P521)
                .map_err(|_| InvalidSignature)?,
        };
        if key.verifies_ecdsa_hash(&self.hash.digest(message), signature) {
            Ok(())
        } else {
            Err(InvalidSignature)
        }
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        match self.curve {
            Curve::P224 => ECDSA_P224,
            Curve::P521 => alg_id::ECDSA_P521,
        }
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        match self.hash {
            Hash::Sha256 => alg_id::ECDSA_SHA256,
            Hash::Sha384 => alg_id::ECDSA_SHA384,
            Hash::Sha512 => alg_id::ECDSA_SHA512,
        }
    }
}

/// Go's extended key usage rule for `KeyUsages: [CodeSigning]`: a certificate without
/// the extension allows any usage; one with it must list code signing or any usage.
struct CodeSigning;

impl webpki::ExtendedKeyUsageValidator for CodeSigning {
    fn validate(&self, iter: webpki::KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        let wanted = [
            webpki::KeyPurposeId::new(EKU_CODE_SIGNING),
            webpki::KeyPurposeId::new(EKU_ANY),
        ];
        let mut present = Vec::new();
        for id in iter {
            let id = id?;
            if wanted.contains(&id) {
                return Ok(());
            }
            present.push(id.to_decoded_oid());
        }
        if present.is_empty() {
            Ok(())
        } else {
            Err(webpki::Error::RequiredEkuNotFoundContext(
                webpki::RequiredEkuNotFoundContext {
                    required: webpki::KeyUsage::required(EKU_CODE_SIGNING),
                    present,
                },
            ))
        }
    }
}

/// The string of a DER string value as Go's `asn1.Unmarshal` into a string reads it
/// (UTF8String, PrintableString, IA5String), nothing after it.
fn der_string(der: &[u8]) -> Result<String> {
    use x509_cert::der::asn1::{Ia5StringRef, PrintableStringRef, Utf8StringRef};
    let bad = || anyhow!("invalid ASN.1 in OIDC issuer v2 extension");
    let tag = *der.first().ok_or_else(bad)?;
    let s = match tag {
        0x0c => Utf8StringRef::from_der(der).map(|s| s.as_str().to_string()),
        0x13 => PrintableStringRef::from_der(der).map(|s| s.as_str().to_string()),
        0x16 => Ia5StringRef::from_der(der).map(|s| s.as_str().to_string()),
        _ => return Err(bad()),
    };
    // from_der refuses trailing data.
    s.map_err(|_| bad())
}

/// sigstore's `cryptoutils.UnmarshalCertificatesFromPEM`: every PEM block of `bytes`,
/// each an X.509 certificate, nothing else but whitespace between them.
fn certificates_from_pem(bytes: &[u8]) -> Result<Vec<Certificate>> {
    let mut out = Vec::new();
    let mut rest = pem::trim(bytes);
    while !rest.is_empty() {
        let (block, next) =
            pem::decode(rest).ok_or_else(|| anyhow!("error during PEM decoding"))?;
        out.push(Certificate::parse(block.bytes)?);
        rest = pem::trim(next);
    }
    Ok(out)
}

/// Go's `CertPool.AppendCertsFromPEM`: the `CERTIFICATE` blocks without headers that
/// parse; others are skipped.
pub(crate) fn pool_from_pem(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some((block, next)) = pem::decode(rest) {
        rest = next;
        if block.kind == "CERTIFICATE"
            && !block.has_headers
            && x509_cert::Certificate::from_der(&block.bytes).is_ok()
        {
            out.push(block.bytes);
        }
    }
    out
}

/// The signing certificate (`parseLeafCertFromPEM`).
fn leaf(cert_pem: &[u8]) -> Result<Certificate> {
    let mut certs =
        certificates_from_pem(cert_pem).map_err(|e| anyhow!("parsing leaf certificate: {e:#}"))?;
    match certs.len() {
        0 => bail!("no certificate found in signature certificate data"),
        1 => Ok(certs.remove(0)),
        _ => bail!("unexpected multiple certificates present in signature certificate data"),
    }
}

/// The intermediates of a chain annotation: all its certificates but the last.
fn chain_intermediates(chain_pem: Option<&[u8]>) -> Result<Vec<Vec<u8>>> {
    let Some(chain) = chain_pem.filter(|c| !c.is_empty()) else {
        return Ok(Vec::new());
    };
    let mut certs =
        certificates_from_pem(chain).map_err(|e| anyhow!("loading certificate chain: {e:#}"))?;
    certs.pop();
    Ok(certs.into_iter().map(|c| c.der).collect())
}

/// A `fulcio` trust root: the CA certificates, the OIDC issuer and the email.
#[derive(Clone, Debug)]
pub(crate) struct Fulcio {
    pub ca: Vec<Vec<u8>>,
    pub oidc_issuer: String,
    pub subject_email: String,
}

impl Fulcio {
    /// `verifyFulcioCertificateAtTime`: the certificate's public key, when the
    /// certificate chains to the CA at `time` and names the issuer and the email.
    pub(crate) fn verify_at(
        &self,
        time: i64,
        cert_pem: &[u8],
        chain_pem: Option<&[u8]>,
    ) -> Result<PublicKey> {
        let intermediates = chain_intermediates(chain_pem)?;
        let cert = leaf(cert_pem)?;
        cert.verify_chain(&self.ca, &intermediates, time)?;
        let issuer = cert.oidc_issuer()?;
        if issuer != self.oidc_issuer {
            bail!(
                "Unexpected Fulcio OIDC issuer (the certificate's is not the policy's oidcIssuer)"
            );
        }
        if !cert.emails()?.contains(&self.subject_email) {
            bail!(
                "Required email {:?} not found in the certificate",
                self.subject_email
            );
        }
        cert.public_key()
    }
}

/// A `pki` trust root: the roots, the trusted intermediates, the email and the host.
#[derive(Clone, Debug)]
pub(crate) struct Pki {
    pub roots: Vec<Vec<u8>>,
    pub intermediates: Vec<Vec<u8>>,
    pub subject_email: Option<String>,
    pub subject_hostname: Option<String>,
}

impl Pki {
    /// Reads `caIntermediatesData` as `prSigstoreSignedPKI.prepareTrustRoot` does.
    pub(crate) fn intermediates_from_pem(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(certificates_from_pem(bytes)
            .map_err(|e| anyhow!("loading trusted intermediate certificates: {e:#}"))?
            .into_iter()
            .map(|c| c.der)
            .collect())
    }

    /// `verifyPKI`, now: the certificate's public key, when the certificate chains to
    /// the roots and names the email and the host asked for.
    pub(crate) fn verify(&self, cert_pem: &[u8], chain_pem: Option<&[u8]>) -> Result<PublicKey> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.verify_at(now, cert_pem, chain_pem)
    }

    pub(crate) fn verify_at(
        &self,
        time: i64,
        cert_pem: &[u8],
        chain_pem: Option<&[u8]>,
    ) -> Result<PublicKey> {
        let mut intermediates = self.intermediates.clone();
        intermediates.extend(chain_intermediates(chain_pem)?);
        let cert = leaf(cert_pem)?;
        cert.verify_chain(&self.roots, &intermediates, time)?;
        if let Some(email) = &self.subject_email {
            if !cert.emails()?.contains(email) {
                bail!("Required email {email:?} not found in the certificate");
            }
        }
        if let Some(host) = &self.subject_hostname {
            let der = CertificateDer::from(cert.der.as_slice());
            let ee = webpki::EndEntityCert::try_from(&der)
                .map_err(|e| anyhow!("Unexpected subject hostname: {}", chain_error(&e)))?;
            let name = ServerName::try_from(host.as_str())
                .map_err(|_| anyhow!("Unexpected subject hostname: {host:?} is not a host name"))?;
            ee.verify_is_valid_for_subject_name(&name).map_err(|_| {
                anyhow!("Unexpected subject hostname: the certificate is not valid for {host:?}")
            })?;
        }
        cert.public_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        rcgen::CertificateParams::new(vec!["signer.example.com".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap()
            .pem()
    }

    #[test]
    fn pools_and_chains_read_as_go_reads_them() {
        let (a, b) = (cert_pem(), cert_pem());
        // AppendCertsFromPEM: CERTIFICATE blocks without headers that parse; the rest
        // is skipped, not an error.
        let with_headers = a.replacen(
            "-----BEGIN CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n",
            1,
        );
        let key_block = "-----BEGIN PUBLIC KEY-----\nAAEC\n-----END PUBLIC KEY-----\n";
        let broken = "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n";
        let pool = pool_from_pem(format!("junk\n{with_headers}{key_block}{broken}{b}").as_bytes());
        assert_eq!(pool.len(), 1);
        assert!(pool_from_pem(b"nothing").is_empty());
        // UnmarshalCertificatesFromPEM: every block must be a certificate, nothing else
        // but whitespace between them.
        assert_eq!(
            certificates_from_pem(format!("\n{a}\n{b}\n").as_bytes())
                .unwrap()
                .len(),
            2
        );
        assert!(certificates_from_pem(format!("{a}junk").as_bytes()).is_err());
        assert!(certificates_from_pem(broken.as_bytes()).is_err());
        // A chain annotation's last certificate (the root) is not an intermediate.
        assert_eq!(
            chain_intermediates(Some(format!("{a}{b}").as_bytes()))
                .unwrap()
                .len(),
            1
        );
        assert!(chain_intermediates(Some(b"")).unwrap().is_empty());
        assert!(chain_intermediates(None).unwrap().is_empty());
        // The signing certificate is exactly one.
        assert!(
            format!("{:#}", leaf(format!("{a}{b}").as_bytes()).err().unwrap())
                .contains("unexpected multiple certificates")
        );
        assert!(format!("{:#}", leaf(b"").err().unwrap()).contains("no certificate found"));
    }

    #[test]
    fn issuer_v2_strings_as_go_asn1_reads_them() {
        assert_eq!(der_string(b"\x0c\x03abc").unwrap(), "abc");
        assert_eq!(der_string(b"\x13\x03abc").unwrap(), "abc");
        assert_eq!(der_string(b"\x16\x03abc").unwrap(), "abc");
        // Trailing data, another type, a truncated value.
        assert!(der_string(b"\x0c\x03abcd").is_err());
        assert!(der_string(b"\x04\x03abc").is_err());
        assert!(der_string(b"\x0c\x05abc").is_err());
        assert!(der_string(b"").is_err());
    }
}
