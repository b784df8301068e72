//! The first boot as a CI bootimage job gives it: a qemu VM, the config handed over qemu's
//! firmware config (fw_cfg), Ignition running in a dracut initramfs and writing the disk,
//! SELinux enforcing (Debian's reference policy, the root labelled offline), then the real
//! root's systemd (`harness::vm`, `scripts/boot-vm.sh`). Spec 3 configs (bootimage 4.8)
//! meet Debian's Ignition 2.14; spec 2.2 configs (bootimage 4.2) meet Ignition v0.35 with
//! the dracut glue of its era (ignition-dracut, branch spec2x), as 4.1/4.2 bootimages
//! boot them.
//!
//! Configs travel in remote mode: an inline payload cannot travel through fw_cfg, which
//! Ignition reads in quadratic time (`inject` warns about that). The config is a few kB;
//! a loopback server on the host serves the payload (and, in the pointer flow, the
//! Machine Config Server's config over HTTPS), and Ignition fetches them from the
//! initramfs through qemu's user-mode network.
//!
//! Each boot checks what the nspawn boots (`boot.rs`) check, read from the VM's disk
//! afterwards: the install unit finished before the firstboot started, the installed
//! binary has the provenance's sha256 and mode 0755, the firstboot ran through our
//! drop-in, the pull unit never started, podman never pulled or ran the MCO image; with
//! the probe MCD (the boot without SELinux) its command line and `_MCD_DID_REEXEC=1`,
//! and no unit of ours failed. And what only a VM
//! shows: Ignition ran in the initramfs and read the config from fw_cfg, `/run/bin` and
//! the binary carry the labels of `/usr/bin` and `/usr/bin/true`, and no SELinux denial
//! names our units, files or the programs our script runs. Under v0.35, also that its
//! own relabelling (`ignition-relabel.service`, after switch-root) relabelled our unit
//! and files.
//!
//! Main's real MCD runs its first boot to its end, as the nspawn three-boot tests run
//! it (`boot.rs`, `first_boot_to_the_end`), with their checks: on a disk of RHEL 8's ABI
//! (Debian bullseye) that runs the bootimage's RHCOS, it moves the node to the cluster's
//! OS and reboots, completes the machine config there, on the VM's own tree of RHEL 9's
//! ABI deployed onto the disk, and reboots, and the third boot starts the kubelet; each
//! reboot ends qemu, and the harness boots the disk again without `ignition.firstboot`.
//! The negative controls show the ABI of each boot (`boot::assert_each_boot_on_its_abi`). The
//! spec 2.2 case boots with predictable NIC names (the others with `net.ifnames=0`):
//! boot 1's install unit pins the NIC as real nmstatectl, run in the same guest, pins
//! it, and the later boots name it by the pinned file.
//!
//! Needs root, qemu-system-x86 and e2fsprogs beside what `boot.rs` needs. Each boot takes
//! a minute or two under TCG: the suite boots seven (a single boot without SELinux, and
//! the three boots of the two real-MCD cases, which cover what single boots of the probe
//! under SELinux, of spec 2.2 and of the pointer flow did).

use std::fs;
use std::path::PathBuf;

use crate::boot::{
    add_abi_controls, add_main_old_podman_policy, assert_each_boot_on_its_abi,
    assert_first_boot_completed, bootimage_os, cluster_os, data_url, machine_config_file,
    mcs_config, provenance_sha256, spec2_bootimage, work_root, ClusterOs, FirstBoot, Flow, Mcd,
    FIRSTBOOT, INSTALL, PULL, SPEC3_BOOTIMAGE,
};
use crate::harness::mcd_inject;
use crate::harness::node::{self, HttpsServer};
use crate::harness::vm::{
    self, guest_url, Initramfs, VmBoot, VmOptions, NIC_MAC, PREDICTABLE_NIC_NAME,
};
use crate::persist_nics::{tree, Tree};
use serde_json::{json, Value};
use sha2::Digest as _;

