//! The node's view of a config: what systemd reads for our units and MCO's, from
//! `systemd.units` and from the files and links `storage` writes under the unit
//! directories, and which storage entries reach the paths this tool installs (through
//! the links the config and RHCOS define, and `tmpfiles.d` lines). Both `verify` and
//! `inject --base` read a config through it.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use serde_json::Value;

use super::decode_data_url;
use super::document::{Document, Kind};
use super::units::{FIRSTBOOT_UNIT, INSTALL_UNIT, LINK_PATH, PIVOT_UNIT, PULL_UNIT, RUN_BINARY};

/// The units whose files, drop-ins and masks only `systemd.units` may carry.
pub const GUARDED_UNITS: [&str; 4] = [INSTALL_UNIT, FIRSTBOOT_UNIT, PULL_UNIT, PIVOT_UNIT];

/// The directories systemd reads units from that Ignition can write (`/usr` is
/// read-only on RHCOS, `/run` a tmpfs).
const UNIT_DIRS: [&str; 3] = [
    "/etc/systemd/system",
    "/etc/systemd/system.control",
    "/etc/systemd/system.attached",
];

/// Links RHCOS itself has: a path under one of them lands under its target.
const OS_LINKS: [(&str, &str); 7] = [
    ("/usr/local", "/var/usrlocal"),
    ("/home", "/var/home"),
    ("/opt", "/var/opt"),
    ("/srv", "/var/srv"),
    ("/root", "/var/roothome"),
    ("/mnt", "/var/mnt"),
    ("/media", "/run/media"),
];

/// The directory of our payload, scripts and provenance record.
const PAYLOAD_DIR: &str = "/var/lib/mcd-inject";

/// A unit as systemd reads it: its text, its drop-ins by name (later sources of the
/// same name replace earlier ones, as the later file written wins), whether it is
/// masked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitView {
    pub text: Option<String>,
    pub dropins: BTreeMap<String, String>,
    pub masked: bool,
}

impl UnitView {
    /// The values the unit ends with for `section`/`key`: its text, then its drop-ins
    /// in name order; an empty assignment clears what came before.
    pub fn effective(&self, section: &str, key: &str) -> Vec<String> {
        let head = self.text.as_deref().unwrap_or("");
        let mut values = Vec::new();
        for text in std::iter::once(head).chain(self.dropins.values().map(String::as_str)) {
            let mut current = "";
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    current = line;
                    continue;
                }
                if current != section {
                    continue;
                }
                if let Some((k, val)) = line.split_once('=') {
                    if k.trim() == key {
                        let val = val.trim();
                        if val.is_empty() {
                            values.clear();
                        } else {
                            values.push(val.to_string());
                        }
                    }
                }
            }
        }
        values
    }
}

/// A storage entry that writes, links or masks one of ours: refused by `verify`, a
/// conflict for `inject --base`. Carries only the entry's place, path and what it
/// reaches (never its contents).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The entry's array: a [`Kind`], or `None` for `storage.filesystems`.
    pub kind: Option<Kind>,
    pub index: usize,
    pub path: String,
    pub what: String,
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (section, key) = match self.kind {
            Some(k) => (k.section(), k.key()),
            None => ("storage", "filesystems"),
        };
        write!(
            f,
            "{section}.{key}[{}] {}: {}",
            self.index, self.path, self.what
        )
    }
}

/// The node's view: the guarded units as systemd reads them, and the entries that
/// reach ours.
#[derive(Debug, Default)]
pub struct NodeView {
    pub units: BTreeMap<String, UnitView>,
    pub reaches: Vec<Reach>,
}

/// What a path names under a unit directory.
#[derive(Debug, PartialEq, Eq)]
enum UnitPath<'a> {
    /// The unit file (or a mask or alias link) of a unit.
    Unit(&'a str),
    /// A drop-in directory (`NAME.d`, `PREFIX-.service.d`, `service.d`), or a file in it.
    Dropin { dir: &'a str, file: Option<&'a str> },
    /// Anything else (`*.wants/`, `*.requires/`, other units).
    Other,
}

