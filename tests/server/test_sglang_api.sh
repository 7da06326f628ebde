#!/usr/bin/env bash
# test_sglang_api.sh: starts `typellm serve` on stories260k (loopback, --port 0,
# an API key, a small body limit) and drives every SGLang endpoint and field
# (sglang_api_check.py); then checks SIGTERM shuts it down cleanly and that the
# log has one line per request.
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/stories260k-f32.gguf" --threads 1 --api-key sekret --max-body 200000
python3 "$TL_SRC/tests/server/sglang_api_check.py" "$PORT" sekret
lines=$(grep -c ' /generate ' "$SERVER_LOG")
[ "$lines" -gt 40 ] || { echo "expected a log line per request, got $lines"; exit 1; }
grep -q 'POST /generate 413' "$SERVER_LOG" || { echo "413 not logged"; exit 1; }
stop_server "$SERVER_PID"

# A full queue answers 429 with Retry-After (System One clients retry it).
start_server --model "$TL_FIXTURES/models/stories260k-f32.gguf" --threads 1 --max-queue 1 --quiet
python3 - "$PORT" <<'PY'
import json, sys, threading, urllib.request, urllib.error
port = int(sys.argv[1])
out = []
def go(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            out.append((r.status, None, r.read()))
    except urllib.error.HTTPError as e:
        out.append((e.code, e.headers.get("Retry-After"), e.read()))
gen = {"text": "Once", "sampling_params": {"max_new_tokens": 120, "temperature": 0, "ignore_eos": True}}
so = {"state": "s", "questions": {"q": {"type": "noul"}}}
ts = [threading.Thread(target=go, args=("/generate", gen) if i % 2 else ("/v1/systemone", so)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
codes = sorted(c for c, _, _ in out)
busy = [(ra, b) for c, ra, b in out if c == 429]
ok = busy and 200 in codes and all(ra == "1" for ra, _ in busy) and set(codes) <= {200, 429}
if not ok:
    print("429 check failed:", codes, busy[:2]); sys.exit(1)
PY
stop_server "$SERVER_PID"
echo "test_sglang_api: ok"
