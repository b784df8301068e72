//! The NIC-persisting script of the config (`src/ignition/mco-persist-nics.sh`, as a
//! config `inject` writes carries it) against the program it stands in for: real
//! `nmstatectl persist-nic-names` (nmstate 2.2, built with `cargo install` once per run
//! into `target/nmstatectl`). Both run on the same host, in the same network namespace, with the same kernel command line (a file bound over
//! `/proc/cmdline` in a private mount namespace), each against its own scratch root; the
//! trees they leave under `etc/systemd/network` must be byte-identical, and the kernel
//! arguments the script hands to `rpm-ostree kargs` (a stand-in that records its
//! arguments) must be the ones nmstatectl wrote to `--kargs-out`, split as MCO splits
//! them. Needs root (network and mount namespaces).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::harness::{crate_root, run_ok, small_config_file};

/// The newest nmstate 2.2 release in the crate registry.
const NMSTATECTL_VERSION: &str = "2.2.62";
const SCRIPT_PATH: &str = "/var/lib/mcd-inject/mco-persist-nics.sh";
pub(crate) const UNIT: &str = "etc/systemd/system/machine-config-daemon-firstboot.service";
const NETWORK: &str = "etc/systemd/network";
pub(crate) const STAMP: &str = "etc/systemd/network/.nmstate-persist.stamp";

/// The firstboot unit of MCO 4.14+ (release-4.22's template, rendered).
pub(crate) const UNIT_4_22: &str = "[Unit]
Description=Machine Config Daemon Firstboot
ConditionPathExists=/run/ostree-booted
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
After=machine-config-daemon-pull.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/podman run --rm --privileged --net=host -v /:/rootfs  --entrypoint machine-config-daemon 'MCO-IMAGE' firstboot-complete-machineconfig --persist-nics
ExecStart=/usr/bin/podman run --rm --privileged --pid=host --net=host -v /:/rootfs  --entrypoint machine-config-daemon 'MCO-IMAGE' firstboot-complete-machineconfig
";

/// RHCOS 4.2's os-release: no RHEL_VERSION, VERSION_ID 4.2 (MCO reads it as RHEL 8.2).
const RHCOS_4_2: &str = "NAME=\"Red Hat Enterprise Linux CoreOS\"
VERSION=\"42.80.20191002.0\"
VERSION_ID=\"4.2\"
PRETTY_NAME=\"Red Hat Enterprise Linux CoreOS 42.80.20191002.0 (Ootpa)\"
ID=\"rhcos\"
ID_LIKE=\"rhel fedora\"
OSTREE_VERSION='42.80.20191002.0'
";

/// A boot with initrd networking, `rd.neednet=1` not the last word.
const CMDLINE_NEEDNET: &str =
    "BOOT_IMAGE=(hd0,gpt3)/ostree/rhcos-0/vmlinuz rd.neednet=1 ip=dhcp ostree=/ostree/boot.1/rhcos/0 root=UUID=0\n";

/// The nmstatectl binary, built once per run (cargo install is a no-op when that version
/// is there already). The VM tests run it in the guest too (`vm.rs`).
pub(crate) fn nmstatectl() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = crate_root().join("target").join("nmstatectl");
        let bin = root.join("bin").join("nmstatectl");
        let version = |bin: &Path| {
            Command::new(bin)
                .arg("--version")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        if version(&bin).as_deref() != Some(&format!("nmstatectl {NMSTATECTL_VERSION}")) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            // persist-nic-names needs the query feature only; an oracle need not be fast,
            // so it is built unoptimised (about half the build time).
            let status = Command::new(cargo)
                .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
                .args(["install", "nmstatectl", "--locked", "--no-default-features"])
                .args(["--features", "query_apply", "--version"])
                .arg(format!("={NMSTATECTL_VERSION}"))
                .arg("--root")
                .arg(&root)
                .status()
                .expect("running cargo install nmstatectl");
            assert!(
                status.success(),
                "cargo install nmstatectl {NMSTATECTL_VERSION} failed ({status}): the \
                 persist_nics tests need it"
            );
        }
        assert_eq!(
            version(&bin).as_deref(),
            Some(format!("nmstatectl {NMSTATECTL_VERSION}").as_str()),
            "{} is not nmstatectl {NMSTATECTL_VERSION}",
            bin.display()
        );
        bin
    })
}

