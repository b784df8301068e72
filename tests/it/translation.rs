//! A differential test of the translation between spec families
//! (`mcd_inject::ignition::translate_config`), on real configs (`tests/data/translate`,
//! `tests/data/mcs`; the corpus README says what each config is and where its shape
//! comes from).
//!
//! For each config and direction: the translated config is valid for the validator of
//! its spec (any output fails), and the real Ignition of each generation, applying the
//! config it reads to a scratch root stage by stage (v0.35 for spec 2.2, Debian's 2.14
//! for 3.0-3.3, v2.26 for 3.4+), gives the same tree from the translated config as from
//! the original: files (content, mode, owner), directories, symlinks, hard links,
//! units, drop-ins, presets, masks, users, groups and authorized keys
//! (`harness::tree::listing`). Where MCO's own translation (coreos/ign-converter, as
//! MCO's `ignition_converter.go` chains it) is the peer, the translated JSON is compared
//! field by field with what it gives: the pointer configs and the every-field configs
//! with an expected file derived from ign-converter's code, each MCO release's
//! `worker-spec3.ign` with the `worker-spec2.2.ign` MCO's server made of it.
//!
//! Where the two Ignition generations differ by design the comparison says so, with
//! the evidence in the corpus README: authorized keys (v0.35 writes
//! `authorized_keys.d/coreos-ignition` and `authorized_keys`, 2.x
//! `authorized_keys.d/ignition`; the sets of keys are compared), empty drop-ins,
//! v2.26's `disable` presets, the MachineConfig MCO's server encapsulates per spec.
//! Config sources
//! (`merge`/`append`/`replace`) carry verification hashes of one body, which cannot be
//! both the spec 2.2 and the spec 3 child a server gives each generation: they are
//! removed before applying the every-field configs; the pointer configs are applied
//! through a loopback server that answers by the Accept header, as MCO's server does.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use mcd_inject::ignition::{translate_config, SpecVersion};
use serde_json::{json, Map, Value};

use crate::harness::crate_root;
use crate::harness::tree::{apply, differences, listing, scratch_root, validate, Body, Loopback};
use crate::mcs_renders::{render, RELEASES, SPEC2, SPEC3};

/// The stand-in host of the file contents served over HTTP (compressed contents: Ignition
/// v0.35 cannot decompress a `data:` URL); the tests serve them on loopback.
const FILES_HOST: &str = "http://files.translate.test/";

/// The Machine Config Server the pointer configs name.
const MCS_URL: &str = "https://api-int.c1.example.com:22623/config/worker";

/// What every scratch root holds before Ignition runs: a file the configs replace and a
/// file they append to.
const SEED: [(&str, &[u8]); 2] = [
    ("etc/translate/existing", b"old contents\n"),
    ("etc/translate/log", b"line 0\n"),
];