fn unit_path(path: &str) -> Option<UnitPath<'_>> {
    let rest = UNIT_DIRS
        .iter()
        .find_map(|d| path.strip_prefix(d)?.strip_prefix('/'))?;
    let (first, tail) = match rest.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    Some(match first.strip_suffix(".d") {
        Some(dir) => UnitPath::Dropin {
            dir,
            file: tail.filter(|t| !t.is_empty()),
        },
        None if tail.is_none() => UnitPath::Unit(first),
        None => UnitPath::Other,
    })
}

/// Whether a drop-in directory `dir` (without `.d`) applies to `unit`: its own, a
/// prefix one (`mco-.service.d` applies to `mco-mcd-install.service`), or its type's
/// (`service.d`).
fn dropin_dir_applies(dir: &str, unit: &str) -> bool {
    if dir == unit {
        return true;
    }
    let Some((stem, ty)) = unit.rsplit_once('.') else {
        return false;
    };
    if dir == ty {
        return true;
    }
    let Some(prefix) = dir.strip_suffix(&format!(".{ty}")) else {
        return false;
    };
    // Each dash-delimited prefix of the stem, ending in its dash.
    prefix.ends_with('-') && stem.starts_with(prefix)
}

/// The directory links a node has: RHCOS's own, then the config's, each by its path,
/// with its place in that order (the first that applies is followed, as before any
/// later one).
pub struct Links {
    by_path: HashMap<String, (usize, String)>,
}

impl Default for Links {
    /// RHCOS's links alone.
    fn default() -> Links {
        Links::new([])
    }
}

impl Links {
    /// RHCOS's links and then `config`'s (path, target), in that order.
    pub fn new(config: impl IntoIterator<Item = (String, String)>) -> Links {
        let mut by_path = HashMap::new();
        let os = OS_LINKS.iter().map(|(a, b)| (a.to_string(), b.to_string()));
        for (order, (from, to)) in os.chain(config).enumerate() {
            by_path.entry(from).or_insert((order, to));
        }
        Links { by_path }
    }
}

/// `path` with each directory link the config or RHCOS defines followed (the last
/// component is not followed: an entry replaces a link at its own path). Each hop looks
/// up the path's ancestors, so a config of many links and nodes costs their sum, not
/// their product.
pub fn resolve(path: &str, links: &Links) -> String {
    let mut p = normalize(path);
    for _ in 0..40 {
        let hop = p
            .match_indices('/')
            .skip(1)
            .filter_map(|(i, _)| {
                let from = &p[..i];
                links
                    .by_path
                    .get(from)
                    .map(|(order, to)| (*order, from, to))
            })
            .min_by_key(|(order, ..)| *order)
            .map(|(_, from, to)| {
                let rest = &p[from.len() + 1..];
                let base = if to.starts_with('/') {
                    to.clone()
                } else {
                    format!("{}/{to}", parent(from))
                };
                normalize(&format!("{base}/{rest}"))
            });
        match hop {
            Some(next) if next != p => p = next,
            _ => break,
        }
    }
    p
}

fn parent(p: &str) -> &str {
    match p.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((a, _)) => a,
    }
}

/// An absolute path without `.`, `..` or doubled slashes (as Go's `path.Join("/", p)`).
pub(super) fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

fn is_at_or_under(p: &str, root: &str) -> bool {
    p == root || p.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
}

/// The paths of ours on the node, resolved, with what they are.
fn our_paths() -> Vec<(String, &'static str)> {
    vec![
        (PAYLOAD_DIR.to_string(), "our payload directory"),
        (RUN_BINARY.to_string(), "the installed binary"),
        (resolve(LINK_PATH, &Links::default()), "our link"),
    ]
}

/// The unit directories' paths of a guarded unit: its file and its own drop-in
/// directory, in each unit directory.
fn guarded_unit_paths() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for d in UNIT_DIRS {
        for u in GUARDED_UNITS {
            v.push((format!("{d}/{u}"), format!("the unit file of {u}")));
            v.push((format!("{d}/{u}.d"), format!("the drop-ins of {u}")));
        }
    }
    v
}

/// Whether a path inside a drop-in directory names a drop-in systemd reads: a `.conf`
/// file directly in it.
fn is_dropin_name(file: &str) -> bool {
    !file.contains('/') && file.ends_with(".conf")
}

