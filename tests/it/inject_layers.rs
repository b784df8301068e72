//! `inject` reads only the layers its choice needs: on every fixture image, for every
//! platform of it and every bootimage of the table, the choice read from as few layers
//! as settle it is the full view's choice (`inspect` reads everything); a build in a
//! lower layer is still found, and a top layer that holds the answer is the only one
//! read.

use std::path::Path;

use crate::harness::{fixture, fixture_list};
use mcd_inject::choose as inspect;
use mcd_inject::choose::target::{OcpVersion, Target, BOOTIMAGES};
use mcd_inject::image::{ImageRef, Platform};
use mcd_inject::transport::{self, OpenOptions};

/// What a pass came to: the build of each boot (path and sha256; the second, when the
/// first does not run on the cluster's OS) and the cluster's OS, or the error.
type Outcome = Result<(String, Option<String>, Option<String>), String>;

fn outcome(r: &anyhow::Result<(inspect::Inspection, inspect::Boots)>) -> Outcome {
    let (ins, boots) = r.as_ref().map_err(|e| format!("{e:#}"))?;
    let build = |i: usize| {
        let b = &ins.binaries[i];
        format!("{} {}", b.path, b.sha256)
    };
    Ok((
        build(boots.first.index),
        boots.second.as_ref().map(|c| build(c.index)),
        boots.cluster_os.as_ref().map(|c| c.os.to_string()),
    ))
}

/// The one pass, reading lazily or every build first.
fn pass(
    img: &mcd_inject::image::Image,
    target: &Target,
    hint: &inspect::ClusterHint,
    reading: inspect::Reading,
    spool: &Path,
) -> anyhow::Result<(inspect::Inspection, inspect::Boots)> {
    let q = inspect::Query {
        target,
        hint,
        binary_path: None,
        force: false,
    };
    inspect::select_boots(img, spool, &q, reading, None)
}

