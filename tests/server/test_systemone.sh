#!/usr/bin/env bash
# test_systemone.sh: /v1/systemone, /v1/models and /v1/decide on a live
# `typellm serve` over qwen2-d64-q8_0 (ChatML template): documented shapes,
# confidence formulas, question independence, the error table (systemone_check.py);
# then `serve -c 16384` past the model's 4,096 tokens for 255 described options.
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key k3y \
  --max-body 1000000 --max-tokens 2000
python3 "$TL_SRC/tests/server/systemone_check.py" "$PORT" k3y "$SCRATCH"
stop_server "$SERVER_PID"
# -c past the trained context (4,096): the 255 described options fit
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key k3y -c 16384
grep -q "beyond the 4096 tokens" "$SERVER_LOG" || { echo "no context warning"; cat "$SERVER_LOG"; exit 1; }
python3 "$TL_SRC/tests/server/systemone_check.py" "$PORT" k3y "$SCRATCH" long_context
stop_server "$SERVER_PID"
echo "test_systemone: ok"
