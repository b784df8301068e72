#!/usr/bin/env bash
# Time to get the machine-config-daemon out of an MCO-shaped image in a loopback
# registry: `mcd-inject extract` and `mcd-inject inject` with a cold cache, against
# `skopeo copy` + `umoci raw unpack`, and against the stock-tool lower bound (curl of the
# top blob only, piped to sha256sum and `tar -xzO`), with the bytes each mcd-inject run
# fetched. The commands' runs are interleaved (round i of every command before round
# i+1), so that a change in the machine's load hits them alike; each gets its median
# wall time and median user + system CPU. Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/registry.sh                   # CONTENT=host RUNS=5 by default
#   CONTENT=synthetic RUNS=9 bash benches/registry.sh
#
# The image: two base layers of about 150 MB of gzip each and a top layer with four
# 55 MiB binaries (machine-config-controller, -daemon, -daemon.rhel8, -operator, as in
# MCO 4.16+ images: the daemon starts with the RHEL 9 dynamic fixture build, its .rhel8
# twin with the RHEL 8 one, so that `inject --bootimage 4.2` chooses the twin and
# `--bootimage 4.16` the daemon), written by
# fixtures/generate.py's layout writer and pushed with skopeo to a docker-registry that
# scripts/registry-services.sh starts on 127.0.0.1 (and stops). File content:
#   CONTENT=host       slices of the host's own ELF files (/usr/bin, /usr/lib, ...),
#                      which compress like real binaries (about 40%); same on one host
#   CONTENT=synthetic  benches/rss.sh's pseudo-binaries (3/4 random bytes), identical on
#                      every host but nearly incompressible: the worst case for inflate
#
# Needs: cargo, python3, skopeo, umoci, docker-registry, curl, GNU tar, /usr/bin/time.
set -euo pipefail

RUNS=${RUNS:-5}
CONTENT=${CONTENT:-host}
MCD_PATH=/usr/bin/machine-config-daemon.rhel8
BIN_MIB=55
case $CONTENT in
  host) BASE_LAYER_MIB=360 ;;     # ~150 MB of gzip
  synthetic) BASE_LAYER_MIB=180 ;; # ~150 MB of gzip
  *) echo "CONTENT must be host or synthetic" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
root=$PWD
for tool in cargo python3 skopeo umoci docker-registry curl tar /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/registry.sh: $tool is not installed" >&2; exit 1; }
done

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$root/target}/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-regbench.XXXXXX")
cleanup() {
  bash "$root/scripts/registry-services.sh" stop "$work/registry" || true
  rm -rf "$work"
}
trap cleanup EXIT
layout=$work/layout

echo "generating the benchmark image in $work ..." >&2
python3 - "$layout" "$BIN_MIB" "$BASE_LAYER_MIB" "$CONTENT" >"$work/facts" <<'PY'
import hashlib
import os
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, bin_mib, base_mib = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
content = sys.argv[4]
g.GZIP_LEVEL = 6  # what image builders use
MIB = 1 << 20


def host_elf_stream(total: int) -> bytes:
    """The host's ELF files, in sorted path order, concatenated up to `total` bytes."""
    out = bytearray()
    for top in ("/usr/bin", "/usr/sbin", "/usr/libexec", "/usr/lib"):
        for root, dirs, files in sorted(os.walk(top)):
            dirs.sort()
            for f in sorted(files):
                p = os.path.join(root, f)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                try:
                    data = open(p, "rb").read()
                except OSError:
                    continue
                if data[:4] == b"\x7fELF":
                    out += data
                    if len(out) >= total:
                        return bytes(out[:total])
    raise SystemExit(f"the host has fewer than {total} bytes of ELF files")


if content == "host":
    pool = host_elf_stream(2 * base_mib * MIB + 4 * bin_mib * MIB + 4 * 4096)
    cursor = 0

    def pseudo_binary(seed: str, size: int) -> bytes:  # noqa: F811
        global cursor
        cursor += size
        return pool[cursor - size : cursor]


layers = []
for n in range(2):
    files = 10
    layers.append(g.Layer([
        g.X(f"usr/lib64/base-{n}/lib{i}.so", pseudo_binary(f"base{n}-{i}", base_mib * MIB // files))
        for i in range(files)
    ] + ([g.F("usr/lib/os-release", g.RHEL9_4), g.S("bin", "usr/bin")] if n == 0 else [])))
names = ["machine-config-controller", "machine-config-daemon", "machine-config-daemon.rhel8",
         "machine-config-operator"]
fixture_bins = g.Binaries(layout.parent / "bins")
(layout.parent / "bins").mkdir(exist_ok=True)
elf = {"machine-config-daemon": fixture_bins.dynamic_mcd(9, "v4.16.0-bench"),
       "machine-config-daemon.rhel8": fixture_bins.dynamic_mcd(8, "v4.16.0-bench")}
binaries = {}
for i, n in enumerate(names):
    head = elf.get(n, b"")
    binaries[n] = head + pseudo_binary(n, bin_mib * MIB + i * 4096 - len(head))
layers.append(g.Layer([g.X(f"usr/bin/{n}", data) for n, data in binaries.items()]))
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image(layers)))

