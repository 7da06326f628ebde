#!/usr/bin/env bash
# test_trace_template.sh: `typellm decide --trace` names the chat template
# used (family, source: the model's or a given file, how reasoning is kept
# out of the answer) and each field's trace text is the exact rendered
# prompt: on the qwen3 fixture (Qwen3's template) it equals `typellm
# template`'s rendering of the question turn with thinking off; with
# --chat-template FILE.jinja the given template's.
set -euo pipefail
M="$TL_FIXTURES/models/qwen3-d64-f16.gguf"
TPL="$TL_FIXTURES/templates"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$T/s.json" <<'EOF2'
{"type": "object", "properties": {"kind": {"type": "string", "enum": ["bug", "feature"], "question": "Bug or feature?"},
 "urgent": {"type": "boolean"}}}
EOF2
# check TRACE.json SOURCE REASONING TEMPLATE_ARGS...: the trace against `typellm template`
check() {
  local trace=$1 source=$2 reasoning=$3; shift 3
  python3 - "$trace" "$source" "$reasoning" "$T" <<'PY' || fail "trace header ($source)"
import json, sys
r = json.load(open(sys.argv[1]))
want_reasoning = None if sys.argv[3] == "null" else sys.argv[3]
assert r["style"] == "chat" and r["chat_template_source"] == sys.argv[2] and r["reasoning"] == want_reasoning, \
    (r["chat_template"], r["chat_template_source"], r["reasoning"])
text = r["fields"]["kind"]["trace"]["text"]
start = text.index("<|im_start|>user\n") + len("<|im_start|>user\n")
content = text[start:text.index("<|im_end|>", start)]
json.dump([{"role": "user", "content": content}], open(sys.argv[4] + "/m.json", "w"), ensure_ascii=False)
open(sys.argv[4] + "/trace.txt", "w", encoding="utf-8", newline="").write(text)
PY
  "$TL_BIN" template "$@" --messages "$T/m.json" --add-generation-prompt > "$T/want.txt"
  cmp -s "$T/want.txt" "$T/trace.txt" || fail "$source: the trace text is not the template's rendering"
}
"$TL_BIN" decide -m "$M" --schema "$T/s.json" -p "The app crashes on start." --trace -t 1 > "$T/r.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["chat_template"] == "chatml"' "$T/r.json" ||
  fail "chat_template family"
check "$T/r.json" model "enable_thinking=false" --model "$M" --var enable_thinking=false --var thinking=false
grep -q '<think>\\n\\n</think>\\n\\n"' "$T/r.json" || fail "qwen3: not scored after </think>"
"$TL_BIN" decide -m "$M" --schema "$T/s.json" -p "The app crashes on start." --trace -t 1 \
  --chat-template "$TPL/LFM2-8B-A1B.jinja" > "$T/r.json"
# the qwen3 fixture has no BOS token: bos_token is empty, as for the model's own template
check "$T/r.json" given null --template "$TPL/LFM2-8B-A1B.jinja"
echo "test_trace_template: ok"
