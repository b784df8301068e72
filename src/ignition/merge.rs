//! Merging our config into a base config (`--base`): everything in the base is kept
//! exactly. MCO's firstboot and pull units in the base keep their text and get our
//! drop-ins, as Ignition's own merge does when the cluster's config comes at boot; our
//! install unit and files replace an earlier run's; pre-4.6 MCO units are taken out.
//! Each of these is reported; any other conflict is an error unless forced.

use serde_json::Value;

use super::document::{report_lines, Document, Entry, Kind};
use super::node;
use super::schema::Schema;
use super::translate::{self, TranslateError};
use super::units::{
    DROPIN, FIRSTBOOT_UNIT, INSTALL_UNIT, LINK_PATH, PIVOT_UNIT, PULL_UNIT, REMOVED_MCO_UNITS,
};
use super::SpecVersion;

/// Why a base could not be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("the base config has no ignition.version")]
    NoVersion,
    #[error("the base config is spec {base}, which cannot be translated to spec {out}: {why}")]
    Untranslatable {
        base: String,
        out: SpecVersion,
        why: &'static str,
    },
    #[error(transparent)]
    Translate(#[from] TranslateError),
    #[error("the base config is not valid spec {spec}: {}", .problems.join("; "))]
    Invalid { spec: String, problems: Vec<String> },
    #[error("the base config already has {what} with other content (use --force to replace it)")]
    Conflict { what: String },
    #[error("the base config changes what runs at first boot on this tool's units or paths outside their own entries (use --force to remove these entries): {}", .entries.join("; "))]
    Reaches { entries: Vec<String> },
    #[error("merged with the base, the config breaks Ignition's rules: {}", .problems.join("; "))]
    Clash { problems: Vec<String> },
}

/// The spec a base's version string names: 2.0 and 2.1 are read as the 2.2 they are
/// subsets of.
fn base_spec(version: &str, out: SpecVersion) -> Result<SpecVersion, MergeError> {
    let refuse = |why| MergeError::Untranslatable {
        base: version.to_string(),
        out,
        why,
    };
    if ["2.0.0", "2.1.0"].contains(&version) {
        return Ok(SpecVersion::V2_2);
    }
    version
        .parse()
        .map_err(|_| refuse("only specs 2.0.0-2.2.0 and 3.0.0-3.6.0 are read"))
}

/// The spec a base is written in, for choosing the output spec.
pub fn declared_spec(base: &Document) -> Option<SpecVersion> {
    let v = base.version()?;
    if ["2.0.0", "2.1.0"].contains(&v) {
        return Some(SpecVersion::V2_2);
    }
    v.parse().ok()
}

fn key<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// The paths only this tool writes: a base that holds them is an earlier run's output.
fn is_ours(path: &str) -> bool {
    super::units::is_our_file(path) || path == LINK_PATH
}

/// A base's MCO unit with our drop-ins: its text, enablement and other drop-ins stay
/// (the cluster's unit for its MCO version), ours are added or replace a same-named
/// one. The unit's own text is ours only when the base has none.
fn with_our_dropins(
    base: &Value,
    ours: &Value,
    force: bool,
    notes: &mut Notes,
) -> Result<Value, MergeError> {
    let name = key(base, "name").unwrap_or("");
    let mut unit = base.clone();
    let m = unit.as_object_mut().expect("units are objects");
    if base["mask"] == true {
        if !force {
            return Err(MergeError::Conflict {
                what: format!("unit {name} masked"),
            });
        }
        m.remove("mask");
        notes
            .forced
            .push(format!("unmasked {name} from the base (--force)"));
    }
    if base.get("contents").is_none() {
        if let Some(c) = ours.get("contents") {
            m.insert("contents".into(), c.clone());
        }
    }
    if base.get("enabled").is_none() {
        if let Some(e) = ours.get("enabled") {
            m.insert("enabled".into(), e.clone());
        }
    }
    let mut dropins: Vec<Value> = base["dropins"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| key(d, "name") != Some(DROPIN))
        .cloned()
        .collect();
    dropins.extend(ours["dropins"].as_array().into_iter().flatten().cloned());
    m.insert("dropins".into(), Value::Array(dropins));
    notes.info.push(if base.get("contents").is_some() {
        format!("kept {name} from the base and added drop-in {DROPIN} to it")
    } else {
        format!("added drop-in {DROPIN} to {name} from the base")
    });
    Ok(unit)
}

