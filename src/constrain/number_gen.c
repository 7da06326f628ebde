/* number_gen.c: generating one number over a backend.
 *
 * Per step: the automaton's allowed tokens, their scores, temperature
 * applied to the allowed tokens only (greedy at 0, seeded sampling
 * otherwise), append, repeat until the value closes. Local backends score
 * with full logits from next_logits; remote ones (SGLang) are asked for
 * exactly the allowed tokens' log-probabilities (a candidate-only score call,
 * as categorical decisions are), so the range and multipleOf hold by
 * construction and the value's probability is the same number the local
 * engine reports. Only a remote backend without a local tokenizer (no
 * vocabulary to build the automaton from) falls back to one
 * regex-constrained generation, and only where the regex is exact (no
 * multipleOf finer than the decimals grid allows); the value then has no
 * constrained probability (NaN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/number_core.h"
#include "constrain/sample.h"
#include "util/error.h"

/* ===== sampling helpers (sample.h) ====================================== */

int32_t tl_sample_ids(const float *logits, const int32_t *ids, size_t n, double temperature, uint64_t *rng) {
    if (n == 0)
        return -1;
    /* argmax (ties: the smallest id) */
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (logits[ids[i]] > logits[ids[best]] || (logits[ids[i]] == logits[ids[best]] && ids[i] < ids[best]))
            best = i;
    if (!(temperature > 0) || n == 1 || !isfinite(logits[ids[best]]) || n > INT32_MAX)
        return ids[best];
    double stack_w[256], *w = n <= sizeof stack_w / sizeof *stack_w ? stack_w : malloc(n * sizeof *w);
    if (!w)
        return ids[best];
    double mx = logits[ids[best]];
    for (size_t i = 0; i < n; i++)
        w[i] = exp(((double)logits[ids[i]] - mx) / temperature);
    int32_t pick = tl_sample_weights(w, (int32_t)n, NULL, tl_rng_uniform(rng), NULL);
    if (w != stack_w)
        free(w);
    return pick >= 0 ? ids[pick] : ids[best];
}

/* ===== generation ======================================================= */

void tl_number_result_free(tl_number_result *r) {
    if (!r)
        return;
    free(r->text);
    free(r->tail);
    free(r->ids);
    free(r->logprob_full);
    free(r->logprob_allowed);
    memset(r, 0, sizeof *r);
}

