/* llamacpp.c: llama.cpp's own HTTP server (`llama-server`) as a backend.
 *
 * What the server offers and what it means (tools/server, server-context.cpp
 * and server-common.cpp at the commit the project's peer is built from; see
 * docs/decide.md "llama.cpp's server"):
 *  - /completion with a token-id prompt, n_predict 1 and n_probs K returns,
 *    with post_sampling_probs false, log-probabilities read from the raw
 *    logits: a softmax over the whole vocabulary, so exact. The sampled
 *    token's own logprob is looked up over all tokens, not only the top K.
 *  - A grammar of token ids (`root ::= <[12]> | <[40]>`) restricts the
 *    sampled token to the candidates; with temperature 0 it is the best
 *    candidate (grammar-rejection resampling), so one request gives the best
 *    candidate's exact logprob and every candidate inside the top K.
 *  - With post_sampling_probs true, samplers ["temperature"], temperature 1
 *    and the same grammar, the probabilities are those after the grammar's
 *    mask: exp(l_c - l_max) / sum over the candidates, for every candidate.
 *    The grammar only masks when the first, unconstrained draw is rejected,
 *    so a logit_bias of +1e4 on one non-candidate makes that draw always
 *    rejected. Ratios to the best candidate then give every candidate's exact
 *    logprob: lp_c = lp_best + log(p_c / p_best).
 * So a candidate set costs one request when the candidates are among the
 * top K, two otherwise (a third per candidate only when its masked
 * probability underflows float: more than ~87 nats below the best).
 * Every request names one slot (id_slot) with cache_prompt, so a decision's
 * shared context stays in that slot's cache and each request computes only
 * its new tail (the server's parallel slots share no prefix).
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

typedef struct lc_impl {
    tl_remote rem;
    tl_vocab *local_vocab; /* the model's tokenizer here, or NULL */
    char *model_name;
    char *chat_template;
    char *version; /* /props build_info */
    int id_slot;
} lc_impl;

#define ENGINE "llamacpp"

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
    json_t *req = json_pack("{s:o,s:b,s:i,s:[s],s:b}", "prompt", tl_remote_ids_json(ids, n), "cache_prompt", 1,
                            "id_slot", im->id_slot, "samplers", "temperature", "return_tokens", 1);
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

static bool is_cand(const tl_score_req *q, int32_t id) {
    for (size_t c = 0; c < q->n_cands; c++)
        if (q->cands[c] == id)
            return true;
    return false;
}

/* Sets every candidate equal to id to lp; how many were set. */
static size_t set_cand(tl_score_req *q, int32_t id, double lp) {
    size_t k = 0;
    for (size_t c = 0; c < q->n_cands; c++)
        if (q->cands[c] == id) {
            q->logprobs[c] = lp;
            k++;
        }
    return k;
}

/* A candidate that ends generation (EOS closing a number) is allowed by
 * llama.cpp's grammar only where the grammar may end, so with one among the
 * candidates the grammar also accepts the empty string: every end token is
 * then allowed too (harmless: ratios need only the candidates and the best). */
static bool any_eog(const tl_vocab *v, const int32_t *cands, size_t n) {
    for (size_t c = 0; v && c < n; c++)
        if (tl_vocab_is_eog(v, cands[c]))
            return true;
    return false;
}

