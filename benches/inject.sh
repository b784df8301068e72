#!/usr/bin/env bash
# Wall time and peak RSS of `mcd-inject inject` with a large MCD, against the stock-tool
# lower bound for making the same payload. Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/inject.sh            # RUNS=5 by default
#   BASELINE_BIN=/path/to/older/mcd-inject bash benches/inject.sh   # adds a row for it,
#                                                       # interleaved run by run
#
# The image (generated deterministically with fixtures/generate.py's layout writer) has
# one gzip layer whose `/usr/bin/machine-config-daemon` is the static fixture program
# followed by 80 MiB of binary-like bytes (3/4 noise), and a RHEL 8 os-release.
# Measured: inject for 4.2 (spec 2.2, inline payload), for 4.8 (spec 3.2), and remote
# mode; the lower bound is `tar -xzO | gzip -6 -n | tee >(sha512sum) | base64`, the least
# work stock tools need to produce the inline payload (no config, no ELF check).
#
# Needs: cargo, python3, gcc, GNU tar, gzip, coreutils, /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-5}
MCD_PATH=/usr/bin/machine-config-daemon
TAIL_MIB=80

cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/inject.sh cargo python3 gcc tar gzip base64 /usr/bin/time
layout=$work/layout

echo "generating the benchmark image in $work ..." >&2
python3 - "$layout" "$TAIL_MIB" "$work" >"$work/facts" <<'PY'
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, tail_mib, work = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
g.GZIP_LEVEL = 6
(work / "bins").mkdir()
mcd = g.Binaries(work / "bins").static_mcd("v4.16.0-bench") + pseudo_binary("inject-bench", tail_mib << 20)
layer = g.Layer([g.X("usr/bin/machine-config-daemon", mcd), g.F("usr/lib/os-release", g.os_release("8.6", "Red Hat Enterprise Linux 8.6"))])
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image([layer])))
print(f"mcd_sha256={hashlib.sha256(mcd).hexdigest()}")
print(f"mcd_bytes={len(mcd)}")
PY
# shellcheck disable=SC1091
. "$work/facts"
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' "$layout/index.json")
top_blob=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1]["digest"].split(":")[1])' "$layout/blobs/sha256/$manifest")
top_blob=$layout/blobs/sha256/$top_blob

bench=benches/inject.sh
results=$work/results
reset() { rm -f "$work/out.ign" "$work/payload.gz" "$work/payload.b64" "$work/sum"; }

ign_ok='[ -s "$work/out.ign" ] && "$bin" verify "$work/out.ign" >/dev/null 2>&1'
remote_ok='[ -s "$work/payload.gz" ] && "$bin" verify "$work/out.ign" --payload "$work/payload.gz" >/dev/null 2>&1'
stock_ok='[ -s "$work/payload.b64" ] && [ -s "$work/sum" ]'

echo "measuring, $RUNS runs each ..." >&2
measure_ab "mcd-inject inject, 4.2 (spec 2.2, inline)" "$ign_ok" -- \
  inject --image "oci:$layout:latest" --bootimage 4.2 --ign "$work/out.ign"
measure "mcd-inject inject, 4.8 (spec 3.2, inline)" "$ign_ok" -- \
  "$bin" inject --image "oci:$layout:latest" --bootimage 4.8 --ign "$work/out.ign"
measure "mcd-inject inject, 4.2, remote mode" "$remote_ok" -- \
  "$bin" inject --image "oci:$layout:latest" --bootimage 4.2 --ign "$work/out.ign" \
  --payload-url http://127.0.0.1/machine-config-daemon.gz --payload-out "$work/payload.gz"
measure "stock lower bound: tar -xzO, gzip -6 -n, sha512sum, base64" "$stock_ok" -- bash -c '
  set -o pipefail
  tar -xzOf "$1" "${2#/}" | gzip -6 -n | tee >(sha512sum >"$3/sum") | base64 -w0 >"$3/payload.b64"' \
  _ "$top_blob" "$MCD_PATH" "$work"

echo
echo "MCD: $(mib "$mcd_bytes") MiB (static ELF plus binary-like bytes) in a one-layer gzip image." \
  "Host: $(nproc) CPUs, $(cpu_name); page cache warm; median of $RUNS runs, peak RSS the" \
  "largest of the runs; ratios are against the first row."
echo
table
ab_table
