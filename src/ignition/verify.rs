//! Checks a config this tool wrote (or one merged from it): valid for its spec, payload
//! hashes consistent, units coherent. What the binary must fit is checked by the
//! caller, which knows the target and the image.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};
use tempfile::NamedTempFile;

use super::units::{
    script_sha256, FIRSTBOOT_UNIT, INSTALL_UNIT, LINK_PATH, PAYLOAD_PATH, PIVOT_UNIT,
    PROVENANCE_PATH, PULL_UNIT, REMOVED_MCO_UNITS, RUN_BINARY, SCRIPT_PATH,
};
use super::{decode_data_url, parse_json, schema, version_of, SpecVersion};

/// What a config holds, once checked.
pub struct Verified {
    pub spec: SpecVersion,
    /// The decompressed binary, when the payload could be read.
    pub binary: Option<NamedTempFile>,
    pub binary_sha256: Option<String>,
    pub provenance: Option<Value>,
    /// Units the config masks.
    pub masked: Vec<String>,
    /// Each check that passed.
    pub passed: Vec<String>,
    /// Each check that failed.
    pub problems: Vec<String>,
}

fn files(cfg: &Value) -> impl Iterator<Item = &Value> {
    cfg["storage"]["files"].as_array().into_iter().flatten()
}

fn file<'a>(cfg: &'a Value, path: &str) -> Option<&'a Value> {
    files(cfg).find(|f| f["path"] == path)
}

fn unit<'a>(cfg: &'a Value, name: &str) -> Option<&'a Value> {
    cfg["systemd"]["units"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|u| u["name"] == name)
}

/// Reads a file entry's bytes (inline, or from `remote` for a URL) and checks its
/// verification hash.
fn contents(
    f: &Value,
    spec: SpecVersion,
    remote: Option<&Path>,
    v: &mut Verified,
) -> Result<Option<Vec<u8>>> {
    let path = f["path"].as_str().unwrap_or("?");
    let c = &f["contents"];
    let Some(source) = c["source"].as_str() else {
        v.problems.push(format!("{path}: no contents source"));
        return Ok(None);
    };
    if !c["compression"].is_null() {
        v.problems.push(format!(
            "{path}: has a compression field; the payload must be stored as is{}",
            if spec.is_v2() {
                " (spec 2.x fails at run time with compression on data: URLs)"
            } else {
                ""
            }
        ));
    }
    let bytes = if source.starts_with("data:") {
        decode_data_url(source).with_context(|| format!("decoding {path}"))?
    } else if let Some(r) = remote {
        std::fs::read(r).with_context(|| format!("reading {}", r.display()))?
    } else {
        v.problems.push(format!(
            "{path}: served from {source}; pass --payload FILE to check it"
        ));
        return Ok(None);
    };
    match c["verification"]["hash"].as_str() {
        Some(h) => match h.split_once('-') {
            Some(("sha512", hex)) => {
                let got = hex::encode(Sha512::digest(&bytes));
                if got == hex {
                    v.passed.push(format!("{path}: sha512 matches"));
                } else {
                    v.problems
                        .push(format!("{path}: sha512 is {got}, the config says {hex}"));
                }
            }
            _ => v.problems.push(format!(
                "{path}: verification hash {h:?} is not sha512 (spec 2.x knows only sha512)"
            )),
        },
        None => v.problems.push(format!("{path}: no verification hash")),
    }
    Ok(Some(bytes))
}

/// Decompresses a gzip payload into a temp file, returning it and its sha256.
fn gunzip(gz: &[u8], spool: &Path) -> Result<(NamedTempFile, String)> {
    let mut out = NamedTempFile::new_in(spool).context("creating a temp file")?;
    let mut dec = flate2::read::MultiGzDecoder::new(gz);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = dec.read(&mut buf).context("decompressing the payload")?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])?;
    }
    out.flush()?;
    Ok((out, hex::encode(hasher.finalize())))
}

fn has_line(contents: &str, line: &str) -> bool {
    contents.lines().any(|l| l.trim() == line)
}

