//! Facts about machine-config-operator images: where their MCD builds live and what
//! they are called. The inspection (which looks for the builds) and the rules (which
//! read a build's RHEL from its name) take them from here.

/// Where MCO images keep their binaries.
pub const BIN_DIR: &str = "/usr/bin";
/// The name every MCD build starts with: the plain build is `BIN_DIR/MCD_NAME`, its
/// twins for other RHEL majors `BIN_DIR/MCD_NAME.rhelN`.
pub const MCD_NAME: &str = "machine-config-daemon";

use super::target::OcpVersion;

/// The RHEL majors of the MCD builds an MCO release's image ships, from its Dockerfile:
/// the plain build's, and its `.rhelN` twin's when it has one (4.6-4.12: one RHEL 8
/// static build; 4.13-4.15: RHEL 8 with a `.rhel9` twin; 4.16-4.22: RHEL 9 with a
/// `.rhel8` twin; 4.23 and later: RHEL 9 only).
pub fn builds_of_release(v: OcpVersion) -> (u32, Option<u32>) {
    let minor = if v.major > 4 { u32::MAX } else { v.minor };
    match minor {
        ..=12 => (8, None),
        13..=15 => (8, Some(9)),
        16..=22 => (9, Some(8)),
        _ => (9, None),
    }
}
