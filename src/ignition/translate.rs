//! Translating a config between spec versions, as MCO translates the pointer configs
//! and rendered configs it keeps (its `ignition_converter.go`, over coreos/ign-converter):
//!
//! - up, 2.2 → 3.0 (`v23tov30`, with the filesystem `root` at `/`) → 3.x: `append`
//!   becomes `merge`, nodes lose their `filesystem`, a file without `overwrite` gets
//!   `overwrite: true` (2.x overwrites), an `append` file becomes a spec 3 `append`
//!   entry; duplicate files, units and users of a 2.x config are first folded into one
//!   (the last wins), as MCO's `ParseAndConvertConfig` does;
//! - within spec 3, up is the version alone (each spec is a superset of the one before);
//!   down (3.6 → … → 3.2) refuses what the lower spec lacks (`cex`, `kernelArguments`,
//!   LUKS `discard`/`openOptions`, special mode bits, `arn:` sources, …);
//! - down, 3.2 → 2.2 (`v32tov22`): `merge` becomes `append`, nodes get `filesystem:
//!   "root"`, a file's `append` entries become 2.x `append` files.
//!
//! Every field is either carried over or refused with a [`TranslateError`] naming it:
//! nothing is dropped. Entries are translated one at a time, in their order.

use serde_json::{Map, Value};

use super::document::{Document, Entry, Kind};
use super::schema::Schema;
use super::SpecVersion;

/// A field that the output spec cannot express.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field} cannot be translated from spec {from} to spec {to}: {why}")]
pub struct TranslateError {
    /// Where the field is, as `storage.files[3] (/etc/x).append[0].httpHeaders`.
    pub field: String,
    /// Why it cannot be translated.
    pub why: String,
    /// The spec read.
    pub from: SpecVersion,
    /// The spec asked for.
    pub to: SpecVersion,
}

/// Translates `doc`, a valid config of spec `from`, to spec `to`.
pub fn translate(
    doc: Document<'_>,
    from: SpecVersion,
    to: SpecVersion,
) -> Result<Document<'_>, TranslateError> {
    let fail = |field: String, why: String| TranslateError {
        field,
        why,
        from,
        to,
    };
    let mut doc = match (from.is_v2(), to.is_v2()) {
        (true, true) => doc,
        (true, false) => up_to_v3(doc).map_err(|(f, w)| fail(f, w))?,
        (false, true) => {
            let doc = down_within_v3(doc, from, SpecVersion::V3_2).map_err(|(f, w)| fail(f, w))?;
            down_to_v22(doc).map_err(|(f, w)| fail(f, w))?
        }
        (false, false) if to < from => {
            down_within_v3(doc, from, to).map_err(|(f, w)| fail(f, w))?
        }
        (false, false) => doc,
    };
    doc.skeleton["ignition"]["version"] = Value::from(to.as_str());
    Ok(doc)
}

/// What a translation refuses: the field and why.
type Refusal = (String, String);

/// An object whose fields are taken one by one; what is left when it is done is a field
/// the translation does not carry, which is refused.
struct Fields {
    map: Map<String, Value>,
    /// Where the object is, for messages.
    at: String,
}

impl Fields {
    fn new(v: Value, at: impl Into<String>) -> Fields {
        let map = match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Fields { map, at: at.into() }
    }

    /// A field's value; `null` counts as absent.
    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// A field's entries, each with its place.
    fn take_list(&mut self, key: &str) -> Vec<(String, Value)> {
        let at = self.field(key);
        match self.take(key) {
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("{at}[{i}]"), v))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A field's object, to take its own fields from.
    fn take_object(&mut self, key: &str) -> Option<Fields> {
        let at = self.field(key);
        self.take(key).map(|v| Fields::new(v, at))
    }

    fn field(&self, key: &str) -> String {
        if self.at.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.at)
        }
    }

    fn refuse(&self, key: &str, why: impl Into<String>) -> Refusal {
        (self.field(key), why.into())
    }

    /// Refuses a field when it is set to anything but `allowed` (a spec's default that
    /// the other spec has implicitly).
    fn refuse_unless(&mut self, key: &str, allowed: &Value, why: &str) -> Result<(), Refusal> {
        match self.take(key) {
            Some(v) if v != *allowed => Err(self.refuse(key, why)),
            _ => Ok(()),
        }
    }

    /// Ends the object: any field left that says something is one the translation
    /// would drop.
    fn done(self, to: &str) -> Result<(), Refusal> {
        match self.map.iter().find(|(_, v)| !is_empty(v)) {
            Some((k, _)) => Err((self.field(k), format!("spec {to} has no such field"))),
            None => Ok(()),
        }
    }
}

