//! The VM side of the boot tests: a qemu VM booted as a CI bootimage job boots one
//! (`scripts/boot-vm.sh`): the config handed over fw_cfg, Ignition running in a dracut
//! initramfs and writing the disk, SELinux enforcing or not, then the real root's
//! systemd. The VM (`tests/support/vm-root.sh`: kernel, initramfs, disk image) is made
//! once per run of the suite from the nspawn boot tests' base root, and kept in
//! `target/vm-base` (or `MCD_INJECT_VM_BASE`); each test copies the disk. A first boot
//! run to its end ([`boots`]) boots its copy again at each reboot the guest asks for,
//! after giving it the bootimage's OS ([`set_os`], `vm-root.sh os`: `boot-root.sh os`
//! on the mounted copy, what it wrote labelled offline with the root's policy).
//!
//! Two initramfs images boot that disk ([`Initramfs`]): one with Debian's Ignition 2.14
//! (spec 3), as a 4.6+ bootimage; and one as a 4.1/4.2 bootimage, with Ignition v0.35
//! (spec 2.x, built with SELinux relabelling, `../shared/ignition-v0.35`) and the dracut
//! glue of its era (`../shared/ignition-dracut-spec2x`), made by `vm-root.sh spec2x` into
//! `target/vm-spec2x` (or `MCD_INJECT_VM_SPEC2X`) beside the empty disk labelled `boot`
//! that glue waits for.
//!
//! The guest reaches the host's loopback servers through qemu's user-mode network, at
//! 10.0.2.2 ([`guest_url`]). After the boot, the probe's report and the journal are read
//! out of the disk image with `debugfs`, and make the same [`Boot`] the nspawn boots
//! make, plus what only a VM shows (SELinux labels and denials, Ignition's stages).
//!
//! Needs root, qemu-system-x86_64, debugfs and mke2fs (e2fsprogs), and what the nspawn
//! boots need (debootstrap for the base). KVM is used when a tiny initramfs boots under
//! it (`boot-vm.sh probe-accel`), else TCG; `MCD_INJECT_VM_ACCEL=kvm|tcg` decides instead.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use super::crate_root;
use super::node::{self, run, Boot};

/// The kernel command line of every boot: the disk's root, and failures that power the
/// VM off instead of waiting at a shell. The platform comes from [`Initramfs::platform`],
/// `net.ifnames=0` from [`VmOptions::kernel_names_nics`]. The initramfs's journald
/// (bookworm's systemd 252) writes its journal without the compact format that 252
/// introduced, so that the root's own journald reads and keeps it also on a disk of
/// RHEL 8's ABI (bullseye's 247), as a bootimage's initramfs and root share a systemd.
const CMDLINE: &str = "console=ttyS0 root=LABEL=root rw rd.shell=0 rd.emergency=poweroff panic=-1 \
     systemd.setenv=SYSTEMD_JOURNAL_COMPACT=0";

/// What the first boot adds, as GRUB does while the bootimage's firstboot stamp is
/// there: Ignition's first boot, and a static address on qemu's user-mode network for
/// the initramfs (Ignition fetches the payload and the cluster's config there), on the
/// NIC [`VmOptions::nic`] names.
fn firstboot_cmdline(nic: &str) -> String {
    format!("ignition.firstboot rd.neednet=1 ip=10.0.2.15::10.0.2.2:255.255.255.0::{nic}:off")
}

/// The VM's one NIC (`scripts/boot-vm.sh`): virtio-net in PCI slot 3 of qemu's i440fx
/// machine, with this MAC address.
pub const NIC_MAC: &str = "52:54:00:12:ab:cd";

/// Its name under `net.ifnames=0`: the kernel's.
pub const KERNEL_NIC_NAME: &str = "eth0";

/// Its name under predictable names: udev's (`99-default.link`'s `NamePolicy`), from the
/// slot's ACPI number (`ID_NET_NAME_SLOT`), in the initramfs and in the real root alike.
pub const PREDICTABLE_NIC_NAME: &str = "ens3";

/// Bound on a whole boot, TCG included (they take 35-100 s when nothing is wrong).
const BOOT_TIMEOUT_SECS: &str = "600";

