"""The Python package against the real library and fixture models: typed
values and probabilities equal the CLI's (`typellm decide`) for every example
in examples/ in every mode; the seed's examples; threads sharing one model;
Pydantic classes; errors as exceptions; a server client against
`typellm serve`; no memory growth over 1,000 decisions.

Environment: TYPELLM_BIN (the CLI), TL_FIXTURES (shared fixtures), TL_SRC (the
repository); the library comes from the installed package or TYPELLM_LIBRARY."""
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import typellm

SRC = os.environ.get("TL_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.environ.get("TL_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures"))
BIN = os.environ.get("TYPELLM_BIN", os.path.join(SRC, "build", "typellm"))
CHAT = os.path.join(FIX, "models", "qwen2-d64-q8_0.gguf")    # ChatML template
RECORD = os.path.join(FIX, "models", "stories260k-f32.gguf")  # no template: record style

SEED_NUMBER = {"type": "object", "properties": {"answer": {"type": "number", "question": "What is 17.5 multiplied by 4?"}},
               "required": ["answer"]}
SEED_EXPENSE = {"type": "object", "properties": {
    "expense_type": {"type": "string", "enum": ["meal", "travel", "lodging", "equipment"],
                     "question": "What type of expense is this?"},
    "reimbursable": {"type": "boolean", "question": "Is this reimbursable under a standard travel policy?"}}}


@pytest.fixture(scope="module")
def chat():
    with typellm.Client(model=CHAT, threads=1) as c:
        yield c


@pytest.fixture(scope="module")
def record():
    with typellm.Client(model=RECORD, threads=1) as c:
        yield c


def cli(model, schema_path, context_path, mode, extra=()):
    out = subprocess.run([BIN, "decide", "--model", model, "--threads", "1", "--schema", schema_path, "--context",
                          context_path, "--mode", mode, *extra], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def assert_same(py, ref, what):
    assert py["values"] == ref["values"], what
    for k, f in ref["fields"].items():
        g = py["fields"][k]
        for v, p in f.get("probabilities", {}).items():
            assert abs(g["probabilities"][v] - p) <= 1e-12, (what, k, v)
        if "probability" in f and f["probability"] is not None:
            assert abs(g["probability"] - f["probability"]) <= 1e-12, (what, k)


EXAMPLES = sorted(d for d in os.listdir(os.path.join(SRC, "examples"))
                  if os.path.exists(os.path.join(SRC, "examples", d, "schema.json")))


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("mode", ["sequential", "batch", "auto"])
def test_equals_cli(chat, example, mode):
    d = os.path.join(SRC, "examples", example)
    schema = open(os.path.join(d, "schema.json")).read()
    context = open(os.path.join(d, "context.txt")).read()
    ref = cli(CHAT, os.path.join(d, "schema.json"), os.path.join(d, "context.txt"), mode)
    py = chat.decide(context, schema, mode=mode)
    assert_same(py, ref, f"{example}/{mode}")
    res = chat.generate(context=context, schema=json.loads(schema), mode=mode)
    assert dict(res) == {k: (float(v) if isinstance(v, int) and not isinstance(v, bool)
                             and json.loads(schema)["properties"][k].get("type") == "number" else v)
                         for k, v in ref["values"].items()}


def test_cache_types_equal_cli():
    """cache_type_k= / cache_type_v= are the CLI's -ctk / -ctv: a Q8_0 cache gives
    the CLI's distributions; an unknown type names the argument and the types."""
    d = os.path.join(SRC, "examples", "receipt")
    ref = cli(RECORD, os.path.join(d, "schema.json"), os.path.join(d, "context.txt"), "batch",
              ["-ctk", "q8_0", "--cache-type-v", "q8_0"])
    with typellm.Client(model=RECORD, threads=1, cache_type_k="q8_0", cache_type_v="q8_0") as c:
        py = c.decide(open(os.path.join(d, "context.txt")).read(), open(os.path.join(d, "schema.json")).read(),
                      mode="batch")
    assert_same(py, ref, "receipt/record/q8_0 cache")
    with pytest.raises(typellm.InvalidArgument) as e:
        typellm.Client(model=RECORD, cache_type_v="q4_0")
    assert "cache_type_v='q4_0'" in str(e.value) and "f32, f16, q8_0" in str(e.value)


def test_equals_cli_record_style_sampled(record):
    d = os.path.join(SRC, "examples", "receipt")
    ref = cli(RECORD, os.path.join(d, "schema.json"), os.path.join(d, "context.txt"), "batch",
              ["--temperature", "0.8", "--seed", "42"])
    py = record.decide(open(os.path.join(d, "context.txt")).read(), open(os.path.join(d, "schema.json")).read(),
                       mode="batch", temperature=0.8, seed=42)
    assert_same(py, ref, "receipt/record/T=0.8")
    assert py["style"] == "record"


def test_seed_examples_typed(chat):
    r = chat.generate(context="Calculate the requested value accurately.", schema=SEED_NUMBER)
    assert list(r) == ["answer"] and type(r["answer"]) is float
    assert repr(r) == repr({"answer": r["answer"]})  # print(result) shows the seed's dict
    (text, p), = r.probabilities["answer"].items()
    assert float(text) == r["answer"] and 0 < p <= 1
    e = chat.generate(context="Dinner at Luigi's, 2 people, $84.20, client meeting.", schema=SEED_EXPENSE)
    assert e["expense_type"] in SEED_EXPENSE["properties"]["expense_type"]["enum"]
    assert type(e["reimbursable"]) is bool
    probs = e.probabilities["expense_type"]
    assert set(probs) == {"meal", "travel", "lodging", "equipment"} and abs(sum(probs.values()) - 1) < 1e-9
    assert 0 < e.label_mass["expense_type"] <= 1
    assert e.usage["prompt_tokens"] > 0


def test_types_and_abstain(chat):
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "x": {"type": "number", "minimum": 0, "maximum": 2, "multipleOf": 0.5},
        "flag": {"type": "boolean"}, "color": {"type": "string", "enum": ["red", "green"]},
        "level": {"type": "integer", "enum": [1, 2, 3]}}}
    r = chat.generate(context="A short note.", schema=schema)
    assert type(r["n"]) is int and 1 <= r["n"] <= 9
    assert type(r["x"]) is float and r["x"] * 2 == int(r["x"] * 2)
    assert type(r["flag"]) is bool and type(r["color"]) is str and type(r["level"]) is int
    a = chat.generate(context="A short note.", schema=schema, threshold=0.999999)
    assert any(v is None for v in a.values())  # abstained fields are None
    for k, v in a.items():
        assert (v is None) == a.fields[k]["abstained"]


