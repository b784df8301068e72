//! Entry points of the fuzz targets (`fuzz/`, run with cargo-fuzz on nightly Rust) and of
//! the tests that replay their kept inputs on stable Rust (`tests/it/fuzz_inputs.rs`).
//!
//! Each takes arbitrary bytes. Bad input must come back as an error: a panic, a hang or
//! unbounded memory is a bug. Where a property must hold (a round trip), it is asserted,
//! so that the fuzzer reports it like a crash.

use std::io::{Cursor, Read};
use std::sync::OnceLock;

use serde_json::Value;

use crate::ignition::units::{config, Build, Delivery};
use crate::ignition::{self, merge, schema, verify, Source, SpecVersion, SPECS};
use crate::image::fs::MergedFs;
use crate::image::oci::{self, Document};
use crate::image::{
    BlobSource, Compression, Digest, Image, ImageInfo, ImageRef, LayerInfo, Platform, Verification,
};

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target, by name (the name of its file under `fuzz/fuzz_targets/` and of its
/// directory of kept inputs under `fuzz/inputs/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("image_reference", image_reference),
    ("www_authenticate", www_authenticate),
    ("manifest", manifest),
    ("layers", layers),
    ("ignition", ignition_config),
    ("data_url", data_url),
    ("keyless", keyless),
    ("bootimage_file", bootimage_file),
];

/// Image references and platforms: parse; what a reference prints parses again to the
/// same reference.
pub fn image_reference(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = s.parse::<ImageRef>() {
        let shown = r.to_string();
        let again: ImageRef = shown
            .parse()
            .unwrap_or_else(|e| panic!("{s:?} parsed, but its rendering {shown:?} does not: {e}"));
        assert_eq!(again.to_string(), shown, "rendering of {s:?} is not stable");
    }
    if let Ok(p) = s.parse::<Platform>() {
        let shown = p.to_string();
        let again: Platform = shown
            .parse()
            .unwrap_or_else(|e| panic!("platform {s:?} renders as {shown:?}, which fails: {e}"));
        assert_eq!(again.to_string(), shown);
    }
}

/// `WWW-Authenticate` challenges.
pub fn www_authenticate(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        for (scheme, params) in crate::registry::parse_challenge(s).unwrap_or_default() {
            assert!(!scheme.is_empty(), "{s:?}: a challenge without a scheme");
            assert_eq!(scheme, scheme.to_ascii_lowercase());
            assert!(params.iter().all(|(k, _)| *k == k.to_ascii_lowercase()));
        }
    }
}

/// Manifests, indexes and image configs, and what is read from them.
pub fn manifest(data: &[u8]) {
    match oci::parse_document(data, "fuzz") {
        Ok(Document::Index(idx)) => {
            let _ = oci::choose_platform(idx.manifests(), &Platform::default(), "fuzz");
            for d in idx.manifests() {
                let _ = oci::descriptor_digest(d);
            }
        }
        Ok(Document::Manifest(m)) => {
            let _ = oci::layers_of(&m);
            let _ = oci::descriptor_digest(m.config());
        }
        Err(_) => {}
    }
    if let Ok(facts) = serde_json::from_slice::<oci::ConfigFacts>(data) {
        let _ = facts.checked_platform(&Platform::default(), "fuzz");
    }
}

/// Layers held in memory.
struct MemSource(Vec<Vec<u8>>);

impl BlobSource for MemSource {
    fn open_layer(&self, layer: &LayerInfo) -> anyhow::Result<Box<dyn Read + '_>> {
        let i: usize = layer.location.parse()?;
        Ok(Box::new(Cursor::new(&self.0[i][..])))
    }
}

/// The layer scanner and the merged view: the input is split in two layers (tar,
/// gzip or zstd, told by their magic bytes), the upper one first in the input; then
/// files, links and directories are looked up through whiteouts and links. Then again
/// with `inject`'s block-aware gzip decoder keeping the deflate blocks of
/// `usr/bin/machine-config-daemon`: a payload made of them must decompress to the file.
pub fn layers(data: &[u8]) {
    let (split, rest) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => return,
    };
    let at = if rest.is_empty() {
        0
    } else {
        split % (rest.len() + 1)
    };
    let (upper, lower) = rest.split_at(at);
    let blobs = vec![lower.to_vec(), upper.to_vec()];
    let layers = blobs
        .iter()
        .enumerate()
        .map(|(i, b)| LayerInfo {
            digest: Digest::of(b),
            size: b.len() as u64,
            media_type: "application/vnd.oci.image.layer.v1.tar".into(),
            compression: Compression::Detect,
            location: i.to_string(),
            verification: Verification::Blob {
                digest: Digest::of(b),
                size: b.len() as u64,
            },
        })
        .collect();
    let info = ImageInfo {
        reference: "fuzz".into(),
        name: None,
        manifest_digest: None,
        tag_digest: None,
        config_digest: Digest::of(b""),
        platform: Platform::default(),
        layers,
        labels: Default::default(),
        served_by: None,
    };
    let image = Image::new(info, Box::new(MemSource(blobs)));
    let Ok(spool) = tempfile::tempdir() else {
        return;
    };
    look_around(MergedFs::new(&image, spool.path(), |_| true));
}

