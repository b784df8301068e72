#!/usr/bin/env bash
# Runs every test of mcd-inject on a fresh Debian machine: installs the real components
# the tests use, generates the fixtures, runs lints and the whole suite.
# Needs root for apt-get (and for the Ignition apply tests).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc python3 skopeo umoci zstd jq ignition systemd time)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings

export MCD_INJECT_FIXTURES="$PWD/target/fixtures"
rm -rf "$MCD_INJECT_FIXTURES"
python3 fixtures/generate.py "$MCD_INJECT_FIXTURES"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --all-targets 2>&1 | tee "$log"
# One closing line for the whole suite (cargo prints one per test binary).
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, i; exit (f > 0 || p == 0) }' "$log"
