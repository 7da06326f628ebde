"""http_status_check.py PORT: one error class after another through every
API of a live `typellm serve` started with --max-tokens 100 --timeout 1,
checked against the mapping docs/server.md documents (the table below is
written from the docs, not from the code):

  library status   /v1/decide, /v1/systemone   /v1/decisions (OpenAI)            /generate (SGLang)
  LIMIT            413 tokens_exceeded         400 context_length_exceeded       400
  SCHEMA           422 detail loc+value_error  (questions are checked at parse)  -
  INVALID          422 detail                  -                                 400 (request checks)
  TIMEOUT          -                           -                                 504

Each reply must also carry its dialect's body: FastAPI's detail, OpenAI's
{"error":{"message","type","param","code"}}, SGLang's {"error":{"message","code"}}."""
import json
import sys
import time
import urllib.error
import urllib.request

from checks import check, finish

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"


def call(path, body):
    req = urllib.request.Request(BASE + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


model = json.loads(urllib.request.urlopen(BASE + "/v1/models").read())["data"][0]["id"]
long_text = "word " * 300  # ~300 tokens: over --max-tokens 100, well inside the model's context
boolean = {"type": "object", "properties": {"a": {"type": "boolean", "question": "Yes?"}}}

# ---- LIMIT: a prompt over --max-tokens, in each dialect ---------------------------
st, b = call("/v1/decide", {"context": long_text, "schema": boolean})
check(st == 413 and b["detail"]["error_type"] == "tokens_exceeded" and "context is 30" in b["detail"]["message"],
      f"/v1/decide LIMIT -> 413 tokens_exceeded naming the context: {st} {b}")
st, b = call("/v1/systemone", {"state": long_text, "questions": {"q": {"type": "noul"}}})
check(st == 413 and b["detail"]["error_type"] == "tokens_exceeded" and "state is 30" in b["detail"]["message"],
      f"/v1/systemone LIMIT -> 413 tokens_exceeded: {st} {b}")
st, b = call("/v1/decisions", {"model": model, "input": long_text,
                               "questions": [{"type": "predicate", "instructions": "Yes?"}]})
e = b.get("error", {})
check(st == 400 and e.get("type") == "invalid_request_error" and e.get("code") == "context_length_exceeded"
      and e.get("param") == "input" and "100" in e.get("message", ""),
      f"/v1/decisions LIMIT -> 400 context_length_exceeded param input: {st} {b}")
st, b = call("/generate", {"text": long_text, "sampling_params": {"max_new_tokens": 1}})
check(st == 400 and b["error"]["code"] == 400 and "100" in b["error"]["message"], f"/generate LIMIT -> 400: {st} {b}")
# within the limit the same requests are served
st, _ = call("/v1/decide", {"context": "word " * 20, "schema": boolean})
check(st == 200, f"/v1/decide within --max-tokens -> 200: {st}")

# ---- SCHEMA: a schema the decision core refuses, with its JSON path ----------------
for schema, path in [({"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 1}}},
                      "/properties/a/minimum"),
                     ({"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 1]}}},
                      "/properties/a/enum/1")]:
    st, b = call("/v1/decide", {"context": "x", "schema": schema})
    d = b.get("detail", [{}])
    check(st == 422 and isinstance(d, list) and d[0].get("loc") == ["body", "schema"] and d[0].get("type") == "value_error"
          and path in d[0].get("msg", ""), f"/v1/decide SCHEMA -> 422 detail at body.schema naming {path}: {st} {b}")

# ---- INVALID: a bad constraint in a generation request -------------------------------
st, b = call("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 3, "regex": "(a"}})
check(st == 400 and b["error"]["code"] == 400 and "offset 4" in b["error"]["message"],
      f"/generate bad regex -> 400 naming the offset: {st} {b}")

# ---- TIMEOUT: a generation running past --timeout ------------------------------------
t0 = time.time()
st, b = call("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 4000, "ignore_eos": True}})
check(st == 504 and b["error"]["code"] == 504 and "timed out" in b["error"]["message"] and time.time() - t0 < 20,
      f"/generate past --timeout -> 504 at the deadline: {st} {b} after {time.time() - t0:.1f} s")
st, _ = call("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 2}})
check(st == 200, f"the server serves again after a timeout: {st}")

finish("http_status_check")
