# serve_lib.sh: sourced by the server's shell tests. start_server ARGS...
# runs `typellm serve --port 0 ARGS` in the background, waits for its
# "listening on http://HOST:PORT" line and sets PORT, SERVER_PID, SERVER_LOG.
# stop_server sends SIGTERM and checks the server exits 0 (clean shutdown).
set -euo pipefail
: "${TL_BIN:?TL_BIN must point at the typellm binary}"
: "${TL_FIXTURES:?TL_FIXTURES must point at the shared fixtures}"
: "${TL_SRC:?TL_SRC must point at the repository root}"
SCRATCH=$(mktemp -d)
SERVERS=()
cleanup() {
  for p in "${SERVERS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

start_server() {
  local out="$SCRATCH/serve.$RANDOM.out"
  SERVER_LOG="$out.log"
  "$TL_BIN" serve --port 0 "$@" >"$out" 2>"$SERVER_LOG" &
  SERVER_PID=$!
  SERVERS+=("$SERVER_PID")
  for _ in $(seq 1 600); do
    if grep -q "listening on" "$out" 2>/dev/null; then break; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "server died at start:"; cat "$SERVER_LOG"; exit 1
    fi
    sleep 0.1
  done
  PORT=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$out")
  [ -n "$PORT" ] || { echo "no port line"; cat "$out" "$SERVER_LOG"; exit 1; }
}

stop_server() {
  local pid=$1
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  if [ "$rc" != 0 ]; then echo "server $pid exited $rc after SIGTERM"; return 1; fi
}
