#!/usr/bin/env python3
"""jinja2_compare.py TL_BIN TEMPLATES_DIR DATA_DIR SCRATCH

An independent check of typellm's Jinja renderer on conversations it was never
tuned on: every template in TEMPLATES_DIR (the published fixtures) and DATA_DIR
(templates written for this test) is rendered for generated conversations (no
tools, long system prompts, many turns, Unicode, empty contents, reasoning in
history, with and without the generation prompt, thinking on and off) by Python's
jinja2 set up as transformers' apply_chat_template sets it up, and by
`typellm template`. The two must agree byte for byte; where jinja2 raises through
raise_exception, typellm must fail with exactly that message; where jinja2 fails
otherwise, typellm must fail too. Prints the counts; exits 1 on any disagreement.
"""
import json
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = 1768435200  # 2026-01-15 00:00:00 UTC, the fixtures' clock


class TemplateRaised(Exception):
    """raise_exception(msg) in a template."""


class GenerationBlock(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers marks
    assistant text with it; the rendering is unchanged)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_env():
    # As transformers builds it: sandboxed, trim_blocks, lstrip_blocks, loop
    # controls, its own tojson (no HTML escaping, ensure_ascii off by default).
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise TemplateRaised(message)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, timezone.utc).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---- conversations ---------------------------------------------------------------

SNIPPETS = [
    "Hello!", "What is 2 + 2?", "Thanks, that helps.", "Explain recursion in one sentence.",
    "Ünïcödé: café, naïve, Straße, İstanbul", "中文测试：你好，世界。", "한국어 문장입니다.", "日本語のテキスト",
    "emoji 👩‍👩‍👧‍👦 🇺🇳 ✓ ★", "RTL: مرحبا بالعالم שלום", "combining: e\u0301 a\u0308 \u0915\u094d\u0937",
    "quotes \"double\" 'single' `back` and \\ backslashes \\n not a newline",
    "braces {{ not code }} {% not a tag %} {# not a comment #}", "tabs\tand\ttabs", "  leading and trailing spaces  ",
    "line one\nline two\n\nline four after a blank", "\n\nstarts with blank lines", "ends with newlines\n\n",
    "<think>not a real think block</think> visible", "html <b>bold</b> & entities &amp; < >", "x" * 300,
    "a very long line " * 40, "</s> [INST] <|im_end|> plain text that looks like markup",
]


def conversations():
    sys_long = "\n\n".join(
        f"Rule {i}: {random.Random(i).choice(SNIPPETS)} Always be precise, polite and brief; cite sources." for i in range(60))
    convs = {
        "tools_off_one": ([{"role": "user", "content": "Hi there"}], True, {}),
        "long_system": ([{"role": "system", "content": sys_long}, {"role": "user", "content": "Summarise the rules."}],
                        True, {}),
        "multi_turn": ([{"role": "user", "content": "Hi, I am Ana."}, {"role": "assistant", "content": "Hello Ana!"},
                        {"role": "user", "content": "What is my name?"}, {"role": "assistant", "content": "Ana."},
                        {"role": "user", "content": "And backwards?"}], True, {}),
        "multi_turn_closed": ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
                               {"role": "assistant", "content": "4"}], False, {}),
        "unicode": ([{"role": "system", "content": SNIPPETS[5] + " " + SNIPPETS[8]},
                     {"role": "user", "content": SNIPPETS[4] + "\n" + SNIPPETS[9] + "\n" + SNIPPETS[10]}], True, {}),
        "empty_contents": ([{"role": "system", "content": ""}, {"role": "user", "content": ""},
                            {"role": "assistant", "content": ""}, {"role": "user", "content": ""}], True, {}),
        "markup_text": ([{"role": "user", "content": SNIPPETS[11] + "\n" + SNIPPETS[12] + "\n" + SNIPPETS[22]}], True,
                        {}),
        "whitespace": ([{"role": "user", "content": SNIPPETS[14]}, {"role": "assistant", "content": SNIPPETS[16]},
                        {"role": "user", "content": SNIPPETS[15] + SNIPPETS[17]}], True, {}),
        "thinking_off": ([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Why is the sky blue?"}],
                         True, {"enable_thinking": False}),
        "thinking_on": ([{"role": "user", "content": "Why is the sky blue?"}], True, {"enable_thinking": True}),
        "reasoning_history": ([{"role": "user", "content": "Pick a number."},
                               {"role": "assistant", "content": "<think>\nSeven is nice.\n</think>\n\n7"},
                               {"role": "user", "content": "Another?"},
                               {"role": "assistant", "content": "9", "reasoning_content": "Nine, why not."}],
                              False, {}),
        "effort_high": ([{"role": "developer", "content": "Answer in French."}, {"role": "user", "content": "Hello"}],
                        True, {"reasoning_effort": "high"}),
        "no_generation_prompt": ([{"role": "user", "content": "Only a user turn."}], False, {}),
    }
    turns = []
    for i in range(24):
        turns.append({"role": "user", "content": f"Question {i}: {SNIPPETS[i % len(SNIPPETS)]}"})
        turns.append({"role": "assistant", "content": f"Answer {i}."})
    convs["many_turns"] = ([{"role": "system", "content": "Keep count."}] + turns + [{"role": "user", "content": "Done?"}],
                           True, {})
    rng = random.Random(15)
    for k in range(8):
        msgs = []
        if rng.random() < 0.5:
            msgs.append({"role": "system", "content": rng.choice(SNIPPETS)})
        for t in range(rng.randint(1, 7)):
            msgs.append({"role": "user", "content": " ".join(rng.sample(SNIPPETS, rng.randint(1, 3)))})
            if rng.random() < 0.8:
                msgs.append({"role": "assistant", "content": rng.choice(SNIPPETS + [""])})
        gen = msgs[-1]["role"] == "user"
        kwargs = {"enable_thinking": rng.random() < 0.5} if rng.random() < 0.5 else {}
        convs[f"random_{k}"] = (msgs, gen, kwargs)
    return convs


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather at a place, in °C (< 50 & > -90)",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}, "days": {"type": "integer"}},
                                               "required": ["city"]}}}]


