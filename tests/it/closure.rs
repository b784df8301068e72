//! A build that needs a newer glibc than the bootimage has, delivered with its closure
//! from its own image (MCO 4.23+ ships only RHEL 9 builds): the closure is the one the
//! image's own loader resolves in the image's root, `inject` and `verify` agree on it,
//! `inspect` tells it per bootimage, a closure that cannot be made is refused naming
//! what is missing, a native fit always wins, remote mode serves the closure beside the
//! payload (the config, still over AWS's user-data limit, warns so), and the install
//! script runs the build through it exactly where it must.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::boot::{real_main_image, rhel9_only_image};
use crate::harness::node::run;
use crate::harness::{inject, mcd_inject, sha256_hex};

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
}

/// The files of a config, by path, decoded (inline ones only).
fn config_files(cfg: &Value) -> BTreeMap<String, Vec<u8>> {
    cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            let src = f["contents"]["source"].as_str()?;
            let bytes = mcd_inject::ignition::decode_data_url(src).ok()?;
            Some((f["path"].as_str()?.to_string(), bytes))
        })
        .collect()
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The OCI layout directory of an `oci:DIR:TAG` reference.
fn layout_dir(reference: &str) -> PathBuf {
    let rest = reference.strip_prefix("oci:").unwrap();
    PathBuf::from(rest.rsplit_once(':').unwrap().0)
}

/// The image's root, unpacked by umoci.
fn unpack(reference: &str, dir: &Path) -> PathBuf {
    let bundle = dir.join("bundle");
    let (ok, text) = run(Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:latest", layout_dir(reference).display()))
        .arg(&bundle));
    assert!(ok, "umoci unpack: {text}");
    bundle.join("rootfs")
}

/// What the image's own loader maps for its build, in its root: `ld.so --list` under
/// chroot, as (name, path) with the loader first.
fn loaders_list(rootfs: &Path) -> Vec<(String, String)> {
    let out = Command::new("chroot")
        .arg(rootfs)
        .args([
            "/lib64/ld-linux-x86-64.so.2",
            "--list",
            "/usr/bin/machine-config-daemon",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = Vec::new();
    let mut loader = None;
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            [name, "=>", path, _] => libs.push((name.to_string(), path.to_string())),
            [path, _] if path.starts_with('/') => {
                let name = path.rsplit('/').next().unwrap().to_string();
                loader = Some((name, path.to_string()));
            }
            _ => {}
        }
    }
    let mut all = vec![loader.expect("the loader lists itself")];
    all.extend(libs);
    all
}

