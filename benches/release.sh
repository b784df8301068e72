#!/usr/bin/env bash
# Cold-cache `mcd-inject inject --release` through a mirror, with the source registry
# down: wall time, peak RSS and bytes fetched, against `skopeo copy` of the release and
# MCO images from the same mirror (the download step of doing it by hand). Prints a
# Markdown table for BENCHMARKS.md.
#
#   bash benches/release.sh            # RUNS=5 by default
#
# The release image is laid out as `oc adm release new` does: a base layer, a layer with
# a cluster-version-operator binary, and a top layer with /release-manifests
# (image-references, release-metadata, and manifests). The MCO image has a base layer
# and a top layer with a RHEL 9 and a RHEL 8 machine-config-daemon (the fixture programs
# padded to a real MCD's size). Both are pushed with skopeo to the token-auth registry that
# scripts/registry-services.sh starts (the source), mirrored by digest to its htpasswd TLS
# registry (the mirror), and the source is stopped before measuring.
#
# Needs: cargo, python3, gcc, skopeo, docker-registry, jq, curl, /usr/bin/time.
set -euo pipefail

RUNS=${RUNS:-5}
BASE_MIB=${BASE_MIB:-80}
CVO_MIB=${CVO_MIB:-100}
MCO_BASE_MIB=${MCO_BASE_MIB:-80}
MCD_MIB=${MCD_MIB:-60}

cd "$(dirname "$0")/.."
root=$PWD
for tool in cargo python3 gcc skopeo docker-registry jq curl /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "benches/release.sh: $tool is not installed" >&2; exit 1; }
done

cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-$root/target}/release/mcd-inject

