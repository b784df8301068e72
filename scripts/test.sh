#!/usr/bin/env bash
# Runs every test of mcd-inject on a fresh Debian machine: installs the real components
# the tests use, generates the fixtures, starts the loopback registries (127.0.0.1,
# ports picked at run time), runs lints and the whole suite, and stops the registries.
# Needs root for apt-get, the Ignition apply tests and the boot tests (systemd-nspawn, and
# qemu for the VM boots).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(gcc git libc6-dev python3 skopeo umoci zstd xz-utils jq ignition systemd systemd-container
  debootstrap time docker-registry apache2-utils openssl curl gpg gpg-agent bsdutils
  zsh fish man-db groff-base e2fsprogs gdisk xorriso isolinux buildah podman runc ca-certificates)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  # Keep package scripts from starting the packaged registry, which listens on every
  # interface; the tests start their own, on 127.0.0.1.
  policy=/usr/sbin/policy-rc.d
  own_policy=false
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=true
  fi
  # systemd-nspawn (the boot tests) must match the installed systemd, or apt upgrades
  # systemd along with it.
  systemd_version=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null || true)
  if [[ -n $systemd_version ]]; then
    missing=("${missing[@]/#systemd-container/systemd-container=$systemd_version}")
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if $own_policy; then rm -f "$policy"; fi
fi

# kubectl, the judge of the user-data Secrets `inject --secret-out` writes
# (tests/it/secret_manifest.rs): Debian's kubernetes-client where the machine has none.
if ! command -v kubectl >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubernetes-client
fi

# The Tekton linter of tests/it/deploy.rs (@ibm/tekton-lint, with its dependencies from
# npm), under target/, kept while it is the pinned version. npm is Debian's where the
# machine has none.
if ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
tekton_lint=$PWD/target/tekton-lint
tekton_lint_version=1.1.0
if [[ $(cat "$tekton_lint/version" 2>/dev/null) != "$tekton_lint_version" ]]; then
  rm -rf "$tekton_lint"
  npm install --prefix "$tekton_lint" --no-audit --no-fund --loglevel=error \
    "@ibm/tekton-lint@$tekton_lint_version" >/dev/null
  echo "$tekton_lint_version" >"$tekton_lint/version"
fi

