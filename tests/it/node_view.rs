//! `verify` and `inject --base` read a config as the node will: files and links that
//! `storage` writes under the unit directories, `tmpfiles.d` lines and the links RHCOS
//! has reach our units and paths as surely as `systemd.units` does. Each such entry is
//! refused by `verify` (named by its index and path) and by `inject --base`, which
//! removes it under `--force` with a warning; for spec 3.2 and 2.2 outputs.

use std::fs;

use serde_json::{json, Value};

use crate::harness::{fixture, mcd_inject, Bin};

/// An entry a config could carry, and the path `verify` names it by.
struct Case {
    what: &'static str,
    /// `files`, `links` (in `storage`) or `units` (in `systemd`).
    section: &'static str,
    entry: Value,
}

fn file(path: &str, text: &str) -> Value {
    json!({"path": path, "mode": 0o644,
           "contents": {"source": mcd_inject::ignition::data_url(text.as_bytes())}})
}

fn cases() -> Vec<Case> {
    let link = |path: &str, target: &str| json!({"path": path, "target": target});
    vec![
        Case {
            what: "a file drop-in on the install unit resetting ExecStart",
            section: "files",
            entry: file(
                "/etc/systemd/system/mco-mcd-install.service.d/50-x.conf",
                "[Service]\nExecStart=\nExecStart=/bin/true\n",
            ),
        },
        Case {
            what: "a file drop-in on the firstboot unit after ours putting podman back",
            section: "files",
            entry: file(
                "/etc/systemd/system/machine-config-daemon-firstboot.service.d/99-zz.conf",
                "[Service]\nExecStart=\nExecStart=/usr/bin/podman run --rm mco firstboot-complete-machineconfig\n",
            ),
        },
        Case {
            what: "a file drop-in on the pull unit clearing our condition",
            section: "files",
            entry: file(
                "/etc/systemd/system/machine-config-daemon-pull.service.d/99-zz.conf",
                "[Unit]\nConditionPathExists=\n",
            ),
        },
        Case {
            what: "the install unit replaced by a file of its path",
            section: "files",
            entry: file(
                "/etc/systemd/system/mco-mcd-install.service",
                "[Service]\nType=oneshot\nExecStart=/bin/true\n",
            ),
        },
        Case {
            what: "the install unit masked by a link",
            section: "links",
            entry: link("/etc/systemd/system/mco-mcd-install.service", "/dev/null"),
        },
        Case {
            what: "the firstboot unit masked by a link",
            section: "links",
            entry: link(
                "/etc/systemd/system/machine-config-daemon-firstboot.service",
                "/dev/null",
            ),
        },
        Case {
            what: "a tmpfiles.d line replacing the installed binary",
            section: "files",
            entry: file(
                "/etc/tmpfiles.d/zz-x.conf",
                "L+ /run/bin/machine-config-daemon - - - - /usr/bin/true\n",
            ),
        },
        Case {
            what: "a preset file that leaves the install unit disabled",
            section: "files",
            entry: file(
                "/etc/systemd/system-preset/10-x.preset",
                "disable mco-mcd-install.service\n",
            ),
        },
        Case {
            what: "the install unit's drop-in directory replaced by a link",
            section: "links",
            entry: link(
                "/etc/systemd/system/mco-mcd-install.service.d",
                "/etc/elsewhere",
            ),
        },
        Case {
            what: "a mount unit over /run/bin",
            section: "units",
            entry: json!({"name": "run-bin.mount", "enabled": true,
                "contents": "[Mount]\nWhat=tmpfs\nWhere=/run/bin\nType=tmpfs\n\n[Install]\nWantedBy=local-fs.target\n"}),
        },
        Case {
            what: "a file where our /usr/local/bin link lands",
            section: "files",
            entry: file("/var/usrlocal/bin/machine-config-daemon", "#!/bin/sh\n"),
        },
    ]
}

/// The entry as spec `version` writes it (spec 2.x nodes name their filesystem).
fn for_spec(entry: &Value, version: &str) -> Value {
    let mut e = entry.clone();
    if version.starts_with("2.") && e.get("path").is_some() {
        e["filesystem"] = "root".into();
    }
    e
}

/// The top-level key an array lives under.
fn top(section: &str) -> &'static str {
    if section == "units" {
        "systemd"
    } else {
        "storage"
    }
}

/// How `verify` and `inject` name an entry: its path, or a unit's name.
fn id(entry: &Value) -> &str {
    entry["path"].as_str().or(entry["name"].as_str()).unwrap()
}

fn push(cfg: &mut Value, section: &str, entry: Value) -> usize {
    let list = cfg[top(section)][section].as_array_mut();
    match list {
        Some(l) => {
            l.push(entry);
            l.len() - 1
        }
        None => {
            cfg[top(section)][section] = json!([entry]);
            0
        }
    }
}

fn inject(boot: &str, base: Option<&Value>, extra: &[&str]) -> crate::harness::Run {
    let reference = fixture("mco-4.16").reference("oci");
    let mut args = vec![
        "inject",
        "--image",
        &reference,
        "--bootimage",
        boot,
        "--ign",
        "-",
    ];
    if base.is_some() {
        args.extend(["--base", "-"]);
    }
    args.extend(extra);
    let stdin = base
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    Bin::new(&args)
        .current_dir(std::env::temp_dir())
        .stdin(stdin)
        .run()
}

