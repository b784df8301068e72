#!/usr/bin/env bash
# Peak RSS, wall and CPU time of `mcd-inject inject --base` on large base configs (also
# translated to the other spec family, for a bootimage that reads it), and of `verify`
# on what it writes, against `inject` without a base and a stock JSON reader (`jq -c .`)
# on the same base. Prints Markdown tables for BENCHMARKS.md.
#
#   bash benches/base.sh                 # RUNS=3, bases of 20,000 and 200,000 files
#   SIZES="200000" RUNS=5 bash benches/base.sh
#   BASELINE_BIN=/path/to/older/mcd-inject bash benches/base.sh   # adds its rows
#
# Each base is generated deterministically (compact JSON, as an installer writes it),
# for spec 2.2 (bootimage 4.2) and spec 3.2 (bootimage 4.12): FILES small inline files
# in FILES/100 directories (each also a `storage.directories` entry), FILES/100 symlinks,
# FILES/1000 units (each with a drop-in), and a user. The image is one layer holding a
# small static MCD, so that what is measured is the base. "above no base" is the peak RSS
# minus that of `inject` without `--base` for the same bootimage; the goal is under 3x
# the base's size.
#
# Needs: cargo, python3, gcc, jq, /usr/bin/time.

set -euo pipefail

RUNS=${RUNS:-3}
SIZES=${SIZES:-20000 200000}

cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/base.sh cargo python3 gcc jq /usr/bin/time
layout=$work/layout
bench=benches/base.sh
results=$work/results
reset() { rm -f "$work/out.ign"; }

echo "generating the image and the bases in $work ..." >&2
python3 - "$layout" "$work" $SIZES <<'PY'
import json
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
import generate as g  # noqa: E402

layout, work, sizes = Path(sys.argv[1]), Path(sys.argv[2]), [int(s) for s in sys.argv[3:]]
(work / "bins").mkdir()
mcd = g.Binaries(work / "bins").static_mcd("v4.16.0-bench")
layer = g.Layer([g.X("usr/bin/machine-config-daemon", mcd), g.F("usr/lib/os-release", g.os_release("8.6", "Red Hat Enterprise Linux 8.6"))])
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image([layer])))

UNIT = "[Unit]\nDescription=bench {i}\n[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"


def base(spec, files):
    node = {"filesystem": "root"} if spec.startswith("2.") else {}
    dirs = max(files // 100, 1)
    return {
        "ignition": {"version": spec},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIbench"]}]},
        "storage": {
            "directories": [{**node, "path": f"/etc/bench/d{d:05}", "mode": 493} for d in range(dirs)],
            "files": [
                {**node, "path": f"/etc/bench/d{i % dirs:05}/f{i:07}", "mode": 420,
                 "contents": {"source": f"data:,file%20{i}%0A"}}
                for i in range(files)
            ],
            "links": [{**node, "path": f"/etc/bench/l{d:05}", "target": f"/etc/bench/d{d:05}"} for d in range(dirs)],
        },
        "systemd": {"units": [
            {"name": f"bench-{u:04}.service", "enabled": True, "contents": UNIT.format(i=u),
             "dropins": [{"name": "10-bench.conf", "contents": "[Service]\nEnvironment=BENCH=1\n"}]}
            for u in range(max(files // 1000, 1))
        ]},
    }


for files in sizes:
    for spec in ["2.2.0", "3.2.0"]:
        path = work / f"base-{files}-{spec}.ign"
        path.write_text(json.dumps(base(spec, files), separators=(",", ":")))
PY

# row NAME CHECK -- CMD...: RUNS runs; records "NAME|median wall|median CPU|peak RSS kB".
row() {
  local name=$1 check=$2
  shift 3
  local walls=() cpus=() rss_max=0 i
  for ((i = 0; i < RUNS; i++)); do
    one_run "$name" "$@"
    ((i == 0)) && check_result "$name" "$check"
    walls+=("$run_wall")
    cpus+=("$run_cpu")
    ((run_rss > rss_max)) && rss_max=$run_rss
  done
  echo "$name|$(median "${walls[@]}")|$(median "${cpus[@]}")|$rss_max" >>"$results"
}

# base_table SIZE: the rows as Markdown; for rows of `inject --base`, the RSS above the first
# row (inject without a base) against the base's SIZE.
base_table() {
  local size=$1 ref_rss name wall cpu rss
  echo "| command | median wall (s) | median CPU (s) | peak RSS (MiB) | peak RSS / base size | RSS above no base / base size |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
  IFS='|' read -r _ _ _ ref_rss <"$results"
  while IFS='|' read -r name wall cpu rss; do
    awk -v n="$name" -v w="$wall" -v c="$cpu" -v r="$rss" -v rr="$ref_rss" -v s="$size" 'BEGIN {
      above = (n ~ /inject --base/) ? sprintf("%.2fx (%.1f MiB)", (r - rr) * 1024 / s, (r - rr) / 1024) : "-"
      printf "| %s | %.2f | %.2f | %.1f | %.2fx | %s |\n", n, w, c, r / 1024, r * 1024 / s, above }'
  done <"$results"
}

merged_ok='[ -s "$work/out.ign" ] && "$bin" verify "$work/out.ign" >/dev/null 2>&1'
verify_ok='true'

echo "measuring, $RUNS runs each ..." >&2
echo "Host: $(nproc) CPUs, $(cpu_name); page cache warm; median of $RUNS runs, peak RSS the largest of the runs."
for files in $SIZES; do
  for spec in 2.2.0 3.2.0; do
    case $spec in 2.2.0) boot=4.2 ;; *) boot=4.12 ;; esac
    b=$work/base-$files-$spec.ign
    size=$(stat -c %s "$b")
    : >"$results"
    img=(--image "oci:$layout:latest" --bootimage "$boot" --ign "$work/out.ign")
    row "inject, no --base" "$merged_ok" -- "$bin" inject "${img[@]}"
    row "inject --base" "$merged_ok" -- "$bin" inject "${img[@]}" --base "$b"
    # The same base for a bootimage of the other spec family: translated as it is read.
    case $spec in 2.2.0) other=4.12 ;; *) other=4.2 ;; esac
    row "inject --base, translated for bootimage $other" "$merged_ok" -- \
      "$bin" inject --image "oci:$layout:latest" --bootimage "$other" --ign "$work/out.ign" --base "$b"
    [ -n "${BASELINE_BIN:-}" ] &&
      row "baseline build: inject --base" '[ -s "$work/out.ign" ]' -- "$BASELINE_BIN" inject "${img[@]}" --base "$b"
    "$bin" inject "${img[@]}" --base "$b" >/dev/null 2>&1
    cp "$work/out.ign" "$work/merged.ign"
    merged_size=$(stat -c %s "$work/merged.ign")
    row "verify of the merged config ($(awk -v b="$merged_size" 'BEGIN {printf "%.1f", b / 1e6}') MB)" "$verify_ok" -- \
      "$bin" verify "$work/merged.ign"
    [ -n "${BASELINE_BIN:-}" ] &&
      row "baseline build: verify of the merged config" "$verify_ok" -- "$BASELINE_BIN" verify "$work/merged.ign"
    row "jq -c . base > /dev/null" "$verify_ok" -- jq -c . "$b"
    echo
    echo "### base of $files files, spec $spec ($(awk -v b="$size" 'BEGIN {printf "%.1f", b / 1e6}') MB), bootimage $boot"
    echo
    base_table "$size"
  done
done
