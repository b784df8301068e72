//! The integration tests of mcd-inject, in one test binary: each module is one area, on
//! the built binary or the library, with the shared harness in [`harness`]. Data they read
//! is in `tests/data` and `tests/golden`, helper programs in `tests/support`.
//!
//! `cargo test --test it MODULE::` runs one area, e.g. `cargo test --test it registry::`.

mod harness;

mod boot;
mod bootimage_file;
mod cli;
mod closure;
mod container;
mod deploy;
mod extract_vs_umoci;
mod fuzz_inputs;
mod guidance;
mod hostile_images;
mod image_policy;
mod inject_ignition;
mod inject_large;
mod inject_layers;
mod inject_merge;
mod inject_select;
mod keyless;
mod layering;
mod mcs_renders;
mod node_view;
mod okd;
mod osrelease_table;
mod outputs;
mod persist_nics;
mod policy_conformance;
mod registry;
mod release;
mod reproducible;
mod secret_manifest;
mod secrets;
mod sigstore;
mod sigstore_conformance;
mod stand_ins;
mod translation;
mod vm;
