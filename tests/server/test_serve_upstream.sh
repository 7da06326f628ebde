#!/usr/bin/env bash
# test_serve_upstream.sh: `typellm serve --upstream URL`, a decision front end
# for an engine already running, in a real chain on loopback: `typellm serve
# -m qwen2` (the engine, keyed) <- `typellm serve --upstream` (the front end,
# keyed, over the engine's SGLang API found by auto-detection, and over its
# vLLM API; with the GGUF's tokenizer here, or only the engine's /tokenize)
# <- curl, Python and OpenAI's JS SDK. The front end's /v1/decide,
# /v1/systemone and /v1/decisions answers equal the engine's own (values
# identical, probabilities within 1e-6, log-probabilities within 1e-6
# relative: SGLang's logprobs cross the wire as float32), also from 8
# concurrent requests (one upstream connection each) and in the Batch API's
# output lines (OpenAI's SDK). /health, /v1/models, /metrics and the
# playground answer; /health_generate asks the engine (200, 503 once it is
# gone); /tokenize and /detokenize answer as the engine's with --tokenizer;
# what needs the local model (or a tokenizer not given) answers 501 naming
# the upstream engine. Failures: an upstream down at start is an error naming
# it (exit 1); requests past --timeout while the upstream hangs are 504, one
# of them opening a new connection; an upstream killed mid-request is 502
# naming it, in bounded time; --max-queue still gives 429; free strings
# without a tokenizer here are a 422 naming --tokenizer; a context longer than
# the engine's is 413 (the engine's refusal, read from its 400), not a 502.
source "$TL_SRC/tests/server/serve_lib.sh"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
m="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
start_server --model "$m" --threads 1 --chat-template chatml --api-key eng-key --quiet
EPID=$SERVER_PID EURL="http://127.0.0.1:$PORT"
start_server --upstream "$EURL" --upstream-key eng-key --tokenizer "$m" --chat-template chatml --api-key front-key --quiet \
  --data-dir "$SCRATCH/front-data"
FPID=$SERVER_PID FURL="http://127.0.0.1:$PORT"
start_server --upstream "$EURL" --engine vllm --upstream-key eng-key --tokenizer "$m" --chat-template chatml --quiet
VPID=$SERVER_PID VURL="http://127.0.0.1:$PORT"
start_server --upstream "$EURL" --upstream-key eng-key --chat-template chatml --quiet   # no tokenizer here
BPID=$SERVER_PID BURL="http://127.0.0.1:$PORT"

# The typed APIs: the front ends answer as the engine does.
python3 - "$EURL" "$FURL" "$VURL" "$BURL" <<'PY'
import concurrent.futures, json, sys, urllib.error, urllib.request
engine, front, vfront, bare = sys.argv[1:5]
def post(base, path, body, key):
    req = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        sys.exit(f"{base}{path}: HTTP {e.code}: {e.read()[:600]!r}")
worst = {}
def same(a, b, path, tol=1e-6):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) - {"usage", "timing_ms"} <= set(b), (path, a, b)
        for k in a:
            if k not in ("usage", "timing_ms"):
                same(a[k], b[k], f"{path}/{k}", tol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}/{i}", tol)
    elif isinstance(a, float) and not isinstance(b, bool):
        lim = max(tol, 1e-6 * abs(a)) if path.endswith("logprob") else tol   # float32 logprobs: relative
        assert abs(a - b) <= lim, (path, a, b)
        key = path.split("/")[0] + "/" + path.split("/")[-1]
        worst[key] = max(worst.get(key, 0.0), abs(a - b))
    else:
        assert a == b, (path, a, b)
schema = {"type": "object", "properties": {
    "area": {"type": "string", "enum": ["payments", "search", "accounts"], "description": "Which product area?"},
    "outage": {"type": "boolean", "description": "Is this an outage?"},
    "severity": {"type": "integer", "enum": [1, 2, 3, 4], "depends_on": ["area", "outage"]},
    "qty": {"type": "integer", "minimum": 0, "maximum": 40, "description": "How many reports?"}}}
ctx = "Ticket 4471: checkout returns HTTP 500 for every customer since the 14:02 deploy. Revenue is down."
for mode in ("batch", "sequential", "auto"):
    body = {"context": ctx, "schema": schema, "mode": mode}
    e = post(engine, "/v1/decide", body, "eng-key")
    same(e, post(front, "/v1/decide", body, "front-key"), f"decide/{mode}/sglang")
# (numbers run under the automaton, which needs the tokenizer here: the other fronts get the rest)
small = {"type": "object", "properties": {k: v for k, v in schema["properties"].items() if k != "qty"}}
for mode in ("batch", "sequential"):
    body = {"context": ctx, "schema": small, "mode": mode}
    same(post(engine, "/v1/decide", body, "eng-key"), post(vfront, "/v1/decide", body, None), f"decide/{mode}/vllm")
