#!/usr/bin/env bash
# The VM of the VM boot tests (tests/it/vm.rs): a small Debian root with a kernel, a
# dracut initramfs holding Debian's Ignition, SELinux (Debian's reference policy) and the
# RHCOS look of the nspawn boots (tests/support/boot-root.sh prepare), on an ext4 disk
# image labelled offline. Made once per run of the suite; each boot copies the disk.
#
#   vm-root.sh base NSPAWN_BASE DIR   make DIR/{vmlinuz,initrd.img,disk.img} from a copy
#                                     of the nspawn boot tests' debootstrapped base (the
#                                     root with the packages is kept in DIR.packages)
#
#   vm-root.sh base8 NSPAWN_BASE8 VM DIR
#                                     make DIR/disk.img, a disk for VM's kernel and
#                                     initramfs whose root has RHEL 8's ABI (from the
#                                     bullseye nspawn base); VM/tree stays, the root of
#                                     VM's disk, from which deployments are made
#   vm-root.sh os DISK BOOT_OS CLUSTER_OS IMAGE [EXTENSIONS [CLUSTER_TREE [CONTROLS]]]
#                                     give a copy of a disk the bootimage's OS
#                                     (boot-root.sh os), labelled offline
#   vm-root.sh next-boot DISK N       before boot N of a copy of the disk: the deployment
#                                     the last boot chose (boot-root.sh deploy), the
#                                     stand-ins record their calls as boot N, no probe
#                                     report
#
# The disk's root filesystem has the label "root"; boot it with
#   root=LABEL=root rw ignition.firstboot ignition.platform.id=qemu
# and security=selinux selinux=1 enforcing=1 for SELinux enforcing (scripts/boot-vm.sh).
set -euo pipefail

die() { echo "vm-root.sh: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)

# Packages the root needs beyond the nspawn base: the kernel and dracut (installed in a
# chroot: in one debootstrap --include they conflict with initramfs-tools), Debian's
# Ignition and what its dracut module needs but does not depend on (url-lib, network),
# and SELinux.
packages=(udev kmod e2fsprogs linux-image-amd64 dracut dracut-network ignition iproute2 procps
  curl selinux-policy-default policycoreutils selinux-utils)
dracut_modules="base systemd systemd-initrd dracut-systemd udev-rules rootfs-block fs-lib qemu ignition"
dracut_drivers="qemu_fw_cfg virtio_blk virtio_pci virtio_net ext4 crc32c_generic"

mounts=()
unmount_all() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    umount -l "$m" 2>/dev/null || true
  done
  mounts=()
}

in_root() { # in_root ROOT CMD...: runs CMD in a chroot of ROOT with /proc, /sys, /dev
  local root=$1
  shift
  # INITRD=No: no initramfs of the host's kind for the kernel package; the test makes
  # its own.
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 INITRD=No "$@"
}

# packages_root NSPAWN_BASE ROOT LOG PACKAGES...: ROOT is a copy of NSPAWN_BASE with
# PACKAGES installed (apt-get in a chroot), kept while the base's packages are the same.
packages_root() {
  local nspawn_base=$1 root=$2 log=$3
  shift 3
  local want m
  want="$(cat "$nspawn_base/.complete") $*"
  [[ -e $root/.packages && $(cat "$root/.packages") == "$want" ]] && return 0
  # A run that was stopped may have left its mounts: never remove through them.
  for m in proc sys dev; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
  cp -a "$nspawn_base" "$root"
  for m in proc sys dev; do
    mount --bind "/$m" "$root/$m"
    mounts+=("$root/$m")
  done
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  {
    in_root "$root" apt-get update -qq
    in_root "$root" apt-get install -y -qq --no-install-recommends "$@"
    in_root "$root" apt-get clean
  } >"$log" 2>&1 || die "installing the VM packages failed; see $log"
  unmount_all
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
    "$root"/boot/initrd.img-*
  echo "$want" >"$root/.packages"
}

