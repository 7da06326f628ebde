#!/usr/bin/env bash
# test_openai_chat_template.sh: chat completions render with the model's own
# chat template. `typellm serve` on the qwen3 fixture (Qwen3's template) and on
# the template-less llama fixture with --chat-template Gemma 2's file; OpenAI's
# JS SDK (chat_template_check.mjs) checks each completion's prompt against
# `typellm template` + `typellm tokenize --special` for conversations with a
# system prompt, several turns, Unicode and empty content, with
# chat_template_kwargs (enable_thinking=false), and that the template's own
# refusal (Gemma 2: no system role) is a 400 with its message.
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/template/chat_ids.sh"
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
sdk_install openai || exit 0
M="$TL_FIXTURES/models"
GEMMA="$TL_FIXTURES/templates/google-gemma-2-2b-it.jinja"
T="$SCRATCH"

cat > "$T/convs.json" <<'JSON'
{"one": [{"role": "user", "content": "Name a colour."}],
 "system": [{"role": "system", "content": "You are terse. Answer in one word, always, whatever the question is."},
            {"role": "user", "content": "Ünïcode ✓ 你好 — what is this?"}],
 "turns": [{"role": "user", "content": "Hi, I am Ana."}, {"role": "assistant", "content": "Hello Ana."},
           {"role": "user", "content": ""}, {"role": "assistant", "content": "Yes?"},
           {"role": "user", "content": "What is my name?"}],
 "parts": [{"role": "developer", "content": "Be brief."},
           {"role": "user", "content": [{"type": "text", "text": "first part"}, {"type": "text", "text": "second"}]}]}
JSON
# plan MODEL [TEMPLATE] NAME[:KWARGS]... : the conversations with their expected ids
plan() {
  local model=$1 tpl=$2; shift 2
  local src=(--model "$model")
  [ -z "$tpl" ] || src=(--template "$tpl" --bos "<s>" --eos "</s>")
  echo '{"cases": ['
  for spec in "$@"; do
    local name=${spec%%:*} kw=""
    [ "$name" = "$spec" ] || kw=${spec#*:}
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))[sys.argv[2]]
# the server sends content parts as one string and a developer message as system
for x in m:
    if isinstance(x["content"], list): x["content"] = "\n".join(p["text"] for p in x["content"])
    if x["role"] == "developer": x["role"] = "system"
json.dump(m, open(sys.argv[3], "w"), ensure_ascii=False)' "$T/convs.json" "$name" "$T/m.json"
    "$TL_BIN" template "${src[@]}" --messages "$T/m.json" --add-generation-prompt ${kw:+--var "$kw"} > "$T/r.txt"
    local ids
    ids=$(chat_expect_ids "$model" "$T/r.txt")
    python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[2], "messages": json.load(open(sys.argv[1]))[sys.argv[2]],
      "kwargs": dict([(sys.argv[4].split("=")[0], json.loads(sys.argv[4].split("=", 1)[1]))]) if sys.argv[4] else None,
      "ids": [int(i) for i in sys.argv[3].split()]}))' "$T/convs.json" "$name" "$ids" "$kw"
  done | paste -sd, -
  echo ']}'
}

# Qwen3's own template (thinking on by default, off through chat_template_kwargs)
plan "$M/qwen3-d64-f16.gguf" "" one system turns parts one:enable_thinking=false > "$T/plan.json"
start_server --model "$M/qwen3-d64-f16.gguf" --threads 1 --api-key k
(cd "$sdk" && node chat_template_check.mjs "http://127.0.0.1:$PORT" k "$T/plan.json")
stop_server "$SERVER_PID"

# a GGUF without a template, given Gemma 2's: it writes bos_token itself, refuses a system role
plan "$M/llama-spm-d64-f32.gguf" "$GEMMA" one turns | python3 -c 'import json,sys; p=json.load(sys.stdin)
p["raises"] = [{"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}],
                "message": "System role not supported"}]
json.dump(p, open(sys.argv[1], "w"))' "$T/plan.json"
start_server --model "$M/llama-spm-d64-f32.gguf" --threads 1 --api-key k --chat-template "$GEMMA"
(cd "$sdk" && node chat_template_check.mjs "http://127.0.0.1:$PORT" k "$T/plan.json")
stop_server "$SERVER_PID"

# a --chat-template that does not parse stops the server at start, naming line:column
printf '{%% if messages %%}{{ messages[0].content' > "$T/bad.jinja"
if "$TL_BIN" serve --port 0 --model "$M/qwen3-d64-f16.gguf" --chat-template "$T/bad.jinja" > "$T/out" 2> "$T/err"; then
  echo "FAIL: serve started with a broken template"; exit 1
fi
grep -q "template:1:" "$T/err" || { echo "FAIL: broken template error: $(cat "$T/err")"; exit 1; }
echo "test_openai_chat_template: ok"
