#!/usr/bin/env bash
# bench_bandwidth.sh: decode against the memory-bandwidth limit (see bench/README.md).
#
#   bench/bench_bandwidth.sh [--threads N] [--types "Q8_0 Q4_K_M"] [--decode 128] [--mb 512]
#
# Builds bench/bench_triad.c (-O3 -march=native) and runs it with one thread
# and with --threads (default: all cores): STREAM's triad and a read-only sum,
# best of 10. Then `typellm bench` decodes --decode tokens on the
# Qwen2.5-0.5B-shaped models (bench/compare_llamacpp.sh makes them; the F32
# one is made here when missing) with --bandwidth set to the all-threads
# triad, printing the bytes read per token and decode's share of the triad.
# TL_BIN picks the typellm binary (default: build-bench/typellm, built here).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
threads=$(nproc) types="Q8_0 Q4_K_M" decode=128 mb=512
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads=$2; shift 2 ;;
        --types) types=$2; shift 2 ;;
        --decode) decode=$2; shift 2 ;;
        --mb) mb=$2; shift 2 ;;
        *) echo "usage: $0 [--threads N] [--types \"Q8_0 Q4_K_M\"] [--decode 128] [--mb 512]" >&2; exit 2 ;;
    esac
done
out=$root/bench/out
mkdir -p "$out" build-bench
tl=${TL_BIN:-}
if [ -z "$tl" ]; then
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build-bench -j2 --target typellm >/dev/null
    tl=$root/build-bench/typellm
fi
cc -std=gnu11 -O3 -march=native -Wall -Wextra -Werror -pthread bench/bench_triad.c -o build-bench/bench_triad
echo "== $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
build-bench/bench_triad 1 "$mb" 10 | tee "$out/triad-1.jsonl"
build-bench/bench_triad "$threads" "$mb" 10 | tee "$out/triad-$threads.jsonl"
bw=$(python3 -c 'import json,sys; print(next(json.loads(l)["gb_s"] for l in open(sys.argv[1]) if "triad" in l))' "$out/triad-$threads.jsonl")
source bench/lib_model.sh
for t in $types; do
    m=$(bench_qwen2_model "$tl" "$t" "$threads")
    "$tl" bench --model "$m" -p 0 -n "$decode" --threads "$threads" --bandwidth "$bw" --json
done
