#!/usr/bin/env bash
# Runs the cargo-fuzz targets of mcd-inject (fuzz/fuzz_targets/, entry points in
# src/fuzzing.rs). Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
#
#   scripts/fuzz.sh                  # every target for 300 s each
#   scripts/fuzz.sh -t 60 layers     # one target for 60 s
#   scripts/fuzz.sh -r 2000          # every target for 2000 runs each (what CI does)
#
# Each target starts from its kept inputs (fuzz/inputs/TARGET: seeds and past crashes)
# and the corpus it grew before (fuzz/corpus/TARGET, not committed). A crashing input is
# copied to fuzz/inputs/TARGET/crash-SHA1, where tests/it/fuzz_inputs.rs replays it on
# stable Rust from then on; the script then exits 1. A summary line per target ends the
# output.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=300
runs=""
while getopts "t:r:" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    r) runs=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS | -r RUNS] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "scripts/fuzz.sh needs a nightly toolchain and cargo-fuzz:" >&2
  echo "  rustup toolchain install nightly && cargo install cargo-fuzz" >&2
  exit 1
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi

if [[ -n $runs ]]; then
  limit=(-runs="$runs")
else
  limit=(-max_total_time="$seconds")
fi

cargo +nightly fuzz build -O

failed=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log=$(mktemp)
  started=$(date +%s)
  # -rss_limit_mb: a target that needs more memory than this is a bug (unbounded
  # allocation); -timeout: one input that takes longer is a hang.
  if cargo +nightly fuzz run -O "$t" "corpus/$t" "inputs/$t" -- \
      "${limit[@]}" -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
    status=ok
  else
    status=CRASH
    failed=1
  fi
  took=$(($(date +%s) - started))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  for crash in "artifacts/$t"/crash-* "artifacts/$t"/timeout-* "artifacts/$t"/oom-*; do
    [[ -e $crash ]] || continue
    cp "$crash" "inputs/$t/$(basename "$crash")"
    echo "kept $(basename "$crash") as fuzz/inputs/$t/$(basename "$crash")"
  done
  if [[ $status == CRASH ]]; then
    tail -40 "$log"
  fi
  summary+=("$t: $status, ${execs:-?} runs in ${took} s, coverage ${cov:-?}")
  rm -f "$log"
done
printf '%s\n' "${summary[@]}"
exit $failed
