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
    static const char *names[] = {"complete", "token_limit", "probe_limit", "exhausted", "deadline", "cancelled",
                                  "oracle_budget"};
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "?";
}


typedef struct ranked {
    double key;
    int32_t id;
} ranked;

/* True when x ranks before y: higher key, then lower id. */
static bool ranks_before(const ranked *x, const ranked *y) {
    if (x->key != y->key)
        return x->key > y->key;
    return x->id < y->id;
}

/* The ranking is a binary heap popped in order: a step usually probes a
 * handful of tokens, so sorting the whole vocabulary (50k entries, most of
 * a step's time) is wasted; popping r entries costs n + r log n. */
static void heap_sift_down(ranked *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && ranks_before(&h[l], &h[m]))
            m = l;
        if (r < n && ranks_before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        ranked t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static ranked heap_pop(ranked *h, int32_t *n) {
    ranked top = h[0];
    h[0] = h[--*n];
    heap_sift_down(h, *n, 0);
    return top;
}

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The tokens b's tokenizer makes of text[0..len) (no BOS), or -1 on error. */
static long count_tokens(tl_backend *b, const char *text, size_t len, size_t *cuts, size_t max_cuts, size_t *n_cuts) {
    int32_t *ids = NULL;
    size_t n = 0;
    tl_error e;
    if (tl_backend_tokenize(b, text, len, false, false, &ids, &n, &e)) {
        tl_free(ids);
        return -1;
    }
    if (cuts) { /* byte offsets where a token ends */
        tl_strbuf sb = TL_STRBUF_INIT;
        *n_cuts = 0;
        for (size_t i = 0; i < n && *n_cuts < max_cuts; i++) {
            if (tl_backend_detokenize(b, ids, i + 1, &sb, &e))
                break;
            cuts[(*n_cuts)++] = sb.len;
            tl_strbuf_clear(&sb);
        }
        tl_strbuf_free(&sb);
    }
    tl_free(ids);
    return (long)n;
}

/* The prefix text[0..len) ends in a piece of a name that the witness
 * continues (the name is unfinished). True when the tokenizer, writing that
 * whole name (alone or after a space), never cuts it where the prefix does:
 * the model then meets a continuation it has hardly ever seen and tends to
 * rank it beyond the probe limit. */
static bool noncanonical_cut(tl_backend *b, const char *text, size_t len, const char *witness, size_t wlen) {
    if (len == 0 || !is_ident_char(text[len - 1]) || wlen <= len || !is_ident_char(witness[len]))
        return false;
    size_t start = len;
    while (start > 0 && is_ident_char(text[start - 1]))
        start--;
    if (text[start] >= '0' && text[start] <= '9')
        return false; /* a number, not a name */
    size_t end = len;
    while (end < wlen && is_ident_char(witness[end]))
        end++;
    char word[130];
    size_t wl = end - start, cut = len - start;
    if (wl + 1 >= sizeof word)
        return false;
    word[0] = ' ';
    memcpy(word + 1, witness + start, wl);
    size_t cuts[64], nc = 0;
    for (int spaced = 0; spaced < 2; spaced++) {
        if (count_tokens(b, word + 1 - spaced, wl + (size_t)spaced, cuts, 64, &nc) < 0)
            return false;
        for (size_t i = 0; i < nc; i++)
            if (cuts[i] == cut + (size_t)spaced)
                return false;
    }
    return true;
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
    tl_strbuf base = TL_STRBUF_INIT, text = TL_STRBUF_INIT, wit = TL_STRBUF_INIT;
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
    int32_t heap_n = nv;
    for (int32_t i = nv / 2 - 1; i >= 0; i--)
        heap_sift_down(order, heap_n, i);
    if (heap_n > 0)
        out->first_ranked = order[0].id;
    if ((rc = tl_backend_detokenize(b, ids, n, &base, err)))
        goto done;
    memcpy(trial, ids, sizeof *trial * n);
    bool free_mode = cfg->unconstrained;
    bool accepting = free_mode ? !only_space(st->text, st->len) : tl_aeon_is_accepting(eng, st);
    int top_k = cfg->top_k > 0 ? cfg->top_k : 32;
    int64_t step_probes = 0;
    if (!free_mode && cfg->step_budget == 1) {
        /* Only EOS still fits: the bound kept every earlier token completable
         * within the budget, so the text is accepting unless the model never
         * took the fitting tokens; EOS is the model's best-ranked end token. */
        out->end = TL_AEON_END_TOKEN_LIMIT;
        while (accepting && heap_n > 0) {
            ranked cand = heap_pop(order, &heap_n);
            if (cand.key != -INFINITY && is_eos(b, cand.id)) {
                counts->probes++;
                out->token = cand.id;
                out->is_eos = true;
                break;
            }
        }
        goto done;
    }
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
        if (cfg->max_oracle_work > 0 && counts->oracle_work >= cfg->max_oracle_work) {
            out->end = TL_AEON_END_ORACLE_BUDGET;
            goto done;
        }
        ranked cand = heap_pop(order, &heap_n);
        int32_t id = cand.id;
        if (cand.key == -INFINITY)
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
        if (!free_mode && accepting) {
            /* The end of a definition (`;`) after a complete term ends it as EOS
             * does: the oracle never allows `;` there (`e; e` is not in the
             * grammar), and the model trained on whole files often writes it. */
            size_t k = 0;
            while (k < dlen && only_space(delta + k, 1))
                k++;
            if (k < dlen && delta[k] == ';') {
                out->token = id;
                out->is_eos = true;
                goto done;
            }
        }
        if (!free_mode) {
            tl_aeon_state *ns = tl_aeon_state_advance(st, delta, dlen);
            if (!ns) {
                rc = tl_error_set(err, TL_ERR_NOMEM, "aeon sampler: out of memory");
                goto done;
            }
            tl_aeon_query_stats qs;
            double t0 = tl_now_s();
            tl_aeon_verdict v = tl_aeon_completion_status(eng, ns, &wit, &qs);
            counts->oracle_s += tl_now_s() - t0;
            counts->oracle_calls++;
            counts->oracle_work += qs.work;
            bool fits = true, canonical = true;
            if (v == TL_AEON_LIVE && wit.len >= ns->len) {
                /* The shortest completion, then EOS, must fit in what is left
                 * after this token. A token is at most as long as its text
                 * (byte-level and byte-fallback vocabularies), so a short
                 * completion fits without tokenizing it. */
                size_t sl = wit.len - ns->len;
                long left = cfg->step_budget > 0 ? (long)cfg->step_budget - 2 : -1;
                if (left >= 0 && sl > (size_t)left) {
                    long need = count_tokens(b, wit.buf + ns->len, sl, NULL, 0, NULL);
                    fits = need >= 0 && need <= left;
                }
                canonical = !cfg->canonical_names || !noncanonical_cut(b, ns->text, ns->len, wit.buf, wit.len);
            }
            tl_aeon_state_free(ns);
            if (v == TL_AEON_DEAD) {
                counts->rejected++;
                continue;
            }
            if (v == TL_AEON_UNKNOWN) {
                counts->unknown++;
                continue;
            }
            if (!fits) {
                counts->over_budget++;
                continue;
            }
            if (!canonical) {
                counts->noncanonical++;
                continue;
            }
        }
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
    out->end = TL_AEON_END_EXHAUSTED;
done:
    free(order);
    free(trial);
    tl_strbuf_free(&base);
    tl_strbuf_free(&text);
    tl_strbuf_free(&wit);
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
        tl_aeon_sampler_config step_cfg = *cfg;
        step_cfg.step_budget = max_tokens - step;
        uint64_t step_seed = cfg->seed * 0x100000001B3ull + (uint64_t)step * TL_RNG_GOLDEN + 1;
        if ((rc = tl_aeon_sample_step(b, eng, ids, n, st, logits, &step_cfg, step_seed, &sr, &out->counts, err)))
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
