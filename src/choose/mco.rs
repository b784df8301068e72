//! Facts about machine-config-operator images: where their MCD builds live and what
//! they are called. The inspection (which looks for the builds) and the rules (which
//! read a build's RHEL from its name) take them from here.

/// Where MCO images keep their binaries.
pub const BIN_DIR: &str = "/usr/bin";
/// The name every MCD build starts with: the plain build is `BIN_DIR/MCD_NAME`, its
/// twins for other RHEL majors `BIN_DIR/MCD_NAME.rhelN`.
pub const MCD_NAME: &str = "machine-config-daemon";
