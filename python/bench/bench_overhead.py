#!/usr/bin/env python3
"""bench_overhead.py: the Python package's cost over the C API. N decisions
on a cached context through typellm.Client.generate and through the same loop
in C (bench/bench_decide_loop: parse the schema, decide on a client of the
shared backend, render the JSON), alternated ROUNDS times; prints both and
the ratio of the medians.
   python3 python/bench/bench_overhead.py [--model M] [--n 1000] [--rounds 3] [--build build]"""
import argparse
import os
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
py, c = [], []
for _ in range(a.rounds):
    t = time.perf_counter()
    for _ in range(a.n):
        client.generate(context=context, schema=schema)
    py.append((time.perf_counter() - t) / a.n * 1e3)
    out = subprocess.run([os.path.join(a.build, "bench_decide_loop"), a.model, a.schema, a.context, str(a.n), "1"],
                         check=True, capture_output=True, text=True).stdout
    c.append(float(re.search(r"\(([\d.]+) ms per decision\)", out).group(1)))
mp, mc = statistics.median(py), statistics.median(c)
print(f"python: {a.n} decisions, ms per decision by round: {', '.join(f'{x:.3f}' for x in py)}")
print(f"c:      {a.n} decisions, ms per decision by round: {', '.join(f'{x:.3f}' for x in c)}")
print(f"median python {mp:.3f} ms, C {mc:.3f} ms: python/C = {mp / mc:.3f} ({(mp / mc - 1) * 100:+.1f}%)")
