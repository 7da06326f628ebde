/* backend.h: the seam between what asks the model (decisions, Aeon
 * synthesis, the server's typed endpoints) and what runs it. The calls are
 * public (include/typellm/backend.h); this private header adds the vtable
 * each backend kind implements and the struct the layers read. */
#ifndef TL_BACKEND_BACKEND_H
#define TL_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "tok/vocab.h"
#include "typellm/backend.h"
#include "util/strbuf.h"

/* A backend is a vtable plus its state; use the tl_backend_* wrappers below. */
typedef struct tl_backend_ops {
    const char *kind; /* "local", "sglang", "llamacpp", "vllm", "shared" */
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
    /* The engine's batched evaluation, prompt logits, cache flush (local
     * engines); NULL for remote backends. */
    tl_status (*eval)(tl_backend *b, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err);
    tl_status (*eval_last)(tl_backend *b, const int32_t *ids, size_t n, size_t k_last, float *logits,
                           tl_usage *usage, tl_error *err);
    tl_status (*flush)(tl_backend *b, tl_error *err);
    /* Greedy step under a mask (remote backends that cannot return every
     * allowed token's logprob cheaply; NULL elsewhere): the best of allowed
     * after ids, its full-vocabulary logprob, and the log of the allowed
     * tokens' total probability. The step loop uses it at temperature 0 for
     * large allowed sets (strings), so a step costs two small replies. */
    tl_status (*score_greedy)(tl_backend *b, const int32_t *ids, size_t n, const int32_t *allowed, size_t k,
                              int32_t *best, double *lp_full, double *log_mass, tl_usage *usage, tl_error *err);
    /* A request passed to the server as it is (remote backends; NULL
     * elsewhere): tl_backend_forward. */
    tl_status (*forward)(tl_backend *b, const char *path, const char *body, size_t len, int *status, char **reply,
                         tl_error *err);
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
    int32_t n_ctx;              /* the longest sequence it accepts; 0: unknown */
    unsigned caps;              /* TL_CAP_*, set by the constructor */
    const char *version;        /* engine version string (owned by impl), or NULL */
    void *impl;
};

/* The tl_seq of each score request (candidate logprobs only); NULL (and
 * err set) when out of memory. The caller frees the array. */
/* The remote engines' constructors (tl_backend_remote_new dispatches). */
/* limits (NULL: none): the deadline and cancellation of their own requests and of the calls after. */
tl_status tl_backend_sglang_new_limited(const tl_sglang_params *params, const tl_call_limits *limits, tl_backend **out,
                                        tl_error *err);
tl_status tl_backend_llamacpp_new(const tl_sglang_params *params, const tl_call_limits *limits, tl_backend **out,
                                  tl_error *err);
/* only_vllm: refuse (TL_ERR_UNSUPPORTED) a server whose /v1/models does not say owned_by "vllm" (detection). */
tl_status tl_backend_vllm_new(const tl_sglang_params *params, bool only_vllm, const tl_call_limits *limits,
                              tl_backend **out, tl_error *err);

/* re[0..len) (the regex subset typellm writes: literals, classes, groups,
 * alternation, ? * + {m,n}) as a GBNF grammar with rule `root`, for
 * llama.cpp's server (gbnf.c). TL_ERR_UNSUPPORTED names a construct GBNF
 * cannot say, with its byte offset. */
tl_status tl_regex_to_gbnf(const char *re, size_t len, tl_strbuf *out, tl_error *err);

tl_seq *tl_score_reqs_to_seqs(const tl_score_req *reqs, size_t k, tl_error *err);

#endif
