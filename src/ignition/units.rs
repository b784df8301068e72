//! What this tool puts on the node (DESIGN.md §7), as a neutral [`Config`]: the
//! payload, the install script and its unit, the firstboot unit, the symlink, the
//! legacy switches and the provenance record.

use super::{Config, Dropin, File, Link, Source, Unit};

/// The compressed binary, at a persistent path.
pub const PAYLOAD_PATH: &str = "/var/lib/mcd-inject/machine-config-daemon.gz";
/// The script that installs the binary into `/run/bin`.
pub const SCRIPT_PATH: &str = "/var/lib/mcd-inject/mco-mcd-install.sh";
/// Where the binary came from.
pub const PROVENANCE_PATH: &str = "/var/lib/mcd-inject/provenance.json";
/// Where the binary runs from; `/run` is a tmpfs, so it is installed at boot.
pub const RUN_BINARY: &str = "/run/bin/machine-config-daemon";
/// The symlink MCO also makes.
pub const LINK_PATH: &str = "/usr/local/bin/machine-config-daemon";

pub const INSTALL_UNIT: &str = "mco-mcd-install.service";
pub const FIRSTBOOT_UNIT: &str = "machine-config-daemon-firstboot.service";
pub const PULL_UNIT: &str = "machine-config-daemon-pull.service";
/// Baked into the 4.1 OS; raced with the MCD firstboot unit (BZ 1842906).
pub const PIVOT_UNIT: &str = "pivot.service";
/// The drop-in that keeps the pull unit from fetching what the config carries.
pub const PULL_DROPIN: &str = "10-mcd-inject.conf";

/// The MCO units that only a base config brings; they are taken out of a merged base.
pub const REMOVED_MCO_UNITS: [&str; 3] = [
    PULL_UNIT,
    "machine-config-daemon-host.service",
    "machine-config-daemon-firstboot-v42.service",
];

/// The placeholder in the install script that the binary's sha256 replaces.
const SHA256_PLACEHOLDER: &str = "@MCD_SHA256@";
const SCRIPT_TEMPLATE: &str = include_str!("mco-mcd-install.sh");

/// The install script for a binary of this sha256.
pub fn install_script(binary_sha256: &str) -> String {
    SCRIPT_TEMPLATE.replace(SHA256_PLACEHOLDER, binary_sha256)
}

/// The sha256 an install script checks, if it is one of ours.
pub fn script_sha256(script: &str) -> Option<&str> {
    script
        .lines()
        .find_map(|l| l.strip_prefix("expected_sha256="))
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The install unit.
pub fn install_unit() -> String {
    format!(
        "[Unit]
Description=Install the machine-config-daemon delivered by mcd-inject
# Only until the first boot completes, like the MCD firstboot unit.
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
Before={FIRSTBOOT_UNIT}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/bash {SCRIPT_PATH}

[Install]
WantedBy=multi-user.target
"
    )
}

/// The firstboot unit, as MCO writes it since PR #1766, run from our install unit.
pub fn firstboot_unit() -> String {
    format!(
        "[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
Requires={INSTALL_UNIT}
After={INSTALL_UNIT}
Before=crio.service crio-wipe.service
Before=kubelet.service

[Service]
EnvironmentFile=-/etc/mco/proxy.env
Type=oneshot
RemainAfterExit=yes
ExecStart={RUN_BINARY} firstboot-complete-machineconfig

[Install]
RequiredBy=crio.service kubelet.service
WantedBy=multi-user.target
"
    )
}

/// The pull unit drop-in: a failed condition skips the unit, which still satisfies
/// the units that require it (a mask would fail them).
pub fn pull_dropin() -> String {
    format!(
        "[Unit]
# mcd-inject delivered the binary in {PAYLOAD_PATH}: never pull it.
ConditionPathExists=!{PAYLOAD_PATH}
"
    )
}

/// What the config delivers.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The gzip payload, inline or at a URL.
    pub payload: Source,
    /// Hex sha512 of the gzip bytes.
    pub payload_sha512: String,
    /// Hex sha256 of the binary.
    pub binary_sha256: String,
    /// The provenance record, JSON.
    pub provenance: Vec<u8>,
    /// Switch off the pre-4.6 first-boot paths (4.1-4.5 targets).
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
    let files = vec![
        File {
            path: PAYLOAD_PATH.into(),
            mode: 0o600,
            source: d.payload.clone(),
            sha512: d.payload_sha512.clone(),
        },
        inline(
            SCRIPT_PATH,
            0o755,
            install_script(&d.binary_sha256).into_bytes(),
        ),
        inline(PROVENANCE_PATH, 0o644, d.provenance.clone()),
    ];
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
    let mut units = vec![
        unit(INSTALL_UNIT, install_unit()),
        unit(FIRSTBOOT_UNIT, firstboot_unit()),
    ];
    if d.legacy_firstboot {
        units.push(Unit {
            name: PIVOT_UNIT.into(),
            contents: None,
            enabled: false,
            mask: true,
            dropins: vec![],
        });
        units.push(Unit {
            name: PULL_UNIT.into(),
            contents: None,
            enabled: false,
            mask: false,
            dropins: vec![Dropin {
                name: PULL_DROPIN.into(),
                contents: pull_dropin(),
            }],
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
    fn script_carries_the_hash() {
        let h = "ab".repeat(32);
        let s = install_script(&h);
        assert_eq!(script_sha256(&s), Some(h.as_str()));
        assert!(!s.contains(SHA256_PLACEHOLDER));
        assert_eq!(script_sha256(SCRIPT_TEMPLATE), None);
    }

    #[test]
    fn legacy_targets_get_masks_and_the_pull_dropin() {
        let mut d = Delivery {
            payload: Source::Inline(vec![1]),
            payload_sha512: "0".repeat(128),
            binary_sha256: "0".repeat(64),
            provenance: b"{}".to_vec(),
            legacy_firstboot: false,
        };
        assert_eq!(config(&d).units.len(), 2);
        d.legacy_firstboot = true;
        let c = config(&d);
        assert!(c.units.iter().any(|u| u.name == PIVOT_UNIT && u.mask));
        assert!(c
            .units
            .iter()
            .any(|u| u.name == PULL_UNIT && !u.mask && u.dropins.len() == 1));
    }
}
