//! The configs `inject` writes, checked by the real thing (docs/development.md, "Real components"): Debian's
//! `ignition` 2.14 validates every spec 3.0-3.3 output and applies it to a scratch
//! root; systemd's `systemctl --root` and `systemd-analyze verify` judge the units; the
//! install script runs against the root. Spec 2.2 outputs, which no Debian tool reads,
//! are checked against the spec 2.2 JSON schema with strict keys and the rules Ignition
//! v0.x enforces at run time, then translated to 3.0 and applied for their masks.
//!
//! Specs 3.4-3.6, which Debian's 2.14 cannot read, and the default and newest spec of
//! every row of the bootimage table are checked by the real Ignition of their
//! generation from `../shared` (or `$MCD_INJECT_SHARED`): v2.26 validates and applies
//! spec 3.x, v0.35 validates spec 2.2.
//!
//! Missing tools fail these tests: `apt-get install ignition systemd xz-utils`, and
//! `../shared/ignition-v0.35`, `../shared/ignition-v2.26`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::node::{apply_spec2, run, shared_dir, shared_program};
use crate::harness::{crate_root, fixture, mcd_inject, sha256_hex};
use mcd_inject::ignition::{decode_data_url, schema, SpecVersion};
use serde_json::Value;

const IGNITION: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";
const UNITS: [&str; 2] = [
    "mco-mcd-install.service",
    "machine-config-daemon-firstboot.service",
];

fn require_real_tools() {
    assert!(
        Path::new(IGNITION).is_file(),
        "{IGNITION} is missing: apt-get install ignition"
    );
    for tool in ["ignition-validate", "systemctl", "systemd-analyze", "gzip"] {
        let ok = Command::new(tool).arg("--version").output().is_ok();
        assert!(
            ok,
            "{tool} is missing: apt-get install ignition systemd gzip"
        );
    }
}

/// `inject` into `dir/NAME.ign`; returns the path.
fn inject(reference: &str, boot: &str, spec: Option<&str>, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{boot}-{}.ign", spec.unwrap_or("default")));
    let mut args = vec![
        "inject",
        "--image",
        reference,
        "--bootimage",
        boot,
        "--ign",
        out.to_str().unwrap(),
    ];
    if let Some(s) = spec {
        args.extend(["--spec", s]);
    }
    let r = mcd_inject(&args);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    out
}

/// A root that stands in for the bootimage's OS: systemd's units and a shell.
fn os_root(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    fs::create_dir_all(root.join("usr/lib/systemd")).unwrap();
    fs::create_dir_all(root.join("usr/bin")).unwrap();
    let (ok, text) = run(Command::new("cp")
        .arg("-a")
        .arg("/usr/lib/systemd/system")
        .arg(root.join("usr/lib/systemd/")));
    assert!(ok, "copying systemd units: {text}");
    fs::copy("/bin/bash", root.join("usr/bin/bash")).unwrap();
    std::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
    root
}

