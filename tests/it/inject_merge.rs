//! `inject --base`: the base is kept, owned MCO units are replaced and reported, other
//! conflicts need `--force`, other specs are translated or refused, invalid bases are
//! named by line and column; and golden configs, regenerated only with
//! `MCD_INJECT_BLESS=1`.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::harness::{crate_root, dir_entries, fixture, mcd_inject, unified_diff, Bin, Run};
use serde_json::{json, Value};

/// Runs the binary in `cwd` with `stdin`.
fn run(args: &[&str], stdin: &[u8], cwd: &Path) -> Run {
    Bin::new(args).current_dir(cwd).stdin(stdin).run()
}

fn base_32() -> Value {
    serde_json::from_slice(&fs::read(crate_root().join("tests/golden/base-3.2.ign")).unwrap())
        .unwrap()
}

fn inject_with_base(boot: &str, base: &[u8], extra: &[&str]) -> Run {
    let reference = fixture("mco-4.16").reference("oci");
    let mut args = vec![
        "inject",
        "--image",
        &reference,
        "--bootimage",
        boot,
        "--ign",
        "-",
        "--base",
        "-",
    ];
    args.extend(extra);
    run(&args, base, &std::env::temp_dir())
}

/// `verify - EXTRA` passes on `cfg`, or the test fails with what it printed.
fn assert_verifies(cfg: &[u8], extra: &[&str]) {
    let mut args = vec!["verify", "-"];
    args.extend(extra);
    let verified = run(&args, cfg, &std::env::temp_dir());
    assert_eq!(
        verified.code,
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        verified.stderr
    );
}

const FIRSTBOOT: &str = "machine-config-daemon-firstboot.service";
const PULL: &str = "machine-config-daemon-pull.service";

