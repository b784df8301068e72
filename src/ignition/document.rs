//! A config held the lean way: its four entry arrays (`storage.files`, `directories`,
//! `links`, `systemd.units`) are kept as each entry's raw JSON text, borrowed from the
//! bytes read, and parsed one entry at a time when an entry is checked, compared or
//! written. The rest of the config (small in every real config) is a [`Value`]. A base
//! of 200,000 file entries then costs about its own size in memory, where a [`Value`]
//! of it costs about thirty times that.
//!
//! Written out, a document gives the same bytes as [`super::to_bytes`] of the same
//! config as a [`Value`]: pretty, keys in their order, entries in theirs.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::schema::{Report, Schema};
use super::{rules, ParseError};

/// One of the entry arrays a document keeps per entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Files,
    Directories,
    Links,
    Units,
}

impl Kind {
    /// Every kind, in the order the rules name them.
    pub const ALL: [Kind; 4] = [Kind::Files, Kind::Directories, Kind::Links, Kind::Units];
    /// The kinds whose entries are nodes with a `path`.
    pub const NODES: [Kind; 3] = [Kind::Files, Kind::Directories, Kind::Links];

    /// The top-level key the array lives under.
    pub fn section(self) -> &'static str {
        match self {
            Kind::Units => "systemd",
            _ => "storage",
        }
    }

    /// The array's own key.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Files => "files",
            Kind::Directories => "directories",
            Kind::Links => "links",
            Kind::Units => "units",
        }
    }

    /// The key that names an entry: `path` for nodes, `name` for units.
    fn id_key(self) -> &'static str {
        match self {
            Kind::Units => "name",
            _ => "path",
        }
    }

    fn of(section: &str, key: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.section() == section && k.key() == key)
    }

    fn slot(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.section(), self.key())
    }
}

/// An entry's JSON: the raw text read (or written by a translation, in as little
/// memory), or a value this tool made.
#[derive(Debug)]
enum Text<'a> {
    Raw(Cow<'a, RawValue>),
    Made(Box<Value>),
}

/// One entry of an array, with the key that identifies it (its path, or a unit's name).
#[derive(Debug)]
pub struct Entry<'a> {
    text: Text<'a>,
    /// Borrowed from the raw text unless the text escapes it.
    id: Option<Cow<'a, str>>,
}

impl<'a> Entry<'a> {
    /// An entry this tool made.
    pub fn made(kind: Kind, v: Value) -> Entry<'a> {
        let id = v[kind.id_key()].as_str().map(|s| Cow::Owned(s.to_string()));
        Entry {
            text: Text::Made(Box::new(v)),
            id,
        }
    }

    /// An entry made from a value but kept as its JSON text, as an entry read is: for
    /// the many entries a translation writes.
    pub fn compact(kind: Kind, v: Value) -> Entry<'a> {
        let id = v[kind.id_key()].as_str().map(|s| Cow::Owned(s.to_string()));
        let raw = serde_json::value::to_raw_value(&v).expect("values serialise");
        Entry {
            text: Text::Raw(Cow::Owned(raw)),
            id,
        }
    }

    /// The entry's path (nodes) or name (units), when it is a string.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Whether the entry is a 2.x file that appends to its path (`append: true`).
    fn appends(&self) -> bool {
        match &self.text {
            Text::Raw(r) => r.get().contains("\"append\"") && self.value()["append"] == true,
            Text::Made(v) => v["append"] == true,
        }
    }

    /// The entry as a value (parsed anew for a raw entry).
    pub fn value(&self) -> Value {
        match &self.text {
            Text::Raw(r) => serde_json::from_str(r.get()).expect("raw entries were parsed once"),
            Text::Made(v) => (**v).clone(),
        }
    }
}

/// A config with its entry arrays kept per entry.
#[derive(Debug)]
pub struct Document<'a> {
    /// The config without its entries: each entry array is an empty array in its place,
    /// so that the keys keep their order.
    pub skeleton: Value,
    entries: [Vec<Entry<'a>>; 4],
}

/// The pairs of a JSON object in their order, values raw; a later duplicate key
/// replaces the earlier value in place, as [`Value`] does.
struct RawObject<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawObject<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut pairs: Vec<(String, &'a RawValue)> = Vec::new();
                let mut at = std::collections::HashMap::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v = m.next_value_seed(Borrowed)?;
                    match at.get(&k) {
                        Some(&i) => pairs[i] = (k, v),
                        None => {
                            at.insert(k.clone(), pairs.len());
                            pairs.push((k, v));
                        }
                    }
                }
                Ok(RawObject(pairs))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Reads a borrowed raw value.
struct Borrowed;

impl<'de> DeserializeSeed<'de> for Borrowed {
    type Value = &'de RawValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <&RawValue>::deserialize(d)
    }
}