/// The script as a config carries it (`inject` on `fixtures/mco-small`, for 4.2).
pub(crate) fn script() -> &'static Path {
    static SCRIPT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &SCRIPT
        .get_or_init(|| {
            let (bytes, mode) = small_config_file(SCRIPT_PATH);
            assert_eq!(mode, 0o755);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("mco-persist-nics.sh");
            fs::write(&path, bytes).unwrap();
            (dir, path)
        })
        .1
}

fn require_root() {
    let uid = fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Uid:")
                .map(|u| u.split_whitespace().next().unwrap().to_string())
        })
        .unwrap();
    assert_eq!(
        uid, "0",
        "the persist_nics tests need root (network and mount namespaces)"
    );
}

/// A network namespace of this run, deleted when dropped (also on a panic).
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "mcd-inject-nics-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        run_ok(Command::new("ip").args(["netns", "add", &name]));
        Netns(name)
    }

    /// Runs `ip -n NS link add ARGS`; whether the kernel could make it.
    fn try_add(&self, args: &str) -> bool {
        Command::new("ip")
            .args(["-n", &self.0, "link", "add"])
            .args(args.split_whitespace())
            .output()
            .unwrap()
            .status
            .success()
    }

    fn ip(&self, args: &str) {
        run_ok(
            Command::new("ip")
                .args(["-n", &self.0])
                .args(args.split_whitespace()),
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .output();
    }
}

/// Where and how both programs run: a network namespace (the host's when `None`) and
/// the kernel command line they read.
struct Host<'a> {
    netns: Option<&'a Netns>,
    cmdline: PathBuf,
}

impl Host<'_> {
    /// `argv` with `cmdline` bound over /proc/cmdline in a private mount namespace.
    fn command(&self, argv: &[&Path]) -> Command {
        let mut cmd = match self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.0, "unshare"]);
                c
            }
            None => Command::new("unshare"),
        };
        cmd.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind \"$0\" /proc/cmdline && exec \"$@\"")
            .arg(&self.cmdline)
            .args(argv);
        cmd
    }
}