# qemu-system-x86 for the VM boot tests (tests/it/vm.rs), from bookworm-backports: the
# machine's qemu-utils may come from there, and bookworm's own qemu-system-x86 does not go
# with it. A private apt configuration adds that suite to the URI of the machine's own
# Debian sources; the machine's apt configuration is left as it is.
if ! command -v qemu-system-x86_64 >/dev/null; then
  apt_dir=$(mktemp -d)
  chmod 0755 "$apt_dir"
  uri=$(bash tests/support/debian-mirror.sh)
  mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial"
  cp /etc/apt/sources.list.d/*.sources "$apt_dir/parts/" 2>/dev/null || true
  [[ -r /etc/apt/sources.list ]] && cp /etc/apt/sources.list "$apt_dir/parts/machine.list"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" >"$apt_dir/parts/backports.sources"
  printf 'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "%s/parts";\nDir::State::Lists "%s/lists";\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
    "$apt_dir" "$apt_dir" >"$apt_dir/apt.conf"
  APT_CONFIG=$apt_dir/apt.conf apt-get update -qq
  APT_CONFIG=$apt_dir/apt.conf DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends -t bookworm-backports qemu-system-x86
  rm -rf "$apt_dir"
fi

# The roots of the boot tests, made in the background while the lints run: the nspawn
# base roots of RHEL 9's ABI (bookworm) and RHEL 8's (bullseye), then the VM (kernel,
# initramfs and disk) from the first and its disk of RHEL 8's ABI, then the initramfs of a
# 4.1/4.2 bootimage for that VM (Ignition v0.35 from the shared directory, decompressed
# where the tests look for it and checked against its SHA256SUMS). The tests wait for
# them (the scripts take a lock) or make them if this did not.
boot_base=${MCD_INJECT_BOOT_BASE:-$PWD/target/boot-base}
vm_base=${MCD_INJECT_VM_BASE:-$PWD/target/vm-base}
vm_spec2x=${MCD_INJECT_VM_SPEC2X:-$PWD/target/vm-spec2x}
shared=${MCD_INJECT_SHARED:-$PWD/../shared}
mkdir -p "$(dirname "$vm_base")"
shared_program() { # shared_program COMPONENT NAME: prints the path of the checked program
  local dir=$PWD/target/shared-tools/$1 want
  want=$(awk -v n="$2" '$2 == n || $2 == "*" n { print $1 }' "$shared/$1/SHA256SUMS")
  [[ -n $want ]] || { echo "test.sh: $shared/$1/SHA256SUMS has no $2" >&2; return 1; }
  mkdir -p "$dir"
  if [[ $(sha256sum "$dir/$2" 2>/dev/null | cut -d' ' -f1) != "$want" ]]; then
    xz -dc "$shared/$1/$2.xz" >"$dir/.$2.$$"
    [[ $(sha256sum "$dir/.$2.$$" | cut -d' ' -f1) == "$want" ]] ||
      { echo "test.sh: $shared/$1/$2.xz does not match SHA256SUMS" >&2; rm -f "$dir/.$2.$$"; return 1; }
    chmod 0755 "$dir/.$2.$$"
    mv "$dir/.$2.$$" "$dir/$2"
  fi
  echo "$dir/$2"
}
(bash tests/support/boot-root.sh base "$boot_base" &&
  bash tests/support/boot-root.sh base "${MCD_INJECT_BOOT_BASE_BULLSEYE:-$PWD/target/boot-base-bullseye}" bullseye &&
  bash tests/support/vm-root.sh base "$boot_base" "$vm_base" &&
  bash tests/support/vm-root.sh base8 "${MCD_INJECT_BOOT_BASE_BULLSEYE:-$PWD/target/boot-base-bullseye}" \
    "$vm_base" "${MCD_INJECT_VM_BASE8:-$PWD/target/vm-base8}" &&
  bash tests/support/vm-root.sh spec2x "$vm_base" "$shared/ignition-dracut-spec2x/dracut" \
    "$(shared_program ignition-v0.35 ignition-selinux)" "$vm_spec2x") >"$vm_base.build.log" 2>&1 &
roots_pid=$!
# The trixie root of the sigstore judges (skopeo 1.18, cosign) of
# tests/it/sigstore_conformance.rs, beside them; that test waits for it the same way.
trixie_root=${MCD_INJECT_TRIXIE_ROOT:-$PWD/target/trixie-root}
bash tests/support/trixie-root.sh "$trixie_root" >"$trixie_root.build.log" 2>&1 &
trixie_pid=$!

# nmstatectl, the oracle of the NIC-persisting pass in tests/it/persist_nics.rs and in the
# VM case with predictable NIC names (tests/it/vm.rs), at persist_nics.rs's
# NMSTATECTL_VERSION, built with cargo install while the lints run, unoptimised as the
# tests build it (an oracle need not be fast). The tests build it themselves when this
# did not.
nmstatectl_root=$PWD/target/nmstatectl
CARGO_PROFILE_RELEASE_OPT_LEVEL=0 cargo install nmstatectl --version =2.2.62 --locked --no-default-features \
  --features query_apply --root "$nmstatectl_root" >"$nmstatectl_root.build.log" 2>&1 &
nmstatectl_pid=$!

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
bash scripts/msrv.sh
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
# The one release build: every test runs its binary (the container image test packs it),
# on dependencies built once (Cargo.toml, [profile.bench]).
cargo test --release --all-targets --no-run --quiet

export MCD_INJECT_FIXTURES="$PWD/target/fixtures"
rm -rf "$MCD_INJECT_FIXTURES"
python3 fixtures/generate.py "$MCD_INJECT_FIXTURES"

state=$(mktemp -d)
log="$state/test.log"
cleanup() {
  bash scripts/registry-services.sh stop "$state"
  rm -rf "$state"
}
trap cleanup EXIT
bash scripts/registry-services.sh start "$state"
# shellcheck disable=SC1091
. "$state/env"

wait "$nmstatectl_pid" || echo "building nmstatectl failed: $nmstatectl_root.build.log"
cargo test --release --all-targets 2>&1 | tee "$log"
# The roots were made (or failed, and the boot tests said so).
wait "$roots_pid" || echo "making the boot roots failed: $vm_base.build.log"
wait "$trixie_pid" || echo "making the trixie root failed: $trixie_root.build.log"

# The fuzz targets, briefly (a fixed number of runs each), where a nightly toolchain and
# cargo-fuzz are installed; their kept inputs are replayed on stable by
# tests/it/fuzz_inputs.rs either way. Longer runs: scripts/fuzz.sh (docs/fuzzing.md).
if cargo +nightly fuzz --version >/dev/null 2>&1; then
  bash scripts/fuzz.sh -r "${MCD_INJECT_FUZZ_RUNS:-2000}"
else
  echo "fuzz: not run here (needs: rustup toolchain install nightly && cargo install cargo-fuzz)"
fi
# One closing line for the whole suite (cargo prints one per test binary).
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     END { printf "total: %d passed, %d failed, %d skipped\n", p, f, i; exit (f > 0 || p == 0) }' "$log"
