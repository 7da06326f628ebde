/* llamacpp.c: llama.cpp's own HTTP server (`llama-server`) as a backend.
 *
 * What the server offers and what it means (tools/server, server-context.cpp
 * and server-common.cpp at the commit the project's peer is built from; see
 * docs/engines.md):
 *  - /completion with a token-id prompt, n_predict 1 and n_probs K returns,
 *    with post_sampling_probs false, log-probabilities read from the raw
 *    logits: a softmax over the whole vocabulary, so exact. The sampled
 *    token's own logprob is looked up over all tokens, not only the top K.
 *  - logit_bias acts in the sampler chain, after those raw logits: +1000 on
 *    the candidates at temperature 0 makes the sampled token the best
 *    candidate without changing any reported probability. So one request
 *    gives the best candidate's exact logprob and every candidate in the top
 *    K; a candidate outside it costs one more request boosting it alone.
 *  - With post_sampling_probs true and temperature 1 the probabilities are
 *    those after the chain: under the same boost, the softmax over the
 *    candidates alone (the rest are 1000 nats below). Many missing
 *    candidates are read from that one request as ratios to the best:
 *    lp_c = lp_best + log(p_c / p_best).
 * Every request names one slot (id_slot) with cache_prompt, so a decision's
 * shared context stays in that slot's cache and each request computes only
 * its new tail (the server's parallel slots share no prefix). A greedy step
 * over a large mask (strings) asks the best allowed token and its masked
 * probability, whose ratio is the mask's mass (score_greedy).
 * Generation under a regex (free-text strings, numbers without a local
 * tokenizer) sends the regex as GBNF (gbnf.c), sampled with only the
 * temperature sampler: greedy at 0, the grammar-renormalised distribution
 * otherwise. The tokenizer is the model's own GGUF when it is readable here
 * (--tokenizer, or the server's /props model_path, checked against the
 * server's /tokenize), else the server's /tokenize and /detokenize. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/remote.h"
#include "util/error.h"
#include "util/strbuf.h"

typedef tl_remote_impl lc_impl;

#define ENGINE "llamacpp"
#define LC_SLOT 0 /* the one slot every request names (its cache keeps the context) */

static const char *version_of(const lc_impl *im) { return im->version ? im->version : "unknown build"; }

static void add_timings(const json_t *rep, tl_usage *u) {
    if (!u)
        return;
    const json_t *t = json_object_get(rep, "timings");
    json_int_t cached = json_integer_value(json_object_get(t, "cache_n"));
    json_int_t computed = json_integer_value(json_object_get(t, "prompt_n"));
    u->prompt_tokens += cached + computed;
    u->cached_tokens += cached;
    u->computed_tokens += computed;
    u->output_tokens += json_integer_value(json_object_get(t, "predicted_n"));
    u->forward_passes += 1;
}

/* POST /completion of ids with the fields of `fields` (stolen) added to the
 * ones every request carries. */
