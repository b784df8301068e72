//! `mcd-inject` reads a machine-config-operator (MCO) container image, offline or from a
//! registry, picks the machine-config-daemon build that runs on a target bootimage, and
//! writes an Ignition config that delivers it.
//!
//! The library is split by concern:
//! - [`transport`]: opens an image of any transport ([`transport::open`]).
//! - [`image`]: image references, the on-disk transports, layers and the merged
//!   filesystem view; no network.
//! - [`extract`]: one file out of an image, written atomically.
//! - [`inspect`]: what an image holds that matters here.
//! - [`registry`]: images from registries; the only module that touches the network.
//! - [`cache`]: the local OCI-layout cache that registry images go through.
//! - [`elf`], [`target`], [`select`]: ELF facts of candidate binaries, the bootimage
//!   table, and verdicts with reasons.
//! - [`ignition`]: the neutral config model, its renderers, merging and checking.
//! - [`inject`]: the main job, and `verify`; [`report`]: their `--json` reports.
//! - [`release`]: the MCO image an OpenShift release image names.
//! - [`cli`], [`clidoc`], [`logging`]: the command line, its completions and man pages,
//!   and diagnostics on stderr.

pub mod cache;
pub mod cli;
pub mod clidoc;
pub mod elf;
pub mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub mod ignition;
pub mod image;
pub mod inject;
pub mod inspect;
pub mod io;
pub mod json;
pub mod logging;
pub mod osrelease;
pub mod output;
pub mod registry;
pub mod release;
pub mod report;
pub mod select;
pub mod target;
pub mod tempfiles;
pub mod transport;