/// What a resolved storage path reaches of ours, if anything. `is_dir` for directory
/// entries, which only reach ours where they take a file's place or sit inside ours.
fn reached(p: &str, is_dir: bool) -> Option<String> {
    if let Some(up) = unit_path(p) {
        match up {
            UnitPath::Unit(u) if GUARDED_UNITS.contains(&u) => {
                return Some(format!("writes, links or masks the unit {u}"));
            }
            // systemd reads only `*.conf` files directly in a drop-in directory: a
            // `README` or `zz.conf.bak` there changes nothing.
            UnitPath::Dropin { dir, file } if file.is_none_or(is_dropin_name) => {
                if let Some(u) = GUARDED_UNITS
                    .iter()
                    .find(|u| dropin_dir_applies(dir, u))
                    .filter(|_| !is_dir || file.is_some())
                {
                    return Some(format!("a drop-in on {u} written outside systemd.units"));
                }
            }
            _ => {}
        }
    }
    for (ours, what) in our_paths() {
        if is_at_or_under(p, &ours) && !(is_dir && p == ours && ours == PAYLOAD_DIR) {
            return Some(format!("reaches {what} ({ours})"));
        }
        if !is_dir && is_at_or_under(&ours, p) {
            return Some(format!("replaces a directory holding {what} ({ours})"));
        }
    }
    if !is_dir {
        for (ours, what) in guarded_unit_paths() {
            if is_at_or_under(&ours, p) && ours != p {
                return Some(format!("replaces a directory holding {what}"));
            }
        }
    }
    None
}

/// Types of `tmpfiles.d` lines that only make a directory, harmless on a parent of
/// ours when they have no age (an age cleans the directory's contents).
const TMPFILES_DIR_TYPES: [char; 6] = ['d', 'v', 'q', 'Q', 'x', 'X'];

/// What a `tmpfiles.d` line reaches of ours, if anything.
fn tmpfiles_reach(line: &str, links: &Links) -> Option<String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split_whitespace();
    let ty = fields.next()?.chars().next()?;
    let raw = fields.next()?;
    let age = fields.nth(3).unwrap_or("-");
    // A glob is taken at its literal prefix, as if it named everything below.
    let literal = raw.split(['*', '?', '[']).next().unwrap_or(raw);
    let globbed = literal.len() != raw.len();
    let p = resolve(literal, links);
    let mut targets: Vec<(String, String)> = our_paths()
        .into_iter()
        .map(|(p, w)| (p, w.to_string()))
        .collect();
    targets.extend(guarded_unit_paths());
    for (ours, what) in targets {
        let hit = if globbed {
            ours.starts_with(p.as_str()) || is_at_or_under(&p, &ours)
        } else if is_at_or_under(&p, &ours) {
            true
        } else {
            is_at_or_under(&ours, &p) && !(TMPFILES_DIR_TYPES.contains(&ty) && age == "-")
        };
        if hit {
            // The resolved literal path, not the line's text: only paths are quoted.
            let glob = if globbed { " (a glob)" } else { "" };
            let ty = if ty.is_ascii_alphabetic() { ty } else { '?' };
            return Some(format!(
                "a tmpfiles.d line of type {ty} on {p}{glob} reaches {what}"
            ));
        }
    }
    None
}