# vm_tree PACKAGES_ROOT TREE: TREE is the VM's root as a bootimage ships it: the RHCOS
# look of the nspawn boots (boot-root.sh prepare, the probe unit included) and the VM's
# own bits, not labelled yet.
vm_tree() {
  local packages=$1 root=$2 m
  for m in proc sys dev; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
  bash "$here/boot-root.sh" prepare "$packages" "$root" >/dev/null
  rm -f "$root/.packages"
  # A VM's own bits: the console and the disk; no wait for a network nobody configures
  # in the real root (systemd-networkd is enabled by the first boot's presets).
  ln -sf /dev/null "$root/etc/systemd/system/systemd-networkd-wait-online.service"
  echo 'LABEL=root / ext4 defaults 0 1' >"$root/etc/fstab"
  printf 'SELINUX=enforcing\nSELINUXTYPE=default\n' >"$root/etc/selinux/config"
  # The OS's /etc defaults (boot-root.sh deploy merges against them) hold these too.
  rm -rf "$root/usr/etc"
  cp -a "$root/etc" "$root/usr/etc"
}

# label TREE LOG: labels TREE offline with its own policy, so that it boots enforcing.
# libselinux needs /proc: label with it mounted, then the mount points, unmounted.
label() {
  local root=$1 log=$2
  mount -t proc proc "$root/proc"
  mounts+=("$root/proc")
  local contexts=/etc/selinux/default/contexts/files/file_contexts m con
  in_root "$root" setfiles -F -e /proc -e /sys -e /dev "$contexts" / \
    >"$log" 2>&1 || die "setfiles failed; see $log"
  local labels=()
  for m in /proc /sys /dev; do
    con=$(in_root "$root" matchpathcon -n "$m") || die "matchpathcon $m"
    labels+=("$m=$con")
  done
  unmount_all
  for m in "${labels[@]}"; do
    python3 -c 'import os, sys; os.setxattr(sys.argv[1], "security.selinux", sys.argv[2].encode() + b"\0")' \
      "$root${m%%=*}" "${m#*=}"
  done
}

# What shapes a VM's disk besides its packages: the RHCOS look and the probe of
# boot-root.sh, the stand-ins, these steps.
shape() {
  cat "$here/boot-root.sh" "$here/boot-probe.sh" "$here/etc-merge.py"
  find "$here/stand-ins" -type f -print0 | LC_ALL=C sort -z | xargs -0 cat
  declare -f packages_root vm_tree label must_make new_tree finish base base8
}

# made DIR WANT: DIR is made, for WANT.
made() { [[ -e $1/.complete && $(cat "$1/.complete") == "$2" ]]; }

# must_make DIR WANT: whether DIR is still to be made for WANT, once DIR's lock is held
# (one maker at a time: scripts/test.sh starts one early; the tests wait for it).
must_make() {
  made "$1" "$2" && return 1
  mkdir -p "$(dirname "$1")"
  exec 9>"$1.lock"
  flock 9
  ! made "$1" "$2"
}

# new_tree NSPAWN_BASE DIR PACKAGES...: DIR.tmp/tree, the VM tree (vm_tree) of a copy of
# NSPAWN_BASE with PACKAGES (kept in DIR.packages, so that a change to the steps after
# does not install them again).
new_tree() {
  local nspawn_base=$1 dir=$2 m
  shift 2
  packages_root "$nspawn_base" "$dir.packages" "$dir.apt.log" "$@"
  for m in proc sys dev; do umount -l "$dir.tmp/tree/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$dir.tmp"
  mkdir -p "$dir.tmp"
  vm_tree "$dir.packages" "$dir.tmp/tree"
}

# finish DIR WANT: DIR.tmp, made for WANT, becomes DIR.
finish() {
  echo "$2" >"$1.tmp/.complete"
  rm -rf --one-file-system "$1"
  mv "$1.tmp" "$1"
}

