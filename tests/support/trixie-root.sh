#!/usr/bin/env bash
# The root of the sigstore judges (tests/it/sigstore_conformance.rs): a minimal Debian
# trixie with skopeo (containers/image with sigstore compiled in) and cosign, which need a
# newer glibc than the suite's machine has. Run with chroot; it shares the host's loopback
# network, so the suite's registries serve it.
#
#   trixie-root.sh DIR   make DIR once (kept while TRIXIE_PACKAGES is what it was made
#                        with); one maker at a time
set -euo pipefail

die() { echo "trixie-root.sh: $*" >&2; exit 1; }

mirror() { # the machine's own Debian mirror
  bash "$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh"
}

# golang-github-containers-common (skopeo's) depends on a container-network-stack, which
# debootstrap's --include does not resolve: apt-get installs them inside the root.
TRIXIE_PACKAGES="skopeo cosign netavark ca-certificates"

dir=${1:?usage: trixie-root.sh DIR}
[[ -e $dir/.complete && $(cat "$dir/.complete") == "$TRIXIE_PACKAGES" ]] && exit 0
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
[[ -e $dir/.complete && $(cat "$dir/.complete") == "$TRIXIE_PACKAGES" ]] && exit 0
rm -rf "$dir.tmp"
debootstrap --variant=minbase trixie "$dir.tmp" "$(mirror)" >"$dir.log" 2>&1 ||
  die "debootstrap failed; see $dir.log"
# apt inside the root needs /proc and /dev/null; nothing else of the host.
mount -t proc proc "$dir.tmp/proc"
trap 'umount "$dir.tmp/proc" 2>/dev/null || true' EXIT
# shellcheck disable=SC2086
chroot "$dir.tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  $TRIXIE_PACKAGES >>"$dir.log" 2>&1 || die "installing $TRIXIE_PACKAGES failed; see $dir.log"
umount "$dir.tmp/proc"
trap - EXIT
rm -rf "$dir.tmp"/usr/share/doc/* "$dir.tmp"/usr/share/man/* "$dir.tmp"/usr/share/locale/* \
  "$dir.tmp"/var/cache/apt/archives/*.deb "$dir.tmp"/var/lib/apt/lists/*_Packages
echo "$TRIXIE_PACKAGES" >"$dir.tmp/.complete"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
