#!/usr/bin/env python3
"""fault_proxy.py: an HTTP proxy in front of a serving engine (`typellm serve`,
llama.cpp's llama-server) that injects faults into chosen requests, so the SGLang
client's handling of each can be tested against the real server behind it.

    fault_proxy.py UPSTREAM_PORT PLAN_FILE PORT_FILE

PLAN_FILE is read at every request (the test rewrites it between runs). Each
line is `PATH FAULT COUNT`: the next COUNT requests to PATH get FAULT (COUNT
-1: all of them). Faults:
  500          answer 500 with an error body (not forwarded)
  503-ra       answer 503 with Retry-After: 1
  429          answer 429 without Retry-After
  429-ra       answer 429 with Retry-After: 1
  timeout      forward, then wait 6 s before answering (past the client's timeout)
  truncate     forward, answer 200 with the first half of the upstream body
  malformed    forward, answer 200 with a body that is not JSON
  wrongshape   forward, answer 200 with valid JSON of the wrong shape ({})
  drop         forward, then close the connection without an answer
  slow         wait 1.5 s, then forward (a slow reply, inside the client's timeout)
An upstream that refuses the connection (restarting) is answered 502.
Every request is logged to PORT_FILE.log as `PATH FAULT|ok`. The proxy writes
its port to PORT_FILE when it listens.
"""
import http.client
import http.server
import os
import sys
import threading
import time

upstream_port = int(sys.argv[1])
plan_file, port_file = sys.argv[2], sys.argv[3]
lock = threading.Lock()
used = {}  # (path, fault, line number) -> times applied


def next_fault(path):
    with lock:
        try:
            lines = open(plan_file).read().splitlines()
        except FileNotFoundError:
            return None
        for i, line in enumerate(lines):
            parts = line.split()
            if len(parts) != 3 or parts[0] != path:
                continue
            key = (path, parts[1], i, line)
            count = int(parts[2])
            if count < 0 or used.get(key, 0) < count:
                used[key] = used.get(key, 0) + 1
                return parts[1]
        return None


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self, body):
        conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        conn.request(self.command, self.path, body=body, headers=headers)
        rep = conn.getresponse()
        data = rep.read()
        conn.close()
        return rep.status, rep.getheader("Content-Type", "application/json"), data

    def answer(self, status, data, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        path = self.path.split("?")[0]
        fault = next_fault(path)
        with lock:
            with open(port_file + ".log", "a") as log:
                log.write(f"{path} {fault or 'ok'}\n")
        if fault == "500":
            return self.answer(500, b'{"error":{"message":"injected","code":500}}')
        if fault == "503-ra":
            return self.answer(503, b'{"error":"busy"}', extra=[("Retry-After", "1")])
        if fault == "429":
            return self.answer(429, b'{"error":"too many requests"}')
        if fault == "429-ra":
            return self.answer(429, b'{"error":"too many requests"}', extra=[("Retry-After", "1")])
        if fault == "slow":
            time.sleep(1.5)
        try:
            status, ctype, data = self.forward(body)
        except OSError:
            with lock:
                with open(port_file + ".log", "a") as log:
                    log.write(f"{path} upstream-down\n")
            return self.answer(502, b'{"error":"upstream unavailable"}')
        if fault == "timeout":
            time.sleep(6)
        elif fault == "truncate":
            data = data[: len(data) // 2]
        elif fault == "malformed":
            data = b"<html>upstream gateway error</html>"
        elif fault == "wrongshape":
            data = b"{}" if not data.startswith(b"[") else b"[{}]"
        elif fault == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        try:
            self.answer(status, data, ctype)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = handle_any
    do_POST = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
server.daemon_threads = True
tmp = port_file + ".tmp"
with open(tmp, "w") as f:
    f.write(str(server.server_address[1]))
os.replace(tmp, port_file)
server.serve_forever()