fn require(tools: &[(&str, &str)]) {
    for (tool, package) in tools {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            "{tool} is missing: apt-get install {package} (scripts/test.sh installs it)"
        );
    }
}

/// The VM: `vmlinuz`, `initrd.img` and `disk.img` in one directory, made once.
pub fn vm_base() -> PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        require(&[
            ("qemu-system-x86_64", "qemu-system-x86"),
            ("debugfs", "e2fsprogs"),
            ("mke2fs", "e2fsprogs"),
            ("journalctl", "systemd"),
        ]);
        let dir = std::env::var_os("MCD_INJECT_VM_BASE")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate_root().join("target/vm-base"));
        let (ok, text) = run(Command::new("bash")
            .arg(crate_root().join("tests/support/vm-root.sh"))
            .arg("base")
            .arg(node::boot_base())
            .arg(&dir));
        assert!(ok, "making the VM (kernel, initramfs, disk): {text}");
        dir
    })
    .clone()
}

/// A disk for [`vm_base`]'s kernel and initramfs whose root has RHEL 8's ABI (Debian
/// bullseye, [`node::rhel8_abi_base`]): `disk.img` in a directory, made once
/// (`vm-root.sh base8`, `target/vm-base8` or `MCD_INJECT_VM_BASE8`).
pub fn vm_base8() -> PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let vm = vm_base();
        let dir = std::env::var_os("MCD_INJECT_VM_BASE8")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate_root().join("target/vm-base8"));
        let (ok, text) = run(Command::new("bash")
            .arg(crate_root().join("tests/support/vm-root.sh"))
            .arg("base8")
            .arg(node::rhel8_abi_base())
            .arg(&vm)
            .arg(&dir));
        assert!(ok, "making the RHEL 8 ABI disk: {text}");
        dir
    })
    .clone()
}

/// The root of [`vm_base`]'s disk (RHEL 9's ABI), as a tree from which a deployment of
/// the cluster's OS is made on another disk (`boot-root.sh deploy`).
pub fn vm_tree() -> PathBuf {
    vm_base().join("tree")
}

/// Which Ignition runs in the initramfs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Initramfs {
    /// Debian's Ignition 2.14 (spec 3) and its dracut module, as a 4.6+ bootimage.
    Spec3,
    /// Ignition v0.35 (spec 2.x) with ignition-dracut's spec2x glue, as a 4.1/4.2
    /// bootimage: it also waits for a disk labelled `boot`.
    Spec2x,
}

impl Initramfs {
    /// The platform on the kernel command line, as each era's bootimage names it
    /// (v0.x's generator reads `coreos.oem.id`, and hands it to `--oem`).
    fn platform(self) -> &'static str {
        match self {
            Initramfs::Spec3 => "ignition.platform.id=qemu",
            Initramfs::Spec2x => "coreos.oem.id=qemu",
        }
    }
}

/// The spec 2.x initramfs and the empty `boot` disk: `initrd.img` and `boot.img` in one
/// directory, made once (`vm-root.sh spec2x`) for [`vm_base`]'s kernel.
pub fn spec2x_initramfs() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = vm_base();
        let dir = std::env::var_os("MCD_INJECT_VM_SPEC2X")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| crate_root().join("target/vm-spec2x"));
        let ignition = node::shared_program("ignition-v0.35", "ignition-selinux");
        let (ok, text) = run(Command::new("bash")
            .arg(crate_root().join("tests/support/vm-root.sh"))
            .arg("spec2x")
            .arg(&base)
            .arg(node::shared_dir().join("ignition-dracut-spec2x/dracut"))
            .arg(&ignition)
            .arg(&dir));
        assert!(ok, "making the spec 2.x initramfs: {text}");
        dir
    })
    .clone()
}

fn boot_vm_script() -> PathBuf {
    crate_root().join("scripts/boot-vm.sh")
}