def test_pydantic(chat):
    pydantic = pytest.importorskip("pydantic")
    from typing import Literal

    class Expense(pydantic.BaseModel):
        expense_type: Literal["meal", "travel", "lodging"]
        reimbursable: bool
        nights: int

    r = chat.generate(context="Hotel, two nights, conference.", schema=Expense)
    assert set(r) == {"expense_type", "reimbursable", "nights"}
    m = chat.generate(context="Hotel, two nights, conference.", schema=Expense, as_model=True)
    assert isinstance(m, Expense) and m.expense_type == r["expense_type"] and m.nights == r["nights"]


def test_errors(chat):
    with pytest.raises(typellm.SchemaError) as e:
        chat.generate(context="x", schema={"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 5, "maximum": 1}}})
    assert e.value.path and e.value.path.startswith("/properties/a")
    assert e.value.status == "schema"
    with pytest.raises(typellm.SchemaError) as e:
        chat.generate(context="x", schema='{"type": "object", "properties": {')
    assert re.search(r"\d+:\d+", str(e.value))
    with pytest.raises(typellm.InvalidArgument):
        chat.generate(context="x", schema=SEED_EXPENSE, mode="sideways")
    with pytest.raises(typellm.ModelError) as e:
        typellm.Client(model="/nonexistent/model.gguf")
    assert "/nonexistent/model.gguf" in str(e.value)
    with pytest.raises(typellm.InvalidArgument):
        chat.generate(context="x", schema=SEED_EXPENSE, as_model=True)
    with pytest.raises(TypeError):
        chat.generate(context="x", schema=42)


def test_threads_share_one_model(chat):
    contexts = [f"Ticket {i}: the checkout page fails for customer {i * 7}." for i in range(8)]
    alone = [chat.decide(c, SEED_EXPENSE, mode="batch") for c in contexts]
    got = [None] * 8

    def run(i):
        got[i] = chat.decide(contexts[i], SEED_EXPENSE, mode="batch")

    ts = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for a, g in zip(alone, got):
        assert a["values"] == g["values"]
        for k in a["fields"]:
            assert a["fields"][k]["probabilities"] == g["fields"][k]["probabilities"]  # bit-identical


def test_tokenize(chat):
    ids = chat.tokenize("Hello world", add_special=False)
    assert ids and all(isinstance(i, int) for i in ids)
    assert chat.detokenize(ids) == "Hello world"


def test_server_client():
    with typellm.serve(CHAT, threads=1) as srv:
        assert srv.url.startswith("http://127.0.0.1:")
        with typellm.Client(server=srv.url, chat_template="chatml") as remote, \
                typellm.Client(server=srv.url, tokenizer=CHAT) as remote_own, \
                typellm.Client(model=CHAT, threads=1) as local:
            # the same template on both sides: the built-in ChatML family, or the model's own (from its GGUF)
            for r, l in ((remote.generate(context="Dinner, $84.", schema=SEED_EXPENSE, mode="batch"),
                          local.generate(context="Dinner, $84.", schema=SEED_EXPENSE, mode="batch", chat_template="chatml")),
                         (remote_own.generate(context="Dinner, $84.", schema=SEED_EXPENSE, mode="batch"),
                          local.generate(context="Dinner, $84.", schema=SEED_EXPENSE, mode="batch"))):
                assert dict(r) == dict(l)
                for k in l.probabilities:
                    for v, p in l.probabilities[k].items():
                        assert abs(r.probabilities[k][v] - p) < 1e-4
        # no template source: refused with the two options named
        with typellm.Client(server=srv.url) as bare:
            with pytest.raises(typellm.InvalidArgument) as e:
                bare.generate(context="x", schema=SEED_EXPENSE)
            assert "--chat-template" in str(e.value) and "--tokenizer" in str(e.value)


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_memory_growth(record):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "c": {"type": "string", "enum": ["a", "b"]}}}
    for _ in range(200):
        record.generate(context="Once upon a time", schema=schema)
    before = rss_kb()
    t = time.time()
    for _ in range(1000):
        record.generate(context="Once upon a time", schema=schema)
    grown = rss_kb() - before
    print(f"1000 decisions: {time.time() - t:.2f} s, RSS grew {grown} kB", file=sys.stderr)
    assert grown < 4096, f"RSS grew {grown} kB over 1,000 decisions"


