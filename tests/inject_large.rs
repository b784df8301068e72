//! A large payload: spec 2.2 inline configs over 10 MB get the cost warning (measured
//! rates of Ignition v0.35), remote mode and spec 3 configs do not.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;

use common::{fixture, inject, mcd_inject};
use flate2::write::GzEncoder;
use serde_json::json;
use sha2::{Digest as _, Sha256};

const PAYLOAD_TAIL: usize = 12 * 1024 * 1024;

fn put_blob(dir: &Path, bytes: &[u8]) -> (String, usize) {
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
    fs::write(dir.join("blobs/sha256").join(&digest[7..]), bytes).unwrap();
    (digest, bytes.len())
}

/// An OCI layout with one gzip layer holding `files` (path, bytes, mode).
fn layout(dir: &Path, files: &[(&str, &[u8], u32)]) {
    fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, path, *data).unwrap();
    }
    let tar = tar.into_inner().unwrap();
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    let (layer, layer_size) = put_blob(dir, &gz.finish().unwrap());
    let diff_id = format!("sha256:{}", hex::encode(Sha256::digest(&tar)));
    let config = serde_json::to_vec(&json!({"architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}}))
    .unwrap();
    let (cd, cs) = put_blob(dir, &config);
    let manifest = serde_json::to_vec(&json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": layer, "size": layer_size}]}))
    .unwrap();
    let (md, ms) = put_blob(dir, &manifest);
    let index = json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
        "annotations": {"org.opencontainers.image.ref.name": "latest"}}]});
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
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
    assert!(fs::metadata(&out).unwrap().len() < 64 * 1024);
    assert!(fs::metadata(&payload).unwrap().len() > PAYLOAD_TAIL as u64);

    let out = dir.path().join("spec3.ign");
    let run = inject(&reference, "4.8", &out, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(!run.stderr.contains("warning"), "{}", run.describe());
}