/// `kvm` or `tcg`: how the VMs of this run are accelerated, probed once.
pub fn accel() -> &'static str {
    static ACCEL: OnceLock<String> = OnceLock::new();
    ACCEL.get_or_init(|| {
        if let Some(a) = std::env::var("MCD_INJECT_VM_ACCEL")
            .ok()
            .filter(|a| !a.is_empty())
        {
            return a;
        }
        let work = vm_base().join("accel-probe");
        let (ok, text) = run(Command::new("bash")
            .arg(boot_vm_script())
            .arg("probe-accel")
            .arg(vm_base().join("vmlinuz"))
            .arg(&work));
        assert!(ok, "boot-vm.sh probe-accel: {text}");
        let accel = text.trim().to_string();
        eprintln!("VM boots: {accel}");
        accel
    })
}

/// A URL of a loopback server as the guest reaches it.
pub fn guest_url(url: &str) -> String {
    url.replacen("://127.0.0.1:", "://10.0.2.2:", 1)
}

/// How the VM boots.
pub struct VmOptions<'a> {
    /// The initramfs, and so the Ignition, that applies the config.
    pub initramfs: Initramfs,
    /// SELinux enforcing (Debian's reference policy), or no SELinux at all.
    pub selinux: bool,
    /// A line of the firstboot unit's journal after which the probe stops waiting (a
    /// real MCD retries for ever on a test root); no spaces.
    pub wait_for: Option<&'a str>,
    /// `net.ifnames=0` on the kernel command line: the kernel names the NIC `eth0`, and
    /// the NIC-persisting pass pins nothing. Without it udev names the NIC
    /// ([`PREDICTABLE_NIC_NAME`]), in the initramfs already, and the pass pins that name.
    pub kernel_names_nics: bool,
}

impl VmOptions<'_> {
    /// The NIC's name in the guest, as the initramfs's `ip=` must name it.
    pub fn nic(&self) -> &'static str {
        if self.kernel_names_nics {
            KERNEL_NIC_NAME
        } else {
            PREDICTABLE_NIC_NAME
        }
    }
}

/// What a VM boot left behind: the nspawn boots' [`Boot`] (its `number`, whether it
/// ended in a reboot, its wall time), and what only a VM shows.
pub struct VmBoot {
    pub boot: Boot,
    /// The serial console.
    pub console: String,
    /// The SELinux denials of the boot (`avc:  denied` lines of the journal).
    pub denials: Vec<String>,
    /// Wall time of the boot, qemu's start to its end.
    pub seconds: f64,
    /// What was read from the disk right after the boot: `boot-probe/` and `journal/`
    /// (of `/var/lib/boot-probe` and `/var/log/journal`), and `network/`, the disk's
    /// `/etc/systemd/network` where it exists.
    pub from_disk: PathBuf,
    /// The disk after the boot, for [`VmBoot::exists`].
    disk: PathBuf,
}