/// A scratch directory: nmstatectl's root, the script's root, the kargs file, the
/// rpm-ostree stand-in and the command line.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new(cmdline: &str) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let s = Scratch { dir };
        fs::create_dir_all(s.nm_root().join("etc/systemd")).unwrap();
        fs::create_dir_all(s.our_root().join("etc/systemd/system")).unwrap();
        fs::write(s.our_root().join(UNIT), UNIT_4_22).unwrap();
        fs::write(s.our_root().join("etc/os-release"), RHCOS_4_2).unwrap();
        let stub = s.path("stub");
        fs::create_dir(&stub).unwrap();
        let record = s.path("rpm-ostree.calls");
        fs::write(
            stub.join("rpm-ostree"),
            format!(
                "#!/bin/sh\n{{ for a in \"$@\"; do printf '%s\\n' \"$a\"; done; echo --; }} >>'{}'\n",
                record.display()
            ),
        )
        .unwrap();
        fs::set_permissions(stub.join("rpm-ostree"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(s.path("cmdline"), cmdline).unwrap();
        s
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn nm_root(&self) -> PathBuf {
        self.path("nmstate-root")
    }
    fn our_root(&self) -> PathBuf {
        self.path("script-root")
    }
    fn kargs_out(&self) -> PathBuf {
        self.path("kargs-out")
    }

    fn host<'a>(&self, netns: Option<&'a Netns>) -> Host<'a> {
        Host {
            netns,
            cmdline: self.path("cmdline"),
        }
    }

    /// Runs `nmstatectl persist-nic-names --root A --kargs-out F` as MCO does.
    fn run_nmstatectl(&self, host: &Host) -> Output {
        let _ = fs::remove_file(self.kargs_out());
        let root = self.nm_root();
        let kargs = self.kargs_out();
        let argv: Vec<&Path> = vec![
            nmstatectl(),
            Path::new("persist-nic-names"),
            Path::new("--root"),
            &root,
            Path::new("--kargs-out"),
            &kargs,
        ];
        run_ok(&mut host.command(&argv))
    }

    /// Runs our script on the scratch root, rpm-ostree being the stand-in.
    fn run_script(&self, host: &Host) -> Output {
        let bash = PathBuf::from("bash");
        let mut cmd = host.command(&[&bash, script()]);
        cmd.env("MCD_INJECT_ROOT", self.our_root()).env(
            "PATH",
            format!(
                "{}:{}",
                self.path("stub").display(),
                std::env::var("PATH").unwrap()
            ),
        );
        run_ok(&mut cmd)
    }

    /// The kernel arguments nmstatectl printed, split as MCO splits them (none when the
    /// file is absent or empty).
    fn nm_kargs(&self) -> Vec<String> {
        match fs::read_to_string(self.kargs_out()) {
            Ok(s) if !s.is_empty() => s.split(' ').map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// Each rpm-ostree call of the script, its arguments.
    fn rpm_ostree_calls(&self) -> Vec<Vec<String>> {
        let text = fs::read_to_string(self.path("rpm-ostree.calls")).unwrap_or_default();
        let mut calls = Vec::new();
        let mut call = Vec::new();
        for line in text.lines() {
            if line == "--" {
                calls.push(std::mem::take(&mut call));
            } else {
                call.push(line.to_string());
            }
        }
        calls
    }

    /// Both runs, then: the same tree, and the script's rpm-ostree call is
    /// `kargs --append K...` for what nmstatectl printed (none if it printed nothing).
    /// Returns the names of the link files nmstatectl wrote.
    fn run_both_and_compare(&self, host: &Host) -> Vec<String> {
        let calls_before = self.rpm_ostree_calls().len();
        let nm = self.run_nmstatectl(host);
        let ours = self.run_script(host);
        let context = format!(
            "nmstatectl:\n{}\nscript:\n{}",
            String::from_utf8_lossy(&nm.stderr),
            String::from_utf8_lossy(&ours.stdout)
        );
        let expected = tree(&self.nm_root().join(NETWORK));
        assert_eq!(tree(&self.our_root().join(NETWORK)), expected, "{context}");
        let kargs = self.nm_kargs();
        let calls = self.rpm_ostree_calls();
        let new_calls = &calls[calls_before..];
        if kargs.is_empty() {
            assert!(
                new_calls.is_empty(),
                "rpm-ostree ran: {new_calls:?}\n{context}"
            );
        } else {
            assert_eq!(new_calls.len(), 1, "{new_calls:?}\n{context}");
            let call = &new_calls[0];
            assert_eq!(call[0], "kargs", "{context}");
            let pairs: Vec<&[String]> = call[1..].chunks(2).collect();
            assert!(
                pairs.iter().all(|p| p.len() == 2 && p[0] == "--append"),
                "{call:?}"
            );
            let mut appended: Vec<&str> = pairs.iter().map(|p| p[1].as_str()).collect();
            let mut printed: Vec<&str> = kargs.iter().map(String::as_str).collect();
            // nmstatectl's order is its hash map's (it varies from run to run): the same
            // arguments, in any order.
            appended.sort();
            printed.sort();
            assert_eq!(appended, printed, "{context}");
        }
        expected
            .iter()
            .flat_map(|t| t.keys())
            .filter(|k| k.ends_with(".link"))
            .cloned()
            .collect()
    }
}

/// Relative path to (mode, contents; `None` for a directory).
pub(crate) type Tree = BTreeMap<String, (u32, Option<Vec<u8>>)>;

/// The files and directories under `dir`; `None` for no directory.
pub(crate) fn tree(dir: &Path) -> Option<Tree> {
    fn walk(dir: &Path, rel: &str, out: &mut Tree) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{rel}{}", e.file_name().to_string_lossy());
            let meta = fs::symlink_metadata(e.path()).unwrap();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                out.insert(name.clone(), (mode, None));
                walk(&e.path(), &format!("{name}/"), out);
            } else {
                out.insert(name, (mode, Some(fs::read(e.path()).unwrap())));
            }
        }
    }
    let meta = fs::symlink_metadata(dir).ok()?;
    let mut out = BTreeMap::new();
    out.insert(".".to_string(), (meta.permissions().mode(), None));
    walk(dir, "", &mut out);
    Some(out)
}

