//! Stream metadata, as the installer prints it (`openshift-install coreos
//! print-stream-json`, the format of coreos/stream-metadata-go) and as the cluster keeps it
//! (the `stream` key of the `coreos-bootimages` ConfigMap in
//! `openshift-machine-config-operator`, printed by `oc get -o json` or `-o yaml`); also the
//! installer's older `rhcos.json` (4.1 to 4.7), whose `buildid` names the build.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use serde_json::Value;

use super::{bad, quotable, Bad};

/// Stream metadata is tens of KiB; a ConfigMap holding it a little more.
const LIMIT: u64 = 16 << 20;

/// Whether the start of a file looks like JSON or a YAML document.
pub(super) fn looks_like(head: &[u8]) -> bool {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // The head may end inside a multi-byte character.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return false,
    };
    let t = text.trim_start_matches('\u{feff}').trim_start();
    t.starts_with('{')
        || t.starts_with("---")
        || t.starts_with("apiVersion:")
        || t.starts_with("kind:")
}

/// The OCI architecture's name in stream metadata.
fn coreos_arch(oci: &str) -> &str {
    match oci {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        other => other,
    }
}

/// The build the stream names for `arch`.
pub(super) fn read(file: &mut File, arch: &str) -> Result<(String, String), Bad> {
    file.seek(SeekFrom::Start(0))?;
    let mut text = String::new();
    if file.take(LIMIT + 1).read_to_string(&mut text).is_err() {
        return bad("not UTF-8 text");
    }
    if text.len() as u64 > LIMIT {
        return bad(format!(
            "larger than {} MiB, more than stream metadata holds",
            LIMIT >> 20
        ));
    }
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(json) => match serde_yaml_ng::from_str(&text) {
            Ok(v) => v,
            Err(_) => {
                return bad(format!(
                    "not valid JSON (line {}, column {}: {}) nor a YAML document",
                    json.line(),
                    json.column(),
                    json_class(&json)
                ))
            }
        },
    };
    let (doc, within) = match doc.get("kind").and_then(Value::as_str) {
        Some("ConfigMap") => {
            let Some(stream) = doc.pointer("/data/stream").and_then(Value::as_str) else {
                return bad(
                    "a ConfigMap without data.stream (coreos-bootimages carries the stream there)",
                );
            };
            match serde_json::from_str::<Value>(stream) {
                Ok(v) => (v, "the ConfigMap's data.stream, "),
                Err(e) => {
                    return bad(format!(
                        "the ConfigMap's data.stream is not JSON (line {}, column {})",
                        e.line(),
                        e.column()
                    ))
                }
            }
        }
        Some(_) => return bad("a Kubernetes object that is not a ConfigMap"),
        None => (doc, ""),
    };
    if let Some(id) = doc.get("buildid").and_then(Value::as_str) {
        return checked(id, format!("{within}buildid"));
    }
    let Some(arches) = doc.get("architectures").and_then(Value::as_object) else {
        return bad("no `architectures` (stream metadata) nor `buildid` (rhcos.json)");
    };
    let name = coreos_arch(arch);
    let Some(entry) = arches.get(name) else {
        let known: Vec<&str> = arches
            .keys()
            .map(String::as_str)
            .filter(|k| quotable(k))
            .collect();
        return bad(format!(
            "no architecture {name} (from --platform); it has {}",
            known.join(", ")
        ));
    };
    let releases: BTreeSet<&str> = entry
        .get("artifacts")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|a| a.values())
        .filter_map(|a| a.get("release").and_then(Value::as_str))
        .collect();
    match releases.len() {
        0 => bad(format!("architectures.{name}.artifacts name no release")),
        1 => checked(
            releases.first().expect("one release"),
            format!("{within}architectures.{name}.artifacts"),
        ),
        _ => bad(format!(
            "architectures.{name}.artifacts name {} releases, not one",
            releases.len()
        )),
    }
}

fn checked(id: &str, from: String) -> Result<(String, String), Bad> {
    if quotable(id) {
        Ok((id.to_string(), from))
    } else {
        bad(format!("{from} is not a build ID"))
    }
}

/// What kind of JSON error, without quoting the input.
fn json_class(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Eof => "it ends early",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Io => "unreadable",
    }
}
