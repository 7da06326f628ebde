#!/usr/bin/env bash
# load_run.sh [SECONDS] [MODEL]: load test of `typellm serve`: starts the
# server on a free loopback port, runs bench/load_mixed.lua under wrk with
# 1, 8 and 32 concurrent clients (SECONDS each, default 60 for 32 clients and
# SECONDS/4 for the others), prints throughput and p50/p90/p99 latency per
# run and fails if any request got a non-200 reply or the server crashed.
# TL_BIN (default build/typellm), TL_FIXTURES (default ../shared/fixtures);
# THREADS (engine threads, default 2); SCRIPT (default bench/load_mixed.lua;
# bench/load_openai.lua mixes /v1/decisions, /v1/chat/completions and
# /v1/systemone) and CLIENTS (default "1 8 32"; the last count runs SECONDS).
# The server's RSS is printed before and after. While the last count runs, a
# scraper reads GET /metrics every 0.2 s over one keep-alive connection (as
# Prometheus does): its median, p90 and max are printed, and a median of 1 ms
# or more fails the run. Run it alone: it uses the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
bin=${TL_BIN:-build/typellm}
"$bin" serve --help >/dev/null 2>&1 || { echo "$bin has no working serve command (build it, or set TL_BIN)"; exit 1; }
fix=${TL_FIXTURES:-../shared/fixtures}
model=${2:-$fix/models/qwen2-d64-q8_0.gguf}
out=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$out"' EXIT
"$bin" serve --model "$model" --port 0 --threads "${THREADS:-2}" --quiet --max-queue 256 >"$out/serve.out" 2>"$out/serve.err" &
pid=$!
for _ in $(seq 1 300); do grep -q listening "$out/serve.out" 2>/dev/null && break; kill -0 "$pid" 2>/dev/null || { cat "$out/serve.err"; exit 1; }; sleep 0.1; done
port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$out/serve.out")
url="http://127.0.0.1:$port"
script=${SCRIPT:-bench/load_mixed.lua}
clients=${CLIENTS:-1 8 32}
last=${clients##* }
model_id=$(curl -s "$url/v1/models" | sed -n 's/.*"data":\[{"id":"\([^"]*\)".*/\1/p')
rss() { awk '/^VmRSS/ {print $2 " kB"}' "/proc/$pid/status"; }
echo "server RSS before: $(rss)"
short=$(( secs / 4 > 5 ? secs / 4 : 5 ))
fail=0
for c in $clients; do
  d=$([ "$c" = "$last" ] && echo "$secs" || echo "$short")
  t=$(( c < 4 ? c : 4 ))
  if [ "$c" = "$last" ]; then # /metrics while the heaviest load runs
    python3 - "$port" "$d" >"$out/metrics_times" <<'PY' &
import http.client, sys, time
time.sleep(1)
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
end = time.time() + float(sys.argv[2]) - 2
t = []
while time.time() < end:
    t0 = time.perf_counter()
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    t.append((time.perf_counter() - t0) * 1e3)
    time.sleep(0.2)
t.sort()
print(f"n={len(t)} median_ms={t[len(t) // 2]:.3f} p90_ms={t[int(len(t) * 0.9)]:.3f} max_ms={t[-1]:.3f}")
PY
    mpid=$!
  fi
  line=$(wrk -t"$t" -c"$c" -d"${d}s" --timeout 30s -s "$script" "$url" -- "$model_id" | grep '^LOAD')
  echo "clients=$c seconds=$d $line"
  echo "$line" | grep -q 'non200=0 socket_errors=0 timeouts=0' || fail=1
done
wait "$mpid" || { echo "the /metrics scraper failed"; fail=1; }
mline=$(cat "$out/metrics_times")
echo "GET /metrics under $last clients: $mline"
echo "$mline" | awk '{split($2, m, "="); exit !(m[2] < 1)}' || { echo "/metrics median is 1 ms or more"; fail=1; }
kill -0 "$pid" || { echo "server crashed"; cat "$out/serve.err"; exit 1; }
echo "server RSS after: $(rss)"
kill -TERM "$pid"; wait "$pid" || { echo "server did not shut down cleanly"; exit 1; }
[ "$fail" = 0 ] || { echo "load test: errors"; exit 1; }
echo "load test: ok"
