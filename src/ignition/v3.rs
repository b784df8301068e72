//! Specs 3.0.0 to 3.6.0 (Ignition v2.x): no `filesystem`; `overwrite` is set because
//! it defaults to false there. The subset written here is the same in all of them (3.6
//! only starts honouring setuid/setgid/sticky bits, which no mode here has).

use serde_json::{json, Map, Value};

use super::{data_url, stream_mark, Config, Source, SpecVersion, Unit};

pub(super) fn render(c: &Config, spec: SpecVersion) -> Value {
    render_nodes(c, spec, None)
}

/// The storage and systemd sections. Spec 2.x differs from 3.x in this subset only by
/// the `filesystem` that each of its nodes names.
pub(super) fn render_nodes(c: &Config, spec: SpecVersion, filesystem: Option<&str>) -> Value {
    let node = |path: &str| {
        let mut m = Map::new();
        if let Some(fs) = filesystem {
            m.insert("filesystem".into(), json!(fs));
        }
        m.insert("path".into(), json!(path));
        m.insert("overwrite".into(), json!(true));
        m
    };
    let files: Vec<Value> = c
        .files
        .iter()
        .map(|f| {
            let source = match &f.source {
                Source::Inline(b) => data_url(b),
                Source::Streamed(i) => format!("data:;base64,{}", stream_mark(*i)),
                Source::Url(u) => u.clone(),
            };
            let mut m = node(&f.path);
            m.insert(
                "contents".into(),
                json!({
                    "source": source,
                    "verification": { "hash": format!("sha512-{}", f.sha512) },
                }),
            );
            m.insert("mode".into(), json!(f.mode));
            Value::Object(m)
        })
        .collect();
    let links: Vec<Value> = c
        .links
        .iter()
        .map(|l| {
            let mut m = node(&l.path);
            m.insert("target".into(), json!(l.target));
            Value::Object(m)
        })
        .collect();
    let units: Vec<Value> = c.units.iter().map(unit).collect();
    let mut storage = Map::new();
    if !files.is_empty() {
        storage.insert("files".into(), Value::Array(files));
    }
    if !links.is_empty() {
        storage.insert("links".into(), Value::Array(links));
    }
    json!({
        "ignition": { "version": spec.as_str() },
        "storage": storage,
        "systemd": { "units": units },
    })
}

/// A unit; its shape is the same in spec 2.2 and 3.x.
pub(super) fn unit(u: &Unit) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(u.name));
    if u.enabled {
        m.insert("enabled".into(), json!(true));
    }
    if u.mask {
        m.insert("mask".into(), json!(true));
    }
    if let Some(c) = &u.contents {
        m.insert("contents".into(), json!(c));
    }
    if !u.dropins.is_empty() {
        let d: Vec<Value> = u
            .dropins
            .iter()
            .map(|d| json!({ "name": d.name, "contents": d.contents }))
            .collect();
        m.insert("dropins".into(), Value::Array(d));
    }
    Value::Object(m)
}
