//! The `--json` reports of `inject` and `verify`: one object with what a CI job asserts
//! on (docs/inject.md lists the fields). Digests are `ALGORITHM:HEX`, as everywhere in
//! the JSON (docs/json.md).

use serde_json::{json, Value};

use crate::image::ImageInfo;
use crate::inject::InjectReport;
use crate::release::Release;
use crate::verify::VerifyReport;
use crate::warnings;

fn image_json(i: &ImageInfo) -> Value {
    json!({
        "reference": i.reference,
        "manifest_digest": i.manifest_digest.as_ref().map(|d| d.to_string()),
        "config_digest": i.config_digest.to_string(),
        "platform": i.platform.to_string(),
        "served_by": i.served_by,
    })
}

fn release_json(r: &Release) -> Value {
    json!({
        "reference": r.reference,
        "digest": r.digest.as_ref().map(|d| d.to_string()),
        "manifest_digest": r.manifest_digest.as_ref().map(|d| d.to_string()),
        "version": r.version,
        "mco_image": r.mco_image,
        "mco_digest": r.mco_digest.to_string(),
        "served_by": r.served_by,
    })
}

/// `sha256:HEX` (or another algorithm) of a bare hex digest; one already in that form
/// is kept.
fn digest(algorithm: &str, hex: &str) -> String {
    if hex.contains(':') {
        hex.to_string()
    } else {
        format!("{algorithm}:{hex}")
    }
}

/// The report of one `inject` run; `config` names the output (`-` for stdout).
pub fn inject_json(r: &InjectReport, config: &str, payload_url: Option<&str>) -> Value {
    let (os_key, os_major) = r.target.os.key();
    json!({
        "binary": { "path": r.chosen, "sha256": digest("sha256", &r.binary_sha256) },
        "image": image_json(&r.image),
        "release": r.release.as_ref().map(release_json),
        "target": {
            "bootimage": r.target.bootimage.to_string(),
            "bootimage_named": r.bootimage,
            os_key: os_major,
            "spec": r.target.spec.as_str(),
        },
        "config": {
            "path": config,
            "size": r.config_bytes,
            "sha256": digest("sha256", &r.config_sha256),
        },
        "payload": { "sha512": digest("sha512", &r.payload_sha512), "url": payload_url },
        "boots": boots_json(r),
        "base": r.base.as_ref().map(|b| json!({
            "secret": b.secret.as_ref().map(|s| json!({
                "name": s.name,
                "namespace": s.namespace,
                "key": s.key,
            })),
            "spec": b.spec,
            "written_spec": b.written_spec.as_str(),
            "translated": b.translated,
        })),
        "secret": r.secret.as_ref().map(|(name, path)| json!({
            "name": name,
            "namespace": crate::userdata::NAMESPACE,
            "path": path,
        })),
        "cluster_notes": r.cluster_notes,
        "notes": r.notes,
        "warnings": warnings::to_json(&r.warnings),
        "tool": format!("mcd-inject {}", env!("CARGO_PKG_VERSION")),
    })
}

/// Which build runs on which boot of the first boot, with the verdicts.
fn boots_json(r: &InjectReport) -> Value {
    let b = &r.boots;
    let (os_key, os_major) = r.target.os.key();
    let verdict =
        |v: &crate::choose::rules::Verdict| json!({ "fits": v.compatible, "because": v.reasons });
    let later = match (&b.cluster_os, &b.second) {
        (None, _) => Value::Null,
        (Some(c), None) => json!({
            "os": c,
            "binary": { "path": r.chosen, "sha256": digest("sha256", &r.binary_sha256) },
            "verdict": b.first_on_cluster.as_ref().map(verdict),
        }),
        (Some(c), Some(s)) => json!({
            "os": c,
            "binary": { "path": s.path, "sha256": digest("sha256", &s.sha256) },
            "verdict": verdict(&s.verdict),
            "first_binary_verdict": b.first_on_cluster.as_ref().map(verdict),
            "payload": {
                "path": s.payload_path,
                "sha512": digest("sha512", &s.payload_sha512),
                "url": s.payload_url,
            },
        }),
    };
    let closure: Vec<Value> = b
        .closure
        .iter()
        .map(|(name, path, sha)| json!({ "name": name, "path": path, "sha256": digest("sha256", sha) }))
        .collect();
    json!({
        "first": {
            "os": { "bootimage": r.target.bootimage.to_string(), os_key: os_major },
            "binary": { "path": r.chosen, "sha256": digest("sha256", &r.binary_sha256) },
            "verdict": verdict(&b.first_verdict),
            "closure": (!closure.is_empty()).then_some(closure),
        },
        "cluster_os": later,
    })
}

/// The report of a `verify` run on something that is not a config it can read (missing,
/// empty, truncated, other JSON): not ok, with why as its one problem.
pub fn verify_unreadable_json(config: &str, problem: &str) -> Value {
    json!({
        "config": config,
        "ok": false,
        "spec": null,
        "binary_sha256": null,
        "provenance": null,
        "passed": [],
        "problems": [problem],
        "warnings": [],
    })
}

/// The config's provenance record as a report shows it: its digests, bare hex in the
/// record on the node (`binary_sha256`, each build's, each closure file's `sha256`), as
/// `sha256:HEX` like every digest of a report. The rest is the record's own.
fn provenance_json(record: &Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    let algorithm = [("sha256", 64), ("sha512", 128)]
                        .into_iter()
                        .find(|(a, _)| k.ends_with(a));
                    match (algorithm, v.as_str()) {
                        (Some((a, len)), Some(hex)) if is_hex(hex, len) => {
                            *v = Value::from(digest(a, hex))
                        }
                        _ => walk(v),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    fn is_hex(s: &str, len: usize) -> bool {
        s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
    }
    let mut v = record.clone();
    walk(&mut v);
    v
}

/// The report of one `verify` run.
pub fn verify_json(r: &VerifyReport, config: &str) -> Value {
    json!({
        "config": config,
        "ok": r.problems.is_empty(),
        "spec": r.spec,
        "binary_sha256": r.binary_sha256.as_deref().map(|h| digest("sha256", h)),
        "provenance": r.provenance.as_ref().map(provenance_json),
        "passed": r.passed,
        "problems": r.problems,
        "warnings": warnings::to_json(&r.warnings),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_digests_get_their_algorithm_and_nothing_else_changes() {
        let hex = "e9babf8af8e4380c0cf4748126167bfd036df441612df33c682937007b472287";
        let record = json!({
            "manifest_digest": format!("sha256:{hex}"),
            "binary_path": "/usr/bin/machine-config-daemon",
            "binary_sha256": hex,
            "builds": [{"binary_sha256": hex, "rhel": 8,
                        "closure": [{"name": "libc.so.6", "sha256": hex}]}],
            "tool": "mcd-inject 0.1.0",
        });
        let d = format!("sha256:{hex}");
        let want = json!({
            "manifest_digest": d,
            "binary_path": "/usr/bin/machine-config-daemon",
            "binary_sha256": d,
            "builds": [{"binary_sha256": d, "rhel": 8,
                        "closure": [{"name": "libc.so.6", "sha256": d}]}],
            "tool": "mcd-inject 0.1.0",
        });
        assert_eq!(provenance_json(&record), want);
    }
}
