//! The bootimages a config can target: one table, as data, with a source for each row.
//!
//! A row says what the RHCOS bootimage of one OpenShift minor version offers to the
//! binary (RHEL major, glibc, libcrypto) and to the config (Ignition generation, the
//! newest spec it reads, the spec written by default). A release newer than the table
//! becomes a target only when the user gives both facts a row would: its RHEL major and
//! the spec its Ignition reads.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::choose::elf::DottedVersion;
use crate::choose::osrelease::OsRelease;
use crate::ignition::SpecVersion;
use IgnitionGeneration::{V0, V2};
use SpecVersion::{V2_2, V3_0, V3_1, V3_2, V3_3, V3_4};

/// An OpenShift minor version, `X.Y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OcpVersion {
    /// `4` in `4.2`.
    pub major: u32,
    /// `2` in `4.2`.
    pub minor: u32,
}

/// Why a bootimage version was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VersionError {
    /// Not `X.Y`.
    #[error("invalid bootimage version {0:?}: expected X.Y, e.g. 4.2")]
    Syntax(String),
    /// Newer than the table.
    #[error(
        "unknown bootimage {0}: {newest} is the newest release the table knows (it covers \
         {first} to {newest}); for a newer bootimage, give its RHEL with --target-os-release FILE \
         (its os-release) or --target-rhel N, and the Ignition spec it reads with --spec VERSION \
         (verify takes the config's own spec)",
        first = first_known(), newest = newest_known()
    )]
    Unknown(OcpVersion),
    /// Older than the first RHCOS bootimage.
    #[error("unknown bootimage {0}: the table starts at {first}, the first RHCOS bootimage", first = first_known())]
    TooOld(OcpVersion),
    /// An OKD bootimage the table lacks.
    #[error("unknown bootimage {0}: the table's OKD rows are {1}")]
    UnknownOkd(BootimageId, String),
}

/// The oldest release of the table.
pub fn first_known() -> OcpVersion {
    rhcos_releases().next().expect("the table has RHCOS rows")
}

/// The newest release of the table.
pub fn newest_known() -> OcpVersion {
    rhcos_releases().last().expect("the table has RHCOS rows")
}

/// The OpenShift releases of the table's RHCOS rows, in order.
fn rhcos_releases() -> impl Iterator<Item = OcpVersion> {
    BOOTIMAGES.iter().filter_map(|b| b.id.ocp())
}

impl OcpVersion {
    /// The `X.Y` of a release's version (`4.15.0`, `v4.16.3`, `4.7.0-0.okd-…`).
    pub fn of_release(version: &str) -> Option<OcpVersion> {
        let version = version.strip_prefix('v').unwrap_or(version);
        let xy = version.split('.').take(2).collect::<Vec<_>>().join(".");
        xy.parse().ok()
    }
}

impl FromStr for OcpVersion {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || VersionError::Syntax(s.to_string());
        let (a, b) = s.split_once('.').ok_or_else(bad)?;
        let num = |x: &str| {
            if x.is_empty() || !x.bytes().all(|c| c.is_ascii_digit()) || x.len() > 4 {
                None
            } else {
                x.parse().ok()
            }
        };
        Ok(OcpVersion {
            major: num(a).ok_or_else(bad)?,
            minor: num(b).ok_or_else(bad)?,
        })
    }
}

impl fmt::Display for OcpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for OcpVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Which Ignition program a bootimage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IgnitionGeneration {
    /// Ignition v0.x: reads spec 1.x and 2.x only.
    V0,
    /// Ignition v2.x: reads spec 3.x only.
    V2,
}

/// The OS a binary meets on a node, as far as its glibc, its OpenSSL and MCO's choice of
/// build care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostOs {
    /// RHEL, or an OS built from it or like it (RHCOS; CentOS Stream CoreOS, whose
    /// os-release says `ID_LIKE="rhel fedora"`): MCO's re-exec names builds for its major
    /// `machine-config-daemon.rhelN`.
    Rhel(u32),
    /// Fedora CoreOS: not like RHEL, so MCO's re-exec always gives it the plain
    /// `machine-config-daemon` (pkg/daemon/daemon.go, `ReexecuteForTargetRoot`: a suffix
    /// only when both the image and the host are like RHEL).
    Fedora(u32),
}

impl HostOs {
    /// The RHEL major, for an OS like RHEL.
    pub fn rhel(self) -> Option<u32> {
        match self {
            HostOs::Rhel(m) => Some(m),
            HostOs::Fedora(_) => None,
        }
    }

    /// The Fedora major, for Fedora CoreOS.
    pub fn fedora(self) -> Option<u32> {
        match self {
            HostOs::Fedora(m) => Some(m),
            HostOs::Rhel(_) => None,
        }
    }

    /// The reference values of this OS.
    pub fn base(self) -> Option<OsBase> {
        RHEL.iter().chain(&FEDORA).copied().find(|r| r.os == self)
    }

    /// How reports and the provenance record it: `("rhel", 9)`, `("fedora", 33)`.
    pub fn key(self) -> (&'static str, u32) {
        match self {
            HostOs::Rhel(m) => ("rhel", m),
            HostOs::Fedora(m) => ("fedora", m),
        }
    }
}

impl fmt::Display for HostOs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostOs::Rhel(m) => write!(f, "RHEL {m}"),
            HostOs::Fedora(m) => write!(f, "Fedora {m}"),
        }
    }
}

impl Serialize for HostOs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What one OS major version offers a dynamic binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OsBase {
    /// The OS and its major version.
    pub os: HostOs,
    /// Its glibc version.
    pub glibc: &'static str,
    /// Its libcrypto soname.
    pub libcrypto: &'static str,
    /// Its libssl soname.
    pub libssl: &'static str,
    /// The version of the kernel it ships (its first minor's; the major keeps it).
    pub kernel: &'static str,
}

/// RHEL reference values (docs/design.md, "ELF reference values"). glibc keeps its upstream version for the whole
/// life of a RHEL major, so a row's minor release never changes these.
pub const RHEL: [OsBase; 4] = [
    OsBase {
        os: HostOs::Rhel(7),
        kernel: "3.10",
        glibc: "2.17",
        libcrypto: "libcrypto.so.10",
        libssl: "libssl.so.10",
    },
    OsBase {
        os: HostOs::Rhel(8),
        kernel: "4.18",
        glibc: "2.28",
        libcrypto: "libcrypto.so.1.1",
        libssl: "libssl.so.1.1",
    },
    OsBase {
        os: HostOs::Rhel(9),
        kernel: "5.14",
        glibc: "2.34",
        libcrypto: "libcrypto.so.3",
        libssl: "libssl.so.3",
    },
    // RHEL 10 is branched from Fedora 40 (glibc 2.39); OpenSSL 3.x keeps the `.so.3`
    // sonames, so a RHEL 9 build runs on it and a RHEL 10 one needing GLIBC_2.35+ does
    // not run on RHEL 9 (which is why MCO's re-exec picks `.rhel9` twins for RHEL 9 hosts).
    OsBase {
        os: HostOs::Rhel(10),
        kernel: "6.12",
        glibc: "2.39",
        libcrypto: "libcrypto.so.3",
        libssl: "libssl.so.3",
    },
];

/// Fedora CoreOS reference values (Fedora's own: the glibc and kernel of each release at
/// its GA; OpenSSL 1.1 up to Fedora 35, and only 3.x, with the `.so.3` sonames, from 36).
pub const FEDORA: [OsBase; 9] = [
    fedora(31, "2.30", "1.1", "5.3"),
    fedora(32, "2.31", "1.1", "5.6"),
    fedora(33, "2.32", "1.1", "5.8"),
    fedora(34, "2.33", "1.1", "5.11"),
    fedora(35, "2.34", "1.1", "5.14"),
    fedora(36, "2.35", "3", "5.17"),
    fedora(37, "2.36", "3", "6.0"),
    fedora(38, "2.37", "3", "6.2"),
    fedora(39, "2.38", "3", "6.5"),
];

const fn fedora(major: u32, glibc: &'static str, openssl: &str, kernel: &'static str) -> OsBase {
    let three = openssl.len() == 1;
    OsBase {
        os: HostOs::Fedora(major),
        glibc,
        libcrypto: if three {
            "libcrypto.so.3"
        } else {
            "libcrypto.so.1.1"
        },
        libssl: if three {
            "libssl.so.3"
        } else {
            "libssl.so.1.1"
        },
        kernel,
    }
}

/// The RHEL reference values of a major version.
pub fn rhel(major: u32) -> Option<OsBase> {
    HostOs::Rhel(major).base()
}

/// A bootimage of the table: the RHCOS of an OpenShift release, or an OKD one (Fedora
/// CoreOS, CentOS Stream CoreOS) by its OS major, which is all a binary and a config meet
/// of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BootimageId {
    /// The RHCOS bootimage of an OpenShift release, `4.2`.
    Rhcos(OcpVersion),
    /// A Fedora CoreOS bootimage, by its Fedora major: `fcos-33`.
    Fcos(u32),
    /// A CentOS Stream CoreOS bootimage, by its CentOS Stream major: `scos-9`.
    Scos(u32),
}

