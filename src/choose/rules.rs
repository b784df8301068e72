//! Which MCD build fits a target: verdicts with reasons, candidate order, the choice.
//!
//! The image's os-release only orders the candidates (MCO's own rule; docs/design.md,
//! "What MCO images contain"); the ELF facts alone decide whether a binary fits.

use std::fmt;

use serde::Serialize;

use crate::choose::elf::{DottedVersion, ElfFacts, Linkage};
use crate::choose::mco::MCD_NAME;
use crate::choose::osrelease::OsRelease;
use crate::choose::target::{HostOs, Target, BOOTIMAGES};

/// Whether a binary fits a target, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// True when the binary runs on the target.
    pub compatible: bool,
    /// Why, or why not: one reason per check.
    pub reasons: Vec<String>,
}

impl Verdict {
    /// The reasons, joined for one line.
    pub fn because(&self) -> String {
        self.reasons.join("; ")
    }
}

/// The program interpreter RHEL uses on an architecture.
pub fn rhel_interpreter(arch: &str) -> Option<&'static str> {
    match arch {
        "amd64" => Some("/lib64/ld-linux-x86-64.so.2"),
        "arm64" => Some("/lib/ld-linux-aarch64.so.1"),
        "ppc64le" => Some("/lib64/ld64.so.2"),
        "s390x" => Some("/lib/ld64.so.1"),
        _ => None,
    }
}

/// The OpenSSL family of a libcrypto/libssl soname or an `OPENSSL_*` version node.
fn openssl_family(name: &str) -> Option<&'static str> {
    let tail = name
        .strip_prefix("OPENSSL_")
        .or_else(|| name.strip_prefix("libcrypto.so."))
        .or_else(|| name.strip_prefix("libssl.so."))?;
    if tail.starts_with('3') {
        Some("3")
    } else if tail.starts_with("1_1") || tail.starts_with("1.1") {
        Some("1.1")
    } else if tail.starts_with("1_0") || tail.starts_with("1.0") || tail == "10" {
        Some("1.0")
    } else {
        None
    }
}

/// Judges ELF facts against a target.
pub fn verdict(facts: &ElfFacts, target: &Target) -> Verdict {
    let mut bad = Vec::new();
    let mut good = Vec::new();
    if facts.arch != target.arch {
        bad.push(format!(
            "machine is {}, the node is {}",
            facts.arch, target.arch
        ));
    }
    if facts.class != 64 {
        bad.push(format!(
            "{}-bit ELF; RHCOS runs 64-bit binaries",
            facts.class
        ));
    }
    if facts.linkage == Linkage::Static {
        if bad.is_empty() {
            good.push(format!(
                "static {} binary: needs nothing from RHEL",
                facts.arch
            ));
        }
        return finish(bad, good);
    }
    let os = target.os;
    match (&facts.interpreter, rhel_interpreter(&target.arch)) {
        (Some(i), Some(want)) if i != want => {
            bad.push(format!("interpreter {i} is not {os}'s {want}"))
        }
        (None, _) => good.push("no interpreter (static-pie)".into()),
        _ => {}
    }
    match &facts.max_glibc {
        Some(need) if *need > target.glibc_version() => bad.push(format!(
            "needs GLIBC_{need}, {os} has glibc {}",
            target.glibc
        )),
        Some(need) => good.push(format!("needs GLIBC_{need} <= {} ({os})", target.glibc)),
        None => good.push("needs no GLIBC version".into()),
    }
    let mut links_openssl = false;
    for (prefix, have) in [
        ("libcrypto.so", &target.libcrypto),
        ("libssl.so", &target.libssl),
    ] {
        for soname in facts.needed.iter().filter(|n| n.starts_with(prefix)) {
            links_openssl = true;
            if soname == have {
                good.push(format!("{soname} is {os}'s"));
            } else {
                bad.push(format!("links {soname}, {os} has {have}"));
            }
        }
    }
    let want_family = openssl_family(&target.libcrypto);
    let foreign: Vec<&str> = facts
        .openssl_versions
        .iter()
        .map(String::as_str)
        .filter(|n| openssl_family(n) != want_family)
        .collect();
    if !foreign.is_empty() {
        bad.push(format!(
            "needs OpenSSL version nodes {} that {os}'s {} lacks",
            foreign.join(", "),
            target.libcrypto
        ));
    } else if !facts.openssl_versions.is_empty() {
        good.push(format!(
            "OpenSSL nodes {} match",
            facts.openssl_versions.join(", ")
        ));
    } else if !links_openssl {
        good.push("links no OpenSSL".into());
    }
    finish(bad, good)
}

