#!/usr/bin/env bash
# test_think.sh: think-then-decide (--think N, "x-think": {"max_tokens": N}) on
# the Qwen3 and gpt-oss fixtures. The scored prompt (a field's trace text) must
# be, byte for byte, `typellm template`'s rendering of the question turn
# followed by an assistant turn whose reasoning is the generated text, up to
# where the answer's content starts: the labels are scored right after the
# template's own closing text (Qwen3: "\n</think>\n\n"; gpt-oss: the analysis
# channel ended, the final one opened). The reasoning is in the trace, at most
# N tokens, counted in usage; batch mode writes the fields' reasoning in
# parallel (shared batched passes), each as it would alone; N = 0 is today's decision bit for bit; a
# template without a reasoning block, and record style, are refused by name.
set -euo pipefail
FX="$TL_FIXTURES/models"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$T/s.json" <<'EOF2'
{"type": "object", "properties": {"kind": {"type": "string", "enum": ["bug", "feature", "question"], "question": "Bug or feature?"},
 "urgent": {"type": "boolean", "x-think": {"max_tokens": 5}}}}
EOF2
CTX="The app crashes on start since the last update."

# check MODEL USER_OPEN USER_CLOSE REASONING_KEY FIELD RESULT TEMPLATE_ARGS...
check() {
  local model=$1 uopen=$2 uclose=$3 key=$4 field=$5 res=$6; shift 6
  python3 - "$res" "$field" "$uopen" "$uclose" "$key" "$T" <<'PY' || fail "$model: $field: trace"
import json, sys
res, field, uopen, uclose, key, tmp = sys.argv[1:]
r = json.load(open(res))
f = r["fields"][field]
tr = f["trace"]
reason = tr["reasoning"]
assert 0 < reason["tokens"] <= reason["max_tokens"], reason
text = tr["text"]
start = text.index(uopen) + len(uopen)
content = text[start:text.index(uclose, start)]
msgs = [{"role": "user", "content": content}, {"role": "assistant", "content": "TLANSWERMARK", key: reason["text"]}]
json.dump(msgs, open(tmp + "/m.json", "w"), ensure_ascii=False)
open(tmp + "/trace.txt", "w", encoding="utf-8", newline="").write(text)
PY
  "$TL_BIN" template --model "$FX/$model" "$@" --messages "$T/m.json" > "$T/render.txt"
  python3 - "$T/render.txt" "$T/trace.txt" <<'PY' || fail "$model: $field: the scored prompt is not the template's rendering"
import sys
render = open(sys.argv[1], encoding="utf-8", newline="").read()
trace = open(sys.argv[2], encoding="utf-8", newline="").read()
want = render[:render.index("TLANSWERMARK")]
if want != trace:
    print("want:", repr(want[-200:]), "\ngot: ", repr(trace[-200:]), file=sys.stderr)
    sys.exit(1)
PY
}

strip_timing() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("timing_ms"); print(json.dumps(r, sort_keys=True))' "$1"
}

for m in qwen3-d64-f16.gguf gpt-oss-gpt2-d64-mxfp4.gguf; do
  case $m in
    qwen3*) uo='<|im_start|>user
'; uc='<|im_end|>'; key=reasoning_content; vars=(--var enable_thinking=true) ;;
    gpt-oss*) uo='<|start|>user<|message|>'; uc='<|end|>'; key=thinking; vars=(--var 'reasoning_effort="low"') ;;
  esac
  # sampled, so that the random-weight fixture writes some reasoning
  "$TL_BIN" decide -m "$FX/$m" --schema "$T/s.json" -p "$CTX" --mode batch --think 6 --temperature 1 --seed 7 \
    --trace -t 1 > "$T/think.json"
  check "$m" "$uo" "$uc" "$key" kind "$T/think.json" "${vars[@]}"
  check "$m" "$uo" "$uc" "$key" urgent "$T/think.json" "${vars[@]}"
  python3 - "$T/think.json" <<'PY' || fail "$m: reasoning limits"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["fields"]["kind"]["trace"]["reasoning"]["max_tokens"] == 6
assert r["fields"]["urgent"]["trace"]["reasoning"]["max_tokens"] == 5  # x-think wins over --think
PY
  # usage counts the reasoning: its tokens, and the passes that wrote them
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); del s["properties"]["urgent"]["x-think"]; json.dump(s, open(sys.argv[2], "w"))' \
    "$T/s.json" "$T/plain.json"
  "$TL_BIN" decide -m "$FX/$m" --schema "$T/plain.json" -p "$CTX" --mode batch --temperature 1 --seed 7 -t 1 --think 0 \
    > "$T/n0.json"
  python3 - "$T/think.json" "$T/n0.json" <<'PY' || fail "$m: usage"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = sum(a["fields"][k]["trace"]["reasoning"]["tokens"] for k in ("kind", "urgent"))