/// `pivot.service` as the MCS serves it to a 4.1-4.5 bootimage: no text of its own (the
/// unit is the OS's), only MCO's environment drop-ins. Our mask goes on that entry and
/// its drop-ins stay, as at boot, where the MCS's entry merged over ours unmasks
/// nothing. A base entry with a text, or enabling the unit, stays a conflict.
fn masked_keeping_dropins(base: &Value, ours: &Value) -> Option<Value> {
    let only_dropins = base
        .as_object()?
        .keys()
        .all(|k| k == "name" || k == "dropins");
    (key(ours, "name") == Some(PIVOT_UNIT) && ours["mask"] == true && only_dropins).then(|| {
        let mut unit = base.clone();
        unit["mask"] = Value::Bool(true);
        unit
    })
}

/// What a merge did to the base beyond adding our entries, one line each.
#[derive(Debug, Default)]
pub struct Notes {
    /// Kept, added, translated, or replaced from an earlier run: information.
    pub info: Vec<String>,
    /// Base entries that `--force` replaced or unmasked.
    pub forced: Vec<String>,
}

/// Merges `ours` (rendered for `out`) into `base`: checks the base, raises its spec,
/// merges units and nodes, and checks the result against Ignition's rules. Returns the
/// merged config and what was done to the base's entries.
pub fn merge<'a>(
    base: Document<'a>,
    ours: &Value,
    out: SpecVersion,
    force: bool,
) -> Result<(Document<'a>, Notes), MergeError> {
    let (mut base, read) = translated(base, out)?;
    let mut notes = Notes::default();
    if read != out.as_str() {
        notes.info.push(format!(
            "translated the base from spec {read} to {out}, as MCO translates its pointer configs"
        ));
    }
    let mut ours = Document::from_value(ours.clone());
    let reaching = drop_reaching(&mut base, &ours, force, &mut notes);
    merge_units(&mut base, ours.take(Kind::Units), force, &mut notes)?;
    merge_nodes(&mut base, &mut ours, force, &mut notes)?;
    let problems = base.rules();
    if !problems.is_empty() {
        return Err(MergeError::Clash { problems });
    }
    if !reaching.is_empty() {
        return Err(MergeError::Reaches { entries: reaching });
    }
    Ok((base, notes))
}

/// A base checked against the spec it declares and translated to `out`, with the
/// version it declared.
pub fn translated(
    mut base: Document<'_>,
    out: SpecVersion,
) -> Result<(Document<'_>, String), MergeError> {
    let version = base.version().ok_or(MergeError::NoVersion)?.to_string();
    let spec = base_spec(&version, out)?;
    check_base(&mut base, &version, spec)?;
    let base = translate::translate(base, spec, out)?;
    if version != out.as_str() {
        // What the translation made must hold to the output spec's rules too (spec 3
        // refuses two entries at one path, which a 2.x config may have had).
        let problems = base.rules();
        if !problems.is_empty() {
            return Err(MergeError::Invalid {
                spec: format!("{version} once translated to {out}"),
                problems,
            });
        }
    }
    Ok((base, version))
}

