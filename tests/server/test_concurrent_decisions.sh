#!/usr/bin/env bash
# test_concurrent_decisions.sh: batching does not change results, through the
# real server. 64 /v1/decisions requests (a predicate and a 4-way choice over
# contexts of 40-900 words that share a 200-word prefix, most longer than a
# scheduler step, --step-tokens 128, so they run in chunks) are sent all at
# once over HTTP;
# every answer must equal, bit for bit (the JSON reals are printed in their
# shortest exact form), the answer the same request gets alone: sent one at a
# time after /flush_cache. The concurrent run must also have shared work
# (more cached tokens than the requests alone), so it really was batched.
source "$(dirname "$0")/serve_lib.sh"
start_server --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 2 --max-queue 128 --step-tokens 128 --quiet
python3 - "$PORT" <<'PY'
import json, random, sys, threading, urllib.request
port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"
def call(path, body=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                 method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        data = r.read()
        return json.loads(data) if path != "/flush_cache" else None
model = call("/v1/models")["data"][0]["id"]
rng = random.Random(64)
words = "refund order card late broken account login price ship box help again never please thanks".split()
prefix = "Triage rules: " + " ".join(rng.choice(words) for _ in range(190))
reqs = []
for i in range(64):
    ctx = " ".join(rng.choice(words) for _ in range(rng.randint(40, 900)))
    reqs.append({"model": model,
                 "input": [{"role": "system", "content": prefix}, {"role": "user", "content": f"Ticket {i}: {ctx}"}],
                 "questions": [{"type": "predicate", "instructions": "Is this about billing?"},
                               {"type": "choice", "instructions": "Which team?",
                                "choices": [{"value": v} for v in ("billing", "shipping", "account", "other")]}]})
alone = []
for r in reqs:
    call("/flush_cache", {})
    alone.append(call("/v1/decisions", r))
call("/flush_cache", {})
together = [None] * len(reqs)
errors = []
def go(i):
    try:
        together[i] = call("/v1/decisions", reqs[i])
    except Exception as e:
        errors.append(f"request {i}: {e!r}")
ts = [threading.Thread(target=go, args=(i,)) for i in range(len(reqs))]
[t.start() for t in ts]; [t.join() for t in ts]
if errors:
    print("errors:", errors[:3]); sys.exit(1)
bad = [i for i in range(len(reqs)) if json.dumps(alone[i]["answers"]) != json.dumps(together[i]["answers"])]
if bad:
    i = bad[0]
    print(f"{len(bad)} of {len(reqs)} answers differ; request {i}:\n alone    {alone[i]['answers']}\n together {together[i]['answers']}")
    sys.exit(1)
cached = lambda rs: sum(r["usage"]["input_tokens_details"]["cached_tokens"] for r in rs)
tokens = sum(r["usage"]["input_tokens"] for r in alone)
if not cached(together) > cached(alone):
    print(f"no work shared: cached tokens {cached(together)} together, {cached(alone)} alone"); sys.exit(1)
print(f"64 concurrent decisions equal alone; {tokens} input tokens, cached {cached(alone)} alone, {cached(together)} together")
PY
stop_server "$SERVER_PID"
echo "test_concurrent_decisions: ok"
