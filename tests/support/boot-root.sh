#!/usr/bin/env bash
# A real systemd boot of a root that real Ignition wrote (docs/development.md, "Boot
# tests"), for the boot tests in tests/it/boot.rs.
#
#   boot-root.sh base DIR          debootstrap a minimal Debian root with systemd (once
#                                  per run of the suite; the mirror is the machine's)
#   boot-root.sh prepare BASE ROOT copy BASE to ROOT and make it look like RHCOS at
#                                  first boot: /usr/local -> ../var/usrlocal, an
#                                  uninitialized machine-id, /run/ostree-booted, the
#                                  OS's own pivot.service, stand-ins for crio, kubelet,
#                                  podman and rpm-ostree, and the probe unit
#   boot-root.sh boot ROOT SECS    boot ROOT with systemd-nspawn in a cgroup of its own;
#                                  the probe powers it off; SECS bounds the whole boot
set -euo pipefail

die() { echo "boot-root.sh: $*" >&2; exit 1; }

mirror() {
  # The machine's own Debian mirror, from its apt sources.
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        tr ' ' '\n' | grep -v -- '-security' | head -n1 || true)
  if [[ -z $uri && -r /etc/apt/sources.list ]]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; exit } }' /etc/apt/sources.list)
  fi
  [[ -n $uri ]] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
  echo "$uri"
}

# What the base root holds besides minbase: systemd, and programs of RHCOS that the
# cluster's units call (jq: kubelet-auto-node-size.service's script).
BASE_PACKAGES=systemd,systemd-sysv,dbus,libgpgme11,jq

