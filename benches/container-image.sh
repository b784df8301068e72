#!/usr/bin/env bash
# The container image: its size against the binary it packs, and what running the main
# job through `podman run` costs against starting the container alone and against
# running the binary itself (the same config, byte for byte). Prints Markdown for
# BENCHMARKS.md.
#
#   bash benches/container-image.sh            # RUNS=5
#
# podman's storage is a scratch directory (vfs); the runs use runc with cgroupfs and
# explicit ulimits, as tests/it/container.rs does. CPU time is podman's own (the
# container's processes are not its children), so compare wall times.
#
# Needs: cargo, python3, buildah, podman, runc, /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-5}

cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/container-image.sh cargo python3 buildah podman runc /usr/bin/time
bench=benches/container-image.sh
results=$work/results
: >"$results"
store=$work/store
storage=(--root "$store/root" --runroot "$store/run" --storage-driver vfs)
tag=localhost/mcd-inject:bench
cleanup_store() { podman "${storage[@]}" rmi -af >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup_store EXIT

echo "generating the fixtures and building the image ..." >&2
python3 fixtures/generate.py "$work/fixtures" >/dev/null
bash scripts/container-image.sh "$bin" "$tag" "${storage[@]}" >/dev/null
mkdir -p "$work/out"
chmod 0777 "$work/out"
reset() { rm -f "$work/out/"*.ign; }

on_host=("$bin" inject --image "oci:$work/fixtures/layouts/mco-4.16:latest" --bootimage 4.2
  --ign "$work/out/host.ign")
in_container=(podman "${storage[@]}" --cgroup-manager cgroupfs --runtime runc run --rm
  --ulimit nofile=1024:1024 --ulimit nproc=4096:4096
  -v "$work/fixtures/layouts:/in:ro" -v "$work/out:/out" "$tag"
  inject --image oci:/in/mco-4.16:latest --bootimage 4.2 --ign /out/container.ign)
"${on_host[@]}" 2>/dev/null
cp "$work/out/host.ign" "$work/want.ign"
# Ratios are against the start of a container that does nothing (`--version`): the job
# itself takes a few ms, under the 10 ms resolution of /usr/bin/time.
start_only=(podman "${storage[@]}" --cgroup-manager cgroupfs --runtime runc run --rm
  --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "$tag" --version)
add_row "podman run mcd-inject --version (the container's start)" 'true' -- "${start_only[@]}"
add_row "podman run mcd-inject inject (the image)" 'cmp -s "$work/out/container.ign" "$work/want.ign"' -- "${in_container[@]}"
add_row "mcd-inject inject (the binary)" 'cmp -s "$work/out/host.ign" "$work/want.ign"' -- "${on_host[@]}"

echo "measuring, $RUNS rounds ..." >&2
measure_rows
image_bytes=$(podman "${storage[@]}" image inspect "$tag" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Size"])')
bin_bytes=$(stat -c %s "$bin")
echo "Host: $(nproc) CPUs, $(cpu_name); load average $(cut -d' ' -f1 /proc/loadavg) at the end; median of $RUNS interleaved rounds; $(podman --version), $(buildah --version | cut -d' ' -f1-3)."
echo
echo "| what | bytes | MiB | ratio |"
echo "| --- | ---: | ---: | ---: |"
awk -v b="$bin_bytes" -v i="$image_bytes" 'BEGIN {
  printf "| the release binary | %d | %.1f | 1.00x |\n", b, b / 1048576
  printf "| the image (binary, loader and libraries, CA bundle) | %d | %.1f | %.2fx |\n", i, i / 1048576, i / b }'
echo
table_cpu
