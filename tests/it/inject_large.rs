//! A large payload: spec 2.2 inline configs over 10 MB get the cost warning (measured
//! rates of Ignition v0.35); every inline config over 16 KB gets the hand-over warning
//! (cloud user-data limits, fw_cfg's quadratic read); remote mode, whose config of a
//! few kB is all user data carries, gets neither.

use std::fs;
use std::path::Path;

use crate::harness::{fixture, inject, mcd_inject};

const PAYLOAD_TAIL: usize = 12 * 1024 * 1024;

/// An OCI layout with one gzip layer holding `files` (path, bytes, mode).
fn layout(dir: &Path, files: &[(&str, &[u8], u32)]) {
    crate::harness::write_layout(dir, &[crate::harness::gzip_layer(files)]);
}

/// Bytes gzip cannot shrink (xorshift64).
fn incompressible(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

#[test]
fn big_inline_spec2_configs_warn_and_remote_mode_does_not() {
    let dir = tempfile::tempdir().unwrap();
    // The static fixture MCD, with incompressible bytes appended (ELF readers ignore them).
    let small = dir.path().join("mcd");
    let run = mcd_inject([
        "extract",
        "--image",
        &fixture("mco-4.6").reference("oci"),
        "--path",
        "/usr/bin/machine-config-daemon",
        "-o",
        small.to_str().unwrap(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let mut binary = fs::read(&small).unwrap();
    binary.extend(incompressible(PAYLOAD_TAIL));
    let os_release = b"ID=\"rhel\"\nVERSION_ID=\"8.6\"\nRHEL_VERSION=8.6\n";
    let img = dir.path().join("big");
    layout(
        &img,
        &[
            ("usr/bin/machine-config-daemon", &binary, 0o755),
            ("usr/lib/os-release", os_release, 0o644),
        ],
    );
    let reference = format!("oci:{}:latest", img.display());
    let out = dir.path().join("inline.ign");
    let run = inject(&reference, "4.2", &out, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let size = fs::metadata(&out).unwrap().len();
    assert!(size > 10_000_000, "config is only {size} bytes");
    assert!(
        run.stderr.contains("warning: the spec 2.2 config is")
            && run.stderr.contains("s of CPU per MB")
            && run.stderr.contains("in its fetch stage")
            && run.stderr.contains("--payload-url"),
        "{}",
        run.describe()
    );
    assert!(
        run.stderr
            .contains("with the payload inline: over the user-data limit of AWS 16 KB"),
        "{}",
        run.describe()
    );

    let out = dir.path().join("remote.ign");
    let payload = dir.path().join("payload.gz");
    let run = inject(
        &reference,
        "4.2",
        &out,
        &[
            "--payload-url",
            "http://127.0.0.1:8080/machine-config-daemon.gz",
            "--payload-out",
            payload.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(!run.stderr.contains("warning"), "{}", run.describe());
    assert!(fs::metadata(&out).unwrap().len() < 16 * 1024);
    assert!(fs::metadata(&payload).unwrap().len() > PAYLOAD_TAIL as u64);

    // Spec 3: no Ignition v0.x cost, but the config cannot travel as user data or fw_cfg.
    let out = dir.path().join("spec3.ign");
    let run = inject(&reference, "4.8", &out, &["--json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        !run.stderr.contains("warning: the spec 2.2"),
        "{}",
        run.describe()
    );
    assert_eq!(
        run.stderr.matches("warning:").count(),
        1,
        "{}",
        run.describe()
    );
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let w = &v["warnings"][0];
    assert_eq!(w["kind"], "inline-config-too-big-to-hand-over", "{v:#}");
    assert_eq!(w["remote"], false, "{v:#}");
    assert_eq!(w["bytes"], fs::metadata(&out).unwrap().len(), "{v:#}");
    assert_eq!(
        w["user_data_exceeded"].as_array().unwrap().len(),
        3,
        "{v:#}"
    );
    // Quadratic: over 12 MB, an hour or more through fw_cfg.
    assert!(w["fw_cfg_seconds"].as_f64().unwrap() > 3600.0, "{v:#}");
    let message = w["message"].as_str().unwrap();
    assert!(
        message.contains("fw_cfg") && message.contains("--payload-url"),
        "{message}"
    );
    assert!(
        run.stderr.contains(&format!("warning: {message}")),
        "{}",
        run.describe()
    );
}

/// A config under the smallest user-data limit (AWS, 16 KB) gets no hand-over warning.
#[test]
fn small_inline_configs_do_not_warn() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.ign");
    let run = inject(&fixture("mco-4.6").reference("oci"), "4.8", &out, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(fs::metadata(&out).unwrap().len() < 16 * 1024);
    assert!(!run.stderr.contains("warning"), "{}", run.describe());
}
