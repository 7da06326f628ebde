"""robustness_check.py PORT PID: what no request may do to `typellm serve`
(qwen2-d64-q8_0): oversized logprob asks and texts are refused before the
work (413/400, fast, naming the limit), a NUL in the path is not routed, one
client cannot take every connection (per-client cap; /health from another
address still answered), a client trickling its headers is cut at the
header deadline, and SIGTERM drains: a running stream ends with [DONE],
new requests get 503 with Retry-After, the server exits 0 (checked by the
caller)."""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

from checks import check, finish

PORT, PID = int(sys.argv[1]), int(sys.argv[2])
BASE = f"http://127.0.0.1:{PORT}"


def call(path, body=None, raw=None, timeout=60):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(BASE + path, data=data, method="POST" if data is not None else "GET")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def rss_kb():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


model = json.loads(call("/v1/models")[1])["data"][0]["id"]

# --- the path is routed as sent ------------------------------------------------------
st, body, _ = call("/v1/decide%00", {"context": "x", "schema": {}})
check(st == 404, f"/v1/decide%00 is not /v1/decide: {st} {body[:100]}")
st, _, _ = call("/v1/decisions%00x", {"model": model})
check(st == 404, f"/v1/decisions%00x: {st}")

# --- logprob entries count prompt positions x items x top-k ------------------------------
item = "the quick brown fox jumps over the lazy dog " * 50
t0 = time.time()
st, body, _ = call("/generate", {"text": [item] * 16, "sampling_params": {"max_new_tokens": 1},
                                 "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 1000,
                                 "return_text_in_logprobs": True})
check(st == 413 and b"logprob entries" in body and time.time() - t0 < 10,
      f"16 x ~450 prompt positions x top 1000 -> 413 naming the limit: {st} {body[:200]}")
st, body, _ = call("/generate", {"text": "hello there", "sampling_params": {"max_new_tokens": 2},
                                 "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": 5})
check(st == 200 and len(json.loads(body)["meta_info"]["input_top_logprobs"]) > 1, "a small prompt-logprob ask is served")

# --- a text that cannot fit the context is refused before it is tokenized ------------
rss0 = rss_kb()
word = "a" * (7 << 20)
for path, body, want, what in [
        ("/generate", {"text": word, "sampling_params": {"max_new_tokens": 1}}, 400, "at least"),
        ("/v1/systemone", {"state": word, "questions": {"q": {"type": "noul"}}}, 413, "tokens_exceeded"),
        ("/v1/decisions", {"model": model, "input": word, "questions": [{"type": "predicate", "instructions": "?"}]},
         400, "context_length_exceeded"),
        ("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": word}]}, 400,
         "context_length_exceeded")]:
    t0 = time.time()
    st, reply, _ = call(path, body)
    check(st == want and what.encode() in reply and time.time() - t0 < 5,
          f"{path}: a 7 MB word -> {want} ({what}) at once: {st} {time.time() - t0:.1f}s {reply[:160]}")
check(rss_kb() - rss0 < 500_000, f"no tokenizer blow-up (was 616 MB per word): RSS {rss0} -> {rss_kb()} kB")

# --- one client cannot take every connection --------------------------------------------
def held_by_server(ports):
    """How many of our connections (by their local ports; None: any) the
    server process has accepted: its socket fds whose TCP peer is one of those ports."""
    inodes = set()
    for fd in os.listdir(f"/proc/{PID}/fd"):
        try:
            link = os.readlink(f"/proc/{PID}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            local_port, remote_port, inode = int(cols[1].split(":")[1], 16), int(cols[2].split(":")[1], 16), cols[9]
            n += local_port == PORT and (ports is None or remote_port in ports) and remote_port != 0 and inode in inodes
    return n


# The earlier steps' connections count against the same address's cap until
# the server has closed them (CI once saw one still open: the server then held
# 63 of ours, and served the 65th once it closed): wait until it holds none.
t_quiet = time.time()
while held_by_server(None) > 0 and time.time() - t_quiet < 20:
    time.sleep(0.05)
check(held_by_server(None) == 0, f"the earlier steps' connections closed: {held_by_server(None)} still open")
idle = []
t_open = time.time()
for _ in range(70):
    try:
        c = socket.create_connection(("127.0.0.1", PORT), timeout=30)
        idle.append(c)
    except OSError:
        break
check(len(idle) == 70, f"70 TCP connections open (the kernel queues those past the cap): {len(idle)}")
# The server accepts them one by one (a thread each): under load that takes a
# while, so wait until it holds its 64 before asking for the 65th, but within
# the header deadline (10 s from each connect), after which it drops them.
ports = {c.getsockname()[1] for c in idle}
while held_by_server(ports) < 64 and time.time() - t_open < 8:
    time.sleep(0.05)
time.sleep(0.2)
held = held_by_server(ports)
check(held == 64, f"the server holds 64 connections from one address: {held} "
      f"({time.time() - t_open:.1f} s after the first connect)")
other = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10, source_address=("127.0.0.2", 0))
other.request("GET", "/health")
st = other.getresponse().status
other.close()
check(st == 200, f"/health from another address (127.0.0.2) while one holds its cap: {st}")
try:
    st, _, _ = call("/health", timeout=5)
    refused = False
except (urllib.error.URLError, ConnectionError, OSError):
    refused = True
check(refused, "the 65th connection from one address is refused")
for c in idle:
    c.close()
time.sleep(0.5)
st, _, _ = call("/health")
check(st == 200, "after the idle connections close, the client is served again")

# --- a trickling client is cut at the header deadline ---------------------------------
c = socket.create_connection(("127.0.0.1", PORT), timeout=30)
t0 = time.time()
closed_at = None
for ch in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 40:
    try:
        c.send(bytes([ch]))
        c.settimeout(1.0)
        if c.recv(1, socket.MSG_PEEK) == b"":
            closed_at = time.time() - t0
            break
    except socket.timeout:
        continue
    except OSError:
        closed_at = time.time() - t0
        break
c.close()
check(closed_at is not None and closed_at < 16, f"trickled headers cut at the deadline (after {closed_at} s)")

# --- SIGTERM drains -------------------------------------------------------------------------
events = []


def stream():
    req = urllib.request.Request(BASE + "/generate", data=json.dumps({
        "text": "Once upon a time", "stream": True,
        "sampling_params": {"max_new_tokens": 300, "ignore_eos": True, "temperature": 0}}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r:
            if line.startswith(b"data: "):
                events.append(line[6:].strip())


th = threading.Thread(target=stream)
th.start()
while not events and th.is_alive():
    time.sleep(0.01)
os.kill(PID, signal.SIGTERM)
time.sleep(0.2)
st, body, hdr = call("/v1/decisions", {"model": model, "input": "x", "questions": [{"type": "predicate", "instructions": "?"}]})
check(st == 503 and hdr.get("Retry-After") == "1" and b"shutting down" in body,
      f"during the drain a new request gets 503 + Retry-After: {st} {hdr.get('Retry-After')} {body[:120]}")
th.join()
check(events and events[-1] == b"[DONE]" and len(events) > 300,
      f"the running stream finished: {len(events)} events, last {events[-1][:40] if events else None}")

finish("robustness_check")
