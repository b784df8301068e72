//! `verify`: a config checked as the node will use it (spec, payload hashes, units), then
//! against a target: the firstboot path it needs, whether the binary fits it, and with
//! an image whether it is the build `inject` chooses.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::choose;
use crate::choose::boots;
use crate::choose::closure;
use crate::choose::elf;
use crate::choose::rules;
use crate::choose::target::{BootimageId, HostOs, NameForm, Named, Target, TargetArgs};
use crate::ignition::verify;
use crate::image::ImageRef;
use crate::io::Input;
use crate::transport::{self, OpenOptions};
use crate::warnings::{Warning, Warnings};

/// Everything `verify` needs, parsed.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// The config to check.
    pub ign: Input,
    /// The target (`--bootimage`, ...); else the config's provenance names it.
    pub target: Option<TargetArgs>,
    /// An image to check the payload against (`--image`): the build `inject` chooses.
    pub image: Option<(ImageRef, OpenOptions)>,
    /// The payload file of a remote-mode config (`--payload`).
    pub payload: Option<PathBuf>,
    /// The node's architecture (`--platform`).
    pub arch: String,
}

/// The config could not be read, or is not one `verify` can check (empty, truncated,
/// not an Ignition config): the one finding of the run, which the command line reports
/// as its problem (`ok: false` in `--json`).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct Unreadable(pub anyhow::Error);

/// The outcome of `verify`.
#[derive(Debug)]
pub struct VerifyReport {
    /// The checks that passed, one line each.
    pub passed: Vec<String>,
    /// The checks that failed, one line each.
    pub problems: Vec<String>,
    /// The config's spec.
    pub spec: String,
    /// sha256 of the binary the payload holds, when it could be read.
    pub binary_sha256: Option<String>,
    /// The config's provenance record.
    pub provenance: Option<Value>,
    /// The warnings of the run (those of opening `--image`).
    pub warnings: Vec<Warning>,
}

/// Runs `verify`: the config's own checks (spec, payload hashes, units), then the
/// target (`--bootimage`, else the config's provenance), the firstboot path it needs,
/// whether the binary fits it, and with `--image` whether it is the build `inject`
/// chooses.
pub fn verify(cfg: &VerifyConfig, warnings: &Warnings) -> Result<VerifyReport> {
    let bytes = cfg.ign.read().map_err(Unreadable)?;
    let spool = crate::io::tempfiles::dir_in(&std::env::temp_dir())
        .context("creating a spool directory")?;
    let v = verify::verify(
        &cfg.ign.to_string(),
        &bytes,
        cfg.payload.as_deref(),
        spool.path(),
    )
    .map_err(Unreadable)?;
    let mut checks = Checks {
        passed: v.passed.clone(),
        problems: v.problems.clone(),
    };
    let target = verify_target(cfg, &v, &mut checks);
    if let Some(t) = &target {
        check_firstboot_path(t, &v, &mut checks);
        if let Some(bin) = &v.binary {
            if v.closure.is_empty() {
                check_binary_fits(bin.path(), t, &rules::describe(t), &mut checks);
            } else {
                check_closure_fits(bin.path(), t, &v, &mut checks);
            }
        }
        check_later_boots(t, &v, &mut checks);
    }
    if let (Some((r, o)), Some(t)) = (&cfg.image, &target) {
        check_chosen_build(r, o, t, &v, spool.path(), &mut checks, warnings)?;
    }
    Ok(VerifyReport {
        passed: checks.passed,
        problems: checks.problems,
        spec: v.spec.as_str().to_string(),
        binary_sha256: v.binary_sha256.clone(),
        provenance: v.provenance.clone(),
        warnings: warnings.list(),
    })
}

/// The lines of a `verify` run.
struct Checks {
    passed: Vec<String>,
    problems: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, line: String) {
        if ok {
            self.passed.push(line);
        } else {
            self.problems.push(line);
        }
    }
}

