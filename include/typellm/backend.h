/* typellm/backend.h: what decisions, Aeon synthesis and the server's typed
 * endpoints run on: the embedded engine (local), an SGLang server over HTTP,
 * or the shared batching backend that merges the calls of many threads.
 *
 * Callers never see a KV tensor: they present whole token sequences and the
 * backend's prefix cache (ours, or the server's) makes a growing sequence
 * cost only its new tail.
 *
 * Threading: a local or SGLang backend is used by one thread at a time. A
 * shared backend (tl_backend_shared_new) may be called from any number of
 * threads at once; the handles it gives out (tl_backend_shared_client) are
 * each used by one thread at a time. */
#ifndef TYPELLM_BACKEND_H
#define TYPELLM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "model.h"
#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creating backends --------------------------------------------------- */

/* The embedded engine over m (which must outlive the backend), with its own
 * session (KV prefix cache, thread pool) made from params (NULL: defaults).
 * Errors: TL_ERR_INVALID (no model), the session's errors (context too long). */
TL_API tl_status tl_backend_local_new(const tl_model *m, const tl_session_params *params, tl_backend **out,
                                      tl_error *err);
/* The local backend's session (NULL for other kinds): owned by the backend. */
TL_API tl_session *tl_backend_local_session(tl_backend *b);

/* An SGLang server (or `typellm serve`) at base_url, e.g. "http://127.0.0.1:30000".
 * api_key may be NULL. tokenizer_path (optional) is a GGUF whose vocabulary is
 * used where the server lacks /tokenize. */
typedef struct tl_sglang_params {
    const char *base_url;
    const char *api_key;
    const char *tokenizer_path; /* a GGUF of the same model: its tokenizer (used instead of /tokenize)
                                   and chat template; needed for numbers and patterns under the automaton */
    double timeout_s;   /* per request; 0: 60 s */
    int max_retries;    /* on 429/5xx/connect failure; < 0: 3 */
} tl_sglang_params;
TL_API tl_status tl_backend_sglang_new(const tl_sglang_params *params, tl_backend **out, tl_error *err);

/* Any of the serving engines people already run, behind one contract: the
 * same calls (tokenize, candidate scoring, constrained generation) and the
 * same guarantees (values in domain by construction, the model's own
 * probabilities, cached-token accounting, retries and timeouts). engine AUTO
 * asks the server what it is (llama.cpp's /props, then SGLang's
 * /model_info, then /v1/models owned by vllm). What each engine offers is declared in tl_backend_caps.
 *   SGLANG:   SGLang's /generate (or `typellm serve`)
 *   LLAMACPP: llama.cpp's llama-server (/completion, /tokenize, /props)
 *   VLLM:     vLLM's OpenAI-compatible server (/v1/completions, /tokenize) */
typedef enum tl_engine_kind {
    TL_ENGINE_AUTO = 0,
    TL_ENGINE_SGLANG,
    TL_ENGINE_LLAMACPP,
    TL_ENGINE_VLLM,
} tl_engine_kind;
typedef struct tl_remote_params {
    tl_sglang_params conn; /* URL, key, tokenizer GGUF, timeout, retries (as for SGLang) */
    tl_engine_kind engine;
} tl_remote_params;
TL_API tl_status tl_backend_remote_new(const tl_remote_params *params, tl_backend **out, tl_error *err);
/* "sglang", "llamacpp", "vllm" or "auto" -> *out; false for anything else. */
TL_API bool tl_engine_parse(const char *name, tl_engine_kind *out);

/* What a backend can do (flags), and which engine and version it is. */
enum {
    TL_CAP_EXACT_CANDIDATES = 1 << 0, /* exact full-vocabulary log-probabilities of chosen ids */
    TL_CAP_PROMPT_LOGPROBS = 1 << 1,  /* log-probabilities of prompt tokens */
    TL_CAP_REGEX = 1 << 2,            /* generation under a regex (server-side) */
    TL_CAP_GRAMMAR = 1 << 3,          /* generation under a grammar / token mask (server-side) */
    TL_CAP_CACHE_REPORT = 1 << 4,     /* replies say how many prompt tokens were cached */
    TL_CAP_FULL_LOGITS = 1 << 5,      /* next-token logits over the whole vocabulary */
    TL_CAP_LOCAL_TOKENIZER = 1 << 6,  /* the model's tokenizer is here (numbers/patterns by automaton) */
    TL_CAP_CHAT_TEMPLATE = 1 << 7,    /* the backend knows the model's chat template */
};
typedef struct tl_backend_caps {
    unsigned flags;      /* TL_CAP_* */
    const char *engine;  /* "local", "shared", "sglang", "llamacpp", "vllm" */
    const char *version; /* the server's own build/version string, or "" when it sends none */
} tl_backend_caps;
/* Fills *out (never fails for a live backend; zeros for NULL). */
TL_API void tl_backend_capabilities(const tl_backend *b, tl_backend_caps *out);

