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
echo "test_sglang_api: ok"
