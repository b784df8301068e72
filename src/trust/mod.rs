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
//! - `sigstore`: sigstore signatures (cosign's format), verified with a public key;
//! - `strict_json`: JSON read as strictly as containers/image reads it.

pub(crate) mod image_policy;
pub(crate) mod policy;
mod registries_d;
pub(crate) mod sigstore;
mod simple_signing;
mod strict_json;

pub use policy::{Judged, Policy, PolicyRejected, DEFAULT_POLICY, DEFAULT_REGISTRIES_D};
pub(crate) use sigstore::AttachmentSource;
