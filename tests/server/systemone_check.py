"""systemone_check.py PORT KEY SCRATCH: the System One contract of
protocols.md against a running `typellm serve` (qwen2-d64-q8_0, ChatML):
exact answer shapes, TypeSafe's confidence formulas, independence of
questions (and of their ids), the error table, /v1/models and /v1/decide
(equal to `typellm decide` run locally, also for an array-of-objects schema,
which /v1/chat/completions' json_schema response format decides validly)."""
import json
import math
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request

from checks import check, finish

PORT, KEY, SCRATCH = int(sys.argv[1]), sys.argv[2], sys.argv[3]
BASE = f"http://127.0.0.1:{PORT}"
FIX, BIN = os.environ["TL_FIXTURES"], os.environ["TL_BIN"]
MODEL = f"{FIX}/models/qwen2-d64-q8_0.gguf"


def call(path, body=None, key=KEY, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(BASE + path, data=data, method="POST" if data is not None else "GET")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read() or b"null"), dict(r.headers)
    except urllib.error.HTTPError as e:
        txt = e.read()
        try:
            return e.code, json.loads(txt), dict(e.headers)
        except ValueError:
            return e.code, txt, dict(e.headers)


STATE = ("Customer: I was charged twice for my subscription this month and nobody answers my emails. "
         "Fix this today or I cancel!")
EXAMPLE = {"model": "jev-1.13.0", "state": STATE, "questions": {
    "billing": {"type": "noul", "instructions": "Is this about billing?"},
    "tone": {"type": "choice", "instructions": "What is the customer's tone?",
             "criteria": {"calm": None, "angry": "shouting, threats", "frustrated": "annoyed but polite"}},
    "urgency": {"type": "score", "instructions": "How urgent is this?", "criteria": ["can wait", "this week", "today"]}}}


def check_answer(q, a, qid):
    t = q["type"]
    check(a["type"] == t, f"{qid}: type")
    if t == "noul":
        check(set(a) == {"type", "noul"}, f"{qid}: noul keys {set(a)}")
        check(0 <= a["noul"] <= 1 and not math.isnan(a["noul"]), f"{qid}: P(true)")
        return
    if t == "choice":
        opts = list(q["criteria"])
        check(set(a) == {"type", "choice", "probabilities", "confidence"}, f"{qid}: choice keys {set(a)}")
        check(list(a["probabilities"]) == opts, f"{qid}: probabilities keyed byte-for-byte by option, in order")
        p = [a["probabilities"][o] for o in opts]
        check(a["choice"] == opts[max(range(len(p)), key=lambda i: p[i])], f"{qid}: choice is the argmax")
        n = len(p)
        c = (max(p) - 1 / n) / (1 - 1 / n)
        check(abs(a["confidence"] - c) < 1e-9, f"{qid}: choice confidence formula")
    else:
        n = len(q["criteria"])
        check(set(a) == {"type", "score", "legend", "probabilities", "confidence"}, f"{qid}: score keys {set(a)}")
        # a null level is undescribed: its legend value is "" (never null, which the SDK's parser refuses)
        check(a["legend"] == {str(i): "" if d is None else d for i, d in enumerate(q["criteria"])}, f"{qid}: legend")
        check(all(v is not None for v in a["legend"].values()), f"{qid}: no null legend value")
        check(list(a["probabilities"]) == [str(i) for i in range(n)], f"{qid}: level keys")
        p = [a["probabilities"][str(i)] for i in range(n)]
        check(abs(a["score"] - sum(i * x for i, x in enumerate(p))) < 1e-9, f"{qid}: score = sum i p_i")
        mode = max(range(n), key=lambda i: p[i])
        denom = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
        c = max(0.0, 1 - sum(x * abs(i - mode) for i, x in enumerate(p)) / denom)
        check(abs(a["confidence"] - c) < 1e-9, f"{qid}: score confidence formula")
    check(abs(sum(p) - 1) < 1e-9 and all(0 <= x <= 1 for x in p), f"{qid}: probabilities sum to 1")


def check_reply(req, st, body):
    check(st == 200, f"status {st}: {body}")
    if st != 200:
        return
    check(set(body) == {"model", "answers", "usage", "x_label_mass"} and isinstance(body["model"], str),
          f"top-level keys {set(body)}: the extension is x_-prefixed")
    lm = body.get("x_label_mass", {})
    check(list(lm) == list(body.get("answers", {})) and all(0 <= m <= 1 for m in lm.values()),
          "x_label_mass extension: one figure in [0, 1] per question")
    check(list(body["answers"]) == list(req["questions"]), "one answer per question id, in order")
    u = body["usage"]
    check(set(u) == {"input_tokens", "output_tokens"} and all(type(v) is int and v >= 0 for v in u.values()),
          f"usage integers: {u}")
    for qid, q in req["questions"].items():
        check_answer(q, body["answers"][qid], qid)


# --- the documented example, exact shapes --------------------------------------------
st, ex, _ = call("/v1/systemone", EXAMPLE)
check_reply(EXAMPLE, st, ex)
check(ex["model"] != "jev-1.13.0", "the reply names the model actually used")
st, models, _ = call("/v1/models")
check(st == 200 and set(models["models"][0]) == {"name", "description", "release_date"}
      and models["models"][0]["name"] == ex["model"], f"/v1/models: {models}")

