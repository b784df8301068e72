//! `mcd-inject extract` checked against umoci on every generated fixture (see
//! `fixtures/README.md`), over every transport it is available in: OCI layout,
//! oci-archive and docker-archive.
//!
//! Each present path must come out byte-identical, with the same permission bits, to
//! both the bytes the generator recorded and the file umoci unpacks (resolved inside
//! umoci's rootfs, symlinks followed without leaving it). Absent, hostile, corrupt and
//! truncated inputs must fail with exit code 1, an `error:` message, and no output file.
//! Each test gathers every failure before panicking, so one run shows them all.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::thread;

use crate::harness::{
    byte_difference, copy_tree, crate_root, dir_entries, fixture, fixture_list, image_reference,
    mcd_inject, resolve_in_root, run_tool, sha256_hex, Bin, Fixture, PresentPath, Run,
};
use tempfile::TempDir;

const DEFAULT_PLATFORM: &str = "linux/amd64";

fn fail_if_any(what: &str, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{what}: {} failure(s):\n- {}",
            failures.len(),
            failures.join("\n- ")
        );
    }
}

/// `extract --image REF --path PATH -o OUT [--platform P]`.
fn extract(reference: &str, path: &str, out: &Path, platform: Option<&str>) -> Run {
    let mut args = vec![
        "extract".to_owned(),
        "--image".to_owned(),
        reference.to_owned(),
        "--path".to_owned(),
        path.to_owned(),
        "-o".to_owned(),
        out.display().to_string(),
    ];
    if let Some(platform) = platform {
        args.extend(["--platform".to_owned(), platform.to_owned()]);
    }
    mcd_inject(args)
}

/// Checks a run that must fail: exit 1, an `error:` message holding each of `needles`,
/// and an output directory left empty. Returns what was wrong.
fn expect_refusal(run: &Run, out_dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let left = dir_entries(out_dir);
    if !left.is_empty() {
        problems.push(format!(
            "output directory not empty after a failure: {left:?}: {}",
            run.describe()
        ));
    }
    if run.code != Some(1) {
        problems.push(format!("expected exit 1: {}", run.describe()));
        return problems;
    }
    if !run.stderr.starts_with("error:") {
        problems.push(format!(
            "stderr does not start with `error:`: {}",
            run.describe()
        ));
    }
    for needle in needles {
        if !run.stderr.contains(needle) {
            problems.push(format!(
                "stderr does not name `{needle}`: {}",
                run.describe()
            ));
        }
    }
    problems
}

// ------------------------------------------------------------------------ umoci

/// Where umoci unpacked each platform of one fixture (`None`: umoci cannot read it).
struct UmociView {
    _scratch: TempDir,
    rootfs: BTreeMap<String, PathBuf>,
}

