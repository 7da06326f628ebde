"""sglang_api_check.py PORT KEY: drives every SGLang endpoint and field of a
running `typellm serve` on stories260k-f32 (vocab 512, so a top-512 logprob
list is the whole distribution) and checks shapes and numbers against the
llama.cpp greedy reference. Exit status 1 on the first failed check."""
import json
import math
import os
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

from checks import check, finish

PORT, KEY = int(sys.argv[1]), sys.argv[2]
BASE = f"http://127.0.0.1:{PORT}"
FIX = os.environ["TL_FIXTURES"]


def call(path, body=None, key=KEY, raw=None, method=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(BASE + path, data=data, method=method or ("POST" if data is not None else "GET"))
    if key:
        req.add_header("Authorization", "Bearer " + key)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def jcall(path, body=None, **kw):
    st, text, _ = call(path, body, **kw)
    try:
        return st, json.loads(text) if text else None
    except ValueError:
        return st, text


ref = json.load(open(f"{FIX}/ref/stories260k-f32.greedy-story.json"))

# --- health, auth ---------------------------------------------------------------
st, _, _ = call("/health", key=None)
check(st == 200, "/health without key is 200")
st, body = jcall("/model_info", key=None)
check(st == 403 and body["detail"]["error_type"] == "authentication_error", f"missing key -> 403 ({st} {body})")
st, body = jcall("/model_info", key="wrong")
check(st == 401 and body["detail"]["error_type"] == "authentication_error", f"bad key -> 401 ({st})")
st, body = jcall("/generate", {"text": "x"}, key="wrong")
check(st == 401, "bad key on /generate -> 401")
st, _, _ = call("/health_generate")
check(st == 200, "/health_generate")

# --- model info, tokenize, detokenize ---------------------------------------------
for path in ("/model_info", "/get_model_info"):
    st, info = jcall(path)
    check(st == 200 and info["is_generation"] is True and info["model_path"].endswith("stories260k-f32.gguf"),
          f"{path}: {info}")
    # exactly SGLang's fields (http_server.py model_info): nothing a client could come to rely on
    want = {"model_path", "tokenizer_path", "is_generation", "preferred_sampling_params", "weight_version",
            "has_image_understanding", "has_audio_understanding", "model_type", "architectures"}
    check(set(info) == want, f"{path}: fields {sorted(set(info) ^ want)} differ from SGLang's")
st, tok = jcall("/tokenize", {"prompt": "Once upon a time, there was a dog named"})
check(st == 200 and tok["tokens"] == ref["prompt"] and tok["count"] == len(ref["prompt"]) and tok["max_model_len"] > 0,
      f"/tokenize matches the reference ids: {tok}")
st, tok2 = jcall("/v1/tokenize", {"prompt": ["Once", "upon"], "add_special_tokens": False})
check(st == 200 and len(tok2["tokens"]) == 2 and tok2["tokens"][0][0] != 1 and tok2["count"] == [len(t) for t in tok2["tokens"]],
      f"/v1/tokenize list without BOS: {tok2}")
st, de = jcall("/detokenize", {"tokens": ref["prompt"], "skip_special_tokens": True})
check(st == 200 and de["text"] == "Once upon a time, there was a dog named", f"/detokenize: {de}")
st, de = jcall("/detokenize", {"tokens": [ref["prompt"], ref["prompt"][:3]]})
check(st == 200 and isinstance(de["text"], list) and de["text"][1] == "Once upon", f"/detokenize batch: {de}")

# --- greedy generation against llama.cpp -----------------------------------------
n = 24
st, g = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": n, "temperature": 0},
                            "return_logprob": True, "return_text_in_logprobs": True})
check(st == 200, f"/generate greedy {st}")
check(g["output_ids"] == ref["generated"][:n], f"greedy ids equal the reference: {g['output_ids']} vs {ref['generated'][:n]}")
m = g["meta_info"]
check(m["prompt_tokens"] == len(ref["prompt"]) and m["completion_tokens"] == n, "prompt/completion token counts")
check(m["finish_reason"] == {"type": "length", "length": n}, f"finish_reason length: {m['finish_reason']}")
check(isinstance(m["id"], str) and m["e2e_latency"] >= 0, "id, e2e_latency")
lps = m["output_token_logprobs"]
check(len(lps) == n and all(len(t) == 3 and t[1] == i for t, i in zip(lps, g["output_ids"])), "output_token_logprobs triples")
check(max(abs(t[0] - r) for t, r in zip(lps, ref["logprobs"])) < 0.02, "greedy logprobs within 0.02 of llama.cpp")
check(all(isinstance(t[2], str) for t in lps), "return_text_in_logprobs gives text")
check(m["input_token_logprobs"] == [] and m["output_top_logprobs"] == [None] * n, "no input logprobs at start_len -1")
st, de = jcall("/detokenize", {"tokens": g["output_ids"]})
check(g["text"] == de["text"] or g["text"].lstrip() == de["text"].lstrip(), "text is the detokenized output")

