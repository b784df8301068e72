//! os-release(5) files, read the way MCO reads them: one parser and one reading of the
//! facts the choice needs ([`OsRelease::rhel_major`], [`OsRelease::is_el8`]). MCO's
//! `pkg/daemon/osrelease` is the spec; where this reading differs, it says why. The node
//! scripts (`src/ignition/mco-mcd-install.sh`, `mco-persist-nics.sh`) read the same
//! facts in shell; one table of real os-release files holds the three together
//! (`tests/data/os-release/TABLE`, checked by `tests/it/osrelease_table.rs`).

use std::collections::BTreeMap;

use serde::Serialize;

/// The fields of an os-release file that matter here, plus all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OsRelease {
    /// `ID` (`rhcos`, `rhel`, `fedora`, ...).
    pub id: Option<String>,
    /// `VERSION_ID`.
    pub version_id: Option<String>,
    /// `RHEL_VERSION` (RHCOS and images built on RHEL).
    pub rhel_version: Option<String>,
    /// Every field, unquoted.
    #[serde(skip)]
    pub fields: BTreeMap<String, String>,
}

impl OsRelease {
    /// Parses `KEY=value` lines; values may be quoted with `"` or `'`, as os-release(5)
    /// allows. (MCO's parser takes a value up to a second `=` and strips only `"`; no
    /// field read here is written so in a real file.)
    pub fn parse(text: &str) -> Self {
        let mut fields = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            fields.insert(k.trim().to_string(), unquote(v.trim()));
        }
        OsRelease {
            id: fields.get("ID").cloned(),
            version_id: fields.get("VERSION_ID").cloned(),
            rhel_version: fields.get("RHEL_VERSION").cloned(),
            fields,
        }
    }

    fn field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }

    /// Whether the OS counts as RHEL when a build is chosen for it: MCO's `IsLikeRHEL`
    /// (`ID=rhel`, or `ID_LIKE` naming rhel), and also RHCOS and the RHEL rebuilds by their
    /// `ID` alone. Every real file of these names rhel in `ID_LIKE` but Oracle Linux's
    /// (`ID_LIKE="fedora"`, on which neither an MCO image nor a node runs); the `ID`s count
    /// so that a file that gives only `ID` and `VERSION_ID` reads as it says.
    pub fn is_like_rhel(&self) -> bool {
        let by_id = matches!(
            self.id.as_deref(),
            Some("rhel" | "rhcos" | "centos" | "almalinux" | "rocky" | "ol" | "scos")
        );
        by_id
            || self
                .field("ID_LIKE")
                .is_some_and(|l| l.split_whitespace().any(|w| w == "rhel"))
    }

    /// The OS version as MCO's `getOSVersion` forms it: `RHEL_VERSION` when the file has
    /// one; else `VERSION` less the `OPENSHIFT_VERSION` prefix (`4.12` is `412.`) when it
    /// starts with it (CentOS Stream CoreOS 4.12-4.18: `VERSION="412.9.202211241749-0"` is
    /// `9.202211241749-0`); else `8.1`/`8.2` for the `VERSION_ID` `4.1`/`4.2` of those
    /// RHCOS bootimages; else `VERSION_ID`. `None` when the file has none of them.
    pub fn mco_version(&self) -> Option<String> {
        if let Some(r) = &self.rhel_version {
            return Some(r.clone());
        }
        let stripped = self.field("OPENSHIFT_VERSION").and_then(|ocp| {
            let prefix = format!("{}.", ocp.replace('.', ""));
            let version = self.field("VERSION")?;
            // Go's strings.ReplaceAll, as MCO writes it.
            version
                .starts_with(&prefix)
                .then(|| version.replace(&prefix, ""))
        });
        stripped.or_else(|| match self.version_id.as_deref() {
            Some("4.1") => Some("8.1".into()),
            Some("4.2") => Some("8.2".into()),
            other => other.map(str::to_string),
        })
    }

    /// The RHEL major a build is chosen by, on the image and on the node: MCO's
    /// `BaseVersionMajor` where the OS is like RHEL ([`OsRelease::is_like_rhel`]), as its
    /// `ReexecuteForTargetRoot` compares the container's with the host's; `None` for other
    /// OSes (Fedora CoreOS: MCO gives it the plain build).
    ///
    /// One difference, on purpose: RHCOS without `RHEL_VERSION` is RHEL 8, whatever its
    /// `VERSION_ID`. Only 4.1 and 4.2 lack `RHEL_VERSION`, and their `VERSION_ID` (`4.1`,
    /// `4.2`) gives 8 in MCO's reading too; for other forms of such a file (a build ID as
    /// `VERSION_ID`, `42.80`) MCO takes the number before the first dot, which names no
    /// RHEL.
    pub fn rhel_major(&self) -> Option<u32> {
        if !self.is_like_rhel() {
            return None;
        }
        if self.rhel_version.is_none() && self.id.as_deref() == Some("rhcos") {
            return Some(8);
        }
        self.mco_version()?.split('.').next()?.parse().ok()
    }

    /// Whether the OS is Enterprise Linux CoreOS: MCO's `IsEL` (4.19-4.22): `ID` `rhcos`
    /// or `scos`, or `rhel` with `VARIANT_ID=coreos`. (MCO 4.23 adds `centos` with
    /// `VARIANT_ID=coreos`, CentOS Stream CoreOS of OKD 4.19 on, and has no `IsEL8`.)
    pub fn is_el(&self) -> bool {
        match self.id.as_deref() {
            Some("rhcos" | "scos") => true,
            Some("rhel") => self.field("VARIANT_ID") == Some("coreos"),
            _ => false,
        }
    }

    /// Whether MCO 4.13-4.22 take the host for EL8 (`IsEL8`), where they persist NIC
    /// names (`mco-persist-nics.sh` decides the same): an EL CoreOS whose
    /// [`OsRelease::mco_version`] starts with `8.`, or any OS whose version is exactly `8`
    /// (Go's `&&` binds tighter than `||`: CentOS Stream 8 counts).
    pub fn is_el8(&self) -> bool {
        let version = self.mco_version().unwrap_or_default();
        self.is_el() && version.starts_with("8.") || version == "8"
    }
}

