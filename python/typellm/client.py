"""typellm.Client: typed decisions from a local GGUF model (the embedded
engine, one shared batching backend for every thread of the process) or an
SGLang server, over libtypellm's C API."""
import collections
import concurrent.futures
import ctypes
import json
import math
import os
import re
import threading

from . import _native as N

__all__ = ["Client", "Result", "TypellmError", "SchemaError", "ModelError", "RemoteError", "LimitError",
           "InvalidArgument", "ProgramError", "serve", "Server", "Synthesis", "Candidate", "Validation", "validate"]


# ---- errors -----------------------------------------------------------------

class TypellmError(Exception):
    """An error from libtypellm: .status is its status name ("schema", "io",
    "remote", ...), .message the library's message (naming where: a JSON
    path, a file offset, line:column)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class SchemaError(TypellmError, ValueError):
    """A schema typellm cannot decide; .path is the JSON path it names
    (e.g. "/properties/amount/minimum"), or None."""

    def __init__(self, status, message):
        super().__init__(status, message)
        m = re.search(r"(/(?:properties|\$defs|definitions|items|anyOf|oneOf|allOf)[^\s:,]*)", message)
        self.path = m.group(1) if m else None


class ModelError(TypellmError):
    """The model file cannot be read or run (I/O, format, unsupported architecture or type)."""


class RemoteError(TypellmError):
    """The SGLang server is unreachable, answered with an error, or timed out."""


class LimitError(TypellmError):
    """A limit was exceeded (the context length, a request size)."""


class InvalidArgument(TypellmError, ValueError):
    """A bad argument (unknown mode, style, template, a value out of range)."""


class ProgramError(TypellmError, ValueError):
    """An Aeon program that cannot be synthesized for: a syntax or type error
    (the message gives line:column), no hole, or a construct outside the
    fragment (ADTs, polymorphism, match, several holes)."""


_BY_STATUS = {"schema": SchemaError, "io": ModelError, "format": ModelError, "unsupported": ModelError,
              "network": RemoteError, "remote": RemoteError, "timeout": RemoteError, "limit": LimitError,
              "invalid": InvalidArgument}


def _raise(code, err, kind=None):
    name = N.status_name(code).decode()
    msg = err.msg.decode("utf-8", "replace")
    cls = kind if kind and name in ("io", "format", "unsupported", "invalid") else _BY_STATUS.get(name, TypellmError)
    if name == "nomem":
        raise MemoryError(msg)
    raise cls(name, msg)


def _check(code, err, kind=None):
    if code != 0:
        _raise(code, err, kind)


def _b(s):
    return None if s is None else (s.encode("utf-8") if isinstance(s, str) else s)


# ---- results ----------------------------------------------------------------

class Result(dict):
    """The typed values of a decision, {field: value} in schema order, as the
    seeds print them: int for integer, float for number, bool, str for enum
    strings, None where abstained. The rest of the decision is on attributes:
      .probabilities  {field: {value text: probability}} (generated numbers and
                      written open values: {value text: probability of the text})
      .raw_probabilities  {field: {value text: probability}} as the model gave
                      them; differs from .probabilities only where a field was
                      corrected (x-debias, x-calibrate, debias=, calibrate=)
      .label_mass     {field: total probability on the declared labels, or None}
      .fields         the full per-field records (docs/decide.md)
      .usage          {"prompt_tokens", "cached_tokens", "computed_tokens", "forward_passes", ...}
      .trace          {field: trace} when trace=True, else {}
      .record         the whole decision document, exactly what `typellm decide` prints
    """

    def __init__(self, record, schema):
        values = record.get("values", {})
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        typed = {}
        for k, v in values.items():
            if (isinstance(v, int) and not isinstance(v, bool) and isinstance(props.get(k), dict)
                    and props[k].get("type") == "number"):
                v = float(v)
            typed[k] = v
        super().__init__(typed)
        self.record = record
        self.fields = record.get("fields", {})
        self.usage = record.get("usage", {})
        self.probabilities = {}
        self.raw_probabilities = {}
        self.label_mass = {}
        self.trace = {}
        for k, f in self.fields.items():
            if "probabilities" in f:
                self.probabilities[k] = dict(f["probabilities"])
                self.raw_probabilities[k] = dict(f.get("raw_probabilities", f["probabilities"]))
            elif "probability" in f:
                self.probabilities[k] = {f.get("text", json.dumps(f.get("value"))): f["probability"]}
            self.label_mass[k] = f.get("label_mass")
            if "trace" in f:
                self.trace[k] = f["trace"]


def _schema_of(schema):
    """(schema dict, JSON text, pydantic class or None) from a dict, JSON text or a Pydantic model class."""
    model_cls = None
    if isinstance(schema, type):
        if hasattr(schema, "model_json_schema"):  # pydantic v2
            model_cls, schema = schema, schema.model_json_schema()
        elif hasattr(schema, "schema") and hasattr(schema, "parse_obj"):  # pydantic v1
            model_cls, schema = schema, schema.schema()
        else:
            raise TypeError(f"schema: {schema.__name__} is not a Pydantic model class")
    if isinstance(schema, (bytes, str)):
        text = schema if isinstance(schema, str) else schema.decode("utf-8")
        try:
            parsed = json.loads(text)
        except ValueError as e:
            raise SchemaError("schema", f"{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        return parsed, text, None
    if isinstance(schema, dict):
        return schema, json.dumps(schema), model_cls
    raise TypeError("schema must be a dict, a JSON string or a Pydantic model class")


def _template_of(t):
    """(built-in family name, Jinja source) from chat_template: a family name
    ("chatml", ...), a path to a .jinja file, or Jinja source text."""
    if t is None:
        return None, None
    if "{{" in t or "{%" in t:
        return None, t
    if t.endswith(".jinja") or os.path.sep in t:
        try:
            with open(t, encoding="utf-8") as f:
                return None, f.read()
        except OSError as e:
            raise InvalidArgument("invalid", f"chat_template: {t}: {e.strerror}") from None
    return t, None


# ---- Aeon synthesis ----------------------------------------------------------

class Validation:
    """The independent verdicts on one term for a program's hole
    (tl_aeon_validate): parsed, typed (against the hole's goal, without the
    oracle), refinements_ok (each refinement checked by evaluation),
    examples_total / examples_failed (@example), refinement_checks /
    refinement_failures, objectives (lower is better; @minimize/@maximize),
    message (the first failure, or ""). .ok: typed, refinements hold and
    every example passes."""

    _KEYS = ("parsed", "typed", "refinements_ok", "examples_total", "examples_failed", "refinement_checks",
             "refinement_failures", "objectives", "message")

    def __init__(self, d):
        for k in self._KEYS:
            setattr(self, k, d[k])

    @property
    def ok(self):
        return bool(self.typed and self.refinements_ok and self.examples_failed == 0)

    def as_dict(self):
        return {k: getattr(self, k) for k in self._KEYS}

    def __repr__(self):
        return f"Validation({self.as_dict()!r})"


class Candidate:
    """One attempt of a synthesis: .text (the term written so far; a whole
    term when .end == "complete"), .tokens, .end ("complete", "token_limit",
    "probe_limit", "exhausted", "deadline"), .logprob (the model's
    log-probability of the tokens, EOS included: full-vocabulary softmax at
    temperature 1) and .probability (its exp), .validation (a Validation for
    a complete term, else None), .well_typed (True / False for a complete
    term: the independent checker's verdict; None when the text never
    finished), .examples_passed (of the @examples; None unless well typed),
    .elapsed_s (the attempt's wall time, validation included), .seed,
    .temperature, .probes (counts of the oracle's work: probes, rejected,
    unknown, excluded, over_budget, noncanonical, oracle_calls, oracle_work)
    and .record (the report's entry)."""

    def __init__(self, a):
        self.record = a
        self.text = a["text"]
        self.tokens = list(a["tokens"])
        self.end = a["end"]
        self.logprob = a["logprob"]
        self.probability = math.exp(a["logprob"])
        self.seed = a["seed"]
        self.temperature = a["temperature"]
        self.probes = {"probes": a["probes"], "rejected": a["rejected_probes"], "unknown": a["unknown_probes"],
                       "excluded": a["excluded_probes"], "over_budget": a["over_budget_probes"],
                       "noncanonical": a["noncanonical_probes"], "oracle_calls": a["oracle_calls"],
                       "oracle_work": a["oracle_work"]}
        self.well_typed = a["well_typed"]
        self.examples_passed = a["examples_passed"]
        self.elapsed_s = a["elapsed_s"]
        self.validation = Validation(a["validation"]) if "validation" in a else None

    def __repr__(self):
        return f"Candidate(text={self.text!r}, end={self.end!r}, probability={self.probability!r})"


class Synthesis:
    """What Client.synth returns. .status: "ok" (a validated term was chosen),
    "exhausted" or "deadline"; .term: the chosen term or None; .program: the
    program with its hole filled by "(term)", or None; .chosen: the chosen
    Candidate or None; .candidates: every attempt in the order run; .goal:
    the hole's type; .report: the whole report (what `typellm synth
    --report` writes, less the CLI's file/model/budget keys). True when a
    term was chosen."""

    def __init__(self, report):
        self.report = report
        self.status = report["status"]
        self.goal = report["goal"]
        self.candidates = [Candidate(a) for a in report["attempts"]]
        i = report["chosen_attempt"]
        self.chosen = self.candidates[i] if i >= 0 else None
        self.term = self.chosen.text if self.chosen else None
        self.program = report.get("program")

    def __bool__(self):
        return self.chosen is not None

    def __repr__(self):
        return f"Synthesis(status={self.status!r}, term={self.term!r}, candidates={len(self.candidates)})"


def _program_load(program):
    """A loaded tl_aeon_program from Aeon source text, a path to an .ae file,
    or an os.PathLike; the caller frees it."""
    err = N.Error()
    p = N.P()
    if isinstance(program, os.PathLike) or (isinstance(program, str) and "\n" not in program
                                            and (program.endswith(".ae") or os.path.isfile(program))):
        rc = N.aeon_program_load_file(_b(os.fspath(program)), ctypes.byref(p), ctypes.byref(err))
    elif isinstance(program, (str, bytes)):
        src = _b(program)
        rc = N.aeon_program_load(src, len(src), ctypes.byref(p), ctypes.byref(err))
    else:
        raise TypeError("program must be Aeon source text, a path to an .ae file or an os.PathLike")
    if rc:
        name = N.status_name(rc).decode()
        if name in ("io", "nomem"):
            _raise(rc, err, InvalidArgument)
        raise ProgramError(name, err.msg.decode("utf-8", "replace"))
    return p


def validate(program, term):
    """The independent verdicts on term (an expression, text) for the hole
    of program (source text or an .ae path): a Validation. Needs no model."""
    p = _program_load(program)
    try:
        t = _b(term)
        v = N.AeonValidation()
        err = N.Error()
        _check(N.aeon_validate(p, t, len(t), ctypes.byref(v), ctypes.byref(err)), err)
        return Validation({"parsed": v.parsed, "typed": v.typed, "refinements_ok": v.refinements_ok,
                           "examples_total": v.examples_total, "examples_failed": v.examples_failed,
                           "refinement_checks": v.refinement_checks, "refinement_failures": v.refinement_failures,
                           "objectives": [v.objectives[i] for i in range(v.n_objectives)],
                           "message": v.message.decode("utf-8", "replace")})
    finally:
        N.aeon_program_free(p)


def _to_model(model_cls, values):
    if hasattr(model_cls, "model_validate"):
        return model_cls.model_validate(values)
    return model_cls.parse_obj(values)


# ---- the client ---------------------------------------------------------------

class Client:
    """A model to decide with.

        Client(model="path.gguf", threads=0, ctx_size=0, cache_mb=0, cache_type_k="f32", cache_type_v="f32")
        Client(hf="org/repo:file.gguf")          # downloaded into ~/.cache/typellm (resumable, checked)
        Client(server="http://host:port", api_key=None, tokenizer="M.gguf" | None, timeout=60,
               engine="auto" | "sglang" | "llamacpp" | "vllm")
        Client()                                  # $TYPELLM_MODEL

    Thread-safe: any number of threads may call one client at once; with a
    local model their forward passes are merged into shared batches over one
    prefix cache (results are bit-identical to running alone). Use it as a
    context manager or call close()."""

    def __init__(self, model=None, *, server=None, hf=None, threads=0, ctx_size=0, cache_mb=0, api_key=None,
                 tokenizer=None, timeout=0.0, retries=-1, chat_template=None, style=None, engine="auto",
                 cache_type_k="f32", cache_type_v="f32"):
        self._lock = threading.Lock()
        self._model = None
        self._backend = None
        self._shared = False
        self.chat_template = chat_template
        self.style = style
        self._ctx_size = ctx_size
        err = N.Error()
        if server is not None:
            if model is not None or hf is not None:
                raise InvalidArgument("invalid", "Client: give model=, hf= or server=, not several")
            if engine not in N.ENGINES:
                raise InvalidArgument("invalid", f"Client: engine={engine!r}: expected one of {sorted(N.ENGINES)}")
            p = N.RemoteParams(N.SglangParams(_b(server), _b(api_key), _b(tokenizer), float(timeout), int(retries)),
                               N.ENGINES[engine])
            self._remote_params = p  # run_batch: one backend per worker
            b = N.P()
            _check(N.backend_remote_new(ctypes.byref(p), ctypes.byref(b), ctypes.byref(err)), err)
            self._backend = b
            self.model_name = N.backend_model_name(b).decode()
            return
        if model is None and hf is None:
            model = os.environ.get("TYPELLM_MODEL") or None
            if model is None:
                raise InvalidArgument("invalid", "Client: no model: pass model='path.gguf', hf='org/repo:file' or "
                                      "server='http://host:port', or set TYPELLM_MODEL")
        if threads < 0 or ctx_size < 0 or cache_mb < 0:
            raise InvalidArgument("invalid", "Client: threads, ctx_size and cache_mb must be >= 0")
        cache_types = []
        for name, value in (("cache_type_k", cache_type_k), ("cache_type_v", cache_type_v)):
            t = ctypes.c_int()
            if N.cache_type_parse(_b(value), ctypes.byref(t), ctypes.byref(err)):
                raise InvalidArgument("invalid", f"Client: {name}={value!r}: {err.msg.decode()}")
            cache_types.append(t.value)
        path = model
        if hf is not None and model is None:
            out = ctypes.c_void_p()
            _check(N.model_resolve(None, _b(hf), ctypes.byref(out), ctypes.byref(err)), err, ModelError)
            path = N.take_string(out.value)
        m = N.P()
        _check(N.model_load(_b(os.fspath(path)), ctypes.byref(m), ctypes.byref(err)), err, ModelError)
        self._model = m
        sp = N.SharedParams(N.SessionParams(int(threads), int(cache_mb), int(ctx_size), False, *cache_types), 0)
        b = N.P()
        rc = N.backend_shared_new(m, ctypes.byref(sp), ctypes.byref(b), ctypes.byref(err))
        if rc:
            N.model_free(m)
            self._model = None
            _raise(rc, err, ModelError)
        self._backend = b
        self._shared = True
        self.model_name = N.model_name(m).decode()
        self.model_path = os.fspath(path)

    # -- lifetime
    def close(self):
        """Frees the model and its backend; the client cannot be used afterwards."""
        with self._lock:
            if self._backend:
                N.backend_free(self._backend)
                self._backend = None
            if self._model:
                N.model_free(self._model)
                self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _call_backend(self):
        """(backend, release): a per-call client of the shared backend, or the remote one."""
        if not self._backend:
            raise InvalidArgument("invalid", "Client: closed")
        if not self._shared:
            return self._backend, None
        err = N.Error()
        c = N.P()
        _check(N.backend_shared_client(self._backend, None, ctypes.byref(c), ctypes.byref(err)), err)
        return c, c

    # -- decisions
    def decide(self, context, schema, *, mode="auto", style=None, chat_template=None, temperature=0.0, seed=0,
               threshold=0.0, trace=False, given=None, lenient=False, strict=False, partial=False, debias=None,
               calibrate=None, content_free=None, think=0):
        """Runs the decision and returns its whole record (a dict, exactly what
        `typellm decide` prints: values, fields with probabilities, usage, ...).
        debias ("permute", "full", "pride"), calibrate ("content-free", "pmi"),
        content_free (its input, default "N/A") and think (reasoning tokens)
        apply to the fields whose schema does not say x-debias / x-calibrate /
        x-think (docs/decide.md, Corrected distributions)."""
        record, _, _ = self._decide(context, schema, mode, style, chat_template, temperature, seed, threshold,
                                    trace, given, lenient, strict, partial, debias, calibrate, content_free, think)
        return record

    def generate(self, context, schema, *, mode="auto", style=None, chat_template=None, temperature=0.0, seed=0,
                 threshold=0.0, trace=False, given=None, as_model=False, lenient=False, strict=False,
                 partial=False, debias=None, calibrate=None, content_free=None, think=0):
        """Decides every field of schema over context and returns a Result:
        a dict of typed values ({"answer": 70.0}) with the distributions on
        attributes. schema: a dict, JSON text, or a Pydantic model class (then
        as_model=True returns an instance of it instead)."""
        record, sdict, model_cls = self._decide(context, schema, mode, style, chat_template, temperature, seed,
                                                threshold, trace, given, lenient, strict, partial, debias, calibrate,
                                                content_free, think)
        result = Result(record, sdict)
        if as_model:
            if model_cls is None:
                raise InvalidArgument("invalid", "generate: as_model=True needs a Pydantic model class as schema")
            return _to_model(model_cls, dict(result))
        return result

    def _decide(self, context, schema, mode, style, chat_template, temperature, seed, threshold, trace, given,
                lenient=False, strict=False, partial=False, debias=None, calibrate=None, content_free=None, think=0):
        if not isinstance(context, (str, bytes)):
            raise TypeError("context must be a string")
        sdict, stext, model_cls = _schema_of(schema)
        ctx = _b(context)
        st = _b(stext)
        err = N.Error()
        sch = N.P()
        _check(N.schema_parse(st, len(st), ctypes.byref(sch), ctypes.byref(err)), err)
        style = style if style is not None else self.style
        chat_template = chat_template if chat_template is not None else self.chat_template
        family, jinja = _template_of(chat_template)
        opts = N.DecideOpts(_b(mode), _b(style), _b(family), float(temperature), int(seed) & (2**64 - 1),
                            float(threshold), bool(trace), bool(lenient), bool(strict), bool(partial), _b(jinja),
                            _b(debias), _b(calibrate), _b(content_free), int(think))
        backend, release = None, None
        d = N.P()
        try:
            backend, release = self._call_backend()
            if given is not None:
                g = _b(given if isinstance(given, str) else json.dumps(given))
                rc = N.decide_given(backend, ctx, len(ctx), sch, g, len(g), ctypes.byref(opts), ctypes.byref(d),
                                    ctypes.byref(err))
            else:
                rc = N.decide(backend, ctx, len(ctx), sch, ctypes.byref(opts), ctypes.byref(d), ctypes.byref(err))
            _check(rc, err)
            text = N.take_string(N.decision_to_json(d, 0))
        finally:
            if d:
                N.decision_free(d)
            if release:
                N.backend_free(release)
            N.schema_free(sch)
        return json.loads(text), sdict, model_cls

    # -- datasets
    def generate_many(self, records, schema=None, *, parallel=16, context_field="context", errors="return", **kw):
        """Decides every record of an iterable, yielding one Result per record
        in input order while up to `parallel` records run at once (their
        forward passes merged into shared batches on a local model; requests in
        flight on a server). A record is a context string or a dict with
        `context_field` (and optionally its own "schema"); records are read
        lazily, so a generator over a huge file streams. errors="return"
        yields a failing record's TypellmError in its place and goes on;
        errors="raise" raises it. Other keywords are generate()'s."""
        if errors not in ("return", "raise"):
            raise InvalidArgument("invalid", "generate_many: errors must be 'return' or 'raise'")
        if not isinstance(parallel, int) or parallel < 1:
            raise InvalidArgument("invalid", "generate_many: parallel must be an integer >= 1")

        def one(rec):
            if isinstance(rec, (str, bytes)):
                ctx, sch = rec, schema
            elif isinstance(rec, dict):
                ctx, sch = rec.get(context_field), rec.get("schema", schema)
                if not isinstance(ctx, (str, bytes)):
                    raise InvalidArgument("invalid", f"generate_many: the record has no string {context_field!r}")
            else:
                raise TypeError("generate_many: a record is a context string or a dict")
            if sch is None:
                raise InvalidArgument("invalid", "generate_many: no schema: pass schema= or give records a 'schema'")
            return self.generate(ctx, sch, **kw)

        def take(fut):
            try:
                return fut.result()
            except TypellmError as e:
                if errors == "raise":
                    raise
                return e

        with concurrent.futures.ThreadPoolExecutor(parallel) as ex:
            pending = collections.deque()
            for rec in records:
                pending.append(ex.submit(one, rec))
                if len(pending) >= 2 * parallel:  # a bounded window: memory does not grow with the input
                    yield take(pending.popleft())
            while pending:
                yield take(pending.popleft())

    def run_batch(self, input, output, schema=None, *, parallel=16, overwrite=False, values_only=False,
                  context_field=None, id_field=None, context_column=None, id_column=None, format="auto",
                  max_record_bytes=0, progress=None, mode="auto", style=None, chat_template=None, temperature=0.0,
                  seed=0, threshold=0.0, lenient=False, strict=False, partial=False):
        """`typellm batch` in the process (tl_batch_run): every record of the
        JSONL or CSV file `input` decided, one line per record written to
        `output` (.csv: CSV) in input order, each the JSON object `typellm
        decide` prints plus "id", error lines for failing records; resumed
        when `output` exists from the same job (overwrite=True starts over).
        progress: a callable given {"total", "done", "resumed", "errors",
        "elapsed_s"} after each line. Ctrl-C stops after the records in
        flight (rerun to resume). Returns the summary dict."""
        if not self._backend:
            raise InvalidArgument("invalid", "Client: closed")
        fmts = {"auto": 0, "jsonl": 1, "csv": 2}
        if format not in fmts:
            raise InvalidArgument("invalid", "run_batch: format must be 'auto', 'jsonl' or 'csv' (OpenAI batch "
                                  "lines: `typellm batch` or the server's /v1/batches)")
        stext = _b(_schema_of(schema)[1]) if schema is not None else None
        style = style if style is not None else self.style
        family, jinja = _template_of(chat_template if chat_template is not None else self.chat_template)
        opts = N.DecideOpts(_b(mode), _b(style), _b(family), float(temperature), int(seed) & (2**64 - 1),
                            float(threshold), False, bool(lenient), bool(strict), bool(partial), _b(jinja))
        stop = threading.Event()

        def new_backend(ctx, worker, out, err):
            e = ctypes.cast(err, N.PErr)
            if self._shared:
                return N.backend_shared_client(self._backend, None, out, e)
            return N.backend_remote_new(ctypes.byref(self._remote_params), out, e)

        def on_progress(ctx, p):
            if progress is not None:
                c = p.contents
                try:
                    progress({"total": c.total, "done": c.done, "resumed": c.resumed, "errors": c.errors,
                              "elapsed_s": c.elapsed_s})
                except Exception:  # a failing callback must not unwind through C
                    pass

        cb = (N.BATCH_NEW_BACKEND(new_backend), N.BATCH_PROGRESS(on_progress), N.BATCH_STOP(lambda ctx: stop.is_set()))
        p = N.BatchParams(input_path=_b(os.fspath(input)), output_path=_b(os.fspath(output)), format=fmts[format],
                          schema_json=stext, schema_len=len(stext) if stext else 0, opts=ctypes.pointer(opts),
                          context_field=_b(context_field), id_field=_b(id_field), context_column=_b(context_column),
                          id_column=_b(id_column), values_only=bool(values_only), overwrite=bool(overwrite),
                          n_parallel=int(parallel), max_record_bytes=int(max_record_bytes),
                          fingerprint_extra=_b("model=" + self.model_name), new_backend=cb[0],
                          on_progress=cb[1], stop=cb[2])
        summary, err, rc = N.BatchProgress(), N.Error(), [0]

        def run():
            rc[0] = N.batch_run(ctypes.byref(p), ctypes.byref(summary), ctypes.byref(err))

        t = threading.Thread(target=run)
        t.start()
        while t.is_alive():
            try:
                t.join(0.2)
            except KeyboardInterrupt:  # finish the records in flight; the output stays resumable
                stop.set()
        _check(rc[0], err)
        return {"total": summary.total, "done": summary.done, "resumed": summary.resumed, "errors": summary.errors,
                "elapsed_s": summary.elapsed_s, "stopped": summary.stopped,
                "usage": {"prompt_tokens": summary.usage.prompt_tokens, "cached_tokens": summary.usage.cached_tokens,
                          "computed_tokens": summary.usage.computed_tokens}, "output": os.fspath(output)}

    # -- Aeon synthesis
    def synth(self, program, *, temperature=0.0, seed=0, max_tokens=128, max_probes=4096, top_k=32, attempts=8,
              max_states=20000, budget=120.0, unconstrained=False, max_oracle_work=0):
        """Fills the typed hole of an Aeon program (source text, or a path to
        an .ae file) with a well-typed term, as `typellm synth` does (the same
        loop in the library, so the same term for the same seed):
        type-constrained attempts, each complete one validated independently
        (types, refinements, @example), the term chosen from the Pareto front.
        Returns a Synthesis (.term, .program, .candidates with their
        probabilities and validations). budget: seconds over everything.
        unconstrained=True: the baseline, the same sampler and budgets with
        the oracle off (plain sampling until EOS; finished texts are still
        validated, so only a well-typed one is chosen). max_oracle_work:
        oracle states per attempt (0: 200 x max_states).
        Raises ProgramError for a program outside the fragment."""
        for name, v, lo in (("max_tokens", max_tokens, 1), ("max_probes", max_probes, 1), ("top_k", top_k, 1),
                            ("attempts", attempts, 1), ("max_states", max_states, 0),
                            ("max_oracle_work", max_oracle_work, 0)):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > 2**31 - 1:
                raise InvalidArgument("invalid", f"synth: {name} must be an integer >= {lo}")
        if not (temperature >= 0 and math.isfinite(temperature)) or not (budget > 0 and math.isfinite(budget)):
            raise InvalidArgument("invalid", "synth: temperature must be >= 0 and budget > 0 (seconds)")
        if self._backend and not self._shared:
            raise InvalidArgument("invalid", "synth: needs the model's logits at every step: a local model "
                                  "(Client(model=...)), not a server")
        p = _program_load(program)
        res = N.AeonSynthResult()
        backend, release = None, None
        try:
            backend, release = self._call_backend()
            n_ctx = self._ctx_size or (N.model_n_ctx_train(self._model) if self._model else 0)
            params = N.AeonSynthParams(float(temperature), int(seed) & (2**64 - 1), max_tokens, max_probes, top_k,
                                       attempts, max_states, N.now_s() + float(budget), int(n_ctx),
                                       bool(unconstrained), max_oracle_work)
            err = N.Error()
            _check(N.aeon_synth(backend, p, ctypes.byref(params), ctypes.byref(res), ctypes.byref(err)), err)
            return Synthesis(json.loads(N.take_string(N.aeon_synth_result_to_json(p, ctypes.byref(res)))))
        finally:
            N.aeon_synth_result_free(ctypes.byref(res))
            if release:
                N.backend_free(release)
            N.aeon_program_free(p)

    # -- tokens
    def tokenize(self, text, *, add_special=True, parse_special=False):
        """Token ids of text (with the model's BOS when add_special and the model adds one)."""
        t = _b(text)
        ids = ctypes.POINTER(ctypes.c_int32)()
        n = ctypes.c_size_t()
        err = N.Error()
        backend, release = self._call_backend()
        try:
            _check(N.backend_tokenize(backend, t, len(t), add_special, parse_special, ctypes.byref(ids),
                                      ctypes.byref(n), ctypes.byref(err)), err)
            out = [ids[i] for i in range(n.value)]
            N.free(ctypes.cast(ids, ctypes.c_void_p))
            return out
        finally:
            if release:
                N.backend_free(release)

    def detokenize(self, ids):
        """The text of token ids (special tokens as their text)."""
        arr = (ctypes.c_int32 * len(ids))(*ids)
        sb = N.Strbuf()
        err = N.Error()
        backend, release = self._call_backend()
        try:
            _check(N.backend_detokenize(backend, arr, len(ids), ctypes.byref(sb), ctypes.byref(err)), err)
            return ctypes.string_at(sb.buf, sb.len).decode("utf-8", "replace") if sb.buf else ""
        finally:
            N.strbuf_free(ctypes.byref(sb))
            if release:
                N.backend_free(release)


# ---- an in-process server -------------------------------------------------------

class Server:
    """typellm's HTTP server (SGLang's API, /v1/systemone, /v1/decisions, OpenAI
    chat/completions, /v1/decide) running in this process. .url, .port; stop()."""

    def __init__(self, model, *, host="127.0.0.1", port=0, api_key=None, threads=0, cache_mb=0):
        err = N.Error()
        m = N.P()
        _check(N.model_load(_b(os.fspath(model)), ctypes.byref(m), ctypes.byref(err)), err, ModelError)
        self._model = m
        self._params = N.ServerParams(_b(os.fspath(model)), _b(host), int(port), _b(api_key), int(threads),
                                      int(cache_mb))  # the other limits: the library's defaults
        s = N.P()
        rc = N.server_new(m, ctypes.byref(self._params), ctypes.byref(s), ctypes.byref(err))
        if rc == 0:
            rc = N.server_start(s, ctypes.byref(err))
            if rc:
                N.server_free(s)
        if rc:
            N.model_free(m)
            self._model = None
            _raise(rc, err)
        self._server = s
        self.port = N.server_port(s)
        self.host = host
        self.url = f"http://{host}:{self.port}"

    def stop(self):
        if getattr(self, "_server", None):
            N.server_stop(self._server)
            N.server_free(self._server)
            self._server = None
        if getattr(self, "_model", None):
            N.model_free(self._model)
            self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass


def serve(model, **kw):
    """Starts typellm's server on model in this process; returns a Server
    (a context manager; .url names where it listens)."""
    return Server(model, **kw)