#[test]
fn a_rhel9_only_image_reaches_a_42_bootimage_with_the_closure_its_loader_resolves() {
    let image = rhel9_only_image(None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.ign");
    let r = inject(&image, "4.2", &out, &["--json", "-v"]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let report: Value = serde_json::from_slice(&r.stdout).unwrap();
    let first = &report["boots"]["first"];
    assert_eq!(first["verdict"]["fits"], true, "{first}");
    assert_eq!(
        first["closure"].as_array().map(Vec::len),
        Some(5),
        "{first}"
    );
    assert_eq!(
        first["closure"][0]["name"], "ld-linux-x86-64.so.2",
        "{first}"
    );
    // Each layer is read once (the log names each read): the libraries are captured by
    // the read that proves the `.rhel8` twin absent, not read again in each round of the
    // fixed point.
    let log = &r.stderr;
    let reads: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("reading layer ").map(|(_, x)| x))
        .filter_map(|x| x.split_whitespace().next())
        .collect();
    let unique: std::collections::BTreeSet<&&str> = reads.iter().collect();
    assert!(unique.len() > 1, "{log}");
    assert_eq!(reads.len(), unique.len(), "a layer read twice: {reads:?}");
    let cfg = read_json(&out);
    let files = config_files(&cfg);
    let prov: Value =
        serde_json::from_slice(&files["/var/lib/mcd-inject/provenance.json"]).unwrap();
    let closure = prov["builds"][0]["closure"]
        .as_array()
        .unwrap_or_else(|| panic!("no closure in the provenance: {prov}"));

    // The oracle: the image's own loader, in the image's root.
    let rootfs = unpack(&image, dir.path());
    let want = loaders_list(&rootfs);
    let mut ours: Vec<(String, String)> = closure
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The loader lists itself by PT_INTERP and its libraries in load order; compare as
    // sets past the loader.
    assert_eq!(ours[0].0, want[0].0, "the loader comes first");
    let (mut a, mut b) = (ours.split_off(1), want[1..].to_vec());
    a.sort();
    b.sort();
    assert_eq!(a, b, "our closure, and what the image's loader maps");

    // Each file delivered is the image's file, and the script names it.
    let script =
        String::from_utf8(files["/var/lib/mcd-inject/mco-mcd-install.sh"].clone()).unwrap();
    for f in closure {
        let name = f["name"].as_str().unwrap();
        let gz = &files[&format!("/var/lib/mcd-inject/closure/{name}.gz")];
        let bytes = gunzip(gz);
        let on_disk =
            fs::read(rootfs.join(f["path"].as_str().unwrap().trim_start_matches('/'))).unwrap();
        assert_eq!(sha256_hex(&bytes), sha256_hex(&on_disk), "{name}");
        assert!(
            script.contains(&format!("{name}:{}", sha256_hex(&bytes))),
            "{name}"
        );
    }
    assert!(script.contains("closure_native=\"9 10\""), "{script}");

    let r = mcd_inject([
        "verify",
        out.to_str().unwrap(),
        "--bootimage",
        "4.2",
        "--image",
        &image,
    ]);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert_eq!(r.code, Some(0), "{}\n{text}", r.describe());
    assert!(text.contains("through its closure"), "{text}");
    assert!(text.contains("the closure is the 5 files"), "{text}");

    // inspect: natively from 4.13 on, through the closure before.
    let r = mcd_inject(["inspect", "--image", &image]);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert_eq!(r.code, Some(0), "{}", r.describe());
    assert!(
        text.contains("4.1-4.12: fits through its closure: runs with its own loader and libraries from the image: 5 files"),
        "{text}"
    );
    assert!(
        text.contains("the image's glibc needs Linux 3.2.0 <= 4.18 (RHEL 8)"),
        "{text}"
    );
    let r = mcd_inject(["inspect", "--image", &image, "--json"]);
    let j: Value = serde_json::from_slice(&r.stdout).unwrap();
    let v = &j["binaries"][0]["verdicts"];
    assert_eq!(v[0]["bootimage"], "4.1");
    assert_eq!(v[0]["compatible"], false);
    assert_eq!(v[0]["closure"]["compatible"], true, "{v}");
    assert!(v[12].get("closure").is_none(), "4.13 fits natively: {v}");
}

#[test]
fn tampering_with_a_closure_file_fails_verify() {
    let image = rhel9_only_image(None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.ign");
    let r = inject(&image, "4.2", &out, &[]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    // Drop a library from the config: verify names it, and the install script's list.
    let mut cfg = read_json(&out);
    cfg["storage"]["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["path"] != "/var/lib/mcd-inject/closure/libassuan.so.0.gz");
    let bad = dir.path().join("bad.ign");
    fs::write(&bad, serde_json::to_vec(&cfg).unwrap()).unwrap();
    let r = mcd_inject(["verify", bad.to_str().unwrap(), "--bootimage", "4.2"]);
    let text = String::from_utf8_lossy(&r.stdout).into_owned() + &r.stderr;
    assert_eq!(r.code, Some(1), "{text}");
    assert!(
        text.contains("names the closure file libassuan.so.0, but the config has no /var/lib/mcd-inject/closure/libassuan.so.0.gz"),
        "{text}"
    );
    assert!(
        text.contains("the closure lacks libassuan.so.0 (needed by libgpgme.so.11)"),
        "{text}"
    );
}

#[test]
fn a_closure_the_image_cannot_make_is_refused_naming_the_missing_library() {
    let image = rhel9_only_image(Some("libassuan.so.0"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.ign");
    let r = inject(&image, "4.2", &out, &[]);
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(
        r.stderr
            .contains("libassuan.so.0, which libgpgme.so.11 needs, is not in the image"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("needs GLIBC_2.34, RHEL 8 has glibc 2.28"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    let r = mcd_inject(["inspect", "--image", &image]);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(text.contains("4.1-4.12: nor through its closure"), "{text}");
    // The bootimages it fits natively are served as before.
    let r = inject(&image, "4.16", &out, &[]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
}

#[test]
fn a_native_fit_always_wins_over_a_closure() {
    let dir = tempfile::tempdir().unwrap();
    for (image, boot) in [
        (real_main_image().to_string(), "4.2"),
        (rhel9_only_image(None), "4.16"),
    ] {
        let out = dir.path().join("c.ign");
        let r = inject(&image, boot, &out, &["--cluster-rhel", "9"]);
        assert_eq!(r.code, Some(0), "{}", r.describe());
        let files = config_files(&read_json(&out));
        assert!(
            !files.keys().any(|p| p.contains("/closure/")),
            "{image} on {boot}: {:?}",
            files.keys().collect::<Vec<_>>()
        );
        let script =
            String::from_utf8(files["/var/lib/mcd-inject/mco-mcd-install.sh"].clone()).unwrap();
        // Nor the part of the install script that installs a closure.
        assert!(!script.contains("closure_files="), "{script}");
    }
}

#[test]
fn remote_mode_serves_the_closure_beside_the_payload_and_warns_of_the_config_size() {
    let image = rhel9_only_image(None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.ign");
    let payload = dir.path().join("mcd.gz");
    let json_out = dir.path().join("report.json");
    let r = inject(
        &image,
        "4.2",
        &out,
        &[
            "--payload-url",
            "https://203.0.113.7/x/mcd.gz",
            "--payload-out",
            payload.to_str().unwrap(),
            "--json-out",
            json_out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.describe());
    // The payloads are served, but the closure's entries and the script that installs
    // them make the config itself bigger than AWS's 16 KB of user data: the hand-over
    // warning, for remote mode, once on stderr and in the report.
    let size = fs::metadata(&out).unwrap().len();
    assert!((16 * 1024..64 * 1024).contains(&size), "{size} bytes");
    let report: Value = serde_json::from_slice(&fs::read(&json_out).unwrap()).unwrap();
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{report:#}");
    let w = &warnings[0];
    assert_eq!(w["kind"], "inline-config-too-big-to-hand-over", "{w:#}");
    assert_eq!(w["remote"], true, "{w:#}");
    assert_eq!(w["bytes"], size, "{w:#}");
    let exceeded: Vec<&str> = w["user_data_exceeded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["platform"].as_str().unwrap())
        .collect();
    assert_eq!(exceeded, ["AWS"], "{w:#}");
    let message = w["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "the config is {:.0} kB with the payload served (remote mode): over the \
             user-data limit of AWS 16 KB. ",
            size as f64 / 1e3
        )),
        "{message}"
    );
    // Nothing about what its size does not touch: fw_cfg, Ignition v0.x's parsing, or
    // remote mode, which it is in.
    assert!(
        !message.contains("fw_cfg") && !message.contains("--payload-url"),
        "{message}"
    );
    assert_eq!(r.stderr.matches("warning: ").count(), 1, "{}", r.describe());
    assert!(
        r.stderr.contains(&format!("warning: {message}\n")),
        "{}",
        r.describe()
    );
    let cfg = read_json(&out);
    let sources: BTreeMap<String, String> = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["contents"]["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        sources["/var/lib/mcd-inject/closure/libc.so.6.gz"],
        "https://203.0.113.7/x/mcd.libc.so.6.gz"
    );
    let served = dir.path().join("mcd.libc.so.6.gz");
    assert!(served.is_file());
    let r = mcd_inject([
        "verify",
        out.to_str().unwrap(),
        "--payload",
        payload.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    assert_eq!(r.code, Some(0), "{}\n{text}", r.describe());
    assert!(text.contains("the 5 closure files decompress"), "{text}");
    // The closure files' digests in verify's report: `sha256:HEX`, as in inject's.
    let r = mcd_inject([
        "verify",
        out.to_str().unwrap(),
        "--payload",
        payload.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    let shown: Vec<&Value> = v["provenance"]["builds"][0]["closure"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["sha256"])
        .collect();
    let reported: Vec<&Value> = report["boots"]["first"]["closure"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["sha256"])
        .collect();
    assert_eq!(shown.len(), 5, "{v:#}");
    assert_eq!(shown, reported, "{v:#}");
}

/// The install script, run on roots whose os-release is each boot's: RHCOS 4.2 (RHEL
/// 8) gets the wrapper that runs the build through its loader and libraries, which
/// really runs it; RHEL 9 hosts get the build itself.
#[test]
fn the_install_script_runs_the_build_through_its_closure_where_it_must() {
    let image = rhel9_only_image(None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.ign");
    let r = inject(&image, "4.2", &out, &[]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let root = dir.path().join("root");
    for (path, bytes) in config_files(&read_json(&out)) {
        let p = root.join(path.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
    fs::create_dir_all(root.join("usr/bin")).unwrap();
    fs::copy("/usr/bin/true", root.join("usr/bin/true")).unwrap();
    let script = root.join("var/lib/mcd-inject/mco-mcd-install.sh");
    let prov = read_json(&root.join("var/lib/mcd-inject/provenance.json"));
    let sha = prov["binary_sha256"].as_str().unwrap();
    let bin = root.join("run/bin/machine-config-daemon");
    for (os_release, closure) in [
        (
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nVERSION_ID=\"42.80\"\n",
            true,
        ),
        (
            "ID=\"rhcos\"\nVERSION_ID=\"4.18\"\nRHEL_VERSION=\"9.4\"\n",
            false,
        ),
        // An os-release that names no RHEL: the closure, which runs anywhere.
        ("ID=debian\nVERSION_ID=\"11\"\n", true),
    ] {
        fs::create_dir_all(root.join("etc")).unwrap();
        fs::write(root.join("etc/os-release"), os_release).unwrap();
        let (ok, text) = run(Command::new("bash")
            .arg(&script)
            .env("MCD_INJECT_ROOT", &root));
        assert!(ok, "{os_release}: {text}");
        assert!(text.contains(&format!("(sha256 {sha})")), "{text}");
        let installed = fs::read(&bin).unwrap();
        if closure {
            let wrapper = String::from_utf8(installed).unwrap();
            assert_eq!(
                wrapper.lines().last().unwrap(),
                "exec /run/mcd-inject/closure/ld-linux-x86-64.so.2 --library-path /run/mcd-inject/closure /run/mcd-inject/machine-config-daemon \"$@\"",
                "{wrapper}"
            );
            let run_dir = root.join("run/mcd-inject");
            assert_eq!(
                sha256_hex(&fs::read(run_dir.join("machine-config-daemon")).unwrap()),
                sha
            );
            // The wrapper's command, with the root's paths: the real MCD runs.
            let v = Command::new(run_dir.join("closure/ld-linux-x86-64.so.2"))
                .arg("--library-path")
                .arg(run_dir.join("closure"))
                .arg(run_dir.join("machine-config-daemon"))
                .arg("version")
                .output()
                .unwrap();
            assert!(v.status.success(), "{v:?}");
            assert!(
                String::from_utf8_lossy(&v.stdout).contains("MachineConfigDaemon"),
                "{v:?}"
            );
            assert!(text.contains("through its closure of 5 files"), "{text}");
        } else {
            assert_eq!(sha256_hex(&installed), sha, "{text}");
        }
    }
}
