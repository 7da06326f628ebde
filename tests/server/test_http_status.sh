#!/usr/bin/env bash
# test_http_status.sh: the one status->HTTP mapping (src/server/reply.c)
# seen through a live `typellm serve` (qwen2-d64-q8_0, --max-tokens 100,
# --timeout 1): the same library status (LIMIT, SCHEMA, INVALID, TIMEOUT)
# in each API's dialect, with the status and error body docs/server.md
# gives (http_status_check.py holds that table).
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --max-tokens 100 --timeout 1
python3 "$TL_SRC/tests/server/http_status_check.py" "$PORT"
stop_server "$SERVER_PID"
echo "test_http_status: ok"