# --- independence: a question alone, or under another id, gets the same answer -------
for qid in EXAMPLE["questions"]:
    alone = {"state": STATE, "questions": {"renamed_" + qid: EXAMPLE["questions"][qid]}}
    st, one, _ = call("/v1/systemone", alone)
    a, b = one["answers"]["renamed_" + qid], ex["answers"][qid]
    check(json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or
          all(abs(a.get(k, 0) - b.get(k, 0)) < 1e-6 for k in a if isinstance(a[k], float)),
          f"{qid}: alone / renamed gives the same answer ({a} vs {b})")

# --- state/instructions as object/array, null criteria, unicode options, limits ----------
req = {"state": {"ticket": 17, "lines": ["refund", "now"]}, "questions": {
    "n1": {"type": "noul", "instructions": {"ask": "refund?"}, "criteria": {"true": "wants money back", "false": None}},
    "n2": {"type": "noul", "criteria": None},
    "c1": {"type": "choice", "instructions": ["pick", 1], "criteria": {"très calme": None, "en colère": "cris", "a b": None}},
    "s10": {"type": "score", "criteria": [f"level {i}" for i in range(10)]},
    "s2": {"type": "score", "criteria": ["no", "yes"]},
    "snull": {"type": "score", "criteria": ["Calm", None, {"level": "loud"}]}}}
st, body, _ = call("/v1/systemone", req)
check_reply(req, st, body)
many = {"state": "pick", "questions": {"c255": {"type": "choice", "criteria": {f"opt{i}": None for i in range(255)}}}}
st, body, _ = call("/v1/systemone", many)
check_reply(many, st, body)

# 255 described options need ~4,900 tokens: past this server's 4,096-token context the 413 names
# `serve -c/--ctx-size`; test_systemone.sh then serves it from `serve -c 16384` (long_context below)
DESCRIBED = {"state": "pick", "questions": {"c255": {"type": "choice", "criteria": {
    f"opt{i}": f"the catalogue entry number {i}, for requests of kind {i % 7}" for i in range(255)}}}}
LONG = len(sys.argv) > 4 and sys.argv[4] == "long_context"
st, tok, _ = call("/tokenize", {"prompt": "pick"})
check(st == 200 and tok["max_model_len"] == (16384 if LONG else 4096), f"/tokenize max_model_len is the context: {tok}")
if LONG:
    st, body, _ = call("/v1/systemone", DESCRIBED)
    check_reply(DESCRIBED, st, body)
    finish("systemone_check long_context", sys.stderr)
st, body, _ = call("/v1/systemone", DESCRIBED)
check(st == 413 and body["detail"]["error_type"] == "tokens_exceeded" and "--ctx-size" in body["detail"]["message"],
      f"255 described options on 4,096 tokens: 413 naming --ctx-size: {st} {str(body)[:400]}")

# --- concurrency: parallel requests batch together and agree with serial answers --------
out = [None] * 6
def worker(i):
    out[i] = call("/v1/systemone", EXAMPLE)
ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
[t.start() for t in ts]
[t.join() for t in ts]
for st, body, _ in out:
    check(st == 200 and all(abs(body["answers"]["billing"]["noul"] - ex["answers"]["billing"]["noul"]) < 1e-6 for _ in [0])
          and abs(body["answers"]["urgency"]["score"] - ex["answers"]["urgency"]["score"]) < 1e-6,
          "concurrent answers equal the serial ones")

# --- error table ------------------------------------------------------------------------
def err(raw, want, key=KEY, loc=None, etype=None):
    st, body, hdr = call("/v1/systemone", raw=raw if isinstance(raw, bytes) else json.dumps(raw).encode(), key=key)
    check(st == want, f"{str(raw)[:80]}: status {st}, want {want}: {str(body)[:200]}")
    if loc is not None:
        check(isinstance(body, dict) and body["detail"][0]["loc"] == loc, f"{str(raw)[:60]}: loc {body}")
    if etype is not None:
        check(isinstance(body, dict) and body["detail"]["error_type"] == etype, f"{str(raw)[:60]}: error_type {body}")
    return body