/// Builds an object of the fields that are set, in the order given.
fn object(fields: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

/// Drops the values Go's translators leave out: empty strings and `false`.
fn set(v: Option<Value>) -> Option<Value> {
    v.filter(|v| !matches!(v, Value::Bool(false)) && v.as_str() != Some(""))
}

fn non_empty(v: Value) -> Option<Value> {
    match &v {
        Value::Array(a) if a.is_empty() => None,
        Value::Object(o) if o.is_empty() => None,
        _ => Some(v),
    }
}

/// The place of an entry, with its path or name to find it by.
fn entry_at(kind: Kind, i: usize, v: &Value) -> String {
    let id = v["path"].as_str().or(v["name"].as_str()).unwrap_or("");
    format!("{kind}[{i}] ({id})")
}

/// A user's fields, the same in 2.2 and 3.x but for the defaults Go's translators
/// leave out.
fn user(mut u: Fields, to: &str) -> Result<Value, Refusal> {
    let v = object([
        ("name", u.take("name")),
        ("passwordHash", u.take("passwordHash")),
        (
            "sshAuthorizedKeys",
            u.take("sshAuthorizedKeys").and_then(non_empty),
        ),
        ("uid", u.take("uid")),
        ("gecos", set(u.take("gecos"))),
        ("homeDir", set(u.take("homeDir"))),
        ("noCreateHome", set(u.take("noCreateHome"))),
        ("primaryGroup", set(u.take("primaryGroup"))),
        ("groups", u.take("groups").and_then(non_empty)),
        ("noUserGroup", set(u.take("noUserGroup"))),
        ("noLogInit", set(u.take("noLogInit"))),
        ("shell", set(u.take("shell"))),
        ("system", set(u.take("system"))),
    ]);
    u.done(to)?;
    Ok(v)
}

fn group(mut g: Fields, to: &str) -> Result<Value, Refusal> {
    let v = object([
        ("name", g.take("name")),
        ("gid", g.take("gid")),
        ("passwordHash", set(g.take("passwordHash"))),
        ("system", set(g.take("system"))),
    ]);
    g.done(to)?;
    Ok(v)
}

fn raid(mut r: Fields, to: &str) -> Result<Value, Refusal> {
    let v = object([
        ("name", r.take("name")),
        ("level", r.take("level")),
        ("devices", r.take("devices")),
        ("spares", r.take("spares").filter(|v| *v != 0)),
        ("options", r.take("options").and_then(non_empty)),
    ]);
    r.done(to)?;
    Ok(v)
}

/// A disk, its partitions through `partition` (which refuses what `to` lacks).
fn disk(
    mut d: Fields,
    to: &str,
    partition: fn(&mut Fields) -> Result<(), Refusal>,
) -> Result<Value, Refusal> {
    let parts = d
        .take_list("partitions")
        .into_iter()
        .map(|(at, v)| {
            let mut p = Fields::new(v, at);
            partition(&mut p)?;
            let v = object([
                ("label", set(p.take("label"))),
                ("number", p.take("number")),
                ("typeGuid", set(p.take("typeGuid"))),
                ("guid", set(p.take("guid"))),
            ]);
            p.done(to)?;
            Ok(v)
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    let v = object([
        ("device", d.take("device")),
        ("wipeTable", set(d.take("wipeTable"))),
        ("partitions", non_empty(Value::Array(parts))),
    ]);
    d.done(to)?;
    Ok(v)
}

/// A unit: name, enablement, mask, text and drop-ins, the same in both families.
fn unit(mut u: Fields, to: &str) -> Result<Value, Refusal> {
    let dropins = u
        .take_list("dropins")
        .into_iter()
        .map(|(at, v)| {
            let mut d = Fields::new(v, at);
            let v = object([
                ("name", d.take("name")),
                ("contents", set(d.take("contents"))),
            ]);
            d.done(to)?;
            Ok(v)
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    let v = object([
        ("name", u.take("name")),
        ("enabled", u.take("enabled")),
        ("mask", set(u.take("mask"))),
        ("contents", set(u.take("contents"))),
        ("dropins", non_empty(Value::Array(dropins))),
    ]);
    u.done(to)?;
    Ok(v)
}

/// A node's owner and group, and `overwrite`, into `m`.
fn owners(n: &mut Fields, m: &mut Map<String, Value>, to: &str) -> Result<(), Refusal> {
    for key in ["user", "group"] {
        if let Some(mut o) = n.take_object(key) {
            let v = object([("id", o.take("id")), ("name", set(o.take("name")))]);
            o.done(to)?;
            if let Some(v) = non_empty(v) {
                m.insert(key.into(), v);
            }
        }
    }
    if let Some(o) = n.take("overwrite") {
        m.insert("overwrite".into(), o);
    }
    Ok(())
}

/// A directory's mode, or a link's target and `hard`, into `m`.
fn node_rest(kind: Kind, n: &mut Fields, m: &mut Map<String, Value>) {
    if kind == Kind::Directories {
        if let Some(mode) = n.take("mode") {
            m.insert("mode".into(), mode);
        }
    } else {
        if let Some(t) = n.take("target") {
            m.insert("target".into(), t);
        }
        if let Some(h) = set(n.take("hard")) {
            m.insert("hard".into(), h);
        }
    }
}

/// Translates each entry of a list with `f`.
fn each(
    list: Vec<(String, Value)>,
    mut f: impl FnMut(Fields) -> Result<Value, Refusal>,
) -> Result<Vec<Value>, Refusal> {
    list.into_iter()
        .map(|(at, v)| f(Fields::new(v, at)))
        .collect()
}

/// Which way a translation goes, for the parts that mirror each other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// 2.2 → 3.0.
    Up,
    /// 3.2 → 2.2.
    Down,
}

impl Way {
    /// The spec written, as messages name it.
    fn spec(self) -> &'static str {
        match self {
            Way::Up => "3.0",
            Way::Down => "2.2",
        }
    }

    /// The list of configs to merge: its key read, and its key written.
    fn config_list(self) -> (&'static str, &'static str) {
        match self {
            Way::Up => ("append", "merge"),
            Way::Down => ("merge", "append"),
        }
    }
}

/// A config source or CA: `source` and `verification` in both families; a spec 3
/// resource's compression and HTTP headers have no place in 2.2.
fn reference(mut r: Fields, way: Way) -> Result<Value, Refusal> {
    if way == Way::Down {
        for key in ["compression", "httpHeaders"] {
            if r.take(key).and_then(non_empty).is_some() {
                return Err(r.refuse(key, "spec 2.2 has no such field"));
            }
        }
    }
    let v = object([
        ("source", r.take("source")),
        ("verification", r.take("verification").and_then(non_empty)),
    ]);
    r.done(way.spec())?;
    Ok(v)
}

/// The `ignition` section: the configs to merge (`append` in 2.x, `merge` in 3.x), the
/// one to replace with, the CAs and timeouts; a spec 3 proxy has no place in 2.2.
fn ignition_section(ign: &mut Fields, way: Way) -> Result<Value, Refusal> {
    ign.take("version");
    let (read, written) = way.config_list();
    let mut config = Map::new();
    if let Some(mut c) = ign.take_object("config") {
        let list = each(c.take_list(read), |r| reference(r, way))?;
        if !list.is_empty() {
            config.insert(written.into(), Value::Array(list));
        }
        if let Some(r) = c.take_object("replace") {
            let r = reference(r, way)?;
            if r.get("source").is_some() {
                config.insert("replace".into(), r);
            }
        }
        c.done(way.spec())?;
    }
    let mut security = None;
    if let Some(mut s) = ign.take_object("security") {
        if let Some(mut tls) = s.take_object("tls") {
            let cas = each(tls.take_list("certificateAuthorities"), |r| {
                reference(r, way)
            })?;
            if !cas.is_empty() {
                security = Some(serde_json::json!({"tls": {"certificateAuthorities": cas}}));
            }
            tls.done(way.spec())?;
        }
        s.done(way.spec())?;
    }
    if let Some(mut proxy) = ign.take_object("proxy") {
        for key in ["httpProxy", "httpsProxy", "noProxy"] {
            if proxy.take(key).and_then(non_empty).is_some() {
                return Err(proxy.refuse(key, "spec 2.2 has no proxy settings"));
            }
        }
        proxy.done(way.spec())?;
    }
    let version = match way {
        Way::Up => "3.0.0",
        Way::Down => "2.2.0",
    };
    Ok(object([
        ("version", Some(Value::from(version))),
        ("config", non_empty(Value::Object(config))),
        ("timeouts", ign.take("timeouts").and_then(non_empty)),
        ("security", security),
    ]))
}

// ---- up: 2.2 → 3.0 ----

/// Spec 2.2 to spec 3.0 (the version is set by the caller).
fn up_to_v3(mut doc: Document<'_>) -> Result<Document<'_>, Refusal> {
    let mut root = Fields::new(std::mem::take(&mut doc.skeleton), "");
    let mut out = Map::new();
    if let Some(mut ign) = root.take_object("ignition") {
        out.insert("ignition".into(), ignition_section(&mut ign, Way::Up)?);
        ign.done("3.0")?;
    }
    if let Some(mut passwd) = root.take_object("passwd") {
        if let Some(p) = non_empty(up_passwd(&mut passwd)?) {
            out.insert("passwd".into(), p);
        }
        passwd.done("3.0")?;
    }
    let mut storage = root.take_object("storage");
    let systemd = root.take_object("systemd");
    if let Some(mut networkd) = root.take_object("networkd") {
        if !networkd.take_list("units").is_empty() {
            return Err(networkd.refuse(
                "units",
                "spec 3 has no networkd section (MCO's translation refuses it too); write the units as files under /etc/systemd/network instead",
            ));
        }
        networkd.done("3.0")?;
    }
    root.done("3.0")?;

    let mut out_storage = Map::new();
    if let Some(s) = storage.as_mut() {
        for (k, v) in up_storage_devices(s)? {
            out_storage.insert(k.into(), v);
        }
        for key in ["files", "directories", "links"] {
            s.map.remove(key);
        }
    }
    if let Some(s) = storage {
        s.done("3.0")?;
    }
    if let Some(mut s) = systemd {
        s.map.remove("units");
        s.done("3.0")?;
    }
    let files = up_files(doc.take(Kind::Files))?;
    let dirs = up_nodes(Kind::Directories, doc.take(Kind::Directories))?;
    let links = up_nodes(Kind::Links, doc.take(Kind::Links))?;
    let units = up_units(doc.take(Kind::Units))?;
    let has_nodes = !(files.is_empty() && dirs.is_empty() && links.is_empty());
    if !out_storage.is_empty() || has_nodes {
        out.insert("storage".into(), Value::Object(out_storage));
    }
    doc.skeleton = Value::Object(out);
    put_all(&mut doc, [files, dirs, links], units);
    Ok(doc)
}

/// Puts translated files, directories, links and units into `doc`, each array only
/// when it has entries.
fn put_all<'a>(doc: &mut Document<'a>, arrays: [Vec<Entry<'a>>; 3], units: Vec<Value>) {
    let units = units
        .into_iter()
        .map(|v| Entry::compact(Kind::Units, v))
        .collect();
    let kinds = [Kind::Files, Kind::Directories, Kind::Links, Kind::Units];
    let [files, dirs, links] = arrays;
    for (kind, entries) in kinds.into_iter().zip([files, dirs, links, units]) {
        if !entries.is_empty() {
            doc.put(kind, entries);
        }
    }
}

fn up_passwd(passwd: &mut Fields) -> Result<Value, Refusal> {
    let users = each(fold_users(passwd.take_list("users")), |mut u| {
        if u.take("create").is_some() {
            return Err(u.refuse(
                "create",
                "it is deprecated in spec 2.x and gone from spec 3 (MCO's translation refuses it); set its fields on the user itself",
            ));
        }
        user(u, "3.0")
    })?;
    let groups = each(passwd.take_list("groups"), |g| group(g, "3.0"))?;
    Ok(object([
        ("users", non_empty(Value::Array(users))),
        ("groups", non_empty(Value::Array(groups))),
    ]))
}

/// The list `key` of an entry, made an empty one when it is absent or `null`.
fn list_of<'v>(entry: &'v mut Value, key: &str) -> &'v mut Vec<Value> {
    if !entry[key].is_array() {
        entry[key] = Value::Array(Vec::new());
    }
    entry[key].as_array_mut().expect("made a list above")
}

/// Users of one name folded into the last of them, their SSH keys gathered (each
/// once), as MCO does before translating a 2.x config.
fn fold_users(users: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for (at, u) in users.into_iter().rev() {
        let name = u["name"].clone();
        match out.iter_mut().find(|(_, o)| o["name"] == name) {
            Some((_, newer)) => {
                let keys = u["sshAuthorizedKeys"].as_array().cloned();
                list_of(newer, "sshAuthorizedKeys").extend(keys.into_iter().flatten());
            }
            None => out.push((at, u)),
        }
    }
    out.reverse();
    for (_, u) in &mut out {
        if let Some(list) = u.get_mut("sshAuthorizedKeys").and_then(Value::as_array_mut) {
            let mut seen = std::collections::HashSet::new();
            list.retain(|k| seen.insert(k.to_string()));
        }
    }
    out
}

/// Disks, RAID arrays and filesystems: only the root filesystem has a place in spec 3
/// (`/`), as MCO translates; a 2.x filesystem of another name has no mount path.
fn up_storage_devices(s: &mut Fields) -> Result<Vec<(&'static str, Value)>, Refusal> {
    let mut out = Vec::new();
    let disks = each(s.take_list("disks"), |d| {
        disk(d, "3.0", |p| {
            for sectors in ["size", "start"] {
                if p.take(sectors).is_some_and(|v| v != 0) {
                    return Err(p.refuse(
                        sectors,
                        "spec 2.2 counts it in sectors, which spec 3 replaced by sizeMiB/startMiB (MCO's translation refuses it too)",
                    ));
                }
            }
            Ok(())
        })
    })?;
    if !disks.is_empty() {
        out.push(("disks", Value::Array(disks)));
    }
    let raid = each(s.take_list("raid"), |r| raid(r, "3.0"))?;
    if !raid.is_empty() {
        out.push(("raid", Value::Array(raid)));
    }
    for (at, v) in s.take_list("filesystems") {
        let f = Fields::new(v, at);
        if f.map.get("name").and_then(Value::as_str) != Some("root") {
            return Err((
                f.at,
                "spec 3 places a filesystem by its mount path, and a 2.x filesystem other than \"root\" has none (MCO's translation maps only root to /)".into(),
            ));
        }
    }
    Ok(out)
}

/// The node fields of a 2.x entry in spec 3: the path under `/` (only the root
/// filesystem is mapped), owner and group, `overwrite`.
fn up_node(n: &mut Fields) -> Result<Map<String, Value>, Refusal> {
    match n.take("filesystem") {
        Some(Value::String(fs)) if fs == "root" => {}
        _ => {
            return Err(n.refuse(
                "filesystem",
                "only the root filesystem has a place in spec 3 (MCO's translation maps only root to /)",
            ))
        }
    }
    let path = n
        .take("path")
        .and_then(|p| p.as_str().map(super::node::normalize));
    let mut m = Map::new();
    m.insert("path".into(), Value::from(path.unwrap_or_default()));
    owners(n, &mut m, "3.0")?;
    Ok(m)
}

/// Files: the entries of one path folded into one (the last whole file wins, the
/// appends after it become its `append` list), then translated.
fn up_files<'a>(entries: Vec<Entry<'_>>) -> Result<Vec<Entry<'a>>, Refusal> {
    // Grouped by path on the paths alone; each entry is parsed when its group is
    // translated, so that only one group is held as values at a time.
    let mut order: Vec<String> = Vec::new();
    let mut by_path: std::collections::HashMap<String, Vec<usize>> =
        std::collections::HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let key = e.id().map(super::node::normalize).unwrap_or_default();
        let group = by_path.entry(key.clone()).or_default();
        if group.is_empty() {
            order.push(key);
        }
        group.push(i);
    }
    let mut out = Vec::with_capacity(order.len());
    for path in order {
        let group: Vec<(String, Value)> = by_path
            .remove(&path)
            .expect("every path has its group")
            .into_iter()
            .map(|i| {
                let v = entries[i].value();
                (entry_at(Kind::Files, i, &v), v)
            })
            .collect();
        let last_whole = group.iter().rposition(|(_, v)| v["append"] != true);
        let mut file = Map::from_iter([("path".to_string(), Value::from(path))]);
        let mut appends = Vec::new();
        for (i, (at, v)) in group.into_iter().enumerate() {
            if last_whole.is_some_and(|w| i < w) {
                continue;
            }
            let mut f = Fields::new(v, at);
            let append = f.take("append") == Some(Value::Bool(true));
            let mut node = up_node(&mut f)?;
            let contents = match f.take_object("contents") {
                Some(mut c) => {
                    let v = object([
                        ("compression", set(c.take("compression"))),
                        (
                            "source",
                            Some(c.take("source").unwrap_or_else(|| Value::from(""))),
                        ),
                        ("verification", c.take("verification").and_then(non_empty)),
                    ]);
                    c.done("3.0")?;
                    v
                }
                None => serde_json::json!({"source": ""}),
            };
            if let Some(m) = f.take("mode") {
                node.insert("mode".into(), m);
            }
            f.done("3.0")?;
            if append {
                // Ignition v0.x sets the mode and owner an append entry names after
                // appending: the last one named wins.
                node.remove("overwrite");
                node.remove("path");
                file.extend(node);
                appends.push(contents);
                continue;
            }
            node.entry("overwrite").or_insert(Value::Bool(true));
            node.insert("contents".into(), contents);
            file = node;
        }
        if !appends.is_empty() {
            if file.get("contents").is_none() {
                // Only appends: spec 3's `append` must not overwrite.
                file.insert("overwrite".into(), Value::Bool(false));
            }
            file.insert("append".into(), Value::Array(appends));
        }
        let file = Value::Object(file);
        out.push(Entry::compact(Kind::Files, file));
    }
    Ok(out)
}

