#!/usr/bin/env bash
# What the configs `inject` writes cost the node: CPU seconds and peak RSS of the real
# Ignition v0.35 (the spec 2.x Ignition of 4.1-4.5 bootimages) in its `fetch` and
# `files` stages, for inline spec 2.2 configs of real MCD builds and for remote mode.
# Prints Markdown tables for BENCHMARKS.md, and the rates the size warning of
# `inject` is based on.
#
#   bash benches/node.sh            # RUNS=3 by default; as root (Ignition's files stage)
#
# Inputs, from MCD_INJECT_SHARED or ../shared beside the crate: ignition-v0.35/ignition.xz
# and the real MCD builds real-mcd/mcd-4.12-rhel8.xz (46 MB, static) and
# real-mcd/mcd-main-rhel8.xz (81 MB, dynamic, glibc 2.28 ABI), each checked against its
# SHA256SUMS. Each build is put at /usr/bin/machine-config-daemon of a one-layer image
# with a RHEL 8.6 os-release, and `mcd-inject inject --bootimage 4.2` writes the config
# (spec 2.2, payload inline); remote mode serves the payload from a loopback HTTP server
# (python3 http.server on 127.0.0.1, a port picked at run time, stopped by PID).
#
# Each run: a fresh scratch root (usr/local -> ../var/usrlocal, as on RHCOS), then the
# stages `fetch`, `disks`, `files` as the initramfs runs them; `fetch` and `files` are
# measured with /usr/bin/time -v (CPU = user + sys).
#
# Needs: cargo, python3, xz, sha256sum, /usr/bin/time, root.
set -euo pipefail

RUNS=${RUNS:-3}
cd "$(dirname "$0")/.."
root=$PWD
shared=${MCD_INJECT_SHARED:-$root/../shared}
for tool in cargo python3 xz sha256sum /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/node.sh: $tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "benches/node.sh: run as root (Ignition's files stage)" >&2; exit 1; }
[ -d "$shared/ignition-v0.35" ] && [ -d "$shared/real-mcd" ] || {
  echo "benches/node.sh: $shared has no ignition-v0.35/ or real-mcd/ (set MCD_INJECT_SHARED)" >&2
  exit 1
}

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$root/target}/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-nodebench.XXXXXX")
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# unpack COMPONENT NAME: $work/NAME, checked against the component's SHA256SUMS.
unpack() {
  local want got
  want=$(awk -v n="$2" '{f = $2; sub(/^\*/, "", f)} f == n {print $1}' "$shared/$1/SHA256SUMS")
  [ -n "$want" ] || { echo "benches/node.sh: $1/SHA256SUMS has no $2" >&2; exit 1; }
  xz -dc "$shared/$1/$2.xz" >"$work/$2"
  got=$(sha256sum <"$work/$2" | cut -d' ' -f1)
  [ "$got" = "$want" ] || { echo "benches/node.sh: $1/$2.xz does not match SHA256SUMS" >&2; exit 1; }
  chmod +x "$work/$2"
}
unpack ignition-v0.35 ignition
unpack real-mcd mcd-4.12-rhel8
unpack real-mcd mcd-main-rhel8
ignition=$work/ignition

echo "generating the images in $work ..." >&2
for mcd in mcd-4.12-rhel8 mcd-main-rhel8; do
  python3 - "$work/$mcd" "$work/layout-$mcd" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
import generate as g  # noqa: E402

mcd, layout = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2])
g.GZIP_LEVEL = 1  # the image's own compression does not matter here
layer = g.Layer([g.X("usr/bin/machine-config-daemon", mcd),
                 g.F("usr/lib/os-release", g.os_release("8.6", "Red Hat Enterprise Linux 8.6"))])
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image([layer])))
PY
done

mkdir -p "$work/srv"
python3 -u -m http.server --bind 127.0.0.1 --directory "$work/srv" 0 >"$work/http.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 50); do
  port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$work/http.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "benches/node.sh: the HTTP server did not start" >&2; cat "$work/http.log" >&2; exit 1; }

declare -A cfg_bytes payload_bytes
for mcd in mcd-4.12-rhel8 mcd-main-rhel8; do
  "$bin" inject -q --image "oci:$work/layout-$mcd:latest" --bootimage 4.2 \
    --ign "$work/$mcd-inline.ign" 2>/dev/null
  cfg_bytes[$mcd-inline]=$(stat -c %s "$work/$mcd-inline.ign")
  "$bin" inject -q --image "oci:$work/layout-$mcd:latest" --bootimage 4.2 \
    --ign "$work/$mcd-remote.ign" --payload-url "http://127.0.0.1:$port/$mcd.gz" \
    --payload-out "$work/srv/$mcd.gz" 2>/dev/null
  cfg_bytes[$mcd-remote]=$(stat -c %s "$work/$mcd-remote.ign")
  payload_bytes[$mcd]=$(stat -c %s "$work/srv/$mcd.gz")
