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
    const char *tokenizer_path;
    double timeout_s;   /* per request; 0: 60 s */
    int max_retries;    /* on 429/5xx/connect failure; < 0: 3 */
} tl_sglang_params;
TL_API tl_status tl_backend_sglang_new(const tl_sglang_params *params, tl_backend **out, tl_error *err);

/* Frees any backend (NULL: no-op). */
TL_API void tl_backend_free(tl_backend *b);

/* ---- what a backend is --------------------------------------------------- */

/* "local", "sglang" or "shared". Static string. */
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

#ifdef __cplusplus
}
#endif
#endif
