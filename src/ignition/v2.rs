//! Spec 2.2.0 (Ignition v0.x): `filesystem: "root"` on every node, sha512 hashes only,
//! and no `compression` on `data:` URLs (it fails at run time there).

use serde_json::{json, Map, Value};

use super::{data_url, Config, Source, SpecVersion};

pub(super) fn render(c: &Config) -> Value {
    let files: Vec<Value> = c
        .files
        .iter()
        .map(|f| {
            let source = match &f.source {
                Source::Inline(b) => data_url(b),
                Source::Url(u) => u.clone(),
            };
            json!({
                "filesystem": "root",
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
        .map(|l| {
            json!({
                "filesystem": "root",
                "path": l.path,
                "overwrite": true,
                "target": l.target,
            })
        })
        .collect();
    let units: Vec<Value> = c.units.iter().map(super::v3::unit).collect();
    let mut storage = Map::new();
    if !files.is_empty() {
        storage.insert("files".into(), Value::Array(files));
    }
    if !links.is_empty() {
        storage.insert("links".into(), Value::Array(links));
    }
    json!({
        "ignition": { "version": SpecVersion::V2_2.as_str() },
        "storage": storage,
        "systemd": { "units": units },
    })
}