base() {
  local nspawn_base=$1 dir=$2
  # Made from the nspawn base as it is now: a base made anew (other packages) makes the
  # VM anew too, and so does a change to what shapes the disk; the packages are kept
  # for the base's packages (DIR.packages).
  [[ -e $nspawn_base/.complete ]] || die "$nspawn_base is not a finished base root"
  local want m
  want=$({ cat "$nspawn_base/.complete"; shape; } | sha256sum | cut -d' ' -f1)
  must_make "$dir" "$want" || return 0
  local tmp=$dir.tmp
  trap unmount_all EXIT
  trap 'unmount_all; exit 1' INT TERM HUP
  new_tree "$nspawn_base" "$dir" "${packages[@]}"
  local root=$tmp/tree kver
  kver=$(basename "$(ls -d "$root"/lib/modules/* | sort -V | tail -n1)")
  for m in proc sys dev; do
    mount --bind "/$m" "$root/$m"
    mounts+=("$root/$m")
  done
  in_root "$root" dracut --quiet --force --no-hostonly --no-compress \
    -m "$dracut_modules" -o "kernel-modules ifcfg" --add-drivers "$dracut_drivers" \
    /boot/initrd-vm.img "$kver" >"$tmp/dracut.log" 2>&1 ||
    die "dracut failed; see $tmp/dracut.log"
  unmount_all
  cp "$root/boot/vmlinuz-$kver" "$tmp/vmlinuz"
  mv "$root/boot/initrd-vm.img" "$tmp/initrd.img"
  label "$root" "$tmp/setfiles.log"
  trap - EXIT INT TERM HUP
  mke2fs -q -t ext4 -L root -d "$root" "$tmp/disk.img" 3G >"$tmp/mke2fs.log" 2>&1 ||
    die "mke2fs failed; see $tmp/mke2fs.log"
  # The labelled tree stays: a deployment of this OS is made from it (boot-root.sh
  # deploy), on a disk of another OS.
  finish "$dir" "$want"
}

# Packages of the RHEL 8 ABI disk beyond its nspawn base: SELinux and what the boot
# needs of the root (udev, kmod, e2fsprogs, iproute2, procps). The kernel and the
# initramfs are the VM's; its modules are copied in (a deployment of RHCOS carries its
# kernel's modules).
packages8=(udev kmod e2fsprogs iproute2 procps selinux-policy-default policycoreutils selinux-utils)

