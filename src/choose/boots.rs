//! The boots of a first boot, and the OS each runs. On an old bootimage the MCD of MCO
//! 4.12 and later updates the OS in place (podman, `rpm-ostree ex deploy-from-self`)
//! and reboots; the firstboot then runs again on the cluster's own OS, which for
//! clusters of 4.13 and later is RHEL 9 where the bootimage is RHEL 8 (docs/firstboot.md,
//! "The three boots"). The delivered MCD has to run on both: this module says what the
//! cluster's OS is, and from what.

use std::collections::BTreeMap;

use serde::Serialize;

use super::elf::ElfFacts;
use super::osrelease::OsRelease;
use super::rules::{self, nominal_rhel, Candidate};
use super::target::{self, HostOs, OcpVersion, Target, TargetError};

/// The cluster's OS, as far as it matters to a binary. Serialized as the reports give
/// it: `{"rhel": 9, "source": ...}` or `{"fedora": 33, "source": ...}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterOs {
    /// The OS of the cluster's nodes (RHEL for RHCOS and CentOS Stream CoreOS, Fedora
    /// for the Fedora CoreOS of OKD 4.4-4.15).
    pub os: HostOs,
    /// What says so.
    pub source: String,
}

impl Serialize for ClusterOs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let (key, major) = self.os.key();
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry(key, &major)?;
        map.serialize_entry("source", &self.source)?;
        map.end()
    }
}

/// The OS of a release's nodes, by its version: an OKD release (`4.7.0-0.okd-…`,
/// `4.19.0-okd-scos.1`) by the OKD table, an OpenShift one by its RHCOS row.
pub fn release_os(version: &str) -> Option<ClusterOs> {
    let xy = OcpVersion::of_release(version)?;
    if version.contains("okd") {
        let r = target::okd_release(xy)?;
        let what = match r.nodes {
            HostOs::Fedora(m) => format!("Fedora CoreOS {m}"),
            HostOs::Rhel(m) => format!("CentOS Stream CoreOS {m}, like RHEL {m}"),
        };
        return Some(ClusterOs {
            os: r.nodes,
            source: format!("the release, {version}: OKD {xy} nodes run {what}"),
        });
    }
    let row = target::bootimage(target::BootimageId::Rhcos(xy)).ok()?;
    Some(ClusterOs {
        os: row.os,
        source: format!("the release, {version}: RHCOS {xy} is {}", row.os),
    })
}

/// The cluster's OS by the MCO image's own labels. Red Hat's builds label their
/// OpenShift version (`version=v4.15.0`) beside MCO's `io.openshift.release.operator=true`
/// (a base image's labels lack the latter, so its own `version` does not count); the
/// RHCOS row of that version names the nodes' OS. Not for a Fedora CoreOS `boot`: OKD's
/// Fedora-era nodes run their release's Fedora CoreOS.
pub fn label_os(labels: &BTreeMap<String, String>, boot: Option<&Target>) -> Option<ClusterOs> {
    if boot.is_some_and(|b| b.os.rhel().is_none()) {
        return None;
    }
    let (xy, label) = label_version(labels)?;
    let row = target::bootimage(target::BootimageId::Rhcos(xy)).ok()?;
    Some(ClusterOs {
        os: row.os,
        source: format!(
            "the MCO image's label version={label}: RHCOS {xy} is {}",
            row.os
        ),
    })
}

/// The OpenShift version an MCO image's labels give (`version=v4.15.0` beside
/// `io.openshift.release.operator=true`; a base image's labels lack the latter), with the
/// label as written.
pub fn label_version(labels: &BTreeMap<String, String>) -> Option<(OcpVersion, &str)> {
    if labels
        .get("io.openshift.release.operator")
        .map(String::as_str)
        != Some("true")
    {
        return None;
    }
    let label = labels.get("version")?;
    Some((OcpVersion::of_release(label)?, label))
}

