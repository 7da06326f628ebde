#!/usr/bin/env bash
# test_batch.sh: `typellm batch` end to end on a fixture model. Every record's
# line is what `typellm decide` gives that record alone (values identical,
# fields' probabilities / logprobs / label mass within 1e-12), in input order,
# with "id"; malformed records (bad JSON, no context, a huge record, a bad
# per-line schema) get error lines and the job goes on; per-line schemas,
# --values-only, --context-field/--id-field, CSV in and out (RFC 4180 quoting),
# OpenAI batch lines (/v1/decisions) in OpenAI's output shape; resume after a
# torn last line gives the uninterrupted output; a changed input, schema or
# option is refused unless --overwrite.
set -euo pipefail
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
EX="$TL_SRC/examples"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
B() { "$TL_BIN" batch -m "$M" -t 2 --no-progress "$@" 2>> "$T/log"; }
S="$EX/tickets/triage.schema.json"

# 200 tickets, then malformed lines, a per-line schema and a record without id.
head -200 "$EX/tickets.jsonl" > "$T/in.jsonl"
python3 - "$T/in.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "a") as f:
    f.write("\n")                                        # blank: skipped, no line
    f.write('{"id": "bad", "context": \n')               # bad JSON
    f.write(json.dumps({"id": "noctx", "text": "x"}) + "\n")
    f.write(json.dumps({"id": "big", "context": "y" * 5000}) + "\n")
    f.write(json.dumps({"id": "own", "context": "Ticket: refund please",
                        "schema": {"properties": {"refund": {"type": "boolean"}}}}) + "\n")
    f.write(json.dumps({"id": "badschema", "context": "x",
                        "schema": {"properties": {"a": {"type": "string", "enum": ["x", "x"]}}}}) + "\n")
    f.write(json.dumps({"context": "Ticket without an id: login fails"}) + "\n")
PY
B --schema "$S" -i "$T/in.jsonl" -o "$T/out.jsonl" --parallel 8 --max-record-bytes 4096

# The reference: typellm decide on each record alone (two at a time).
python3 - "$T/in.jsonl" "$T" <<'PY'
import json, sys
for i, line in enumerate(open(sys.argv[1])):
    try: r = json.loads(line)
    except ValueError: continue
    if isinstance(r.get("context"), str) and i < 200:
        open(f"{sys.argv[2]}/ctx{i}.txt", "w").write(r["context"])
PY
ls "$T"/ctx*.txt | xargs -P 2 -I{} sh -c '"$0" decide -m "$1" -t 1 --schema "$2" -f "$3" > "$3.json"' \
  "$TL_BIN" "$M" "$S" {}
"$TL_BIN" decide -m "$M" -t 1 --schema "$S" -p "Ticket without an id: login fails" > "$T/noid.json"
python3 - "$T" <<'PY'
import json, math, sys
T = sys.argv[1]
lines = [json.loads(l) for l in open(f"{T}/out.jsonl")]
ids = [l["id"] for l in lines]
# unparsable records keep their 0-based line number as id
want = [f"T-{1000 + i}" for i in range(200)] + [201, "noctx", 203, "own", "badschema", 206]
assert ids == want, ids[-8:]
def close(a, b, path):
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (path, a, b)
        for k in a: close(a[k], b[k], path + "/" + k)
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)): close(x, y, f"{path}/{i}")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert abs(a - b) <= 1e-12, (path, a, b)
    else:
        assert a == b, (path, a, b)
def same(line, ref):
    assert line["values"] == ref["values"], (line["id"], line["values"], ref["values"])
    close(line["fields"], ref["fields"], str(line["id"]))
    assert line["usage"]["prompt_tokens"] == ref["usage"]["prompt_tokens"]
    assert (line["mode"], line["style"], line["model"]) == (ref["mode"], ref["style"], ref["model"])
for i in range(200):
    same(lines[i], json.load(open(f"{T}/ctx{i}.txt.json")))
same(lines[-1], json.load(open(f"{T}/noid.json")))
e = {l["id"]: l["error"] for l in lines if "error" in l}
assert set(e) == {201, "noctx", 203, "badschema"}, e
assert e[201]["code"] == "format" and "line 202:" in e[201]["message"] and "invalid JSON" in e[201]["message"], e[201]
assert "no \"context\"" in e["noctx"]["message"], e["noctx"]
assert e[203]["code"] == "limit" and "4096 bytes" in e[203]["message"], e[203]
assert e["badschema"]["code"] == "schema" and "/properties/a/enum/1" in e["badschema"]["message"], e["badschema"]
own = lines[-3]
assert own["id"] == "own" and list(own["values"]) == ["refund"], own
PY
grep -q "206 records written (0 resumed from an earlier run), 4 errors" "$T/log" || fail "summary: $(tail -3 "$T/log")"

# Resume: a torn last line is cut and redone; the job ends as an uninterrupted one.
strip() { python3 -c "
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); d.pop('timing_ms', None); d.pop('usage', None); print(json.dumps(d, sort_keys=True))" "$1"; }
strip "$T/out.jsonl" > "$T/ref.txt"
python3 - "$T/out.jsonl" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
cut = data.rfind(b"\n", 0, len(data) - 1)
cut = data.rfind(b"\n", 0, cut)          # keep all but the last two lines ...
open(sys.argv[1], "wb").write(data[:cut + 1] + data[cut + 1:cut + 40])  # ... and a torn start of one
PY
B --schema "$S" -i "$T/in.jsonl" -o "$T/out.jsonl" --parallel 8 --max-record-bytes 4096
grep -q "2 records written (204 resumed" "$T/log" || fail "resume: $(tail -2 "$T/log")"
strip "$T/out.jsonl" > "$T/resumed.txt"
cmp -s "$T/ref.txt" "$T/resumed.txt" || fail "resumed output differs from the uninterrupted one"

