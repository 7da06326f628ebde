#!/usr/bin/env bash
# batch_rss.sh: `typellm batch` over a LINES-line JSONL (default 1,000,000)
# keeps its resident memory flat: the file is streamed, the reorder window is
# bounded, and the prefix cache has its budget (--cache-mb). Every EVERY-th
# line is a real ticket decided by the model; the others are cheap records
# that take the whole input path without the model (no context member, bad
# JSON, a record over --max-record-bytes), so a million lines finish in
# minutes on a small machine. Samples VmRSS every second and prints the
# samples' range after the first 10% of the output and over the whole run,
# then checks the output has one line per record and a rerun resumes at once.
#   bench/batch_rss.sh [--lines 1000000] [--every 1000] [--model M.gguf] [--threads 2]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=1000000 every=1000 model=../shared/fixtures/models/llama-spm-d64-f32.gguf threads=2 bin=build/typellm
while [ $# -gt 0 ]; do
    case "$1" in
        --lines) lines=$2; shift 2 ;;
        --every) every=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        *) echo "usage: $0 [--lines N] [--every K] [--model M] [--threads T]" >&2; exit 2 ;;
    esac
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 - "$scratch/in.jsonl" "$lines" "$every" <<'PY'
import json, sys
tickets = [json.loads(l)["context"] for l in open("examples/tickets.jsonl")]
n, every = int(sys.argv[2]), int(sys.argv[3])
with open(sys.argv[1], "w") as f:
    for i in range(n):
        k = i % 3
        if i % every == 0:
            f.write(json.dumps({"id": i, "context": tickets[(i // every) % len(tickets)]}) + "\n")
        elif k == 0:
            f.write('{"id": %d, "text": "no context member"}\n' % i)
        elif k == 1:
            f.write('{"id": %d, "context": \n' % i)
        else:
            f.write('{"id": %d, "context": "%s"}\n' % (i, "x" * 2000))
PY
echo "input: $lines lines, $(du -h "$scratch/in.jsonl" | cut -f1); one in $every decided"
t0=$(date +%s.%N)
"$bin" batch -m "$model" -t "$threads" --schema examples/ticket/schema.json -i "$scratch/in.jsonl" \
    -o "$scratch/out.jsonl" --max-record-bytes 1024 --cache-mb 32 --parallel 16 --no-progress 2>"$scratch/log" &
pid=$!
: > "$scratch/rss"
while kill -0 "$pid" 2>/dev/null; do
    r=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || true)
    n=$( [ -f "$scratch/out.jsonl" ] && wc -l < "$scratch/out.jsonl" || echo 0)
    [ -n "$r" ] && echo "$n $r" >> "$scratch/rss"
    sleep 1
done
wait "$pid"
el=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
python3 - "$scratch/rss" "$lines" "$el" <<'PY'
import sys
s = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
n, el = int(sys.argv[2]), sys.argv[3]
late = [r for done, r in s if done >= n // 10]
at = lambda f: max((r for done, r in s if done <= f * n), default=0)
print(f"{n} lines in {el} s; RSS over the run: {min(r for _, r in s)}-{max(r for _, r in s)} kB "
      f"({len(s)} samples); after the first 10%: {min(late) if late else '-'}-{max(late) if late else '-'} kB; "
      f"peak by 25/50/75/100% of the output: {at(.25)} / {at(.5)} / {at(.75)} / {at(1)} kB")
PY
[ "$(wc -l < "$scratch/out.jsonl")" -eq "$lines" ] || { echo "FAIL: $(wc -l < "$scratch/out.jsonl") output lines"; exit 1; }
t0=$(date +%s.%N)
"$bin" batch -m "$model" -t "$threads" --schema examples/ticket/schema.json -i "$scratch/in.jsonl" \
    -o "$scratch/out.jsonl" --max-record-bytes 1024 --cache-mb 32 --parallel 16 --no-progress 2>"$scratch/log2"
echo "rerun (all resumed): $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s: $(tail -1 "$scratch/log2")"
tail -1 "$scratch/log"
