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

/// The stream metadata (or `rhcos.json`) a file holds, itself or in a ConfigMap; and
/// where, for messages (`the ConfigMap's data.stream, `, or empty).
fn document(file: &mut File) -> Result<(Value, &'static str), Bad> {
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
    Ok((doc, within))
}

/// The build the stream names for `arch`.
pub(super) fn read(file: &mut File, arch: &str) -> Result<(String, String), Bad> {
    let (doc, within) = document(file)?;
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

/// The build whose AWS image `ami` is: the `buildid` of an `rhcos.json` whose `amis`
/// (4.1 to 4.7) list it, or the `release` of the region of
/// `architectures.ARCH.images.aws.regions` (stream metadata) whose `image` it is; only in
/// `region`, when given.
pub(super) fn read_ami(
    file: &mut File,
    arch: &str,
    ami: &str,
    region: Option<&str>,
) -> Result<(String, String), Bad> {
    let (doc, within) = document(file)?;
    let name = coreos_arch(arch);
    // (region, build, where)
    let mut hits: Vec<(String, Option<String>, String)> = Vec::new();
    if let Some(amis) = doc.get("amis").and_then(Value::as_object) {
        let build = doc
            .get("buildid")
            .and_then(Value::as_str)
            .map(str::to_string);
        for (r, e) in amis {
            if e.get("hvm").and_then(Value::as_str) == Some(ami) {
                hits.push((r.clone(), build.clone(), format!("{within}amis.{r}.hvm")));
            }
        }
    } else if let Some(regions) = doc
        .pointer(&format!("/architectures/{name}/images/aws/regions"))
        .and_then(Value::as_object)
    {
        for (r, e) in regions {
            if e.get("image").and_then(Value::as_str) == Some(ami) {
                let build = e.get("release").and_then(Value::as_str).map(str::to_string);
                hits.push((
                    r.clone(),
                    build,
                    format!("{within}architectures.{name}.images.aws.regions.{r}"),
                ));
            }
        }
    } else {
        return bad(format!(
            "no AMIs in it: neither `amis` (rhcos.json) nor architectures.{name}.images.aws.regions (stream metadata)"
        ));
    }
    hits.retain(|h| quotable(&h.0));
    if let Some(r) = region {
        let elsewhere: Vec<String> = hits.iter().map(|h| h.0.clone()).collect();
        hits.retain(|h| h.0 == r);
        if hits.is_empty() && !elsewhere.is_empty() {
            return bad(format!(
                "{ami} is not the AWS image of region {r} (--region) in it, but of {}",
                elsewhere.join(", ")
            ));
        }
    }
    let mut builds: Vec<&Option<String>> = hits.iter().map(|h| &h.1).collect();
    builds.sort();
    builds.dedup();
    match (builds.len(), hits.first()) {
        (0, _) | (_, None) => bad(format!("no region's AWS image in it is {ami}")),
        (1, Some((_, Some(id), at))) => checked(id, at.clone()),
        (1, Some((_, None, at))) => bad(format!("{at} names no build")),
        _ => {
            bad(format!(
            "{ami} is the AWS image of several regions naming different builds ({}): give --region",
            hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>().join(", ")
        ))
        }
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