/* The shared batching backend: one session over m (which must outlive it),
 * owned by one thread of the backend's own; every other thread may call it at
 * once (tl_decide, tl_backend_score / next_logits / eval, ...). Calls waiting
 * at the same moment run as one batched forward pass, over one prefix cache,
 * and each gets exactly the numbers it would get alone (bit for bit).
 * params NULL: default session, 256 sequences per batch.
 * Errors: those of tl_session_new; TL_ERR_INTERNAL when the thread cannot start.
 * Freeing it (after every client) cancels what is still queued. */
/* What one batched step did, told to tl_shared_params.on_step on the owner
 * thread right after the step (keep the callback short: the next step waits). */
typedef struct tl_shared_step {
    size_t jobs;           /* calls merged into the step */
    size_t seqs;           /* sequences evaluated */
    size_t batch_jobs;     /* of jobs, those of TL_PRIORITY_BATCH callers */
    double seconds;        /* wall time of the step */
    tl_usage usage;        /* the step's tokens (cached / computed) */
    bool ok;               /* the engine reported no error */
    size_t cache_bytes;    /* the prefix cache's bytes after the step (tl_session_cache_bytes) */
    size_t cache_budget;   /* and its budget (tl_session_cache_budget) */
} tl_shared_step;
typedef struct tl_shared_params {
    tl_session_params session; /* the one session: threads, cache budget, context */
    int max_batch_seqs;        /* sequences merged into one step; <= 0: 256 */
    /* Called after every step (NULL: none), e.g. for metrics. */
    void (*on_step)(void *ctx, const tl_shared_step *step);
    void *on_step_ctx;
    /* Uncached tokens computed per step: a call whose uncached context is
     * longer runs it in chunks over several steps, beside the other calls'
     * steps (results unchanged). 0: 512; < 0: no chunking (a call's whole
     * work in one step, as before). */
    int max_step_tokens;
} tl_shared_params;
TL_API tl_status tl_backend_shared_new(const tl_model *m, const tl_shared_params *params, tl_backend **out,
                                       tl_error *err);

/* One caller's limits on a shared backend: a call still queued when the
 * deadline passes returns TL_ERR_TIMEOUT, one whose cancelled() turns true
 * (polled every 100 ms while queued) TL_ERR_CANCELLED. A call already running
 * always completes, and so does one past its deadline whose context is being
 * computed in chunks (max_step_tokens). */
/* Scheduling classes: each step takes the waiting interactive calls first
 * (in arrival order, up to the batch cap); calls of batch jobs run only in a
 * step no interactive call is waiting for, so a running batch job never
 * delays an interactive request by more than the step in progress. */
enum { TL_PRIORITY_INTERACTIVE = 0, TL_PRIORITY_BATCH = 1 };
typedef struct tl_call_limits {
    double deadline_s;            /* a tl_now_s() value; 0: none */
    bool (*cancelled)(void *ctx); /* NULL: never */
    void *ctx;
    int priority;                 /* TL_PRIORITY_*; 0 (interactive) when zeroed */
} tl_call_limits;
/* A client of shared: a backend that runs through shared's thread and cache
 * under limits (NULL: none). Used by one thread at a time; free it with
 * tl_backend_free before shared. */
TL_API tl_status tl_backend_shared_client(tl_backend *shared, const tl_call_limits *limits, tl_backend **out,
                                          tl_error *err);
/* The same limits on a remote backend (SGLang, llama.cpp, vLLM), for the
 * calls that follow until the next tl_backend_remote_set_limits (NULL:
 * none): every HTTP exchange's timeout is cut to the time left, retries and
 * their backoff stop at the deadline (TL_ERR_TIMEOUT), and a transfer is
 * aborted when cancelled() turns true, polled about once a second
 * (TL_ERR_CANCELLED). TL_ERR_INVALID for other kinds of backend. */
TL_API tl_status tl_backend_remote_set_limits(tl_backend *b, const tl_call_limits *limits, tl_error *err);
/* tl_backend_remote_new whose own requests (asking the server what it is and
 * serves) already run under limits, which then stay set as by
 * tl_backend_remote_set_limits. limits NULL: tl_backend_remote_new. */
TL_API tl_status tl_backend_remote_new_limited(const tl_remote_params *params, const tl_call_limits *limits,
                                               tl_backend **out, tl_error *err);
/* Batched steps the shared backend's thread has run so far (of a shared
 * backend or any of its clients; 0 for other kinds): fewer steps than calls
 * means calls were merged. */
