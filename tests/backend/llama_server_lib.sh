# llama_server_lib.sh: sourced after tests/server/serve_lib.sh. Runs the
# project's real llama.cpp server (../shared/peers/llama.cpp/llama-server) on
# loopback for the remote-engine tests; every server started is stopped by
# serve_lib's cleanup trap.
LLAMA_SERVER="${LLAMA_SERVER:-$TL_FIXTURES/../peers/llama.cpp/llama-server}"
[ -x "$LLAMA_SERVER" ] || { echo "llama-server not found at $LLAMA_SERVER (the shared peer; see its README)"; exit 1; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_llama MODEL [PORT]: sets LPORT, LPID, LURL; waits until /health answers 200.
start_llama() {
  LPORT=${2:-$(free_port)}
  "$LLAMA_SERVER" -m "$1" --host 127.0.0.1 --port "$LPORT" -t 1 -c 4096 --parallel 1 >"$SCRATCH/llama.$LPORT.log" 2>&1 &
  LPID=$!
  SERVERS+=("$LPID")
  LURL="http://127.0.0.1:$LPORT"
  for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$LURL/health")" = 200 ] && return 0
    kill -0 "$LPID" 2>/dev/null || { echo "llama-server died at start:"; tail -20 "$SCRATCH/llama.$LPORT.log"; exit 1; }
    sleep 0.1
  done
  echo "llama-server did not become healthy"; tail -20 "$SCRATCH/llama.$LPORT.log"; exit 1
}

stop_llama() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# same_decision local.json remote.json label: the same values, probabilities
# within 1e-3, log-probabilities within 5e-3 nats or 5e-4 relative (llama.cpp's
# float kernels are not ours). NO_PROB=1: a value generated under the
# server's grammar has no probability (null), as over SGLang's regex.
same_decision() {
  python3 - "$@" <<'PY'
import json, os, sys
l, r, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
bad, worst = [], [0.0, 0.0]
def walk(a, b, path):
    if isinstance(a, dict):
        for k in a:
            if k in ("usage", "timing_ms", "trace", "model"):
                continue
            if k not in b:
                bad.append(f"{path}/{k} missing")
            else:
                walk(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            bad.append(f"{path}: {len(a)} vs {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}/{i}")
    elif b is None and os.environ.get("NO_PROB") == "1" and path.rsplit("/", 1)[-1] in ("probability", "logprob"):
        pass
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if path.endswith("/logprob") or "/logprobs/" in path:
            worst[1] = max(worst[1], abs(a - b))
            if abs(a - b) > max(5e-3, 5e-4 * abs(a)):
                bad.append(f"{path}: {a} vs {b}")
        elif path.rsplit("/", 1)[-1] in ("value", "text") or "/values/" in path:
            if a != b:
                bad.append(f"{path}: {a!r} vs {b!r}")
        else:
            worst[0] = max(worst[0], abs(a - b))
            if abs(a - b) > 1e-3:
                bad.append(f"{path}: {a} vs {b}")
    elif a != b:
        bad.append(f"{path}: {a!r} vs {b!r}")
walk(l, r, "")
if bad:
    print(f"{what}: the remote decision differs from the embedded engine's:", *bad[:10], sep="\n  ")
    sys.exit(1)
print(f"{what}: same values; max |dp| {worst[0]:.2e}, max |dlogprob| {worst[1]:.2e}")
PY
}

# in_domain result.json schema.json label: generated numbers respect minimum,
# maximum, exclusive bounds and multipleOf.
in_domain() {
  python3 - "$@" <<'PY'
import json, sys
r, s, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for k, p in s["properties"].items():
    v = r["values"].get(k)
    if p.get("type") not in ("integer", "number") or "enum" in p or v is None:
        continue
    ok = (("minimum" not in p or v >= p["minimum"]) and ("maximum" not in p or v <= p["maximum"]) and
          ("exclusiveMinimum" not in p or v > p["exclusiveMinimum"]) and
          ("exclusiveMaximum" not in p or v < p["exclusiveMaximum"]))
    m = p.get("multipleOf")
    if m is not None and abs(v / m - round(v / m)) > 1e-9:
        ok = False
    if not ok:
        sys.exit(f"{what}: {k} = {v} is outside {p}")
PY
}