static tl_status cands_grammar(const tl_vocab *v, const int32_t *cands, size_t n, tl_strbuf *g, tl_error *err) {
    bool ok = tl_strbuf_puts(g, "root ::=");
    size_t k = 0;
    for (size_t c = 0; c < n && ok; c++)
        if (!v || !tl_vocab_is_eog(v, cands[c]))
            ok = tl_strbuf_printf(g, "%s <[%d]>", k++ ? " |" : "", (int)cands[c]);
    if (ok && any_eog(v, cands, n))
        ok = tl_strbuf_puts(g, k ? " | \"\"" : " \"\"");
    return ok ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The smallest token id that is neither a candidate nor an end token (the
 * grammar must reject the first draw). */
static tl_status trap_token(const tl_vocab *v, const tl_score_req *q, int32_t *out, tl_error *err) {
    int32_t *s = malloc(q->n_cands * sizeof *s);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    memcpy(s, q->cands, q->n_cands * sizeof *s);
    qsort(s, q->n_cands, sizeof *s, cmp_i32);
    int32_t t = 0;
    for (size_t i = 0;;) {
        while (i < q->n_cands && s[i] < t)
            i++;
        if ((i < q->n_cands && s[i] == t) || (v && tl_vocab_is_eog(v, t)))
            t++;
        else
            break;
    }
    free(s);
    *out = t;
    return TL_OK;
}

/* Pre-sampling probabilities with the sampled token forced into `g`'s
 * candidates: the best candidate (id, exact logprob) and the top K. */
static tl_status ask_exact(lc_impl *im, const tl_vocab *v, const tl_score_req *q, const char *g, int k, json_t **rep,
                           int32_t *best, double *best_lp, const json_t **top, tl_usage *usage, tl_error *err) {
    tl_status st = completion(im, q->ids, q->n,
                              json_pack("{s:i,s:i,s:f,s:s,s:b}", "n_predict", 1, "n_probs", k, "temperature", 0.0,
                                        "grammar", g, "post_sampling_probs", 0),
                              rep, usage, err);
    const json_t *pos = NULL;
    if (!st)
        st = first_position(im, *rep, "logprob", "top_logprobs", &pos, top, err);
    if (st)
        return st;
    *best = (int32_t)json_integer_value(json_object_get(pos, "id"));
    *best_lp = json_number_value(json_object_get(pos, "logprob"));
    if (!is_cand(q, *best) && !(any_eog(v, q->cands, q->n_cands) && tl_vocab_is_eog(v, *best)))
        return tl_error_set(err, TL_ERR_REMOTE,
                            ENGINE ": /completion: the server sampled token %d outside the candidates' grammar "
                                   "(llama.cpp %s: token-id grammars <[id]> are needed)",
                            (int)*best, version_of(im));
    return TL_OK;
}

static tl_status score_one(lc_impl *im, const tl_vocab *v, tl_score_req *q, int32_t n_vocab, tl_usage *usage,
                           tl_error *err) {
    size_t nc = q->n_cands;
    for (size_t c = 0; c < nc; c++)
        q->logprobs[c] = NAN;
    tl_strbuf g = TL_STRBUF_INIT;
    json_t *rep = NULL, *rep2 = NULL;
    tl_status st = cands_grammar(v, q->cands, nc, &g, err);
    size_t k = nc + 8;
    if (n_vocab > 0 && k > (size_t)n_vocab)
        k = (size_t)n_vocab;
    int32_t best = -1;
    double best_lp = 0;
    const json_t *top = NULL;
    if (!st)
        st = ask_exact(im, v, q, tl_strbuf_cstr(&g), (int)k, &rep, &best, &best_lp, &top, usage, err);
    if (st)
        goto done;
    size_t missing = nc - set_cand(q, best, best_lp);
    for (size_t e = 0; e < json_array_size(top) && missing; e++) {
        const json_t *t = json_array_get(top, e);
        const json_t *id = json_object_get(t, "id"), *lp = json_object_get(t, "logprob");
        if (json_is_integer(id) && json_is_number(lp)) {
            int32_t tid = (int32_t)json_integer_value(id);
            for (size_t c = 0; c < nc; c++)
                if (q->cands[c] == tid && isnan(q->logprobs[c])) {
                    q->logprobs[c] = json_number_value(lp);
                    missing--;
                }
        }
    }
    if (missing) { /* the rest: ratios to the best candidate under the grammar's mask */
        int32_t trap = 0;
        if ((st = trap_token(v, q, &trap, err)))
            goto done;
        st = completion(im, q->ids, q->n,
                        json_pack("{s:i,s:i,s:f,s:s,s:b,s:[[i,f]]}", "n_predict", 1, "n_probs", (int)nc + 16,
                                  "temperature", 1.0, "grammar", tl_strbuf_cstr(&g), "post_sampling_probs", 1,
                                  "logit_bias", (int)trap, 1e4),
                        &rep2, usage, err);
        const json_t *pos = NULL, *probs = NULL;
        if (!st)
            st = first_position(im, rep2, "prob", "top_probs", &pos, &probs, err);
        if (st)
            goto done;
        double p_best = NAN;
        for (size_t e = 0; e < json_array_size(probs); e++) {
            const json_t *t = json_array_get(probs, e);
            if (json_integer_value(json_object_get(t, "id")) == best)
                p_best = json_number_value(json_object_get(t, "prob"));
        }
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
            if (!json_is_integer(id) || !(p > 0))
                continue;
            int32_t tid = (int32_t)json_integer_value(id);
            for (size_t c = 0; c < nc; c++)
                if (q->cands[c] == tid && isnan(q->logprobs[c]))
                    q->logprobs[c] = best_lp + log(p / p_best);
        }
    }
    /* masked probabilities that underflowed float: each candidate alone */
    for (size_t c = 0; c < nc && !st; c++) {
        if (!isnan(q->logprobs[c]))
            continue;
        tl_strbuf one = TL_STRBUF_INIT;
        json_t *r3 = NULL;
        int32_t got = -1;
        double lp = 0;
        const json_t *t3 = NULL;
        tl_score_req single = {q->ids, q->n, &q->cands[c], 1, NULL};
        st = cands_grammar(v, &q->cands[c], 1, &one, err);
        if (!st)
            st = ask_exact(im, v, &single, tl_strbuf_cstr(&one), 1, &r3, &got, &lp, &t3, usage, err);
        if (!st && !set_cand(q, got, lp))
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: end token %d cannot be scored alone (the server chose %d)",
                              (int)q->cands[c], (int)got);
        json_decref(r3);
        tl_strbuf_free(&one);
    }
