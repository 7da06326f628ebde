#!/usr/bin/env bash
# test_messages.sh: what the commands print for people. Each check is a defect
# found trying the tool: generate's progress line wiping the streamed text on
# a terminal, score values as 0.29999999999999999, tokenize --pieces turning
# part of a UTF-8 character into U+FFFD, bench's defaults failing on a
# 512-token model, doubled prefixes ("typellm decide: decide: ..."), "read
# error" for a directory, and engine terms ("sequence 0 has ...") in messages.
set -u
M="$TL_FIXTURES/models/stories260k-f32.gguf"
Q="$TL_FIXTURES/models/qwen3-d64-f16.gguf"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail+1)); }

# generate on a terminal: stdout and stderr both the pty. The streamed text
# must arrive intact: no carriage return or erase-line sequence may follow it.
python3 - "$TL_BIN" "$M" >"$T/tty.txt" <<'PY' || bad "generate under a pty failed"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "generate", "-m", sys.argv[2], "-p", "Once upon a time", "-n", "24",
                           "--temperature", "0", "-t", "1"])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
PY
ref=$("$TL_BIN" generate -m "$M" -p "Once upon a time" -n 24 --temperature 0 -t 1 2>/dev/null)
grep -q $'\r\033\[K\|\033\[K' "$T/tty.txt" && bad "progress erase sequences on a shared terminal: $(od -c "$T/tty.txt" | head -5)"
tr -d '\r' <"$T/tty.txt" | grep -qF -- "$(head -1 <<<"$ref")" || bad "streamed text not intact on the terminal: $(cat "$T/tty.txt")"
tr -d '\r' <"$T/tty.txt" | grep -q "^prompt [0-9]* tokens .* tok/s" || bad "no summary line on its own line: $(cat "$T/tty.txt")"

# decide: reals in their shortest exact form (0.3, not 0.29999999999999999).
printf '{"type":"object","properties":{"q":{"type":"number","enum":[0.1,0.2,0.3,0.7]}}}' >"$T/s.json"
"$TL_BIN" decide -m "$M" --schema "$T/s.json" -p "quality" -t 1 >"$T/d.json" 2>"$T/err" || bad "decide: $(cat "$T/err")"
python3 - "$T/d.json" <<'PY' || bad "decide output: reals not in their shortest exact form: $(head -c 600 "$T/d.json")"
import json, sys
def shortest(text):  # Python's repr is the shortest text that reads back exactly
    v = float(text)
    assert text == repr(v), f"{text} should print as {repr(v)}"
    return v
d = json.load(open(sys.argv[1]), parse_float=shortest)
q = d["fields"]["q"]
assert d["values"]["q"] in (0.1, 0.2, 0.3, 0.7), d
assert [c["value"] for c in q["candidates"]] == [0.1, 0.2, 0.3, 0.7], q
assert abs(sum(q["probabilities"].values()) - 1) < 1e-9, q
PY

# tokenize --pieces: pieces that are part of a UTF-8 character print as their bytes.
"$TL_BIN" tokenize -m "$M" -p "🙂ü" --pieces >"$T/p.txt" || bad "tokenize --pieces"
grep -q $'\xef\xbf\xbd\|\\\\ufffd' "$T/p.txt" && bad "--pieces printed U+FFFD: $(cat "$T/p.txt")"
python3 - "$T/p.txt" <<'PY' || bad "--pieces bytes do not rebuild the text: $(cat "$T/p.txt")"
import json, sys
out = b""
for line in open(sys.argv[1], encoding="utf-8"):
    _, piece = line.rstrip("\n").split("\t")
    v = json.loads(piece)
    out += bytes(v) if isinstance(v, list) else v.encode("utf-8")
assert out.lstrip(b" ") == "🙂ü".encode("utf-8"), out
assert any(line.split("\t")[1].startswith("[") for line in open(sys.argv[1], encoding="utf-8")), "no partial piece"
PY

# bench: the defaults (-p 512) fit a 512-token model.
"$TL_BIN" bench -m "$M" -n 4 -t 1 --json >"$T/b.json" 2>"$T/err" || bad "bench defaults on a 512-token model: $(cat "$T/err")"
grep -q '"prefill_tokens":512' "$T/b.json" || bad "bench: $(cat "$T/b.json")"
"$TL_BIN" bench -m "$M" -p 513 -n 0 -t 1 2>"$T/err" >/dev/null && bad "bench -p 513 on a 512-token model should fail"
grep -q "does not fit the context length 512" "$T/err" || bad "bench -p 513: $(cat "$T/err")"

# messages: no doubled prefix, directories named as such, no engine terms.
"$TL_BIN" decide -m "$M" --schema "$T/s.json" -p x --style bogus 2>"$T/err" >/dev/null
grep -q "typellm decide: decide:" "$T/err" && bad "doubled prefix: $(cat "$T/err")"
grep -q "typellm decide: unknown style 'bogus'" "$T/err" || bad "style error: $(cat "$T/err")"
"$TL_BIN" quantize "$M" "$T/x.gguf" Q9_9 2>"$T/err"
grep -q "quantize: quantize:" "$T/err" && bad "doubled prefix: $(cat "$T/err")"
mkdir "$T/dir"
"$TL_BIN" generate -m "$M" -f "$T/dir" 2>"$T/err" >/dev/null
grep -q "is a directory" "$T/err" && ! grep -q "read error" "$T/err" || bad "directory as prompt file: $(cat "$T/err")"
"$TL_BIN" generate -m "$T/dir" -p x 2>"$T/err" >/dev/null
grep -q "is a directory" "$T/err" || bad "directory as model: $(cat "$T/err")"
"$TL_BIN" logits -m "$M" --ids "$(seq 1 600 | awk '{printf "%d ", $1 % 500}')" 2>"$T/err" >/dev/null
grep -q "sequence" "$T/err" && bad "engine term in a message: $(cat "$T/err")"
grep -q "the input has 600 tokens, more than the context length 512" "$T/err" || bad "context message: $(cat "$T/err")"

[ $fail -eq 0 ] && echo "test_messages: ok"
exit $((fail > 0))
