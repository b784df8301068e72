//! The Machine Config Server configs the boot tests meet (`tests/data/mcs/`): what the MCS
//! of each MCO release serves a worker, rendered by MCO's own code from the inputs in
//! `tests/data/mcs/inputs` (see `tests/data/mcs/README.md`). Each render must be the body
//! rendered, come from the inputs as they are now, be read by the Ignition it is served to, and show the
//! units its release is known to serve; and `inject --base` of each must verify.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::node::{run, shared_program};
use crate::harness::{crate_root, fixture, sha256_hex, Bin};
use serde_json::Value;

/// The MCO releases rendered, oldest first (branch names of openshift/machine-config-operator).
pub const RELEASES: [&str; 5] = [
    "release-4.6",
    "release-4.12",
    "release-4.16",
    "release-4.18",
    "main",
];

/// The render served to Ignition v0.x (spec 2.2).
pub const SPEC2: &str = "worker-spec2.2.ign";
/// The render served to Ignition 2.14 (spec 3, up to 3.3).
pub const SPEC3: &str = "worker-spec3.ign";

/// The MCO image the inputs name (`inputs/manifests/controllerconfig.yaml`).
pub const MCO_IMAGE: &str = "registry.example.com/openshift/release@sha256:1111111111111111111111111111111111111111111111111111111111111111";

const FIRSTBOOT: &str = "machine-config-daemon-firstboot.service";
const PULL: &str = "machine-config-daemon-pull.service";

fn mcs_dir() -> PathBuf {
    crate_root().join("tests/data/mcs")
}