/// Where the cluster's OS is learnt from, best first: `--cluster-rhel`; the release
/// (`--release`: its version's row of the bootimage table, which is the RHCOS that
/// release ships, or the OKD release's nodes); the MCO image: its os-release, raised to
/// the newest `.rhelN` twin it ships (MCO 4.13-4.15 images are RHEL 8 with `.rhel9`
/// twins for the RHEL 9 nodes of those releases; 4.16-4.22 are RHEL 9 with `.rhel8`
/// twins for old bootimages).
pub fn cluster_os(
    flag: Option<u32>,
    release_version: Option<&str>,
    os: Option<&OsRelease>,
    builds: &[Candidate],
) -> Option<ClusterOs> {
    if let Some(rhel) = flag {
        return Some(ClusterOs {
            os: HostOs::Rhel(rhel),
            source: "--cluster-rhel".into(),
        });
    }
    if let Some(c) = release_version.and_then(release_os) {
        return Some(c);
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
            os: HostOs::Rhel(t),
            source: format!(
                "the MCO image: RHEL {image}, with a .rhel{t} build for the nodes of its release"
            ),
        },
        _ => ClusterOs {
            os: HostOs::Rhel(image),
            source: format!("the MCO image's os-release: RHEL {image}"),
        },
    })
}

/// The cluster's OS as the MCO image tells it, for nodes of this bootimage. A Fedora
/// CoreOS node of OKD's Fedora era updates to its release's Fedora CoreOS, which the
/// image does not name (OKD's MCO images are built on CentOS Stream); only an image on a
/// RHEL 9 base or newer (OKD 4.16 on) names the CentOS Stream CoreOS its nodes rebase to.
pub fn from_image(
    boot: &Target,
    os: Option<&OsRelease>,
    builds: &[Candidate],
) -> Option<ClusterOs> {
    let image = cluster_os(None, None, Some(os?), builds);
    match (boot.os, image) {
        (HostOs::Fedora(_), Some(c)) if c.os.rhel().is_some_and(|m| m >= 9) => Some(c),
        (HostOs::Fedora(m), _) => Some(ClusterOs {
            os: boot.os,
            source: format!(
                "the bootimage: Fedora CoreOS {m} nodes of OKD's Fedora era update to their \
                 release's Fedora CoreOS, {m} or later (give --release for the release's own)"
            ),
        }),
        (_, image) => image,
    }
}

/// The target of a later boot: the bootimage's config, on another OS.
pub fn on_os(boot: &Target, os: HostOs) -> Result<Target, TargetError> {
    let base = os
        .base()
        .ok_or(TargetError::UnknownRhel(os.rhel().unwrap_or_default()))?;
    Ok(Target {
        os,
        glibc: base.glibc.into(),
        libcrypto: base.libcrypto.into(),
        libssl: base.libssl.into(),
        kernel: base.kernel.into(),
        ..boot.clone()
    })
}

/// The OSes a node may run after its first boot: RHEL from the bootimage's on; from a
/// Fedora CoreOS bootimage, Fedora from its major on and the CentOS Stream CoreOS (RHEL
/// 9 and 10 bases) OKD rebased to in 4.16.
pub fn later_oses(boot: &Target) -> Vec<HostOs> {
    target::RHEL
        .iter()
        .chain(&target::FEDORA)
        .map(|b| b.os)
        .filter(|&os| match (boot.os, os) {
            (HostOs::Rhel(b), HostOs::Rhel(o)) => o >= b,
            (HostOs::Fedora(b), HostOs::Fedora(o)) => o >= b,
            (HostOs::Fedora(_), HostOs::Rhel(o)) => o >= 9,
            (HostOs::Rhel(_), HostOs::Fedora(_)) => false,
        })
        .collect()
}

/// Whether a build runs on every OS a node may run after the first boot: then it serves
/// every later boot, whatever the cluster's OS (a static build, as MCO 4.6-4.12 ship).
pub fn runs_on_every_later_os(build: &Candidate, boot: &Target) -> bool {
    later_oses(boot)
        .into_iter()
        .all(|os| on_os(boot, os).is_ok_and(|t| build.verdict(&t).compatible))
}

/// The RHEL majors of the table on which a build with these ELF facts runs natively (a
/// build delivered with its closure is installed there without it).
pub fn native_rhels(facts: &ElfFacts, boot: &Target) -> Vec<u32> {
    target::RHEL
        .iter()
        .filter(|r| on_os(boot, r.os).is_ok_and(|t| rules::verdict(facts, &t).compatible))
        .filter_map(|r| r.os.rhel())
        .collect()
}