/// The keys that name entries, borrowed where the text does not escape them.
#[derive(Deserialize)]
struct Ids<'a> {
    #[serde(borrow, default)]
    path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// The path or name of an entry (`v` is `raw` parsed), borrowed from `raw` if it can be.
fn id_of<'a>(kind: Kind, raw: &'a RawValue, v: &Value) -> Option<Cow<'a, str>> {
    let want = v[kind.id_key()].as_str()?;
    let borrowed = serde_json::from_str::<Ids>(raw.get())
        .ok()
        .and_then(|ids| {
            if kind == Kind::Units {
                ids.name
            } else {
                ids.path
            }
        })
        .filter(|id| id == want);
    Some(borrowed.unwrap_or_else(|| Cow::Owned(want.to_string())))
}

fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

fn parsed(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).expect("raw values were parsed once")
}

/// Moves an error's place in `part` (a slice of `whole`) to its place in `whole`.
fn placed(mut err: ParseError, whole: &[u8], part: &str) -> ParseError {
    let offset = (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize);
    let before = &whole[..offset.min(whole.len())];
    if err.line == 1 {
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        err.column += before.len() - line_start;
    }
    err.line += before.iter().filter(|b| **b == b'\n').count();
    err
}

/// Parses `raw` (a part of the bytes a document reads) as `T`, naming any error by its
/// place in the whole.
struct Parser<'n, 'a> {
    name: &'n str,
    whole: &'a [u8],
}

impl<'a> Parser<'_, 'a> {
    fn parse<T: Deserialize<'a>>(&self, text: &'a str) -> Result<T, ParseError> {
        serde_json::from_str(text)
            .map_err(|e| placed(ParseError::new(self.name, e), self.whole, text))
    }
}

impl<'a> Document<'a> {
    /// Reads a config's JSON, naming the line and column of any error. Every entry is
    /// parsed once here (and dropped), so that what reads as raw text also reads as a
    /// value later.
    pub fn parse(name: &str, bytes: &'a [u8]) -> Result<Document<'a>, ParseError> {
        // Checks the whole text first, so that errors are named where they are.
        let raw: &'a RawValue =
            serde_json::from_slice(bytes).map_err(|e| ParseError::new(name, e))?;
        let p = Parser { name, whole: bytes };
        let mut doc = Document {
            skeleton: Value::Null,
            entries: Default::default(),
        };
        if !is_object(raw) {
            doc.skeleton = p.parse(raw.get())?;
            return Ok(doc);
        }
        let mut root = Map::new();
        for (key, raw) in p.parse::<RawObject>(raw.get())?.0 {
            let value = match key.as_str() {
                "storage" | "systemd" if is_object(raw) => doc.section(&p, &key, raw)?,
                _ => p.parse(raw.get())?,
            };
            root.insert(key, value);
        }
        doc.skeleton = Value::Object(root);
        Ok(doc)
    }

    /// A section's object, its entry arrays taken out into `self.entries`.
    fn section(
        &mut self,
        p: &Parser<'_, 'a>,
        section: &str,
        raw: &'a RawValue,
    ) -> Result<Value, ParseError> {
        let mut m = Map::new();
        for (key, raw) in p.parse::<RawObject>(raw.get())?.0 {
            let value = match Kind::of(section, &key) {
                Some(kind) if raw.get().starts_with('[') => {
                    let items: Vec<&'a RawValue> = p.parse(raw.get())?;
                    let mut entries = Vec::with_capacity(items.len());
                    for r in items {
                        let v: Value = p.parse(r.get())?;
                        entries.push(Entry {
                            text: Text::Raw(Cow::Borrowed(r)),
                            id: id_of(kind, r, &v),
                        });
                    }
                    self.entries[kind.slot()] = entries;
                    Value::Array(Vec::new())
                }
                _ => p.parse(raw.get())?,
            };
            m.insert(key, value);
        }
        Ok(Value::Object(m))
    }

    /// A document of a value this tool made.
    pub fn from_value(mut v: Value) -> Document<'static> {
        let mut entries: [Vec<Entry<'static>>; 4] = Default::default();
        for kind in Kind::ALL {
            if let Some(Value::Array(items)) = v
                .get_mut(kind.section())
                .and_then(|s| s.get_mut(kind.key()))
            {
                entries[kind.slot()] = items
                    .drain(..)
                    .map(|item| Entry::made(kind, item))
                    .collect();
            }
        }
        Document {
            skeleton: v,
            entries,
        }
    }

    /// The `ignition.version` of the config, as written.
    pub fn version(&self) -> Option<&str> {
        super::version_of(&self.skeleton)
    }

    /// The entries of one array.
    pub fn entries(&self, kind: Kind) -> &[Entry<'a>] {
        &self.entries[kind.slot()]
    }

    /// Takes the entries of one array out (its place in the skeleton stays).
    pub fn take(&mut self, kind: Kind) -> Vec<Entry<'a>> {
        std::mem::take(&mut self.entries[kind.slot()])
    }

