#!/usr/bin/env bash
# test_vllm_faults.sh: the remote fault classes (fault_lib.sh) for the vllm
# backend, through tests/backend/fault_proxy.py in front of `typellm serve`
# speaking vLLM's /v1/completions shapes: transient faults retried to the clean
# values, persistent ones a clear error naming vllm, /v1/completions and the
# fields; a server killed and restarted mid-decision gives the clean values
# once it is back; and a refused connection names the engine and the server.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"   # free_port
source "$TL_SRC/tests/backend/fault_lib.sh"
# Instrumented, typellm serve's every-position prompt logprobs take longer than
# the 3 s client timeout the fault classes are timed around (the proxy's
# "timeout" fault holds a reply 6 s), so the sanitizer pass leaves this test to
# the release pass; the remote layer's fault handling it exercises runs
# instrumented in test_sglang_faults and test_llamacpp_faults.
if [ -n "${TL_SANITIZER_RUN:-}" ]; then echo "test_vllm_faults: release pass only (timing)"; exit 0; fi
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_server --model "$m" --threads 1 --quiet
start_proxy "$PORT"
python3 - "$SCRATCH/flags.json" <<'PY'
import json, sys
props = {f"flag{i}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(2)}
props["n"] = {"type": "integer", "minimum": 0, "maximum": 9}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
ctx="Checkout returns HTTP 500 since the deploy."
dec() { "$TL_BIN" decide --server "$purl" --engine vllm --tokenizer "$m" --schema "$SCRATCH/flags.json" \
          --context-text "$ctx" --mode batch --server-timeout 3 --server-retries "${RETRIES:-3}" "$@"; }
dec >"$SCRATCH/clean.json"
fault_suite /v1/completions vllm
# Restarted mid-decision (fault_lib.sh): typellm serve killed (its cache lost), then started again on its port.
serve_port=$PORT
serve_down() { kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; }
serve_up() { start_server --model "$m" --threads 1 --quiet --port "$serve_port"; }
restart_suite /v1/completions vllm serve_down serve_up
port=$(free_port)
if "$TL_BIN" decide --server "http://127.0.0.1:$port" --engine vllm --server-retries 0 --schema "$SCRATCH/flags.json" \
  --context-text x 2>"$SCRATCH/err"; then echo "no server must fail"; exit 1; fi
grep -q "vllm" "$SCRATCH/err" && grep -q "127.0.0.1:$port" "$SCRATCH/err" ||
  { echo "the error should name the engine and the server: $(cat "$SCRATCH/err")"; exit 1; }
stop_server "$SERVER_PID"
echo "test_vllm_faults: ok"