const PAYLOAD: &str = "payload/machine-config-daemon.gz";

struct VmNode {
    _dir: tempfile::TempDir,
    /// A 4.1-4.5 bootimage: a spec 2.2 config, applied by Ignition v0.35.
    spec2: bool,
    cfg: Value,
    /// The config as handed over.
    cfg_bytes: Vec<u8>,
    /// The served payload's URL, as the guest fetched it.
    payload_url: String,
    vm: VmBoot,
}

/// A config `inject` wrote for a VM, and the loopback server that serves its payload
/// (and the MCS config).
struct Written {
    dir: tempfile::TempDir,
    spec2: bool,
    cfg: Value,
    cfg_bytes: Vec<u8>,
    cfg_path: PathBuf,
    payload_url: String,
    server: HttpsServer,
}

impl Written {
    /// How the VM boots: the initramfs of the bootimage's era; SELinux enforcing or not;
    /// `net.ifnames=0` or predictable NIC names.
    fn options(&self, selinux: bool, kernel_names_nics: bool) -> VmOptions<'static> {
        VmOptions {
            initramfs: if self.spec2 {
                Initramfs::Spec2x
            } else {
                Initramfs::Spec3
            },
            selinux,
            wait_for: None,
            kernel_names_nics,
        }
    }

    /// The node of the first boot `vm`; the server stops.
    fn node(self, vm: VmBoot) -> VmNode {
        drop(self.server);
        VmNode {
            _dir: self.dir,
            spec2: self.spec2,
            cfg: self.cfg,
            cfg_bytes: self.cfg_bytes,
            payload_url: self.payload_url,
            vm,
        }
    }
}