impl BootimageId {
    /// The OpenShift release, for an RHCOS bootimage.
    pub fn ocp(self) -> Option<OcpVersion> {
        match self {
            BootimageId::Rhcos(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for BootimageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootimageId::Rhcos(v) => v.fmt(f),
            BootimageId::Fcos(m) => write!(f, "fcos-{m}"),
            BootimageId::Scos(m) => write!(f, "scos-{m}"),
        }
    }
}

impl FromStr for BootimageId {
    type Err = VersionError;
    /// `4.2`, `fcos-33`, `scos-9`: what [`BootimageId`]'s `Display` writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let major = |m: &str| {
            (!m.is_empty() && m.len() <= 3 && m.bytes().all(|c| c.is_ascii_digit()))
                .then(|| m.parse().ok())
                .flatten()
                .ok_or_else(|| VersionError::Syntax(s.to_string()))
        };
        if let Some(m) = s.strip_prefix("fcos-") {
            return Ok(BootimageId::Fcos(major(m)?));
        }
        if let Some(m) = s.strip_prefix("scos-") {
            return Ok(BootimageId::Scos(major(m)?));
        }
        s.parse().map(BootimageId::Rhcos)
    }
}

impl Serialize for BootimageId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One row of the table.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bootimage {
    /// The bootimage.
    pub id: BootimageId,
    /// Its OS, as a binary meets it.
    pub os: HostOs,
    /// The RHEL release of an RHCOS bootimage, `major.minor` (`8.x` where the minor is not
    /// pinned; only the major matters to a binary); empty for OKD rows.
    pub rhel_release: &'static str,
    /// The glibc version of its OS.
    pub glibc: &'static str,
    /// The libcrypto soname of its OS.
    pub libcrypto: &'static str,
    /// The kernel version of its OS (its major's).
    pub kernel: &'static str,
    /// The Ignition it runs at first boot.
    pub ignition: IgnitionGeneration,
    /// The Ignition release the bootimage ships, as far as public sources pin it.
    pub ignition_release: &'static str,
    /// The newest spec the bootimage's Ignition reads.
    pub max_spec: SpecVersion,
    /// The spec written unless `--spec` says otherwise.
    pub default_spec: SpecVersion,
    /// What the row rests on.
    pub source: &'static str,
}

impl Bootimage {
    /// The OS, as the docs' table names it: `RHEL 8.0`, `Fedora 33`, `CentOS Stream 9`.
    pub fn os_name(&self) -> String {
        match (self.id, self.os) {
            (BootimageId::Rhcos(_), _) => format!("RHEL {}", self.rhel_release),
            (BootimageId::Scos(m), _) => format!("CentOS Stream {m}"),
            (_, os) => os.to_string(),
        }
    }
}

const fn v(major: u32, minor: u32) -> OcpVersion {
    OcpVersion { major, minor }
}

const RHEL8_V0: &str = "RHCOS 4.1-4.5 is RHEL 8 (glibc 2.28, OpenSSL 1.1) with Ignition v0.x, \
which reads spec 2.x only; the MCS of these releases serves spec 2.2.0";

/// Why 3.2.0 is the default of the spec 3 rows from 4.7 on.
macro_rules! default_32 {
    () => {
        "default 3.2.0: read by every Ignition from v2.7, the spec of the installer's pointer \
         configs from 4.7 on; a newer --base raises it, up to the newest spec of the row"
    };
}

/// Why the rows from 4.19 on keep spec 3.4 as their newest: no public source names the
/// Ignition release of these bootimages. The floor is 3.4: 4.18.0 already shipped
/// Ignition 2.18.0, and the RHCOS base images of RHEL 9.6, 9.8 and 10.2 boot a spec 3.4
/// config in their own tests. 3.5 (Ignition v2.20.0) is not proven: Butane's `openshift`
/// 4.19.0-4.22.0 specs target 3.5.0, but that is what the MCO of those releases
/// accepts, and the MCS translates down to whatever older spec a bootimage asks for.
macro_rules! spec_34 {
    () => {
        "newest spec 3.4: Ignition 2.18.0 is in 4.18.0 already (ocp-build-data openshift-4.18 \
         releases.yml), and rhel-coreos-config's kola test fcoe (Butane fcos 1.5.0, spec 3.4.0) \
         boots the RHEL 9.6, 9.8 and 10.2 CoreOS bases; no public source pins an Ignition of \
         v2.20.0 or later (spec 3.5) in these bootimages, so --spec 3.5 and 3.6 are refused"
    };
}

