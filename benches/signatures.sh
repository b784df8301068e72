#!/usr/bin/env bash
# What a signature policy costs `mcd-inject inject` from a registry, cold cache: the
# fixture image under no requirement (insecureAcceptAnything), a simple signing (GPG)
# signature in a lookaside store (signedBy), a cosign signature by a public key, a
# keyless signature (a Fulcio certificate and a Rekor SET) under a `fulcio` requirement,
# and the same keyless root of trust given as a ClusterImagePolicy (--image-policy);
# against `skopeo copy` of the same image under the same policies: Debian bookworm's
# skopeo for no requirement and signedBy, trixie's skopeo 1.18 (containers/image with
# sigstore) for no requirement and the two sigstore ones. Prints a Markdown table for
# BENCHMARKS.md.
#
#   bash benches/signatures.sh          # RUNS=7 by default
#
# trixie's skopeo runs with chroot in the root tests/support/trixie-root.sh makes
# (target/trixie-root, or MCD_INJECT_TRIXIE_ROOT; made here if missing, which needs root
# and a Debian mirror). The keys, certificates and SET are made with openssl in the forms
# Fulcio, Rekor and cosign give them; the GPG key and signature with gpg and `skopeo
# standalone-sign`.
#
# Needs: cargo, skopeo, docker-registry, curl, jq, gpg, openssl, python3, /usr/bin/time,
# and the trixie root (debootstrap, root).
set -euo pipefail

RUNS=${RUNS:-7}
# Each measurement is this many runs of the command in a row, each with a cold cache:
# one run of this small image takes a few tens of milliseconds.
REPEAT=${REPEAT:-20}

cd "$(dirname "$0")/.."
root=$PWD
troot=${MCD_INJECT_TRIXIE_ROOT:-$root/target/trixie-root}
bash tests/support/trixie-root.sh "$troot"
troot=$(realpath "$troot")
# The scratch directory is inside the trixie root, whose own path, inside it, leads back
# to its top: every path names the same file in and out of the chroot.
mkdir -p "$troot/tmp" "$troot$(dirname "$troot")"
[ -e "$troot$troot" ] || ln -s / "$troot$troot"
export TMPDIR=$troot/tmp
# shellcheck source=benches/lib.sh
. benches/lib.sh
bench_setup benches/signatures.sh skopeo docker-registry curl jq gpg openssl python3 /usr/bin/time
bench=benches/signatures.sh
cleanup() {
  bash "$root/scripts/registry-services.sh" stop "$work/registry" || true
  rm -rf "$work"
}
trap cleanup EXIT

push_to_registry "$root/fixtures/mco-small"
skopeo inspect --raw --tls-verify=false "docker://$image" >"$work/manifest.json"
digest=sha256:$(sha256sum <"$work/manifest.json" | cut -d' ' -f1)
printf '{"critical":{"identity":{"docker-reference":"%s"},"image":{"docker-manifest-digest":"%s"},"type":"cosign container image signature"},"optional":null}' \
  "$image" "$digest" >"$work/payload.json"

echo "making the signatures ..." >&2
ec_key() { # PATH: PATH.key and PATH.pub, P-256
  openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null
  openssl ec -in "$1.key" -pubout -out "$1.pub" 2>/dev/null
}
ec_key "$work/cosign"
openssl dgst -sha256 -sign "$work/cosign.key" "$work/payload.json" | base64 -w0 >"$work/cosign.sig"
# Keyless: a Fulcio-like root; a leaf of it with the e-mail SAN, the OIDC issuer
# extensions and the code-signing usage; its signature of the payload; and a Rekor SET
# (ECDSA over the RFC 8785 form of the log entry: keys sorted, no spaces) of the
# hashedrekord entry of that signature, integrated after the leaf was made.
kl=$work/keyless
mkdir "$kl"
issuer=https://oidc.example.com
cat >"$kl/x509.cnf" <<EOF
[req]
distinguished_name = dn
x509_extensions = ca
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = codeSigning
subjectAltName = email:release@example.com
1.3.6.1.4.1.57264.1.1 = DER:$(printf %s "$issuer" | od -An -tx1 | tr -d ' \n')
1.3.6.1.4.1.57264.1.8 = ASN1:UTF8String:$issuer
EOF
ec_key "$kl/root"
ec_key "$kl/leaf"
ec_key "$kl/rekor"
openssl req -x509 -new -config "$kl/x509.cnf" -key "$kl/root.key" -subj /CN=fulcio-root \
  -days 365 -out "$kl/fulcio-root.pem"
openssl req -new -config "$kl/x509.cnf" -key "$kl/leaf.key" -subj /CN=leaf |
  openssl x509 -req -CA "$kl/fulcio-root.pem" -CAkey "$kl/root.key" -days 1 \
    -extfile "$kl/x509.cnf" -extensions leaf -out "$kl/leaf.pem" 2>/dev/null
