"""_native: loads libtypellm.so and declares the C calls the package uses.

Why ctypes and not a C extension module: the package then builds and
installs with nothing but Debian's python3-setuptools (no compiler, no
Python headers), works with any CPython 3 that can open the library, and
the C API (include/typellm/*.h) stays the one interface to maintain. ctypes
releases the GIL for every foreign call, so model work in one thread never
blocks the others; the per-call overhead (a few microseconds) is small next
to a decision (docs: python/README.md, "Overhead").

The library is looked up, in order: $TYPELLM_LIBRARY (a path); the copy
bundled into the installed package (typellm/_lib/, copied by setup.py from
the build tree); the system loader (libtypellm.so.0, e.g. after
`cmake --install` into /usr/local); a development checkout's build/.
"""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("TYPELLM_LIBRARY")
    if env:
        yield env
        return
    bundled = os.path.join(_HERE, "_lib")
    if os.path.isdir(bundled):
        for name in sorted(os.listdir(bundled)):
            if name.startswith("libtypellm.so"):
                yield os.path.join(bundled, name)
    yield "libtypellm.so.0"
    found = ctypes.util.find_library("typellm")
    if found:
        yield found
    yield os.path.join(_HERE, "..", "..", "build", "libtypellm.so")


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("typellm: cannot load libtypellm.so (set TYPELLM_LIBRARY to its path, or build the "
                      "project and reinstall the package); tried:\n  " + "\n  ".join(errors))


lib = _load()

c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_uint64 = ctypes.c_uint64
c_double = ctypes.c_double
c_bool = ctypes.c_bool
POINTER = ctypes.POINTER
byref = ctypes.byref


class Error(ctypes.Structure):
    _fields_ = [("code", c_int), ("msg", ctypes.c_char * 1024)]


class Usage(ctypes.Structure):
    _fields_ = [("prompt_tokens", c_int64), ("cached_tokens", c_int64), ("computed_tokens", c_int64),
                ("forward_passes", c_int64), ("output_tokens", c_int64)]


class SessionParams(ctypes.Structure):
    _fields_ = [("n_threads", c_int), ("cache_mb", c_size_t), ("n_ctx", c_int32), ("extend_ctx", c_bool),
                ("cache_type_k", c_int), ("cache_type_v", c_int)]  # tl_cache_type: 0 f32, 1 f16, 2 q8_0


class SharedParams(ctypes.Structure):
    # on_step / on_step_ctx: the step observer (tl_shared_params.on_step), unused here;
    # max_step_tokens: chunked prefill's tokens per step (0: the default).
    _fields_ = [("session", SessionParams), ("max_batch_seqs", c_int), ("on_step", ctypes.c_void_p),
                ("on_step_ctx", ctypes.c_void_p), ("max_step_tokens", c_int)]


class SglangParams(ctypes.Structure):
    _fields_ = [("base_url", c_char_p), ("api_key", c_char_p), ("tokenizer_path", c_char_p),
                ("timeout_s", c_double), ("max_retries", c_int)]


class RemoteParams(ctypes.Structure):
    # tl_remote_params: the connection and the engine (0 auto, 1 sglang, 2 llamacpp, 3 vllm)
    _fields_ = [("conn", SglangParams), ("engine", c_int)]


ENGINES = {"auto": 0, "sglang": 1, "llamacpp": 2, "vllm": 3}


class DecideOpts(ctypes.Structure):
    _fields_ = [("mode", c_char_p), ("style", c_char_p), ("chat_template", c_char_p), ("temperature", c_double),
                ("seed", c_uint64), ("threshold", c_double), ("trace", c_bool), ("lenient", c_bool),
                ("strict", c_bool), ("partial", c_bool), ("chat_template_jinja", c_char_p),
                ("debias", c_char_p), ("calibrate", c_char_p), ("content_free", c_char_p), ("think", c_int)]


class Strbuf(ctypes.Structure):
    _fields_ = [("buf", c_void_p), ("len", c_size_t), ("cap", c_size_t)]