pub fn render(release: &str, name: &str) -> Value {
    let path = mcs_dir().join(release).join(name);
    serde_json::from_slice(&fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn record(release: &str) -> Value {
    let path = mcs_dir().join(release).join("render.json");
    serde_json::from_slice(&fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// Every file under `dir`, by path relative to it, sorted bytewise.
fn files_under(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = format!("{prefix}{}", entry.file_name().to_str().unwrap());
        if entry.file_type().unwrap().is_dir() {
            files_under(&entry.path(), &format!("{name}/"), out);
        } else {
            out.push((name, entry.path()));
        }
    }
}

/// The hash of the inputs as the render records it: sha256 of the lines
/// `SHA256  PATH` of every input file, sorted by path.
fn inputs_sha256() -> String {
    let mut files = Vec::new();
    files_under(&mcs_dir().join("inputs"), "", &mut files);
    files.sort();
    let listing: String = files
        .iter()
        .map(|(name, path)| format!("{}  {name}\n", sha256_hex(&fs::read(path).unwrap())))
        .collect();
    sha256_hex(listing.as_bytes())
}

fn unit<'a>(cfg: &'a Value, name: &str) -> &'a Value {
    cfg["systemd"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn contents<'a>(cfg: &'a Value, name: &str) -> &'a str {
    unit(cfg, name)["contents"].as_str().unwrap()
}

/// The values of `KEY=` lines of a unit text, in order.
fn lines<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    let prefix = format!("{key}=");
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

#[test]
fn every_render_comes_from_the_inputs_as_they_are() {
    let want = inputs_sha256();
    let mut dirs: Vec<String> = fs::read_dir(mcs_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir() && e.file_name() != "inputs")
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    let mut listed: Vec<String> = RELEASES.iter().map(|r| r.to_string()).collect();
    listed.sort();
    assert_eq!(
        dirs, listed,
        "tests/data/mcs holds a render per release, no other"
    );
    for release in RELEASES {
        let r = record(release);
        assert_eq!(r["mco_branch"], release, "{release}/render.json");
        let commit = r["mco_commit"].as_str().unwrap();
        assert!(
            commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{release}: mco_commit {commit:?}"
        );
        assert_eq!(
            r["inputs_sha256"], want,
            "{release} was rendered from other inputs than tests/data/mcs/inputs: render it again"
        );
        for name in [SPEC2, SPEC3] {
            let rec = &r["renders"][name];
            assert!(
                rec["accept"]
                    .as_str()
                    .is_some_and(|a| a.contains("vnd.coreos.ignition")),
                "{release}/render.json records no Accept header for {name}"
            );
            let bytes = fs::read(mcs_dir().join(release).join(name)).unwrap();
            assert_eq!(
                rec["sha256"],
                sha256_hex(&bytes),
                "{release}/{name} is not the body that was rendered"
            );
        }
    }
}

/// Each render is accepted by the Ignition it is served to: v0.35 for spec 2.2,
/// Debian's 2.14 for spec 3 (any output is a finding); and each release serves the
/// spec 3 version its converter gives an Ignition that asks for 3.3.
#[test]
fn renders_validate_with_the_ignition_they_are_served_to() {
    let v0 = shared_program("ignition-v0.35", "ignition-validate");
    for release in RELEASES {
        let dir = mcs_dir().join(release);
        let (ok, text) = run(Command::new(&v0).arg(dir.join(SPEC2)));
        assert!(ok && text.is_empty(), "{release} {SPEC2}: {text}");
        let (ok, text) = run(Command::new("ignition-validate").arg(dir.join(SPEC3)));
        assert!(ok && text.is_empty(), "{release} {SPEC3}: {text}");
        assert_eq!(render(release, SPEC2)["ignition"]["version"], "2.2.0");
        let spec3 = match release {
            "release-4.6" => "3.1.0",
            "release-4.12" => "3.2.0",
            _ => "3.3.0",
        };
        assert_eq!(
            render(release, SPEC3)["ignition"]["version"],
            spec3,
            "{release}"
        );
    }
}

/// What each release's MCS serves for the first boot, as its own code renders it: the
/// facts the config this tool writes is built against.
#[test]
fn each_release_serves_its_firstboot_and_pull_units() {
    for release in RELEASES {
        for name in [SPEC2, SPEC3] {
            let cfg = render(release, name);
            let firstboot = contents(&cfg, FIRSTBOOT);
            let pull = contents(&cfg, PULL);
            let exec = lines(firstboot, "ExecStart");
            let why = format!("{release} {name}:\n{firstboot}\n{pull}");
            assert_eq!(unit(&cfg, FIRSTBOOT)["enabled"], true, "{why}");
            assert_eq!(unit(&cfg, PULL)["enabled"], true, "{why}");
            assert!(
                lines(firstboot, "ConditionPathExists")
                    .contains(&"/etc/ignition-machine-config-encapsulated.json"),
                "{why}"
            );
            match release {
                // The MCD copied out of the MCO image by the pull unit, run from /run/bin.
                "release-4.6" | "release-4.12" => {
                    assert_eq!(
                        exec,
                        ["/run/bin/machine-config-daemon firstboot-complete-machineconfig"],
                        "{why}"
                    );
                    assert!(pull.contains(MCO_IMAGE), "{why}");
                }
                // The MCD run in the MCO image through podman, after a NIC-persisting pass.
                _ => {
                    assert_eq!(exec.len(), 2, "{why}");
                    assert!(
                        exec.iter().all(|e| e.starts_with("/usr/bin/podman run")
                            && e.contains(MCO_IMAGE)
                            && e.contains("firstboot-complete-machineconfig")),
                        "{why}"
                    );
                    assert!(exec[0].ends_with("--persist-nics"), "{why}");
                }
            }
            let pre = lines(pull, "ExecStartPre");
            match release {
                // 4.18 added the podman policy arguments to the pull.
                "release-4.18" | "main" => assert!(
                    pre.iter()
                        .any(|p| p.contains("generate_podman_policy_args")),
                    "{why}"
                ),
                _ => assert!(pre.is_empty(), "{why}"),
            }
            let (start_pre, stop_post) = (
                lines(firstboot, "ExecStartPre"),
                lines(firstboot, "ExecStopPost"),
            );
            // main binds a copy of the ostree repo config over it for the firstboot.
            let binds = start_pre
                .iter()
                .any(|p| p.contains("mount --bind /run/ostree-bootstrap-config"));
            assert_eq!(binds, release == "main", "{why}");
            assert_eq!(
                stop_post.iter().any(|p| p.contains("umount")),
                release == "main",
                "{why}"
            );
        }
    }
}

/// `inject --base` of every render, for a bootimage of the render's Ignition
/// generation, writes a config that `verify` passes.
#[test]
fn inject_onto_every_render_verifies() {
    let reference = fixture("mco-4.16").reference("oci");
    for release in RELEASES {
        for (name, bootimage) in [(SPEC2, "4.2"), (SPEC3, "4.9")] {
            let base = fs::read(mcs_dir().join(release).join(name)).unwrap();
            let injected = Bin::new([
                "inject",
                "--image",
                &reference,
                "--bootimage",
                bootimage,
                "--ign",
                "-",
                "--base",
                "-",
            ])
            .stdin(base)
            .run();
            assert_eq!(
                injected.code,
                Some(0),
                "{release} {name}: {}",
                injected.describe()
            );
            let verified = Bin::new(["verify", "-", "--bootimage", bootimage])
                .stdin(injected.stdout.clone())
                .run();
            assert_eq!(
                verified.code,
                Some(0),
                "{release} {name}: {}{}",
                String::from_utf8_lossy(&verified.stdout),
                verified.stderr
            );
        }
    }
}

/// Our drop-in replaces only `ExecStart` of the cluster's firstboot text: a text whose
/// other commands go through podman (as main's `ExecStartPre` might one day) would pull
/// the MCO image on the node, and `verify` refuses it, naming the line.
#[test]
fn verify_refuses_a_firstboot_text_whose_other_commands_run_podman() {
    let mut base = render("main", SPEC3);
    let pre = format!("ExecStartPre=/usr/bin/podman pull {MCO_IMAGE}");
    for u in base["systemd"]["units"].as_array_mut().unwrap() {
        if u["name"] == FIRSTBOOT {
            let text = u["contents"]
                .as_str()
                .unwrap()
                .replace("[Service]\n", &format!("[Service]\n{pre}\n"));
            u["contents"] = Value::from(text);
        }
    }
    let reference = fixture("mco-4.16").reference("oci");
    let injected = Bin::new([
        "inject",
        "--image",
        &reference,
        "--bootimage",
        "4.9",
        "--ign",
        "-",
        "--base",
        "-",
    ])
    .stdin(serde_json::to_vec(&base).unwrap())
    .run();
    assert_eq!(injected.code, Some(0), "{}", injected.describe());
    let verified = Bin::new(["verify", "-"])
        .stdin(injected.stdout.clone())
        .run();
    let text = String::from_utf8_lossy(&verified.stdout);
    assert_eq!(verified.code, Some(1), "{text}{}", verified.stderr);
    assert!(
        text.lines().any(
            |l| l.starts_with("FAIL:") && l.contains(&format!("{FIRSTBOOT} {pre} runs podman"))
        ),
        "{text}"
    );
    assert!(!text.contains("no other command of"), "{text}");
}