/// The target to check against: `--bootimage`, else the one the config's provenance
/// names, at the config's spec.
fn verify_target(cfg: &VerifyConfig, v: &verify::Verified, checks: &mut Checks) -> Option<Target> {
    let from_provenance = v
        .provenance
        .as_ref()
        .and_then(|p| p["target"]["bootimage"].as_str())
        .and_then(|s| s.parse::<BootimageId>().ok());
    let target_args = match (&cfg.target, from_provenance) {
        (Some(t), _) => TargetArgs {
            spec: Some(v.spec),
            ..t.clone()
        },
        (None, Some(b)) => TargetArgs {
            bootimage: Named {
                form: NameForm::Version,
                value: b.to_string(),
                file: None,
                version: b,
                range: Vec::new(),
            },
            spec: Some(v.spec),
            rhel: v.provenance.as_ref().and_then(|p| {
                p["target"]["rhel"]
                    .as_u64()
                    .and_then(|r| u32::try_from(r).ok())
            }),
            cluster_rhel: None,
        },
        (None, None) => {
            checks
                .problems
                .push("no target: pass --bootimage (the config has no provenance)".into());
            return None;
        }
    };
    match Target::new(
        target_args.bootimage.version,
        target_args.spec,
        target_args.rhel,
        &cfg.arch,
    ) {
        Ok(target) => {
            checks.passed.push(format!(
                "bootimage {} reads spec {}",
                target_args.bootimage.describe(),
                target.spec
            ));
            Some(target)
        }
        Err(e) => {
            checks.problems.push(e.to_string());
            None
        }
    }
}

/// 4.1-4.5 bootimages need `pivot.service` masked; later ones must keep it.
fn check_firstboot_path(t: &Target, v: &verify::Verified, checks: &mut Checks) {
    if t.has_legacy_firstboot() != verify::masks_legacy(v) {
        checks.problems.push(format!(
            "bootimage {} {} pivot.service masked",
            t.bootimage,
            if t.has_legacy_firstboot() {
                "needs"
            } else {
                "should not have"
            }
        ));
    }
}

/// The boots after the first, on the cluster's OS: the other build fits the RHEL the
/// install script gives it to; without one, the first build fits the cluster's OS the
/// provenance records.
fn check_later_boots(t: &Target, v: &verify::Verified, checks: &mut Checks) {
    let (bin, os) = match (&v.other, &v.binary, recorded_cluster_os(v)) {
        (Some((rhel, other, _)), _, _) => (other.path(), HostOs::Rhel(*rhel)),
        (None, Some(first), Some(os)) if os != t.os => (first.path(), os),
        _ => return,
    };
    match boots::on_os(t, os) {
        Ok(ct) => {
            let label = format!(
                "hosts of {os} (the cluster's OS, from the second boot on: glibc {}, {})",
                ct.glibc, ct.libcrypto
            );
            check_binary_fits(bin, &ct, &label, checks);
        }
        Err(e) => checks.problems.push(format!("the cluster's OS: {e}")),
    }
}

/// The cluster's OS the provenance records: `{"rhel": 9}` or `{"fedora": 33}`.
fn recorded_cluster_os(v: &verify::Verified) -> Option<HostOs> {
    let c = &v.provenance.as_ref()?["cluster_os"];
    let major = |k: &str| c[k].as_u64().and_then(|m| u32::try_from(m).ok());
    major("rhel")
        .map(HostOs::Rhel)
        .or_else(|| major("fedora").map(HostOs::Fedora))
}

/// A binary of the config against a target's compatibility rules.
fn check_binary_fits(bin: &std::path::Path, t: &Target, label: &str, checks: &mut Checks) {
    match elf::read_facts(bin) {
        Ok(f) => {
            let verdict = rules::verdict(&f, t);
            let line = format!(
                "the binary ({}) {} {}: {}",
                f.summary(),
                if verdict.compatible {
                    "fits"
                } else {
                    "does NOT fit"
                },
                label,
                verdict.because()
            );
            checks.check(verdict.compatible, line);
        }
        Err(e) => checks
            .problems
            .push(format!("the payload is not an ELF binary: {e:#}")),
    }
}

