#!/usr/bin/env bash
# test_vllm_serve.sh: the vllm backend against `typellm serve` answering
# vLLM's /v1/completions shapes (token-id prompt lists, prompt_logprobs):
# decisions in all three modes equal the embedded engine's (the same engine
# behind both: probabilities within 1e-6), numbers keep multipleOf, a batch
# wave is one request, and a free string (a step over most of the vocabulary)
# is refused with a message naming vllm instead of a request of tens of
# thousands of prompts.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"   # same_decision, in_domain
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_server --model "$m" --threads 1 --quiet
url="http://127.0.0.1:$PORT"
python3 - "$SCRATCH/s.json" "$SCRATCH/free.json" <<'PY'
import json, sys
props = {f"flag{i}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(3)}
props["area"] = {"type": "string", "enum": ["payments", "search", "accounts"]}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 7}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
json.dump({"type": "object", "properties": {"summary": {"type": "string", "maxLength": 8}}}, open(sys.argv[2], "w"))
PY
ctx="$TL_SRC/examples/ticket/context.txt"
# Under the sanitizers typellm serve's every-position prompt logprobs are
# ~12x slower (about 200 s for the three modes): one mode there.
modes="sequential batch auto"
[ -n "${TL_SANITIZER_RUN:-}" ] && modes="batch"
for mode in $modes; do
  "$TL_BIN" decide --model "$m" --threads 1 --schema "$SCRATCH/s.json" --context "$ctx" --mode "$mode" >"$SCRATCH/local.json"
  "$TL_BIN" decide --server "$url" --engine vllm --tokenizer "$m" --schema "$SCRATCH/s.json" --context "$ctx" \
    --mode "$mode" >"$SCRATCH/remote.json"
  same_decision "$SCRATCH/local.json" "$SCRATCH/remote.json" "vllm shapes/$mode"
  in_domain "$SCRATCH/remote.json" "$SCRATCH/s.json" "vllm shapes/$mode"
done
python3 - "$SCRATCH/local.json" "$SCRATCH/remote.json" <<'PY'
import json, sys
l, r = (json.load(open(f)) for f in sys.argv[1:3])
worst = max(abs(p - r["fields"][f]["probabilities"][k]) for f in l["fields"] for k, p in l["fields"][f].get("probabilities", {}).items())
assert worst < 1e-6, worst   # the same engine behind both
assert r["usage"]["http_requests"]["tokenize"] == 0, r["usage"]
PY
if "$TL_BIN" decide --server "$url" --engine vllm --tokenizer "$m" --schema "$SCRATCH/free.json" --context "$ctx" \
  >/dev/null 2>"$SCRATCH/err"; then echo "a free string over vllm should be refused"; exit 1; fi
grep -q "vllm: scoring" "$SCRATCH/err" || { echo "the refusal should name vllm: $(cat "$SCRATCH/err")"; exit 1; }
stop_server "$SERVER_PID"
echo "test_vllm_serve: ok"
