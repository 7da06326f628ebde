/* backend.c: the tl_backend_* wrappers of backend.h: argument checks that
 * every backend would otherwise repeat, then dispatch through the vtable. */
#include "backend/backend.h"
#include "backend/remote.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void tl_backend_free(tl_backend *b) {
    if (b && b->ops && b->ops->free)
        b->ops->free(b);
}

tl_status tl_backend_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                              int32_t **ids, size_t *n, tl_error *err) {
    *ids = NULL;
    *n = 0;
    if (!b || (!text && len))
        return tl_error_set(err, TL_ERR_INVALID, "backend: tokenize: missing backend or text");
    return b->ops->tokenize(b, text ? text : "", len, add_special, parse_special, ids, n, err);
}

tl_status tl_backend_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    if (!b || (!ids && n) || !out)
        return tl_error_set(err, TL_ERR_INVALID, "backend: detokenize: missing backend, ids or output");
    return b->ops->detokenize(b, ids, n, out, err);
}

/* Token ids must name vocabulary entries: a bad id is the caller's error,
 * reported with where it is, never an out-of-bounds read in a backend. */
static tl_status check_ids(const tl_backend *b, const int32_t *ids, size_t n, const char *what, size_t req,
                           tl_error *err) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (b->n_vocab > 0 && ids[i] >= b->n_vocab))
            return tl_error_set(err, TL_ERR_INVALID, "backend: request %zu: %s[%zu] = %d is not a token id (vocab %d)",
                                req, what, i, (int)ids[i], (int)b->n_vocab);
    return TL_OK;
}

tl_status tl_backend_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    if (!b || (!reqs && k))
        return tl_error_set(err, TL_ERR_INVALID, "backend: score: missing backend or requests");
    if (k == 0)
        return TL_OK;
    for (size_t r = 0; r < k; r++) {
        if (reqs[r].n == 0 || !reqs[r].ids)
            return tl_error_set(err, TL_ERR_INVALID, "backend: score: request %zu has no tokens", r);
        if (reqs[r].n_cands == 0 || !reqs[r].cands || !reqs[r].logprobs)
            return tl_error_set(err, TL_ERR_INVALID, "backend: score: request %zu has no candidates", r);
        tl_status st = check_ids(b, reqs[r].ids, reqs[r].n, "ids", r, err);
        if (!st)
            st = check_ids(b, reqs[r].cands, reqs[r].n_cands, "cands", r, err);
        if (st)
            return st;
    }
    return b->ops->score(b, reqs, k, usage, err);
}

tl_status tl_backend_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                 tl_error *err) {
    if (!b || !ids || !n || !logits)
        return tl_error_set(err, TL_ERR_INVALID, "backend: next_logits: missing backend, ids or output");
    if (!b->ops->next_logits)
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "backend: %s backends do not return full logits", b->ops->kind);
    tl_status st = check_ids(b, ids, n, "ids", 0, err);
    return st ? st : b->ops->next_logits(b, ids, n, logits, usage, err);
}

tl_status tl_backend_forward(tl_backend *b, const char *path, const char *body, size_t len, int *status,
                             char **reply, tl_error *err) {
    if (!b || !path || path[0] != '/' || (!body && len) || !status || !reply)
        return tl_error_set(err, TL_ERR_INVALID, "backend: forward: missing backend, path, status or reply");
    *reply = NULL;
    if (!b->ops->forward)
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "backend: %s backends do not forward requests", b->ops->kind);
    return b->ops->forward(b, path, body ? body : "", len, status, reply, err);
}

const char *tl_backend_kind(const tl_backend *b) { return b ? b->ops->kind : "none"; }
const char *tl_backend_model_name(const tl_backend *b) { return b ? b->model_name : NULL; }
int32_t tl_backend_n_vocab(const tl_backend *b) { return b ? b->n_vocab : 0; }
const tl_vocab *tl_backend_vocab(const tl_backend *b) { return b ? b->vocab : NULL; }
const char *tl_backend_chat_template(const tl_backend *b) { return b ? b->chat_template : NULL; }
int32_t tl_backend_n_ctx(const tl_backend *b) { return b ? b->n_ctx : 0; }

