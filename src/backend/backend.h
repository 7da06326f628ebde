/* backend.h: the seam between what asks the model (decisions, Aeon
 * synthesis, the server's typed endpoints) and what runs it (the embedded
 * engine, or an SGLang server over HTTP).
 *
 * Callers above this line never see a KV tensor: they present whole token
 * sequences and the backend's prefix cache (ours, or the server's) makes a
 * growing sequence cost only its new tail. */
#ifndef TL_BACKEND_BACKEND_H
#define TL_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "tok/vocab.h"
#include "typellm.h"
#include "util/strbuf.h"

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

/* A backend is a vtable plus its state; use the tl_backend_* wrappers below. */
typedef struct tl_backend_ops {
    const char *kind; /* "local", "sglang" */
    void (*free)(tl_backend *b);
    tl_status (*tokenize)(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                          int32_t **ids, size_t *n, tl_error *err);
    tl_status (*detokenize)(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err);
    /* k requests answered together (one batched step where the backend can). */
    tl_status (*score)(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err);
    /* Full next-token logits; NULL where the backend cannot (remote). */
    tl_status (*next_logits)(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                             tl_error *err);
    /* Constrained generation by regex (remote backends); NULL for local,
     * where callers build masks over next_logits. */
    tl_status (*generate_regex)(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                tl_usage *usage, tl_error *err);
} tl_backend_ops;

/* HTTP requests a remote backend has made so far, by endpoint (all zero for
 * local backends). A caller that runs one decision at a time on a backend
 * gets that decision's round trips as the difference of two readings. */
typedef struct tl_backend_requests {
    int64_t tokenize, detokenize, generate, other;
} tl_backend_requests;

struct tl_backend {
    const tl_backend_ops *ops;
    const tl_vocab *vocab;      /* a local copy of the tokenizer when there is one, else NULL */
    int32_t n_vocab;
    const char *model_name;     /* what replies name as the model */
    const char *chat_template;  /* Jinja source, or NULL */
    /* The model runs elsewhere and its server does not send its chat template
     * (SGLang): chat rendering needs a template source given by the caller
     * (--chat-template, or --tokenizer M.gguf carrying one); without one the
     * decision layer refuses instead of silently changing the style. */
    bool template_from_caller;
    tl_backend_requests requests; /* remote backends: updated under their own lock */
    void *impl;
};

/* The embedded engine: m must outlive the backend. */
tl_status tl_backend_local_new(const tl_model *m, const tl_session_params *params, tl_backend **out,
                               tl_error *err);
/* The local backend's session (NULL for other kinds), for callers that need it. */
tl_session *tl_backend_local_session(tl_backend *b);

/* An SGLang server at base_url (e.g. "http://127.0.0.1:30000"). api_key may be
 * NULL. tokenizer_path (optional) is a GGUF whose vocabulary is used where the
 * server lacks /tokenize. */
typedef struct tl_sglang_params {
    const char *base_url;
    const char *api_key;
    const char *tokenizer_path; /* a GGUF of the same model: its tokenizer (used instead of /tokenize)
                                   and chat template; needed for numbers and patterns under the automaton */
    double timeout_s;   /* per request; 0: 60 s */
    int max_retries;    /* on 429/5xx/connect failure; < 0: 3 */
} tl_sglang_params;
tl_status tl_backend_sglang_new(const tl_sglang_params *params, tl_backend **out, tl_error *err);

void tl_backend_free(tl_backend *b);

tl_status tl_backend_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                              int32_t **ids, size_t *n, tl_error *err);
tl_status tl_backend_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err);
tl_status tl_backend_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err);
tl_status tl_backend_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                 tl_error *err);

#endif
