#!/usr/bin/env python3
"""bench_overhead.py: the Python package's cost over the C API. N decisions
on a cached context through typellm.Client.generate and through the same loop
in C (bench/bench_decide_loop: parse the schema, decide on a client of the
shared backend, render the JSON), alternated ROUNDS times; prints both and
the ratio of the medians. Both wall time and CPU time (user + system of
every thread, from getrusage) are reported; on a loaded machine the CPU
time is the figure to read.
   python3 python/bench/bench_overhead.py [--model M] [--n 1000] [--rounds 3] [--build build]"""
import argparse
import os
import resource
import re
import statistics
import subprocess
import time

import typellm

ap = argparse.ArgumentParser()
here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "..")
ap.add_argument("--model", default=os.path.join(src, "..", "shared", "fixtures", "models", "qwen2-d64-q8_0.gguf"))
ap.add_argument("--schema", default=os.path.join(src, "examples", "receipt", "schema.json"))
ap.add_argument("--context", default=os.path.join(src, "examples", "receipt", "context.txt"))
ap.add_argument("--n", type=int, default=1000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--build", default=os.path.join(src, "build"))
a = ap.parse_args()
schema, context = open(a.schema).read(), open(a.context).read()
client = typellm.Client(model=a.model, threads=1)
for _ in range(20):
    client.generate(context=context, schema=schema)
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


py, c, pyc, cc = [], [], [], []
for _ in range(a.rounds):
    t, u = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    for _ in range(a.n):
        client.generate(context=context, schema=schema)
    py.append((time.perf_counter() - t) / a.n * 1e3)
    pyc.append((cpu(resource.RUSAGE_SELF) - u) / a.n * 1e3)
    u = cpu(resource.RUSAGE_CHILDREN)
    out = subprocess.run([os.path.join(a.build, "bench_decide_loop"), a.model, a.schema, a.context, str(a.n), "1"],
                         check=True, capture_output=True, text=True).stdout
    # the child's CPU time includes its 20 warm-up decisions and the model load: scale to its timed loop
    c.append(float(re.search(r"\(([\d.]+) ms per decision\)", out).group(1)))
    cc.append((cpu(resource.RUSAGE_CHILDREN) - u) / (a.n + 20) * 1e3)
for name, xs, ys in (("wall", py, c), ("cpu", pyc, cc)):
    mp, mc = statistics.median(xs), statistics.median(ys)
    print(f"{name}: python ms/decision {', '.join(f'{x:.3f}' for x in xs)}; C {', '.join(f'{x:.3f}' for x in ys)}")
    print(f"{name}: median python {mp:.3f} ms, C {mc:.3f} ms: python/C = {mp / mc:.3f} ({(mp / mc - 1) * 100:+.1f}%)")
