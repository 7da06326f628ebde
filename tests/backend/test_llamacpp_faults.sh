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
source "$TL_SRC/tests/backend/fault_lib.sh"
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_llama "$m"
start_proxy "$LPORT"

python3 - "$SCRATCH/flags.json" <<'PY'
import json, sys
props = {f"flag{i:02d}": {"type": "boolean", "description": f"Does the ticket mention topic {i}?"} for i in range(3)}
props["sevens"] = {"type": "integer", "minimum": 0, "maximum": 1000, "multipleOf": 7}
json.dump({"type": "object", "properties": props}, open(sys.argv[1], "w"))
PY
ctx="Ticket 4471: checkout returns HTTP 500 for every customer since the 14:02 deploy. Revenue is down."
dec() { "$TL_BIN" decide --server "$purl" --engine llamacpp --schema "$SCRATCH/flags.json" --context-text "$ctx" \
          --mode batch --server-timeout 3 --server-retries "${RETRIES:-3}" "$@"; }
dec >"$SCRATCH/clean.json"
python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["values"]; assert v["sevens"] % 7 == 0, v' "$SCRATCH/clean.json"

fault_suite /completion llamacpp

# Restarted mid-decision (fault_lib.sh): killed, then started again on its port.
llama_down() { stop_llama "$LPID"; }
llama_up() { start_llama "$m" "$LPORT"; }
restart_suite /completion llamacpp llama_down llama_up
echo "test_llamacpp_faults: ok"
