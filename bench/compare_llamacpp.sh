#!/usr/bin/env bash
# compare_llamacpp.sh: typellm's engine side by side with llama.cpp on the
# same CPU, same model files, same thread count (see bench/README.md).
#
#   bench/compare_llamacpp.sh [--threads 2] [--prefill 512] [--decode 128] [--types "Q8_0 F16 Q4_K_M"]
#                             [--shape qwen2|qwen3moe] [--runs 3]
#
# --runs N: the whole alternation N times; the table shows medians.
#
# --shape qwen3moe: a Qwen3-MoE-shaped random model instead (Qwen3-30B-A3B's
# ratios scaled to 1.8 B parameters: 20 layers, dim 1024, 16 heads of 128,
# 2 KV heads, 64 experts of 384 with 8 active, tied 151669-token vocabulary;
# about 0.44 B parameters active per token), made as F16.
#
# Steps: build typellm (build-bench/, the default RelWithDebInfo = -O2); make the Qwen2.5-0.5B-shaped
# random model with ../shared/tools/mkmodel.py (reused if present); quantize
# it with `typellm quantize`; install node-llama-cpp@3.22.1 into bench/
# (git-ignored node_modules); time `typellm bench` and llama.cpp on each file;
# print a table with the ratios. Scratch files go to bench/out/ (git-ignored).
# The machine is shared: run it when there is something worth measuring.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
threads=2 prefill=512 decode=128 types="Q8_0 F16 Q4_K_M" shape=qwen2 runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads=$2; shift 2 ;;
        --prefill) prefill=$2; shift 2 ;;
        --decode) decode=$2; shift 2 ;;
        --types) types=$2; shift 2 ;;
        --shape) shape=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "usage: $0 [--threads N] [--prefill P] [--decode D] [--types \"Q8_0 F16 Q4_K_M\"] [--shape qwen2|qwen3moe] [--runs R]" >&2; exit 2 ;;
    esac
done
out=$root/bench/out
mkdir -p "$out"

echo "== build" >&2
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-bench -j2 --target typellm >/dev/null
tl=$root/build-bench/typellm

if [ "$shape" = qwen3moe ]; then
    name=qwen3moe-1.8b title="Qwen3-MoE-shaped model (1.8 B total, 0.44 B active: 8 of 64 experts)"
    f32=$out/bench-qwen3moe-1.8b-f16.gguf
    [ -f "$f32" ] || /usr/bin/python3 ../shared/tools/mkmodel.py --vocab ../shared/fixtures/vocab/ggml-vocab-qwen3.gguf \
        --arch qwen3moe --dim 1024 --layers 20 --heads 16 --kv-heads 2 --head-dim 128 --ff 3072 --experts 64 \
        --experts-used 8 --expert-ff 384 --tied --rope-base 1000000 --seed 31 --f16 --out "$f32"
else
name=qwen2-0.5b title="Qwen2.5-0.5B-shaped model"
f32=$out/bench-qwen2-0.5b-f32.gguf
[ -f "$f32" ] || [ ! -f /tmp/bench-qwen2-0.5b-f32.gguf ] || f32=/tmp/bench-qwen2-0.5b-f32.gguf
if [ ! -f "$f32" ]; then
    echo "== make the Qwen2.5-0.5B-shaped model" >&2
    /usr/bin/python3 ../shared/tools/mkmodel.py --vocab ../shared/fixtures/vocab/ggml-vocab-qwen3.gguf \
        --arch qwen2 --dim 896 --layers 24 --heads 14 --kv-heads 2 --ff 4864 --tied \
        --rope-base 1000000 --seed 21 --out "$f32"
fi
fi
for t in $types; do
    m=$out/$name-$t.gguf
    [ -f "$m" ] || { echo "== quantize $t" >&2; "$tl" quantize "$f32" "$m" "$t" --threads "$threads"; }
done

if [ ! -d bench/node_modules/node-llama-cpp ]; then
    echo "== npm install node-llama-cpp@3.22.1" >&2
    (cd bench && npm install --no-save --no-audit --no-fund node-llama-cpp@3.22.1 >/dev/null)
fi

results=$out/compare-$(date +%Y%m%d-%H%M%S).jsonl
: >"$results"
echo "== $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), AMX: $(grep -q amx_int8 /proc/cpuinfo && echo yes || echo no), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$runs"); do
    for t in $types; do
        m=$out/$name-$t.gguf
        echo "== run $r: typellm bench $t" >&2
        "$tl" bench --model "$m" -p "$prefill" -n "$decode" --threads "$threads" --json |
            sed "s|^{|{\"side\":\"typellm\",\"weights\":\"$t\",|" >>"$results"
        echo "== run $r: llama.cpp $t" >&2
        node bench/compare_llamacpp.mjs --threads "$threads" --prefill "$prefill" --decode "$decode" "$m" |
            sed "s|^{|{\"side\":\"llama.cpp\",\"weights\":\"$t\",|" >>"$results"
    done
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# table: pick prefill/decode tok/s from each side (typellm bench's keys may be
# pp_tok_s/tg_tok_s or prefill_tok_s/decode_tok_s)
python3 - "$results" "$prefill" "$threads" "$title" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
def pick(d, *keys):
    for k in keys:
        if k in d and isinstance(d[k], (int, float)): return float(d[k])
    for k, v in d.items():  # nested {"pp": {"tok_s": ..}} shapes
        if isinstance(v, dict):
            r = pick(v, *keys)
            if r is not None: return r
    return None
n_runs = max(sum(1 for r in rows if r["side"] == "typellm" and r["weights"] == rows[0]["weights"]), 1)
print(f"\n{sys.argv[4]}, {sys.argv[3]} threads, prefill {sys.argv[2]} tokens, medians of {n_runs} runs\n")
print("| weights | typellm prefill tok/s | llama.cpp prefill tok/s | ratio | typellm decode tok/s | llama.cpp decode tok/s | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
import statistics
def med(t, side, *keys):
    v = [pick(r, *keys) for r in rows if r["weights"] == t and r["side"] == side]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
for t in dict.fromkeys(r["weights"] for r in rows):
    ap, bp = med(t, "typellm", "prefill_tok_s", "pp_tok_s"), med(t, "llama.cpp", "prefill_tok_s")
    ad, bd = med(t, "typellm", "decode_tok_s", "tg_tok_s"), med(t, "llama.cpp", "decode_tok_s")
    f = lambda x: f"{x:.1f}" if x else "?"
    ratio = lambda x, y: f"{x / y:.2f}x" if x and y else "?"
    print(f"| {t} | {f(ap)} | {f(bp)} | {ratio(ap, bp)} | {f(ad)} | {f(bd)} | {ratio(ad, bd)} |")
print(f"\nraw results: {sys.argv[1]}")
EOF
