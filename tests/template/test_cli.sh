#!/usr/bin/env bash
# test_cli.sh: `typellm template` end to end: the chat template a fixture
# GGUF carries (Qwen3's) and template files render byte for byte as the
# reference renderings; a raising template exits 1 with its own message; a
# syntax error names line:column; bad options are usage errors (2).
set -euo pipefail
TPL="$TL_FIXTURES/templates"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$TPL/cases.json" "$T" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for k in ("a", "b", "c", "f", "g"):
    json.dump(c["cases"][k]["messages"], open(f"{sys.argv[2]}/{k}.json", "w"), ensure_ascii=False)
json.dump(c["extra_cases"]["h"]["messages"], open(f"{sys.argv[2]}/h.json", "w"), ensure_ascii=False)
json.dump(c["extra_cases"]["h"]["tools"], open(f"{sys.argv[2]}/tools.json", "w"), ensure_ascii=False)
PY

# the model's own template (tokenizer.chat_template of the qwen3 fixture)
"$TL_BIN" template --model "$TL_FIXTURES/models/qwen3-d64-f16.gguf" --messages "$T/a.json" \
  --add-generation-prompt --var enable_thinking=false > "$T/out"
cmp "$T/out" "$TPL/expected/Qwen-Qwen3-0.6B.d.txt" || fail "qwen3 GGUF template, case d"
"$TL_BIN" template --model "$TL_FIXTURES/models/qwen3-d64-f16.gguf" --messages "$T/c.json" \
  --add-generation-prompt > "$T/out"
cmp "$T/out" "$TPL/expected/Qwen-Qwen3-0.6B.c.txt" || fail "qwen3 GGUF template, case c"

# template files, with bos, tools and unicode
"$TL_BIN" template --template "$TPL/meta-llama-Llama-3.1-8B-Instruct.jinja" --messages "$T/f.json" \
  --add-generation-prompt --bos '<|begin_of_text|>' > "$T/out"
cmp "$T/out" "$TPL/expected/meta-llama-Llama-3.1-8B-Instruct.f.txt" || fail "llama 3.1, case f"
"$TL_BIN" template --template "$TPL/Qwen-Qwen3-0.6B.jinja" --messages "$T/h.json" --tools "$T/tools.json" \
  --add-generation-prompt > "$T/out"
cmp "$T/out" "$TPL/expected-extra/Qwen-Qwen3-0.6B.h.txt" || fail "qwen3, case h"
"$TL_BIN" template --template "$TPL/mistralai-Mistral-Nemo-Instruct-2407.jinja" --messages - --add-generation-prompt --bos '<s>' --eos '</s>' \
  < "$T/g.json" > "$T/out"
cmp "$T/out" "$TPL/expected/mistralai-Mistral-Nemo-Instruct-2407.g.txt" || fail "mistral nemo, case g from stdin"

# raise_exception: exit 1 with the template's message
set +e
"$TL_BIN" template --template "$TPL/google-gemma-2-2b-it.jinja" --messages "$T/b.json" > "$T/out" 2> "$T/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "raising template: exit $rc"
grep -q "System role not supported" "$T/err" || fail "raising template: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "raising template printed output"

# a syntax error names line:column
printf 'ok\n{%% for m in messages %%}\n{{ m.content + }}\n{%% endfor %%}' > "$T/bad.jinja"
set +e
"$TL_BIN" template --template "$T/bad.jinja" --messages "$T/a.json" 2> "$T/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "syntax error: exit $rc"
grep -q "template:3:16:" "$T/err" || fail "syntax error location: $(cat "$T/err")"

# usage errors
for args in "--messages $T/a.json" "--template $T/bad.jinja" "--template x --model y --messages $T/a.json" \
            "--template $T/bad.jinja --messages $T/a.json --var novalue" \
            "--template $T/bad.jinja --messages $T/a.json --var x={" "--frob"; do
  set +e
  # shellcheck disable=SC2086
  "$TL_BIN" template $args > /dev/null 2> "$T/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "usage error '$args': exit $rc ($(cat "$T/err"))"
done
echo "ok"
