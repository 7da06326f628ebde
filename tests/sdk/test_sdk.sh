#!/usr/bin/env bash
# test_sdk.sh: the official System One JS SDK (@typesafe-ai/sdk, npm) against
# `typellm serve` on qwen2-d64-q8_0 (sdk_check.mjs). Installs the SDK into
# tests/sdk/node_modules (git-ignored) on first run; skips, saying so, only
# when npm cannot reach the registry.
source "$TL_SRC/tests/server/serve_lib.sh"
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
sdk_install @typesafe-ai/sdk || exit 0
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key sdk-key
(cd "$sdk" && node sdk_check.mjs "http://127.0.0.1:$PORT" sdk-key)
stop_server "$SERVER_PID"
echo "test_sdk: ok"