/// Checks a config. `remote_payload` is the served payload for remote mode.
pub fn verify(
    name: &str,
    bytes: &[u8],
    remote_payload: Option<&Path>,
    spool: &Path,
) -> Result<Verified> {
    let cfg = parse_json(name, bytes)?;
    let version = version_of(&cfg).context("no ignition.version")?;
    let spec: SpecVersion = version.parse()?;
    let mut v = Verified {
        spec,
        binary: None,
        binary_sha256: None,
        provenance: None,
        masked: Vec::new(),
        passed: Vec::new(),
        problems: Vec::new(),
    };
    let report = schema::validate(&cfg, spec);
    if report.is_clean() {
        v.passed
            .push(format!("valid spec {spec} (schema and strict keys)"));
    }
    v.problems.extend(report.errors);
    v.problems.extend(
        report
            .unknown_keys
            .into_iter()
            .map(|k| format!("{k}: not a key of spec {spec}")),
    );
    if spec.is_v2() {
        for f in files(&cfg) {
            if f["filesystem"] != "root" {
                v.problems.push(format!(
                    "{}: spec 2.x files need filesystem \"root\"",
                    f["path"]
                ));
            }
        }
    }

    let payload = match file(&cfg, PAYLOAD_PATH) {
        Some(f) => contents(f, spec, remote_payload, &mut v)?,
        None => {
            v.problems.push(format!("no payload file {PAYLOAD_PATH}"));
            None
        }
    };
    let script_hash = match file(&cfg, SCRIPT_PATH) {
        Some(f) => contents(f, spec, None, &mut v)?.and_then(|s| {
            let s = String::from_utf8_lossy(&s).into_owned();
            let h = script_sha256(&s).map(str::to_string);
            if h.is_none() {
                v.problems
                    .push(format!("{SCRIPT_PATH}: no expected_sha256 line"));
            }
            h
        }),
        None => {
            v.problems.push(format!("no install script {SCRIPT_PATH}"));
            None
        }
    };
    let unpacked = match payload {
        Some(gz) => match gunzip(&gz, spool) {
            Ok(u) => Some(u),
            Err(e) => {
                v.problems
                    .push(format!("{PAYLOAD_PATH}: not a gzip payload: {e:#}"));
                None
            }
        },
        None => None,
    };
    if let Some((tmp, sha)) = unpacked {
        match &script_hash {
            Some(h) if *h == sha => v
                .passed
                .push(format!("payload decompresses to the script's sha256 {sha}")),
            Some(h) => v.problems.push(format!(
                "payload decompresses to sha256 {sha}, the install script expects {h}"
            )),
            None => {}
        }
        v.binary = Some(tmp);
        v.binary_sha256 = Some(sha);
    }
    if let Some(f) = file(&cfg, PROVENANCE_PATH) {
        if let Some(p) = contents(f, spec, None, &mut v)? {
            match serde_json::from_slice::<Value>(&p) {
                Ok(p) => {
                    if let (Some(a), Some(b)) = (p["binary_sha256"].as_str(), &v.binary_sha256) {
                        if a != b {
                            v.problems.push(format!(
                                "{PROVENANCE_PATH} names sha256 {a}, the payload is {b}"
                            ));
                        }
                    }
                    v.provenance = Some(p);
                }
                Err(e) => v
                    .problems
                    .push(format!("{PROVENANCE_PATH}: invalid JSON: {e}")),
            }
        }
    }

    check_units(&cfg, &mut v);
    let link = cfg["storage"]["links"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["path"] == LINK_PATH);
    match link {
        Some(l) if l["target"] == RUN_BINARY && l["hard"] != true => v
            .passed
            .push(format!("symlink {LINK_PATH} -> {RUN_BINARY}")),
        Some(l) => v
            .problems
            .push(format!("{LINK_PATH} points to {}", l["target"])),
        None => v.problems.push(format!("no symlink {LINK_PATH}")),
    }
    Ok(v)
}

fn check_units(cfg: &Value, v: &mut Verified) {
    for u in cfg["systemd"]["units"].as_array().into_iter().flatten() {
        let name = u["name"].as_str().unwrap_or("?");
        if u["mask"] == true {
            v.masked.push(name.to_string());
        }
        let contents = u["contents"].as_str();
        if u["enabled"] == true && !contents.is_some_and(|c| has_line(c, "[Install]")) {
            v.problems
                .push(format!("{name} is enabled but has no [Install] section"));
        }
        if REMOVED_MCO_UNITS.contains(&name) && (contents.is_some() || u["enabled"] == true) {
            v.problems.push(format!(
                "{name} is still in the config; it would fetch or run another MCD"
            ));
        }
    }
    let script_exec = format!("ExecStart=/bin/bash {SCRIPT_PATH}");
    match unit(cfg, INSTALL_UNIT) {
        Some(u) if u["enabled"] == true => {
            let c = u["contents"].as_str().unwrap_or("");
            if has_line(c, &script_exec) && has_line(c, &format!("Before={FIRSTBOOT_UNIT}")) {
                v.passed.push(format!(
                    "{INSTALL_UNIT} runs the script before the firstboot unit"
                ));
            } else {
                v.problems.push(format!(
                    "{INSTALL_UNIT} must have {script_exec:?} and Before={FIRSTBOOT_UNIT}"
                ));
            }
        }
        _ => v
            .problems
            .push(format!("{INSTALL_UNIT} is missing or not enabled")),
    }
    match unit(cfg, FIRSTBOOT_UNIT) {
        Some(u) if u["enabled"] == true => {
            let c = u["contents"].as_str().unwrap_or("");
            let need = [
                format!("ExecStart={RUN_BINARY} firstboot-complete-machineconfig"),
                format!("After={INSTALL_UNIT}"),
                format!("Requires={INSTALL_UNIT}"),
            ];
            let missing: Vec<&String> = need.iter().filter(|l| !has_line(c, l)).collect();
            if missing.is_empty() {
                v.passed.push(format!(
                    "{FIRSTBOOT_UNIT} runs {RUN_BINARY} after {INSTALL_UNIT}"
                ));
            } else {
                v.problems
                    .push(format!("{FIRSTBOOT_UNIT} lacks {missing:?}"));
            }
        }
        _ => v
            .problems
            .push(format!("{FIRSTBOOT_UNIT} is missing or not enabled")),
    }
    if let Some(u) = unit(cfg, PULL_UNIT) {
        if u["mask"] == true {
            v.problems.push(format!(
                "{PULL_UNIT} is masked; units that require it would fail"
            ));
        }
    }
}

/// Whether the config switches off the pre-4.6 first-boot paths.
pub fn masks_legacy(v: &Verified) -> bool {
    v.masked.iter().any(|m| m == PIVOT_UNIT)
}
