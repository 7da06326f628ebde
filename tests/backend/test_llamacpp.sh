#!/usr/bin/env bash
# test_llamacpp.sh: `typellm decide --server URL` against the real llama.cpp
# server (the shared prebuilt llama-server) gives the embedded engine's values
# and probabilities (within 1e-3) in every mode, numbers within their bounds
# and multipleOf: with the model's GGUF found through /props (numbers and
# strings under typellm's automaton, the candidate mask sent as token-id
# grammars / logit_bias bans) and with only the server's /tokenize (the GGUF
# unreadable here: free text and numbers as GBNF grammars). Also: auto
# detection, a repeated decision served from the slot's cache, and the errors.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"   # float weights: llama.cpp's kernels and ours agree to ~1e-4
start_llama "$m"
EX="$TL_SRC/examples"
python3 - "$SCRATCH/mixed.json" <<'PY'
import json, sys
props = {f"flag{i:02d}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(4)}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 1000, "multipleOf": 7}
props["price"] = {"type": "number", "minimum": -5, "maximum": 50, "x-decimals": 1}
props["area"] = {"type": "string", "enum": ["payments", "search", "accounts"]}
props["summary"] = {"type": "string", "maxLength": 24}
props["code"] = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
LOCAL_ARGS=()
both() { # label schema context mode [remote args...]
  "$TL_BIN" decide --model "$m" --threads 1 "${LOCAL_ARGS[@]}" --schema "$2" --context "$3" --mode "$4" >"$SCRATCH/local.json"
  "$TL_BIN" decide --server "$LURL" "${@:5}" --schema "$2" --context "$3" --mode "$4" >"$SCRATCH/remote.json"
  same_decision "$SCRATCH/local.json" "$SCRATCH/remote.json" "$1"
  in_domain "$SCRATCH/remote.json" "$2" "$1"
}
for mode in sequential batch auto; do
  both "mixed/$mode" "$SCRATCH/mixed.json" "$EX/ticket/context.txt" "$mode" --engine llamacpp
  both "receipt_numbers/$mode" "$EX/receipt_numbers/schema.json" "$EX/receipt_numbers/context.txt" "$mode"
done
both "flags/batch" "$EX/flags/schema.json" "$EX/flags/context.txt" batch
python3 - "$SCRATCH/remote.json" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]
print("16 flags over llama-server:", u)
r = u["http_requests"]
# one or two /completion per flag (exact logprobs: top-K, then the masked ratios), no /tokenize (the GGUF is here)
assert r["tokenize"] == 0 and 16 <= r["generate"] <= 32, u
# one slot keeps the shared context: the flags after the first compute only their tails
assert u["cached_tokens"] >= 0.8 * u["prompt_tokens"], u
PY

# Only the server's tokenizer: a copy of the model the server loads, then removed.
cp "$m" "$SCRATCH/gone.gguf"
start_llama "$SCRATCH/gone.gguf"
rm "$SCRATCH/gone.gguf"
python3 - "$SCRATCH/mixed.json" "$SCRATCH/plain.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for k in ("sevens", "price", "code", "summary"):   # these need the automaton: multipleOf, decimals, strings
    del s["properties"][k]
s["properties"]["qty"] = {"type": "integer", "minimum": 3, "maximum": 250}
json.dump(s, open(sys.argv[2], "w"))
PY
# /props shows llama.cpp's ChatML fallback for a GGUF without a template: the embedded run is told the same
LOCAL_ARGS=(--chat-template chatml)
NO_PROB=1 both "server tokenizer/batch" "$SCRATCH/plain.json" "$EX/ticket/context.txt" batch
LOCAL_ARGS=()
python3 - "$SCRATCH/remote.json" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]["http_requests"]
assert u["tokenize"] > 0, u   # the server's /tokenize was used
PY
# multipleOf cannot be said as a grammar without the tokenizer: refused, naming --tokenizer
if "$TL_BIN" decide --server "$LURL" --schema "$SCRATCH/mixed.json" --context "$EX/ticket/context.txt" >/dev/null 2>"$SCRATCH/err"; then
  echo "multipleOf over the server's tokenizer must be refused"; exit 1; fi
grep -q -- "--tokenizer" "$SCRATCH/err" || { echo "the refusal should name --tokenizer: $(cat "$SCRATCH/err")"; exit 1; }
# ... and with --tokenizer it is decided as with the model's GGUF found
"$TL_BIN" decide --server "$LURL" --tokenizer "$m" --schema "$SCRATCH/mixed.json" --context "$EX/ticket/context.txt" \
  >"$SCRATCH/remote.json"
"$TL_BIN" decide --model "$m" --threads 1 --schema "$SCRATCH/mixed.json" --context "$EX/ticket/context.txt" >"$SCRATCH/local.json"
same_decision "$SCRATCH/local.json" "$SCRATCH/remote.json" "--tokenizer"

# Errors: nothing listening, an unknown engine, an engine not built in.
port=$(free_port)
if "$TL_BIN" decide --server "http://127.0.0.1:$port" --engine llamacpp --server-retries 0 --schema "$SCRATCH/plain.json" \
  --context-text x 2>"$SCRATCH/err"; then echo "no server must fail"; exit 1; fi
grep -q "llamacpp" "$SCRATCH/err" && grep -q "127.0.0.1:$port" "$SCRATCH/err" ||
  { echo "the error should name the engine and the server: $(cat "$SCRATCH/err")"; exit 1; }
if "$TL_BIN" decide --server "$LURL" --engine nope --schema "$SCRATCH/plain.json" --context-text x 2>"$SCRATCH/err"; then
  echo "an unknown engine must fail"; exit 1; fi
grep -q "llamacpp" "$SCRATCH/err" || { echo "the error should list the engines: $(cat "$SCRATCH/err")"; exit 1; }
echo "test_llamacpp: ok"