/// The table. Rows are in version order; `glibc` and `libcrypto` follow `rhel`.
pub const BOOTIMAGES: &[Bootimage] = &[
    row(v(4, 1), 8, "8.0", V0, "v0.x", V2_2, V2_2,
        "RHCOS 41.8x (RHEL 8.0) with Ignition v0.x; no RHEL_VERSION in os-release, MCO maps it to RHEL 8; ships pivot.service"),
    row(v(4, 2), 8, "8.0", V0, "v0.x", V2_2, V2_2,
        "RHCOS 42.80 (RHEL 8.0) with Ignition v0.x; its baked-in MCD lacks firstboot-complete-machineconfig"),
    row(v(4, 3), 8, "8.x", V0, "v0.x", V2_2, V2_2, RHEL8_V0),
    row(v(4, 4), 8, "8.x", V0, "v0.x", V2_2, V2_2, RHEL8_V0),
    row(v(4, 5), 8, "8.x", V0, "v0.x", V2_2, V2_2, RHEL8_V0),
    row(v(4, 6), 8, "8.2", V2, "v2.6", V3_1, V3_1,
        "RHCOS 46.82 (RHEL 8.2) moved to Ignition v2 (v2.6: spec 3.1 from v2.3); installer and MCS write spec 3.1.0"),
    row(v(4, 7), 8, "8.3", V2, "v2.9", V3_2, V3_2,
        "RHCOS 47.83 (RHEL 8.3), Ignition v2.9 (spec 3.2 from v2.7); installer pointer configs are spec 3.2.0 from here on"),
    row(v(4, 8), 8, "8.4", V2, "v2.9-v2.10", V3_2, V3_2,
        "RHCOS 48.84 (RHEL 8.4), Ignition v2.9-v2.10: spec 3.2 is the newest it reads"),
    row(v(4, 9), 8, "8.4", V2, "v2.12.0", V3_3, V3_2,
        "RHCOS 49.84 (RHEL 8.4 EUS: openshift/os docs/faq.md, RHEL table); Ignition 2.12.0 \
         (ignition-2.12.0-1.rhaos4.9.el8: the rpm label of 4.9.0-rc.1's machine-os-content quoted \
         in openshift/os docs/faq.md; the 4.9 bootimage is built from the same rhaos-4.9 \
         packages, though no public source lists its own rpms), so spec 3.3 (stable from \
         v2.11.0); default 3.2.0 as the installer writes"),
    row(v(4, 10), 8, "8.4", V2, "not pinned (v2.x)", V3_2, V3_2,
        "RHCOS 410.84 (RHEL 8.4 EUS: openshift/os docs/faq.md; bootimage 410.84.202201251203-0 in \
         the installer's stream metadata); no public source names its Ignition release, so the \
         newest spec stays 3.2, the one every 4.7+ bootimage reads"),
    row(v(4, 11), 8, "8.6", V2, "v2.14", V3_3, V3_2,
        "RHCOS 411.86 (RHEL 8.6), Ignition v2.14 (spec 3.3 from v2.11); installer still writes 3.2.0"),
    row(v(4, 12), 8, "8.6", V2, "v2.14", V3_3, V3_2,
        "RHCOS 412.86 (RHEL 8.6), Ignition v2.14; the last RHEL 8 based RHCOS"),
    row(v(4, 13), 9, "9.2", V2, "v2.15.0", V3_4, V3_2,
        "RHCOS 413.92 (RHEL 9.2: glibc 2.34, OpenSSL 3; installer bootimage stream 4.13-9.2, \
         413.92.202401100947-0 in installer PR #7920), the first RHEL 9 based RHCOS; Ignition 2.15.0 \
         (ignition-2.15.0-1.el9 from RHEL 9.2 AppStream, openshift/os PR #1188), so spec 3.4 \
         (stable from v2.15.0); default 3.2.0 as the installer writes"),
    row(v(4, 14), 9, "9.2", V2, "v2.16", V3_4, V3_2,
        "RHCOS 414.92 (RHEL 9.2), Ignition v2.16 (spec 3.4 from v2.15); installer writes 3.2.0"),
    row(v(4, 15), 9, "9.2", V2, "v2.16.2", V3_4, V3_2,
        "RHCOS 415.92 (RHEL 9.2), Ignition 2.16.2 (ocp-build-data openshift-4.15 releases.yml: \
         the 4.15.26 assembly pins ignition-2.16.2-2.2.rhaos4.15.el9 as installed in RHCOS)"),
    row(v(4, 16), 9, "9.4", V2, "v2.18.0", V3_4, V3_2,
        "RHCOS 416.94 (RHEL 9.4), Ignition 2.18.0 (the ignition-2.18.0-6.rhaos4.16.el9 build, \
         named in ocp-build-data openshift-4.18 releases.yml); MCO images carry a RHEL 9 MCD \
         plus a .rhel8 build"),
    row(v(4, 17), 9, "9.4", V2, "v2.18", V3_4, V3_2,
        "RHCOS 417.94 (RHEL 9.4); Ignition 2.18: the 4.16 build of 2.18.0 still ships in \
         4.18.0, so 4.17 sits between two 2.18.0 releases (spec 3.5 needs v2.20.0)"),
    row(v(4, 18), 9, "9.4", V2, "v2.18.0", V3_4, V3_2,
        "RHCOS 418.94: os-release ID=rhcos VERSION_ID=4.18 RHEL_VERSION=9.4; Ignition 2.18.0 \
         (ocp-build-data openshift-4.18 releases.yml: the 4.18.0 assembly pins \
         ignition-2.18.0-6.rhaos4.16.el9), so spec 3.4 is its newest"),
    row(v(4, 19), 9, "9.6", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 9.6 (bootimage 9.6.20250513-0, installer PR #9721; os-release ID=rhel \
         VERSION_ID=9.6 VARIANT_ID=coreos OPENSHIFT_VERSION=4.19); MCO images: RHEL 9 MCD plus \
         .rhel8 build; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(4, 20), 9, "9.6", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 9.6 (RHEL 9.6 EUS: openshift/os docs/faq.md; installer rhcos.json stream rhel-9.6, \
         bootimages 9.6.20250513-0 to 9.6.20260818-0, installer PRs #9720, #10799); MCO \
         release-4.20 Dockerfile: RHEL 9 base, RHEL 9 MCD plus .rhel8 build; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(4, 21), 9, "9.6", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 9.6 (RHEL 9.6 EUS: openshift/os docs/faq.md; installer rhcos.json stream rhel-9.6, \
         bootimage 9.6.20260815-0, installer PR #10792); MCO release-4.21 Dockerfile: RHEL 9 MCD \
         plus .rhel8 build; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(4, 22), 9, "9.8", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 9.8 (openshift/os docs/faq.md: 9.8 EUS and 10.2 EUS; installer coreos-rhel-9.json \
         9.8.20260520-0 and coreos-rhel-10.json 10.2.20260521-0, PR #10572); RHEL 9 is the \
         default: MCO release-4.22 GetBuiltinDefaultStreamName gives rhel-9 to every 4.x \
         release (install-config osImageStream: rhel-10 picks the RHEL 10 bootimage: use \
         --target-rhel 10); MCO release-4.22 Dockerfile: RHEL 9 MCD plus .rhel8 build; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(4, 23), 9, "9.8", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 9.8 (openshift/os release-4.23: build-args-9.8-5.0.conf and build-args-10.2-5.0.conf); \
         RHEL 9 is the default (MCO release-4.23 GetBuiltinDefaultStreamName: rhel-9 for 4.x; \
         --target-rhel 10 for the RHEL 10 bootimage); MCO release-4.23 Dockerfile: one RHEL 9 \
         build on a RHEL 9 base, no .rhel8; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(5, 0), 10, "10.2", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 10.2 (openshift/os build-args-10.2-5.0.conf, docs/faq.md: 5.0 is 9.8 EUS and 10.2 \
         EUS; os-release ID=rhel VERSION_ID=10.2 VARIANT_ID=coreos OPENSHIFT_VERSION=5.0); RHEL 10 \
         is the default: MCO release-5.0 GetBuiltinDefaultStreamName gives rhel-10 from 5.0 on \
         (osImageStream rhel-9 picks RHCOS 9.8: use --target-rhel 9); MCO release-5.0 \
         Dockerfile: one RHEL 9 build on a RHEL 9 base, which RHEL 10 runs; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(5, 1), 10, "10.2", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS 10.2 (openshift/os release-5.1 is the 5.0 tree: build-args-10.2-5.0.conf); RHEL 10 \
         default as for 5.0 (MCO release-5.1 GetBuiltinDefaultStreamName); MCO release-5.1 \
         Dockerfile: one RHEL 9 build on a RHEL 9 base; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    row(v(5, 2), 10, "10.x", V2, "v2.18 or later", V3_4, V3_2,
        concat!(
            "RHCOS on RHEL 10 (MCO release-5.2 GetBuiltinDefaultStreamName: rhel-10 from 5.0 on); \
         openshift/os has no release-5.2 branch yet, so the RHEL minor is not pinned: only the \
         major matters to a binary (glibc 2.39 is the RHEL 10 floor); MCO release-5.2 \
         Dockerfile: one RHEL 9 build on a RHEL 9 base; ",
            spec_34!(),
            "; ",
            default_32!()
        )),
    // OKD: Fedora CoreOS bootimages (OKD 4.4-4.18), then CentOS Stream CoreOS (4.16 on).
    okd_row(BootimageId::Fcos(31), "v2.2", V3_0, V3_0,
        "Fedora CoreOS 31 (OKD 4.4): glibc 2.30, OpenSSL 1.1; Ignition v2.2, which reads spec 3.0 only"),
    okd_row(BootimageId::Fcos(32), "v2.6", V3_1, V3_1,
        "Fedora CoreOS 32 (OKD 4.5, installer pin 32.20200629.3.0): glibc 2.31, OpenSSL 1.1; \
         Ignition v2.6 (spec 3.1 from v2.3)"),
    okd_row(BootimageId::Fcos(33), "v2.7-v2.9", V3_2, V3_2,
        "Fedora CoreOS 33 (OKD 4.6 and 4.7, installer pins 33.20201201.3.0 to \
         33.20210117.3.2): glibc 2.32, OpenSSL 1.1; Ignition v2.7-v2.9 (spec 3.2 from v2.7)"),
    okd_row(BootimageId::Fcos(34), "v2.10-v2.11", V3_2, V3_2,
        "Fedora CoreOS 34 (OKD 4.8 and 4.9, installer pin 34.20210626.3.1): glibc 2.33, \
         OpenSSL 1.1; its first builds ship Ignition v2.10, before spec 3.3 was stabilised \
         (v2.11), so a row for every FCOS 34 build reads spec 3.2 at most"),
    okd_row(BootimageId::Fcos(35), "v2.13", V3_3, V3_2,
        "Fedora CoreOS 35 (OKD 4.10 and 4.11, installer pin 35.20220327.3.0): glibc 2.34, \
         the last OpenSSL 1.1; Ignition v2.13 (spec 3.3 from v2.11)"),
    okd_row(BootimageId::Fcos(36), "v2.14", V3_3, V3_2,
        "Fedora CoreOS 36 (OKD 4.12, installer pin 36.20220806.3.0): glibc 2.35, OpenSSL 3 \
         only (libcrypto.so.3); Ignition v2.14"),
    okd_row(BootimageId::Fcos(37), "v2.14", V3_3, V3_2,
        "Fedora CoreOS 37 (OKD 4.13, installer pin 37.20221127.3.0): glibc 2.36, OpenSSL 3; \
         Ignition v2.14 (spec 3.4 needs v2.15)"),
    okd_row(BootimageId::Fcos(38), "v2.15", V3_4, V3_2,
        "Fedora CoreOS 38 (OKD 4.14, installer pin 38.20230609.3.0): glibc 2.37, OpenSSL 3; \
         Ignition v2.15 (spec 3.4 stable from v2.15)"),
    okd_row(BootimageId::Fcos(39), "v2.16", V3_4, V3_2,
        "Fedora CoreOS 39 (OKD 4.15 to 4.18, installer pin 39.20231101.3.0; 4.16-4.18 nodes \
         rebase to CentOS Stream CoreOS 9): glibc 2.38, OpenSSL 3; Ignition v2.16"),
    okd_row(BootimageId::Scos(9), "v2.18 or later", V3_4, V3_2,
        "CentOS Stream CoreOS 9 (OKD 4.19 on, installer data/data/coreos/scos.json, \
         9.0.20250411-0): the base of RHEL 9 (glibc 2.34, OpenSSL 3); os-release ID=scos \
         ID_LIKE=\"rhel fedora\", like RHEL for MCO's choice of build; spec 3.4 as the RHEL 9 \
         RHCOS rows"),
    okd_row(BootimageId::Scos(10), "v2.18 or later", V3_4, V3_2,
        "CentOS Stream CoreOS 10 (OKD's c10s builds, 10.0.20251103-0): the base of RHEL 10 \
         (glibc 2.39, OpenSSL 3); like RHEL for MCO's choice of build; spec 3.4 as the RHEL \
         10 RHCOS rows"),
];

/// The bootimage each OKD release's installer pins, and the OS its nodes run once they
/// have the release's own OS (for the boots after the first).
pub const OKD_RELEASES: &[OkdRelease] = &[
    okd(v(4, 4), BootimageId::Fcos(31), HostOs::Fedora(31)),
    okd(v(4, 5), BootimageId::Fcos(32), HostOs::Fedora(32)),
    okd(v(4, 6), BootimageId::Fcos(33), HostOs::Fedora(33)),
    okd(v(4, 7), BootimageId::Fcos(33), HostOs::Fedora(33)),
    okd(v(4, 8), BootimageId::Fcos(34), HostOs::Fedora(34)),
    okd(v(4, 9), BootimageId::Fcos(34), HostOs::Fedora(34)),
    okd(v(4, 10), BootimageId::Fcos(35), HostOs::Fedora(35)),
    okd(v(4, 11), BootimageId::Fcos(35), HostOs::Fedora(35)),
    okd(v(4, 12), BootimageId::Fcos(36), HostOs::Fedora(36)),
    okd(v(4, 13), BootimageId::Fcos(37), HostOs::Fedora(37)),
    okd(v(4, 14), BootimageId::Fcos(38), HostOs::Fedora(38)),
    okd(v(4, 15), BootimageId::Fcos(39), HostOs::Fedora(39)),
    okd(v(4, 16), BootimageId::Fcos(39), HostOs::Rhel(9)),
    okd(v(4, 17), BootimageId::Fcos(39), HostOs::Rhel(9)),
    okd(v(4, 18), BootimageId::Fcos(39), HostOs::Rhel(9)),
    okd(v(4, 19), BootimageId::Scos(9), HostOs::Rhel(9)),
];

/// An OKD release: the bootimage its installer pins and its nodes' OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OkdRelease {
    /// The OKD release, `4.7`.
    pub version: OcpVersion,
    /// The bootimage its installer pins.
    pub bootimage: BootimageId,
    /// The OS of its nodes once updated to the release's own OS image (Fedora CoreOS up
    /// to 4.15; CentOS Stream CoreOS 9, like RHEL 9, from 4.16).
    pub nodes: HostOs,
}

const fn okd(version: OcpVersion, bootimage: BootimageId, nodes: HostOs) -> OkdRelease {
    OkdRelease {
        version,
        bootimage,
        nodes,
    }
}

/// The OKD release of a version.
pub fn okd_release(version: OcpVersion) -> Option<&'static OkdRelease> {
    OKD_RELEASES.iter().find(|r| r.version == version)
}

/// The row's RHEL values; only majors of [`RHEL`] may appear in the table (checked at
/// compile time).
const fn rhel_base(major: u32) -> OsBase {
    let mut i = 0;
    while i < RHEL.len() {
        if let HostOs::Rhel(m) = RHEL[i].os {
            if m == major {
                return RHEL[i];
            }
        }
        i += 1;
    }
    panic!("a bootimage row names a RHEL major that RHEL lacks")
}

/// The Fedora values of a major; only majors of [`FEDORA`] may appear.
const fn fedora_base(major: u32) -> OsBase {
    let mut i = 0;
    while i < FEDORA.len() {
        if let HostOs::Fedora(m) = FEDORA[i].os {
            if m == major {
                return FEDORA[i];
            }
        }
        i += 1;
    }
    panic!("a bootimage row names a Fedora major that FEDORA lacks")
}

/// An OKD row: a Fedora CoreOS bootimage by its Fedora major, or a CentOS Stream CoreOS
/// one by its CentOS Stream major (whose base is its RHEL's: CentOS Stream N is what
/// RHEL N branches from, with its glibc and OpenSSL).
const fn okd_row(
    id: BootimageId,
    ignition_release: &'static str,
    max_spec: SpecVersion,
    default_spec: SpecVersion,
    source: &'static str,
) -> Bootimage {
    let base = match id {
        BootimageId::Fcos(m) => fedora_base(m),
        BootimageId::Scos(m) => rhel_base(m),
        BootimageId::Rhcos(_) => panic!("an OKD row names an RHCOS bootimage"),
    };
    Bootimage {
        id,
        os: base.os,
        rhel_release: "",
        glibc: base.glibc,
        libcrypto: base.libcrypto,
        kernel: base.kernel,
        ignition: V2,
        ignition_release,
        max_spec,
        default_spec,
        source,
    }
}

#[allow(clippy::too_many_arguments)]
const fn row(
    version: OcpVersion,
    rhel: u32,
    rhel_release: &'static str,
    ignition: IgnitionGeneration,
    ignition_release: &'static str,
    max_spec: SpecVersion,
    default_spec: SpecVersion,
    source: &'static str,
) -> Bootimage {
    let base = rhel_base(rhel);
    Bootimage {
        id: BootimageId::Rhcos(version),
        os: base.os,
        rhel_release,
        glibc: base.glibc,
        libcrypto: base.libcrypto,
        kernel: base.kernel,
        ignition,
        ignition_release,
        max_spec,
        default_spec,
        source,
    }
}

/// Why a bootimage name was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    /// None of the forms read.
    #[error(
        "invalid bootimage {0:?}: expected an OpenShift version X.Y or X.Y.Z (4.2, \
         4.2.36) or an OKD row \
         (fcos-33, scos-9), an RHCOS build ID \
         (42.80.20191002.0, 410.84.202205191234-0), an RHCOS cloud image name \
         (rhcos-42-80-20191002-0-gcp-x86-64), a Fedora CoreOS build ID (33.20201201.3.0, \
         fcos-33.20201201.3.0), a CentOS Stream CoreOS build ID (scos-9.0.20250222-0) or an \
         OKD release (okd-4.7, the bootimage its installer pins)"
    )]
    Syntax(String),
    /// An RHCOS build ID whose RHEL is not the one its OpenShift release's RHCOS is built on.
    #[error(
        "bootimage {given:?}: RHCOS {version} is built on RHEL {table_rhel}, but the build ID \
         names RHEL {rhel}; check the ID, or give --bootimage X.Y and --target-rhel N"
    )]
    RhelMismatch {
        /// The name given.
        given: String,
        /// The OpenShift release it names.
        version: OcpVersion,
        /// The RHEL major it names.
        rhel: u32,
        /// The RHEL major of the table's row.
        table_rhel: u32,
    },
    /// An OKD bootimage or release the table lacks.
    #[error("bootimage {given:?}: {what}")]
    UnknownOkd {
        /// The name given.
        given: String,
        /// What is not known, and what is.
        what: String,
    },
}

