//! The selection matrix: for every MCO fixture and the bootimages 4.1, 4.2, 4.5, 4.8,
//! 4.12, 4.14, 4.16 and every row from 4.20 on (RHEL 9.6, 9.8 and, from 5.0, RHEL 10),
//! `inject` either delivers the expected build or refuses cleanly (exit 1, every
//! candidate listed with its reasons, no output file). The same table is in
//! docs/inject.md.

use std::fs;

use crate::harness::{dir_entries, fixture, inject, mcd_inject};
use serde_json::Value;

const BOOTIMAGES: [&str; 14] = [
    "4.1", "4.2", "4.5", "4.8", "4.12", "4.14", "4.16", "4.20", "4.21", "4.22", "4.23", "5.0",
    "5.1", "5.2",
];
/// The RHEL 8 bootimages of [`BOOTIMAGES`]; the others are RHEL 9 (4.13-4.23) or 10.
const RHEL8_BOOTIMAGES: [&str; 5] = ["4.1", "4.2", "4.5", "4.8", "4.12"];
const MCD: &str = "/usr/bin/machine-config-daemon";
const RHEL8: &str = "/usr/bin/machine-config-daemon.rhel8";
const RHEL9: &str = "/usr/bin/machine-config-daemon.rhel9";

/// The expected build of a fixture for a bootimage; `None` is a refusal. The RHEL 9
/// builds fit RHEL 10 (glibc 2.39, the same libcrypto.so.3), so RHEL 9 and RHEL 10
/// bootimages get the same build.
fn expected(fixture: &str, bootimage: &str) -> Option<&'static str> {
    let old = RHEL8_BOOTIMAGES.contains(&bootimage);
    match (fixture, old) {
        ("mco-4.6" | "mco-multiarch", _) => Some(MCD),
        ("mco-4.14", true) => Some(MCD),
        ("mco-4.14", false) => Some(RHEL9),
        ("mco-4.16" | "mco-small", true) => Some(RHEL8),
        ("mco-4.16" | "mco-small", false) => Some(MCD),
        ("mco-4.18", true) => None,
        ("mco-4.18", false) => Some(MCD),
        (other, _) => panic!("no expectation for {other}"),
    }
}

const FIXTURES: [&str; 6] = [
    "mco-4.6",
    "mco-4.14",
    "mco-4.16",
    "mco-4.18",
    "mco-multiarch",
    "mco-small",
];