# ---- filters and tests over empty and missing values ---------------------------------
# Each expression is rendered alone for every input; X stands for the input. jinja2's
# select/reject/map treat any falsy input as an empty sequence, others raise on none.
EMPTY_INPUTS = {"undefined": "nothing_defined", "none": "none", "empty_str": "''", "empty_list": "[]",
                "empty_dict": "{}"}
FILTER_EXPRS = [
    "X | select | list", "X | select('defined') | list", "X | reject | list", "X | reject('none') | list",
    "X | selectattr('type') | list", "X | selectattr('type', 'equalto', 'function') | list | length",
    "X | rejectattr('type') | list", "X | rejectattr('type', 'equalto', 'x') | list",
    "X | map('upper') | list", "X | map(attribute='name') | list", "X | map(attribute='name', default='d') | list",
    "X | map('string') | join(',')", "X | list", "X | length", "X | count", "X | first", "X | last",
    "X | join(',')", "X | join(',', attribute='a')", "X | reverse | list", "X | sort | list",
    "X | sort(attribute='a') | list", "X | unique | list", "X | min", "X | max", "X | sum", "X | sum(attribute='a')",
    "X | items | list", "X | dictsort", "X | batch(2) | list", "X | string", "X | trim", "X | upper", "X | lower",
    "X | title", "X | capitalize", "X | default('dflt')", "X | default('dflt', true)", "X | d('dflt')",
    "X | tojson", "X | indent(2)", "X | int", "X | float", "X | abs", "X | round", "X | replace('a', 'b')",
    "X | wordcount", "X | escape", "X | safe", "X | string | length", "(X | list) + [1]",
    "X | selectattr('type', 'equalto', 'function') | map(attribute='function') | map(attribute='name') | join(', ')",
]
TEST_NAMES = ["defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number", "integer",
              "float", "boolean", "true", "false", "callable", "eq(none)", "ne('')", "in([])", "in({})",
              "sameas(none)", "lower", "upper", "escaped", "odd", "divisibleby(2)", "equalto([])"]
OTHER_EXPRS = ["'yes' if X else 'no'", "X is not none and X | length > 0", "X ~ '!'", "X == none", "X == []",
               "not X", "X in [none, [], {}, '']", "X and 1", "X or 'alt'"]
LOOPS = ["{% for t in X %}[{{ t }}]{% else %}empty{% endfor %}",
         "{% for k, v in X | dictsort %}{{ k }}{% endfor %}.",
         "{% for t in X | selectattr('type', 'equalto', 'function') %}{{ t }}{% endfor %}.",
         "{% set ns = namespace(n=0) %}{% for t in X | reject('none') %}{% set ns.n = ns.n + 1 %}{% endfor %}"
         "{{ ns.n }}"]


def empty_input_cases():
    cases = []
    for iname, x in EMPTY_INPUTS.items():
        for e in FILTER_EXPRS + OTHER_EXPRS:
            cases.append((f"{{{{ {e} }}}}".replace("X", f"({x})"), iname))
        for t in TEST_NAMES:
            cases.append((f"{{{{ X is {t} }}}}|{{{{ X is not {t} }}}}".replace("X", f"({x})"), iname))
        for loop in LOOPS:
            cases.append((loop.replace("X", f"({x})"), iname))
    return cases