#[test]
fn the_hosts_nics_are_pinned_as_nmstatectl_pins_them_and_a_second_run_does_nothing() {
    require_root();
    let s = Scratch::new(CMDLINE_NEEDNET);
    let host = s.host(None);
    let links = s.run_both_and_compare(&host);
    assert!(
        !links.is_empty(),
        "nmstatectl pinned no interface of this machine (it pins ethernet devices on a \
         bus; a machine without one cannot run this test)"
    );
    assert!(
        !s.nm_kargs().is_empty(),
        "rd.neednet=1 is set: nmstatectl prints kargs"
    );
    eprintln!("nmstatectl pinned: {links:?}, kargs {:?}", s.nm_kargs());

    // A second boot before the firstboot completes: the stamp stops both.
    let before = tree(&s.our_root().join(NETWORK));
    let again = s.run_both_and_compare(&host);
    assert_eq!(again, links);
    assert!(s.nm_kargs().is_empty());
    assert_eq!(tree(&s.our_root().join(NETWORK)), before);
    assert_eq!(s.rpm_ostree_calls().len(), 1);
}

#[test]
fn an_existing_link_file_is_kept_and_gets_no_karg() {
    require_root();
    let probe = Scratch::new(CMDLINE_NEEDNET);
    let links = probe.run_both_and_compare(&probe.host(None));
    let first = links
        .first()
        .expect("nmstatectl pinned no interface of this machine");
    let s = Scratch::new(CMDLINE_NEEDNET);
    for root in [s.nm_root(), s.our_root()] {
        fs::create_dir_all(root.join(NETWORK)).unwrap();
        fs::write(
            root.join(NETWORK).join(first),
            "[Match]\nMACAddress=00:00:5E:00:53:01\n",
        )
        .unwrap();
    }
    s.run_both_and_compare(&s.host(None));
    assert_eq!(
        fs::read_to_string(s.our_root().join(NETWORK).join(first)).unwrap(),
        "[Match]\nMACAddress=00:00:5E:00:53:01\n"
    );
    assert!(s.path("script-root").join(STAMP).exists());
}

#[test]
fn without_initrd_networking_no_kargs_and_a_last_word_rd_neednet_does_not_count() {
    require_root();
    for cmdline in [
        "BOOT_IMAGE=/vmlinuz root=UUID=0 quiet\n",
        "BOOT_IMAGE=/vmlinuz root=UUID=0 rd.neednet=1\n",
    ] {
        let s = Scratch::new(cmdline);
        let links = s.run_both_and_compare(&s.host(None));
        assert!(
            !links.is_empty(),
            "nmstatectl pinned no interface of this machine"
        );
        assert!(s.nm_kargs().is_empty(), "{cmdline}");
        assert!(s.rpm_ostree_calls().is_empty());
    }
}

#[test]
fn net_ifnames_0_writes_nothing() {
    require_root();
    let s = Scratch::new("BOOT_IMAGE=/vmlinuz net.ifnames=0 rd.neednet=1 root=UUID=0\n");
    let links = s.run_both_and_compare(&s.host(None));
    assert!(links.is_empty());
    assert_eq!(tree(&s.our_root().join(NETWORK)), None);
}

