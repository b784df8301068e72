//! The bootimages a config can target: one table, as data, with a source for each row.
//!
//! A row says what the RHCOS bootimage of one OpenShift minor version offers to the
//! binary (RHEL major, glibc, libcrypto) and to the config (Ignition generation, the
//! newest spec it reads, the spec written by default).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::elf::DottedVersion;
use crate::ignition::SpecVersion;
use crate::osrelease::OsRelease;

/// An OpenShift minor version, `X.Y`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OcpVersion {
    pub major: u32,
    pub minor: u32,
}

/// Why a bootimage version was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VersionError {
    #[error("invalid bootimage version {0:?}: expected X.Y, e.g. 4.2")]
    Syntax(String),
    #[error("unknown bootimage {0}: the table covers {first} to {last}", first = BOOTIMAGES[0].version, last = BOOTIMAGES[BOOTIMAGES.len() - 1].version)]
    Unknown(OcpVersion),
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

/// What one RHEL major version offers a dynamic binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RhelBase {
    pub major: u32,
    pub glibc: &'static str,
    pub libcrypto: &'static str,
    pub libssl: &'static str,
}

/// RHEL reference values (DESIGN.md §5).
pub const RHEL: [RhelBase; 3] = [
    RhelBase {
        major: 7,
        glibc: "2.17",
        libcrypto: "libcrypto.so.10",
        libssl: "libssl.so.10",
    },
    RhelBase {
        major: 8,
        glibc: "2.28",
        libcrypto: "libcrypto.so.1.1",
        libssl: "libssl.so.1.1",
    },
    RhelBase {
        major: 9,
        glibc: "2.34",
        libcrypto: "libcrypto.so.3",
        libssl: "libssl.so.3",
    },
];

/// The RHEL reference values of a major version.
pub fn rhel(major: u32) -> Option<RhelBase> {
    RHEL.iter().copied().find(|r| r.major == major)
}

/// One row of the table.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bootimage {
    pub version: OcpVersion,
    pub rhel: u32,
    pub glibc: &'static str,
    pub libcrypto: &'static str,
    pub ignition: IgnitionGeneration,
    /// The newest spec the bootimage's Ignition reads.
    pub max_spec: SpecVersion,
    /// The spec written unless `--spec` says otherwise.
    pub default_spec: SpecVersion,
    pub source: &'static str,
}

const fn v(major: u32, minor: u32) -> OcpVersion {
    OcpVersion { major, minor }
}

const RHEL8_V0: &str = "RHCOS 4.1-4.5 is RHEL 8 (glibc 2.28, OpenSSL 1.1) with Ignition v0.x, \
which reads spec 2.x only; the MCS of these releases serves spec 2.2.0";

