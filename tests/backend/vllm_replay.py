#!/usr/bin/env python3
"""vllm_replay.py PAIRS.json PORT_FILE: answers the recorded responses of
PAIRS.json to requests equal to their recorded requests (method, path and
JSON body; numbers compared as numbers), so a client's requests are pinned
to vLLM's documented wire shapes and its parser is fed vLLM's replies. Any
other request gets 400 naming the first difference to the closest recorded
request; every request is logged to PORT_FILE.log (`PATH ok|mismatch`)."""
import http.server
import json
import os
import sys

pairs = json.load(open(sys.argv[1]))["pairs"]
port_file = sys.argv[2]


def diff(a, b, path="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                return f"{path}.{k}: recorded, not sent"
            if k not in b:
                return f"{path}.{k}: sent, not in vLLM's shape"
            d = diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items sent, {len(b)} recorded"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return None if a == b else f"{path}: {a} sent, {b} recorded"
    return None if a == b and type(a) is type(b) else f"{path}: {a!r} sent, {b!r} recorded"


class Replay(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n)) if n else None
        cands = [p for p in pairs if p["method"] == self.command and p["path"] == self.path]
        why = "no recorded request for this path"
        for p in cands:
            d = diff(body, p["request"])
            if d is None:
                open(port_file + ".log", "a").write(f"{self.path} ok\n")
                return self.reply(200, p["response"])
            why = d
        open(port_file + ".log", "a").write(f"{self.path} mismatch {why}\n")
        self.reply(400, {"error": {"message": why, "type": "BadRequestError", "param": None, "code": 400}})

    do_GET = handle_any
    do_POST = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Replay)
server.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
