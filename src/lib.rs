//! `mcd-inject` reads a machine-config-operator (MCO) container image, offline or from a
//! registry, picks the machine-config-daemon (MCD) build that runs on a target OpenShift
//! bootimage, and writes an Ignition config that delivers it.
//!
//! # The library API
//!
//! The modules follow the pipeline. The jobs, as functions of plain config structs:
//! - [`inject::inject`] ([`inject::InjectConfig`]): the main job;
//! - [`verify::verify`] ([`verify::VerifyConfig`]): a config checked as the node uses it;
//! - [`extract::extract`]: one file out of an image, written atomically;
//! - [`choose::inspect`]: what an image holds that matters here;
//! - [`registry::pull`]: fill the local cache for later offline runs;
//! - [`release::resolve`]: the MCO image an OpenShift release image names.
//!
//! What they rest on, each depending only on the ones after it:
//! - [`choose`]: the one place that decides the build of every boot:
//!   [`choose::select_boots`] answers, in one pass that reads as few layers as settle it,
//!   which build runs on each boot's OS; its rules ([`choose::rules`]), the bootimage table
//!   ([`choose::target`]), ELF and os-release facts, MCO's naming ([`choose::mco`]);
//! - [`bootimage`]: the build a bootimage file names (stream metadata, a qcow2 or raw
//!   disk image, a live ISO), for `--bootimage-file`;
//! - `payload` (private): the chosen build, gzip-compressed in fixed members;
//! - [`ignition`]: the neutral model of what goes on the node, its renderers per spec,
//!   merging with a base config, verification, schemas;
//! - [`transport`] (opening an image of any transport), [`registry`] (the `docker://`
//!   transport, its cache, credentials, mirrors, signature policy) and [`image`]
//!   (references, the on-disk transports, layers and the merged file view; no network);
//! - [`output`] (outputs that are complete or untouched), [`Input`], and [`warnings`]
//!   (typed warnings, returned in each job's report).
//!
//! ```no_run
//! use mcd_inject::image::ImageRef;
//! use mcd_inject::transport::{self, OpenOptions};
//! use mcd_inject::choose;
//!
//! let reference: ImageRef = "oci:fixtures/mco-small:latest".parse()?;
//! let img = transport::open(&reference, &OpenOptions::default(), &Default::default())?;
//! let spool = tempfile::tempdir()?;
//! for b in choose::inspect(&img, spool.path())?.binaries {
//!     println!("{} {}", b.sha256, b.path);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! The command line itself (clap types, completions, man pages, logging set-up, the
//! printing of results) is private: the binary calls [`run_cli`], and flags can change
//! without changing this API.

#![warn(missing_docs)]

mod cmdline;

pub mod extract;
pub mod inject;
pub mod release;
pub mod verify;

pub mod bootimage;
pub mod choose;
pub mod ignition;
pub mod image;
mod payload;
pub mod registry;
pub mod transport;
pub mod trust;
pub mod userdata;

mod io;
pub use io::{output, Input};
pub mod warnings;

#[doc(hidden)]
pub mod fuzzing;

/// The `mcd-inject` binary: parses this process's command line, runs it, and gives the
/// exit code. Not part of the library API.
#[doc(hidden)]
pub fn run_cli() -> std::process::ExitCode {
    cmdline::main()
}