impl VmBoot {
    pub fn describe(&self) -> String {
        let tail: Vec<&str> = self.console.lines().rev().take(60).collect();
        format!(
            "VM boot of {:.1} s\n{}\nSELinux denials:\n{}\nconsole (last 60 lines):\n{}",
            self.seconds,
            self.boot.describe(),
            self.denials.join("\n"),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }

    /// Whether `path` exists on the VM's disk after the boot (read with `debugfs`).
    pub fn exists(&self, path: &str) -> bool {
        exists_on(&self.disk, path)
    }
}

/// Whether `path` exists on `disk` (read with `debugfs`).
fn exists_on(disk: &Path, path: &str) -> bool {
    let (ok, text) = run(Command::new("debugfs")
        .arg("-R")
        .arg(format!("stat {path}"))
        .arg(disk));
    assert!(ok, "debugfs stat {path}: {text}");
    !text.contains("File not found by ext2_lookup")
}

/// Boots a copy of the VM's disk in `work` with `config` handed over fw_cfg, and
/// reads what the boot left on the disk.
pub fn boot(work: &Path, config: &Path, opts: &VmOptions) -> VmBoot {
    let disk = copy_disk(work);
    boot_disk(work, &disk, config, opts, 1)
}

/// A copy of the VM's disk in `work`, not booted yet.
pub fn copy_disk(work: &Path) -> PathBuf {
    copy_disk_of(&vm_base(), work)
}

/// A copy of the disk of `base` ([`vm_base`], [`vm_base8`]) in `work`, not booted yet.
pub fn copy_disk_of(base: &Path, work: &Path) -> PathBuf {
    let disk = work.join("disk.img");
    let (ok, text) = run(Command::new("cp")
        .arg("--sparse=always")
        .arg(base.join("disk.img"))
        .arg(&disk));
    assert!(ok, "copying the VM disk: {text}");
    disk
}

/// Gives `disk` (a copy, not booted) the bootimage's OS `boot_os` and the cluster's OS
/// image `image`, which carries `cluster_os` on the tree `cluster_tree` ([`vm_tree`]),
/// and its extensions image `extensions`, as [`node::set_os`] gives an nspawn root,
/// labelled offline (`vm-root.sh os`); the programs in `controls` are the probe's
/// negative controls.
pub fn set_os(
    disk: &Path,
    boot_os: &str,
    cluster_os: &str,
    image: &str,
    extensions: &str,
    cluster_tree: &Path,
    controls: &Path,
) {
    let (ok, text) = run(Command::new("bash")
        .arg(vm_root_script())
        .arg("os")
        .arg(disk)
        .args([boot_os, cluster_os, image, extensions])
        .arg(cluster_tree)
        .arg(controls));
    assert!(ok, "giving {} its OS: {text}", disk.display());
}

fn vm_root_script() -> PathBuf {
    crate_root().join("tests/support/vm-root.sh")
}

/// A copy of the VM's disk (`node::boots` boots it again while a boot ends in a reboot
/// the guest asked for, `-no-reboot`: qemu exits then): the first boot with `config`
/// and Ignition's first boot, the later ones without `ignition.firstboot` and its
/// network, as GRUB boots them once the firstboot stamp is gone (the config stays in
/// fw_cfg, as in a VM that reboots). Before each later boot, `vm-root.sh next-boot`
/// readies the disk (the deployment, the boot's number).
/// With `nic_oracle` (real nmstatectl), each boot's tree gets the NIC oracle
/// ([`add_nic_oracle`]): a deployment brings a `/usr` of its own.
pub struct Vm<'a> {
    pub work: &'a Path,
    pub disk: &'a Path,
    pub config: &'a Path,
    pub opts: &'a VmOptions<'a>,
    pub nic_oracle: Option<&'a Path>,
}

impl node::Machine for Vm<'_> {
    type Boot = VmBoot;

    fn ready(&mut self, number: usize) {
        if number > 1 {
            let (ok, text) = run(Command::new("bash")
                .arg(vm_root_script())
                .arg("next-boot")
                .arg(self.disk)
                .arg(number.to_string()));
            assert!(ok, "vm-root.sh next-boot {number}: {text}");
        }
        if let Some(nmstatectl) = self.nic_oracle {
            add_nic_oracle(self.disk, nmstatectl);
        }
    }

    fn boot(&mut self, number: usize) -> VmBoot {
        boot_disk(self.work, self.disk, self.config, self.opts, number)
    }

    fn rebooted(boot: &VmBoot) -> bool {
        boot.boot.rebooted
    }
}