tl_seq *tl_score_reqs_to_seqs(const tl_score_req *reqs, size_t k, tl_error *err) {
    tl_seq *seqs = calloc(k ? k : 1, sizeof *seqs);
    if (!seqs) {
        tl_error_set(err, TL_ERR_NOMEM, "backend: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < k; i++)
        seqs[i] = (tl_seq){.ids = reqs[i].ids, .n = reqs[i].n, .cands = reqs[i].cands,
                           .n_cands = reqs[i].n_cands, .cand_logprobs = reqs[i].logprobs};
    return seqs;
}

static tl_status engine_only(const tl_backend *b, const char *what, tl_error *err) {
    return tl_error_set(err, TL_ERR_UNSUPPORTED, "backend: %s backends have no %s (local engines only)",
                        b->ops->kind, what);
}

tl_status tl_backend_eval(tl_backend *b, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err) {
    if (!b || (!seqs && k))
        return tl_error_set(err, TL_ERR_INVALID, "backend: eval: missing backend or sequences");
    if (!b->ops->eval)
        return engine_only(b, "batched evaluation", err);
    return k ? b->ops->eval(b, seqs, k, usage, err) : TL_OK;
}

tl_status tl_backend_eval_last(tl_backend *b, const int32_t *ids, size_t n, size_t k_last, float *logits,
                               tl_usage *usage, tl_error *err) {
    if (!b || !ids || !n || !logits)
        return tl_error_set(err, TL_ERR_INVALID, "backend: eval_last: missing backend, ids or output");
    if (!b->ops->eval_last)
        return engine_only(b, "prompt logits", err);
    tl_status st = check_ids(b, ids, n, "ids", 0, err);
    return st ? st : b->ops->eval_last(b, ids, n, k_last, logits, usage, err);
}

tl_status tl_backend_flush(tl_backend *b, tl_error *err) {
    if (!b)
        return tl_error_set(err, TL_ERR_INVALID, "backend: flush: missing backend");
    if (!b->ops->flush)
        return engine_only(b, "cache to flush", err);
    return b->ops->flush(b, err);
}

/* ---- the remote contract ------------------------------------------------ */

bool tl_engine_parse(const char *name, tl_engine_kind *out) {
    static const struct {
        const char *name;
        tl_engine_kind kind;
    } names[] = {{"auto", TL_ENGINE_AUTO},
                 {"sglang", TL_ENGINE_SGLANG},
                 {"llamacpp", TL_ENGINE_LLAMACPP},
                 {"llama.cpp", TL_ENGINE_LLAMACPP},
                 {"vllm", TL_ENGINE_VLLM}};
    for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i].name)) {
            *out = names[i].kind;
            return true;
        }
    return false;
}

void tl_backend_capabilities(const tl_backend *b, tl_backend_caps *out) {
    memset(out, 0, sizeof *out);
    if (!b)
        return;
    out->engine = b->ops->kind;
    out->version = b->version ? b->version : "";
    out->flags = b->caps;
    if (b->ops->next_logits) /* a local engine: everything, exactly */
        out->flags |= TL_CAP_EXACT_CANDIDATES | TL_CAP_FULL_LOGITS | TL_CAP_CACHE_REPORT |
                      (b->ops->eval_last ? TL_CAP_PROMPT_LOGPROBS : 0u);
    if (b->vocab)
        out->flags |= TL_CAP_LOCAL_TOKENIZER;
    if (b->chat_template)
        out->flags |= TL_CAP_CHAT_TEMPLATE;
}

static bool is_remote(const tl_backend *b) {
    return b && (!strcmp(b->ops->kind, "sglang") || !strcmp(b->ops->kind, "llamacpp") || !strcmp(b->ops->kind, "vllm"));
}

tl_status tl_backend_remote_set_limits(tl_backend *b, const tl_call_limits *limits, tl_error *err) {
    if (!is_remote(b))
        return tl_error_set(err, TL_ERR_INVALID, "backend: %s is not a remote backend", tl_backend_kind(b));
    tl_remote_set_limits(tl_remote_of(b), limits);
    return TL_OK;
}

tl_status tl_backend_remote_new(const tl_remote_params *params, tl_backend **out, tl_error *err) {
    return tl_backend_remote_new_limited(params, NULL, out, err);
}

tl_status tl_backend_remote_new_limited(const tl_remote_params *params, const tl_call_limits *limits,
                                        tl_backend **out, tl_error *err) {
    *out = NULL;
    if (!params)
        return tl_error_set(err, TL_ERR_INVALID, "backend: no remote parameters");
    switch (params->engine) {
    case TL_ENGINE_SGLANG:
        return tl_backend_sglang_new_limited(&params->conn, limits, out, err);
    case TL_ENGINE_LLAMACPP:
        return tl_backend_llamacpp_new(&params->conn, limits, out, err);
    case TL_ENGINE_VLLM:
        return tl_backend_vllm_new(&params->conn, false, limits, out, err);
    case TL_ENGINE_AUTO:
        break;
    }
    /* Ask the server what it is: llama.cpp answers /props with its generation
     * settings; anything else is tried as SGLang (whose /model_info decides). */
    tl_error lerr = {0};
    tl_status st = tl_backend_llamacpp_new(&params->conn, limits, out, &lerr);
    if (st == TL_OK)
        return TL_OK;
    if (st != TL_ERR_UNSUPPORTED) { /* it is llama.cpp (or unreachable): its error stands */
        if (err)
            *err = lerr;
        return st;
    }
    tl_error serr = {0};
    st = tl_backend_sglang_new_limited(&params->conn, limits, out, &serr);
    if (st == TL_OK || st == TL_ERR_NETWORK || st == TL_ERR_TIMEOUT) {
        if (st && err)
            *err = serr;
        return st;
    }
    /* vLLM: no /props, no /model_info; its /v1/models says who owns the model */
    st = tl_backend_vllm_new(&params->conn, true, limits, out, err);
    if (st)
        tl_error_set(err, st, "backend: %s is not llama.cpp's server (%s), SGLang (%s) or vLLM", params->conn.base_url,
                     lerr.msg, serr.msg);
    return st;
}
