#!/usr/bin/env bash
# test_sglang_faults.sh: `typellm decide --server` through a proxy that
# injects one fault class at a time in front of a real `typellm serve`
# (tests/backend/fault_proxy.py). A transient fault (500, 503 with
# Retry-After, 429 with and without Retry-After, a timeout, a cut-off or
# non-JSON reply, a dropped connection) is retried and the values equal a
# clean run's exactly; a persistent one fails with a message naming the
# endpoint and the fields left undecided — never a wrong value; a server
# killed and restarted mid-decision gives the clean values once it is back
# (fault_lib.sh's restart_suite). Also: the
# 16-flag batch decision is one /generate after a bounded number of /tokenize
# calls, and numbers with multipleOf over the proxy equal the local run.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/fault_lib.sh"
m="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
start_server --model "$m" --threads 1 --quiet
plan="$SCRATCH/plan"; : >"$plan"
python3 "$TL_SRC/tests/backend/fault_proxy.py" "$PORT" "$plan" "$SCRATCH/proxy.port" &
SERVERS+=("$!")
for _ in $(seq 1 100); do [ -s "$SCRATCH/proxy.port" ] && break; sleep 0.1; done
purl="http://127.0.0.1:$(cat "$SCRATCH/proxy.port")"

# 16 yes/no flags over one context (the seeds' workload shape) plus a number.
python3 - "$SCRATCH/flags.json" <<'PY'
import json, sys
props = {f"flag{i:02d}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(16)}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 1000, "multipleOf": 7}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
ctx="Ticket 4471: checkout returns HTTP 500 for every customer since the 14:02 deploy. Revenue is down."
dec() { "$TL_BIN" decide --server "$1" --chat-template chatml --schema "$SCRATCH/flags.json" --context-text "$ctx" \
          --mode batch --server-timeout 3 --server-retries "${RETRIES:-3}" "${@:2}"; }

"$TL_BIN" decide --model "$m" --threads 1 --chat-template chatml --schema "$SCRATCH/flags.json" \
  --context-text "$ctx" --mode batch >"$SCRATCH/local.json"
# multipleOf without a local tokenizer cannot be enforced remotely: refused, naming --tokenizer
if dec "$purl" >/dev/null 2>"$SCRATCH/err"; then echo "multipleOf without --tokenizer must be refused"; exit 1; fi
grep -q -- "--tokenizer" "$SCRATCH/err" || { echo "refusal should name --tokenizer: $(cat "$SCRATCH/err")"; exit 1; }
clean() { dec "$purl" --tokenizer "$m" "$@"; }
clean >"$SCRATCH/clean.json"
python3 - "$SCRATCH/local.json" "$SCRATCH/clean.json" <<'PY'
import json, sys
l, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert l["values"] == r["values"], (l["values"], r["values"])
for f, lf in l["fields"].items():
    rf = r["fields"][f]
    lp = lf.get("probabilities") or {"v": lf["probability"]}
    rp = rf.get("probabilities") or {"v": rf["probability"]}
    for k in lp:
        assert abs(lp[k] - rp[k]) < 1e-4, (f, k, lp[k], rp[k])
assert r["values"]["sevens"] % 7 == 0
PY

# Round trips of the 16-flag batch without a local tokenizer (flags only).
python3 - "$SCRATCH/flags.json" "$SCRATCH/flags16.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); del s["properties"]["sevens"]; json.dump(s, open(sys.argv[2], "w"))
PY
for run in 1 2; do
  "$TL_BIN" decide --server "$purl" --chat-template chatml --schema "$SCRATCH/flags16.json" --context-text "$ctx" \
    --mode batch >"$SCRATCH/r16.json"
done
python3 - "$SCRATCH/r16.json" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["usage"]["http_requests"]
print("16-flag batch over --server:", u)
assert u["generate"] == 1, u
# each distinct text once: the context, the framing, and per question its text and its
# special-token part (the label texts are shared): at most 3 per field plus a constant
assert u["tokenize"] <= 3 * 16 + 8, u
PY

# The fault classes (fault_lib.sh), on /generate.
log="$SCRATCH/proxy.port.log"
dec() { "$TL_BIN" decide --server "$purl" --tokenizer "$m" --chat-template chatml --schema "$SCRATCH/flags.json" \
          --context-text "$ctx" --mode batch --server-timeout 3 --server-retries "${RETRIES:-3}" "$@"; }   # = clean
fault_suite /generate sglang
# Restarted mid-decision (fault_lib.sh): typellm serve killed (its cache lost), then started again on its port.
serve_port=$PORT
serve_down() { kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; }
serve_up() { start_server --model "$m" --threads 1 --quiet --port "$serve_port"; }
restart_suite /generate sglang serve_down serve_up
: >"$plan"
stop_server "$SERVER_PID"
echo "test_sglang_faults: ok"
