#!/usr/bin/env bash
# compare_decide.sh: the sixteen-flag decision (examples/flags/schema.json over
# ../shared/fixtures/ref/ticket-1100.ctx) with `typellm decide --mode batch`
# against llama.cpp doing the same work its best way
# (../shared/tools/peer_decide.mjs: the context prefilled once, each question's
# tail evaluated after it, the two labels' logits read, the tail erased).
# Both run as a fresh process per run (cold cache, model load not timed by
# either), alternating, on the same model file and thread count; prints each
# run (with the CPU share the hypervisor stole meanwhile) and the medians.
# Needs node-llama-cpp in bench/node_modules (run compare_llamacpp.sh once)
# and the model it makes.
#   bench/compare_decide.sh [--model bench/out/qwen2-0.5b-Q8_0.gguf] [--threads 2] [--runs 3] [--bin build/typellm]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
model=bench/out/qwen2-0.5b-Q8_0.gguf threads=2 runs=3 bin=build/typellm
while [ $# -gt 0 ]; do
    case "$1" in
        --model) model=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: $0 [--model M] [--threads N] [--runs R] [--bin typellm]" >&2; exit 2 ;;
    esac
done
ctx=../shared/fixtures/ref/ticket-1100.ctx
[ -f "$model" ] || { echo "compare_decide: no model at $model (run bench/compare_llamacpp.sh first)" >&2; exit 1; }
[ -d bench/node_modules/node-llama-cpp ] || { echo "compare_decide: node-llama-cpp missing (run bench/compare_llamacpp.sh first)" >&2; exit 1; }
# ES modules resolve packages next to the script: run a copy from a scratch dir
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp ../shared/tools/peer_decide.mjs "$scratch/"
ln -s "$root/bench/node_modules" "$scratch/node_modules"
out=$root/bench/out
mkdir -p "$out"
results=$out/decide-$(date +%Y%m%d-%H%M%S).jsonl
: >"$results"
# The share of this machine's CPU time the hypervisor took ("steal", /proc/stat)
# while a run ran: on shared virtual machines it moves from 0 to 50% and more,
# and says how far a run's figures are from what the machine can do.
cpu_line() { head -1 /proc/stat; }
steal_pct() { # steal % between two "cpu ..." lines of /proc/stat
    python3 -c 'import sys
a = [int(x) for x in sys.argv[1].split()[1:9]]; b = [int(x) for x in sys.argv[2].split()[1:9]]
d = [y - x for x, y in zip(a, b)]
print(round(100 * d[7] / max(1, sum(d)), 1))' "$1" "$2"
}
for r in $(seq 1 "$runs"); do
    c0=$(cpu_line)
    "$bin" decide --model "$model" --schema examples/flags/schema.json --context "$ctx" --mode batch \
        --threads "$threads" >"$scratch/tl.json"
    st=$(steal_pct "$c0" "$(cpu_line)")
    python3 - "$scratch/tl.json" "$r" "$st" >>"$results" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"side": "typellm", "run": int(sys.argv[2]), "total_s": d["timing_ms"]["total"] / 1000,
                  "computed_tokens": d["usage"]["computed_tokens"], "steal_pct": float(sys.argv[3])}))
PY
    c0=$(cpu_line)
    node "$scratch/peer_decide.mjs" "$root/$model" "$root/$ctx" "$threads" erase 2>/dev/null | grep '^{' >"$scratch/ll.json" || true
    st=$(steal_pct "$c0" "$(cpu_line)")
    [ -s "$scratch/ll.json" ] || { echo "compare_decide: peer_decide.mjs printed no result (run it by hand to see why)" >&2; exit 1; }
    sed "s|^{|{\"side\":\"llama.cpp\",\"run\":$r,\"steal_pct\":$st,|" "$scratch/ll.json" >>"$results"
done
python3 - "$results" "$threads" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    print(f"run {r['run']} {r['side']:9s} {r['total_s']:7.2f} s  {r['computed_tokens']} tokens computed"
          f"  (steal {r.get('steal_pct', 0):.1f}%)")
med = {s: statistics.median(r["total_s"] for r in rows if r["side"] == s) for s in ("typellm", "llama.cpp")}
print(f"\nmedian of {len(rows)//2}, {sys.argv[2]} threads: typellm {med['typellm']:.2f} s, llama.cpp {med['llama.cpp']:.2f} s, "
      f"llama.cpp / typellm = {med['llama.cpp'] / med['typellm']:.2f}x")
print(f"raw results: {sys.argv[1]}")
PY
