"""Aeon synthesis from Python against the real library and fixture models:
typellm.validate's verdicts (types, refinements, @example) on known terms;
Client.synth gives the same attempts, tokens, log-probabilities and choice as
`typellm synth --report` for the same seed (local vs shared backend, one
library loop); every term it wrote is still completable to the goal type
according to `typellm oracle` (the CLI, a separate process); program errors
name line:column; the budget is a deadline.

Environment: as test_typellm.py (TYPELLM_BIN, TL_FIXTURES, TL_SRC)."""
import json
import math
import os
import pathlib
import subprocess
import tempfile

import pytest

import typellm

SRC = os.environ.get("TL_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.environ.get("TL_FIXTURES", os.path.join(SRC, "..", "shared", "fixtures"))
BIN = os.environ.get("TYPELLM_BIN", os.path.join(SRC, "build", "typellm"))
STORIES = os.path.join(FIX, "models", "stories260k-f32.gguf")
EX = os.path.join(SRC, "examples", "synthesis", "type_constrained")
ANSWER = "def answer : {x:Int | x = 35} := ?hole;\n"
STORY = "def story (she:Int) (he:Int) (they:Int) : Int := ?hole;\n"


@pytest.fixture(scope="module")
def stories():
    with typellm.Client(model=STORIES, threads=1) as c:
        yield c


def test_validate_verdicts():
    ok = typellm.validate(ANSWER, "35")
    assert ok.ok and ok.parsed and ok.typed and ok.refinements_ok and ok.refinement_checks == 1 and ok.message == ""
    bad = typellm.validate(ANSWER, "36")
    assert bad.typed and not bad.refinements_ok and bad.refinement_failures == 1 and not bad.ok
    assert "refinement" in bad.message
    ill = typellm.validate(ANSWER, "true")
    assert not ill.typed and not ill.ok and "1:1" in ill.message and "Bool" in ill.message
    dbl = os.path.join(EX, "double.ae")  # @example(double 4 = 8)
    assert typellm.validate(dbl, "a + a").ok and typellm.validate(dbl, "a * 2").examples_failed == 0
    wrong = typellm.validate(pathlib.Path(dbl), "a + 1")
    assert wrong.typed and wrong.examples_total == 1 and wrong.examples_failed == 1 and not wrong.ok


def cli_report(path, extra):
    with tempfile.TemporaryDirectory() as d:
        rep = os.path.join(d, "r.json")
        subprocess.run([BIN, "synth", path, "--model", STORIES, "--threads", "1", "--report", rep, *extra],
                       capture_output=True, text=True)
        return json.load(open(rep))


@pytest.mark.parametrize("name,temperature,seed", [("clamp", 0.0, 0), ("story", 1.0, 3)])
def test_synth_equals_cli(stories, name, temperature, seed, tmp_path):
    if name == "story":
        path = str(tmp_path / "story.ae")
        open(path, "w").write(STORY)
    else:
        path = os.path.join(EX, name + ".ae")
    ref = cli_report(path, ["--max-tokens", "8", "--attempts", "3", "--temperature", str(temperature), "--seed",
                            str(seed), "--budget", "60"])
    s = stories.synth(path, temperature=temperature, seed=seed, max_tokens=8, attempts=3, budget=60)
    assert s.status == ref["status"] and s.goal == ref["goal"] and s.report["prompt_tokens"] == ref["prompt_tokens"]
    assert s.report["chosen_attempt"] == ref["chosen_attempt"] and s.program == ref.get("program")
    assert 1 <= len(s.candidates) == len(ref["attempts"]) <= 3  # stops at a term with nothing to improve
    for c, a in zip(s.candidates, ref["attempts"]):
        assert (c.text, c.tokens, c.end, c.seed) == (a["text"], a["tokens"], a["end"], a["seed"])
        assert c.temperature == a["temperature"]
        assert c.logprob == pytest.approx(a["logprob"], abs=1e-9)
        assert (c.validation is None) == ("validation" not in a)
    # the same program as source text gives the same attempts
    t = stories.synth(open(path).read(), temperature=temperature, seed=seed, max_tokens=8, attempts=3, budget=60)
    assert [c.tokens for c in t.candidates] == [c.tokens for c in s.candidates]


def test_synth_terms_stay_well_typed(stories):
    path = os.path.join(EX, "clamp.ae")
    s = stories.synth(path, temperature=1.0, seed=7, max_tokens=6, attempts=3, budget=60)
    assert s.candidates and s.goal == "Int"
    for c in s.candidates:
        assert c.tokens and len(c.tokens) <= 6 and c.end in ("complete", "token_limit", "probe_limit", "exhausted")
        assert 0 < c.probability <= 1 and c.probability == pytest.approx(math.exp(c.logprob))
        assert c.probes["probes"] >= len(c.tokens)
        # an independent process's oracle: the text written so far still completes to an Int
        out = subprocess.run([BIN, "oracle", "--file", path, "--prefix", c.text], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.startswith("LIVE"), (c.text, out.stdout, out.stderr)
        if c.end == "complete":
            assert c.validation is not None and c.validation.typed
    if s:
        assert s.term == s.chosen.text and s.chosen.validation.typed and s.program.count("?hole") == 0


def test_synth_errors(stories, tmp_path):
    with pytest.raises(typellm.ProgramError) as e:
        stories.synth("type T;\ndef f : Int := ?h;\n")
    assert "1:1" in str(e.value) and e.value.status == "unsupported"
    with pytest.raises(typellm.ProgramError) as e:
        stories.synth("def f : Int := 1 +;\n")
    assert "1:" in str(e.value)
    with pytest.raises(typellm.ProgramError, match="no hole"):
        stories.synth("def f : Int := 1;\n")
    with pytest.raises(typellm.InvalidArgument):
        stories.synth(str(tmp_path / "missing.ae"))
    with pytest.raises(typellm.InvalidArgument):
        stories.synth(ANSWER, max_tokens=0)
    with pytest.raises(typellm.InvalidArgument):
        stories.synth(ANSWER, temperature=float("nan"))
    s = stories.synth(ANSWER, budget=1e-9)  # the deadline passes before the first attempt
    assert s.status == "deadline" and not s and s.term is None and s.candidates == []


def test_synth_threads_share_the_model(stories):
    """Four threads synthesizing at once on one client (one shared backend)
    get exactly what each gets alone."""
    import threading
    path = os.path.join(EX, "twice.ae")
    alone = [stories.synth(path, temperature=1.0, seed=s, max_tokens=6, attempts=2, budget=60) for s in range(4)]
    got = [None] * 4

    def run(s):
        got[s] = stories.synth(path, temperature=1.0, seed=s, max_tokens=6, attempts=2, budget=60)

    ts = [threading.Thread(target=run, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for a, g in zip(alone, got):
        assert [(c.tokens, c.logprob) for c in g.candidates] == [(c.tokens, c.logprob) for c in a.candidates]


AEON_TINY = os.path.join(FIX, "models", "aeon-tiny-gpt2-q8_0.gguf")
TASKS = os.path.join(FIX, "aeon-tasks")


def test_synth_aeon_tiny_constrained_vs_unconstrained():
    """The trained Aeon model finishes a well-typed program under the oracle;
    with unconstrained=True the same sampler runs without it, and each
    attempt's report says whether its text is well typed, how many
    @examples it passed, its log-probability, tokens and time."""
    task = os.path.join(TASKS, "t23_bool_below.ae")
    with typellm.Client(model=AEON_TINY, threads=1) as c:
        con = c.synth(task, seed=0, attempts=2, max_tokens=48, budget=60)
        unc = c.synth(task, seed=0, attempts=2, max_tokens=48, budget=60, unconstrained=True)
    assert con.report["unconstrained"] is False and unc.report["unconstrained"] is True
    assert con and con.chosen.well_typed is True and con.chosen.examples_passed is not None
    for s in (con, unc):
        for cand in s.candidates:
            assert cand.tokens and cand.elapsed_s > 0 and cand.logprob < 0
            if cand.end == "complete":
                assert cand.well_typed == cand.validation.typed
                if cand.well_typed:
                    assert cand.examples_passed == cand.validation.examples_total - cand.validation.examples_failed
            else:
                assert cand.well_typed is None
    # the oracle ran only in the constrained attempts, and no finished constrained text is ill-typed
    assert all(cand.probes["oracle_calls"] > 0 for cand in con.candidates)
    assert all(cand.probes["oracle_calls"] == 0 for cand in unc.candidates)
    assert all(cand.well_typed is not False for cand in con.candidates)
