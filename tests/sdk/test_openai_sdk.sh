#!/usr/bin/env bash
# test_openai_sdk.sh: OpenAI's official JS SDK (openai 7.55.0, npm) against
# `typellm serve` on qwen2-d64-q8_0 (openai_check.mjs: decisions, chat
# completions, completions, models). Installs the SDKs into tests/sdk/node_modules
# (git-ignored) on first run; skips, saying so, only when npm cannot reach the
# registry.
source "$TL_SRC/tests/server/serve_lib.sh"
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
sdk_install openai || exit 0
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 --api-key sdk-key
(cd "$sdk" && node openai_check.mjs "http://127.0.0.1:$PORT" sdk-key)
stop_server "$SERVER_PID"
echo "test_openai_sdk: ok"