fn verify(cfg: &Value) -> crate::harness::Run {
    Bin::new(["verify", "-"])
        .current_dir(std::env::temp_dir())
        .stdin(serde_json::to_vec(cfg).unwrap())
        .run()
}

/// Our own outputs pass; each with one case added fails, on a FAIL line naming the
/// entry by its index and path.
#[test]
fn verify_refuses_storage_entries_that_reach_our_units_and_paths() {
    for boot in ["4.2", "4.8"] {
        let out = inject(boot, None, &[]);
        assert_eq!(out.code, Some(0), "{}", out.describe());
        let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
        let version = cfg["ignition"]["version"].as_str().unwrap().to_string();
        let ok = verify(&cfg);
        assert_eq!(ok.code, Some(0), "{boot}: {}", ok.describe());
        for case in cases() {
            let mut bad = cfg.clone();
            let i = push(&mut bad, case.section, for_spec(&case.entry, &version));
            let path = id(&case.entry);
            let r = verify(&bad);
            let text = String::from_utf8_lossy(&r.stdout);
            assert_eq!(
                r.code,
                Some(1),
                "{boot}, {}: verify passed\n{text}",
                case.what
            );
            let named = format!("{}.{}[{i}] {path}: ", top(case.section), case.section);
            assert!(
                text.lines()
                    .any(|l| l.starts_with("FAIL:") && l.contains(&named)),
                "{boot}, {}: no FAIL line naming {named:?}\n{text}",
                case.what
            );
        }
    }
}

/// A base with one case is refused, naming the entry; with `--force` the entry is
/// removed with a warning and the output verifies.
#[test]
fn inject_base_refuses_them_and_removes_them_under_force() {
    for (boot, version) in [("4.2", "2.2.0"), ("4.8", "3.2.0")] {
        for case in cases() {
            let mut base = json!({"ignition": {"version": version}, "storage": {}, "systemd": {}});
            push(&mut base, case.section, for_spec(&case.entry, version));
            let path = id(&case.entry);
            let out = inject(boot, Some(&base), &[]);
            assert_eq!(
                out.code,
                Some(1),
                "{boot}, {}: {}",
                case.what,
                out.describe()
            );
            assert!(out.stdout.is_empty(), "{boot}, {}", case.what);
            assert!(
                out.stderr.contains(&format!(
                    "{}.{}[0] {path}: ",
                    top(case.section),
                    case.section
                )) && out.stderr.contains("--force"),
                "{boot}, {}: {}",
                case.what,
                out.stderr
            );
            let out = inject(boot, Some(&base), &["--force"]);
            assert_eq!(
                out.code,
                Some(0),
                "{boot}, {}: {}",
                case.what,
                out.describe()
            );
            assert!(
                out.stderr.contains(&format!(
                    "removed {}.{}[0] {path}",
                    top(case.section),
                    case.section
                )) && out.stderr.contains("(--force)"),
                "{boot}, {}: {}",
                case.what,
                out.stderr
            );
            let cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                !serde_json::to_string(&cfg[top(case.section)])
                    .unwrap()
                    .contains(&format!("\"{path}\"")),
                "{boot}, {}: still in the output",
                case.what
            );
            let r = verify(&cfg);
            assert_eq!(r.code, Some(0), "{boot}, {}: {}", case.what, r.describe());
        }
    }
}

/// Files under the unit directories that do not touch ours, `tmpfiles.d` lines that
/// only make directories, and `.wants/` links pass.
#[test]
fn other_storage_entries_pass() {
    let out = inject("4.8", None, &[]);
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let mut cfg: Value = serde_json::from_slice(&out.stdout).unwrap();
    push(
        &mut cfg,
        "files",
        file(
            "/etc/systemd/system/kubelet.service.d/10-x.conf",
            "[Service]\nEnvironment=A=1\n",
        ),
    );
    push(
        &mut cfg,
        "files",
        file("/etc/tmpfiles.d/ok.conf", "d /run/bin 0755 root root -\n"),
    );
    // Files systemd never reads as drop-ins, in our units' drop-in directories: only
    // `*.conf` files directly there are drop-ins.
    let d = "/etc/systemd/system/machine-config-daemon-firstboot.service.d";
    for name in ["zz.conf.bak", "README", "old/99-x.conf"] {
        push(
            &mut cfg,
            "files",
            file(
                &format!("{d}/{name}"),
                "[Service]\nExecStart=\nExecStart=/bin/podman\n",
            ),
        );
    }
    push(
        &mut cfg,
        "links",
        json!({"path": "/etc/systemd/system/multi-user.target.wants/kubelet.service",
               "target": "/etc/systemd/system/kubelet.service"}),
    );
    let r = verify(&cfg);
    assert_eq!(r.code, Some(0), "{}", r.describe());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.ign");
    fs::write(&p, serde_json::to_vec(&cfg).unwrap()).unwrap();
    let r = mcd_inject(["verify", p.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.describe());
}
