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
exit $fail
