//! The boots of a first boot, and the OS each runs. On an old bootimage the MCD of MCO
//! 4.12 and later updates the OS in place (podman, `rpm-ostree ex deploy-from-self`)
//! and reboots; the firstboot then runs again on the cluster's own OS, which for
//! clusters of 4.13 and later is RHEL 9 where the bootimage is RHEL 8 (docs/firstboot.md,
//! "The three boots"). The delivered MCD has to run on both: this module says what the
//! cluster's OS is, and from what.

use serde::Serialize;

use super::elf::ElfFacts;
use super::osrelease::OsRelease;
use super::rules::{self, nominal_rhel, Candidate};
use super::target::{self, OcpVersion, Target, TargetError};

/// The cluster's OS, as far as it matters to a binary: its RHEL major.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterOs {
    /// The RHEL major of the cluster's RHCOS.
    pub rhel: u32,
    /// What says so.
    pub source: String,
}

/// Where the cluster's OS is learnt from, best first: `--cluster-rhel`; the release
/// (`--release`: its version's row of the bootimage table, which is the RHCOS that
/// release ships); the MCO image: its os-release, raised to the newest `.rhelN` twin
/// it ships (MCO 4.13-4.15 images are RHEL 8 with `.rhel9` twins for the RHEL 9 nodes
/// of those releases; 4.16-4.22 are RHEL 9 with `.rhel8` twins for old bootimages).
pub fn cluster_os(
    flag: Option<u32>,
    release_version: Option<&str>,
    os: Option<&OsRelease>,
    builds: &[Candidate],
) -> Option<ClusterOs> {
    if let Some(rhel) = flag {
        return Some(ClusterOs {
            rhel,
            source: "--cluster-rhel".into(),
        });
    }
    if let Some(v) = release_version {
        let xy = v.split('.').take(2).collect::<Vec<_>>().join(".");
        if let Some(row) = xy
            .parse::<OcpVersion>()
            .ok()
            .and_then(|o| target::bootimage(o).ok())
        {
            return Some(ClusterOs {
                rhel: row.rhel,
                source: format!(
                    "the release, {v}: RHCOS {} is RHEL {}",
                    row.version, row.rhel
                ),
            });
        }
    }
    let image = rules::image_rhel(os?)?;
    let twin = builds
        .iter()
        .filter_map(|c| {
            let name = c.path.rsplit('/').next().unwrap_or(&c.path);
            (name != super::mco::MCD_NAME)
                .then(|| nominal_rhel(&c.path, Some(image)))
                .flatten()
        })
        .max();
    Some(match twin {
        Some(t) if t > image => ClusterOs {
            rhel: t,
            source: format!(
                "the MCO image: RHEL {image}, with a .rhel{t} build for the nodes of its release"
            ),
        },
        _ => ClusterOs {
            rhel: image,
            source: format!("the MCO image's os-release: RHEL {image}"),
        },
    })
}

/// The target of a later boot: the bootimage's config, on another RHEL.
pub fn on_rhel(boot: &Target, rhel: u32) -> Result<Target, TargetError> {
    let base = target::rhel(rhel).ok_or(TargetError::UnknownRhel(rhel))?;
    Ok(Target {
        rhel,
        glibc: base.glibc.into(),
        libcrypto: base.libcrypto.into(),
        libssl: base.libssl.into(),
        kernel: base.kernel.into(),
        ..boot.clone()
    })
}

/// Whether a build runs on every RHEL from the bootimage's on: then it serves every
/// later boot, whatever the cluster's OS (a static build, as MCO 4.6-4.12 ship).
pub fn runs_on_every_later_rhel(build: &Candidate, boot: &Target) -> bool {
    target::RHEL
        .iter()
        .filter(|r| r.major >= boot.rhel)
        .all(|r| on_rhel(boot, r.major).is_ok_and(|t| build.verdict(&t).compatible))
}

/// The RHEL majors of the table on which a build with these ELF facts runs natively (a
/// build delivered with its closure is installed there without it).
pub fn native_rhels(facts: &ElfFacts, boot: &Target) -> Vec<u32> {
    target::RHEL
        .iter()
        .filter(|r| on_rhel(boot, r.major).is_ok_and(|t| rules::verdict(facts, &t).compatible))
        .map(|r| r.major)
        .collect()
}

/// A short name of the cluster's OS for messages.
pub fn describe(os: &ClusterOs, t: &Target) -> String {
    format!(
        "the cluster's OS ({}, RHEL {}: glibc {}, {}; from {})",
        t.arch, os.rhel, t.glibc, t.libcrypto, os.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::elf::ElfFacts;

    fn cand(path: &str) -> Candidate {
        Candidate {
            path: path.into(),
            sha256: String::new(),
            facts: Err::<ElfFacts, _>("unread".into()),
        }
    }

    fn os(text: &str) -> OsRelease {
        OsRelease::parse(text)
    }

    #[test]
    fn the_flag_then_the_release_then_the_image() {
        let el9 = os("ID=\"rhel\"\nVERSION_ID=\"9.4\"\n");
        let builds = [cand("/usr/bin/machine-config-daemon")];
        let from_flag = cluster_os(Some(8), Some("4.16.3"), Some(&el9), &builds).unwrap();
        assert_eq!(
            (from_flag.rhel, from_flag.source.as_str()),
            (8, "--cluster-rhel")
        );
        let from_release = cluster_os(None, Some("4.12.5"), Some(&el9), &builds).unwrap();
        assert_eq!(from_release.rhel, 8, "{from_release:?}");
        assert!(from_release.source.contains("4.12.5"));
        let from_image = cluster_os(None, None, Some(&el9), &builds).unwrap();
        assert_eq!(from_image.rhel, 9);
        // A version past the table falls back to the image.
        assert_eq!(
            cluster_os(None, Some("9.1.0"), Some(&el9), &builds)
                .unwrap()
                .rhel,
            9
        );
        assert_eq!(cluster_os(None, None, None, &builds), None);
    }

    #[test]
    fn a_newer_twin_names_the_nodes_of_an_older_base() {
        // MCO 4.13-4.15: a RHEL 8 image whose .rhel9 build is for the RHEL 9 nodes.
        let el8 = os("ID=\"rhel\"\nVERSION_ID=\"8.6\"\n");
        let builds = [
            cand("/usr/bin/machine-config-daemon"),
            cand("/usr/bin/machine-config-daemon.rhel9"),
        ];
        let c = cluster_os(None, None, Some(&el8), &builds).unwrap();
        assert_eq!(c.rhel, 9, "{c:?}");
        // MCO 4.16-4.22: a RHEL 9 image whose .rhel8 twin serves old bootimages.
        let el9 = os("ID=\"rhel\"\nVERSION_ID=\"9.4\"\n");
        let builds = [
            cand("/usr/bin/machine-config-daemon"),
            cand("/usr/bin/machine-config-daemon.rhel8"),
        ];
        assert_eq!(cluster_os(None, None, Some(&el9), &builds).unwrap().rhel, 9);
    }
}