    /// Keeps the entries of one array that `keep` keeps, in place.
    pub fn retain(&mut self, kind: Kind, keep: impl FnMut(&Entry<'a>) -> bool) {
        self.entries[kind.slot()].retain(keep);
    }

    /// Adds entries at the end of one array, creating it as [`Document::put`] does.
    pub fn append(&mut self, kind: Kind, entries: Vec<Entry<'a>>) {
        let mut all = self.take(kind);
        all.extend(entries);
        self.put(kind, all);
    }

    /// Sets the entries of one array, creating the section and the array (at the end of
    /// their objects) when the config has none.
    pub fn put(&mut self, kind: Kind, entries: Vec<Entry<'a>>) {
        let root = self.skeleton.as_object_mut().expect("configs are objects");
        let sec = root
            .entry(kind.section())
            .or_insert_with(|| Value::Object(Map::new()));
        if !sec.is_object() {
            *sec = Value::Object(Map::new());
        }
        let arr = sec
            .as_object_mut()
            .expect("made an object above")
            .entry(kind.key())
            .or_insert_with(|| Value::Array(vec![]));
        if !arr.is_array() {
            *arr = Value::Array(vec![]);
        }
        self.entries[kind.slot()] = entries;
    }

    /// Checks the config against `spec`'s schema, entry by entry. Pointers name entries
    /// by index, as a check of the whole config would.
    pub fn validate(&self, schema: &Schema) -> Report {
        let mut report = schema.validate(&self.skeleton);
        for kind in Kind::ALL {
            for (i, e) in self.entries(kind).iter().enumerate() {
                let at = format!("/{}/{}/{i}", kind.section(), kind.key());
                let v;
                let value = match &e.text {
                    Text::Raw(r) => {
                        v = parsed(r);
                        &v
                    }
                    Text::Made(v) => &**v,
                };
                debug_assert_eq!(e.id(), value[kind.id_key()].as_str());
                schema.validate_entry(kind.section(), kind.key(), value, &at, &mut report);
            }
        }
        report
    }

    /// The rules Ignition applies beyond the schema ([`rules`]), on the paths and unit
    /// names recorded when the entries were read, with each unit's drop-ins read one
    /// unit at a time.
    pub fn rules(&self) -> Vec<String> {
        let of = |kind: Kind| self.entries(kind).iter().map(move |e| (kind.key(), e.id()));
        // A 2.x file with `append: true` adds to the file of its path (Ignition v0.x
        // writes the entries in turn): it is not a second entry of that path.
        let v2 = self.version().is_some_and(|v| v.starts_with("2."));
        let files = self
            .entries(Kind::Files)
            .iter()
            .filter(|e| !(v2 && e.appends()))
            .map(|e| (Kind::Files.key(), e.id()));
        // Chained (not flattened), so that the rules know how many nodes come.
        let nodes = files.chain(of(Kind::Directories)).chain(of(Kind::Links));
        let mut problems = rules::check_nodes(nodes);
        let mut names = HashSet::new();
        for e in self.entries(Kind::Units) {
            let name = e.id().unwrap_or("");
            if !names.insert(name) {
                problems.push(rules::duplicate_unit(name));
            }
            let v = e.value();
            let dropins = v["dropins"].as_array().into_iter().flatten();
            problems.extend(rules::check_dropins(
                name,
                dropins.map(|d| d["name"].as_str().unwrap_or("")),
            ));
        }
        problems
    }

    /// Each entry of an array, parsed in turn.
    pub fn each(&self, kind: Kind) -> impl Iterator<Item = Value> + '_ {
        self.entries(kind).iter().map(Entry::value)
    }

    /// A small value of the config: the skeleton with only the entries `keep` picks
    /// (by kind and id), in their order.
    pub fn view(&self, keep: impl Fn(Kind, &str) -> bool) -> Value {
        let mut v = self.skeleton.clone();
        for kind in Kind::ALL {
            let picked: Vec<Value> = self
                .entries(kind)
                .iter()
                .filter(|e| e.id().is_some_and(|id| keep(kind, id)))
                .map(Entry::value)
                .collect();
            if let Some(arr) = v
                .get_mut(kind.section())
                .and_then(|s| s.get_mut(kind.key()))
                .and_then(Value::as_array_mut)
            {
                *arr = picked;
            }
        }
        v
    }

    /// Writes the config as [`super::to_bytes`] writes its value.
    /// It writes in large pieces whatever `out` is (the serialiser writes token by token).
    pub fn write(&self, out: &mut impl std::io::Write) -> serde_json::Result<()> {
        use std::io::Write;
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, out);
        serde_json::to_writer_pretty(&mut buf, self)?;
        buf.write_all(b"\n").map_err(serde_json::Error::io)?;
        buf.flush().map_err(serde_json::Error::io)
    }
}

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Text::Raw(r) => serde_json::from_str::<Value>(r.get())
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
            Text::Made(v) => v.serialize(s),
        }
    }
}