fn unit_names(cfg: &Value) -> Vec<String> {
    cfg["systemd"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn base_is_kept_and_mco_units_get_our_dropins() {
    let base = base_32();
    let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["passwd"], base["passwd"]);
    assert_eq!(cfg["ignition"], base["ignition"]);
    assert_eq!(cfg["storage"]["files"][0], base["storage"]["files"][0]);
    assert_eq!(
        unit_names(&cfg),
        [
            "kubelet.service",
            "mco-mcd-install.service",
            "machine-config-daemon-firstboot.service",
            "machine-config-daemon-pull.service",
        ]
    );
    // The cluster's unit texts stay, as when Ignition merges them at boot; our
    // drop-ins carry what the node must do.
    for (i, name) in [(2, FIRSTBOOT), (3, PULL)] {
        let base_unit = base["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .unwrap();
        let unit = &cfg["systemd"]["units"][i];
        assert_eq!(unit["contents"], base_unit["contents"], "{name}");
        assert_eq!(unit["dropins"][0]["name"], "99-mcd-inject.conf", "{name}");
        assert!(
            out.stderr
                .contains(&format!("kept {name} from the base and added drop-in")),
            "{}",
            out.stderr
        );
    }
    assert_verifies(&out.stdout, &["--bootimage", "4.8"]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.ign");
    fs::write(&p, &out.stdout).unwrap();
    let v = Command::new("ignition-validate")
        .arg(&p)
        .output()
        .expect("ignition-validate is needed: apt-get install ignition");
    assert!(
        v.status.success() && v.stdout.is_empty() && v.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
}

#[test]
fn other_conflicts_need_force() {
    let mut base = base_32();
    base["storage"]["files"].as_array_mut().unwrap().push(
        json!({"path": "/usr/local/bin/machine-config-daemon", "contents": {"source": "data:,x"}}),
    );
    let bytes = serde_json::to_vec(&base).unwrap();
    let out = inject_with_base("4.8", &bytes, &[]);
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains("/usr/local/bin/machine-config-daemon")
            && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    let out = inject_with_base("4.8", &bytes, &["--force"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out
        .stderr
        .contains("replaced /usr/local/bin/machine-config-daemon from the base (--force)"));

    // A base that masks the firstboot unit would never complete the first boot.
    let mut base = base_32();
    base["systemd"]["units"][1]["mask"] = true.into();
    let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("unit {FIRSTBOOT} masked")),
        "{}",
        out.stderr
    );
}

/// Bases that Ignition would refuse, or that leave no room for our paths, are refused
/// before anything is written, naming the entry.
#[test]
fn bases_that_break_ignitions_rules_are_refused() {
    let cases: [(&str, Value, &str); 4] = [
        (
            "duplicate entries",
            json!([{"path": "/etc/x", "contents": {"source": "data:,a"}},
                   {"path": "/etc/x", "contents": {"source": "data:,b"}}]),
            "/etc/x is defined twice",
        ),
        (
            "a path that is not simplified",
            json!([{"path": "/var/lib/../lib/mcd-inject/provenance.json", "contents": {"source": "data:,a"}}]),
            "path is not fully simplified",
        ),
        (
            "a file where our directory goes",
            json!([{"path": "/var/lib/mcd-inject", "contents": {"source": "data:,a"}}]),
            "needs /var/lib/mcd-inject to be a directory",
        ),
        (
            "a file at /usr/local/bin",
            json!([{"path": "/usr/local/bin", "contents": {"source": "data:,a"}}]),
            "needs /usr/local/bin to be a directory",
        ),
    ];
    for (what, files, reason) in cases {
        let base = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": files}});
        let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
        assert_eq!(out.code, Some(1), "{what}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{what}");
        assert!(out.stderr.contains(reason), "{what}: {}", out.stderr);
    }
}

#[test]
fn reinjecting_replaces_our_entries_and_keeps_the_rest() {
    let base = serde_json::to_vec(&base_32()).unwrap();
    let first = inject_with_base("4.8", &base, &[]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    // Our own output as the base: the same inputs give the same bytes.
    let again = inject_with_base("4.8", &first.stdout, &[]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        again.stdout == first.stdout,
        "re-injecting changed the config"
    );
    // Another image replaces the delivery and keeps everything else.
    let reference = fixture("mco-4.6").reference("oci");
    let with_image = |base: &[u8]| {
        let args = [
            "inject",
            "--image",
            &reference,
            "--bootimage",
            "4.8",
            "--ign",
            "-",
            "--base",
            "-",
        ];
        run(&args, base, &std::env::temp_dir())
    };
    let other = with_image(&first.stdout);
    assert_eq!(other.code, Some(0), "{}", other.stderr);
    let direct = with_image(&base);
    assert!(
        other.stdout == direct.stdout,
        "re-injecting another image is not idempotent"
    );
    assert!(
        other
            .stderr
            .contains("replaced /var/lib/mcd-inject/machine-config-daemon.gz from an earlier run"),
        "{}",
        other.stderr
    );
}

#[test]
fn other_specs_are_translated_or_refused() {
    let mut base = base_32();
    base["ignition"]["version"] = "3.1.0".into();
    let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.2.0");
    assert!(out
        .stderr
        .contains("translated the base from spec 3.1.0 to 3.2.0"));

    // A newer base the bootimage reads raises the output spec...
    base["ignition"]["version"] = "3.3.0".into();
    let out = inject_with_base("4.12", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.3.0");

    // ... one it does not read is translated down to what it reads...
    let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.2.0");
    assert!(out
        .stderr
        .contains("translated the base from spec 3.3.0 to 3.2.0"));

    // ... unless it says what that spec cannot: the field and the bootimage are named.
    base["kernelArguments"] = json!({"shouldExist": ["nosmt"]});
    let out = inject_with_base("4.8", &serde_json::to_vec(&base).unwrap(), &[]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("bootimage 4.8")
            && out
                .stderr
                .contains("kernelArguments cannot be translated from spec 3.3.0 to spec 3.2.0"),
        "{}",
        out.stderr
    );
    let luks = json!({"ignition": {"version": "3.2.0"},
        "storage": {"luks": [{"name": "root", "device": "/dev/disk/by-partlabel/root"}]}});
    let out = inject_with_base("4.2", &serde_json::to_vec(&luks).unwrap(), &[]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("bootimage 4.2") && out.stderr.contains("storage.luks[0]"),
        "{}",
        out.stderr
    );

    // Spec 2.2 for a spec 3 bootimage: 2.x files overwrite, so the file says so now.
    let v2 = json!({"ignition": {"version": "2.2.0"}, "storage": {"files": [
        {"filesystem": "root", "path": "/etc/motd", "contents": {"source": "data:,hi"}, "mode": 420}
    ]}});
    let out = inject_with_base("4.8", &serde_json::to_vec(&v2).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        cfg["storage"]["files"][0],
        json!({"path": "/etc/motd", "overwrite": true, "contents": {"source": "data:,hi"}, "mode": 420})
    );
    let out = inject_with_base("4.2", &serde_json::to_vec(&v2).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["storage"]["files"][0], v2["storage"]["files"][0]);
}

/// The stub a pipeline takes from a current cluster (the Secret MCO's operator writes,
/// spec 3) for a 4.2 bootimage, and an install-time 2.2 stub for a 4.8 one: each comes
/// out in the spec the bootimage reads, pointing at the MCS with the stub's CA, and the
/// real Ignition of that spec accepts it.
#[test]
fn stubs_of_current_clusters_reach_the_spec_the_bootimage_reads() {
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mcs = "https://api-int.cluster.example:22623/config/worker";
    let rotated_ca = "data:text/plain;charset=utf-8;base64,cm90YXRlZA==";
    let managed = json!({"ignition": {"version": "3.2.0",
        "config": {"merge": [{"source": mcs}]},
        "security": {"tls": {"certificateAuthorities": [{"source": rotated_ca}]}}}});
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: worker-user-data-managed\n  namespace: openshift-machine-api\n  labels:\n    machineconfiguration.openshift.io/managed-ca-bundle-derived-from-configmap: \"\"\ntype: Opaque\ndata:\n  disableTemplating: dHJ1ZQo=\n  userData: {}\n",
        b64(&serde_json::to_vec(&managed).unwrap())
    );
    let dir = tempfile::tempdir().unwrap();
    let secret_out = dir.path().join("secret.yaml");
    let reference = fixture("mco-4.16").reference("oci");
    let cfg_path = dir.path().join("out.ign");
    let out = run(
        &[
            "inject",
            "--image",
            &reference,
            "--bootimage",
            "4.2",
            "--base",
            "-",
            "--ign",
            cfg_path.to_str().unwrap(),
            "--secret-out",
            secret_out.to_str().unwrap(),
            "--json",
        ],
        secret.as_bytes(),
        dir.path(),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["base"],
        json!({"secret": {"name": "worker-user-data-managed", "namespace": "openshift-machine-api",
            "key": "data.userData"}, "spec": "3.2.0", "written_spec": "2.2.0", "translated": true})
    );
    assert!(report["cluster_notes"][0]
        .as_str()
        .unwrap()
        .contains("spec.bootImageSkewEnforcement"));
    let cfg_bytes = fs::read(&cfg_path).unwrap();
    let cfg: Value = serde_json::from_slice(&cfg_bytes).unwrap();
    assert_eq!(cfg["ignition"]["version"], "2.2.0");
    assert_eq!(
        cfg["ignition"]["config"]["append"],
        json!([{"source": mcs}])
    );
    assert_eq!(
        cfg["ignition"]["security"]["tls"]["certificateAuthorities"],
        json!([{"source": rotated_ca}])
    );
    let v0 = crate::harness::node::shared_program("ignition-v0.35", "ignition-validate");
    let (ok, text) = crate::harness::node::run(Command::new(&v0).arg(&cfg_path));
    assert!(
        ok && text.trim().is_empty(),
        "v0.35 ignition-validate: {text}"
    );
    // The Secret holds the very bytes written, named after the base's pool.
    let written: Value = serde_yaml_ng::from_slice(&fs::read(&secret_out).unwrap()).unwrap();
    assert_eq!(written["metadata"]["name"], "worker-user-data-mcd-inject");
    let user_data = base64::engine::general_purpose::STANDARD
        .decode(written["data"]["userData"].as_str().unwrap())
        .unwrap();
    assert_eq!(user_data, cfg_bytes);
    assert_verifies(&cfg_bytes, &[]);
    // MCO's CA rotation rewrites the CA of the Secret's config in place, through Go's
    // JSON encoder (keys sorted, compact): the config still verifies.
    let mut rotated: Value = serde_json::from_slice(&cfg_bytes).unwrap();
    rotated["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"] =
        json!("data:text/plain;charset=utf-8;base64,bmV3ZXI=");
    assert_verifies(&serde_json::to_vec(&sorted_keys(rotated)).unwrap(), &[]);

    // The install-time stub of a cluster born at 4.1-4.5, for a 4.8 bootimage.
    let install = json!({"ignition": {"version": "2.2.0",
        "config": {"append": [{"source": mcs}]},
        "security": {"tls": {"certificateAuthorities": [{"source": rotated_ca}]}}}});
    let out = inject_with_base("4.8", &serde_json::to_vec(&install).unwrap(), &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.2.0");
    assert_eq!(cfg["ignition"]["config"]["merge"], json!([{"source": mcs}]));
    fs::write(&cfg_path, &out.stdout).unwrap();
    let (ok, text) = crate::harness::node::run(Command::new("ignition-validate").arg(&cfg_path));
    assert!(ok && text.trim().is_empty(), "ignition-validate: {text}");
    assert_verifies(&out.stdout, &[]);
}

/// A value with the keys of every object sorted, as Go's encoding/json writes a map.
fn sorted_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> =
                m.into_iter().map(|(k, v)| (k, sorted_keys(v))).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// A Secret that holds no config is named with its keys (never its values), and a
/// config too big for a Secret is refused before anything is written.
#[test]
fn secrets_without_a_config_and_configs_too_big_for_one_are_refused() {
    let pull = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull-secret\ndata:\n  .dockerconfigjson: eyJhdXRocyI6e319\n";
    let out = inject_with_base("4.2", pull.as_bytes(), &[]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains("the Secret has no userData in data or stringData")
            && !out.stderr.contains("eyJhdXRocyI6e319"),
        "{}",
        out.stderr
    );
    // The fixture's payload inline: a config of megabytes.
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-4.16").reference("oci");
    let big = dir.path().join("big.yaml");
    let cfg_path = dir.path().join("out.ign");
    let large = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [
        {"path": "/var/filler", "contents": {"source": format!("data:,{}", "x".repeat(1 << 20))}}]}});
    let out = run(
        &[
            "inject",
            "--image",
            &reference,
            "--bootimage",
            "4.8",
            "--base",
            "-",
            "--ign",
            cfg_path.to_str().unwrap(),
            "--secret-out",
            big.to_str().unwrap(),
        ],
        &serde_json::to_vec(&large).unwrap(),
        dir.path(),
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("over the 1 MiB") && out.stderr.contains("--payload-url"),
        "{}",
        out.stderr
    );
    assert!(!big.exists() && !cfg_path.exists(), "nothing is written");
}

#[test]
fn invalid_bases_are_named_by_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("bad.ign");
    fs::write(
        &base,
        "{\n  \"ignition\": {\"version\": \"3.2.0\"},\n  \"storage\": [,]\n}\n",
    )
    .unwrap();
    let out_path = dir.path().join("out.ign");
    let reference = fixture("mco-4.16").reference("oci");
    let out = run(
        &[
            "inject",
            "--image",
            &reference,
            "--bootimage",
            "4.8",
            "--ign",
            out_path.to_str().unwrap(),
            "--base",
            base.to_str().unwrap(),
        ],
        b"",
        dir.path(),
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("invalid JSON at line 3, column 15"),
        "{}",
        out.stderr
    );
    assert_eq!(dir_entries(dir.path()), ["bad.ign"]);

    // Valid JSON that is not a valid config is refused too.
    fs::write(
        &base,
        r#"{"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": 7}]}}"#,
    )
    .unwrap();
    let out = run(
        &[
            "inject",
            "--image",
            &reference,
            "--bootimage",
            "4.8",
            "--ign",
            "-",
            "--base",
            base.to_str().unwrap(),
        ],
        b"",
        dir.path(),
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("/storage/files/0/path"),
        "{}",
        out.stderr
    );
}

#[test]
fn verify_catches_tampering_and_wrong_targets() {
    let reference = fixture("mco-4.16").reference("oci");
    let out = inject_with_base("4.2", br#"{"ignition": {"version": "2.2.0"}}"#, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.ign");
    fs::write(&good, &out.stdout).unwrap();
    let verify = |p: &Path, extra: &[&str]| {
        let mut a = vec!["verify", p.to_str().unwrap()];
        a.extend(extra);
        run(&a, b"", dir.path())
    };
    let ok = verify(&good, &["--image", &reference]);
    assert_eq!(ok.code, Some(0), "{}", String::from_utf8_lossy(&ok.stdout));

    // The RHEL 8 build does not fit a RHEL 9 bootimage, and 4.16 reads no spec 2.2.
    let wrong = verify(&good, &["--bootimage", "4.16"]);
    assert_eq!(wrong.code, Some(1));
    let text = String::from_utf8_lossy(&wrong.stdout);
    assert!(
        text.contains("FAIL: spec 2.2.0 cannot be read by bootimage 4.16"),
        "{text}"
    );

    // A payload swapped for another one fails its hashes.
    let mut cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    let other = mcd_inject::ignition::data_url(b"\x1f\x8b not the payload");
    cfg["storage"]["files"][0]["contents"]["source"] = other.into();
    let bad = dir.path().join("bad.ign");
    fs::write(&bad, serde_json::to_vec(&cfg).unwrap()).unwrap();
    let r = verify(&bad, &[]);
    assert_eq!(r.code, Some(1));
    assert!(String::from_utf8_lossy(&r.stdout).contains("sha512 is"));
}

// ------------------------------------------------------------------------ goldens

/// The committed fixture, named relative to the crate root so goldens hold no host path.
const SMALL: &str = "oci:fixtures/mco-small:latest";

#[test]
fn golden_configs() {
    let bless = std::env::var_os("MCD_INJECT_BLESS").is_some_and(|v| v == "1");
    let cases: [(&str, &str, Option<&str>); 4] = [
        ("mco-small-4.2.ign", "4.2", None),
        ("mco-small-4.8.ign", "4.8", None),
        ("mco-small-4.16.ign", "4.16", None),
        (
            "mco-small-4.8-base.ign",
            "4.8",
            Some("tests/golden/base-3.2.ign"),
        ),
    ];
    let root = crate_root();
    let mut stale = Vec::new();
    for (file, boot, base) in cases {
        let mut args = vec![
            "inject",
            "--image",
            SMALL,
            "--bootimage",
            boot,
            "--ign",
            "-",
        ];
        if let Some(b) = base {
            args.extend(["--base", b]);
        }
        let out = run(&args, b"", &root);
        assert_eq!(out.code, Some(0), "{file}: {}", out.stderr);
        let golden = root.join("tests/golden").join(file);
        if bless {
            fs::write(&golden, &out.stdout).unwrap();
        } else {
            let committed = fs::read(&golden).unwrap_or_default();
            if committed != out.stdout {
                let name = format!("tests/golden/{file}");
                stale.push((file, unified_diff(&name, &committed, &out.stdout)));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale goldens {:?}: review the change, then rerun with MCD_INJECT_BLESS=1\n{}",
        stale.iter().map(|(f, _)| f).collect::<Vec<_>>(),
        stale.iter().map(|(_, d)| d.as_str()).collect::<String>()
    );
}

#[test]
fn a_stale_golden_is_shown_as_a_unified_diff() {
    let name = "tests/golden/mco-small-4.8.ign";
    let committed = fs::read(crate_root().join(name)).unwrap();
    let text = String::from_utf8(committed.clone()).unwrap();
    assert!(text.contains("\"version\": \"3.2.0\""));
    let now = text.replace("\"version\": \"3.2.0\"", "\"version\": \"3.3.0\"");
    let diff = unified_diff(name, &committed, now.as_bytes());
    assert!(
        diff.starts_with(&format!("--- {name} (committed)\n+++ {name} (now)\n@@ -")),
        "{diff}"
    );
    assert!(
        diff.contains("\n-    \"version\": \"3.2.0\"\n+    \"version\": \"3.3.0\"\n"),
        "{diff}"
    );
    assert_eq!(
        diff.lines().filter(|l| l.starts_with('-')).count(),
        2,
        "{diff}"
    );
    assert!(
        diff.lines().all(|l| l.len() < 260),
        "long lines are cut: {diff}"
    );
    assert!(unified_diff(name, &committed, &committed).is_empty());
}

/// A unit entry of a config, by name.
fn unit_mut<'a>(cfg: &'a mut Value, name: &str) -> &'a mut Value {
    cfg["systemd"]["units"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no unit {name}"))
}

/// Each edit that changes how the first boot runs the MCD is refused by `verify`, with
/// a reason that names it, for spec 2.2 and 3.2 outputs.
#[test]
fn verify_refuses_configs_whose_first_boot_runs_the_mcd_wrongly() {
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit, &str); 13] = [
        (
            "payload mode 0777",
            |c| c["storage"]["files"][0]["mode"] = 0o777.into(),
            "machine-config-daemon.gz: mode 777, this version writes 600",
        ),
        (
            "a second file entry at the payload path",
            |c| {
                let again = c["storage"]["files"][0].clone();
                c["storage"]["files"].as_array_mut().unwrap().push(again);
            },
            "/var/lib/mcd-inject/machine-config-daemon.gz is defined twice",
        ),
        (
            "the install script edited to skip its check, its hash fixed up",
            |c| {
                let files = c["storage"]["files"].as_array_mut().unwrap();
                let f = files
                    .iter_mut()
                    .find(|f| f["path"] == "/var/lib/mcd-inject/mco-mcd-install.sh")
                    .unwrap();
                let url = f["contents"]["source"].as_str().unwrap();
                let script = String::from_utf8(mcd_inject::ignition::decode_data_url(url).unwrap())
                    .unwrap()
                    .replace("if [ \"$got\" != \"$3\" ]; then", "if false; then");
                let sha512 = {
                    use sha2::Digest;
                    hex::encode(sha2::Sha512::digest(script.as_bytes()))
                };
                f["contents"]["source"] = mcd_inject::ignition::data_url(script.as_bytes()).into();
                f["contents"]["verification"]["hash"] = format!("sha512-{sha512}").into();
            },
            "mco-mcd-install.sh differs from the script this version writes",
        ),
        (
            "a later drop-in clears the pull unit's condition",
            |c| {
                unit_mut(c, PULL)["dropins"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({
                        "name": "99-zz.conf",
                        "contents": "[Unit]\nConditionPathExists=\n"
                    }))
            },
            "clears its condition; the pull would run",
        ),
        (
            "a later drop-in unsets the re-exec guard",
            |c| {
                unit_mut(c, FIRSTBOOT)["dropins"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({
                        "name": "99-zz.conf",
                        "contents": "[Service]\nUnsetEnvironment=_MCD_DID_REEXEC\n"
                    }))
            },
            "without _MCD_DID_REEXEC=1",
        ),
        (
            "a later drop-in runs the MCD through podman",
            |c| {
                unit_mut(c, FIRSTBOOT)["dropins"].as_array_mut().unwrap().push(json!({
                    "name": "99-zz.conf",
                    "contents": "[Service]\nExecStart=\nExecStart=/usr/bin/podman run --rm registry.example.com/mco firstboot-complete-machineconfig\n"
                }))
            },
            "runs the MCD through podman",
        ),
        (
            "our firstboot drop-in removed",
            |c| unit_mut(c, FIRSTBOOT)["dropins"] = json!([]),
            "has no drop-in 99-mcd-inject.conf",
        ),
        (
            "--root-mount=/ added (4.6-4.12 MCDs refuse it)",
            |c| {
                let d = &mut unit_mut(c, FIRSTBOOT)["dropins"][0]["contents"];
                *d = d
                    .as_str()
                    .unwrap()
                    .replace(
                        "firstboot-complete-machineconfig\n",
                        "firstboot-complete-machineconfig --root-mount=/\n",
                    )
                    .into();
            },
            "not exactly `/run/bin/machine-config-daemon firstboot-complete-machineconfig`",
        ),
        (
            "the re-exec guard removed",
            |c| {
                let d = &mut unit_mut(c, FIRSTBOOT)["dropins"][0]["contents"];
                *d = d
                    .as_str()
                    .unwrap()
                    .replace("Environment=_MCD_DID_REEXEC=1\n", "")
                    .into();
            },
            "without _MCD_DID_REEXEC=1",
        ),
        (
            "the install unit masked",
            |c| unit_mut(c, "mco-mcd-install.service")["mask"] = true.into(),
            "mco-mcd-install.service is masked",
        ),
        (
            "a drop-in on the install unit",
            |c| {
                unit_mut(c, "mco-mcd-install.service")["dropins"] = json!([{
                    "name": "50-x.conf",
                    "contents": "[Service]\nExecStart=\nExecStart=/bin/true\n"
                }])
            },
            "mco-mcd-install.service has drop-ins (50-x.conf)",
        ),
        (
            "the pull unit masked",
            |c| unit_mut(c, PULL)["mask"] = true.into(),
            "machine-config-daemon-pull.service is masked",
        ),
        (
            "the firstboot unit masked",
            |c| unit_mut(c, FIRSTBOOT)["mask"] = true.into(),
            "machine-config-daemon-firstboot.service is masked",
        ),
    ];
    let reference = fixture("mco-4.16").reference("oci");
    let dir = tempfile::tempdir().unwrap();
    for boot in ["4.2", "4.8"] {
        let good = dir.path().join(format!("good-{boot}.ign"));
        let r = mcd_inject([
            "inject",
            "--image",
            &reference,
            "--bootimage",
            boot,
            "--ign",
            good.to_str().unwrap(),
        ]);
        assert_eq!(r.code, Some(0), "{}", r.describe());
        let cfg: Value = serde_json::from_slice(&fs::read(&good).unwrap()).unwrap();
        for (what, edit, reason) in edits {
            let mut bad = cfg.clone();
            edit(&mut bad);
            let path = dir.path().join("bad.ign");
            fs::write(&path, serde_json::to_vec(&bad).unwrap()).unwrap();
            let r = mcd_inject(["verify", path.to_str().unwrap()]);
            let text = String::from_utf8_lossy(&r.stdout);
            assert_eq!(r.code, Some(1), "{boot}, {what}: verify passed\n{text}");
            assert!(
                text.lines()
                    .any(|l| l.starts_with("FAIL:") && l.contains(reason)),
                "{boot}, {what}: no FAIL line with {reason:?}\n{text}"
            );
        }
    }
}

/// A base of `files` files in `files / 100` directories, as many links, and a unit per
/// thousand files, plus MCO's firstboot unit: the shape of an installer's large base.
fn large_base(files: usize) -> Value {
    let dirs = files / 100;
    json!({
        "ignition": {"version": "3.2.0"},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAA"]}]},
        "storage": {
            "directories": (0..dirs).map(|d| json!({"path": format!("/etc/big/d{d:04}"), "mode": 493})).collect::<Vec<_>>(),
            "files": (0..files).map(|i| json!({
                "path": format!("/etc/big/d{:04}/f{i:06}", i % dirs),
                "mode": 420,
                "contents": {"source": format!("data:,file%20{i}")}
            })).collect::<Vec<_>>(),
            "links": (0..dirs).map(|d| json!({"path": format!("/etc/big/l{d:04}"), "target": format!("/etc/big/d{d:04}")})).collect::<Vec<_>>()
        },
        "systemd": {"units": (0..files / 1000).map(|u| json!({
            "name": format!("big-{u:03}.service"),
            "enabled": true,
            "contents": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
            "dropins": [{"name": "10-big.conf", "contents": "[Service]\nEnvironment=BIG=1\n"}]
        })).chain([json!({"name": FIRSTBOOT, "enabled": true, "contents": "[Unit]\nDescription=cluster's\n[Install]\nWantedBy=multi-user.target\n"})]).collect::<Vec<_>>()}
    })
}

#[test]
fn large_bases_are_merged_entry_by_entry_to_the_same_bytes() {
    let base = large_base(20_000);
    let compact = serde_json::to_vec(&base).unwrap();
    let out = inject_with_base("4.8", &compact, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Every base entry is kept, in order, before ours; the rest of the base as it was.
    let arr = |v: &Value, s: &str, k: &str| v[s][k].as_array().unwrap().clone();
    let files = arr(&cfg, "storage", "files");
    assert_eq!(files[..20_000], arr(&base, "storage", "files")[..]);
    assert_eq!(
        files.len(),
        20_005,
        "the two payloads (the bootimage's build, the cluster's), the scripts and the provenance follow"
    );
    assert_eq!(
        arr(&cfg, "storage", "directories"),
        arr(&base, "storage", "directories")
    );
    assert_eq!(
        arr(&cfg, "storage", "links")[..200],
        arr(&base, "storage", "links")[..]
    );
    assert_eq!(cfg["passwd"], base["passwd"]);
    let units = arr(&cfg, "systemd", "units");
    assert_eq!(units[..20], arr(&base, "systemd", "units")[..20]);
    let names: Vec<&str> = units[20..]
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&FIRSTBOOT) && names.contains(&PULL),
        "{names:?}"
    );

    // The bytes are those of the merged config serialised as a whole.
    let mut whole = serde_json::to_vec_pretty(&cfg).unwrap();
    whole.push(b'\n');
    assert!(
        whole == out.stdout,
        "the entry-by-entry writer differs from serde_json"
    );

    // It verifies, and re-injecting it gives the same bytes.
    assert_verifies(&out.stdout, &[]);
    let again = inject_with_base("4.8", &out.stdout, &[]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        again.stdout == out.stdout,
        "re-injecting a large base changed it"
    );
}

