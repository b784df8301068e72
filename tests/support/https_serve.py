#!/usr/bin/env python3
"""Serves a directory on 127.0.0.1 over HTTPS and over plain HTTP, on ports the kernel
picks, standing in for the Machine Config Server (HTTPS) and a payload server in the
boot tests. Prints "HTTPS_PORT HTTP_PORT" on its first line of stdout, then serves
until it is killed. A file under a `manifests/` directory is served with the media type
it names (its `mediaType`), as a registry serves a manifest, so that a static tree of
`v2/REPO/manifests/DIGEST` and `v2/REPO/blobs/DIGEST` answers a registry's pulls.

    https_serve.py CERT KEY DIR [LOG]

CERT may hold a chain (the leaf first). `GET /config/POOL`, when DIR has no file
`config/POOL` but has `config/POOL-spec2.2.ign` and `config/POOL-spec3.ign`, is answered
as MCO's Machine Config Server answers it (pkg/server/api.go,
`detectSpecVersionFromAcceptHeader`): the Accept header is split on ',' then ';', each
entry's `version=` and `q=` read (q defaults to 1, a version that is not X.Y.Z is
ignored), the entries sorted by q, highest first (stable), and the first
`vnd.coreos.ignition+json` entry with a version decides: 2.x from 2.2 on gets the spec
2.2 body, 3.x the spec 3 body; any other version is refused (400). No Accept header, no
such entry, or `*/*` alone: the spec 2.2 body. (The MCS also converts its spec 3 config
to the 3.x minor asked for; this serves the one spec 3 body for every 3.x.) Each such
request is logged to LOG, one line: `PATH BODY ACCEPT` (BODY: spec2.2, spec3 or 400).
"""

import functools
import http.server
import json
import os
import re
import ssl
import sys
import threading

IGNITION = "vnd.coreos.ignition+json"
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def parse_accept(header):
    """The entries of an Accept header as MCO's parseAcceptHeader reads them: (MIME
    subtype, (major, minor, patch) or None, q), sorted by q, highest first."""
    entries = []
    for value in header.split(","):
        parts = [p.strip() for p in value.strip().split(";")]
        if "/" not in parts[0]:
            continue
        subtype = parts[0].split("/", 1)[1]
        version = q = None
        for ext in parts[1:]:
            if "=" not in ext:
                continue
            key, val = ext.split("=", 1)
            if key == "version" and version is None:
                m = SEMVER.match(val)
                if m:
                    version = tuple(int(g) for g in m.groups())
            elif key == "q" and q is None:
                try:
                    q = float(val)
                except ValueError:
                    pass
        entries.append((subtype, version, 1.0 if q is None else q))
    entries.sort(key=lambda e: -e[2])  # sorted() and sort() are stable
    return entries


def body_for(header):
    """spec2.2, spec3, or None (the MCS answers 400)."""
    for subtype, version, _ in parse_accept(header or ""):
        if subtype != IGNITION or version is None:
            continue
        major, minor, _ = version
        if major == 2 and minor >= 2:
            return "spec2.2"
        if major == 3:
            return "spec3"
        return None
    return "spec2.2"


class Handler(http.server.SimpleHTTPRequestHandler):
    log_path = None
    log_lock = threading.Lock()

    def guess_type(self, path):
        if "/manifests/" in str(path):
            try:
                with open(path, "rb") as f:
                    return json.load(f)["mediaType"]
            except (OSError, ValueError, KeyError):
                pass
        return super().guess_type(path)

    def mcs_bodies(self):
        """The two bodies of `/config/POOL`, or None when this is not such a request."""
        path = self.path.split("?", 1)[0]
        m = re.fullmatch(r"/config/([A-Za-z0-9_.-]+)", path)
        if not m:
            return None
        config = os.path.join(self.directory, "config")
        if os.path.exists(os.path.join(config, m.group(1))):
            return None
        bodies = {
            kind: os.path.join(config, f"{m.group(1)}-{kind}.ign") for kind in ("spec2.2", "spec3")
        }
        return bodies if all(os.path.isfile(p) for p in bodies.values()) else None

    def serve_mcs(self, bodies, head):
        accept = self.headers.get("Accept")
        kind = body_for(accept)
        if self.log_path:
            with self.log_lock, open(self.log_path, "a") as log:
                log.write(f"{self.path} {kind or '400'} {accept or ''}\n")
        if kind is None:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(bodies[kind], "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def do_GET(self):
        bodies = self.mcs_bodies()
        if bodies:
            self.serve_mcs(bodies, head=False)
        else:
            super().do_GET()

    def do_HEAD(self):
        bodies = self.mcs_bodies()
        if bodies:
            self.serve_mcs(bodies, head=True)
        else:
            super().do_HEAD()


def main() -> None:
    cert, key, root = sys.argv[1:4]
    Handler.log_path = sys.argv[4] if len(sys.argv) > 4 else None
    handler = functools.partial(Handler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    print(server.server_address[1], plain.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
