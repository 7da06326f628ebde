# fault_lib.sh: the remote fault classes, for any engine behind
# tests/backend/fault_proxy.py. The caller defines dec (a decision over the
# proxy, honouring $RETRIES), sets plan and log (the proxy's files) and has a
# clean run's result in $SCRATCH/clean.json.
same_values() {
  python3 -c 'import json, sys; a, b = (json.load(open(f))["values"] for f in sys.argv[1:3]); assert a == b, (sys.argv[3], a, b)' "$@"
}
# fault_suite ENDPOINT ENGINE: one of each transient fault is retried to the
# clean values; persistent ones fail naming the engine, the endpoint and the
# undecided field flag0*, with no values printed.
fault_suite() {
  local ep=$1 engine=$2 fault
  for fault in 500 503-ra 429 429-ra timeout truncate malformed drop slow; do
    echo "$ep $fault 1" >"$plan"
    dec >"$SCRATCH/f.json" 2>"$SCRATCH/err" || { echo "$engine: a single '$fault' should be retried: $(cat "$SCRATCH/err")"; exit 1; }
    same_values "$SCRATCH/clean.json" "$SCRATCH/f.json" "$engine $fault"
    grep -q "^$ep $fault\$" "$log" || { echo "$engine: fault $fault was not injected"; exit 1; }
  done
  for fault in 500 truncate wrongshape; do
    echo "$ep $fault -1" >"$plan"
    if RETRIES=1 dec >"$SCRATCH/f.json" 2>"$SCRATCH/err"; then
      echo "$engine: a persistent '$fault' must fail, not answer: $(cat "$SCRATCH/f.json")"; exit 1; fi
    [ ! -s "$SCRATCH/f.json" ] || { echo "$engine $fault: values printed despite the failure"; exit 1; }
    grep -q "$engine" "$SCRATCH/err" && grep -q "$ep" "$SCRATCH/err" ||
      { echo "$engine $fault: the error should name the engine and $ep: $(cat "$SCRATCH/err")"; exit 1; }
    grep -q "flag0" "$SCRATCH/err" || { echo "$engine $fault: the error should name the fields: $(cat "$SCRATCH/err")"; exit 1; }
  done
  : >"$plan"
}

# restart_suite ENDPOINT ENGINE DOWN UP: a server restarted mid-decision.
# One request to ENDPOINT is held (slow) while the function DOWN takes the
# server away; the proxy answers 502 ("upstream-down") until the function UP
# has it back on the same port (its cache lost), and the retries carry the
# decision on to the clean run's values.
restart_suite() {
  local ep=$1 engine=$2 down=$3 up=$4 client
  echo "$ep slow 1" >"$plan"
  RETRIES=8 dec >"$SCRATCH/f.json" 2>"$SCRATCH/err" &
  client=$!
  for _ in $(seq 1 100); do grep -q "^$ep slow" "$log" && break; sleep 0.05; done
  "$down"
  sleep 2
  "$up"
  wait "$client" || { echo "$engine: the decision should survive a restart: $(cat "$SCRATCH/err")"; exit 1; }
  same_values "$SCRATCH/clean.json" "$SCRATCH/f.json" "$engine restart"
  grep -q "upstream-down" "$log" || { echo "$engine: the restart was not seen by the client's requests"; exit 1; }
  : >"$plan"
}

# start_proxy UPSTREAM_PORT: sets purl, plan, log.
start_proxy() {
  plan="$SCRATCH/plan"; : >"$plan"
  python3 "$TL_SRC/tests/backend/fault_proxy.py" "$1" "$plan" "$SCRATCH/proxy.port" &
  SERVERS+=("$!")
  for _ in $(seq 1 100); do [ -s "$SCRATCH/proxy.port" ] && break; sleep 0.1; done
  purl="http://127.0.0.1:$(cat "$SCRATCH/proxy.port")"
  log="$SCRATCH/proxy.port.log"
}
