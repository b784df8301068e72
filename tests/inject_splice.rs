//! The payload made of the layer's own deflate blocks, with the real RHEL 8 MCD (from
//! `../shared/real-mcd`): spliced from a layer that compresses it as well as level 6,
//! compressed here from one that does not; either way the node's own commands (`gzip
//! -dc`, `truncate -s`) give back the binary, and `verify` accepts the config.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use common::{mcd_inject, node, sha256_hex, tar_with_parents, write_layout};

const OS_RELEASE: &[u8] = b"ID=\"rhel\"\nVERSION_ID=\"9.4\"\nRHEL_VERSION=9.4\n";

fn gzip_at(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// An MCO-shaped image: os-release below, the twin above, the top layer at `level`.
fn image(dir: &Path, twin: &[u8], level: u32) -> String {
    let base = gzip_at(
        &tar_with_parents(&[("usr/lib/os-release", OS_RELEASE, 0o644)]),
        6,
    );
    let top = tar_with_parents(&[
        ("usr/bin/machine-config-daemon.rhel8", twin, 0o755),
        ("usr/bin/machine-config-operator", b"#!/bin/sh\n", 0o755),
    ]);
    write_layout(dir, &[base, gzip_at(&top, level)])
}

/// `inject -v --bootimage 4.2` in remote mode: (its log, the payload).
fn inject(dir: &Path, reference: &str) -> (String, Vec<u8>) {
    let (ign, payload) = (dir.join("out.ign"), dir.join("p.gz"));
    let r = mcd_inject([
        "inject",
        "-v",
        "--image",
        reference,
        "--bootimage",
        "4.2",
        "--ign",
        ign.to_str().unwrap(),
        "--payload-url",
        "https://example.com/machine-config-daemon.gz",
        "--payload-out",
        payload.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let v = mcd_inject([
        "verify",
        ign.to_str().unwrap(),
        "--payload",
        payload.to_str().unwrap(),
        "--image",
        reference,
    ]);
    assert_eq!(v.code, Some(0), "{}", v.describe());
    (r.stderr, fs::read(payload).unwrap())
}

/// What the install script does with the payload: `gzip -dc`, then `truncate -s`.
fn on_the_node(dir: &Path, payload: &[u8], size: usize) -> Vec<u8> {
    let (gz, out) = (dir.join("node.gz"), dir.join("node.bin"));
    fs::write(&gz, payload).unwrap();
    let ok = Command::new("sh")
        .arg("-c")
        .arg(r#"gzip -dc "$1" >"$2" && truncate -s "$3" "$2""#)
        .args([
            "sh",
            gz.to_str().unwrap(),
            out.to_str().unwrap(),
            &size.to_string(),
        ])
        .status()
        .expect("sh, gzip and truncate run")
        .success();
    assert!(ok, "gzip -dc / truncate failed");
    fs::read(out).unwrap()
}

fn gunzip_len(payload: &[u8]) -> usize {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(payload)
        .read_to_end(&mut out)
        .unwrap();
    out.len()
}

#[test]
fn a_layer_as_good_as_level_6_gives_its_blocks_and_one_that_is_not_does_not() {
    let twin = fs::read(node::shared_program("real-mcd", "mcd-main-rhel8")).unwrap();
    let want = sha256_hex(&twin);
    let dir = tempfile::tempdir().unwrap();

    // zlib's level 9: the samples favour the layer; the payload is its blocks.
    let good = image(&dir.path().join("nine"), &twin, 9);
    let (log, spliced) = inject(dir.path(), &good);
    assert!(log.contains("made of the layer's own"), "{log}");
    assert!(gunzip_len(&spliced) >= twin.len());
    assert_eq!(
        sha256_hex(&on_the_node(dir.path(), &spliced, twin.len())),
        want
    );
    // The same bytes again.
    let (_, again) = inject(dir.path(), &good);
    assert!(again == spliced, "a spliced payload is reproducible");

    // zlib-rs's level 3: the samples show its blocks 10% bigger than level 6; the
    // payload is compressed here, to exactly the binary.
    let fast = image(&dir.path().join("three"), &twin, 3);
    let (log, compressed) = inject(dir.path(), &fast);
    assert!(log.contains("not made of the layer's blocks"), "{log}");
    assert_eq!(gunzip_len(&compressed), twin.len());
    assert_eq!(
        sha256_hex(&on_the_node(dir.path(), &compressed, twin.len())),
        want
    );
    assert!(
        spliced.len() < compressed.len() * 101 / 100,
        "the splice is about as small as level 6: {} against {}",
        spliced.len(),
        compressed.len()
    );
}
