#!/usr/bin/env bash
# test_quantize_cli.sh: `typellm quantize` end to end: converts a fixture
# model, checks the output is a GGUF v3 file of the expected size class, and
# that bad usage and bad input give clear errors with the right exit codes.
set -u
fail=0
check() { if ! eval "$1"; then echo "FAILED: $1" >&2; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
in="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"

"$TL_BIN" quantize "$in" "$tmp/q8.gguf" Q8_0 --threads 2 2>"$tmp/err"; rc=$?
check '[ $rc -eq 0 ]'
check 'grep -q "Q8_0 x" "$tmp/err"'
check '[ "$(head -c 4 "$tmp/q8.gguf")" = "GGUF" ]'
# version 3, little-endian u32 after the magic
check '[ "$(od -An -tu4 -j4 -N4 "$tmp/q8.gguf" | tr -d " ")" = "3" ]'
# Q8_0 is 34/128 of F32 for the weights: the file shrinks to well under half
in_size=$(stat -c %s "$in"); out_size=$(stat -c %s "$tmp/q8.gguf")
check '[ $((out_size * 2)) -lt $in_size ]'

"$TL_BIN" quantize "$in" "$tmp/x.gguf" Q9_9 2>"$tmp/err"; rc=$?
check '[ $rc -eq 2 ]'
check 'grep -q "unknown type .Q9_9." "$tmp/err"'
check '[ ! -e "$tmp/x.gguf" ]'

"$TL_BIN" quantize "$in" "$tmp/x.gguf" 2>/dev/null; rc=$?
check '[ $rc -eq 2 ]'
"$TL_BIN" quantize "$in" "$tmp/x.gguf" Q8_0 --threads zero 2>/dev/null; rc=$?
check '[ $rc -eq 2 ]'

"$TL_BIN" quantize "$tmp/missing.gguf" "$tmp/x.gguf" Q8_0 2>"$tmp/err"; rc=$?
check '[ $rc -eq 1 ]'
check 'grep -q "missing.gguf" "$tmp/err"'

head -c 1000 "$in" > "$tmp/truncated.gguf"
"$TL_BIN" quantize "$tmp/truncated.gguf" "$tmp/x.gguf" Q8_0 2>"$tmp/err"; rc=$?
check '[ $rc -eq 1 ]'
check 'grep -q "offset" "$tmp/err"'
check '[ ! -e "$tmp/x.gguf" ]'

# IN = OUT, directly or through a symbolic link: refused, the input untouched
# (it used to be truncated to its header and the process died with SIGBUS).
cp "$in" "$tmp/a.gguf"
ln -s a.gguf "$tmp/link.gguf"
for out in "$tmp/a.gguf" "$tmp/link.gguf" "$tmp/./a.gguf"; do
  "$TL_BIN" quantize "$tmp/a.gguf" "$out" Q8_0 2>"$tmp/err"; rc=$?
  check '[ $rc -eq 2 ]'
  check 'grep -q "are the same file" "$tmp/err"'
  check 'cmp -s "$in" "$tmp/a.gguf"'
done

# OUT a link to another file: that file is replaced, the link kept.
cp "$tmp/q8.gguf" "$tmp/target.gguf"
ln -s target.gguf "$tmp/out-link.gguf"
"$TL_BIN" quantize "$in" "$tmp/out-link.gguf" Q4_0 2>/dev/null; rc=$?
check '[ $rc -eq 0 ]'
check '[ -L "$tmp/out-link.gguf" ]'
check '! cmp -s "$tmp/q8.gguf" "$tmp/target.gguf"'
check '"$TL_BIN" inspect "$tmp/target.gguf" | grep -q Q4_0'

# SIGKILL while OUT is being written: the good model that was at OUT survives
# byte for byte (it used to become a partial, invalid file). Kill as soon as
# the write has visibly started: a temporary file beside OUT, or OUT changed.
cp "$tmp/q8.gguf" "$tmp/good.gguf"
cp "$tmp/q8.gguf" "$tmp/keep.gguf"
"$TL_BIN" quantize "$TL_FIXTURES/models/llama3-d64-bf16.gguf" "$tmp/good.gguf" Q4_K --threads 1 2>/dev/null &
pid=$!
started=0
for _ in $(seq 1 2000); do
  if ls "$tmp"/.good.gguf.* >/dev/null 2>&1 || ! cmp -s "$tmp/good.gguf" "$tmp/keep.gguf"; then started=1; break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null; rc=$?
if [ $rc -eq 137 ]; then
  check '[ $started -eq 1 ]'
  check 'cmp -s "$tmp/good.gguf" "$tmp/keep.gguf"'
else # it finished before the kill: then OUT is the whole new model
  check '"$TL_BIN" inspect "$tmp/good.gguf" | grep -q Q4_K'
fi
exit $fail
