/* local.c: the embedded engine as a backend: tokenization by the model's own
 * vocabulary, scoring by one batched tl_session_eval_batch over the requests
 * (the session's prefix cache makes shared and growing prefixes cost only
 * their new tails). */
#include <stdlib.h>

#include "backend/backend.h"
#include "util/error.h"

typedef struct local_backend {
    const tl_model *model;
    tl_session *session;
} local_backend;

static void local_free(tl_backend *b) {
    local_backend *lb = b->impl;
    if (lb)
        tl_session_free(lb->session);
    free(lb);
    free(b);
}

static tl_status local_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                                int32_t **ids, size_t *n, tl_error *err) {
    return tl_vocab_tokenize(b->vocab, text, len, add_special, parse_special, ids, n, err);
}

/* As a server's /detokenize with skip_special_tokens false: SPM's leading
 * space undone, control tokens printed. */
static tl_status local_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    return tl_vocab_detokenize(b->vocab, ids, n, true, true, out, err);
}

static tl_status local_eval(tl_backend *b, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err) {
    local_backend *lb = b->impl;
    return tl_session_eval_batch(lb->session, seqs, k, usage, err);
}

static tl_status local_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    tl_seq *seqs = tl_score_reqs_to_seqs(reqs, k, err);
    if (!seqs)
        return TL_ERR_NOMEM;
    tl_status st = local_eval(b, seqs, k, usage, err);
    free(seqs);
    return st;
}

static tl_status local_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                   tl_error *err) {
    local_backend *lb = b->impl;
    return tl_session_eval(lb->session, ids, n, logits, usage, err);
}

static tl_status local_eval_last(tl_backend *b, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                 tl_usage *usage, tl_error *err) {
    local_backend *lb = b->impl;
    return tl_session_eval_last(lb->session, ids, n, k_last, logits, usage, err);
}

static tl_status local_flush(tl_backend *b, tl_error *err) {
    local_backend *lb = b->impl;
    tl_session_flush(lb->session);
    return TL_OK;
}

static const tl_backend_ops local_ops = {
    .kind = "local",
    .free = local_free,
    .tokenize = local_tokenize,
    .detokenize = local_detokenize,
    .score = local_score,
    .next_logits = local_next_logits,
    .generate_regex = NULL,
    .eval = local_eval,
    .eval_last = local_eval_last,
    .flush = local_flush,
};

tl_status tl_backend_local_new(const tl_model *m, const tl_session_params *params, tl_backend **out, tl_error *err) {
    *out = NULL;
    if (!m)
        return tl_error_set(err, TL_ERR_INVALID, "local backend: no model");
    tl_backend *b = calloc(1, sizeof *b);
    local_backend *lb = calloc(1, sizeof *lb);
    if (!b || !lb) {
        free(b);
        free(lb);
        return tl_error_set(err, TL_ERR_NOMEM, "local backend: out of memory");
    }
    tl_session_params defaults = {0};
    tl_status st = tl_session_new(m, params ? params : &defaults, &lb->session, err);
    if (st) {
        free(b);
        free(lb);
        return st;
    }
    lb->model = m;
    b->ops = &local_ops;
    b->impl = lb;
    b->vocab = tl_model_vocab(m);
    b->n_vocab = tl_model_n_vocab(m);
    b->model_name = tl_model_name(m);
    b->chat_template = tl_vocab_chat_template(b->vocab);
    b->n_ctx = params && params->n_ctx ? params->n_ctx : tl_model_n_ctx_train(m);
    *out = b;
    return TL_OK;
}

tl_session *tl_backend_local_session(tl_backend *b) {
    return b && b->ops == &local_ops ? ((local_backend *)b->impl)->session : NULL;
}