class ServerParams(ctypes.Structure):
    _fields_ = [("model_path", c_char_p), ("host", c_char_p), ("port", c_int), ("api_key", c_char_p),
                ("n_threads", c_int), ("cache_mb", c_size_t), ("max_body", c_size_t), ("max_file_bytes", c_size_t),
                ("max_questions", c_int),
                ("max_tokens", c_int), ("max_new_tokens", c_int), ("max_queue", c_int),
                ("request_timeout_s", c_double), ("header_timeout_s", c_double), ("body_timeout_s", c_double),
                ("max_client_conns", c_int), ("drain_timeout_s", c_double), ("log", c_void_p),
                ("chat_template", c_char_p), ("chat_template_jinja", c_char_p),
                ("no_ui", c_bool), ("metrics_public", c_bool), ("log_json", c_bool), ("n_ctx", c_int32),
                ("extend_ctx", c_bool), ("data_dir", c_char_p), ("step_tokens", c_int),
                ("cache_type_k", c_int), ("cache_type_v", c_int)]


class BatchProgress(ctypes.Structure):
    _fields_ = [("total", c_uint64), ("done", c_uint64), ("resumed", c_uint64), ("errors", c_uint64),
                ("usage", Usage), ("elapsed_s", c_double), ("stopped", c_bool)]


BATCH_NEW_BACKEND = ctypes.CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_void_p), c_void_p)
BATCH_REQUEST = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_char_p, c_char_p, c_size_t, POINTER(c_int),
                                 POINTER(c_void_p), c_void_p)
BATCH_PROGRESS = ctypes.CFUNCTYPE(None, c_void_p, POINTER(BatchProgress))
BATCH_STOP = ctypes.CFUNCTYPE(c_bool, c_void_p)


class BatchParams(ctypes.Structure):
    _fields_ = [("input_path", c_char_p), ("output_path", c_char_p), ("format", c_int), ("schema_json", c_char_p),
                ("schema_len", c_size_t), ("opts", POINTER(DecideOpts)), ("context_field", c_char_p),
                ("id_field", c_char_p), ("context_column", c_char_p), ("id_column", c_char_p),
                ("values_only", c_bool), ("overwrite", c_bool), ("n_parallel", c_int),
                ("max_record_bytes", c_size_t), ("fingerprint_extra", c_char_p),
                ("new_backend", BATCH_NEW_BACKEND), ("backend_ctx", c_void_p), ("n_routes", c_int),
                ("request", BATCH_REQUEST),
                ("request_ctx", c_void_p), ("request_id_prefix", c_char_p), ("on_progress", BATCH_PROGRESS),
                ("progress_ctx", c_void_p), ("stop", BATCH_STOP), ("stop_ctx", c_void_p)]


class AeonSynthParams(ctypes.Structure):
    _fields_ = [("temperature", c_double), ("seed", c_uint64), ("max_tokens", c_int), ("max_probes", c_int),
                ("top_k", c_int), ("attempts", c_int), ("max_states", c_int64), ("deadline", c_double),
                ("n_ctx", c_int32), ("unconstrained", c_bool), ("max_oracle_work", c_int64)]


AEON_MAX_OBJECTIVES = 8


class AeonValidation(ctypes.Structure):
    _fields_ = [("parsed", c_bool), ("typed", c_bool), ("refinements_ok", c_bool), ("examples_total", c_int),
                ("examples_failed", c_int), ("refinement_checks", c_int), ("refinement_failures", c_int),
                ("n_objectives", c_int), ("objectives", c_double * AEON_MAX_OBJECTIVES),
                ("message", ctypes.c_char * 512)]


class AeonSynthResult(ctypes.Structure):
    # read only through tl_aeon_synth_result_to_json; mirrored so ctypes allocates its size
    _fields_ = [("status", c_char_p), ("chosen", c_int), ("program", c_void_p), ("attempts", c_void_p),
                ("n_attempts", c_int), ("prompt_tokens", c_size_t), ("elapsed_s", c_double),
                ("unconstrained", c_bool)]


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P = c_void_p  # opaque handles
PErr = POINTER(Error)