/// The kinds of interface a kernel can make in a namespace: nmstate calls none of them
/// ethernet (veth is `veth` to it; netdevsim, when the kernel has it, is a device on a
/// bus and is pinned).
#[test]
fn virtual_interfaces_in_a_namespace() {
    require_root();
    let ns = Netns::new();
    let mut made = Vec::new();
    for (kind, args) in [
        ("veth", "eth0 type veth peer name ens3"),
        ("veth", "enp1s0 type veth peer name eth1"),
        (
            "veth with a set MAC",
            "ens9 address 52:54:00:12:34:56 type veth peer name eth9",
        ),
        ("bridge", "br0 type bridge"),
        ("vxlan", "vx0 type vxlan id 5 dstport 4789"),
        ("macvlan", "mv0 link eth0 type macvlan"),
        ("macvtap", "mvt0 link enp1s0 type macvtap"),
        ("ifb", "ifb0 type ifb"),
        ("dummy", "eth7 type dummy"),
        ("bond", "bond0 type bond"),
        ("vlan", "eth0.5 link eth0 type vlan id 5"),
        ("ipvlan", "ipvl0 link enp1s0 type ipvlan"),
    ] {
        if ns.try_add(args) {
            made.push(kind);
        }
    }
    if made.contains(&"bond") {
        ns.ip("link set eth9 master bond0");
    }
    if Command::new("ip")
        .args(["-n", &ns.0, "tuntap", "add", "dev", "tap0", "mode", "tap"])
        .output()
        .unwrap()
        .status
        .success()
    {
        made.push("tap");
    }
    // netdevsim makes devices on its own bus, in the namespace of the writer.
    if Path::new("/sys/bus/netdevsim/new_device").exists() {
        let id = 100 + std::process::id() % 800;
        let ok = Command::new("ip")
            .args(["netns", "exec", &ns.0, "sh", "-c"])
            .arg(format!("echo '{id} 1' >/sys/bus/netdevsim/new_device"))
            .status()
            .unwrap()
            .success();
        if ok {
            made.push("netdevsim");
        }
    }
    assert!(
        made.contains(&"veth") && made.contains(&"bridge"),
        "made only {made:?}"
    );
    let s = Scratch::new(CMDLINE_NEEDNET);
    let host = s.host(Some(&ns));
    let links = s.run_both_and_compare(&host);
    eprintln!("made {made:?}; nmstatectl pinned {links:?}");
    s.run_both_and_compare(&host);
    if made.contains(&"netdevsim") {
        let _ = fs::write(
            "/sys/bus/netdevsim/del_device",
            format!("{} 1", 100 + std::process::id() % 800),
        );
    }
}

/// Runs the script alone, in the host's namespace with a plain command line; whether it
/// did the pass (wrote the stamp).
fn script_acts(
    unit: Option<&str>,
    etc_os_release: Option<&str>,
    lib_os_release: Option<&str>,
) -> bool {
    let s = Scratch::new("BOOT_IMAGE=/vmlinuz root=UUID=0 quiet\n");
    let root = s.our_root();
    match unit {
        Some(u) => fs::write(root.join(UNIT), u).unwrap(),
        None => fs::remove_file(root.join(UNIT)).unwrap(),
    }
    fs::remove_file(root.join("etc/os-release")).unwrap();
    if let Some(o) = etc_os_release {
        fs::write(root.join("etc/os-release"), o).unwrap();
    }
    if let Some(o) = lib_os_release {
        fs::create_dir_all(root.join("usr/lib")).unwrap();
        fs::write(root.join("usr/lib/os-release"), o).unwrap();
    }
    s.run_script(&s.host(None));
    let acted = root.join(STAMP).exists();
    if !acted {
        assert_eq!(tree(&root.join(NETWORK)), None, "it did not act, yet wrote");
    }
    acted
}