# --- cache: prefill with max_new_tokens 0, then extension; flush --------------------
jcall("/flush_cache")
ctx = ref["prompt"] + ref["generated"][:30]
st, w = jcall("/generate", {"input_ids": ctx, "sampling_params": {"max_new_tokens": 0}})
check(st == 200 and w["output_ids"] == [] and w["meta_info"]["completion_tokens"] == 0
      and w["meta_info"]["finish_reason"]["length"] == 0 and w["meta_info"]["cached_tokens"] == 0,
      f"max_new_tokens 0 prefill from an empty cache: {w['meta_info']}")
st, e = jcall("/generate", {"input_ids": ctx + [ref["generated"][30]], "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
check(e["meta_info"]["cached_tokens"] == len(ctx), f"extension reuses the prefix: cached {e['meta_info']['cached_tokens']} of {len(ctx)}")
st, e2 = jcall("/generate", {"input_ids": ctx + [ref["generated"][30]], "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
check(e2["meta_info"]["cached_tokens"] == len(ctx), "repeat: cached_tokens = prompt_tokens - 1")
st, text, _ = call("/flush_cache")
check(st == 200, "/flush_cache")
st, e3 = jcall("/generate", {"input_ids": ctx + [ref["generated"][30]], "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
check(e3["meta_info"]["cached_tokens"] == 0, f"after flush nothing is cached: {e3['meta_info']['cached_tokens']}")

# --- batches ----------------------------------------------------------------------
prompts = ["Once upon a time", "The cat sat", "Lily was happy"]
singles = [jcall("/generate", {"text": p, "sampling_params": {"max_new_tokens": 8, "temperature": 0}})[1] for p in prompts]
st, batch = jcall("/generate", {"text": prompts, "sampling_params": {"max_new_tokens": 8, "temperature": 0}})
check(st == 200 and isinstance(batch, list) and len(batch) == 3, "text batch is a list")
check([b["output_ids"] for b in batch] == [s["output_ids"] for s in singles], "batch items equal single requests")
ids = [jcall("/tokenize", {"prompt": p})[1]["tokens"] for p in prompts]
st, b2 = jcall("/generate", {"input_ids": ids, "sampling_params": [{"max_new_tokens": 8, "temperature": 0},
                                                                    {"max_new_tokens": 3, "temperature": 0},
                                                                    {"max_new_tokens": 0}],
                             "return_logprob": True, "token_ids_logprob": [[1, 2], [383], [5]]})
check(st == 200 and b2[0]["output_ids"] == singles[0]["output_ids"] and len(b2[1]["output_ids"]) == 3
      and b2[2]["output_ids"] == [], "input_ids batch with per-item sampling_params")
tid = b2[1]["meta_info"]["output_token_ids_logprobs"]
check(len(tid) == 3 and all(len(p) == 1 and p[0][1] == 383 for p in tid), f"per-item token_ids_logprob: {tid}")

# --- full distribution, temperature scaling, top-k/top-p, seeds ----------------------
body = {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 1, "temperature": 0},
        "return_logprob": True, "top_logprobs_num": 512, "token_ids_logprob": [392, 412, 5]}
st, g0 = jcall("/generate", body)
top = g0["meta_info"]["output_top_logprobs"][0]
check(len(top) == 512 and abs(sum(math.exp(t[0]) for t in top) - 1) < 1e-6, "greedy: top-512 logprobs sum to 1")
check(all(top[i][0] >= top[i + 1][0] for i in range(511)), "top logprobs sorted")
lp1 = {t[1]: t[0] for t in top}
for t in g0["meta_info"]["output_token_ids_logprobs"][0]:
    check(abs(lp1[t[1]] - t[0]) < 1e-9, "token_ids_logprob equals the same id in top logprobs")
body["sampling_params"] = {"max_new_tokens": 1, "temperature": 0.5, "sampling_seed": 7}
st, gt = jcall("/generate", body)
topT = {t[1]: t[0] for t in gt["meta_info"]["output_top_logprobs"][0]}
check(abs(sum(math.exp(v) for v in topT.values()) - 1) < 1e-6, "T=0.5 logprobs are normalized")
a, b = 392, 412
check(abs((topT[a] - topT[b]) - (lp1[a] - lp1[b]) / 0.5) < 1e-6, "logprobs are temperature-scaled")
s1 = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 1.0, "sampling_seed": 3}})[1]
s2 = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 1.0, "sampling_seed": 3}})[1]
check(s1["output_ids"] == s2["output_ids"], "same seed, same sample")
gk = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 1.0, "top_k": 1}})[1]
gp = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 1.0, "top_p": 1e-9}})[1]
gm = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 1.0, "min_p": 1.0}})[1]
gg = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 12, "temperature": 0}})[1]
check(gk["output_ids"] == gg["output_ids"] == gp["output_ids"] == gm["output_ids"], "top_k 1 / tiny top_p / min_p 1 equal greedy")

