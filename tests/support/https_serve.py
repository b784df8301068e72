#!/usr/bin/env python3
"""Serves a directory on 127.0.0.1 over HTTPS and over plain HTTP, on ports the kernel
picks, standing in for the Machine Config Server (HTTPS) and a payload server in the
boot tests. Prints "HTTPS_PORT HTTP_PORT" on its first line of stdout, then serves
until it is killed. A file under a `manifests/` directory is served with the media type
it names (its `mediaType`), as a registry serves a manifest, so that a static tree of
`v2/REPO/manifests/DIGEST` and `v2/REPO/blobs/DIGEST` answers a registry's pulls.

    https_serve.py CERT KEY DIR
"""

import functools
import http.server
import json
import ssl
import sys
import threading


class Handler(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path):
        if "/manifests/" in str(path):
            try:
                with open(path, "rb") as f:
                    return json.load(f)["mediaType"]
            except (OSError, ValueError, KeyError):
                pass
        return super().guess_type(path)


def main() -> None:
    cert, key, root = sys.argv[1:4]
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
