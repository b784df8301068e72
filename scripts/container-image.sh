#!/usr/bin/env bash
# Builds the mcd-inject container image from the Containerfile with buildah, offline:
# the given binary (the release build), the loader and libraries it links (as ldd
# resolves them on this machine), this machine's CA bundle, /etc/passwd and /etc/group
# with the user mcd-inject (1000), /etc/nsswitch.conf and /tmp, on `scratch`.
#   container-image.sh BINARY TAG [BUILDAH_GLOBAL_OPTIONS...]
# e.g. container-image.sh target/release/mcd-inject localhost/mcd-inject:0.1.0
# The options (--root DIR --runroot DIR --storage-driver vfs) pick the storage, as the
# tests do to keep the machine's own untouched.
set -euo pipefail
bin=$1 tag=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root/usr/bin" "$root/etc/ssl/certs" "$root/tmp" "$ctx/home"
chmod 1777 "$root/tmp"
install -m 0755 "$bin" "$root/usr/bin/mcd-inject"
# The loader and every library the binary links, at the paths the binary names them by
# (a self-contained root: nothing of a base image is needed).
ldd "$bin" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
[[ -e $root/lib64 ]] || ln -s usr/lib64 "$root/lib64" 2>/dev/null || true
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
[[ -r $ca ]] || { echo "container-image.sh: no CA bundle at $ca (Debian: ca-certificates)" >&2; exit 1; }
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nmcd-inject:x:1000:1000:mcd-inject:/home/mcd-inject:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nmcd-inject:x:1000:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
cp "$here/Containerfile" "$ctx/Containerfile"
version=$("$bin" --version | awk '{ print $2 }')
buildah "$@" bud --quiet --layers=false --pull=never \
  --build-arg "VERSION=$version" --build-arg "SOURCE=${MCD_INJECT_IMAGE_SOURCE:-}" \
  -f "$ctx/Containerfile" -t "$tag" "$ctx" >/dev/null
echo "$tag"
