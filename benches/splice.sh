#!/usr/bin/env bash
# The payload made of the layer's own deflate blocks: for the real RHEL 8 MCD in an
# MCO-shaped image whose top layer was written by different gzip writers, what `inject
# --bootimage 4.2` decides (splice or compress), the payload's size against one
# `gzip -6 -n` stream and against level 6 members (the uncompressed image's payload),
# and inject's time against `extract` of the same binary from the same image. Prints a
# Markdown table for BENCHMARKS.md.
#
#   bash benches/splice.sh          # RUNS=3 by default
#
# The MCDs are ../shared/real-mcd/mcd-main-rhel{9,8}.xz (or MCD_INJECT_SHARED), checked
# against SHA256SUMS, as /usr/bin/machine-config-daemon and its .rhel8 twin of a top
# layer over a RHEL 9.4 base. Writers: Python's gzip (zlib) at 9 and 6, as
# fixtures/generate.py writes; Go's pgzip at 6 and 9, by `skopeo copy
# --dest-compress-format gzip --dest-compress-level N` of the uncompressed image.
#
# Needs: cargo, python3, xz, gzip, skopeo, sha256sum, /usr/bin/time.
set -euo pipefail

RUNS=${RUNS:-3}
cd "$(dirname "$0")/.."
shared=${MCD_INJECT_SHARED:-$PWD/../shared}
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/splice.sh cargo python3 xz gzip skopeo sha256sum /usr/bin/time
for b in rhel9 rhel8; do
  want=$(awk -v n="mcd-main-$b" '{f = $2; sub(/^\*/, "", f)} f == n {print $1}' "$shared/real-mcd/SHA256SUMS")
  xz -dc "$shared/real-mcd/mcd-main-$b.xz" >"$work/$b"
  [ "$(sha256sum <"$work/$b" | cut -d' ' -f1)" = "$want" ] || {
    echo "benches/splice.sh: mcd-main-$b.xz does not match SHA256SUMS" >&2; exit 1; }
done
want=$(sha256sum <"$work/rhel8" | cut -d' ' -f1)

echo "writing the images ..." >&2
for how in none:0 gzip:9 gzip:6; do
  python3 - "$work" "${how%%:*}" "${how##*:}" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
import generate as g  # noqa: E402

work, compression, level = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if level:
    g.GZIP_LEVEL = level
top = g.Layer([g.X("usr/bin/machine-config-daemon", (work / "rhel9").read_bytes()),
               g.X("usr/bin/machine-config-daemon.rhel8", (work / "rhel8").read_bytes())],
              compression)
image = g.Image([g.base_layer(g.os_release("9.4", "Plow"), compression), top])
writer = g.LayoutWriter(work / f"{compression}{level or ''}")
writer.finish({**writer.image(image), "platform": image.platform()})
PY
done
for level in 6 9; do
  skopeo copy -q --dest-compress-format gzip --dest-compress-level "$level" \
    "oci:$work/none:latest" "oci:$work/pgzip$level:latest"
done

bench=benches/splice.sh
reset() { rm -f "$work/x.bin"; }
# timed NAME CMD...: RUNS runs; sets wall and cpu (medians).
timed() {
  local name=$1 walls=() cpus=() i
  shift
  for ((i = 0; i < RUNS; i++)); do
    one_run "$name" "$@"
    walls+=("$run_wall")
    cpus+=("$run_cpu")
  done
  wall=$(median "${walls[@]}")
  cpu=$(median "${cpus[@]}")
}

gzip -6 -n -c "$work/rhel8" >"$work/one.gz"
gzip6=$(stat -c %s "$work/one.gz")
results=$work/results
echo "measuring, $RUNS runs each ..." >&2
for img in none gzip9 gzip6 pgzip6 pgzip9; do
  ref="oci:$work/$img:latest"
  args=(--image "$ref" --bootimage 4.2 --ign "$work/out.ign"
    --payload-url http://127.0.0.1/machine-config-daemon.gz --payload-out "$work/p.gz")
  "$bin" inject -v "${args[@]}" 2>"$work/log" >/dev/null
  [ "$(gzip -dc "$work/p.gz" | head -c "$(stat -c %s "$work/rhel8")" | sha256sum | cut -d' ' -f1)" = "$want" ] || {
    echo "benches/splice.sh: the payload of $img does not hold the MCD" >&2; exit 1; }
  "$bin" verify "$work/out.ign" --payload "$work/p.gz" --image "$ref" >/dev/null
  if grep -q "made of the layer's own" "$work/log"; then how=spliced; else how=compressed; fi
  samples=$({ grep -o 'on 8 samples.*' "$work/log" || true; } |
    sed 's/.*take \([0-9.]*%\), level 6 \([0-9.]*%\).*/\1 vs \2/')
  bytes=$(stat -c %s "$work/p.gz")
  timed "inject $img" "$bin" inject -q "${args[@]}"
  iw=$wall ic=$cpu
  timed "extract $img" "$bin" extract -q --image "$ref" \
    --path /usr/bin/machine-config-daemon.rhel8 --output "$work/x.bin"
  echo "$img|$how|${samples:--}|$bytes|$iw|$ic|$wall" >>"$results"
done

echo
echo "MCD: mcd-main-rhel8, $(stat -c %s "$work/rhel8") bytes, beside mcd-main-rhel9 in the" \
  "top layer. Host: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo);" \
  "median of $RUNS runs; images on disk (oci:), remote mode; gzip -6 -n: $gzip6 bytes."
echo
echo "| top layer | payload | samples: layer vs level 6 | bytes | vs gzip -6 | vs level 6 members | inject wall (s) | inject CPU (s) | extract wall (s) | inject / extract |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
own=$(head -1 "$results" | cut -d'|' -f4)
while IFS='|' read -r img how samples bytes iw ic ew; do
  awk -v i="$img" -v h="$how" -v s="$samples" -v b="$bytes" -v g="$gzip6" -v o="$own" \
    -v iw="$iw" -v ic="$ic" -v ew="$ew" 'BEGIN {
    printf "| %s | %s | %s | %d | %+.2f%% | %+.2f%% | %.2f | %.2f | %.2f | %.2fx |\n",
      i, h, s, b, 100 * (b / g - 1), 100 * (b / o - 1), iw, ic, ew, iw / ew }'
done <"$results"