def main():
    tl_bin, tpl_dir, data_dir, scratch = sys.argv[1:5]
    tokens = json.load(open(os.path.join(tpl_dir, "cases.json")))["tokens"]
    templates = []
    for d in (tpl_dir, data_dir):
        for name in sorted(os.listdir(d)):
            if name.endswith(".jinja"):
                templates.append((name[:-6], os.path.join(d, name), d == data_dir))
    convs = conversations()
    paths = {}
    for cname, (msgs, _, _) in convs.items():
        paths[cname] = os.path.join(scratch, cname + ".json")
        with open(paths[cname], "w", encoding="utf-8") as f:
            json.dump(msgs, f, ensure_ascii=False)
    tools_path = os.path.join(scratch, "tools.json")
    with open(tools_path, "w", encoding="utf-8") as f:
        json.dump(TOOLS, f, ensure_ascii=False)
    empty_tools_path = os.path.join(scratch, "empty_tools.json")
    with open(empty_tools_path, "w", encoding="utf-8") as f:
        f.write("[]")
    env = make_env()
    jobs = []  # (where, jinja2's result or error, typellm's command)
    for tname, path, own in templates:
        src = open(path, encoding="utf-8").read()
        tok = tokens.get(tname, {"bos_token": "<s>", "eos_token": "</s>"})
        tpl = env.from_string(src)
        # own templates also with tools given and with an empty tools list ([]); None is the default
        runs = [(c, None) for c in convs] + ([("tools_off_one", "tools"), ("tools_off_one", "empty_tools")]
                                             if own else [])
        for cname, tools in runs:
            msgs, gen, kwargs = convs[cname]
            tools_val = TOOLS if tools == "tools" else [] if tools == "empty_tools" else None
            variables = dict(messages=json.loads(json.dumps(msgs)), add_generation_prompt=gen,
                             tools=tools_val, documents=None, bos_token=tok["bos_token"],
                             eos_token=tok["eos_token"], **kwargs)
            try:
                want, want_err = tpl.render(**variables), None
            except TemplateRaised as e:
                want, want_err = None, ("raise", str(e))
            except Exception as e:  # any other jinja2 failure: typellm must fail too
                want, want_err = None, ("error", f"{type(e).__name__}: {e}")
            cmd = [tl_bin, "template", "--template", path, "--messages", paths[cname], "--bos", tok["bos_token"],
                   "--eos", tok["eos_token"], "--now", str(NOW)]
            if gen:
                cmd.append("--add-generation-prompt")
            if tools:
                cmd += ["--tools", tools_path if tools == "tools" else empty_tools_path]
            for k, v in kwargs.items():
                cmd += ["--var", f"{k}={json.dumps(v)}"]
            jobs.append((f"{tname} x {cname}{' + ' + tools if tools else ''}", want, want_err, cmd))
    msgs_path = paths["tools_off_one"]
    for k, (src, iname) in enumerate(empty_input_cases()):
        path = os.path.join(scratch, f"empty_input_{k}.jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src)
        try:
            want, want_err = env.from_string(src).render(messages=[], tools=None), None
        except Exception as e:
            want, want_err = None, ("error", f"{type(e).__name__}: {e}")
        jobs.append((f"{src!r} over {iname}", want, want_err, [tl_bin, "template", "--template", path, "--messages",
                                                                msgs_path]))
    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = list(pool.map(lambda j: subprocess.run(j[3], capture_output=True), jobs))
    counts = {"renders": len(jobs), "equal": 0, "raise_same": 0, "both_fail": 0}
    bad = []
    for (where, want, want_err, _), p in zip(jobs, procs):
        if want_err is None:
            if p.returncode == 0 and p.stdout == want.encode("utf-8"):
                counts["equal"] += 1
            else:
                got = p.stdout.decode("utf-8", "replace") if p.returncode == 0 else p.stderr.decode()
                i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]), min(len(got), len(want)))
                bad.append(f"{where}: differs at char {i}: want {want[i:i + 60]!r}, got {got[i:i + 60]!r}")
        elif p.returncode != 1:
            bad.append(f"{where}: jinja2 fails ({want_err[1][:120]}) but typellm exits {p.returncode}")
        elif want_err[0] == "raise":
            msg = p.stderr.decode("utf-8", "replace").removeprefix("typellm template: ").rstrip("\n")
            if msg == want_err[1]:
                counts["raise_same"] += 1
            else:
                bad.append(f"{where}: raise_exception({want_err[1]!r}) but typellm says {msg!r}")
        else:
            counts["both_fail"] += 1
    n_pub = sum(1 for t in templates if not t[2])
    n_empty = len(empty_input_cases())
    print(f"jinja2_compare: {len(templates)} templates ({n_pub} published, {len(templates) - n_pub} written for the test) x "
          f"{len(convs)} conversations, {n_empty} filter/test expressions over undefined, none, '', [] and {{}}: "
          f"{counts['renders']} renders, {counts['equal']} byte-equal, "
          f"{counts['raise_same']} raise the same message, {counts['both_fail']} fail in both, {len(bad)} disagree "
          f"(jinja2 {jinja2.__version__})")
    for b in bad:
        print("DISAGREE:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
