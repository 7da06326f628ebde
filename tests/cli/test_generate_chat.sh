#!/usr/bin/env bash
# test_generate_chat.sh: `typellm generate --messages` starts from the
# conversation rendered with the model's own chat template: its prompt ids
# (--json) equal `typellm template`'s output tokenized with special tokens
# (plus BOS where the tokenizer adds one and the template did not write it)
# on Qwen3's template, Llama 3's (which writes bos_token itself) and Phi-3's;
# --chat-template FILE.jinja and NAME override it; a GGUF without a template
# reads the plain transcript; --var reaches the template; a raising template
# exits 1 with its own message; misuse is a usage error (2).
set -euo pipefail
M="$TL_FIXTURES/models"
TPL="$TL_FIXTURES/templates"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/conv.json" <<'EOF'
[{"role":"system","content":"You answer in one word."},
 {"role":"user","content":"Hi, I am Ana. Ünïcode ✓"},
 {"role":"assistant","content":"Hello Ana."},
 {"role":"user","content":"What is my name?"}]
EOF
cat > "$T/user.json" <<'EOF'
[{"role":"user","content":"Name a colour."}]
EOF

# the prompt ids generate uses
prompt_ids() { "$TL_BIN" generate -m "$1" -n 1 --temp 0 --json --messages "${@:2}" |
  python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["prompt"])))'; }
source "$TL_SRC/tests/template/chat_ids.sh"

for m in qwen3-d64-f16 llama3-d64-bf16 phi3-d64-bf16; do
  "$TL_BIN" template --model "$M/$m.gguf" --messages "$T/conv.json" --add-generation-prompt > "$T/r.txt"
  [ "$(prompt_ids "$M/$m.gguf" "$T/conv.json")" = "$(chat_expect_ids "$M/$m.gguf" "$T/r.txt")" ] ||
    fail "$m: generate's prompt is not the template's rendering"
done
# Llama 3's template writes <|begin_of_text|> itself: one BOS, not two
ids=$(prompt_ids "$M/llama3-d64-bf16.gguf" "$T/user.json")
[ "${ids%% *}" = 128000 ] && [ "$(echo "$ids" | tr ' ' '\n' | grep -c '^128000$')" = 1 ] || fail "llama3 BOS: $ids"

# --var reaches the template: Qwen3 with thinking off is case d's rendering
python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["cases"]["d"]["messages"], open(sys.argv[2], "w"))' \
  "$TPL/cases.json" "$T/d.json"
[ "$(prompt_ids "$M/qwen3-d64-f16.gguf" "$T/d.json" --var enable_thinking=false)" = \
  "$(chat_expect_ids "$M/qwen3-d64-f16.gguf" "$TPL/expected/Qwen-Qwen3-0.6B.d.txt")" ] || fail "qwen3 --var enable_thinking=false"

# --chat-template FILE.jinja: Llama 3.1's template on the qwen3 model
"$TL_BIN" template --template "$TPL/meta-llama-Llama-3.1-8B-Instruct.jinja" --messages "$T/conv.json" \
  --add-generation-prompt > "$T/r.txt"
[ "$(prompt_ids "$M/qwen3-d64-f16.gguf" "$T/conv.json" --chat-template "$TPL/meta-llama-Llama-3.1-8B-Instruct.jinja")" = \
  "$(chat_expect_ids "$M/qwen3-d64-f16.gguf" "$T/r.txt")" ] || fail "--chat-template FILE.jinja"

# --chat-template NAME: the built-in ChatML framing, system opening the first user turn
printf '<|im_start|>user\nYou answer in one word.\n\nHi, I am Ana. Ünïcode ✓<|im_end|>\n<|im_start|>assistant\nHello Ana.<|im_end|>\n<|im_start|>user\nWhat is my name?<|im_end|>\n<|im_start|>assistant\n' > "$T/r.txt"
[ "$(prompt_ids "$M/qwen3-d64-f16.gguf" "$T/conv.json" --chat-template chatml)" = \
  "$(chat_expect_ids "$M/qwen3-d64-f16.gguf" "$T/r.txt")" ] || fail "--chat-template chatml"

# no template in the GGUF: the plain transcript, BOS from the tokenizer
printf 'User: You answer in one word.\n\nHi, I am Ana. Ünïcode ✓\n\nAssistant: Hello Ana.\n\nUser: What is my name?\n\nAssistant:' > "$T/r.txt"
[ "$(prompt_ids "$M/llama-spm-d64-f32.gguf" "$T/conv.json")" = "$("$TL_BIN" tokenize -m "$M/llama-spm-d64-f32.gguf" -f "$T/r.txt" --bos | xargs)" ] ||
  fail "plain transcript without a template"

# generation runs: greedy text is deterministic
a=$("$TL_BIN" generate -m "$M/qwen3-d64-f16.gguf" --messages "$T/conv.json" -n 6 --temp 0 2>/dev/null)
b=$("$TL_BIN" generate -m "$M/qwen3-d64-f16.gguf" --messages "$T/conv.json" -n 6 --temp 0 2>/dev/null)
[ "$a" = "$b" ] || fail "greedy chat generation differs between runs"

# errors: the template's own message (Gemma 2 refuses a system role), an unknown family, usage
set +e
"$TL_BIN" generate -m "$M/gemma2-spm-d64-f32.gguf" --messages "$T/conv.json" -n 2 2> "$T/err"
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "System role not supported" "$T/err" || fail "raising template: rc $rc $(cat "$T/err")"
set +e
"$TL_BIN" generate -m "$M/qwen3-d64-f16.gguf" --messages "$T/conv.json" --chat-template nosuch 2> "$T/err"
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "unknown chat template 'nosuch'" "$T/err" || fail "unknown family: rc $rc $(cat "$T/err")"
for args in "-p hi --messages $T/conv.json" "-p hi --chat-template chatml" "--messages $T/conv.json --var x"; do
  set +e
  # shellcheck disable=SC2086
  "$TL_BIN" generate -m "$M/qwen3-d64-f16.gguf" $args 2> "$T/err" > /dev/null
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "usage error expected for '$args': rc $rc $(cat "$T/err")"
done
echo "test_generate_chat: ok"
