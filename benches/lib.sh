# Shared by the benchmark scripts. The caller sets: work (a scratch directory), RUNS,
# results (a file), bench (its name, for messages), and defines reset() (clears what a
# run leaves).

# bench_setup NAME TOOL...: from the repository's root, checks that each TOOL is
# installed, builds the release binary into $bin, and makes the scratch directory
# $work, removed on exit.
bench_setup() {
  local name=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: $tool is not installed" >&2; exit 1; }
  done
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-$PWD/target}/release/mcd-inject
  work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-bench.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# push_to_registry LAYOUT: starts the loopback registries of
# scripts/registry-services.sh under $work/registry (the caller's cleanup stops them),
# pushes the OCI layout LAYOUT to the anonymous one as bench/mco:v1, and sets reg,
# image, top (the top layer's digest) and top_bytes (its size). Needs $root.
push_to_registry() {
  local layout=$1 manifest
  echo "starting a loopback registry and pushing ..." >&2
  bash "$root/scripts/registry-services.sh" start "$work/registry" >/dev/null
  # shellcheck disable=SC1091
  . "$work/registry/env"
  reg=$MCD_TEST_REGISTRY_ANON
  image=$reg/bench/mco:v1
  skopeo copy -q --dest-tls-verify=false "oci:$layout:latest" "docker://$image"
  manifest=$(curl -sf -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$reg/v2/bench/mco/manifests/v1")
  top=$(jq -r '.layers[-1].digest' <<<"$manifest")
  top_bytes=$(jq -r '.layers[-1].size' <<<"$manifest")
}

# one_run NAME CMD...: one timed run of CMD after `reset`; sets run_wall (s) and
# run_rss (kB).
one_run() {
  local name=$1
  shift
  reset
  /usr/bin/time -v -o "$work/time.log" "$@" >/dev/null 2>"$work/stderr.log" || {
    echo "$bench: $name failed:" >&2
    cat "$work/stderr.log" "$work/time.log" >&2
    exit 1
  }
  run_wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {
    n = split($2, t, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + t[k]; print s }' "$work/time.log")
  run_rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.log")
  run_cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ {s += $2} END {print s}' "$work/time.log")
}

# check_result NAME CHECK: CHECK (a shell condition) must hold now.
check_result() {
  if ! eval "$2"; then
    echo "$bench: $1 produced the wrong result" >&2
    exit 1
  fi
}

median() {
  printf '%s\n' "$@" | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# measure NAME CHECK -- CMD...: runs CMD RUNS times, each after `reset`; CHECK (a shell
# condition) must hold after the first run; records "NAME|median wall s|peak RSS kB".
measure() {
  local name=$1 check=$2
  shift 3
  local walls=() rss_max=0 i
  for ((i = 0; i < RUNS; i++)); do
    one_run "$name" "$@"
    ((i == 0)) && check_result "$name" "$check"
    walls+=("$run_wall")
    ((run_rss > rss_max)) && rss_max=$run_rss
  done
  echo "$name|$(median "${walls[@]}")|$rss_max" >>"$results"
}

# measure_ab NAME CHECK -- ARGS...: `$bin ARGS` as `measure` does; when BASELINE_BIN is
# set, also `$BASELINE_BIN ARGS` (an earlier build), the two interleaved run by run
# (A B, then B A, ...) so that a change in the machine's load hits both alike. Records
# NAME and "baseline build: NAME".
measure_ab() {
  local name=$1 check=$2
  shift 3
  if [ -z "${BASELINE_BIN:-}" ]; then
    measure "$name" "$check" -- "$bin" "$@"
    return
  fi
  local a=() b=() cpu_a=() cpu_b=() rss_a=0 rss_b=0 i order which
  for ((i = 0; i < RUNS; i++)); do
    order="a b"
    ((i % 2)) && order="b a"
    for which in $order; do
      if [ "$which" = a ]; then
        one_run "$name" "$bin" "$@"
        ((i == 0)) && check_result "$name" "$check"
        a+=("$run_wall")
        cpu_a+=("$run_cpu")
        ((run_rss > rss_a)) && rss_a=$run_rss
      else
        one_run "baseline build: $name" "$BASELINE_BIN" "$@"
        ((i == 0)) && check_result "baseline build: $name" "$check"
        b+=("$run_wall")
        cpu_b+=("$run_cpu")
        ((run_rss > rss_b)) && rss_b=$run_rss
      fi
    done
  done
  echo "$name|$(median "${a[@]}")|$rss_a" >>"$results"
  echo "baseline build: $name|$(median "${b[@]}")|$rss_b" >>"$results"
  echo "$name|$(median "${cpu_a[@]}")|$(median "${cpu_b[@]}")" >>"$work/ab_cpu"
}

# ab_table: for each measure_ab, the median CPU time (user + system) of the build and
# of BASELINE_BIN: on a loaded machine, wall time mostly measures the wait for a CPU.
ab_table() {
  [ -s "$work/ab_cpu" ] || return 0
  echo
  echo "| command | median CPU (s) | baseline build median CPU (s) | build / baseline |"
  echo "| --- | ---: | ---: | ---: |"
  while IFS='|' read -r name a b; do
    awk -v n="$name" -v a="$a" -v b="$b" 'BEGIN {
      printf "| %s | %.3f | %.3f | %.2fx |\n", n, a, b, (b > 0 ? a / b : 0) }'
  done <"$work/ab_cpu"
}

mib() { awk -v b="$1" 'BEGIN {printf "%.0f", b / 1048576}'; }

cpu_name() { awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo; }

# table: the results as Markdown, ratios against the first row.
table() {
  local name wall rss ref_wall ref_rss
  echo "| command | median wall (s) | peak RSS (MiB) | wall ratio | RSS ratio |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  IFS='|' read -r _ ref_wall ref_rss <"$results"
  while IFS='|' read -r name wall rss; do
    awk -v n="$name" -v w="$wall" -v r="$rss" -v rw="$ref_wall" -v rr="$ref_rss" 'BEGIN {
      printf "| %s | %.2f | %.1f | %.2fx | %.2fx |\n", n, w, r / 1024,
        (rw > 0 ? w / rw : 0), (rr > 0 ? r / rr : 0) }'
  done <"$results"
}

# Interleaved rows: `add_row NAME CHECK -- CMD...` for each command, then
# `measure_rows` runs round i of every row, starting at row i mod n (so a change in the
# machine's load hits every row alike), RUNS rounds; CHECK (a shell condition) must
# hold after a row's first run. Records "NAME|median wall s|peak RSS kB|median CPU s"
# (CPU: user + system, which on a shared machine says more than wall time); print with
# `table_cpu`.
row_count=0
row_name=()
row_check=()
add_row() {
  row_name[row_count]=$1
  row_check[row_count]=$2
  shift 3
  eval "row_cmd_$row_count=(\"\$@\")"
  row_count=$((row_count + 1))
}

measure_rows() {
  local i j k cmd walls=() cpus=() rss=()
  for ((i = 0; i < RUNS; i++)); do
    for ((j = 0; j < row_count; j++)); do
      k=$(((i + j) % row_count))
      eval 'cmd=("${row_cmd_'"$k"'[@]}")'
      one_run "${row_name[k]}" "${cmd[@]}"
      ((i == 0)) && check_result "${row_name[k]}" "${row_check[k]}"
      walls[k]="${walls[k]:-} $run_wall"
      cpus[k]="${cpus[k]:-} $run_cpu"
      ((run_rss > ${rss[k]:-0})) && rss[k]=$run_rss
    done
  done
  for ((k = 0; k < row_count; k++)); do
    # shellcheck disable=SC2086
    echo "${row_name[k]}|$(median ${walls[k]})|${rss[k]}|$(median ${cpus[k]})" >>"$results"
  done
}

# table_cpu: the results of measure_rows as Markdown, ratios against the first row.
table_cpu() {
  local ref_wall ref_rss ref_cpu
  echo "| command | median wall (s) | median CPU (s) | peak RSS (MiB) | wall ratio | CPU ratio | RSS ratio |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  IFS='|' read -r _ ref_wall ref_rss ref_cpu <"$results"
  while IFS='|' read -r name wall rss cpu; do
    awk -v n="$name" -v w="$wall" -v r="$rss" -v c="$cpu" -v rw="$ref_wall" -v rr="$ref_rss" \
      -v rc="$ref_cpu" 'BEGIN {
      printf "| %s | %.2f | %.2f | %.1f | %.2fx | %.2fx | %.2fx |\n", n, w, c, r / 1024,
        (rw > 0 ? w / rw : 0), (rc > 0 ? c / rc : 0), (rr > 0 ? r / rr : 0) }'
  done <"$results"
}
