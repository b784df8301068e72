//! `mcd-inject` reads a machine-config-operator (MCO) container image, offline or from a
//! registry, picks the machine-config-daemon build that runs on a target bootimage, and
//! writes an Ignition config that delivers it.
//!
//! The library is split by concern:
//! - [`image`]: image references, transports, layers and the merged filesystem view.
//! - [`extract`]: one file out of an image, written atomically.
//! - [`inspect`]: what an image holds that matters here.
//! - [`registry`]: images from registries; the only module that touches the network.
//! - [`cache`]: the local OCI-layout cache that registry images go through.

pub mod cache;
pub mod cli;
pub mod extract;
pub mod image;
pub mod inspect;
pub mod osrelease;
pub mod output;
pub mod registry;