/// How a bootimage name reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NameForm {
    /// A row of the table by its name: an OpenShift version, `4.2`, or an OKD row,
    /// `fcos-33`, `scos-9`.
    Version,
    /// An OpenShift release's version, `4.2.36`, as a cluster reports it: its `X.Y`'s row.
    ReleaseVersion,
    /// An RHCOS build ID, `42.80.20191002.0`, also `rhcos-` prefixed (a live ISO's
    /// volume ID).
    BuildId,
    /// An RHCOS cloud image name, `rhcos-42-80-20191002-0-gcp-x86-64`.
    CloudImageName,
    /// A Fedora CoreOS build ID, `33.20201201.3.0`, also `fcos-` or `fedora-coreos-`
    /// prefixed (a live ISO's volume ID).
    FcosBuildId,
    /// A CentOS Stream CoreOS build ID, `scos-9.0.20250222-0` (also without `scos-`).
    ScosBuildId,
    /// An OKD release, `okd-4.7`: the bootimage its installer pins.
    OkdRelease,
    /// The bootimage's os-release (`--target-os-release`).
    OsRelease,
}

impl NameForm {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            NameForm::Version => "OpenShift version",
            NameForm::ReleaseVersion => "OpenShift release",
            NameForm::BuildId => "RHCOS build ID",
            NameForm::CloudImageName => "RHCOS cloud image name",
            NameForm::FcosBuildId => "Fedora CoreOS build ID",
            NameForm::ScosBuildId => "CentOS Stream CoreOS build ID",
            NameForm::OkdRelease => "OKD release",
            NameForm::OsRelease => "os-release",
        }
    }
}

/// The file a bootimage name was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamedFile {
    /// The file, as given.
    pub path: String,
    /// What it was read as (`qcow2 disk image`, `gzip-compressed raw disk image`).
    pub kind: String,
    /// Where in it the name was (`loader/entries/ostree-1-rhcos.conf`).
    pub within: String,
}

/// How the bootimage was named, and the bootimage of the table that names: what the
/// report says. The config holds only the bootimage, so every name of one bootimage
/// gives the same config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Named {
    /// How the name reads.
    pub form: NameForm,
    /// The name, as given or as read from the file.
    pub value: String,
    /// The file it was read from, if any.
    pub file: Option<NamedFile>,
    /// The bootimage it names: the first of `range` when several releases share it.
    pub version: BootimageId,
    /// The releases a name shared by several (an RHCOS build ID of 4.19 on, which names
    /// a RHEL release) may be; empty for a name of one release. It is accepted when each
    /// gives the same build and spec (checked by `inject`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub range: Vec<BootimageId>,
}

