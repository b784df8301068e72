//! `mcd-inject` reads a machine-config-operator (MCO) container image, offline or from a
//! registry, picks the machine-config-daemon (MCD) build that runs on a target OpenShift
//! bootimage, and writes an Ignition config that delivers it.
//!
//! # The library API
//!
//! The jobs of the command line, as functions of plain config structs:
//! - [`inject::inject`] and [`inject::verify`] (configs [`inject::InjectConfig`],
//!   [`inject::VerifyConfig`]), with their JSON reports in [`report`];
//! - [`extract::extract`]: one file out of an image, written atomically;
//! - [`inspect::inspect`] and [`inspect::select`]: what an image holds that matters here,
//!   and the build chosen for a target;
//! - [`registry::pull`]: fill the local cache for later offline runs;
//! - [`release::resolve`]: the MCO image an OpenShift release image names.
//!
//! Their inputs and outputs: [`transport`] (opening an image of any transport:
//! [`transport::open`]), [`image`] (references, the on-disk transports, layers and the
//! merged file view; no network), [`registry`]'s
//! options (credentials, mirrors, signature policy), [`target`] (the bootimage table),
//! [`select`], [`elf`] and [`osrelease`] (verdicts and the facts they rest on),
//! [`mco`] (where MCO images keep their MCD builds), [`ignition`] (data URLs, specs,
//! their schemas), [`output`] (outputs that are complete or untouched) and
//! [`warnings`] (typed warnings, `--strict`).
//!
//! ```no_run
//! use mcd_inject::image::ImageRef;
//! use mcd_inject::transport::{self, OpenOptions};
//! use mcd_inject::inspect;
//!
//! let reference: ImageRef = "oci:fixtures/mco-small:latest".parse()?;
//! let img = transport::open(&reference, &OpenOptions::default())?;
//! let spool = tempfile::tempdir()?;
//! for b in inspect::inspect(&img, spool.path())?.binaries {
//!     println!("{} {}", b.sha256, b.path);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! The command line itself (clap types, completions, man pages, logging set-up, the
//! printing of results) is private: the binary calls [`run_cli`], and flags can change
//! without changing this API.

#![warn(missing_docs)]

mod app;
mod cache;
mod cli;
mod clidoc;
pub mod elf;
pub mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub mod ignition;
pub mod image;
pub mod inject;
pub mod inspect;
mod io;
mod json;
mod logging;
pub mod mco;
pub mod osrelease;
pub mod output;
mod payload;
pub mod registry;
pub mod release;
pub mod report;
pub mod select;
pub mod target;
mod tempfiles;
pub mod transport;
pub mod warnings;

/// The `mcd-inject` binary: parses this process's command line, runs it, and gives the
/// exit code. Not part of the library API.
#[doc(hidden)]
pub fn run_cli() -> std::process::ExitCode {
    app::main()
}
