#!/usr/bin/env bash
# test_batch_openai_remote.sh: OpenAI batch lines with `typellm batch
# --server`: /v1/decisions, /v1/chat/completions and /v1/completions lines
# sent to two `typellm serve` on loopback answer as the embedded run does
# (`typellm batch -m`: the same decisions, the same greedy texts), a bad url
# is still the line's own error; against the real llama.cpp server the chat
# and completion lines are answered there and a /v1/decisions line gets an
# error naming llamacpp (the job goes on, exit 0).
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d1"; P1=$PORT; PID1=$SERVER_PID
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d2"; P2=$PORT; PID2=$SERVER_PID
MODEL=$(curl -s "http://127.0.0.1:$P1/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
python3 - "$SCRATCH/oai.jsonl" "$MODEL" <<'PY'
import json, sys
model = sys.argv[2]
dec = {"model": model, "input": "Ticket: the invoice shows the wrong seat count",
       "questions": [{"type": "predicate", "name": "billing", "instructions": "Is it about billing?"},
                     {"type": "choice", "name": "urgency", "instructions": "How urgent?",
                      "choices": [{"value": "low"}, {"value": "high"}]}]}
chat = {"model": model, "messages": [{"role": "system", "content": "You sort support tickets into queues."},
                                   {"role": "user", "content": "Ticket: my card was charged twice"}],
        "max_tokens": 8, "temperature": 0}
comp = {"model": model, "prompt": "The support queue for billing tickets is", "max_tokens": 6, "temperature": 0}
lines = [("dec-0", "/v1/decisions", dec), ("chat-0", "/v1/chat/completions", chat),
         ("comp-0", "/v1/completions", comp), ("dec-1", "/v1/decisions", dec),
         ("chat-1", "/v1/chat/completions", chat), ("comp-1", "/v1/completions", comp),
         ("bad-url", "/v1/embeddings", {})]
with open(sys.argv[1], "w") as f:
    for cid, url, body in lines:
        f.write(json.dumps({"custom_id": cid, "method": "POST", "url": url, "body": body}) + "\n")
PY
timeout 120 "$TL_BIN" batch --server "http://127.0.0.1:$P1" --server "http://127.0.0.1:$P2" --server-retries 0 \
  -i "$SCRATCH/oai.jsonl" -o "$SCRATCH/remote.jsonl" --parallel 4 --no-progress
timeout 120 "$TL_BIN" batch -m "$M" -t 2 -i "$SCRATCH/oai.jsonl" -o "$SCRATCH/local.jsonl" --parallel 4 --no-progress
python3 - "$SCRATCH/remote.jsonl" "$SCRATCH/local.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
l = [json.loads(l) for l in open(sys.argv[2])]
assert [o["custom_id"] for o in r] == [o["custom_id"] for o in l] == \
    ["dec-0", "chat-0", "comp-0", "dec-1", "chat-1", "comp-1", "bad-url"], r
def gist(o):
    b = o["response"]["body"]
    if "answers" in b:
        return [(a["name"], a.get("value"), a.get("probability")) for a in b["answers"]]
    c = b["choices"][0]
    return c["message"]["content"] if "message" in c else c["text"]
for a, b in zip(r[:6], l[:6]):
    assert a["error"] is None and a["response"]["status_code"] == 200, a
    assert gist(a) == gist(b), (a["custom_id"], gist(a), gist(b))
assert r[6]["response"] is None and r[6]["error"]["code"] == "invalid_url", r[6]
PY

start_llama "$M"
timeout 120 "$TL_BIN" batch --server "$LURL" --server-retries 0 -i "$SCRATCH/oai.jsonl" -o "$SCRATCH/llama.jsonl" \
  --parallel 2 --no-progress
python3 - "$SCRATCH/llama.jsonl" <<'PY'
import json, sys
r = {o["custom_id"]: o for o in map(json.loads, open(sys.argv[1]))}
for cid in ("dec-0", "dec-1"):
    e = r[cid]["error"]
    assert r[cid]["response"] is None and e["code"] == "unsupported" and "llamacpp" in e["message"], r[cid]
for cid in ("chat-0", "comp-0", "chat-1", "comp-1"):
    assert r[cid]["error"] is None and r[cid]["response"]["status_code"] == 200, r[cid]
    assert r[cid]["response"]["body"]["choices"], r[cid]
PY
stop_llama "$LPID"
stop_server "$PID1"; stop_server "$PID2"
echo "test_batch_openai_remote: ok"
