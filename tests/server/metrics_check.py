"""metrics_check.py PORT KEY PROM_PORT SERVER_LOG: /metrics seen through a
real Prometheus (started by test_metrics.sh, scraping every second).

A scripted workload (decisions, generations, a bad schema, an unknown path)
runs between two scrapes; Prometheus' query API must then show the counters
moved by exactly that workload: requests by endpoint and status, prompt /
cached / computed tokens (the sum of the decisions' usage), generated tokens,
decisions by field kind. The request log (JSON lines) must have one line per
request with the same tokens, and never the context or the key."""
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

port, key, prom_port, log_path = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
base = f"http://127.0.0.1:{port}"
prom = f"http://127.0.0.1:{prom_port}"
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def query(expr):
    """{labels-json: value} of an instant query."""
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        d = json.loads(r.read())
    assert d["status"] == "success", d
    return {json.dumps({k: v for k, v in s["metric"].items() if k not in ("instance", "job")}, sort_keys=True):
            float(s["value"][1]) for s in d["data"]["result"]}


def last_scrape():
    """The time (s) of Prometheus' latest scrape of the server, or 0 (none yet or not up)."""
    # timestamp() of a plain selector: the sample's own time (an instant query's
    # [t, v], or timestamp() of an expression, carries the evaluation time)
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": 'timestamp(up{job="typellm"})'})
    with urllib.request.urlopen(url, timeout=10) as r:
        res = json.loads(r.read())["data"]["result"]
    return float(res[0]["value"][1]) if res and list(query('up{job="typellm"}').values()) == [1.0] else 0


def wait_for_scrape(after):
    """Waits until Prometheus holds a scrape that started after time `after`
    (this machine's clock, Prometheus' too), so it saw everything done before."""
    t0 = time.time()
    while time.time() - t0 < 30:
        try:
            ts = last_scrape()
            if ts > after:
                return ts
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.2)
    raise SystemExit("FAIL: Prometheus did not scrape typellm serve within 30 s")


COUNTERS = ["typellm:requests_total", "typellm:prompt_tokens_total", "typellm:cached_tokens_total",
            "typellm:computed_tokens_total", "typellm:generation_tokens_total", "typellm:decisions_total",
            "typellm:aborted_requests_total"]


def snapshot():
    out = {}
    for c in COUNTERS:
        for labels, v in query(c).items():
            out[c + labels] = v
    return out


# The workload: decisions (a repeat hits the cache), generations, errors.
receipt = json.load(open(sys.argv[5] + "/examples/receipt/schema.json"))
ticket = json.load(open(sys.argv[5] + "/examples/ticket/schema.json"))
SECRET_CONTEXT = "Receipt from the Zanzibar Quokka Hotel, total 324 GBP"
work = [
    {"context": SECRET_CONTEXT, "schema": receipt},
    {"context": SECRET_CONTEXT, "schema": receipt},            # the same again: cached tokens
    {"context": "The payments API returns 500 for every card since the deploy.", "schema": ticket, "mode": "sequential"},
    {"context": "A blank checkout page.", "schema": {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 9, "question": "How many?"},
        "ok": {"type": "boolean"}}}},
]

n0 = wait_for_scrape(0)
before = snapshot()

usage = {"prompt": 0, "cached": 0, "computed": 0}
kinds = {"enum": 0, "boolean": 0, "score": 0, "integer": 0, "number": 0, "string": 0}
replies = []
for body in work:
    st, d = post("/v1/decide", body)
    check(st == 200, f"decide answered {st}: {d}")
    replies.append(d)
    usage["prompt"] += d["usage"]["prompt_tokens"]
    usage["cached"] += d["usage"]["cached_tokens"]
    usage["computed"] += d["usage"]["computed_tokens"]
    for f in body["schema"]["properties"].values():
        k = ("enum" if "enum" in f else "boolean" if f.get("type") == "boolean" else
             "score" if f.get("format") == "score" else f["type"])
        kinds[k] += 1
check(usage["cached"] > 0 and usage["computed"] > 0, f"the workload both computes and reuses tokens: {usage}")
# A scrape between the decisions and the generations: the token counters'
# step of the decisions alone is the sum of their replies' usage.
n_mid = wait_for_scrape(time.time())
mid = snapshot()
generated = 0
for text in ["Once upon a time", "The quick brown fox"]:
    st, d = post("/generate", {"text": text, "sampling_params": {"max_new_tokens": 5, "temperature": 0, "ignore_eos": True}})
    check(st == 200, f"generate answered {st}")
    generated += d["meta_info"]["completion_tokens"]