impl Named {
    /// `4.19-4.21` for a shared name, else the bootimage.
    pub fn versions(&self) -> String {
        match (self.range.first(), self.range.last()) {
            (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
            _ => self.version.to_string(),
        }
    }

    /// `4.2`, or `4.2 (RHCOS build ID 42.80.20191002.0 in loader/entries/x.conf of FILE)`.
    pub fn describe(&self) -> String {
        let what = match (&self.file, self.form) {
            (None, NameForm::Version) => return self.versions(),
            (None, form) => format!("{} {}", form.describe(), self.value),
            (Some(f), NameForm::OsRelease) => format!("from os-release {}", f.path),
            (Some(f), form) => format!(
                "{} {} in {} of {} {}",
                form.describe(),
                self.value,
                f.within,
                f.kind,
                f.path
            ),
        };
        format!("{} ({what})", self.versions())
    }
}

fn digits(x: &str, min: usize, max: usize) -> Option<&str> {
    (x.len() >= min && x.len() <= max && x.bytes().all(|c| c.is_ascii_digit())).then_some(x)
}

/// The Fedora major of a Fedora CoreOS build ID, `MAJOR.YYYYMMDD.STREAM.N`
/// (`33.20201201.3.0`: Fedora 33, built 2020-12-01, the stable stream's (3) first).
fn fcos_build(id: &str) -> Option<u32> {
    let [major, date, stream, serial] = id.split('.').collect::<Vec<_>>()[..] else {
        return None;
    };
    digits(date, 8, 8)?;
    digits(stream, 1, 2)?;
    digits(serial, 1, 3)?;
    digits(major, 2, 2)?.parse().ok()
}

/// The CentOS Stream major of a CentOS Stream CoreOS build ID, `MAJOR.0.STAMP-N`
/// (`9.0.20250222-0`); CentOS Stream has no minor releases, so the second field is 0.
fn scos_build(id: &str) -> Option<u32> {
    let (head, serial) = id.rsplit_once('-')?;
    let [major, "0", stamp] = head.split('.').collect::<Vec<_>>()[..] else {
        return None;
    };
    digits(stamp, 8, 14)?;
    digits(serial, 1, 3)?;
    digits(major, 1, 2)?.parse().ok()
}

/// The OKD rows, `fcos-31 to fcos-39, scos-9, scos-10`, for messages.
fn okd_rows() -> String {
    let ids: Vec<String> = BOOTIMAGES
        .iter()
        .filter(|b| b.id.ocp().is_none())
        .map(|b| b.id.to_string())
        .collect();
    ids.join(", ")
}

/// The bootimage a bootimage name gives: `X.Y` or an OKD row's name (`fcos-33`); an RHCOS build ID of the form
/// `OCP.RHEL.TIMESTAMP` with `.N` or `-N` (`42.80.20191002.0`: OpenShift 4.2 on RHEL
/// 8.0; `410.84.202205191234-0`: 4.10 on RHEL 8.4), also prefixed `rhcos-`; an RHCOS
/// cloud image name (`rhcos-42-80-20191002-0-gcp-x86-64`, fields joined with `-`); a
/// Fedora CoreOS build ID (`33.20201201.3.0`, also prefixed `fcos-` or
/// `fedora-coreos-`); a CentOS Stream CoreOS one (`scos-9.0.20250222-0`, also bare); or
/// `okd-X.Y`, the bootimage an OKD release's installer pins. An RHCOS build ID's RHEL must
/// be its row's. The RHEL-based RHCOS IDs of 4.19 on (`9.6.20250513-0`) name a RHEL
/// release that several rows share: the first, with all of them in [`Named::range`].
pub fn bootimage_name(s: &str) -> Result<Named, NameError> {
    let named = |form, version| Named {
        form,
        value: s.to_string(),
        file: None,
        version,
        range: Vec::new(),
    };
    if let Ok(v) = s.parse::<OcpVersion>() {
        return Ok(named(NameForm::Version, BootimageId::Rhcos(v)));
    }
    let bad = || NameError::Syntax(s.to_string());
    // `4.2.36`: a z-stream of the 4.2 row (a build ID has four fields).
    if let Some((xy, z)) = s.rsplit_once('.') {
        if let (Ok(v), Some(_)) = (xy.parse::<OcpVersion>(), digits(z, 1, 4)) {
            return Ok(named(NameForm::ReleaseVersion, BootimageId::Rhcos(v)));
        }
    }
    if let Ok(id @ (BootimageId::Fcos(_) | BootimageId::Scos(_))) = s.parse::<BootimageId>() {
        return match bootimage(id) {
            Ok(_) => Ok(named(NameForm::Version, id)),
            Err(e) => Err(NameError::UnknownOkd {
                given: s.to_string(),
                what: e.to_string(),
            }),
        };
    }
    let okd_row = |form, id: BootimageId| match bootimage(id) {
        Ok(_) => Ok(named(form, id)),
        Err(_) => Err(NameError::UnknownOkd {
            given: s.to_string(),
            what: format!("{id} is not in the table; its OKD rows are {}", okd_rows()),
        }),
    };
    if let Some(v) = s.strip_prefix("okd-") {
        let v = v.parse::<OcpVersion>().map_err(|_| bad())?;
        let Some(r) = okd_release(v) else {
            let known: Vec<String> = OKD_RELEASES.iter().map(|r| r.version.to_string()).collect();
            return Err(NameError::UnknownOkd {
                given: s.to_string(),
                what: format!(
                    "the table knows the bootimages of OKD {}; for another OKD release, give \
                     its bootimage's build ID",
                    known.join(", ")
                ),
            });
        };
        return okd_row(NameForm::OkdRelease, r.bootimage);
    }
    let fcos = s
        .strip_prefix("fcos-")
        .or_else(|| s.strip_prefix("fedora-coreos-"));
    if let Some(major) = fcos_build(fcos.unwrap_or(s)) {
        return okd_row(NameForm::FcosBuildId, BootimageId::Fcos(major));
    }
    if fcos.is_some() {
        return Err(bad());
    }
    let scos = s.strip_prefix("scos-");
    if let Some(major) = scos_build(scos.unwrap_or(s)) {
        return okd_row(NameForm::ScosBuildId, BootimageId::Scos(major));
    }
    if scos.is_some() {
        return Err(bad());
    }
    let prefixed = s.strip_prefix("rhcos-");
    let id = prefixed.unwrap_or(s);
    // The first fields, the timestamp, and the build's serial: as an ID, or as a cloud
    // image name (whatever follows the serial there is the platform and the arch).
    let form = if id.contains('.') {
        NameForm::BuildId
    } else {
        NameForm::CloudImageName
    };
    let fields: Vec<&str> = match prefixed {
        _ if id.contains('.') => {
            let (head, serial) = id.rsplit_once(['.', '-']).ok_or_else(bad)?;
            head.split('.').chain([serial]).collect()
        }
        Some(name) => name.split('-').take(4).collect(),
        None => return Err(bad()),
    };
    let [ocp, rhel, stamp, serial] = fields[..] else {
        return Err(bad());
    };
    digits(stamp, 8, 14).ok_or_else(bad)?;
    digits(serial, 1, 3).ok_or_else(bad)?;
    let (ocp, rhel) = (
        digits(ocp, 1, 3).ok_or_else(bad)?,
        digits(rhel, 1, 3).ok_or_else(bad)?,
    );
    // OpenShift 4's IDs start with its `4Y`; RHEL-based ones with the RHEL major.
    if !ocp.starts_with('4') {
        // RHEL-based: `9.6.STAMP-N`, RHEL 9.6 (`10.2.STAMP-N`), the bootimage of several
        // releases.
        let rhel_release = format!("{ocp}.{rhel}");
        let range: Vec<BootimageId> = BOOTIMAGES
            .iter()
            .filter(|b| b.rhel_release == rhel_release)
            .map(|b| b.id)
            .collect();
        let first = *range.first().ok_or_else(bad)?;
        return Ok(Named {
            range,
            ..named(NameForm::BuildId, first)
        });
    }
    let num = |x: &str| x.parse::<u32>().map_err(|_| bad());
    let version = v(num(&ocp[..1])?, num(&ocp[1..])?);
    let rhel_major = num(&rhel[..1])?;
    let id = BootimageId::Rhcos(version);
    match bootimage(id) {
        Ok(row) if row.os != HostOs::Rhel(rhel_major) => Err(NameError::RhelMismatch {
            given: s.to_string(),
            version,
            rhel: rhel_major,
            table_rhel: row.os.rhel().unwrap_or_default(),
        }),
        _ => Ok(named(form, id)),
    }
}

/// The OCI architecture an RHCOS cloud image name ends in (`...-gcp-x86-64`: `amd64`;
/// `aarch64`: `arm64`; `ppc64le`, `s390x`), if it names one.
pub fn cloud_image_arch(name: &str) -> Option<&'static str> {
    [
        ("-x86-64", "amd64"),
        ("-aarch64", "arm64"),
        ("-ppc64le", "ppc64le"),
        ("-s390x", "s390x"),
    ]
    .into_iter()
    .find(|(tail, _)| name.ends_with(tail))
    .map(|(_, arch)| arch)
}

/// The row of a bootimage.
pub fn bootimage(id: BootimageId) -> Result<&'static Bootimage, VersionError> {
    BOOTIMAGES.iter().find(|b| b.id == id).ok_or(match id {
        BootimageId::Rhcos(version) if version < first_known() => VersionError::TooOld(version),
        BootimageId::Rhcos(version) => VersionError::Unknown(version),
        other => VersionError::UnknownOkd(other, okd_rows()),
    })
}

