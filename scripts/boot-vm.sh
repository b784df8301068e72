#!/usr/bin/env bash
# Boots a VM as a CI bootimage job does: qemu, the Ignition config handed over qemu's
# firmware config (fw_cfg, opt/com.coreos/config), Ignition running in the initramfs.
# Used by the VM boot tests and by hand (docs/ci-bootimage-job.md).
#
#   boot-vm.sh [OPTIONS] --disk IMAGE --config CONFIG
#
#   --disk IMAGE       the disk: an RHCOS bootimage (qcow2) or a raw image. A qcow2 is
#                      booted through an overlay in --work; the image is never written.
#                      A raw image is booted as it is (copy it first).
#   --extra-disk IMAGE another raw disk after it, booted as it is (repeatable): e.g. the
#                      empty ext4 disk labelled "boot" that the initramfs of a 4.1/4.2
#                      bootimage (ignition-dracut, spec2x) waits for
#   --config CONFIG    the Ignition config, handed over fw_cfg. Inline payloads cannot
#                      travel this way (Ignition reads fw_cfg in quadratic time): write
#                      the config in remote mode (inject --payload-url/--payload-out).
#   --serve DIR:PORT   serve DIR over HTTP on 127.0.0.1:PORT during the boot; in the guest
#                      it is http://10.0.2.2:PORT/ (qemu's user-mode network maps 10.0.2.2
#                      to the host's loopback; nothing leaves the machine)
#   --kernel FILE --initrd FILE --append ARGS
#                      boot this kernel directly instead of the disk's boot loader
#   --memory MB        guest RAM (default 2048)
#   --cpus N           guest CPUs (default 1)
#   --accel A          kvm, tcg or auto (default): auto uses KVM when a tiny initramfs
#                      boots under it within 30 s (needs --kernel, or --probe-kernel
#                      FILE), else TCG
#   --timeout SECS     bound on the whole boot (default 900); the guest must power off
#   --work DIR         where the console log, the overlay and the probe's files go
#                      (default: a new directory under /tmp, printed)
#
# The VM has one NIC: virtio-net in PCI slot 3 (qemu's i440fx machine), MAC address
# 52:54:00:12:ab:cd, on qemu's user-mode network. The kernel names it eth0 (under
# net.ifnames=0); udev's predictable name is ens3 (the slot's ACPI number), which an
# initramfs's ip=...:NIC:... must then name.
#
# Prints "accel=kvm|tcg", "seconds=N" (wall time of the boot) and "console=LOG" on
# stdout, and exits with qemu's status (124 when --timeout ran out).
#
#   boot-vm.sh probe-accel KERNEL [WORK]   prints kvm or tcg, as --accel auto decides
set -euo pipefail

die() { echo "boot-vm.sh: $*" >&2; exit 2; }
server_pid=""
here=$(cd "$(dirname "$0")" && pwd)
support=$here/../tests/support

qemu_bin() {
  command -v qemu-system-x86_64 >/dev/null ||
    die "qemu-system-x86_64 is missing: apt-get install qemu-system-x86 (on Debian 12, from bookworm-backports when qemu-utils comes from there)"
  echo qemu-system-x86_64
}

# newc cpio of FILES (NAME=PATH) plus /dev/console, on stdout.
cpio_of() {
  python3 - "$@" <<'PY'
import os, sys
out = sys.stdout.buffer
ino = 1
def entry(name, mode, data=b"", rdev=(0, 0)):
    global ino
    name_b = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0))
    ino += 1
    out.write(hdr.encode() + name_b)
    out.write(b"\0" * (-(110 + len(name_b)) % 4))
    out.write(data)
    out.write(b"\0" * (-len(data) % 4))
entry("dev", 0o040755)
entry("dev/console", 0o020600, rdev=(5, 1))
entry("sys", 0o040755)
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    with open(path, "rb") as f:
        entry(name, 0o100755, f.read())
entry("TRAILER!!!", 0)
PY
}

# The tiny initramfs: /init (tests/support/vm_tiny_init.c), and the fw_cfg driver when
# KO is given. Built into WORK.
tiny_initramfs() {
  local work=$1 ko=${2:-}
  local init=$work/tiny-init
  if [[ ! -x $init ]]; then
    gcc -static -O2 -o "$init" "$support/vm_tiny_init.c" ||
      die "building the tiny init (gcc, libc6-dev)"
  fi
  local files=("init=$init")
  [[ -n $ko ]] && files+=("qemu_fw_cfg.ko=$ko")
  cpio_of "${files[@]}" >"$work/tiny.cpio"
  echo "$work/tiny.cpio"
}

