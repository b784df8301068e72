#!/usr/bin/env bash
# What a warm cache costs: `mcd-inject extract` of the MCD from a registry image whose
# blobs are all cached already (online: every cached layer is hashed whole before use, so
# that a damaged one can be fetched again; --offline), against the stock lower bound of
# the same work on the cached top blob (sha256sum, then tar -xzO), and a cold cache.
# Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/cache.sh          # RUNS=5
#   BEFORE_BIN=/path/to/older/mcd-inject bash benches/cache.sh
#                                  # also the warm online run of another build, to compare
#
# The image: one gzip layer with four 55 MiB pseudo-binaries (benches/bench_data.py,
# identical on every host), pushed with skopeo to a docker-registry that
# scripts/registry-services.sh starts on 127.0.0.1 (and stops).
#
# Needs: cargo, python3, skopeo, docker-registry, curl, jq, GNU tar, /usr/bin/time.
set -euo pipefail

RUNS=${RUNS:-5}
MCD_PATH=/usr/bin/machine-config-daemon
BIN_MIB=55

cd "$(dirname "$0")/.."
root=$PWD
for tool in cargo python3 skopeo docker-registry curl jq tar /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/cache.sh: $tool is not installed" >&2; exit 1; }
done

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$root/target}/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-cachebench.XXXXXX")
cleanup() {
  bash "$root/scripts/registry-services.sh" stop "$work/registry" || true
  rm -rf "$work"
}
trap cleanup EXIT
layout=$work/layout

echo "generating the benchmark image in $work ..." >&2
python3 - "$layout" "$BIN_MIB" >"$work/facts" <<'PY'
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, bin_mib = Path(sys.argv[1]), int(sys.argv[2])
g.GZIP_LEVEL = 6
names = ["machine-config-controller", "machine-config-daemon", "machine-config-operator",
         "machine-config-server"]
binaries = {n: pseudo_binary(n, bin_mib * (1 << 20) + i * 4096) for i, n in enumerate(names)}
layer = g.Layer([g.F("usr/lib/os-release", g.RHEL9_4)]
                + [g.X(f"usr/bin/{n}", data) for n, data in binaries.items()])
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image([layer])))
print(f"mcd_sha256={hashlib.sha256(binaries['machine-config-daemon']).hexdigest()}")
PY
# shellcheck disable=SC1091
. "$work/facts"

# shellcheck source=benches/lib.sh
. benches/lib.sh
push_to_registry "$layout"

"$bin" pull -q --tls-verify=false --cache-dir "$work/warm" --image "docker://$image"
blob=$work/warm/blobs/sha256/${top#sha256:}

results=$work/results
reset() {
  rm -rf "$work/out" "$work/cold" "$work/sum"
}
bench=benches/cache.sh

out_ok='[ "$(sha256sum <"$work/out" | cut -d" " -f1)" = "$mcd_sha256" ]'
extract=("$bin" extract -q --tls-verify=false --image "docker://$image" --path "$MCD_PATH" -o "$work/out")

echo "measuring, $RUNS runs each ..." >&2
measure "mcd-inject extract, warm cache, online" "$out_ok" -- "${extract[@]}" --cache-dir "$work/warm"
if [[ -n ${BEFORE_BIN:-} ]]; then
  measure "BEFORE_BIN extract, warm cache, online" "$out_ok" -- "$BEFORE_BIN" "${extract[@]:1}" --cache-dir "$work/warm"
fi
measure "mcd-inject extract, warm cache, --offline" "$out_ok" -- "${extract[@]}" --cache-dir "$work/warm" --offline
measure "lower bound: sha256sum of the cached blob, then tar -xzO" "$out_ok"' && [ "$(cut -d" " -f1 "$work/sum")" = "'"${top#sha256:}"'" ]' -- bash -c '
  sha256sum "$1" >"$2/sum" && tar -xzOf "$1" "${3#/}" >"$2/out"' _ "$blob" "$work" "$MCD_PATH"
measure "mcd-inject extract, cold cache" "$out_ok" -- "${extract[@]}" --cache-dir "$work/cold"

cpu=$(cpu_name)
echo
echo "Image: one gzip layer of $(mib "$top_bytes") MiB with four ${BIN_MIB} MiB pseudo-binaries," \
  "\`$MCD_PATH\` among them, in a loopback docker-registry; the warm cache was filled by" \
  "\`mcd-inject pull\`. Host: $(nproc) CPUs, ${cpu:-unknown CPU}; median of $RUNS runs; ratios" \
  "are each command's median over the first row's."
echo
table