/// What a build's closure offers, for its verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClosureFit {
    /// Files: the loader and the libraries.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// The oldest kernel its glibc runs on, as its ELF notes say.
    pub min_kernel: Option<DottedVersion>,
}

/// Judges a build that does not fit `target` natively when it runs through the loader
/// and libraries of its own image (`closure`, or why they could not be taken): the
/// machine must be the node's and the bootimage's kernel new enough for that glibc.
pub fn closure_verdict(
    facts: &ElfFacts,
    closure: &Result<ClosureFit, String>,
    target: &Target,
) -> Verdict {
    let mut bad = Vec::new();
    let mut good = Vec::new();
    if facts.arch != target.arch || facts.class != 64 {
        bad.push(format!(
            "a {} ELF{} build cannot run on a {} node with any libraries",
            facts.arch, facts.class, target.arch
        ));
    }
    match closure {
        Err(e) => bad.push(format!(
            "its loader and libraries cannot be taken from the image: {e}"
        )),
        Ok(c) => {
            good.push(format!(
                "runs with its own loader and libraries from the image: {} files, {} bytes",
                c.files, c.bytes
            ));
            match &c.min_kernel {
                Some(k) if *k > target.kernel_version() => bad.push(format!(
                    "the image's glibc needs Linux {k}, {}'s kernel is {}",
                    target.os, target.kernel
                )),
                Some(k) => good.push(format!(
                    "the image's glibc needs Linux {k} <= {} ({})",
                    target.kernel, target.os
                )),
                None => good.push("the image's glibc names no oldest kernel".into()),
            }
        }
    }
    finish(bad, good)
}

fn finish(bad: Vec<String>, good: Vec<String>) -> Verdict {
    if bad.is_empty() {
        Verdict {
            compatible: true,
            reasons: good,
        }
    } else {
        Verdict {
            compatible: false,
            reasons: bad,
        }
    }
}

/// The RHEL major version of an image, read the way MCO reads it
/// ([`OsRelease::rhel_major`], the one reading of it).
pub fn image_rhel(os: &OsRelease) -> Option<u32> {
    os.rhel_major()
}

/// The RHEL a build was made for, by its name: the plain name is built on the image's
/// own base, `.rhelN` twins on RHEL N. MCO forms the twin's name from the host's major
/// (`machine-config-daemon.rhel9`), so only a plain decimal counts (`.rhel09` and
/// `.rhel+9` are other names): exactly one name is the twin for a RHEL.
pub fn nominal_rhel(path: &str, image_rhel: Option<u32>) -> Option<u32> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let suffix = name.strip_prefix(MCD_NAME)?;
    if suffix.is_empty() {
        return image_rhel;
    }
    let n = suffix.strip_prefix(".rhel")?;
    let canonical = !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && !(n.starts_with('0') && n.len() > 1);
    canonical.then(|| n.parse().ok()).flatten()
}

/// A binary that could be chosen.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// The path in the image.
    pub path: String,
    /// The sha256 of its content, in hex.
    pub sha256: String,
    /// The ELF facts, or why they could not be read.
    pub facts: Result<ElfFacts, String>,
}

impl Candidate {
    /// The verdict of this candidate for a target.
    pub fn verdict(&self, target: &Target) -> Verdict {
        match &self.facts {
            Ok(f) => verdict(f, target),
            Err(e) => Verdict {
                compatible: false,
                reasons: vec![format!("not a usable ELF binary: {e}")],
            },
        }
    }
}

/// The candidate indexes in the order they are tried: built for the target's RHEL
/// first, then the plain name, then by path. A Fedora CoreOS host gets the plain build
/// first, as MCO's re-exec gives it (no `.rhelN` name is for it).
pub fn order(candidates: &[Candidate], os: Option<&OsRelease>, target: &Target) -> Vec<usize> {
    let img = os.and_then(image_rhel);
    let mut idx: Vec<usize> = (0..candidates.len()).collect();
    idx.sort_by_key(|&i| {
        let p = &candidates[i].path;
        let plain = p.rsplit('/').next() == Some(MCD_NAME);
        let nominal = nominal_rhel(p, img);
        let first = match target.os.rhel() {
            Some(t) => nominal == Some(t),
            None => plain,
        };
        (!first, nominal.is_none(), !plain, p.clone())
    });
    idx
}