/// Boot `number` of `disk` (1: the first boot, Ignition's), read from the disk after it.
fn boot_disk(work: &Path, disk: &Path, config: &Path, opts: &VmOptions, number: usize) -> VmBoot {
    let base = vm_base();
    let accel = accel();
    let mut cmdline = format!("{CMDLINE} {}", opts.initramfs.platform());
    if opts.kernel_names_nics {
        cmdline.push_str(" net.ifnames=0");
    }
    if number == 1 {
        cmdline.push_str(&format!(" {}", firstboot_cmdline(opts.nic())));
    }
    cmdline.push_str(if opts.selinux {
        " security=selinux selinux=1 enforcing=1"
    } else {
        " selinux=0"
    });
    if let Some(w) = opts.wait_for {
        assert!(!w.contains(char::is_whitespace), "{w:?} has a space");
        cmdline.push_str(&format!(" boot_probe.wait_for={w}"));
    }
    let suffix = if number == 1 {
        String::new()
    } else {
        format!(".{number}")
    };
    let vm_work = work.join(format!("vm{suffix}"));
    let mut qemu = Command::new("bash");
    qemu.arg(boot_vm_script()).arg("--disk").arg(disk);
    let initrd = match opts.initramfs {
        Initramfs::Spec3 => base.join("initrd.img"),
        Initramfs::Spec2x => {
            let spec2x = spec2x_initramfs();
            let boot_disk = work.join("boot.img");
            if number == 1 {
                let (ok, text) = run(Command::new("cp")
                    .arg("--sparse=always")
                    .arg(spec2x.join("boot.img"))
                    .arg(&boot_disk));
                assert!(ok, "copying the boot disk: {text}");
            }
            qemu.arg("--extra-disk").arg(&boot_disk);
            spec2x.join("initrd.img")
        }
    };
    let started = Instant::now();
    let (ok, text) = run(qemu
        .arg("--config")
        .arg(config)
        .arg("--kernel")
        .arg(base.join("vmlinuz"))
        .arg("--initrd")
        .arg(&initrd)
        .arg("--append")
        .arg(&cmdline)
        .args(["--memory", "1024", "--accel", accel])
        .args(["--timeout", BOOT_TIMEOUT_SECS])
        .arg("--work")
        .arg(&vm_work));
    let seconds = started.elapsed().as_secs_f64();
    let console = fs::read_to_string(vm_work.join("console.log")).unwrap_or_default();
    eprintln!("VM boot {number} ({accel}): {seconds:.1} s wall");

    let out = work.join(format!("from-disk{suffix}"));
    fs::create_dir_all(&out).unwrap();
    for dir in [
        "/var/lib/boot-probe",
        "/var/log/journal",
        "/etc/systemd/network",
    ] {
        if dir == "/etc/systemd/network" && !exists_on(disk, dir) {
            continue;
        }
        let (ok, text) = run(Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump {dir} {}", out.display()))
            .arg(disk));
        assert!(ok, "debugfs rdump {dir}: {text}");
    }
    let probe = out.join("boot-probe");
    let journal_dir = out.join("journal");
    // This boot's journal: the disk's last boot.
    let journal = |args: &[&str]| node::last_boot_journal(&journal_dir, args);
    let full = journal(&[]);
    let report = fs::read_to_string(probe.join("report")).unwrap_or_else(|_| {
        panic!(
            "VM boot {number} left no probe report (boot-vm.sh ok={ok}):\n{text}\nconsole:\n{console}\njournal:\n{full}"
        )
    });
    let denials = full
        .lines()
        .filter(|l| l.contains("avc:  denied"))
        .map(str::to_string)
        .collect();
    let mut boot = Boot::from_report(
        &report,
        fs::read_to_string(probe.join("called")).unwrap_or_default(),
        journal(&["-u", "machine-config-daemon-firstboot.service"]),
        full,
        fs::read_to_string(probe.join("mcd-run")).ok(),
    );
    boot.jobs = node::last_boot_jobs(&journal_dir);
    boot.number = number;
    boot.seconds = seconds;
    // The kernel's last words: "reboot: Restarting system" when the guest asked for a
    // reboot (which ends qemu under -no-reboot), "reboot: Power down" at a poweroff.
    boot.rebooted = console.contains("reboot: Restarting system");
    VmBoot {
        boot,
        console,
        denials,
        seconds,
        from_disk: out,
        disk: disk.to_path_buf(),
    }
}

impl VmBoot {
    /// Copies `paths` of the VM's disk after the boot (files or directories, those that
    /// exist) into `root`, at the same paths: a view of the disk for checks that read an
    /// nspawn root.
    pub fn dump(&self, paths: &[&str], root: &Path) {
        for p in paths {
            if !self.exists(p) {
                continue;
            }
            let dest = root.join(p.trim_start_matches('/'));
            let parent = dest.parent().unwrap();
            fs::create_dir_all(parent).unwrap();
            let (ok, text) = run(Command::new("debugfs")
                .arg("-R")
                .arg(format!("rdump {p} {}", parent.display()))
                .arg(&self.disk));
            assert!(ok && dest.exists(), "debugfs rdump {p}: {text}");
        }
    }
}

