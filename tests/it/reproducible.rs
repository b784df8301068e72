//! The same image and the same options give the same config, byte for byte, however the
//! image's path was spelt and wherever it lies; no path of the machine goes into a config.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::Value;

use crate::harness::{copy_tree, crate_root, fixture, sha256_hex, Bin, Run};
use mcd_inject::ignition::decode_data_url;

/// `inject --image REF --bootimage BOOT --ign -` run in `cwd`.
fn inject_in(cwd: &Path, reference: &str, boot: &str) -> Run {
    Bin::new([
        "inject",
        "--image",
        reference,
        "--bootimage",
        boot,
        "--ign",
        "-",
    ])
    .current_dir(cwd)
    .run()
}

/// Every text the config carries: itself, and the decoded `data:` contents of its files
/// (the payload is gzip; it is left out).
fn texts(config: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(config).unwrap();
    let mut out = vec![String::from_utf8(config.to_vec()).unwrap()];
    for f in v["storage"]["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        if path.ends_with(".gz") {
            continue;
        }
        if let Some(src) = f["contents"]["source"].as_str() {
            let bytes = decode_data_url(src).unwrap();
            out.push(format!("{path}: {}", String::from_utf8_lossy(&bytes)));
        }
    }
    out
}

/// The provenance record of a config.
fn provenance(config: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(config).unwrap();
    let f = v["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .expect("a provenance file");
    serde_json::from_slice(&decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap())
        .unwrap()
}

/// No absolute path of this machine (a temporary directory, the crate, the home).
fn assert_no_host_path(config: &[u8], paths: &[&Path]) {
    let home = std::env::var("HOME").unwrap_or_default();
    for text in texts(config) {
        for p in paths {
            let p = p.display().to_string();
            assert!(!text.contains(&p), "{p} is in the config: {text:.600}");
        }
        assert!(
            home.len() < 2 || !text.contains(&home),
            "{home} is in: {text:.600}"
        );
        assert!(
            !text.contains("/tmp/"),
            "a temporary path is in: {text:.600}"
        );
    }
}

#[test]
fn every_spelling_of_a_layout_path_gives_the_same_config() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let real = root.join("images");
    copy_tree(
        &crate_root().join("fixtures/mco-small"),
        &real.join("mco-small"),
    );
    symlink(&real, root.join("linked")).unwrap();
    let abs = real.join("mco-small").display().to_string();
    let spellings = [
        "oci:images/mco-small".to_string(),
        "oci:./images/mco-small".into(),
        format!("oci:{abs}"),
        "oci:linked/mco-small".into(),
        "oci:images/../linked/mco-small:latest".into(),
    ];
    for boot in ["4.8", "4.16"] {
        let mut first: Option<Vec<u8>> = None;
        for s in &spellings {
            let run = inject_in(&root, s, boot);
            assert_eq!(run.code, Some(0), "{}", run.describe());
            assert_no_host_path(&run.stdout, &[&root, &crate_root(), tmp.path()]);
            match &first {
                None => first = Some(run.stdout),
                Some(f) => assert!(
                    *f == run.stdout,
                    "{s} (bootimage {boot}) gives another config than {}: sha256 {} vs {}",
                    spellings[0],
                    sha256_hex(&run.stdout),
                    sha256_hex(f)
                ),
            }
        }
        // The committed fixture where it lies, named from the crate root: the same image.
        let run = inject_in(&crate_root(), "oci:fixtures/mco-small", boot);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        assert!(first.as_ref() == Some(&run.stdout), "bootimage {boot}");
        let p = provenance(&run.stdout);
        assert_eq!(
            p["image_on_disk"],
            serde_json::json!({"transport": "oci", "name": "latest"}),
            "{p}"
        );
        assert!(p.get("image").is_none(), "{p}");
        assert!(p["manifest_digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"));
    }
}

#[test]
fn archives_give_the_same_config_wherever_they_lie() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let f = fixture("mco-4.16");
    for transport in ["oci-archive", "docker-archive"] {
        let archive = f.location(transport);
        let name = archive.file_name().unwrap();
        let dir = root.join(transport);
        fs::create_dir_all(&dir).unwrap();
        fs::copy(&archive, dir.join(name)).unwrap();
        symlink(&dir, root.join(format!("{transport}-link"))).unwrap();
        let name = name.to_string_lossy();
        let here = inject_in(&crate_root(), &f.reference(transport), "4.8");
        assert_eq!(here.code, Some(0), "{}", here.describe());
        for s in [
            format!("{transport}:{transport}/{name}"),
            format!("{transport}:./{transport}-link/{name}"),
            format!("{transport}:{}", dir.join(&*name).display()),
        ] {
            let run = inject_in(&root, &s, "4.8");
            assert_eq!(run.code, Some(0), "{}", run.describe());
            assert!(
                run.stdout == here.stdout,
                "{s}: another config than {}",
                f.reference(transport)
            );
            assert_no_host_path(&run.stdout, &[&root, &crate_root(), &archive]);
        }
        let p = provenance(&here.stdout);
        assert_eq!(p["image_on_disk"]["transport"], transport, "{p}");
    }
}

#[test]
fn the_report_still_names_the_image_as_given() {
    // The config is what must not carry the path; the JSON report and the summary on
    // stderr are the run's own, and say what was read.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.ign");
    let reference = format!("oci:{}", crate_root().join("fixtures/mco-small").display());
    let run = Bin::new([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.16",
        "--ign",
        &out.display().to_string(),
        "--json",
    ])
    .run();
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["image"]["reference"], reference.as_str());
    assert_no_host_path(&fs::read(&out).unwrap(), &[&crate_root()]);
}

#[test]
fn verify_reads_provenance_records_of_either_form() {
    // A record written before images on disk were recorded without their path.
    let run = inject_in(&crate_root(), "oci:fixtures/mco-small", "4.8");
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let mut cfg: Value = serde_json::from_slice(&run.stdout).unwrap();
    let mut old = provenance(&run.stdout);
    let map = old.as_object_mut().unwrap();
    map.remove("image_on_disk");
    map.insert(
        "image".into(),
        "oci:/var/home/someone/images/mco-small:latest".into(),
    );
    let old_bytes = serde_json::to_vec_pretty(&old).unwrap();
    for f in cfg["storage"]["files"].as_array_mut().unwrap() {
        if f["path"] == "/var/lib/mcd-inject/provenance.json" {
            f["contents"]["source"] = mcd_inject::ignition::data_url(&old_bytes).into();
            let sha512 = hex::encode(<sha2::Sha512 as sha2::Digest>::digest(&old_bytes));
            f["contents"]["verification"]["hash"] = format!("sha512-{sha512}").into();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("new.ign", run.stdout.clone()),
        ("old.ign", serde_json::to_vec(&cfg).unwrap()),
    ] {
        let path = tmp.path().join(name);
        fs::write(&path, &bytes).unwrap();
        let r = Bin::new([
            "verify",
            &path.display().to_string(),
            "--image",
            "oci:fixtures/mco-small",
            "--json",
        ])
        .current_dir(crate_root())
        .run();
        let v: Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(r.code, Some(0), "{name}: {}\n{v}", r.describe());
        assert_eq!(v["ok"], true, "{name}: {v}");
        assert_eq!(v["provenance"]["target"]["bootimage"], "4.8", "{name}: {v}");
    }
}