fn provenance(ign: &[u8]) -> Value {
    let cfg: Value = serde_json::from_slice(ign).unwrap();
    let f = cfg["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/var/lib/mcd-inject/provenance.json")
        .expect("provenance file");
    let bytes =
        mcd_inject::ignition::decode_data_url(f["contents"]["source"].as_str().unwrap()).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn selection_matrix() {
    let mut failures = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    for name in FIXTURES {
        let fx = fixture(name);
        for transport in fx.transports.keys() {
            let reference = fx.reference(transport);
            for boot in BOOTIMAGES {
                let out = dir.path().join("out.ign");
                let run = inject(&reference, boot, &out, &[]);
                match expected(name, boot) {
                    Some(path) => {
                        if run.code != Some(0) {
                            failures.push(format!("{name} {transport} {boot}: {}", run.describe()));
                            continue;
                        }
                        let p = provenance(&fs::read(&out).unwrap());
                        if p["binary_path"] != path {
                            failures.push(format!(
                                "{name} {transport} {boot}: chose {}, expected {path}",
                                p["binary_path"]
                            ));
                        }
                        let rhel = match boot {
                            b if RHEL8_BOOTIMAGES.contains(&b) => 8,
                            b if b.starts_with("5.") => 10,
                            _ => 9,
                        };
                        if p["target"]["rhel"] != rhel {
                            failures.push(format!(
                                "{name} {transport} {boot}: target RHEL {}, expected {rhel}",
                                p["target"]["rhel"]
                            ));
                        }
                        fs::remove_file(&out).unwrap();
                    }
                    None => {
                        let ok = run.code == Some(1)
                            && run
                                .stderr
                                .starts_with("error: no machine-config-daemon build fits")
                            && run.stderr.contains(&format!("{MCD}: needs GLIBC_2.34"))
                            && dir_entries(dir.path()).is_empty();
                        if !ok {
                            failures.push(format!(
                                "{name} {transport} {boot}: expected a clean refusal, got {}; left {:?}",
                                run.describe(),
                                dir_entries(dir.path())
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refusal_lists_every_candidate() {
    let dir = tempfile::tempdir().unwrap();
    // Pretend a RHEL 7 node: no build of mco-4.16 fits it.
    let run = inject(
        &fixture("mco-4.16").reference("oci"),
        "4.8",
        &dir.path().join("x.ign"),
        &["--target-rhel", "7"],
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    for needle in [
        "error: no machine-config-daemon build fits bootimage 4.8 (amd64, RHEL 7",
        &format!("\n  {MCD}: needs GLIBC_2.34, RHEL 7 has glibc 2.17"),
        &format!("\n  {RHEL8}: needs GLIBC_2.28, RHEL 7 has glibc 2.17"),
        "libcrypto.so.10",
    ] {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert!(dir_entries(dir.path()).is_empty());
}

/// `--binary-path MCD --force` in remote mode (payload at `payload`), then `extra`.
fn forced_args<'a>(payload: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "--binary-path",
        MCD,
        "--force",
        "--payload-url",
        "http://127.0.0.1:1/p.gz",
        "--payload-out",
        payload,
    ];
    a.extend_from_slice(extra);
    a
}

#[test]
fn binary_path_is_checked_and_force_warns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ign");
    let reference = fixture("mco-4.16").reference("oci");
    // Remote mode: the inline config would be over 16 KB, which warns too.
    let served = tempfile::tempdir().unwrap();
    let payload = served.path().join("p.gz").display().to_string();
    let run = inject(&reference, "4.2", &out, &["--binary-path", MCD]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains("does not fit bootimage 4.2"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert!(!out.exists());

    let run = inject(&reference, "4.2", &out, &forced_args(&payload, &[]));
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // The warning is printed once, in the one form.
    assert_eq!(
        run.stderr.matches("warning: --force: delivering").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("warning").count(), 1, "{}", run.stderr);
    assert!(!run.stderr.contains("WARNING"), "{}", run.stderr);
    assert!(run.stderr.contains("does NOT fit"), "{}", run.stderr);
    assert_eq!(provenance(&fs::read(&out).unwrap())["binary_path"], MCD);
    let delivered = fs::read(&out).unwrap();

    // --json carries it, typed.
    let run = inject(&reference, "4.2", &out, &forced_args(&payload, &["--json"]));
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let v: Value = serde_json::from_slice(&run.stdout).expect("one JSON object on stdout");
    let warnings = v["warnings"].as_array().expect("warnings array");
    assert_eq!(warnings.len(), 1, "{v:#}");
    assert_eq!(warnings[0]["kind"], "forced-incompatible");
    assert_eq!(warnings[0]["binary"], MCD);
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.contains("does NOT fit bootimage 4.2"), "{message}");
    assert!(
        run.stderr.contains(&format!("warning: {message}")),
        "{}",
        run.stderr
    );

    // --strict fails after printing it, and leaves the output as it was.
    let run = inject(
        &reference,
        "4.2",
        &out,
        &forced_args(&payload, &["--strict"]),
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert_eq!(
        run.stderr.matches("warning: --force: delivering").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("error: --strict: 1 warning"),
        "{}",
        run.stderr
    );
    assert!(
        fs::read(&out).unwrap() == delivered,
        "--strict touched the output"
    );
    let fresh = dir.path().join("strict.ign");
    let run = inject(
        &reference,
        "4.2",
        &fresh,
        &forced_args(&payload, &["--strict", "--json"]),
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(run.stdout.is_empty(), "{}", run.describe());
    assert_eq!(dir_entries(dir.path()), ["x.ign"]);

    // A compatible override is delivered without a warning, --strict or not.
    let run = inject(
        &reference,
        "4.2",
        &out,
        &["--binary-path", RHEL8, "--strict", "--cluster-rhel", "8"],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);

    // The path is normalised, and links are followed inside the image.
    for alias in [
        "/usr/bin/./machine-config-daemon.rhel8",
        "/bin/machine-config-daemon.rhel8",
    ] {
        let run = inject(&reference, "4.2", &out, &["--binary-path", alias]);
        assert_eq!(run.code, Some(0), "{alias}: {}", run.describe());
    }

    let run = inject(&reference, "4.2", &out, &["--binary-path", "/usr/bin/nope"]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
}

#[test]
fn architecture_follows_the_platform() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ign");
    let reference = fixture("mco-multiarch").reference("oci");
    let run = inject(&reference, "4.2", &out, &["--platform", "linux/arm64/v8"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let p = provenance(&fs::read(&out).unwrap());
    assert_eq!(p["platform"], "linux/arm64/v8");
    assert_eq!(p["binary_path"], MCD);
}

#[test]
fn output_is_byte_identical_across_runs_and_transports() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["mco-4.16", "mco-4.6"] {
        for boot in ["4.2", "4.16"] {
            let fx = fixture(name);
            let reference = fx.reference("oci");
            let a = dir.path().join("a.ign");
            let b = dir.path().join("b.ign");
            let r1 = inject(&reference, boot, &a, &[]);
            let r2 = inject(&reference, boot, &b, &[]);
            assert_eq!(r1.code, Some(0), "{}", r1.describe());
            assert_eq!(r2.code, Some(0), "{}", r2.describe());
            let (a, b) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
            assert!(a == b, "{name} {boot}: two runs differ");
        }
    }
}

#[test]
fn inspect_shows_elf_facts_and_verdicts() {
    let run = mcd_inject([
        "inspect",
        "--image",
        &fixture("mco-4.14").reference("oci"),
        "--json",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    // A RHEL 8.6 image with a .rhel9 twin: its nodes run RHEL 9.
    assert_eq!(v["cluster_os"]["rhel"], 9, "{}", v["cluster_os"]);
    assert!(v["cluster_os"]["source"].is_string(), "{}", v["cluster_os"]);
    let bins = v["binaries"].as_array().unwrap();
    let rhel9 = bins.iter().find(|b| b["path"] == RHEL9).unwrap();
    assert_eq!(rhel9["elf"]["max_glibc"], "2.34");
    assert_eq!(rhel9["elf"]["needed"][0], "libc.so.6");
    let verdict = |b: &Value, boot: &str| {
        b["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["bootimage"] == boot)
            .unwrap()["compatible"]
            .as_bool()
            .unwrap()
    };
    assert!(!verdict(rhel9, "4.2"));
    assert!(verdict(rhel9, "4.16"));
    assert!(verdict(rhel9, "5.0"));
    // A verdict for every row of the table, in its order.
    let rows: Vec<String> = mcd_inject::choose::target::BOOTIMAGES
        .iter()
        .map(|b| b.id.to_string())
        .collect();
    assert_eq!(rows.first().map(String::as_str), Some("4.1"));
    assert!(rows.iter().any(|r| r == "5.2") && rows.iter().any(|r| r == "fcos-33"));
    assert_eq!(rows.last().map(String::as_str), Some("scos-10"));
    for b in bins {
        let shown: Vec<&str> = b["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["bootimage"].as_str().unwrap())
            .collect();
        assert_eq!(shown, rows, "{}", b["path"]);
    }
    let run = mcd_inject(["inspect", "--image", &fixture("mco-4.14").reference("oci")]);
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(text.contains("4.1-4.12: fits"), "{text}");
    assert!(
        text.contains("4.13-4.23: does not fit: links libcrypto.so.1.1, RHEL 9 has libcrypto.so.3"),
        "{text}"
    );
    assert!(
        text.contains("5.0-5.2: does not fit: links libcrypto.so.1.1, RHEL 10 has libcrypto.so.3"),
        "{text}"
    );
    assert!(
        text.contains("5.0-5.2: fits: needs GLIBC_2.34 <= 2.39 (RHEL 10)"),
        "{text}"
    );
}

#[test]
fn target_os_release_is_read_like_mco() {
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-small").reference("oci");
    // (os-release of the bootimage, expected build, expected bootimage, expected RHEL)
    let cases = [
        (
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nVERSION=\"42.80.20191010.0\"\nVERSION_ID=\"42.80\"\n",
            RHEL8,
            "4.2",
            8,
        ),
        (
            "ID=\"rhcos\"\nVERSION_ID=\"4.18\"\nOPENSHIFT_VERSION=\"4.18\"\nRHEL_VERSION=9.4\n",
            MCD,
            "4.18",
            9,
        ),
        (
            "ID=\"rhel\"\nVERSION_ID=\"9.6\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.19\"\n",
            MCD,
            "4.19",
            9,
        ),
        (
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nVERSION_ID=\"9.8\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.22\"\n",
            MCD,
            "4.22",
            9,
        ),
        // 4.22's other bootimage (install-config osImageStream: rhel-10).
        (
            "ID=\"rhel\"\nVERSION_ID=\"10.2\"\nVARIANT=\"CoreOS\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"4.22\"\n",
            MCD,
            "4.22",
            10,
        ),
        (
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nID_LIKE=\"centos fedora\"\nVERSION_ID=\"10.2\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.0\"\n",
            MCD,
            "5.0",
            10,
        ),
    ];
    let inject_for = |os: &std::path::Path, out: &std::path::Path| {
        mcd_inject([
            "inject",
            "--image",
            &reference,
            "--target-os-release",
            os.to_str().unwrap(),
            "--ign",
            out.to_str().unwrap(),
        ])
    };
    for (text, build, bootimage, rhel) in cases {
        let os = dir.path().join("os-release");
        fs::write(&os, text).unwrap();
        let out = dir.path().join("out.ign");
        let run = inject_for(&os, &out);
        assert_eq!(run.code, Some(0), "{text}: {}", run.describe());
        let p = provenance(&fs::read(&out).unwrap());
        assert_eq!(p["binary_path"], build, "{text}");
        assert_eq!(p["target"]["bootimage"], bootimage, "{text}");
        assert_eq!(p["target"]["rhel"], rhel, "{text}");
    }
    // Without an OpenShift version in it, --bootimage is needed, and nothing is written.
    let os = dir.path().join("os-release");
    fs::write(&os, "ID=\"rhel\"\nVERSION_ID=\"9.6\"\n").unwrap();
    let out = dir.path().join("none.ign");
    let run = inject_for(&os, &out);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains("pass --bootimage"),
        "{}",
        run.describe()
    );
    assert!(!out.exists());
}

/// A release newer than the table: refused, naming the newest known release and the way
/// through (a usage error when the flags alone say so; exit 1 when the os-release file
/// named leaves it short); with the RHEL (flag or os-release) and `--spec`, delivered.
#[test]
fn releases_past_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let reference = fixture("mco-small").reference("oci");
    let out = dir.path().join("out.ign");
    let refused = |run: &crate::harness::Run, code: i32| {
        run.code == Some(code)
            && run.stderr.contains("unknown bootimage 5.3")
            && run
                .stderr
                .contains("5.2 is the newest release the table knows")
            && run.stderr.contains("--target-os-release")
            && run.stderr.contains("--target-rhel")
            && run.stderr.contains("--spec")
    };
    for extra in [&[][..], &["--spec", "3.5"], &["--target-rhel", "10"]] {
        let run = inject(&reference, "5.3", &out, extra);
        assert!(refused(&run, 2), "{extra:?}: {}", run.describe());
        assert!(dir_entries(dir.path()).is_empty(), "{extra:?}");
    }
    let run = inject(
        &reference,
        "5.3",
        &out,
        &["--target-rhel", "10", "--spec", "3.6"],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let cfg: Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    assert_eq!(cfg["ignition"]["version"], "3.6.0");
    let p = provenance(&fs::read(&out).unwrap());
    assert_eq!(p["binary_path"], MCD);
    assert_eq!(p["target"]["bootimage"], "5.3");
    assert_eq!(p["target"]["rhel"], 10);
    fs::remove_file(&out).unwrap();

    // The same through its os-release.
    let os = dir.path().join("os-release");
    fs::write(
        &os,
        "ID=\"rhel\"\nVERSION_ID=\"10.4\"\nVARIANT_ID=coreos\nOPENSHIFT_VERSION=\"5.3\"\n",
    )
    .unwrap();
    let with_os = |extra: &[&str]| {
        let mut args = vec![
            "inject",
            "--image",
            &reference,
            "--target-os-release",
            os.to_str().unwrap(),
            "--ign",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        mcd_inject(args)
    };
    let run = with_os(&[]);
    assert!(refused(&run, 1), "{}", run.describe());
    assert!(!out.exists());
    let run = with_os(&["--spec", "3.5"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let p = provenance(&fs::read(&out).unwrap());
    assert_eq!(p["target"]["bootimage"], "5.3");
    assert_eq!(p["target"]["rhel"], 10);
    assert_eq!(p["target"]["spec"], "3.5.0");

    // verify reads the off-table target back from the provenance.
    let run = mcd_inject(["verify", out.to_str().unwrap(), "--image", &reference]);
    assert_eq!(run.code, Some(0), "{}", run.describe());

    // Nothing older than the table has a way through (refused as the arguments are
    // parsed); a spec 2.x cannot be read after 4.5 (the flags cannot be used together).
    let run = inject(
        &reference,
        "4.0",
        &out,
        &["--target-rhel", "8", "--spec", "3.2"],
    );
    assert_eq!(run.code, Some(2), "a usage error: {}", run.describe());
    assert!(
        run.stderr.contains("the table starts at 4.1"),
        "{}",
        run.stderr
    );
    let run = inject(
        &reference,
        "5.3",
        &out,
        &["--target-rhel", "10", "--spec", "2.2"],
    );
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(run.stderr.contains("reads spec 3.x only"), "{}", run.stderr);
}

/// The other bootimage of a release: RHEL 10 for 4.22 (osImageStream rhel-10), RHEL 9
/// for 5.0 (osImageStream rhel-9), and the matching build of each fixture.
#[test]
fn other_rhel_stream_of_a_release() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.ign");
    for (name, boot, rhel, want) in [
        ("mco-4.14", "4.22", "10", RHEL9),
        ("mco-4.14", "5.0", "9", RHEL9),
        ("mco-4.16", "4.22", "10", MCD),
        ("mco-4.16", "5.0", "9", MCD),
        ("mco-4.18", "5.1", "9", MCD),
    ] {
        let run = inject(
            &fixture(name).reference("oci"),
            boot,
            &out,
            &["--target-rhel", rhel],
        );
        assert_eq!(run.code, Some(0), "{name} {boot}: {}", run.describe());
        let p = provenance(&fs::read(&out).unwrap());
        assert_eq!(p["binary_path"], want, "{name} {boot} RHEL {rhel}");
        assert_eq!(p["target"]["rhel"].to_string(), rhel);
    }
}