/// The NIC oracle's script in the guest (`/usr/libexec/nic-oracle/nic-oracle.sh`).
const NIC_ORACLE_SCRIPT: &str = r#"#!/bin/sh
# The VM tests' NIC oracle (tests/it/harness/vm.rs), at each boot, into
# /var/lib/boot-probe/nics.BOOT: each NIC as udev named it (nic.NAME: its name, MAC
# address and ifindex, and udev's properties of it from udev's database), and what real
# nmstatectl pins for the NICs on this boot's kernel command line, in a root of its own.
# Only programs that keep this unit's SELinux domain write the files (ip and udevadm run
# in domains of their own, which may not write them).
probe=/var/lib/boot-probe
boot=$(cat "$probe/boot" 2>/dev/null || echo 1)
out=$probe/nics.$boot
rm -rf "$out"
mkdir -p "$out/root/etc/systemd"
udevadm settle --timeout=30
cat /proc/cmdline >"$out/cmdline"
for dev in /sys/class/net/*; do
  [ -e "$dev/device" ] || continue
  ifindex=$(cat "$dev/ifindex")
  {
    echo "name=${dev##*/}"
    echo "address=$(cat "$dev/address")"
    echo "ifindex=$ifindex"
    sed -n 's/^E://p' "/run/udev/data/n$ifindex"
  } >"$out/nic.${dev##*/}" 2>&1
done
# Through the loader and libraries it was built against (this machine's): the guest's
# own glibc may be older than it needs (a RHEL 8 ABI disk).
lib=/usr/libexec/nic-oracle/lib
"$lib/ld-linux-x86-64.so.2" --library-path "$lib" /usr/libexec/nic-oracle/nmstatectl \
  persist-nic-names --root "$out/root" --kargs-out "$out/kargs-out" >"$out/nmstatectl.log" 2>&1
echo $? >"$out/nmstatectl.status"
sync
"#;

/// Its unit, started by a link in `multi-user.target.wants` (no `[Install]`: the first
/// boot's `preset-all` leaves it alone).
const NIC_ORACLE_UNIT: &str = "[Unit]
Description=the VM tests' NIC oracle: the NICs as udev named them, real nmstatectl's pins
# After the install unit, whose NIC-persisting pass it repeats on the same NICs and
# command line; before the firstboot unit, whose MCD may reboot the VM.
After=systemd-udev-trigger.service mco-mcd-install.service
Before=machine-config-daemon-firstboot.service
[Service]
Type=oneshot
ExecStart=/usr/libexec/nic-oracle/nic-oracle.sh
";