# --- stops, eos, regex ------------------------------------------------------------
full = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 30, "temperature": 0}})[1]
word = full["text"].split()[3]
st, ss = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 30, "temperature": 0, "stop": [word]}})
check(ss["meta_info"]["finish_reason"] == {"type": "stop", "matched": word} and word not in ss["text"]
      and full["text"].startswith(ss["text"]), f"stop string {word!r}: {ss['text']!r} {ss['meta_info']['finish_reason']}")
k = next(i for i in range(3, 30) if ref["generated"][i] not in ref["generated"][:i])
stop_id = ref["generated"][k]
st, si = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 30, "temperature": 0, "stop_token_ids": [stop_id]}})
check(si["output_ids"] == ref["generated"][:k + 1] and si["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop_id},
      f"stop_token_ids: {si['output_ids']} {si['meta_info']['finish_reason']}")
st, ie = jcall("/generate", {"text": "The end.", "sampling_params": {"max_new_tokens": 40, "temperature": 0, "ignore_eos": True}})
check(ie["meta_info"]["completion_tokens"] == 40, "ignore_eos runs to max_new_tokens")
st, ee = jcall("/generate", {"text": "The end.", "sampling_params": {"max_new_tokens": 200, "temperature": 0,
                                                                      "stop_token_ids": [2]}})
check(ee["meta_info"]["finish_reason"]["type"] in ("stop", "length"), "eos or length")
for pat, ok in (("[0-9]{1,3}", lambda t: re.fullmatch("[0-9]{1,3}", t)),
                ("-?(0|[1-9][0-9]*)(\\.[0-9]+)?", lambda t: re.fullmatch("-?(0|[1-9][0-9]*)(\\.[0-9]+)?", t)),
                ("(cat|dog|bird)", lambda t: t in ("cat", "dog", "bird"))):
    for temp in (0, 1.0):
        st, rg = jcall("/generate", {"text": "Once upon a time there was a", "sampling_params": {
            "max_new_tokens": 6, "temperature": temp, "regex": pat, "sampling_seed": 11}})
        check(st == 200 and ok(rg["text"]) or (rg["meta_info"]["finish_reason"]["type"] == "length" and
                                               re.fullmatch(pat[:0] + ".*", rg["text"])),
              f"regex {pat} T={temp}: {rg['text']!r} {rg['meta_info']['finish_reason']}")
        if pat == "(cat|dog|bird)":
            check(ok(rg["text"]) and rg["meta_info"]["finish_reason"]["type"] == "stop", f"enum regex completes: {rg}")
st, rb = jcall("/generate", {"text": "x", "sampling_params": {"regex": "(unclosed"}})
check(st == 400 and "regex" in rb["error"]["message"], f"bad regex -> 400 {rb}")

# --- input logprobs, text in logprobs off ----------------------------------------------
st, il = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 1, "temperature": 0},
                             "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 2})
itl = il["meta_info"]["input_token_logprobs"]
check(len(itl) == len(ref["prompt"]) and itl[0][0] is None and all(t[2] is None for t in itl), "input logprobs from 0")
check(il["meta_info"]["input_top_logprobs"][0] is None and len(il["meta_info"]["input_top_logprobs"][1]) == 2, "input top logprobs")
st, il5 = jcall("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 1, "temperature": 0},
                              "return_logprob": True, "logprob_start_len": 5})
