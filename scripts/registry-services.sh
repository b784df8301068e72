#!/usr/bin/env bash
# Starts (or stops) the loopback registries the registry tests use, and pushes the
# test images into each of them.
#
#   scripts/registry-services.sh start STATEDIR   # then: source STATEDIR/env
#   scripts/registry-services.sh stop STATEDIR
#
# `start` runs, all bound to 127.0.0.1 on ports picked now, each with its own generated
# config (never the packaged /etc/docker/registry/config.yml) and storage in STATEDIR:
#   anon   docker-registry over plain http, anonymous
#   basic  docker-registry over TLS (a CA made here), htpasswd Basic auth
#   token  docker-registry over TLS, `auth: token`, trusting tests/support/token_issuer.py
# It pushes fixtures (mco-small, mco-4.16, mco-multiarch with --all) to every registry
# with skopeo, and writes STATEDIR/env with the MCD_TEST_REGISTRY_* variables
# (MCD_TEST_REGISTRY_TLS_DIR holds the server and token-signing keys, for tests that
# start registries of their own, such as the release tests).
# The fault proxy (tests/support/fault_proxy.py) is started by the tests themselves.
# Fixtures come from $MCD_INJECT_FIXTURES (generated there when missing).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

usage() { echo "usage: $0 start|stop STATEDIR" >&2; exit 2; }
(($# == 2)) || usage
cmd=$1
state=$2

stop() {
  local pidfile pid
  for pidfile in "$state"/*.pid; do
    [[ -e $pidfile ]] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_for() { # NAME URL EXPECTED_STATUS [curl args...]
  local name=$1 url=$2 want=$3 got
  shift 3
  for _ in $(seq 100); do
    got=$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url" || true)
    [[ $got == "$want" ]] && return 0
    sleep 0.1
  done
  echo "$name did not answer $want at $url (last: $got); log:" >&2
  cat "$state/$name.log" >&2 || true
  exit 1
}

# NAME PORT TLS(yes|no) AUTH_YAML
start_registry() {
  local name=$1 port=$2 tls=$3 auth=$4
  mkdir -p "$state/$name/storage"
  {
    echo "version: 0.1"
    echo "log: {level: warn, accesslog: {disabled: true}}"
    echo "storage:"
    echo "  filesystem: {rootdirectory: $state/$name/storage}"
    echo "  delete: {enabled: true}"
    echo "http:"
    echo "  addr: 127.0.0.1:$port"
    echo "  secret: mcd-inject-test-$name"
    if [[ $tls == yes ]]; then
      echo "  tls: {certificate: $state/tls/server.crt, key: $state/tls/server.key}"
    fi
    echo "  debug: {addr: ''}"
    echo "$auth"
  } >"$state/$name/config.yml"
  docker-registry serve "$state/$name/config.yml" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
}

make_tls() {
  local d="$state/tls"
  mkdir -p "$d/ca"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mcd-inject test CA" \
    -keyout "$d/ca.key" -out "$d/ca/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$d/ext.cnf"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca/ca.crt" -CAkey "$d/ca.key" \
    -CAcreateserial -days 2 -extfile "$d/ext.cnf" -out "$d/server.crt" 2>/dev/null
  # The token signing key: a self-signed certificate the token registry trusts.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mcd-inject test token issuer" \
    -keyout "$d/token.key" -out "$d/token.crt" 2>/dev/null
}

fixtures_dir() {
  local dir=${MCD_INJECT_FIXTURES:-$repo/target/fixtures}
  if [[ ! -f $dir/fixtures.json ]]; then
    python3 "$repo/fixtures/generate.py" "$dir" >&2
  fi
  cd "$dir" && pwd
}

push_all() { # REGISTRY SKOPEO_DEST_ARGS...
  local reg=$1
  shift
  local fx
  fx=$(fixtures_dir)
  skopeo copy -q "$@" "oci:$fx/layouts/mco-small:latest" "docker://$reg/mco/small:v1"
  skopeo copy -q "$@" "oci:$fx/layouts/mco-4.16:latest" "docker://$reg/mco/mco-4.16:v1"
  skopeo copy -q --all "$@" "oci:$fx/layouts/mco-multiarch:latest" "docker://$reg/mco/multiarch:v1"
}

start() {
  for tool in docker-registry skopeo openssl htpasswd curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
  done
  mkdir -p "$state"
  state=$(cd "$state" && pwd)
  stop
  make_tls
  local ca="$state/tls/ca/ca.crt"
  local basic_user=tester basic_pass token_user=robot token_pass
  basic_pass=$(openssl rand -hex 12)
  token_pass=$(openssl rand -hex 12)
  htpasswd -Bbn "$basic_user" "$basic_pass" >"$state/htpasswd" 2>/dev/null

  local anon_port basic_port token_port issuer_port
  anon_port=$(free_port)
  basic_port=$(free_port)
  token_port=$(free_port)

  rm -f "$state/issuer.port"
  python3 "$repo/tests/support/token_issuer.py" --key "$state/tls/token.key" \
    --cert "$state/tls/token.crt" --issuer mcd-inject-test-issuer --service mcd-inject-test \
    --user "$token_user" --password "$token_pass" --port-file "$state/issuer.port" \
    >"$state/issuer.log" 2>&1 &
  echo $! >"$state/issuer.pid"
  for _ in $(seq 100); do [[ -s $state/issuer.port ]] && break; sleep 0.1; done
  issuer_port=$(cat "$state/issuer.port")

  start_registry anon "$anon_port" no ""
  start_registry basic "$basic_port" yes "auth:
  htpasswd: {realm: mcd-inject-test, path: $state/htpasswd}"
  start_registry token "$token_port" yes "auth:
  token:
    realm: http://127.0.0.1:$issuer_port/token
    service: mcd-inject-test
    issuer: mcd-inject-test-issuer
    rootcertbundle: $state/tls/token.crt"

  wait_for anon "http://127.0.0.1:$anon_port/v2/" 200
  wait_for basic "https://127.0.0.1:$basic_port/v2/" 401 --cacert "$ca"
  wait_for token "https://127.0.0.1:$token_port/v2/" 401 --cacert "$ca"

  push_all "127.0.0.1:$anon_port" --dest-tls-verify=false
  push_all "127.0.0.1:$basic_port" --dest-cert-dir "$state/tls/ca" \
    --dest-creds "$basic_user:$basic_pass"
  push_all "127.0.0.1:$token_port" --dest-cert-dir "$state/tls/ca" \
    --dest-creds "$token_user:$token_pass"

  cat >"$state/env" <<EOF
export MCD_TEST_REGISTRY_ANON=127.0.0.1:$anon_port
export MCD_TEST_REGISTRY_BASIC=127.0.0.1:$basic_port
export MCD_TEST_REGISTRY_BASIC_USER=$basic_user
export MCD_TEST_REGISTRY_BASIC_PASSWORD=$basic_pass
export MCD_TEST_REGISTRY_TOKEN=127.0.0.1:$token_port
export MCD_TEST_REGISTRY_TOKEN_USER=$token_user
export MCD_TEST_REGISTRY_TOKEN_PASSWORD=$token_pass
export MCD_TEST_REGISTRY_CA_DIR=$state/tls/ca
export MCD_TEST_REGISTRY_TLS_DIR=$state/tls
export MCD_TEST_REGISTRY_FIXTURES=$(fixtures_dir)
EOF
  echo "registries up: anon 127.0.0.1:$anon_port, basic 127.0.0.1:$basic_port (TLS)," \
    "token 127.0.0.1:$token_port (TLS, issuer :$issuer_port); env in $state/env" >&2
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