/// The path a `.mount` or `.automount` unit mounts, from its name (`-` for `/`,
/// `\xNN` escapes).
fn mount_point(unit: &str) -> Option<String> {
    let stem = unit
        .strip_suffix(".mount")
        .or_else(|| unit.strip_suffix(".automount"))?;
    if stem == "-" {
        return Some("/".into());
    }
    let mut out = String::from("/");
    let mut rest = stem;
    while let Some(c) = rest.chars().next() {
        if let Some(hex) = rest.strip_prefix("\\x").and_then(|r| r.get(..2)) {
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(char::from(b));
                rest = &rest[4..];
                continue;
            }
        }
        out.push(if c == '-' { '/' } else { c });
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// What a filesystem mounted at `point` hides of ours, if anything: one at or inside
/// our paths and unit directories' entries, or one over a directory holding them
/// unless Ignition wrote into that filesystem (`filesystems`, a `/var` partition).
fn mount_reach(point: &str, filesystems: &[String]) -> Option<String> {
    if point == "/" {
        return None;
    }
    let mut targets: Vec<(String, String)> = our_paths()
        .into_iter()
        .map(|(p, w)| (p, w.to_string()))
        .collect();
    targets.extend(guarded_unit_paths());
    for (ours, what) in targets {
        if is_at_or_under(point, &ours) {
            return Some(format!("mounts over {what} ({point})"));
        }
        if is_at_or_under(&ours, point) && !filesystems.iter().any(|f| f == point) {
            return Some(format!("mounts over a directory holding {what} ({point})"));
        }
    }
    None
}

/// Where presets are read from: Ignition enables units through its own preset file,
/// applied at first boot, and an earlier match in another file wins over it.
const PRESET_DIR: &str = "/etc/systemd/system-preset";

/// What a preset line does to one of the units Ignition enables, if anything.
fn preset_reach(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let verb = words.next()?;
    let pattern = words.next()?;
    if verb != "disable" && verb != "ignore" {
        return None;
    }
    GUARDED_UNITS
        .iter()
        .find(|u| glob_match(pattern, u))
        .map(|u| format!("a preset line `{verb}` that matches {u}"))
}

/// Whether `name` matches a shell glob of `*` and `?` (what preset lines use).
fn glob_match(pattern: &str, name: &str) -> bool {
    match pattern.as_bytes().split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => {
            let rest = &pattern[pattern.len() - rest.len()..];
            (0..=name.len()).any(|i| name.is_char_boundary(i) && glob_match(rest, &name[i..]))
        }
        Some((b'?', _)) => {
            let mut c = name.chars();
            c.next().is_some() && glob_match(&pattern[1..], c.as_str())
        }
        Some(_) => {
            let pc = pattern.chars().next().unwrap_or_default();
            name.starts_with(pc) && glob_match(&pattern[pc.len_utf8()..], &name[pc.len_utf8()..])
        }
    }
}

/// A file entry's text, when it is inline (`None` for remote contents or bytes that do
/// not decode).
fn inline_text(f: &Value) -> Option<String> {
    let source = f["contents"]["source"].as_str().unwrap_or("data:,");
    let bytes = decode_data_url(source).ok()?;
    let bytes = match f["contents"]["compression"].as_str() {
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..])
                .read_to_end(&mut out)
                .ok()?;
            out
        }
        None | Some("") => bytes,
        Some(_) => return None,
    };
    String::from_utf8(bytes).ok()
}

/// Whether `path` is named by `exempt` (an entry checked on its own, like our files).
pub type Exempt<'a> = &'a dyn Fn(Kind, &str) -> bool;