/// Directories and links.
fn up_nodes<'a>(kind: Kind, entries: Vec<Entry<'_>>) -> Result<Vec<Entry<'a>>, Refusal> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let v = e.value();
            let mut n = Fields::new(v.clone(), entry_at(kind, i, &v));
            let mut m = up_node(&mut n)?;
            node_rest(kind, &mut n, &mut m);
            n.done("3.0")?;
            Ok(Entry::compact(kind, Value::Object(m)))
        })
        .collect()
}

/// Units: those of one name folded into the last (the earlier ones' drop-ins of other
/// names added to it), as MCO does, then translated.
fn up_units(entries: Vec<Entry<'_>>) -> Result<Vec<Value>, Refusal> {
    let mut folded: Vec<(String, Value)> = Vec::new();
    for (i, e) in entries.iter().enumerate().rev() {
        let v = e.value();
        let at = entry_at(Kind::Units, i, &v);
        match folded.iter_mut().find(|(_, o)| o["name"] == v["name"]) {
            Some((_, newer)) => {
                for d in v["dropins"].as_array().into_iter().flatten() {
                    let list = list_of(newer, "dropins");
                    if !list.iter().any(|o| o["name"] == d["name"]) {
                        list.push(d.clone());
                    }
                }
            }
            None => folded.push((at, v)),
        }
    }
    folded.reverse();
    each(folded, |mut u| {
        if u.take("enable").is_some() {
            return Err(u.refuse(
                "enable",
                "it is deprecated in spec 2.x and gone from spec 3 (MCO's translation refuses it); use enabled",
            ));
        }
        unit(u, "3.0")
    })
}

