//! Keyless sigstore signatures judged twice: by mcd-inject (a `fulcio` + Rekor
//! `sigstoreSigned` policy, against a signature layer on the TLS registry, through the
//! CLI) and by an independent verifier, sigstore-python's `sigstore verify identity
//! --offline` with a trust configuration of the same Fulcio CA and Rekor key; the two
//! verdicts must agree on every case, and agree with what the case is meant to show.
//!
//! The material is made by `tests/oracle/keyless_cases.py` (Python's `cryptography`, in
//! the verifier's venv), from the payload signed here: per case the cosign annotations
//! mcd-inject reads and the Sigstore bundle (v0.3) sigstore-python reads, of the same
//! certificate, signature and SET. sigstore-python needs more than containers/image
//! does, which the generator adds to every case alike: an SCT from a CT log in the leaf,
//! and an inclusion proof with a checkpoint signed by the Rekor key (it refuses an entry
//! with an inclusion promise only). `scripts/test.sh` installs the verifier
//! (`tests/oracle/requirements.txt`) in `target/oracle-venv`; without it this test fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::registry::registries;
use crate::harness::{crate_root, require_tools, run_ok};
use crate::sigstore::{payload, pushed, registries_d, Case, Pushed, Registry};

/// The sigstore-python that `scripts/test.sh` installs (tests/oracle/requirements.txt).
const SIGSTORE_VERSION: &str = "sigstore 4.5.1";

/// The venv of the verifier: `MCD_INJECT_ORACLE_VENV`, else `target/oracle-venv`.
fn venv() -> PathBuf {
    let dir = std::env::var_os("MCD_INJECT_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_root().join("target/oracle-venv"));
    let out = Command::new(dir.join("bin/sigstore"))
        .arg("--version")
        .output();
    let version = out
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    assert!(
        version == SIGSTORE_VERSION,
        "this test needs {SIGSTORE_VERSION} in the venv {} (found: {}); scripts/test.sh \
         installs it: python3 -m venv {0} && {0}/bin/pip install -r \
         tests/oracle/requirements.txt",
        dir.display(),
        match &out {
            Ok(_) => format!("{version:?}"),
            Err(e) => e.to_string(),
        }
    );
    dir
}

/// A verdict, and what was said.
#[derive(Debug)]
struct Verdict {
    accepted: bool,
    said: String,
}

/// mcd-inject's `extract` with this policy: accepted (exit 0, the file written) or
/// refused by the policy (exit 1); anything else fails the test.
fn mcd_inject(case: &Case, policy: &str, regd: &str) -> Verdict {
    let out_file = case.sb.path("extracted");
    let _ = fs::remove_file(&out_file);
    let out_s = out_file.display().to_string();
    let mut args = vec![
        "extract",
        "--image",
        &case.image,
        "--authfile",
        &case.auth,
        "--cert-dir",
        case.ca,
        "--signature-policy",
        policy,
        "--registries.d",
        regd,
        "--path",
        "/usr/bin/machine-config-daemon",
        "-o",
        &out_s,
    ];
    args.extend(case.extra.iter().map(String::as_str));
    let out = case.sb.run(&args);
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) if out_file.exists() => Verdict {
            accepted: true,
            said,
        },
        Some(1) if said.contains("refused by the signature policy") => Verdict {
            accepted: false,
            said,
        },
        _ => panic!(
            "mcd-inject neither accepted nor refused ({}):\n{said}",
            out.status
        ),
    }
}

/// `sigstore verify identity --offline` of the payload with this bundle: OK (exit 0) or
/// FAIL (exit 1); anything else (a usage error, a crash) fails the test.
fn sigstore(venv: &Path, out: &Path, bundle: &str, cases: &Value, payload: &Path) -> Verdict {
    let o = run_tool_output(
        Command::new(venv.join("bin/sigstore"))
            .env("COLUMNS", "1000")
            .arg("--trust-config")
            .arg(out.join("trust-config.json"))
            .args(["verify", "identity", "--offline", "--bundle"])
            .arg(out.join(bundle))
            .args(["--cert-identity", cases["identity"].as_str().unwrap()])
            .args(["--cert-oidc-issuer", cases["issuer"].as_str().unwrap()])
            .arg(payload),
    );
    // Its log lines are padded to the terminal's width: one space between words.
    let said = String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    match o.status.code() {
        Some(0) if said.contains("OK: ") => Verdict {
            accepted: true,
            said,
        },
        Some(1) if said.contains("FAIL: ") && !said.contains("Traceback") => Verdict {
            accepted: false,
            said,
        },
        _ => panic!(
            "sigstore neither verified nor refused ({}):\n{said}",
            o.status
        ),
    }
}

