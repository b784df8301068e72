//! Images that must not hurt the host, on the built binary: blobs that never end or
//! are longer than their descriptor, broken `oci-layout` files, a config whose
//! `rootfs.diff_ids` does not match the manifest, and the extracted-file size limit.
//! Each must exit 1 with a message naming what is wrong, and write nothing.
//! (The fixtures with PAX / long-name bombs and a 1 GiB + 1 byte MCD are checked by
//! `extract_vs_umoci.rs`, from `fixtures.json`.)

use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::{
    copy_tree, dir_entries, fixture, image_reference, mcd_inject, sha256_hex, Run,
};
use tempfile::TempDir;

const MCD: &str = "/usr/bin/machine-config-daemon";

fn layout_copy(name: &str) -> (TempDir, PathBuf) {
    let scratch = TempDir::new().unwrap();
    let layout = scratch.path().join(name);
    copy_tree(&fixture(name).layout(), &layout);
    (scratch, layout)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.strip_prefix("sha256:").unwrap())
}

fn manifest_digest(layout: &Path) -> String {
    json(&layout.join("index.json"))["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn top_layer(layout: &Path) -> String {
    let manifest = json(&blob(layout, &manifest_digest(layout)));
    manifest["layers"].as_array().unwrap().last().unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn extract(layout: &Path, extra: &[&str]) -> (TempDir, Run) {
    let out = TempDir::new().unwrap();
    let mut args = vec![
        "extract".to_owned(),
        "--image".to_owned(),
        image_reference("oci", layout, "latest"),
        "--path".to_owned(),
        MCD.to_owned(),
        "-o".to_owned(),
        out.path().join("out").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = mcd_inject(args);
    (out, run)
}

/// Exit 1, an `error:` naming every needle, nothing written.
fn assert_refused(what: &str, out: &TempDir, run: &Run, needles: &[&str]) {
    assert_eq!(run.code, Some(1), "{what}: {}", run.describe());
    assert!(
        run.stderr.starts_with("error:"),
        "{what}: {}",
        run.describe()
    );
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "{what}: stderr does not name {needle:?}: {}",
            run.describe()
        );
    }
    assert!(
        dir_entries(out.path()).is_empty(),
        "{what}: output written: {:?}",
        dir_entries(out.path())
    );
}

#[test]
fn a_blob_longer_than_its_descriptor_is_refused_without_reading_it() {
    let (_s, layout) = layout_copy("mco-4.6");
    let top = top_layer(&layout);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(blob(&layout, &top))
        .unwrap();
    let len = file.metadata().unwrap().len();
    // 4 GiB more, sparse: reading it to the end would take a minute.
    file.set_len(len + (4 << 30)).unwrap();
    let (out, run) = extract(&layout, &[]);
    assert_refused(
        "4 GiB appended",
        &out,
        &run,
        &[&top, &format!("{} bytes", len + (4 << 30))],
    );
}

#[test]
fn blobs_that_are_not_regular_files_are_refused() {
    for (what, make) in [
        ("a FIFO", "fifo"),
        ("a symlink to /dev/zero", "zero"),
        ("a directory", "dir"),
    ] {
        let (_s, layout) = layout_copy("mco-4.6");
        let top = top_layer(&layout);
        let path = blob(&layout, &top);
        fs::remove_file(&path).unwrap();
        match make {
            "fifo" => {
                let status = std::process::Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .expect("run mkfifo");
                assert!(status.success());
            }
            "zero" => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
            _ => fs::create_dir(&path).unwrap(),
        }
        let (out, run) = extract(&layout, &[]);
        assert!(!run.timed_out, "{what}: {}", run.describe());
        assert_refused(
            what,
            &out,
            &run,
            &[top.strip_prefix("sha256:").unwrap(), "not a regular file"],
        );
    }
}

#[test]
fn oci_layout_files_are_checked() {
    for (what, content, needle) in [
        ("missing", None, "no oci-layout file"),
        ("garbage", Some(&b"\x00garbage"[..]), "oci-layout"),
        ("no version", Some(&b"{}"[..]), "oci-layout"),
        (
            "version 2.0.0",
            Some(&br#"{"imageLayoutVersion":"2.0.0"}"#[..]),
            "\"2.0.0\"",
        ),
    ] {
        let (_s, layout) = layout_copy("mco-4.6");
        match content {
            None => fs::remove_file(layout.join("oci-layout")).unwrap(),
            Some(bytes) => fs::write(layout.join("oci-layout"), bytes).unwrap(),
        }
        let (out, run) = extract(&layout, &[]);
        assert_refused(what, &out, &run, &[needle]);
    }
    // A later 1.x layout is read.
    let (_s, layout) = layout_copy("mco-4.6");
    fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.1.0"}"#,
    )
    .unwrap();
    let (_out, run) = extract(&layout, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
}

/// Rewrites the config with `edit`, then the manifest and index.json to match.
fn edit_config(layout: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let manifest_path = blob(layout, &manifest_digest(layout));
    let mut manifest = json(&manifest_path);
    let config_path = blob(layout, manifest["config"]["digest"].as_str().unwrap());
    let mut config = json(&config_path);
    edit(&mut config);
    let bytes = serde_json::to_vec(&config).unwrap();
    let digest = format!("sha256:{}", sha256_hex(&bytes));
    fs::write(blob(layout, &digest), &bytes).unwrap();
    manifest["config"]["digest"] = digest.into();
    manifest["config"]["size"] = bytes.len().into();
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = format!("sha256:{}", sha256_hex(&bytes));
    fs::write(blob(layout, &digest), &bytes).unwrap();
    let mut index = json(&layout.join("index.json"));
    index["manifests"][0]["digest"] = digest.into();
    index["manifests"][0]["size"] = bytes.len().into();
    fs::write(layout.join("index.json"), index.to_string()).unwrap();
}

#[test]
fn diff_ids_must_match_the_manifest_layers() {
    let (_s, layout) = layout_copy("mco-4.6");
    edit_config(&layout, |c| {
        c["rootfs"]["diff_ids"].as_array_mut().unwrap().pop();
    });
    let (out, run) = extract(&layout, &[]);
    assert_refused(
        "one diff_id too few",
        &out,
        &run,
        &["2 layers", "rootfs.diff_ids has 1"],
    );
    let (_s, layout) = layout_copy("mco-4.6");
    edit_config(&layout, |c| {
        c.as_object_mut().unwrap().remove("rootfs");
    });
    let (out, run) = extract(&layout, &[]);
    assert_refused("no rootfs", &out, &run, &["no rootfs.diff_ids"]);
}

#[test]
fn max_file_size_is_checked_from_the_header_and_can_be_raised() {
    let f = fixture("mco-4.6");
    let mcd = f.present.iter().find(|p| p.path == MCD).unwrap();
    let layout = f.layout();
    let below = (mcd.size - 1).to_string();
    let (out, run) = extract(&layout, &["--max-file-size", &below]);
    assert_refused(
        "one byte over",
        &out,
        &run,
        &[
            "layer sha256:",
            MCD,
            &format!("{} bytes, over the limit of {below} bytes", mcd.size),
            "--max-file-size",
        ],
    );
    let (out, run) = extract(&layout, &["--max-file-size", &mcd.size.to_string()]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(
        sha256_hex(&fs::read(out.path().join("out")).unwrap()),
        mcd.sha256
    );
    let (_out, run) = extract(&layout, &["--max-file-size", "12X"]);
    assert_eq!(run.code, Some(2), "{}", run.describe());
}

/// `inspect --json` lists the MCD builds of a usr-merged image whose upper layers change
/// them through `bin/`: the replaced build, never a deleted one.
#[test]
fn inspect_sees_builds_changed_through_bin() {
    for (name, expected) in [
        (
            "usr-merged-through-bin",
            vec!["/usr/bin/machine-config-daemon"],
        ),
        (
            "usr-merged-deleted-through-bin",
            vec!["/usr/bin/machine-config-daemon.rhel8"],
        ),
    ] {
        let f = fixture(name);
        let run = mcd_inject(["inspect", "--json", "--image", &f.reference("oci")]);
        assert_eq!(run.code, Some(0), "{name}: {}", run.describe());
        let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        let builds: Vec<(&str, &str)> = doc["binaries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["path"].as_str().unwrap(), b["sha256"].as_str().unwrap()))
            .collect();
        let paths: Vec<&str> = builds.iter().map(|b| b.0).collect();
        assert_eq!(paths, expected, "{name}");
        for (path, sha) in builds {
            let want = f.present.iter().find(|p| p.path == path).unwrap();
            assert_eq!(sha, format!("sha256:{}", want.sha256), "{name} {path}");
        }
    }
}

#[test]
fn an_archive_that_is_not_a_regular_file_is_refused() {
    let scratch = TempDir::new().unwrap();
    let fifo = scratch.path().join("image.tar");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
    for transport in ["oci-archive", "docker-archive"] {
        let out = TempDir::new().unwrap();
        let run = mcd_inject([
            "extract".to_owned(),
            "--image".to_owned(),
            format!("{transport}:{}", fifo.display()),
            "--path".to_owned(),
            MCD.to_owned(),
            "-o".to_owned(),
            out.path().join("out").display().to_string(),
        ]);
        assert!(!run.timed_out, "{transport}: {}", run.describe());
        assert_refused(transport, &out, &run, &["not a regular file"]);
    }
}

/// `inject`, `inspect` and `verify --image` read the image through the same limit.
#[test]
fn max_file_size_applies_to_inject_inspect_and_verify() {
    let reference = fixture("mco-4.6").reference("oci");
    let scratch = TempDir::new().unwrap();
    let ign = scratch.path().join("out.ign");
    let ign_arg = ign.display().to_string();
    let over_the_limit = |run: &Run| {
        assert_eq!(run.code, Some(1), "{}", run.describe());
        assert!(
            run.stderr.contains("over the limit of 100 bytes"),
            "{}",
            run.describe()
        );
    };
    let run = mcd_inject([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.6",
        "--ign",
        &ign_arg,
        "--max-file-size",
        "100",
    ]);
    over_the_limit(&run);
    assert!(!ign.exists(), "inject wrote a config despite the refusal");
    let run = mcd_inject(["inspect", "--image", &reference, "--max-file-size", "100"]);
    over_the_limit(&run);
    let run = mcd_inject([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.6",
        "--ign",
        &ign_arg,
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let run = mcd_inject([
        "verify",
        &ign_arg,
        "--image",
        &reference,
        "--max-file-size",
        "100",
    ]);
    over_the_limit(&run);
    let run = mcd_inject(["verify", &ign_arg, "--image", &reference]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
}
