#!/bin/bash
# Installs the machine-config-daemon that mcd-inject delivered, for
# machine-config-daemon-firstboot.service: decompress, check, label, rename.
# MCD_INJECT_ROOT names another root to install into (for tests); empty is /.
set -euo pipefail

expected_sha256=@MCD_SHA256@
root="${MCD_INJECT_ROOT:-}"
payload="$root/var/lib/mcd-inject/machine-config-daemon.gz"
bindir="$root/run/bin"
dest="$bindir/machine-config-daemon"

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

mkdir -p "$bindir"
label "$root/usr/bin" "$bindir"
tmp="$(mktemp "$bindir/.machine-config-daemon.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
gzip -dc "$payload" >"$tmp"
actual="$(sha256sum "$tmp")"
actual="${actual%% *}"
if [ "$actual" != "$expected_sha256" ]; then
    echo "mco-mcd-install: $payload decompresses to sha256 $actual, expected $expected_sha256" >&2
    exit 1
fi
chmod 0755 "$tmp"
label "$root/usr/bin/true" "$tmp"
mv -f "$tmp" "$dest"
trap - EXIT
echo "mco-mcd-install: installed $dest (sha256 $actual)"
