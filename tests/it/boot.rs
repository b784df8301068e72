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
//! (`../shared/real-mcd`), whose first boot runs to its end: on a root that runs the
//! bootimage's RHCOS (stand-ins for its rpm-ostree, podman, skopeo and ostree), the
//! MCD moves the node to the cluster's OS and reboots, completes the machine config
//! there and reboots, and the third boot starts the kubelet.
//!
//! Needs root, systemd-nspawn, debootstrap (the base root is made once, from the
//! machine's Debian mirror), ignition, openssl, python3 and gcc.

use std::fs;
use std::path::{Path, PathBuf};
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

/// Where the boot tests (nspawn and VM) keep their images, roots and disks (on the disk
/// of `target/`).
pub(crate) fn work_root() -> PathBuf {
    let dir = crate_root().join("target/boot-tests");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// An OCI layout with these builds at these paths, on a RHEL base of `rhel`; plain tar
/// layers, or gzip ones.
fn mcd_image(name: &str, rhel: &str, gzip: bool, files: &[(&str, PathBuf)]) -> String {
    mcd_image_with(name, rhel, gzip, &[], files)
}

/// [`mcd_image`] with more arguments of `mcd_image.py` (`--closure-of FILE`...).
fn mcd_image_with(
    name: &str,
    rhel: &str,
    gzip: bool,
    options: &[&std::ffi::OsStr],
    files: &[(&str, PathBuf)],
) -> String {
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
        cmd.args(options);
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

/// The probe MCD in an image shaped like OKD's: its one plain build on a CentOS Stream 8
/// base, as OKD's MCO images of the Fedora CoreOS era are built (`TAGS=fcos`).
fn okd_probe_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        probe_image();
        mcd_image(
            "okd-probe",
            "centos-8",
            false,
            &[(
                "/usr/bin/machine-config-daemon",
                work_root().join("mcd-probe"),
            )],
        )
    })
}

/// The os-release of an OKD bootimage, for the roots of its boots: Fedora CoreOS 33
/// (OKD 4.6's pin) and CentOS Stream CoreOS 9 (OKD 4.19's), in the shape of their own
/// (`ID`, `VERSION_ID`, `VARIANT_ID=coreos`, and for SCOS `ID_LIKE` naming rhel).
fn okd_os_release(bootimage: &str) -> Option<&'static str> {
    if bootimage.starts_with("33.") {
        Some(concat!(
            "NAME=Fedora\nVERSION=\"33.20201201.3.0 (CoreOS)\"\nID=fedora\nVERSION_ID=33\n",
            "PLATFORM_ID=\"platform:f33\"\nPRETTY_NAME=\"Fedora CoreOS 33.20201201.3.0\"\n",
            "CPE_NAME=\"cpe:/o:fedoraproject:fedora:33\"\nVARIANT=\"CoreOS\"\nVARIANT_ID=coreos\n",
            "OSTREE_VERSION='33.20201201.3.0'\n"
        ))
    } else if bootimage.starts_with("scos-9.") {
        Some(concat!(
            "NAME=\"CentOS Stream CoreOS\"\nID=\"scos\"\nID_LIKE=\"rhel fedora\"\n",
            "VERSION=\"9.0.20250411-0\"\nVERSION_ID=\"9\"\nVARIANT=\"CoreOS\"\nVARIANT_ID=coreos\n",
            "PLATFORM_ID=\"platform:el9\"\nPRETTY_NAME=\"CentOS Stream CoreOS 9.0.20250411-0\"\n",
            "OSTREE_VERSION='9.0.20250411-0'\n"
        ))
    } else {
        None
    }
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

/// An MCO image of 4.23 and later: only an RHEL 9 build (main's real one, which needs
/// glibc 2.34), on a base that holds the loader and the libraries it was linked
/// against, with their `ld.so.cache`. `without` names a library to leave out.
pub(crate) fn rhel9_only_image(without: Option<&str>) -> String {
    // One maker at a time: the layouts are made under names of this process.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let rhel9 = node::shared_program("real-mcd", "mcd-main-rhel9");
    let mut options: Vec<&std::ffi::OsStr> = vec!["--closure-of".as_ref(), rhel9.as_os_str()];
    if let Some(w) = without {
        options.push("--without".as_ref());
        options.push(w.as_ref());
    }
    let name = format!(
        "rhel9-only{}",
        without.map(|w| format!("-without-{w}")).unwrap_or_default()
    );
    mcd_image_with(
        &name,
        "9.6",
        true,
        &options,
        &[("/usr/bin/machine-config-daemon", rhel9.clone())],
    )
}

/// [`rhel9_only_image`] with every library, made once.
pub(crate) fn rhel9_only() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| rhel9_only_image(None))
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
#[derive(Clone, Copy)]
pub(crate) enum Flow {
    /// No cluster config at boot: the base holds only the machine config the
    /// firstboot completes (as a CI job that boots a bootimage gives it).
    Standalone,
    /// The cluster's config as the MCS of this MCO release serves it, merged offline
    /// (`--base`).
    Offline(&'static str),
    /// A pointer config: Ignition fetches the cluster's config of this MCO release from
    /// the loopback MCS and merges it at boot. The pointer config is the installer's,
    /// in the bootimage's own spec ([`Stub::Spec22`] for 4.1-4.5, [`Stub::Spec3`]
    /// after), trusting the MCS's CA.
    Pointer(&'static str),
    /// The pointer flow from a pointer config of this kind, trusting this CA, which
    /// `inject` translates to the bootimage's spec when the two differ.
    Stub(&'static str, Stub, Ca),
}

impl Flow {
    /// The MCO release of the cluster whose config the node gets, if any.
    fn release(self) -> Option<&'static str> {
        match self {
            Flow::Standalone => None,
            Flow::Offline(r) | Flow::Pointer(r) | Flow::Stub(r, ..) => Some(r),
        }
    }
}

/// The pointer configs a cluster holds for a pool (`<pool>-user-data` and
/// `<pool>-user-data-managed` in `openshift-machine-api`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Stub {
    /// The installer's of a cluster installed at 4.1-4.5: spec 2.2,
    /// `ignition.config.append`, given to `inject` as a plain config file.
    Spec22,
    /// The installer's of a cluster installed at 4.6 or later: spec 3,
    /// `ignition.config.merge`, as a plain config file.
    Spec3,
    /// What MCO's operator writes into the Secret `<pool>-user-data-managed`
    /// (`manifests/userdata_secret.yaml`, `PointerConfig` of
    /// `pkg/controller/common/helpers.go` on main): spec 3.5.0 as Go marshals MCO's
    /// `ign3types.Config`, given to `inject` as the Secret in YAML, as
    /// `oc get secret -n openshift-machine-api worker-user-data-managed -o yaml` prints it.
    Managed,
}

/// The CA a pointer config trusts for the MCS.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Ca {
    /// The CA that signed the MCS's certificate: MCO's rotated `machine-config-server-ca`,
    /// which MCO writes into every `*-user-data` Secret.
    Rotated,
    /// The installer's root CA, which a pointer config saved at install time carries,
    /// and which signed nothing the MCS presents after the rotation.
    InstallTimeRoot,
}

/// A CA as a `data:` URL, as MCO and the installer write it (vincent-petithory/dataurl's
/// `EncodeBytes`).
fn ca_data_url(pem: &[u8]) -> String {
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(pem)
    )
}

/// The pointer config of kind `stub`, naming `source` and trusting the CA `ca_pem`, as
/// the file `inject --base` reads: its name and its bytes.
fn pointer_config(stub: Stub, source: &str, ca_pem: &[u8]) -> (&'static str, Vec<u8>) {
    let ca = ca_data_url(ca_pem);
    match stub {
        Stub::Spec22 | Stub::Spec3 => {
            let (version, key) = if stub == Stub::Spec22 {
                ("2.2.0", "append")
            } else {
                ("3.2.0", "merge")
            };
            let cfg = json!({"ignition": {
                "version": version,
                "config": {key: [{"source": source}]},
                "security": {"tls": {"certificateAuthorities": [{"source": ca}]}}
            }});
            ("pointer.ign", serde_json::to_vec_pretty(&cfg).unwrap())
        }
        Stub::Managed => {
            // json.Marshal of MCO's ign3types.Config (v3_5): structs are never omitted.
            let user_data = format!(
                concat!(
                    r#"{{"ignition":{{"config":{{"merge":[{{"source":"{}","verification":{{}}}}],"#,
                    r#""replace":{{"verification":{{}}}}}},"proxy":{{}},"security":{{"tls":"#,
                    r#"{{"certificateAuthorities":[{{"source":"{}","verification":{{}}}}]}}}},"#,
                    r#""timeouts":{{}},"version":"3.5.0"}},"kernelArguments":{{}},"passwd":{{}},"#,
                    r#""storage":{{}},"systemd":{{}}}}"#
                ),
                source, ca
            );
            serde_json::from_str::<Value>(&user_data).expect("the managed pointer config is JSON");
            (
                "worker-user-data-managed.yaml",
                managed_secret(&user_data).into_bytes(),
            )
        }
    }
}

