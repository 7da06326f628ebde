#!/usr/bin/env bash
# test_sdk.sh: the official System One JS SDK (@typesafe-ai/sdk, npm) against
# `typellm serve` on qwen2-d64-q8_0 (sdk_check.mjs). Installs the SDK into
# tests/sdk/node_modules (git-ignored) on first run; skips, saying so, only
# when npm cannot reach the registry.
source "$TL_SRC/tests/server/serve_lib.sh"
sdk="$TL_SRC/tests/sdk"
if [ ! -d "$sdk/node_modules/@typesafe-ai/sdk" ]; then
  if ! command -v npm >/dev/null || ! (cd "$sdk" && timeout 180 npm install --no-audit --no-fund --no-package-lock >"$SCRATCH/npm.log" 2>&1); then
    echo "test_sdk: SKIPPED: npm cannot install @typesafe-ai/sdk (registry unreachable?):"
    tail -5 "$SCRATCH/npm.log" 2>/dev/null || true
    exit 0
  fi
fi
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key sdk-key
(cd "$sdk" && node sdk_check.mjs "http://127.0.0.1:$PORT" sdk-key)
stop_server "$SERVER_PID"
echo "test_sdk: ok"