q = lambda **kw: {"state": "s", "questions": {"x": kw}}
err(b'{"state": "s", "questions": ', 422, loc=["body", 28])
err(b"not json", 422)
err([1, 2], 422, loc=["body"])
err({"questions": {"x": {"type": "noul"}}}, 422, loc=["body", "state"])
err({"state": 3, "questions": {"x": {"type": "noul"}}}, 422, loc=["body", "state"])
err({"state": "s"}, 422, loc=["body", "questions"])
err({"state": "s", "questions": []}, 422, loc=["body", "questions"])
err(q(type="yesno"), 422, loc=["body", "questions", "x", "type"])
err(q(), 422, loc=["body", "questions", "x", "type"])
err(q(type="noul", instructions=5), 422, loc=["body", "questions", "x", "instructions"])
err(q(type="choice", criteria={"one": None}), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="choice", criteria={f"o{i}": None for i in range(256)}), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="choice", criteria=["a", "b"]), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="score", criteria=[str(i) for i in range(11)]), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="score", criteria=["only"]), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="score", criteria={"0": "low", "1": "high"}), 422, loc=["body", "questions", "x", "criteria"])
err(q(type="noul"), 401, key="bad-key", etype="authentication_error")
err(q(type="noul"), 403, key=None, etype="authentication_error")
big = {"state": "word " * 400000, "questions": {"x": {"type": "noul"}}}
err(big, 413)
long_state = {"state": "lorem ipsum dolor " * 700, "questions": {"x": {"type": "noul"}}}
err(long_state, 413, etype="tokens_exceeded")
st, body, _ = call("/v1/nothing", {"a": 1})
check(st == 404, "unknown /v1 path 404")

# --- /v1/decide equals `typellm decide` run locally ------------------------------------
schema = {"type": "object", "properties": {
    "category": {"type": "string", "enum": ["meal", "travel", "equipment"], "description": "Expense category"},
    "refundable": {"type": "boolean"},
    "priority": {"type": "integer", "enum": [1, 2, 3]}}}
context = "Receipt: Taxi from the airport to the hotel, 42.50 EUR, paid by card."
sp = os.path.join(SCRATCH, "schema.json")
json.dump(schema, open(sp, "w"))
for mode in ("sequential", "batch", "auto"):
    st, remote, _ = call("/v1/decide", {"context": context, "schema": schema, "mode": mode})
    check(st == 200, f"/v1/decide {mode}: {st} {remote}")
    local = json.loads(subprocess.run([BIN, "decide", "--model", MODEL, "--schema", sp, "--context-text", context,
                                       "--mode", mode, "--threads", "1"], capture_output=True, check=True).stdout)
    check(remote["values"] == local["values"], f"{mode}: values equal the CLI's")
    for f, lf in local["fields"].items():
        rp = remote["fields"][f]["probabilities"]
        check(set(rp) == set(lf["probabilities"]) and
              all(abs(rp[k] - v) < 1e-9 for k, v in lf["probabilities"].items()), f"{mode}/{f}: probabilities")
# an array of objects (issue 13): the length decision, then each item; equal to the CLI's
aschema = {"type": "object", "properties": {
    "items": {"type": "array", "minItems": 1, "maxItems": 3, "description": "What was bought",
              "items": {"type": "object", "properties": {
                  "kind": {"type": "string", "enum": ["ride", "meal", "room"]},
                  "amount": {"anyOf": [{"type": "number", "minimum": 0, "maximum": 500, "x-decimals": 2},
                                       {"type": "null"}]},
                  "code": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["kind", "amount", "code"]}}}}
asp = os.path.join(SCRATCH, "aschema.json")
json.dump(aschema, open(asp, "w"))
for mode in ("sequential", "batch", "auto"):
    st, remote, _ = call("/v1/decide", {"context": context, "schema": aschema, "mode": mode})
    check(st == 200, f"/v1/decide array of objects {mode}: {st} {remote}")
    if st != 200:
        continue
    local = json.loads(subprocess.run([BIN, "decide", "--model", MODEL, "--schema", asp, "--context-text", context,
                                       "--mode", mode, "--threads", "1"], capture_output=True, check=True).stdout)
    check(remote["values"] == local["values"], f"array of objects {mode}: values equal the CLI's")
    n = remote["fields"]["items#length"]["value"]
    check(isinstance(remote["values"]["items"], list) and len(remote["values"]["items"]) == n,
          f"array of objects {mode}: {n} items")
    for f, lf in local["fields"].items():
        rp = remote["fields"][f].get("probabilities", {})
        check(set(rp) == set(lf.get("probabilities", {})) and
              all(abs(rp[k] - v) < 1e-9 for k, v in lf.get("probabilities", {}).items()), f"{mode}/{f}: probabilities")
# the same schema as an OpenAI json_schema response format (decided by tl_decide): valid content
st, body, _ = call("/v1/chat/completions", {"model": ex["model"], "messages": [{"role": "user", "content": context}],
                                            "response_format": {"type": "json_schema",
                                                                "json_schema": {"name": "order", "schema": aschema}}})
check(st == 200, f"chat json_schema, array of objects: {st} {body}")
if st == 200:
    import jsonschema
    content = json.loads(body["choices"][0]["message"]["content"])
    errs = list(jsonschema.Draft202012Validator(aschema).iter_errors(content))
    check(not errs and isinstance(content.get("items"), list), f"chat json_schema content {content}: {errs[:2]}")
st, body, _ = call("/v1/decide", {"context": context, "schema": {"type": "object", "properties": {"x": {"type": "string", "enum": []}}}})
check(st == 422 and "/properties/x" in json.dumps(body), f"/v1/decide bad schema -> 422 with path: {body}")
st, body, _ = call("/v1/decide", {"context": context})
check(st == 422 and body["detail"][0]["loc"] == ["body", "schema"], "/v1/decide missing schema")

finish("systemone_check", sys.stderr)