// ---- down within spec 3 ----

/// Spec `from` to the older spec `to`, both 3.x: the config must say nothing that `to`
/// lacks. The fields `to` does not define are found by its schema (with strict keys);
/// the values it does not allow (special mode bits before 3.4, `arn:` sources before
/// 3.4) by their own checks.
fn down_within_v3(
    mut doc: Document<'_>,
    from: SpecVersion,
    to: SpecVersion,
) -> Result<Document<'_>, Refusal> {
    if to >= from {
        return Ok(doc);
    }
    let written = std::mem::replace(
        &mut doc.skeleton["ignition"]["version"],
        Value::from(to.as_str()),
    );
    let report = doc.validate(&Schema::load(to));
    doc.skeleton["ignition"]["version"] = written;
    // A field of the newer spec that says nothing (MCO's managed stub carries an empty
    // `kernelArguments`) is dropped; one that says something is refused.
    for key in &report.unknown_keys {
        if !drop_if_empty(&mut doc, key) {
            return Err((
                pointer_to_field(key),
                format!("spec {to} has no such field"),
            ));
        }
    }
    if let Some(e) = report.errors.first() {
        return Err(("the config".into(), e.clone()));
    }
    let special_bits = to < SpecVersion::V3_4;
    let mut problem = None;
    for kind in Kind::NODES {
        for (i, e) in doc.entries(kind).iter().enumerate() {
            let v = e.value();
            if special_bits && v["mode"].as_u64().is_some_and(|m| m & 0o7000 != 0) {
                problem = Some((
                    format!("{}.mode", entry_at(kind, i, &v)),
                    "setuid, setgid and sticky bits came in spec 3.4".to_string(),
                ));
            }
            if problem.is_some() {
                break;
            }
        }
    }
    if let Some(p) = problem {
        return Err(p);
    }
    if let Some(field) = source_outside(&doc, to) {
        return Err((field, format!("spec {to} reads no such URL scheme")));
    }
    Ok(doc)
}

