#!/usr/bin/env bash
# A real systemd boot of a root that real Ignition wrote (docs/development.md, "Boot
# tests"), for the boot tests in tests/it/boot.rs.
#
#   boot-root.sh base DIR [SUITE]  debootstrap a minimal Debian root with systemd (once
#                                  per run of the suite; the mirror is the machine's);
#                                  SUITE is bookworm, or bullseye for a root whose glibc
#                                  (2.31) is older than RHEL 9's
#   boot-root.sh prepare BASE ROOT copy BASE to ROOT and make it look like RHCOS at
#                                  first boot: /usr/local -> ../var/usrlocal, an
#                                  uninitialized machine-id, /run/ostree-booted, the
#                                  OS's own pivot.service, stand-ins for crio, kubelet,
#                                  podman, rpm-ostree, skopeo, ostree, setenforce
#                                  (tests/support/stand-ins), and the probe unit
#   boot-root.sh os ROOT BOOT_OS CLUSTER_OS IMAGE [EXTENSIONS [CLUSTER_BASE]]
#                                  make ROOT run the bootimage's OS (its os-release and
#                                  programs, over stand-in ostree deployments) whose
#                                  cluster OS image IMAGE carries CLUSTER_OS; the cluster's
#                                  OS is a tree of its own made from CLUSTER_BASE (another
#                                  ABI: `deploy`), a base root or a tree made ready (one
#                                  with /usr/etc: a VM's), else ROOT's own tree with the
#                                  cluster's os-release
#   boot-root.sh deploy ROOT       before a boot: when the booted deployment (what
#                                  `ostree admin finalize-staged` chose) is not the one
#                                  ROOT's /usr holds, make ROOT that deployment, as ostree
#                                  deploys one: its own tree (/usr and the rest), /etc
#                                  merged three ways from the old one, /var shared
#   boot-root.sh stand-ins ROOT    install the stand-ins and the probe of this tree in
#                                  ROOT again (a root prepared by an earlier tree: the
#                                  VM's disk)
#   boot-root.sh boot ROOT SECS    boot ROOT with systemd-nspawn in a cgroup of its own;
#                                  the probe powers it off; SECS bounds the whole boot
set -euo pipefail

die() { echo "boot-root.sh: $*" >&2; exit 1; }

mirror() { # the machine's own Debian mirror
  bash "$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh"
}

# What the base root holds besides minbase: systemd, and programs of RHCOS that the
# cluster's units call (jq: kubelet-auto-node-size.service's script).
BASE_PACKAGES=systemd,systemd-sysv,dbus,libgpgme11,jq

