#!/usr/bin/env bash
# test_no_mmap.sh: a model file truncated or rewritten in place while it is
# mapped kills the process with SIGBUS on the next forward pass (see
# docs/engine.md); --no-mmap reads the weights into memory so a server keeps
# answering, and a load that finds the file shorter than its tensor table says so.
set -u
M="$TL_FIXTURES/models/stories260k-f32.gguf"
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail+1)); }

cp "$M" "$T/m.gguf"
"$TL_BIN" serve -m "$T/m.gguf" --no-mmap --port 0 --quiet -t 1 >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 300); do grep -q "listening on" "$T/out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/out")
[ -n "$PORT" ] || bad "serve --no-mmap did not start: $(cat "$T/err")"
gen() { curl -s -o "$T/reply" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"text":"Once upon a time","sampling_params":{"max_new_tokens":8,"temperature":0}}' \
        "http://127.0.0.1:$PORT/generate"; }
[ "$(gen)" = 200 ] || bad "first /generate: $(cat "$T/reply")"
truncate -s 12288 "$T/m.gguf"           # the file is cut under the running server
[ "$(gen)" = 200 ] || bad "/generate after the file was truncated: $(cat "$T/reply")"
kill -0 $pid 2>/dev/null || bad "the --no-mmap server died after the file was truncated"
kill $pid; wait $pid 2>/dev/null; pid=

# Loading a file cut inside its tensor data: an error that says the file is
# shorter than its tensor table needs.
cp "$M" "$T/cut.gguf"
truncate -s $(( $(stat -c %s "$M") - 4096 )) "$T/cut.gguf"
"$TL_BIN" generate -m "$T/cut.gguf" -p x -n 1 2>"$T/err" >/dev/null && bad "truncated model loaded"
grep -q "shorter than its tensor table" "$T/err" || bad "truncated model message: $(cat "$T/err")"
# --no-mmap gives the same bits as the mapped load.
a=$("$TL_BIN" logits -m "$M" --ids "1 2 3" --last 1 -t 1)
b=$("$TL_BIN" logits -m "$M" --ids "1 2 3" --last 1 -t 1 --no-mmap)
[ -n "$a" ] && [ "$a" = "$b" ] || bad "--no-mmap logits differ from the mapped load"

[ $fail -eq 0 ] && echo "test_no_mmap: ok"
exit $((fail > 0))
