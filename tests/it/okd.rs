//! OKD: Fedora CoreOS and CentOS Stream CoreOS bootimages, OKD's MCO images (one plain
//! build on a CentOS Stream base, fixtures `okd-4.7` and `okd-scos-4.19`) and OKD
//! release images. The choice follows MCO's re-exec (the plain build for a Fedora host),
//! the config passes `verify`, a build that cannot run on the bootimage is refused
//! naming why, and an OKD release's version names its nodes' OS. The boots are in
//! `boot.rs` (`okd_*`).

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::harness::registry::{registries, Sandbox};
use crate::harness::{fixture, inject, mcd_inject, require_tools, run_ok};

const PLAIN: &str = "/usr/bin/machine-config-daemon";

/// `inject --json` for the fixture and bootimage: the report, after checking that the
/// config passes `verify` against the image.
fn inject_ok(image: &str, bootimage: &str, out: &Path, extra: &[&str]) -> Value {
    let reference = fixture(image).reference("oci");
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let run = inject(&reference, bootimage, out, &args);
    assert_eq!(run.code, Some(0), "{bootimage}: {}", run.describe());
    let verify = mcd_inject(["verify", out.to_str().unwrap(), "--image", &reference]);
    assert_eq!(verify.code, Some(0), "verify: {}", verify.describe());
    serde_json::from_slice(&run.stdout).unwrap()
}

