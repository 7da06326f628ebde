#!/usr/bin/env bash
# test_batch_route.sh: `typellm batch` over several `typellm serve` on
# loopback routes records by their prompt's prefix (src/decide/batch_route.h):
#  1. two groups of records (each group's contexts open with its own long
#     instruction), interleaved, over two servers: every request of a group
#     reaches one server, the groups different ones (told apart in the
#     servers' request logs by their prompt lengths: group A's prompts are
#     under 1600 tokens, group B's over), and every line equals the embedded
#     `typellm batch -m` line (values identical, probabilities within 1e-12);
#  2. three groups over three servers, one killed (SIGKILL) while the job
#     runs: every record still completes, no error line, the same lines;
#  3. every server unreachable: exit 1 naming it ("every server is out"),
#     nothing written; the same command with a live server then completes.
source "$TL_SRC/tests/server/serve_lib.sh"
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
S="$TL_SRC/examples/tickets/triage.schema.json"
# make_input N GROUPS OUT: N records, record i of group i % GROUPS.
make_input() {
  python3 - "$TL_SRC/examples/tickets.jsonl" "$1" "$2" "$3" <<'PY'
import json, sys
src = [json.loads(l) for l in open(sys.argv[1])]
n, groups, out = int(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4], "w")
heads = [None,  # group A: the tickets' own Acme instruction (about 200 bytes)
         "Beta Logistics operations desk. Every message below comes from a warehouse partner; classify it. " * 6,
         "Gamma Retail help line: the note below was left by a shopper in one of our stores; sort it out. " * 3]
for i in range(n):
    rec = src[i % len(src)]
    g = i % groups
    ctx = rec["context"] if g == 0 else heads[g] + "\n\n" + rec["context"].split("\n\n", 1)[1]
    out.write(json.dumps({"id": "r%d" % i, "context": ctx}) + "\n")
PY
}
same_as_local() { python3 "$TL_SRC/tests/server/batch_lines_equal.py" "$1" "$2"; }
# prompts LOG: the prompt lengths of the /generate requests a server answered.
prompts() { sed -n 's/.*POST \/generate 200 prompt=\([0-9]*\) .*/\1/p' "$1"; }

start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d1"
P1=$PORT; PID1=$SERVER_PID; LOG1=$SERVER_LOG
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d2"
P2=$PORT; PID2=$SERVER_PID; LOG2=$SERVER_LOG

# 1. two groups, two servers
make_input 48 2 "$SCRATCH/two.jsonl"
timeout 120 "$TL_BIN" batch --server "http://127.0.0.1:$P1" --server "http://127.0.0.1:$P2" --tokenizer "$M" \
  --server-retries 0 --schema "$S" -i "$SCRATCH/two.jsonl" -o "$SCRATCH/two.remote.jsonl" --parallel 4 --no-progress
timeout 120 "$TL_BIN" batch -m "$M" -t 2 --schema "$S" -i "$SCRATCH/two.jsonl" -o "$SCRATCH/two.local.jsonl" \
  --no-progress 2> /dev/null
same_as_local "$SCRATCH/two.remote.jsonl" "$SCRATCH/two.local.jsonl"
a1=$(prompts "$LOG1" | awk '$1 < 1600' | wc -l); b1=$(prompts "$LOG1" | awk '$1 >= 1600' | wc -l)
a2=$(prompts "$LOG2" | awk '$1 < 1600' | wc -l); b2=$(prompts "$LOG2" | awk '$1 >= 1600' | wc -l)
echo "server 1: $a1 group A / $b1 group B requests; server 2: $a2 / $b2"
[ $((a1 + a2)) -eq 24 ] && [ $((b1 + b2)) -eq 24 ] || { echo "FAIL: expected 24 requests per group"; exit 1; }
if ! { [ "$a1" -eq 24 ] && [ "$b2" -eq 24 ]; } && ! { [ "$a2" -eq 24 ] && [ "$b1" -eq 24 ]; }; then
  echo "FAIL: a group's records were split over the servers"; exit 1
fi

# 2. three groups, three servers, one killed mid-job
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d3"
P3=$PORT; PID3=$SERVER_PID; LOG3=$SERVER_LOG
make_input 480 3 "$SCRATCH/three.jsonl"
timeout 300 "$TL_BIN" batch --server "http://127.0.0.1:$P1" --server "http://127.0.0.1:$P2" \
  --server "http://127.0.0.1:$P3" --tokenizer "$M" --server-retries 0 --schema "$S" -i "$SCRATCH/three.jsonl" \
  -o "$SCRATCH/three.remote.jsonl" --parallel 6 --no-progress 2> "$SCRATCH/three.log" &
BATCH=$!
for _ in $(seq 1 600); do
  [ "$(grep -c 'POST /generate' "$LOG3" || true)" -ge 2 ] && break
  sleep 0.02
done
kill -0 "$BATCH" 2>/dev/null || { echo "FAIL: the job ended before the kill"; cat "$SCRATCH/three.log"; exit 1; }
kill -9 "$PID3"
wait "$PID3" 2>/dev/null || true
rc=0; wait "$BATCH" || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: batch exited $rc"; cat "$SCRATCH/three.log"; exit 1; }
n3=$(grep -c 'POST /generate' "$LOG3" || true)
timeout 300 "$TL_BIN" batch -m "$M" -t 2 --schema "$S" -i "$SCRATCH/three.jsonl" -o "$SCRATCH/three.local.jsonl" \
  --no-progress 2> /dev/null
same_as_local "$SCRATCH/three.remote.jsonl" "$SCRATCH/three.local.jsonl"
[ "$n3" -lt 160 ] || { echo "FAIL: the killed server answered $n3 requests"; exit 1; }
# 3. no server left
head -6 "$SCRATCH/two.jsonl" > "$SCRATCH/six.jsonl"
rc=0
timeout 60 "$TL_BIN" batch --server http://127.0.0.1:1 --server http://127.0.0.1:2 --tokenizer "$M" --server-retries 0 \
  --schema "$S" -i "$SCRATCH/six.jsonl" -o "$SCRATCH/six.jsonl.out" --no-progress 2> "$SCRATCH/six.log" || rc=$?
[ "$rc" -eq 1 ] && grep -q "every server is out" "$SCRATCH/six.log" ||
  { echo "FAIL: all servers down: exit $rc"; cat "$SCRATCH/six.log"; exit 1; }
[ ! -s "$SCRATCH/six.jsonl.out" ] || { echo "FAIL: lines written with no server"; exit 1; }
timeout 60 "$TL_BIN" batch --server "http://127.0.0.1:$P1" --tokenizer "$M" --server-retries 0 --schema "$S" \
  -i "$SCRATCH/six.jsonl" -o "$SCRATCH/six.jsonl.out" --no-progress 2> /dev/null
[ "$(grep -c '"values"' "$SCRATCH/six.jsonl.out")" -eq 6 ] || { echo "FAIL: the rerun did not complete"; exit 1; }
stop_server "$PID1"; stop_server "$PID2"
echo "test_batch_route: ok (groups kept apart: $a1/$b1 and $a2/$b2; the killed server had answered $n3 of 480)"