# base8 NSPAWN_BASE8 VM DIR: DIR/disk.img, a disk like VM's whose root is made from the
# nspawn base of RHEL 8's ABI (bullseye), for VM's kernel and initramfs, with VM's
# SELinux policy.
base8() {
  local nspawn_base=$1 vm=$2 dir=$3
  [[ -e $nspawn_base/.complete ]] || die "$nspawn_base is not a finished base root"
  [[ -e $vm/.complete ]] || die "$vm is not a finished VM (vm-root.sh base)"
  local want
  want=$({ cat "$nspawn_base/.complete" "$vm/.complete"; shape; } | sha256sum | cut -d' ' -f1)
  must_make "$dir" "$want" || return 0
  local tmp=$dir.tmp
  trap unmount_all EXIT
  trap 'unmount_all; exit 1' INT TERM HUP
  new_tree "$nspawn_base" "$dir" "${packages8[@]}"
  mkdir -p "$tmp/tree/lib/modules"
  cp -a "$vm"/tree/lib/modules/* "$tmp/tree/lib/modules/"
  # The SELinux policy is the VM's (bookworm's reference policy), not bullseye's: the
  # ABI is what this disk is for, and bullseye's older policy denies what the RHCOS look
  # needs (tmpfiles creating /run/ostree-booted, journald reading /run/machine-id). Its
  # compiled file contexts go: bullseye's libselinux reads the text ones.
  rm -rf "$tmp/tree/etc/selinux/default"
  cp -a "$vm/tree/etc/selinux/default" "$tmp/tree/etc/selinux/default"
  find "$tmp/tree/etc/selinux/default" -name '*.bin' -delete
  rm -rf "$tmp/tree/usr/etc"
  cp -a "$tmp/tree/etc" "$tmp/tree/usr/etc"
  label "$tmp/tree" "$tmp/setfiles.log"
  trap - EXIT INT TERM HUP
  mke2fs -q -t ext4 -L root -d "$tmp/tree" "$tmp/disk.img" 3G >"$tmp/mke2fs.log" 2>&1 ||
    die "mke2fs failed; see $tmp/mke2fs.log"
  rm -rf --one-file-system "$tmp/tree"
  finish "$dir" "$want"
}

# The initramfs of a 4.1/4.2 bootimage for DIR's VM, in OUT: spec 2.x Ignition (v0.35) with the
# dracut glue of its era (coreos/ignition-dracut, branch spec2x), made with the dracut of
# DIR's packages root for DIR's kernel, and the empty ext4 disk labelled "boot" that
# ignition-setup-user.service waits for. DIR and its packages root are not written: dracut
# runs in a chroot of an overlay of the packages root, with the modules in a private copy
# of /usr/lib/dracut (dracutbasedir), in which spec2x's 30ignition replaces Debian's.
spec2x() {
  local dir=$1 modules=$2 ignition=$3 out=$4
  [[ -e $dir/.complete ]] || die "$dir is not a finished VM (vm-root.sh base)"
  local packages=$dir.packages
  [[ -e $packages/.packages ]] || die "$packages is missing (vm-root.sh base keeps it)"
  [[ -r $modules/30ignition/module-setup.sh ]] || die "$modules has no 30ignition/module-setup.sh"
  [[ -x $ignition ]] || die "$ignition is not an executable"
  # Made anew when the VM, the modules, the program or these steps change.
  local want
  want=$({
    cat "$dir/.complete"
    sha256sum <"$ignition"
    (cd "$modules" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    declare -f spec2x
    echo "$dracut_modules $dracut_drivers"
  } | sha256sum | cut -d' ' -f1)
  [[ -e $out/.complete && $(cat "$out/.complete") == "$want" ]] && return 0
  mkdir -p "$(dirname "$out")"
  exec 8>"$out.lock"
  flock 8
  [[ -e $out/.complete && $(cat "$out/.complete") == "$want" ]] && return 0
  local tmp=$out.tmp
  umount -l "$tmp/merged" 2>/dev/null || true
  rm -rf --one-file-system "$tmp"
  mkdir -p "$tmp/upper" "$tmp/work" "$tmp/merged"
  trap unmount_all EXIT
  trap 'unmount_all; exit 1' INT TERM HUP
  local root=$tmp/merged
  mount -t overlay overlay -o "lowerdir=$packages,upperdir=$tmp/upper,workdir=$tmp/work" "$root"
  mounts+=("$root")
  local base=/tmp/dracut-spec2x
  cp -a "$root/usr/lib/dracut" "$root$base"
  local mod=$root$base/modules.d/30ignition
  rm -rf "$mod"
  cp -r "$modules/30ignition" "$mod"
  chmod -R u+w "$mod"
  # RHCOS's hand-over of the initramfs network (NetworkManager, ifcfg) fails on this root
  # and sends the boot to emergency mode: its script and unit are left out (three lines).
  local n
  n=$(grep -c coreos-teardown-initramfs-network "$mod/module-setup.sh" || true)
  [[ $n == 3 ]] || die "module-setup.sh names coreos-teardown-initramfs-network $n times, not 3"
  sed -i '/coreos-teardown-initramfs-network/d' "$mod/module-setup.sh"
  install -m 0755 "$ignition" "$mod/ignition"
  # v0.35 (built with SELinux relabelling) lists what its files stage wrote in
  # /etc/selinux/ignition.relabel and writes ignition-relabel.service, which runs
  # `restorecon -0vRif` on that list after switch-root. Everything it wrote from the
  # initramfs, where no policy is loaded, is unlabeled_t until then, and under Debian's
  # policy that costs two things, both seen in the journal of a boot without this:
  # - restorecon (setfiles_t) may relabel an unlabeled file but not read one: "Unable to
  #   open /etc/selinux/ignition.relabel: Permission denied", exit 255, emergency mode.
  #   So the unit first labels the list itself.
  # - systemd loaded the units Ignition wrote before the relabelling and keeps the label
  #   they had then: a client in a confined domain is denied `status` on them (a
  #   USER_AVC naming tcontext=unlabeled_t). So the unit reloads systemd afterwards.
  # The files stage drops both into ignition-relabel.service (in /run, as the unit is);
  # the relabelling itself is v0.35's own.
  local extra=$root/tmp/spec2x-include
  mkdir -p "$extra/usr/lib/systemd/system/ignition-files.service.d" "$extra/usr/share/ignition-debian"
  cat >"$extra/usr/share/ignition-debian/10-label-the-list.conf" <<'EOF2'
[Service]
# Debian's policy lets restorecon relabel an unlabeled file but not read one: label the
# list Ignition wrote from the initramfs before restorecon reads it.
ExecStartPre=/usr/sbin/restorecon -v /etc/selinux/ignition.relabel
# systemd keeps the label a unit file had when it was loaded: reload it after the
# relabelling, so that it knows the units Ignition wrote by their new labels.
ExecStartPost=/usr/bin/systemctl daemon-reload
EOF2
  cat >"$extra/usr/lib/systemd/system/ignition-files.service.d/10-relabel-list.conf" <<'EOF2'
[Service]
ExecStart=/usr/bin/mkdir -p /run/systemd/system/ignition-relabel.service.d
ExecStart=/usr/bin/cp /usr/share/ignition-debian/10-label-the-list.conf /run/systemd/system/ignition-relabel.service.d/
EOF2
  local kver
  kver=$(basename "$(ls -d "$root"/lib/modules/* | sort -V | tail -n1)")
  for m in proc sys dev; do
    mount --bind "/$m" "$root/$m"
    mounts+=("$root/$m")
  done
  in_root "$root" dracutbasedir=$base dracut --force --no-hostonly --no-compress \
    -m "$dracut_modules" -o "kernel-modules ifcfg" --add-drivers "$dracut_drivers" \
    --include /tmp/spec2x-include / /tmp/initrd-spec2x.img "$kver" >"$tmp/dracut.log" 2>&1 ||
    die "dracut failed; see $tmp/dracut.log"
  mv "$root/tmp/initrd-spec2x.img" "$tmp/initrd.img"
  unmount_all
  trap - EXIT INT TERM HUP
  rm -rf --one-file-system "$tmp/upper" "$tmp/work" "$tmp/merged"
  # The boot partition of a bootimage, here empty: ignition-setup-user.service mounts it
  # (read-only) to look for ignition/config.ign.
  mke2fs -q -t ext4 -L boot "$tmp/boot.img" 32M >"$tmp/mke2fs.log" 2>&1 ||
    die "mke2fs failed; see $tmp/mke2fs.log"
  echo "$want" >"$tmp/.complete"
  rm -rf "$out"
  mv "$tmp" "$out"
}

# Changes a copy of the VM's disk (DISK, not booted) offline: mounts it, runs CMD...
# with the mount point as its first argument, and labels what CMD added or changed with
# the root's own policy (setfiles in a chroot of it), as `base` labelled the rest: the
# files newer than before CMD ran and the directories it made (setfiles labels a
# directory's tree: the directories it only wrote into are left as they are).
edit_disk() {
  local disk=$1
  shift
  [[ -w $disk ]] || die "cannot write $disk"
  local mnt tmp
  mnt=$(mktemp -d)
  tmp=$(mktemp -d)
  mount -o loop "$disk" "$mnt" || die "mounting $disk (loop) failed"
  mounts+=("$mnt")
  trap unmount_all EXIT
  trap 'unmount_all; exit 1' INT TERM HUP
  (cd "$mnt" && find . -xdev -type d | LC_ALL=C sort) >"$tmp/dirs.before"
  touch "$tmp/marker"
  sleep 0.01
  "$@" "$mnt"
  local list=$mnt/.edit-disk-list
  {
    (cd "$mnt" && find . -xdev ! -type d -newer "$tmp/marker")
    (cd "$mnt" && find . -xdev -type d | LC_ALL=C sort) |
      LC_ALL=C comm -13 "$tmp/dirs.before" -
  } | sed 's|^\.||' | tr '\n' '\0' >"$list"
  if [[ -s $list ]]; then
    mount -t proc proc "$mnt/proc"
    mounts+=("$mnt/proc")
    in_root "$mnt" setfiles -F -0 -f /.edit-disk-list \
      /etc/selinux/default/contexts/files/file_contexts ||
      die "setfiles on what was added to $disk failed"
  fi
  rm -f "$list"
  # Not lazily: the disk is booted next, and must be unmounted and its loop device gone.
  if mountpoint -q "$mnt/proc"; then umount "$mnt/proc"; fi
  umount "$mnt" || die "unmounting $disk failed"
  mounts=()
  trap - EXIT INT TERM HUP
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -z $(losetup -j "$disk") ]] && break
    sleep 0.1
  done
  [[ -z $(losetup -j "$disk") ]] || die "$disk is still on a loop device"
  rmdir "$mnt"
  rm -rf "$tmp"
}

# os DISK BOOT_OS CLUSTER_OS IMAGE [EXTENSIONS [CLUSTER_TREE [CONTROLS]]]: the disk's
# root runs the bootimage's OS, as the nspawn three-boot roots do
# (tests/support/boot-root.sh os), with this tree's stand-ins (the disk is made once,
# maybe by an earlier tree); the cluster's OS is CLUSTER_TREE (a VM's `tree`, of another
# ABI), else the disk's own tree; the programs of the directory CONTROLS are the probe's
# negative controls (/var/lib/boot-probe/controls).
os_on() {
  local mnt=${*: -1}
  bash "$here/boot-root.sh" stand-ins "$mnt"
  bash "$here/boot-root.sh" os "$mnt" "$1" "$2" "$3" "$4" "$5" >/dev/null
  if [[ -n $6 ]]; then
    rm -rf "$mnt/var/lib/boot-probe/controls"
    cp -r "$6" "$mnt/var/lib/boot-probe/controls"
  fi
}
os() {
  local disk=$1 boot_os=$2 cluster_os=$3 image=$4 extensions=${5:-} tree=${6:-} controls=${7:-}
  edit_disk "$disk" os_on "$boot_os" "$cluster_os" "$image" "$extensions" "$tree" "$controls"
}

# next-boot DISK N: the deployment the last boot's shutdown chose is the disk's
# (boot-root.sh deploy), the stand-ins record their calls as boot N (stand-ins/lib.sh),
# and the last boot's probe report is gone.
next_boot_on() {
  bash "$here/boot-root.sh" deploy "$2"
  echo "$1" >"$2/var/lib/boot-probe/boot"
  rm -f "$2/var/lib/boot-probe/report" "$2/var/lib/boot-probe/loaded"
}
next_boot() { edit_disk "$1" next_boot_on "$2"; }

cmd=${1:-}
shift || true
case $cmd in
  base) base "$@" ;;
  base8) base8 "$@" ;;
  spec2x) spec2x "$@" ;;
  os) os "$@" ;;
  next-boot) next_boot "$@" ;;
  *) die "usage: vm-root.sh base NSPAWN_BASE DIR | base8 NSPAWN_BASE8 VM DIR | spec2x DIR MODULES IGNITION OUT | os DISK BOOT_OS CLUSTER_OS IMAGE [EXTENSIONS [CLUSTER_TREE [CONTROLS]]] | next-boot DISK N" ;;
esac