/// The Secret `worker-user-data-managed` holding `user_data`, as `oc get secret -o yaml`
/// prints it: keys sorted, MCO's label, the pool as owner, `disableTemplating` "true\n".
fn managed_secret(user_data: &str) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    format!(
        "apiVersion: v1
data:
  disableTemplating: {}
  userData: {}
kind: Secret
metadata:
  creationTimestamp: \"2025-11-03T09:14:27Z\"
  labels:
    machineconfiguration.openshift.io/managed-ca-bundle-derived-from-configmap: \"\"
  name: worker-user-data-managed
  namespace: openshift-machine-api
  ownerReferences:
  - apiVersion: machineconfiguration.openshift.io/v1
    kind: MachineConfigPool
    name: worker
    uid: 5f1c2a9e-8d3b-4c77-9a0e-2b6d1e4f7a10
  resourceVersion: \"48213\"
  uid: c3e9b7d2-41a6-4f0b-8e55-9d2a7c1b6e34
type: Opaque
",
        b64(b"true\n"),
        b64(user_data.as_bytes())
    )
}

/// The loopback MCS of a pointer flow, as the config names and trusts it, and the
/// requests of `/config/worker` it answered (`HttpsServer::mcs_requests`).
#[derive(Clone, Debug)]
struct Mcs {
    url: String,
    ca_pem: Vec<u8>,
    old_ca_pem: Vec<u8>,
    requests: Vec<String>,
}

/// Whether a bootimage's Ignition reads spec 2.x (4.1-4.5: Ignition v0.x), not spec 3.
pub(crate) fn spec2_bootimage(bootimage: &str) -> bool {
    ["4.1", "4.2", "4.3", "4.4", "4.5"].contains(&bootimage)
}

/// Which MCD the config delivers.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mcd {
    Probe,
    /// The probe as the one plain build of an OKD-shaped image.
    OkdProbe,
    Real412,
    RealMain,
    /// Main's RHEL 9 build alone, with its closure, on a root with an older glibc.
    Rhel9Only,
    /// Main's RHEL 9 build, forced on a RHEL 8 bootimage (`--binary-path`, `--force`):
    /// the wrong build for boot 1.
    WrongRhel9,
}

impl Mcd {
    pub(crate) fn image(self) -> &'static str {
        match self {
            Mcd::Probe => probe_image(),
            Mcd::OkdProbe => okd_probe_image(),
            Mcd::Real412 => real_412_image(),
            Mcd::RealMain => real_main_image(),
            Mcd::Rhel9Only => rhel9_only(),
            Mcd::WrongRhel9 => real_main_image(),
        }
    }

    /// What `inject` is told besides the image.
    fn args(self) -> &'static [&'static str] {
        match self {
            Mcd::WrongRhel9 => &["--binary-path", "/usr/bin/machine-config-daemon", "--force"],
            _ => &[],
        }
    }
}

struct Node {
    _dir: tempfile::TempDir,
    cfg: Value,
    boot: Boot,
    mcs: Option<Mcs>,
}

/// A root that real Ignition wrote, not booted yet.
struct Applied {
    dir: tempfile::TempDir,
    cfg: Value,
    root: PathBuf,
    /// In the pointer flows, the MCS and what it served.
    mcs: Option<Mcs>,
}

/// The config `inject` wrote for a flow, not applied yet; the loopback MCS (pointer
/// flows) and payload server (remote mode) still serve.
struct Written {
    dir: tempfile::TempDir,
    cfg: Value,
    cfg_path: PathBuf,
    spec2: bool,
    server: Option<HttpsServer>,
    /// In the pointer flows, where the config points.
    mcs_url: Option<String>,
}

impl Written {
    /// The MCS and the requests it answered so far.
    fn mcs(&self) -> Option<Mcs> {
        let (url, s) = (self.mcs_url.as_ref()?, self.server.as_ref()?);
        Some(Mcs {
            url: url.clone(),
            ca_pem: s.ca_pem.clone(),
            old_ca_pem: s.old_ca_pem.clone(),
            requests: s.mcs_requests(),
        })
    }
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
    let a = applied(bootimage, flow, mcd, &node::boot_base(), &|_| {}, tamper);
    let boot = node::boot(&a.root, hang);
    let _ = fs::remove_dir_all(&a.root);
    Node {
        _dir: a.dir,
        cfg: a.cfg,
        boot,
        mcs: a.mcs,
    }
}

/// Writes the config for `bootimage` with `inject` and lets real Ignition apply it (and
/// merge the cluster's config, in the pointer flow) to a fresh root made from the base
/// root `base`. `cluster` edits the cluster's config (as the MCS serves it) before
/// anything reads it; `tamper` edits the config `inject` wrote before Ignition sees it.
fn applied(
    bootimage: &str,
    flow: Flow,
    mcd: Mcd,
    base: &Path,
    cluster: &dyn Fn(&mut Value),
    tamper: impl Fn(&mut Value),
) -> Applied {
    let w = written(bootimage, flow, mcd, cluster, tamper);
    let work = w.dir.path();
    let root = work.join("root");
    node::prepare_root_on(base, &root);
    if let Some(os) = okd_os_release(bootimage) {
        // The OKD bootimage's OS: its os-release, which the install script reads; no
        // pivot.service (Fedora CoreOS never had one).
        fs::write(root.join("usr/lib/os-release"), os).unwrap();
        let etc = root.join("etc/os-release");
        let _ = fs::remove_file(&etc);
        std::os::unix::fs::symlink("../usr/lib/os-release", &etc).unwrap();
        fs::remove_file(root.join("usr/lib/systemd/system/pivot.service")).unwrap();
    }
    if w.spec2 {
        apply_spec2(&w.cfg_path, &root, work);
    } else {
        apply_spec3(&w.cfg_path, &root, work);
    }
    let mcs = w.mcs();
    Applied {
        dir: w.dir,
        cfg: w.cfg,
        root,
        mcs,
    }
}