/// Whether a value says nothing: `null`, or an object or list of such values only.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Removes the field at the JSON pointer `at` when it says nothing; false when it says
/// something (or is not found, as a key shown in another spelling is not).
fn drop_if_empty(doc: &mut Document<'_>, at: &str) -> bool {
    let Some((parent, key)) = at.rsplit_once('/') else {
        return false;
    };
    let parts: Vec<&str> = parent.split('/').skip(1).collect();
    let kind = Kind::ALL
        .into_iter()
        .find(|k| parts.get(..2) == Some(&[k.section(), k.key()][..]));
    let remove = |v: &mut Value, pointer: &str| -> bool {
        let Some(obj) = v.pointer_mut(pointer).and_then(Value::as_object_mut) else {
            return false;
        };
        if !obj.get(key).is_some_and(is_empty) {
            return false;
        }
        obj.remove(key);
        true
    };
    match (kind, parts.get(2).and_then(|i| i.parse::<usize>().ok())) {
        (Some(kind), Some(index)) => {
            let mut entries = doc.take(kind);
            let rest: String = parts[3..].iter().map(|p| format!("/{p}")).collect();
            let mut v = entries.get(index).map(Entry::value);
            let removed = v.as_mut().is_some_and(|v| remove(v, &rest));
            if let (true, Some(v)) = (removed, v) {
                entries[index] = Entry::compact(kind, v);
            }
            doc.put(kind, entries);
            removed
        }
        _ => remove(&mut doc.skeleton, parent),
    }
}

/// The first `source` whose scheme `spec` does not read, by its place.
fn source_outside(doc: &Document, spec: SpecVersion) -> Option<String> {
    fn walk(v: &Value, at: &str, spec: SpecVersion) -> Option<String> {
        match v {
            Value::Object(m) => m.iter().find_map(|(k, v)| {
                if k == "source" {
                    let s = v.as_str()?;
                    let scheme = s.split_once(':').map(|(s, _)| s)?;
                    (!s.is_empty() && !spec.url_schemes().contains(&scheme))
                        .then(|| format!("{at}.source"))
                } else {
                    walk(v, &format!("{at}.{k}"), spec)
                }
            }),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &format!("{at}[{i}]"), spec)),
            _ => None,
        }
    }
    walk(&doc.skeleton, "", spec)
        .map(|f| f.trim_start_matches('.').to_string())
        .or_else(|| {
            Kind::ALL.into_iter().find_map(|kind| {
                doc.entries(kind).iter().enumerate().find_map(|(i, e)| {
                    let v = e.value();
                    walk(&v, &entry_at(kind, i, &v), spec)
                })
            })
        })
}