work=$(mktemp -d "${TMPDIR:-/tmp}/mcd-inject-relbench.XXXXXX")
cleanup() {
  bash "$root/scripts/registry-services.sh" stop "$work/registry" || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "starting the loopback registries ..." >&2
bash "$root/scripts/registry-services.sh" start "$work/registry" >/dev/null
# shellcheck disable=SC1091
. "$work/registry/env"
src=$MCD_TEST_REGISTRY_TOKEN
mirror=$MCD_TEST_REGISTRY_BASIC
ca=$MCD_TEST_REGISTRY_CA_DIR
src_creds=$MCD_TEST_REGISTRY_TOKEN_USER:$MCD_TEST_REGISTRY_TOKEN_PASSWORD
mirror_creds=$MCD_TEST_REGISTRY_BASIC_USER:$MCD_TEST_REGISTRY_BASIC_PASSWORD

echo "generating the MCO image ..." >&2
python3 - "$work/mco" "$work/gcc" "$MCO_BASE_MIB" "$MCD_MIB" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, gcc_dir, base_mib, mcd_mib = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
g.GZIP_LEVEL = 6
MIB = 1 << 20
gcc_dir.mkdir(parents=True)
b = g.Binaries(gcc_dir)
# The fixture programs, padded with binary-like bytes to the size of a real MCD.
mcd9 = b.dynamic_mcd(9, "v4.16.0-bench")
mcd8 = b.dynamic_mcd(8, "v4.16.0-bench")
mcd9 += pseudo_binary("mcd9", mcd_mib * MIB - len(mcd9))
mcd8 += pseudo_binary("mcd8", mcd_mib * MIB - len(mcd8))
base = g.base_layer(g.RHEL9_4, extra=[
    g.X(f"usr/lib64/base/lib{i}.so", pseudo_binary(f"mco-base-{i}", base_mib * MIB // 8)) for i in range(8)])
top = g.mcd_top({"machine-config-daemon": mcd9, "machine-config-daemon.rhel8": mcd8}, "4.16")
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image([base, top])))
PY
skopeo copy -q --dest-cert-dir "$ca" --dest-creds "$src_creds" --digestfile "$work/mco.digest" \
  "oci:$work/mco:latest" "docker://$src/ocp/art-dev:mco"
mco_digest=$(cat "$work/mco.digest")

echo "generating the release image ..." >&2
python3 - "$work/release" "$src/ocp/art-dev@$mco_digest" "$BASE_MIB" "$CVO_MIB" <<'PY'
import json
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
sys.path.insert(0, "benches")
import generate as g  # noqa: E402
from bench_data import pseudo_binary  # noqa: E402

layout, mco, base_mib, cvo_mib = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
g.GZIP_LEVEL = 6
MIB = 1 << 20
version = "4.16.3"
other = mco.split("@")[0] + "@sha256:" + "ab" * 32
tags = [{"name": n, "from": {"kind": "DockerImage", "name": mco if n == "machine-config-operator" else other}}
        for n in ("cluster-version-operator", "machine-config-operator", "machine-os-content")]
refs = {"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version}, "spec": {"lookupPolicy": {"local": False}, "tags": tags}}
meta = {"kind": "cincinnati-metadata-v0", "version": version, "previous": [], "metadata": {}}
manifests = [g.F(f"release-manifests/0000_{i:02d}_manifest.yaml", ("kind: ConfigMap\n" * 400))
             for i in range(40)]
layers = [
    g.Layer([g.X(f"usr/lib64/base/lib{i}.so", pseudo_binary(f"base-{i}", base_mib * MIB // 8))
             for i in range(8)] + [g.F("usr/lib/os-release", g.RHEL9_4)]),
    g.Layer([g.X("usr/bin/cluster-version-operator", pseudo_binary("cvo", cvo_mib * MIB))]),
    g.Layer([g.F("release-manifests/image-references", json.dumps(refs, indent=2)),
             g.F("release-manifests/release-metadata", json.dumps(meta))] + manifests),
]
writer = g.LayoutWriter(layout)
writer.finish(writer.image(g.Image(layers)))
PY
skopeo copy -q --dest-cert-dir "$ca" --dest-creds "$src_creds" --digestfile "$work/release.digest" \
  "oci:$work/release:latest" "docker://$src/ocp/release:4.16.3"
release_digest=$(cat "$work/release.digest")
for r in "release@$release_digest|release|4.16.3" "art-dev@$mco_digest|art-dev|mco"; do
  IFS='|' read -r from repo tag <<<"$r"
  skopeo copy -q --preserve-digests --src-cert-dir "$ca" --src-creds "$src_creds" \
    --dest-cert-dir "$ca" --dest-creds "$mirror_creds" \
    "docker://$src/ocp/$from" "docker://$mirror/mirror/$repo:$tag"
done
# The source goes down: everything below comes from the mirror.
kill "$(cat "$work/registry/token.pid")"
rm -f "$work/registry/token.pid"

cat >"$work/idms.yaml" <<EOF
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: release
spec:
  imageDigestMirrors:
  - source: $src/ocp/release
    mirrors: [$mirror/mirror/release]
    mirrorSourcePolicy: NeverContactSource
  - source: $src/ocp/art-dev
    mirrors: [$mirror/mirror/art-dev]
    mirrorSourcePolicy: NeverContactSource
EOF
printf '{"auths":{"%s":{"auth":"%s"}}}' "$mirror" "$(printf %s "$mirror_creds" | base64 -w0)" \
  >"$work/pull-secret.json"

blob_bytes() { # DIR: bytes of the blobs under DIR/blobs
  find "$1/blobs" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'
}
release_total=$(blob_bytes "$work/release")
mco_total=$(blob_bytes "$work/mco")

results=$work/results
reset() { rm -rf "$work/cache" "$work/out.ign" "$work/out.json" "$work/copy"; }
bench=benches/release.sh
# shellcheck source=benches/lib.sh
. benches/lib.sh

release=$src/ocp/release@$release_digest
inject_ok='jq -e ".release.served_by == \"$mirror/mirror/release\" and .image.served_by == \"$mirror/mirror/art-dev\"" "$work/out.json" >/dev/null'
copy_ok='[ -f "$work/copy/release/index.json" ] && [ -f "$work/copy/mco/index.json" ]'

echo "measuring, $RUNS runs each ..." >&2
measure "mcd-inject inject --release, cold cache, via the mirror" "$inject_ok" -- \
  "$bin" inject -q --release "$release" --idms "$work/idms.yaml" --authfile "$work/pull-secret.json" \
  --cert-dir "$ca" --cache-dir "$work/cache" --bootimage 4.2 --ign "$work/out.ign" \
  --json-out "$work/out.json"
fetched=$(blob_bytes "$work/cache")
measure "mcd-inject inspect --release, cold cache, via the mirror (no config written)" \
  '[ -s "$work/out.json" ]' -- bash -c '"$1" inspect -q --json --release "$2" --idms "$3" \
  --authfile "$4" --cert-dir "$5" --cache-dir "$6/cache" >"$6/out.json"' \
  _ "$bin" "$release" "$work/idms.yaml" "$work/pull-secret.json" "$ca" "$work"
measure "skopeo copy of the release and MCO images from the mirror" "$copy_ok" -- bash -c '
  mkdir -p "$6/copy" &&
  skopeo copy -q --src-cert-dir "$1" --authfile "$2" "docker://$3/mirror/release@$4" "oci:$6/copy/release:x" &&
  skopeo copy -q --src-cert-dir "$1" --authfile "$2" "docker://$3/mirror/art-dev@$5" "oci:$6/copy/mco:x"' \
  _ "$ca" "$work/pull-secret.json" "$mirror" "$release_digest" "$mco_digest" "$work"
copied=$(blob_bytes "$work/copy/release")
copied=$((copied + $(blob_bytes "$work/copy/mco")))

cpu=$(cpu_name)
echo
echo "Release image: 3 gzip layers, $(mib "$release_total") MiB of blobs (base ${BASE_MIB} MiB, a ${CVO_MIB} MiB" \
  "cluster-version-operator, a top layer of release manifests); MCO image: 2 gzip layers," \
  "$(mib "$mco_total") MiB of blobs (base ${MCO_BASE_MIB} MiB; two ${MCD_MIB} MiB MCD builds, RHEL 9 and RHEL 8). inject" \
  "writes a spec 2.2 config for bootimage 4.2 with the RHEL 8 build inline. Source: token-auth docker-registry, stopped; mirror: htpasswd over TLS, both" \
  "on loopback. Host: $(nproc) CPUs, ${cpu:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
  "median of $RUNS runs; ratios over the first row."
echo
table
echo
awk -v f="$fetched" -v c="$copied" -v t="$((release_total + mco_total))" 'BEGIN {
  printf "| bytes fetched | MiB | share of the release + MCO blobs |\n| --- | ---: | ---: |\n"
  printf "| mcd-inject inject --release (cold cache: every blob it holds afterwards) | %.2f | %.1f%% |\n", f / 1048576, 100 * f / t
  printf "| skopeo copy of both images | %.2f | %.1f%% |\n", c / 1048576, 100 * c / t
  printf "| release + MCO blobs in total | %.2f | 100%% |\n", t / 1048576 }'