#[test]
fn large_bases_name_the_entry_that_breaks_a_rule() {
    let refused = |base: &Value, want: &str| {
        let out = inject_with_base("4.8", &serde_json::to_vec(base).unwrap(), &[]);
        assert_eq!(out.code, Some(1), "{want}: {}", out.stderr);
        assert!(
            out.stderr.contains(want),
            "want {want:?} in:\n{}",
            out.stderr
        );
        assert!(out.stdout.is_empty());
    };
    let mut base = large_base(20_000);
    base["storage"]["files"][17_000]["mode"] = json!("644");
    refused(&base, "/storage/files/17000/mode: expected type");
    let mut base = large_base(20_000);
    base["storage"]["links"][150]["hard"] = json!(1);
    base["storage"]["files"][12_345]["owner"] = json!("core");
    refused(&base, "unknown key /storage/files/12345/owner");
    let mut base = large_base(20_000);
    base["storage"]["files"][15_000]["path"] = json!("/etc/big/d0000/../f015000");
    refused(
        &base,
        "\"/etc/big/d0000/../f015000\": path is not fully simplified",
    );
    let mut base = large_base(20_000);
    base["storage"]["files"][19_999]["path"] = json!("/etc/big/d0003/f000003");
    refused(
        &base,
        "/etc/big/d0003/f000003 is defined twice (in storage.files and storage.files)",
    );
    let mut base = large_base(20_000);
    base["storage"]["links"][7]["path"] = json!("/etc/big/d0007");
    refused(
        &base,
        "/etc/big/d0007 is defined twice (in storage.directories and storage.links)",
    );
    refused(
        &base,
        "storage.files /etc/big/d0007/f000007 needs /etc/big/d0007 to be a directory, but storage.links puts a link there",
    );
    let mut base = large_base(20_000);
    let dropins = base["systemd"]["units"][3]["dropins"]
        .as_array_mut()
        .unwrap();
    dropins.push(json!({"name": "10-big.conf"}));
    refused(
        &base,
        "unit big-003.service: drop-in 10-big.conf is defined twice",
    );
}
