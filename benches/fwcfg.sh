#!/usr/bin/env bash
# What handing a config over qemu's firmware config (fw_cfg) costs: the time a guest
# takes to read an item of N bytes from /sys/firmware/qemu_fw_cfg as Ignition's qemu
# provider does (a read(2) loop on the item's `raw` file; the kernel's driver serves at
# most a page per call and, for each call, selects the item and skips to the offset
# one port read at a time: quadratic time). Prints a Markdown table for BENCHMARKS.md
# and the constant `inject`'s hand-over warning uses.
#
#   bash benches/fwcfg.sh [MB...]     # default: 0.25 0.5 1 2; as root
#
# The guest is the VM boot tests' kernel (target/vm-base, or MCD_INJECT_VM_BASE; made by
# `cargo test --test it vm::` or tests/support/vm-root.sh) with a tiny initramfs
# (tests/support/vm_tiny_init.c and the qemu_fw_cfg module); the item is random bytes.
# Accelerator: MCD_INJECT_VM_ACCEL (kvm or tcg), else as scripts/boot-vm.sh probes.
# The time is the guest's own clock around the read loop; the wall time of the whole
# boot is beside it.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
base=${MCD_INJECT_VM_BASE:-$root/target/vm-base}
[[ -e $base/.complete ]] || { echo "benches/fwcfg.sh: no VM in $base (see the head of this script)" >&2; exit 1; }
ko=$(find "$base.packages/lib/modules" -name 'qemu_fw_cfg.ko*' | head -n1)
[[ -n $ko ]] || { echo "benches/fwcfg.sh: no qemu_fw_cfg module under $base.packages" >&2; exit 1; }
case $ko in *.xz) echo "benches/fwcfg.sh: compressed module $ko not handled" >&2; exit 1 ;; esac
sizes=("$@")
((${#sizes[@]})) || sizes=(0.25 0.5 1 2)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
accel=${MCD_INJECT_VM_ACCEL:-$(bash scripts/boot-vm.sh probe-accel "$base/vmlinuz" "$work")}
cpio=$(bash scripts/boot-vm.sh tiny-initramfs "$work" "$ko")

echo "| config | read from fw_cfg (guest) | s per MB² | boot wall |"
echo "|---|---|---|---|"
last=""
for mb in "${sizes[@]}"; do
  bytes=$(python3 -c "print(int($mb * 1e6))")
  head -c "$bytes" /dev/urandom >"$work/blob"
  log=$work/console-$mb.log
  start=$EPOCHREALTIME
  timeout --kill-after=5 3600 qemu-system-x86_64 -accel "$accel" -m 512 -display none \
    -monitor none -serial "file:$log" -no-reboot -nic none -kernel "$base/vmlinuz" \
    -initrd "$cpio" -fw_cfg "name=opt/mcd-inject/blob,file=$work/blob" \
    -append "console=ttyS0 panic=-1 quiet" >/dev/null 2>&1 || true
  wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  secs=$(sed -n 's/^tiny-init: fw_cfg read [0-9]* bytes in \([0-9.]*\) s.*/\1/p' "$log")
  [[ -n $secs ]] || { echo "benches/fwcfg.sh: no reading for $mb MB; console:" >&2; cat "$log" >&2; exit 1; }
  k=$(awk -v s="$secs" -v m="$mb" 'BEGIN { printf "%.2f", s / (m * m) }')
  echo "| $mb MB | $secs s | $k | $wall s ($accel) |"
  last=$k
done
echo
echo "fw_cfg seconds per MB² at the largest size: $last"
