#!/usr/bin/env python3
"""A minimal Bearer token issuer for the registry tests (Python 3 standard library).

It implements the token endpoint of the distribution token-auth spec: GET
/token?service=S&scope=repository:NAME:ACTIONS with HTTP Basic credentials. Valid
credentials get a JWT granting the requested actions; anything else gets 401. With
--refresh-token, it also implements the OAuth2 form (distribution's oauth.md): POST
/token with grant_type=refresh_token, refresh_token, service and scope gets an
access_token when the refresh token matches. The JWT is
RS256-signed with `openssl dgst -sha256 -sign` and carries the signing certificate in its
`x5c` header, which the registry checks against its `rootcertbundle`.

Usage: token_issuer.py --key KEY.pem --cert CERT.pem --issuer ISS --service SVC
                       --user USER --password PASSWORD --port-file FILE
                       [--refresh-token TOKEN]
It binds 127.0.0.1 on a free port and writes that port to FILE once it listens.
"""

import argparse
import base64
import http.server
import json
import os
import subprocess
import time
import urllib.parse


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def der_of(pem_path):
    lines = open(pem_path).read().splitlines()
    body = "".join(l for l in lines if l and not l.startswith("-----"))
    return body  # already standard base64 of the DER, which is what x5c wants


def sign(args, payload):
    header = {"typ": "JWT", "alg": "RS256", "x5c": [der_of(args.cert)]}
    signing_input = (
        b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url(json.dumps(payload, separators=(",", ":")).encode())
    )
    sig = subprocess.run(
        ["openssl", "dgst", "-sha256", "-sign", args.key],
        input=signing_input.encode(),
        capture_output=True,
        check=True,
    ).stdout
    return signing_input + "." + b64url(sig)


def parse_scope(scope):
    # repository:NAME:ACTION[,ACTION]; NAME may not contain ':' here (no ports).
    parts = scope.split(":")
    if len(parts) < 3:
        return None
    return {"type": parts[0], "name": ":".join(parts[1:-1]), "actions": parts[-1].split(",")}


def make_handler(args):
    expected = "Basic " + base64.b64encode(f"{args.user}:{args.password}".encode()).decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *a):
            pass  # never log requests: they carry credentials

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path != "/token":
                self.send_error(404)
                return
            if self.headers.get("Authorization") != expected:
                self.refuse(b'{"details":"invalid credentials"}')
                return
            self.issue(urllib.parse.parse_qs(url.query), "token")

        def do_POST(self):
            url = urllib.parse.urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode())
            ok = (
                url.path == "/token"
                and args.refresh_token
                and form.get("grant_type") == ["refresh_token"]
                and form.get("refresh_token") == [args.refresh_token]
            )
            if not ok:
                self.refuse(b'{"error":"invalid_grant"}')
                return
            self.issue(form, "access_token")

        def refuse(self, body):
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def issue(self, q, key):
            access = [a for a in (parse_scope(s) for s in q.get("scope", [])) if a]
            now = int(time.time())
            payload = {
                "iss": args.issuer,
                "sub": args.user,
                "aud": q.get("service", [args.service])[0],
                "exp": now + 600,
                "nbf": now - 10,
                "iat": now,
                "jti": b64url(os.urandom(12)),
                "access": access,
            }
            token = sign(args, payload)
            body = json.dumps({key: token, "expires_in": 600}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main():
    p = argparse.ArgumentParser()
    for a in ("key", "cert", "issuer", "service", "user", "password", "port-file"):
        p.add_argument("--" + a, required=True)
    p.add_argument("--refresh-token")
    args = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args))
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
