#!/bin/bash
# Installs the machine-config-daemon that mcd-inject delivered, for
# machine-config-daemon-firstboot.service: decompress, check, label, rename.
# MCD_INJECT_ROOT names another root to install into (for tests); empty is /.
set -euo pipefail

expected_sha256=@MCD_SHA256@
# The build for hosts of another RHEL major, when the bootimage's build does not run
# on the cluster's OS, which the node runs from the second boot of its first boot on
# (after the in-place OS update); empty when one build serves every boot.
other_rhel=@OTHER_RHEL@
other_sha256=@OTHER_SHA256@
root="${MCD_INJECT_ROOT:-}"
payload="$root/var/lib/mcd-inject/machine-config-daemon.gz"
bindir="$root/run/bin"
dest="$bindir/machine-config-daemon"

# The host's RHEL major, as MCO's ReexecuteForTargetRoot reads it to pick a build
# (pkg/daemon/osrelease: BaseVersionMajor, for an OS like RHEL): an OS like RHEL has ID
# rhel or ID_LIKE naming rhel (RHCOS and the RHEL rebuilds count by their ID too); its
# version is RHEL_VERSION, else VERSION less the OPENSHIFT_VERSION prefix ("4.12" is
# "412.": CentOS Stream CoreOS 4.12-4.18 has VERSION="412.9.<date>-0", VERSION_ID="4.12"),
# else 8.1/8.2 for the VERSION_ID 4.1/4.2, else VERSION_ID; RHCOS without RHEL_VERSION
# (4.1, 4.2) is RHEL 8. Empty when the os-release names no RHEL (Fedora CoreOS: it gets
# the first build). The Rust reader (OsRelease::rhel_major in src/choose/osrelease.rs)
# reads the same; the table of real os-release files (tests/data/os-release) holds the
# two together. Each source below overrides the ones before it. Kept short: the config
# of an old bootimage carries this script inline, and must fit AWS's 16 KB of user data.
host_rhel() {
    local f
    for f in "$root/etc/os-release" "$root/usr/lib/os-release"; do
        if [ -r "$f" ]; then
            # os-release(5) is made to be sourced by a shell.
            (
                unset ID ID_LIKE VERSION VERSION_ID RHEL_VERSION OPENSHIFT_VERSION
                # shellcheck disable=SC1090
                . "$f"
                case "${ID:-} ${ID_LIKE:-} " in
                rhel\ * | rhcos\ * | centos\ * | almalinux\ * | rocky\ * | ol\ * | scos\ * | *\ rhel\ *) ;;
                *) exit 0 ;;
                esac
                v=${VERSION_ID:-}
                case $v in 4.[12]) v=8.${v#4.} ;; esac
                p=${OPENSHIFT_VERSION-}
                p=${p//./}.
                [ -z "${OPENSHIFT_VERSION+s}" ] || case ${VERSION:-} in "$p"*) v=${VERSION//"$p"/} ;; esac
                [ "${ID:-}" != rhcos ] || v=8
                [ -z "${RHEL_VERSION+s}" ] || v=$RHEL_VERSION
                v=${v%%.*}
                v=${v#+}
                case $v in "" | *[!0-9]*) ;; *) echo $((10#$v)) ;; esac
            )
            return
        fi
    done
}

host="$(host_rhel)"
echo "mco-mcd-install: host RHEL from os-release: ${host:-none}"
if [ -n "$other_rhel" ] && [ "$host" = "$other_rhel" ]; then
    payload="$root/var/lib/mcd-inject/machine-config-daemon.rhel$other_rhel.gz"
    expected_sha256=$other_sha256
fi

selinux_enabled() {
    if command -v selinuxenabled >/dev/null 2>&1; then
        selinuxenabled
    else
        [ -e /sys/fs/selinux/enforce ]
    fi
}

# label REFERENCE FILE: copy the SELinux label; failing is fatal only with SELinux on.
label() {
    if selinux_enabled; then
        chcon --reference="$1" "$2"
    else
        chcon --reference="$1" "$2" 2>/dev/null || true
    fi
}

# unpack GZ FILE SHA256: decompress GZ into FILE, which must have that sha256.
unpack() {
    local got
    gzip -dc "$1" >"$2"
    got="$(sha256sum "$2")"
    got="${got%% *}"
    if [ "$got" != "$3" ]; then
        echo "mco-mcd-install: $1 decompresses to sha256 $got, expected $3" >&2
        exit 1
    fi
}

mkdir -p "$bindir"
label "$root/usr/bin" "$bindir"
tmp="$(mktemp "$bindir/.machine-config-daemon.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
unpack "$payload" "$tmp" "$expected_sha256"
actual=$expected_sha256
chmod 0755 "$tmp"
label "$root/usr/bin/true" "$tmp"
@CLOSURE@
mv -f "$tmp" "$dest"
trap - EXIT
echo "mco-mcd-install: installed $dest from ${payload#"$root"} (sha256 $actual)"