/// What a bootimage's os-release says of it: the bootimage, and the RHEL major MCO reads
/// ([`OsRelease::rhel_major`], the reading the build choice and the install script use).
/// The bootimage, which MCO does not read: Fedora CoreOS (`ID=fedora`,
/// `VARIANT_ID=coreos`) by its `VERSION_ID` major; CentOS Stream CoreOS by its RHEL major
/// (`ID=scos` up to OKD 4.18, whose `VERSION_ID` is the OpenShift version, `4.12`;
/// `ID=centos` with `VARIANT_ID=coreos` from OKD 4.19, `VERSION_ID="9"` or `"10"`);
/// RHCOS by `OPENSHIFT_VERSION` (4.3 on; on 4.19+ `ID="rhel"`, `VERSION_ID="9.6"` or
/// `"10.2"`, `VARIANT_ID=coreos`), else an RHCOS `VERSION_ID` (`4.2`, or the old
/// `42.80` form).
pub fn from_os_release(os: &OsRelease) -> (Option<BootimageId>, Option<u32>) {
    let major_of = |v: &str| v.split('.').next().and_then(|m| m.parse::<u32>().ok());
    let id = os.id.as_deref().unwrap_or("");
    let coreos = os.fields.get("VARIANT_ID").map(String::as_str) == Some("coreos");
    let rhel = os.rhel_major();
    match (id, coreos) {
        ("fedora", true) => {
            let fedora = os.version_id.as_deref().and_then(major_of);
            return (fedora.map(BootimageId::Fcos), None);
        }
        ("scos", _) | ("centos", true) => return (rhel.map(BootimageId::Scos), rhel),
        _ => {}
    }
    let legacy_rhcos = |v: &str| {
        // "42.80.20191010.0": OpenShift 4.2 on RHEL 8.0; "410.84...": 4.10.
        let head = v.split('.').next()?;
        let minor = head.strip_prefix('4')?;
        format!("4.{minor}").parse::<OcpVersion>().ok()
    };
    let ocp = os
        .fields
        .get("OPENSHIFT_VERSION")
        .and_then(|v| v.parse::<OcpVersion>().ok())
        .or_else(|| {
            let v = os.version_id.as_deref().filter(|_| id == "rhcos")?;
            v.parse::<OcpVersion>()
                .ok()
                .filter(|o| o.major == 4)
                .or_else(|| legacy_rhcos(v))
        });
    (ocp.map(BootimageId::Rhcos), rhel)
}

/// What a binary and a config must fit: a table row with the user's overrides applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The bootimage.
    pub bootimage: BootimageId,
    /// The OS of the node (the table's, or `--target-rhel`).
    pub os: HostOs,
    /// The glibc version of that OS.
    pub glibc: String,
    /// The libcrypto soname of that OS.
    pub libcrypto: String,
    /// The libssl soname of that OS.
    pub libssl: String,
    /// The kernel version the bootimage boots (its OS major's).
    pub kernel: String,
    /// The Ignition the bootimage runs.
    pub ignition: IgnitionGeneration,
    /// The newest spec that Ignition reads.
    pub max_spec: SpecVersion,
    /// The spec of the config to write.
    pub spec: SpecVersion,
    /// The OCI architecture of the node (from `--platform`).
    pub arch: String,
}

/// Why a target could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    /// The bootimage is not in the table.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// A RHEL major the tool has no reference values for.
    #[error("--target-rhel {0}: only RHEL 7, 8, 9 and 10 are known")]
    UnknownRhel(u32),
    /// `--target-rhel` for a Fedora CoreOS bootimage.
    #[error(
        "--target-rhel {rhel}: bootimage {bootimage} is Fedora CoreOS, not based on RHEL; \
         drop --target-rhel, or name the bootimage the node boots"
    )]
    RhelOnFedora {
        /// The RHEL major given.
        rhel: u32,
        /// The bootimage.
        bootimage: BootimageId,
    },
    /// A spec newer than the bootimage's Ignition reads.
    #[error("spec {spec} cannot be read by the Ignition of bootimage {bootimage}, which reads at most spec {max}")]
    SpecTooNew {
        /// The spec asked for.
        spec: SpecVersion,
        /// The bootimage.
        bootimage: BootimageId,
        /// The newest spec its Ignition reads.
        max: SpecVersion,
    },
    /// A spec of the other family (2.x for Ignition v0.x, 3.x for v2.x).
    #[error("spec {spec} cannot be read by bootimage {bootimage}: its Ignition {generation} reads spec {family} only")]
    WrongFamily {
        /// The spec asked for.
        spec: SpecVersion,
        /// The bootimage.
        bootimage: BootimageId,
        /// Its Ignition generation (`v0.x`, `v2.x`).
        generation: &'static str,
        /// The spec family that generation reads.
        family: &'static str,
    },
}

impl Target {
    /// The target of a bootimage with optional `--spec`, `--target-rhel` overrides.
    ///
    /// An RHCOS release newer than the table is accepted when the user gives both facts
    /// the table would have given: its RHEL major (`--target-rhel`, or read from
    /// `--target-os-release`) and the spec its Ignition reads (`--spec`, which must be a
    /// spec 3 version: every release after 4.5 runs Ignition v2).
    pub fn new(
        id: BootimageId,
        spec: Option<SpecVersion>,
        rhel_major: Option<u32>,
        arch: &str,
    ) -> Result<Target, TargetError> {
        let (ignition, max_spec, default_spec, table_os) = match bootimage(id) {
            Ok(row) => (row.ignition, row.max_spec, row.default_spec, row.os),
            Err(VersionError::Unknown(v)) => match (rhel_major, spec) {
                (Some(major), Some(spec)) => {
                    (IgnitionGeneration::V2, spec, spec, HostOs::Rhel(major))
                }
                _ => return Err(VersionError::Unknown(v).into()),
            },
            Err(e) => return Err(e.into()),
        };
        let os = match (table_os, rhel_major) {
            (HostOs::Fedora(_), Some(rhel)) => {
                return Err(TargetError::RhelOnFedora {
                    rhel,
                    bootimage: id,
                })
            }
            (_, Some(major)) => HostOs::Rhel(major),
            (os, None) => os,
        };
        let base = os
            .base()
            .ok_or(TargetError::UnknownRhel(rhel_major.unwrap_or_default()))?;
        let spec = spec.unwrap_or(default_spec);
        check_spec(id, ignition, max_spec, spec)?;
        Ok(Target {
            bootimage: id,
            os,
            glibc: base.glibc.into(),
            libcrypto: base.libcrypto.into(),
            libssl: base.libssl.into(),
            kernel: base.kernel.into(),
            ignition,
            max_spec,
            spec,
            arch: arch.to_string(),
        })
    }

    /// The kernel version, parsed.
    pub fn kernel_version(&self) -> DottedVersion {
        self.kernel
            .parse()
            .expect("the table holds valid kernel versions")
    }

    /// The glibc version, parsed.
    pub fn glibc_version(&self) -> DottedVersion {
        self.glibc
            .parse()
            .expect("the table holds valid glibc versions")
    }

    /// Whether the bootimage carries the pre-4.6 first-boot paths to switch off (RHCOS
    /// 4.1-4.5: `pivot.service`; Fedora CoreOS never had them).
    pub fn has_legacy_firstboot(&self) -> bool {
        matches!(self.bootimage, BootimageId::Rhcos(r) if r <= v(4, 5))
    }

    /// Whether the bootimage's Ignition reads `spec`.
    pub fn reads(&self, spec: SpecVersion) -> bool {
        check_spec(self.bootimage, self.ignition, self.max_spec, spec).is_ok()
    }

    /// What a binary or a config meets differently on `other` than on this target:
    /// `glibc 2.28 on 4.12, 2.34 on 4.19`; empty when only their names differ.
    pub fn differences(&self, other: &Target) -> Vec<String> {
        let (a, b) = (self, other);
        let ignition = |t: &Target| match t.ignition {
            IgnitionGeneration::V0 => "v0.x".to_string(),
            IgnitionGeneration::V2 => "v2.x".to_string(),
        };
        [
            ("OS", a.os.to_string(), b.os.to_string()),
            ("glibc", a.glibc.clone(), b.glibc.clone()),
            ("libcrypto", a.libcrypto.clone(), b.libcrypto.clone()),
            ("libssl", a.libssl.clone(), b.libssl.clone()),
            ("kernel", a.kernel.clone(), b.kernel.clone()),
            ("Ignition", ignition(a), ignition(b)),
            (
                "newest spec read",
                a.max_spec.to_string(),
                b.max_spec.to_string(),
            ),
            ("spec written", a.spec.to_string(), b.spec.to_string()),
            ("architecture", a.arch.clone(), b.arch.clone()),
            (
                "first-boot paths switched off (pivot.service)",
                a.has_legacy_firstboot().to_string(),
                b.has_legacy_firstboot().to_string(),
            ),
        ]
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(what, x, y)| format!("{what} {x} on {}, {y} on {}", a.bootimage, b.bootimage))
        .collect()
    }
}

fn check_spec(
    bootimage: BootimageId,
    ignition: IgnitionGeneration,
    max: SpecVersion,
    spec: SpecVersion,
) -> Result<(), TargetError> {
    match (ignition, spec.is_v2()) {
        (IgnitionGeneration::V0, false) => Err(TargetError::WrongFamily {
            spec,
            bootimage,
            generation: "v0.x",
            family: "2.x",
        }),
        (IgnitionGeneration::V2, true) => Err(TargetError::WrongFamily {
            spec,
            bootimage,
            generation: "v2.x",
            family: "3.x",
        }),
        _ if spec > max => Err(TargetError::SpecTooNew {
            spec,
            bootimage,
            max,
        }),
        _ => Ok(()),
    }
}

/// What the target is, as the user gave it.
#[derive(Clone, Debug)]
pub struct TargetArgs {
    /// The bootimage (`--bootimage`, `--bootimage-file`, `--target-os-release`), as named.
    pub bootimage: Named,
    /// The spec to write (`--spec`); else the table's, or the base's when newer.
    pub spec: Option<SpecVersion>,
    /// The node's RHEL major (`--target-rhel`, `--target-os-release`); else the table's.
    pub rhel: Option<u32>,
    /// The RHEL major of the cluster's OS, which the node runs from the second boot of
    /// its first boot on (`--cluster-rhel`); else learnt from the release or the image.
    pub cluster_rhel: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RHCOS bootimage of an OpenShift release.
    fn r(major: u32, minor: u32) -> BootimageId {
        BootimageId::Rhcos(v(major, minor))
    }