TL_API uint64_t tl_backend_shared_steps(const tl_backend *b);
/* A reading of a shared backend's scheduler (of it or any client). */
typedef struct tl_shared_stats {
    uint64_t steps;             /* batched steps run so far */
    uint64_t seqs_run;          /* sequences evaluated over all steps */
    size_t queued;              /* calls waiting now (both classes) */
    size_t queued_batch;        /* of queued, TL_PRIORITY_BATCH calls */
    size_t running_seqs;        /* sequences in the step running now; 0 when idle */
    double busy_s;              /* total wall time of the steps so far */
} tl_shared_stats;
/* Fills *out; TL_ERR_INVALID when b is not a shared backend or client. */
TL_API tl_status tl_backend_shared_stats(const tl_backend *b, tl_shared_stats *out, tl_error *err);

/* Frees any backend (NULL: no-op). */
TL_API void tl_backend_free(tl_backend *b);

/* ---- what a backend is --------------------------------------------------- */

/* "local", "sglang" or "shared" (a shared backend and its clients). Static string. */
TL_API const char *tl_backend_kind(const tl_backend *b);
/* What replies name as the model (general.name, the file's base name, or the
 * server's model path); owned by the backend. */
TL_API const char *tl_backend_model_name(const tl_backend *b);
/* Vocabulary size (the range of valid token ids). */
TL_API int32_t tl_backend_n_vocab(const tl_backend *b);
/* The local copy of the tokenizer, or NULL (remote backend without one). */
TL_API const tl_vocab *tl_backend_vocab(const tl_backend *b);
/* The model's chat template (Jinja source), or NULL. Owned by the backend. */
TL_API const char *tl_backend_chat_template(const tl_backend *b);
/* The longest sequence it accepts (a local or shared backend: its session's
 * context, the model's unless tl_session_params.n_ctx set another); 0:
 * unknown (a remote server that does not say). */
TL_API int32_t tl_backend_n_ctx(const tl_backend *b);

/* ---- calls ----------------------------------------------------------------- */

/* Tokenizes text[0..len) (add_special: BOS/EOS as the model's metadata says;
 * parse_special: control-token texts become those tokens). *ids: caller
 * tl_free()s, also when *n is 0. */
TL_API tl_status tl_backend_tokenize(tl_backend *b, const char *text, size_t len, bool add_special,
                                     bool parse_special, int32_t **ids, size_t *n, tl_error *err);
/* Appends the text of ids to *out, as a server's /detokenize with
 * skip_special_tokens false: SPM's leading space undone, control tokens
 * printed. */
TL_API tl_status tl_backend_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err);

/* One scoring request: the full token sequence and the candidate ids whose
 * log-probabilities (log-softmax over the whole vocabulary, temperature 1) at
 * the next position are wanted. */
typedef struct tl_score_req {
    const int32_t *ids;
    size_t n;
    const int32_t *cands;
    size_t n_cands;
    double *logprobs; /* out: n_cands values */
} tl_score_req;

/* Answers k requests together (one batched step where the backend can; a
 * shared prefix is computed once). usage (optional) is added to. Bad token
 * ids are TL_ERR_INVALID naming the request and position; nothing is run then. */
TL_API tl_status tl_backend_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err);
/* Full next-token logits (n_vocab floats) after ids[0..n). TL_ERR_UNSUPPORTED
 * on remote backends. */
TL_API tl_status tl_backend_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits,
                                        tl_usage *usage, tl_error *err);

/* POSTs body[0..len) to path ("/v1/chat/completions", ...) on a remote
 * backend's server as it is, with the backend's key, timeout and retries:
 * *status the server's HTTP status (4xx and, once the retries are spent,
 * 429 / 5xx included), *reply its body (caller tl_free()s). For requests
 * the server answers itself, e.g. the OpenAI batch lines of `typellm batch
 * --server`. Errors: TL_ERR_UNSUPPORTED (local and shared backends),
 * TL_ERR_NETWORK / TL_ERR_TIMEOUT (the server not reached). */
TL_API tl_status tl_backend_forward(tl_backend *b, const char *path, const char *body, size_t len, int *status,
                                    char **reply, tl_error *err);

/* ---- evaluation (local-engine backends: local and shared) --------------------- */

/* k sequences in one batched step (model.h's tl_seq: full logits and/or
 * candidate log-probabilities after each), as tl_session_eval_batch. */
TL_API tl_status tl_backend_eval(tl_backend *b, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err);
/* Logits at each of the last k_last positions of ids (k_last x n_vocab), for
 * prompt log-probabilities. */
TL_API tl_status tl_backend_eval_last(tl_backend *b, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                      tl_usage *usage, tl_error *err);
/* Drops every unpinned cached token (tl_session_flush). */
TL_API tl_status tl_backend_flush(tl_backend *b, tl_error *err);
/* Each returns TL_ERR_UNSUPPORTED on remote backends. */

#ifdef __cplusplus
}
#endif
#endif
