#!/usr/bin/env bash
# test_batch_crash.sh: `typellm batch` killed with SIGKILL at 20 random
# moments, rerun after each kill, ends with exactly the output of an
# uninterrupted run: the same lines in the same order (timing_ms and the
# cache-dependent usage aside), none lost, duplicated or torn. Then a
# SIGINT: the job finishes its records in flight, says how to resume, and
# the rerun completes it.
set -euo pipefail
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
EX="$TL_SRC/examples"
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$EX/tickets/make_tickets.py" 250 > "$T/in.jsonl"
echo '{"id": "broken", "context": ' >> "$T/in.jsonl" # an error line is resumed like any other
# exec: $! must be typellm itself, not a subshell (killing that would orphan the job)
run() { exec "$TL_BIN" batch -m "$M" -t 2 --no-progress --schema "$EX/ticket/schema.json" -i "$T/in.jsonl" --parallel 8 "$@"; }
strip() { python3 -c "
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); d.pop('timing_ms', None); d.pop('usage', None); print(json.dumps(d, sort_keys=True))" "$1"; }

(run -o "$T/ref.jsonl" 2> /dev/null)
strip "$T/ref.jsonl" > "$T/ref.txt"
[ "$(wc -l < "$T/ref.txt")" -eq 251 ] || fail "reference has $(wc -l < "$T/ref.txt") lines"

# The moments: a few while the model loads, the rest once the output has
# grown by a random 1..15 lines (the machine's speed varies too much for a
# clock: the kill must land mid-job).
lines() { if [ -f "$T/out.jsonl" ]; then wc -l < "$T/out.jsonl"; else echo 0; fi; }
kills=0
for i in $(seq 1 20); do
  start=$(lines)
  grow=$(python3 -c "import random; print(0 if $i % 5 == 1 else random.randint(1, 15))")
  (run -o "$T/out.jsonl" 2> /dev/null) &
  pid=$!
  if [ "$grow" -eq 0 ]; then
    sleep 0.0$((RANDOM % 9 + 1))
  else
    for _ in $(seq 1 3000); do [ "$(lines)" -ge $((start + grow)) ] && break; sleep 0.005; done
  fi
  if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null || true
  pid=
  echo "kill $i: $(lines) lines"
done
[ "$kills" -ge 15 ] || fail "only $kills of 20 runs were still running when killed"
(run -o "$T/out.jsonl" 2> "$T/log")
strip "$T/out.jsonl" > "$T/out.txt"
cmp -s "$T/ref.txt" "$T/out.txt" || { diff "$T/ref.txt" "$T/out.txt" | head -5; fail "resumed output differs"; }

# SIGINT: finishes in flight, says how to resume; the rerun completes.
head -80 "$T/in.jsonl" > "$T/in80.jsonl"
head -80 "$T/ref.txt" > "$T/ref80.txt"
(exec "$TL_BIN" batch -m "$M" -t 2 --no-progress --schema "$EX/ticket/schema.json" -i "$T/in80.jsonl" \
   -o "$T/int.jsonl" --parallel 8 2> "$T/int.log") &
pid=$!
for _ in $(seq 1 2000); do [ -s "$T/int.jsonl" ] && break; sleep 0.005; done
kill -INT "$pid"
set +e; wait "$pid"; rc=$?; set -e
pid=
if [ "$rc" -eq 130 ]; then
  grep -q "rerun the same command to resume" "$T/int.log" || fail "no resume hint: $(cat "$T/int.log")"
  [ "$(wc -l < "$T/int.jsonl")" -lt 80 ] || fail "interrupted job wrote every line"
else
  [ "$rc" -eq 0 ] || fail "SIGINT: rc $rc: $(cat "$T/int.log")"
fi
"$TL_BIN" batch -m "$M" -t 2 --no-progress --schema "$EX/ticket/schema.json" -i "$T/in80.jsonl" \
  -o "$T/int.jsonl" --parallel 8 2> /dev/null
strip "$T/int.jsonl" > "$T/int.txt"
cmp -s "$T/ref80.txt" "$T/int.txt" || fail "output after SIGINT + resume differs"
echo "test_batch_crash: ok ($kills kills, SIGINT rc $rc)"