done:
    json_decref(rep);
    json_decref(rep2);
    tl_strbuf_free(&g);
    return st;
}

/* The requests one after another on the one slot: each reuses the prefix the
 * previous left in the slot's cache. */
static tl_status lc_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    lc_impl *im = b->impl;
    for (size_t r = 0; r < k; r++) {
        tl_status st = score_one(im, b->vocab, &reqs[r], b->n_vocab, usage, err);
        if (st)
            return k > 1 ? tl_error_wrap(err, ENGINE ": scoring request %zu of %zu", r, k) : st;
    }
    return TL_OK;
}

/* The mask over allowed[0..k) as request fields: logit_bias bans of the
 * rest when that is the shorter list (or an end token is allowed, which a
 * grammar could not say exactly), else the token-id grammar; *needs_trap: a
 * post-sampling request must make the first draw fail (grammar only). */
static tl_status mask_fields(const tl_vocab *v, const int32_t *allowed, size_t k, int32_t n_vocab,
                             unsigned char *member, json_t **fields, bool *needs_trap, tl_error *err) {
    *fields = NULL;
    bool bans = n_vocab > 0 && ((size_t)n_vocab - k <= k || any_eog(v, allowed, k));
    *needs_trap = !bans;
    if (!bans) {
        tl_strbuf g = TL_STRBUF_INIT;
        tl_status st = cands_grammar(v, allowed, k, &g, err);
        if (!st && !(*fields = json_pack("{s:s}", "grammar", tl_strbuf_cstr(&g))))
            st = tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
        tl_strbuf_free(&g);
        return st;
    }
    json_t *lb = json_array();
    for (int32_t t = 0; lb && t < n_vocab; t++)
        if (!member[t] && json_array_append_new(lb, json_pack("[i,b]", (int)t, 0)))
            break;
    if (!lb || !(*fields = json_pack("{s:o}", "logit_bias", lb)))
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    return TL_OK;
}

