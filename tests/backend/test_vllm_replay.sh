#!/usr/bin/env bash
# test_vllm_replay.sh: typellm's vllm backend against request/response pairs
# written from vLLM's documented wire schema (tests/backend/data/vllm_pairs.json,
# answered by tests/backend/vllm_replay.py only for requests equal to the
# recorded ones): the backend's /v1/models, /version, /tokenize, /detokenize
# and /v1/completions requests keep vLLM's field names, types and nesting
# (a drifted request gets 400 and fails here), a whole scoring wave is one
# /v1/completions of candidate-terminated prompts read through prompt_logprobs,
# usage carries prompt_tokens_details.cached_tokens, the capabilities name the
# engine and version, and a reply without prompt_logprobs is a clear error.
source "$TL_SRC/tests/server/serve_lib.sh"
# The check drives libtypellm.so from python (ctypes); an instrumented library
# cannot be loaded into an uninstrumented python (as tests/python), so the
# sanitizer pass leaves this test to the release pass.
if [ -n "${TL_SANITIZER_RUN:-}" ]; then echo "test_vllm_replay: release pass only (python + ctypes)"; exit 0; fi
python3 "$TL_SRC/tests/backend/vllm_replay.py" "$TL_SRC/tests/backend/data/vllm_pairs.json" "$SCRATCH/replay.port" &
SERVERS+=("$!")
for _ in $(seq 1 100); do [ -s "$SCRATCH/replay.port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$SCRATCH/replay.port")" LIB="$(dirname "$TL_BIN")/libtypellm.so" python3 - <<'PY'
import ctypes as C, os, sys
lib = C.CDLL(os.environ["LIB"])
class Err(C.Structure): _fields_ = [("code", C.c_int), ("msg", C.c_char * 1024)]
class Conn(C.Structure): _fields_ = [("base_url", C.c_char_p), ("api_key", C.c_char_p), ("tokenizer_path", C.c_char_p),
                                     ("timeout_s", C.c_double), ("max_retries", C.c_int)]
class Params(C.Structure): _fields_ = [("conn", Conn), ("engine", C.c_int)]
class Req(C.Structure): _fields_ = [("ids", C.POINTER(C.c_int32)), ("n", C.c_size_t), ("cands", C.POINTER(C.c_int32)),
                                    ("n_cands", C.c_size_t), ("logprobs", C.POINTER(C.c_double))]
class Usage(C.Structure): _fields_ = [(k, C.c_int64) for k in ("prompt", "cached", "computed", "passes", "output")]
class Caps(C.Structure): _fields_ = [("flags", C.c_uint), ("engine", C.c_char_p), ("version", C.c_char_p)]
class Sb(C.Structure): _fields_ = [("buf", C.c_char_p), ("len", C.c_size_t), ("cap", C.c_size_t)]
err = Err()
b = C.c_void_p()
p = Params(Conn(os.environ["URL"].encode(), None, None, 5.0, 0), 3)   # TL_ENGINE_VLLM
assert lib.tl_backend_remote_new(C.byref(p), C.byref(b), C.byref(err)) == 0, err.msg
caps = Caps()
lib.tl_backend_capabilities(b, C.byref(caps))
assert caps.engine == b"vllm" and caps.version == b"0.11.0" and caps.flags & 3 == 3, (caps.engine, caps.version, caps.flags)
lib.tl_backend_model_name.restype = C.c_char_p
assert lib.tl_backend_model_name(b) == b"org/tiny-model"
ids, n = C.POINTER(C.c_int32)(), C.c_size_t()
text = b"Is it late?"
assert lib.tl_backend_tokenize(b, text, C.c_size_t(len(text)), True, True, C.byref(ids), C.byref(n), C.byref(err)) == 0, err.msg
assert ids[:n.value] == [1, 1317, 372, 5683, 29973], ids[:n.value]
sb = Sb()
two = (C.c_int32 * 2)(1317, 372)
assert lib.tl_backend_detokenize(b, two, C.c_size_t(2), C.byref(sb), C.byref(err)) == 0, err.msg
assert sb.buf == b"Is it", sb.buf
def req(ctx, cands):
    return Req((C.c_int32 * len(ctx))(*ctx), len(ctx), (C.c_int32 * len(cands))(*cands), len(cands),
               (C.c_double * len(cands))())
reqs = (Req * 2)(req([1, 1317, 372, 5683, 29973], [29909, 29933]), req([1, 1317], [29909]))
u = Usage()
assert lib.tl_backend_score(b, reqs, C.c_size_t(2), C.byref(u), C.byref(err)) == 0, err.msg
got = [reqs[0].logprobs[0], reqs[0].logprobs[1], reqs[1].logprobs[0]]
assert got == [-0.75, -2.125, -11.5], got
assert (u.prompt, u.cached, u.computed, u.output) == (15, 10, 5, 3), (u.prompt, u.cached, u.computed, u.output)
# drift: a reply without prompt_logprobs is an error naming the field, not a number
one = (Req * 1)(req([1, 1317, 372], [29909]))
assert lib.tl_backend_score(b, one, C.c_size_t(1), None, C.byref(err)) != 0
assert b"prompt_logprobs" in err.msg and b"vllm" in err.msg and b"0.11.0" in err.msg, err.msg
# a request vLLM's recorded shape does not have: the replay answers 400, the backend names the endpoint
text = b"something else"
assert lib.tl_backend_tokenize(b, text, C.c_size_t(len(text)), False, True, C.byref(ids), C.byref(n), C.byref(err)) != 0
assert b"/tokenize" in err.msg and b"400" in err.msg, err.msg
lib.tl_backend_free(b)
# auto-detection: not llama.cpp (/props), not SGLang (/model_info), /v1/models owned by vllm
p.engine = 0
assert lib.tl_backend_remote_new(C.byref(p), C.byref(b), C.byref(err)) == 0, err.msg
lib.tl_backend_kind.restype = C.c_char_p
assert lib.tl_backend_kind(b) == b"vllm", lib.tl_backend_kind(b)
lib.tl_backend_free(b)
print("vllm replay: ok")
PY
# the one request off the recorded shapes is the deliberate one (the detection's probes of other
# engines' endpoints aside)
grep mismatch "$SCRATCH/replay.port.log" | grep -v -E "^/(props|model_info|get_model_info) " >"$SCRATCH/drift" || true
[ "$(wc -l <"$SCRATCH/drift")" = 1 ] && grep -q "^/tokenize mismatch" "$SCRATCH/drift" ||
  { echo "requests drifted from vLLM's recorded shapes:"; cat "$SCRATCH/drift"; exit 1; }
echo "test_vllm_replay: ok"