static tl_status completion(lc_impl *im, const int32_t *ids, size_t n, json_t *fields, json_t **rep, tl_usage *usage,
                            tl_error *err) {
    /* response_fields: the reply otherwise echoes the generation settings,
     * ban lists included (858 kB for 31k bans) */
    json_t *req = json_pack("{s:o,s:b,s:i,s:[s],s:b,s:[s,s,s]}", "prompt", tl_remote_ids_json(ids, n), "cache_prompt",
                            1, "id_slot", LC_SLOT, "samplers", "temperature", "return_tokens", 1, "response_fields",
                            "tokens", "completion_probabilities", "timings");
    if (!req || !fields || json_object_update(req, fields)) {
        json_decref(req);
        json_decref(fields);
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    json_decref(fields);
    tl_status st = tl_remote_call(&im->rem, "/completion", req, rep, NULL, err);
    json_decref(req);
    if (!st)
        add_timings(*rep, usage);
    return st;
}

/* The one generated position of a reply: {id, logprob|prob, top_...}. */
static tl_status first_position(const lc_impl *im, const json_t *rep, const char *value, const char *top,
                                const json_t **pos, const json_t **list, tl_error *err) {
    *pos = json_array_get(json_object_get(rep, "completion_probabilities"), 0);
    *list = json_object_get(*pos, top);
    if (!json_is_integer(json_object_get(*pos, "id")) || !json_is_number(json_object_get(*pos, value)) ||
        !json_is_array(*list))
        return tl_error_set(err, TL_ERR_REMOTE,
                            ENGINE ": /completion: /completion_probabilities/0 lacks id, %s and the list %s "
                                   "(llama.cpp %s: n_probs needs a server that reports token probabilities)",
                            value, top, version_of(im));
    return TL_OK;
}

/* ---- the candidate mask ------------------------------------------------- */

/* A mask is a logit_bias list: +BOOST on each allowed token, or (when the
 * allowed set is the larger half of a known vocabulary) a ban of each other
 * token. Either way the sampled token at temperature 0 is the best allowed
 * one, and post-sampling probabilities are the softmax over the allowed
 * tokens alone (the rest are e^-1000 below: 0 in float). logit_bias acts in
 * the sampler chain, after the raw logits the pre-sampling probabilities are
 * read from, so those stay the model's own. (A token-id grammar masks too,
 * but the server then matches every vocabulary entry against it per request:
 * 30 ms for two candidates on a 151k vocabulary, 137 ms post-sampling, where
 * a boosted request takes 5 ms.) BOOST is small enough that logit + BOOST in
 * float keeps the logit to 6e-5. */
#define BOOST 1000.0

typedef struct lc_mask {
    json_t *fields;        /* {"logit_bias": [[id, BOOST | false], ...]} */
    unsigned char *member; /* n_vocab flags when the vocabulary size is known */
    int32_t n_vocab;
    const int32_t *cands;  /* when member is NULL */
    size_t k;
} lc_mask;

static void mask_free(lc_mask *m) {
    json_decref(m->fields);
    free(m->member);
    memset(m, 0, sizeof *m);
}

static tl_status mask_new(int32_t n_vocab, const int32_t *cands, size_t k, lc_mask *m, tl_error *err) {
    memset(m, 0, sizeof *m);
    m->n_vocab = n_vocab;
    m->cands = cands;
    m->k = k;
    json_t *lb = json_array();
    if (n_vocab > 0 && !(m->member = calloc((size_t)n_vocab, 1))) {
        json_decref(lb);
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    size_t distinct = k;
    if (m->member) {
        distinct = 0;
        for (size_t c = 0; c < k; c++)
            if (cands[c] >= 0 && cands[c] < n_vocab && !m->member[cands[c]]) {
                m->member[cands[c]] = 1;
                distinct++;
            }
    }
    bool bans = m->member && distinct > (size_t)n_vocab - distinct;
    for (int32_t t = 0; lb && bans && t < n_vocab; t++)
        if (!m->member[t])
            json_array_append_new(lb, json_pack("[i,b]", (int)t, 0));
    for (size_t c = 0; lb && !bans && c < k; c++)
        json_array_append_new(lb, json_pack("[i,f]", (int)cands[c], BOOST));
    if (!lb || !(m->fields = json_pack("{s:o}", "logit_bias", lb))) {
        mask_free(m);
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    return TL_OK;
}

static bool mask_allows(const lc_mask *m, int32_t id) {
    if (m->member)
        return id >= 0 && id < m->n_vocab && m->member[id];
    for (size_t c = 0; c < m->k; c++)
        if (m->cands[c] == id)
            return true;
    return false;
}

/* Pre-sampling probabilities with the sampled token kept inside the mask:
 * the best allowed token (id, exact logprob) and the top n_top. */
static tl_status ask_exact(lc_impl *im, const int32_t *ids, size_t n, const lc_mask *m, int n_top, json_t **rep,
                           int32_t *best, double *best_lp, const json_t **top, tl_usage *usage, tl_error *err) {
    json_t *f = json_pack("{s:i,s:i,s:f,s:b}", "n_predict", 1, "n_probs", n_top, "temperature", 0.0,
                          "post_sampling_probs", 0);
    if (f)
        json_object_update(f, m->fields);
    tl_status st = completion(im, ids, n, f, rep, usage, err);
    const json_t *pos = NULL;
    if (!st)
        st = first_position(im, *rep, "logprob", "top_logprobs", &pos, top, err);
    if (!st) {
        *best = (int32_t)json_integer_value(json_object_get(pos, "id"));
        *best_lp = json_number_value(json_object_get(pos, "logprob"));
        if (!mask_allows(m, *best))
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: the server sampled token %d outside the mask (llama.cpp %s: "
                                     "logit_bias must act on sampling)",
                              (int)*best, version_of(im));
    }
    return st;
}

/* Post-sampling probabilities under the mask at temperature 1: the softmax
 * over the allowed tokens alone (the top n_top of them). */
/* The probabilities do not depend on the token sampled at temperature 1, but
 * when that token ends generation (an end-of-generation token in the mask)
 * the server reports no position at all: ask again with the next fixed seed
 * (deterministic, so the same request gives the same answer). */
enum { MASKED_TRIES = 8 };
static tl_status ask_masked(lc_impl *im, const int32_t *ids, size_t n, const lc_mask *m, int n_top, json_t **rep,
                            const json_t **probs, tl_usage *usage, tl_error *err) {
    for (int seed = 1;; seed++) {
        json_t *f = json_pack("{s:i,s:i,s:f,s:b,s:i}", "n_predict", 1, "n_probs", n_top, "temperature", 1.0,
                              "post_sampling_probs", 1, "seed", seed);
        if (f)
            json_object_update(f, m->fields);
        tl_status st = completion(im, ids, n, f, rep, usage, err);
        if (st)
            return st;
        if (json_array_size(json_object_get(*rep, "completion_probabilities")) == 0 && seed < MASKED_TRIES) {
            json_decref(*rep);
            *rep = NULL;
            continue;
        }
        const json_t *pos = NULL;
        return first_position(im, *rep, "prob", "top_probs", &pos, probs, err);
    }
}

static double prob_of(const json_t *probs, int32_t id) {
    for (size_t e = 0; e < json_array_size(probs); e++)
        if (json_integer_value(json_object_get(json_array_get(probs, e), "id")) == id)
            return json_number_value(json_object_get(json_array_get(probs, e), "prob"));
    return NAN;
}

/* ---- scoring ------------------------------------------------------------ */

/* Candidate positions sorted by token id, for lookups in long lists. */
typedef struct cand_pos {
    int32_t id;
    size_t at;
} cand_pos;

static int cmp_pos(const void *a, const void *b) {
    const cand_pos *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Sets every still-unset candidate equal to id to lp; how many were set. */
static size_t fill(tl_score_req *q, const cand_pos *pos, int32_t id, double lp) {
    size_t lo = 0, hi = q->n_cands, k = 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pos[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < q->n_cands && pos[lo].id == id; lo++)
        if (isnan(q->logprobs[pos[lo].at])) {
            q->logprobs[pos[lo].at] = lp;
            k++;
        }
    return k;
}

/* Up to this many candidates outside the top K are asked one by one (a
 * boosted request is about 5 ms); more, by one post-sampling request. */
#define MAX_SINGLES 4

static tl_status score_one(lc_impl *im, tl_score_req *q, int32_t n_vocab, tl_usage *usage, tl_error *err) {
    size_t nc = q->n_cands;
    cand_pos *pos = malloc(nc * sizeof *pos);
    if (!pos)
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    for (size_t c = 0; c < nc; c++) {
        q->logprobs[c] = NAN;
        pos[c] = (cand_pos){q->cands[c], c};
    }
    qsort(pos, nc, sizeof *pos, cmp_pos);
    lc_mask m;
    json_t *rep = NULL, *rep2 = NULL;
    tl_status st = mask_new(n_vocab, q->cands, nc, &m, err);
    if (st) {
        free(pos);
        return st;
    }
    size_t n_top = nc + 8;
    if (n_vocab > 0 && n_top > (size_t)n_vocab)
        n_top = (size_t)n_vocab;
    int32_t best = -1;
    double best_lp = 0;
    const json_t *top = NULL;
    st = ask_exact(im, q->ids, q->n, &m, (int)n_top, &rep, &best, &best_lp, &top, usage, err);
    if (st)
        goto done;
    size_t missing = nc - fill(q, pos, best, best_lp);
    for (size_t e = 0; e < json_array_size(top) && missing; e++) {
        const json_t *t = json_array_get(top, e);
        const json_t *id = json_object_get(t, "id"), *lp = json_object_get(t, "logprob");
        if (json_is_integer(id) && json_is_number(lp))
            missing -= fill(q, pos, (int32_t)json_integer_value(id), json_number_value(lp));
    }
    if (missing > MAX_SINGLES) { /* the rest: ratios to the best candidate under the mask */
        const json_t *probs = NULL;
        if ((st = ask_masked(im, q->ids, q->n, &m, (int)nc, &rep2, &probs, usage, err)))
            goto done;
        double p_best = prob_of(probs, best);
        if (!(p_best > 0)) {
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: post-sampling probabilities lack the best candidate %d "
                                     "(llama.cpp %s)",
                              (int)best, version_of(im));
            goto done;
        }
        for (size_t e = 0; e < json_array_size(probs); e++) {
            const json_t *t = json_array_get(probs, e);
            const json_t *id = json_object_get(t, "id");
            double p = json_number_value(json_object_get(t, "prob"));
            if (json_is_integer(id) && p > 0)
                fill(q, pos, (int32_t)json_integer_value(id), best_lp + log(p / p_best));
        }
    }
    /* a few candidates (or masked probabilities that underflowed float): each
     * alone, boosted so that it is the sampled token */
    for (size_t c = 0; c < nc && !st; c++) {
        if (!isnan(q->logprobs[c]))
            continue;
        lc_mask one;
        json_t *r3 = NULL;
        int32_t got = -1;
        double lp = 0;
        const json_t *t3 = NULL;
        st = mask_new(n_vocab, &q->cands[c], 1, &one, err);
        if (!st)
            st = ask_exact(im, q->ids, q->n, &one, 1, &r3, &got, &lp, &t3, usage, err);
        if (!st)
            fill(q, pos, got, lp);
        json_decref(r3);
        mask_free(&one);
    }
done:
    json_decref(rep);
    json_decref(rep2);
    mask_free(&m);
    free(pos);
    return st;
}

/* The requests one after another on the one slot: each reuses the prefix the
 * previous left in the slot's cache. */
static tl_status lc_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    lc_impl *im = b->impl;
    for (size_t r = 0; r < k; r++) {
        tl_status st = score_one(im, &reqs[r], b->n_vocab, usage, err);
        if (st)
            return k > 1 ? tl_error_wrap(err, ENGINE ": scoring request %zu of %zu", r, k) : st;
    }
    return TL_OK;
}

static tl_status lc_score_greedy(tl_backend *b, const int32_t *ids, size_t n, const int32_t *allowed, size_t k,
                                 int32_t *best, double *lp_full, double *log_mass, tl_usage *usage, tl_error *err) {
    lc_impl *im = b->impl;
    lc_mask m;
    json_t *rep = NULL, *rep2 = NULL;
    const json_t *list = NULL;
    tl_status st = mask_new(b->n_vocab, allowed, k, &m, err);
    if (st)
        return st;
    /* the best allowed token and its exact logprob */
    st = ask_exact(im, ids, n, &m, 1, &rep, best, lp_full, &list, usage, err);
    /* its probability renormalised over the mask: the ratio is the mask's mass */
    if (!st)
        st = ask_masked(im, ids, n, &m, 4, &rep2, &list, usage, err);
    if (!st) {
        double p = prob_of(list, *best);
        if (p > 0)
            *log_mass = *lp_full - log(p);
        else
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: post-sampling probabilities lack the best token %d (llama.cpp %s)",
                              (int)*best, version_of(im));
    }
    json_decref(rep);
    json_decref(rep2);
    mask_free(&m);
    return st;
}

static tl_status lc_generate_regex(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                   double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                   tl_usage *usage, tl_error *err) {
    lc_impl *im = b->impl;
    *out_ids = NULL;
    *n_out = 0;
    tl_strbuf g = TL_STRBUF_INIT;
    tl_status st = tl_regex_to_gbnf(regex, strlen(regex), &g, err);
    if (st) {
        tl_strbuf_free(&g);
        return tl_error_wrap(err, ENGINE ": the value's pattern cannot be sent to llama.cpp");
    }
    json_t *rep = NULL;
    st = completion(im, ids, n,
                    json_pack("{s:i,s:f,s:I,s:s}", "n_predict", max_tokens, "temperature", temperature, "seed",
                              (json_int_t)(seed & 0x7fffffffu), "grammar", tl_strbuf_cstr(&g)),
                    &rep, usage, err);
    tl_strbuf_free(&g);
    if (!st)
        st = tl_remote_read_ids(&im->rem, json_object_get(rep, "tokens"), "/completion: /tokens", out_ids, n_out,
                                err);
    if (!st && usage && *n_out > 1)
        usage->forward_passes += (int64_t)*n_out - 1;
    json_decref(rep);
    return st;
}

static tl_status lc_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, tl_error *err) {
    lc_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_tokenize(im->local_vocab, text, len, add_special, parse_special, ids, n, err);
    char flags = (char)(add_special | (parse_special << 1));
    if (tl_remote_tok_get(&im->rem, flags, text, len, ids, n))
        return TL_OK;
    tl_status st = tl_remote_post_ids(&im->rem, "/tokenize",
                                      json_pack("{s:s%,s:b,s:b}", "content", text, len, "add_special", add_special,
                                                "parse_special", parse_special),
                                      "tokens", ids, n, err);
    if (!st)
        tl_remote_tok_put(&im->rem, flags, text, len, *ids, *n);
    return st;
}

