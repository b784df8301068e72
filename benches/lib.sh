# Shared by the benchmark scripts. The caller sets: work (a scratch directory), RUNS,
# results (a file), bench (its name, for messages), and defines reset() (clears what a
# run leaves).

# measure NAME CHECK -- CMD...: runs CMD RUNS times, each after `reset`; CHECK (a shell
# condition) must hold after the first run; records "NAME|median wall s|peak RSS kB".
measure() {
  local name=$1 check=$2
  shift 3
  local walls=() rss_max=0 i rss median
  for ((i = 0; i < RUNS; i++)); do
    reset
    /usr/bin/time -v -o "$work/time.log" "$@" >/dev/null 2>"$work/stderr.log" || {
      echo "$bench: $name failed:" >&2
      cat "$work/stderr.log" "$work/time.log" >&2
      exit 1
    }
    if ((i == 0)) && ! eval "$check"; then
      echo "$bench: $name produced the wrong result" >&2
      exit 1
    fi
    walls+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {
      n = split($2, t, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + t[k]; print s }' "$work/time.log")")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.log")
    ((rss > rss_max)) && rss_max=$rss
  done
  median=$(printf '%s\n' "${walls[@]}" | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
  echo "$name|$median|$rss_max" >>"$results"
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
