#!/usr/bin/env bash
# Wall time and peak RSS of `mcd-inject extract` on a large MCO-like image, against
# stock-tool baselines. Prints a Markdown table to paste into BENCHMARKS.md.
#
#   bash benches/rss.sh            # RUNS=5 by default
#   RUNS=9 bash benches/rss.sh
#   BASELINE_BIN=/path/to/older/mcd-inject bash benches/rss.sh   # adds rows for it,
#                                                    # interleaved run by run
#
# The image (about 250 MB uncompressed, 4 gzip layers, the 60 MiB machine-config-daemon
# in the top layer) is generated deterministically by fixtures/generate.py's layout
# writer into a temporary directory, then copied by skopeo into oci-archive and
# docker-archive form. Each command runs RUNS times under /usr/bin/time -v; the table
# reports the median wall time and the largest peak RSS over the runs.
#
# Needs: cargo, python3, skopeo, umoci, GNU tar, /usr/bin/time (Debian package `time`).

set -euo pipefail

RUNS=${RUNS:-5}
MCD_PATH=/usr/bin/machine-config-daemon
MCD_MIB=60
BASE_LAYERS=3
BASE_LAYER_MIB=63

cd "$(dirname "$0")/.."
root=$PWD

for tool in cargo python3 skopeo umoci tar /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "benches/rss.sh: $tool is not installed" >&2; exit 1; }
done

cargo build --release --quiet
bin=$root/target/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
layout=$work/layout

echo "generating the benchmark image in $work ..." >&2
python3 - "$layout" "$MCD_MIB" "$BASE_LAYERS" "$BASE_LAYER_MIB" >"$work/facts" <<'PY'
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, mcd_mib, base_layers, base_layer_mib = Path(sys.argv[1]), *map(int, sys.argv[2:])
g.GZIP_LEVEL = 6  # what image builders use; level 9 only slows the generation


MIB = 1 << 20
mcd = pseudo_binary("machine-config-daemon", mcd_mib * MIB)
layers = []
for n in range(base_layers):
    files = 7
    layers.append(g.Layer([
        g.X(f"usr/lib64/bench-{n}/lib{i}.so", pseudo_binary(f"layer{n}-file{i}",
                                                            base_layer_mib * MIB // files))
        for i in range(files)
    ] + ([g.F("usr/lib/os-release", g.RHEL9_4), g.S("bin", "usr/bin")] if n == 0 else [])))
layers.append(g.Layer([
    g.X("usr/bin/machine-config-daemon", mcd),
    g.X("usr/bin/machine-config-operator", g.stand_in("machine-config-operator", "bench")),
    g.X("usr/bin/machine-config-server", g.stand_in("machine-config-server", "bench")),
]))
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image(layers)))

blobs = sorted((layout / "blobs" / "sha256").iterdir(), key=lambda p: p.stat().st_size)
print(f"mcd_sha256={hashlib.sha256(mcd).hexdigest()}")
print(f"mcd_bytes={len(mcd)}")
print(f"image_bytes={sum(p.stat().st_size for p in blobs)}")
print(f"uncompressed_bytes={(base_layers * base_layer_mib + mcd_mib) * MIB}")
PY
# shellcheck disable=SC1091
. "$work/facts"

# The top layer blob, for the tar baseline.
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' "$layout/index.json")
top_blob=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1]["digest"].split(":")[1])' "$layout/blobs/sha256/$manifest")
top_blob=$layout/blobs/sha256/$top_blob

echo "copying to oci-archive and docker-archive ..." >&2
skopeo --insecure-policy copy -q --preserve-digests oci:"$layout":latest oci-archive:"$work/image.oci.tar":latest
skopeo --insecure-policy copy -q oci:"$layout":latest docker-archive:"$work/image.docker.tar":bench:latest

bench=benches/rss.sh
results=$work/results
reset() { rm -rf "$work/out" "$work/rootfs"; }
# shellcheck source=benches/lib.sh
. benches/lib.sh

out_ok='[ "$(sha256sum <"$work/out" | cut -d" " -f1)" = "$mcd_sha256" ]'
rootfs_ok='[ "$(sha256sum <"$work/rootfs$MCD_PATH" | cut -d" " -f1)" = "$mcd_sha256" ]'
tar_ok='[ "$(tar -xzOf "$top_blob" "${MCD_PATH#/}" | sha256sum | cut -d" " -f1)" = "$mcd_sha256" ]'

echo "measuring, $RUNS runs each ..." >&2
measure_ab "mcd-inject extract, oci: layout" "$out_ok" -- \
    extract --image "oci:$layout:latest" --path "$MCD_PATH" -o "$work/out"
measure "mcd-inject extract, oci-archive:" "$out_ok" -- \
    "$bin" extract --image "oci-archive:$work/image.oci.tar:latest" --path "$MCD_PATH" -o "$work/out"
measure_ab "mcd-inject extract, docker-archive:" "$out_ok" -- \
    extract --image "docker-archive:$work/image.docker.tar" --path "$MCD_PATH" -o "$work/out"
measure "umoci raw unpack (whole image), oci: layout" "$rootfs_ok" -- \
    umoci raw unpack --rootless --image "$layout:latest" "$work/rootfs"
measure "tar -xzO of the top layer blob only" "$tar_ok" -- \
    tar -xzOf "$top_blob" "${MCD_PATH#/}"

cpu=$(cpu_name)
echo
echo "Image: $(mib "$uncompressed_bytes") MiB uncompressed, $(mib "$image_bytes") MiB of gzip blobs," \
    "$((BASE_LAYERS + 1)) layers; \`$MCD_PATH\` ($(mib "$mcd_bytes") MiB) in the top layer." \
    "Host: $(nproc) CPUs, ${cpu:-unknown CPU}; page cache warm; median of $RUNS runs," \
    "peak RSS is the largest of the runs; ratios are against \`mcd-inject extract, oci: layout\`."
echo
table
ab_table
