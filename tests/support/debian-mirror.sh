#!/usr/bin/env bash
# Prints the machine's own Debian mirror (the first URI of its apt sources that is not a
# security one), which the roots of the tests are bootstrapped from.
set -euo pipefail
uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
  tr ' ' '\n' | grep -v -- '-security' | head -n1 || true)
if [[ -z $uri && -r /etc/apt/sources.list ]]; then
  uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; exit } }' /etc/apt/sources.list)
fi
[[ -n $uri ]] || {
  echo "debian-mirror.sh: no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list" >&2
  exit 1
}
echo "$uri"
