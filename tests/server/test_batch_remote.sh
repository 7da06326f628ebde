#!/usr/bin/env bash
# test_batch_remote.sh: `typellm batch --server A --server B --server DEAD`:
# the records spread over two typellm servers (each gets some), the dead
# one's records are retried elsewhere (no error line), and every line equals
# the local `typellm batch -m` line for that record (values identical,
# probabilities within 1e-12).
source "$TL_SRC/tests/server/serve_lib.sh"
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
S="$TL_SRC/examples/tickets/triage.schema.json"
head -40 "$TL_SRC/examples/tickets.jsonl" > "$SCRATCH/in.jsonl"
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d1"
P1=$PORT; PID1=$SERVER_PID; LOG1=$SERVER_LOG
start_server --model "$M" --threads 1 --data-dir "$SCRATCH/d2"
P2=$PORT; PID2=$SERVER_PID; LOG2=$SERVER_LOG
"$TL_BIN" batch --server "http://127.0.0.1:$P1" --server "http://127.0.0.1:1" --server "http://127.0.0.1:$P2" \
  --tokenizer "$M" --server-retries 0 --schema "$S" -i "$SCRATCH/in.jsonl" -o "$SCRATCH/remote.jsonl" \
  --parallel 6 --no-progress 2> "$SCRATCH/batch.log"
"$TL_BIN" batch -m "$M" -t 2 --schema "$S" -i "$SCRATCH/in.jsonl" -o "$SCRATCH/local.jsonl" --no-progress 2> /dev/null
python3 "$TL_SRC/tests/server/batch_lines_equal.py" "$SCRATCH/remote.jsonl" "$SCRATCH/local.jsonl"
n1=$(grep -c "POST /generate" "$LOG1" || true); n2=$(grep -c "POST /generate" "$LOG2" || true)
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || { echo "FAIL: records not spread: $n1 / $n2 requests"; exit 1; }
stop_server "$PID1"; stop_server "$PID2"
echo "test_batch_remote: ok ($n1 / $n2 requests)"
