#!/usr/bin/env python3
"""Answers the discovery requests kubectl makes before it reads a manifest (`/api`,
`/apis`, `/api/v1`) on 127.0.0.1, for a kubectl with no cluster: `kubectl create
--dry-run=client -f` then decodes and prints the object as it would send it. Knows
only the core group's Secrets. Prints its port on its first line of stdout, then
serves until it is killed.

    kube_discovery.py
"""

import http.server
import json

DOCUMENTS = {
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    },
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "secrets",
                "singularName": "secret",
                "namespaced": True,
                "kind": "Secret",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
        ],
    },
}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        doc = DOCUMENTS.get(self.path.split("?")[0])
        body = json.dumps(doc).encode() if doc else b"{}"
        self.send_response(200 if doc else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