#[test]
fn only_a_unit_that_asks_for_the_pass_gets_it() {
    require_root();
    let plain = UNIT_4_22.replace(" --persist-nics", "");
    let maybe = UNIT_4_22.replace("--persist-nics", "--maybe-persist-nics");
    let other_flag = UNIT_4_22.replace("--persist-nics", "--persist-nics-later");
    let commented = UNIT_4_22.replace(
        "ExecStart=/usr/bin/podman run --rm --privileged --net=host",
        "# ExecStart=/usr/bin/podman run --rm --privileged --net=host",
    );
    assert!(script_acts(Some(UNIT_4_22), Some(RHCOS_4_2), None));
    assert!(
        script_acts(Some(&maybe), Some(RHCOS_4_2), None),
        "4.13's flag"
    );
    assert!(
        !script_acts(Some(&plain), Some(RHCOS_4_2), None),
        "4.6-4.12's unit"
    );
    assert!(!script_acts(Some(&other_flag), Some(RHCOS_4_2), None));
    assert!(!script_acts(Some(&commented), Some(RHCOS_4_2), None));
    assert!(
        !script_acts(None, Some(RHCOS_4_2), None),
        "no firstboot unit"
    );
}

#[test]
fn only_el8_hosts_get_the_pass_as_mco_reads_os_release() {
    require_root();
    let u = Some(UNIT_4_22);
    let el8 = [
        ("RHCOS 4.1", "ID=\"rhcos\"\nVERSION=\"410.8.20190520.0\"\nVERSION_ID=\"4.1\"\n"),
        ("RHCOS 4.2", RHCOS_4_2),
        ("RHCOS 4.12", "ID=\"rhcos\"\nVERSION=\"412.86.202306132230-0\"\nVERSION_ID=\"4.12\"\nOPENSHIFT_VERSION=\"4.12\"\nRHEL_VERSION=\"8.6\"\n"),
        ("VERSION from OPENSHIFT_VERSION", "ID=rhcos\nOPENSHIFT_VERSION=\"4.10\"\nVERSION=\"410.8.4\"\nVERSION_ID=\"4.10\"\n"),
        ("SCOS 8", "ID=\"scos\"\nVERSION_ID=\"8.9\"\n"),
        ("any OS whose version is 8", "ID=\"centos\"\nVERSION_ID=\"8\"\n"),
    ];
    for (what, os) in el8 {
        assert!(script_acts(u, Some(os), None), "{what}");
    }
    let not_el8 = [
        (
            "RHCOS 4.16 (RHEL 9.4)",
            "ID=\"rhcos\"\nVERSION_ID=\"4.16\"\nOPENSHIFT_VERSION=\"4.16\"\nRHEL_VERSION=9.4\n",
        ),
        (
            "RHCOS 4.19 (RHEL 9.6)",
            "ID=\"rhel\"\nVERSION_ID=\"9.6\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.19\"\n",
        ),
        (
            "RHCOS 5.0 (RHEL 10.2)",
            "ID=\"rhel\"\nVERSION_ID=\"10.2\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.0\"\n",
        ),
        ("RHEL 8, not CoreOS", "ID=\"rhel\"\nVERSION_ID=\"8.6\"\n"),
        (
            "Fedora CoreOS",
            "ID=fedora\nVERSION_ID=40\nVARIANT_ID=coreos\n",
        ),
        (
            "an RHCOS VERSION_ID that is not 4.1 or 4.2",
            "ID=\"rhcos\"\nVERSION_ID=\"42.80\"\n",
        ),
    ];
    for (what, os) in not_el8 {
        assert!(!script_acts(u, Some(os), None), "{what}");
    }
    assert!(
        script_acts(u, None, Some(RHCOS_4_2)),
        "usr/lib/os-release when etc has none"
    );
    assert!(
        !script_acts(u, Some("ID=rhcos\nRHEL_VERSION=9.4\n"), Some(RHCOS_4_2)),
        "etc/os-release first"
    );
}

#[test]
fn a_host_without_os_release_fails_with_a_message() {
    require_root();
    let s = Scratch::new("BOOT_IMAGE=/vmlinuz\n");
    fs::remove_file(s.our_root().join("etc/os-release")).unwrap();
    let out = s
        .host(None)
        .command(&[Path::new("bash"), script()])
        .env("MCD_INJECT_ROOT", s.our_root())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no os-release"));
}
