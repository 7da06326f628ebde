#!/usr/bin/env bash
# test_robustness.sh: bounded work per request, connection caps and
# deadlines, and the SIGTERM drain on a live `typellm serve` over
# qwen2-d64-q8_0 (robustness_check.py sends the SIGTERM; the server must then
# exit 0).
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1
python3 "$TL_SRC/tests/server/robustness_check.py" "$PORT" "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
[ "$rc" = 0 ] || { echo "server exited $rc after the drain"; cat "$SERVER_LOG" | tail -5; exit 1; }
echo "test_robustness: ok"
