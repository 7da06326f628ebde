#!/usr/bin/python3
"""compare_serve.py: the load driver of bench/compare_serve.sh (python3 stdlib only).

  compare_serve.py make --url TYPELLM --out WORKLOAD.json [--decisions N] [--seed S]
  compare_serve.py run --side typellm|llama --url URL --workload WORKLOAD.json --clients N [--pid PID]

make: writes a workload of N decisions: a 300-token instruction prefix shared by all, then a
distinct context of 500-1,500 tokens each (random words from a fixed list, lengths fitted with
the typellm server's /tokenize), then one 4-way choice question. The workload is fixed before any
server answers, so both sides get the same bytes in the same order.

run: N clients take the next decision from the list as soon as their previous one is answered
(closed loop per client, fixed request list), until the list is done. typellm answers through
/v1/decisions; llama-server through /completion with cache_prompt (the prompt rendered as the
model's ChatML), n_predict 1, n_probs 4, post_sampling_probs with only the temperature sampler
(1.0) and logit_bias +1000 on the four label tokens: the same bias on every label leaves their
renormalized probabilities unchanged and puts them above every other token (a random model's
logits span more than 100), so the four probabilities returned are the decision's.
Prints one JSON line: decisions, seconds, decisions_s, p50_s, p99_s, errors, tokens_computed,
peak_rss_mb (VmHWM of --pid when given).
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

WORDS = ("account billing charge refund invoice payment card bank transfer order shipping delivery "
         "package address customer support ticket issue problem error login password reset email phone "
         "subscription plan upgrade downgrade cancel renew trial price discount coupon tax receipt "
         "statement balance credit debit fraud dispute merchant store product return exchange warranty "
         "repair broken damaged missing late early tracking number status update request response agent "
         "manager escalate resolve close open pending waiting urgent normal priority week month day hour "
         "yesterday today tomorrow morning evening night again still never always please thanks sorry "
         "help need want could would should because however although while after before during").split()
LABELS = ["billing", "shipping", "account", "other"]


def post(url, path, body, timeout=7200):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, data
    finally:
        c.close()


def get(url, path):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def n_tokens(url, text):
    st, data = post(url, "/tokenize", {"prompt": text})
    if st != 200:
        sys.exit(f"compare_serve.py: /tokenize answered {st}: {data[:200]!r}")
    d = json.loads(data)
    return len(d.get("tokens", d.get("input_ids", [])))


def text_of_tokens(url, rng, target):
    """Random words whose tokenization is target tokens within 2%."""
    words = [rng.choice(WORDS) for _ in range(int(target / 1.1))]
    for _ in range(6):
        n = n_tokens(url, " ".join(words))
        if abs(n - target) <= target // 50:
            break
        if n < target:
            words += [rng.choice(WORDS) for _ in range(max(1, int((target - n) / 1.1)))]
        else:
            del words[max(1, len(words) - int((n - target) / 1.1) - 1):]
    return " ".join(words)


def cmd_make(a):
    rng = random.Random(a.seed)
    prefix = ("You are the triage assistant of a support desk. Read the customer's message below and "
              "classify it. Rules: " + text_of_tokens(a.url, rng, 280))
    items = []
    for i in range(a.decisions):
        ctx = text_of_tokens(a.url, rng, rng.randint(500, 1500))
        items.append({"context": f"Ticket {i}: {ctx}"})
    json.dump({"prefix": prefix, "question": "Which team should handle this ticket?", "labels": LABELS,
               "items": items}, open(a.out, "w"))
    print(f"compare_serve.py: {a.decisions} decisions, prefix {n_tokens(a.url, prefix)} tokens", file=sys.stderr)


def chatml(w, item):
    opts = ", ".join(w["labels"])
    return (f"<|im_start|>system\n{w['prefix']}<|im_end|>\n<|im_start|>user\n{item['context']}\n\n"
            f"{w['question']} Answer with one of: {opts}.<|im_end|>\n<|im_start|>assistant\n")


def cmd_run(a):
    w = json.load(open(a.workload))
    items = w["items"][:a.limit] if a.limit else w["items"]
    if a.side == "typellm":
        st, data = get(a.url, "/v1/models")
        model = json.loads(data)["data"][0]["id"]
        def request(item):
            body = {"model": model,
                    "input": [{"role": "system", "content": w["prefix"]}, {"role": "user", "content": item["context"]}],
                    "questions": [{"type": "choice", "instructions": w["question"],
                                   "choices": [{"value": v} for v in w["labels"]]}]}
            st, data = post(a.url, "/v1/decisions", body)
            if st != 200:
                return False, 0, f"{st} {data[:200]!r}"
            d = json.loads(data)
            ans = d["answers"][0] if "answers" in d else d.get("output", [{}])[0]
            u = d.get("usage", {})
            computed = u.get("input_tokens", 0) - u.get("input_tokens_details", {}).get("cached_tokens", 0)
            ok = ans.get("choice") in w["labels"]
            return ok, computed, None if ok else f"answer {ans!r}"
    else:
        bias = []
        for v in w["labels"]:
            st, data = post(a.url, "/tokenize", {"content": v})
            bias.append([json.loads(data)["tokens"][0], 1000])
        label_ids = {b[0] for b in bias}
        def request(item):
            body = {"prompt": chatml(w, item), "n_predict": 1, "n_probs": len(w["labels"]), "cache_prompt": True,
                    "temperature": 1.0, "samplers": ["temperature"], "post_sampling_probs": True, "logit_bias": bias}
            st, data = post(a.url, "/completion", body)
            if st != 200:
                return False, 0, f"{st} {data[:200]!r}"
            d = json.loads(data)
            probs = d.get("completion_probabilities") or [{}]
            top = probs[0].get("top_logprobs") or probs[0].get("top_probs") or probs[0].get("probs") or []
            ids = {t.get("id", t.get("tok")) for t in top}
            ok = bool(ids) and ids <= label_ids
            return ok, d.get("timings", {}).get("prompt_n", 0), None if ok else f"probs {probs[:1]!r}"
    lock = threading.Lock()
    state = {"next": 0, "lat": [], "errors": 0, "computed": 0, "first_error": None}

    def client():
        while True:
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= len(items):
                return
            t0 = time.monotonic()
            try:
                ok, computed, why = request(items[i])
            except Exception as e:  # a socket error counts as a failed decision
                ok, computed, why = False, 0, repr(e)
            dt = time.monotonic() - t0
            with lock:
                state["lat"].append(dt)
                state["computed"] += computed
                if not ok:
                    state["errors"] += 1
                    state["first_error"] = state["first_error"] or why

    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat = sorted(state["lat"])
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
    rss = 0
    if a.pid:
        for line in open(f"/proc/{a.pid}/status"):
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    ok = len(lat) - state["errors"]  # only answered decisions count
    out = {"side": a.side, "clients": a.clients, "decisions": ok, "seconds": round(wall, 3),
           "decisions_s": round(ok / wall, 4), "p50_s": round(pct(0.50), 3), "p99_s": round(pct(0.99), 3),
           "errors": state["errors"], "tokens_computed": state["computed"], "peak_rss_mb": round(rss, 1)}
    if state["first_error"]:
        out["first_error"] = state["first_error"]
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--url", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--decisions", type=int, default=128)
    m.add_argument("--seed", type=int, default=31)
    r = sub.add_parser("run")
    r.add_argument("--side", choices=["typellm", "llama"], required=True)
    r.add_argument("--url", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--clients", type=int, required=True)
    r.add_argument("--pid", type=int, default=0)
    r.add_argument("--limit", type=int, default=0, help="the first N decisions of the workload only")
    a = p.parse_args()
    cmd_make(a) if a.cmd == "make" else cmd_run(a)


if __name__ == "__main__":
    main()
