//! Checks a config this tool wrote (or one merged from it): valid for its spec, payload
//! hashes consistent, units coherent. What the binary must fit is checked by the
//! caller, which knows the target and the image.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};
use tempfile::NamedTempFile;

use super::document::{report_lines, Document, Kind};
use super::node::{self, NodeView, UnitView};
use super::schema::Schema;
use super::units::{
    self, firstboot_dropin, install_script, install_unit, other_payload_path, persist_nics_script,
    pull_dropin, script_hashes, ScriptHashes, DROPIN, FIRSTBOOT_ARGV, FIRSTBOOT_UNIT, INSTALL_UNIT,
    LINK_PATH, PAYLOAD_PATH, PERSIST_NICS_SCRIPT_PATH, PIVOT_UNIT, PROVENANCE_PATH, PULL_UNIT,
    REEXEC_ENV, REMOVED_MCO_UNITS, RUN_BINARY, SCRIPT_PATH,
};
use super::{decode_data_url, SpecVersion};

/// What a config holds, once checked.
pub struct Verified {
    pub spec: SpecVersion,
    /// The decompressed binary, when the payload could be read.
    pub binary: Option<NamedTempFile>,
    pub binary_sha256: Option<String>,
    /// The build for hosts of another RHEL major, when the config carries one: that
    /// major, the binary decompressed, and its sha256.
    pub other: Option<(u32, NamedTempFile, String)>,
    /// The first build's closure, when the config carries one: each file by the name
    /// it is installed as, decompressed, with its sha256 (the loader first).
    pub closure: Vec<(String, NamedTempFile, String)>,
    /// The RHEL majors whose hosts the install script gives the build without its
    /// closure.
    pub closure_native: Vec<u32>,
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

/// The entries `verify` reads whole: ours, and MCO's units that ours change.
fn is_checked(kind: Kind, id: &str) -> bool {
    match kind {
        Kind::Files => units::is_our_file(id),
        Kind::Links => id == LINK_PATH,
        Kind::Units => [INSTALL_UNIT, PULL_UNIT, FIRSTBOOT_UNIT].contains(&id),
        Kind::Directories => false,
    }
}

/// Checks a config. `remote_payload` is the served payload for remote mode. The config
/// is read lean ([`Document`]): every entry is checked one at a time, and only the
/// entries this tool writes are held as values.
pub fn verify(
    name: &str,
    bytes: &[u8],
    remote_payload: Option<&Path>,
    spool: &Path,
) -> Result<Verified> {
    let doc = Document::parse(name, bytes)?;
    let version = doc.version().context("no ignition.version")?;
    let spec: SpecVersion = version.parse()?;
    let mut v = Verified {
        spec,
        binary: None,
        binary_sha256: None,
        other: None,
        closure: Vec::new(),
        closure_native: Vec::new(),
        provenance: None,
        masked: Vec::new(),
        passed: Vec::new(),
        problems: Vec::new(),
    };
    check_spec(&doc, spec, &mut v);
    let cfg = doc.view(is_checked);
    check_modes(&doc, &cfg, spec, &mut v);
    let payload = match file(&cfg, PAYLOAD_PATH) {
        Some(f) => contents(f, spec, remote_payload, &mut v)?,
        None => {
            v.problems.push(format!("no payload file {PAYLOAD_PATH}"));
            None
        }
    };
    let hashes = check_script(&cfg, spec, &mut v)?;
    let first = check_binary(
        PAYLOAD_PATH,
        payload,
        hashes.as_ref().map(|h| h.first.as_str()),
        spool,
        &mut v,
    );
    if let Some((tmp, sha)) = first {
        v.binary = Some(tmp);
        v.binary_sha256 = Some(sha);
    }
    check_persist_nics_script(&cfg, spec, &mut v)?;
    check_other(&cfg, spec, hashes.as_ref(), remote_payload, spool, &mut v)?;
    check_closure(&cfg, spec, hashes.as_ref(), remote_payload, spool, &mut v)?;
    check_provenance(&cfg, spec, &mut v)?;
    let node = node::view(&doc, &node::is_our_entry);
    check_node(&node, &mut v);
    check_units(&doc, &cfg, &node, &mut v);
    check_firstboot(&cfg, &node, &mut v);
    check_link(&cfg, &mut v);
    Ok(v)
}

/// The schema of the config's spec, entry by entry, and Ignition's rules.
fn check_spec(doc: &Document, spec: SpecVersion, v: &mut Verified) {
    let report = doc.validate(&Schema::load(spec));
    if report.is_clean() {
        v.passed
            .push(format!("valid spec {spec} (schema and strict keys)"));
    }
    v.problems.extend(report_lines(report, |k| {
        format!("{k}: not a key of spec {spec}")
    }));
    v.problems.extend(doc.rules());
}

/// The modes of our files, and (spec 2.x) every file's filesystem.
fn check_modes(doc: &Document, cfg: &Value, spec: SpecVersion, v: &mut Verified) {
    for f in files(cfg) {
        let path = f["path"].as_str().unwrap_or_default();
        let mode = match path {
            SCRIPT_PATH | PERSIST_NICS_SCRIPT_PATH => 0o755,
            PROVENANCE_PATH => 0o644,
            p if units::is_payload_path(p) => 0o600,
            _ => continue,
        };
        {
            if f["mode"].as_u64() != Some(mode) {
                v.problems.push(format!(
                    "{path}: mode {}, this version writes {mode:o}",
                    f["mode"]
                        .as_u64()
                        .map_or("unset".to_string(), |m| format!("{m:o}"))
                ));
            }
        }
    }
    if spec.is_v2() {
        for f in doc.each(Kind::Files) {
            if f["filesystem"] != "root" {
                v.problems.push(format!(
                    "{}: spec 2.x files need filesystem \"root\"",
                    f["path"]
                ));
            }
        }
    }
}

/// The install script is this version's; returns the hashes it expects.
fn check_script(cfg: &Value, spec: SpecVersion, v: &mut Verified) -> Result<Option<ScriptHashes>> {
    let Some(f) = file(cfg, SCRIPT_PATH) else {
        v.problems.push(format!("no install script {SCRIPT_PATH}"));
        return Ok(None);
    };
    Ok(contents(f, spec, None, v)?.and_then(|s| {
        let s = String::from_utf8_lossy(&s).into_owned();
        let h = script_hashes(&s);
        match &h {
            None => v.problems.push(format!(
                "{SCRIPT_PATH}: no expected_sha256, other_rhel and other_sha256 lines of this version"
            )),
            Some(h) if s != install_script(h) => v.problems.push(format!(
                "{SCRIPT_PATH} differs from the script this version writes"
            )),
            Some(_) => v
                .passed
                .push(format!("{SCRIPT_PATH} is this version's script")),
        }
        h
    }))
}

/// The NIC-persisting script is this version's.
fn check_persist_nics_script(cfg: &Value, spec: SpecVersion, v: &mut Verified) -> Result<()> {
    let path = PERSIST_NICS_SCRIPT_PATH;
    let Some(f) = file(cfg, path) else {
        v.problems.push(format!("no NIC-persisting script {path}"));
        return Ok(());
    };
    if let Some(s) = contents(f, spec, None, v)? {
        if s == persist_nics_script().into_bytes() {
            v.passed.push(format!("{path} is this version's script"));
        } else {
            v.problems.push(format!(
                "{path} differs from the script this version writes"
            ));
        }
    }
    Ok(())
}

/// A payload decompresses to the binary the script expects; returns the binary and
/// its sha256.
fn check_binary(
    path: &str,
    payload: Option<Vec<u8>>,
    script_hash: Option<&str>,
    spool: &Path,
    v: &mut Verified,
) -> Option<(NamedTempFile, String)> {
    let gz = payload?;
    let (tmp, sha) = match gunzip(&gz, spool) {
        Ok(u) => u,
        Err(e) => {
            v.problems
                .push(format!("{path}: not a gzip payload: {e:#}"));
            return None;
        }
    };
    match script_hash {
        Some(h) if h == sha => v
            .passed
            .push(format!("{path} decompresses to the script's sha256 {sha}")),
        Some(h) => v.problems.push(format!(
            "{path} decompresses to sha256 {sha}, the install script expects {h}"
        )),
        None => {}
    }
    Some((tmp, sha))
}

/// The build for another RHEL's hosts, when the script names one: its payload is in
/// the config (or served, beside `remote`) and decompresses to the script's sha256.
fn check_other(
    cfg: &Value,
    spec: SpecVersion,
    hashes: Option<&ScriptHashes>,
    remote: Option<&Path>,
    spool: &Path,
    v: &mut Verified,
) -> Result<()> {
    let named = hashes.and_then(|h| h.other.clone());
    let carried: Vec<&str> = files(cfg)
        .filter_map(|f| f["path"].as_str())
        .filter(|p| *p != PAYLOAD_PATH && units::is_payload_path(p))
        .filter(|p| !p.starts_with(units::CLOSURE_DIR))
        .collect();
    let Some((rhel, sha)) = named else {
        for p in carried {
            v.problems
                .push(format!("{p}: a payload the install script does not name"));
        }
        return Ok(());
    };
    let path = other_payload_path(rhel);
    for p in carried.iter().filter(|p| **p != path) {
        v.problems
            .push(format!("{p}: a payload the install script does not name"));
    }
    let Some(f) = file(cfg, &path) else {
        v.problems.push(format!(
            "the install script names a build for RHEL {rhel} hosts, but the config has no {path}"
        ));
        return Ok(());
    };
    let served =
        remote.map(|r| std::path::PathBuf::from(units::other_name(&r.to_string_lossy(), rhel)));
    let payload = contents(f, spec, served.as_deref(), v)?;
    if let Some((tmp, got)) = check_binary(&path, payload, Some(&sha), spool, v) {
        v.other = Some((rhel, tmp, got));
    }
    Ok(())
}

/// The first build's closure, when the script names one: each file's payload is in the
/// config (or served, beside `remote`) and decompresses to the script's sha256, and the
/// config carries no other closure file.
fn check_closure(
    cfg: &Value,
    spec: SpecVersion,
    hashes: Option<&ScriptHashes>,
    remote: Option<&Path>,
    spool: &Path,
    v: &mut Verified,
) -> Result<()> {
    let named = hashes.and_then(|h| h.closure.clone());
    let names: Vec<String> = named
        .iter()
        .flat_map(|c| c.files.iter().map(|(n, _)| units::closure_payload_path(n)))
        .collect();
    for p in files(cfg)
        .filter_map(|f| f["path"].as_str())
        .filter(|p| p.starts_with(units::CLOSURE_DIR) && !names.iter().any(|n| n == p))
    {
        v.problems.push(format!(
            "{p}: a closure file the install script does not name"
        ));
    }
    let Some(c) = named else {
        return Ok(());
    };
    v.closure_native = c.native_rhel.clone();
    let mut good = 0;
    for (name, sha) in &c.files {
        let path = units::closure_payload_path(name);
        let Some(f) = file(cfg, &path) else {
            v.problems.push(format!(
                "the install script names the closure file {name}, but the config has no {path}"
            ));
            continue;
        };
        let served = remote
            .map(|r| std::path::PathBuf::from(units::closure_name(&r.to_string_lossy(), name)));
        let Some(gz) = contents(f, spec, served.as_deref(), v)? else {
            continue;
        };
        match gunzip(&gz, spool) {
            Ok((tmp, got)) if got == *sha => {
                good += 1;
                v.closure.push((name.clone(), tmp, got));
            }
            Ok((_, got)) => v.problems.push(format!(
                "{path} decompresses to sha256 {got}, the install script expects {sha}"
            )),
            Err(e) => v
                .problems
                .push(format!("{path}: not a gzip payload: {e:#}")),
        }
    }
    if good == c.files.len() {
        v.passed.push(format!(
            "the {good} closure files decompress to the script's sha256s"
        ));
    }
    Ok(())
}

/// The provenance record parses and names the payload's binary.
fn check_provenance(cfg: &Value, spec: SpecVersion, v: &mut Verified) -> Result<()> {
    let Some(f) = file(cfg, PROVENANCE_PATH) else {
        return Ok(());
    };
    let Some(p) = contents(f, spec, None, v)? else {
        return Ok(());
    };
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
    Ok(())
}

/// Our symlink points to the installed binary.
fn check_link(cfg: &Value, v: &mut Verified) {
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
}

/// Every unit (masks, enablement, pre-4.6 MCO units), then our install unit and MCO's
/// pull unit.
fn check_units(doc: &Document, cfg: &Value, node: &NodeView, v: &mut Verified) {
    for u in doc.each(Kind::Units) {
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
    match unit(cfg, INSTALL_UNIT) {
        Some(u) if u["mask"] == true => v.problems.push(format!(
            "{INSTALL_UNIT} is masked: the binary would never be installed"
        )),
        Some(u) if u["enabled"] != true => {
            v.problems.push(format!("{INSTALL_UNIT} is not enabled"))
        }
        Some(u) if u["contents"].as_str() != Some(&install_unit()) => v.problems.push(format!(
            "{INSTALL_UNIT} differs from the unit this version writes"
        )),
        Some(u) if !dropins(u).is_empty() => v.problems.push(format!(
            "{INSTALL_UNIT} has drop-ins ({}); they could change how the binary is installed",
            dropins(u)
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(_) => v.passed.push(format!(
            "{INSTALL_UNIT} is this version's, enabled, without drop-ins"
        )),
        None => v.problems.push(format!("no {INSTALL_UNIT}")),
    }
    match unit(cfg, PULL_UNIT) {
        Some(u) if u["mask"] == true => v.problems.push(format!(
            "{PULL_UNIT} is masked; the firstboot unit requires it and would fail"
        )),
        Some(u)
            if dropin(u, DROPIN) == Some(&pull_dropin())
                && !unit_view(node, PULL_UNIT)
                    .effective("[Unit]", "ConditionPathExists")
                    .contains(&format!("!{PAYLOAD_PATH}")) =>
        {
            v.problems.push(format!(
                "{PULL_UNIT}: a drop-in after {DROPIN} clears its condition; the pull would run"
            ))
        }
        Some(u) if dropin(u, DROPIN) == Some(&pull_dropin()) => v.passed.push(format!(
            "{PULL_UNIT} is skipped while the payload is on the node (drop-in {DROPIN})"
        )),
        _ => v.problems.push(format!(
            "{PULL_UNIT} lacks this version's drop-in {DROPIN}: the cluster's pull unit would \
             pull the MCO image over the network at first boot"
        )),
    }
}

/// The drop-ins of a unit entry, by name.
fn dropins(u: &Value) -> Vec<(&str, &str)> {
    u["dropins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["name"].as_str().unwrap_or(""),
                d["contents"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

fn dropin<'a>(u: &'a Value, name: &str) -> Option<&'a str> {
    dropins(u)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| c)
}

/// A guarded unit as the node reads it (empty when the config has none).
fn unit_view(node: &NodeView, name: &str) -> UnitView {
    node.units.get(name).cloned().unwrap_or_default()
}

/// Entries outside `systemd.units` and our own that write, link or mask our units and
/// paths: each would change what runs at first boot.
fn check_node(node: &NodeView, v: &mut Verified) {
    if node.reaches.is_empty() {
        v.passed.push(
            "no storage entry writes, links or masks our units, their drop-ins or our paths"
                .to_string(),
        );
    }
    for r in &node.reaches {
        v.problems.push(format!(
            "{r}; only this tool's own entries may change what runs at first boot"
        ));
    }
}

/// The commands of a service besides `ExecStart`.
const FIRSTBOOT_OTHER_COMMANDS: [&str; 6] = [
    "ExecCondition",
    "ExecStartPre",
    "ExecStartPost",
    "ExecReload",
    "ExecStop",
    "ExecStopPost",
];

/// How the firstboot unit will run the MCD, whatever text of it the cluster's config
/// brings at boot: only our drop-in survives that merge, so it must say it all.
fn check_firstboot(cfg: &Value, node: &NodeView, v: &mut Verified) {
    let view = unit_view(node, FIRSTBOOT_UNIT);
    let Some(u) = unit(cfg, FIRSTBOOT_UNIT) else {
        v.problems.push(format!("no {FIRSTBOOT_UNIT}"));
        return;
    };
    if u["mask"] == true || view.masked {
        v.problems.push(format!(
            "{FIRSTBOOT_UNIT} is masked: first boot never completes"
        ));
    }
    if u["enabled"] != true {
        v.problems.push(format!("{FIRSTBOOT_UNIT} is not enabled"));
    }
    match dropin(u, DROPIN) {
        Some(d) if d == firstboot_dropin() => v.passed.push(format!(
            "{FIRSTBOOT_UNIT} has drop-in {DROPIN}, which survives the cluster's config merged at boot"
        )),
        Some(_) => v.problems.push(format!(
            "{FIRSTBOOT_UNIT}: drop-in {DROPIN} differs from the one this version writes"
        )),
        None => v.problems.push(format!(
            "{FIRSTBOOT_UNIT} has no drop-in {DROPIN}: the cluster's config merged at boot \
             replaces the unit, and the node pulls the MCO image and runs its MCD instead \
             of the delivered one (MCO 4.13 and later run it through podman)"
        )),
    }
    let exec = view.effective("[Service]", "ExecStart");
    let env: Vec<String> = view
        .effective("[Service]", "Environment")
        .iter()
        .flat_map(|e| {
            e.split_whitespace()
                .map(|w| w.trim_matches('"').to_string())
        })
        .collect();
    if exec.iter().any(|e| e.contains("podman")) {
        v.problems.push(format!(
            "{FIRSTBOOT_UNIT} runs the MCD through podman ({exec:?}): it would pull the MCO image over the network"
        ));
    }
    // Our drop-in replaces only ExecStart: the unit's other commands stay as its text
    // has them (MCO's disable the yum repos and, on main, bind an ostree repo config
    // for the firstboot), so none of them may go through podman either.
    let mut other_podman = false;
    for key in FIRSTBOOT_OTHER_COMMANDS {
        for line in view.effective("[Service]", key) {
            if line.contains("podman") {
                other_podman = true;
                v.problems.push(format!(
                    "{FIRSTBOOT_UNIT} {key}={line} runs podman: the node would pull the MCO image over the network; this tool's drop-in replaces only ExecStart"
                ));
            }
        }
    }
    if !other_podman {
        v.passed.push(format!(
            "no other command of {FIRSTBOOT_UNIT} ({}) runs podman",
            FIRSTBOOT_OTHER_COMMANDS.join(", ")
        ));
    }
    let runs_ours = exec.len() == 1 && exec[0] == FIRSTBOOT_ARGV;
    if runs_ours {
        v.passed
            .push(format!("{FIRSTBOOT_UNIT} runs `{FIRSTBOOT_ARGV}`"));
    } else {
        v.problems.push(format!(
            "{FIRSTBOOT_UNIT} runs {exec:?}, not exactly `{FIRSTBOOT_ARGV}`"
        ));
    }
    let unset = view.effective("[Service]", "UnsetEnvironment").join(" ");
    let guard_name = REEXEC_ENV.split('=').next().unwrap_or(REEXEC_ENV);
    if env.iter().any(|e| e == REEXEC_ENV)
        && !unset
            .split_whitespace()
            .any(|w| w == guard_name || w == REEXEC_ENV)
    {
        v.passed.push(format!(
            "{FIRSTBOOT_UNIT} sets {REEXEC_ENV}: the MCD runs on the host without re-exec"
        ));
    } else {
        v.problems.push(format!(
            "{FIRSTBOOT_UNIT} runs the MCD without {REEXEC_ENV}: an MCD of MCO 4.13 or later \
             tries to re-exec into /rootfs, fails (\"failed to get target OS\") and retries \
             every minute for ever, so crio and kubelet never start"
        ));
    }
    let unit_deps = |key| view.effective("[Unit]", key).join(" ");
    let requires = unit_deps("Requires");
    let after = unit_deps("After");
    if requires.split_whitespace().any(|n| n == INSTALL_UNIT)
        && after.split_whitespace().any(|n| n == INSTALL_UNIT)
    {
        v.passed.push(format!(
            "{FIRSTBOOT_UNIT} requires and follows {INSTALL_UNIT}"
        ));
    } else {
        v.problems.push(format!(
            "{FIRSTBOOT_UNIT} does not require and follow {INSTALL_UNIT}: it could run before the binary is in {RUN_BINARY}"
        ));
    }
}

/// Whether the config switches off the pre-4.6 first-boot paths.
pub fn masks_legacy(v: &Verified) -> bool {
    v.masked.iter().any(|m| m == PIVOT_UNIT)
}
