/* sampler.c: see sampler.h. The ranking is computed once per step over the
 * full vocabulary; probing walks it in batches of top_k and stops at the
 * first certified token, so search continues past the first batch whenever
 * the top candidates are all invalid. */
#include "aeon/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/rng.h"
#include "util/sample.h"
#include "util/utf8.h"

const char *tl_aeon_attempt_end_name(tl_aeon_attempt_end e) {
    static const char *names[] = {"complete", "token_limit", "probe_limit", "exhausted", "deadline", "cancelled"};
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "?";
}


typedef struct ranked {
    double key;
    int32_t id;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* True when s[0..n) is complete, valid UTF-8 without U+FFFD. */
static bool clean_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = tl_utf8_decode(s + i, n - i, &cp, TL_UTF8_STRICT);
        if (l <= 0 || cp == 0xFFFD) /* U+FFFD: an undecodable byte sequence */
            return false;
        i += (size_t)l;
    }
    return true;
}

static bool only_space(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return true;
}

static bool is_special(const tl_backend *b, int32_t id) {
    if (!b->vocab)
        return false;
    tl_token_attr a = tl_vocab_token_attr(b->vocab, id);
    return a == TL_TOKEN_CONTROL || a == TL_TOKEN_UNKNOWN || a == TL_TOKEN_UNUSED;
}

static bool is_eos(const tl_backend *b, int32_t id) { return b->vocab && tl_vocab_is_eog(b->vocab, id); }

tl_status tl_aeon_sample_step(tl_backend *b, tl_aeon_engine *eng, const int32_t *ids, size_t n, const tl_aeon_state *st,
                         const float *logits, const tl_aeon_sampler_config *cfg, uint64_t step_seed,
                         tl_aeon_step_result *out, tl_aeon_probe_counts *counts, tl_error *err) {
    memset(out, 0, sizeof *out);
    out->token = -1;
    out->first_ranked = -1;
    int32_t nv = b->n_vocab;
    ranked *order = malloc(sizeof *order * (size_t)nv);
    int32_t *trial = malloc(sizeof *trial * (n + 1));
    tl_strbuf base = TL_STRBUF_INIT, text = TL_STRBUF_INIT;
    tl_status rc = TL_OK;
    if (!order || !trial) {
        rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
        goto done;
    }
    /* Rank the whole vocabulary. Non-finite scores rank last (never allowed). */
    uint64_t rs = step_seed;
    for (int32_t i = 0; i < nv; i++) {
        double l = logits[i];
        double key;
        if (!isfinite(l)) {
            key = -INFINITY;
        } else if (cfg->temperature <= 0) {
            key = l;
        } else {
            /* Gumbel(0,1) from a uniform in (0,1): argmax of l/T + g over any
             * subset is a draw from softmax(l/T) restricted to that subset. */
            double u = tl_rng_uniform_open(&rs);
            key = l / cfg->temperature - log(-log(u));
        }
        order[i] = (ranked){key, i};
    }
    qsort(order, (size_t)nv, sizeof *order, cmp_ranked);
    out->first_ranked = order[0].id;
    if ((rc = tl_backend_detokenize(b, ids, n, &base, err)))
        goto done;
    memcpy(trial, ids, sizeof *trial * n);
    bool accepting = tl_aeon_is_accepting(eng, st);
    int top_k = cfg->top_k > 0 ? cfg->top_k : 32;
    int64_t step_probes = 0;
    for (int32_t r = 0; r < nv; r++) {
        if (r % top_k == 0) { /* between batches: limits, deadline, cancellation */
            if (cfg->deadline > 0 && tl_now_s() > cfg->deadline) {
                out->end = TL_AEON_END_DEADLINE;
                goto done;
            }
            if (cfg->cancelled && cfg->cancelled(cfg->cancel_arg)) {
                out->end = TL_AEON_END_CANCELLED;
                goto done;
            }
        }
        if (cfg->max_probes > 0 && step_probes >= cfg->max_probes) {
            out->end = TL_AEON_END_PROBE_LIMIT;
            goto done;
        }
        int32_t id = order[r].id;
        if (order[r].key == -INFINITY)
            break;
        step_probes++;
        counts->probes++;
        if (is_eos(b, id)) {
            if (accepting) {
                out->token = id;
                out->is_eos = true;
                goto done;
            }
            counts->excluded++;
            continue;
        }
        if (is_special(b, id)) {
            counts->excluded++;
            continue;
        }
        trial[n] = id;
        tl_strbuf_clear(&text);
        if ((rc = tl_backend_detokenize(b, trial, n + 1, &text, err)))
            goto done;
        /* The trial must extend the committed text (no boundary rewrite),
         * add something, and add only complete UTF-8. */
        if (text.len <= base.len || memcmp(text.buf, base.buf, base.len) ||
            !clean_utf8(text.buf + base.len, text.len - base.len)) {
            counts->excluded++;
            continue;
        }
        const char *delta = text.buf + base.len;
        size_t dlen = text.len - base.len;
        if (only_space(delta, dlen) && (st->len == 0 || only_space(st->text + st->len - 1, 1))) {
            counts->excluded++; /* more whitespace after whitespace: no progress */
            continue;
        }
        tl_aeon_state *ns = tl_aeon_state_advance(st, delta, dlen);
        if (!ns) {
            rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
            goto done;
        }
        double t0 = tl_now_s();
        tl_aeon_verdict v = tl_aeon_completion_status(eng, ns, NULL, NULL);
        counts->oracle_s += tl_now_s() - t0;
        tl_aeon_state_free(ns);
        if (v == TL_AEON_DEAD) {
            counts->rejected++;
        } else if (v == TL_AEON_UNKNOWN) {
            counts->unknown++;
        } else {
            out->token = id;
            out->delta = malloc(dlen + 1);
            if (!out->delta) {
                rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
                out->token = -1;
                goto done;
            }
            memcpy(out->delta, delta, dlen);
            out->delta[dlen] = '\0';
            out->delta_len = dlen;
            goto done;
        }
    }
    out->end = TL_AEON_END_EXHAUSTED;
done:
    free(order);
    free(trial);
    tl_strbuf_free(&base);
    tl_strbuf_free(&text);
    return rc;
}

