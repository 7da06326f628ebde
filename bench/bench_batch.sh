#!/usr/bin/env bash
# bench_batch.sh: records/s of `typellm batch` over N tickets, against
#   - typellm one record at a time: `typellm batch --parallel 1` (the same
#     process and prefix cache, no cross-record batching), and
#   - llama.cpp per record, its best way (../shared/tools/peer_decide.mjs: the
#     record's context prefilled once, each flag's tail evaluated after it and
#     erased); its own timer (model load excluded), summed over the records.
# The record kind (--kind):
#   flags    the sixteen-flag schema (examples/flags/schema.json, --mode batch):
#            classification only, a record is one prefill of its context and
#            the flags' tails (compute-bound: merging records saves little);
#   extract  examples/tickets/extract.schema.json: a pattern string, a
#            16-character code, integers and a number generated token by
#            token (decode-heavy: the records' decode steps merge into one
#            batched step that reads the weights once, which is memory-bound).
# Runs alternate (typellm batch, one by one, llama.cpp) --runs times; prints
# each run, the ratios, and whether the two typellm outputs are identical
# (values and probabilities, bit for bit). llama.cpp runs for --kind flags
# only (peer_decide.mjs scores flags) and needs node-llama-cpp in bench/node_modules
# (bench/compare_llamacpp.sh installs it, or: (cd bench && npm install --no-save node-llama-cpp@3.22.1)).
#   bench/bench_batch.sh [--kind flags|extract] [--model M.gguf] [--records 200] [--peer-records 40]
#                        [--parallel 16] [--threads 2] [--runs 2]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
model=../shared/fixtures/models/qwen2-d64-q8_0.gguf records=200 peer_records=40 parallel=16 threads=2 runs=2 kind=flags
bin=build/typellm
while [ $# -gt 0 ]; do
    case "$1" in
        --kind) kind=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        --records) records=$2; shift 2 ;;
        --peer-records) peer_records=$2; shift 2 ;;
        --parallel) parallel=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: $0 [--kind flags|extract] [--model M] [--records N] [--peer-records N] [--parallel P] [--threads T] [--runs R]" >&2
           exit 2 ;;
    esac
done
case "$kind" in
    flags) S=examples/flags/schema.json; mode=(--mode batch); what="16 flags" ;;
    extract) S=examples/tickets/extract.schema.json; mode=(); what="6 extracted fields (generated)" ;;
    *) echo "$0: --kind: '$kind' is not flags or extract" >&2; exit 2 ;;
esac
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 examples/tickets/make_tickets.py "$records" > "$scratch/in.jsonl"
have_peer=0
if [ "$kind" = flags ] && [ -d bench/node_modules/node-llama-cpp ]; then
    have_peer=1
    cp ../shared/tools/peer_decide.mjs "$scratch/"
    ln -s "$root/bench/node_modules" "$scratch/node_modules"
    python3 - "$scratch" "$peer_records" <<'PY'
import json, sys
for i, l in enumerate(open(f"{sys.argv[1]}/in.jsonl")):
    if i >= int(sys.argv[2]): break
    open(f"{sys.argv[1]}/ctx{i}.txt", "w").write(json.loads(l)["context"])
PY
fi
rate() { python3 -c "print(round($1 / $2, 2))"; }
# same A B: the two outputs' values and probabilities agree bit for bit.
same() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
ok = len(a) == len(b) and all(x.get("values") == y.get("values") and x.get("fields") and
        all(x["fields"][k].get("probability") == y["fields"][k].get("probability") and
            x["fields"][k].get("probabilities") == y["fields"][k].get("probabilities") for k in x["fields"])
        for x, y in zip(a, b))
print("identical" if ok else "DIFFERENT")
PY
}
echo "model $(basename "$model"), $records records x $what, $threads threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$runs"); do
    t0=$(date +%s.%N)
    "$bin" batch -m "$model" -t "$threads" --schema "$S" "${mode[@]}" -i "$scratch/in.jsonl" -o "$scratch/b.jsonl" \
        --parallel "$parallel" --overwrite --no-progress 2>/dev/null
    tb=$(python3 -c "print($(date +%s.%N) - $t0)")
    t0=$(date +%s.%N)
    "$bin" batch -m "$model" -t "$threads" --schema "$S" "${mode[@]}" -i "$scratch/in.jsonl" -o "$scratch/o.jsonl" \
        --parallel 1 --overwrite --no-progress 2>/dev/null
    to=$(python3 -c "print($(date +%s.%N) - $t0)")
    line="run $r: batch --parallel $parallel $(rate "$records" "$tb") rec/s; one by one $(rate "$records" "$to") rec/s"
    line="$line (x$(python3 -c "print(round($to / $tb, 2))"), $(same "$scratch/b.jsonl" "$scratch/o.jsonl"))"
    if [ $have_peer = 1 ]; then
        tl=0
        for i in $(seq 0 $((peer_records - 1))); do
            s=$(node "$scratch/peer_decide.mjs" "$root/$model" "$scratch/ctx$i.txt" "$threads" erase 2>/dev/null |
                grep '^{' | python3 -c "import json,sys; print(json.load(sys.stdin)['total_s'])")
            tl=$(python3 -c "print($tl + $s)")
        done
        line="$line; llama.cpp per record $(rate "$peer_records" "$tl") rec/s (batch x$(python3 -c "print(round(($records / $tb) / ($peer_records / $tl), 2))"))"
    fi
    echo "$line"
done