fn unquote(v: &str) -> String {
    let inner = if v.len() >= 2
        && (v.starts_with('"') && v.ends_with('"') || v.starts_with('\'') && v.ends_with('\''))
    {
        &v[1..v.len() - 1]
    } else {
        v
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_mco_forms_them() {
        let v = |t: &str| OsRelease::parse(t).mco_version();
        assert_eq!(
            v("ID=rhcos\nVERSION_ID=4.18\nRHEL_VERSION=9.4\n").as_deref(),
            Some("9.4")
        );
        assert_eq!(
            v("ID=scos\nVERSION=\"416.9.202406172220-0\"\nVERSION_ID=4.16\nOPENSHIFT_VERSION=4.16\n")
                .as_deref(),
            Some("9.202406172220-0")
        );
        // VERSION without the prefix: VERSION_ID.
        assert_eq!(
            v("ID=rhel\nVERSION=\"9.6.20250530-0 (Plow)\"\nVERSION_ID=9.6\nOPENSHIFT_VERSION=4.19\n")
                .as_deref(),
            Some("9.6")
        );
        assert_eq!(v("ID=rhcos\nVERSION_ID=4.1\n").as_deref(), Some("8.1"));
        assert_eq!(v("ID=rhcos\nVERSION_ID=4.2\n").as_deref(), Some("8.2"));
        assert_eq!(v("ID=rhcos\nVERSION_ID=42.80\n").as_deref(), Some("42.80"));
        assert_eq!(v("ID=rhcos\n"), None);
        // An empty RHEL_VERSION is still the version, as MCO takes it.
        assert_eq!(
            v("ID=rhel\nVERSION_ID=9.6\nRHEL_VERSION=\n").as_deref(),
            Some("")
        );
    }

    #[test]
    fn rhel_majors_and_el8() {
        let os = OsRelease::parse;
        // RHCOS without RHEL_VERSION is RHEL 8, whatever form its VERSION_ID has.
        assert_eq!(os("ID=rhcos\nVERSION_ID=42.80\n").rhel_major(), Some(8));
        assert!(
            !os("ID=rhcos\nVERSION_ID=42.80\n").is_el8(),
            "MCO: version 42.80"
        );
        // Like RHEL by ID_LIKE alone, or by the ID of a rebuild.
        assert_eq!(
            os("ID=other\nID_LIKE=\"rhel\"\nVERSION_ID=9.4\n").rhel_major(),
            Some(9)
        );
        assert_eq!(os("ID=centos\nVERSION_ID=8\n").rhel_major(), Some(8));
        assert_eq!(
            os("ID=fedora\nVERSION_ID=40\nVARIANT_ID=coreos\n").rhel_major(),
            None
        );
        assert_eq!(
            os("ID=debian\nVERSION_ID=12\nRHEL_VERSION=9.4\n").rhel_major(),
            None
        );
        assert_eq!(
            os("ID=rhel\nVERSION_ID=9.6\nRHEL_VERSION=\n").rhel_major(),
            None
        );
        // EL8: an EL CoreOS on 8.x, or any OS whose version is exactly 8.
        assert!(os("ID=scos\nVERSION_ID=8.9\n").is_el8());
        assert!(os("ID=\"rhel\"\nVERSION_ID=\"8.10\"\nVARIANT_ID=coreos\n").is_el8());
        assert!(
            !os("ID=\"rhel\"\nVERSION_ID=\"8.10\"\n").is_el8(),
            "RHEL 8, not CoreOS"
        );
        assert!(os("ID=debian\nVERSION_ID=8\n").is_el8());
        assert!(
            !os("ID=centos\nVERSION_ID=8.5\nVARIANT_ID=coreos\n").is_el8(),
            "not EL to 4.22"
        );
    }

    #[test]
    fn reads_rhcos_418() {
        let o = OsRelease::parse(
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nVERSION_ID=\"4.18\"\nOPENSHIFT_VERSION=\"4.18\"\nRHEL_VERSION=9.4\n# c\n",
        );
        assert_eq!(o.id.as_deref(), Some("rhcos"));
        assert_eq!(o.version_id.as_deref(), Some("4.18"));
        assert_eq!(o.rhel_version.as_deref(), Some("9.4"));
        assert_eq!(o.fields["OPENSHIFT_VERSION"], "4.18");
    }

    #[test]
    fn reads_rhcos_on_rhel10() {
        let o = OsRelease::parse(
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nVERSION=\"10.2 (Coughlan)\"\nID=\"rhel\"\nID_LIKE=\"centos fedora\"\nVERSION_ID=\"10.2\"\nVARIANT=CoreOS\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.0\"\n",
        );
        assert_eq!(o.id.as_deref(), Some("rhel"));
        assert_eq!(o.version_id.as_deref(), Some("10.2"));
        assert_eq!(o.rhel_version, None);
        assert_eq!(o.fields["VARIANT_ID"], "coreos");
        assert_eq!(o.fields["OPENSHIFT_VERSION"], "5.0");
    }

    #[test]
    fn unquotes_escapes() {
        assert_eq!(unquote(r#""a \"b\"""#), "a \"b\"");
        assert_eq!(unquote("'x'"), "x");
    }
}