void tl_aeon_attempt_free(tl_aeon_attempt *a) {
    free(a->text);
    free(a->tokens);
    free(a->first_ranked);
    memset(a, 0, sizeof *a);
}

tl_status tl_aeon_sample_attempt(tl_backend *b, tl_aeon_engine *eng, const int32_t *prompt, size_t n_prompt,
                            const tl_aeon_sampler_config *cfg, tl_aeon_attempt *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    int max_tokens = cfg->max_tokens > 0 ? cfg->max_tokens : 128;
    int32_t *ids = malloc(sizeof *ids * (n_prompt + (size_t)max_tokens + 1));
    float *logits = malloc(sizeof *logits * (size_t)b->n_vocab);
    out->tokens = malloc(sizeof *out->tokens * ((size_t)max_tokens + 1));
    out->first_ranked = malloc(sizeof *out->first_ranked * ((size_t)max_tokens + 1));
    tl_aeon_state *st = tl_aeon_state_initial();
    tl_status rc = TL_OK;
    if (!ids || !logits || !out->tokens || !out->first_ranked || !st) {
        rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
        goto done;
    }
    memcpy(ids, prompt, sizeof *ids * n_prompt);
    size_t n = n_prompt;
    out->end = TL_AEON_END_TOKEN_LIMIT;
    for (int step = 0; step < max_tokens; step++) {
        if (cfg->deadline > 0 && tl_now_s() > cfg->deadline) {
            out->end = TL_AEON_END_DEADLINE;
            break;
        }
        double t0 = tl_now_s();
        if ((rc = tl_backend_next_logits(b, ids, n, logits, &out->usage, err)))
            goto done;
        out->model_s += tl_now_s() - t0;
        if (cfg->deadline > 0 && tl_now_s() > cfg->deadline) { /* a late forward pass is not used */
            out->end = TL_AEON_END_DEADLINE;
            break;
        }
        tl_aeon_step_result sr;
        uint64_t step_seed = cfg->seed * 0x100000001B3ull + (uint64_t)step * TL_RNG_GOLDEN + 1;
        if ((rc = tl_aeon_sample_step(b, eng, ids, n, st, logits, cfg, step_seed, &sr, &out->counts, err)))
            goto done;
        out->first_ranked[out->n_tokens] = sr.first_ranked;
        if (sr.token < 0) {
            out->end = sr.end;
            break;
        }
        out->tokens[out->n_tokens++] = sr.token;
        out->logprob += (double)logits[sr.token] - tl_logsumexp_f(logits, (size_t)b->n_vocab);
        if (sr.is_eos) {
            out->end = TL_AEON_END_COMPLETE;
            break;
        }
        ids[n++] = sr.token;
        tl_aeon_state *ns = tl_aeon_state_advance(st, sr.delta, sr.delta_len);
        free(sr.delta);
        if (!ns) {
            rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
            goto done;
        }
        tl_aeon_state_free(st);
        st = ns;
    }
    out->text = malloc(st->len + 1);
    if (!out->text) {
        rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
        goto done;
    }
    memcpy(out->text, st->text, st->len + 1);
    out->text_len = st->len;
done:
    tl_aeon_state_free(st);
    free(ids);
    free(logits);
    return rc;
}
