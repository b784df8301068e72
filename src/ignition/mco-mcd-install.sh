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

# The host's RHEL major, as MCO's ReexecuteForTargetRoot reads it to pick a build:
# RHEL_VERSION, else VERSION_ID on RHEL, its rebuilds and OSes like it (ID_LIKE names
# rhel: CentOS Stream CoreOS); RHCOS without RHEL_VERSION (4.1, 4.2) is RHEL 8. Empty
# when the os-release names no RHEL (Fedora CoreOS: it gets the first build).
host_rhel() {
    local f
    for f in "$root/etc/os-release" "$root/usr/lib/os-release"; do
        if [ -r "$f" ]; then
            # os-release(5) is made to be sourced by a shell.
            (
                unset ID ID_LIKE VERSION_ID RHEL_VERSION
                # shellcheck disable=SC1090
                . "$f"
                if [ -n "${RHEL_VERSION:-}" ]; then
                    echo "${RHEL_VERSION%%.*}"
                else
                    case "${ID:-}" in
                    rhel | centos | almalinux | rocky | ol | scos) echo "${VERSION_ID%%.*}" ;;
                    rhcos) echo 8 ;;
                    *)
                        case " ${ID_LIKE:-} " in
                        *" rhel "*) echo "${VERSION_ID%%.*}" ;;
                        esac
                        ;;
                    esac
                fi
            )
            return
        fi
    done
}

host="$(host_rhel)"
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