assert a["usage"]["reasoning_tokens"] == n, (a["usage"], n)
assert "reasoning_tokens" not in b["usage"]
assert a["usage"]["forward_passes"] > b["usage"]["forward_passes"], (a["usage"], b["usage"])
PY
  # N = 0 is today's decision, bit for bit (the schema's x-think 0 too)
  sed 's/"max_tokens": 5/"max_tokens": 0/' "$T/s.json" > "$T/s0.json"
  "$TL_BIN" decide -m "$FX/$m" --schema "$T/plain.json" -p "$CTX" --mode batch --temperature 1 --seed 7 -t 1 > "$T/today.json"
  "$TL_BIN" decide -m "$FX/$m" --schema "$T/s0.json" -p "$CTX" --mode batch --temperature 1 --seed 7 -t 1 > "$T/zero.json"
  [ "$(strip_timing "$T/today.json")" = "$(strip_timing "$T/zero.json")" ] || fail "$m: x-think 0 differs from today"
  [ "$(strip_timing "$T/today.json")" = "$(strip_timing "$T/n0.json")" ] || fail "$m: --think 0 differs from today"
done

# batch mode thinks in parallel: the fields' reasoning steps share batched passes, and a field's
# reasoning is the one it writes alone (the same branch: a one-field schema, same seed stream)
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); del s["properties"]["urgent"]; json.dump(s, open(sys.argv[2], "w"))' \
  "$T/s.json" "$T/kind.json"
"$TL_BIN" decide -m "$FX/qwen3-d64-f16.gguf" --schema "$T/s.json" -p "$CTX" --mode batch --think 6 --temperature 1 \
  --seed 7 --trace -t 1 > "$T/both.json"
"$TL_BIN" decide -m "$FX/qwen3-d64-f16.gguf" --schema "$T/kind.json" -p "$CTX" --mode batch --think 6 --temperature 1 \
  --seed 7 --trace -t 1 > "$T/alone.json"
python3 - "$T/both.json" "$T/alone.json" <<'PY' || fail "batch: parallel thinking"
import json, sys
both, alone = (json.load(open(p)) for p in sys.argv[1:3])
rb, ra = both["fields"]["kind"]["trace"]["reasoning"], alone["fields"]["kind"]["trace"]["reasoning"]
assert rb == ra, (rb, ra)
assert both["fields"]["kind"]["probabilities"] == alone["fields"]["kind"]["probabilities"]
n = [both["fields"][k]["trace"]["reasoning"]["tokens"] for k in ("kind", "urgent")]
assert min(n) >= 2 and both["usage"]["forward_passes"] < sum(n), (n, both["usage"])
PY

# sequential mode: the next question follows the answered turn, without the reasoning
"$TL_BIN" decide -m "$FX/qwen3-d64-f16.gguf" --schema "$T/s.json" -p "$CTX" --mode sequential --think 6 --temperature 1 \
  --seed 7 --trace -t 1 > "$T/seq.json"
python3 - "$T/seq.json" <<'PY' || fail "sequential: history"
import json, sys
r = json.load(open(sys.argv[1]))
first, second = r["fields"]["kind"]["trace"]["text"], r["fields"]["urgent"]["trace"]["text"]
reason = r["fields"]["kind"]["trace"]["reasoning"]["text"]
assert reason, "no reasoning written"
# the answered turn, written as with thinking off
assert "<think>\n\n</think>\n\n" + r["fields"]["kind"]["label"] + "\nvalue=" in second, second
assert "<think>\n" + reason not in second, "the first reasoning is kept in the history"
PY

# refusals, by name
if "$TL_BIN" decide -m "$FX/llama3-d64-bf16.gguf" --schema "$T/s.json" -p "$CTX" --think 4 -t 1 > /dev/null 2> "$T/err"; then
  fail "a template without reasoning accepted --think"
fi
grep -q "think-then-decide needs a reasoning chat template" "$T/err" || fail "message: $(cat "$T/err")"
if "$TL_BIN" decide -m "$FX/qwen3-d64-f16.gguf" --style record --schema "$T/s.json" -p "$CTX" --think 4 -t 1 \
  > /dev/null 2> "$T/err"; then
  fail "record style accepted --think"
fi
grep -q "record style" "$T/err" || fail "message: $(cat "$T/err")"
echo "ok"
