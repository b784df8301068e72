//! os-release(5) files, read the way MCO reads them.

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
    /// Parses `KEY=value` lines; values may be quoted with `"` or `'`.
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