# A changed schema, option or input is refused; --overwrite starts over.
expect_refused() { # substring args...
  local want="$1"; shift
  set +e; B "$@"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "rc $rc for $*"
  grep -qF -- "$want" "$T/log" || fail "'$want' not in: $(tail -2 "$T/log")"
}
printf '{"properties":{"blocked":{"type":"boolean"}}}' > "$T/s2.json"
expect_refused "whose the schema differs" --schema "$T/s2.json" -i "$T/in.jsonl" -o "$T/out.jsonl" --max-record-bytes 4096
expect_refused "whose the options" --schema "$S" -i "$T/in.jsonl" -o "$T/out.jsonl" --max-record-bytes 4096 --mode batch
echo '{"id": "new", "context": "one more"}' >> "$T/in.jsonl"
expect_refused "whose the input differs" --schema "$S" -i "$T/in.jsonl" -o "$T/out.jsonl" --max-record-bytes 4096
echo '{}' > "$T/foreign.jsonl"
expect_refused "not written by typellm batch" --schema "$S" -i "$T/in.jsonl" -o "$T/foreign.jsonl"
head -3 "$EX/tickets.jsonl" > "$T/in3.jsonl"
B --schema "$T/s2.json" -i "$T/in3.jsonl" -o "$T/out.jsonl" --overwrite --values-only --id-field context \
  --context-field context
python3 - "$T/out.jsonl" "$T/in3.jsonl" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
inp = [json.loads(l) for l in open(sys.argv[2])]
assert [o["id"] for o in out] == [r["context"] for r in inp]
assert all(set(o) == {"id", "blocked"} and isinstance(o["blocked"], bool) for o in out), out
PY

# CSV in (quoted fields: commas, quotes, newlines; CRLF) and CSV out.
python3 - "$T/in.csv" "$EX/tickets.jsonl" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[2])][:6]
with open(sys.argv[1], "w", newline="") as f:
    w = csv.writer(f, lineterminator="\r\n")
    w.writerow(["ticket", "text", "note"])
    for r in rows: w.writerow([r["id"], r["context"] + ', "quoted"\nsecond line', "n"])
    f.write('T-bad,"never closed\r\n')
PY
B --schema "$S" -i "$T/in.csv" -o "$T/out.csv" --context-column text --id-column ticket
B --schema "$S" -i "$T/in.csv" -o "$T/out2.jsonl" --context-column text --id-column ticket
python3 - "$T/out.csv" "$T/out2.jsonl" "$S" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
js = [json.loads(l) for l in open(sys.argv[2])]
keys = list(json.load(open(sys.argv[3]))["properties"])
assert len(rows) == 7 == len(js), (len(rows), len(js))
for r, j in zip(rows[:6], js[:6]):
    assert r["id"] == j["id"] and r["error"] == "", (r, j["id"])
    for k in keys:
        assert r[k] == (str(j["values"][k]).lower() if isinstance(j["values"][k], bool) else j["values"][k]), k
        assert abs(float(r[k + "_p"]) - j["fields"][k]["probabilities"][str(j["values"][k]).lower()
                   if isinstance(j["values"][k], bool) else j["values"][k]]) < 1e-12
assert rows[6]["id"] == "T-bad" and "never closed" in rows[6]["error"], rows[6]
assert js[6]["error"]["code"] == "format"
PY

# OpenAI batch lines: /v1/decisions through the server's handler; OpenAI's output shape.
python3 - "$T/oai.jsonl" "$T/noid.json" <<'PY'
import json, sys
model = json.load(open(sys.argv[2]))["model"]
body = {"model": model, "input": "Ticket: the invoice shows the wrong seat count",
        "questions": [{"type": "predicate", "name": "billing", "instructions": "Is it about billing?"},
                      {"type": "choice", "name": "urgency", "instructions": "How urgent?", "choices": [{"value": "low"}, {"value": "high"}]}]}
with open(sys.argv[1], "w") as f:
    for i in range(3):
        f.write(json.dumps({"custom_id": f"req-{i}", "method": "POST", "url": "/v1/decisions", "body": body}) + "\n")
    f.write(json.dumps({"custom_id": "bad-url", "method": "POST", "url": "/v1/embeddings", "body": {}}) + "\n")
    f.write(json.dumps({"custom_id": "bad-body", "method": "POST", "url": "/v1/decisions", "body": {"model": model}}) + "\n")
PY
B -i "$T/oai.jsonl" -o "$T/oai.out.jsonl" --parallel 4
python3 - "$T/oai.out.jsonl" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
assert [o["custom_id"] for o in out] == ["req-0", "req-1", "req-2", "bad-url", "bad-body"]
for o in out[:3]:
    assert o["error"] is None and o["response"]["status_code"] == 200, o
    b = o["response"]["body"]
    assert [a["name"] for a in b["answers"]] == ["billing", "urgency"], b
assert out[0]["response"]["body"].get("answers") == out[1]["response"]["body"].get("answers")
assert out[3]["response"] is None and out[3]["error"]["code"] == "invalid_url", out[3]
assert out[4]["response"]["status_code"] == 400 and "error" in out[4]["response"]["body"], out[4]
assert len({o["id"] for o in out}) == 5
PY
echo "test_batch: ok"