/// Gives `disk` (a copy, not booted) the NIC oracle: real `nmstatectl` (the program at
/// `nmstatectl`, built on this machine, with the loader and the libraries it was linked
/// against: the guest's glibc may be older), run at each boot by `nic-oracle.service`
/// after the install unit, with a root of its own, beside a record of the NICs as udev
/// named them (`/var/lib/boot-probe/nics.BOOT`; [`NicFacts`]).
pub fn add_nic_oracle(disk: &Path, nmstatectl: &Path) {
    edit_disk(disk, |root| {
        let dir = root.join("usr/libexec/nic-oracle");
        fs::create_dir_all(dir.join("lib")).unwrap();
        fs::copy(nmstatectl, dir.join("nmstatectl")).unwrap();
        for lib in [
            "/lib64/ld-linux-x86-64.so.2",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/lib/x86_64-linux-gnu/libgcc_s.so.1",
        ] {
            let name = Path::new(lib).file_name().unwrap();
            fs::copy(lib, dir.join("lib").join(name)).unwrap();
        }
        fs::write(dir.join("nic-oracle.sh"), NIC_ORACLE_SCRIPT).unwrap();
        for f in ["nmstatectl", "nic-oracle.sh"] {
            fs::set_permissions(dir.join(f), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let units = root.join("etc/systemd/system");
        fs::write(units.join("nic-oracle.service"), NIC_ORACLE_UNIT).unwrap();
        let wants = units.join("multi-user.target.wants");
        let mut added = vec![
            "/usr/libexec/nic-oracle".to_string(),
            "/etc/systemd/system/nic-oracle.service".to_string(),
        ];
        if !wants.exists() {
            fs::create_dir(&wants).unwrap();
            added.push("/etc/systemd/system/multi-user.target.wants".to_string());
        }
        // Again on a later boot's tree: the unit and its link came over in /etc.
        let _ = fs::remove_file(wants.join("nic-oracle.service"));
        std::os::unix::fs::symlink(
            "/etc/systemd/system/nic-oracle.service",
            wants.join("nic-oracle.service"),
        )
        .unwrap();
        added.push("/etc/systemd/system/multi-user.target.wants/nic-oracle.service".to_string());
        added
    });
}

/// Changes `disk` (a copy, not booted) offline, as `vm-root.sh os` does: mounts it
/// (loop), runs `edit` on the mount point, and labels the paths it returns (trees of
/// them) with the root's own policy (`setfiles` in a chroot of it, `/proc` mounted).
fn edit_disk(disk: &Path, edit: impl FnOnce(&Path) -> Vec<String>) {
    /// Unmounts what was mounted (lazily: a panic's way out), innermost first.
    struct Mounts(Vec<PathBuf>);
    impl Drop for Mounts {
        fn drop(&mut self) {
            for m in self.0.iter().rev() {
                let _ = Command::new("umount").arg("-l").arg(m).output();
            }
        }
    }
    let mnt = tempfile::tempdir().unwrap();
    let root = mnt.path();
    let mut mounts = Mounts(Vec::new());
    let (ok, text) = run(Command::new("mount")
        .args(["-o", "loop"])
        .arg(disk)
        .arg(root));
    assert!(ok, "mounting {} (loop): {text}", disk.display());
    mounts.0.push(root.to_path_buf());
    let added = edit(root);
    let list = root.join(".edit-disk-list");
    fs::write(&list, added.join("\0") + "\0").unwrap();
    let (ok, text) = run(Command::new("mount")
        .args(["-t", "proc", "proc"])
        .arg(root.join("proc")));
    assert!(ok, "mounting /proc in {}: {text}", disk.display());
    mounts.0.push(root.join("proc"));
    let (ok, text) = run(Command::new("chroot").arg(root).args([
        "setfiles",
        "-F",
        "-0",
        "-f",
        "/.edit-disk-list",
        "/etc/selinux/default/contexts/files/file_contexts",
    ]));
    assert!(
        ok,
        "setfiles on what was added to {}: {text}",
        disk.display()
    );
    fs::remove_file(&list).unwrap();
    // Not lazily: the disk is booted next, its loop device gone.
    for m in [root.join("proc"), root.to_path_buf()] {
        let (ok, text) = run(Command::new("umount").arg(&m));
        assert!(ok, "unmounting {}: {text}", m.display());
        mounts.0.retain(|x| *x != m);
    }
    let on_loop = || {
        Command::new("losetup")
            .arg("-j")
            .arg(disk)
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
    };
    for _ in 0..50 {
        if !on_loop() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!on_loop(), "{} is still on a loop device", disk.display());
}

/// What the NIC oracle recorded of one NIC on one boot (`nics.BOOT` of the boot's probe
/// directory), read after the boot.
pub struct NicFacts {
    /// The oracle's directory of that boot.
    pub dir: PathBuf,
    /// The interface's name.
    pub name: String,
    /// What udev's database holds of it (`E:` lines): `ID_NET_NAME_SLOT`,
    /// `ID_NET_LINK_FILE`, `ID_NET_DRIVER`, ...
    pub udev: std::collections::BTreeMap<String, String>,
}

impl VmBoot {
    /// The oracle's record of the NIC whose MAC address is `mac` on this boot; `None`
    /// when the oracle did not run or saw no such NIC.
    pub fn nic(&self, mac: &str) -> Option<NicFacts> {
        let dir = self
            .from_disk
            .join(format!("boot-probe/nics.{}", self.boot.number));
        for entry in fs::read_dir(&dir).ok()? {
            let path = entry.ok()?.path();
            if !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("nic."))
            {
                continue;
            }
            let mut udev: std::collections::BTreeMap<String, String> = fs::read_to_string(&path)
                .ok()?
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            if udev
                .get("address")
                .is_some_and(|a| a.eq_ignore_ascii_case(mac))
            {
                let name = udev.remove("name").unwrap_or_default();
                return Some(NicFacts { dir, name, udev });
            }
        }
        None
    }
}