/// Writes the config for `bootimage` in remote mode and serves the payload (and the
/// MCS config) on loopback.
fn write_config(bootimage: &str, flow: Flow, mcd: Mcd) -> Written {
    let dir = tempfile::tempdir_in(work_root()).unwrap();
    let work = dir.path();
    let spec2 = spec2_bootimage(bootimage);
    let version = if spec2 { "2.2.0" } else { "3.2.0" };
    let served = work.join("srv");
    fs::create_dir_all(served.join("payload")).unwrap();
    let server = HttpsServer::serve(&served, work);
    let (base, payload_url) = match flow {
        Flow::Standalone => {
            // The machine config the firstboot completes, as the 4.12 MCS serves it.
            let mc = machine_config_file(spec2);
            (
                json!({"ignition": {"version": version}, "storage": {"files": [mc]}}),
                guest_url(&server.http_url(PAYLOAD)),
            )
        }
        Flow::Offline(_) | Flow::Stub(..) => {
            panic!("the VM cases boot the standalone and pointer flows")
        }
        Flow::Pointer(generation) => {
            fs::create_dir_all(served.join("config")).unwrap();
            fs::write(
                served.join("config/worker"),
                serde_json::to_vec(&{
                    let mut c = mcs_config(generation, spec2);
                    if mcd != Mcd::Probe {
                        add_main_old_podman_policy(&mut c);
                    }
                    c
                })
                .unwrap(),
            )
            .unwrap();
            // As the installer's pointer config: the MCS over HTTPS, its CA inline. The
            // payload comes from the same server, trusted through the same CA.
            let key = if spec2 { "append" } else { "merge" };
            let base = json!({"ignition": {
                "version": version,
                "config": {key: [{"source": guest_url(&server.url("config/worker"))}]},
                "security": {"tls": {"certificateAuthorities": [{"source": data_url(&server.ca_pem)}]}}
            }});
            (base, guest_url(&server.url(PAYLOAD)))
        }
    };
    let base_path = work.join("base.ign");
    fs::write(&base_path, serde_json::to_vec_pretty(&base).unwrap()).unwrap();
    let cfg_path = work.join("node.ign");
    let r = mcd_inject([
        "inject",
        "--image",
        mcd.image(),
        "--bootimage",
        bootimage,
        "--base",
        base_path.to_str().unwrap(),
        "--ign",
        cfg_path.to_str().unwrap(),
        "--payload-url",
        &payload_url,
        "--payload-out",
        served.join(PAYLOAD).to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let bytes = fs::read(&cfg_path).unwrap();
    // AWS's 16 KB of user data; a closure's file entries and hashes add some 4.5 kB,
    // within Azure's and OpenStack's 64 KB (docs/firstboot.md).
    let limit = if mcd == Mcd::Rhel9Only { 24 } else { 16 } * 1024;
    assert!(
        bytes.len() < limit,
        "a remote-mode config of {} bytes",
        bytes.len()
    );
    // Its one warning, if any: over AWS's user data.
    let warned = usize::from(bytes.len() > 16 * 1024);
    assert_eq!(
        r.stderr.matches("warning:").count(),
        warned,
        "a remote-mode config of {} bytes: {}",
        bytes.len(),
        r.describe()
    );
    assert_eq!(
        r.stderr
            .matches(
                "with the payload served (remote mode): over the user-data limit of AWS 16 KB."
            )
            .count(),
        warned,
        "{}",
        r.describe()
    );
    let cfg: Value = serde_json::from_slice(&bytes).unwrap();
    Written {
        dir,
        spec2,
        cfg,
        cfg_bytes: bytes,
        cfg_path,
        payload_url,
        server,
    }
}

/// Writes the config for `bootimage` in remote mode, serves the payload (and the MCS
/// config) on loopback, and boots the VM with the config handed over fw_cfg.
fn first_boot(bootimage: &str, flow: Flow, selinux: bool) -> VmNode {
    let w = write_config(bootimage, flow, Mcd::Probe);
    let vm = vm::boot(w.dir.path(), &w.cfg_path, &w.options(selinux, true));
    w.node(vm)
}

/// Ignition ran in the initramfs, read our config from fw_cfg (the journal names its
/// sha512), fetched the payload from the host, and ran all its stages: Ignition 2.14's
/// six, or v0.35's three (`fetch`, `disks`, `files`), which word their lines alike.
fn assert_ignition_in_initramfs(n: &VmNode) {
    let j = &n.vm.boot.journal;
    let why = || n.vm.describe();
    assert!(
        j.contains("loading QEMU firmware config module"),
        "Ignition did not read fw_cfg\n{}",
        why()
    );
    // v0.35 logs a missing fw_cfg item and goes on without a config.
    assert!(
        !j.contains("QEMU firmware config was not found"),
        "Ignition found no config in fw_cfg\n{}",
        why()
    );
    let sha512 = hex::encode(sha2::Sha512::digest(&n.cfg_bytes));
    assert!(
        j.contains(&format!("parsing config with SHA512: {sha512}")),
        "Ignition did not parse the config handed over fw_cfg\n{}",
        why()
    );
    assert!(
        j.contains(&format!("GET {}: attempt #", n.payload_url)),
        "Ignition did not fetch the payload from {}\n{}",
        n.payload_url,
        why()
    );
    let stages: &[&str] = if n.spec2 {
        &["fetch", "disks", "files"]
    } else {
        &["fetch-offline", "kargs", "disks", "mount", "files"]
    };
    for stage in stages {
        assert!(
            j.contains(&format!("Stage: {stage}\n")),
            "no Ignition {stage} stage\n{}",
            why()
        );
    }
    assert!(
        j.matches("Ignition finished successfully").count() >= stages.len(),
        "an Ignition stage did not finish\n{}",
        why()
    );
}

/// Our binary installed before the firstboot ran, from our drop-in; no pull, no podman.
fn assert_delivered(n: &VmNode) {
    let b = &n.vm.boot;
    let why = || n.vm.describe();
    crate::boot::assert_installed_and_used(b, &provenance_sha256(&n.cfg), &why);
    for unit in [INSTALL, PULL] {
        assert!(
            !b.failed_units.iter().any(|f| f.contains(unit)),
            "{unit} failed\n{}",
            why()
        );
    }
    if n.spec2 {
        // 4.1-4.5: the config masks the pivot to the cluster's OS image.
        crate::boot::assert_pivot_masked(b, &why);
    }
}

/// SELinux enforced, our script labelled `/run/bin` like `/usr/bin` and the binary like
/// `/usr/bin/true` (`bin_t` under Debian's policy), and no denial names what is ours.
fn assert_selinux(vm: &VmBoot) {
    assert_selinux_no_denials(vm);
    let b = &vm.boot;
    let why = || vm.describe();
    let label = |p: &str| b.get(&format!("label.{p}")).to_string();
    assert_eq!(label("/run/bin"), label("/usr/bin"), "{}", why());
    assert_eq!(
        label("/run/bin/machine-config-daemon"),
        label("/usr/bin/true"),
        "{}",
        why()
    );
    assert!(
        label("/run/bin/machine-config-daemon").contains(":bin_t:"),
        "{}",
        why()
    );
    // Files Ignition wrote were relabelled, not left unlabelled.
    for p in [
        "/var/lib/mcd-inject/machine-config-daemon.gz",
        "/var/lib/mcd-inject/mco-mcd-install.sh",
    ] {
        let l = label(p);
        assert!(
            !l.is_empty() && !l.contains("unlabeled_t"),
            "{p} is labelled {l:?}\n{}",
            why()
        );
    }
}

/// SELinux enforced, and no denial names our units, files, the programs our script runs
/// or the MCD (a boot without the install, as the node's, included).
fn assert_selinux_no_denials(vm: &VmBoot) {
    let why = || vm.describe();
    assert_eq!(
        vm.boot.get("selinux.enforce"),
        "1",
        "not enforcing\n{}",
        why()
    );
    // Ours: the units, the files, the programs the install script runs, the MCD.
    const OURS: &[&str] = &[
        "mco-mcd-install",
        "machine-config",
        "mcd-inject",
        "comm=\"mkdir\"",
        "comm=\"chcon\"",
        "comm=\"mktemp\"",
        "comm=\"gzip\"",
        "comm=\"sha256sum\"",
        "comm=\"chmod\"",
        "comm=\"mv\"",
        "comm=\"selinuxenabled\"",
    ];
    let ours: Vec<&String> = vm
        .denials
        .iter()
        .filter(|d| OURS.iter().any(|o| d.contains(o)))
        .collect();
    assert!(
        ours.is_empty(),
        "SELinux denials of ours: {ours:#?}\n{}",
        why()
    );
}

/// The probe MCD completed the first boot with our command line and the re-exec guard;
/// crio and kubelet started after it; the firstboot unit succeeded.
fn assert_completed(n: &VmNode) {
    let b = &n.vm.boot;
    let why = || n.vm.describe();
    crate::boot::assert_probe_completed(b, &why);
    assert!(
        !b.failed_units.iter().any(|f| f.contains(FIRSTBOOT)),
        "{}",
        why()
    );
}

/// Without SELinux (`selinux=0`): Ignition's files stage and our install script's
/// labelling both do without it.
#[test]
fn vm_spec3_standalone_without_selinux() {
    let n = first_boot("4.8", Flow::Standalone, false);
    assert_ignition_in_initramfs(&n);
    assert_delivered(&n);
    assert_completed(&n);
    assert_eq!(
        n.vm.boot.get("selinux.enforce"),
        "",
        "SELinux is on\n{}",
        n.vm.describe()
    );
}

/// Main's real MCD through the three boots of a first boot (`boot.rs`'s
/// `first_boot_to_the_end`, in a VM): a pointer config to the cluster's MCS, on a disk
/// that runs the bootimage's RHCOS (`boot-root.sh os`, labelled offline); each reboot
/// the MCD asks for ends qemu (`-no-reboot`), and the harness boots the same disk
/// again without `ignition.firstboot`, at most three times, reading each boot's report
/// and journal from the disk. Returns boot 1 with its config, the later boots, and the
/// first boot as the nspawn checks read it (the disk's `/etc`, `/usr/lib/os-release`
/// and stand-in OS state copied out after the last boot). With `kernel_names_nics`
/// false, the VM boots without `net.ifnames=0` (udev names the NIC) and the disk has
/// the NIC oracle (`vm::add_nic_oracle`: real nmstatectl at each boot).
fn first_boot_to_the_end(
    bootimage: &str,
    release: &'static str,
    mcd: Mcd,
    kernel_names_nics: bool,
) -> (VmNode, Vec<VmBoot>, FirstBoot) {
    let start = std::time::Instant::now();
    let w = write_config(bootimage, Flow::Pointer(release), mcd);
    let work = w.dir.path();
    // Boot 1 on a disk of the bootimage's ABI (RHEL 8); the OS update deploys the
    // cluster's OS (RHEL 9) on the VM's own tree.
    assert_eq!(cluster_os(release).1, 9, "{release}");
    let disk = vm::copy_disk_of(&vm::vm_base8(), work);
    let controls = work.join("controls-root");
    add_abi_controls(&controls);
    let cluster = ClusterOs::of(release, None);
    vm::set_os(
        &disk,
        bootimage_os(bootimage),
        cluster.name,
        cluster.image(),
        cluster.extensions(),
        &vm::vm_tree(),
        &controls.join("var/lib/boot-probe/controls"),
    );
    let opts = w.options(true, kernel_names_nics);
    let mut machine = vm::Vm {
        work,
        disk: &disk,
        config: &w.cfg_path,
        opts: &opts,
        nic_oracle: (!kernel_names_nics).then(crate::persist_nics::nmstatectl),
    };
    let mut boots = node::boots(&mut machine, 3);
    let view = tempfile::tempdir_in(work_root()).unwrap();
    let root = view.path().join("root");
    boots.last().unwrap().dump(
        &[
            "/etc",
            "/usr/lib/os-release",
            "/var/lib/stand-in-ostree",
            "/var/lib/stand-in-images",
        ],
        &root,
    );
    let each: Vec<String> = boots
        .iter()
        .map(|b| format!("boot {}: {:.1} s", b.boot.number, b.seconds))
        .collect();
    eprintln!(
        "VM first boot of the {bootimage} bootimage to {release}: {:.1} s in all; {}",
        start.elapsed().as_secs_f64(),
        each.join("; ")
    );
    let first = FirstBoot {
        _dir: view,
        cfg: w.cfg.clone(),
        mc: cluster.mc,
        root,
        boots: boots.iter().map(|b| b.boot.clone()).collect(),
    };
    let b1 = boots.remove(0);
    (w.node(b1), boots, first)
}

/// The boots of `first_boot_to_the_end` pass the nspawn three-boot checks
/// (`assert_first_boot_completed`), and what only a VM shows: boot 1 is Ignition's, its
/// config from fw_cfg, the later ones are not; SELinux enforced on each, our script's
/// labels on the boots that install, no denial of ours on any.
fn assert_vm_first_boot_completed(n: &VmNode, later: &[VmBoot], f: &FirstBoot, release: &str) {
    assert_first_boot_completed(f, release);
    assert_each_boot_on_its_abi(f, release);
    assert_ignition_in_initramfs(n);
    if n.spec2 {
        assert_v035_relabelled(n);
        crate::boot::assert_pivot_masked(&n.vm.boot, &|| n.vm.describe());
    }
    assert_selinux(&n.vm);
    for vm in later {
        assert!(
            !vm.boot.journal.contains("Ignition finished successfully")
                && !vm.console.contains("ignition.firstboot"),
            "boot {} was Ignition's first boot\n{}",
            vm.boot.number,
            vm.describe()
        );
    }
    let [b2, b3] = later else {
        unreachable!("assert_first_boot_completed counted three boots")
    };
    assert_selinux(b2);
    assert_selinux_no_denials(b3);
    for vm in [&n.vm, b2] {
        assert!(
            !vm.boot.firstboot_journal.contains("failed to re-exec"),
            "boot {}: the MCD could not re-exec\n{}",
            vm.boot.number,
            vm.describe()
        );
    }
}

/// Main's real RHEL 9 build alone (an MCO 4.23+ image) on a 4.9 bootimage (spec 3
/// under Ignition 2.14), pointer to the 4.16 MCS: boot 1, on RHEL 8, runs it through
/// its closure, labelled as the disk labels its own loader and libraries, under SELinux
/// enforcing; the later boots run it natively.
#[test]
fn vm_rhel9_only_mcd_through_its_closure_spec3_three_boots_pointer_to_release_4_16_selinux_enforcing(
) {
    let (n, later, f) =
        first_boot_to_the_end(SPEC3_BOOTIMAGE, "release-4.16", Mcd::Rhel9Only, true);
    assert_vm_first_boot_completed(&n, &later, &f, "release-4.16");
    let b = &n.vm.boot;
    let why = || n.vm.describe();
    let label = |p: &str| b.get(&format!("label.{p}")).to_string();
    assert!(
        !b.get("closure.files").is_empty(),
        "boot 1 did not use the closure\n{}",
        why()
    );
    let loader = label("/run/mcd-inject/closure/ld-linux-x86-64.so.2");
    assert_eq!(loader, label("/lib64/ld-linux-x86-64.so.2"), "{}", why());
    assert!(loader.contains(":ld_so_t:"), "{loader}\n{}", why());
    let lib_dir = ["/usr/lib64", "/usr/lib"]
        .into_iter()
        .map(label)
        .find(|l| !l.is_empty())
        .unwrap();
    assert_eq!(
        label("/run/mcd-inject/closure/libc.so.6"),
        lib_dir,
        "{}",
        why()
    );
    assert_eq!(label("/run/mcd-inject/closure"), lib_dir, "{}", why());
    assert!(
        label("/run/mcd-inject/machine-config-daemon").contains(":bin_t:"),
        "{}",
        why()
    );
    for vm in &later {
        assert_eq!(
            vm.boot.get("closure.files"),
            "",
            "boot {}\n{}",
            vm.boot.number,
            vm.describe()
        );
    }
}

/// Main's real MCD on a 4.2 bootimage (spec 2.2 under Ignition v0.35), pointer to the
/// 4.16 MCS: the three boots of its first boot; boot 1 installs main's RHEL 8 build (the
/// bootimage's OS is RHEL 8). With predictable NIC names (no `net.ifnames=0`): udev names
/// the virtio NIC `ens3` from the initramfs on, and the 4.16 firstboot unit asks for the
/// NIC-persisting pass, which boot 1's install unit does as real nmstatectl does it in
/// the same guest ([`assert_nic_pinned_as_nmstatectl_pins_it`]).
#[test]
fn vm_real_main_mcd_spec22_three_boots_pointer_to_release_4_16_selinux_enforcing() {
    let (n, later, f) = first_boot_to_the_end("4.2", "release-4.16", Mcd::RealMain, false);
    let rhel8 = crate::harness::node::shared_program("real-mcd", "mcd-main-rhel8");
    assert_eq!(
        n.vm.boot.get("bin.sha256"),
        hex::encode(sha2::Sha256::digest(fs::read(rhel8).unwrap())),
        "the MCD installed on boot 1 is not main's RHEL 8 build\n{}",
        n.vm.describe()
    );
    assert_vm_first_boot_completed(&n, &later, &f, "release-4.16");
    assert_nic_pinned_as_nmstatectl_pins_it(&n.vm, &later, &f);
}

/// The NIC oracle's files of a boot (`vm::add_nic_oracle`), for a failure message.
fn oracle_record(b: &VmBoot) -> String {
    let dir = b
        .from_disk
        .join(format!("boot-probe/nics.{}", b.boot.number));
    let Ok(entries) = fs::read_dir(&dir) else {
        return format!("(no {})", dir.display());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            format!(
                "{}:\n{}",
                p.file_name().unwrap().to_string_lossy(),
                String::from_utf8_lossy(&fs::read(p).unwrap()).trim_end()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tree of [`tree`] as text, for a failure message.
fn show_tree(t: &Option<Tree>) -> String {
    let Some(t) = t else {
        return "(no directory)".to_string();
    };
    t.iter()
        .map(|(path, (mode, contents))| match contents {
            None => format!("{path}/ (mode {mode:o})"),
            Some(c) => format!("{path} (mode {mode:o}): {:?}", String::from_utf8_lossy(c)),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The NIC-persisting pass of boot 1 against real nmstatectl 2.2, run in the same guest
/// on the same boot by the NIC oracle (`vm::add_nic_oracle`): the same virtio NIC as the
/// kernel reports it (its permanent MAC address, its driver over ethtool), the same
/// kernel command line (`rd.neednet=1` and the initramfs's `ip=`), against a root of its
/// own. The disk's `/etc/systemd/network` after boot 1 is byte-identical to the tree
/// nmstatectl wrote (the link file pinning `ens3` by MAC address and driver, and the
/// stamp; modes included), and the one `rpm-ostree kargs` call of boot 1 appends what
/// nmstatectl wrote to `--kargs-out`. The names: on boot 1 udev named the NIC by its
/// slot (`99-default.link`, in the initramfs already); on boots 2 and 3 it has the
/// pinned name, and udev names it by the pinned link file; that tree is unchanged after
/// boot 3.
fn assert_nic_pinned_as_nmstatectl_pins_it(b1: &VmBoot, later: &[VmBoot], f: &FirstBoot) {
    let why = || b1.describe();
    let nic = b1.nic(NIC_MAC).unwrap_or_else(|| {
        panic!(
            "the NIC oracle recorded no NIC of MAC address {NIC_MAC} on boot 1:\n{}\n{}",
            oracle_record(b1),
            why()
        )
    });
    let read = |name: &str| fs::read_to_string(nic.dir.join(name)).unwrap_or_default();
    let context = || format!("the NIC oracle's record:\n{}\n{}", oracle_record(b1), why());
    assert_eq!(read("nmstatectl.status").trim(), "0", "{}", context());
    let udev = |k: &str| nic.udev.get(k).map(String::as_str).unwrap_or("");
    assert_eq!(nic.name, PREDICTABLE_NIC_NAME, "{}", context());
    assert_eq!(
        udev("ID_NET_NAME_SLOT"),
        PREDICTABLE_NIC_NAME,
        "{}",
        context()
    );
    assert_eq!(udev("ID_NET_DRIVER"), "virtio_net", "{}", context());
    assert_eq!(
        udev("ID_NET_LINK_FILE"),
        "/usr/lib/systemd/network/99-default.link",
        "{}",
        context()
    );

    // The files: byte for byte, modes included.
    let pinned = tree(&b1.from_disk.join("network"));
    let oracle = tree(&nic.dir.join("root/etc/systemd/network"));
    let link = format!("98-nmstate-{PREDICTABLE_NIC_NAME}.link");
    assert!(
        oracle.as_ref().is_some_and(|t| {
            t.contains_key(&link) && t.contains_key(".nmstate-persist.stamp") && t.len() == 3
        }),
        "nmstatectl did not pin {PREDICTABLE_NIC_NAME} alone:\n{}\n{}",
        show_tree(&oracle),
        context()
    );
    assert!(
        pinned == oracle,
        "boot 1 pinned\n{}\nnmstatectl pinned\n{}\n{}",
        show_tree(&pinned),
        show_tree(&oracle),
        context()
    );
    assert_eq!(
        tree(&f.root.join("etc/systemd/network")),
        pinned,
        "/etc/systemd/network changed after boot 1\n{}",
        context()
    );

    // The kernel arguments: one call, `kargs --append K...`, for what nmstatectl printed.
    let mut printed: Vec<String> = read("kargs-out")
        .split(' ')
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    let kargs_calls: Vec<String> = b1
        .boot
        .calls_of("/usr/bin/rpm-ostree")
        .into_iter()
        .filter(|c| c.starts_with("kargs"))
        .collect();
    assert_eq!(kargs_calls.len(), 1, "{kargs_calls:?}\n{}", context());
    let words: Vec<&str> = kargs_calls[0].split(' ').collect();
    let pairs: Vec<&[&str]> = words[1..].chunks(2).collect();
    assert!(
        words[0] == "kargs" && pairs.iter().all(|p| p.len() == 2 && p[0] == "--append"),
        "{kargs_calls:?}\n{}",
        context()
    );
    let mut appended: Vec<String> = pairs.iter().map(|p| p[1].to_string()).collect();
    // nmstatectl's order is its hash map's: the same arguments, in any order.
    appended.sort();
    printed.sort();
    assert_eq!(appended, printed, "{}", context());
    assert_eq!(
        printed,
        [format!(
            "ifname={PREDICTABLE_NIC_NAME}:{}",
            NIC_MAC.to_ascii_uppercase()
        )],
        "{}",
        context()
    );

    // Boots 2 and 3: the pinned name, from the pinned file.
    for vm in later {
        let why = || vm.describe();
        let nic = vm.nic(NIC_MAC).unwrap_or_else(|| {
            panic!(
                "the NIC oracle recorded no NIC of MAC address {NIC_MAC} on boot {}:\n{}\n{}",
                vm.boot.number,
                oracle_record(vm),
                why()
            )
        });
        assert_eq!(nic.name, PREDICTABLE_NIC_NAME, "{}", why());
        assert_eq!(
            nic.udev.get("ID_NET_LINK_FILE").map(String::as_str),
            Some(format!("/etc/systemd/network/{link}").as_str()),
            "boot {}: udev did not name the NIC by the pinned file: {:?}\n{}",
            vm.boot.number,
            nic.udev,
            why()
        );
    }
}

/// Under SELinux, v0.35 relabels what it wrote itself: its files stage lists the paths in
/// `/etc/selinux/ignition.relabel` and writes `ignition-relabel.service`, which runs
/// `restorecon -0vRif` on that list early in the real root's boot (logging each file it
/// relabels) and then removes the list. Our units and files were on the list, and left
/// `unlabeled_t`, the label of what is written from an initramfs without a policy.
fn assert_v035_relabelled(n: &VmNode) {
    let j = &n.vm.boot.journal;
    let relabel_lines = || {
        j.lines()
            .filter(|l| l.contains("elabel") || l.contains("restorecon"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let why = || format!("{}\nrelabelling:\n{}", n.vm.describe(), relabel_lines());
    // Its start job done, as systemd's journal records it (whatever systemd's wording).
    assert!(
        n.vm.boot.started("ignition-relabel.service") > 0,
        "ignition-relabel.service did not finish\n{}",
        why()
    );
    for p in [
        "/etc/systemd/system/mco-mcd-install.service",
        "/var/lib/mcd-inject/mco-mcd-install.sh",
        "/var/lib/mcd-inject/machine-config-daemon.gz",
    ] {
        assert!(
            j.contains(&format!(
                "Relabeled {p} from system_u:object_r:unlabeled_t:s0 to "
            )),
            "restorecon did not relabel {p}\n{}",
            why()
        );
    }
    assert!(
        !n.vm.exists("/etc/selinux/ignition.relabel"),
        "the relabel list is still there\n{}",
        why()
    );
}
