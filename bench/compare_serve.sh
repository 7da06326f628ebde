#!/usr/bin/env bash
# compare_serve.sh: typellm serve against llama.cpp's llama-server under load,
# on the same GGUF and thread count, both on 127.0.0.1 (see bench/README.md).
#
#   bench/compare_serve.sh [--quick] [--threads 2] [--clients "1 8 32"] [--weights Q8_0]
#                          [--typellm-args "..."] [--llama-args "..."]
#
# Workload (bench/compare_serve.py make): decisions over distinct 500-1,500-token
# contexts sharing a 300-token instruction prefix, one 4-way choice each, fixed
# before any server answers. For each client count N both servers start fresh
# (typellm serve; llama-server --parallel N --kv-unified, one slot per client),
# N clients work through the same first D decisions of the list, and one line is
# printed:
#   compare_serve: clients=N typellm=X/s llama-server=Y/s ratio=Z p99_typellm=..s p99_llama=..s
# with the details (p50, tokens computed, peak RSS, errors) beside it. Full run:
# D = 24 / 64 / 128 decisions at 1 / 8 / 32 clients; --quick: 3 / 8 / 32 (one round per client).
# TL_BIN picks the typellm binary (default: build-bench/typellm, built here).
# typellm serve gets --timeout 7200 (llama-server has no request deadline; the
# driver waits 2 h), so a loaded machine's slow requests count as slow, not lost.
# Exits 1 when either side had an error.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
threads=2 clients="1 8 32" weights=Q8_0 quick=0 tl_args="" ll_args=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --threads) threads=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --weights) weights=$2; shift 2 ;;
        --typellm-args) tl_args=$2; shift 2 ;;
        --llama-args) ll_args=$2; shift 2 ;;
        *) echo "usage: $0 [--quick] [--threads N] [--clients \"1 8 32\"] [--weights Q8_0] [--typellm-args ARGS] [--llama-args ARGS]" >&2; exit 2 ;;
    esac
done
out=$root/bench/out
mkdir -p "$out"
llama=$root/../shared/peers/llama.cpp/llama-server
[ -x "$llama" ] || { echo "compare_serve: no llama-server at $llama" >&2; exit 1; }

tl=${TL_BIN:-}
if [ -z "$tl" ]; then
    echo "== build" >&2
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build-bench -j2 --target typellm >/dev/null
    tl=$root/build-bench/typellm
fi

source bench/lib_model.sh
model=$(bench_qwen2_model "$tl" "$weights" "$threads")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
wait_health() { # URL PID LOG
    for _ in $(seq 1 1200); do
        curl -sf "$1/health" >/dev/null 2>&1 && return 0
        kill -0 "$2" 2>/dev/null || { echo "compare_serve: server died at start:" >&2; tail -20 "$3" >&2; exit 1; }
        sleep 0.1
    done
    echo "compare_serve: server at $1 not healthy after 120 s" >&2; exit 1
}
start_typellm() {
    local port; port=$(free_port)
    "$tl" serve --model "$model" --host 127.0.0.1 --port "$port" --threads "$threads" --max-queue 1024 --timeout 7200 $tl_args \
        >"$out/serve-typellm.log" 2>&1 &
    srv_pid=$!; pids+=("$srv_pid"); srv_url=http://127.0.0.1:$port
    wait_health "$srv_url" "$srv_pid" "$out/serve-typellm.log"
}
start_llama() { # N
    local port; port=$(free_port)
    "$llama" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" --parallel "$1" --kv-unified \
        -c $(( $1 * 2048 > 8192 ? $1 * 2048 : 8192 )) $ll_args >"$out/serve-llama.log" 2>&1 &
    srv_pid=$!; pids+=("$srv_pid"); srv_url=http://127.0.0.1:$port
    wait_health "$srv_url" "$srv_pid" "$out/serve-llama.log"
}
stop() { kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; }

if [ "$quick" = 1 ]; then count() { case $1 in 1) echo 3 ;; *) echo "$1" ;; esac; }
else count() { case $1 in 1) echo 24 ;; 8) echo 64 ;; *) echo $(( $1 * 4 )) ;; esac; }
fi
max=0; for n in $clients; do c=$(count "$n"); [ "$c" -gt "$max" ] && max=$c; done
workload=$out/serve-workload-$max.json
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
flags="AVX2: $(grep -q ' avx2' /proc/cpuinfo && echo yes || echo no), AVX-512: $(grep -q avx512f /proc/cpuinfo && echo yes || echo no), AMX: $(grep -q amx_int8 /proc/cpuinfo && echo yes || echo no)"
echo "== $cpu ($flags), $(nproc) cores, --threads $threads, $weights, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results=$out/serve-$(date +%Y%m%d-%H%M%S).jsonl
: >"$results"
fail=0
for n in $clients; do
    d=$(count "$n")
    start_typellm
    [ -f "$workload" ] || { echo "== make the workload ($max decisions)" >&2; python3 bench/compare_serve.py make --url "$srv_url" --out "$workload" --decisions "$max"; }
    echo "== typellm, $n clients, $d decisions" >&2
    a=$(python3 bench/compare_serve.py run --side typellm --url "$srv_url" --workload "$workload" --clients "$n" --limit "$d" --pid "$srv_pid")
    stop
    start_llama "$n"
    echo "== llama-server --parallel $n, $n clients, $d decisions" >&2
    b=$(python3 bench/compare_serve.py run --side llama --url "$srv_url" --workload "$workload" --clients "$n" --limit "$d" --pid "$srv_pid")
    stop
    echo "$a" >>"$results"; echo "$b" >>"$results"
    python3 - "$a" "$b" <<'PY' || fail=1
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
r = a["decisions_s"] / b["decisions_s"] if b["decisions_s"] else 0
print(f"compare_serve: clients={a['clients']} typellm={a['decisions_s']:.3f}/s llama-server={b['decisions_s']:.3f}/s "
      f"ratio={r:.2f} p99_typellm={a['p99_s']:.2f}s p99_llama={b['p99_s']:.2f}s"
      f"  (p50 {a['p50_s']:.2f}/{b['p50_s']:.2f}s, tokens computed {a['tokens_computed']}/{b['tokens_computed']}, "
      f"peak RSS {a['peak_rss_mb']:.0f}/{b['peak_rss_mb']:.0f} MB, errors {a['errors']}/{b['errors']})")
for x in (a, b):
    if x["errors"]:
        print(f"compare_serve: {x['side']}: {x['errors']} errors, first: {x.get('first_error')}", file=sys.stderr)
sys.exit(1 if a["errors"] or b["errors"] else 0)
PY
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $results" >&2
exit $fail