st, _ = post("/v1/decide", {"context": "x", "schema": {"type": "object", "properties": {"a": {"type": "string", "enum": []}}}})
check(st == 422, f"a bad schema is 422 ({st})")
st, _ = post("/no/such/path", {})
check(st == 404, f"an unknown path is 404 ({st})")

n1 = wait_for_scrape(time.time())
after = snapshot()


def delta(name):
    return after.get(name, 0) - before.get(name, 0)


def delta_decisions(name):
    return mid.get(name, 0) - before.get(name, 0)


def series(metric, **labels):
    return metric + json.dumps({"__name__": metric, **labels}, sort_keys=True)


expect = {
    series("typellm:requests_total", endpoint="/v1/decide", status="200"): len(work),
    series("typellm:requests_total", endpoint="/v1/decide", status="422"): 1,
    series("typellm:requests_total", endpoint="/generate", status="200"): 2,
    series("typellm:requests_total", endpoint="other", status="404"): 1,
    series("typellm:generation_tokens_total"): generated,
    series("typellm:aborted_requests_total", reason="timeout"): 0,
}
for k, n in kinds.items():
    expect[series("typellm:decisions_total", kind=k)] = n
tokens = {series("typellm:prompt_tokens_total"): usage["prompt"],
          series("typellm:cached_tokens_total"): usage["cached"],
          series("typellm:computed_tokens_total"): usage["computed"]}
for name, want in tokens.items():
    check(delta_decisions(name) == want, f"{name} moved by {delta_decisions(name)} over the decisions; their usage sums to {want}")
for name, want in expect.items():
    check(delta(name) == want, f"{name} moved by {delta(name)}, the workload made {want}")
# nothing else moved, apart from the scrapes themselves and the generations' tokens
for name in set(before) | set(after):
    if name not in expect and name not in tokens and '"/metrics"' not in name:
        check(delta(name) == 0, f"{name} moved by {delta(name)} though the workload made none")
ratio = query("typellm:prefix_cache_hit_ratio")
tot = after[series("typellm:prompt_tokens_total")]
check(ratio and abs(list(ratio.values())[0] - after[series("typellm:cached_tokens_total")] / tot) < 1e-12,
      f"the hit ratio is cached / prompt ({ratio})")
hist = query("typellm:forward_pass_seconds_count")
check(hist and list(hist.values())[0] > 0, f"forward passes timed ({hist})")
ttft = query("typellm:time_to_first_token_seconds_count")
check(ttft and list(ttft.values())[0] == 2, f"two first tokens timed ({ttft})")
lat = query("typellm:e2e_request_latency_seconds_count")
check(lat and list(lat.values())[0] == len(work) + 3, f"the latency histogram holds the requests that ran the model, not the scrapes ({lat})")
cache = query("typellm:prefix_cache_bytes")
check(cache and list(cache.values())[0] > 0, f"the prefix cache's size is reported ({cache})")

# The request log: one JSON line per request, tokens as the replies say.
time.sleep(0.2)
lines = [json.loads(l) for l in open(log_path) if l.startswith("{")]
raw = open(log_path).read()
check(SECRET_CONTEXT not in raw and "Zanzibar" not in raw, "the log never holds the context")
check(key not in raw, "the log never holds the key")
# (the first decision is test_metrics.sh's own, before Prometheus started)
decide_lines = [l for l in lines if l["endpoint"] == "/v1/decide" and l["status"] == 200][1:]
check(len(decide_lines) == len(work), f"{len(decide_lines)} log lines for {len(work)} decisions")
for l, d in zip(decide_lines, replies):
    u = d["usage"]
    got = (l["prompt_tokens"], l["cached_tokens"], l["computed_tokens"])
    check(got == (u["prompt_tokens"], u["cached_tokens"], u["computed_tokens"]), f"log line {l} against usage {u}")
    check(abs(l["cache_reuse"] - round(u["cached_tokens"] / u["prompt_tokens"], 4)) < 1e-9, f"cache_reuse of {l}")
ids = [l["id"] for l in lines]
check(len(set(ids)) == len(ids), "request ids are unique")
check(any(l["endpoint"] == "/no/such/path" and l["status"] == 404 for l in lines), "the 404 is logged")

if failures:
    sys.exit(f"metrics_check: {failures} failure(s)")
print(f"metrics_check: ok ({len(expect) + len(tokens)} counters moved exactly; scrapes at {n0:.3f}, {n_mid:.3f}, {n1:.3f})")
