#!/usr/bin/env bash
# What a boot test costs, step by step, against a bare boot of the same root: preparing a
# root, applying the config with the real Ignition (v0.35 for spec 2.2, Debian's 2.14 for
# spec 3.2), and booting the applied root under systemd-nspawn until its probe powers it
# off. Prints a Markdown table for BENCHMARKS.md. Needs root, and what the boot tests
# need (systemd-container, debootstrap, ignition, gcc, python3, xz; ../shared).
#
#   bash benches/boot.sh            # RUNS=5 by default

set -euo pipefail

RUNS=${RUNS:-5}
cd "$(dirname "$0")/.."
crate=$PWD
for tool in cargo python3 gcc xz systemd-nspawn debootstrap /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/boot.sh: $tool is not installed" >&2; exit 1; }
done
shared=${MCD_INJECT_SHARED:-$crate/../shared}
[[ -d $shared ]] || { echo "benches/boot.sh: $shared is missing" >&2; exit 1; }
cargo build --release --quiet
bin=$crate/target/release/mcd-inject
boot=$crate/tests/support/boot-root.sh
base=${MCD_INJECT_BOOT_BASE:-$crate/target/boot-base}
bash "$boot" base "$base"

work=$(mktemp -d "$crate/target/mcd-inject-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results
bench=boot.sh
: >"$results"
# shellcheck source=benches/lib.sh
. benches/lib.sh

gcc -static -O2 -o "$work/mcd-probe" tests/support/mcd_probe.c
python3 tests/support/mcd_image.py "$work/image" 8.6 "/usr/bin/machine-config-daemon=$work/mcd-probe"
xz -dc "$shared/ignition-v0.35/ignition.xz" >"$work/ignition-v0.35"
chmod +x "$work/ignition-v0.35"
ign3=/usr/lib/dracut/modules.d/30ignition/ignition
ln -s "$ign3" "$work/ignition-apply"

# Standalone configs: a base that holds only the machine config the firstboot completes.
# The machine config is the one the MCS of MCO release-4.12 serves (tests/data/mcs).
for spec in 2.2 3; do
  jq '{ignition: {version: .ignition.version}, storage: {files:
        [.storage.files[] | select(.path == "/etc/ignition-machine-config-encapsulated.json")]}}' \
    "tests/data/mcs/release-4.12/worker-spec$spec.ign" >"$work/base-$spec.ign"
done
"$bin" inject --image "oci:$work/image:latest" --bootimage 4.2 --base "$work/base-2.2.ign" \
  --ign "$work/node-2.2.ign" 2>/dev/null
"$bin" inject --image "oci:$work/image:latest" --bootimage 4.8 --base "$work/base-3.ign" \
  --ign "$work/node-3.2.ign" 2>/dev/null

root=$work/root
mode=none
reset() {
  bash "$boot" prepare "$base" "$root"
  case $mode in
    applied-2.2) apply2 ;;
    applied-3.2) apply3 ;;
  esac
}
apply2() {
  mkdir -p "$work/sys"
  for stage in fetch disks files; do
    IGNITION_CONFIG_FILE=$work/node-2.2.ign IGNITION_SYSTEM_CONFIG_DIR=$work/sys \
      "$work/ignition-v0.35" -oem file -stage "$stage" -root "$root" \
      -config-cache "$work/cache.json" >/dev/null 2>&1
  done
}
apply3() {
  container=1 "$work/ignition-apply" --offline --root "$root" "$work/node-3.2.ign" >/dev/null 2>&1
}
export -f apply2 apply3
export work root

mode=none
measure "bare boot of the prepared root, no config (baseline)" \
  "grep -q '^state=running' $root/var/lib/boot-probe/report" -- bash "$boot" boot "$root" 120
measure "prepare a root (copy of the base)" "[[ -e $root/usr/libexec/boot-probe.sh ]]" -- \
  bash "$boot" prepare "$base" "$root"
measure "Ignition v0.35 applies the spec 2.2 config (fetch, disks, files)" \
  "[[ -e $root/var/lib/mcd-inject/machine-config-daemon.gz ]]" -- bash -c apply2
measure "Debian's Ignition 2.14 applies the spec 3.2 config" \
  "[[ -e $root/var/lib/mcd-inject/machine-config-daemon.gz ]]" -- bash -c apply3
mode=applied-2.2
measure "boot of the spec 2.2 root until the probe powers off" \
  "grep -q '^state=running' $root/var/lib/boot-probe/report && [[ -e $root/var/lib/boot-probe/mcd-run ]]" -- \
  bash "$boot" boot "$root" 120
mode=applied-3.2
measure "boot of the spec 3.2 root until the probe powers off" \
  "grep -q '^state=running' $root/var/lib/boot-probe/report && [[ -e $root/var/lib/boot-probe/mcd-run ]]" -- \
  bash "$boot" boot "$root" 120

echo "Machine: $(nproc) cores, $(cpu_name); load average $(cut -d' ' -f1-3 /proc/loadavg); RUNS=$RUNS"
echo
table
