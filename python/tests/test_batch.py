"""Client.generate_many and Client.run_batch against the real library and a
fixture model: results in input order equal to generate() one by one
(probabilities within 1e-12), failing records returned in place, run_batch's
output equal to `typellm batch`'s and resumed when rerun.

Environment: as test_typellm.py (TYPELLM_BIN, TL_FIXTURES, TL_SRC)."""
import json
import os
import subprocess

import pytest

import typellm

SRC = os.environ.get("TL_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.environ.get("TL_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures"))
BIN = os.environ.get("TYPELLM_BIN", os.path.join(SRC, "build", "typellm"))
MODEL = os.path.join(FIX, "models", "llama-spm-d64-f32.gguf")
SCHEMA = json.load(open(os.path.join(SRC, "examples", "tickets", "triage.schema.json")))
TICKETS = [json.loads(l) for l in open(os.path.join(SRC, "examples", "tickets.jsonl"))][:40]


@pytest.fixture(scope="module")
def client():
    with typellm.Client(model=MODEL, threads=2) as c:
        yield c


def close(a, b):
    assert a.keys() == b.keys()
    for k in a:
        for v, p in a.probabilities[k].items():
            assert abs(b.probabilities[k][v] - p) <= 1e-12, (k, v)


def test_generate_many_in_order(client):
    records = ({"context": t["context"]} for t in TICKETS)  # a generator: read lazily
    out = list(client.generate_many(records, SCHEMA, parallel=8))
    assert len(out) == len(TICKETS)
    for t, r in zip(TICKETS, out):
        one = client.generate(t["context"], SCHEMA)
        assert dict(r) == dict(one)
        close(r, one)


def test_generate_many_errors_in_place(client):
    bad = {"properties": {"a": {"type": "string", "enum": ["x", "x"]}}}
    out = list(client.generate_many(["a ticket", {"context": "b", "schema": bad}, "c"], SCHEMA, parallel=2))
    assert isinstance(out[0], typellm.Result) and isinstance(out[2], typellm.Result)
    assert isinstance(out[1], typellm.SchemaError) and "/properties/a/enum/1" in str(out[1])
    with pytest.raises(typellm.SchemaError):
        list(client.generate_many([{"context": "b", "schema": bad}], SCHEMA, errors="raise"))


def test_run_batch_equals_cli_and_resumes(client, tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(t) + "\n" for t in TICKETS))
    schema_path = tmp_path / "s.json"
    schema_path.write_text(json.dumps(SCHEMA))
    seen = []
    s = client.run_batch(inp, tmp_path / "py.jsonl", SCHEMA, parallel=8, progress=seen.append)
    assert s["done"] == s["total"] == len(TICKETS) and s["errors"] == 0 and not s["stopped"]
    assert seen and seen[-1]["done"] == len(TICKETS)
    subprocess.run([BIN, "batch", "-m", MODEL, "-t", "2", "--no-progress", "--schema", str(schema_path), "-i",
                    str(inp), "-o", str(tmp_path / "cli.jsonl")], check=True, capture_output=True)
    py = [json.loads(l) for l in open(tmp_path / "py.jsonl")]
    cli = [json.loads(l) for l in open(tmp_path / "cli.jsonl")]
    assert [l["id"] for l in py] == [t["id"] for t in TICKETS]
    for a, b in zip(py, cli):
        assert a["values"] == b["values"]
        for k, f in a["fields"].items():
            for v, p in f["probabilities"].items():
                assert abs(b["fields"][k]["probabilities"][v] - p) <= 1e-12
    again = client.run_batch(inp, tmp_path / "py.jsonl", SCHEMA)
    assert again["resumed"] == len(TICKETS) and again["done"] == len(TICKETS)
    with pytest.raises(typellm.InvalidArgument, match="schema differs"):
        client.run_batch(inp, tmp_path / "py.jsonl", {"properties": {"blocked": {"type": "boolean"}}})
