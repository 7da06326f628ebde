#!/usr/bin/env bash
# bench_decide.sh: the sixteen-flag decision (examples/flags/schema.json) over
# the ~1,100-token support thread ../shared/fixtures/ref/ticket-1100.ctx, in
# sequential and batch mode, on the Qwen2.5-0.5B-shaped Q8_0 model that
# compare_llamacpp.sh makes (bench/out/qwen2-0.5b-Q8_0.gguf; pass another with
# --model). Each mode runs on a fresh process (cold prefix cache), so both pay
# the context once; the difference is what the blog's table shows: 16 passes
# over growing tails vs one batched step over 16 branches.
#   bench/bench_decide.sh [--model M.gguf] [--threads 2] [--runs 1] [--bin build/typellm]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=bench/out/qwen2-0.5b-Q8_0.gguf
THREADS=2
RUNS=1
BIN=build/typellm
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    *) echo "bench_decide: unknown option $1" >&2; exit 2 ;;
  esac
done
CTX=../shared/fixtures/ref/ticket-1100.ctx
[ -f "$MODEL" ] || { echo "bench_decide: no model at $MODEL (run bench/compare_llamacpp.sh, or pass --model)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
printf "%-10s %5s %10s %12s %12s %8s %8s %8s %10s\n" mode run total_ms per_decision score_ms prompt cached computed cpu_s
for mode in sequential batch; do
  for run in $(seq 1 "$RUNS"); do
    /usr/bin/time -f "%U %S" -o "$OUT/time" "$BIN" decide --model "$MODEL" --schema examples/flags/schema.json \
      --context "$CTX" --mode "$mode" --threads "$THREADS" > "$OUT/res.json"
    python3 - "$OUT/res.json" "$OUT/time" "$mode" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
t, us = r["timing_ms"], r["usage"]
n = len(r["values"])
print("%-10s %5s %10.0f %12.1f %12.0f %8d %8d %8d %10.1f" % (sys.argv[3], sys.argv[4], t["total"], t["total"] / n,
      t["score"], us["prompt_tokens"], us["cached_tokens"], us["computed_tokens"], u + s))
PY
  done
done