#[test]
fn the_lazy_pass_is_the_full_views_on_every_fixture() {
    let mut compared = 0;
    let mut chosen = 0;
    let mut seconds = 0;
    let mut fewer_layers = 0;
    let mut mismatches = Vec::new();
    for fx in &fixture_list().fixtures {
        for transport in fx.transports.keys() {
            let reference: ImageRef = fx.reference(transport).parse().unwrap();
            for platform in &fx.platforms {
                let opts = OpenOptions {
                    platform: platform.parse::<Platform>().unwrap(),
                    ..OpenOptions::default()
                };
                let img = match transport::open(&reference, &opts, &Default::default()) {
                    Ok(i) => i,
                    // Hostile fixtures may fail to open; nothing to choose from.
                    Err(_) => continue,
                };
                let arch = img.info.platform.architecture.clone();
                for row in BOOTIMAGES {
                    let Ok(target) = Target::new(row.id, None, None, &arch) else {
                        continue;
                    };
                    // As inject runs, told nothing of the cluster.
                    let hint = &inspect::ClusterHint::default();
                    {
                        let spools = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
                        let full = pass(
                            &img,
                            &target,
                            hint,
                            inspect::Reading::Everything,
                            spools.0.path(),
                        );
                        let lazy =
                            pass(&img, &target, hint, inspect::Reading::Lazy, spools.1.path());
                        let (want, got) = (outcome(&full), outcome(&lazy));
                        compared += 1;
                        let case = format!("{} {transport} {platform} {}", fx.name, row.id);
                        // The cluster's OS is said where the pass needed it or read what
                        // tells it: when the lazy pass says it, it is the full view's.
                        let agree = |w: &(String, Option<String>, Option<String>),
                                     g: &(String, Option<String>, Option<String>)| {
                            (&w.0, &w.1) == (&g.0, &g.1) && (g.2.is_none() || w.2 == g.2)
                        };
                        match (&want, &got) {
                            (Ok(w), Ok(g)) if agree(w, g) => {
                                chosen += 1;
                                seconds += usize::from(w.1.is_some());
                                let (ins, _) = lazy.as_ref().unwrap();
                                let (all, _) = full.as_ref().unwrap();
                                assert!(
                                    ins.layers_read.len() <= all.layers_read.len(),
                                    "{case}: read more layers than the full view"
                                );
                                assert_eq!(ins.image_bytes, all.image_bytes, "{case}");
                                if ins.bytes_read < all.bytes_read {
                                    fewer_layers += 1;
                                }
                            }
                            (Err(_), Err(_)) => {}
                            _ => mismatches.push(format!("{case}: full {want:?}, lazy {got:?}")),
                        }
                    }
                }
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    eprintln!(
        "{compared} compared, {chosen} chosen, {seconds} second builds, {fewer_layers} read less"
    );
    // The corpus exercises every side: choices made, second builds, and layers saved.
    assert!(compared > 3000, "only {compared} cases compared");
    assert!(chosen > 1500, "only {chosen} choices made");
    assert!(seconds > 100, "only {seconds} second builds chosen");
    assert!(
        fewer_layers > 300,
        "only {fewer_layers} choices read fewer bytes"
    );
}

/// The build `inject` compresses while the image streams (`choose::likely`, told the
/// MCO release) is the one the pass chooses for the first boot, on each MCO-shaped
/// fixture (4.6: one static build; 4.14: RHEL 8 and `.rhel9`; 4.16 and 4.18: RHEL 9
/// and `.rhel8`) and every bootimage where a build runs natively. Without the release
/// the guess misses where a RHEL 8 bootimage meets an image without `.rhel8`.
#[test]
fn the_likely_build_is_the_first_boots_choice_on_mco_images() {
    let (mut checked, mut missed_unknown, mut wrong) = (0, 0, Vec::new());
    for name in ["mco-4.6", "mco-4.14", "mco-4.16", "mco-4.18"] {
        let release: OcpVersion = name.trim_start_matches("mco-").parse().unwrap();
        let fx = fixture(name);
        let reference: ImageRef = fx.reference("oci").parse().unwrap();
        let img =
            transport::open(&reference, &OpenOptions::default(), &Default::default()).unwrap();
        for row in BOOTIMAGES {
            let Ok(target) = Target::new(row.id, None, None, "amd64") else {
                continue;
            };
            let spool = tempfile::tempdir().unwrap();
            let hint = inspect::ClusterHint::default();
            let Ok((ins, boots)) = pass(&img, &target, &hint, inspect::Reading::Lazy, spool.path())
            else {
                continue;
            };
            if boots.first.closure {
                continue;
            }
            let chosen = ins.binaries[boots.first.index].path.trim_start_matches('/');
            let likely = inspect::likely(None, &target, Some(release)).unwrap();
            if likely != chosen {
                wrong.push(format!("{name} on {}: {likely}, chose {chosen}", row.id));
            }
            checked += 1;
            missed_unknown += usize::from(inspect::likely(None, &target, None).unwrap() != chosen);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked > 40, "only {checked} choices checked");
    assert!(missed_unknown > 0, "the release never changed the guess");
}

// --------------------------------------------------------------- hand-made layouts

/// A gzip layer of files; `(name, None)` is a whiteout of `name`.
fn layer(entries: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
    let names: Vec<(String, &[u8], u32)> = entries
        .iter()
        .map(|(n, d)| match d {
            Some(d) => (n.to_string(), *d, 0o755),
            None => {
                let (dir, base) = n.rsplit_once('/').unwrap();
                (format!("{dir}/.wh.{base}"), &b""[..], 0o644)
            }
        })
        .collect();
    let files: Vec<(&str, &[u8], u32)> =
        names.iter().map(|(n, d, m)| (n.as_str(), *d, *m)).collect();
    crate::harness::gzip_layer(&files)
}

fn layout(dir: &Path, layers: &[Vec<u8>]) -> ImageRef {
    crate::harness::write_layout(dir, layers).parse().unwrap()
}

/// The bytes of the plain build and of one twin of a fixture (real dynamic ELF files).
fn fixture_builds(name: &str, twin: &str) -> (Vec<u8>, Vec<u8>) {
    let fx = fixture(name);
    let img = transport::open(
        &fx.reference("oci").parse().unwrap(),
        &OpenOptions::default(),
        &Default::default(),
    )
    .unwrap();
    let spool = tempfile::tempdir().unwrap();
    let ins = inspect::inspect(&img, spool.path()).unwrap();
    let bytes = |p: &str| {
        let b = ins.binaries.iter().find(|b| b.path == p).unwrap();
        std::fs::read(b.file()).unwrap()
    };
    (
        bytes("/usr/bin/machine-config-daemon"),
        bytes(&format!("/usr/bin/machine-config-daemon{twin}")),
    )
}

/// The RHEL 9 and RHEL 8 builds of the mco-4.16 fixture.
fn builds() -> (Vec<u8>, Vec<u8>) {
    fixture_builds("mco-4.16", ".rhel8")
}

const RHEL9_OS: &[u8] = b"ID=\"rhel\"\nVERSION_ID=\"9.4\"\nRHEL_VERSION=9.4\n";
const MCD: &str = "usr/bin/machine-config-daemon";
const RHEL8: &str = "usr/bin/machine-config-daemon.rhel8";

/// (chosen path, layers read) for a bootimage whose nodes stay on its OS (only the first
/// boot's question), checked against the full view.
fn choose(r: &ImageRef, bootimage: &str) -> Result<(String, Vec<usize>), String> {
    let img = transport::open(r, &OpenOptions::default(), &Default::default()).unwrap();
    let target = Target::new(bootimage.parse().unwrap(), None, None, "amd64").unwrap();
    let hint = inspect::ClusterHint {
        rhel: target.os.rhel(),
        release_version: None,
    };
    let spools = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let want = outcome(&pass(
        &img,
        &target,
        &hint,
        inspect::Reading::Everything,
        spools.0.path(),
    ));
    let lazy = pass(
        &img,
        &target,
        &hint,
        inspect::Reading::Lazy,
        spools.1.path(),
    );
    assert_eq!(
        want.clone().ok(),
        outcome(&lazy).ok(),
        "{want:?} vs {:?}",
        outcome(&lazy)
    );
    lazy.map(|(ins, b)| (ins.binaries[b.first.index].path.clone(), ins.layers_read))
        .map_err(|e| format!("{e:#}"))
}

/// An image whose one build fits the bootimage but not the cluster's OS: the refusal
/// names the second boot; told the cluster's OS is the bootimage's, or forced, it goes.
#[test]
fn a_build_that_fits_only_the_first_boot_is_refused_naming_the_second() {
    let (_, rhel8) = builds();
    let dir = tempfile::tempdir().unwrap();
    let base = layer(&[("usr/lib/os-release", Some(RHEL9_OS))]);
    let top = layer(&[(RHEL8, Some(&rhel8))]);
    layout(&dir.path().join("image"), &[base, top]);
    let reference = format!("oci:{}:latest", dir.path().join("image").display());
    let out = dir.path().join("out.ign");
    let run = crate::harness::inject(&reference, "4.2", &out, &[]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr
            .contains("fits the second boot of the first boot, on the cluster's OS")
            && run.stderr.contains("RHEL 9")
            && run
                .stderr
                .contains("machine-config-daemon.rhel8 fits the first boot only")
            && run.stderr.contains("--cluster-rhel"),
        "{}",
        run.describe()
    );
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    let run = crate::harness::inject(&reference, "4.2", &out, &["--cluster-rhel", "8"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let run = crate::harness::inject(&reference, "4.2", &out, &["--force", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stderr
            .contains("--force: delivering /usr/bin/machine-config-daemon.rhel8")
            && run.stderr.contains("the cluster's OS (RHEL 9"),
        "{}",
        run.describe()
    );
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["boots"]["cluster_os"]["verdict"]["fits"], false, "{v:#}");
}

#[test]
fn the_top_layer_settles_an_mco_shaped_image() {
    let (rhel9, rhel8) = builds();
    let dir = tempfile::tempdir().unwrap();
    let base = layer(&[("usr/lib/os-release", Some(RHEL9_OS))]);
    let top = layer(&[(MCD, Some(&rhel9)), (RHEL8, Some(&rhel8))]);
    let r = layout(&dir.path().join("image"), &[base, top]);
    // RHEL 8 bootimage: the twin fits, the plain build does not: top layer only.
    assert_eq!(choose(&r, "4.2").unwrap(), (format!("/{RHEL8}"), vec![2]));
    // RHEL 9 bootimage: the plain build's ELF fits, which settles it: top layer only.
    assert_eq!(choose(&r, "4.16").unwrap(), (format!("/{MCD}"), vec![2]));

    // inject reads the base layer too: the twin does not run on the cluster's OS,
    // which the os-release there names (RHEL 9), so the plain build goes with it.
    let reference = format!("oci:{}:latest", dir.path().join("image").display());
    let out = dir.path().join("out.ign");
    let run = crate::harness::inject(&reference, "4.2", &out, &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stderr
            .contains("chose /usr/bin/machine-config-daemon.rhel8")
            && run.stderr.contains("read 2 of 2 layers (1, 2): ")
            && run
                .stderr
                .contains("the config also carries /usr/bin/machine-config-daemon (sha256"),
        "{}",
        run.describe()
    );
    // Told the cluster's OS is RHEL 8, it needs no os-release: the top layer settles it.
    let run = crate::harness::inject(&reference, "4.2", &out, &["--cluster-rhel", "8"]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stderr.contains("read 1 of 2 layers (2): ") && !run.stderr.contains("also carries"),
        "{}",
        run.describe()
    );
    let run = crate::harness::mcd_inject(["inspect", "--image", &reference]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        text.contains("read 2 of 2 layers (1, 2): ")
            && text.contains("   1* sha256:")
            && text.contains("   2* sha256:"),
        "{text}"
    );
}

/// An MCO 4.13-4.15 image (RHEL 8 base; a plain RHEL 8 build and its `.rhel9` twin in the
/// top layer): the plain build's ELF (libcrypto.so.1.1) settles the first boot, and Red
/// Hat's version label the cluster's OS (RHEL 9, whose build is the twin beside it): the
/// top layer alone. Without the label the os-release and the absence of newer twins
/// must be read, down to the bottom layer; the builds are the same.
#[test]
fn the_version_label_and_the_elf_settle_a_rhel8_image_in_its_top_layer() {
    let (rhel8, rhel9) = fixture_builds("mco-4.14", ".rhel9");
    const RHEL8_OS: &[u8] = b"ID=\"rhel\"\nVERSION_ID=\"8.6\"\nRHEL_VERSION=8.6\n";
    let base = layer(&[("usr/lib/os-release", Some(RHEL8_OS))]);
    let middle = layer(&[("usr/share/doc/mco/README", Some(b"a package layer\n"))]);
    let top = layer(&[
        (MCD, Some(&rhel8)),
        ("usr/bin/machine-config-daemon.rhel9", Some(&rhel9)),
    ]);
    let layers = [base, middle, top];
    let run = |labels: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("image");
        crate::harness::write_labelled_layout(&image, &layers, labels);
        let reference = format!("oci:{}:latest", image.display());
        let out = dir.path().join("out.ign");
        let run = crate::harness::inject(&reference, "4.2", &out, &[]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        assert!(
            run.stderr
                .contains("chose /usr/bin/machine-config-daemon (sha256")
                && run
                    .stderr
                    .contains("the config also carries /usr/bin/machine-config-daemon.rhel9"),
            "{}",
            run.describe()
        );
        run.stderr
    };
    let labelled = run(&[
        ("io.openshift.release.operator", "true"),
        ("version", "v4.14.0"),
    ]);
    assert!(labelled.contains("read 1 of 3 layers (3): "), "{labelled}");
    // A base image's version label does not count: only MCO's image says its release.
    let unlabelled = run(&[("version", "8.6")]);
    assert!(
        unlabelled.contains("read 3 of 3 layers (1, 2, 3): "),
        "{unlabelled}"
    );
}

#[test]
fn a_build_in_a_lower_layer_is_still_read() {
    let (rhel9, rhel8) = builds();
    let dir = tempfile::tempdir().unwrap();
    let base = layer(&[
        ("usr/lib/os-release", Some(RHEL9_OS)),
        (RHEL8, Some(&rhel8)),
    ]);
    let top = layer(&[(MCD, Some(&rhel9))]);
    let r = layout(dir.path(), &[base.clone(), top.clone()]);
    assert_eq!(
        choose(&r, "4.2").unwrap(),
        (format!("/{RHEL8}"), vec![1, 2])
    );

    // The same twin deleted by a whiteout in the top layer: nothing fits RHEL 8.
    let dir = tempfile::tempdir().unwrap();
    let top = layer(&[(MCD, Some(&rhel9)), (RHEL8, None)]);
    let r = layout(dir.path(), &[base, top]);
    let e = choose(&r, "4.2").unwrap_err();
    assert!(e.contains("no machine-config-daemon build fits"), "{e}");
}