/// Builds the node's view of `doc`. Entries `exempt` names are left out of the
/// reaches (ours, which their own checks read).
pub fn view(doc: &Document, exempt: Exempt) -> NodeView {
    let mut node = NodeView::default();
    let links = Links::new(
        doc.each(Kind::Links)
            .filter(|l| l["hard"] != true)
            .filter_map(|l| {
                Some((
                    l["path"].as_str()?.to_string(),
                    l["target"].as_str()?.to_string(),
                ))
            }),
    );
    // Filesystems Ignition writes into at their path: a mount there keeps what it
    // wrote visible.
    let filesystems: Vec<String> = doc.skeleton["storage"]["filesystems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .map(|p| resolve(p, &links))
        .collect();
    for (index, fs) in doc.skeleton["storage"]["filesystems"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(raw) = fs["path"].as_str() else {
            continue;
        };
        if let Some(what) = mount_reach(&resolve(raw, &links), &filesystems) {
            node.reaches.push(Reach {
                kind: None,
                index,
                path: raw.to_string(),
                what: format!("a filesystem that {what}"),
            });
        }
    }
    for (index, u) in doc.each(Kind::Units).enumerate() {
        let Some(name) = u["name"].as_str() else {
            continue;
        };
        let has_text = u["contents"].as_str().is_some() || u["enabled"] == true;
        if let Some(point) = mount_point(name).filter(|_| has_text) {
            if let Some(what) = mount_reach(&resolve(&point, &links), &filesystems) {
                node.reaches.push(Reach {
                    kind: Some(Kind::Units),
                    index,
                    path: name.to_string(),
                    what: format!("a mount unit that {what}"),
                });
            }
        }
        if !GUARDED_UNITS.contains(&name) {
            continue;
        }
        let view = node.units.entry(name.to_string()).or_default();
        if let Some(c) = u["contents"].as_str() {
            view.text = Some(c.to_string());
        }
        view.masked |= u["mask"] == true;
        for d in u["dropins"].as_array().into_iter().flatten() {
            if let Some(n) = d["name"].as_str() {
                let c = d["contents"].as_str().unwrap_or("").to_string();
                view.dropins.insert(n.to_string(), c);
            }
        }
    }
    for kind in Kind::NODES {
        for (index, entry) in doc.each(kind).enumerate() {
            let Some(raw) = entry["path"].as_str() else {
                continue;
            };
            let p = resolve(raw, &links);
            let place = |what: String| Reach {
                kind: Some(kind),
                index,
                path: raw.to_string(),
                what,
            };
            if kind == Kind::Files {
                add_unit_source(&mut node, &p, &entry);
                if is_at_or_under(&p, "/etc/tmpfiles.d") && p.ends_with(".conf") {
                    match inline_text(&entry) {
                        Some(text) => {
                            if let Some(w) = text.lines().find_map(|l| tmpfiles_reach(l, &links)) {
                                node.reaches.push(place(w));
                            }
                        }
                        None => node.reaches.push(place(
                            "a tmpfiles.d file whose lines cannot be read here; they could replace our paths".into(),
                        )),
                    }
                }
            }
            if kind == Kind::Files && p == "/etc/fstab" {
                match inline_text(&entry) {
                    Some(text) => {
                        let hit = text.lines().find_map(|l| {
                            let l = l.trim();
                            if l.starts_with('#') {
                                return None;
                            }
                            let point = l.split_whitespace().nth(1)?;
                            mount_reach(&resolve(point, &links), &filesystems)
                        });
                        if let Some(w) = hit {
                            node.reaches.push(place(format!("an fstab line that {w}")));
                        }
                    }
                    None => node.reaches.push(place(
                        "an fstab whose lines cannot be read here; they could mount over our paths"
                            .into(),
                    )),
                }
            }
            if let Some(UnitPath::Unit(u)) = unit_path(&p) {
                let point = mount_point(u).filter(|_| !exempt(kind, raw));
                if let Some(w) = point.and_then(|m| mount_reach(&resolve(&m, &links), &filesystems))
                {
                    node.reaches.push(place(format!("a mount unit that {w}")));
                }
            }
            if kind == Kind::Files && is_at_or_under(&p, PRESET_DIR) && p.ends_with(".preset") {
                match inline_text(&entry) {
                    Some(text) => {
                        if let Some(w) = text.lines().find_map(preset_reach) {
                            node.reaches.push(place(w));
                        }
                    }
                    None => node.reaches.push(place(
                        "a preset file whose lines cannot be read here; they could leave our units disabled".into(),
                    )),
                }
            }
            if kind == Kind::Links && entry["target"] == "/dev/null" {
                if let Some(UnitPath::Unit(u)) = unit_path(&p) {
                    if let Some(v) = node.units.get_mut(u) {
                        v.masked = true;
                    } else if GUARDED_UNITS.contains(&u) {
                        node.units.entry(u.to_string()).or_default().masked = true;
                    }
                }
            }
            if exempt(kind, raw) {
                continue;
            }
            if let Some(w) = reached(&p, kind == Kind::Directories) {
                node.reaches.push(place(w));
            }
        }
    }
    node
}

/// A storage file that systemd reads for a guarded unit: its text or one of its
/// drop-ins.
fn add_unit_source(node: &mut NodeView, p: &str, f: &Value) {
    let text = inline_text(f).unwrap_or_default();
    match unit_path(p) {
        Some(UnitPath::Unit(u)) if GUARDED_UNITS.contains(&u) => {
            node.units.entry(u.to_string()).or_default().text = Some(text);
        }
        Some(UnitPath::Dropin {
            dir,
            file: Some(file),
        }) if is_dropin_name(file) => {
            for u in GUARDED_UNITS {
                if dropin_dir_applies(dir, u) {
                    node.units
                        .entry(u.to_string())
                        .or_default()
                        .dropins
                        .insert(file.to_string(), text.clone());
                }
            }
        }
        _ => {}
    }
}

/// Our own entries, checked on their own by `verify`.
pub fn is_our_entry(kind: Kind, path: &str) -> bool {
    match kind {
        Kind::Files => super::units::is_our_file(path),
        Kind::Links => path == LINK_PATH,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reaches(cfg: Value) -> Vec<String> {
        let text = cfg.to_string();
        let doc = Document::parse("t", text.as_bytes()).unwrap();
        view(&doc, &is_our_entry)
            .reaches
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn file(path: &str, text: &str) -> Value {
        json!({"path": path, "contents": {"source": super::super::data_url(text.as_bytes())}})
    }

    #[test]
    fn paths_follow_os_and_config_links() {
        assert_eq!(
            resolve("/usr/local/bin/machine-config-daemon", &Links::default()),
            "/var/usrlocal/bin/machine-config-daemon"
        );
        let links = Links::new([("/etc/u".to_string(), "systemd/system".to_string())]);
        assert_eq!(
            resolve("/etc/u/x.service", &links),
            "/etc/systemd/system/x.service"
        );
        assert_eq!(resolve("/a/./b/../c", &Links::default()), "/a/c");
        // The first link that applies in RHCOS's and then the config's order.
        let links = Links::new([
            ("/etc/a/b".to_string(), "/x".to_string()),
            ("/etc/a".to_string(), "/y".to_string()),
        ]);
        assert_eq!(resolve("/etc/a/b/c", &links), "/x/c");
        assert_eq!(resolve("/usr/local/bin/z", &links), "/var/usrlocal/bin/z");
    }

    #[test]
    fn preset_lines_that_leave_ours_disabled() {
        assert!(glob_match("mco-*.service", INSTALL_UNIT));
        assert!(glob_match("*", PULL_UNIT));
        assert!(!glob_match("kubelet?service", INSTALL_UNIT));
        assert!(preset_reach("disable *").is_some());
        assert!(preset_reach("ignore machine-config-daemon-firstboot.service").is_some());
        assert!(preset_reach("enable mco-mcd-install.service").is_none());
        assert!(preset_reach("disable kubelet.service").is_none());
        assert!(preset_reach("# disable *").is_none());
    }

    #[test]
    fn mounts_over_ours_are_found() {
        assert_eq!(
            mount_point("var-lib-mcd\\x2dinject.mount").unwrap(),
            "/var/lib/mcd-inject"
        );
        assert_eq!(mount_point("-.mount").unwrap(), "/");
        assert!(mount_point("kubelet.service").is_none());
        assert!(mount_reach("/var/lib/mcd-inject", &[]).is_some());
        assert!(mount_reach("/run/bin", &[]).is_some());
        assert!(mount_reach("/var", &[]).is_some());
        assert!(mount_reach("/var", &["/var".to_string()]).is_none());
        assert!(mount_reach("/var/lib/containers", &[]).is_none());
        let r = reaches(json!({"ignition": {"version": "3.2.0"},
        "storage": {"filesystems": [{"device": "/dev/vdb", "format": "xfs", "path": "/var"}]},
        "systemd": {"units": [
            {"name": "var.mount", "enabled": true, "contents": "[Mount]\nWhat=/dev/vdb\n"},
            {"name": "run-bin.mount", "enabled": true, "contents": "[Mount]\nWhat=tmpfs\n"}
        ]}}));
        assert_eq!(r.len(), 1, "{r:#?}");
        assert!(r[0].starts_with("systemd.units[1] run-bin.mount: a mount unit that mounts over"));
    }

    #[test]
    fn dropin_directories_that_apply() {
        assert!(dropin_dir_applies(INSTALL_UNIT, INSTALL_UNIT));
        assert!(dropin_dir_applies("service", INSTALL_UNIT));
        assert!(dropin_dir_applies("mco-.service", INSTALL_UNIT));
        assert!(dropin_dir_applies(
            "machine-config-daemon-.service",
            PULL_UNIT
        ));
        assert!(!dropin_dir_applies("mco.service", INSTALL_UNIT));
        assert!(!dropin_dir_applies("kubelet.service", INSTALL_UNIT));
    }

    #[test]
    fn entries_that_reach_ours_are_named_by_index_and_path() {
        let r = reaches(json!({"ignition": {"version": "3.2.0"}, "storage": {
            "files": [
                file("/etc/hostname", "n"),
                file("/etc/systemd/system/mco-mcd-install.service.d/50-x.conf", "[Service]\nExecStart=\n"),
                file("/var/usrlocal/bin/machine-config-daemon", "x"),
                file("/etc/tmpfiles.d/x.conf", "L+ /run/bin/machine-config-daemon - - - - /bin/true\n"),
                file("/etc/tmpfiles.d/ok.conf", "d /run/bin 0755 root root -\nd /var/tmp/x\n"),
                file("/var/lib/mcd-inject/machine-config-daemon.gz", "ours"),
            ],
            "links": [
                {"path": "/etc/systemd/system/machine-config-daemon-firstboot.service", "target": "/dev/null"},
                {"path": "/etc/systemd/system/multi-user.target.wants/mco-mcd-install.service", "target": "/etc/systemd/system/mco-mcd-install.service"},
                {"path": "/usr/local/bin/machine-config-daemon", "target": "/run/bin/machine-config-daemon"}
            ],
            "directories": [{"path": "/var/lib/mcd-inject"}, {"path": "/etc/systemd/system/mco-mcd-install.service.d"}]
        }}));
        assert_eq!(r.len(), 4, "{r:#?}");
        // Paths and unit names only, never what an entry holds.
        assert!(r
            .iter()
            .all(|l| !l.contains("ExecStart") && !l.contains("/bin/true")));
        assert!(r[0].starts_with("storage.files[1] /etc/systemd/system/mco-mcd-install.service.d/50-x.conf: a drop-in on mco-mcd-install.service"));
        assert!(r[1].starts_with(
            "storage.files[2] /var/usrlocal/bin/machine-config-daemon: reaches our link"
        ));
        assert!(r[2]
            .starts_with("storage.files[3] /etc/tmpfiles.d/x.conf: a tmpfiles.d line of type L"));
        assert!(r[3].starts_with("storage.links[0] /etc/systemd/system/machine-config-daemon-firstboot.service: writes, links or masks"));
    }

    #[test]
    fn only_conf_files_in_a_dropin_directory_are_dropins() {
        let d = "/etc/systemd/system/machine-config-daemon-firstboot.service.d";
        let r = reaches(json!({"ignition": {"version": "3.2.0"},
        "storage": {"files": [
            file(&format!("{d}/zz.conf.bak"), "[Service]\nExecStart=\nExecStart=/bin/podman\n"),
            file(&format!("{d}/README"), "notes\n"),
            file(&format!("{d}/sub/x.conf"), "[Service]\n"),
            file(&format!("{d}/zz.conf"), "[Service]\nExecStart=\nExecStart=/bin/podman\n"),
        ]}}));
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(
            r[0].starts_with(&format!("storage.files[3] {d}/zz.conf: a drop-in on")),
            "{r:?}"
        );
    }

    #[test]
    fn storage_dropins_join_the_units_in_name_order() {
        let cfg = json!({"ignition": {"version": "3.2.0"},
            "storage": {"files": [file("/etc/systemd/system/machine-config-daemon-firstboot.service.d/zz.conf", "[Service]\nExecStart=\nExecStart=/bin/podman\n")]},
            "systemd": {"units": [{"name": FIRSTBOOT_UNIT, "contents": "[Service]\nExecStart=/a\n",
                "dropins": [{"name": "99-mcd-inject.conf", "contents": "[Service]\nExecStart=\nExecStart=/b\n"}]}]}});
        let text = cfg.to_string();
        let doc = Document::parse("t", text.as_bytes()).unwrap();
        let node = view(&doc, &is_our_entry);
        let u = &node.units[FIRSTBOOT_UNIT];
        assert_eq!(u.effective("[Service]", "ExecStart"), ["/bin/podman"]);
    }
}
