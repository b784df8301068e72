#!/usr/bin/env bash
# Peak RSS and wall time of `mcd-inject extract` on a layer of one million entries,
# against `tar -xzO` of the same blob. Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/entries.sh            # RUNS=3 by default
#   BASELINE_BIN=/path/to/older/mcd-inject bash benches/entries.sh   # adds a row for it
#   PARENTS=0 bash benches/entries.sh   # the layer has no directory entries
#
# The image (generated deterministically) has a base layer with os-release and
# `/bin -> usr/bin`, and one gzip layer (level 6) of ENTRIES entries: 1,000 directories
# of empty files named like a RHEL tree, then `usr/bin/machine-config-daemon` last, so
# that the whole layer is read and indexed before the answer is known. With PARENTS=0
# the layer holds no directory entries at all (as a hostile or hand-made layer may):
# where its entries land then depends on the layer below, so every entry waits to be
# placed (docs/reading-images.md).
#
# Needs: cargo, python3, GNU tar, /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-3}
ENTRIES=${ENTRIES:-1000000}
PARENTS=${PARENTS:-1}
MCD_PATH=/usr/bin/machine-config-daemon

cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/entries.sh cargo python3 tar /usr/bin/time
layout=$work/layout

echo "generating the benchmark image ($ENTRIES entries) in $work ..." >&2
python3 - "$layout" "$ENTRIES" "$PARENTS" >"$work/facts" <<'PY'
import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, entries, parents = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
g.GZIP_LEVEL = 6
mcd = pseudo_binary("machine-config-daemon", 1 << 20)

buf = io.BytesIO()
with tarfile.TarFile(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
    def add(name, kind, data=b""):
        if kind == tarfile.DIRTYPE and not parents:
            return
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.size = kind, 0o755 if kind == tarfile.DIRTYPE else 0o644, len(data)
        tf.addfile(info, io.BytesIO(data) if data else None)
    dirs = 1000
    files = max(-(-(entries - 4) // dirs) - 1, 0) if parents else -(-(entries - 1) // dirs)
    add("usr/", tarfile.DIRTYPE)
    add("usr/share/", tarfile.DIRTYPE)
    for d in range(dirs):
        add(f"usr/share/package-{d:04d}/", tarfile.DIRTYPE)
        for f in range(files):
            add(f"usr/share/package-{d:04d}/file-{f:05d}.txt", tarfile.REGTYPE)
    add("usr/bin/", tarfile.DIRTYPE)
    info = tarfile.TarInfo("usr/bin/machine-config-daemon")
    info.mode, info.size = 0o755, len(mcd)
    tf.addfile(info, io.BytesIO(mcd))
big = g.Layer([], raw_tar=buf.getvalue())
layers = [g.base_layer(g.RHEL9_4), big]
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image(layers)))
count = 4 + dirs * (1 + files) if parents else 1 + dirs * files
print(f"mcd_sha256={hashlib.sha256(mcd).hexdigest()}")
print(f"entry_count={count}")
print(f"image_bytes={sum(p.stat().st_size for p in (layout / 'blobs' / 'sha256').iterdir())}")
PY
# shellcheck disable=SC1091
. "$work/facts"

manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"].split(":")[1])' "$layout/index.json")
top_blob=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1]["digest"].split(":")[1])' "$layout/blobs/sha256/$manifest")
top_blob=$layout/blobs/sha256/$top_blob

bench=benches/entries.sh
results=$work/results
reset() { rm -f "$work/out"; }

out_ok='[ "$(sha256sum <"$work/out" | cut -d" " -f1)" = "$mcd_sha256" ]'
tar_ok='[ "$(tar -xzOf "$top_blob" "${MCD_PATH#/}" | sha256sum | cut -d" " -f1)" = "$mcd_sha256" ]'

echo "measuring, $RUNS runs each ..." >&2
measure_ab "mcd-inject extract, oci: layout" "$out_ok" -- \
  extract --image "oci:$layout:latest" --path "$MCD_PATH" -o "$work/out"
measure "tar -xzO of the layer blob" "$tar_ok" -- \
  tar -xzOf "$top_blob" "${MCD_PATH#/}"

echo
echo "Layer: $entry_count entries ($(mib "$image_bytes") MiB of gzip blobs), the 1 MiB" \
  "\`$MCD_PATH\` last. Host: $(nproc) CPUs, $(cpu_name); page cache warm; median of $RUNS runs," \
  "peak RSS the largest of the runs; ratios are against the first row."
echo
table
ab_table