def test_ctypes_structs_mirror_the_headers():
    """Every struct _native mirrors has the header's fields, in order (a field
    added to a public struct must be added here too, or calls pass garbage)."""
    from typellm import _native as N
    mirrors = {"tl_error": N.Error, "tl_usage": N.Usage, "tl_session_params": N.SessionParams,
               "tl_shared_params": N.SharedParams, "tl_sglang_params": N.SglangParams,
               "tl_decide_opts": N.DecideOpts, "tl_strbuf": N.Strbuf, "tl_server_params": N.ServerParams,
               "tl_aeon_synth_params": N.AeonSynthParams, "tl_aeon_validation": N.AeonValidation,
               "tl_aeon_synth_result": N.AeonSynthResult, "tl_batch_params": N.BatchParams,
               "tl_batch_progress": N.BatchProgress}
    inc = os.path.join(SRC, "include", "typellm")
    text = "\n".join(open(os.path.join(inc, f)).read() for f in sorted(os.listdir(inc)) if f.endswith(".h"))
    for cname, cls in mirrors.items():
        m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (cname, cname), text, re.S)
        assert m, f"{cname} not found in include/typellm"
        body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
        names = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            decl = re.sub(r"\[[^\]]*\]", "", decl)           # char msg[1024]
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)     # function pointers
            names += [fp.group(1)] if fp else [p.strip().split()[-1].lstrip("*") for p in decl.split(",")]
        assert names == [f[0] for f in cls._fields_], f"{cname}: header {names} vs ctypes {[f[0] for f in cls._fields_]}"


def test_corrections_equal_cli(chat, tmp_path):
    """debias= / calibrate= / content_free= are the CLI's --debias / --calibrate /
    --content-free: the same corrected and raw distributions; the raw one is
    the uncorrected decision's."""
    schema = {"type": "object", "properties": {
        "severity": {"enum": ["low", "medium", "high", "critical"], "question": "How severe is it?"},
        "urgent": {"type": "boolean", "x-debias": "full"}}}
    context = "The payment service is down for every customer."
    sp, cp = tmp_path / "s.json", tmp_path / "c.txt"
    sp.write_text(json.dumps(schema))
    cp.write_text(context)
    ref = cli(CHAT, str(sp), str(cp), "batch", ["--debias", "permute", "--calibrate", "content-free",
                                                "--content-free", "[none]"])
    res = chat.generate(context, schema, mode="batch", debias="permute", calibrate="content-free",
                        content_free="[none]")
    plain = chat.generate(context, {"type": "object", "properties": {
        "severity": schema["properties"]["severity"], "urgent": {"type": "boolean"}}}, mode="batch")
    assert dict(res) == ref["values"]
    for k in ("severity", "urgent"):
        for v, p in ref["fields"][k]["probabilities"].items():
            assert abs(res.probabilities[k][v] - p) <= 1e-12, (k, v)
        assert res.raw_probabilities[k] == plain.probabilities[k], k
        assert plain.raw_probabilities[k] == plain.probabilities[k]
    corr = res.fields["severity"]["correction"]
    assert corr["debias"] == "permute" and corr["orders"] == 4 and corr["content_free_input"] == "[none]"
    assert res.fields["urgent"]["correction"] == {"debias": "full", "orders": 2, "calibrate": "none"}
