//! Specs 3.0.0 to 3.4.0 (Ignition v2.x): no `filesystem`; `overwrite` is set because
//! it defaults to false there. The subset written here is the same in all of them.

use serde_json::{json, Map, Value};

use super::{data_url, Config, Source, SpecVersion, Unit};

pub(super) fn render(c: &Config, spec: SpecVersion) -> Value {
    let files: Vec<Value> = c
        .files
        .iter()
        .map(|f| {
            let source = match &f.source {
                Source::Inline(b) => data_url(b),
                Source::Url(u) => u.clone(),
            };
            json!({
                "path": f.path,
                "overwrite": true,
                "contents": {
                    "source": source,
                    "verification": { "hash": format!("sha512-{}", f.sha512) },
                },
                "mode": f.mode,
            })
        })
        .collect();
    let links: Vec<Value> = c
        .links
        .iter()
        .map(|l| json!({ "path": l.path, "overwrite": true, "target": l.target }))
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