/// Applies a config with the real Ignition program, offline, to `root`.
fn ignition_apply(cfg: &Path, root: &Path) {
    let link = cfg.parent().unwrap().join("ignition-apply");
    if !link.exists() {
        std::os::unix::fs::symlink(IGNITION, &link).unwrap();
    }
    let (ok, text) = run(Command::new(&link)
        .env("container", "1")
        .arg("--offline")
        .arg("--root")
        .arg(root)
        .arg(cfg));
    assert!(ok, "ignition-apply {} failed:\n{text}", cfg.display());
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn systemctl(root: &Path, args: &[&str]) -> (bool, String) {
    let mut c = Command::new("systemctl");
    c.arg(format!("--root={}", root.display())).args(args);
    run(&mut c)
}

/// Everything a config must leave in an applied root, and the install script's work.
fn check_applied_root(root: &Path, binary_sha256: &str, runs: bool) {
    let lib = root.join("var/lib/mcd-inject");
    let gz = fs::read(lib.join("machine-config-daemon.gz")).unwrap();
    assert_eq!(mode(&lib.join("machine-config-daemon.gz")), 0o600);
    assert_eq!(mode(&lib.join("mco-mcd-install.sh")), 0o755);
    assert_eq!(mode(&lib.join("provenance.json")), 0o644);
    let mut bin = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut bin).unwrap();
    assert_eq!(sha256_hex(&bin), binary_sha256);
    let prov: Value =
        serde_json::from_slice(&fs::read(lib.join("provenance.json")).unwrap()).unwrap();
    assert_eq!(prov["binary_sha256"], binary_sha256);
    let link = root.join("usr/local/bin/machine-config-daemon");
    assert_eq!(
        fs::read_link(&link).unwrap(),
        Path::new("/run/bin/machine-config-daemon")
    );

    let mut args = vec!["preset"];
    args.extend(UNITS);
    let (ok, text) = systemctl(root, &args);
    assert!(ok, "systemctl preset: {text}");
    for u in UNITS {
        let (ok, text) = systemctl(root, &["is-enabled", u]);
        assert!(ok && text.trim() == "enabled", "{u}: {text}");
    }

    let (ok, text) = run(Command::new("bash")
        .arg(lib.join("mco-mcd-install.sh"))
        .env("MCD_INJECT_ROOT", root));
    assert!(ok, "install script: {text}");
    let installed = root.join("run/bin/machine-config-daemon");
    assert_eq!(mode(&installed), 0o755);
    assert_eq!(sha256_hex(&fs::read(&installed).unwrap()), binary_sha256);
    assert_eq!(
        fs::read_dir(root.join("run/bin")).unwrap().count(),
        1,
        "the script left a temp file"
    );
    if runs {
        let (ok, text) = run(&mut Command::new(&installed));
        assert!(
            ok && text.starts_with("machine-config-daemon fixture-static"),
            "the delivered static MCD printed {text:?}"
        );
    }

    let mut c = Command::new("systemd-analyze");
    c.arg("verify").arg(format!("--root={}", root.display()));
    for u in UNITS {
        c.arg(root.join("etc/systemd/system").join(u));
    }
    let (ok, text) = run(&mut c);
    assert!(
        ok && text.trim().is_empty(),
        "systemd-analyze verify:\n{text}"
    );
}