/// A build delivered with its closure: the closure is whole and fits the bootimage's
/// kernel, and the install script runs the build natively on exactly the RHEL majors
/// where it fits natively.
fn check_closure_fits(
    bin: &std::path::Path,
    t: &Target,
    v: &verify::Verified,
    checks: &mut Checks,
) {
    let f = match elf::read_facts(bin) {
        Ok(f) => f,
        Err(e) => {
            checks
                .problems
                .push(format!("the payload is not an ELF binary: {e:#}"));
            return;
        }
    };
    let files: Vec<(String, &std::path::Path)> = v
        .closure
        .iter()
        .map(|(n, tmp, _)| (n.clone(), tmp.path()))
        .collect();
    let fit = closure::check_delivered(&f, &files);
    let verdict = rules::closure_verdict(&f, &fit, t);
    checks.check(
        verdict.compatible,
        format!(
            "the binary ({}) {} {} through its closure: {}",
            f.summary(),
            if verdict.compatible {
                "fits"
            } else {
                "does NOT fit"
            },
            rules::describe(t),
            verdict.because()
        ),
    );
    let native = boots::native_rhels(&f, t);
    checks.check(
        native == v.closure_native,
        format!(
            "the install script runs the build without its closure on RHEL {:?}; it fits natively on RHEL {native:?}",
            v.closure_native
        ),
    );
}

/// The payload against the build `inject` chooses from the image for the target.
fn check_chosen_build(
    r: &ImageRef,
    o: &OpenOptions,
    t: &Target,
    v: &verify::Verified,
    spool: &std::path::Path,
    checks: &mut Checks,
    warnings: &Warnings,
) -> Result<()> {
    let img = transport::open(r, o, warnings)?;
    let hint = choose::ClusterHint {
        rhel: recorded_cluster_os(v).and_then(HostOs::rhel),
        release_version: None,
    };
    let query = choose::Query {
        target: t,
        hint: &hint,
        binary_path: None,
        force: false,
    };
    match choose::select_boots(&img, spool, &query, choose::Reading::Lazy, None) {
        Ok((ins, b)) => {
            let chosen = &ins.binaries[b.first.index];
            let second = b.second.as_ref().map(|c| &ins.binaries[c.index]);
            let want = chosen.sha256.hex().to_string();
            if v.binary_sha256.as_deref() == Some(want.as_str()) {
                checks.passed.push(format!(
                    "the payload is {} of {r}, the binary inject chooses",
                    chosen.path
                ));
            } else {
                checks.problems.push(format!(
                    "inject would choose {} (sha256 {want}), the payload is {}",
                    chosen.path,
                    v.binary_sha256.as_deref().unwrap_or("unreadable")
                ));
            }
            let want_closure: Vec<(String, String)> = ins
                .closure
                .iter()
                .flat_map(|c| &c.files)
                .map(|f| (f.name.clone(), f.sha256.hex().to_string()))
                .collect();
            let got_closure: Vec<(String, String)> = v
                .closure
                .iter()
                .map(|(name, _, sha)| (name.clone(), sha.clone()))
                .collect();
            if want_closure == got_closure {
                if !want_closure.is_empty() {
                    checks.passed.push(format!(
                        "the closure is the {} files of {r} inject takes",
                        want_closure.len()
                    ));
                }
            } else {
                checks.problems.push(format!(
                    "inject would carry the closure {want_closure:?}, the config carries {got_closure:?}"
                ));
            }
            let carried = v.other.as_ref().map(|(_, _, h)| h.clone());
            match (second, carried) {
                (None, None) => {}
                (Some(s), Some(h)) if s.sha256.hex() == h => checks.passed.push(format!(
                    "the second payload is {} of {r}, the build inject chooses for the cluster's OS",
                    s.path
                )),
                (Some(s), got) => checks.problems.push(format!(
                    "inject would carry {} (sha256 {}) for the cluster's OS, the config carries {}",
                    s.path,
                    s.sha256.hex(),
                    got.as_deref().unwrap_or("no second build")
                )),
                (None, Some(_)) => checks.problems.push(
                    "the config carries a second build; inject would carry one build only".into(),
                ),
            }
        }
        // No build fits: a finding about the config. Reading the image failed: an error.
        Err(e)
            if e.downcast_ref::<rules::SelectError>().is_some()
                || e.downcast_ref::<choose::BootsError>().is_some() =>
        {
            checks.problems.push(format!("{e:#}"))
        }
        Err(e) => return Err(e),
    }
    Ok(())
}
