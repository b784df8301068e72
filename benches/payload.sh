#!/usr/bin/env bash
# Payload size: the gzip payload `inject` makes for the real MCD, against one
# `gzip -6 -n` stream (and `gzip -9 -n`) of the same binary, with the wall time and CPU of
# each. Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/payload.sh          # RUNS=3 by default
#
# The MCD is ../shared/real-mcd/mcd-main-rhel9.xz (or MCD_INJECT_SHARED), checked against
# its SHA256SUMS, put at /usr/bin/machine-config-daemon of a one-layer image with a
# RHEL 9.4 os-release; `inject --bootimage 4.16` in remote mode writes the payload file.
#
# Needs: cargo, python3, xz, gzip, sha256sum, /usr/bin/time.
set -euo pipefail

RUNS=${RUNS:-3}
cd "$(dirname "$0")/.."
root=$PWD
shared=${MCD_INJECT_SHARED:-$root/../shared}
for tool in cargo python3 xz gzip sha256sum /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/payload.sh: $tool is not installed" >&2; exit 1; }
done
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$root/target}/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-payload.XXXXXX")
trap 'rm -rf "$work"' EXIT
want=$(awk '{f = $2; sub(/^\*/, "", f)} f == "mcd-main-rhel9" {print $1}' "$shared/real-mcd/SHA256SUMS")
xz -dc "$shared/real-mcd/mcd-main-rhel9.xz" >"$work/mcd"
[ "$(sha256sum <"$work/mcd" | cut -d' ' -f1)" = "$want" ] || {
  echo "benches/payload.sh: mcd-main-rhel9.xz does not match SHA256SUMS" >&2; exit 1; }
python3 - "$work/mcd" "$work/layout" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
import generate as g  # noqa: E402

g.GZIP_LEVEL = 1
layer = g.Layer([g.X("usr/bin/machine-config-daemon", Path(sys.argv[1]).read_bytes()),
                 g.F("usr/lib/os-release", g.RHEL9_4)])
writer = g.LayoutWriter(Path(sys.argv[2]))
writer.finish(writer.image(g.Image([layer])))
PY

results=$work/results
# run NAME OUTPUT CMD...: RUNS runs; the output must decompress to the MCD.
run() {
  local name=$1 out=$2 walls=() cpus=() i
  shift 2
  for ((i = 0; i < RUNS; i++)); do
    rm -f "$out"
    /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
      echo "benches/payload.sh: $name failed" >&2; cat "$work/err" >&2; exit 1; }
    read -r wall user sys <"$work/time"
    walls+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')")
  done
  [ "$(gzip -dc "$out" | sha256sum | cut -d' ' -f1)" = "$want" ] || {
    echo "benches/payload.sh: $name does not decompress to the MCD" >&2; exit 1; }
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
  echo "$name|$(stat -c %s "$out")|$(med "${walls[@]}")|$(med "${cpus[@]}")" >>"$results"
}

echo "measuring, $RUNS runs each ..." >&2
run "gzip -6 -n (one stream)" "$work/one.gz" sh -c 'gzip -6 -n -c "$1" >"$2"' _ "$work/mcd" "$work/one.gz"
run "mcd-inject inject, remote mode (payload file)" "$work/payload.gz" \
  "$bin" inject -q --image "oci:$work/layout:latest" --bootimage 4.16 --ign "$work/out.ign" \
  --payload-url http://127.0.0.1/machine-config-daemon.gz --payload-out "$work/payload.gz"
run "gzip -9 -n (one stream)" "$work/nine.gz" sh -c 'gzip -9 -n -c "$1" >"$2"' _ "$work/mcd" "$work/nine.gz"

echo
echo "MCD: mcd-main-rhel9, $(stat -c %s "$work/mcd") bytes. Host: $(nproc) CPUs," \
  "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); median of $RUNS runs; the" \
  "inject row includes reading the image, hashing and writing the config."
echo
echo "| command | bytes | vs gzip -6 | wall (s) | CPU (s) |"
echo "| --- | ---: | ---: | ---: | ---: |"
ref=$(head -1 "$results" | cut -d'|' -f2)
while IFS='|' read -r name bytes wall cpu; do
  awk -v n="$name" -v b="$bytes" -v r="$ref" -v w="$wall" -v c="$cpu" 'BEGIN {
    printf "| %s | %d | %+.2f%% | %.2f | %.2f |\n", n, b, 100 * (b / r - 1), w, c }'
done <"$results"