fn payload_sha256(cfg: &Value) -> String {
    let prov = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .unwrap();
    let p: Value = serde_json::from_slice(
        &decode_data_url(prov["contents"]["source"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    p["binary_sha256"].as_str().unwrap().to_string()
}

/// `verify CFG --image REF` passes.
fn assert_verifies(cfg: &Path, reference: &str) {
    let r = mcd_inject(["verify", cfg.to_str().unwrap(), "--image", reference]);
    assert_eq!(
        r.code,
        Some(0),
        "{}\n{}",
        r.describe(),
        String::from_utf8_lossy(&r.stdout)
    );
}

#[test]
fn spec3_outputs_validate_and_apply() {
    require_real_tools();
    let cases: [(&str, Option<&str>); 6] = [
        ("4.6", None),
        ("4.8", None),
        ("4.14", Some("3.0")),
        ("4.14", Some("3.1")),
        ("4.12", Some("3.3")),
        ("4.16", None),
    ];
    let mut specs_seen = std::collections::BTreeSet::new();
    for name in ["mco-4.6", "mco-4.16"] {
        let reference = fixture(name).reference("oci");
        for (boot, spec) in cases {
            let dir = tempfile::tempdir().unwrap();
            let cfg_path = inject(&reference, boot, spec, dir.path());
            let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
            specs_seen.insert(cfg["ignition"]["version"].as_str().unwrap().to_string());

            let (ok, text) = run(Command::new("ignition-validate").arg(&cfg_path));
            assert!(
                ok && text.is_empty(),
                "{name} {boot}: ignition-validate said: {text}"
            );
            let root = os_root(dir.path());
            ignition_apply(&cfg_path, &root);
            check_applied_root(&root, &payload_sha256(&cfg), name == "mco-4.6");

            assert_verifies(&cfg_path, &reference);
        }
    }
    let want: Vec<&str> = vec!["3.0.0", "3.1.0", "3.2.0", "3.3.0"];
    assert_eq!(
        specs_seen.iter().map(String::as_str).collect::<Vec<_>>(),
        want
    );
}

/// The build each boot of the first boot gets: on the bootimage's OS the bootimage's,
/// and after MCO's in-place update, on the cluster's RHEL 9, the one for RHEL 9, as the
/// install script reads the host's os-release at each boot.
#[test]
fn the_install_script_installs_the_build_of_each_boots_os() {
    require_real_tools();
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-4.16").reference("oci");
    let cfg_path = inject(&reference, "4.9", None, dir.path());
    let root = os_root(dir.path());
    ignition_apply(&cfg_path, &root);
    let lib = root.join("var/lib/mcd-inject");
    let prov: Value =
        serde_json::from_slice(&fs::read(lib.join("provenance.json")).unwrap()).unwrap();
    let builds = prov["builds"]
        .as_array()
        .expect("provenance lists the builds");
    assert_eq!(builds.len(), 2, "{prov}");
    assert_eq!(prov["cluster_os"]["rhel"], 9, "{prov}");
    let sha_for = |rhel: u64| {
        let b = builds.iter().find(|b| b["rhel"] == rhel).unwrap();
        assert!(lib
            .join(
                Path::new(b["payload"].as_str().unwrap())
                    .file_name()
                    .unwrap()
            )
            .is_file());
        b["binary_sha256"].as_str().unwrap().to_string()
    };
    let (first, second) = (sha_for(8), sha_for(9));
    assert_ne!(first, second);
    assert_eq!(prov["binary_sha256"], first.as_str());
    fs::create_dir_all(root.join("etc")).unwrap();
    for (os_release, want) in [
        // RHCOS 4.9, the bootimage.
        ("NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"4.9\"\nRHEL_VERSION=\"8.4\"\n", &first),
        // RHCOS 4.16, the cluster's OS after the in-place update.
        ("NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"4.16\"\nOPENSHIFT_VERSION=\"4.16\"\nRHEL_VERSION=\"9.4\"\n", &second),
        // RHCOS 4.2, which names no RHEL_VERSION: RHEL 8.
        ("NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"42.80\"\n", &first),
        // RHCOS 4.19+: ID=rhel.
        ("NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nVERSION_ID=\"9.6\"\nVARIANT_ID=coreos\n", &second),
        // CentOS Stream CoreOS 9 (OKD 4.16 on): like RHEL 9.
        ("NAME=\"CentOS Stream CoreOS\"\nID=\"scos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"9\"\nVARIANT_ID=coreos\n", &second),
        // An OS that says only that it is like RHEL.
        ("NAME=\"Other\"\nID=\"other\"\nID_LIKE=\"rhel\"\nVERSION_ID=\"9.4\"\n", &second),
        // Fedora CoreOS names no RHEL: the first build, as MCO gives it the plain one.
        ("NAME=\"Fedora CoreOS\"\nID=fedora\nVERSION_ID=39\nVARIANT_ID=coreos\n", &first),
    ] {
        fs::write(root.join("etc/os-release"), os_release).unwrap();
        let (ok, text) = run(Command::new("bash")
            .arg(lib.join("mco-mcd-install.sh"))
            .env("MCD_INJECT_ROOT", &root));
        assert!(ok, "install script: {text}");
        let installed = root.join("run/bin/machine-config-daemon");
        assert_eq!(
            &sha256_hex(&fs::read(&installed).unwrap()),
            want,
            "{os_release}: {text}"
        );
        assert!(text.contains(&format!("(sha256 {want})")), "{text}");
    }
    assert_verifies(&cfg_path, &reference);
}

/// The checks of a spec 2.2 config that no Debian tool makes.
fn check_spec22(cfg: &Value) {
    assert_eq!(cfg["ignition"]["version"], "2.2.0");
    let report = schema::validate(cfg, SpecVersion::V2_2);
    assert!(report.is_clean(), "{report:?}");
    for kind in ["files", "links"] {
        for node in cfg["storage"][kind].as_array().unwrap() {
            assert_eq!(node["filesystem"], "root", "{node}");
        }
    }
    for f in cfg["storage"]["files"].as_array().unwrap() {
        let c = f["contents"].as_object().unwrap();
        assert!(!c.contains_key("compression"), "{}", f["path"]);
        let src = c["source"].as_str().unwrap();
        assert!(src.starts_with("data:;base64,"), "{}", f["path"]);
        let hash = c["verification"]["hash"].as_str().unwrap();
        assert!(
            hash.starts_with("sha512-") && hash.len() == 7 + 128,
            "{hash}"
        );
    }
    let text = serde_json::to_string(cfg).unwrap();
    assert!(!text.contains("sha256-"), "spec 2.2 knows only sha512");
    assert!(!text.contains("\"compression\""));
}

#[test]
fn spec22_outputs_pass_schema_and_strict_checks_and_mask_legacy_units() {
    require_real_tools();
    // The bundled schema is the one shared with the other checks, when it is at hand.
    let shared = crate_root().join("../shared/ignition-schemas/ignition-2.2.json");
    if shared.is_file() {
        assert_eq!(
            fs::read(&shared).unwrap(),
            fs::read(crate_root().join("src/ignition/schemas/ignition-2.2.json")).unwrap(),
            "src/ignition/schemas/ignition-2.2.json differs from {}",
            shared.display()
        );
    }
    for name in ["mco-4.6", "mco-4.16", "mco-4.14"] {
        let reference = fixture(name).reference("oci");
        for boot in ["4.1", "4.2", "4.5"] {
            let dir = tempfile::tempdir().unwrap();
            let cfg_path = inject(&reference, boot, None, dir.path());
            let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
            check_spec22(&cfg);
            let units = cfg["systemd"]["units"].as_array().unwrap();
            assert!(units
                .iter()
                .any(|u| u["name"] == "pivot.service" && u["mask"] == true));

            let r = mcd_inject(["verify", cfg_path.to_str().unwrap(), "--image", &reference]);
            assert_eq!(r.code, Some(0), "{}", r.describe());

            // Ignition v0.35, the program of 4.1-4.5 bootimages, applies it.
            let root = os_root(dir.path());
            apply_spec2(&cfg_path, &root, dir.path());
            let (_, text) = systemctl(&root, &["is-enabled", "pivot.service"]);
            assert_eq!(text.trim(), "masked");
            let dropin = root
                .join("etc/systemd/system/machine-config-daemon-pull.service.d/99-mcd-inject.conf");
            let d = fs::read_to_string(&dropin).unwrap();
            assert!(d.contains("ConditionPathExists=!/var/lib/mcd-inject/machine-config-daemon.gz"));
            check_applied_root(&root, &payload_sha256(&cfg), name == "mco-4.6");
        }
    }
}

#[test]
fn remote_mode_serves_the_same_hash() {
    require_real_tools();
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-4.16").reference("oci");
    let cfg_path = dir.path().join("remote.ign");
    let payload = dir.path().join("mcd.gz");
    let r = mcd_inject([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.2",
        "--ign",
        cfg_path.to_str().unwrap(),
        "--payload-url",
        "http://127.0.0.1:8080/mcd.gz",
        "--payload-out",
        payload.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
    check_spec22_remote(&cfg, &fs::read(&payload).unwrap());
    // The build for the cluster's RHEL 9 is served beside the first, and named so.
    let second = dir.path().join("mcd.rhel9.gz");
    let entry = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/machine-config-daemon.rhel9.gz")
        .expect("the second payload's entry");
    assert_eq!(
        entry["contents"]["source"],
        "http://127.0.0.1:8080/mcd.rhel9.gz"
    );
    assert_eq!(
        entry["contents"]["verification"]["hash"],
        format!(
            "sha512-{}",
            hex::encode(<sha2::Sha512 as sha2::Digest>::digest(
                fs::read(&second).unwrap()
            ))
        )
    );
    let r = mcd_inject([
        "verify",
        cfg_path.to_str().unwrap(),
        "--payload",
        payload.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let r = mcd_inject(["verify", cfg_path.to_str().unwrap()]);
    assert_eq!(r.code, Some(1), "{}", r.describe());
    assert!(String::from_utf8_lossy(&r.stdout).contains("pass --payload FILE"));

    // The inline config of the same inputs carries the same hash.
    let inline = inject(&reference, "4.2", None, dir.path());
    let inline: Value = serde_json::from_slice(&fs::read(inline).unwrap()).unwrap();
    let hash = |c: &Value| c["storage"]["files"][0]["contents"]["verification"]["hash"].clone();
    assert_eq!(hash(&cfg), hash(&inline));
}

fn check_spec22_remote(cfg: &Value, payload: &[u8]) {
    use sha2::Digest;
    let f = &cfg["storage"]["files"][0];
    assert_eq!(f["path"], "/var/lib/mcd-inject/machine-config-daemon.gz");
    assert_eq!(f["contents"]["source"], "http://127.0.0.1:8080/mcd.gz");
    assert_eq!(
        f["contents"]["verification"]["hash"],
        format!("sha512-{}", hex::encode(sha2::Sha512::digest(payload)))
    );
    assert_eq!(&payload[..2], b"\x1f\x8b");
    assert!(schema::validate(cfg, SpecVersion::V2_2).is_clean());
}

// ------------------------------------------------ the real Ignition of each bootimage row

/// The real validators: Ignition v0.35 (spec 2.x) and v2.26 (spec 3.0-3.6).
struct Validators {
    _dir: tempfile::TempDir,
    v0: PathBuf,
    v2: PathBuf,
    /// Ignition v2.26 itself, as `ignition-apply`.
    apply: PathBuf,
}

fn validators() -> Validators {
    let dir = tempfile::tempdir().unwrap();
    let v0 = shared_program("ignition-v0.35", "ignition-validate");
    let v2 = shared_program("ignition-v2.26", "ignition-validate");
    let apply = dir.path().join("ignition-apply");
    std::os::unix::fs::symlink(shared_program("ignition-v2.26", "ignition"), &apply).unwrap();
    Validators {
        _dir: dir,
        v0,
        v2,
        apply,
    }
}

impl Validators {
    /// Validates with the Ignition that reads `spec`; any output is a finding.
    fn validate(&self, cfg: &Path, spec: &str) -> (bool, String) {
        let program = if spec.starts_with("2.") {
            &self.v0
        } else {
            &self.v2
        };
        let (ok, text) = run(Command::new(program).arg(cfg));
        (ok && text.is_empty(), text)
    }

    fn apply(&self, cfg: &Path, root: &Path) {
        let (ok, text) = run(Command::new(&self.apply)
            .env("container", "1")
            .arg("--offline")
            .arg("--root")
            .arg(root)
            .arg(cfg));
        assert!(ok, "Ignition v2.26 apply {} failed:\n{text}", cfg.display());
    }
}

/// Every row's default spec, and the newest spec it reads, is accepted by the real
/// Ignition of that generation: v0.35 for spec 2.2 (4.1-4.5), v2.26 for spec 3.x (the
/// OKD rows' 3.0 of Fedora CoreOS 31 too).
#[test]
fn every_row_default_and_newest_spec_validate_with_the_real_ignition() {
    require_real_tools();
    let tools = validators();
    let reference = fixture("mco-4.6").reference("oci");
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for row in mcd_inject::choose::target::BOOTIMAGES {
        let boot = row.id.to_string();
        for (spec, want) in [(None, row.default_spec), (Some(row.max_spec), row.max_spec)] {
            let spec_arg = spec.map(|s| s.to_string());
            let cfg_path = inject(&reference, &boot, spec_arg.as_deref(), dir.path());
            let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
            if cfg["ignition"]["version"] != want.as_str() {
                failures.push(format!(
                    "{boot}: wrote {}, expected {want}",
                    cfg["ignition"]["version"]
                ));
            }
            let (ok, text) = tools.validate(&cfg_path, want.as_str());
            if !ok {
                failures.push(format!("{boot} spec {want}: the validator said: {text}"));
            }
            seen.insert(want.as_str());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"]
    );
}

/// Specs 3.4-3.6, which Debian's Ignition 2.14 cannot read: validated and applied by
/// Ignition v2.26, with the same checks on the applied root as the older specs.
#[test]
fn spec34_to_36_outputs_validate_and_apply_with_ignition_v2_26() {
    require_real_tools();
    let tools = validators();
    // (fixture, bootimage, --spec): 3.4 as the table allows it; 3.5 and 3.6 for a
    // release past the table, where the user vouches for the spec.
    let cases: [(&str, &str, &[&str]); 5] = [
        ("mco-4.6", "4.16", &["--spec", "3.4"]),
        ("mco-4.16", "5.0", &["--spec", "3.4"]),
        ("mco-4.6", "5.3", &["--spec", "3.5", "--target-rhel", "10"]),
        ("mco-4.16", "5.3", &["--spec", "3.5", "--target-rhel", "9"]),
        ("mco-4.16", "5.3", &["--spec", "3.6", "--target-rhel", "10"]),
    ];
    for (name, boot, extra) in cases {
        let reference = fixture(name).reference("oci");
        let dir = tempfile::tempdir().unwrap();
        let cfg_path = dir.path().join("out.ign");
        let mut args = vec![
            "inject",
            "--image",
            &reference,
            "--bootimage",
            boot,
            "--ign",
            cfg_path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let r = mcd_inject(&args);
        assert_eq!(r.code, Some(0), "{}", r.describe());
        let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
        let spec = cfg["ignition"]["version"].as_str().unwrap().to_string();
        assert_eq!(spec, format!("{}.0", extra[1]), "{name} {boot}");
        let report = schema::validate(&cfg, spec.parse().unwrap());
        assert!(report.is_clean(), "{name} {boot}: {report:?}");

        let (ok, text) = tools.validate(&cfg_path, &spec);
        assert!(
            ok,
            "{name} {boot} spec {spec}: ignition-validate v2.26 said: {text}"
        );
        let root = os_root(dir.path());
        tools.apply(&cfg_path, &root);
        check_applied_root(&root, &payload_sha256(&cfg), name == "mco-4.6");

        assert_verifies(&cfg_path, &reference);
    }
    // 3.5 or 3.6 for a row whose Ignition is not proven to read them is refused as a
    // usage error (the flags cannot go together), writing nothing.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ign");
    let r = mcd_inject([
        "inject",
        "--image",
        &fixture("mco-4.16").reference("oci"),
        "--bootimage",
        "5.0",
        "--spec",
        "3.5",
        "--ign",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(2), "{}", r.describe());
    assert!(
        r.stderr.contains("reads at most spec 3.4.0"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

/// The bundled 3.x schemas are the ones shared with the other checks.
#[test]
fn bundled_spec3_schemas_match_the_shared_copies() {
    for n in 0..=6 {
        let name = format!("ignition-3.{n}.json");
        let shared = shared_dir().join("ignition-schemas").join(&name);
        assert!(shared.is_file(), "{} is missing", shared.display());
        assert_eq!(
            fs::read(&shared).unwrap(),
            fs::read(crate_root().join("src/ignition/schemas").join(&name)).unwrap(),
            "src/ignition/schemas/{name} differs from {}",
            shared.display()
        );
    }
}

/// A base of thousands of entries, merged lean (`--base`), is valid for the real
/// Ignition and applies: every base file, directory, link and unit lands, and ours too.
#[test]
fn a_large_merged_base_validates_and_applies() {
    require_real_tools();
    const FILES: usize = 3000;
    let dirs = FILES / 100;
    let base = serde_json::json!({
        "ignition": {"version": "3.2.0"},
        "storage": {
            "directories": (0..dirs).map(|d| serde_json::json!({"path": format!("/etc/big/d{d:02}"), "mode": 488})).collect::<Vec<_>>(),
            "files": (0..FILES).map(|i| serde_json::json!({
                "path": format!("/etc/big/d{:02}/f{i:04}", i % dirs),
                "mode": 416,
                "contents": {"source": format!("data:,file%20{i}")}
            })).collect::<Vec<_>>(),
            "links": (0..dirs).map(|d| serde_json::json!({"path": format!("/etc/big/l{d:02}"), "target": format!("/etc/big/d{d:02}")})).collect::<Vec<_>>()
        },
        "systemd": {"units": (0..3).map(|u| serde_json::json!({
            "name": format!("big-{u}.service"),
            "enabled": true,
            "contents": "[Unit]\nDescription=big\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
        })).collect::<Vec<_>>()}
    });
    let dir = tempfile::tempdir().unwrap();
    let base_path = dir.path().join("base.ign");
    fs::write(&base_path, serde_json::to_vec(&base).unwrap()).unwrap();
    let reference = fixture("mco-4.16").reference("oci");
    let cfg_path = dir.path().join("out.ign");
    let r = mcd_inject([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.16",
        "--ign",
        cfg_path.to_str().unwrap(),
        "--base",
        base_path.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let (ok, text) = run(Command::new("ignition-validate").arg(&cfg_path));
    assert!(ok && text.is_empty(), "ignition-validate said: {text}");
    let root = os_root(dir.path());
    ignition_apply(&cfg_path, &root);
    let cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
    check_applied_root(&root, &payload_sha256(&cfg), false);
    for i in [0, 1234, FILES - 1] {
        let f = root.join(format!("etc/big/d{:02}/f{i:04}", i % dirs));
        assert_eq!(fs::read_to_string(&f).unwrap(), format!("file {i}"));
        assert_eq!(mode(&f), 0o640);
    }
    assert_eq!(fs::read_dir(root.join("etc/big/d07")).unwrap().count(), 100);
    assert_eq!(mode(&root.join("etc/big/d07")), 0o750);
    assert_eq!(
        fs::read_link(root.join("etc/big/l07")).unwrap(),
        Path::new("/etc/big/d07")
    );
    // Ignition enables units through a preset file, applied at first boot.
    let (ok, text) = systemctl(&root, &["preset", "big-2.service"]);
    assert!(ok, "systemctl preset: {text}");
    let (ok, text) = systemctl(&root, &["is-enabled", "big-2.service"]);
    assert!(ok && text.trim() == "enabled", "big-2.service: {text}");
}