/// Base entries that write, link or mask our units or paths outside `systemd.units`
/// (a drop-in written as a file, a mask link, a file where our link lands, a
/// `tmpfiles.d` line on the installed binary): removed under `--force`, else returned
/// (the merge refuses them once Ignition's own rules, which name some of them more
/// precisely, have been checked). Entries at the very paths ours write are left to
/// [`merge_nodes`].
fn drop_reaching(
    base: &mut Document,
    ours: &Document,
    force: bool,
    notes: &mut Notes,
) -> Vec<String> {
    let our_paths: Vec<String> = Kind::NODES
        .into_iter()
        .flat_map(|k| ours.each(k))
        .filter_map(|n| key(&n, "path").map(str::to_string))
        .collect();
    let exempt = |kind: Kind, path: &str| {
        node::is_our_entry(kind, path) || our_paths.iter().any(|p| p == path)
    };
    let reaches = node::view(base, &exempt).reaches;
    if !force {
        return reaches.iter().map(ToString::to_string).collect();
    }
    for kind in Kind::ALL {
        let mut index = 0;
        base.retain(kind, |_| {
            let drop = reaches
                .iter()
                .any(|r| r.kind == Some(kind) && r.index == index);
            index += 1;
            !drop
        });
    }
    if let Some(fs) = base
        .skeleton
        .get_mut("storage")
        .and_then(|s| s.get_mut("filesystems"))
        .and_then(Value::as_array_mut)
    {
        let mut index = 0;
        fs.retain(|_| {
            let drop = reaches.iter().any(|r| r.kind.is_none() && r.index == index);
            index += 1;
            !drop
        });
    }
    notes.forced.extend(
        reaches
            .iter()
            .map(|r| format!("removed {r} from the base (--force)")),
    );
    Vec::new()
}

/// Refuses a base that breaks its spec's schema (entry by entry) or Ignition's rules.
fn check_base(base: &mut Document, version: &str, spec: SpecVersion) -> Result<(), MergeError> {
    let invalid = |problems| MergeError::Invalid {
        spec: version.to_string(),
        problems,
    };
    // 2.0 and 2.1 are checked as the 2.2 they are read as.
    let as_read = Value::from(spec.as_str());
    let written = std::mem::replace(&mut base.skeleton["ignition"]["version"], as_read);
    let report = base.validate(&Schema::load(spec));
    base.skeleton["ignition"]["version"] = written;
    if !report.is_clean() {
        return Err(invalid(report_lines(report, |k| {
            format!("unknown key {k}")
        })));
    }
    // A 2.x config may hold two entries of one path (Ignition v0.x writes both, the
    // last wins); the translation folds them, and the output's rules are checked then.
    if !spec.is_v2() {
        let problems = base.rules();
        if !problems.is_empty() {
            return Err(invalid(problems));
        }
    }
    Ok(())
}

/// Units: MCO's keep their text and get our drop-ins; the ones only a pre-4.6 base
/// brings go; ours replace an earlier run's; any other of our names needs `--force`.
/// Kept base units come first, then ours.
fn merge_units<'a>(
    merged: &mut Document<'a>,
    ours: Vec<Entry<'a>>,
    force: bool,
    notes: &mut Notes,
) -> Result<(), MergeError> {
    let mut our_units: Vec<Value> = ours.iter().map(Entry::value).collect();
    let mut kept = Vec::new();
    for entry in merged.take(Kind::Units) {
        let name = entry.id().unwrap_or("").to_string();
        if REMOVED_MCO_UNITS.contains(&name.as_str()) {
            notes.info.push(format!(
                "removed {name} from the base: it belongs to clusters before 4.6"
            ));
            continue;
        }
        let Some(mine) = our_units.iter_mut().find(|o| key(o, "name") == Some(&name)) else {
            kept.push(entry);
            continue;
        };
        let u = entry.value();
        if *mine == u {
            continue;
        }
        if name == INSTALL_UNIT {
            notes.info.push(format!(
                "replaced {name} from an earlier run with this one's"
            ));
            continue;
        }
        if name == FIRSTBOOT_UNIT || name == PULL_UNIT {
            *mine = with_our_dropins(&u, mine, force, notes)?;
            continue;
        }
        if let Some(masked) = masked_keeping_dropins(&u, mine) {
            *mine = masked;
            notes
                .info
                .push(format!("masked {name} from the base, keeping its drop-ins"));
            continue;
        }
        if !force {
            return Err(MergeError::Conflict {
                what: format!("unit {name}"),
            });
        }
        notes
            .forced
            .push(format!("replaced unit {name} from the base (--force)"));
    }
    kept.extend(our_units.into_iter().map(|u| Entry::made(Kind::Units, u)));
    merged.put(Kind::Units, kept);
    Ok(())
}

