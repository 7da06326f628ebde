#!/usr/bin/env bash
# test_openai_batch.sh: OpenAI's official JS SDK (openai 7.55.0) against typellm
# serve's Files and Batch API (openai_batch_check.mjs): upload, a batch over
# /v1/decisions polled to completed with one correct line per input; a cancelled
# batch reports partial counts; a server killed with SIGKILL mid-batch and
# restarted on the same --data-dir completes the batch.
source "$TL_SRC/tests/server/serve_lib.sh"
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
sdk_install openai || exit 0
M="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
DATA="$SCRATCH/data"
check() { (cd "$sdk" && node openai_batch_check.mjs "http://127.0.0.1:$PORT" batch-key "$@"); }
start_server --model "$M" --threads 2 --api-key batch-key --data-dir "$DATA" --quiet
check run 40
check cancel 400
id=$(check start 150)
kill -9 "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
start_server --model "$M" --threads 2 --api-key batch-key --data-dir "$DATA"
grep -q "batch $id: resuming" "$SERVER_LOG" || { echo "FAIL: no resume line"; cat "$SERVER_LOG"; exit 1; }
check finish "$id" 150
stop_server "$SERVER_PID"
echo "test_openai_batch: ok"
