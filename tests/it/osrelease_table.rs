//! One table of real os-release files (`tests/data/os-release/TABLE`) holds every reader
//! of os-release to one answer: the Rust reader (`mcd_inject::choose::osrelease`,
//! `target::from_os_release`) and the two node scripts, as a config carries them, run
//! over each file the way a node runs them. Each must give the table's answer.
//!
//! - The install script (`mco-mcd-install.sh`) runs on a scratch root whose
//!   `etc/os-release` is the file and which holds the bootimage's build and a second one
//!   for RHEL 8, 9 and 10 in turn: it must install the second build exactly when the file
//!   names that RHEL, and say which RHEL it read.
//! - The NIC script (`mco-persist-nics.sh`) runs on a root whose firstboot unit asks for
//!   the pass: it must take the host for EL8 as MCO's `IsEL8` does, name the version MCO
//!   forms, and act only on EL8.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use mcd_inject::choose::osrelease::OsRelease;
use mcd_inject::choose::target::{from_os_release, BootimageId};

use crate::harness::{crate_root, gzip, sha256_hex, small_config_file};
use crate::persist_nics::{self, STAMP, UNIT, UNIT_4_22};

/// A row of the table: a file and what it must yield.
#[derive(Clone, Debug)]
struct Row {
    file: String,
    rhel: Option<u32>,
    bootimage: Option<BootimageId>,
    el8: bool,
}

fn table_dir() -> PathBuf {
    crate_root().join("tests/data/os-release")
}

fn table() -> Vec<Row> {
    let text = fs::read_to_string(table_dir().join("TABLE")).unwrap();
    let dash = |v: &str| (v != "-").then(|| v.to_string());
    let rows: Vec<Row> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [file, rhel, bootimage, el8] => Row {
                file: file.into(),
                rhel: dash(rhel).map(|r| r.parse().unwrap()),
                bootimage: dash(bootimage).map(|b| b.parse().unwrap()),
                el8: match el8 {
                    "yes" => true,
                    "no" => false,
                    other => panic!("TABLE: el8 is yes or no, not {other:?}"),
                },
            },
            _ => panic!("TABLE: a row is `file rhel bootimage el8`: {l:?}"),
        })
        .collect();
    let mut files: Vec<String> = fs::read_dir(table_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "TABLE")
        .collect();
    files.sort();
    let mut listed: Vec<String> = rows.iter().map(|r| r.file.clone()).collect();
    listed.sort();
    assert_eq!(files, listed, "every file has one row, every row a file");
    rows
}

fn os_release(row: &Row) -> Vec<u8> {
    fs::read(table_dir().join(&row.file)).unwrap()
}

