#!/bin/bash
# Pins the names of the node's NICs before the firstboot, as MCO 4.13+ does with
# `firstboot-complete-machineconfig --persist-nics`, which runs
# `nmstatectl persist-nic-names` and then `rpm-ostree kargs --append` for the kernel
# arguments it printed. The host has no nmstatectl, so this does the same from /sys:
# the same files under /etc/systemd/network, the same kernel arguments.
# MCD_INJECT_ROOT names another root to read and write (for tests); empty is /. The
# interfaces and the kernel command line are the running host's either way.
set -euo pipefail

root="${MCD_INJECT_ROOT:-}"
unit="$root/etc/systemd/system/machine-config-daemon-firstboot.service"
netdir="$root/etc/systemd/network"
stamp="$netdir/.nmstate-persist.stamp"

say() { echo "mco-persist-nics: $*"; }
die() {
    echo "mco-persist-nics: $*" >&2
    exit 1
}

# The cluster's firstboot unit asks for the pass (4.13: --maybe-persist-nics; 4.14 and
# later: --persist-nics). Our drop-in replaces its ExecStart lines, so the unit file
# itself is what tells.
if ! [ -f "$unit" ] ||
    ! grep -Eq '^[[:space:]]*ExecStart=.*[[:space:]]--(maybe-)?persist-nics([[:space:]]|$)' "$unit"; then
    say "the firstboot unit does not ask to persist NIC names; nothing to do"
    exit 0
fi

# os-release as MCO's pkg/daemon/osrelease reads it: the first of the two files that can
# be read; KEY=VALUE lines, the value up to a second '=', one '"' taken off each end.
osrel="$root/etc/os-release"
[ -r "$osrel" ] || osrel="$root/usr/lib/os-release"
[ -r "$osrel" ] || die "no os-release in $root/etc or $root/usr/lib"
[ -s "$osrel" ] || die "$osrel is empty"
declare -A os=()
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in *=*) ;; *) continue ;; esac
    key="${line%%=*}"
    value="${line#*=}"
    value="${value%%=*}"
    value="${value#\"}"
    value="${value%\"}"
    os["$key"]="$value"
done <"$osrel"

# The RHEL version: RHEL_VERSION; else VERSION less the OPENSHIFT_VERSION prefix ("4.12"
# is "412."); else 8.1 and 8.2 for the VERSION_ID 4.1 and 4.2 of those bootimages; else
# VERSION_ID.
if [ -n "${os[RHEL_VERSION]+set}" ]; then
    version="${os[RHEL_VERSION]}"
elif [ -n "${os[OPENSHIFT_VERSION]+set}" ] &&
    prefix="${os[OPENSHIFT_VERSION]//./}." &&
    full="${os[VERSION]:-}" &&
    [ "$full" != "${full#"$prefix"}" ]; then
    version="${full//"$prefix"/}"
else
    case "${os[VERSION_ID]:-}" in
        4.1) version=8.1 ;;
        4.2) version=8.2 ;;
        *) version="${os[VERSION_ID]:-}" ;;
    esac
fi
id="${os[ID]:-}"
el=false
case "$id:${os[VARIANT_ID]:-}" in rhcos:* | scos:* | rhel:coreos) el=true ;; esac

# The one rule for which hosts get the pass: EL8 (IsEL8), where MCO 4.13-4.22 persist.
# MCO 4.21 and 4.22 also persist on EL9, and 4.13-4.20 (EL9) and 4.21+ (EL10) run a
# cleanup, which on a new node (no stamp) does nothing; this does nothing there. The Rust
# reader states the same rule (OsRelease::is_el8 in src/choose/osrelease.rs); the table
# of real os-release files (tests/data/os-release) holds the two together.
if ! { $el && [[ $version == 8.* ]] || [ "$version" = 8 ]; }; then
    say "host $id $version is not EL8; nothing to do"
    exit 0
fi
say "host $id $version is EL8"

# Kernel arguments as nmstatectl reads them: /proc/cmdline split on single spaces, the
# trailing newline kept on the last word; none if it cannot be read.
cmdline="$(cat /proc/cmdline 2>/dev/null && echo .)" || cmdline=.
cmdline=" ${cmdline%.} "
has_karg() { case "$cmdline" in *" $1 "*) return 0 ;; esac; return 1; }

if has_karg net.ifnames=0; then
    say "net.ifnames=0 is set: the kernel names NICs, nothing to pin"
    exit 0
fi
if [ -e "$stamp" ]; then
    say "$stamp exists; NIC names were persisted already"
    exit 0
fi
with_kargs=false
if has_karg rd.neednet=1 || has_karg rd.neednet; then
    with_kargs=true
    say "host uses initrd networking: pinning by kernel arguments too"
fi

# The interfaces nmstate calls ethernet: link type 1 (ARPHRD_ETHER) and no link kind,
# i.e. a device on a bus (veth, bridge, bond, vlan, macvlan, tap, ... are virtual
# devices). The MAC: a bond port's from before it joined the bond; else the current one
# (for a device whose address the kernel marks set or stolen, nmstate prefers the
# permanent address, which /sys does not show).
kargs=()
changed=false
for dev in /sys/class/net/*; do
    [ -e "$dev" ] || continue
    name="${dev##*/}"
    case "$name" in ovs-system | ovs-netdev) continue ;; esac
    [ "$(cat "$dev/type")" = 1 ] && [ -e "$dev/device" ] || continue
    if [ -d "$dev/bonding_slave" ]; then
        mac="$(cat "$dev/bonding_slave/perm_hwaddr" 2>/dev/null || true)"
        if [ -z "$mac" ]; then
            say "skipping $name: a bond port without its permanent MAC address"
            continue
        fi
    else
        mac="$(cat "$dev/address")"
        case "$(cat "$dev/addr_assign_type" 2>/dev/null || echo 0)" in
            2 | 3) say "$name: its MAC address was changed; pinning the current one" ;;
        esac
    fi
    mac="${mac^^}"
    link="$netdir/98-nmstate-$name.link"
    if [ -e "$link" ]; then
        say "$link exists; keeping it"
        continue
    fi
    driver=""
    if drv="$(readlink "$dev/device/driver")"; then
        driver="${drv##*/}"
    fi
    [ -d "$netdir" ] || mkdir "$netdir" || die "cannot make $netdir"
    {
        printf '# Generated by nmstate\n[Match]\nMACAddress=%s\n\n' "$mac"
        [ -z "$driver" ] || printf 'Driver=%s\n\n' "$driver"
        printf '[Link]\nName=%s\n' "$name"
    } >"$link" || die "cannot write $link"
    say "pinned $name (MAC $mac, driver ${driver:-unknown}) in $link"
    if $with_kargs; then
        kargs+=("ifname=$name:$mac")
    fi
    changed=true
done
$changed || say "no interface to pin"

[ -d "$netdir" ] || mkdir "$netdir" || die "cannot make $netdir"
: >"$stamp" || die "cannot write $stamp"

if ((${#kargs[@]})); then
    args=()
    for k in "${kargs[@]}"; do args+=(--append "$k"); done
    say "running rpm-ostree kargs ${args[*]}"
    rpm-ostree kargs "${args[@]}" || die "rpm-ostree kargs failed"
fi