static size_t default_steps(const tl_number_spec *spec, const tl_number_close *close) {
    size_t tl = close->terminator ? (close->terminator_len ? close->terminator_len : strlen(close->terminator)) : 0;
    /* each token adds at least one byte: space, sign, digits, point, decimals,
     * terminator (or one terminator id); two more for slack */
    return 6 + (size_t)spec->max_int_digits + (size_t)spec->decimals + tl;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Remote: regex generation, then parse "[ ]number[terminator[tail]]" and check the range. */
static tl_status generate_remote(tl_backend *b, const tl_number_spec *spec, const tl_number_close *close,
                                 const int32_t *ids, size_t n, const tl_sample_params *sp, tl_number_result *out,
                                 tl_error *err) {
    tl_strbuf re = TL_STRBUF_INIT, text = TL_STRBUF_INIT;
    int32_t *gen = NULL;
    size_t n_gen = 0;
    tl_status st = tl_number_regex(spec, close, &re, err);
    if (st)
        goto done;
    int max_tokens = sp->max_tokens > 0 ? sp->max_tokens : (int)default_steps(spec, close);
    st = b->ops->generate_regex(b, ids, n, tl_strbuf_cstr(&re), max_tokens, sp->temperature, sp->seed, &gen,
                                &n_gen, &out->usage, err);
    if (st)
        goto done;
    /* a closing terminator id is not part of the number's text */
    size_t n_text = n_gen;
    for (size_t i = 0; n_gen && i < close->n_terminator_ids; i++)
        if (close->terminator_ids[i] == gen[n_gen - 1])
            n_text = n_gen - 1;
    if ((st = tl_backend_detokenize(b, gen, n_text, &text, err)))
        goto done;
    const char *t = tl_strbuf_cstr(&text);
    size_t len = text.len, i = 0;
    if (close->allow_leading_space && i < len && t[i] == ' ')
        i++;
    size_t start = i;
    while (i < len && (t[i] == '-' || t[i] == '.' || (t[i] >= '0' && t[i] <= '9')))
        i++;
    size_t num_end = i;
    size_t tl = close->terminator ? (close->terminator_len ? close->terminator_len : strlen(close->terminator)) : 0;
    bool closed_by_term = tl && len - i >= tl && memcmp(t + i, close->terminator, tl) == 0;
    if (closed_by_term)
        i += tl;
    if (!tl_number_spec_accepts(spec, t + start, num_end - start, &out->value)) {
        tl_strbuf d = TL_STRBUF_INIT;
        tl_number_spec_describe(spec, &d);
        st = tl_error_set(err, TL_ERR_REMOTE, "number: the %s backend generated \"%.*s\", not an %s", b->ops->kind,
                          (int)(len > 64 ? 64 : len), t, tl_strbuf_cstr(&d));
        tl_strbuf_free(&d);
        goto done;
    }
    out->text = dup_bytes(t + start, num_end - start);
    out->tail = dup_bytes(t + i, len - i);
    out->ids = gen;
    gen = NULL;
    out->n_ids = n_gen;
    out->closed_by_id = !closed_by_term;
    if (!out->text || !out->tail)
        st = tl_error_set(err, TL_ERR_NOMEM, "number: out of memory");
done:
    free(gen);
    tl_strbuf_free(&re);
    tl_strbuf_free(&text);
    return st;
}

tl_status tl_step_scores(tl_backend *b, const int32_t *seq, size_t len, const int32_t *allowed, size_t k,
                         float *scores, double *lp, double *lse_full, tl_usage *usage, tl_error *err) {
    if (b->ops->next_logits) {
        tl_status st = tl_backend_next_logits(b, seq, len, scores, usage, err);
        if (!st)
            *lse_full = tl_logsumexp_f(scores, (size_t)b->n_vocab);
        return st;
    }
    tl_score_req q = {.ids = seq, .n = len, .cands = allowed, .n_cands = k, .logprobs = lp};
    tl_status st = tl_backend_score(b, &q, 1, usage, err);
    for (size_t i = 0; !st && i < k; i++)
        scores[allowed[i]] = (float)lp[i];
    *lse_full = 0;
    return st;
}

tl_status tl_number_generate(tl_backend *b, const tl_number_index *idx, const tl_number_spec *spec,
                             const tl_number_close *close, const int32_t *ids, size_t n,
                             const tl_sample_params *sp, tl_number_result *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    static const tl_sample_params greedy = {0, 0, 0};
    if (!sp)
        sp = &greedy;
    if (!b || !spec || !close || (!ids && n))
        return tl_error_set(err, TL_ERR_INVALID, "number: missing backend, spec, close or ids");
    if (!b->ops->next_logits && !b->vocab) {
        if (!b->ops->generate_regex)
            return tl_error_set(err, TL_ERR_UNSUPPORTED, "number: the %s backend has neither logits nor regex",
                                b->ops->kind);
        if (spec->step != 1) {
            tl_strbuf d = TL_STRBUF_INIT;
            tl_number_spec_describe(spec, &d);
            tl_status rs = tl_error_set(err, TL_ERR_UNSUPPORTED,
                                        "number: %s: the multipleOf cannot be enforced over the %s backend without "
                                        "the model's tokenizer: pass --tokenizer M.gguf (a GGUF of the same model)",
                                        tl_strbuf_cstr(&d), b->ops->kind);
            tl_strbuf_free(&d);
            return rs;
        }
        tl_status rs = generate_remote(b, spec, close, ids, n, sp, out, err);
        if (!rs)
            out->sum_logprob_allowed = out->sum_logprob_full = NAN;
        return rs;
    }
    tl_number_index *own = NULL;
    tl_number_automaton *a = NULL;
    int32_t *seq = NULL, *allowed = NULL;
    float *logits = NULL;
    double *cand_lp = NULL;
    tl_status st = TL_OK;
    if (!idx) {
        if (!b->vocab)
            return tl_error_set(err, TL_ERR_INVALID, "number: the backend has no vocabulary to index");
        if ((st = tl_number_index_new(b->vocab, &own, err)))
            return st;
        idx = own;
    }
    if (b->n_vocab < tl_number_index_n_tokens(idx)) {
        st = tl_error_set(err, TL_ERR_INVALID, "number: index has %d tokens, the backend's logits only %d",
                          (int)tl_number_index_n_tokens(idx), (int)b->n_vocab);
        goto done;
    }
    if ((st = tl_number_automaton_new(idx, spec, close, &a, err)))
        goto done;
    size_t max_steps = sp->max_tokens > 0 ? (size_t)sp->max_tokens : default_steps(spec, close);
    seq = malloc((n + max_steps) * sizeof *seq);
    allowed = malloc((size_t)tl_number_index_n_tokens(idx) * sizeof *allowed);
    logits = malloc((size_t)b->n_vocab * sizeof *logits);
    cand_lp = malloc((size_t)tl_number_index_n_tokens(idx) * sizeof *cand_lp);
    out->ids = malloc(max_steps * sizeof *out->ids);
    out->logprob_full = malloc(max_steps * sizeof(double));
    out->logprob_allowed = malloc(max_steps * sizeof(double));
    if (!seq || !allowed || !logits || !cand_lp || !out->ids || !out->logprob_full || !out->logprob_allowed) {
        st = tl_error_set(err, TL_ERR_NOMEM, "number: out of memory");
        goto done;
    }
    if (n)
        memcpy(seq, ids, n * sizeof *seq);
    uint64_t rng = sp->seed;
    size_t len = n;
    while (!tl_number_automaton_done(a)) {
        if (out->n_ids == max_steps) {
            size_t tl;
            const char *t = tl_number_automaton_text(a, &tl);
            st = tl_error_set(err, TL_ERR_LIMIT, "number: %zu tokens generated and \"%.*s\" is not closed", max_steps,
                              (int)tl, t);
            goto done;
        }
        size_t k = tl_number_automaton_allowed(a, allowed);
        if (k == 0) {
            size_t tl;
            const char *t = tl_number_automaton_text(a, &tl);
            st = tl_error_set(err, TL_ERR_UNSUPPORTED, "number: no token of this vocabulary continues \"%.*s\"",
                              (int)tl, t);
            goto done;
        }
        double lse_full = 0;
        if ((st = tl_step_scores(b, seq, len, allowed, k, logits, cand_lp, &lse_full, &out->usage, err)))
            goto done;
        int32_t id = tl_sample_ids(logits, allowed, k, sp->temperature, &rng);
        double lse_allowed = tl_logsumexp_ids(logits, allowed, k);
        if ((st = tl_number_automaton_accept(a, id, err))) {
            tl_error_wrap(err, "number: internal mask/accept mismatch");
            st = TL_ERR_INTERNAL;
            goto done;
        }
        out->logprob_full[out->n_ids] = logits[id] - lse_full;
        out->logprob_allowed[out->n_ids] = logits[id] - lse_allowed;
        out->sum_logprob_full += out->logprob_full[out->n_ids];
        out->sum_logprob_allowed += out->logprob_allowed[out->n_ids];
        out->ids[out->n_ids++] = id;
        seq[len++] = id;
        out->usage.output_tokens++;
    }
    if ((st = tl_number_automaton_value(a, &out->value, err)))
        goto done;
    size_t tl, tail_len;
    const char *t = tl_number_automaton_text(a, &tl);
    const char *tail = tl_number_automaton_tail(a, &tail_len);
    out->text = dup_bytes(t, tl);
    out->tail = dup_bytes(tail, tail_len);
    if (!out->text || !out->tail)
        st = tl_error_set(err, TL_ERR_NOMEM, "number: out of memory");
    out->closed_by_id = tl_number_automaton_closed_by_id(a);
done:
    if (st) {
        tl_usage u = out->usage;
        tl_number_result_free(out);
        out->usage = u;
    }
    tl_number_automaton_free(a);
    tl_number_index_free(own);
    free(seq);
    free(allowed);
    free(logits);
    free(cand_lp);
    return st;
}