/// Nodes: the same path with other content is a conflict, wherever it is; our nodes
/// from an earlier run are replaced. Ours follow the base's, in files and links.
fn merge_nodes<'a>(
    merged: &mut Document<'a>,
    ours: &mut Document<'a>,
    force: bool,
    notes: &mut Notes,
) -> Result<(), MergeError> {
    let ours_nodes: Vec<(Kind, Value)> = [Kind::Files, Kind::Links]
        .into_iter()
        .flat_map(|k| ours.each(k).map(move |v| (k, v)))
        .collect();
    for kind in Kind::NODES {
        let mut conflict = None;
        merged.retain(kind, |n| {
            let path = n.id().unwrap_or("");
            let Some((k, o)) = ours_nodes
                .iter()
                .find(|(_, o)| key(o, "path") == Some(path))
            else {
                // A payload of an earlier run that this one does not carry (its build
                // for another RHEL): nothing would install it any more.
                if kind == Kind::Files && super::units::is_payload_path(path) {
                    notes.info.push(format!(
                        "removed {path} from an earlier run: this one carries no such build"
                    ));
                    return false;
                }
                return true;
            };
            if conflict.is_some() || *k == kind && *o == n.value() {
                // Already failed, or the same entry: ours is added below.
            } else if *k == kind && is_ours(path) {
                notes.info.push(format!(
                    "replaced {path} from an earlier run with this one's"
                ));
            } else if !force {
                conflict = Some(MergeError::Conflict {
                    what: format!("path {path}"),
                });
            } else {
                notes
                    .forced
                    .push(format!("replaced {path} from the base (--force)"));
            }
            false
        });
        if let Some(e) = conflict {
            return Err(e);
        }
    }
    for kind in [Kind::Files, Kind::Links] {
        let mine = ours.take(kind);
        if !mine.is_empty() {
            merged.append(kind, mine);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Merges a base given as a value, returning the written result as a value.
    fn merge_v(
        base: &Value,
        ours: &Value,
        out: SpecVersion,
        force: bool,
    ) -> Result<(Value, Vec<String>), MergeError> {
        let text = base.to_string();
        let doc = Document::parse("base", text.as_bytes()).unwrap();
        let (m, notes) = merge(doc, ours, out, force)?;
        let mut bytes = Vec::new();
        m.write(&mut bytes).unwrap();
        let notes = notes.info.into_iter().chain(notes.forced).collect();
        Ok((serde_json::from_slice(&bytes).unwrap(), notes))
    }

    fn ours(version: &str) -> Value {
        json!({
            "ignition": {"version": version},
            "storage": {
                "files": [{"path": "/var/lib/mcd-inject/x", "contents": {"source": "data:,a"}}],
                "links": [{"path": "/usr/local/bin/machine-config-daemon", "target": "/run/bin/machine-config-daemon"}]
            },
            "systemd": {"units": [
                {"name": FIRSTBOOT_UNIT, "enabled": true, "contents": "new",
                 "dropins": [{"name": DROPIN, "contents": "run ours"}]},
                {"name": PULL_UNIT, "dropins": [{"name": DROPIN, "contents": "skip"}]}
            ]}
        })
    }

    #[test]
    fn keeps_the_base_and_replaces_owned_units() {
        let base = json!({
            "ignition": {"version": "3.2.0", "config": {"merge": [{"source": "https://mcs:22623/config/worker"}]}},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAA"]}]},
            "storage": {"files": [{"path": "/etc/hostname", "contents": {"source": "data:,n"}}]},
            "systemd": {"units": [
                {"name": "machine-config-daemon-pull.service", "enabled": true, "contents": "x"},
                {"name": FIRSTBOOT_UNIT, "enabled": true, "contents": "old"},
                {"name": "kubelet.service", "enabled": true, "contents": "k"}
            ]}
        });
        let (m, notes) = merge_v(&base, &ours("3.2.0"), SpecVersion::V3_2, false).unwrap();
        assert_eq!(m["passwd"], base["passwd"]);
        assert_eq!(m["ignition"]["config"], base["ignition"]["config"]);
        let names: Vec<&str> = m["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["kubelet.service", FIRSTBOOT_UNIT, PULL_UNIT]);
        // The cluster's texts stay; our drop-ins are added to them.
        assert_eq!(m["systemd"]["units"][1]["contents"], "old");
        assert_eq!(m["systemd"]["units"][1]["dropins"][0]["name"], DROPIN);
        assert_eq!(m["systemd"]["units"][2]["contents"], "x");
        assert_eq!(m["systemd"]["units"][2]["dropins"][0]["contents"], "skip");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(m["storage"]["files"].as_array().unwrap().len(), 2);
    }

    /// The MCS serves 4.1-4.5 bootimages a `pivot.service` of drop-ins only: our mask
    /// goes on it and the drop-ins stay; a text of its own is still a conflict.
    #[test]
    fn masks_the_mcs_pivot_entry_keeping_its_dropins() {
        let mut ours = ours("2.2.0");
        ours["systemd"]["units"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": PIVOT_UNIT, "mask": true}));
        let pivot = json!({"name": PIVOT_UNIT, "dropins": [{"name": "10-mco-default-env.conf"}]});
        let base = json!({"ignition": {"version": "2.2.0"}, "systemd": {"units": [pivot]}});
        let (m, notes) = merge_v(&base, &ours, SpecVersion::V2_2, false).unwrap();
        let units = m["systemd"]["units"].as_array().unwrap();
        let merged: Vec<&Value> = units.iter().filter(|u| u["name"] == PIVOT_UNIT).collect();
        assert_eq!(
            merged,
            [
                &json!({"name": PIVOT_UNIT, "mask": true, "dropins": [{"name": "10-mco-default-env.conf"}]})
            ]
        );
        assert!(notes
            .iter()
            .any(|n| n == "masked pivot.service from the base, keeping its drop-ins"));
        let with_text = json!({"ignition": {"version": "2.2.0"}, "systemd": {"units": [
            {"name": PIVOT_UNIT, "contents": "[Service]\n"}]}});
        let e = merge_v(&with_text, &ours, SpecVersion::V2_2, false).unwrap_err();
        assert!(matches!(e, MergeError::Conflict { .. }));
    }

    #[test]
    fn other_conflicts_need_force() {
        let base = json!({
            "ignition": {"version": "3.1.0"},
            "storage": {"files": [{"path": "/var/lib/mcd-inject/x", "contents": {"source": "data:,b"}}]}
        });
        let e = merge_v(&base, &ours("3.2.0"), SpecVersion::V3_2, false).unwrap_err();
        assert!(matches!(e, MergeError::Conflict { .. }));
        let (m, notes) = merge_v(&base, &ours("3.2.0"), SpecVersion::V3_2, true).unwrap();
        assert_eq!(m["ignition"]["version"], "3.2.0");
        assert!(notes.iter().any(|n| n.contains("translated")));
        assert!(notes.iter().any(|n| n.contains("--force")));
    }

    #[test]
    fn translates_other_specs_and_refuses_invalid_bases() {
        let b2 = json!({"ignition": {"version": "2.2.0", "config": {"append": [{"source": "https://mcs:22623/config/worker"}]}}});
        let (m, notes) = merge_v(&b2, &ours("3.2.0"), SpecVersion::V3_2, false).unwrap();
        assert_eq!(
            m["ignition"]["config"]["merge"][0]["source"],
            "https://mcs:22623/config/worker"
        );
        assert!(
            notes.iter().any(|n| n.contains("from spec 2.2.0 to 3.2.0")),
            "{notes:?}"
        );
        let newer =
            json!({"ignition": {"version": "3.4.0"}, "kernelArguments": {"shouldExist": ["x"]}});
        let e = merge_v(&newer, &ours("3.2.0"), SpecVersion::V3_2, false).unwrap_err();
        assert!(e.to_string().contains("kernelArguments"), "{e}");
        assert!(matches!(
            merge_v(
                &json!({"ignition": {"version": "1.0.0"}}),
                &ours("3.2.0"),
                SpecVersion::V3_2,
                false
            ),
            Err(MergeError::Untranslatable { .. })
        ));
        let bad = json!({"ignition": {"version": "3.2.0"}, "storage": {"filez": []}});
        assert!(matches!(
            merge_v(&bad, &ours("3.2.0"), SpecVersion::V3_2, false),
            Err(MergeError::Invalid { .. })
        ));
        assert_eq!(
            merge_v(&json!({}), &ours("3.2.0"), SpecVersion::V3_2, false),
            Err(MergeError::NoVersion)
        );
    }
}