leaf_sig=$(openssl dgst -sha256 -sign "$kl/leaf.key" "$work/payload.json" | base64 -w0)
body=$(printf '{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":"%s"}},"signature":{"content":"%s","publicKey":{"content":"%s"}}}}' \
  "$(sha256sum <"$work/payload.json" | cut -d' ' -f1)" "$leaf_sig" "$(base64 -w0 "$kl/leaf.pem")" |
  base64 -w0)
log_id=c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d
sleep 1
t=$(date +%s)
set_sig=$(printf '{"body":"%s","integratedTime":%s,"logID":"%s","logIndex":1}' "$body" "$t" "$log_id" |
  openssl dgst -sha256 -sign "$kl/rekor.key" | base64 -w0)
bundle=$(printf '{"SignedEntryTimestamp":"%s","Payload":{"body":"%s","integratedTime":%s,"logIndex":1,"logID":"%s"}}' \
  "$set_sig" "$body" "$t" "$log_id")
jq -n --arg sig "$leaf_sig" --rawfile cert "$kl/leaf.pem" --rawfile chain "$kl/fulcio-root.pem" \
  --arg bundle "$bundle" \
  '{"dev.cosignproject.cosign/signature": $sig, "dev.sigstore.cosign/certificate": $cert,
    "dev.sigstore.cosign/chain": $chain, "dev.sigstore.cosign/bundle": $bundle}' >"$kl/annotations.json"

# The attachment manifest at sha256-HEX.sig: the public key's signature, then the
# keyless one (each requirement tries both, in that order).
python3 - "$reg" "$digest" "$work" <<'PY'
import hashlib
import json
import sys
import urllib.request

reg, digest, work = sys.argv[1:]
repo = "bench/mco"


