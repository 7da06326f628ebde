#!/usr/bin/env bash
# test_systemone.sh: /v1/systemone, /v1/models and /v1/decide on a live
# `typellm serve` over qwen2-d64-q8_0 (ChatML template): documented shapes,
# confidence formulas, question independence, the error table (systemone_check.py).
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key k3y \
  --max-body 1000000 --max-tokens 2000
python3 "$TL_SRC/tests/server/systemone_check.py" "$PORT" k3y "$SCRATCH"
stop_server "$SERVER_PID"
echo "test_systemone: ok"