fn corpus(name: &str) -> PathBuf {
    crate_root().join("tests/data/translate").join(name)
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_of(bytes: &[u8], what: &str) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn spec(s: &str) -> SpecVersion {
    s.parse().unwrap()
}

fn translate(name: &str, bytes: &[u8], to: &str) -> Vec<u8> {
    translate_config(name, bytes, spec(to)).unwrap_or_else(|e| panic!("{name} to {to}: {e:#}"))
}

/// A config without the empty objects, empty lists and nulls Go's encoder leaves in
/// (they mean what an absent field means).
fn normalise(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(m) => {
            let m: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| normalise(v).map(|v| (k.clone(), v)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        Value::Array(a) => {
            let a: Vec<Value> = a.iter().filter_map(normalise).collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        v => Some(v.clone()),
    }
}

/// Field-by-field differences, one line each: `FIELD: EXPECTED | ACTUAL`.
fn field_differences(expected: &Value, actual: &Value, at: &str, out: &mut Vec<String>) {
    let short = |v: Option<&Value>| match v {
        None => "(absent)".to_string(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 120 {
                format!("{}... ({} bytes)", &s[..120], s.len())
            } else {
                s
            }
        }
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            for k in keys {
                let here = format!("{at}.{k}");
                match (e.get(k), a.get(k)) {
                    (Some(ev), Some(av)) => field_differences(ev, av, &here, out),
                    (ev, av) => out.push(format!("{here}: {} | {}", short(ev), short(av))),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                field_differences(ev, av, &format!("{at}[{i}]"), out);
            }
        }
        (e, a) if e != a => out.push(format!("{at}: {} | {}", short(Some(e)), short(Some(a)))),
        _ => {}
    }
}

/// Compares `actual` with `expected` after [`normalise`], failing with every difference.
fn assert_same_fields(expected: &Value, actual: &Value, what: &str) {
    let (e, a) = (
        normalise(expected).unwrap_or(Value::Null),
        normalise(actual).unwrap_or(Value::Null),
    );
    let mut diffs = Vec::new();
    field_differences(&e, &a, "", &mut diffs);
    assert!(
        diffs.is_empty(),
        "{what}: the translation differs from MCO's (expected | ours):\n{}",
        diffs.join("\n")
    );
}

/// Two translations of one config into spec 3 versions say the same but the version:
/// up within spec 3 is the version alone.
fn same_but_the_version(a: &[u8], b: &[u8], what: &str) {
    let (mut a, mut b) = (json_of(a, what), json_of(b, what));
    a["ignition"]["version"] = Value::Null;
    b["ignition"]["version"] = Value::Null;
    assert_same_fields(&a, &b, &format!("{what} in two spec 3 versions"));
}

/// A config with its `ignition.config` sources removed (see the module's notes).
fn without_config_sources(cfg: &[u8]) -> Vec<u8> {
    let mut v = json_of(cfg, "config");
    if let Some(ign) = v["ignition"].as_object_mut() {
        ign.remove("config");
    }
    serde_json::to_vec(&v).unwrap()
}

/// A work directory of this test, emptied.
fn workdir(name: &str) -> PathBuf {
    let dir = crate_root()
        .join("target/tmp/translation")
        .join(name.replace(['/', ' '], "-"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The loopback server of the file contents: `motd.gz`, the gzip of `files/motd`.
fn files_server() -> Loopback {
    let mut routes = BTreeMap::new();
    let motd = read(&corpus("files/motd"));
    routes.insert("/motd.gz".into(), Body::Fixed(crate::harness::gzip(&motd)));
    Loopback::serve(routes)
}

/// What a test does to each side's root and listing before the trees are compared.
type Fixup<'a> = &'a dyn Fn(&Side, &Path, &mut BTreeMap<String, String>);

/// One side of a differential apply: a config file and what it is.
struct Side {
    label: String,
    cfg: PathBuf,
    /// The spec of the config, which decides the Ignition that applies it.
    version: String,
}

impl Side {
    /// Whether Ignition v2.26 applies it (spec 3.4 and later).
    fn by_v2_26(&self) -> bool {
        self.version.starts_with("3.")
            && !["3.0.", "3.1.", "3.2.", "3.3."]
                .iter()
                .any(|v| self.version.starts_with(v))
    }
}

/// Writes `bytes` as `dir/NAME`, checks it with its spec's validator, and returns it.
fn valid_config(dir: &Path, name: &str, bytes: &[u8]) -> Side {
    let cfg = dir.join(name);
    fs::write(&cfg, bytes).unwrap();
    if let Err(e) = validate(&cfg) {
        panic!("{e}");
    }
    let version = json_of(bytes, name)["ignition"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    Side {
        label: name.to_string(),
        cfg,
        version,
    }
}

/// A config file to apply, not validated (MCO's own bodies, validated elsewhere).
fn side_of(dir: &Path, name: &str, bytes: &[u8]) -> Side {
    let cfg = dir.join(name);
    fs::write(&cfg, bytes).unwrap();
    Side {
        label: name.to_string(),
        cfg,
        version: json_of(bytes, name)["ignition"]["version"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

/// Applies each side to a fresh scratch root seeded with [`SEED`] and returns the
/// roots and their listings, in order.
fn apply_each(dir: &Path, sides: &[&Side]) -> Vec<(PathBuf, BTreeMap<String, String>)> {
    sides
        .iter()
        .enumerate()
        .map(|(i, side)| {
            let at = dir.join(format!("apply-{i}"));
            fs::create_dir_all(&at).unwrap();
            let root = scratch_root(&at, &SEED);
            apply(&side.cfg, &root, &at.join("work"));
            let tree = listing(&root);
            (root, tree)
        })
        .collect()
}

/// What a tree's preset file says without its `disable` lines. Ignition v2.26 writes
/// `disable UNIT` only for a unit `systemctl --root ROOT is-enabled` finds enabled
/// (after removing its enablement links; `DisableUnit` in its
/// `internal/exec/util/unit.go`); v0.35 and 2.14 write it for every unit with
/// `enabled: false`. In a scratch root no unit is enabled, so v2.26 writes none: when
/// one side is applied by v2.26, the `disable` lines are left out of both (the JSON
/// checks hold `enabled: false` itself).
fn without_disable_presets(tree: &mut BTreeMap<String, String>) {
    tree.retain(|k, _| !k.starts_with("etc/systemd/system-preset/20-ignition.preset | disable "));
}

/// Applies each side to a fresh root and fails with every difference between the trees
/// of each pair `(a, b)` of indices into `sides`. `fixup` sees each side's root and
/// listing before the comparison.
fn assert_pairs_alike(dir: &Path, sides: &[&Side], pairs: &[(usize, usize)], fixup: Fixup<'_>) {
    let mut trees = apply_each(dir, sides);
    for (side, (root, tree)) in sides.iter().zip(trees.iter_mut()) {
        fixup(side, root, tree);
    }
    let mut report = Vec::new();
    for &(i, j) in pairs {
        let (mut a, mut b) = (trees[i].1.clone(), trees[j].1.clone());
        if sides[i].by_v2_26() != sides[j].by_v2_26() {
            without_disable_presets(&mut a);
            without_disable_presets(&mut b);
        }
        let diffs = differences(&a, &b);
        if !diffs.is_empty() {
            let (x, y) = (&sides[i].label, &sides[j].label);
            report.push(format!(
                "{x} and {y} give different trees ({x} | {y}):\n{}",
                diffs.join("\n")
            ));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n\n"));
    // The trees hold what the configs say, not nothing: the comparison is not vacuous.
    let seed = listing_of_seed_only(dir);
    for (side, (_, tree)) in sides.iter().zip(&trees) {
        assert!(*tree != seed, "{} wrote nothing", side.label);
    }
}

/// Applies `original` and each of `translated`, and fails with every difference
/// between the original's tree and each translation's.
fn assert_same_trees_with(dir: &Path, original: &Side, translated: &[&Side], fixup: Fixup<'_>) {
    let mut sides = vec![original];
    sides.extend_from_slice(translated);
    let pairs: Vec<(usize, usize)> = (1..sides.len()).map(|j| (0, j)).collect();
    assert_pairs_alike(dir, &sides, &pairs, fixup);
}

fn assert_same_trees(dir: &Path, original: &Side, translated: &[&Side]) {
    assert_same_trees_with(dir, original, translated, &|_, _, _| {});
}

/// The listing of a scratch root nothing was applied to.
fn listing_of_seed_only(dir: &Path) -> BTreeMap<String, String> {
    let at = dir.join("seed-only");
    fs::create_dir_all(&at).unwrap();
    listing(&scratch_root(&at, &SEED))
}

/// A corpus config with the stand-in file host replaced by `server`.
fn served(name: &str, server: &Loopback) -> Vec<u8> {
    String::from_utf8(read(&corpus(name)))
        .unwrap()
        .replace(FILES_HOST, &server.url("/"))
        .into_bytes()
}

// ---------------------------------------------------------------- pointer configs

/// The pointer configs and the spec MCO translates each to, with the expected output.
const STUBS: [(&str, &str); 3] = [
    ("stub-installer-4.5.ign", "3.2.0"),
    ("stub-installer-4.6.ign", "2.2.0"),
    ("stub-mco-managed.ign", "2.2.0"),
];

/// The installer's stubs (4.1-4.5: spec 2.2 `append`; 4.6: spec 3.1 `merge`) and MCO's
/// managed stub (spec 3.5) translate field by field as MCO's converter translates them,
/// and the results are valid for their spec. The 2.2 stub also goes up to 3.6, the
/// newest spec Ignition v2.26 reads: the same fields, one version.
#[test]
fn pointer_configs_translate_as_mco_translates() {
    let dir = workdir("pointer-fields");
    for (name, to) in STUBS {
        let bytes = read(&corpus(name));
        validate(&corpus(name)).unwrap_or_else(|e| panic!("{e}"));
        let ours = translate(name, &bytes, to);
        valid_config(&dir, &format!("{name}.to-{to}"), &ours);
        let stem = name.trim_end_matches(".ign");
        let expected = json_of(&read(&corpus(&format!("{stem}.to-{to}.json"))), "expected");
        assert_same_fields(&expected, &json_of(&ours, name), &format!("{name} to {to}"));
        // What the pointer must still say, whatever the normalisation: the MCS URL and
        // the CA, in the key of the output's family.
        let out = json_of(&ours, name);
        let key = if to.starts_with("2.") {
            "append"
        } else {
            "merge"
        };
        assert_eq!(
            out["ignition"]["config"][key][0]["source"], MCS_URL,
            "{name}"
        );
        let ca = &json_of(&bytes, name)["ignition"]["security"]["tls"]["certificateAuthorities"];
        assert_eq!(
            out["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"],
            ca[0]["source"],
            "{name}"
        );
    }
    let bytes = read(&corpus("stub-installer-4.5.ign"));
    let newest = translate("stub-installer-4.5.ign", &bytes, "3.6.0");
    valid_config(&dir, "stub-installer-4.5.to-3.6.0", &newest);
    let mut expected = json_of(
        &read(&corpus("stub-installer-4.5.to-3.2.0.json")),
        "expected",
    );
    expected["ignition"]["version"] = json!("3.6.0");
    assert_same_fields(
        &expected,
        &json_of(&newest, "to 3.6.0"),
        "stub-installer-4.5 to 3.6.0",
    );
}

/// Each pointer config and its translations, applied by the Ignition of their specs
/// through a loopback MCS (the source rewritten to it, the CA kept): v0.35 asks for
/// spec 2.2 and is served release-4.6's `worker-spec2.2.ign`, 2.14 and v2.26 ask for
/// spec 3 and are served its `worker-spec3.ign` (MCO's server made the one of the
/// other); the trees must be the same.
#[test]
fn pointer_configs_apply_alike_through_a_loopback_mcs() {
    let dir = workdir("pointer-apply");
    // The oldest release's bodies, the smallest (v0.35 parses some 0.1-0.2 MB a second).
    let mcs = crate_root().join("tests/data/mcs/release-4.6");
    let mut routes = BTreeMap::new();
    routes.insert(
        "/config/worker".to_string(),
        Body::BySpec {
            spec2: read(&mcs.join(SPEC2)),
            spec3: read(&mcs.join(SPEC3)),
        },
    );
    let server = Loopback::serve(routes);
    let local = server.url("/config/worker");
    let cases: [(&str, &[&str]); 3] = [
        ("stub-installer-4.5.ign", &["3.2.0", "3.6.0"]),
        ("stub-installer-4.6.ign", &["2.2.0"]),
        ("stub-mco-managed.ign", &["2.2.0"]),
    ];
    for (name, targets) in cases {
        let case_dir = dir.join(name);
        fs::create_dir_all(&case_dir).unwrap();
        let bytes = String::from_utf8(read(&corpus(name)))
            .unwrap()
            .replace(MCS_URL, &local)
            .into_bytes();
        let original = valid_config(&case_dir, name, &bytes);
        let translated: Vec<Side> = targets
            .iter()
            .map(|to| {
                valid_config(
                    &case_dir,
                    &format!("{name}.to-{to}"),
                    &translate(name, &bytes, to),
                )
            })
            .collect();
        let before = server.requests().len();
        assert_same_trees_with(
            &case_dir,
            &original,
            &translated.iter().collect::<Vec<_>>(),
            &served_machine_config,
        );
        // Each program fetched the MCS once, asking for its own spec family.
        let asked: Vec<String> = server.requests()[before..].to_vec();
        let sides = std::iter::once(&original).chain(&translated);
        assert_eq!(
            asked.len(),
            1 + translated.len(),
            "{name}: requests {asked:?}"
        );
        for (side, request) in sides.zip(&asked) {
            let want = if side.version.starts_with("2.") {
                "version=2.2.0"
            } else {
                "version=3."
            };
            assert!(
                request.starts_with("/config/worker ")
                    && request.contains(want)
                    && request.ends_with("200 OK"),
                "{}: spec {}'s Ignition asked {request:?}",
                side.label,
                side.version
            );
        }
    }
}

/// In a tree applied from what MCO's server served, [`ENCAPSULATED`] as the server
/// wrote it for the spec it served (see [`same_encapsulated_machine_config`]): checked
/// to name the served spec's family, then listed without that version.
fn served_machine_config(side: &Side, root: &Path, tree: &mut BTreeMap<String, String>) {
    let rel = ENCAPSULATED.trim_start_matches('/');
    let mc = json_of(&read(&root.join(rel)), ENCAPSULATED);
    let version = &mc["spec"]["config"]["ignition"]["version"];
    let family = if side.version.starts_with("2.") {
        "2."
    } else {
        "3."
    };
    assert!(
        version.as_str().is_some_and(|v| v.starts_with(family)),
        "{}: the served {ENCAPSULATED} names spec {version}",
        side.label
    );
    encapsulated_without_version(root, tree);
}

/// [`ENCAPSULATED`] listed without the spec version its MachineConfig names (see
/// [`same_encapsulated_machine_config`]).
fn encapsulated_without_version(root: &Path, tree: &mut BTreeMap<String, String>) {
    let rel = ENCAPSULATED.trim_start_matches('/');
    let mut mc = json_of(&read(&root.join(rel)), ENCAPSULATED);
    mc["spec"]["config"]["ignition"]["version"] = Value::Null;
    let line = tree.get_mut(rel).unwrap();
    let head = line.split(" sha256:").next().unwrap().to_string();
    *line = format!(
        "{head} machine config sha256:{}",
        &crate::harness::sha256_hex(mc.to_string().as_bytes())[..16]
    );
}

// ---------------------------------------------------------------- every field

/// The config that sets every field the translation carries, written in spec 2.2, goes
/// up to 3.2 as ign-converter's v23tov30 maps each field (the expected file) and to 3.6
/// alike; each is valid, and each applies to the same tree as the original on v0.35.
#[test]
fn every_field_written_in_22_goes_up_alike() {
    let dir = workdir("fields-2.2");
    let name = "fields-2.2.ign";
    let ours = translate(name, &read(&corpus(name)), "3.2.0");
    let expected = json_of(&read(&corpus("fields-2.2.to-3.2.0.json")), "expected");
    assert_same_fields(&expected, &json_of(&ours, name), "fields-2.2 to 3.2.0");

    let server = files_server();
    let bytes = served(name, &server);
    valid_config(&dir, "as-written.ign", &bytes);
    let original = valid_config(&dir, name, &without_config_sources(&bytes));
    same_but_the_version(
        &translate(name, &bytes, "3.2.0"),
        &translate(name, &bytes, "3.6.0"),
        name,
    );
    let mut translated = Vec::new();
    for to in ["3.2.0", "3.6.0"] {
        let out = translate(name, &bytes, to);
        valid_config(&dir, &format!("as-written.to-{to}.ign"), &out);
        translated.push(valid_config(
            &dir,
            &format!("{name}.to-{to}"),
            &without_config_sources(&out),
        ));
    }
    assert_same_trees(&dir, &original, &translated.iter().collect::<Vec<_>>());
    // Each generation fetched the compressed contents.
    let fetched = server
        .requests()
        .iter()
        .filter(|r| r.starts_with("/motd.gz ") && r.ends_with("200 OK"))
        .count();
    assert_eq!(fetched, 3, "{:?}", server.requests());
}

/// The same fields written in spec 3.2 go down to 2.2 as ign-converter's v32tov22 maps
/// them (the expected file) and up to 3.6; each is valid and applies to the same tree
/// as the original on Debian's 2.14.
#[test]
fn every_field_written_in_32_goes_down_alike() {
    let dir = workdir("fields-3.2");
    let name = "fields-3.2.ign";
    let ours = translate(name, &read(&corpus(name)), "2.2.0");
    let expected = json_of(&read(&corpus("fields-3.2.to-2.2.0.json")), "expected");
    assert_same_fields(&expected, &json_of(&ours, name), "fields-3.2 to 2.2.0");

    let server = files_server();
    let bytes = served(name, &server);
    valid_config(&dir, "as-written.ign", &bytes);
    let original = valid_config(&dir, name, &without_config_sources(&bytes));
    let mut up = json_of(&bytes, name);
    up["ignition"]["version"] = json!("3.6.0");
    assert_same_fields(
        &up,
        &json_of(&translate(name, &bytes, "3.6.0"), name),
        "fields-3.2 to 3.6.0",
    );
    let mut translated = Vec::new();
    for to in ["2.2.0", "3.6.0"] {
        let out = translate(name, &bytes, to);
        valid_config(&dir, &format!("as-written.to-{to}.ign"), &out);
        translated.push(valid_config(
            &dir,
            &format!("{name}.to-{to}"),
            &without_config_sources(&out),
        ));
    }
    assert_same_trees(&dir, &original, &translated.iter().collect::<Vec<_>>());
}

/// `ignition.proxy` exists in spec 3 only: down to 2.2 it is refused by name (Ignition
/// v0.x reads no proxy from its config, so dropping it would fetch around the proxy);
/// up within spec 3 it is carried as it is.
#[test]
fn a_proxy_is_refused_down_and_carried_up() {
    let name = "proxy-3.2.ign";
    let bytes = read(&corpus(name));
    validate(&corpus(name)).unwrap_or_else(|e| panic!("{e}"));
    let err = translate_config(name, &bytes, SpecVersion::V2_2)
        .expect_err("a proxy cannot go down to spec 2.2")
        .to_string();
    assert!(err.contains("ignition.proxy"), "{err}");
    let up = translate(name, &bytes, "3.6.0");
    valid_config(&workdir("proxy"), "proxy.to-3.6.0", &up);
    let mut expected = json_of(&bytes, name);
    expected["ignition"]["version"] = json!("3.6.0");
    assert_same_fields(&expected, &json_of(&up, name), "proxy-3.2 to 3.6.0");
}

// ---------------------------------------------------------------- appends and edges

/// A spec 3 file with contents and `append` entries, and an append-only file on a file
/// the root holds, translated down to 2.2 and applied by v0.35, give the tree 2.14
/// gives from the original. (v0.35 refuses a 2.2 `append: true` entry with
/// `overwrite: false` when its path exists, "something else exists at that path", and
/// `overwrite: true` with `append` is invalid: an append entry must leave it unset.)
#[test]
fn append_entries_written_in_32_go_down_alike() {
    let dir = workdir("append-3.2");
    let name = "append-3.2.ign";
    let original = valid_config(&dir, name, &read(&corpus(name)));
    let out = translate(name, &read(&corpus(name)), "2.2.0");
    let translated = valid_config(&dir, &format!("{name}.to-2.2.0"), &out);
    assert_same_trees(&dir, &original, &[&translated]);
}

/// A spec 2.2 file followed by an `append: true` entry of its path (with a mode of its
/// own), and an append entry on a file the root holds, translated up to 3.2, give the
/// tree v0.35 gives from the original. (v0.35 sets the mode and owner an append entry
/// names after appending: the last entry that names one decides.)
#[test]
fn append_entries_written_in_22_go_up_alike() {
    let dir = workdir("append-2.2");
    let name = "append-2.2.ign";
    let original = valid_config(&dir, name, &read(&corpus(name)));
    let out = translate(name, &read(&corpus(name)), "3.2.0");
    let translated = valid_config(&dir, &format!("{name}.to-3.2.0"), &out);
    assert_same_trees(&dir, &original, &[&translated]);
}

/// Spec 3 files without contents: on a file the root holds (its contents kept, its mode
/// set) and on a new path (an empty file). (In spec 2.2, a file with `overwrite: false`
/// fails on an existing path and one without empties it; an `append: true` entry of
/// `data:,` with `overwrite` unset does what spec 3 does: creates the file empty or
/// keeps its contents, then sets mode and owner.)
#[test]
fn files_without_contents_go_down_alike() {
    let dir = workdir("no-contents-3.2");
    let name = "no-contents-3.2.ign";
    let original = valid_config(&dir, name, &read(&corpus(name)));
    let out = translate(name, &read(&corpus(name)), "2.2.0");
    let translated = valid_config(&dir, &format!("{name}.to-2.2.0"), &out);
    assert_same_trees(&dir, &original, &[&translated]);
}

/// A spec 3 file whose gzip contents are a `data:` URL. Spec 2.2 allows the field and
/// v0.35's validator accepts it, but v0.35 cannot decompress a `data:` URL at run time
/// ("compression is not supported with that scheme"); the hash is of the decompressed
/// bytes in both generations, so the decompressed bytes as a plain `data:` URL keep it.
#[test]
fn compressed_data_urls_go_down_alike() {
    let dir = workdir("compressed-data-3.2");
    let name = "compressed-data-3.2.ign";
    let original = valid_config(&dir, name, &read(&corpus(name)));
    let out = translate(name, &read(&corpus(name)), "2.2.0");
    let translated = valid_config(&dir, &format!("{name}.to-2.2.0"), &out);
    assert_same_trees(&dir, &original, &[&translated]);
}

// ---------------------------------------------------------------- MCO's renders

/// A config as a comparable whole: normalised, files sorted by path (the order of one
/// path's entries kept), units by name, users and groups by name.
fn comparable(v: &Value) -> Value {
    let mut v = normalise(v).unwrap_or(Value::Null);
    let sort_by = |list: Option<&mut Value>, key: &str| {
        if let Some(Value::Array(a)) = list {
            a.sort_by(|x, y| x[key].to_string().cmp(&y[key].to_string()));
        }
    };
    for kind in ["files", "directories", "links"] {
        sort_by(v.pointer_mut(&format!("/storage/{kind}")), "path");
    }
    sort_by(v.pointer_mut("/systemd/units"), "name");
    sort_by(v.pointer_mut("/passwd/users"), "name");
    sort_by(v.pointer_mut("/passwd/groups"), "name");
    v
}

/// A spec 3 config without `compression: ""` and drop-in `contents: ""`.
fn without_empty_strings(cfg: &Value) -> Value {
    let mut cfg = cfg.clone();
    for f in cfg["storage"]["files"].as_array_mut().into_iter().flatten() {
        if f["contents"]["compression"] == "" {
            f["contents"]["compression"] = Value::Null;
        }
    }
    for u in cfg["systemd"]["units"].as_array_mut().into_iter().flatten() {
        for d in u["dropins"].as_array_mut().into_iter().flatten() {
            if d["contents"] == "" {
                d["contents"] = Value::Null;
            }
        }
    }
    cfg
}

/// The file in which MCO's server writes the pool's MachineConfig for the first boot.
const ENCAPSULATED: &str = "/etc/ignition-machine-config-encapsulated.json";

/// MCO's server writes the MachineConfig into [`ENCAPSULATED`] of each body it serves
/// with `spec.config` an empty config of a spec of its choosing (`2.2.0` in the spec
/// 2.2 body; in the spec 3 body a spec 3 version, 3.4.0 in release-4.16's and 4.18's
/// 3.3.0 bodies): a file of its own per body, not a translation of the other, whose
/// contents a translation carries as they are. Checks that `ours` carries the file of
/// `original` (the config it was translated from) unchanged and that its MachineConfig
/// and the one of `theirs` differ only in that version, then gives `ours` the file of
/// `theirs`.
fn same_encapsulated_machine_config(
    theirs: &Value,
    ours: &mut Value,
    original: &Value,
    release: &str,
) {
    let find = |cfg: &Value| {
        cfg["storage"]["files"]
            .as_array()
            .and_then(|files| files.iter().position(|f| f["path"] == ENCAPSULATED))
            .unwrap_or_else(|| panic!("{release}: no {ENCAPSULATED}"))
    };
    let source = |cfg: &Value, i: usize| cfg["storage"]["files"][i]["contents"]["source"].clone();
    let (t, o) = (find(theirs), find(ours));
    assert_eq!(
        source(ours, o),
        source(original, find(original)),
        "{release}: {ENCAPSULATED} is not carried as it is"
    );
    let decode = |source: Value| -> Value {
        let bytes = mcd_inject::ignition::decode_data_url(source.as_str().unwrap()).unwrap();
        let mut mc = json_of(&bytes, ENCAPSULATED);
        mc["spec"]["config"]["ignition"]["version"] = Value::Null;
        mc
    };
    let mc_theirs = decode(source(theirs, t));
    assert_eq!(
        mc_theirs,
        decode(source(ours, o)),
        "{release}: {ENCAPSULATED}"
    );
    ours["storage"]["files"][o]["contents"] = theirs["storage"]["files"][t]["contents"].clone();
}

/// One MCO release's renders: our translation of `worker-spec3.ign` down to 2.2 means
/// what MCO's `worker-spec2.2.ign` of that release says (normalised, sorted), and
/// `worker-spec2.2.ign` goes up to 3.2 and 3.6; each translation is valid and applies
/// to the tree its original gives.
fn mcs_render(release: &str) {
    let dir = workdir(&format!("mcs-{release}"));
    let spec3 = serde_json::to_vec(&render(release, SPEC3)).unwrap();
    let spec2 = serde_json::to_vec(&render(release, SPEC2)).unwrap();

    let down = translate(&format!("{release}/{SPEC3}"), &spec3, "2.2.0");
    let theirs = comparable(&render(release, SPEC2));
    let mut ours = comparable(&json_of(&down, "ours"));
    same_encapsulated_machine_config(&theirs, &mut ours, &render(release, SPEC3), release);
    let mut diffs = Vec::new();
    field_differences(&theirs, &ours, "", &mut diffs);
    assert!(
        diffs.is_empty(),
        "{release}: our translation of {SPEC3} to 2.2.0 differs from MCO's {SPEC2} \
         (MCO's | ours):\n{}",
        diffs.join("\n")
    );

    // Up: our translation of the spec 2.2 body means what MCO's spec 3 body says, but for
    // the empty strings the spec 2.2 body could not carry (Go's encoder leaves them out):
    // `compression: ""` (none) and drop-ins whose contents are `""` (which change
    // nothing; see `harness::tree::listing`).
    let up = translate(&format!("{release}/{SPEC2}"), &spec2, "3.2.0");
    let mut theirs3 = comparable(&without_empty_strings(&render(release, SPEC3)));
    theirs3["ignition"]["version"] = Value::Null;
    let mut ours3 = comparable(&json_of(&up, "ours"));
    ours3["ignition"]["version"] = Value::Null;
    same_encapsulated_machine_config(&theirs3, &mut ours3, &render(release, SPEC2), release);
    let mut diffs = Vec::new();
    field_differences(&theirs3, &ours3, "", &mut diffs);
    assert!(
        diffs.is_empty(),
        "{release}: our translation of {SPEC2} to 3.2.0 differs from MCO's {SPEC3} \
         (MCO's | ours):\n{}",
        diffs.join("\n")
    );

    // MCO's bodies are checked by their validators in `mcs_renders`; the translations
    // here. One tree per config, v0.35's being the one of our spec 2.2 translation,
    // which says what MCO's spec 2.2 body says (above; the encapsulated MachineConfig
    // apart): down, the spec 3 body (2.14) against it; up, our translations of MCO's
    // spec 2.2 body (2.14, v2.26) against it too. Applying MCO's body itself with v0.35
    // as well would cost some 4 s of CPU per release for the same tree.
    let original3 = side_of(&dir, SPEC3, &spec3);
    let down = valid_config(&dir, "worker-spec3.to-2.2.0.ign", &down);
    let outs: Vec<Vec<u8>> = ["3.2.0", "3.6.0"]
        .into_iter()
        .map(|to| translate(&format!("{release}/{SPEC2}"), &spec2, to))
        .collect();
    same_but_the_version(&outs[0], &outs[1], &format!("{release}/{SPEC2}"));
    let ups: Vec<Side> = ["3.2.0", "3.6.0"]
        .into_iter()
        .zip(&outs)
        .map(|(to, out)| valid_config(&dir, &format!("worker-spec2.2.to-{to}.ign"), out))
        .collect();
    assert_pairs_alike(
        &dir,
        &[&original3, &down, &ups[0], &ups[1]],
        &[(0, 1), (1, 2), (1, 3)],
        &|_, root, tree| encapsulated_without_version(root, tree),
    );
}

macro_rules! mcs_renders {
    ($($test:ident: $release:literal;)*) => {
        $(
            #[test]
            fn $test() {
                mcs_render($release);
            }
        )*
        /// Every release of `mcs_renders::RELEASES` has its test here.
        #[test]
        fn every_mcs_release_is_translated() {
            let covered = [$($release),*];
            assert_eq!(covered, RELEASES);
        }
    };
}

mcs_renders! {
    mcs_release_4_6: "release-4.6";
    mcs_release_4_12: "release-4.12";
    mcs_release_4_16: "release-4.16";
    mcs_release_4_18: "release-4.18";
    mcs_main: "main";
}