/// Writes the config for `bootimage` with `inject` ([`applied`] says what `cluster` and
/// `tamper` do). In the pointer flows the loopback MCS serves both bodies of the
/// cluster's config, spec 2.2 and spec 3, and answers each request by its Accept
/// header, as MCO's MCS does.
fn written(
    bootimage: &str,
    flow: Flow,
    mcd: Mcd,
    cluster: &dyn Fn(&mut Value),
    tamper: impl Fn(&mut Value),
) -> Written {
    let mcs_config = |release: &str, spec2: bool| {
        let mut c = mcs_config(release, spec2);
        cluster(&mut c);
        c
    };
    let dir = tempfile::tempdir_in(work_root()).unwrap();
    let work = dir.path();
    let spec2 = spec2_bootimage(bootimage);
    let version = if spec2 { "2.2.0" } else { "3.2.0" };
    let mut server = None;
    let mut mcs_url = None;
    // The installer's pointer config is in the bootimage's own spec.
    let flow = match flow {
        Flow::Pointer(release) => {
            let stub = if spec2 { Stub::Spec22 } else { Stub::Spec3 };
            Flow::Stub(release, stub, Ca::Rotated)
        }
        other => other,
    };
    let (base_name, base) = match flow {
        Flow::Standalone => {
            let mc = machine_config_file(spec2);
            let base = json!({"ignition": {"version": version}, "storage": {"files": [mc]}});
            ("base.ign", serde_json::to_vec_pretty(&base).unwrap())
        }
        Flow::Offline(release) => (
            "base.ign",
            serde_json::to_vec_pretty(&mcs_config(release, spec2)).unwrap(),
        ),
        Flow::Pointer(_) => unreachable!(),
        Flow::Stub(release, stub, ca) => {
            let served = work.join("mcs/config");
            fs::create_dir_all(&served).unwrap();
            for (body, spec2) in [("spec2.2", true), ("spec3", false)] {
                fs::write(
                    served.join(format!("worker-{body}.ign")),
                    serde_json::to_vec(&mcs_config(release, spec2)).unwrap(),
                )
                .unwrap();
            }
            let s = HttpsServer::serve(&work.join("mcs"), work);
            let url = s.url("config/worker");
            let ca_pem = match ca {
                Ca::Rotated => &s.ca_pem,
                Ca::InstallTimeRoot => &s.old_ca_pem,
            };
            let base = pointer_config(stub, &url, ca_pem);
            mcs_url = Some(url);
            server = Some(s);
            base
        }
    };
    let base_path = work.join(base_name);
    fs::write(&base_path, base).unwrap();
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
    // v0.35 in the pointer flow (whose base trusts the server's CA); over HTTP for spec
    // 3, whose `ignition-apply` (unlike the initramfs files stage) does not take the
    // config's CAs for file fetches, and in the offline merge (no CA in the base).
    // Without an MCS (the offline merge), a server of its own serves the payload.
    args.extend(mcd.args().iter().map(|a| a.to_string()));
    let real_main = matches!(mcd, Mcd::RealMain | Mcd::Rhel9Only | Mcd::WrongRhel9);
    if real_main && server.is_none() {
        fs::create_dir_all(work.join("mcs")).unwrap();
        server = Some(HttpsServer::serve(&work.join("mcs"), work));
    }
    if let (true, Some(s)) = (real_main, &server) {
        fs::create_dir_all(work.join("mcs/payload")).unwrap();
        let path = "payload/machine-config-daemon.gz";
        args.extend([
            "--payload-url".into(),
            if spec2 && mcs_url.is_some() {
                s.url(path)
            } else {
                s.http_url(path)
            },
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
    Written {
        dir,
        cfg,
        cfg_path,
        spec2,
        server,
        mcs_url,
    }
}

pub(crate) fn provenance_sha256(cfg: &Value) -> String {
    provenance(cfg)["binary_sha256"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The provenance record a config carries.
fn provenance(cfg: &Value) -> Value {
    let file = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .expect("the config carries a provenance record");
    let bytes = mcd_inject::ignition::decode_data_url(file["contents"]["source"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The 4.1 OS's `pivot.service` was masked and did not run (4.1-4.5 bootimages).
pub(crate) fn assert_pivot_masked(b: &Boot, why: &dyn Fn() -> String) {
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

/// The calls of podman (the stand-in records them all) that pulled or ran the MCO image
/// or an MCD: the path the delivered binary replaces. The cluster's other units may run
/// other images through podman.
pub(crate) fn mcd_podman_calls(b: &Boot) -> Vec<&str> {
    b.called
        .lines()
        .filter(|l| l.contains("/usr/bin/podman "))
        .filter(|l| pulls_or_runs_the_mcd(l))
        .collect()
}

/// Whether the arguments of a podman call name the MCO image, the MCD's binary or its
/// firstboot subcommand (as the podman stand-in refuses them), rather than another
/// image (the cluster's OS image) or a file of the MCD's (its podman policy).
fn pulls_or_runs_the_mcd(args: &str) -> bool {
    args.split_whitespace().any(|a| {
        a.contains(mcs_renders::MCO_IMAGE)
            || a == "machine-config-daemon"
            || a.ends_with("/machine-config-daemon")
            || a.ends_with("=machine-config-daemon")
            || a == "firstboot-complete-machineconfig"
    })
}

/// What every first boot must show: our binary installed before the firstboot ran,
/// from our drop-in; no pull, no podman; pivot.service masked on 4.1-4.5.
fn assert_delivered(n: &Node, legacy: bool) {
    let b = &n.boot;
    let why = || b.describe();
    assert_installed_and_used(b, &provenance_sha256(&n.cfg), &why);
    if legacy {
        assert_pivot_masked(b, &why);
    }
}

/// Our binary (of sha256 `sha256`, mode 0755) installed before the firstboot ran, which
/// ran through our drop-in; the pull unit never started; podman never pulled or ran the
/// MCO image (a container boot or a VM boot alike).
pub(crate) fn assert_installed_and_used(b: &Boot, sha256: &str, why: &dyn Fn() -> String) {
    assert_eq!(b.unit(INSTALL, "Result"), "success", "{}", why());
    assert_eq!(b.unit(INSTALL, "ActiveState"), "active", "{}", why());
    assert_used(b, sha256, why);
}

/// Our binary (of sha256 `sha256`, mode 0755) at `/run/bin`, installed before the
/// firstboot started (the order the boot's journal records), and the firstboot ran
/// through our drop-in; the pull unit never started; podman never pulled or ran the MCO
/// image. Holds whether the boot ended at the probe's poweroff or in a reboot.
fn assert_used(b: &Boot, sha256: &str, why: &dyn Fn() -> String) {
    let n = b.number;
    let installed = b.started(INSTALL);
    let started = b.starting(FIRSTBOOT);
    assert!(
        installed > 0 && started > 0 && installed <= started,
        "boot {n}: the install unit must finish (at {installed} us) before the firstboot starts (at {started} us)\n{}",
        why()
    );
    if b.get("closure.files").is_empty() {
        assert_eq!(b.get("bin.sha256"), sha256, "boot {n}\n{}", why());
    } else {
        // Through its closure: /run/bin holds the wrapper that runs the build.
        assert_eq!(b.get("closure.bin.sha256"), sha256, "boot {n}\n{}", why());
        assert_eq!(b.get("bin.script"), "yes", "boot {n}\n{}", why());
    }
    assert_eq!(b.get("bin.mode"), "755", "boot {n}\n{}", why());
    assert!(
        b.unit(FIRSTBOOT, "DropInPaths")
            .contains("99-mcd-inject.conf"),
        "boot {n}\n{}",
        why()
    );
    assert_eq!(
        b.starting(PULL),
        0,
        "boot {n}: the pull unit ran\n{}",
        why()
    );
    // The cluster's own units may run other images through podman; never the MCO's.
    let mcd_podman = mcd_podman_calls(b);
    assert!(
        mcd_podman.is_empty(),
        "boot {n}: podman pulled or ran the MCO image: {mcd_podman:?}\n{}",
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

#[test]
fn spec3_standalone() {
    let n = first_boot("4.8", Flow::Standalone, Mcd::Probe, |_| {}, None);
    assert_delivered(&n, false);
    assert_completed(&n);
}

/// The bootimage of the spec 3 boots: its Ignition (v2.12) reads up to spec 3.3, and
/// asks the MCS for 3.3 as Debian's Ignition 2.14 does, so the MCS config of every
/// release is the one that Ignition would be served.
pub(crate) const SPEC3_BOOTIMAGE: &str = "4.9";

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
            if let Some(mcs) = &n.mcs {
                assert_served(mcs, if legacy { SPEC22_BODY } else { SPEC3_BODY });
            }
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

/// The MCS stand-in answers `/config/worker` by the Accept header as MCO's
/// `pkg/server/api.go` does, over the leaf certificate its rotated CA signed: the
/// headers of Ignition v0.35 and 2.14 as they send them, none, `*/*`, q ordering, and
/// versions MCO refuses. curl trusting the rotated CA reaches it; trusting the
/// install-time root CA, it does not.
#[test]
fn the_mcs_stand_in_answers_by_the_accept_header_over_its_rotated_ca() {
    let dir = tempfile::tempdir_in(work_root()).unwrap();
    let work = dir.path();
    let config = work.join("mcs/config");
    fs::create_dir_all(&config).unwrap();
    fs::write(config.join("worker-spec2.2.ign"), b"{\"v\":2}").unwrap();
    fs::write(config.join("worker-spec3.ign"), b"{\"v\":3}").unwrap();
    let s = HttpsServer::serve(&work.join("mcs"), work);
    let (ca, old) = (work.join("rotated.pem"), work.join("old.pem"));
    fs::write(&ca, &s.ca_pem).unwrap();
    fs::write(&old, &s.old_ca_pem).unwrap();
    let get = |cafile: &Path, accept: Option<&str>| {
        let mut c = Command::new("curl");
        c.args(["-sS", "-w", " %{http_code}", "--cacert"])
            .arg(cafile)
            .arg(s.url("config/worker"));
        // curl sends `Accept: */*` unless told; `Accept:` alone removes the header.
        c.args([
            "-H",
            &format!(
                "Accept:{}",
                accept.map(|a| format!(" {a}")).unwrap_or_default()
            ),
        ]);
        node::run(&mut c)
    };
    let cases: &[(Option<&str>, &str)] = &[
        // Ignition v0.35, as it sends it.
        (
            Some("application/vnd.coreos.ignition+json; version=2.2.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"),
            "{\"v\":2} 200",
        ),
        // A later v0.x, as api.go's comment quotes it.
        (
            Some("application/vnd.coreos.ignition+json; version=2.4.0, application/vnd.coreos.ignition+json; version=1; q=0.5, */*; q=0.1"),
            "{\"v\":2} 200",
        ),
        // Ignition 2.14.
        (
            Some("application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"),
            "{\"v\":3} 200",
        ),
        (None, "{\"v\":2} 200"),
        (Some("*/*"), "{\"v\":2} 200"),
        (Some("application/vnd.coreos.ignition+json"), "{\"v\":2} 200"),
        (Some("application/vnd.coreos.ignition+json;version=2.2.0"), "{\"v\":2} 200"),
        // A newer 3.x minor than MCO knows: its newest.
        (Some("application/vnd.coreos.ignition+json;version=3.6.0"), "{\"v\":3} 200"),
        // Sorted by q, highest first: the 3.x entry wins though it comes second.
        (
            Some("application/vnd.coreos.ignition+json;version=2.2.0;q=0.5, application/vnd.coreos.ignition+json;version=3.1.0"),
            "{\"v\":3} 200",
        ),
        // A version that is not X.Y.Z is no version; the next entry decides.
        (
            Some("application/vnd.coreos.ignition+json;version=3, application/vnd.coreos.ignition+json;version=3.0.0;q=0.9"),
            "{\"v\":3} 200",
        ),
        // Versions MCO cannot serve.
        (Some("application/vnd.coreos.ignition+json;version=2.1.0"), " 400"),
        (Some("application/vnd.coreos.ignition+json;version=4.0.0"), " 400"),
    ];
    for (accept, want) in cases {
        let (ok, text) = get(&ca, *accept);
        assert!(ok, "{accept:?}: {text}");
        assert_eq!(text, *want, "Accept: {accept:?}");
    }
    let log = s.mcs_requests();
    assert_eq!(log.len(), cases.len(), "{log:?}");
    assert!(
        log[0].starts_with(
            "/config/worker spec2.2 application/vnd.coreos.ignition+json; version=2.2.0,"
        ),
        "{log:?}"
    );
    assert!(log[1].starts_with("/config/worker spec2.2 "), "{log:?}");
    assert!(log[2].starts_with("/config/worker spec3 "), "{log:?}");
    assert_eq!(log[3], "/config/worker spec2.2 ", "{log:?}");
    // The install-time root CA signed nothing the server presents.
    let (ok, text) = get(&old, None);
    assert!(!ok, "{text}");
    assert!(text.contains("SSL certificate problem"), "{text}");
    assert_eq!(s.mcs_requests().len(), cases.len());
}

/// Today's clusters hold the pointer config in the Secret `worker-user-data-managed`,
/// spec 3.5 and trusting MCO's rotated MCS CA. Given as that Secret's YAML for a 4.2
/// bootimage, `inject` writes it as spec 2.2 (`ignition.config.append` to the same MCS,
/// the same CA); Ignition v0.35's fetch stage reaches the MCS over HTTPS through that
/// CA, is served the spec 2.2 body by its Accept header, and the probe MCD completes
/// the first boot.
#[test]
fn spec22_managed_stub_of_main_translated() {
    let n = first_boot(
        "4.2",
        Flow::Stub("main", Stub::Managed, Ca::Rotated),
        Mcd::Probe,
        |_| {},
        None,
    );
    let mcs = n.mcs.as_ref().unwrap();
    assert_points_to(&n.cfg, mcs, &mcs.ca_pem, true);
    assert_served(mcs, SPEC22_BODY);
    assert_delivered(&n, true);
    assert_completed(&n);
    assert_cluster_units(&n, "main");
}

/// The negative control: a pointer config saved before MCO rotated the MCS CA carries
/// the installer's root CA, which signed nothing the MCS presents. Ignition v0.35's
/// fetch stage, given the config `inject` wrote for a 4.2 bootimage from the
/// install-time stub (spec 2.2) or from the managed Secret (spec 3.5, translated) with
/// that CA, fails at TLS and never gets the cluster's config (it retries for ever: the
/// stage is stopped after 20 s).
#[test]
fn spec22_stubs_with_the_install_time_root_ca_fail_at_tls() {
    let failed = |stub: Stub| {
        std::thread::spawn(move || {
            let w = written(
                "4.2",
                Flow::Stub("main", stub, Ca::InstallTimeRoot),
                Mcd::Probe,
                &|_| {},
                |_| {},
            );
            let mcs = w.mcs().unwrap();
            assert_points_to(&w.cfg, &mcs, &mcs.old_ca_pem, true);
            let (ok, text) = node::fetch_stage(&w.cfg_path, w.dir.path(), 20);
            (stub, ok, text, w.mcs().unwrap().requests)
        })
    };
    let runs = [failed(Stub::Spec22), failed(Stub::Managed)];
    for run in runs {
        let (stub, ok, text, requests) = run.join().unwrap();
        assert!(!ok, "{stub:?}: the fetch stage succeeded:\n{text}");
        assert!(
            text.contains("x509: certificate signed by unknown authority"),
            "{stub:?}: no TLS error in the fetch stage's log:\n{text}"
        );
        assert!(
            requests.is_empty(),
            "{stub:?}: the MCS answered: {requests:?}"
        );
    }
}

/// The other direction: the installer's spec 2.2 pointer config of a cluster installed
/// at 4.1-4.5 (`append`, trusting the rotated CA that MCO wrote into it), for a 4.9
/// bootimage. `inject` translates it up to spec 3 (`merge`); Ignition 2.14's fetch stage
/// asks for spec 3.3, is served the spec 3 body and merges it; the probe MCD completes
/// the first boot.
#[test]
fn spec3_install_time_stub_of_main_translated() {
    let n = first_boot(
        SPEC3_BOOTIMAGE,
        Flow::Stub("main", Stub::Spec22, Ca::Rotated),
        Mcd::Probe,
        |_| {},
        None,
    );
    let mcs = n.mcs.as_ref().unwrap();
    assert_points_to(&n.cfg, mcs, &mcs.ca_pem, false);
    assert_served(mcs, SPEC3_BODY);
    assert_delivered(&n, false);
    assert_completed(&n);
    assert_cluster_units(&n, "main");
}

/// OKD: a Fedora CoreOS 33 bootimage (OKD 4.6's pin) and a CentOS Stream CoreOS 9 one
/// (OKD 4.19's), on roots with their os-release, given the plain build of an OKD-shaped
/// image: installed and used by the firstboot, which completes, with the cluster's
/// config merged at boot (pointer flow) or offline.
#[test]
fn okd_fcos_33_pointer_to_release_4_12() {
    let n = first_boot(
        "33.20201201.3.0",
        Flow::Pointer("release-4.12"),
        Mcd::OkdProbe,
        |_| {},
        None,
    );
    assert_eq!(provenance(&n.cfg)["target"]["fedora"], 33);
    assert_delivered(&n, false);
    assert_completed(&n);
    assert_cluster_units(&n, "release-4.12");
    assert!(
        !n.boot.called.contains("pivot.service"),
        "{}",
        n.boot.describe()
    );
}

#[test]
fn okd_scos_9_offline_merge_of_main() {
    let n = first_boot(
        "scos-9.0.20250222-0",
        Flow::Offline("main"),
        Mcd::OkdProbe,
        |_| {},
        None,
    );
    assert_eq!(provenance(&n.cfg)["target"]["bootimage"], "scos-9");
    assert_delivered(&n, false);
    assert_completed(&n);
    assert_cluster_units(&n, "main");
}

#[test]
fn spec22_standalone_under_ignition_v035() {
    let n = first_boot("4.2", Flow::Standalone, Mcd::Probe, |_| {}, None);
    assert_delivered(&n, true);
    assert_completed(&n);
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

/// What the MCS stand-in logs for the spec 2.2 body (`tests/support/https_serve.py`).
const SPEC22_BODY: &str = "spec2.2";
/// ... and for the spec 3 body.
const SPEC3_BODY: &str = "spec3";

/// The MCS answered every request of the cluster's config, at least one, with `body`,
/// chosen by an Accept header asking for an Ignition config of that major version.
fn assert_served(mcs: &Mcs, body: &str) {
    let asked = if body == SPEC22_BODY {
        "application/vnd.coreos.ignition+json; version=2."
    } else {
        "application/vnd.coreos.ignition+json;version=3."
    };
    assert!(!mcs.requests.is_empty(), "the MCS was never asked");
    for r in &mcs.requests {
        let mut f = r.splitn(3, ' ');
        let (path, got, accept) = (f.next(), f.next(), f.next().unwrap_or(""));
        assert_eq!(path, Some("/config/worker"), "{r}");
        assert_eq!(got, Some(body), "the MCS served another body: {r}");
        assert!(accept.starts_with(asked), "{r}");
    }
}

/// The config `inject` wrote points to the MCS as the bootimage's Ignition reads it:
/// its spec (2.2, `ignition.config.append`, or 3.x, `merge`), the MCS's URL as its one
/// source, and the one CA `ca_pem` (a `data:` URL).
fn assert_points_to(cfg: &Value, mcs: &Mcs, ca_pem: &[u8], spec2: bool) {
    let ign = &cfg["ignition"];
    let version = ign["version"].as_str().unwrap_or_default();
    let (key, other) = if spec2 {
        assert_eq!(version, "2.2.0", "{ign}");
        ("append", "merge")
    } else {
        assert!(version.starts_with("3."), "{ign}");
        ("merge", "append")
    };
    let sources = ign["config"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no ignition.config.{key}: {ign}"));
    assert_eq!(sources.len(), 1, "{ign}");
    assert_eq!(sources[0]["source"], mcs.url.as_str(), "{ign}");
    assert!(ign["config"][other].is_null(), "{ign}");
    let cas = ign["security"]["tls"]["certificateAuthorities"]
        .as_array()
        .unwrap_or_else(|| panic!("no CA: {ign}"));
    assert_eq!(cas.len(), 1, "{ign}");
    let pem = mcd_inject::ignition::decode_data_url(cas[0]["source"].as_str().unwrap()).unwrap();
    assert!(pem == ca_pem, "the config trusts another CA: {ign}");
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

/// The RHCOS a bootimage runs (`tests/support/rhcos-os.sh`).
pub(crate) fn bootimage_os(bootimage: &str) -> &'static str {
    match bootimage {
        "4.1" => "rhcos-4.1",
        "4.2" => "rhcos-4.2",
        SPEC3_BOOTIMAGE => "rhcos-4.9",
        other => panic!("no RHCOS stand-in for the {other} bootimage"),
    }
}

/// The RHCOS the cluster's OS image of an MCO release carries: RHEL 8.6 for 4.12,
/// RHEL 9.4 for 4.16 and 4.18, RHEL 9.6 for main (4.22).
pub(crate) fn cluster_os(release: &str) -> (&'static str, u64) {
    match release {
        "release-4.12" => ("rhcos-4.12", 8),
        "release-4.16" => ("rhcos-4.16", 9),
        "release-4.18" => ("rhcos-4.18", 9),
        "main" => ("rhcos-4.22", 9),
        other => panic!("no RHCOS stand-in for {other}"),
    }
}

/// The cluster's OS as a first boot meets it: the machine config the node completes
/// (which names the OS image and its extensions image), the RHCOS the OS image carries
/// (`tests/support/rhcos-os.sh`) and its RHEL major.
pub(crate) struct ClusterOs {
    pub(crate) mc: Value,
    pub(crate) name: &'static str,
    pub(crate) rhel: u64,
}

impl ClusterOs {
    /// The cluster OS of MCO `release`, its OS image `image` when given (one a test
    /// serves), else the one its machine config names.
    pub(crate) fn of(release: &str, image: Option<&str>) -> ClusterOs {
        let mut mc = encapsulated_mc(release);
        if let Some(image) = image {
            mc["spec"]["osImageURL"] = json!(image);
        }
        let (name, rhel) = cluster_os(release);
        ClusterOs { mc, name, rhel }
    }

    pub(crate) fn image(&self) -> &str {
        self.mc["spec"]["osImageURL"].as_str().unwrap()
    }

    pub(crate) fn extensions(&self) -> &str {
        self.mc["spec"]["baseOSExtensionsContainerImage"]
            .as_str()
            .unwrap_or("")
    }
}

/// The machine config the firstboot completes, from the MCS config of `release`.
pub(crate) fn encapsulated_mc(release: &str) -> Value {
    let file = mcs_config(release, false)["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/etc/ignition-machine-config-encapsulated.json")
        .cloned()
        .expect("the MCS config carries the encapsulated machine config");
    let source = file["contents"]["source"].as_str().unwrap();
    let bytes = mcd_inject::ignition::decode_data_url(source).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The sha256 of the build the install script must pick on a host of RHEL major
/// `rhel`: the provenance's `builds` entry for it (else its first), or, from a config
/// that records one build, its `binary_sha256`.
pub(crate) fn provenance_sha256_for(cfg: &Value, rhel: u64) -> String {
    let p = provenance(cfg);
    match p["builds"].as_array() {
        Some(builds) => builds
            .iter()
            .find(|b| b["rhel"].as_u64() == Some(rhel))
            .unwrap_or(&builds[0])["binary_sha256"]
            .as_str()
            .unwrap()
            .to_string(),
        None => p["binary_sha256"].as_str().unwrap().to_string(),
    }
}

/// The sha256 the install script logged for the binary it installed in this boot.
pub(crate) fn installed_sha256(b: &Boot) -> Option<String> {
    b.journal
        .lines()
        .filter(|l| l.starts_with("mco-mcd-install: installed /run/bin/machine-config-daemon"))
        .find_map(|l| l.split("(sha256 ").nth(1)?.split(')').next())
        .map(str::to_string)
}

/// A first boot run to its end: in an nspawn root, or in a VM (whose disk's files the
/// checks read are copied to `root` after the last boot).
pub(crate) struct FirstBoot {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) cfg: Value,
    /// The machine config the node completes (the encapsulated one).
    pub(crate) mc: Value,
    pub(crate) root: PathBuf,
    pub(crate) boots: Vec<Boot>,
}

impl Drop for FirstBoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// The MCO repository the test clusters name their images in
/// (`tests/data/mcs/inputs/manifests/controllerconfig.yaml`).
const RELEASE_REPO: &str = "registry.example.com/openshift/release";

/// The cluster's OS image as a registry serves it, for an MCD that reads it from the
/// registry itself (4.12 checks its `ostree.bootable` label with containers/image before
/// it rebases): a static server of a registry's read API (`/v2/`, the manifest by
/// digest, the config blob), to which the root's `registries.conf` mirrors
/// `registry.example.com/openshift/release` (insecure: plain HTTP on loopback). The
/// image is labelled as RHCOS's are (`ostree.bootable`, `com.coreos.ostree-commit`) and
/// has no layers (the rpm-ostree stand-in deploys it). Returns the server and the
/// image's reference by digest.
fn serve_os_image(work: &Path, os: &str) -> (HttpsServer, String) {
    let dir = work.join("registry");
    let repo = dir.join("v2/openshift/release");
    fs::create_dir_all(repo.join("manifests")).unwrap();
    fs::create_dir_all(repo.join("blobs")).unwrap();
    fs::write(dir.join("v2/index.html"), b"{}").unwrap();
    let commit = crate::harness::sha256_hex(os.as_bytes());
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Labels": {"ostree.bootable": "true", "com.coreos.ostree-commit": commit}},
        "rootfs": {"type": "layers", "diff_ids": []},
    }))
    .unwrap();
    let config_digest = format!("sha256:{}", crate::harness::sha256_hex(&config));
    fs::write(repo.join("blobs").join(&config_digest), &config).unwrap();
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": config.len(),
        },
        "layers": [],
    }))
    .unwrap();
    let digest = format!("sha256:{}", crate::harness::sha256_hex(&manifest));
    fs::write(repo.join("manifests").join(&digest), &manifest).unwrap();
    let server = HttpsServer::serve(&dir, work);
    (server, format!("{RELEASE_REPO}@{digest}"))
}

/// The root's `registries.conf`: `registry.example.com/openshift/release` mirrored by
/// the loopback registry.
fn mirror_release_repo(root: &Path, server: &HttpsServer) {
    let dir = root.join("etc/containers");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("registries.conf"),
        format!(
            "[[registry]]\nlocation = \"{RELEASE_REPO}\"\n\n[[registry.mirror]]\nlocation = \"127.0.0.1:{}/openshift/release\"\ninsecure = true\n",
            server.http_port
        ),
    )
    .unwrap();
}

/// For main's MCD standing in for a 4.16 one: main's MCD passes podman < 4.4.1
/// `--signature-policy /etc/machine-config-daemon/policy-for-old-podman.json`
/// (pkg/daemon/update.go), a file of MCO 4.17+'s templates, and podman refuses a policy
/// file that does not exist; a 4.16 MCD passes none. The cluster's config (as its MCS
/// serves it, in either spec) gets the file as main's writes it, when it lacks it.
pub(crate) fn add_main_old_podman_policy(cfg: &mut Value) {
    const POLICY: &str = "/etc/machine-config-daemon/policy-for-old-podman.json";
    let spec2 = cfg["ignition"]["version"]
        .as_str()
        .is_some_and(|v| v.starts_with("2."));
    let file_of = |cfg: &Value| {
        cfg["storage"]["files"]
            .as_array()
            .and_then(|files| files.iter().find(|f| f["path"] == POLICY).cloned())
    };
    if file_of(cfg).is_some() {
        return;
    }
    let file =
        file_of(&mcs_config("main", spec2)).expect("main's config writes the old podman's policy");
    cfg["storage"]["files"].as_array_mut().unwrap().push(file);
}

/// Sets the OS image of the encapsulated machine config of an MCS config.
fn set_os_image_url(cfg: &mut Value, image: &str) {
    for f in cfg["storage"]["files"].as_array_mut().unwrap() {
        if f["path"] == "/etc/ignition-machine-config-encapsulated.json" {
            let source = f["contents"]["source"].as_str().unwrap();
            let bytes = mcd_inject::ignition::decode_data_url(source).unwrap();
            let mut mc: Value = serde_json::from_slice(&bytes).unwrap();
            mc["spec"]["osImageURL"] = json!(image);
            f["contents"]["source"] = json!(data_url(&serde_json::to_vec(&mc).unwrap()));
            f["contents"]
                .as_object_mut()
                .unwrap()
                .remove("verification");
        }
    }
}

/// The first boot of an old bootimage, run to its end: the config for `bootimage`,
/// applied by real Ignition to a root that runs the bootimage's RHCOS, whose cluster
/// (MCO `release`) ships its OS image with the cluster's RHCOS; booted again at each
/// reboot the root asks for, at most three times. For the 4.12 MCD, which reads the OS
/// image from its registry, the image is served (`serve_os_image`) and the machine
/// config names it: the renders' OS image is a digest no registry has.
/// Also returns the MCS and what it served, in the pointer flows.
fn first_boot_to_the_end(bootimage: &str, flow: Flow, mcd: Mcd) -> (FirstBoot, Option<Mcs>) {
    let start = std::time::Instant::now();
    let release = flow.release().expect("a first boot into a cluster");
    let scratch = tempfile::tempdir_in(work_root()).unwrap();
    let registry =
        matches!(mcd, Mcd::Real412).then(|| serve_os_image(scratch.path(), cluster_os(release).0));
    let image = registry.as_ref().map(|(_, image)| image.clone());
    // Boot 1 runs on a root of the bootimage's ABI (every RHCOS bootimage here is RHEL 8).
    let a = applied(
        bootimage,
        flow,
        mcd,
        &node::abi_base(8),
        &|c| {
            if let Some(image) = &image {
                set_os_image_url(c, image);
            }
            if matches!(mcd, Mcd::RealMain | Mcd::Rhel9Only | Mcd::WrongRhel9) {
                add_main_old_podman_policy(c);
            }
        },
        |_| {},
    );
    let cluster = ClusterOs::of(release, image.as_deref());
    // The OS update deploys the cluster's OS on a tree of its ABI.
    node::set_os(
        &a.root,
        bootimage_os(bootimage),
        cluster.name,
        cluster.image(),
        cluster.extensions(),
        &node::abi_base(cluster.rhel),
    );
    add_abi_controls(&a.root);
    if let Some((server, _)) = &registry {
        mirror_release_repo(&a.root, server);
    }
    let boots = node::boots(&mut node::Nspawn(&a.root), 3);
    let each: Vec<String> = boots
        .iter()
        .map(|b| {
            let sha = installed_sha256(b).unwrap_or_default();
            format!(
                "boot {}: {:.1} s, installed {}",
                b.number,
                b.seconds,
                &sha[..sha.len().min(12)]
            )
        })
        .collect();
    eprintln!(
        "first boot of the {bootimage} bootimage to {release}: {:.1} s with the config and Ignition; {}",
        start.elapsed().as_secs_f64(),
        each.join("; ")
    );
    drop(registry);
    drop(scratch);
    let f = FirstBoot {
        _dir: a.dir,
        cfg: a.cfg,
        mc: cluster.mc,
        root: a.root,
        boots,
    };
    (f, a.mcs)
}

/// The negative controls of the ABI each boot runs on: programs the probe runs at every
/// boot (`/var/lib/boot-probe/controls`, on the shared `/var`), recording whether the
/// booted OS's loader ran them. `rhel9-build` is main's real RHEL 9 build (it needs
/// `GLIBC_2.34`); `libcrypto-1.1-build` is the fixture `mco-small`'s `.rhel8` build, the
/// shape of an MCO 4.16 RHEL 8 build (it links `libcrypto.so.1.1`).
pub(crate) fn add_abi_controls(root: &Path) {
    static FIXTURE_RHEL8: OnceLock<PathBuf> = OnceLock::new();
    let rhel8 = FIXTURE_RHEL8.get_or_init(|| {
        let out = work_root().join(format!("fixture-rhel8.{}", std::process::id()));
        let r = mcd_inject([
            "extract",
            "--image",
            &crate::harness::fixture("mco-small").reference("oci"),
            "--path",
            "/usr/bin/machine-config-daemon.rhel8",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, Some(0), "{}", r.describe());
        out
    });
    let dir = root.join("var/lib/boot-probe/controls");
    fs::create_dir_all(&dir).unwrap();
    for (name, from) in [
        (
            "rhel9-build",
            node::shared_program("real-mcd", "mcd-main-rhel9"),
        ),
        ("libcrypto-1.1-build", rhel8.clone()),
    ] {
        let to = dir.join(name);
        if fs::hard_link(&from, &to).is_err() {
            fs::copy(&from, &to).unwrap();
        }
        fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
}

/// Whether the loader's complaint is a glibc symbol version that RHEL 9 has and RHEL 8's
/// glibc lacks (the loader names the first it misses: 2.32, 2.33 or 2.34).
fn lacks_newer_glibc(text: &str) -> bool {
    ["2.32", "2.33", "2.34"]
        .iter()
        .any(|v| text.contains(&format!("libc.so.6: version `GLIBC_{v}' not found")))
}

/// Each boot of a first boot ran on the OS of its own ABI, and the negative controls
/// ([`add_abi_controls`]) show it: boot 1 on the bootimage's (RHEL 8: glibc 2.31, where
/// the RHEL 9 build cannot run and `libcrypto.so.1.1` is found), boots 2 and 3 on the
/// cluster's (RHEL 9: glibc 2.36, where the RHEL 9 build runs and a build linking
/// `libcrypto.so.1.1` cannot load).
pub(crate) fn assert_each_boot_on_its_abi(f: &FirstBoot, release: &str) {
    let why = || describe_boots(f);
    let (_, cluster_rhel) = cluster_os(release);
    for b in &f.boots {
        let rhel = if b.number == 1 { 8 } else { cluster_rhel };
        let n = b.number;
        let (glibc, rhel9, crypto) = (
            b.get("os.glibc"),
            b.get("control.rhel9-build"),
            b.get("control.libcrypto-1.1-build"),
        );
        let missing_crypto = "libcrypto.so.1.1: cannot open shared object file";
        if rhel == 8 {
            assert_eq!(glibc, "glibc 2.31", "boot {n}\n{}", why());
            assert!(
                rhel9 != "0" && lacks_newer_glibc(rhel9),
                "boot {n}: the RHEL 9 build did not fail for want of a newer glibc: {rhel9:?}\n{}",
                why()
            );
            assert!(
                !crypto.is_empty() && !crypto.contains(missing_crypto),
                "boot {n}: libcrypto.so.1.1 was not found: {crypto:?}\n{}",
                why()
            );
        } else {
            assert_eq!(glibc, "glibc 2.36", "boot {n}\n{}", why());
            assert_eq!(
                rhel9,
                "0",
                "boot {n}: the RHEL 9 build did not run\n{}",
                why()
            );
            assert!(
                crypto != "0" && crypto.contains(missing_crypto),
                "boot {n}: a build linking libcrypto.so.1.1 loaded: {crypto:?}\n{}",
                why()
            );
        }
    }
}

/// Every boot, for a failure message.
fn describe_boots(f: &FirstBoot) -> String {
    f.boots
        .iter()
        .map(|b| {
            format!(
                "===== boot {} (rebooted: {}) =====\n{}",
                b.number,
                b.rebooted,
                b.describe()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The three boots of an old bootimage's first boot into a 4.12+ cluster (docs/firstboot.md):
/// 1. on the bootimage's OS, whose rpm-ostree lacks the `container` feature, the
///    delivered build (the bootimage's) runs, pulls the cluster's OS image (never the
///    MCO image), deploys it with `rpm-ostree ex deploy-from-self` in it, and reboots;
/// 2. on the cluster's OS, the build for it is installed and runs the native path: it
///    rebases to `ostree-unverified-registry:` the OS image, asks for the machine
///    config's kernel arguments, renames the encapsulated config to `.bak`, and reboots;
/// 3. no firstboot; the kubelet starts.
pub(crate) fn assert_first_boot_completed(f: &FirstBoot, release: &str) {
    let why = || describe_boots(f);
    let mc = &f.mc;
    let os_image = mc["spec"]["osImageURL"].as_str().unwrap();
    let (_, cluster_rhel) = cluster_os(release);
    assert_eq!(
        f.boots.len(),
        3,
        "the first boot took three boots\n{}",
        why()
    );
    let [b1, b2, b3] = &f.boots[..] else {
        unreachable!()
    };

    // Boot 1: the bootimage's OS.
    assert!(b1.rebooted, "boot 1 did not end in a reboot\n{}", why());
    assert_delivered_in(b1, &provenance_sha256_for(&f.cfg, 8), &why);
    assert!(
        b1.calls_of("/usr/bin/rpm-ostree")
            .contains(&"--version".to_string()),
        "the MCD did not ask rpm-ostree its features\n{}",
        why()
    );
    // The MCD read the bootimage's deployment (its version), as RHCOS's rpm-ostree tells it.
    let bootimage_version =
        fs::read_to_string(f.root.join("var/lib/stand-in-ostree/deploy/d0/version")).unwrap();
    let booted = |v: &str| format!("Booted osImageURL:  ({})", v.trim());
    assert!(
        b1.firstboot_journal.contains(&booted(&bootimage_version)),
        "the MCD did not run on the bootimage's OS\n{}",
        why()
    );
    assert!(
        b1.firstboot_journal.contains("not new enough"),
        "the MCD did not find the bootimage's rpm-ostree too old for the new-format image\n{}",
        why()
    );
    let podman = b1.calls_of("/usr/bin/podman");
    let pulled = podman.iter().any(|c| {
        c.starts_with("pull --authfile /var/lib/kubelet/config.json") && c.ends_with(os_image)
    });
    assert!(pulled, "the OS image was not pulled: {podman:?}\n{}", why());
    let deploy = format!("-v /:/run/host {os_image} rpm-ostree ex deploy-from-self /run/host");
    assert!(
        podman
            .iter()
            .any(|c| c.starts_with("run ") && c.contains("--privileged") && c.ends_with(&deploy)),
        "the OS image was not deployed: {podman:?}\n{}",
        why()
    );
    assert!(
        b1.calls_of("/usr/bin/rpm-ostree")
            .iter()
            .any(|c| c.starts_with("rebase ") && c.len() == "rebase ".len() + 64),
        "deploy-from-self did not rebase the host to the image's commit\n{}",
        why()
    );
    assert!(
        b1.journal.contains("extra reboot for in-place update"),
        "the reboot was not the MCD's\n{}",
        why()
    );
    assert_eq!(
        b1.calls_of("/usr/bin/ostree"),
        ["admin finalize-staged"],
        "the staged deployment was not finalized at shutdown\n{}",
        why()
    );
    // NIC names, before the OS moves to another RHEL major: where the cluster's
    // firstboot unit asks for the pass (4.14 and later), on the bootimage's EL8, the
    // install unit pinned them and left nmstatectl's stamp; 4.12 asks for none. A kernel
    // booted with net.ifnames=0 (a VM's, whose journal has the kernel's command line)
    // names the NICs itself: the pass says so and pins nothing, as nmstate does.
    let stamp = f.root.join("etc/systemd/network/.nmstate-persist.stamp");
    let kernel_names_nics = b1.journal.lines().any(|l| {
        l.starts_with("Kernel command line:") && l.split(' ').any(|a| a == "net.ifnames=0")
    });
    if release != "release-4.12" && kernel_names_nics {
        assert!(
            !stamp.exists()
                && b1
                    .journal
                    .contains("net.ifnames=0 is set: the kernel names NICs, nothing to pin"),
            "the NIC pass did not decline under net.ifnames=0\n{}",
            why()
        );
    } else if release == "release-4.12" {
        assert!(
            !stamp.exists(),
            "NIC names were persisted for 4.12\n{}",
            why()
        );
        assert!(
            b1.journal
                .contains("the firstboot unit does not ask to persist NIC names"),
            "{}",
            why()
        );
    } else {
        assert!(
            stamp.is_file(),
            "NIC names were not persisted on boot 1\n{}",
            why()
        );
        assert!(
            !b1.journal.contains("is not EL8; nothing to do"),
            "the bootimage was not taken for EL8\n{}",
            why()
        );
    }

    // Boot 2: the cluster's OS.
    assert!(b2.rebooted, "boot 2 did not end in a reboot\n{}", why());
    assert_delivered_in(b2, &provenance_sha256_for(&f.cfg, cluster_rhel), &why);
    let cluster_version = fs::read_to_string(f.root.join("var/lib/stand-in-images/os/os-release"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VERSION=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap();
    assert!(
        b2.firstboot_journal.contains(&booted(&cluster_version)),
        "the MCD did not run on the cluster's OS\n{}",
        why()
    );
    assert!(
        b2.firstboot_journal
            .contains("rpm-ostree has container feature"),
        "{}",
        why()
    );
    // From the registry, or (MCO main, when podman holds the image: boot 1 pulled it)
    // from podman's storage.
    let rpm_ostree = b2.calls_of("/usr/bin/rpm-ostree");
    let rebases = [
        format!("rebase --experimental ostree-unverified-registry:{os_image}"),
        format!("rebase --experimental ostree-unverified-image:containers-storage:{os_image}"),
    ];
    assert!(
        rpm_ostree.iter().any(|c| rebases.contains(c)),
        "no rebase to the OS image: {rpm_ostree:?}\n{}",
        why()
    );
    for karg in mc["spec"]["kernelArguments"].as_array().unwrap() {
        let append = format!("--append={}", karg.as_str().unwrap());
        assert!(
            rpm_ostree
                .iter()
                .any(|c| c.starts_with("kargs ") && c.split(' ').any(|a| a == append)),
            "no kargs {append}: {rpm_ostree:?}\n{}",
            why()
        );
    }
    assert!(
        b2.journal.contains("Completing firstboot provisioning to"),
        "the reboot was not the MCD's\n{}",
        why()
    );
    let etc = f.root.join("etc");
    assert!(
        etc.join("ignition-machine-config-encapsulated.json.bak")
            .is_file()
            && !etc
                .join("ignition-machine-config-encapsulated.json")
                .exists(),
        "the encapsulated config was not renamed to .bak\n{}",
        why()
    );

    // Boot 3: the node.
    assert!(!b3.rebooted, "boot 3 rebooted\n{}", why());
    assert_eq!(
        b3.starting(FIRSTBOOT),
        0,
        "the firstboot ran again\n{}",
        why()
    );
    assert_eq!(b3.starting(INSTALL), 0, "{}", why());
    assert!(
        !b3.calls_of("/usr/bin/kubelet").is_empty(),
        "the kubelet did not start\n{}",
        why()
    );
    let os_release = fs::read_to_string(f.root.join("usr/lib/os-release")).unwrap();
    assert!(
        os_release.contains(&format!("RHEL_VERSION=\"{cluster_rhel}.")),
        "boot 3 does not run the cluster's OS:\n{os_release}"
    );
}

/// One boot of a first boot: the install script installed the build of sha256 `sha256`
/// for this host, and the boot used it ([`assert_used`]).
fn assert_delivered_in(b: &Boot, sha256: &str, why: &dyn Fn() -> String) {
    assert_eq!(
        installed_sha256(b).as_deref(),
        Some(sha256),
        "boot {}: the install script did not install the build for this host\n{}",
        b.number,
        why()
    );
    assert_used(b, sha256, why);
}

/// The real MCDs of `../shared/real-mcd` through the three boots: the 4.12 build with
/// the 4.12 cluster's config, main's builds (RHEL 9, and its `.rhel8` twin) with the
/// configs of 4.16, 4.18 and main; spec 2.2 under Ignition v0.35 for a 4.2 bootimage,
/// spec 3 under Ignition 2.14 for a 4.9 bootimage. Main's cluster in spec 2.2 is reached
/// through the pointer config its MCO holds today, the managed Secret (spec 3.5,
/// translated by `inject`).
macro_rules! three_boots {
    ($($name:ident: $bootimage:expr, $flow:expr, $mcd:ident;)*) => {$(
        #[test]
        fn $name() {
            let flow = $flow;
            let (f, _) = first_boot_to_the_end($bootimage, flow, Mcd::$mcd);
            assert_first_boot_completed(&f, flow.release().unwrap());
            assert_each_boot_on_its_abi(&f, flow.release().unwrap());
        }
    )*};
}

three_boots! {
    real_412_mcd_spec3_offline_merge_of_release_4_12: SPEC3_BOOTIMAGE, Flow::Offline("release-4.12"), Real412;
    real_412_mcd_spec22_pointer_to_release_4_12: "4.2", Flow::Pointer("release-4.12"), Real412;
    real_main_mcd_spec3_offline_merge_of_release_4_16: SPEC3_BOOTIMAGE, Flow::Offline("release-4.16"), RealMain;
    real_main_mcd_spec22_offline_merge_of_release_4_16: "4.2", Flow::Offline("release-4.16"), RealMain;
    real_main_mcd_spec3_offline_merge_of_release_4_18: SPEC3_BOOTIMAGE, Flow::Offline("release-4.18"), RealMain;
    real_main_mcd_spec22_offline_merge_of_release_4_18: "4.2", Flow::Offline("release-4.18"), RealMain;
    real_main_mcd_spec3_pointer_to_main: SPEC3_BOOTIMAGE, Flow::Pointer("main"), RealMain;
    real_main_mcd_spec22_managed_stub_of_main: "4.2", Flow::Stub("main", Stub::Managed, Ca::Rotated), RealMain;
}

/// MCO 4.23 and later ship only RHEL 9 builds. On a 4.1 bootimage, the oldest, whose
/// glibc is older than the build needs (a Debian bullseye root, glibc 2.31: the build
/// run natively there fails), with the pointer config MCO main holds for the pool (the
/// managed Secret, spec 3.5, which `inject` translates to 2.2): boot 1 runs main's real
/// RHEL 9 build through its closure from the MCO image; the in-place OS update brings
/// the cluster's glibc, and boot 2 runs the same build natively; the node completes its
/// first boot, `pivot.service` masked throughout.
#[test]
fn rhel9_only_mcd_through_its_closure_4_1_managed_stub_of_main() {
    // The proof that the closure is needed there.
    let scratch = tempfile::tempdir_in(work_root()).unwrap();
    let old = scratch.path().join("root");
    node::prepare_root_on(&node::rhel8_abi_base(), &old);
    let bin = node::shared_program("real-mcd", "mcd-main-rhel9");
    fs::copy(&bin, old.join("tmp/machine-config-daemon")).unwrap();
    let native = Command::new("chroot")
        .arg(&old)
        .args(["/tmp/machine-config-daemon", "version"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&native.stderr);
    assert!(
        !native.status.success() && err.contains("GLIBC_2.34' not found"),
        "the RHEL 9 build ran natively on the old root: {native:?}"
    );
    drop(scratch);

    let flow = Flow::Stub("main", Stub::Managed, Ca::Rotated);
    let (f, mcs) = first_boot_to_the_end("4.1", flow, Mcd::Rhel9Only);
    let mcs = mcs.unwrap();
    assert_points_to(&f.cfg, &mcs, &mcs.ca_pem, true);
    assert_served(&mcs, SPEC22_BODY);
    assert_eq!(provenance(&f.cfg)["target"]["bootimage"], "4.1");
    assert_first_boot_completed(&f, "main");
    assert_each_boot_on_its_abi(&f, "main");
    let why = || describe_boots(&f);
    for b in &f.boots {
        assert_pivot_masked(b, &why);
    }
    let closure = f.boots[0].get("closure.files");
    for lib in ["ld-linux-x86-64.so.2", "libc.so.6", "libgpgme.so.11"] {
        assert!(
            closure.split(' ').any(|n| n == lib),
            "boot 1: {closure}\n{}",
            why()
        );
    }
    assert!(
        f.boots[0]
            .journal
            .contains("through its closure of 5 files in /run/mcd-inject/closure"),
        "{}",
        why()
    );
    // Boot 2 runs on the cluster's OS, whose glibc the build fits: natively.
    assert_eq!(f.boots[1].get("closure.files"), "", "{}", why());
    assert_eq!(f.boots[1].get("bin.script"), "no", "{}", why());
}

/// The node refuses the wrong build: main's RHEL 9 build forced on a 4.2 bootimage
/// (`--binary-path /usr/bin/machine-config-daemon --force`, the config `inject` would not
/// write unasked) is installed on boot 1, whose OS has the RHEL 8 ABI, and cannot run
/// there: the firstboot unit fails as the loader refuses it (a `GLIBC_2.3x` it lacks),
/// `firstboot-osupdate.target` is never reached, nothing asks rpm-ostree to update the OS
/// and the node never reboots into the cluster's OS.
#[test]
fn the_rhel9_build_forced_on_a_rhel8_bootimage_fails_on_boot_1() {
    let flow = Flow::Offline("release-4.16");
    let (f, _) = first_boot_to_the_end("4.2", flow, Mcd::WrongRhel9);
    let why = || describe_boots(&f);
    let rhel9 = node::shared_program("real-mcd", "mcd-main-rhel9");
    let sha = crate::harness::sha256_hex(&fs::read(rhel9).unwrap());
    assert_eq!(f.boots.len(), 1, "the node went past boot 1\n{}", why());
    let b = &f.boots[0];
    assert!(!b.rebooted, "{}", why());
    assert_eq!(
        installed_sha256(b).as_deref(),
        Some(sha.as_str()),
        "{}",
        why()
    );
    assert_eq!(b.unit(FIRSTBOOT, "Result"), "exit-code", "{}", why());
    assert!(
        b.firstboot_journal
            .lines()
            .any(|l| l.starts_with("/run/bin/machine-config-daemon: ") && lacks_newer_glibc(l)),
        "the firstboot did not fail at the loader\n{}",
        why()
    );
    assert_eq!(
        b.unit("firstboot-osupdate.target", "ActiveState"),
        "inactive",
        "{}",
        why()
    );
    assert!(b.calls_of("/usr/bin/rpm-ostree").is_empty(), "{}", why());
    let os_release = fs::read_to_string(f.root.join("usr/lib/os-release")).unwrap();
    assert!(os_release.contains("VERSION=\"42.80."), "{os_release}");
}
