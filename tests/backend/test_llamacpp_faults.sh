#!/usr/bin/env bash
# test_llamacpp_faults.sh: the remote fault classes of test_sglang_faults.sh,
# against the real llama.cpp server through tests/backend/fault_proxy.py: a
# transient fault on /completion (500, 503 with Retry-After, 429 with and
# without, a timeout, a cut-off or non-JSON reply, a dropped connection, a
# slow reply) is retried and the values equal a clean run's; a persistent one
# fails naming /completion and the undecided fields, printing no values; and a
# llama-server killed and restarted mid-decision (its cache lost) gives the
# clean run's values once it is back.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_llama "$m"
plan="$SCRATCH/plan"; : >"$plan"
python3 "$TL_SRC/tests/backend/fault_proxy.py" "$LPORT" "$plan" "$SCRATCH/proxy.port" &
SERVERS+=("$!")
for _ in $(seq 1 100); do [ -s "$SCRATCH/proxy.port" ] && break; sleep 0.1; done
purl="http://127.0.0.1:$(cat "$SCRATCH/proxy.port")"
log="$SCRATCH/proxy.port.log"

python3 - "$SCRATCH/flags.json" <<'PY'
import json, sys
props = {f"flag{i:02d}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(3)}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 1000, "multipleOf": 7}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
ctx="Ticket 4471: checkout returns HTTP 500 for every customer since the 14:02 deploy. Revenue is down."
dec() { "$TL_BIN" decide --server "$purl" --engine llamacpp --schema "$SCRATCH/flags.json" --context-text "$ctx" \
          --mode batch --server-timeout 3 --server-retries "${RETRIES:-3}" "$@"; }
same_values() { python3 -c 'import json, sys; a, b = (json.load(open(f))["values"] for f in sys.argv[1:3]); assert a == b, (sys.argv[3], a, b)' "$@"; }
dec >"$SCRATCH/clean.json"
python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["values"]; assert v["sevens"] % 7 == 0, v' "$SCRATCH/clean.json"

for fault in 500 503-ra 429 429-ra timeout truncate malformed drop slow; do
  echo "/completion $fault 1" >"$plan"
  dec >"$SCRATCH/f.json" 2>"$SCRATCH/err" || { echo "a single '$fault' should be retried: $(cat "$SCRATCH/err")"; exit 1; }
  same_values "$SCRATCH/clean.json" "$SCRATCH/f.json" "$fault"
  grep -q "^/completion $fault\$" "$log" || { echo "fault $fault was not injected"; exit 1; }
done
for fault in 500 truncate wrongshape; do
  echo "/completion $fault -1" >"$plan"
  if RETRIES=1 dec >"$SCRATCH/f.json" 2>"$SCRATCH/err"; then
    echo "a persistent '$fault' must fail, not answer: $(cat "$SCRATCH/f.json")"; exit 1; fi
  [ ! -s "$SCRATCH/f.json" ] || { echo "$fault: values printed despite the failure"; exit 1; }
  grep -q "llamacpp" "$SCRATCH/err" && grep -q "/completion" "$SCRATCH/err" ||
    { echo "$fault: the error should name the engine and /completion: $(cat "$SCRATCH/err")"; exit 1; }
  grep -q "flag00" "$SCRATCH/err" || { echo "$fault: the error should name the fields: $(cat "$SCRATCH/err")"; exit 1; }
done

# Restarted mid-decision: one request is held while the server goes away; the
# proxy answers 502 until it is back, and the retries carry the decision on.
echo "/completion slow 1" >"$plan"
RETRIES=8 dec >"$SCRATCH/f.json" 2>"$SCRATCH/err" &
client=$!
for _ in $(seq 1 100); do grep -q "^/completion slow" "$log" && break; sleep 0.05; done
stop_llama "$LPID"
sleep 2
start_llama "$m" "$LPORT"
wait "$client" || { echo "the decision should survive a restart: $(cat "$SCRATCH/err")"; exit 1; }
same_values "$SCRATCH/clean.json" "$SCRATCH/f.json" restart
grep -q "upstream-down" "$log" || { echo "the restart was not seen by the client's requests"; exit 1; }
: >"$plan"
echo "test_llamacpp_faults: ok"