fn platform_string(platform: &serde_json::Value) -> String {
    let mut parts = vec![
        platform["os"].as_str().unwrap_or_default().to_owned(),
        platform["architecture"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    ];
    if let Some(variant) = platform["variant"].as_str() {
        parts.push(variant.to_owned());
    }
    parts.join("/")
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn blob_path(layout: &Path, digest: &str) -> PathBuf {
    let (algorithm, hex) = digest.split_once(':').expect("digest has an algorithm");
    layout.join("blobs").join(algorithm).join(hex)
}

fn umoci_unpack(layout: &Path, tag: &str, rootfs: &Path) {
    run_tool(
        "umoci",
        &[
            "raw".as_ref(),
            "unpack".as_ref(),
            "--rootless".as_ref(),
            "--image".as_ref(),
            format!("{}:{tag}", layout.display()).as_ref(),
            rootfs.as_os_str(),
        ],
    );
}

/// Unpacks a fixture with umoci, once per platform. umoci refuses a tag that leads to
/// an index of several manifests ("tag is ambiguous"), so for a multi-arch fixture it
/// gets a copy of the layout with one tag per platform manifest.
fn umoci_view(fixture: &Fixture) -> Option<UmociView> {
    if !fixture.umoci {
        return None;
    }
    let scratch = TempDir::new().unwrap();
    let layout = fixture.layout();
    let index = read_json(&layout.join("index.json"));
    let top = &index["manifests"][0];
    let mut rootfs = BTreeMap::new();
    if top["mediaType"] == "application/vnd.oci.image.index.v1+json" {
        let view = scratch.path().join("view");
        copy_tree(&layout, &view);
        let nested = read_json(&blob_path(&layout, top["digest"].as_str().unwrap()));
        let mut tagged = Vec::new();
        for manifest in nested["manifests"].as_array().unwrap() {
            let platform = platform_string(&manifest["platform"]);
            let tag = platform.replace('/', "-");
            let mut descriptor = manifest.clone();
            descriptor["annotations"] =
                serde_json::json!({ "org.opencontainers.image.ref.name": tag });
            tagged.push(descriptor);
            rootfs.insert(platform, scratch.path().join(format!("rootfs-{tag}")));
        }
        let view_index = serde_json::json!({ "schemaVersion": 2, "manifests": tagged });
        fs::write(view.join("index.json"), view_index.to_string()).unwrap();
        for (platform, dir) in &rootfs {
            umoci_unpack(&view, &platform.replace('/', "-"), dir);
        }
    } else {
        let dir = scratch.path().join("rootfs");
        umoci_unpack(&layout, &fixture_list().ref_name, &dir);
        rootfs.insert(platform_string(&top["platform"]), dir);
    }
    Some(UmociView {
        _scratch: scratch,
        rootfs,
    })
}

// ------------------------------------------------------------------------ present

fn check_present(
    fixture: &Fixture,
    transport: &str,
    present: &PresentPath,
    umoci: Option<&UmociView>,
) -> Vec<String> {
    let label = format!(
        "{} [{transport}] {}{}",
        fixture.name,
        present.path,
        present
            .platform
            .as_deref()
            .map(|p| format!(" --platform {p}"))
            .unwrap_or_default()
    );
    let out_dir = TempDir::new().unwrap();
    let out = out_dir.path().join("out");
    let run = extract(
        &fixture.reference(transport),
        &present.path,
        &out,
        present.platform.as_deref(),
    );
    let mut problems = Vec::new();
    if run.code != Some(0) {
        return vec![format!("{label}: {}", run.describe())];
    }
    if !run.stdout.is_empty() {
        problems.push(format!("{label}: stdout not empty with -o FILE"));
    }
    let left = dir_entries(out_dir.path());
    if left != ["out"] {
        problems.push(format!(
            "{label}: output directory holds {left:?}, expected [\"out\"]"
        ));
    }
    let Ok(bytes) = fs::read(&out) else {
        problems.push(format!(
            "{label}: exit 0 but no output file: {}",
            run.describe()
        ));
        return problems;
    };
    let mode = fs::metadata(&out).unwrap().permissions().mode() & 0o777;

    let digest = sha256_hex(&bytes);
    if digest != present.sha256 {
        problems.push(format!(
            "{label}: content differs from the generator's: expected {} bytes sha256 {}, got \
             {} bytes sha256 {}",
            present.size,
            &present.sha256[..16],
            bytes.len(),
            &digest[..16]
        ));
    }
    if mode != present.mode {
        problems.push(format!(
            "{label}: mode {mode:o}, the generator wrote {:o}",
            present.mode
        ));
    }

    if let Some(view) = umoci {
        let platform = present.platform.as_deref().unwrap_or(DEFAULT_PLATFORM);
        let Some(root) = view.rootfs.get(platform) else {
            problems.push(format!("{label}: umoci did not unpack platform {platform}"));
            return problems;
        };
        match resolve_in_root(root, &present.path) {
            Err(why) => problems.push(format!("{label}: umoci's rootfs has no such file: {why}")),
            Ok(host) => {
                let theirs = fs::read(&host).unwrap();
                if let Some(diff) = byte_difference(&theirs, &bytes) {
                    problems.push(format!("{label}: differs from umoci: {diff}"));
                }
                let their_mode = fs::metadata(&host).unwrap().permissions().mode() & 0o777;
                if their_mode != mode {
                    problems.push(format!("{label}: mode {mode:o}, umoci has {their_mode:o}"));
                }
            }
        }
    }
    problems
}

#[test]
fn present_paths_match_umoci_on_every_transport() {
    let failures: Vec<String> = thread::scope(|scope| {
        let workers: Vec<_> = fixture_list()
            .fixtures
            .iter()
            .filter(|f| !f.present.is_empty())
            .map(|fixture| {
                scope.spawn(move || {
                    let umoci = umoci_view(fixture);
                    let mut problems = Vec::new();
                    for transport in fixture.transports.keys() {
                        for present in fixture.present.iter().filter(|p| p.applies_to(transport)) {
                            problems.extend(check_present(
                                fixture,
                                transport,
                                present,
                                umoci.as_ref(),
                            ));
                        }
                    }
                    problems
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker panicked"))
            .collect()
    });
    fail_if_any("present paths", failures);
}

#[test]
fn every_fixture_is_checked_on_its_transports() {
    let list = fixture_list();
    assert!(
        list.fixtures.len() >= 20,
        "too few fixtures in fixtures.json"
    );
    for fixture in &list.fixtures {
        assert!(fixture.transports.contains_key("oci"), "{}", fixture.name);
        assert!(
            fixture.transports.contains_key("oci-archive"),
            "{}",
            fixture.name
        );
        let zstd = fixture.compression.iter().any(|c| c == "zstd");
        assert!(
            !(zstd && fixture.transports.contains_key("docker-archive")),
            "{}: skopeo cannot write zstd layers into a docker-archive",
            fixture.name
        );
        assert!(
            !(fixture.present.is_empty() && fixture.refused.is_empty()),
            "{}: nothing to check",
            fixture.name
        );
    }
}

// ------------------------------------------------------------------------ refusals

#[test]
fn absent_paths_are_refused_naming_path_and_image() {
    let mut failures = Vec::new();
    for fixture in &fixture_list().fixtures {
        for transport in fixture.transports.keys() {
            let location = fixture.location(transport).display().to_string();
            for absent in &fixture.absent {
                let out_dir = TempDir::new().unwrap();
                let run = extract(
                    &fixture.reference(transport),
                    &absent.path,
                    &out_dir.path().join("out"),
                    None,
                );
                for problem in expect_refusal(&run, out_dir.path(), &[&absent.path, &location]) {
                    failures.push(format!(
                        "{} [{transport}] {} ({}): {problem}",
                        fixture.name,
                        absent.path,
                        absent.note.as_deref().unwrap_or("absent")
                    ));
                }
            }
        }
    }
    fail_if_any("absent paths", failures);
}

#[test]
fn hostile_and_non_file_paths_are_refused() {
    let mut failures = Vec::new();
    for fixture in &fixture_list().fixtures {
        for transport in fixture.transports.keys() {
            for refused in &fixture.refused {
                let out_dir = TempDir::new().unwrap();
                let run = extract(
                    &fixture.reference(transport),
                    &refused.path,
                    &out_dir.path().join("out"),
                    None,
                );
                let needles: Vec<&str> = refused.needles.iter().map(String::as_str).collect();
                for problem in expect_refusal(&run, out_dir.path(), &needles) {
                    failures.push(format!(
                        "{} [{transport}] {} ({}): {problem}",
                        fixture.name,
                        refused.path,
                        refused.note.as_deref().unwrap_or("refused")
                    ));
                }
            }
        }
    }
    fail_if_any("refused paths", failures);
}

// ------------------------------------------------------------------------ platforms

#[test]
fn unknown_platform_is_refused_listing_offered_platforms() {
    let mut failures = Vec::new();
    for fixture in fixture_list()
        .fixtures
        .iter()
        .filter(|f| f.platforms.len() > 1)
    {
        for transport in ["oci", "oci-archive"] {
            for platform in &fixture.wrong_platforms {
                let out_dir = TempDir::new().unwrap();
                let run = extract(
                    &fixture.reference(transport),
                    "/usr/bin/machine-config-daemon",
                    &out_dir.path().join("out"),
                    Some(platform),
                );
                let offered: Vec<&str> = fixture
                    .platforms
                    .iter()
                    .map(|p| p.rsplit_once("/v").map_or(p.as_str(), |(base, _)| base))
                    .collect();
                for problem in expect_refusal(&run, out_dir.path(), &offered) {
                    failures.push(format!(
                        "{} [{transport}] --platform {platform}: {problem}",
                        fixture.name
                    ));
                }
            }
        }
    }
    fail_if_any("unknown platforms", failures);
}

#[test]
fn multiarch_platforms_give_different_daemons() {
    let fixture = fixture("mco-multiarch");
    let expected = |platform: Option<&str>| {
        fixture
            .present
            .iter()
            .find(|p| {
                p.path == "/usr/bin/machine-config-daemon" && p.platform.as_deref() == platform
            })
            .unwrap()
    };
    let amd64 = expected(None);
    let arm64 = expected(Some("linux/arm64/v8"));
    assert_ne!(
        amd64.sha256, arm64.sha256,
        "fixture must differ per platform"
    );
    for transport in ["oci", "oci-archive"] {
        let out_dir = TempDir::new().unwrap();
        let out = out_dir.path().join("mcd");
        let run = extract(
            &fixture.reference(transport),
            &arm64.path,
            &out,
            Some("linux/arm64/v8"),
        );
        assert_eq!(run.code, Some(0), "{}", run.describe());
        let bytes = fs::read(&out).unwrap();
        assert_eq!(&bytes[..4], b"\x7fELF", "{transport}: not an ELF");
        assert_eq!(
            u16::from_le_bytes([bytes[18], bytes[19]]),
            183,
            "{transport}: e_machine is not EM_AARCH64"
        );
    }
}

// ------------------------------------------------------------------------ corruption

/// A writable copy of a fixture's OCI layout.
fn layout_copy(name: &str) -> (TempDir, PathBuf) {
    let scratch = TempDir::new().unwrap();
    let layout = scratch.path().join(name);
    copy_tree(&fixture(name).layout(), &layout);
    (scratch, layout)
}

/// The single-platform manifest of a layout, and the digest of its top layer.
fn top_layer_digest(layout: &Path) -> String {
    let index = read_json(&layout.join("index.json"));
    let manifest = read_json(&blob_path(
        layout,
        index["manifests"][0]["digest"].as_str().unwrap(),
    ));
    let layers = manifest["layers"].as_array().unwrap();
    layers.last().unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Flips one byte a little after the first ELF header in `file`: inside an MCD's data.
fn flip_byte_in_elf(file: &Path) {
    let mut bytes = fs::read(file).unwrap();
    let elf = bytes
        .windows(4)
        .position(|w| w == b"\x7fELF")
        .unwrap_or_else(|| panic!("{} holds no ELF", file.display()));
    bytes[elf + 200] ^= 0x01;
    fs::write(file, bytes).unwrap();
}

fn mentions_digest_problem(stderr: &str) -> bool {
    let lower = stderr.to_lowercase();
    lower.contains("digest") || lower.contains("corrupt")
}

#[test]
fn corrupt_uncompressed_layer_is_refused_naming_its_digest() {
    // mco-4.14 has plain tar layers: the flipped byte leaves a well-formed tar, so
    // only the digest check can catch it.
    let (_scratch, layout) = layout_copy("mco-4.14");
    let digest = top_layer_digest(&layout);
    flip_byte_in_elf(&blob_path(&layout, &digest));
    let reference = image_reference("oci", &layout, &fixture_list().ref_name);
    let out_dir = TempDir::new().unwrap();
    let run = extract(
        &reference,
        "/usr/bin/machine-config-daemon",
        &out_dir.path().join("out"),
        None,
    );
    let hex = digest.split_once(':').unwrap().1;
    let mut failures = expect_refusal(&run, out_dir.path(), &[hex]);
    if !mentions_digest_problem(&run.stderr) {
        failures.push(format!("no `digest`/`corrupt` in: {}", run.describe()));
    }
    fail_if_any("corrupt plain layer", failures);
}

#[test]
fn corrupt_gzip_layer_is_refused_naming_its_digest() {
    let (_scratch, layout) = layout_copy("mco-4.6");
    let digest = top_layer_digest(&layout);
    let blob = blob_path(&layout, &digest);
    let mut bytes = fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    fs::write(&blob, bytes).unwrap();
    let reference = image_reference("oci", &layout, &fixture_list().ref_name);
    let out_dir = TempDir::new().unwrap();
    let run = extract(
        &reference,
        "/usr/bin/machine-config-daemon",
        &out_dir.path().join("out"),
        None,
    );
    let hex = digest.split_once(':').unwrap().1;
    fail_if_any(
        "corrupt gzip layer",
        expect_refusal(&run, out_dir.path(), &[hex]),
    );
}

#[test]
fn corrupt_layer_in_archives_is_refused() {
    let mut failures = Vec::new();
    let fixture = fixture("mco-4.14");
    for transport in ["oci-archive", "docker-archive"] {
        let scratch = TempDir::new().unwrap();
        let archive = scratch.path().join("image.tar");
        fs::copy(fixture.location(transport), &archive).unwrap();
        flip_byte_in_elf(&archive);
        let out_dir = TempDir::new().unwrap();
        let run = extract(
            &image_reference(transport, &archive, &fixture_list().ref_name),
            "/usr/bin/machine-config-daemon",
            &out_dir.path().join("out"),
            None,
        );
        let mut problems = expect_refusal(&run, out_dir.path(), &[]);
        if !mentions_digest_problem(&run.stderr) {
            problems.push(format!("no `digest`/`corrupt` in: {}", run.describe()));
        }
        failures.extend(problems.into_iter().map(|p| format!("[{transport}] {p}")));
    }
    fail_if_any("corrupt archive layer", failures);
}

#[test]
fn damaged_layouts_are_refused() {
    type Damage = fn(&Path);
    let damages: [(&str, Damage); 6] = [
        ("index.json cut short", |layout| {
            fs::write(
                layout.join("index.json"),
                br#"{"schemaVersion":2,"manifests":["#,
            )
            .unwrap()
        }),
        ("index.json not JSON", |layout| {
            fs::write(layout.join("index.json"), b"\x00\x01 not json").unwrap()
        }),
        ("index.json with no manifests", |layout| {
            fs::write(
                layout.join("index.json"),
                br#"{"schemaVersion":2,"manifests":[]}"#,
            )
            .unwrap()
        }),
        (
            "manifest blob altered (same JSON meaning, other digest)",
            |layout| {
                let index = read_json(&layout.join("index.json"));
                let blob = blob_path(layout, index["manifests"][0]["digest"].as_str().unwrap());
                let text = fs::read_to_string(&blob).unwrap();
                let altered = text.replacen("\"schemaVersion\":2", "\"schemaVersion\": 2", 1);
                assert_ne!(text, altered);
                fs::write(&blob, altered).unwrap();
            },
        ),
        ("top layer blob truncated", |layout| {
            let blob = blob_path(layout, &top_layer_digest(layout));
            let bytes = fs::read(&blob).unwrap();
            fs::write(&blob, &bytes[..bytes.len() / 2]).unwrap();
        }),
        ("top layer blob missing", |layout| {
            fs::remove_file(blob_path(layout, &top_layer_digest(layout))).unwrap()
        }),
    ];
    let mut failures = Vec::new();
    for (what, damage) in damages {
        let (_scratch, layout) = layout_copy("mco-4.6");
        damage(&layout);
        let out_dir = TempDir::new().unwrap();
        let run = extract(
            &image_reference("oci", &layout, &fixture_list().ref_name),
            "/usr/bin/machine-config-daemon",
            &out_dir.path().join("out"),
            None,
        );
        failures.extend(
            expect_refusal(&run, out_dir.path(), &[])
                .into_iter()
                .map(|p| format!("{what}: {p}")),
        );
    }
    fail_if_any("damaged layouts", failures);
}

#[test]
fn truncated_archives_are_refused() {
    let mut failures = Vec::new();
    for name in ["mco-4.6", "mco-4.16"] {
        let fixture = fixture(name);
        for transport in ["oci-archive", "docker-archive"] {
            let bytes = fs::read(fixture.location(transport)).unwrap();
            // Cut inside the members, not in the zero blocks that end the archive.
            let content_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
            for (how, cut) in [
                ("cut in half", content_end / 2),
                ("last data byte cut", content_end - 1),
            ] {
                let scratch = TempDir::new().unwrap();
                let archive = scratch.path().join("image.tar");
                fs::write(&archive, &bytes[..cut]).unwrap();
                let out_dir = TempDir::new().unwrap();
                let run = extract(
                    &image_reference(transport, &archive, &fixture_list().ref_name),
                    "/usr/bin/machine-config-daemon",
                    &out_dir.path().join("out"),
                    None,
                );
                failures.extend(
                    expect_refusal(&run, out_dir.path(), &[])
                        .into_iter()
                        .map(|p| format!("{name} [{transport}] {how} ({cut} bytes): {p}")),
                );
            }
        }
    }
    fail_if_any("truncated archives", failures);
}

#[test]
fn unknown_tag_is_refused() {
    let fixture = fixture("mco-4.6");
    let out_dir = TempDir::new().unwrap();
    let run = extract(
        &image_reference("oci", &fixture.layout(), "no-such-tag"),
        "/usr/bin/machine-config-daemon",
        &out_dir.path().join("out"),
        None,
    );
    fail_if_any("unknown tag", expect_refusal(&run, out_dir.path(), &[]));
}

// ------------------------------------------------------------------------ output

fn mcd_of(name: &str) -> &'static PresentPath {
    fixture(name)
        .present
        .iter()
        .find(|p| p.path == "/usr/bin/machine-config-daemon" && p.platform.is_none())
        .unwrap()
}

#[test]
fn dash_output_writes_to_stdout() {
    let fixture = fixture("mco-4.16");
    let expected = mcd_of("mco-4.16");
    let run = mcd_inject([
        "extract",
        "--image",
        &fixture.reference("oci"),
        "--path",
        &expected.path,
        "-o",
        "-",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(
        sha256_hex(&run.stdout),
        expected.sha256,
        "stdout is not the MCD"
    );
}

#[test]
fn docker_archive_accepts_a_repo_tag() {
    let fixture = fixture("mco-4.6");
    let expected = mcd_of("mco-4.6");
    let reference = format!(
        "docker-archive:{}:{}",
        fixture.location("docker-archive").display(),
        fixture.docker_archive_name
    );
    let out_dir = TempDir::new().unwrap();
    let out = out_dir.path().join("mcd");
    let run = extract(&reference, &expected.path, &out, None);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(sha256_hex(&fs::read(&out).unwrap()), expected.sha256);
}

#[test]
fn existing_output_is_replaced_on_success_and_kept_on_failure() {
    let fixture = fixture("mco-4.6");
    let expected = mcd_of("mco-4.6");
    let out_dir = TempDir::new().unwrap();
    let out = out_dir.path().join("mcd");
    let old = b"previous content\n";
    fs::write(&out, old).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();

    let run = extract(&fixture.reference("oci"), "/no/such/file", &out, None);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert_eq!(
        fs::read(&out).unwrap(),
        old,
        "a failed extract changed the output file"
    );
    assert_eq!(
        dir_entries(out_dir.path()),
        ["mcd"],
        "a failed extract left files behind"
    );

    let run = extract(&fixture.reference("oci"), &expected.path, &out, None);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(sha256_hex(&fs::read(&out).unwrap()), expected.sha256);
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        expected.mode,
        "mode of a replaced output file"
    );
    assert_eq!(
        dir_entries(out_dir.path()),
        ["mcd"],
        "temporary files left behind"
    );
}

// ------------------------------------------------------------------------ committed

/// `fixtures/mco-small` must be what `generate.py --committed` writes today: it is the
/// generated `mco-small` layout, byte for byte.
#[test]
fn committed_fixture_is_current() {
    let committed = crate_root().join("fixtures").join("mco-small");
    let generated = fixture("mco-small").layout();
    let files = |root: &Path| {
        let mut found = BTreeMap::new();
        let mut pending = vec![root.to_owned()];
        while let Some(dir) = pending.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let relative = path.strip_prefix(root).unwrap().display().to_string();
                    found.insert(relative, sha256_hex(&fs::read(&path).unwrap()));
                }
            }
        }
        found
    };
    assert_eq!(
        files(&committed),
        files(&generated),
        "fixtures/mco-small is stale: run `python3 fixtures/generate.py --committed`"
    );
}

#[test]
fn committed_fixture_extracts_by_relative_path() {
    let expected = mcd_of("mco-small");
    let out_dir = TempDir::new().unwrap();
    let out = out_dir.path().join("mcd");
    let mut args: Vec<String> = ["extract", "--image", "oci:fixtures/mco-small:latest"]
        .map(str::to_owned)
        .into();
    args.extend(["--path".into(), expected.path.clone(), "-o".into()]);
    args.push(out.display().to_string());
    let run = Bin::new(&args).current_dir(crate_root()).run();
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(sha256_hex(&fs::read(&out).unwrap()), expected.sha256);
}
