//! What this tool puts on the node (docs/design.md, "What the config puts on the node"), as a neutral [`Config`]: the
//! payload, the install script and its unit, the firstboot unit, the symlink, the
//! legacy switches and the provenance record.

use super::{Config, Dropin, File, Link, Source, Unit};

/// The compressed binary, at a persistent path.
pub const PAYLOAD_PATH: &str = "/var/lib/mcd-inject/machine-config-daemon.gz";
/// The script that installs the binary into `/run/bin`.
pub const SCRIPT_PATH: &str = "/var/lib/mcd-inject/mco-mcd-install.sh";
/// The script that pins NIC names before the firstboot, as MCO 4.13+'s `--persist-nics`
/// pass does with `nmstatectl persist-nic-names` (docs/firstboot.md).
pub const PERSIST_NICS_SCRIPT_PATH: &str = "/var/lib/mcd-inject/mco-persist-nics.sh";
/// Where the binary came from.
pub const PROVENANCE_PATH: &str = "/var/lib/mcd-inject/provenance.json";
/// Where the binary runs from; `/run` is a tmpfs, so it is installed at boot.
pub const RUN_BINARY: &str = "/run/bin/machine-config-daemon";
/// The symlink MCO also makes.
pub const LINK_PATH: &str = "/usr/local/bin/machine-config-daemon";

pub const INSTALL_UNIT: &str = "mco-mcd-install.service";
/// MCO's firstboot unit. The cluster's config brings its own text of it, which wins
/// at boot; our behaviour is in [`DROPIN`], which survives that merge.
pub const FIRSTBOOT_UNIT: &str = "machine-config-daemon-firstboot.service";
/// MCO's pull unit (podman pull of the MCO image); skipped through [`DROPIN`].
pub const PULL_UNIT: &str = "machine-config-daemon-pull.service";
/// Baked into the 4.1 OS; raced with the MCD firstboot unit (BZ 1842906).
pub const PIVOT_UNIT: &str = "pivot.service";
/// The name of our drop-ins on MCO's units. MCO never uses it, so Ignition keeps it
/// when the cluster's config is merged at boot (spec 3 merges drop-ins by name; v0.x
/// writes every entry); it sorts after MCO's own `10-` drop-ins, so it applies last.
pub const DROPIN: &str = "99-mcd-inject.conf";
/// What the firstboot runs.
pub const FIRSTBOOT_ARGV: &str = "/run/bin/machine-config-daemon firstboot-complete-machineconfig";
/// Makes `firstboot-complete-machineconfig` of MCO 4.13+ skip its re-exec into
/// `/rootfs` (`ReexecuteForTargetRoot`), which fails on a host and retries for ever;
/// MCDs of 4.6-4.12 ignore it. (`--root-mount=/` does the same, but 4.6-4.12 refuse
/// the flag.)
pub const REEXEC_ENV: &str = "_MCD_DID_REEXEC=1";

/// MCO units of clusters before 4.6 that only a base brings; they are taken out of a
/// merged base.
pub const REMOVED_MCO_UNITS: [&str; 2] = [
    "machine-config-daemon-host.service",
    "machine-config-daemon-firstboot-v42.service",
];

/// The placeholders in the install script: the binary's sha256, and the other build's
/// RHEL major and sha256.
const SHA256_PLACEHOLDER: &str = "@MCD_SHA256@";
const OTHER_RHEL_PLACEHOLDER: &str = "@OTHER_RHEL@";
const OTHER_SHA256_PLACEHOLDER: &str = "@OTHER_SHA256@";
const CLOSURE_FILES_PLACEHOLDER: &str = "@CLOSURE_FILES@";
const CLOSURE_NATIVE_PLACEHOLDER: &str = "@CLOSURE_NATIVE@";
const SCRIPT_TEMPLATE: &str = include_str!("mco-mcd-install.sh");
/// The install script's part for a build delivered with its closure, in place of its
/// `@CLOSURE@` line.
const CLOSURE_TEMPLATE: &str = include_str!("mco-mcd-install-closure.sh");
const CLOSURE_PLACEHOLDER: &str = "@CLOSURE@\n";
const PERSIST_NICS_SOURCE: &str = include_str!("mco-persist-nics.sh");

/// The NIC-persisting script as the config carries it: the source less its comment and
/// blank lines (the `#!` line stays), which keeps remote-mode configs small.
pub fn persist_nics_script() -> String {
    without_comments(PERSIST_NICS_SOURCE)
}