so = {"state": ctx, "questions": {
    "o": {"type": "noul", "instructions": "Is this an outage?"},
    "a": {"type": "choice", "instructions": "Which area?", "criteria": {"pay": "payments", "srch": None}},
    "s": {"type": "score", "instructions": "How severe?", "criteria": ["low", "medium", "high"]}}}
same(post(engine, "/v1/systemone", so, "eng-key"), post(front, "/v1/systemone", so, "front-key"), "systemone")
# 8 at once, each its own context: every answer is the engine's
bodies = [{"context": f"{ctx} Report {i} of 8, from region {i * 7 % 5}.", "schema": small, "mode": "batch"} for i in range(8)]
want = [post(engine, "/v1/decide", b, "eng-key") for b in bodies]
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    got = list(ex.map(lambda b: post(front, "/v1/decide", b, "front-key"), bodies))
for i, (w, g) in enumerate(zip(want, got)):
    same(w, g, f"concurrent/{i}")
try:
    post(bare, "/v1/decide", {"context": ctx, "schema": {"type": "object", "properties": {
        "note": {"type": "string", "maxLength": 12}}}}, None)
    sys.exit("free strings over SGLang without --tokenizer should be refused")
except SystemExit as e:
    assert "HTTP 422" in str(e) and "--tokenizer" in str(e), e
body = {"context": ctx, "schema": small, "mode": "sequential"}
same(post(engine, "/v1/decide", body, "eng-key"), post(bare, "/v1/decide", body, None), "decide/no-tokenizer")
print("typed APIs: the front ends answer as the engine (sglang: 3 modes + systemone + 8 concurrent; vllm: 2 modes; no tokenizer: 1 mode)")
print("largest differences:", {k: f"{v:.1e}" for k, v in sorted(worst.items()) if v})
PY

# OpenAI's JS SDK: decisions.create on the engine and on the front end.
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
if sdk_install openai; then
  (cd "$sdk" && node openai_upstream_check.mjs "$EURL" eng-key "$FURL" front-key 1e-7)
  # the Batch API over the front end: each output line the answers a direct decisions.create gives
  (cd "$sdk" && node openai_batch_check.mjs "$FURL" front-key run 6)
fi

# The other routes: what works, and what needs the model here (501, naming the upstream).
code() { curl -s -o "$SCRATCH/body" -w '%{http_code}' -H "Authorization: Bearer front-key" "$@"; }
[ "$(code "$FURL/health")" = 200 ] || { echo "/health should answer 200"; exit 1; }
[ "$(code "$FURL/health_generate")" = 200 ] || { echo "/health_generate should answer 200: $(cat "$SCRATCH/body")"; exit 1; }
[ "$(code "$FURL/v1/models")" = 200 ] && grep -q "sglang server at $EURL" "$SCRATCH/body" ||
  { echo "/v1/models should name the model and the upstream: $(cat "$SCRATCH/body")"; exit 1; }
[ "$(code "$FURL/")" = 200 ] && grep -qi "<html" "$SCRATCH/body" || { echo "the playground page should answer"; exit 1; }
[ "$(code "$FURL/metrics")" = 200 ] && grep -q 'endpoint="/v1/decide"' "$SCRATCH/body" ||
  { echo "/metrics should count the decisions: $(head -c 300 "$SCRATCH/body")"; exit 1; }
[ "$(code "$FURL/generate" -d '{"text":"hi"}')" = 501 ] && grep -q "sglang server at $EURL" "$SCRATCH/body" &&
  grep -q full_logits "$SCRATCH/body" || { echo "/generate should be 501 naming the upstream: $(cat "$SCRATCH/body")"; exit 1; }
[ "$(code "$FURL/v1/chat/completions" -d '{"model":"x","messages":[]}')" = 501 ] &&
  python3 -c 'import json,sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == "unsupported_by_upstream" and "sglang" in e["message"], e' "$SCRATCH/body" ||
  { echo "chat completions should be an OpenAI-shaped 501: $(cat "$SCRATCH/body")"; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" "$FURL/v1/decide" -d '{}')" = 401 ] || { echo "the front end's key is checked"; exit 1; }
# /tokenize and /detokenize with the tokenizer here: the engine's own answers; without it, 501 naming --tokenizer
tok='{"prompt":["Checkout returns HTTP 500.","<|im_start|>user"],"add_special_tokens":false}'
[ "$(code "$FURL/tokenize" -d "$tok")" = 200 ] && cp "$SCRATCH/body" "$SCRATCH/front.tok" ||
  { echo "/tokenize with --tokenizer should answer: $(cat "$SCRATCH/body")"; exit 1; }
curl -s -H "Authorization: Bearer eng-key" "$EURL/tokenize" -d "$tok" >"$SCRATCH/engine.tok"
python3 -c 'import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:3]); assert a["tokens"] == b["tokens"] and a["count"] == b["count"], (a, b)' \
  "$SCRATCH/engine.tok" "$SCRATCH/front.tok"