/// The table. Rows are in version order; `glibc` and `libcrypto` follow `rhel`.
pub const BOOTIMAGES: &[Bootimage] = &[
    row(v(4, 1), 8, IgnitionGeneration::V0, SpecVersion::V2_2, SpecVersion::V2_2,
        "RHCOS 41.8x (RHEL 8.0) with Ignition v0.x; no RHEL_VERSION in os-release, MCO maps it to RHEL 8; ships pivot.service"),
    row(v(4, 2), 8, IgnitionGeneration::V0, SpecVersion::V2_2, SpecVersion::V2_2,
        "RHCOS 42.80 (RHEL 8.0) with Ignition v0.x; its baked-in MCD lacks firstboot-complete-machineconfig"),
    row(v(4, 3), 8, IgnitionGeneration::V0, SpecVersion::V2_2, SpecVersion::V2_2, RHEL8_V0),
    row(v(4, 4), 8, IgnitionGeneration::V0, SpecVersion::V2_2, SpecVersion::V2_2, RHEL8_V0),
    row(v(4, 5), 8, IgnitionGeneration::V0, SpecVersion::V2_2, SpecVersion::V2_2, RHEL8_V0),
    row(v(4, 6), 8, IgnitionGeneration::V2, SpecVersion::V3_1, SpecVersion::V3_1,
        "RHCOS 46.82 (RHEL 8.2) moved to Ignition v2 (v2.6: spec 3.1 from v2.3); installer and MCS write spec 3.1.0"),
    row(v(4, 7), 8, IgnitionGeneration::V2, SpecVersion::V3_2, SpecVersion::V3_2,
        "RHCOS 47.83 (RHEL 8.3), Ignition v2.9 (spec 3.2 from v2.7); installer pointer configs are spec 3.2.0 from here on"),
    row(v(4, 8), 8, IgnitionGeneration::V2, SpecVersion::V3_2, SpecVersion::V3_2,
        "RHCOS 48.84 (RHEL 8.4), Ignition v2.9-v2.10: spec 3.2 is the newest it reads"),
    row(v(4, 9), 8, IgnitionGeneration::V2, SpecVersion::V3_2, SpecVersion::V3_2,
        "RHCOS 49.84 (RHEL 8.4); spec 3.2 kept as the newest proven spec (Ignition release not pinned here)"),
    row(v(4, 10), 8, IgnitionGeneration::V2, SpecVersion::V3_2, SpecVersion::V3_2,
        "RHCOS 410.84 (RHEL 8.4); spec 3.2 kept as the newest proven spec (Ignition release not pinned here)"),
    row(v(4, 11), 8, IgnitionGeneration::V2, SpecVersion::V3_3, SpecVersion::V3_2,
        "RHCOS 411.86 (RHEL 8.6), Ignition v2.14 (spec 3.3 from v2.11); installer still writes 3.2.0"),
    row(v(4, 12), 8, IgnitionGeneration::V2, SpecVersion::V3_3, SpecVersion::V3_2,
        "RHCOS 412.86 (RHEL 8.6), Ignition v2.14; the last RHEL 8 based RHCOS"),
    row(v(4, 13), 9, IgnitionGeneration::V2, SpecVersion::V3_3, SpecVersion::V3_2,
        "RHCOS 413.92 (RHEL 9.2: glibc 2.34, OpenSSL 3); the first RHEL 9 based RHCOS"),
    row(v(4, 14), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 414.92 (RHEL 9.2), Ignition v2.16 (spec 3.4 from v2.15); installer writes 3.2.0"),
    row(v(4, 15), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 415.92 (RHEL 9.2), Ignition v2.16 or later"),
    row(v(4, 16), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 416.94 (RHEL 9.4); MCO images carry a RHEL 9 MCD plus a .rhel8 build"),
    row(v(4, 17), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 417.94 (RHEL 9.4)"),
    row(v(4, 18), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 418.94: os-release ID=rhcos VERSION_ID=4.18 RHEL_VERSION=9.4; spec 3.4 is the newest this tool writes"),
    row(v(4, 19), 9, IgnitionGeneration::V2, SpecVersion::V3_4, SpecVersion::V3_2,
        "RHCOS 4.19 is RHEL 9.6 with a CoreOS variant (ID=rhel VERSION_ID=9.6); newer rows are not proven yet"),
];

const fn row(
    version: OcpVersion,
    rhel: u32,
    ignition: IgnitionGeneration,
    max_spec: SpecVersion,
    default_spec: SpecVersion,
    source: &'static str,
) -> Bootimage {
    let base = match rhel {
        8 => RHEL[1],
        _ => RHEL[2],
    };
    Bootimage {
        version,
        rhel,
        glibc: base.glibc,
        libcrypto: base.libcrypto,
        ignition,
        max_spec,
        default_spec,
        source,
    }
}

/// The row of a bootimage version.
pub fn bootimage(version: OcpVersion) -> Result<&'static Bootimage, VersionError> {
    BOOTIMAGES
        .iter()
        .find(|b| b.version == version)
        .ok_or(VersionError::Unknown(version))
}

/// What a bootimage's os-release says of it, read the way MCO reads it: the OpenShift
/// version (`OPENSHIFT_VERSION`, else an RHCOS `VERSION_ID` such as `4.18` or the old
/// `42.80` form) and the RHEL major (`RHEL_VERSION`, else `VERSION_ID` when `ID=rhel`;
/// RHCOS without `RHEL_VERSION`, as on 4.1/4.2, is RHEL 8).
pub fn from_os_release(os: &OsRelease) -> (Option<OcpVersion>, Option<u32>) {
    let major_of = |v: &str| v.split('.').next().and_then(|m| m.parse::<u32>().ok());
    let id = os.id.as_deref().unwrap_or("");
    let rhel = match (&os.rhel_version, id) {
        (Some(r), _) => major_of(r),
        (None, "rhel") => os.version_id.as_deref().and_then(major_of),
        (None, "rhcos") => Some(8),
        _ => None,
    };
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
    (ocp, rhel)
}

/// What a binary and a config must fit: a table row with the user's overrides applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub bootimage: OcpVersion,
    pub rhel: u32,
    pub glibc: String,
    pub libcrypto: String,
    pub libssl: String,
    pub ignition: IgnitionGeneration,
    pub max_spec: SpecVersion,
    pub spec: SpecVersion,
    /// The OCI architecture of the node (from `--platform`).
    pub arch: String,
}

/// Why a target could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("--target-rhel {0}: only RHEL 7, 8 and 9 are known")]
    UnknownRhel(u32),
    #[error("spec {spec} cannot be read by the Ignition of bootimage {bootimage}, which reads at most spec {max}")]
    SpecTooNew {
        spec: SpecVersion,
        bootimage: OcpVersion,
        max: SpecVersion,
    },
    #[error("spec {spec} cannot be read by bootimage {bootimage}: its Ignition {generation} reads spec {family} only")]
    WrongFamily {
        spec: SpecVersion,
        bootimage: OcpVersion,
        generation: &'static str,
        family: &'static str,
    },
}

impl Target {
    /// The target of a bootimage with optional `--spec`, `--target-rhel` overrides.
    pub fn new(
        version: OcpVersion,
        spec: Option<SpecVersion>,
        rhel_major: Option<u32>,
        arch: &str,
    ) -> Result<Target, TargetError> {
        let row = bootimage(version)?;
        let major = rhel_major.unwrap_or(row.rhel);
        let base = rhel(major).ok_or(TargetError::UnknownRhel(major))?;
        let spec = spec.unwrap_or(row.default_spec);
        check_spec(row, spec)?;
        Ok(Target {
            bootimage: version,
            rhel: major,
            glibc: base.glibc.into(),
            libcrypto: base.libcrypto.into(),
            libssl: base.libssl.into(),
            ignition: row.ignition,
            max_spec: row.max_spec,
            spec,
            arch: arch.to_string(),
        })
    }

    /// The glibc version, parsed.
    pub fn glibc_version(&self) -> DottedVersion {
        self.glibc
            .parse()
            .expect("the table holds valid glibc versions")
    }

    /// Whether the bootimage carries the pre-4.6 first-boot paths to switch off.
    pub fn has_legacy_firstboot(&self) -> bool {
        self.bootimage <= v(4, 5)
    }

    /// Whether the bootimage's Ignition reads `spec`.
    pub fn reads(&self, spec: SpecVersion) -> bool {
        bootimage(self.bootimage)
            .map(|row| check_spec(row, spec).is_ok())
            .unwrap_or(false)
    }
}

fn check_spec(row: &Bootimage, spec: SpecVersion) -> Result<(), TargetError> {
    match (row.ignition, spec.is_v2()) {
        (IgnitionGeneration::V0, false) => Err(TargetError::WrongFamily {
            spec,
            bootimage: row.version,
            generation: "v0.x",
            family: "2.x",
        }),
        (IgnitionGeneration::V2, true) => Err(TargetError::WrongFamily {
            spec,
            bootimage: row.version,
            generation: "v2.x",
            family: "3.x",
        }),
        _ if spec > row.max_spec => Err(TargetError::SpecTooNew {
            spec,
            bootimage: row.version,
            max: row.max_spec,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_ordered_complete_and_consistent() {
        for w in BOOTIMAGES.windows(2) {
            assert!(w[0].version < w[1].version);
        }
        for minor in 1..=19 {
            let b = bootimage(v(4, minor)).unwrap();
            assert!(b.default_spec <= b.max_spec, "{}", b.version);
            assert!(check_spec(b, b.default_spec).is_ok(), "{}", b.version);
            let base = rhel(b.rhel).unwrap();
            assert_eq!(b.glibc, base.glibc);
            assert_eq!(b.libcrypto, base.libcrypto);
            assert_eq!(b.rhel, if minor <= 12 { 8 } else { 9 });
            assert_eq!(b.ignition == IgnitionGeneration::V0, minor <= 5);
            assert!(!b.source.is_empty());
        }
    }

    #[test]
    fn reads_bootimage_os_release() {
        let read = |text: &str| from_os_release(&OsRelease::parse(text));
        assert_eq!(
            read(
                "ID=\"rhcos\"\nVERSION_ID=\"4.18\"\nOPENSHIFT_VERSION=\"4.18\"\nRHEL_VERSION=9.4\n"
            ),
            (Some(v(4, 18)), Some(9))
        );
        assert_eq!(
            read(
                "ID=\"rhel\"\nVERSION_ID=\"9.6\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.19\"\n"
            ),
            (Some(v(4, 19)), Some(9))
        );
        assert_eq!(
            read("ID=\"rhcos\"\nVERSION_ID=\"42.80\"\nVERSION=\"42.80.20191010.0\"\n"),
            (Some(v(4, 2)), Some(8))
        );
        assert_eq!(
            read("ID=rhcos\nVERSION_ID=410.84\n"),
            (Some(v(4, 10)), Some(8))
        );
        assert_eq!(read("ID=rhel\nVERSION_ID=9.6\n"), (None, Some(9)));
        assert_eq!(read("ID=fedora\nVERSION_ID=40\n"), (None, None));
    }

    #[test]
    fn parses_versions() {
        assert_eq!("4.2".parse::<OcpVersion>().unwrap(), v(4, 2));
        assert_eq!("4.16".parse::<OcpVersion>().unwrap().to_string(), "4.16");
        for bad in ["4", "4.", ".2", "4.2.1", "a.b", "4.+2"] {
            assert!(bad.parse::<OcpVersion>().is_err(), "{bad}");
        }
        assert!(matches!(bootimage(v(3, 11)), Err(VersionError::Unknown(_))));
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let t = Target::new(v(4, 2), None, None, "amd64").unwrap();
        assert_eq!(t.spec, SpecVersion::V2_2);
        assert_eq!(t.libcrypto, "libcrypto.so.1.1");
        assert!(t.has_legacy_firstboot());
        let t = Target::new(v(4, 16), None, Some(8), "amd64").unwrap();
        assert_eq!(t.glibc, "2.28");
        assert!(matches!(
            Target::new(v(4, 2), Some(SpecVersion::V3_2), None, "amd64"),
            Err(TargetError::WrongFamily { .. })
        ));
        assert!(matches!(
            Target::new(v(4, 8), Some(SpecVersion::V3_3), None, "amd64"),
            Err(TargetError::SpecTooNew { .. })
        ));
        assert!(matches!(
            Target::new(v(4, 8), None, Some(6), "amd64"),
            Err(TargetError::UnknownRhel(6))
        ));
    }
}
