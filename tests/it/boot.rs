//! The node is the judge: real Ignition applies the config `inject` writes to a scratch
//! root (Debian's Ignition for spec 3, v0.35 for spec 2.2, fetching the cluster's
//! config from a loopback Machine Config Server in the pointer flow), and a real
//! systemd boots that root under `systemd-nspawn`. Each test then reads what the boot
//! did: the order the units ran in, the binary in `/run/bin`, the command line and
//! environment the MCD got, and what must not have run (podman, the pull unit,
//! pivot.service).
//!
//! The delivered MCD is either a probe (`tests/support/mcd_probe.c`: a static stand-in
//! that hangs like an MCD of MCO 4.13+ when the re-exec guard is missing, and records
//! its command line otherwise) or a real MCD built from MCO's source
//! (`../shared/real-mcd`), of which the journal shows how far it got.
//!
//! Needs root, systemd-nspawn, debootstrap (the base root is made once, from the
//! machine's Debian mirror), ignition, openssl, python3 and gcc.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::harness::node::{self, apply_spec2, apply_spec3, Boot, HttpsServer};
use crate::harness::{crate_root, mcd_inject};
use crate::mcs_renders;
use base64::Engine as _;
use serde_json::{json, Value};

pub(crate) const FIRSTBOOT: &str = "machine-config-daemon-firstboot.service";
pub(crate) const INSTALL: &str = "mco-mcd-install.service";
pub(crate) const PULL: &str = "machine-config-daemon-pull.service";

/// Where the boot tests keep their images and roots (on the disk of `target/`).
fn work_root() -> PathBuf {
    let dir = crate_root().join("target/boot-tests");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// An OCI layout with these builds at these paths, on a RHEL base of `rhel`; plain tar
/// layers, or gzip ones.
fn mcd_image(name: &str, rhel: &str, gzip: bool, files: &[(&str, PathBuf)]) -> String {
    let dir = work_root().join("images").join(name);
    if !dir.join("index.json").exists() {
        let tmp = work_root()
            .join("images")
            .join(format!(".{name}.{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.parent().unwrap()).unwrap();
        let mut cmd = Command::new("python3");
        cmd.arg(crate_root().join("tests/support/mcd_image.py"));
        if gzip {
            cmd.arg("--gzip");
        }
        cmd.arg(&tmp).arg(rhel);
        for (path, file) in files {
            cmd.arg(format!("{path}={}", file.display()));
        }
        let (ok, text) = node::run(&mut cmd);
        assert!(ok, "mcd_image.py: {text}");
        let _ = fs::remove_dir_all(&dir);
        fs::rename(&tmp, &dir).unwrap();
    }
    format!("oci:{}:latest", dir.display())
}

/// The probe MCD, built static, in an image of its own.
pub(crate) fn probe_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let bin = work_root().join("mcd-probe");
        let (ok, text) = node::run(
            Command::new("gcc")
                .args(["-static", "-O2", "-o"])
                .arg(&bin)
                .arg(crate_root().join("tests/support/mcd_probe.c")),
        );
        assert!(ok, "building the probe MCD (gcc, libc6-dev): {text}");
        let _ = fs::remove_dir_all(work_root().join("images/probe"));
        mcd_image(
            "probe",
            "8.6",
            false,
            &[("/usr/bin/machine-config-daemon", bin)],
        )
    })
}

/// A 4.6-4.12 MCO image: one static MCD (the real 4.12 build).
fn real_412_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let bin = node::shared_program("real-mcd", "mcd-4.12-rhel8");
        mcd_image(
            "real-4.12",
            "8.6",
            false,
            &[("/usr/bin/machine-config-daemon", bin)],
        )
    })
}

/// A 4.16-4.22 MCO image: an RHEL 9 MCD and its `.rhel8` twin (real builds of main), in
/// gzip layers as a registry serves them.
pub(crate) fn real_main_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let rhel9 = node::shared_program("real-mcd", "mcd-main-rhel9");
        let rhel8 = node::shared_program("real-mcd", "mcd-main-rhel8");
        mcd_image(
            "real-main-gzip",
            "9.4",
            true,
            &[
                ("/usr/bin/machine-config-daemon", rhel9),
                ("/usr/bin/machine-config-daemon.rhel8", rhel8),
            ],
        )
    })
}

