#!/usr/bin/env bash
# Peak RSS, wall time and exit code of `mcd-inject extract` on hostile layers: a 512 MiB
# PAX extended header and a 512 MiB GNU long name (each about 0.5 MiB of gzip), and an
# MCD of 10 GiB of zeros (10 MiB of gzip). Prints a Markdown table for BENCHMARKS.md.
#
#   bash benches/bombs.sh
#   BASELINE_BIN=/path/to/older/mcd-inject bash benches/bombs.sh   # adds rows for the
#                                                     # header bombs (not the 10 GiB file)
#
# Each command runs once (they are refused, or bounded); the output directory is checked
# to be empty afterwards.
#
# Needs: cargo, python3, /usr/bin/time.

set -euo pipefail

cd "$(dirname "$0")/.."
for tool in cargo python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/bombs.sh: $tool is not installed" >&2; exit 1; }
done
cargo build --release --quiet
bin=$PWD/target/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "generating the hostile images in $work ..." >&2
python3 - "$work" <<'PY'
import hashlib
import io
import sys
import tarfile
import zlib
from pathlib import Path

sys.path.insert(0, "fixtures")
import generate as g  # noqa: E402

work = Path(sys.argv[1])
HUGE = 512 << 20


def gz_layer(chunks):
    """(diff_id, gzip blob) of a tar given as byte chunks, streamed."""
    digest, gz, out = hashlib.sha256(), zlib.compressobj(6, zlib.DEFLATED, 31), []
    for c in chunks:
        digest.update(c)
        out.append(gz.compress(c))
    out.append(gz.flush())
    return digest.hexdigest(), b"".join(out)


def header_bomb(typeflag, name):
    """One extension header (PAX `x` or GNU `L`) of HUGE bytes, then a small file."""
    info = tarfile.TarInfo(name)
    info.type, info.size = typeflag, HUGE
    yield info.tobuf(format=tarfile.USTAR_FORMAT if typeflag == b"x" else tarfile.GNU_FORMAT)
    if typeflag == b"x":
        # One PAX record "N comment=xxx...\n" of exactly HUGE bytes.
        body = HUGE - len(b" comment=\n") - len(str(HUGE))
        yield (str(HUGE) + " comment=").encode()
        left = body
    else:
        left = HUGE - 1
    chunk = b"x" * (1 << 20)
    while left:
        n = min(left, len(chunk))
        yield chunk[:n]
        left -= n
    yield b"\n" if typeflag == b"x" else b"\0"
    mcd = tarfile.TarInfo("usr/bin/machine-config-daemon")
    mcd.mode, mcd.size = 0o755, 4
    yield mcd.tobuf(format=tarfile.GNU_FORMAT) + b"mcd\n" + bytes(508) + bytes(1024)


def zeros(size):
    info = tarfile.TarInfo("usr/bin/machine-config-daemon")
    info.mode, info.size = 0o755, size
    yield info.tobuf(format=tarfile.PAX_FORMAT)
    chunk = bytes(8 << 20)
    left = size
    while left:
        n = min(left, len(chunk))
        yield chunk[:n]
        left -= n
    yield bytes(-size % 512 + 1024)


def write(name, layer):
    base = g.base_layer(g.RHEL9_4)
    writer = g.LayoutWriter(work / name)
    writer.finish(writer.image(g.Image([base, g.Layer([], prebuilt=layer)])))


write("pax", gz_layer(header_bomb(b"x", "././@PaxHeader")))
write("longname", gz_layer(header_bomb(b"L", "././@LongLink")))
write("zeros", gz_layer(zeros(10 << 30)))
PY

rows=$work/rows
run() {
  local name=$1
  shift
  mkdir -p "$work/out"
  local code=0
  /usr/bin/time -v -o "$work/time.log" "$@" >/dev/null 2>"$work/stderr.log" || code=$?
  local wall rss left
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {
    n = split($2, t, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + t[k]; printf "%.2f", s }' "$work/time.log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.log")
  left=$(find "$work/out" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  echo "| $name | $code | $wall | $(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1024}') | $left | $(head -c 150 "$work/stderr.log" | tr '\n|' '  ') |" >>"$rows"
  rm -rf "$work/out"
}

for img in pax longname zeros; do
  run "mcd-inject extract, $img" "$bin" extract --image "oci:$work/$img:latest" \
    --path /usr/bin/machine-config-daemon -o "$work/out/mcd"
  if [ -n "${BASELINE_BIN:-}" ] && [ "$img" != zeros ]; then
    run "baseline build: extract, $img" "$BASELINE_BIN" extract --image "oci:$work/$img:latest" \
      --path /usr/bin/machine-config-daemon -o "$work/out/mcd"
  fi
done

echo
echo "Hostile layers: a 512 MiB PAX header, a 512 MiB GNU long name, 10 GiB of zeros as" \
  "the MCD. Host: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); one run each."
echo
echo "| command | exit | wall (s) | peak RSS (MiB) | bytes left in the output directory | stderr (start) |"
echo "| --- | ---: | ---: | ---: | ---: | --- |"
cat "$rows"
