#!/usr/bin/env bash
# test_corrections.sh: corrected distributions (debias, calibrate) over the
# server and the SGLang client, against `typellm serve` on a loopback port:
#   - /v1/decide with "debias" / "calibrate" / "content_free" gives the local
#     CLI's corrected and raw distributions bit for bit;
#   - `typellm decide --server` (the SGLang client) scores every order and the
#     calibration branch in the wave's one /generate, within 1e-4 of local;
#   - /v1/decisions answers carry raw_probabilities / raw_probability beside
#     the corrected ones (extension fields);
#   - bad values are refused naming the field (422 / 400).
source "$(dirname "$0")/serve_lib.sh"
M="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
cat > "$SCRATCH/s.json" <<'EOF2'
{"type": "object", "properties": {
  "severity": {"type": "string", "enum": ["low", "medium", "high", "critical"], "question": "How severe is it?"},
  "refund": {"type": "boolean", "question": "Does the customer ask for a refund?", "x-debias": "full"}}}
EOF2
CTX="Ticket 4471: the parcel is stuck in the depot since Monday; the customer asks for a refund."
OPTS=(--style record --mode batch --debias permute --calibrate content-free --content-free "[none]" -t 1)
"$TL_BIN" decide -m "$M" --schema "$SCRATCH/s.json" -p "$CTX" "${OPTS[@]}" > "$SCRATCH/local.json"
start_server --model "$M" --threads 1 --quiet
URL="http://127.0.0.1:$PORT"
"$TL_BIN" decide --server "$URL" --schema "$SCRATCH/s.json" -p "$CTX" "${OPTS[@]}" > "$SCRATCH/sglang.json"
python3 - "$URL" "$SCRATCH/s.json" "$CTX" "$SCRATCH/local.json" "$SCRATCH/sglang.json" <<'PY'
import json, sys, urllib.request, urllib.error
url, schema_path, ctx, local_path, sglang_path = sys.argv[1:]
schema = json.load(open(schema_path))
local, sg = json.load(open(local_path)), json.load(open(sglang_path))

def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

fails = []
def check(ok, what):
    if not ok:
        fails.append(what)

st, d = post("/v1/decide", {"context": ctx, "schema": schema, "style": "record", "mode": "batch",
                            "debias": "permute", "calibrate": "content-free", "content_free": "[none]"})
check(st == 200, f"/v1/decide {st} {d}")
for k in ("severity", "refund"):
    lf, df, gf = local["fields"][k], d["fields"][k], sg["fields"][k]
    check(lf["probabilities"] == df["probabilities"] and lf["raw_probabilities"] == df["raw_probabilities"],
          f"/v1/decide {k}: {df['probabilities']} vs local {lf['probabilities']}")
    check(lf["correction"] == df["correction"], f"/v1/decide {k} correction")
    for key in ("probabilities", "raw_probabilities"):
        for v, p in lf[key].items():
            check(abs(gf[key][v] - p) < 1e-4, f"sglang {k} {key} {v}: {gf[key][v]} vs {p}")
    check(lf["probabilities"] != lf["raw_probabilities"], f"{k}: the correction changed nothing")
check(sg["values"] == local["values"], f"sglang values {sg['values']} vs {local['values']}")
gen = sg["usage"]["http_requests"]["generate"]
check(gen == 1, f"sglang: {gen} /generate calls for one wave (orders and calibration belong in one)")

st, models = 200, json.loads(urllib.request.urlopen(url + "/v1/models").read())
model = models["data"][0]["id"]
body = {"model": model, "input": ctx, "debias": "permute", "calibrate": "pmi",
        "questions": [{"type": "choice", "instructions": "How severe is it?",
                       "choices": [{"value": "low"}, {"value": "medium"}, {"value": "high"}]},
                      {"type": "predicate", "instructions": "Does the customer ask for a refund?"}]}
st, r = post("/v1/decisions", body)
check(st == 200, f"/v1/decisions {st} {r}")
if st == 200:
    a0, a1 = r["answers"]
    check(len(a0["raw_probabilities"]) == 3 and abs(sum(a0["raw_probabilities"]) - 1) < 1e-9, f"choice raw {a0}")
    check([x["probability"] for x in a0["probabilities"]] != a0["raw_probabilities"], "choice: uncorrected")
    check(0 <= a1["raw_probability"] <= 1 and a1["raw_probability"] != a1["probability"], f"predicate raw {a1}")
body.pop("debias"), body.pop("calibrate")
st, r = post("/v1/decisions", body)
check(st == 200 and "raw_probabilities" not in r["answers"][0] and "raw_probability" not in r["answers"][1],
      "no correction asked, no raw fields")
st, r = post("/v1/decisions", dict(body, debias="sorted"))
check(st == 400 and r["error"]["param"] == "debias", f"/v1/decisions bad debias: {st} {r}")
st, r = post("/v1/decide", {"context": ctx, "schema": schema, "calibrate": 3})
check(st == 422 and r["detail"][0]["loc"] == ["body", "calibrate"], f"/v1/decide bad calibrate: {st} {r}")
st, r = post("/v1/decide", {"context": ctx, "schema": {"properties": {"f": {"enum": ["a", "b"], "x-debias": "x"}}}})
check(st == 422 and "/properties/f/x-debias" in json.dumps(r), f"/v1/decide bad x-debias: {st} {r}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
stop_server "$SERVER_PID"
echo ok
