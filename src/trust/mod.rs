//! Trust decisions: whether an image may be used, as containers/image decides it
//! (containers-policy.json(5), containers-registries.d(5)). The registry code calls
//! one entry point, `Policy::check_with`, with the image it is about to read
//! ([`Judged`]: its names, the digest and bytes of its manifest) and a source of its
//! sigstore attachments (`AttachmentSource`); local transports call
//! `Policy::check_local`. Nothing here touches the network but through that source
//! and the lookaside stores registries.d names.
//!
//! - `policy`: the policy file, its scopes and requirements, and the verdict;
//! - `image_policy`: OpenShift's ClusterImagePolicy and ImagePolicy objects, rendered
//!   into the policy and registries.d namespaces MCO writes for the node;
//! - `registries_d`: where signatures are stored (lookaside, sigstore attachments);
//! - `simple_signing`: OpenPGP "simple signing" signatures, verified with rPGP;
//! - `sigstore`: sigstore signatures (cosign's format): public keys, Fulcio
//!   certificates with Rekor SETs, or certificates of a private CA;
//! - `keys`: the public keys sigstore and Rekor verify with;
//! - `certificates`: X.509 chains of Fulcio and PKI signatures, as Go's `x509` checks them;
//! - `rekor`: Rekor signed entry timestamps (SETs) and the entries they sign;
//! - `pem`: PEM blocks as Go's `encoding/pem` finds them;
//! - `strict_json`: JSON read as strictly as containers/image reads it.

mod certificates;
pub(crate) mod image_policy;
mod keys;
mod pem;
pub(crate) mod policy;
mod registries_d;
mod rekor;
pub(crate) mod sigstore;
mod simple_signing;
mod strict_json;

pub use policy::{Judged, Policy, PolicyRejected, DEFAULT_POLICY, DEFAULT_REGISTRIES_D};
pub(crate) use sigstore::AttachmentSource;

/// The fuzz targets' view of the keyless parsers (`crate::fuzzing::keyless`).
pub(crate) mod fuzzing {
    use super::{certificates, keys::PublicKey, rekor};

    /// A Rekor SET for `cert` and `payload`, against a fixed P-256 Rekor key.
    pub(crate) fn check_set(set: &[u8], cert: &[u8], payload: &[u8]) {
        let key = p256::ecdsa::SigningKey::from_slice(&[7; 32]).expect("a valid scalar");
        let keys = [PublicKey::P256(*key.verifying_key())];
        let _ = rekor::verify_set(&keys, set, cert, "AAAA", payload);
    }

    /// A certificate and chain, as Fulcio's and as PKI's, the certificate's own blocks
    /// as the roots.
    pub(crate) fn check_certificate(cert: &[u8], chain: &[u8]) {
        let roots = certificates::pool_from_pem(cert);
        let fulcio = certificates::Fulcio {
            ca: roots.clone(),
            oidc_issuer: "https://issuer.example".into(),
            subject_email: "a@example.com".into(),
        };
        let _ = fulcio.verify_at(1_700_000_000, cert, Some(chain));
        let pki = certificates::Pki {
            roots,
            intermediates: certificates::Pki::intermediates_from_pem(chain).unwrap_or_default(),
            subject_email: Some("a@example.com".into()),
            subject_hostname: Some("signer.example.com".into()),
        };
        let _ = pki.verify_at(1_700_000_000, cert, Some(chain));
    }
}