    /// Every release from 4.1 to the newest MCO release branch has a row.
    const RELEASES: [(u32, u32); 2] = [(4, 23), (5, 2)];

    #[test]
    fn table_is_ordered_complete_and_consistent() {
        for w in BOOTIMAGES.windows(2) {
            assert!(w[0].id < w[1].id);
        }
        let all: Vec<OcpVersion> = RELEASES
            .iter()
            .flat_map(|&(major, last)| {
                let first = if major == 4 { 1 } else { 0 };
                (first..=last).map(move |minor| v(major, minor))
            })
            .collect();
        assert_eq!(all, rhcos_releases().collect::<Vec<_>>());
        for b in BOOTIMAGES {
            assert!(b.default_spec <= b.max_spec, "{}", b.id);
            assert!(
                check_spec(b.id, b.ignition, b.max_spec, b.default_spec).is_ok(),
                "{}",
                b.id
            );
            let base = b.os.base().unwrap();
            assert_eq!(b.glibc, base.glibc);
            assert_eq!(b.libcrypto, base.libcrypto);
            assert!(!b.source.is_empty() && !b.ignition_release.is_empty());
            // Every row makes a target, so `inspect` shows a verdict for each.
            let t = Target::new(b.id, None, None, "amd64").unwrap();
            assert_eq!(
                (t.os, t.spec, t.max_spec),
                (b.os, b.default_spec, b.max_spec)
            );
            let BootimageId::Rhcos(at) = b.id else {
                // OKD rows: Ignition v2, spec 3 only; CentOS Stream N is like RHEL N.
                assert_eq!(b.ignition, IgnitionGeneration::V2, "{}", b.id);
                match b.id {
                    BootimageId::Fcos(m) => assert_eq!(b.os, HostOs::Fedora(m)),
                    BootimageId::Scos(m) => assert_eq!(b.os, HostOs::Rhel(m)),
                    BootimageId::Rhcos(_) => unreachable!(),
                }
                continue;
            };
            let rhel = match (at.major, at.minor) {
                (4, m) if m <= 12 => 8,
                (4, _) => 9,
                _ => 10,
            };
            assert_eq!(b.os, HostOs::Rhel(rhel), "{at}");
            assert!(
                b.rhel_release.starts_with(&format!("{rhel}.")),
                "{at}: {}",
                b.rhel_release
            );
            assert_eq!(b.ignition == IgnitionGeneration::V0, at <= v(4, 5));
        }
        assert_eq!(newest_known(), v(5, 2));
    }

    #[test]
    fn pinned_and_new_rows() {
        let row = |major, minor| bootimage(r(major, minor)).unwrap();
        // Ignition 2.12.0 (4.9) reads 3.3; 2.15.0 (4.13) reads 3.4.
        assert_eq!(row(4, 9).max_spec, SpecVersion::V3_3);
        assert_eq!(row(4, 10).max_spec, SpecVersion::V3_2);
        assert_eq!(row(4, 13).max_spec, SpecVersion::V3_4);
        for (major, minor) in [(4, 19), (4, 20), (4, 21), (4, 22), (4, 23), (5, 0), (5, 2)] {
            let b = row(major, minor);
            assert_eq!(b.max_spec, SpecVersion::V3_4, "{}", b.id);
            assert_eq!(b.default_spec, SpecVersion::V3_2, "{}", b.id);
        }
        let t = Target::new(r(5, 0), None, None, "amd64").unwrap();
        assert_eq!(
            (t.os, t.glibc.as_str(), t.libcrypto.as_str()),
            (HostOs::Rhel(10), "2.39", "libcrypto.so.3")
        );
        assert!(t.reads(SpecVersion::V3_4) && !t.reads(SpecVersion::V3_5));
        for too_new in [SpecVersion::V3_5, SpecVersion::V3_6] {
            assert!(matches!(
                Target::new(r(5, 0), Some(too_new), None, "amd64"),
                Err(TargetError::SpecTooNew { .. })
            ));
        }
        // A RHEL 10 bootimage of 4.22 (osImageStream rhel-10), a RHEL 9 one of 5.0.
        assert_eq!(
            Target::new(r(4, 22), None, Some(10), "amd64")
                .unwrap()
                .glibc,
            "2.39"
        );
        assert_eq!(
            Target::new(r(5, 0), None, Some(9), "amd64").unwrap().glibc,
            "2.34"
        );
    }

    #[test]
    fn releases_past_the_table_need_rhel_and_spec() {
        let e = Target::new(r(5, 3), None, None, "amd64").unwrap_err();
        let msg = e.to_string();
        for needle in [
            "unknown bootimage 5.3",
            "5.2 is the newest",
            "--target-os-release",
            "--target-rhel",
            "--spec",
        ] {
            assert!(msg.contains(needle), "{needle:?} in {msg}");
        }
        assert!(matches!(
            Target::new(r(5, 3), Some(SpecVersion::V3_5), None, "amd64"),
            Err(TargetError::Version(VersionError::Unknown(_)))
        ));
        assert!(matches!(
            Target::new(r(5, 3), None, Some(10), "amd64"),
            Err(TargetError::Version(VersionError::Unknown(_)))
        ));
        let t = Target::new(r(5, 3), Some(SpecVersion::V3_6), Some(10), "amd64").unwrap();
        assert_eq!(
            (t.os, t.spec, t.max_spec),
            (HostOs::Rhel(10), SpecVersion::V3_6, SpecVersion::V3_6)
        );
        assert!(!t.has_legacy_firstboot());
        assert!(!t.reads(SpecVersion::V2_2));
        assert!(matches!(
            Target::new(r(5, 3), Some(SpecVersion::V2_2), Some(10), "amd64"),
            Err(TargetError::WrongFamily { .. })
        ));
        assert!(matches!(
            Target::new(r(5, 3), Some(SpecVersion::V3_2), Some(11), "amd64"),
            Err(TargetError::UnknownRhel(11))
        ));
        // Nothing before the first RHCOS release has a way through.
        let e = Target::new(r(4, 0), Some(SpecVersion::V3_2), Some(8), "amd64").unwrap_err();
        assert!(e.to_string().contains("starts at 4.1"), "{e}");
        assert!(matches!(bootimage(r(3, 11)), Err(VersionError::TooOld(_))));
    }

    #[test]
    fn reads_bootimage_os_release() {
        let read = |text: &str| from_os_release(&OsRelease::parse(text));
        assert_eq!(
            read(
                "ID=\"rhcos\"\nVERSION_ID=\"4.18\"\nOPENSHIFT_VERSION=\"4.18\"\nRHEL_VERSION=9.4\n"
            ),
            (Some(r(4, 18)), Some(9))
        );
        assert_eq!(
            read(
                "ID=\"rhel\"\nVERSION_ID=\"9.6\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.19\"\n"
            ),
            (Some(r(4, 19)), Some(9))
        );
        assert_eq!(
            read("ID=\"rhcos\"\nVERSION_ID=\"42.80\"\nVERSION=\"42.80.20191010.0\"\n"),
            (Some(r(4, 2)), Some(8))
        );
        assert_eq!(
            read("ID=rhcos\nVERSION_ID=410.84\n"),
            (Some(r(4, 10)), Some(8))
        );
        assert_eq!(
            read(
                "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nVERSION_ID=\"10.2\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.0\"\n"
            ),
            (Some(r(5, 0)), Some(10))
        );
        assert_eq!(read("ID=rhel\nVERSION_ID=9.6\n"), (None, Some(9)));
        assert_eq!(read("ID=fedora\nVERSION_ID=40\n"), (None, None));
        // Fedora CoreOS and CentOS Stream CoreOS, as their os-release says.
        assert_eq!(
            read("NAME=\"Fedora CoreOS\"\nID=fedora\nVERSION_ID=33\nVARIANT_ID=coreos\n"),
            (Some(BootimageId::Fcos(33)), None)
        );
        assert_eq!(
            read("NAME=\"CentOS Stream CoreOS\"\nID=\"scos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"9\"\n"),
            (Some(BootimageId::Scos(9)), Some(9))
        );
        // From OKD 4.19 on, ID=centos with VARIANT_ID=coreos: not RHCOS 5.0 by its
        // OPENSHIFT_VERSION. Up to 4.18, ID=scos with the OpenShift version as VERSION_ID.
        assert_eq!(
            read("ID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION=\"10.0.20260614-0 (Coughlan)\"\nVERSION_ID=\"10\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.0\"\n"),
            (Some(BootimageId::Scos(10)), Some(10))
        );
        assert_eq!(
            read("ID=\"scos\"\nID_LIKE=\"rhel fedora\"\nVERSION=\"416.9.202406172220-0\"\nVERSION_ID=\"4.16\"\nOPENSHIFT_VERSION=\"4.16\"\n"),
            (Some(BootimageId::Scos(9)), Some(9))
        );
        // CentOS Stream itself is RHEL-like but no bootimage.
        assert_eq!(read("ID=\"centos\"\nVERSION_ID=\"9\"\n"), (None, Some(9)));
    }