#[test]
fn fcos_bootimages_get_the_plain_build_of_an_okd_image() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fcos33.ign");
    let v = inject_ok("okd-4.7", "33.20201201.3.0", &out, &[]);
    assert_eq!(v["binary"]["path"], PLAIN, "{v:#}");
    assert_eq!(v["target"]["bootimage"], "fcos-33", "{v:#}");
    assert_eq!(v["target"]["fedora"], 33, "{v:#}");
    assert_eq!(v["target"]["rhel"], Value::Null, "{v:#}");
    assert_eq!(v["target"]["spec"], "3.2.0");
    assert_eq!(v["target"]["bootimage_named"]["form"], "fcos-build-id");
    // Without the release, the nodes stay on Fedora CoreOS: the bootimage says so.
    let later = &v["boots"]["cluster_os"];
    assert_eq!(later["os"]["fedora"], 33, "{v:#}");
    assert!(
        later["os"]["source"]
            .as_str()
            .unwrap()
            .contains("Fedora CoreOS 33 nodes"),
        "{v:#}"
    );
    let cfg: Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.2.0");
    // No pivot.service to mask on Fedora CoreOS.
    let masked = cfg["systemd"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u["name"] == "pivot.service");
    assert!(!masked, "{cfg}");

    // Fedora CoreOS 31 reads spec 3.0 only: the config is 3.0.0.
    let out31 = dir.path().join("fcos31.ign");
    let v = inject_ok("okd-4.7", "fcos-31.20200420.3.0", &out31, &[]);
    assert_eq!(v["target"]["spec"], "3.0.0", "{v:#}");

    // The bootimage's os-release says the same as its build ID.
    let os = dir.path().join("os-release");
    fs::write(
        &os,
        "NAME=\"Fedora CoreOS\"\nID=fedora\nVERSION_ID=33\nVERSION=\"33.20201201.3.0 (CoreOS)\"\nVARIANT_ID=coreos\n",
    )
    .unwrap();
    let from_os = dir.path().join("from-os.ign");
    let run = mcd_inject([
        "inject",
        "--image",
        &fixture("okd-4.7").reference("oci"),
        "--target-os-release",
        os.to_str().unwrap(),
        "--ign",
        from_os.to_str().unwrap(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(fs::read(&from_os).unwrap() == fs::read(&out).unwrap());
}

/// Fedora CoreOS 36 dropped OpenSSL 1.1: the RHEL 8 build of an OKD 4.7 image cannot
/// run there, and the error says why and where it does run; nothing is written.
#[test]
fn a_build_fedora_cannot_run_is_refused_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.ign");
    let run = inject(
        &fixture("okd-4.7").reference("oci"),
        "36.20220806.3.0",
        &out,
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    for says in [
        "bootimage fcos-36 (amd64, Fedora 36: glibc 2.35, libcrypto.so.3)",
        "links libcrypto.so.1.1, Fedora 36 has libcrypto.so.3",
        "its builds run on bootimages fcos-31-fcos-35 (Fedora 31, 32, 33, 34, 35)",
    ] {
        assert!(run.stderr.contains(says), "{says:?} in {}", run.stderr);
    }
    assert!(!out.exists());
    // --target-rhel makes no sense for a Fedora bootimage.
    let run = inject(
        &fixture("okd-4.7").reference("oci"),
        "fcos-33.20201201.3.0",
        &out,
        &["--target-rhel", "8"],
    );
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(
        run.stderr.contains("is Fedora CoreOS, not based on RHEL"),
        "{}",
        run.stderr
    );
}

/// CentOS Stream CoreOS is like RHEL 9 for MCO; Fedora CoreOS 39, OKD 4.16-4.18's
/// bootimage, runs the SCOS-era RHEL 9 build, and its nodes rebase to SCOS 9.
#[test]
fn scos_bootimages_and_the_fcos_to_scos_rebase() {
    let dir = tempfile::tempdir().unwrap();
    let v = inject_ok(
        "okd-scos-4.19",
        "scos-9.0.20250222-0",
        &dir.path().join("s.ign"),
        &[],
    );
    assert_eq!(v["binary"]["path"], PLAIN, "{v:#}");
    assert_eq!(v["target"]["bootimage"], "scos-9", "{v:#}");
    assert_eq!(v["target"]["rhel"], 9, "{v:#}");
    assert_eq!(v["target"]["bootimage_named"]["form"], "scos-build-id");
    let v = inject_ok(
        "okd-scos-4.19",
        "okd-4.17",
        &dir.path().join("f39.ign"),
        &[],
    );
    assert_eq!(v["target"]["bootimage"], "fcos-39", "{v:#}");
    assert_eq!(v["binary"]["path"], PLAIN, "{v:#}");
    // It runs on every OS the node may run later (Fedora 39 on, RHEL 9 and 10 bases):
    // no cluster OS to learn.
    assert_eq!(v["boots"]["first"]["verdict"]["fits"], true, "{v:#}");
    assert!(v["boots"]["cluster_os"].is_null(), "{v:#}");
}

/// OKD release images (the openshift/okd and okd/scos-release repositories have OCP's
/// shape: release-manifests with the machine-config-operator tag and the version),
/// served by the loopback registry: the MCO image is the release's, and the version
/// names the nodes' OS (Fedora CoreOS 33 for OKD 4.7, CentOS Stream CoreOS 9 for 4.19).
#[test]
fn okd_release_images_name_their_nodes_os() {
    require_tools(&["skopeo"]);
    let reg = registries();
    let sb = Sandbox::new();
    let copy = |from: &str, to: &str| {
        let digest = sb.path("digest");
        run_ok(
            Command::new("skopeo")
                .args([
                    "copy",
                    "-q",
                    "--all",
                    "--dest-tls-verify=false",
                    "--digestfile",
                ])
                .arg(&digest)
                .args([from, &format!("docker://{}/{to}", reg.anon)]),
        );
        fs::read_to_string(&digest).unwrap().trim().to_string()
    };
    let pid = std::process::id();
    for (image, version, bootimage, os_key, os_major, says) in [
        (
            "okd-4.7",
            "4.7.0-0.okd-2021-03-07-090821",
            "okd-4.7",
            "fedora",
            33,
            "OKD 4.7 nodes run Fedora CoreOS 33",
        ),
        (
            "okd-scos-4.19",
            "4.19.0-okd-scos.1",
            "okd-4.19",
            "rhel",
            9,
            "OKD 4.19 nodes run CentOS Stream CoreOS 9",
        ),
    ] {
        let mco = copy(
            &fixture(image).reference("oci"),
            &format!("okd/content:{image}-{pid}"),
        );
        let layout = sb.path(&format!("release-{image}"));
        crate::release::release_layout(
            &layout,
            version,
            &[("amd64", None, format!("{}/okd/content@{mco}", reg.anon))],
        );
        let release = copy(
            &format!("oci:{}:{version}", layout.display()),
            &format!("openshift/okd:{version}-{pid}"),
        );
        let out = sb.path(&format!("{image}.ign"));
        let run = sb.ok(&[
            "inject",
            "--release",
            &format!("{}/openshift/okd@{release}", reg.anon),
            "--tls-verify=false",
            "--bootimage",
            bootimage,
            "--ign",
            out.to_str().unwrap(),
            "--json",
        ]);
        let v: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(v["release"]["version"], version, "{v:#}");
        assert_eq!(v["binary"]["path"], PLAIN, "{v:#}");
        let later = &v["boots"]["cluster_os"]["os"];
        assert_eq!(later[os_key], os_major, "{v:#}");
        assert!(later["source"].as_str().unwrap().contains(says), "{v:#}");
        let verify = sb.run(&[
            "verify",
            out.to_str().unwrap(),
            "--image",
            &format!("{}/okd/content@{mco}", reg.anon),
            "--tls-verify=false",
        ]);
        assert!(
            verify.status.success(),
            "verify: {}",
            String::from_utf8_lossy(&verify.stdout)
        );
    }
}
