/* remote.h: what every remote backend (SGLang, llama.cpp's server, vLLM)
 * shares: one libcurl handle with retries and backoff, JSON requests and
 * replies, the per-backend /tokenize cache, and the request counters. Each
 * engine's file (sglang.c, llamacpp.c, vllm.c) only says which requests to
 * make and how to read their replies. */
#ifndef TL_BACKEND_REMOTE_H
#define TL_BACKEND_REMOTE_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include "backend/backend.h"

typedef struct tl_remote_tok_entry {
    uint64_t hash;
    char *text; /* flags byte + text; NULL: empty slot */
    size_t len;
    int32_t *ids;
    size_t n;
} tl_remote_tok_entry;

typedef struct tl_remote {
    const char *engine;        /* "sglang", "llamacpp", "vllm": every message starts with it */
    const char *generate_path; /* the endpoint counted as `generate` */
    char *base;                /* base URL without trailing slash */
    char *auth_header;         /* "Authorization: Bearer KEY" or NULL */
    double timeout_s;
    int max_retries;
    CURL *curl;
    pthread_mutex_t mu;           /* one transfer at a time on the handle */
    tl_call_limits limits;        /* the caller's deadline and cancellation (tl_backend_remote_set_limits); under mu */
    tl_backend_requests *counts;  /* the backend's public counters, updated under mu */
    /* tokenizer replies by (flags, text): a decision tokenizes the same
     * framing and label texts many times. Open addressing, cleared when full. */
    tl_remote_tok_entry *tok_cache;
    size_t tok_cap, tok_used, tok_bytes;
    pthread_mutex_t cache_mu;
} tl_remote;

/* Sets up r (counts: the backend's counters). Errors: bad URL, no memory. */
tl_status tl_remote_init(tl_remote *r, const char *engine, const char *generate_path, const char *base_url,
                         const char *api_key, double timeout_s, int max_retries, tl_backend_requests *counts,
                         tl_error *err);
void tl_remote_free(tl_remote *r);

/* POSTs j (GET when NULL) to path and parses the JSON reply into *out.
 * 429/5xx/connection failures and 2xx replies that are not JSON are retried
 * (every request a backend makes is idempotent); a non-2xx status is
 * TL_ERR_REMOTE with the server's message, *status_out (optional) the final
 * HTTP status. */
tl_status tl_remote_call(tl_remote *r, const char *path, json_t *j, json_t **out, long *status_out, tl_error *err);

/* The caller's deadline and cancellation for the exchanges that follow
 * (NULL: none): each attempt's timeout is cut to the time left, no retry or
 * backoff outlives the deadline (TL_ERR_TIMEOUT), and a transfer is aborted
 * when cancelled() turns true (TL_ERR_CANCELLED). */
void tl_remote_set_limits(tl_remote *r, const tl_call_limits *limits);
/* POSTs body[0..len) to path as it is (the backends' forward op): *status
 * the final HTTP status (429 / 5xx too, once the retries are spent), *reply
 * its body (malloc'd). Errors: the server not reached (TL_ERR_NETWORK /
 * TL_ERR_TIMEOUT), no memory. */
tl_status tl_remote_forward(tl_remote *r, const char *path, const char *body, size_t len, int *status, char **reply,
                            tl_error *err);

json_t *tl_remote_ids_json(const int32_t *ids, size_t n);

/* The cached ids of (flags, text), copied into *ids (caller frees); false when absent. */
bool tl_remote_tok_get(tl_remote *r, char flags, const char *text, size_t len, int32_t **ids, size_t *n);
void tl_remote_tok_put(tl_remote *r, char flags, const char *text, size_t len, const int32_t *ids, size_t n);

/* Reads a JSON list of token ids at `where` (for messages) into a new array. */
tl_status tl_remote_read_ids(const tl_remote *r, const json_t *a, const char *where, int32_t **ids, size_t *n,
                             tl_error *err);

/* Every remote backend's impl starts with its tl_remote (sglang_impl,
 * tl_remote_impl): the connection of a remote backend b. */
static inline tl_remote *tl_remote_of(tl_backend *b) { return (tl_remote *)b->impl; }
/* The forward op of every remote backend (SGLang, llama.cpp, vLLM): on tl_remote_of(b). */
tl_status tl_remote_backend_forward(tl_backend *b, const char *path, const char *body, size_t len, int *status,
                                   char **reply, tl_error *err);

/* The state llama.cpp's and vLLM's backends share (b->impl of both). */
typedef struct tl_remote_impl {
    tl_remote rem;
    tl_vocab *local_vocab; /* the model's tokenizer here, or NULL */
    char *model_name;
    char *chat_template;
    char *version;
} tl_remote_impl;
/* A new backend of ops with a tl_remote_impl, its connection set up from p
 * and limits (NULL: none; tl_remote_set_limits) (nothing asked of the server
 * yet); on failure nothing is left allocated. */
tl_status tl_remote_backend_new(const tl_backend_ops *ops, const char *engine, const char *generate_path,
                                const tl_sglang_params *p, const tl_call_limits *limits, tl_backend **out,
                                tl_error *err);
/* Frees a backend whose impl is a tl_remote_impl. */
void tl_remote_backend_free(tl_backend *b);

/* POSTs req (consumed) to path and reads the reply's string `field` onto
 * *out, or its list of token ids `field` into *ids (caller frees). */
tl_status tl_remote_post_text(tl_remote *r, const char *path, json_t *req, const char *field, tl_strbuf *out,
                              tl_error *err);
tl_status tl_remote_post_ids(tl_remote *r, const char *path, json_t *req, const char *field, int32_t **ids, size_t *n,
                             tl_error *err);

#endif