base() {
  local dir=$1 suite=${2:-bookworm}
  local want=$BASE_PACKAGES
  [[ $suite == bookworm ]] || want="$suite:$BASE_PACKAGES:no-wait-online"
  [[ -e $dir/.complete && $(cat "$dir/.complete") == "$want" ]] && return 0
  # One maker at a time (scripts/test.sh starts one early; the tests wait for it).
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock 9
  [[ -e $dir/.complete && $(cat "$dir/.complete") == "$want" ]] && return 0
  rm -rf "$dir.tmp"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" \
    "$suite" "$dir.tmp" "$(mirror)" >"$dir.log" 2>&1 || die "debootstrap failed; see $dir.log"
  rm -rf "$dir.tmp"/usr/share/doc/* "$dir.tmp"/usr/share/man/* "$dir.tmp"/usr/share/locale/* \
    "$dir.tmp"/var/cache/apt/archives/*.deb
  # bullseye's systemd-networkd-wait-online (247), which the first boot's presets
  # enable, waits its 2 minutes for links the container does not have (bookworm's
  # returns at once): network-online.target would hold the kubelet back.
  [[ $suite == bookworm ]] || ln -sf /dev/null "$dir.tmp/etc/systemd/system/systemd-networkd-wait-online.service"
  echo "$want" >"$dir.tmp/.complete"
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
. /usr/libexec/stand-ins/lib.sh
record $2 "\$@"
exit 0
STUB
  chmod 0755 "$1$2"
}

# The MCO image of the test clusters' configs (tests/data/mcs/inputs).
MCO_IMAGE=registry.example.com/openshift/release@sha256:1111111111111111111111111111111111111111111111111111111111111111

here=$(cd "$(dirname "$0")" && pwd)

stand_ins() { # stand_ins ROOT: the programs of tests/support/stand-ins, which record
  # every call (stand-ins/lib.sh); rpm-ostree fails every call until `os` gives the
  # root an OS; podman fails what would pull or run the MCO image or an MCD
  install -D -m 0644 "$here/stand-ins/lib.sh" "$1/usr/libexec/stand-ins/lib.sh"
  local p
  for p in rpm-ostree skopeo ostree kubelet; do
    install -D -m 0755 "$here/stand-ins/$p" "$1/usr/bin/$p"
  done
  install -D -m 0755 "$here/stand-ins/setenforce" "$1/usr/sbin/setenforce"
  sed "s|@MCO_IMAGE@|'$MCO_IMAGE'|" "$here/stand-ins/podman" >"$1/usr/bin/podman"
  chmod 0755 "$1/usr/bin/podman"
  # The probe too: what the tests read of each boot is this tree's.
  install -D -m 0755 "$here/boot-probe.sh" "$1/usr/libexec/boot-probe.sh"
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
ExecStart=/bin/sh -c '. /usr/libexec/stand-ins/lib.sh; record pivot.service'
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
  stand_ins "$root"
  # RHCOS's NetworkManager and nmstate, which the clusters' nmstate.service needs.
  stand_in "$root" /usr/bin/nmstatectl
  unit "$root" NetworkManager.service "[Unit]
Description=stand-in for NetworkManager
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true"
  mkdir -p "$root/var/log/journal"
  unit "$root" boot-probe.service "[Unit]
Description=records how the first boot went, then powers off
# After the install unit: at a shutdown (a reboot the MCD asks for) the probe, which
# records then, stops before it, whose state it records. Before the firstboot unit: what
# systemd loaded is recorded (ExecStartPre) before the MCD can ask for a reboot.
After=basic.target mco-mcd-install.service
Before=machine-config-daemon-firstboot.service
[Service]
Type=simple
ExecStartPre=/usr/libexec/boot-probe.sh loaded
ExecStart=/usr/libexec/boot-probe.sh
[Install]
WantedBy=multi-user.target"
  mkdir -p "$root/etc/systemd/system-preset"
  printf 'enable boot-probe.service\nenable crio.service\nenable kubelet.service\nenable pivot.service\n' \
    >"$root/etc/systemd/system-preset/10-boot-test.preset"
  # The OS's own /etc, as ostree keeps it in /usr/etc: what `deploy` merges against.
  rm -rf "$root/usr/etc"
  cp -a "$root/etc" "$root/usr/etc"
}

# os_programs ROOT DEPLOYMENT: ROOT's /usr is the OS of the stand-in deployment
# DEPLOYMENT (a directory of deploy/: its os-release and os.env), whose name it records.
os_programs() {
  local root=$1 d=$2
  rm -f "$root/usr/lib/os-release"
  cp "$d/os-release" "$root/usr/lib/os-release"
  ln -sf ../usr/lib/os-release "$root/etc/os-release"
  install -D -m 0644 "$d/os.env" "$root/usr/lib/stand-ins/os.env"
  basename "$d" >"$root/usr/lib/stand-ins/deployment"
  # SELinux's chcon, which the host has and the nspawn root lacks (stand-ins/chcon). A
  # root with SELinux of its own (the VM's, booted enforcing) keeps the real one.
  [[ -e $root/etc/selinux/config ]] || install -m 0755 "$here/stand-ins/chcon" "$root/usr/bin/chcon"
  # ostree's unit that makes the staged deployment the next boot's, at shutdown
  # (ostree's src/boot/ostree-finalize-staged.service, without RequiresMountsFor=/sysroot
  # /boot, which the test root lacks); staging starts it.
  unit "$root" ostree-finalize-staged.service "[Unit]
Description=OSTree Finalize Staged Deployment
ConditionPathExists=/run/ostree-booted
DefaultDependencies=no
After=local-fs.target
Before=basic.target final.target
Conflicts=final.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStop=/usr/bin/ostree admin finalize-staged"
}

os() { # os ROOT BOOT_OS CLUSTER_OS OS_IMAGE [EXTENSIONS_IMAGE [CLUSTER_BASE]]: ROOT runs
  # the bootimage's OS BOOT_OS (its os-release and programs, stand-ins/lib.sh), booted
  # from an ostree deployment; the cluster's OS image OS_IMAGE carries CLUSTER_OS
  # (tests/support/rhcos-os.sh), on a tree made from the base root CLUSTER_BASE (`deploy`);
  # EXTENSIONS_IMAGE is its extensions image
  local root=$1 boot_os=$2 cluster_os=$3 image=$4 extensions=${5:-} cluster_base=${6:-}
  local state=$root/var/lib/stand-in-ostree images=$root/var/lib/stand-in-images
  rm -rf "$state" "$images"
  bash "$here/rhcos-os.sh" "$boot_os" "$state/deploy/d0"
  local d=$state/deploy/d0
  # The bootimage was deployed from its commit (coreos-assembler), no custom origin.
  echo "refspec $(cat "$d/checksum")" >"$d/origin"
  echo "rw rootflags=prjquota" >"$d/kargs"
  sed -n "s/^VERSION=//p" "$d/os-release" | tr -d "\"'" >"$d/version"
  echo 1570000000 >"$d/timestamp"
  echo - >"$d/tree"
  echo d0 >"$state/booted"
  os_programs "$root" "$d"
  bash "$here/rhcos-os.sh" "$cluster_os" "$images/os"
  # The tree the cluster's OS commit holds: a base root of its own (its ABI), or ROOT's.
  if [[ -n $cluster_base ]]; then
    [[ -e $cluster_base/.complete || -e $cluster_base/usr/etc ]] ||
      die "$cluster_base is neither a finished base root nor a tree made ready"
    echo "$cluster_base" >"$images/os/tree"
  else
    echo - >"$images/os/tree"
  fi
  echo "$image" >"$images/os-image"
  [[ -z $extensions ]] || echo "$extensions" >"$images/extensions-image"
  # What a registry serves for it: one image manifest (a single-arch image).
  local csum
  csum=$(cat "$images/os/checksum")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":2},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":32}],"annotations":{"ostree.commit":"%s"}}\n' \
    "$csum" "$csum" "$csum" >"$images/os/manifest.json"
}

deploy() { # deploy ROOT: see the usage above
  local root=$1
  local state=$root/var/lib/stand-in-ostree
  [[ -r $state/booted ]] || return 0
  local booted current
  booted=$(cat "$state/booted")
  current=$(cat "$root/usr/lib/stand-ins/deployment" 2>/dev/null || true)
  [[ $booted != "$current" ]] || return 0
  local d=$state/deploy/$booted tree
  tree=$(cat "$d/tree" 2>/dev/null || echo -)
  if [[ $tree == - ]]; then
    # The same tree (no other ABI to move to): only the OS's os-release and programs.
    os_programs "$root" "$d"
    return 0
  fi
  # The deployment's own tree, as the OS's commit holds it (/usr, and /etc's defaults):
  # a base root, given the RHCOS look, or a tree made ready (the VM's, labelled). Made
  # beside the old one in ROOT, which may be a mount point (a VM's disk).
  local next=$root/.deploy-next old=$root/.deploy-old e
  rm -rf "$next" "$old"
  if [[ -e $tree/usr/etc ]]; then
    cp -a "$tree" "$next"
  else
    prepare "$tree" "$next"
  fi
  os_programs "$next" "$d"
  # The old tree goes aside, the new one in its place; /var is the node's, shared by
  # every deployment; /run is a tmpfs, never carried.
  mkdir "$old"
  for e in "$root"/* "$root"/.[!.]*; do
    case ${e##*/} in var | .deploy-next | .deploy-old | lost+found | '.[!.]*') continue ;; esac
    mv "$e" "$old/"
  done
  for e in "$next"/* "$next"/.[!.]*; do
    case ${e##*/} in var | '.[!.]*') continue ;; esac
    [[ -e $e || -L $e ]] && mv "$e" "$root/"
  done
  # ostree's three-way merge of /etc: what the old deployment changed against its own
  # defaults (added, modified, removed) is carried onto the new defaults.
  python3 "$here/etc-merge.py" "$old/usr/etc" "$old/etc" "$root/etc"
  rm -rf "$old" "$next"
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
  os) os "$@" ;;
  deploy) deploy "$@" ;;
  stand-ins) stand_ins "$@" ;;
  boot) boot "$@" ;;
  *) die "usage: boot-root.sh base DIR | prepare BASE ROOT | os ROOT BOOT_OS CLUSTER_OS IMAGE [EXTENSIONS [CLUSTER_BASE]] | deploy ROOT | stand-ins ROOT | boot ROOT SECS" ;;
esac
