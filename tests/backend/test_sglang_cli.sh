#!/usr/bin/env bash
# test_sglang_cli.sh: `typellm decide --server URL` against `typellm serve`
# gives the same values and probabilities (within 1e-4) as the local engine in
# every mode (sequential, batch, auto with depends_on) and both styles, and a
# repeated run shows the server's prefix cache reused (cached_tokens); with
# --tokenizer (local tokenizer GGUF) the results are the same.
source "$TL_SRC/tests/server/serve_lib.sh"
cat >"$SCRATCH/schema.json" <<'JSON'
{"type":"object","properties":{
  "area":{"type":"string","enum":["payments","search","accounts"],"description":"Which product area?"},
  "outage":{"type":"boolean","description":"Is this an outage?"},
  "severity":{"type":"integer","enum":[1,2,3,4],"depends_on":["area","outage"]},
  "rollback":{"type":"string","enum":["yes","no"],"x-descriptions":{"yes":"undo the deploy"},"depends_on":["severity"]}}}
JSON
ctx="Ticket 4471: checkout returns HTTP 500 for every customer since the 14:02 deploy. Revenue is down."
compare() { # local.json remote.json label
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
l, r, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
bad = [f for f in l["fields"] if l["fields"][f]["value"] != r["fields"][f]["value"] or
       any(abs(p - r["fields"][f]["probabilities"][k]) > 1e-4 for k, p in l["fields"][f]["probabilities"].items())]
if bad or l["values"] != r["values"]:
    print(f"{what}: remote differs from local in {bad}: {l['values']} vs {r['values']}"); sys.exit(1)
PY
}
for model in qwen2-d64-q8_0 stories260k-f32; do
  m="$TL_FIXTURES/models/$model.gguf"
  start_server --model "$m" --threads 1 --api-key cli-key --quiet
  url="http://127.0.0.1:$PORT"
  modes="sequential batch auto"
  [ "$model" = stories260k-f32 ] && modes=batch   # record style (no chat template): one mode is enough
  for mode in $modes; do
    # SGLang sends no chat template: the client is told where to get one (here
    # the built-in ChatML family, so the local run is told the same)
    tsrc=(--chat-template chatml); [ "$model" = stories260k-f32 ] && tsrc=(--style record)
    "$TL_BIN" decide --model "$m" --threads 1 "${tsrc[@]}" --schema "$SCRATCH/schema.json" --context-text "$ctx" --mode "$mode" >"$SCRATCH/local.json"
    "$TL_BIN" decide --model "$m" --threads 1 --schema "$SCRATCH/schema.json" --context-text "$ctx" --mode "$mode" >"$SCRATCH/local_own.json"
    if "$TL_BIN" decide --server "$url" --api-key cli-key --schema "$SCRATCH/schema.json" --context-text "$ctx" --mode "$mode" >/dev/null 2>"$SCRATCH/err"; then
      echo "$model/$mode: a remote run without a template source must fail"; exit 1; fi
    grep -q -- "--chat-template" "$SCRATCH/err" && grep -q -- "--tokenizer" "$SCRATCH/err" ||
      { echo "the refusal should name --chat-template and --tokenizer: $(cat "$SCRATCH/err")"; exit 1; }
    "$TL_BIN" decide --server "$url" --api-key cli-key "${tsrc[@]}" --schema "$SCRATCH/schema.json" --context-text "$ctx" --mode "$mode" >"$SCRATCH/remote.json"
    compare "$SCRATCH/local.json" "$SCRATCH/remote.json" "$model/$mode"
    [ "$mode" = batch ] || continue   # a local tokenizer instead of /tokenize: once per model
    "$TL_BIN" decide --server "$url" --api-key cli-key --tokenizer "$m" --schema "$SCRATCH/schema.json" --context-text "$ctx" --mode "$mode" >"$SCRATCH/remote2.json"
    compare "$SCRATCH/local_own.json" "$SCRATCH/remote2.json" "$model/$mode/--tokenizer (the model's own template)"
    python3 - "$SCRATCH/remote2.json" "$model/$mode" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]
if not (u["prompt_tokens"] > 0 and u["cached_tokens"] >= 0.9 * u["prompt_tokens"]):
    print(f"{sys.argv[2]}: a repeated run should be served from the cache: {u}"); sys.exit(1)
PY
  done
  stop_server "$SERVER_PID"
done
# Errors: unreachable server, bad key.
if "$TL_BIN" decide --server http://127.0.0.1:1 --schema "$SCRATCH/schema.json" --context-text x 2>"$SCRATCH/err"; then
  echo "unreachable server must fail"; exit 1; fi
grep -q "127.0.0.1:1" "$SCRATCH/err" || { echo "error should name the server: $(cat "$SCRATCH/err")"; exit 1; }
echo "test_sglang_cli: ok"