/// What the MCS of `release` serves a worker, as MCO's own code renders it
/// (`tests/data/mcs/RELEASE/`): to Ignition v0.x (spec 2.2) or to Ignition 2.x (spec 3).
pub(crate) fn mcs_config(release: &str, spec2: bool) -> Value {
    mcs_renders::render(
        release,
        if spec2 {
            mcs_renders::SPEC2
        } else {
            mcs_renders::SPEC3
        },
    )
}

/// The machine config the firstboot completes, as the MCS serves it.
pub(crate) fn machine_config_file(spec2: bool) -> Value {
    mcs_config("release-4.12", spec2)["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/etc/ignition-machine-config-encapsulated.json")
        .cloned()
        .expect("the MCS config carries the encapsulated machine config")
}

pub(crate) fn data_url(bytes: &[u8]) -> String {
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// How the node gets the cluster's config.
enum Flow {
    /// No cluster config at boot: the base holds only the machine config the
    /// firstboot completes (as a CI job that boots a bootimage gives it).
    Standalone,
    /// The cluster's config as the MCS of this MCO release serves it, merged offline
    /// (`--base`).
    Offline(&'static str),
    /// A pointer config: Ignition fetches the cluster's config of this MCO release from
    /// the loopback MCS and merges it at boot.
    Pointer(&'static str),
}

/// Which MCD the config delivers, and the journal line that shows a real one got past
/// its re-exec step and read the machine config.
#[derive(Clone, Copy)]
enum Mcd {
    Probe,
    Real412,
    RealMain,
}

impl Mcd {
    fn image(self) -> &'static str {
        match self {
            Mcd::Probe => probe_image(),
            Mcd::Real412 => real_412_image(),
            Mcd::RealMain => real_main_image(),
        }
    }

    /// What the firstboot unit's journal shows once the MCD has read the machine
    /// config: 4.12 then asks rpm-ostree its version; main then queries its (absent,
    /// on a non-CoreOS root) rpm-ostree client and panics in that frame.
    fn past_reexec(self) -> Option<&'static str> {
        match self {
            Mcd::Probe => None,
            Mcd::Real412 => Some("Running captured: rpm-ostree --version"),
            Mcd::RealMain => Some("RunFirstbootCompleteMachineconfig"),
        }
    }
}

struct Node {
    _dir: tempfile::TempDir,
    cfg: Value,
    boot: Boot,
}

/// Writes the config for `bootimage` with `inject`, lets real Ignition apply it (and
/// merge the cluster's config, in the pointer flow) to a fresh root, and boots it.
/// `tamper` edits the config before Ignition sees it; `hang` is a journal line of the
/// firstboot unit after which the boot is known to hang.
fn first_boot(
    bootimage: &str,
    flow: Flow,
    mcd: Mcd,
    tamper: impl Fn(&mut Value),
    hang: Option<&str>,
) -> Node {
    let dir = tempfile::tempdir_in(work_root()).unwrap();
    let work = dir.path();
    let spec2 = ["4.1", "4.2", "4.3", "4.4", "4.5"].contains(&bootimage);
    let version = if spec2 { "2.2.0" } else { "3.2.0" };
    let mut server = None;
    let base = match flow {
        Flow::Standalone => {
            let mc = machine_config_file(spec2);
            json!({"ignition": {"version": version}, "storage": {"files": [mc]}})
        }
        Flow::Offline(release) => mcs_config(release, spec2),
        Flow::Pointer(release) => {
            let served = work.join("mcs/config");
            fs::create_dir_all(&served).unwrap();
            fs::write(
                served.join("worker"),
                serde_json::to_vec(&mcs_config(release, spec2)).unwrap(),
            )
            .unwrap();
            let s = HttpsServer::serve(&work.join("mcs"), work);
            let key = if spec2 { "append" } else { "merge" };
            let base = json!({"ignition": {
                "version": version,
                "config": {key: [{"source": s.url("config/worker")}]},
                "security": {"tls": {"certificateAuthorities": [{"source": data_url(&s.ca_pem)}]}}
            }});
            server = Some(s);
            base
        }
    };
    let base_path = work.join("base.ign");
    fs::write(&base_path, serde_json::to_vec_pretty(&base).unwrap()).unwrap();
    let cfg_path = work.join("node.ign");
    let mut args = vec![
        "inject".to_string(),
        "-v".into(),
        "--image".into(),
        mcd.image().into(),
        "--bootimage".into(),
        bootimage.into(),
        "--base".into(),
        base_path.display().to_string(),
        "--ign".into(),
        cfg_path.display().to_string(),
    ];
    // The big real MCD goes in remote mode, served beside the loopback MCS, as the docs
    // advise for payloads that would cost old Ignition too much inline. Over HTTPS for
    // v0.35; over HTTP for spec 3, whose `ignition-apply` (unlike the initramfs files
    // stage) does not take the config's CAs for file fetches.
    if let (Mcd::RealMain, Some(s)) = (mcd, &server) {
        fs::create_dir_all(work.join("mcs/payload")).unwrap();
        let path = "payload/machine-config-daemon.gz";
        args.extend([
            "--payload-url".into(),
            if spec2 { s.url(path) } else { s.http_url(path) },
            "--payload-out".into(),
            work.join("mcs/payload/machine-config-daemon.gz")
                .display()
                .to_string(),
        ]);
    }
    let r = mcd_inject(&args);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let mut cfg: Value = serde_json::from_slice(&fs::read(&cfg_path).unwrap()).unwrap();
    tamper(&mut cfg);
    fs::write(&cfg_path, serde_json::to_vec(&cfg).unwrap()).unwrap();

    let root = work.join("root");
    node::prepare_root(&root);
    if spec2 {
        apply_spec2(&cfg_path, &root, work);
    } else {
        apply_spec3(&cfg_path, &root, work);
    }
    drop(server);
    let boot = node::boot(&root, hang.or(mcd.past_reexec()));
    let _ = fs::remove_dir_all(&root);
    Node {
        _dir: dir,
        cfg,
        boot,
    }
}

pub(crate) fn provenance_sha256(cfg: &Value) -> String {
    let file = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .expect("the config carries a provenance record");
    let bytes = mcd_inject::ignition::decode_data_url(file["contents"]["source"].as_str().unwrap())
        .unwrap();
    let p: Value = serde_json::from_slice(&bytes).unwrap();
    p["binary_sha256"].as_str().unwrap().to_string()
}

/// The calls of podman (the stand-in records them all) that pulled or ran the MCO image
/// or an MCD: the path the delivered binary replaces. The cluster's other units may run
/// other images through podman.
pub(crate) fn mcd_podman_calls(b: &Boot) -> Vec<&str> {
    b.called
        .lines()
        .filter(|l| l.contains("/usr/bin/podman "))
        .filter(|l| {
            l.contains(mcs_renders::MCO_IMAGE)
                || l.contains("machine-config-daemon")
                || l.contains("firstboot-complete-machineconfig")
        })
        .collect()
}

/// What every first boot must show: our binary installed before the firstboot ran,
/// from our drop-in; no pull, no podman; pivot.service masked on 4.1-4.5.
fn assert_delivered(n: &Node, legacy: bool) {
    let b = &n.boot;
    let why = || b.describe();
    assert_installed_and_used(b, &provenance_sha256(&n.cfg), &why);
    if legacy {
        assert_eq!(
            b.unit("pivot.service", "UnitFileState"),
            "masked",
            "{}",
            why()
        );
        assert!(
            !b.called.contains("pivot.service"),
            "pivot.service ran\n{}",
            why()
        );
    }
}

/// Our binary (of sha256 `sha256`, mode 0755) installed before the firstboot ran, which
/// ran through our drop-in; the pull unit never started; podman never pulled or ran the
/// MCO image (a container boot or a VM boot alike).
pub(crate) fn assert_installed_and_used(b: &Boot, sha256: &str, why: &dyn Fn() -> String) {
    assert_eq!(b.unit(INSTALL, "Result"), "success", "{}", why());
    assert_eq!(b.unit(INSTALL, "ActiveState"), "active", "{}", why());
    let installed = b.at(INSTALL, "ActiveEnterTimestampMonotonic");
    let started = b.at(FIRSTBOOT, "ExecMainStartTimestampMonotonic");
    assert!(
        installed > 0 && started > 0 && installed <= started,
        "the install unit must finish (at {installed} us) before the firstboot starts (at {started} us)\n{}",
        why()
    );
    assert_eq!(b.get("bin.sha256"), sha256, "{}", why());
    assert_eq!(b.get("bin.mode"), "755", "{}", why());
    assert!(
        b.unit(FIRSTBOOT, "DropInPaths")
            .contains("99-mcd-inject.conf"),
        "{}",
        why()
    );
    assert_eq!(
        b.at(PULL, "ExecMainStartTimestampMonotonic"),
        0,
        "the pull unit ran\n{}",
        why()
    );
    // The cluster's own units may run other images through podman; never the MCO's.
    let mcd_podman = mcd_podman_calls(b);
    assert!(
        mcd_podman.is_empty(),
        "podman pulled or ran the MCO image: {mcd_podman:?}\n{}",
        why()
    );
}

/// The probe MCD completed the first boot: it ran with our command line and the
/// re-exec guard, and crio and kubelet started after it; nothing failed.
fn assert_completed(n: &Node) {
    let b = &n.boot;
    let why = || b.describe();
    assert_probe_completed(b, &why);
    assert!(b.failed_units.is_empty(), "failed units\n{}", why());
    assert_eq!(b.get("state"), "running", "{}", why());
}

/// What a boot shows when the probe MCD completed it (in a container or a VM): it ran
/// with our command line and the re-exec guard, the firstboot unit succeeded, and crio
/// and kubelet started after it.
pub(crate) fn assert_probe_completed(b: &Boot, why: &dyn Fn() -> String) {
    let run = b
        .mcd_run
        .as_deref()
        .unwrap_or_else(|| panic!("the MCD never completed\n{}", why()));
    assert_eq!(
        run.lines()
            .filter(|l| l.starts_with("argv="))
            .collect::<Vec<_>>(),
        [
            "argv=/run/bin/machine-config-daemon",
            "argv=firstboot-complete-machineconfig"
        ],
        "{}",
        why()
    );
    assert!(run.contains("_MCD_DID_REEXEC=1\n"), "{run}\n{}", why());
    assert!(!run.contains("machine_config_bytes=0\n"), "{run}");
    assert_eq!(b.unit(FIRSTBOOT, "Result"), "success", "{}", why());
    let done = b.at(FIRSTBOOT, "ExecMainExitTimestampMonotonic");
    for unit in ["crio.service", "kubelet.service"] {
        let start = b.at(unit, "ExecMainStartTimestampMonotonic");
        assert!(
            done > 0 && start >= done,
            "{unit} started at {start} us, before the firstboot finished at {done} us\n{}",
            why()
        );
    }
}

/// A real MCD got past its re-exec step and read the machine config.
fn assert_real_mcd_ran(n: &Node, mcd: Mcd) {
    let b = &n.boot;
    let journal = &b.firstboot_journal;
    assert!(
        !journal.contains("failed to re-exec"),
        "the MCD could not re-exec\n{}",
        b.describe()
    );
    assert!(
        journal.contains(mcd.past_reexec().unwrap()),
        "the MCD did not reach the machine config\n{}",
        b.describe()
    );
}

#[test]
fn spec3_standalone() {
    let n = first_boot("4.8", Flow::Standalone, Mcd::Probe, |_| {}, None);
    assert_delivered(&n, false);
    assert_completed(&n);
}

/// The bootimage of the spec 3 boots: its Ignition (v2.12) reads up to spec 3.3, and
/// asks the MCS for 3.3 as Debian's Ignition 2.14 does, so the MCS config of every
/// release is the one that Ignition would be served.
const SPEC3_BOOTIMAGE: &str = "4.9";

/// One boot of the probe MCD per MCO release, Ignition generation and flow: the MCS
/// config as that release's own code renders it, merged at boot by real Ignition
/// (pointer flow) or offline by `inject --base`.
macro_rules! release_boots {
    ($($name:ident: $bootimage:expr, $flow:ident($release:literal);)*) => {$(
        #[test]
        fn $name() {
            let legacy = $bootimage == "4.2";
            let n = first_boot($bootimage, Flow::$flow($release), Mcd::Probe, |_| {}, None);
            assert_delivered(&n, legacy);
            assert_completed(&n);
            assert_cluster_units(&n, $release);
        }
    )*};
}

release_boots! {
    spec22_pointer_to_release_4_6: "4.2", Pointer("release-4.6");
    spec22_pointer_to_release_4_12: "4.2", Pointer("release-4.12");
    spec22_pointer_to_release_4_16: "4.2", Pointer("release-4.16");
    spec22_pointer_to_release_4_18: "4.2", Pointer("release-4.18");
    spec22_pointer_to_main: "4.2", Pointer("main");
    spec22_offline_merge_of_release_4_6: "4.2", Offline("release-4.6");
    spec22_offline_merge_of_release_4_12: "4.2", Offline("release-4.12");
    spec22_offline_merge_of_release_4_16: "4.2", Offline("release-4.16");
    spec22_offline_merge_of_release_4_18: "4.2", Offline("release-4.18");
    spec22_offline_merge_of_main: "4.2", Offline("main");
    spec3_pointer_to_release_4_6: SPEC3_BOOTIMAGE, Pointer("release-4.6");
    spec3_pointer_to_release_4_12: SPEC3_BOOTIMAGE, Pointer("release-4.12");
    spec3_pointer_to_release_4_16: SPEC3_BOOTIMAGE, Pointer("release-4.16");
    spec3_pointer_to_release_4_18: SPEC3_BOOTIMAGE, Pointer("release-4.18");
    spec3_pointer_to_main: SPEC3_BOOTIMAGE, Pointer("main");
    spec3_offline_merge_of_release_4_6: SPEC3_BOOTIMAGE, Offline("release-4.6");
    spec3_offline_merge_of_release_4_12: SPEC3_BOOTIMAGE, Offline("release-4.12");
    spec3_offline_merge_of_release_4_16: SPEC3_BOOTIMAGE, Offline("release-4.16");
    spec3_offline_merge_of_release_4_18: SPEC3_BOOTIMAGE, Offline("release-4.18");
    spec3_offline_merge_of_main: SPEC3_BOOTIMAGE, Offline("main");
}

#[test]
fn spec22_standalone_under_ignition_v035() {
    let n = first_boot("4.2", Flow::Standalone, Mcd::Probe, |_| {}, None);
    assert_delivered(&n, true);
    assert_completed(&n);
}

#[test]
fn real_412_mcd_spec22_pointer_to_release_4_12() {
    let n = first_boot(
        "4.2",
        Flow::Pointer("release-4.12"),
        Mcd::Real412,
        |_| {},
        None,
    );
    assert_delivered(&n, true);
    assert_real_mcd_ran(&n, Mcd::Real412);
}

#[test]
fn real_main_mcd_spec22_pointer_to_main() {
    let n = first_boot("4.2", Flow::Pointer("main"), Mcd::RealMain, |_| {}, None);
    assert_delivered(&n, true);
    assert_real_mcd_ran(&n, Mcd::RealMain);
}

#[test]
fn real_main_mcd_spec3_pointer_to_main() {
    let n = first_boot(
        SPEC3_BOOTIMAGE,
        Flow::Pointer("main"),
        Mcd::RealMain,
        |_| {},
        None,
    );
    assert_delivered(&n, false);
    assert_real_mcd_ran(&n, Mcd::RealMain);
}

/// The firstboot unit and pull drop-in of the previous release, taken from its output.
fn previous_release_units(cfg: &mut Value) {
    let old: Value = serde_json::from_slice(
        &fs::read(crate_root().join("tests/data/previous-release/mco-small-4.8.ign")).unwrap(),
    )
    .unwrap();
    let old_unit = |name: &str| {
        old["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .cloned()
    };
    let units = cfg["systemd"]["units"].as_array_mut().unwrap();
    units.retain(|u| u["name"] != PULL);
    for u in units.iter_mut() {
        if u["name"] == FIRSTBOOT {
            *u = old_unit(FIRSTBOOT).unwrap();
        }
    }
}

/// The boot test fails on the previous release's units: with the cluster's 4.13+
/// config merged at boot, its firstboot unit is replaced by the cluster's, which waits
/// for the pull unit (podman) and never runs the delivered binary.
#[test]
fn previous_release_units_fail_when_the_cluster_config_is_merged() {
    let n = first_boot(
        "4.8",
        Flow::Pointer("release-4.16"),
        Mcd::Probe,
        previous_release_units,
        None,
    );
    let b = &n.boot;
    assert!(
        b.at(PULL, "InactiveExitTimestampMonotonic") > 0,
        "the pull unit did not start\n{}",
        b.describe()
    );
    assert_ne!(
        b.unit(FIRSTBOOT, "ActiveState"),
        "active",
        "{}",
        b.describe()
    );
    assert!(!b
        .unit(FIRSTBOOT, "DropInPaths")
        .contains("99-mcd-inject.conf"));
    assert!(b.mcd_run.is_none(), "{}", b.describe());
}

/// ... and on their own, they hang an MCD of 4.13 or later in its re-exec step.
#[test]
fn previous_release_units_hang_a_413_plus_mcd() {
    let n = first_boot(
        "4.8",
        Flow::Standalone,
        Mcd::Probe,
        previous_release_units,
        Some("failed to re-exec"),
    );
    let b = &n.boot;
    assert!(
        b.firstboot_journal.contains("failed to re-exec"),
        "{}",
        b.describe()
    );
    assert_eq!(
        b.unit(FIRSTBOOT, "ActiveState"),
        "activating",
        "{}",
        b.describe()
    );
    assert_eq!(
        b.at("kubelet.service", "ExecMainStartTimestampMonotonic"),
        0
    );
    assert!(b.mcd_run.is_none());
}

/// `verify` refuses the previous release's configs, naming the firstboot problem.
#[test]
fn verify_refuses_the_previous_release_configs() {
    for name in ["mco-small-4.2.ign", "mco-small-4.8.ign"] {
        let path = crate_root().join("tests/data/previous-release").join(name);
        let r = mcd_inject(["verify", path.to_str().unwrap()]);
        assert_eq!(r.code, Some(1), "{}", r.describe());
        let text = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        assert!(
            text.contains("has no drop-in 99-mcd-inject.conf: the cluster's config merged at boot replaces the unit"),
            "{text}"
        );
        assert!(
            text.contains(
                "without _MCD_DID_REEXEC=1: an MCD of MCO 4.13 or later tries to re-exec"
            ),
            "{text}"
        );
    }
}

/// The refusal of storage entries on our units is grounded: a drop-in on the firstboot
/// unit written as a storage file, sorting after ours, is read by systemd on the node
/// and puts `podman run` back, so the delivered MCD never runs; `verify` refuses that
/// config, naming the entry.
#[test]
fn a_file_written_firstboot_dropin_changes_what_the_node_runs() {
    const ZZ: &str = "/etc/systemd/system/machine-config-daemon-firstboot.service.d/99-zz.conf";
    let n = first_boot(
        "4.8",
        Flow::Standalone,
        Mcd::Probe,
        |cfg| {
            let text = "[Service]\nExecStart=\nExecStart=/usr/bin/podman run --rm mco firstboot-complete-machineconfig\n";
            cfg["storage"]["files"]
                .as_array_mut()
                .unwrap()
                .push(json!({"path": ZZ, "mode": 0o644, "contents": {"source": data_url(text.as_bytes())}}));
        },
        None,
    );
    let b = &n.boot;
    assert!(
        b.unit(FIRSTBOOT, "DropInPaths").contains("99-zz.conf"),
        "{}",
        b.describe()
    );
    assert!(
        !mcd_podman_calls(b).is_empty(),
        "podman did not run the MCD\n{}",
        b.describe()
    );
    assert!(
        b.mcd_run.is_none(),
        "the delivered MCD ran\n{}",
        b.describe()
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.ign");
    fs::write(&path, serde_json::to_vec(&n.cfg).unwrap()).unwrap();
    let r = mcd_inject(["verify", path.to_str().unwrap()]);
    assert_eq!(r.code, Some(1), "{}", r.describe());
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("FAIL:") && l.contains(&format!("] {ZZ}: "))),
        "{text}"
    );
}

/// The cluster's own units were on the node, with our drop-in on its firstboot text:
/// that text's own `ExecStartPre` ran before our `ExecStart` (every release disables the
/// yum repos; main also binds a copy of the ostree repo config, which fails harmlessly
/// on the test root, which has no `/sysroot`), and from 4.12 on the unit is ordered
/// before the cluster's `kubelet-dependencies.target` and required by its
/// `firstboot-osupdate.target`.
fn assert_cluster_units(n: &Node, release: &str) {
    let b = &n.boot;
    let why = || b.describe();
    let journal = &b.firstboot_journal;
    assert!(
        journal.contains("/etc/yum.repos.d/"),
        "the firstboot text's yum ExecStartPre did not run\n{}",
        why()
    );
    assert_eq!(
        journal.contains("/sysroot/ostree/repo/config"),
        release == "main",
        "main's ostree repo config ExecStartPre, and only main's\n{}",
        why()
    );
    if release != "release-4.6" {
        let done = b.at(FIRSTBOOT, "ExecMainExitTimestampMonotonic");
        let deps = "kubelet-dependencies.target";
        assert_eq!(b.unit(deps, "ActiveState"), "active", "{}", why());
        assert!(
            b.at(deps, "ActiveEnterTimestampMonotonic") >= done,
            "{deps} was reached before the firstboot finished\n{}",
            why()
        );
        assert_eq!(
            b.unit("firstboot-osupdate.target", "ActiveState"),
            "active",
            "{}",
            why()
        );
    }
}