/// A section object of the skeleton with its entry arrays filled in.
struct Section<'d, 'a> {
    doc: &'d Document<'a>,
    name: &'d str,
    map: &'d Map<String, Value>,
}

impl Serialize for Section<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.map.len()))?;
        for (k, v) in self.map {
            match Kind::of(self.name, k).filter(|_| v.is_array()) {
                Some(kind) => m.serialize_entry(k, &Entries(self.doc.entries(kind)))?,
                None => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

struct Entries<'d, 'a>(&'d [Entry<'a>]);

impl Serialize for Entries<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for e in self.0 {
            seq.serialize_element(e)?;
        }
        seq.end()
    }
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(root) = &self.skeleton else {
            return self.skeleton.serialize(s);
        };
        let mut m = s.serialize_map(Some(root.len()))?;
        for (k, v) in root {
            match v {
                Value::Object(map) if k == "storage" || k == "systemd" => m.serialize_entry(
                    k,
                    &Section {
                        doc: self,
                        name: k,
                        map,
                    },
                )?,
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

/// Schema problems and unknown keys as one list of lines.
pub fn report_lines(report: Report, unknown: impl Fn(&str) -> String) -> Vec<String> {
    let mut lines = report.errors;
    lines.extend(report.unknown_keys.iter().map(|k| unknown(k)));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_the_bytes_a_value_gives() {
        let texts = [
            r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:,x"},"mode":420}],"disks":[],"links":[]},"passwd":{},"systemd":{"units":[{"name":"a.service","dropins":[{"name":"x.conf"}]}]}}"#,
            r#"{"systemd":{"units":[]},"ignition":{"version":"3.2.0"},"storage":{"directories":[{"path":"/d"}],"files":"odd"}}"#,
            r#"{"ignition":{"version":"2.2.0"},"storage":{},"a":{"b":[1,2.5,"\u00e9\n"]}}"#,
            r#"[1, 2]"#,
            r#"{"storage":{"files":[{"path":"/a"}],"files":[{"path":"/b"}]}}"#,
        ];
        for t in texts {
            let doc = Document::parse("t", t.as_bytes()).unwrap();
            let mut out = Vec::new();
            doc.write(&mut out).unwrap();
            let want = super::super::to_bytes(&serde_json::from_str(t).unwrap());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn parse_errors_name_line_and_column() {
        let e =
            Document::parse("base.ign", b"{\n  \"storage\": {\"files\": [\n  oops]}}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
        // Errors only a value finds (a lone surrogate) are named where they are too.
        let t = "{\"storage\": {\"files\": [\n  {\"path\": \"/a\"},\n  {\"path\": \"\\ud800\"}]}}";
        for t in [
            t,
            "{\"a\": 1e999}",
            "{\"storage\": {\"x\": 1,\n \"links\": [1e999]}}",
        ] {
            let e = Document::parse("base.ign", t.as_bytes()).unwrap_err();
            let whole = super::super::parse_json("base.ign", t.as_bytes()).unwrap_err();
            assert_eq!(
                (e.line, e.column, &e.msg),
                (whole.line, whole.column, &whole.msg)
            );
        }
    }

    #[test]
    fn entries_are_validated_with_their_pointer_and_indexed() {
        let t = json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{"path": "/a"}, {"path": 1}, {"path": "/c", "filesystem": "root"}]},
            "systemd": {"units": [{"name": "a.service"}, {"name": "a.service"}]}
        })
        .to_string();
        let doc = Document::parse("t", t.as_bytes()).unwrap();
        let r = doc.validate(&Schema::load(super::super::SpecVersion::V3_2));
        assert_eq!(r.unknown_keys, ["/storage/files/2/filesystem"]);
        assert_eq!(r.errors.len(), 1, "{r:?}");
        assert!(r.errors[0].starts_with("/storage/files/1/path"), "{r:?}");
        let ids: Vec<_> = doc.entries(Kind::Files).iter().map(Entry::id).collect();
        assert_eq!(ids, [Some("/a"), None, Some("/c")]);
        let rules = doc.rules();
        assert!(
            rules.iter().any(|p| p.contains("an entry has no path")),
            "{rules:?}"
        );
        assert!(
            rules
                .iter()
                .any(|p| p.contains("unit a.service is defined twice")),
            "{rules:?}"
        );
        let view = doc.view(|k, id| k == Kind::Files && id == "/c");
        assert_eq!(
            view["storage"]["files"],
            json!([{"path": "/c", "filesystem": "root"}])
        );
    }
}