/// The install script as a config carries it, delivering `first` for the bootimage and,
/// when given, `other` for hosts of RHEL `N`: the three lines `inject` fills in, set to
/// these builds' values.
fn install_script(first: &[u8], other: Option<(u32, &[u8])>) -> String {
    let (bytes, mode) = small_config_file("/var/lib/mcd-inject/mco-mcd-install.sh");
    assert_eq!(mode, 0o755);
    let script = String::from_utf8(bytes).unwrap();
    let values = [
        ("expected_sha256=", sha256_hex(first)),
        (
            "other_rhel=",
            other.map_or(String::new(), |(n, _)| n.to_string()),
        ),
        (
            "other_sha256=",
            other.map_or(String::new(), |(_, b)| sha256_hex(b)),
        ),
    ];
    for (key, _) in &values {
        let n = script.lines().filter(|l| l.starts_with(key)).count();
        assert_eq!(n, 1, "the install script has {n} lines {key}...");
    }
    let mut out: String = script
        .lines()
        .map(|l| match values.iter().find(|(k, _)| l.starts_with(k)) {
            Some((k, v)) => format!("{k}{v}"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    out
}

/// What the install script did on a host with this os-release, the config carrying a
/// second build for RHEL `other`: the RHEL it said it read, and whether it installed the
/// second build.
fn run_install_script(os_release: &[u8], other: u32) -> (Option<u32>, bool) {
    let first = b"#!/bin/sh\n# the bootimage's build\n".to_vec();
    let second = format!("#!/bin/sh\n# the build for RHEL {other}\n").into_bytes();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let lib = root.join("var/lib/mcd-inject");
    fs::create_dir_all(&lib).unwrap();
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::create_dir_all(root.join("usr/bin")).unwrap();
    // What the script copies SELinux labels from.
    fs::write(root.join("usr/bin/true"), b"").unwrap();
    fs::write(root.join("etc/os-release"), os_release).unwrap();
    fs::write(lib.join("machine-config-daemon.gz"), gzip(&first)).unwrap();
    fs::write(
        lib.join(format!("machine-config-daemon.rhel{other}.gz")),
        gzip(&second),
    )
    .unwrap();
    let script = dir.path().join("mco-mcd-install.sh");
    fs::write(&script, install_script(&first, Some((other, &second)))).unwrap();
    let out = Command::new("bash")
        .arg(&script)
        .env("MCD_INJECT_ROOT", &root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "install script: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let said = stdout
        .lines()
        .find_map(|l| l.strip_prefix("mco-mcd-install: host RHEL from os-release: "))
        .map(|n| (n != "none").then(|| n.parse::<u32>().unwrap()))
        .unwrap_or_else(|| panic!("the install script says no host RHEL:\n{stdout}"));
    let installed = fs::read(root.join("run/bin/machine-config-daemon")).unwrap();
    assert!(installed == first || installed == second, "{stdout}");
    (said, installed == second)
}

/// Where the install script parts from the row, over a second build for RHEL 8, 9 and 10.
fn install_disagreements(row: &Row) -> Vec<String> {
    let text = os_release(row);
    let mut wrong = Vec::new();
    for other in [8, 9, 10] {
        let (said, took_other) = run_install_script(&text, other);
        let read = format!("install script read RHEL {said:?}, TABLE {:?}", row.rhel);
        if said != row.rhel && !wrong.contains(&read) {
            wrong.push(read);
        }
        if took_other != (row.rhel == Some(other)) {
            wrong.push(format!(
                "install script {} the .rhel{other} build",
                if took_other {
                    "installed"
                } else {
                    "passed over"
                }
            ));
        }
    }
    wrong
}

/// What the NIC script did on a host with this os-release, its firstboot unit asking for
/// the pass: whether it took the host for EL8, the `ID VERSION` it named, and whether it
/// acted (wrote the stamp) or said why not.
fn run_nic_script(os_release: &[u8]) -> (bool, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("etc/systemd/system")).unwrap();
    fs::write(root.join(UNIT), UNIT_4_22).unwrap();
    fs::write(root.join("etc/os-release"), os_release).unwrap();
    // rpm-ostree, which the script runs when the host's kernel command line has
    // initrd networking: a stand-in that does nothing.
    let stub = dir.path().join("stub");
    fs::create_dir(&stub).unwrap();
    fs::write(stub.join("rpm-ostree"), "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(stub.join("rpm-ostree"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("bash")
        .arg(persist_nics::script())
        .env("MCD_INJECT_ROOT", &root)
        .env(
            "PATH",
            format!("{}:{}", stub.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "NIC script: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let (el8, named) = stdout
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("mco-persist-nics: host ")?;
            if let Some(named) = rest.strip_suffix(" is not EL8; nothing to do") {
                return Some((false, named.to_string()));
            }
            let named = rest.strip_suffix(" is EL8")?;
            Some((true, named.to_string()))
        })
        .unwrap_or_else(|| panic!("the NIC script says nothing of EL8:\n{stdout}"));
    // On EL8 it persists, unless the kernel names the NICs (the host's command line).
    let acted = root.join(STAMP).exists() || stdout.contains("net.ifnames=0 is set");
    let touched = root.join("etc/systemd/network").exists();
    (el8, named, if el8 { acted } else { !touched })
}

/// Where the NIC script parts from the row and from the Rust reader's version.
fn nic_disagreements(row: &Row) -> Vec<String> {
    let text = os_release(row);
    let os = OsRelease::parse(&String::from_utf8(text.clone()).unwrap());
    let (el8, named, acted_as_said) = run_nic_script(&text);
    let mut wrong = Vec::new();
    if el8 != row.el8 {
        wrong.push(format!("NIC script EL8 {el8}, TABLE {}", row.el8));
    }
    let rust = format!(
        "{} {}",
        os.id.as_deref().unwrap_or(""),
        os.mco_version().unwrap_or_default()
    );
    if named != rust {
        wrong.push(format!(
            "NIC script read ID VERSION {named:?}, the Rust reader {rust:?}"
        ));
    }
    if !acted_as_said {
        wrong.push(format!(
            "NIC script {}",
            if el8 {
                "took the host for EL8 but did not persist"
            } else {
                "took the host for not EL8 but wrote under etc/systemd/network"
            }
        ));
    }
    wrong
}

/// Where the Rust reader parts from the row.
fn rust_disagreements(row: &Row) -> Vec<String> {
    let os = OsRelease::parse(&String::from_utf8(os_release(row)).unwrap());
    let (bootimage, target_rhel) = from_os_release(&os);
    let mut wrong = Vec::new();
    for (what, got) in [
        ("rhel_major", os.rhel_major()),
        ("image_rhel", mcd_inject::choose::rules::image_rhel(&os)),
        ("from_os_release's RHEL", target_rhel),
    ] {
        if got != row.rhel {
            wrong.push(format!("{what} {got:?}, TABLE {:?}", row.rhel));
        }
    }
    if bootimage != row.bootimage {
        wrong.push(format!(
            "bootimage {bootimage:?}, TABLE {:?}",
            row.bootimage
        ));
    }
    if os.is_el8() != row.el8 {
        wrong.push(format!("is_el8 {}, TABLE {}", os.is_el8(), row.el8));
    }
    wrong
}

fn check_all(rows: &[Row], check: fn(&Row) -> Vec<String>) {
    let wrong: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            check(r)
                .into_iter()
                .map(move |w| format!("{}: {w}", r.file))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_rust_reader_reads_the_table_as_it_says() {
    let rows = table();
    check_all(&rows, rust_disagreements);
    // The table covers what the readers tell apart.
    for (what, covered) in [
        ("no RHEL", rows.iter().any(|r| r.rhel.is_none())),
        (
            "RHEL 8, 9, 10",
            [8, 9, 10]
                .iter()
                .all(|m| rows.iter().any(|r| r.rhel == Some(*m))),
        ),
        (
            "EL8 and not",
            rows.iter().any(|r| r.el8) && rows.iter().any(|r| !r.el8),
        ),
        ("no bootimage", rows.iter().any(|r| r.bootimage.is_none())),
    ] {
        assert!(covered, "the table has no file of {what}");
    }
}

#[test]
fn the_install_script_reads_the_table_as_it_says() {
    check_all(&table(), install_disagreements);
}

#[test]
fn the_nic_script_reads_the_table_as_it_says() {
    check_all(&table(), nic_disagreements);
}

/// The comparisons fail on a wrong expectation: each names what parts.
#[test]
fn a_wrong_row_is_reported_by_every_reader() {
    let rows = table();
    let row = |name: &str| rows.iter().find(|r| r.file == name).unwrap().clone();
    let scos = row("scos-4.12");
    assert!(rust_disagreements(&scos).is_empty());
    // VERSION_ID's major, which the readers took for CentOS Stream CoreOS before.
    let wrong = Row {
        rhel: Some(4),
        bootimage: Some(BootimageId::Scos(4)),
        ..scos.clone()
    };
    assert_eq!(rust_disagreements(&wrong).len(), 4, "{wrong:?}");
    let install = install_disagreements(&wrong);
    assert_eq!(
        install,
        [
            "install script read RHEL Some(9), TABLE Some(4)",
            "install script installed the .rhel9 build"
        ],
        "{install:?}"
    );
    let not_el8 = Row {
        el8: !scos.el8,
        ..scos
    };
    let nic = nic_disagreements(&not_el8);
    assert_eq!(nic, ["NIC script EL8 false, TABLE true"], "{nic:?}");
}

/// Every row of the table says where its file comes from, in the comment right above it.
#[test]
fn the_table_names_a_source_for_every_file() {
    let text = fs::read_to_string(table_dir().join("TABLE")).unwrap();
    let mut comment = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(c) = line.strip_prefix('#') {
            comment.push_str(c);
        } else if line.is_empty() {
            comment.clear();
        } else {
            assert!(
                comment.trim_start().starts_with("verbatim: ")
                    || comment.trim_start().starts_with("derived: "),
                "TABLE: the row {line:?} has no comment naming its source"
            );
            comment.clear();
        }
    }
}
