//! Inputs read the way the containers tools read them (`--platform` names, references),
//! near misses answered with the spelling to use, and refusals that say what to do next.

use std::fs;

use crate::harness::{
    crate_root, dir_entries, fixture, gzip_layer, inject, mcd_inject, write_layout, Bin,
};

const MCD: &str = "/usr/bin/machine-config-daemon";

/// `inspect --json` of the multi-arch fixture for `platform`: the platform read.
fn platform_read(platform: &str) -> (Option<i32>, String, String) {
    let r = mcd_inject([
        "inspect",
        "--json",
        "--image",
        &fixture("mco-multiarch").reference("oci"),
        "--platform",
        platform,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap_or_default();
    (
        r.code,
        v["image"]["platform"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        r.stderr,
    )
}

#[test]
fn kernel_names_of_architectures_are_read_as_oci_names() {
    for (given, read) in [
        ("linux/x86_64", "linux/amd64"),
        ("linux/x86-64", "linux/amd64"),
        ("linux/amd64", "linux/amd64"),
        ("linux/aarch64", "linux/arm64/v8"),
        ("linux/aarch64/v8", "linux/arm64/v8"),
        ("linux/arm64", "linux/arm64/v8"),
    ] {
        let (code, platform, stderr) = platform_read(given);
        assert_eq!(code, Some(0), "{given}: {stderr}");
        assert_eq!(platform, read, "{given}");
    }
    // The node's architecture too: an aarch64 node gets the arm64 build.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ign");
    for p in ["linux/aarch64", "linux/arm64"] {
        let r = inject(
            &fixture("mco-multiarch").reference("oci"),
            "4.16",
            &out,
            &["--platform", p, "--json"],
        );
        assert_eq!(r.code, Some(0), "{}", r.describe());
        let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(v["target"]["bootimage"], "4.16");
        assert_eq!(v["image"]["platform"], "linux/arm64/v8", "{p}: {v}");
    }
    // From the environment as well; armhf is arm/v7, which this image does not have.
    let r = Bin::new([
        "inspect",
        "--image",
        &fixture("mco-multiarch").reference("oci"),
    ])
    .env("MCD_INJECT_PLATFORM", "linux/armhf")
    .run();
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(r.stderr.contains("linux/arm/v7"), "{}", r.stderr);
}

#[test]
fn near_miss_references_get_the_spelling_to_use() {
    let r = mcd_inject(["inspect", "--image", "docker:registry.example/ocp/mco:4.16"]);
    assert_eq!(r.code, Some(2), "{}", r.describe());
    assert!(
        r.stderr.contains("docker://registry.example/ocp/mco:4.16"),
        "{}",
        r.stderr
    );
    // A directory given bare, from its parent, as `./DIR`, and by its absolute path.
    let layout = crate_root().join("fixtures/mco-small");
    for (cwd, given) in [
        (crate_root(), "fixtures/mco-small".to_string()),
        (crate_root(), "./fixtures/mco-small".to_string()),
        (crate_root(), layout.display().to_string()),
    ] {
        let r = Bin::new(["inspect", "--image", &given])
            .current_dir(&cwd)
            .run();
        assert_eq!(r.code, Some(2), "{}", r.describe());
        assert!(r.stderr.contains(&format!("oci:{given}")), "{}", r.stderr);
        assert!(r.stderr.contains("docker://"), "{}", r.stderr);
        // The hint works as given.
        let r = Bin::new(["inspect", "--image", &format!("oci:{given}")])
            .current_dir(&cwd)
            .run();
        assert_eq!(r.code, Some(0), "{}", r.describe());
    }
    // An archive given bare.
    let archive = fixture("mco-small").location("oci-archive");
    let r = mcd_inject(["inspect", "--image", &archive.display().to_string()]);
    assert_eq!(r.code, Some(2), "{}", r.describe());
    for t in ["oci-archive:", "docker-archive:"] {
        assert!(
            r.stderr.contains(&format!("{t}{}", archive.display())),
            "{}",
            r.stderr
        );
    }
    // A registry reference that names nothing on disk is still one.
    let dir = tempfile::tempdir().unwrap();
    let r = Bin::new([
        "inspect",
        "--image",
        "registry.example/ocp/mco:4.16",
        "--offline",
    ])
    .env("XDG_CACHE_HOME", dir.path())
    .current_dir(dir.path())
    .run();
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(r.stderr.contains("registry.example"), "{}", r.stderr);
    assert!(!r.stderr.contains("oci:"), "{}", r.stderr);
}

#[test]
fn a_rhel9_only_image_for_a_rhel8_bootimage_says_what_to_do() {
    // mco-4.18 has the shape of MCO 4.23 and later: the RHEL 9 build only.
    let image = fixture("mco-4.18").reference("oci");
    let dir = tempfile::tempdir().unwrap();
    for boot in ["4.1", "4.8", "4.12"] {
        let r = inject(&image, boot, &dir.path().join("x.ign"), &[]);
        assert_eq!(r.code, Some(1), "{}", r.describe());
        for needle in [
            format!("error: no machine-config-daemon build fits bootimage {boot}"),
            format!("{MCD}: needs GLIBC_2.34"),
            format!("No build of this image can run on bootimage {boot} (RHEL 8)"),
            "its builds run on bootimages 4.13-5.2 (RHEL 9, 10)".to_string(),
            "a newer bootimage (4.13 or later)".to_string(),
            "managed boot images".to_string(),
            "machine-config-operator image of the cluster's own release (--release".to_string(),
            "machine-config-daemon.rhel8".to_string(),
        ] {
            assert!(r.stderr.contains(&needle), "{needle:?} in:\n{}", r.stderr);
        }
        assert!(dir_entries(dir.path()).is_empty());
    }
    // verify --image gives the same conclusion.
    let good = dir.path().join("good.ign");
    let r = inject(&image, "4.16", &good, &[]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let r = mcd_inject([
        "verify",
        &good.display().to_string(),
        "--bootimage",
        "4.8",
        "--image",
        &image,
    ]);
    assert_eq!(r.code, Some(1), "{}", r.describe());
    let all = String::from_utf8_lossy(&r.stdout).into_owned() + &r.stderr;
    assert!(
        all.contains("No build of this image can run on bootimage 4.8"),
        "{all}"
    );
    fs::remove_file(&good).unwrap();
}

#[test]
fn other_refusals_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ign");
    // A build named that does not fit, and one the image does not have.
    let r = inject(
        &fixture("mco-4.16").reference("oci"),
        "4.16",
        &out,
        &["--binary-path", "/usr/bin/machine-config-daemon.rhel8"],
    );
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(r.stderr.contains("leave out --binary-path"), "{}", r.stderr);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    let r = inject(
        &fixture("mco-4.16").reference("oci"),
        "4.16",
        &out,
        &["--binary-path", "/usr/bin/machine-config-daemon.rhel7"],
    );
    assert_eq!(r.code, Some(1), "{}", r.describe());
    for needle in ["no such build", "inspect` lists", "without --binary-path"] {
        assert!(r.stderr.contains(needle), "{needle:?} in {}", r.stderr);
    }
    // An image without any build: not an MCO image.
    let layout = dir.path().join("not-mco");
    let reference = write_layout(
        &layout,
        &[gzip_layer(&[(
            "usr/lib/os-release",
            b"ID=rhel\nVERSION_ID=9.4\n",
            0o644,
        )])],
    );
    let r = inject(&reference, "4.16", &out, &[]);
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(
        r.stderr.contains("not a machine-config-operator image"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--release"), "{}", r.stderr);
    assert!(!out.exists());
}
