#!/usr/bin/env python3
"""A loopback HTTP proxy in front of a registry that injects the faults a real registry
cannot be made to produce (Python 3 standard library).

Usage: fault_proxy.py --upstream HOST:PORT --mode MODE --port-file FILE
Modes (faults apply to blob GETs, i.e. paths containing /blobs/):
  pass      forward everything unchanged (request counting only)
  cut       the first GET of each blob sends half its body, then closes the connection
  cut-all   every GET of a blob is cut that way (the client must give up)
  500       the first GET of each blob answers 500, later ones are forwarded
  429       the first GET of each blob answers 429 with Retry-After: 1
  slow      the first GET of each blob trickles its body at about 640 bytes/s, for as
            long as the client stays (a stalled download)
  slow-all  every GET of a blob trickles that way
  429-long  the first GET of each blob answers 429 with Retry-After: 3600
  silent    every request is read and never answered (a registry that hangs)
  flip      every gzip blob body (a layer) has one byte of its gzip header (mtime) changed:
            it still decompresses, so only the digest check can catch it
Modes for manifests (paths containing /manifests/):
  manifest-space  every manifest body gets a trailing space (still valid JSON, another
                  digest): a digest reference or Docker-Content-Digest must catch it
  schema1         every manifest GET answers a Docker schema1 manifest
  403             every manifest GET answers 403 DENIED (a registry that refuses a
                  repository to these credentials)
GET /__stats returns JSON: {"blob_gets": N, "blob_paths": [...], "ranges": [...]}.
It binds 127.0.0.1 on a free port and writes that port to FILE once it listens.
"""

import argparse
import http.client
import http.server
import json
import os
import threading
import time

HOP_BY_HOP = {"host", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


def make_handler(args):
    lock = threading.Lock()
    seen = set()
    stats = {"blob_gets": 0, "blob_paths": [], "ranges": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self):
            self.forward(head=True)

        def do_GET(self):
            if self.path == "/__stats":
                with lock:
                    body = json.dumps(stats).encode()
                self.reply(200, body, [("Content-Type", "application/json")])
                return
            self.forward(head=False)

        def forward(self, head):
            if args.mode == "silent":
                time.sleep(3600)
                return
            is_blob = "/blobs/" in self.path and not head
            first = False
            if is_blob:
                with lock:
                    stats["blob_gets"] += 1
                    stats["blob_paths"].append(self.path)
                    if self.headers.get("Range"):
                        stats["ranges"].append(self.headers.get("Range"))
                    first = self.path not in seen
                    seen.add(self.path)
            if is_blob and first and args.mode == "500":
                self.reply(500, b'{"errors":[{"code":"UNKNOWN"}]}')
                return
            if is_blob and first and args.mode == "429":
                self.reply(429, b"", [("Retry-After", "1")])
                return
            if is_blob and first and args.mode == "429-long":
                self.reply(429, b"", [("Retry-After", "3600")])
                return
            is_manifest = "/manifests/" in self.path and not head
            if is_manifest and args.mode == "403":
                self.reply(403, b'{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}')
                return
            if is_manifest and args.mode == "schema1":
                body = json.dumps({
                    "schemaVersion": 1, "name": "x", "tag": "v1", "architecture": "amd64",
                    "fsLayers": [], "history": [], "signatures": [],
                }).encode()
                ctype = "application/vnd.docker.distribution.manifest.v1+prettyjws"
                self.reply(200, body, [("Content-Type", ctype)])
                return
            conn = http.client.HTTPConnection(args.upstream, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Host"] = args.upstream
            conn.request("HEAD" if head else "GET", self.path, headers=headers)
            resp = conn.getresponse()
            body = b"" if head else resp.read()
            conn.close()
            if is_manifest and args.mode == "manifest-space" and resp.status == 200:
                body += b" "
            cut = is_blob and resp.status in (200, 206) and (
                args.mode == "cut-all" or (args.mode == "cut" and first)
            )
            if is_blob and resp.status in (200, 206) and args.mode == "flip" and body[:2] == b"\x1f\x8b":
                i = 4
                body = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1 :]
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP | {"content-length"}:
                    self.send_header(k, v)
            length = resp.getheader("Content-Length") if head else str(len(body))
            if length is not None:
                self.send_header("Content-Length", length)
            if cut:
                self.send_header("Connection", "close")
            self.end_headers()
            if head:
                return
            slow = is_blob and resp.status in (200, 206) and (
                args.mode == "slow-all" or (args.mode == "slow" and first)
            )
            if slow:
                try:
                    for i in range(0, len(body), 64):
                        self.wfile.write(body[i : i + 64])
                        self.wfile.flush()
                        time.sleep(0.1)
                except OSError:
                    pass
                self.close_connection = True
                return
            if cut:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument(
        "--mode",
        required=True,
        choices=["pass", "cut", "cut-all", "500", "429", "429-long", "slow", "slow-all", "silent", "flip", "manifest-space", "schema1", "403"],
    )
    p.add_argument("--port-file", required=True)
    args = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args))
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