    #[test]
    fn parses_versions() {
        assert_eq!("4.2".parse::<OcpVersion>().unwrap(), v(4, 2));
        assert_eq!("4.16".parse::<OcpVersion>().unwrap().to_string(), "4.16");
        for bad in ["4", "4.", ".2", "4.2.1", "a.b", "4.+2"] {
            assert!(bad.parse::<OcpVersion>().is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_rhcos_build_ids_and_cloud_image_names() {
        for (name, want) in [
            ("4.2", v(4, 2)),
            ("42.80.20191002.0", v(4, 2)),
            ("rhcos-42.80.20191002.0", v(4, 2)),
            ("rhcos-42-80-20191002-0-gcp-x86-64", v(4, 2)),
            ("410.84.202205191234-0", v(4, 10)),
            ("rhcos-410-84-202205191234-0-gcp-x86-64", v(4, 10)),
            ("413.92.202401100947-0", v(4, 13)),
            ("46.82.202012051820-0", v(4, 6)),
        ] {
            assert_eq!(
                bootimage_name(name).map(|n| n.version),
                Ok(BootimageId::Rhcos(want)),
                "{name}"
            );
        }
        for bad in [
            "",
            "42",
            "42.80.2019.0",
            "42.80.20191002",
            "42.80.20191002.x",
            "rhcos-42-80",
            "42-80-20191002-0",
            "fcos-33.2020.3.0",
            "scos-9.6.20250222-0",
            "okd-4",
            "4.2.1.0",
            "4.2.x",
        ] {
            assert_eq!(
                bootimage_name(bad),
                Err(NameError::Syntax(bad.into())),
                "{bad}"
            );
        }
        assert!(matches!(
            bootimage_name("42.92.20191002.0"),
            Err(NameError::RhelMismatch {
                rhel: 9,
                table_rhel: 8,
                ..
            })
        ));
        let forms = [
            "4.2",
            "42.80.20191002.0",
            "rhcos-42.80.20191002.0",
            "rhcos-42-80-20191002-0-gcp-x86-64",
        ]
        .map(|n| bootimage_name(n).unwrap());
        assert_eq!(
            forms.each_ref().map(|n| n.form),
            [
                NameForm::Version,
                NameForm::BuildId,
                NameForm::BuildId,
                NameForm::CloudImageName
            ]
        );
        assert_eq!(forms[0].describe(), "4.2");
        assert_eq!(forms[1].describe(), "4.2 (RHCOS build ID 42.80.20191002.0)");
        let mut read = forms[1].clone();
        read.file = Some(NamedFile {
            path: "disk.qcow2".into(),
            kind: "qcow2 disk image".into(),
            within: "loader/entries/ostree-1-rhcos.conf".into(),
        });
        assert_eq!(
            read.describe(),
            "4.2 (RHCOS build ID 42.80.20191002.0 in loader/entries/ostree-1-rhcos.conf of qcow2 disk image disk.qcow2)"
        );
        let shared = bootimage_name("9.6.20250513-0").unwrap();
        assert_eq!(shared.version, BootimageId::Rhcos(v(4, 19)));
        assert_eq!(
            shared.range,
            [v(4, 19), v(4, 20), v(4, 21)].map(BootimageId::Rhcos)
        );
        assert_eq!(
            shared.describe(),
            "4.19-4.21 (RHCOS build ID 9.6.20250513-0)"
        );
        let z = bootimage_name("4.2.36").unwrap();
        assert_eq!(
            (z.form, z.version),
            (NameForm::ReleaseVersion, BootimageId::Rhcos(v(4, 2)))
        );
        assert_eq!(z.describe(), "4.2 (OpenShift release 4.2.36)");
        assert_eq!(
            cloud_image_arch("rhcos-42-80-20191002-0-gcp-x86-64"),
            Some("amd64")
        );
        assert_eq!(
            cloud_image_arch("rhcos-410-84-202205191234-0-aws-aarch64"),
            Some("arm64")
        );
        assert_eq!(cloud_image_arch("rhcos-42-80-20191002-0-gcp"), None);
        assert!(matches!(
            bootimage_name("9.1.20250513-0"),
            Err(NameError::Syntax(_))
        ));
    }

    #[test]
    fn targets_differ_in_what_a_build_or_config_meets() {
        let t = |m| Target::new(BootimageId::Rhcos(v(4, m)), None, None, "amd64").unwrap();
        assert!(t(19).differences(&t(21)).is_empty());
        let d = t(12).differences(&t(19));
        assert_eq!(
            d[..3],
            [
                "OS RHEL 8 on 4.12, RHEL 9 on 4.19",
                "glibc 2.28 on 4.12, 2.34 on 4.19",
                "libcrypto libcrypto.so.1.1 on 4.12, libcrypto.so.3 on 4.19",
            ]
        );
        assert!(t(5)
            .differences(&t(6))
            .iter()
            .any(|d| d.starts_with("spec written 2.2.0 on 4.5, 3.1.0 on 4.6")));
    }

    #[test]
    fn reads_okd_bootimage_names() {
        for (name, want, form) in [
            (
                "33.20201201.3.0",
                BootimageId::Fcos(33),
                NameForm::FcosBuildId,
            ),
            (
                "fcos-33.20201201.3.0",
                BootimageId::Fcos(33),
                NameForm::FcosBuildId,
            ),
            (
                "fedora-coreos-39.20231101.3.0",
                BootimageId::Fcos(39),
                NameForm::FcosBuildId,
            ),
            (
                "31.20200420.3.0",
                BootimageId::Fcos(31),
                NameForm::FcosBuildId,
            ),
            (
                "scos-9.0.20250222-0",
                BootimageId::Scos(9),
                NameForm::ScosBuildId,
            ),
            (
                "9.0.20250411-0",
                BootimageId::Scos(9),
                NameForm::ScosBuildId,
            ),
            (
                "scos-10.0.20251103-0",
                BootimageId::Scos(10),
                NameForm::ScosBuildId,
            ),
            ("okd-4.7", BootimageId::Fcos(33), NameForm::OkdRelease),
            ("okd-4.12", BootimageId::Fcos(36), NameForm::OkdRelease),
            ("okd-4.19", BootimageId::Scos(9), NameForm::OkdRelease),
            ("fcos-33", BootimageId::Fcos(33), NameForm::Version),
            ("scos-10", BootimageId::Scos(10), NameForm::Version),
        ] {
            let n = bootimage_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((n.version, n.form), (want, form), "{name}");
        }
        assert_eq!(
            bootimage_name("okd-4.7").unwrap().describe(),
            "fcos-33 (OKD release okd-4.7)"
        );
        // Known forms naming what the table lacks say what it holds.
        for (name, says) in [
            (
                "40.20240416.3.1",
                "fcos-40 is not in the table; its OKD rows are fcos-31, ",
            ),
            ("okd-4.3", "the table knows the bootimages of OKD 4.4, 4.5,"),
        ] {
            let e = bootimage_name(name).unwrap_err().to_string();
            assert!(e.contains(says), "{name}: {e}");
        }
        // Fedora CoreOS: Fedora's glibc and OpenSSL, MCO's plain build, no RHEL.
        let t = Target::new(BootimageId::Fcos(33), None, None, "amd64").unwrap();
        assert_eq!(
            (t.os, t.glibc.as_str(), t.libcrypto.as_str(), t.spec),
            (
                HostOs::Fedora(33),
                "2.32",
                "libcrypto.so.1.1",
                SpecVersion::V3_2
            )
        );
        assert!(!t.has_legacy_firstboot());
        let t36 = Target::new(BootimageId::Fcos(36), None, None, "amd64").unwrap();
        assert_eq!(t36.libcrypto, "libcrypto.so.3");
        let t31 = Target::new(BootimageId::Fcos(31), None, None, "amd64").unwrap();
        assert_eq!(
            (t31.spec, t31.max_spec),
            (SpecVersion::V3_0, SpecVersion::V3_0)
        );
        assert!(matches!(
            Target::new(BootimageId::Fcos(33), None, Some(8), "amd64"),
            Err(TargetError::RhelOnFedora { rhel: 8, .. })
        ));
        let s = Target::new(BootimageId::Scos(9), None, None, "amd64").unwrap();
        assert_eq!((s.os, s.glibc.as_str()), (HostOs::Rhel(9), "2.34"));
        for id in ["4.2", "fcos-33", "scos-9"] {
            assert_eq!(id.parse::<BootimageId>().unwrap().to_string(), id);
        }
        // Every OKD release's pinned bootimage has a row.
        for r in OKD_RELEASES {
            assert!(bootimage(r.bootimage).is_ok(), "okd-{}", r.version);
        }
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let t = Target::new(r(4, 2), None, None, "amd64").unwrap();
        assert_eq!(t.spec, SpecVersion::V2_2);
        assert_eq!(t.libcrypto, "libcrypto.so.1.1");
        assert!(t.has_legacy_firstboot());
        let t = Target::new(r(4, 16), None, Some(8), "amd64").unwrap();
        assert_eq!(t.glibc, "2.28");
        assert!(matches!(
            Target::new(r(4, 2), Some(SpecVersion::V3_2), None, "amd64"),
            Err(TargetError::WrongFamily { .. })
        ));
        assert!(matches!(
            Target::new(r(4, 8), Some(SpecVersion::V3_3), None, "amd64"),
            Err(TargetError::SpecTooNew { .. })
        ));
        assert!(matches!(
            Target::new(r(4, 8), None, Some(6), "amd64"),
            Err(TargetError::UnknownRhel(6))
        ));
    }
}
