#!/usr/bin/env bash
# test_cli.sh: `typellm decide` end to end on the examples with a fixture
# model: typed JSON out (values inside the schema, probabilities summing to 1),
# --values-only, context from stdin, and exit status 2 with a clear message
# for bad options, bad JSON (line:column) and bad schemas (JSON path).
set -euo pipefail
M="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
EX="$TL_SRC/examples"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TL_BIN" decide --model "$M" --threads 1 --schema "$EX/ticket/schema.json" --context "$EX/ticket/context.txt" \
  --trace > "$T/ticket.json"
python3 - "$T/ticket.json" "$EX/ticket/schema.json" <<'PY'
import json, sys
r, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["mode"] == "auto" and r["style"] == "chat" and r["chat_template"] == "chatml", r["mode"]
assert list(r["values"]) == list(s["properties"]), "values not in schema order"
for k, p in s["properties"].items():
    v, f = r["values"][k], r["fields"][k]
    if "enum" in p: assert v in p["enum"], (k, v)
    else: assert isinstance(v, bool), (k, v)
    assert abs(sum(f["probabilities"].values()) - 1) < 1e-9, k
    assert f["trace"]["position"] == len(f["trace"]["ids"]) - 1
assert r["fields"]["rollback"]["trace"]["wave"] == 2 and r["fields"]["severity"]["trace"]["wave"] == 1
assert r["usage"]["cached_tokens"] > 0
PY

# stdin context, --values-only, record style, batch
"$TL_BIN" decide --model "$M" --threads 1 --schema "$EX/receipt/schema.json" --values-only --style record \
  --mode batch < "$EX/receipt/context.txt" > "$T/values.json"
python3 -c "
import json,sys
v = json.load(open('$T/values.json'))
assert set(v) == {'expense_type','reimbursable','receipt_quality'}, v
assert v['expense_type'] in ('meal','travel','equipment') and isinstance(v['reimbursable'], bool)
assert v['receipt_quality'] in [i/10 for i in range(11)]
"

# errors: exit 2 with a message naming the problem
expect_err() { # expected-substring args...
  local want="$1"; shift
  set +e; "$TL_BIN" decide "$@" > /dev/null 2> "$T/err"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "rc $rc for $*: $(cat "$T/err")"
  grep -qF -- "$want" "$T/err" || fail "'$want' not in: $(cat "$T/err")"
}
expect_err "--schema is required" --model "$M" --context-text x
expect_err "unknown option '--bogus'" --bogus
expect_err "--temperature: 'warm' is not a number" --model "$M" --schema "$EX/receipt/schema.json" --temperature warm
expect_err "unknown mode 'parallel'" --model "$M" --schema "$EX/receipt/schema.json" --context-text x --mode parallel
printf '{"properties": {\n  "a": }' > "$T/bad.json"
expect_err "bad.json:2:" --model "$M" --schema "$T/bad.json" --context-text x
printf '{"properties":{"a":{"type":"string","enum":["x","x"]}}}' > "$T/dup.json"
expect_err "/properties/a/enum/1: duplicate value" --model "$M" --schema "$T/dup.json" --context-text x
echo "test_cli: ok"
