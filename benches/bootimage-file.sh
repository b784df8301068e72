#!/usr/bin/env bash
# What `inject --bootimage-file` costs for each kind of bootimage file, against
# `inject --bootimage 4.2` (the same config, the name given) and against reading the
# build ID by hand with stock tools: decompress or convert the whole disk, then
# `debugfs` the BLS entry out of its `boot` partition; `blkid` for the ISO's volume ID;
# `jq` for the stream metadata. Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/bootimage-file.sh              # RUNS=3, a root of 1024 MiB
#   ROOT_MIB=2048 RUNS=5 bash benches/bootimage-file.sh
#
# The disk is made by tests/support/make-bootimage.sh as RHCOS 4.2 lays it out (the
# `boot` partition first, then `root`), its `root` filled with ROOT_MIB MiB of this
# machine's /usr (binaries and libraries, which compress as an OS tree does), and
# shipped as RHCOS ships it: qcow2 with compressed clusters, raw.gz, raw.xz, live ISO.
#
# Needs: cargo, python3, qemu-img, sgdisk, mkfs.ext4, debugfs, xorriso, gzip, xz,
# blkid, jq, /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-3}
ROOT_MIB=${ROOT_MIB:-1024}

cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/bootimage-file.sh cargo python3 qemu-img sgdisk mkfs.ext4 debugfs xorriso \
  gzip xz blkid jq /usr/bin/time
bench=benches/bootimage-file.sh
results=$work/results
: >"$results"
reset() { rm -f "$work/out.ign" "$work/by-hand.raw"; }

echo "making the bootimage files (root of $ROOT_MIB MiB) and the image in $work ..." >&2
ROOT_FILL_MIB=$ROOT_MIB bash tests/support/make-bootimage.sh "$work/b" 42.80.20191002.0 \
  "Red Hat Enterprise Linux CoreOS @ID@ (Ootpa)" rhcos 2019
b=$work/b
python3 fixtures/generate.py "$work/fixtures" >/dev/null
image=oci:$work/fixtures/layouts/mco-4.16:latest
cat >"$b/stream.json" <<'JSON'
{"stream": "rhcos-4.2", "architectures": {"x86_64": {"artifacts": {
  "qemu": {"release": "42.80.20191002.0", "formats": {"qcow2.gz": {"disk": {"location": "https://example.com/rhcos-42.80.20191002.0-qemu.x86_64.qcow2.gz", "sha256": "dd"}}}}}}}}
JSON
# Where `boot` (partition 1) starts, for debugfs.
boot_at=$(($(sgdisk -i 1 "$b/disk.raw" | awk '/^First sector/ {print $3}') * 512))
entry=/loader/entries/ostree-1-rhcos.conf

inject=("$bin" inject --image "$image" --ign "$work/out.ign")
same_config='[ -s "$work/out.ign" ] && cmp -s "$work/out.ign" "$work/want.ign"'
"${inject[@]}" --bootimage 4.2 2>/dev/null
cp "$work/out.ign" "$work/want.ign"
# The build ID by hand: the disk written out whole, then the entry's title.
entry_title() { debugfs -R "cat $entry" "$1?offset=$boot_at" 2>/dev/null | grep '^title'; }
export -f entry_title
export boot_at entry
raw=$work/by-hand.raw
by_hand_qcow2="qemu-img convert -f qcow2 -O raw '$b/disk.qcow2' '$raw' && entry_title '$raw'"
by_hand_gz="gzip -dc '$b/disk.raw.gz' >'$raw' && entry_title '$raw'"
by_hand_xz="xz -dc '$b/disk.raw.xz' >'$raw' && entry_title '$raw'"
by_hand_raw="entry_title '$b/disk.raw'"
by_hand_iso="blkid -o value -s LABEL '$b/live.iso'"
by_hand_stream="jq -r .architectures.x86_64.artifacts.qemu.release '$b/stream.json'"
# Each way by hand must find the build ID (checked once here; the timed runs discard
# what they print).
for check in "$by_hand_stream" "$by_hand_qcow2" "$by_hand_raw" "$by_hand_gz" "$by_hand_xz" \
  "$by_hand_iso"; do
  reset
  bash -c "$check" | grep -q 42.80.20191002.0 || { echo "$bench: $check finds no build ID" >&2; exit 1; }
done
title_ok='true'

# Ratios are against the first row: the whole xz disk decompressed by hand, the way a
# pipeline without this tool reads the build ID of a metal image (the inject rows take
# a few ms, near the 10 ms resolution of /usr/bin/time).
add_row "by hand: xz -dc disk.raw.xz, debugfs" "$title_ok" -- bash -c "$by_hand_xz"
add_row "inject --bootimage 4.2" "$same_config" -- "${inject[@]}" --bootimage 4.2
for f in stream.json disk.qcow2 disk.raw disk.raw.gz disk.raw.xz live.iso; do
  add_row "inject --bootimage-file $f" "$same_config" -- "${inject[@]}" --bootimage-file "$b/$f"
done
add_row "by hand: jq the release out of stream.json" "$title_ok" -- bash -c "$by_hand_stream"
add_row "by hand: qemu-img convert disk.qcow2 to raw, debugfs" "$title_ok" -- bash -c "$by_hand_qcow2"
add_row "by hand: debugfs disk.raw" "$title_ok" -- bash -c "$by_hand_raw"
add_row "by hand: gzip -dc disk.raw.gz, debugfs" "$title_ok" -- bash -c "$by_hand_gz"
add_row "by hand: blkid live.iso" "$title_ok" -- bash -c "$by_hand_iso"

echo "measuring, $RUNS rounds ..." >&2
measure_rows
size() { awk -v b="$(stat -c %s "$1")" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "Host: $(nproc) CPUs, $(cpu_name); load average $(cut -d' ' -f1 /proc/loadavg) at the end; page cache warm; median of $RUNS interleaved rounds."
echo "Disk: $(size "$b/disk.raw") MiB raw (root filled with $ROOT_MIB MiB); qcow2 $(size "$b/disk.qcow2") MiB, raw.gz $(size "$b/disk.raw.gz") MiB, raw.xz $(size "$b/disk.raw.xz") MiB, ISO $(size "$b/live.iso") MiB."
echo
table_cpu