def push_blob(data: bytes) -> str:
    d = "sha256:" + hashlib.sha256(data).hexdigest()
    req = urllib.request.Request(f"http://{reg}/v2/{repo}/blobs/uploads/", method="POST")
    loc = urllib.request.urlopen(req).headers["Location"]
    if not loc.startswith("http"):
        loc = f"http://{reg}{loc}"
    sep = "&" if "?" in loc else "?"
    put = urllib.request.Request(f"{loc}{sep}digest={d}", data=data, method="PUT",
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(put)
    return d


payload = open(f"{work}/payload.json", "rb").read()
layers = []
for annotations in (
    {"dev.cosignproject.cosign/signature": open(f"{work}/cosign.sig").read()},
    json.load(open(f"{work}/keyless/annotations.json")),
):
    layers.append({"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                   "size": len(payload), "digest": push_blob(payload), "annotations": annotations})
config = json.dumps({"architecture": "", "os": "", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": [l["digest"] for l in layers]}}).encode()
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": len(config),
               "digest": push_blob(config)},
    "layers": layers,
}).encode()
tag = "sha256-" + digest.split(":", 1)[1] + ".sig"
urllib.request.urlopen(urllib.request.Request(
    f"http://{reg}/v2/{repo}/manifests/{tag}", data=manifest, method="PUT",
    headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"}))
PY

export GNUPGHOME=$work/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg -q --batch --passphrase '' --quick-gen-key bench@example.com rsa2048 sign never 2>/dev/null
fpr=$(gpg --with-colons --list-keys bench@example.com | awk -F: '/^fpr/ {print $10; exit}')
gpg -q --export --armor "$fpr" >"$work/gpg.pub"
mkdir -p "$work/lookaside/bench/mco@sha256=${digest#sha256:}"
skopeo standalone-sign -o "$work/lookaside/bench/mco@sha256=${digest#sha256:}/signature-1" \
  "$work/manifest.json" "$image" "$fpr"

mkdir -p "$work/registries.d" "$work/registries.d-none"
printf 'docker:\n  %s/bench:\n    lookaside: file://%s/lookaside\n    use-sigstore-attachments: true\n' \
  "$reg" "$work" >"$work/registries.d/bench.yaml"
policy() { # NAME REQUIREMENT: a policy under which only REQUIREMENT admits bench/
  printf '{"default":[{"type":"reject"}],"transports":{"docker":{"%s/bench":[%s]}}}' \
    "$reg" "$2" >"$work/$1.json"
}
printf '{"default":[{"type":"insecureAcceptAnything"}]}' >"$work/accept.json"
policy signedby '{"type":"signedBy","keyType":"GPGKeys","keyPath":"'"$work"'/gpg.pub"}'
policy key '{"type":"sigstoreSigned","keyPath":"'"$work"'/cosign.pub"}'
policy keyless '{"type":"sigstoreSigned","fulcio":{"caPath":"'"$work"'/keyless/fulcio-root.pem","oidcIssuer":"https://oidc.example.com","subjectEmail":"release@example.com"},"rekorPublicKeyPath":"'"$work"'/keyless/rekor.pub"}'
cat >"$work/cluster-image-policy.yaml" <<EOF
apiVersion: config.openshift.io/v1
kind: ClusterImagePolicy
metadata:
  name: bench
spec:
  scopes: ["$reg/bench"]
  policy:
    rootOfTrust:
      policyType: FulcioCAWithRekor
      fulcioCAWithRekor:
        fulcioCAData: $(base64 -w0 "$work/keyless/fulcio-root.pem")
        rekorKeyData: $(base64 -w0 "$work/keyless/rekor.pub")
        fulcioSubject:
          oidcIssuer: https://oidc.example.com
          signedEmail: release@example.com
EOF
# With the image policy, the base refuses by default: only the ClusterImagePolicy admits.
printf '{"default":[{"type":"reject"}]}' >"$work/reject.json"

results=$work/results
reset() { rm -rf "$work/cache" "$work/out.ign" "$work/copy"; }
# repeated NAME CHECK -- CMD...: a row of REPEAT runs of CMD, a cold cache each time.
repeated() {
  local name=$1 check=$2
  shift 3
  add_row "$name" "$check" -- bash -c 'w=$1 n=$2; shift 2
    for ((i = 0; i < n; i++)); do rm -rf "$w/cache" "$w/copy"; "$@" || exit 1; done' _ "$work" "$REPEAT" "$@"
}
ign_ok='"$bin" verify "$work/out.ign" >/dev/null 2>&1'
copy_ok='[ -s "$work/copy/index.json" ]'
inject() { # NAME POLICY REGISTRIES.D [MORE...]
  local name=$1 pol=$2 regd=$3
  shift 3
  repeated "mcd-inject inject, $name" "$ign_ok" -- "$bin" inject -q --tls-verify=false \
    --cache-dir "$work/cache" --image "docker://$image" --bootimage 4.2 --ign "$work/out.ign" \
    --signature-policy "$pol" --registries.d "$regd" "$@"
}
inject "insecureAcceptAnything" "$work/accept.json" "$work/registries.d"
inject "signedBy (GPG, lookaside)" "$work/signedby.json" "$work/registries.d"
inject "sigstoreSigned, public key" "$work/key.json" "$work/registries.d"
inject "sigstoreSigned, Fulcio and Rekor" "$work/keyless.json" "$work/registries.d"
inject "--image-policy FulcioCAWithRekor" "$work/reject.json" "$work/registries.d-none" \
  --image-policy "$work/cluster-image-policy.yaml"
repeated "bookworm skopeo copy, insecureAcceptAnything" "$copy_ok" -- skopeo copy -q --remove-signatures --src-tls-verify=false \
  --policy "$work/accept.json" --registries.d "$work/registries.d" "docker://$image" "oci:$work/copy:x"
repeated "bookworm skopeo copy, signedBy (GPG, lookaside)" "$copy_ok" -- skopeo copy -q --remove-signatures --src-tls-verify=false \
  --policy "$work/signedby.json" --registries.d "$work/registries.d" "docker://$image" "oci:$work/copy:x"
trixie_skopeo() { # NAME POLICY: trixie's skopeo (1.18) copies the image under POLICY
  repeated "trixie skopeo copy, $1" "$copy_ok" -- chroot "$troot" skopeo copy -q --remove-signatures \
    --src-tls-verify=false --policy "$2" --registries.d "$work/registries.d" "docker://$image" "oci:$work/copy:x"
}
trixie_skopeo "insecureAcceptAnything" "$work/accept.json"
trixie_skopeo "sigstoreSigned, public key" "$work/key.json"
trixie_skopeo "sigstoreSigned, Fulcio and Rekor" "$work/keyless.json"

# Each policy must refuse without its signature: the same inject on an unsigned tag.
skopeo copy -q --dest-tls-verify=false "oci:$root/fixtures/mco-small:latest" "docker://$reg/bench/unsigned:v1"
for p in signedby key keyless; do
  if "$bin" inject -q --tls-verify=false --cache-dir "$work/cache-x" --image "docker://$reg/bench/unsigned:v1" \
    --bootimage 4.2 --ign "$work/x.ign" --signature-policy "$work/$p.json" --registries.d "$work/registries.d" 2>/dev/null; then
    echo "$bench: the $p policy accepts an unsigned image" >&2
    exit 1
  fi
  if [[ $p != signedby ]] && chroot "$troot" skopeo copy -q --src-tls-verify=false --policy "$work/$p.json" \
    --registries.d "$work/registries.d" "docker://$reg/bench/unsigned:v1" "oci:$work/copy-x:x" 2>/dev/null; then
    echo "$bench: trixie's skopeo accepts an unsigned image under the $p policy" >&2
    exit 1
  fi
done

echo "measuring, $RUNS rounds of every command, interleaved ..." >&2
measure_rows

cpu=$(cpu_name)
echo
echo "Image: the \`fixtures/mco-small\` layout in a loopback docker-registry" \
  "(distribution $(docker-registry --version | awk '{print $3}')), its attachment manifest" \
  "holding a public key signature and a keyless one. Host: $(nproc) CPUs, ${cpu:-unknown CPU}," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; each figure is $REPEAT runs of the" \
  "command in a row (a cold cache each), median of $RUNS such measurements, interleaved; CPU is" \
  "user + system time; ratios are each command's median over the first row's."
echo
table_cpu