probe_accel() {
  local kernel=$1 work=${2:-}
  [[ -n $work ]] || work=$(mktemp -d)
  mkdir -p "$work"
  if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
    echo tcg
    return
  fi
  local cpio log=$work/kvm-probe.log
  cpio=$(tiny_initramfs "$work")
  # Under nested virtualisation KVM may abort qemu, or crawl and fail in early boot.
  (timeout --kill-after=5 30 "$(qemu_bin)" -accel kvm -cpu host -m 256 -display none \
    -monitor none -serial "file:$log" -no-reboot -nic none -kernel "$kernel" \
    -initrd "$cpio" -append "console=ttyS0 panic=-1 quiet" || true) >/dev/null 2>&1
  if grep -q "tiny-init: powering off" "$log" 2>/dev/null; then echo kvm; else echo tcg; fi
}

boot() {
  local disk="" config="" serve="" kernel="" initrd="" append="" memory=2048 cpus=1
  local accel=auto timeout=900 work="" probe_kernel="" extra_disks=()
  while (($#)); do
    case $1 in
      --disk) disk=$2; shift 2 ;;
      --extra-disk) extra_disks+=("$2"); shift 2 ;;
      --config) config=$2; shift 2 ;;
      --serve) serve=$2; shift 2 ;;
      --kernel) kernel=$2; shift 2 ;;
      --initrd) initrd=$2; shift 2 ;;
      --append) append=$2; shift 2 ;;
      --memory) memory=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      --accel) accel=$2; shift 2 ;;
      --probe-kernel) probe_kernel=$2; shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      --work) work=$2; shift 2 ;;
      *) die "unknown option $1 (see the head of this script)" ;;
    esac
  done
  [[ -n $disk && -n $config ]] || die "--disk and --config are needed"
  [[ -r $config ]] || die "cannot read $config"
  [[ -n $work ]] || { work=$(mktemp -d); echo "work=$work"; }
  mkdir -p "$work"
  local qemu
  qemu=$(qemu_bin)
  case $accel in
    auto)
      [[ -n $probe_kernel ]] || probe_kernel=$kernel
      if [[ -n $probe_kernel ]]; then accel=$(probe_accel "$probe_kernel" "$work"); else accel=tcg; fi
      ;;
    kvm | tcg) ;;
    *) die "--accel is kvm, tcg or auto" ;;
  esac
  local drive=$disk format=raw
  if [[ $(head -c 4 "$disk" | od -An -c | tr -d ' ') == QFI* ]]; then
    # Never write the bootimage: boot an overlay of it.
    drive=$work/overlay.qcow2
    qemu-img create -q -f qcow2 -F qcow2 -b "$(realpath "$disk")" "$drive"
    format=qcow2
  fi
  if [[ -n $serve ]]; then
    local dir=${serve%:*} port=${serve##*:}
    python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$port" \
      >"$work/http.log" 2>&1 &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true' EXIT
  fi
  local args=(-accel "$accel" -m "$memory" -smp "$cpus" -display none -monitor none
    -serial "file:$work/console.log" -no-reboot
    -drive "file=$drive,format=$format,if=virtio"
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=,addr=0x3,mac=52:54:00:12:ab:cd
    -fw_cfg "name=opt/com.coreos/config,file=$config")
  local extra
  for extra in "${extra_disks[@]}"; do
    [[ -r $extra ]] || die "cannot read $extra"
    args+=(-drive "file=$extra,format=raw,if=virtio")
  done
  [[ $accel == kvm ]] && args+=(-cpu host)
  if [[ -n $kernel ]]; then
    [[ -n $initrd ]] || die "--kernel needs --initrd"
    args+=(-kernel "$kernel" -initrd "$initrd" -append "$append")
  fi
  local start rc=0
  start=$EPOCHREALTIME
  timeout --kill-after=10 "$timeout" "$qemu" "${args[@]}" >"$work/qemu.log" 2>&1 || rc=$?
  echo "accel=$accel"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "seconds=%.1f\n", b - a }'
  echo "console=$work/console.log"
  return $rc
}

case ${1:-} in
  probe-accel) shift; probe_accel "$@" ;;
  tiny-initramfs) shift; tiny_initramfs "$@" ;;
  *) boot "$@" ;;
esac