static tl_status lc_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    lc_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_detokenize(im->local_vocab, ids, n, false, true, out, err);
    return tl_remote_post_text(&im->rem, "/detokenize", json_pack("{s:o}", "tokens", tl_remote_ids_json(ids, n)),
                               "content", out, err);
}

#define lc_free tl_remote_backend_free

static const tl_backend_ops llamacpp_ops = {
    .kind = "llamacpp",
    .free = lc_free,
    .tokenize = lc_tokenize,
    .detokenize = lc_detokenize,
    .score = lc_score,
    .next_logits = NULL,
    .generate_regex = lc_generate_regex,
    .score_greedy = lc_score_greedy,
    .forward = tl_remote_backend_forward,
};

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

/* Is v the server's own tokenizer? Same vocabulary size, same ids for a probe. */
static bool same_tokenizer(tl_backend *b, const tl_vocab *v, int32_t n_vocab) {
    static const char probe[] = "Hello, world! 12.5 ok?\n  <|im_start|>user";
    if (n_vocab > 0 && tl_vocab_n_tokens(v) != n_vocab)
        return false;
    int32_t *mine = NULL, *theirs = NULL;
    size_t nm = 0, nt = 0;
    tl_error e = {0};
    bool same = tl_vocab_tokenize(v, probe, sizeof probe - 1, true, true, &mine, &nm, &e) == TL_OK &&
                lc_tokenize(b, probe, sizeof probe - 1, true, true, &theirs, &nt, &e) == TL_OK && nm == nt &&
                !memcmp(mine, theirs, nm * sizeof *mine);
    free(mine);
    free(theirs);
    return same;
}