/// The line that says why: mcd-inject's error, sigstore's error after its FAIL line.
fn gist(said: &str) -> String {
    said.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.contains("FAIL: ") && !l.starts_with("For detailed"))
        .unwrap_or("")
        .to_string()
}

fn run_tool_output(cmd: &mut Command) -> std::process::Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

#[test]
fn keyless_verdicts_agree_with_sigstore_python() {
    require_tools(&["skopeo", "curl"]);
    let venv = venv();
    let r = registries();
    let Pushed {
        sb,
        dir,
        uniq,
        repo,
        image,
        digest,
    } = pushed(&r, "oracle");

    // The material of every case, over the payload cosign signs for this image.
    let signed = payload(&digest, &image);
    let payload_file = dir.join("payload");
    fs::write(&payload_file, &signed).unwrap();
    let out = dir.join("cases");
    run_ok(
        Command::new(venv.join("bin/python"))
            .arg(crate_root().join("tests/oracle/keyless_cases.py"))
            .arg(&payload_file)
            .arg(&out),
    );
    let cases: Value = serde_json::from_slice(&fs::read(out.join("cases.json")).unwrap()).unwrap();

    let regd = registries_d(
        &dir.join("registries.d"),
        &format!(
            "docker:\n  {}/oracle-{uniq}:\n    use-sigstore-attachments: true\n",
            r.basic
        ),
    );
    let policy = dir.join("policy.json");
    fs::write(
        &policy,
        json!({"default": [{"type": "insecureAcceptAnything"}],
               "transports": {"docker": {format!("{}/oracle-{uniq}", r.basic): [
                   {"type": "sigstoreSigned",
                    "fulcio": {"caPath": out.join("fulcio-root.pem"),
                               "oidcIssuer": cases["issuer"], "subjectEmail": cases["identity"]},
                    "rekorPublicKeyPath": out.join("rekor.pub")}]}}})
        .to_string(),
    )
    .unwrap();
    let policy = policy.display().to_string();
    let reg = Registry { r: &r, dir: &dir };
    let case = Case {
        extra: Vec::new(),
        auth: sb
            .write_auth("auth.json", &r.basic, &r.basic_user, &r.basic_password)
            .display()
            .to_string(),
        sb,
        image: image.clone(),
        ca: &r.ca_dir,
    };

    let list = cases["cases"].as_array().unwrap();
    assert!(list.len() >= 11, "{} cases", list.len());
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    for c in list {
        let name = c["name"].as_str().unwrap();
        let intent = c["intent"].as_str().unwrap() == "accept";
        reg.attach_layers(
            &repo,
            &digest,
            &[(signed.clone(), c["annotations"].clone())],
            &[],
        );
        let ours = mcd_inject(&case, &policy, &regd);
        let theirs = sigstore(
            &venv,
            &out,
            c["bundle"].as_str().unwrap(),
            &cases,
            &payload_file,
        );
        let word = |a: bool| if a { "accepted" } else { "refused" };
        table.push(format!(
            "{name}: mcd-inject {} ({}), sigstore-python {} ({})",
            word(ours.accepted),
            gist(&ours.said),
            word(theirs.accepted),
            gist(&theirs.said)
        ));
        if ours.accepted != theirs.accepted {
            wrong.push(format!(
                "{name}: the verdicts differ: mcd-inject {} ({}); sigstore-python {} ({})",
                word(ours.accepted),
                ours.said,
                word(theirs.accepted),
                theirs.said
            ));
        } else if ours.accepted != intent {
            wrong.push(format!(
                "{name}: both {}, the case is meant to be {}: mcd-inject: {}; \
                 sigstore-python: {}",
                word(ours.accepted),
                word(intent),
                ours.said,
                theirs.said
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