done

# stage CFG STAGE ROOT CACHE LOG: one Ignition v0.35 stage under /usr/bin/time -v.
stage() {
  mkdir -p "$work/sysconfig"
  IGNITION_CONFIG_FILE=$1 IGNITION_SYSTEM_CONFIG_DIR=$work/sysconfig \
    /usr/bin/time -v -o "$5" "$ignition" -oem file -stage "$2" -root "$3" \
    -config-cache "$4" -log-to-stdout >"$work/stage.log" 2>&1 || {
    echo "benches/node.sh: ignition $2 on $1 failed:" >&2
    tail -20 "$work/stage.log" >&2
    exit 1
  }
}
cpu_of() { awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {printf "%.2f", u + s}' "$1"; }
rss_of() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

results=$work/results
echo "measuring, $RUNS runs each ..." >&2
for name in mcd-4.12-rhel8-inline mcd-main-rhel8-inline mcd-4.12-rhel8-remote mcd-main-rhel8-remote; do
  cfg=$work/$name.ign
  fetch_cpu=() files_cpu=() fetch_rss=0 files_rss=0
  for ((i = 0; i < RUNS; i++)); do
    r=$work/root
    rm -rf "$r" "$work/cache.json"
    mkdir -p "$r/var/usrlocal" "$r/usr"
    ln -s ../var/usrlocal "$r/usr/local"
    stage "$cfg" fetch "$r" "$work/cache.json" "$work/fetch.time"
    stage "$cfg" disks "$r" "$work/cache.json" "$work/disks.time"
    stage "$cfg" files "$r" "$work/cache.json" "$work/files.time"
    if ((i == 0)); then
      # The payload must be on the root as the config says, whatever the mode.
      "$bin" verify "$cfg" >/dev/null 2>&1 || [ "${name%-remote}" != "$name" ] || {
        echo "benches/node.sh: $cfg does not verify" >&2; exit 1; }
      gz=$r/var/lib/mcd-inject/machine-config-daemon.gz
      [ "$(gzip -dc "$gz" | sha256sum | cut -d' ' -f1)" = "$(sha256sum <"$work/${name%-*}" | cut -d' ' -f1)" ] || {
        echo "benches/node.sh: $name: the payload on the root is not the MCD" >&2; exit 1; }
    fi
    fetch_cpu+=("$(cpu_of "$work/fetch.time")")
    files_cpu+=("$(cpu_of "$work/files.time")")
    r1=$(rss_of "$work/fetch.time"); ((r1 > fetch_rss)) && fetch_rss=$r1
    r2=$(rss_of "$work/files.time"); ((r2 > files_rss)) && files_rss=$r2
  done
  echo "$name|${cfg_bytes[$name]}|$(printf '%s\n' "${fetch_cpu[@]}" | median)|$fetch_rss|$(printf '%s\n' "${files_cpu[@]}" | median)|$files_rss" >>"$results"
done

echo
echo "Ignition v0.35.0 (../shared/ignition-v0.35), stages fetch, disks, files on a scratch root;" \
  "bootimage 4.2 (spec 2.2). Payloads: mcd-4.12-rhel8 $(awk -v b="${payload_bytes[mcd-4.12-rhel8]}" 'BEGIN {printf "%.1f", b / 1e6}') MB of gzip," \
  "mcd-main-rhel8 $(awk -v b="${payload_bytes[mcd-main-rhel8]}" 'BEGIN {printf "%.1f", b / 1e6}') MB." \
  "Host: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); median CPU of $RUNS runs, peak RSS the largest."
echo
echo "| config | size (MB) | fetch CPU (s) | fetch peak RSS (MiB) | files CPU (s) | files peak RSS (MiB) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
while IFS='|' read -r name bytes fc fr lc lr; do
  awk -v n="$name" -v b="$bytes" -v fc="$fc" -v fr="$fr" -v lc="$lc" -v lr="$lr" 'BEGIN {
    printf "| %s | %.2f | %.2f | %.0f | %.2f | %.0f |\n", n, b / 1e6, fc, fr / 1024, lc, lr / 1024 }'
done <"$results"
echo
echo "Rates of the inline configs (both stages, over the config's size):"
echo
awk -F'|' '$1 ~ /inline/ {
  mb = $2 / 1e6
  printf "- %s: %.2f s of CPU per MB (fetch %.2f, files %.2f); peak RSS %.1f bytes per config byte (fetch), %.1f (files)\n",
    $1, ($3 + $5) / mb, $3 / mb, $5 / mb, $4 * 1024 / $2, $6 * 1024 / $2 }' "$results"
