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
# When the bootimage's build needs a newer glibc than the bootimage has: the loader
# and libraries of its own image (NAME:SHA256, the loader first), and the RHEL majors
# whose hosts run it without them; empty when the build runs natively.
closure_files=@CLOSURE_FILES@
closure_native=@CLOSURE_NATIVE@
# Where a build that runs through its closure lies, as the node sees it.
closure_run=/run/mcd-inject
root="${MCD_INJECT_ROOT:-}"
payload="$root/var/lib/mcd-inject/machine-config-daemon.gz"
bindir="$root/run/bin"
dest="$bindir/machine-config-daemon"

# The host's RHEL major, as MCO's ReexecuteForTargetRoot reads it to pick a build:
# RHEL_VERSION, else VERSION_ID on RHEL and its rebuilds; RHCOS without RHEL_VERSION
# (4.1, 4.2) is RHEL 8. Empty when the os-release names no RHEL.
host_rhel() {
    local f
    for f in "$root/etc/os-release" "$root/usr/lib/os-release"; do
        if [ -r "$f" ]; then
            # os-release(5) is made to be sourced by a shell.
            (
                unset ID VERSION_ID RHEL_VERSION
                # shellcheck disable=SC1090
                . "$f"
                if [ -n "${RHEL_VERSION:-}" ]; then
                    echo "${RHEL_VERSION%%.*}"
                else
                    case "${ID:-}" in
                    rhel | centos | almalinux | rocky | ol) echo "${VERSION_ID%%.*}" ;;
                    rhcos) echo 8 ;;
                    esac
                fi
            )
            return
        fi
    done
}

host="$(host_rhel)"
use_closure=false
if [ -n "$other_rhel" ] && [ "$host" = "$other_rhel" ]; then
    payload="$root/var/lib/mcd-inject/machine-config-daemon.rhel$other_rhel.gz"
    expected_sha256=$other_sha256
elif [ -n "$closure_files" ]; then
    use_closure=true
    for r in $closure_native; do
        if [ "$host" = "$r" ]; then use_closure=false; fi
    done
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
if ! $use_closure; then
    mv -f "$tmp" "$dest"
    trap - EXIT
    echo "mco-mcd-install: installed $dest from ${payload#"$root"} (sha256 $actual)"
    exit 0
fi

# The build with its closure: the loader and libraries in a directory of their own,
# labelled as the host labels its own; the build runs through that loader with that
# directory as its only library path (an argument, not the environment: the programs
# the MCD starts keep the host's libraries).
libref="$root/usr/lib64"
[ -d "$libref" ] || libref="$root/usr/lib"
new="$root$closure_run.new"
rm -rf "$new"
mkdir -p "$new/closure"
label "$libref" "$new"
label "$libref" "$new/closure"
loader=""
count=0
for entry in $closure_files; do
    name="${entry%%:*}"
    want="${entry#*:}"
    file="$new/closure/$name"
    gzip -dc "$root/var/lib/mcd-inject/closure/$name.gz" >"$file"
    got="$(sha256sum "$file")"
    got="${got%% *}"
    if [ "$got" != "$want" ]; then
        echo "mco-mcd-install: closure file $name decompresses to sha256 $got, expected $want" >&2
        exit 1
    fi
    count=$((count + 1))
    if [ -z "$loader" ]; then
        loader="$name"
        chmod 0755 "$file"
        # Labelled like the host's own loader, where RHEL and Debian keep it.
        ref="$libref"
        for d in lib64 lib usr/lib64 usr/lib; do
            if [ -e "$root/$d/$name" ]; then
                ref="$root/$d/$name"
                break
            fi
        done
        label "$ref" "$file"
    else
        chmod 0644 "$file"
        label "$libref" "$file"
    fi
done
mv -f "$tmp" "$new/machine-config-daemon"
rm -rf "$root$closure_run"
mv -f "$new" "$root$closure_run"
wrapper="$(mktemp "$bindir/.machine-config-daemon.XXXXXX")"
trap 'rm -f "$wrapper"' EXIT
printf '%s\n' '#!/bin/sh' \
    '# mcd-inject: the machine-config-daemon, through the loader and libraries of its image.' \
    "exec $closure_run/closure/$loader --library-path $closure_run/closure $closure_run/machine-config-daemon \"\$@\"" \
    >"$wrapper"
chmod 0755 "$wrapper"
label "$root/usr/bin/true" "$wrapper"
mv -f "$wrapper" "$dest"
trap - EXIT
echo "mco-mcd-install: installed $dest from ${payload#"$root"} (sha256 $actual), through its closure of $count files in $closure_run/closure"
