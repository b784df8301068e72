//! Builds small OCI layouts in memory for unit tests of the merged view.

use std::fs;
use std::path::Path;

use flate2::write::GzEncoder;
use serde_json::json;

use super::Digest;

/// One tar entry of a test layer.
pub enum E<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
}

pub fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        match e {
            E::File(name, data, mode) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                h.set_mode(*mode);
                b.append_data(&mut h, name, *data).unwrap();
            }
            E::Dir(name) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_mode(0o755);
                b.append_data(&mut h, name, &[][..]).unwrap();
            }
            E::Symlink(name, target) | E::Hardlink(name, target) => {
                h.set_entry_type(if matches!(e, E::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                });
                h.set_size(0);
                h.set_mode(0o777);
                b.append_link(&mut h, name, target).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

fn put_blob(dir: &Path, bytes: &[u8]) -> Digest {
    let d = Digest::of(bytes);
    fs::write(dir.join(d.layout_path()), bytes).unwrap();
    d
}

/// Writes an OCI layout with gzip layers (bottom first) and tag `latest`.
pub fn layout(dir: &Path, layers: &[Vec<u8>]) {
    fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut descs = Vec::new();
    let mut diff_ids = Vec::new();
    for l in layers {
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, l).unwrap();
        let blob = gz.finish().unwrap();
        let d = put_blob(dir, &blob);
        diff_ids.push(Digest::of(l).to_string());
        descs.push(
            json!({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": d.to_string(), "size": blob.len()}),
        );
    }
    let config = serde_json::to_vec(&json!({"architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diff_ids}}))
    .unwrap();
    let cd = put_blob(dir, &config);
    let manifest = serde_json::to_vec(&json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": cd.to_string(), "size": config.len()},
        "layers": descs}))
    .unwrap();
    let md = put_blob(dir, &manifest);
    let index = json!({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": md.to_string(), "size": manifest.len(),
        "annotations": {"org.opencontainers.image.ref.name": "latest"}}]});
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
}
