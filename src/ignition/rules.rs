//! The rules Ignition applies to a config beyond its JSON schema, for the parts this
//! tool reads and writes: node paths absolute and fully simplified, no path defined
//! twice (across files, directories and links), no node under a path the config makes
//! a file or a link, no unit or drop-in defined twice. A config that breaks them is
//! refused by Ignition (or fails at boot); `--base` and `verify` refuse it first.

use std::collections::{HashMap, HashSet};

#[cfg(test)]
use serde_json::Value;

const KINDS: [&str; 3] = ["files", "directories", "links"];

/// Every rule the config breaks, one line each, naming the entry (the whole-value
/// form of the checks `Document` runs on paths and names).
#[cfg(test)]
pub fn check(cfg: &Value) -> Vec<String> {
    let nodes = KINDS.into_iter().flat_map(|kind| {
        cfg["storage"][kind]
            .as_array()
            .into_iter()
            .flatten()
            .map(move |node| (kind, node["path"].as_str()))
    });
    let mut problems = check_nodes(nodes);
    let mut units = HashSet::new();
    for unit in cfg["systemd"]["units"].as_array().into_iter().flatten() {
        let name = unit["name"].as_str().unwrap_or("");
        if !units.insert(name) {
            problems.push(duplicate_unit(name));
        }
        let dropins = unit["dropins"].as_array().into_iter().flatten();
        problems.extend(check_dropins(
            name,
            dropins.map(|d| d["name"].as_str().unwrap_or("")),
        ));
    }
    problems
}

/// The rules on node paths, for `(kind, path)` of every node in config order (`kind`
/// is `files`, `directories` or `links`): absolute, simplified, defined once, and no
/// node under a file or a link. Holds only the paths, so it serves large configs.
pub fn check_nodes<'a>(
    nodes: impl IntoIterator<Item = (&'static str, Option<&'a str>)>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let nodes = nodes.into_iter();
    // Index into KINDS, and sized once: the map holds every node of configs of 100,000s.
    let mut kinds: HashMap<&str, u8> = HashMap::with_capacity(nodes.size_hint().0);
    for (kind, path) in nodes {
        let Some(path) = path else {
            problems.push(format!("storage.{kind}: an entry has no path"));
            continue;
        };
        if let Err(why) = simplified(path) {
            problems.push(format!("storage.{kind} {path:?}: {why}"));
            continue;
        }
        let k = KINDS.iter().position(|k| *k == kind).expect("a node kind") as u8;
        if let Some(first) = kinds.insert(path, k) {
            let first = KINDS[usize::from(first)];
            problems.push(format!(
                "{path} is defined twice (in storage.{first} and storage.{kind}); Ignition refuses duplicate entries"
            ));
        }
    }
    let mut shadowed = Vec::new();
    for (path, kind) in &kinds {
        for ancestor in ancestors(path) {
            let Some(other) = kinds.get(ancestor).map(|k| KINDS[usize::from(*k)]) else {
                continue;
            };
            if other != "directories" {
                shadowed.push((*path, format!(
                    "storage.{} {path} needs {ancestor} to be a directory, but storage.{other} puts a {} there",
                    KINDS[usize::from(*kind)],
                    if other == "links" { "link" } else { "file" }
                )));
            }
        }
    }
    shadowed.sort_by(|a, b| a.0.cmp(b.0));
    problems.extend(shadowed.into_iter().map(|(_, p)| p));
    problems
}

/// The problem of a unit defined twice.
pub fn duplicate_unit(name: &str) -> String {
    format!("unit {name} is defined twice; Ignition refuses duplicate entries")
}

/// The rule on one unit's drop-ins: each name once.
pub fn check_dropins<'a>(unit: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .into_iter()
        .filter(|n| !seen.insert(*n))
        .map(|dname| {
            format!(
                "unit {unit}: drop-in {dname} is defined twice; Ignition refuses duplicate entries"
            )
        })
        .collect()
}

/// Whether a node path is absolute and fully simplified, as Ignition requires.
fn simplified(path: &str) -> Result<(), &'static str> {
    if !path.starts_with('/') {
        return Err("path is not absolute");
    }
    if path == "/" {
        return Ok(());
    }
    let dirty = path.ends_with('/')
        || path[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if dirty {
        Err("path is not fully simplified")
    } else {
        Ok(())
    }
}

/// The proper ancestors of a simplified absolute path, nearest first, `/` excluded.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(i, _)| &path[..i])
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clean_configs_pass() {
        let cfg = json!({
            "storage": {
                "files": [{"path": "/var/lib/mcd-inject/a"}, {"path": "/etc/x"}],
                "directories": [{"path": "/var/lib/mcd-inject"}],
                "links": [{"path": "/usr/local/bin/m"}]
            },
            "systemd": {"units": [{"name": "a.service", "dropins": [{"name": "1.conf"}, {"name": "2.conf"}]}]}
        });
        assert_eq!(check(&cfg), Vec::<String>::new());
    }

    #[test]
    fn dirty_duplicate_and_shadowed_paths_are_named() {
        let cfg = json!({
            "storage": {
                "files": [
                    {"path": "/var/lib/../lib/mcd-inject/x"},
                    {"path": "/var/lib/mcd-inject"},
                    {"path": "/var/lib/mcd-inject/a"},
                    {"path": "relative"}
                ],
                "links": [{"path": "/var/lib/mcd-inject/a"}]
            },
            "systemd": {"units": [
                {"name": "a.service", "dropins": [{"name": "1.conf"}, {"name": "1.conf"}]},
                {"name": "a.service"}
            ]}
        });
        let p = check(&cfg);
        let has = |s: &str| p.iter().any(|l| l.contains(s));
        assert!(
            has("\"/var/lib/../lib/mcd-inject/x\": path is not fully simplified"),
            "{p:?}"
        );
        assert!(has("\"relative\": path is not absolute"), "{p:?}");
        assert!(has("/var/lib/mcd-inject/a is defined twice"), "{p:?}");
        assert!(
            has("needs /var/lib/mcd-inject to be a directory, but storage.files puts a file there"),
            "{p:?}"
        );
        assert!(has("drop-in 1.conf is defined twice"), "{p:?}");
        assert!(has("unit a.service is defined twice"), "{p:?}");
    }

    #[test]
    fn simplification_follows_ignition() {
        assert!(simplified("/").is_ok());
        assert!(simplified("/a/b").is_ok());
        for bad in ["/a//b", "/a/./b", "/a/", "/a/.."] {
            assert_eq!(
                simplified(bad),
                Err("path is not fully simplified"),
                "{bad}"
            );
        }
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a/b", "/a"]);
    }
}