check(len(il5["meta_info"]["input_token_logprobs"]) == len(ref["prompt"]) - 5
      and abs(il5["meta_info"]["input_token_logprobs"][0][0] - itl[5][0]) < 1e-6, "logprob_start_len 5")

# --- streaming ------------------------------------------------------------------------
st, text, hdr = call("/generate", {"input_ids": ref["prompt"], "sampling_params": {"max_new_tokens": 6, "temperature": 0}, "stream": True})
lines = [l for l in text.split("\n") if l]
check(st == 200 and hdr.get("Content-Type", "").startswith("text/event-stream"), "stream content type")
check(lines[-1] == "data: [DONE]" and all(l.startswith("data: ") for l in lines), "SSE framing")
events = [json.loads(l[6:]) for l in lines[:-1]]
check(len(events) == 6 and events[-1]["output_ids"] == ref["generated"][:6] and
      events[-1]["meta_info"]["finish_reason"]["type"] == "length", "stream events are cumulative, last is final")

# events arrive while generation runs (not all at the end)
s = socket.create_connection(("127.0.0.1", PORT))
req = json.dumps({"text": "Once", "stream": True, "sampling_params": {"max_new_tokens": 300, "temperature": 0, "ignore_eos": True}})
s.sendall((f"POST /generate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
           f"Connection: close\r\nContent-Length: {len(req)}\r\n\r\n{req}").encode())
t0 = time.time()
buf = b""
while b"data: {" not in buf:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
t_first = time.time() - t0
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
t_all = time.time() - t0
s.close()
check(b"data: [DONE]" in buf and buf.count(b"data: {") == 300, "streamed 300 events and [DONE]")
check(t_first < t_all / 3, f"first event after {t_first:.3f}s, all after {t_all:.3f}s: events are sent as they come")
st, txt, _ = call("/generate", {"input_ids": [1] * 600, "stream": True, "sampling_params": {"max_new_tokens": 1}})
check(st == 200 and '"error"' in txt and txt.rstrip().endswith("data: [DONE]"), f"an error inside a stream is an event: {txt[:200]}")

# --- errors (SGLang dialect) -------------------------------------------------------------
for raw, want in ((b"{", 400), (b"[]", 400), (b'{"text":5}', 400), (b'{"input_ids":[99999]}', 400),
                  (b'{"text":"a","sampling_params":{"max_new_tokens":"x"}}', 400)):
    st, txt, _ = call("/generate", raw=raw)
    check(st == want and "message" in json.loads(txt)["error"], f"/generate {raw!r} -> {st} {txt}")
st, txt, _ = call("/generate", {"input_ids": [1] * 600, "sampling_params": {"max_new_tokens": 1}})
check(st == 400, f"prompt beyond the context -> 400 ({st})")
st, _, _ = call("/nope")
check(st == 404, "unknown path 404")
st, _, _ = call("/generate", method="GET")
check(st == 405, "GET /generate 405")
st, txt, _ = call("/generate", raw=b'{"text":"' + b"a" * 300000 + b'"}')
check(st == 413, f"body over --max-body -> 413 ({st})")

# --- a client that goes away does not stall others ---------------------------------------
s = socket.create_connection(("127.0.0.1", PORT))
req = json.dumps({"text": "Once", "sampling_params": {"max_new_tokens": 400, "temperature": 1.0, "ignore_eos": True}})
s.sendall((f"POST /generate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(req)}\r\n\r\n{req}").encode())
time.sleep(0.2)
s.close()
t0 = time.time()
st, q = jcall("/generate", {"text": "Once", "sampling_params": {"max_new_tokens": 2, "temperature": 0}})
check(st == 200, "server answers while a departed client's request is cancelled")

# --- concurrency: parallel requests give the same answers --------------------------------
results = [None] * 8
def worker(i):
    results[i] = jcall("/generate", {"text": prompts[i % 3], "sampling_params": {"max_new_tokens": 8, "temperature": 0}})[1]
threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
check(all(results[i]["output_ids"] == singles[i % 3]["output_ids"] for i in range(8)), "8 concurrent clients, same outputs")

finish("sglang_api_check", sys.stderr)