version = _fn("tl_version", c_char_p)
status_name = _fn("tl_status_name", c_char_p, c_int)
free = _fn("tl_free", None, c_void_p)

model_load = _fn("tl_model_load", c_int, c_char_p, POINTER(P), PErr)
model_free = _fn("tl_model_free", None, P)
model_name = _fn("tl_model_name", c_char_p, P)
model_arch = _fn("tl_model_arch", c_char_p, P)
model_n_ctx_train = _fn("tl_model_n_ctx_train", c_int32, P)
model_resolve = _fn("tl_model_resolve", c_int, c_char_p, c_char_p, POINTER(c_void_p), PErr)
cache_type_parse = _fn("tl_cache_type_parse", c_int, c_char_p, POINTER(c_int), PErr)

backend_shared_new = _fn("tl_backend_shared_new", c_int, P, POINTER(SharedParams), POINTER(P), PErr)
backend_shared_client = _fn("tl_backend_shared_client", c_int, P, c_void_p, POINTER(P), PErr)
backend_sglang_new = _fn("tl_backend_sglang_new", c_int, POINTER(SglangParams), POINTER(P), PErr)
backend_remote_new = _fn("tl_backend_remote_new", c_int, POINTER(RemoteParams), POINTER(P), PErr)
backend_free = _fn("tl_backend_free", None, P)
backend_model_name = _fn("tl_backend_model_name", c_char_p, P)
backend_kind = _fn("tl_backend_kind", c_char_p, P)
backend_tokenize = _fn("tl_backend_tokenize", c_int, P, c_char_p, c_size_t, c_bool, c_bool,
                       POINTER(POINTER(c_int32)), POINTER(c_size_t), PErr)
backend_detokenize = _fn("tl_backend_detokenize", c_int, P, POINTER(c_int32), c_size_t, POINTER(Strbuf), PErr)
strbuf_free = _fn("tl_strbuf_free", None, POINTER(Strbuf))

schema_parse = _fn("tl_schema_parse", c_int, c_char_p, c_size_t, POINTER(P), PErr)
schema_free = _fn("tl_schema_free", None, P)
decide = _fn("tl_decide", c_int, P, c_char_p, c_size_t, P, POINTER(DecideOpts), POINTER(P), PErr)
decide_given = _fn("tl_decide_given", c_int, P, c_char_p, c_size_t, P, c_char_p, c_size_t, POINTER(DecideOpts),
                   POINTER(P), PErr)
decision_free = _fn("tl_decision_free", None, P)
decision_to_json = _fn("tl_decision_to_json", c_void_p, P, ctypes.c_uint)

now_s = _fn("tl_now_s", c_double)
aeon_program_load = _fn("tl_aeon_program_load", c_int, c_char_p, c_size_t, POINTER(P), PErr)
aeon_program_load_file = _fn("tl_aeon_program_load_file", c_int, c_char_p, POINTER(P), PErr)
aeon_program_free = _fn("tl_aeon_program_free", None, P)
aeon_validate = _fn("tl_aeon_validate", c_int, P, c_char_p, c_size_t, POINTER(AeonValidation), PErr)
aeon_synth = _fn("tl_aeon_synth", c_int, P, P, POINTER(AeonSynthParams), POINTER(AeonSynthResult), PErr)
aeon_synth_result_free = _fn("tl_aeon_synth_result_free", None, POINTER(AeonSynthResult))
aeon_synth_result_to_json = _fn("tl_aeon_synth_result_to_json", c_void_p, P, POINTER(AeonSynthResult))

batch_run = _fn("tl_batch_run", c_int, POINTER(BatchParams), POINTER(BatchProgress), PErr)

server_new = _fn("tl_server_new", c_int, P, POINTER(ServerParams), POINTER(P), PErr)
server_start = _fn("tl_server_start", c_int, P, PErr)
server_port = _fn("tl_server_port", c_int, P)
server_stop = _fn("tl_server_stop", None, P)
server_free = _fn("tl_server_free", None, P)


def take_string(ptr):
    """A library-allocated C string as str; the memory is released."""
    if not ptr:
        raise MemoryError("typellm: out of memory")
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        free(ptr)