fn look_around(mut fs: MergedFs) {
    for path in [
        "/usr/bin/machine-config-daemon",
        "/etc/os-release",
        "/a",
        "/a/b",
        "/",
    ] {
        let _ = fs.read_file(path);
        let _ = fs.resolve(path, false);
    }
    let _ = fs.list_dir("/usr/bin", |_| true);
    let _ = fs.list_dir("/a", |_| true);
}

/// What inject writes itself, per spec, for merging fuzzed bases into.
fn ours() -> &'static Vec<(SpecVersion, Value)> {
    static OURS: OnceLock<Vec<(SpecVersion, Value)>> = OnceLock::new();
    OURS.get_or_init(|| {
        let d = Delivery {
            first: Build {
                payload: Source::Inline(b"payload".to_vec()),
                payload_sha512: "0".repeat(128),
                binary_sha256: "0".repeat(64),
            },
            other: None,
            closure: None,
            provenance: b"{}".to_vec(),
            legacy_firstboot: true,
        };
        SPECS
            .iter()
            .filter_map(|s| config(&d).render(*s).ok().map(|v| (*s, v)))
            .collect()
    })
}

/// A spool directory for the whole fuzzing process, named like every temp entry of the
/// tool so that a later run sweeps it once the process is gone.
fn spool() -> Option<&'static std::path::Path> {
    static SPOOL: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    SPOOL
        .get_or_init(|| crate::io::tempfiles::dir_in(&std::env::temp_dir()).ok())
        .as_ref()
        .map(|d| d.path())
}

/// Ignition configs: parsed, validated for the spec they declare, merged as a `--base`
/// into what inject writes (for that spec, 2.2 and 3.4, with and without `--force`:
/// translated between the spec families where they differ), and checked by `verify`;
/// and read as the user-data Secret `--base` also takes.
pub fn ignition_config(data: &[u8]) {
    let _ = crate::userdata::config_of(data.to_vec());
    if let Ok(v) = ignition::parse_json("fuzz", data) {
        let declared = ignition::version_of(&v).and_then(|s| s.parse::<SpecVersion>().ok());
        if let Some(spec) = declared {
            let _ = schema::validate(&v, spec);
        }
        let doc = ignition::document::Document::parse("fuzz", data)
            .expect("what parses as a value parses lean");
        let mut lean = Vec::new();
        doc.write(&mut lean).expect("writing to memory");
        assert!(
            lean == ignition::to_bytes(&v),
            "a lean config writes other bytes"
        );
        for (spec, ours) in ours() {
            if Some(*spec) != declared && ![SpecVersion::V2_2, SpecVersion::V3_4].contains(spec) {
                continue;
            }
            for force in [false, true] {
                let doc = ignition::document::Document::parse("fuzz", data).expect("parsed above");
                if let Ok((merged, _)) = merge::merge(doc, ours, *spec, force) {
                    let _ = merged.write(&mut Vec::new());
                }
            }
        }
    }
    if let Some(spool) = spool() {
        let _ = verify::verify("fuzz", data, None, spool);
    }
}

/// A `--bootimage-file`: any file (an OVA, a VMDK, a tar archive, a VHD, a disk image,
/// stream metadata) is read or refused cleanly, also when an AMI is looked up in it.
pub fn bootimage_file(data: &[u8]) {
    let Ok(mut file) = tempfile::NamedTempFile::new() else {
        return;
    };
    if std::io::Write::write_all(&mut file, data).is_err() {
        return;
    }
    let _ = crate::bootimage::read_file(file.path(), "amd64");
    let _ = crate::bootimage::read_ami(file.path(), "amd64", "ami-0123456789abcdef0", None);
}

/// `data:` URLs: any string decodes or fails cleanly, and what [`ignition::data_url`]
/// writes decodes to the same bytes.
pub fn data_url(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = ignition::decode_data_url(s);
        let _ = ignition::decode_data_url(&format!("data:,{s}"));
    }
    let url = ignition::data_url(data);
    let back = ignition::decode_data_url(&url).expect("our own data URL decodes");
    assert_eq!(back, data, "data URL round trip");
}

/// A keyless signature's untrusted parts, separated by NUL bytes: a Rekor SET, a
/// certificate (PEM), a chain (PEM) and the signed payload. The SET is checked against
/// a fixed Rekor key, and the certificate as a Fulcio and as a PKI certificate, with the
/// certificate's own PEM blocks as the roots.
pub fn keyless(data: &[u8]) {
    use crate::trust::fuzzing::{check_certificate, check_set};
    let mut parts = data.splitn(4, |b| *b == 0);
    let set = parts.next().unwrap_or_default();
    let cert = parts.next().unwrap_or_default();
    let chain = parts.next().unwrap_or_default();
    let payload = parts.next().unwrap_or_default();
    check_set(set, cert, payload);
    check_certificate(cert, chain);
}
