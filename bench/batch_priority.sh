#!/usr/bin/env bash
# batch_priority.sh: latency of interactive /v1/decisions requests on
# `typellm serve` alone and while a large /v1/batches job runs (its lines at
# TL_PRIORITY_BATCH). Prints p50 / p99 / max of N sequential interactive
# requests in each case and the batch's progress meanwhile.
#   bench/batch_priority.sh [--model M.gguf] [--requests 60] [--batch-lines 3000] [--threads 2]
set -euo pipefail
cd "$(dirname "$0")/.."
model=../shared/fixtures/models/qwen2-d64-q8_0.gguf requests=60 lines=3000 threads=2 bin=build/typellm
while [ $# -gt 0 ]; do
    case "$1" in
        --model) model=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;;
        --batch-lines) lines=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        *) echo "usage: $0 [--model M] [--requests N] [--batch-lines L] [--threads T]" >&2; exit 2 ;;
    esac
done
scratch=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$scratch"' EXIT
"$bin" serve -m "$model" --port 0 -t "$threads" --data-dir "$scratch/data" --quiet > "$scratch/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$scratch/out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$scratch/out")
python3 - "http://127.0.0.1:$port" "$requests" "$lines" <<'PY'
import json, sys, time, urllib.request, uuid
base, n, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def call(path, body=None, data=None, headers=None, method=None):
    req = urllib.request.Request(base + path, data=data if data is not None else
                                 (json.dumps(body).encode() if body is not None else None),
                                 headers=headers or {"Content-Type": "application/json"}, method=method)
    return json.load(urllib.request.urlopen(req))
model = call("/v1/models")["data"][0]["id"]
def body(i):
    return {"model": model, "input": f"Ticket {i}: I was charged twice for order {1000 + i}, please refund",
            "questions": [{"type": "predicate", "name": "billing", "instructions": "Is this ticket about billing?"},
                          {"type": "choice", "name": "tone", "instructions": "What is the tone?",
                           "choices": [{"value": "calm"}, {"value": "angry"}]}]}
def latencies(tag):
    t = []
    for i in range(n):
        t0 = time.perf_counter()
        call("/v1/decisions", body(100000 + i))
        t.append(1000 * (time.perf_counter() - t0))
    t.sort()
    q = lambda p: t[min(len(t) - 1, int(p * len(t)))]
    print(f"{tag}: {n} interactive /v1/decisions: p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {t[-1]:.1f} ms")
latencies("alone")
text = "".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/decisions", "body": body(i)}) + "\n"
               for i in range(lines))
b = uuid.uuid4().hex
form = (f"--{b}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{b}\r\n"
        f"Content-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n").encode() + text.encode() + \
       f"\r\n--{b}--\r\n".encode()
f = call("/v1/files", data=form, headers={"Content-Type": f"multipart/form-data; boundary={b}"})
bt = call("/v1/batches", {"input_file_id": f["id"], "endpoint": "/v1/decisions", "completion_window": "24h"})
while call(f"/v1/batches/{bt['id']}")["request_counts"]["completed"] < 20:
    time.sleep(0.1)
c0 = call(f"/v1/batches/{bt['id']}")["request_counts"]["completed"]
t0 = time.time()
latencies(f"with a {lines}-line batch running")
c1 = call(f"/v1/batches/{bt['id']}")["request_counts"]["completed"]
print(f"batch meanwhile: {c1 - c0} lines in {time.time() - t0:.1f} s ({(c1 - c0) / (time.time() - t0):.1f} lines/s)")
call(f"/v1/batches/{bt['id']}/cancel", {})
PY
