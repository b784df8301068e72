#!/usr/bin/env bash
# Checks `rust-version` in Cargo.toml against the dependency graph in Cargo.lock: it
# may not be lower than the highest `rust-version` a dependency declares (for the host
# platform, dev-dependencies included). Our own code is checked against it by clippy's
# `incompatible_msrv` lint (std APIs newer than `rust-version`), which
# `cargo clippy -- -D warnings` turns into an error. No older toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
meta=$(cargo metadata --format-version 1 --locked --filter-platform "$host")
declared=$(jq -r '.packages[] | select(.name == "mcd-inject") | .rust_version // empty' <<<"$meta")
if [[ -z $declared ]]; then
  echo "msrv: Cargo.toml has no rust-version" >&2
  exit 1
fi
# rust_version of every package in the resolved graph, highest first.
versions=$(jq -r '[.resolve.nodes[].id] as $ids | .packages[]
  | select(.id as $i | $ids | index($i)) | select(.name != "mcd-inject")
  | select(.rust_version != null) | "\(.rust_version) \(.name) \(.version)"' <<<"$meta" |
  sort -V -r)
required=$(head -1 <<<"$versions" | cut -d' ' -f1)
# Compare as versions: 1.88 and 1.88.0 are the same.
norm() { awk -F. '{ printf "%d.%d.%d\n", $1, $2, $3 }' <<<"$1"; }
lowest=$(printf '%s\n%s\n' "$(norm "$declared")" "$(norm "$required")" | sort -V | head -1)
if [[ $lowest != "$(norm "$required")" ]]; then
  echo "msrv: rust-version is $declared, but these dependencies need more:" >&2
  while read -r v name ver; do
    [[ $(printf '%s\n%s\n' "$(norm "$v")" "$(norm "$declared")" | sort -V | tail -1) != "$(norm "$declared")" ]] &&
      echo "  $name $ver: rust-version $v" >&2
  done <<<"$versions"
  exit 1
fi
echo "msrv: rust-version $declared; the highest a dependency needs is $required ($(grep -c "^$required " <<<"$versions") packages)"