tl_status tl_backend_llamacpp_new(const tl_sglang_params *params, const tl_call_limits *limits, tl_backend **out,
                                  tl_error *err) {
    tl_backend *b = NULL;
    tl_status st = tl_remote_backend_new(&llamacpp_ops, ENGINE, "/completion", params, limits, &b, err);
    if (st)
        return st;
    *out = NULL; /* set again once the server has answered */
    lc_impl *im = b->impl;
    json_t *props = NULL, *models = NULL;
    long status = 0;
    if (!st) {
        st = tl_remote_call(&im->rem, "/props", NULL, &props, &status, err);
        if (st && status >= 400 && status < 500) /* a server, but not this one */
            st = tl_error_set(err, TL_ERR_UNSUPPORTED, ENGINE ": %s has no /props (HTTP %ld): not llama.cpp's server",
                              im->rem.base, status);
        else if (st)
            tl_error_wrap(err, ENGINE ": cannot use the server at %s", im->rem.base);
    }
    const json_t *dgs = json_object_get(props, "default_generation_settings");
    if (!st && !json_is_object(dgs))
        st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                          ENGINE ": %s/props has no /default_generation_settings: not llama.cpp's server",
                          im->rem.base);
    int32_t n_vocab = 0;
    const char *path = NULL;
    if (!st) {
        b->n_ctx = (int32_t)json_integer_value(json_object_get(dgs, "n_ctx"));
        im->version = dup_or_null(json_string_value(json_object_get(props, "build_info")));
        im->chat_template = dup_or_null(json_string_value(json_object_get(props, "chat_template")));
        path = json_string_value(json_object_get(props, "model_path"));
        tl_error merr = {0};
        const char *name = NULL;
        if (tl_remote_call(&im->rem, "/v1/models", NULL, &models, NULL, &merr) == TL_OK) {
            const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
            name = json_string_value(json_object_get(m0, "id"));
            n_vocab = (int32_t)json_integer_value(json_object_get(json_object_get(m0, "meta"), "n_vocab"));
        }
        im->model_name = strdup(name ? name : path ? path : ENGINE);
        if (!im->model_name)
            st = tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    if (!st && params->tokenizer_path) {
        st = tl_vocab_load_file(params->tokenizer_path, &im->local_vocab, err);
        if (st)
            tl_error_wrap(err, ENGINE ": --tokenizer %s", params->tokenizer_path);
        else if (n_vocab > 0 && tl_vocab_n_tokens(im->local_vocab) != n_vocab)
            st = tl_error_set(err, TL_ERR_INVALID, ENGINE ": --tokenizer %s has %d tokens, the server's model %d",
                              params->tokenizer_path, (int)tl_vocab_n_tokens(im->local_vocab), (int)n_vocab);
    } else if (!st && path && access(path, R_OK) == 0) {
        /* the server runs here: its own GGUF is the tokenizer, once it agrees with /tokenize */
        tl_vocab *v = NULL;
        tl_error verr = {0};
        if (tl_vocab_load_file(path, &v, &verr) == TL_OK && same_tokenizer(b, v, n_vocab))
            im->local_vocab = v;
        else
            tl_vocab_free(v);
    }
    json_decref(props);
    json_decref(models);
    if (st) {
        lc_free(b);
        return st;
    }
    if (im->local_vocab) {
        /* the GGUF's own template (or its lack of one): /props shows llama.cpp's
         * ChatML fallback for a model without one, which the embedded engine
         * would not use */
        const char *own = tl_vocab_chat_template(im->local_vocab);
        free(im->chat_template);
        im->chat_template = own ? strdup(own) : NULL;
    }
    b->vocab = im->local_vocab;
    b->n_vocab = im->local_vocab ? tl_vocab_n_tokens(im->local_vocab) : n_vocab; /* 0: unknown, ids unchecked */
    b->template_from_caller = im->chat_template == NULL && im->local_vocab == NULL;
    b->model_name = im->model_name;
    b->chat_template = im->chat_template;
    b->version = im->version;
    b->caps = TL_CAP_EXACT_CANDIDATES | TL_CAP_GRAMMAR | TL_CAP_REGEX | TL_CAP_CACHE_REPORT;
    *out = b;
    return TL_OK;
}