[ "$(code "$FURL/detokenize" -d '{"tokens":[1,2,3]}')" = 200 ] || { echo "/detokenize with --tokenizer should answer"; exit 1; }
[ "$(code "$BURL/tokenize" -d "$tok")" = 501 ] && grep -q -- "--tokenizer" "$SCRATCH/body" ||
  { echo "/tokenize without a tokenizer here should be 501 naming --tokenizer: $(cat "$SCRATCH/body")"; exit 1; }
# A context longer than the engine's, on a front end that cannot count its tokens (SGLang reports
# no context size, no tokenizer here): the engine's refusal is the caller's 413, not a 502.
python3 -c 'import json; print(json.dumps({"context": "Checkout is down again. " * 6000,
  "schema": {"type": "object", "properties": {"outage": {"type": "boolean"}}}}))' >"$SCRATCH/long.json"
[ "$(code "$BURL/v1/decide" --data-binary @"$SCRATCH/long.json")" = 413 ] && grep -q "context" "$SCRATCH/body" ||
  { echo "an over-long context through the front end should be 413 naming the context: $(head -c 400 "$SCRATCH/body")"; exit 1; }
stop_server "$BPID"
stop_server "$VPID"
stop_server "$FPID"

# Failures. Upstream down at start: an error naming it, exit 1, in bounded time.
port=$(free_port)
rc=0; timeout 30 "$TL_BIN" serve --port 0 --upstream "http://127.0.0.1:$port" >/dev/null 2>"$SCRATCH/err" || rc=$?
[ "$rc" = 1 ] && grep -q "127.0.0.1:$port" "$SCRATCH/err" ||
  { echo "an unreachable upstream at start: exit 1 naming it (rc $rc): $(cat "$SCRATCH/err")"; exit 1; }
# A hung upstream: the request's deadline (--timeout 2) answers 504, for a request on the open
# connection and for one that must open a second (its probes run under the deadline too); a
# third request meanwhile is 429 (--max-queue 2).
start_server --upstream "$EURL" --upstream-key eng-key --chat-template chatml --timeout 2 --max-queue 2 --quiet
FPID=$SERVER_PID FURL="http://127.0.0.1:$PORT"
body='{"context":"Checkout is down.","schema":{"type":"object","properties":{"outage":{"type":"boolean"}}}}'
kill -STOP "$EPID"
t0=$(date +%s.%N)
for i in 1 2; do
  curl -s -o "$SCRATCH/hung$i" -w '%{http_code}' --max-time 20 "$FURL/v1/decide" -d "$body" >"$SCRATCH/hung$i.code" &
  eval "c$i=\$!"
done
sleep 0.5
[ "$(code "$FURL/v1/decide" -d "$body")" = 429 ] || { echo "a third request over --max-queue 2 should be 429"; kill -CONT "$EPID"; exit 1; }
wait "$c1" "$c2" || true
t1=$(date +%s.%N)
kill -CONT "$EPID"
for i in 1 2; do
  [ "$(cat "$SCRATCH/hung$i.code")" = 504 ] && grep -q "$EURL" "$SCRATCH/hung$i" ||
    { echo "a hung upstream past --timeout should be 504 naming it: $(cat "$SCRATCH/hung$i.code") $(cat "$SCRATCH/hung$i")"; exit 1; }
done
python3 -c "import sys; d = $t1 - $t0; print(f'hung upstream: both 504 after {d:.1f} s (--timeout 2)'); sys.exit(d > 6)"
[ "$(code "$FURL/v1/decide" -d "$body")" = 200 ] || { echo "the front end recovers with its upstream: $(cat "$SCRATCH/body")"; exit 1; }
# The upstream killed mid-request: 502 naming it, in bounded time.
stop_server "$FPID"
start_server --upstream "$EURL" --upstream-key eng-key --chat-template chatml --timeout 30 --quiet
FPID=$SERVER_PID FURL="http://127.0.0.1:$PORT"
kill -STOP "$EPID"
curl -s -o "$SCRATCH/dead" -w '%{http_code}' --max-time 25 "$FURL/v1/decide" -d "$body" >"$SCRATCH/dead.code" &
c1=$!
sleep 0.5
kill -KILL "$EPID"; kill -CONT "$EPID" 2>/dev/null || true
t0=$(date +%s.%N)
wait "$c1" || true
t1=$(date +%s.%N)
[ "$(cat "$SCRATCH/dead.code")" = 502 ] && grep -q "$EURL" "$SCRATCH/dead" ||
  { echo "an upstream killed mid-request should be 502 naming it: $(cat "$SCRATCH/dead.code") $(cat "$SCRATCH/dead")"; exit 1; }
python3 -c "import sys; d = $t1 - $t0; print(f'killed upstream: 502 after {d:.1f} s'); sys.exit(d > 10)"
[ "$(code "$FURL/health_generate")" = 503 ] && grep -q "$EURL" "$SCRATCH/body" ||
  { echo "/health_generate with the engine gone should be 503 naming it: $(cat "$SCRATCH/body")"; exit 1; }
stop_server "$FPID"
echo "test_serve_upstream: ok"