/// A short name of the cluster's OS for messages.
pub fn describe(os: &ClusterOs, t: &Target) -> String {
    format!(
        "the cluster's OS ({}, {}: glibc {}, {}; from {})",
        t.arch, os.os, t.glibc, t.libcrypto, os.source
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
            (from_flag.os, from_flag.source.as_str()),
            (HostOs::Rhel(8), "--cluster-rhel")
        );
        let from_release = cluster_os(None, Some("4.12.5"), Some(&el9), &builds).unwrap();
        assert_eq!(from_release.os, HostOs::Rhel(8), "{from_release:?}");
        assert!(from_release.source.contains("4.12.5"));
        let from_image = cluster_os(None, None, Some(&el9), &builds).unwrap();
        assert_eq!(from_image.os, HostOs::Rhel(9));
        // A version past the table falls back to the image.
        assert_eq!(
            cluster_os(None, Some("9.1.0"), Some(&el9), &builds)
                .unwrap()
                .os,
            HostOs::Rhel(9)
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
        assert_eq!(c.os, HostOs::Rhel(9), "{c:?}");
        // MCO 4.16-4.22: a RHEL 9 image whose .rhel8 twin serves old bootimages.
        let el9 = os("ID=\"rhel\"\nVERSION_ID=\"9.4\"\n");
        let builds = [
            cand("/usr/bin/machine-config-daemon"),
            cand("/usr/bin/machine-config-daemon.rhel8"),
        ];
        assert_eq!(
            cluster_os(None, None, Some(&el9), &builds).unwrap().os,
            HostOs::Rhel(9)
        );
    }

    #[test]
    fn the_version_label_of_an_mco_image_names_its_nodes_os() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let operator = ("io.openshift.release.operator", "true");
        // A real MCO 4.15 image: a RHEL 8 image whose nodes run RHEL 9.
        let c = label_os(&labels(&[operator, ("version", "v4.15.0")]), None).unwrap();
        assert_eq!(c.os, HostOs::Rhel(9), "{c:?}");
        assert!(c.source.contains("version=v4.15.0"), "{c:?}");
        let c = label_os(&labels(&[operator, ("version", "v4.12.0")]), None).unwrap();
        assert_eq!(c.os, HostOs::Rhel(8), "{c:?}");
        // A base image's own version label (UBI 8.6), not an operator's: not a release.
        assert_eq!(label_os(&labels(&[("version", "8.6")]), None), None);
        assert_eq!(
            label_os(&labels(&[operator, ("version", "8.6")]), None),
            None
        );
        assert_eq!(label_os(&labels(&[operator]), None), None);
        // Fedora CoreOS bootimages: OKD's nodes run their release's Fedora CoreOS.
        let fcos = Target::new(target::BootimageId::Fcos(33), None, None, "amd64").unwrap();
        assert_eq!(
            label_os(&labels(&[operator, ("version", "v4.7.0")]), Some(&fcos)),
            None
        );
    }

    #[test]
    fn okd_releases_name_their_nodes_os() {
        let builds = [cand("/usr/bin/machine-config-daemon")];
        let el8 = os("ID=\"centos\"\nVERSION_ID=\"8\"\n");
        let fcos = cluster_os(
            None,
            Some("4.7.0-0.okd-2021-03-07-090821"),
            Some(&el8),
            &builds,
        );
        assert_eq!(fcos.unwrap().os, HostOs::Fedora(33));
        let scos = cluster_os(None, Some("4.19.0-okd-scos.1"), Some(&el8), &builds).unwrap();
        assert_eq!(scos.os, HostOs::Rhel(9), "{scos:?}");
        assert!(scos.source.contains("CentOS Stream CoreOS 9"), "{scos:?}");
        // An OKD release the table lacks falls back to the image, never to an RHCOS row.
        let later = cluster_os(None, Some("4.30.0-okd-scos.0"), Some(&el8), &builds).unwrap();
        assert_eq!(later.os, HostOs::Rhel(8), "{later:?}");
    }
}