/// `/storage/files/3/append` as `storage.files[3].append`.
fn pointer_to_field(p: &str) -> String {
    let mut out = String::new();
    for part in p.trim_start_matches('/').split('/') {
        if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

// ---- down: 3.2 → 2.2 ----

/// Spec 3.2 (or an older 3.x) to spec 2.2 (the version is set by the caller).
fn down_to_v22(mut doc: Document<'_>) -> Result<Document<'_>, Refusal> {
    let mut root = Fields::new(std::mem::take(&mut doc.skeleton), "");
    let mut out = Map::new();
    if let Some(mut ign) = root.take_object("ignition") {
        out.insert("ignition".into(), ignition_section(&mut ign, Way::Down)?);
        ign.done("2.2")?;
    }
    if let Some(mut passwd) = root.take_object("passwd") {
        if let Some(p) = non_empty(down_passwd(&mut passwd)?) {
            out.insert("passwd".into(), p);
        }
        passwd.done("2.2")?;
    }
    let mut fs_paths = Vec::new();
    let mut storage_out = Map::new();
    if let Some(mut s) = root.take_object("storage") {
        for (k, v) in down_storage_devices(&mut s, &mut fs_paths)? {
            storage_out.insert(k.into(), v);
        }
        if let Some((at, _)) = s.take_list("luks").into_iter().next() {
            return Err((at, "spec 2.2 has no LUKS".into()));
        }
        for key in ["files", "directories", "links"] {
            s.map.remove(key);
        }
        s.done("2.2")?;
    }
    if let Some(mut s) = root.take_object("systemd") {
        s.map.remove("units");
        s.done("2.2")?;
    }
    root.done("2.2")?;
    let files = down_files(doc.take(Kind::Files), &fs_paths)?;
    let dirs = down_nodes(Kind::Directories, doc.take(Kind::Directories), &fs_paths)?;
    let links = down_nodes(Kind::Links, doc.take(Kind::Links), &fs_paths)?;
    let units = down_units(doc.take(Kind::Units))?;
    let has_nodes = !(files.is_empty() && dirs.is_empty() && links.is_empty());
    if !storage_out.is_empty() || has_nodes {
        out.insert("storage".into(), Value::Object(storage_out));
    }
    doc.skeleton = Value::Object(out);
    put_all(&mut doc, [files, dirs, links], units);
    Ok(doc)
}

fn down_passwd(passwd: &mut Fields) -> Result<Value, Refusal> {
    let users = each(passwd.take_list("users"), |mut u| {
        u.refuse_unless(
            "shouldExist",
            &Value::Bool(true),
            "spec 2.2 cannot delete a user",
        )?;
        user(u, "2.2")
    })?;
    let groups = each(passwd.take_list("groups"), |mut g| {
        g.refuse_unless(
            "shouldExist",
            &Value::Bool(true),
            "spec 2.2 cannot delete a group",
        )?;
        group(g, "2.2")
    })?;
    Ok(object([
        ("users", non_empty(Value::Array(users))),
        ("groups", non_empty(Value::Array(groups))),
    ]))
}

/// Disks, RAID arrays and filesystems. A spec 3 filesystem with a mount path becomes a
/// 2.2 filesystem named by that path, and the nodes under it are written there
/// (`v32tov22`); `fs_paths` receives those paths.
fn down_storage_devices(
    s: &mut Fields,
    fs_paths: &mut Vec<String>,
) -> Result<Vec<(&'static str, Value)>, Refusal> {
    let mut out = Vec::new();
    let disks = each(s.take_list("disks"), |d| {
        disk(d, "2.2", |p| {
            for key in ["sizeMiB", "startMiB"] {
                if p.take(key).is_some() {
                    return Err(p.refuse(
                        key,
                        "spec 2.2 counts sizes in sectors of the disk, which are not known here",
                    ));
                }
            }
            p.refuse_unless(
                "resize",
                &Value::Bool(false),
                "spec 2.2 cannot resize a partition",
            )?;
            p.refuse_unless(
                "wipePartitionEntry",
                &Value::Bool(false),
                "spec 2.2 has no such field",
            )?;
            p.refuse_unless(
                "shouldExist",
                &Value::Bool(true),
                "spec 2.2 cannot delete a partition",
            )
        })
    })?;
    if !disks.is_empty() {
        out.push(("disks", Value::Array(disks)));
    }
    let raid = each(s.take_list("raid"), |r| raid(r, "2.2"))?;
    if !raid.is_empty() {
        out.push(("raid", Value::Array(raid)));
    }
    let mut unnamed = 0;
    let fss: Vec<Value> = s
        .take_list("filesystems")
        .into_iter()
        .map(|(at, v)| {
            let mut f = Fields::new(v, at);
            if f.take("mountOptions").and_then(non_empty).is_some() {
                return Err(f.refuse("mountOptions", "spec 2.2 has no such field"));
            }
            let name = match f.take("path").and_then(|p| p.as_str().map(str::to_string)) {
                Some(p) => {
                    fs_paths.push(p.clone());
                    p
                }
                None => {
                    unnamed += 1;
                    unnamed.to_string()
                }
            };
            let mount = object([
                ("device", f.take("device")),
                ("format", set(f.take("format"))),
                ("wipeFilesystem", set(f.take("wipeFilesystem"))),
                ("label", f.take("label")),
                ("uuid", f.take("uuid")),
                ("options", f.take("options").and_then(non_empty)),
            ]);
            f.done("2.2")?;
            Ok(object([
                ("name", Some(Value::from(name))),
                ("mount", Some(mount)),
            ]))
        })
        .collect::<Result<_, _>>()?;
    if !fss.is_empty() {
        out.push(("filesystems", Value::Array(fss)));
    }
    Ok(out)
}

/// The node fields of a spec 3 entry in 2.2: the filesystem whose mount path holds it
/// (the longest), else `root`; owner and group; `overwrite` (unset is `false` in spec 3,
/// and is written so, since 2.2's default is `true` for files).
fn down_node(n: &mut Fields, fs_paths: &[String]) -> Result<Map<String, Value>, Refusal> {
    let path = n
        .take("path")
        .and_then(|p| p.as_str().map(str::to_string))
        .unwrap_or_default();
    let (fs, rel) = fs_paths
        .iter()
        .filter(|fs| {
            let fs = fs.trim_end_matches('/');
            path.strip_prefix(fs).is_some_and(|r| r.starts_with('/'))
        })
        .max_by_key(|fs| fs.len())
        .map(|fs| {
            let rel = path[fs.trim_end_matches('/').len()..].to_string();
            (fs.clone(), rel)
        })
        .unwrap_or_else(|| ("root".to_string(), path.clone()));
    let mut m = Map::new();
    m.insert("filesystem".into(), Value::from(fs));
    m.insert("path".into(), Value::from(rel));
    owners(n, &mut m, "2.2")?;
    Ok(m)
}

/// Files: a spec 3 file's contents become one 2.2 file, and each of its `append`
/// entries one more 2.2 file with `append: true`, in that order.
fn down_files<'a>(entries: Vec<Entry<'_>>, fs_paths: &[String]) -> Result<Vec<Entry<'a>>, Refusal> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let v = e.value();
        let mut f = Fields::new(v.clone(), entry_at(Kind::Files, i, &v));
        let mut node = down_node(&mut f, fs_paths)?;
        node.entry("overwrite").or_insert(Value::Bool(false));
        let mode = f.take("mode");
        let contents = f
            .take_object("contents")
            .map(down_contents)
            .transpose()?
            .filter(|c| c.get("source").is_some());
        let appends: Vec<Value> = f
            .take_list("append")
            .into_iter()
            .map(|(at, v)| down_contents(Fields::new(v, at)))
            .collect::<Result<_, _>>()?;
        f.done("2.2")?;
        // Spec 3's `overwrite` is the whole file's; a 2.x append entry must not say
        // it (Ignition v0.x refuses an append to a path that exists otherwise).
        let overwrite = node.remove("overwrite").unwrap_or(Value::Bool(false));
        let file = |contents: Value, append: bool| {
            let mut m = node.clone();
            if !append {
                m.insert("overwrite".into(), overwrite.clone());
            }
            m.insert("contents".into(), contents);
            if let Some(mode) = &mode {
                m.insert("mode".into(), mode.clone());
            }
            if append {
                m.insert("append".into(), Value::Bool(true));
            }
            Entry::compact(Kind::Files, Value::Object(m))
        };
        match contents {
            Some(c) => out.push(file(c, false)),
            // Without contents, spec 3 makes an empty file or keeps the one there, and
            // sets its mode and owner: in 2.2, an append of nothing does that.
            None if appends.is_empty() => {
                out.push(file(serde_json::json!({"source": "data:,"}), true))
            }
            None => {}
        }
        for a in appends {
            out.push(file(a, true));
        }
    }
    Ok(out)
}

/// The most a compressed `data:` URL of a base may inflate to when it is translated.
const MAX_INFLATED: u64 = 256 << 20;

/// A spec 3 file's contents in 2.2. A `data:` URL with `compression` is written
/// decompressed: Ignition v0.x's validator takes compression there, but its files stage
/// refuses it ("compression is not supported with that scheme"). The verification hash
/// stays, as both generations check it on the decompressed data.
fn down_contents(mut c: Fields) -> Result<Value, Refusal> {
    if c.take("httpHeaders").and_then(non_empty).is_some() {
        return Err(c.refuse("httpHeaders", "spec 2.2 has no such field"));
    }
    let mut compression = set(c.take("compression"));
    let mut source = c.take("source");
    if let (Some(Value::String(how)), Some(Value::String(url))) = (&compression, &source) {
        if url.starts_with("data:") {
            let bytes = inflate(how, url).map_err(|why| c.refuse("source", why))?;
            source = Some(Value::from(super::data_url(&bytes)));
            compression = None;
        }
    }
    let v = object([
        ("compression", compression),
        ("source", source),
        ("verification", c.take("verification").and_then(non_empty)),
    ]);
    c.done("2.2")?;
    Ok(v)
}