/// The chosen binary.
#[derive(Clone, Debug)]
pub struct Choice {
    /// Its index among the candidates (and the inspection's binaries).
    pub index: usize,
    /// Its verdict for the target.
    pub verdict: Verdict,
    /// Chosen although incompatible, because the user forced it.
    pub forced: bool,
    /// Runs on the target through the loader and libraries of its own image (the
    /// verdict is then the closure's).
    pub closure: bool,
}

/// Why no binary was chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// No candidate fits the target.
    #[error("no {MCD_NAME} build fits {target}:{}\n{advice}", list(.rejected))]
    NothingFits {
        /// The target, described.
        target: String,
        /// Each candidate, with why it does not fit.
        rejected: Vec<(String, Verdict)>,
        /// The conclusion, and what to do next.
        advice: String,
    },
    /// `--binary-path` names no build the image holds.
    #[error(
        "--binary-path {path}: the image has no such build; {}",
        if .builds.is_empty() {
            format!("it has no /usr/bin/{MCD_NAME}* file")
        } else {
            format!("its builds: {} (`inspect` shows them)", .builds.join(", "))
        }
    )]
    NotACandidate {
        /// The path given.
        path: String,
        /// The builds the image has.
        builds: Vec<String>,
    },
    /// `--binary-path` names a build that does not fit, without `--force`.
    #[error("{path} does not fit {target}: {} (leave out --binary-path to let inject choose, or add --force to deliver it anyway)", .verdict.because())]
    Incompatible {
        /// The build named.
        path: String,
        /// The target, described.
        target: String,
        /// Why it does not fit.
        verdict: Verdict,
    },
}

fn list(rejected: &[(String, Verdict)]) -> String {
    if rejected.is_empty() {
        return format!(" the image has no /usr/bin/{MCD_NAME}* file");
    }
    rejected
        .iter()
        .map(|(p, v)| format!("\n  {p}: {}", v.because()))
        .collect()
}

/// A short name of a target for messages.
pub fn describe(target: &Target) -> String {
    format!(
        "bootimage {} ({}, {}: glibc {}, {})",
        target.bootimage, target.arch, target.os, target.glibc, target.libcrypto
    )
}

/// Picks the first fitting candidate in [`order`], or the one at `forced_path`
/// (`--binary-path`), which must fit unless `force`.
pub fn choose(
    candidates: &[Candidate],
    os: Option<&OsRelease>,
    target: &Target,
    forced_path: Option<&str>,
    force: bool,
) -> Result<Choice, SelectError> {
    if let Some(p) = forced_path {
        let Some(index) = candidates.iter().position(|c| c.path == p) else {
            return Err(SelectError::NotACandidate {
                path: p.to_string(),
                builds: candidates.iter().map(|c| c.path.clone()).collect(),
            });
        };
        let verdict = candidates[index].verdict(target);
        if !verdict.compatible && !force {
            return Err(SelectError::Incompatible {
                path: p.to_string(),
                target: describe(target),
                verdict,
            });
        }
        let forced = !verdict.compatible;
        return Ok(Choice {
            index,
            verdict,
            forced,
            closure: false,
        });
    }
    let mut rejected = Vec::new();
    for i in order(candidates, os, target) {
        let v = candidates[i].verdict(target);
        if v.compatible {
            return Ok(Choice {
                index: i,
                verdict: v,
                forced: false,
                closure: false,
            });
        }
        rejected.push((candidates[i].path.clone(), v));
    }
    Err(SelectError::NothingFits {
        target: describe(target),
        rejected,
        advice: advice(candidates, target),
    })
}

/// The bootimages of the table, on the target's architecture, that some candidate fits:
/// the RHCOS rows for an RHCOS target, the OKD rows for an OKD one.
fn fitting_rows(candidates: &[Candidate], target: &Target) -> Vec<usize> {
    let rhcos = target.bootimage.ocp().is_some();
    (0..BOOTIMAGES.len())
        .filter(|&i| BOOTIMAGES[i].id.ocp().is_some() == rhcos)
        .filter(|&i| {
            Target::new(BOOTIMAGES[i].id, None, None, &target.arch)
                .is_ok_and(|t| candidates.iter().any(|c| c.verdict(&t).compatible))
        })
        .collect()
}

