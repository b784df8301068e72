//! The pipeline definitions of `deploy/`: the Tekton Task and the OpenShift CI step
//! parse, declare what they use, and their command lines are ones the binary accepts:
//! each is run, with its parameters and workspaces (or the step's environment) filled
//! in, and must write the config and the report.

use std::collections::BTreeSet;
use std::fs;
use std::process::Command;

use serde_json::Value;

use crate::harness::registry::registries;
use crate::harness::{crate_root, fixture, Bin};

fn yaml(rel: &str) -> Value {
    let text = fs::read_to_string(crate_root().join(rel)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `$(KIND.NAME)` in `text`, for `kind` `params` or `workspaces`.
fn references(text: &str, kind: &str) -> BTreeSet<String> {
    let open = format!("$({kind}.");
    text.match_indices(&open)
        .filter_map(|(i, _)| {
            let rest = &text[i + open.len()..];
            let end = rest.find([')', '.'])?;
            Some(rest[..end].to_string())
        })
        .collect()
}

#[test]
fn the_tekton_task_runs_the_binary_with_its_parameters() {
    let task = yaml("deploy/tekton/mcd-inject-task.yaml");
    assert_eq!(task["apiVersion"], "tekton.dev/v1");
    assert_eq!(task["kind"], "Task");
    let spec = &task["spec"];
    let declared = |key: &str| -> BTreeSet<String> {
        spec[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    let step = &spec["steps"][0];
    let text = serde_json::to_string(step).unwrap();
    for (kind, key) in [("params", "params"), ("workspaces", "workspaces")] {
        let used = references(&text, kind);
        assert!(
            used.is_subset(&declared(key)),
            "the step uses {kind} {used:?}, the task declares {:?}",
            declared(key)
        );
    }
    // A run as Tekton makes it: parameters and workspace paths substituted.
    let dir = tempfile::tempdir().unwrap();
    let (secret, out) = (dir.path().join("secret"), dir.path().join("out"));
    fs::create_dir_all(&secret).unwrap();
    fs::create_dir_all(&out).unwrap();
    fs::write(secret.join(".dockerconfigjson"), r#"{"auths":{}}"#).unwrap();
    let reference = fixture("mco-small").reference("oci");
    let value = |name: &str| -> String {
        match name {
            "source-kind" => "image".into(),
            "source" => reference.clone(),
            "bootimage" => "4.2".into(),
            "mcd-inject-image" => "unused".into(),
            other => spec["params"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == other)
                .and_then(|p| p["default"].as_str())
                .unwrap_or_else(|| panic!("no value for param {other}"))
                .to_string(),
        }
    };
    let fill = |s: &str| -> String {
        let mut s = s
            .replace("$(workspaces.pull-secret.path)", secret.to_str().unwrap())
            .replace("$(workspaces.output.path)", out.to_str().unwrap());
        for p in references(&s.clone(), "params") {
            s = s.replace(&format!("$(params.{p})"), &value(&p));
        }
        s
    };
    let args: Vec<String> = step["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| fill(a.as_str().unwrap()))
        .collect();
    let mut bin = Bin::new(&args);
    for e in step["env"].as_array().unwrap() {
        bin = bin.env(
            e["name"].as_str().unwrap(),
            fill(e["value"].as_str().unwrap()),
        );
    }
    let run = bin.run();
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let report: Value =
        serde_json::from_slice(&fs::read(out.join("mcd-inject.json")).unwrap()).unwrap();
    assert_eq!(report["target"]["bootimage"], "4.2");
    assert!(out.join("worker.ign").is_file());
}

/// The step's commands, run by bash as the step registry runs them: a release on disk
/// whose MCO image is on the TLS registry, the pull secret in CLUSTER_PROFILE_DIR.
#[test]
fn the_ci_step_runs_the_binary_with_its_environment() {
    let r = yaml("deploy/ci-step/mcd-inject/mcd-inject-ref.yaml");
    let reference = &r["ref"];
    assert_eq!(reference["as"], "mcd-inject");
    let commands = reference["commands"].as_str().unwrap();
    let script = crate_root()
        .join("deploy/ci-step/mcd-inject")
        .join(commands);
    let text = fs::read_to_string(&script).unwrap();
    // Every variable of the step's env is one the commands read.
    for e in reference["env"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        assert!(text.contains(name), "{commands} does not read {name}");
    }
    let reg = registries();
    let dir = tempfile::tempdir().unwrap();
    let digest = Command::new("skopeo")
        .args(["inspect", "--cert-dir", &reg.ca_dir, "--creds"])
        .arg(format!("{}:{}", reg.basic_user, reg.basic_password))
        .args(["--format", "{{.Digest}}"])
        .arg(format!("docker://{}/mco/small:v1", reg.basic))
        .output()
        .unwrap();
    assert!(digest.status.success(), "{digest:?}");
    let digest = String::from_utf8(digest.stdout).unwrap().trim().to_string();
    let layout = dir.path().join("release");
    crate::release::release_layout(
        &layout,
        "4.16.3",
        &[("amd64", None, format!("{}/mco/small@{digest}", reg.basic))],
    );
    let (shared, artifacts, profile) = (
        dir.path().join("shared"),
        dir.path().join("artifacts"),
        dir.path().join("profile"),
    );
    for d in [&shared, &artifacts, &profile] {
        fs::create_dir_all(d).unwrap();
    }
    let pair = format!("{}:{}", reg.basic_user, reg.basic_password);
    use base64::Engine as _;
    fs::write(
        profile.join("pull-secret"),
        serde_json::to_vec(&serde_json::json!({"auths": {reg.basic.as_str(): {
            "auth": base64::engine::general_purpose::STANDARD.encode(pair)
        }}}))
        .unwrap(),
    )
    .unwrap();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_mcd-inject"))
        .parent()
        .unwrap()
        .to_path_buf();
    let home = dir.path().join("home");
    let out = Command::new("bash")
        .arg(&script)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .env("HOME", &home)
        .env("SHARED_DIR", &shared)
        .env("ARTIFACT_DIR", &artifacts)
        .env("CLUSTER_PROFILE_DIR", &profile)
        .env(
            "RELEASE_IMAGE_LATEST",
            format!("oci:{}:4.16.3", layout.display()),
        )
        .env("MCD_INJECT_CERT_DIR", &reg.ca_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{commands}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_slice(&fs::read(artifacts.join("mcd-inject.json")).unwrap()).unwrap();
    assert_eq!(report["release"]["version"], "4.16.3", "{report:#}");
    assert!(shared.join("worker.ign").is_file());
}