/// The data of a compressed `data:` URL.
fn inflate(how: &str, url: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    if how != "gzip" {
        return Err(format!("spec 2.2 has no compression {how:?}"));
    }
    let raw = super::decode_data_url(url).map_err(|e| format!("not a data URL: {e}"))?;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|_| "its gzip data does not decompress".to_string())?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(format!(
            "it inflates to more than {} MiB",
            MAX_INFLATED >> 20
        ));
    }
    Ok(out)
}

fn down_nodes<'a>(
    kind: Kind,
    entries: Vec<Entry<'_>>,
    fs_paths: &[String],
) -> Result<Vec<Entry<'a>>, Refusal> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let v = e.value();
            let mut n = Fields::new(v.clone(), entry_at(kind, i, &v));
            let mut m = down_node(&mut n, fs_paths)?;
            node_rest(kind, &mut n, &mut m);
            n.done("2.2")?;
            Ok(Entry::compact(kind, Value::Object(m)))
        })
        .collect()
}

fn down_units(entries: Vec<Entry<'_>>) -> Result<Vec<Value>, Refusal> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let v = e.value();
            let at = entry_at(Kind::Units, i, &v);
            unit(Fields::new(v, at), "2.2")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tr(cfg: &Value, to: SpecVersion) -> Result<Value, TranslateError> {
        let text = cfg.to_string();
        let doc = Document::parse("cfg", text.as_bytes()).unwrap();
        let from = cfg["ignition"]["version"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let out = translate(doc, from, to)?;
        let mut bytes = Vec::new();
        out.write(&mut bytes).unwrap();
        Ok(serde_json::from_slice(&bytes).unwrap())
    }

    /// The pointer config MCO's operator keeps in `<pool>-user-data-managed`.
    fn managed_stub() -> Value {
        json!({"ignition": {"version": "3.5.0",
            "config": {"merge": [{"source": "https://api-int.c.example:22623/config/worker"}]},
            "security": {"tls": {"certificateAuthorities": [{"source": "data:text/plain;charset=utf-8;base64,Q0E="}]}}}})
    }

    #[test]
    fn the_managed_stub_goes_down_to_22_and_back() {
        let down = tr(&managed_stub(), SpecVersion::V2_2).unwrap();
        assert_eq!(
            down,
            json!({"ignition": {"version": "2.2.0",
                "config": {"append": [{"source": "https://api-int.c.example:22623/config/worker"}]},
                "security": {"tls": {"certificateAuthorities": [{"source": "data:text/plain;charset=utf-8;base64,Q0E="}]}}}})
        );
        let up = tr(&down, SpecVersion::V3_5).unwrap();
        assert_eq!(up, managed_stub());
    }

    #[test]
    fn every_field_of_a_22_config_comes_up() {
        let v22 = json!({
            "ignition": {"version": "2.2.0",
                "config": {"append": [{"source": "https://mcs/config/worker", "verification": {"hash": "sha512-00"}}],
                           "replace": {"source": "https://other/config"}},
                "timeouts": {"httpResponseHeaders": 20, "httpTotal": 100},
                "security": {"tls": {"certificateAuthorities": [{"source": "data:,CA", "verification": {"hash": "sha512-11"}}]}}},
            "passwd": {"users": [
                {"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 A"]},
                {"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 B", "ssh-ed25519 A"], "groups": ["wheel"]}],
                "groups": [{"name": "ops", "gid": 4000}]},
            "storage": {
                "files": [
                    {"filesystem": "root", "path": "/etc/a", "mode": 420, "contents": {"source": "data:,1"}},
                    {"filesystem": "root", "path": "/etc/a", "append": true, "contents": {"source": "data:,2"}},
                    {"filesystem": "root", "path": "/etc/b", "overwrite": false, "user": {"name": "core"},
                     "contents": {"source": "https://files.example/b.gz", "compression": "gzip", "verification": {"hash": "sha512-22"}}}],
                "directories": [{"filesystem": "root", "path": "/var/d", "mode": 493}],
                "links": [{"filesystem": "root", "path": "/usr/local/bin/x", "target": "/run/x"}]},
            "systemd": {"units": [
                {"name": "a.service", "enabled": true, "contents": "[Unit]\n", "dropins": [{"name": "10.conf", "contents": "x"}]},
                {"name": "b.service", "mask": true},
                {"name": "a.service", "dropins": [{"name": "20.conf", "contents": "y"}]}]}
        });
        let up = tr(&v22, SpecVersion::V3_2).unwrap();
        assert_eq!(
            up["ignition"],
            json!({"version": "3.2.0",
            "config": {"merge": [{"source": "https://mcs/config/worker", "verification": {"hash": "sha512-00"}}],
                       "replace": {"source": "https://other/config"}},
            "timeouts": {"httpResponseHeaders": 20, "httpTotal": 100},
            "security": {"tls": {"certificateAuthorities": [{"source": "data:,CA", "verification": {"hash": "sha512-11"}}]}}})
        );
        // Users of one name folded into the last, keys gathered once each.
        assert_eq!(
            up["passwd"]["users"],
            json!([{"name": "core",
            "sshAuthorizedKeys": ["ssh-ed25519 B", "ssh-ed25519 A"], "groups": ["wheel"]}])
        );
        assert_eq!(
            up["passwd"]["groups"],
            json!([{"name": "ops", "gid": 4000}])
        );
        assert_eq!(
            up["storage"]["files"],
            json!([
            {"path": "/etc/a", "overwrite": true, "contents": {"source": "data:,1"}, "mode": 420,
             "append": [{"source": "data:,2"}]},
            {"path": "/etc/b", "user": {"name": "core"}, "overwrite": false,
             "contents": {"compression": "gzip", "source": "https://files.example/b.gz", "verification": {"hash": "sha512-22"}}}])
        );
        assert_eq!(
            up["storage"]["directories"],
            json!([{"path": "/var/d", "mode": 493}])
        );
        assert_eq!(
            up["storage"]["links"],
            json!([{"path": "/usr/local/bin/x", "target": "/run/x"}])
        );
        // The last unit of a name wins; the earlier one's other drop-ins are added.
        assert_eq!(
            up["systemd"]["units"],
            json!([
            {"name": "b.service", "mask": true},
            {"name": "a.service", "dropins": [{"name": "20.conf", "contents": "y"}, {"name": "10.conf", "contents": "x"}]}])
        );
        // And down again: the append entry is a 2.x append file after its file.
        let down = tr(&up, SpecVersion::V2_2).unwrap();
        let files = down["storage"]["files"].as_array().unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(
            files[1],
            json!({"filesystem": "root", "path": "/etc/a",
            "contents": {"source": "data:,2"}, "mode": 420, "append": true})
        );
        assert_eq!(down["storage"]["links"][0]["filesystem"], "root");
    }

    #[test]
    fn what_the_output_spec_cannot_say_is_refused_by_name() {
        let cases: [(Value, SpecVersion, &str); 9] = [
            (
                json!({"ignition": {"version": "3.4.0"}, "kernelArguments": {"shouldExist": ["a"]}}),
                SpecVersion::V2_2,
                "kernelArguments",
            ),
            (
                json!({"ignition": {"version": "3.4.0"}, "kernelArguments": {"shouldExist": ["a"]}}),
                SpecVersion::V3_2,
                "kernelArguments",
            ),
            (
                json!({"ignition": {"version": "3.2.0"}, "storage": {"luks": [{"name": "r", "device": "/dev/sda"}]}}),
                SpecVersion::V2_2,
                "storage.luks[0]",
            ),
            (
                json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "/x", "mode": 2541}]}}),
                SpecVersion::V3_3,
                "storage.files[0] (/x).mode",
            ),
            (
                json!({"ignition": {"version": "3.4.0"}, "ignition": {"version": "3.4.0", "config": {"merge": [{"source": "arn:aws:s3:::b/k"}]}}}),
                SpecVersion::V3_3,
                "ignition.config.merge[0].source",
            ),
            (
                json!({"ignition": {"version": "3.2.0", "proxy": {"httpsProxy": "http://p:3128"}}}),
                SpecVersion::V2_2,
                "ignition.proxy.httpsProxy",
            ),
            (
                json!({"ignition": {"version": "3.2.0", "config": {"merge": [{"source": "https://m", "httpHeaders": [{"name": "A", "value": "b"}]}]}}}),
                SpecVersion::V2_2,
                "ignition.config.merge[0].httpHeaders",
            ),
            (
                json!({"ignition": {"version": "3.2.0"}, "passwd": {"users": [{"name": "u", "shouldExist": false}]}}),
                SpecVersion::V2_2,
                "passwd.users[0].shouldExist",
            ),
            (
                json!({"ignition": {"version": "2.2.0"}, "networkd": {"units": [{"name": "a.network", "contents": "x"}]}}),
                SpecVersion::V3_2,
                "networkd.units",
            ),
        ];
        for (cfg, to, field) in cases {
            let e = tr(&cfg, to).unwrap_err();
            assert_eq!(e.field, field, "{cfg}: {e}");
            assert!(e.to_string().contains(&format!("to spec {to}")), "{e}");
        }
        let other_fs = json!({"ignition": {"version": "2.2.0"}, "storage": {"files": [
            {"filesystem": "var", "path": "/x", "contents": {"source": "data:,"}}]}});
        assert_eq!(
            tr(&other_fs, SpecVersion::V3_2).unwrap_err().field,
            "storage.files[0] (/x).filesystem"
        );
    }

    /// A spec 3 file without contents makes an empty file or keeps the one there (and
    /// sets its mode): an append of nothing in 2.2, which Ignition v0.x does the same
    /// way.
    #[test]
    fn a_spec_3_file_with_no_contents_is_an_append_of_nothing() {
        let cfg = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/e", "mode": 384}]}});
        let down = tr(&cfg, SpecVersion::V2_2).unwrap();
        assert_eq!(
            down["storage"]["files"],
            json!([{"filesystem": "root", "path": "/etc/e",
                "contents": {"source": "data:,"}, "mode": 384, "append": true}])
        );
    }

    /// What MCO's managed stub carries besides the pointer: an empty `kernelArguments`.
    #[test]
    fn fields_that_say_nothing_are_not_refused() {
        let mut stub = managed_stub();
        stub["kernelArguments"] = json!({});
        stub["storage"] =
            json!({"files": [{"path": "/x", "contents": {"source": "data:,"}, "append": []}]});
        let down = tr(&stub, SpecVersion::V2_2).unwrap();
        assert_eq!(
            down["ignition"]["config"]["append"][0]["source"],
            "https://api-int.c.example:22623/config/worker"
        );
        assert!(down.get("kernelArguments").is_none());
        stub["kernelArguments"] = json!({"shouldExist": [], "shouldNotExist": ["quiet"]});
        assert_eq!(
            tr(&stub, SpecVersion::V2_2).unwrap_err().field,
            "kernelArguments"
        );
    }

    /// Ignition v0.x refuses compression on a `data:` URL when it writes the file: the
    /// data goes down decompressed, with its hash.
    #[test]
    fn compressed_data_urls_go_down_decompressed() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"hello\n").unwrap();
        let url = super::super::data_url(&gz.finish().unwrap());
        let cfg = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/z",
            "contents": {"source": url, "compression": "gzip", "verification": {"hash": "sha512-ab"}}}]}});
        let down = tr(&cfg, SpecVersion::V2_2).unwrap();
        let contents = &down["storage"]["files"][0]["contents"];
        assert!(contents.get("compression").is_none(), "{contents}");
        assert_eq!(
            super::super::decode_data_url(contents["source"].as_str().unwrap()).unwrap(),
            b"hello\n"
        );
        assert_eq!(contents["verification"]["hash"], "sha512-ab");
        let bad = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/z",
            "contents": {"source": "data:,notgzip", "compression": "gzip"}}]}});
        assert_eq!(
            tr(&bad, SpecVersion::V2_2).unwrap_err().field,
            "storage.files[0] (/etc/z).contents.source"
        );
    }

    /// Ignition v0.x sets the mode an append entry names after appending.
    #[test]
    fn the_mode_of_a_22_append_entry_wins_going_up() {
        let cfg = json!({"ignition": {"version": "2.2.0"}, "storage": {"files": [
            {"filesystem": "root", "path": "/etc/a", "mode": 420, "contents": {"source": "data:,1"}},
            {"filesystem": "root", "path": "/etc/a", "mode": 384, "append": true, "user": {"id": 0},
             "contents": {"source": "data:,2"}}]}});
        let up = tr(&cfg, SpecVersion::V3_2).unwrap();
        assert_eq!(
            up["storage"]["files"],
            json!([{"path": "/etc/a", "overwrite": true, "mode": 384, "user": {"id": 0},
                "contents": {"source": "data:,1"}, "append": [{"source": "data:,2"}]}])
        );
    }
}
