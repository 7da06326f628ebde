#!/usr/bin/env bash
# bench_debias.sh: what label-order debiasing and calibration cost (docs/decide.md,
# Corrected distributions). One 4-value field over the ~1,100-token support
# thread ../shared/fixtures/ref/ticket-1100.ctx, decided plain, with K = 4
# cyclic orders (x-debias permute) and with contextual calibration
# (x-calibrate content-free), each in a fresh process (cold prefix cache, so
# each pays the context once), the variants alternated run by run on the
# Qwen2.5-0.5B-shaped Q8_0 model of compare_llamacpp.sh (or --model). The
# orders share everything before the choices line, so they add only their
# tails (the choices line, the turn close) to the one context pass.
#   bench/bench_debias.sh [--model M.gguf] [--threads 2] [--runs 3] [--bin build/typellm]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=bench/out/qwen2-0.5b-Q8_0.gguf
THREADS=2
RUNS=3
BIN=build/typellm
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    *) echo "bench_debias: unknown option $1" >&2; exit 2 ;;
  esac
done
CTX=../shared/fixtures/ref/ticket-1100.ctx
[ -f "$MODEL" ] || { echo "bench_debias: no model at $MODEL (run bench/compare_llamacpp.sh, or pass --model)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
field='"type": "string", "enum": ["billing", "shipping", "product", "account"], "question": "What is the thread mainly about?"'
printf '{"properties": {"topic": {%s}}}\n' "$field" > "$OUT/single.json"
printf '{"properties": {"topic": {%s, "x-debias": {"method": "permute", "orders": 4}}}}\n' "$field" > "$OUT/permute4.json"
printf '{"properties": {"topic": {%s, "x-calibrate": "content-free"}}}\n' "$field" > "$OUT/calibrate.json"
grep -m1 'model name' /proc/cpuinfo || true
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-10s %4s %10s %10s %8s %8s %8s %7s\n" variant run total_ms score_ms prompt cached computed cpu_s
for run in $(seq 1 "$RUNS"); do
  for v in single permute4 calibrate; do
    /usr/bin/time -f "%U %S" -o "$OUT/time" "$BIN" decide --model "$MODEL" --schema "$OUT/$v.json" \
      --context "$CTX" --threads "$THREADS" > "$OUT/res.json"
    python3 - "$OUT/res.json" "$OUT/time" "$v" "$run" <<'PY' | tee -a "$OUT/rows"
import json, sys
r = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
t, us = r["timing_ms"], r["usage"]
print("%-10s %4s %10.0f %10.0f %8d %8d %8d %7.1f" % (sys.argv[3], sys.argv[4], t["total"], t["score"],
      us["prompt_tokens"], us["cached_tokens"], us["computed_tokens"], u + s))
PY
  done
done
python3 - "$OUT/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = lambda v, c: statistics.median(float(r[c]) for r in rows if r[0] == v)
for v in ("permute4", "calibrate"):
    print("%-10s / single: score time %.2fx (range %.2f-%.2f), computed tokens %.3fx, cpu %.2fx" % (
        v, med(v, 3) / med("single", 3),
        min(float(r[3]) for r in rows if r[0] == v) / max(float(r[3]) for r in rows if r[0] == "single"),
        max(float(r[3]) for r in rows if r[0] == v) / min(float(r[3]) for r in rows if r[0] == "single"),
        med(v, 6) / med("single", 6), med(v, 7) / med("single", 7)))
PY