/// A shell script less its comment and blank lines; a first `#!` line stays. (Our
/// scripts put no `#` at the start of a line inside a string or a here-document.)
fn without_comments(source: &str) -> String {
    let mut out = String::new();
    for (i, l) in source.lines().enumerate() {
        let comment = l.trim_start().starts_with('#') && !(i == 0 && l.starts_with("#!"));
        if !comment && !l.trim().is_empty() {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Where the build for hosts of RHEL `rhel` lies, when the config carries a second one.
pub fn other_payload_path(rhel: u32) -> String {
    format!("/var/lib/mcd-inject/machine-config-daemon.rhel{rhel}.gz")
}

/// The name of a payload beside the first's (its URL, its file): `.TAG` before a final
/// `.gz`, else appended.
fn beside(first: &str, tag: &str) -> String {
    match first.strip_suffix(".gz") {
        Some(stem) => format!("{stem}.{tag}.gz"),
        None => format!("{first}.{tag}"),
    }
}

/// The name of the second build's payload beside the first's: `.rhelN` ([`beside`]).
pub fn other_name(first: &str, rhel: u32) -> String {
    beside(first, &format!("rhel{rhel}"))
}

/// Where a file of the first build's closure (its loader or a library, by the name it
/// is installed as) lies.
pub fn closure_payload_path(name: &str) -> String {
    format!("{CLOSURE_DIR}/{name}.gz")
}

/// The directory of the closure's payloads.
pub const CLOSURE_DIR: &str = "/var/lib/mcd-inject/closure";

/// The name of a closure file's payload beside the first build's: `.NAME` ([`beside`]).
pub fn closure_name(first: &str, name: &str) -> String {
    beside(first, name)
}

/// Whether `name` can be a closure file's name: one path component of the characters
/// sonames use, which the install script reads unquoted.
pub fn is_closure_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
}

/// Whether a path is one of our payloads: the bootimage's build, another RHEL's, or a
/// file of the first build's closure.
pub fn is_payload_path(path: &str) -> bool {
    path == PAYLOAD_PATH
        || path
            .strip_prefix(CLOSURE_DIR)
            .and_then(|r| r.strip_prefix('/'))
            .and_then(|r| r.strip_suffix(".gz"))
            .is_some_and(is_closure_name)
        || path
            .strip_prefix("/var/lib/mcd-inject/machine-config-daemon.rhel")
            .and_then(|r| r.strip_suffix(".gz"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a path is one of the files this tool writes.
pub fn is_our_file(path: &str) -> bool {
    is_payload_path(path)
        || [SCRIPT_PATH, PROVENANCE_PATH, PERSIST_NICS_SCRIPT_PATH].contains(&path)
}

/// What the install script checks: the bootimage's build, and the build for hosts of
/// another RHEL major, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptHashes {
    /// sha256 of the bootimage's build.
    pub first: String,
    /// The other build's RHEL major and sha256.
    pub other: Option<(u32, String)>,
    /// The first build's closure, when it runs through the loader and libraries of its
    /// own image.
    pub closure: Option<ClosureHashes>,
}

/// What the install script knows of a closure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosureHashes {
    /// Each file by the name it is installed as, with its sha256: the loader first.
    pub files: Vec<(String, String)>,
    /// The RHEL majors whose hosts run the build natively, without its closure.
    pub native_rhel: Vec<u32>,
}

/// The install script for these builds.
pub fn install_script(h: &ScriptHashes) -> String {
    let (rhel, sha) = match &h.other {
        Some((r, s)) => (r.to_string(), s.as_str()),
        None => (String::new(), ""),
    };
    // Only a config that delivers a closure carries the part that installs one.
    let closure = h.closure.as_ref().map_or(String::new(), |c| {
        let files: Vec<String> = c.files.iter().map(|(n, s)| format!("{n}:{s}")).collect();
        let native: Vec<String> = c.native_rhel.iter().map(u32::to_string).collect();
        without_comments(CLOSURE_TEMPLATE)
            .replace(
                CLOSURE_FILES_PLACEHOLDER,
                &format!("\"{}\"", files.join(" ")),
            )
            .replace(
                CLOSURE_NATIVE_PLACEHOLDER,
                &format!("\"{}\"", native.join(" ")),
            )
    });
    without_comments(SCRIPT_TEMPLATE)
        .replace(SHA256_PLACEHOLDER, &h.first)
        .replace(OTHER_RHEL_PLACEHOLDER, &rhel)
        .replace(OTHER_SHA256_PLACEHOLDER, sha)
        .replace(CLOSURE_PLACEHOLDER, &closure)
}

fn is_sha256(h: &str) -> bool {
    h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The hashes an install script checks, if it is one of ours.
pub fn script_hashes(script: &str) -> Option<ScriptHashes> {
    let value = |key: &str| script.lines().find_map(|l| l.strip_prefix(key));
    let first = value("expected_sha256=").filter(|h| is_sha256(h))?;
    let other = match (value("other_rhel=")?, value("other_sha256=")?) {
        ("", "") => None,
        (r, h) if is_sha256(h) => Some((r.parse().ok()?, h.to_string())),
        _ => return None,
    };
    // The closure's lines, in a script that installs one.
    let quoted = |key: &str| value(key).map(|v| v.strip_prefix('"')?.strip_suffix('"'));
    let closure = match (quoted("closure_files="), quoted("closure_native=")) {
        (None, None) => None,
        (Some(Some(files)), Some(Some(native))) => {
            let files: Vec<(String, String)> = files
                .split_whitespace()
                .map(|e| {
                    let (n, h) = e.split_once(':')?;
                    (is_closure_name(n) && is_sha256(h)).then(|| (n.to_string(), h.to_string()))
                })
                .collect::<Option<_>>()?;
            let native_rhel: Vec<u32> = native
                .split_whitespace()
                .map(|r| r.parse().ok())
                .collect::<Option<_>>()?;
            if files.is_empty() {
                return None;
            }
            Some(ClosureHashes { files, native_rhel })
        }
        _ => return None,
    };
    Some(ScriptHashes {
        first: first.to_string(),
        other,
        closure,
    })
}

/// The install unit.
pub fn install_unit() -> String {
    format!(
        "[Unit]
Description=Install the machine-config-daemon delivered by mcd-inject
# Only until the first boot completes, like the MCD firstboot unit.
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
Before={FIRSTBOOT_UNIT}
# No ordering on the network: MCO's units of 4.16 and later order the network after
# the firstboot (through firstboot-osupdate.target), and the NIC names are pinned
# before the network is configured, as MCO's pass does in the firstboot unit.

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/bash {SCRIPT_PATH}
ExecStart=/bin/bash {PERSIST_NICS_SCRIPT_PATH}

[Install]
WantedBy=multi-user.target
"
    )
}

/// The firstboot unit for a node whose config has none of the cluster's: ordered as
/// MCO orders it since 4.12 (network first; before `kubelet-dependencies.target`;
/// required by `firstboot-osupdate.target`) and as 4.6 did (before crio and kubelet,
/// which require it). What it runs is in [`firstboot_dropin`], as for the cluster's
/// own unit.
pub fn firstboot_unit() -> String {
    format!(
        "[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
# The firstboot rebases the OS, from the network.
Wants=network-online.target
After=network-online.target {PULL_UNIT}
Before=kubelet-dependencies.target crio.service kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
# Disable existing repos (if any) so that OS extensions would use embedded RPMs only
ExecStartPre=-/usr/bin/sh -c \"sed -i 's/enabled=1/enabled=0/' /etc/yum.repos.d/*.repo\"
ExecStart={FIRSTBOOT_ARGV}
EnvironmentFile=-/etc/mco/proxy.env

[Install]
RequiredBy=firstboot-osupdate.target crio.service kubelet.service
WantedBy=multi-user.target
"
    )
}

/// The drop-in on MCO's firstboot unit, whatever text of it the node ends with: run
/// the delivered binary on the host (not MCO 4.13+'s `podman run` of the MCO image,
/// nor its NIC-persisting pass), with the environment it needs there, after it is
/// installed.
pub fn firstboot_dropin() -> String {
    format!(
        "# mcd-inject: run the machine-config-daemon this config delivers, on the host.
[Unit]
Requires={INSTALL_UNIT}
After={INSTALL_UNIT}

[Service]
Environment={REEXEC_ENV}
ExecStart=
ExecStart={FIRSTBOOT_ARGV}
"
    )
}

/// The pull unit drop-in: a failed condition skips the unit, which still satisfies
/// the units that require it (a mask would fail them).
pub fn pull_dropin() -> String {
    format!(
        "# mcd-inject: the config carries the machine-config-daemon; never pull it.
[Unit]
ConditionPathExists=!{PAYLOAD_PATH}
"
    )
}

/// One build the config carries, compressed.
#[derive(Clone, Debug)]
pub struct Build {
    /// The gzip payload, inline or at a URL.
    pub payload: Source,
    /// Hex sha512 of the gzip bytes.
    pub payload_sha512: String,
    /// Hex sha256 of the binary.
    pub binary_sha256: String,
}

/// One file of the first build's closure, compressed.
#[derive(Clone, Debug)]
pub struct ClosurePayload {
    /// The name it is installed as.
    pub name: String,
    /// The gzip payload, inline or at a URL.
    pub payload: Source,
    /// Hex sha512 of the gzip bytes.
    pub payload_sha512: String,
    /// Hex sha256 of the file.
    pub sha256: String,
}

/// The first build's closure, as delivered.
#[derive(Clone, Debug)]
pub struct ClosureDelivery {
    /// The loader first, then the libraries.
    pub files: Vec<ClosurePayload>,
    /// The RHEL majors whose hosts run the build natively.
    pub native_rhel: Vec<u32>,
}

/// What the config delivers.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The bootimage's build, installed on every host but `other`'s.
    pub first: Build,
    /// The build for hosts of another RHEL major (the cluster's OS), when the first
    /// does not run there.
    pub other: Option<(u32, Build)>,
    /// The loader and libraries the first build runs with on hosts whose own are too
    /// old for it.
    pub closure: Option<ClosureDelivery>,
    /// The provenance record, JSON.
    pub provenance: Vec<u8>,
    /// Mask the pre-4.6 `pivot.service` (4.1-4.5 targets).
    pub legacy_firstboot: bool,
}

fn sha512_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha512::digest(b))
}

/// The neutral config for a delivery.
pub fn config(d: &Delivery) -> Config {
    let inline = |path: &str, mode: u32, bytes: Vec<u8>| File {
        path: path.into(),
        mode,
        sha512: sha512_hex(&bytes),
        source: Source::Inline(bytes),
    };
    let payload = |path: String, b: &Build| File {
        path,
        mode: 0o600,
        source: b.payload.clone(),
        sha512: b.payload_sha512.clone(),
    };
    let hashes = ScriptHashes {
        first: d.first.binary_sha256.clone(),
        other: d.other.as_ref().map(|(r, b)| (*r, b.binary_sha256.clone())),
        closure: d.closure.as_ref().map(|c| ClosureHashes {
            files: c
                .files
                .iter()
                .map(|f| (f.name.clone(), f.sha256.clone()))
                .collect(),
            native_rhel: c.native_rhel.clone(),
        }),
    };
    let mut files = vec![payload(PAYLOAD_PATH.into(), &d.first)];
    if let Some((rhel, b)) = &d.other {
        files.push(payload(other_payload_path(*rhel), b));
    }
    for f in d.closure.iter().flat_map(|c| &c.files) {
        files.push(File {
            path: closure_payload_path(&f.name),
            mode: 0o600,
            source: f.payload.clone(),
            sha512: f.payload_sha512.clone(),
        });
    }
    files.extend([
        inline(SCRIPT_PATH, 0o755, install_script(&hashes).into_bytes()),
        inline(PROVENANCE_PATH, 0o644, d.provenance.clone()),
        inline(
            PERSIST_NICS_SCRIPT_PATH,
            0o755,
            persist_nics_script().into_bytes(),
        ),
    ]);
    let links = vec![Link {
        path: LINK_PATH.into(),
        target: RUN_BINARY.into(),
    }];
    let unit = |name: &str, contents: String| Unit {
        name: name.into(),
        contents: Some(contents),
        enabled: true,
        mask: false,
        dropins: vec![],
    };
    let dropin = |contents: String| Dropin {
        name: DROPIN.into(),
        contents,
    };
    let mut units = vec![
        unit(INSTALL_UNIT, install_unit()),
        Unit {
            dropins: vec![dropin(firstboot_dropin())],
            ..unit(FIRSTBOOT_UNIT, firstboot_unit())
        },
        Unit {
            name: PULL_UNIT.into(),
            contents: None,
            enabled: false,
            mask: false,
            dropins: vec![dropin(pull_dropin())],
        },
    ];
    if d.legacy_firstboot {
        units.push(Unit {
            name: PIVOT_UNIT.into(),
            contents: None,
            enabled: false,
            mask: true,
            dropins: vec![],
        });
    }
    Config {
        files,
        links,
        units,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_carries_the_hashes() {
        let one = ScriptHashes {
            first: "ab".repeat(32),
            other: None,
            closure: None,
        };
        let s = install_script(&one);
        assert_eq!(script_hashes(&s), Some(one));
        // The part that installs a closure comes only with one.
        assert!(!s.contains("closure") && !s.contains(CLOSURE_PLACEHOLDER.trim()));
        assert!(!s.contains(SHA256_PLACEHOLDER) && !s.contains(OTHER_RHEL_PLACEHOLDER));
        let two = ScriptHashes {
            first: "ab".repeat(32),
            other: Some((9, "cd".repeat(32))),
            closure: None,
        };
        assert_eq!(script_hashes(&install_script(&two)), Some(two));
        let closure = ScriptHashes {
            first: "ab".repeat(32),
            other: None,
            closure: Some(ClosureHashes {
                files: vec![
                    ("ld-linux-x86-64.so.2".into(), "01".repeat(32)),
                    ("libc.so.6".into(), "02".repeat(32)),
                ],
                native_rhel: vec![9, 10],
            }),
        };
        let with = install_script(&closure);
        assert!(with.contains("--library-path") && !with.contains("@CLOSURE"));
        assert!(!with
            .lines()
            .skip(1)
            .any(|l| l.trim_start().starts_with('#')));
        assert_eq!(script_hashes(&with), Some(closure));
        assert!(!is_closure_name("../x") && !is_closure_name(".x") && !is_closure_name("a b"));
        assert!(is_payload_path(&closure_payload_path("libc.so.6")));
        assert!(!is_payload_path("/var/lib/mcd-inject/closure/../x.gz"));
        assert_eq!(script_hashes(SCRIPT_TEMPLATE), None);
    }

    /// A delivery of one build, for a bootimage after 4.5.
    fn delivery() -> Delivery {
        Delivery {
            first: Build {
                payload: Source::Inline(vec![1]),
                payload_sha512: "0".repeat(128),
                binary_sha256: "0".repeat(64),
            },
            other: None,
            closure: None,
            provenance: b"{}".to_vec(),
            legacy_firstboot: false,
        }
    }

    #[test]
    fn every_target_gets_the_dropins_and_legacy_ones_the_pivot_mask() {
        let mut d = delivery();
        let c = config(&d);
        let names: Vec<&str> = c.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, [INSTALL_UNIT, FIRSTBOOT_UNIT, PULL_UNIT]);
        let firstboot = &c.units[1];
        assert_eq!(firstboot.dropins[0].name, DROPIN);
        let pull = &c.units[2];
        assert!(!pull.mask && pull.contents.is_none() && pull.dropins.len() == 1);
        d.legacy_firstboot = true;
        let c = config(&d);
        assert!(c.units.iter().any(|u| u.name == PIVOT_UNIT && u.mask));
    }

    #[test]
    fn the_install_unit_persists_nic_names_after_installing() {
        let u = install_unit();
        let starts: Vec<&str> = u
            .lines()
            .filter_map(|l| l.strip_prefix("ExecStart="))
            .collect();
        assert_eq!(
            starts,
            [
                format!("/bin/bash {SCRIPT_PATH}"),
                format!("/bin/bash {PERSIST_NICS_SCRIPT_PATH}")
            ]
        );
        let d = delivery();
        let c = config(&d);
        let f = c
            .files
            .iter()
            .find(|f| f.path == PERSIST_NICS_SCRIPT_PATH)
            .unwrap();
        assert_eq!(f.mode, 0o755);
        assert!(matches!(&f.source, Source::Inline(b) if *b == persist_nics_script().into_bytes()));
        let shipped = persist_nics_script();
        assert!(shipped.starts_with("#!/bin/bash\n") && !shipped.contains("\n#"));
        assert!(shipped.len() < PERSIST_NICS_SOURCE.len());
    }

    #[test]
    fn the_dropin_resets_execstart_and_sets_the_reexec_guard() {
        let d = firstboot_dropin();
        let lines: Vec<&str> = d.lines().collect();
        let reset = lines.iter().position(|l| *l == "ExecStart=").unwrap();
        assert_eq!(lines[reset + 1], format!("ExecStart={FIRSTBOOT_ARGV}"));
        assert!(lines.contains(&format!("Environment={REEXEC_ENV}").as_str()));
        assert!(!d.contains("--root-mount"), "4.6-4.12 MCDs refuse the flag");
    }
}
