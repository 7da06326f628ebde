#!/usr/bin/env bash
# test_llamacpp_upstream.sh: `typellm serve --upstream URL` in front of the
# real llama.cpp server (the shared prebuilt llama-server, engine found by
# auto-detection): its /v1/decide gives the embedded engine's values and
# probabilities within 1e-3 (llama.cpp's float kernels are not ours) in every
# mode, numbers within their bounds and multipleOf, free and patterned
# strings included; its /v1/decisions answers as an embedded `typellm serve
# -m` does (choices identical, probabilities within 1e-3), also for 4
# concurrent requests; /generate is 501 naming llamacpp; and with the
# llama-server gone a decision is 502 naming it.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"   # float weights: llama.cpp's kernels and ours agree to ~1e-4
EX="$TL_SRC/examples"
start_llama "$m"
start_server --upstream "$LURL" --quiet
FPID=$SERVER_PID FURL="http://127.0.0.1:$PORT"
start_server --model "$m" --threads 1 --quiet
LOCAL_PID=$SERVER_PID LOCAL_URL="http://127.0.0.1:$PORT"
python3 - "$SCRATCH/mixed.json" <<'PY'
import json, sys
props = {f"flag{i:02d}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(3)}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 1000, "multipleOf": 7}
props["area"] = {"type": "string", "enum": ["payments", "search", "accounts"]}
props["summary"] = {"type": "string", "maxLength": 16}
props["code"] = {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
# front_decide schema context mode > result: POST /v1/decide to the front end.
front_decide() {
  python3 - "$FURL" "$@" <<'PY'
import json, sys, urllib.error, urllib.request
url, schema, ctx, mode = sys.argv[1:5]
body = {"context": open(ctx).read(), "schema": json.load(open(schema)), "mode": mode}
req = urllib.request.Request(url + "/v1/decide", json.dumps(body).encode(), {"Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(req, timeout=300).read().decode())
except urllib.error.HTTPError as e:
    sys.exit(f"/v1/decide: HTTP {e.code}: {e.read()[:600]!r}")
PY
}
both() { # label schema context mode
  "$TL_BIN" decide --model "$m" --threads 1 --schema "$2" --context "$3" --mode "$4" >"$SCRATCH/local.json"
  front_decide "$2" "$3" "$4" >"$SCRATCH/remote.json"
  same_decision "$SCRATCH/local.json" "$SCRATCH/remote.json" "$1"
  in_domain "$SCRATCH/remote.json" "$2" "$1"
}
both "mixed/batch" "$SCRATCH/mixed.json" "$EX/ticket/context.txt" batch
for mode in sequential batch auto; do
  both "receipt_numbers/$mode" "$EX/receipt_numbers/schema.json" "$EX/receipt_numbers/context.txt" "$mode"
done

# /v1/decisions: the front end answers as the embedded server, 4 requests at once.
python3 - "$LOCAL_URL" "$FURL" <<'PY'
import concurrent.futures, json, sys, urllib.request
local, front = sys.argv[1:3]
def post(base, body):
    req = urllib.request.Request(base + "/v1/decisions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))
model = json.load(urllib.request.urlopen(front + "/v1/models"))["data"][0]["id"]
questions = [{"type": "predicate", "instructions": "Is this an outage?"},
             {"type": "choice", "instructions": "Which area?", "choices": [{"value": "payments"}, {"value": "search"}]},
             {"type": "score", "instructions": "How severe?", "levels": [{"label": "low"}, {"label": "high"}]}]
bodies = [{"model": model, "input": f"Ticket {i}: checkout fails with HTTP 500 in region {i}.", "questions": questions}
          for i in range(4)]
want = [post(local, {**b, "model": json.load(urllib.request.urlopen(local + "/v1/models"))["data"][0]["id"]}) for b in bodies]
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    got = list(ex.map(lambda b: post(front, b), bodies))
worst = 0.0
for w, g in zip(want, got):
    for a, b in zip(w["answers"], g["answers"]):
        assert a.get("choice") == b.get("choice"), (a, b)
        pa = [p["probability"] for p in a.get("probabilities", [])] or [a["probability"]]
        pb = [p["probability"] for p in b.get("probabilities", [])] or [b["probability"]]
        worst = max([worst] + [abs(x - y) for x, y in zip(pa, pb)])
assert worst <= 1e-3, worst
print(f"/v1/decisions over llama-server: the embedded server's choices, max |dp| {worst:.1e} (4 concurrent)")
PY
stop_server "$LOCAL_PID"

c=$(curl -s -o "$SCRATCH/body" -w '%{http_code}' "$FURL/generate" -d '{"text":"hi"}')
[ "$c" = 501 ] && grep -q "llamacpp server at $LURL" "$SCRATCH/body" ||
  { echo "/generate should be 501 naming llamacpp: $c $(cat "$SCRATCH/body")"; exit 1; }
# The llama-server gone: 502 naming it.
stop_llama "$LPID"
c=$(curl -s -o "$SCRATCH/body" -w '%{http_code}' --max-time 30 "$FURL/v1/decide" \
  -d '{"context":"x","schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}')
[ "$c" = 502 ] && grep -q "llamacpp" "$SCRATCH/body" && grep -q "$LURL" "$SCRATCH/body" ||
  { echo "with llama-server gone the front end should answer 502 naming it: $c $(cat "$SCRATCH/body")"; exit 1; }
stop_server "$FPID"
echo "test_llamacpp_upstream: ok"
