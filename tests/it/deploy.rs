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

/// The step's arguments as Tekton gives them: each workspace at its path
/// (`pull_secret`, `output`), each parameter as `given` names it, else its default.
fn step_args(
    spec: &Value,
    step: &Value,
    (pull_secret, output): (&str, &str),
    given: &[(&str, String)],
) -> Vec<String> {
    step["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| substitute(spec, a.as_str().unwrap(), (pull_secret, output), given))
        .collect()
}

/// `text` with the workspaces' paths and the parameters' values Tekton substitutes.
fn substitute(
    spec: &Value,
    text: &str,
    (pull_secret, output): (&str, &str),
    given: &[(&str, String)],
) -> String {
    let value = |name: &str| -> String {
        if let Some((_, v)) = given.iter().find(|(n, _)| *n == name) {
            return v.clone();
        }
        spec["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["default"].as_str())
            .unwrap_or_else(|| panic!("no value for param {name}"))
            .to_string()
    };
    let mut s = text
        .replace("$(workspaces.pull-secret.path)", pull_secret)
        .replace("$(workspaces.output.path)", output);
    for p in references(text, "params") {
        s = s.replace(&format!("$(params.{p})"), &value(&p));
    }
    s
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
    let given = [
        ("source-kind", "image".to_string()),
        ("source", reference.clone()),
        ("bootimage", "4.2".into()),
        ("mcd-inject-image", "unused".into()),
    ];
    let workspaces = (secret.to_str().unwrap(), out.to_str().unwrap());
    let fill = |s: &str| substitute(spec, s, workspaces, &given);
    let args = step_args(spec, step, workspaces, &given);
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

/// The Task's fields that Tekton (pkg/apis/pipeline/v1 of tektoncd/pipeline) admits only
/// behind a feature flag that is off by default (config/config-feature-flags.yaml:
/// `enable-api-fields: beta`, every individual alpha flag false): a default Tekton's
/// webhook refuses a Task that uses one.
const GATED_STEP_FIELDS: &[(&str, &str)] = &[
    ("stdoutConfig", "enable-api-fields: alpha"),
    ("stderrConfig", "enable-api-fields: alpha"),
];

/// Every field of `task` that a default Tekton refuses, with the flag it needs.
fn gated_fields(task: &Value) -> Vec<String> {
    let spec = &task["spec"];
    let mut found = Vec::new();
    for p in spec["params"].as_array().into_iter().flatten() {
        if p.get("enum").is_some() {
            found.push(format!("params[{}].enum (enable-param-enum)", p["name"]));
        }
    }
    for key in ["steps", "sidecars", "stepTemplate"] {
        let items: Vec<&Value> = match &spec[key] {
            Value::Array(a) => a.iter().collect(),
            Value::Null => vec![],
            one => vec![one],
        };
        for s in items {
            for (field, flag) in GATED_STEP_FIELDS {
                if s.get(*field).is_some() {
                    found.push(format!("{key}[{}].{field} ({flag})", s["name"]));
                }
            }
            if s["script"].as_str().is_some_and(|t| t.starts_with("#!win")) {
                found.push(format!(
                    "{key}[{}].script for Windows (enable-api-fields: alpha)",
                    s["name"]
                ));
            }
        }
    }
    // Artifacts: `$(step.artifacts.path)`, `$(steps.NAME.outputs...)` and
    // `$(steps.NAME.inputs...)` (step results, `$(steps.NAME.results...)`, are stable).
    let text = serde_json::to_string(task).unwrap();
    let artifacts = text.contains("$(step.artifacts.")
        || text.match_indices("$(steps.").any(|(i, _)| {
            let rest = &text[i + "$(steps.".len()..];
            let rest = rest.split_once('.').map_or("", |(_, r)| r);
            rest.starts_with("outputs") || rest.starts_with("inputs")
        });
    if artifacts {
        found.push("an artifacts reference (enable-artifacts)".into());
    }
    found
}

/// The TaskRun of docs/usage.md: the YAML block that holds `kind: TaskRun`.
fn usage_taskrun() -> (String, Value) {
    let doc = fs::read_to_string(crate_root().join("docs/usage.md")).unwrap();
    let block = doc
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("kind: TaskRun"))
        .expect("docs/usage.md shows a TaskRun")
        .to_string();
    let value = serde_yaml_ng::from_str(&block).unwrap();
    (block, value)
}

/// Runs the Tekton linter (@ibm/tekton-lint, installed by scripts/test.sh) on these
/// files; its problems, as its JSON output lists them.
fn tekton_lint(files: &[&std::path::Path]) -> Vec<Value> {
    let lint = std::env::var_os("MCD_INJECT_TEKTON_LINT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate_root().join("target/tekton-lint/node_modules/.bin/tekton-lint"));
    assert!(
        lint.is_file(),
        "no Tekton linter at {} (scripts/test.sh installs @ibm/tekton-lint there with npm; \
         or set MCD_INJECT_TEKTON_LINT)",
        lint.display()
    );
    // Its configuration and cache live in the directory it runs in.
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(&lint)
        .args(["--format", "json", "--color", "false"])
        .args(files)
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = &stdout[stdout.find('[').unwrap_or_else(|| {
        panic!(
            "tekton-lint printed no JSON: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })..];
    serde_json::from_str(json).unwrap_or_else(|e| panic!("tekton-lint's output: {e}: {json}"))
}

/// A default Tekton admits the Task: no gated field, and the Tekton linter finds nothing
/// in it and the TaskRun of docs/usage.md (while it does find a parameter the Task does
/// not declare, so it read them). The TaskRun runs the image the suite builds (the tag
/// docs/usage.md gives scripts/container-image.sh): its step, run in that image as Tekton
/// runs it, with the workspaces mounted, writes the config and the report.
#[test]
fn a_default_tekton_admits_the_task_and_the_taskrun_runs_the_suites_image() {
    let task = yaml("deploy/tekton/mcd-inject-task.yaml");
    assert_eq!(gated_fields(&task), Vec::<String>::new());
    let mut with_enum = task.clone();
    with_enum["spec"]["params"][1]["enum"] = serde_json::json!(["release", "image"]);
    assert_eq!(gated_fields(&with_enum).len(), 1);

    let (taskrun_text, taskrun) = usage_taskrun();
    assert_eq!(taskrun["spec"]["taskRef"]["name"], task["metadata"]["name"]);
    let dir = tempfile::tempdir().unwrap();
    let (task_file, run_file) = (dir.path().join("task.yaml"), dir.path().join("run.yaml"));
    fs::copy(
        crate_root().join("deploy/tekton/mcd-inject-task.yaml"),
        &task_file,
    )
    .unwrap();
    fs::write(&run_file, &taskrun_text).unwrap();
    let problems = tekton_lint(&[&task_file, &run_file]);
    assert!(problems.is_empty(), "tekton-lint: {problems:#?}");
    let bad = dir.path().join("bad.yaml");
    let text = fs::read_to_string(&task_file).unwrap();
    fs::write(
        &bad,
        text.replace("$(params.bootimage)", "$(params.boot-image)"),
    )
    .unwrap();
    let problems = tekton_lint(&[&bad]);
    assert!(
        problems
            .iter()
            .any(|p| p.to_string().contains("boot-image")),
        "tekton-lint did not report an undeclared parameter: {problems:#?}"
    );

    let param = |name: &str| -> String {
        taskrun["spec"]["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["value"].as_str())
            .unwrap_or_else(|| panic!("the TaskRun gives no {name}"))
            .to_string()
    };
    assert_eq!(param("mcd-inject-image"), crate::container::TAG);
    let image = crate::container::image();
    assert_eq!(image, param("mcd-inject-image"));

    // The step as Tekton runs it: workspaces under /workspace, params substituted (the
    // source is a fixture, the TaskRun's is a placeholder for the cluster's release).
    let spec = &task["spec"];
    let step = &spec["steps"][0];
    assert_eq!(step["image"], "$(params.mcd-inject-image)");
    let (secret, out) = (dir.path().join("secret"), dir.path().join("out"));
    fs::create_dir_all(&secret).unwrap();
    fs::create_dir_all(&out).unwrap();
    fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let auth = secret.join(".dockerconfigjson");
    fs::write(&auth, r#"{"auths":{}}"#).unwrap();
    fs::set_permissions(&auth, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let given = [
        ("source-kind", "image".to_string()),
        ("source", "oci:/in/mco-4.16:latest".into()),
        ("bootimage", param("bootimage")),
    ];
    let workspaces = ("/workspace/pull-secret", "/workspace/output");
    let fill = |s: &str| substitute(spec, s, workspaces, &given);
    let args = step_args(spec, step, workspaces, &given);
    let mounts = [
        format!(
            "{}:/in:ro",
            crate::harness::fixtures_dir().join("layouts").display()
        ),
        format!("{}:/workspace/pull-secret:ro", secret.display()),
        format!("{}:/workspace/output", out.display()),
    ];
    let mut options: Vec<String> = Vec::new();
    for m in &mounts {
        options.extend(["-v".into(), m.clone()]);
    }
    for e in step["env"].as_array().unwrap() {
        options.extend([
            "-e".into(),
            format!(
                "{}={}",
                e["name"].as_str().unwrap(),
                fill(e["value"].as_str().unwrap())
            ),
        ]);
    }
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = crate::container::run(&options, &args);
    assert!(
        r.status.success(),
        "the Task's step in {image}: {:?}\n{}",
        r.status,
        String::from_utf8_lossy(&r.stderr)
    );
    let report: Value =
        serde_json::from_slice(&fs::read(out.join("mcd-inject.json")).unwrap()).unwrap();
    assert_eq!(report["target"]["bootimage"], param("bootimage"));
    assert!(out.join("worker.ign").is_file());
}