base() {
  local dir=$1
  local want=$BASE_PACKAGES
  [[ -e $dir/.complete && $(cat "$dir/.complete") == "$want" ]] && return 0
  # One maker at a time (scripts/test.sh starts one early; the tests wait for it).
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock 9
  [[ -e $dir/.complete && $(cat "$dir/.complete") == "$want" ]] && return 0
  rm -rf "$dir.tmp"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" \
    bookworm "$dir.tmp" "$(mirror)" >"$dir.log" 2>&1 || die "debootstrap failed; see $dir.log"
  rm -rf "$dir.tmp"/usr/share/doc/* "$dir.tmp"/usr/share/man/* "$dir.tmp"/usr/share/locale/* \
    "$dir.tmp"/var/cache/apt/archives/*.deb
  echo "$BASE_PACKAGES" >"$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

unit() { # unit ROOT NAME CONTENTS: a vendor unit, as the OS would ship it
  mkdir -p "$1/usr/lib/systemd/system"
  printf '%s\n' "$3" >"$1/usr/lib/systemd/system/$2"
}

stand_in() { # stand_in ROOT PATH: a program that records its call and succeeds
  mkdir -p "$(dirname "$1$2")"
  cat >"$1$2" <<STUB
#!/bin/sh
echo "\$(cat /proc/uptime) $2 \$*" >>/var/lib/boot-probe/called
exit 0
STUB
  chmod 0755 "$1$2"
}

stub() { # stub ROOT PATH: a program that records its call and fails
  mkdir -p "$(dirname "$1$2")"
  cat >"$1$2" <<STUB
#!/bin/sh
echo "\$(cat /proc/uptime) $2 \$*" >>/var/lib/boot-probe/called
echo "$2: not available on the test root" >&2
exit 1
STUB
  chmod 0755 "$1$2"
}

# The MCO image of the test clusters' configs (tests/data/mcs/inputs).
MCO_IMAGE=registry.example.com/openshift/release@sha256:1111111111111111111111111111111111111111111111111111111111111111

podman_stub() { # podman_stub ROOT: records every call; fails those that would pull or
  # run the MCO image or an MCD, succeeds the others (the cluster's own units run
  # other images through podman, e.g. nodeip-configuration.service, and a node has
  # podman for them)
  mkdir -p "$1/usr/bin"
  cat >"$1/usr/bin/podman" <<STUB
#!/bin/sh
echo "\$(cat /proc/uptime) /usr/bin/podman \$*" >>/var/lib/boot-probe/called
case "\$*" in
  *"$MCO_IMAGE"* | *machine-config-daemon* | *firstboot-complete-machineconfig*)
    echo "/usr/bin/podman: not available on the test root" >&2
    exit 1 ;;
esac
exit 0
STUB
  chmod 0755 "$1/usr/bin/podman"
}

prepare() {
  local base=$1 root=$2
  [[ -e $base/.complete ]] || die "$base is not a finished base root"
  rm -rf "$root"
  cp -a "$base" "$root"
  rm -f "$root/.complete"
  # RHCOS: /usr/local is a symlink into /var, which Ignition follows.
  rm -rf "$root/usr/local"
  mkdir -p "$root/var/usrlocal/bin"
  ln -s ../var/usrlocal "$root/usr/local"
  # First boot: systemd applies the presets Ignition wrote, as on RHCOS.
  echo uninitialized >"$root/etc/machine-id"
  ln -sf /dev/null "$root/etc/systemd/system/systemd-firstboot.service"
  mkdir -p "$root/etc/tmpfiles.d" "$root/var/lib/boot-probe"
  echo 'f /run/ostree-booted 0644 root root -' >"$root/etc/tmpfiles.d/ostree-booted.conf"
  # The 4.1 OS ships pivot.service; it must not run when the config masks it.
  unit "$root" pivot.service "[Unit]
Description=stand-in for the bootimage's pivot.service
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo \"\$(cat /proc/uptime) pivot.service\" >>/var/lib/boot-probe/called'
[Install]
WantedBy=multi-user.target"
  unit "$root" crio.service "[Unit]
Description=stand-in for CRI-O
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target"
  unit "$root" crio-wipe.service "[Unit]
Description=stand-in for crio-wipe
[Service]
Type=oneshot
ExecStart=/bin/true"
  # kubelet.service comes from the cluster's config; this is the bootimage's fallback.
  unit "$root" kubelet.service "[Unit]
Description=stand-in for the kubelet
Requires=crio.service
After=crio.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target"
  podman_stub "$root"
  # RHCOS's NetworkManager and nmstate, which the clusters' nmstate.service needs.
  stand_in "$root" /usr/bin/nmstatectl
  unit "$root" NetworkManager.service "[Unit]
Description=stand-in for NetworkManager
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true"
  stub "$root" /usr/bin/rpm-ostree
  install -D -m 0755 "$(dirname "$0")/boot-probe.sh" "$root/usr/libexec/boot-probe.sh"
  mkdir -p "$root/var/log/journal"
  unit "$root" boot-probe.service "[Unit]
Description=records how the first boot went, then powers off
After=basic.target
[Service]
Type=simple
ExecStart=/usr/libexec/boot-probe.sh
[Install]
WantedBy=multi-user.target"
  mkdir -p "$root/etc/systemd/system-preset"
  printf 'enable boot-probe.service\nenable crio.service\nenable kubelet.service\nenable pivot.service\n' \
    >"$root/etc/systemd/system-preset/10-boot-test.preset"
}

boot() {
  local root=$1 secs=$2 cg=""
  # nspawn --keep-unit runs in the caller's cgroup: give each boot one of its own, so
  # that boots in parallel never share one.
  for hier in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup; do
    if [[ -w $hier/cgroup.procs ]]; then
      cg="$hier/mcd-inject-boot-$$"
      mkdir -p "$cg"
      break
    fi
  done
  local rc=0
  (
    [[ -n $cg ]] && echo "$BASHPID" >"$cg/cgroup.procs"
    exec timeout --kill-after=10 "$secs" systemd-nspawn -q -D "$root" -b \
      --register=no --keep-unit --console=pipe
  ) || rc=$?
  [[ -n $cg ]] && rmdir "$cg" 2>/dev/null || true
  return $rc
}

cmd=${1:-}
shift || true
case $cmd in
  base) base "$@" ;;
  prepare) prepare "$@" ;;
  boot) boot "$@" ;;
  *) die "usage: boot-root.sh base DIR | prepare BASE ROOT | boot ROOT SECS" ;;
esac