static tl_status lc_score_greedy(tl_backend *b, const int32_t *ids, size_t n, const int32_t *allowed, size_t k,
                                 int32_t *best, double *lp_full, double *log_mass, tl_usage *usage, tl_error *err) {
    lc_impl *im = b->impl;
    int32_t nv = b->n_vocab;
    unsigned char *member = calloc(nv > 0 ? (size_t)nv : 1, 1);
    if (!member)
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    for (size_t i = 0; i < k; i++)
        if (allowed[i] >= 0 && allowed[i] < nv)
            member[allowed[i]] = 1;
    json_t *mask = NULL, *rep = NULL, *rep2 = NULL;
    bool needs_trap = false;
    tl_status st = mask_fields(b->vocab, allowed, k, nv, member, &mask, &needs_trap, err);
    const json_t *pos = NULL, *list = NULL;
    if (!st) { /* the best allowed token and its exact logprob */
        json_t *f = json_pack("{s:i,s:i,s:f,s:b}", "n_predict", 1, "n_probs", 1, "temperature", 0.0,
                              "post_sampling_probs", 0);
        json_object_update(f, mask);
        st = completion(im, ids, n, f, &rep, usage, err);
    }
    if (!st)
        st = first_position(im, rep, "logprob", "top_logprobs", &pos, &list, err);
    if (!st) {
        *best = (int32_t)json_integer_value(json_object_get(pos, "id"));
        *lp_full = json_number_value(json_object_get(pos, "logprob"));
        if (*best < 0 || (nv > 0 && (*best >= nv || !member[*best])))
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: the server sampled token %d outside the mask (llama.cpp %s)",
                              (int)*best, version_of(im));
    }
    if (!st) { /* its probability renormalised over the mask: the ratio is the mask's mass */
        json_t *f = json_pack("{s:i,s:i,s:f,s:b}", "n_predict", 1, "n_probs", 4, "temperature", 1.0,
                              "post_sampling_probs", 1);
        json_object_update(f, mask);
        int32_t trap = 0;
        tl_score_req q = {ids, n, allowed, k, NULL};
        if (needs_trap && !(st = trap_token(b->vocab, &q, &trap, err)))
            json_object_set_new(f, "logit_bias", json_pack("[[i,f]]", (int)trap, 1e4));
        if (!st)
            st = completion(im, ids, n, f, &rep2, usage, err);
        else
            json_decref(f);
    }
    if (!st)
        st = first_position(im, rep2, "prob", "top_probs", &pos, &list, err);
    if (!st) {
        double p = NAN;
        for (size_t e = 0; e < json_array_size(list); e++)
            if (json_integer_value(json_object_get(json_array_get(list, e), "id")) == *best)
                p = json_number_value(json_object_get(json_array_get(list, e), "prob"));
        if (p > 0)
            *log_mass = *lp_full - log(p);
        else
            st = tl_error_set(err, TL_ERR_REMOTE,
                              ENGINE ": /completion: post-sampling probabilities lack the best token %d (llama.cpp %s)",
                              (int)*best, version_of(im));
    }
    json_decref(mask);
    json_decref(rep);
    json_decref(rep2);
    free(member);
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
    json_t *req = json_pack("{s:s%,s:b,s:b}", "content", text, len, "add_special", add_special, "parse_special",
                            parse_special);
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, ENGINE ": /tokenize: text is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = tl_remote_call(&im->rem, "/tokenize", req, &rep, NULL, err);
    json_decref(req);
    if (!st)
        st = tl_remote_read_ids(&im->rem, json_object_get(rep, "tokens"), "/tokenize: /tokens", ids, n, err);
    json_decref(rep);
    if (!st)
        tl_remote_tok_put(&im->rem, flags, text, len, *ids, *n);
    return st;
}

static tl_status lc_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    lc_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_detokenize(im->local_vocab, ids, n, false, true, out, err);
    json_t *req = json_pack("{s:o}", "tokens", tl_remote_ids_json(ids, n)), *rep = NULL;
    tl_status st = tl_remote_call(&im->rem, "/detokenize", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *t = json_object_get(rep, "content");
    if (json_is_string(t))
        tl_strbuf_append(out, json_string_value(t), json_string_length(t));
    else
        st = tl_error_set(err, TL_ERR_REMOTE, ENGINE ": /detokenize: reply lacks the string /content");
    json_decref(rep);
    return st;
}

static void lc_free(tl_backend *b) {
    if (!b)
        return;
    lc_impl *im = b->impl;
    if (im) {
        tl_remote_free(&im->rem);
        tl_vocab_free(im->local_vocab);
        free(im->model_name);
        free(im->chat_template);
        free(im->version);
        free(im);
    }
    free(b);
}

static const tl_backend_ops llamacpp_ops = {
    .kind = "llamacpp",
    .free = lc_free,
    .tokenize = lc_tokenize,
    .detokenize = lc_detokenize,
    .score = lc_score,
    .next_logits = NULL,
    .generate_regex = lc_generate_regex,
    .score_greedy = lc_score_greedy,
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

tl_status tl_backend_llamacpp_new(const tl_sglang_params *params, tl_backend **out, tl_error *err) {
    *out = NULL;
    if (!params)
        return tl_error_set(err, TL_ERR_INVALID, ENGINE ": no parameters");
    tl_backend *b = calloc(1, sizeof *b);
    lc_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    b->ops = &llamacpp_ops;
    b->impl = im;
    tl_status st = tl_remote_init(&im->rem, ENGINE, "/completion", params->base_url, params->api_key,
                                  params->timeout_s, params->max_retries, &b->requests, err);
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
