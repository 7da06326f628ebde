"""typellm.Client: typed decisions from a local GGUF model (the embedded
engine, one shared batching backend for every thread of the process) or an
SGLang server, over libtypellm's C API."""
import ctypes
import json
import os
import re
import threading

from . import _native as N

__all__ = ["Client", "Result", "TypellmError", "SchemaError", "ModelError", "RemoteError", "LimitError",
           "InvalidArgument", "serve", "Server"]


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
        self.label_mass = {}
        self.trace = {}
        for k, f in self.fields.items():
            if "probabilities" in f:
                self.probabilities[k] = dict(f["probabilities"])
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


def _to_model(model_cls, values):
    if hasattr(model_cls, "model_validate"):
        return model_cls.model_validate(values)
    return model_cls.parse_obj(values)


# ---- the client ---------------------------------------------------------------

class Client:
    """A model to decide with.

        Client(model="path.gguf", threads=0, ctx_size=0, cache_mb=0)
        Client(hf="org/repo:file.gguf")          # downloaded into ~/.cache/typellm (resumable, checked)
        Client(server="http://host:port", api_key=None, tokenizer="M.gguf" | None, timeout=60)
        Client()                                  # $TYPELLM_MODEL

    Thread-safe: any number of threads may call one client at once; with a
    local model their forward passes are merged into shared batches over one
    prefix cache (results are bit-identical to running alone). Use it as a
    context manager or call close()."""

    def __init__(self, model=None, *, server=None, hf=None, threads=0, ctx_size=0, cache_mb=0, api_key=None,
                 tokenizer=None, timeout=0.0, retries=-1, chat_template=None, style=None):
        self._lock = threading.Lock()
        self._model = None
        self._backend = None
        self._shared = False
        self.chat_template = chat_template
        self.style = style
        err = N.Error()
        if server is not None:
            if model is not None or hf is not None:
                raise InvalidArgument("invalid", "Client: give model=, hf= or server=, not several")
            p = N.SglangParams(_b(server), _b(api_key), _b(tokenizer), float(timeout), int(retries))
            b = N.P()
            _check(N.backend_sglang_new(ctypes.byref(p), ctypes.byref(b), ctypes.byref(err)), err)
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
        path = model
        if hf is not None and model is None:
            out = ctypes.c_void_p()
            _check(N.model_resolve(None, _b(hf), ctypes.byref(out), ctypes.byref(err)), err, ModelError)
            path = N.take_string(out.value)
        m = N.P()
        _check(N.model_load(_b(os.fspath(path)), ctypes.byref(m), ctypes.byref(err)), err, ModelError)
        self._model = m
        sp = N.SharedParams(N.SessionParams(int(threads), int(cache_mb), int(ctx_size), False), 0)
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
               threshold=0.0, trace=False, given=None, lenient=False, strict=False, partial=False):
        """Runs the decision and returns its whole record (a dict, exactly what
        `typellm decide` prints: values, fields with probabilities, usage, ...)."""
        record, _, _ = self._decide(context, schema, mode, style, chat_template, temperature, seed, threshold,
                                    trace, given, lenient, strict, partial)
        return record

    def generate(self, context, schema, *, mode="auto", style=None, chat_template=None, temperature=0.0, seed=0,
                 threshold=0.0, trace=False, given=None, as_model=False, lenient=False, strict=False,
                 partial=False):
        """Decides every field of schema over context and returns a Result:
        a dict of typed values ({"answer": 70.0}) with the distributions on
        attributes. schema: a dict, JSON text, or a Pydantic model class (then
        as_model=True returns an instance of it instead)."""
        record, sdict, model_cls = self._decide(context, schema, mode, style, chat_template, temperature, seed,
                                                threshold, trace, given, lenient, strict, partial)
        result = Result(record, sdict)
        if as_model:
            if model_cls is None:
                raise InvalidArgument("invalid", "generate: as_model=True needs a Pydantic model class as schema")
            return _to_model(model_cls, dict(result))
        return result

    def _decide(self, context, schema, mode, style, chat_template, temperature, seed, threshold, trace, given,
                lenient=False, strict=False, partial=False):
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
                            float(threshold), bool(trace), bool(lenient), bool(strict), bool(partial), _b(jinja))
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
