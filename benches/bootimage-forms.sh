#!/usr/bin/env bash
# What `inject --bootimage-file` costs for a large OVA (a streamOptimized VMDK in a tar)
# and a large GCP image archive (disk.raw in a GNU sparse tar, gzip), and a fixed VHD,
# each of a disk of DISK_GIB GiB virtual, against reading the build ID by hand with the
# stock tools: `tar -x` of the disk (`qemu-img convert` of the VMDK to raw), then
# `debugfs` of the BLS entry in its `boot` partition. Prints a Markdown table for
# BENCHMARKS.md; ratios are against the first row.
#
#   bash benches/bootimage-forms.sh                    # RUNS=3, 16 GiB, 512 MiB of data
#   DISK_GIB=32 ROOT_MIB=1024 RUNS=5 bash benches/bootimage-forms.sh
#
# The disk is made by tests/support/make-bootimage.sh as RHCOS 4.2 lays it out (`boot`
# first, then `root` filled with ROOT_MIB MiB of this machine's /usr), grown to DISK_GIB
# GiB (a hole at its end), then packed as the platforms take it, with the same commands
# as the tests. Each run is a new process (nothing is kept between runs); the page cache
# is warm.
#
# Needs: cargo, python3, qemu-img, sgdisk, mkfs.ext4, debugfs, xorriso, gzip, xz, tar,
# /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-3}
DISK_GIB=${DISK_GIB:-16}
ROOT_MIB=${ROOT_MIB:-512}

cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/bootimage-forms.sh cargo python3 qemu-img sgdisk mkfs.ext4 debugfs \
  xorriso gzip xz tar /usr/bin/time
bench=benches/bootimage-forms.sh
results=$work/results
: >"$results"
reset() { rm -rf "$work/out.ign" "$work/by-hand"; }

echo "making the bootimage files ($DISK_GIB GiB virtual, $ROOT_MIB MiB of data) in $work ..." >&2
ROOT_FILL_MIB=$ROOT_MIB bash tests/support/make-bootimage.sh "$work/made" 42.80.20191002.0 \
  "Red Hat Enterprise Linux CoreOS @ID@ (Ootpa)" rhcos 2019 >/dev/null
b=$work/b
mkdir -p "$b/gcp" "$b/ova"
cp --sparse=always "$work/made/disk.raw" "$b/gcp/disk.raw"
rm -rf "$work/made"
truncate -s "${DISK_GIB}G" "$b/gcp/disk.raw"
tar --sparse --format=oldgnu -C "$b/gcp" -czf "$b/gcp.tar.gz" disk.raw
qemu-img convert -q -f raw -O vmdk -o subformat=streamOptimized,adapter_type=lsilogic \
  "$b/gcp/disk.raw" "$b/ova/disk.vmdk"
printf '<?xml version="1.0"?>\n<Envelope><VirtualSystem><ProductSection><Info>no version</Info></ProductSection></VirtualSystem></Envelope>\n' \
  >"$b/ova/disk.ovf"
tar --format=ustar -C "$b/ova" -cf "$b/disk.ova" disk.ovf disk.vmdk
qemu-img convert -q -f raw -O vpc -o subformat=fixed,force_size=on "$b/gcp/disk.raw" "$b/disk.vhd"
rm -rf "$b/gcp" "$b/ova"
python3 fixtures/generate.py "$work/fixtures" >/dev/null
image=oci:$work/fixtures/layouts/mco-4.16:latest

inject=("$bin" inject --image "$image" --ign "$work/out.ign")
same_config='[ -s "$work/out.ign" ] && cmp -s "$work/out.ign" "$work/want.ign"'
"${inject[@]}" --bootimage 4.2 2>/dev/null
cp "$work/out.ign" "$work/want.ign"
entry=/loader/entries/ostree-1-rhcos.conf
boot_at=1048576 # `boot` is partition 1 of the 2019 layout, at 1 MiB
entry_title() { debugfs -R "cat $entry" "$1?offset=$boot_at" 2>/dev/null | grep '^title'; }
export -f entry_title
export boot_at entry
hand=$work/by-hand
by_hand_ova="mkdir -p '$hand' && tar -xf '$b/disk.ova' -C '$hand' disk.vmdk && qemu-img convert -f vmdk -O raw '$hand/disk.vmdk' '$hand/disk.raw' && entry_title '$hand/disk.raw'"
by_hand_gcp="mkdir -p '$hand' && tar -xzf '$b/gcp.tar.gz' -C '$hand' && entry_title '$hand/disk.raw'"
by_hand_vhd="entry_title '$b/disk.vhd'"
for check in "$by_hand_ova" "$by_hand_gcp" "$by_hand_vhd"; do
  reset
  bash -c "$check" | grep -q 42.80.20191002.0 || { echo "$bench: $check finds no build ID" >&2; exit 1; }
done
title_ok='true'

add_row "by hand: tar -x disk.vmdk from disk.ova, qemu-img convert to raw, debugfs" "$title_ok" -- bash -c "$by_hand_ova"
add_row "by hand: tar -xzf gcp.tar.gz, debugfs" "$title_ok" -- bash -c "$by_hand_gcp"
add_row "by hand: debugfs disk.vhd" "$title_ok" -- bash -c "$by_hand_vhd"
add_row "inject --bootimage 4.2" "$same_config" -- "${inject[@]}" --bootimage 4.2
for f in disk.ova gcp.tar.gz disk.vhd; do
  add_row "inject --bootimage-file $f" "$same_config" -- "${inject[@]}" --bootimage-file "$b/$f"
done

echo "measuring, $RUNS rounds ..." >&2
measure_rows
size() { awk -v b="$(stat -c %s "$1")" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "Host: $(nproc) CPUs, $(cpu_name); load average $(cut -d' ' -f1 /proc/loadavg) at the end; page cache warm; median of $RUNS interleaved rounds."
echo "Disk: $DISK_GIB GiB virtual (root filled with $ROOT_MIB MiB); disk.ova $(size "$b/disk.ova") MiB, gcp.tar.gz $(size "$b/gcp.tar.gz") MiB, disk.vhd $(du -m "$b/disk.vhd" | cut -f1) MiB allocated."
echo
table_cpu