/// Rows of the table as ranges of releases: `4.1-4.12, 4.14`.
fn ranges(rows: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let mut j = i;
        while j + 1 < rows.len() && rows[j + 1] == rows[j] + 1 {
            j += 1;
        }
        let (a, b) = (BOOTIMAGES[rows[i]].id, BOOTIMAGES[rows[j]].id);
        out.push(if i == j {
            a.to_string()
        } else {
            format!("{a}-{b}")
        });
        i = j + 1;
    }
    out.join(", ")
}

/// When no build fits: the conclusion, and the ways forward.
fn advice(candidates: &[Candidate], target: &Target) -> String {
    let boot = target.bootimage;
    if candidates.is_empty() {
        return "This is not a machine-config-operator image: give --image the \
                machine-config-operator image of the cluster's release, or give --release the \
                release image itself (`oc adm release info --image-for=machine-config-operator` \
                names the former)."
            .to_string();
    }
    let rows = fitting_rows(candidates, target);
    if rows.is_empty() {
        let mut archs: Vec<&str> = candidates
            .iter()
            .filter_map(|c| c.facts.as_ref().ok().map(|f| f.arch.as_str()))
            .collect();
        archs.sort_unstable();
        archs.dedup();
        if !archs.is_empty() && !archs.contains(&target.arch.as_str()) {
            return format!(
                "No build of this image can run on a {} node: its builds are for {}. Give \
                 the node's platform with --platform (a multi-arch image holds one image per \
                 platform), or the machine-config-operator image built for {}.",
                target.arch,
                archs.join(", "),
                target.arch
            );
        }
        return format!(
            "No build of this image runs on any bootimage {} knows of: check that --image \
             names a machine-config-operator image (`mcd-inject inspect` shows what it holds).",
            env!("CARGO_PKG_NAME")
        );
    }
    let first = BOOTIMAGES[rows[0]].id;
    let last = BOOTIMAGES[rows[rows.len() - 1]].id;
    let runs_on = format!(
        "its builds run on bootimages {} ({})",
        ranges(&rows),
        rhels(&rows)
    );
    if boot < first {
        let older = if target.os == HostOs::Rhel(8) {
            "; MCO images up to 4.22 carry a RHEL 8 build (machine-config-daemon.rhel8)"
        } else {
            ""
        };
        format!(
            "No build of this image can run on bootimage {boot} ({}): {runs_on}. Ways \
             forward: boot the node from a newer bootimage ({first} or later); on platforms \
             that have them, MCO's managed boot images (managedBootImages in the cluster's \
             MachineConfiguration) keep the machine sets' bootimages current. Or, when the \
             cluster runs an older release than this image, inject the \
             machine-config-operator image of the cluster's own release (--release with its \
             release image){older}.",
            target.os
        )
    } else if boot > last {
        format!(
            "No build of this image can run on bootimage {boot} ({}): {runs_on}. Use \
             the machine-config-operator image of the cluster's release (--release with its \
             release image): a release that boots {boot} nodes carries a build for them.",
            target.os
        )
    } else {
        format!(
            "No build of this image can run on a {} node: {runs_on}. Check that \
             --target-rhel or --target-os-release describe the node.",
            target.os
        )
    }
}