blobs = list((layout / "blobs" / "sha256").iterdir())
print(f"mcd_sha256={hashlib.sha256(binaries['machine-config-daemon.rhel8']).hexdigest()}")
print(f"mcd9_sha256={hashlib.sha256(binaries['machine-config-daemon']).hexdigest()}")
print(f"image_bytes={sum(p.stat().st_size for p in blobs)}")
PY
# shellcheck disable=SC1091
. "$work/facts"

# shellcheck source=benches/lib.sh
. benches/lib.sh
push_to_registry "$layout"

results=$work/results
reset() {
  rm -rf "$work/out" "$work/out.ign" "$work/cache" "$work/copy" "$work/rootfs" "$work/sum"
}
bench=benches/registry.sh

out_ok='[ "$(sha256sum <"$work/out" | cut -d" " -f1)" = "$mcd_sha256" ]'
rootfs_ok='[ "$(sha256sum <"$work/rootfs$MCD_PATH" | cut -d" " -f1)" = "$mcd_sha256" ]'
curl_ok="$out_ok"' && [ "$(cut -d" " -f1 "$work/sum")" = "'"${top#sha256:}"'" ]'

fetched=$work/fetched
# cached: the bytes the last run fetched (the blobs in its cold cache).
cached() { find "$work/cache" -type f -path '*/blobs/*' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
# The config must verify, and its provenance name the expected binary.
prov_sha() {
  python3 - "$work/out.ign" <<'PY'
import base64, json, sys, urllib.parse
cfg = json.load(open(sys.argv[1]))
for f in cfg["storage"]["files"]:
    if f["path"] == "/var/lib/mcd-inject/provenance.json":
        src = f["contents"]["source"]
        data = src.split(",", 1)[1]
        raw = base64.b64decode(data) if ";base64" in src.split(",", 1)[0] else urllib.parse.unquote(data).encode()
        print(json.loads(raw)["binary_sha256"])
PY
}
ign8_ok='"$bin" verify "$work/out.ign" >/dev/null 2>&1 && [ "$(prov_sha)" = "$mcd_sha256" ]'
ign9_ok='"$bin" verify "$work/out.ign" >/dev/null 2>&1 && [ "$(prov_sha)" = "$mcd9_sha256" ]'
# After its first run, each mcd-inject row also records the bytes it fetched.
add_row "mcd-inject extract, cold cache" "$out_ok"' && echo "extract|$(cached)" >>"$fetched"' -- \
  "$bin" extract -q --tls-verify=false --cache-dir "$work/cache" --image "docker://$image" \
  --path "$MCD_PATH" -o "$work/out"
add_row "mcd-inject inject --bootimage 4.2, cold cache" "$ign8_ok"' && echo "inject 4.2|$(cached)" >>"$fetched"' -- \
  "$bin" inject -q --tls-verify=false --cache-dir "$work/cache" --image "docker://$image" \
  --bootimage 4.2 --ign "$work/out.ign"
add_row "mcd-inject inject --bootimage 4.16, cold cache" "$ign9_ok"' && echo "inject 4.16|$(cached)" >>"$fetched"' -- \
  "$bin" inject -q --tls-verify=false --cache-dir "$work/cache" --image "docker://$image" \
  --bootimage 4.16 --ign "$work/out.ign"
add_row "skopeo copy + umoci raw unpack" "$rootfs_ok" -- bash -c '
  skopeo copy -q --src-tls-verify=false "docker://$1" "oci:$2/copy:x" &&
  umoci raw unpack --rootless --image "$2/copy:x" "$2/rootfs"' _ "$image" "$work"
add_row "lower bound: curl of the top blob, sha256sum, tar -xzO" "$curl_ok" -- bash -c '
  set -o pipefail
  curl -sf "http://$1/v2/bench/mco/blobs/$2" | tee >(sha256sum >"$3/sum") |
    tar -xzO "${4#/}" >"$3/out"' _ "$reg" "$top" "$work" "$MCD_PATH"
echo "measuring, $RUNS rounds of every command, interleaved ..." >&2
measure_rows

cpu=$(cpu_name)
echo
echo "Content: $CONTENT. Image: 3 gzip layers, $(mib "$image_bytes") MiB of blobs in a loopback docker-registry" \
  "(distribution $(docker-registry --version | awk '{print $3}')); two base layers, a top" \
  "layer of $(mib "$top_bytes") MiB with four ${BIN_MIB} MiB binaries, \`$MCD_PATH\` among them." \
  "Host: $(nproc) CPUs, ${cpu:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
  "median of $RUNS runs, interleaved; CPU is user + system time; ratios are each" \
  "command's median over \`mcd-inject extract, cold cache\`'s."
echo
table_cpu
echo
echo "Bytes fetched by mcd-inject (blobs in the cold cache after a run) against the" \
  "image's $image_bytes bytes of blobs:"
echo
while IFS='|' read -r what bytes; do
  awk -v w="$what" -v b="$bytes" -v t="$image_bytes" 'BEGIN {
    printf "- %s: %d bytes (%.1f MiB, %.1f%% of the image)\n", w, b, b / 1048576, 100 * b / t }'
done <"$fetched"