/// The OS majors of table rows: `RHEL 9, 10`, `Fedora 33, 34; RHEL 9`.
fn rhels(rows: &[usize]) -> String {
    let majors = |f: fn(HostOs) -> Option<u32>| {
        let mut m: Vec<u32> = rows.iter().filter_map(|&i| f(BOOTIMAGES[i].os)).collect();
        m.sort_unstable();
        m.dedup();
        m.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    };
    [
        ("Fedora", majors(HostOs::fedora)),
        ("RHEL", majors(HostOs::rhel)),
    ]
    .into_iter()
    .filter(|(_, m)| !m.is_empty())
    .map(|(family, m)| format!("{family} {m}"))
    .collect::<Vec<_>>()
    .join("; ")
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.facts {
            Ok(x) => write!(f, "{} ({})", self.path, x.summary()),
            Err(e) => write!(f, "{} (unreadable: {e})", self.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::target::BootimageId;

    fn dynamic(glibc: &str, crypto: &str, node: &str) -> ElfFacts {
        ElfFacts {
            arch: "amd64".into(),
            class: 64,
            linkage: Linkage::Dynamic,
            interpreter: Some("/lib64/ld-linux-x86-64.so.2".into()),
            needed: vec![crypto.into(), "libc.so.6".into()],
            max_glibc: Some(glibc.parse().unwrap()),
            openssl_versions: vec![node.into()],
            runpath: vec![],
            rpath: vec![],
            min_kernel: None,
        }
    }

    fn rhel8() -> ElfFacts {
        dynamic("2.28", "libcrypto.so.1.1", "OPENSSL_1_1_0")
    }

    fn rhel9() -> ElfFacts {
        dynamic("2.34", "libcrypto.so.3", "OPENSSL_3.0.0")
    }

    fn target(v: &str) -> Target {
        Target::new(v.parse::<BootimageId>().unwrap(), None, None, "amd64").unwrap()
    }

    fn cand(path: &str, f: ElfFacts) -> Candidate {
        Candidate {
            path: path.into(),
            sha256: String::new(),
            facts: Ok(f),
        }
    }

    #[test]
    fn rhel8_build_fits_rhel8_only() {
        assert!(verdict(&rhel8(), &target("4.2")).compatible);
        let v = verdict(&rhel8(), &target("4.14"));
        assert!(!v.compatible);
        assert!(v.because().contains("libcrypto.so.1.1"), "{v:?}");
    }

    #[test]
    fn rhel9_build_is_refused_on_rhel8_with_reasons() {
        let v = verdict(&rhel9(), &target("4.2"));
        assert!(!v.compatible);
        let r = v.because();
        assert!(r.contains("GLIBC_2.34"), "{r}");
        assert!(r.contains("libcrypto.so.3"), "{r}");
        assert!(r.contains("OPENSSL_3.0.0"), "{r}");
        assert!(verdict(&rhel9(), &target("4.16")).compatible);
    }

    #[test]
    fn static_fits_all_of_its_machine() {
        let mut s = ElfFacts {
            arch: "amd64".into(),
            class: 64,
            linkage: Linkage::Static,
            interpreter: None,
            needed: vec![],
            max_glibc: None,
            openssl_versions: vec![],
            runpath: vec![],
            rpath: vec![],
            min_kernel: None,
        };
        assert!(verdict(&s, &target("4.1")).compatible);
        assert!(verdict(&s, &target("4.19")).compatible);
        s.arch = "arm64".into();
        assert!(!verdict(&s, &target("4.1")).compatible);
    }

    #[test]
    fn os_release_orders_but_elf_decides() {
        let os = OsRelease::parse("ID=\"rhel\"\nVERSION_ID=\"9.4\"\n");
        let c = vec![
            cand("/usr/bin/machine-config-daemon", rhel9()),
            cand("/usr/bin/machine-config-daemon.rhel8", rhel8()),
        ];
        let pick = |v| {
            choose(&c, Some(&os), &target(v), None, false)
                .unwrap()
                .index
        };
        assert_eq!(pick("4.2"), 1);
        assert_eq!(pick("4.16"), 0);
        // A misnamed twin: the name says RHEL 8 but the ELF says RHEL 9.
        let lying = vec![
            cand("/usr/bin/machine-config-daemon.rhel8", rhel9()),
            cand("/usr/bin/machine-config-daemon", rhel8()),
        ];
        let os8 = OsRelease::parse("ID=rhel\nVERSION_ID=9.4\n");
        let ch = choose(&lying, Some(&os8), &target("4.2"), None, false).unwrap();
        assert_eq!(ch.index, 1);
    }

    #[test]
    fn rhel10_bootimages_and_rhel10_containers() {
        // 5.x bootimages are RHEL 10: MCO's RHEL 9 build runs there.
        assert!(verdict(&rhel9(), &target("5.0")).compatible);
        assert!(!verdict(&rhel8(), &target("5.0")).compatible);
        // MCO's re-exec rule: a RHEL 10 container carries `.rhel9` twins for RHEL 9 hosts.
        let rhel10 = dynamic("2.39", "libcrypto.so.3", "OPENSSL_3.2.0");
        let os = OsRelease::parse("ID=\"rhel\"\nVERSION_ID=\"10.2\"\nVARIANT_ID=coreos\n");
        assert_eq!(image_rhel(&os), Some(10));
        let c = vec![
            cand("/usr/bin/machine-config-daemon", rhel10),
            cand("/usr/bin/machine-config-daemon.rhel9", rhel9()),
        ];
        let pick = |v| {
            choose(&c, Some(&os), &target(v), None, false)
                .unwrap()
                .index
        };
        assert_eq!(pick("5.0"), 0);
        assert_eq!(pick("4.22"), 1);
        let v = verdict(&c[0].facts.clone().unwrap(), &target("4.22"));
        assert!(
            v.because()
                .contains("needs GLIBC_2.39, RHEL 9 has glibc 2.34"),
            "{v:?}"
        );
    }

    #[test]
    fn nothing_fits_lists_every_candidate() {
        let c = vec![
            cand("/usr/bin/machine-config-daemon", rhel9()),
            Candidate {
                path: "/usr/bin/machine-config-daemon.sh".into(),
                sha256: String::new(),
                facts: Err("not an ELF file".into()),
            },
        ];
        let e = choose(&c, None, &target("4.2"), None, false).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/usr/bin/machine-config-daemon:"), "{msg}");
        assert!(
            msg.contains("machine-config-daemon.sh: not a usable ELF"),
            "{msg}"
        );
    }

    #[test]
    fn nothing_fits_says_what_to_do() {
        let rhel9_only = vec![cand("/usr/bin/machine-config-daemon", rhel9())];
        let e = choose(&rhel9_only, None, &target("4.8"), None, false)
            .unwrap_err()
            .to_string();
        for needle in [
            "No build of this image can run on bootimage 4.8 (RHEL 8)",
            "its builds run on bootimages 4.13-5.2 (RHEL 9, 10)",
            "a newer bootimage (4.13 or later)",
            "managedBootImages",
            "--release",
            "machine-config-daemon.rhel8",
        ] {
            assert!(e.contains(needle), "{needle:?} in {e}");
        }
        let rhel8_only = vec![cand("/usr/bin/machine-config-daemon", rhel8())];
        let e = choose(&rhel8_only, None, &target("4.16"), None, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bootimages 4.1-4.12 (RHEL 8)"), "{e}");
        assert!(e.contains("a release that boots 4.16 nodes"), "{e}");
        let mut arm = rhel9();
        arm.arch = "arm64".into();
        let e = choose(
            &[cand("/usr/bin/machine-config-daemon", arm)],
            None,
            &target("4.16"),
            None,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("its builds are for arm64"), "{e}");
        assert!(e.contains("--platform"), "{e}");
        let e = choose(&[], None, &target("4.16"), None, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a machine-config-operator image"), "{e}");
        let e = choose(
            &rhel9_only,
            None,
            &target("4.16"),
            Some("/usr/bin/x"),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("its builds: /usr/bin/machine-config-daemon"),
            "{e}"
        );
    }

    #[test]
    fn forced_path_is_checked() {
        let c = vec![cand("/usr/bin/machine-config-daemon", rhel9())];
        let p = Some("/usr/bin/machine-config-daemon");
        assert!(matches!(
            choose(&c, None, &target("4.2"), p, false),
            Err(SelectError::Incompatible { .. })
        ));
        let ch = choose(&c, None, &target("4.2"), p, true).unwrap();
        assert!(ch.forced);
    }

    #[test]
    fn reads_rhel_like_mco() {
        let r = |t: &str| image_rhel(&OsRelease::parse(t));
        assert_eq!(r("ID=rhcos\nVERSION_ID=4.18\nRHEL_VERSION=9.4\n"), Some(9));
        assert_eq!(r("ID=rhcos\nVERSION_ID=42.80\n"), Some(8));
        assert_eq!(r("ID=\"rhel\"\nVERSION_ID=\"8.6\"\n"), Some(8));
        assert_eq!(r("ID=debian\nVERSION_ID=12\n"), None);
        assert_eq!(
            nominal_rhel("/usr/bin/machine-config-daemon.rhel9", Some(8)),
            Some(9)
        );
        assert_eq!(
            nominal_rhel("/usr/bin/machine-config-daemon", Some(8)),
            Some(8)
        );
        assert_eq!(
            nominal_rhel("/usr/bin/machine-config-daemon.x", Some(8)),
            None
        );
        for other in [".rhel09", ".rhel+9", ".rhel", ".rhel9x"] {
            let p = format!("/usr/bin/machine-config-daemon{other}");
            assert_eq!(nominal_rhel(&p, Some(8)), None, "{p}");
        }
    }
}
