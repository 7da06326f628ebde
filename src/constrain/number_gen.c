/* number_gen.c: generating one number over a backend.
 *
 * The number automaton driven by the shared step loop (step.c: per step
 * the automaton's allowed tokens, their scores, temperature applied to the
 * allowed tokens only, append, repeat until the value closes). Local backends score
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

/* The number automaton as the step loop sees it (sample.h). */
static size_t number_allowed(const void *a, int32_t *out) { return tl_number_automaton_allowed(a, out); }
static tl_status number_accept(void *a, int32_t id, tl_error *err) { return tl_number_automaton_accept(a, id, err); }
static bool number_done(const void *a) { return tl_number_automaton_done(a); }
static const char *number_text(const void *a, size_t *len) { return tl_number_automaton_text(a, len); }

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
    tl_number_automaton *a = NULL;
    tl_step_run run = {0};
    tl_status st = TL_OK;
    if (!idx) {
        if (!b->vocab)
            return tl_error_set(err, TL_ERR_INVALID, "number: the backend has no vocabulary to index");
        if ((st = tl_number_index_of(b->vocab, &idx, err)))
            return st;
    }
    if (b->n_vocab < tl_number_index_n_tokens(idx)) {
        st = tl_error_set(err, TL_ERR_INVALID, "number: index has %d tokens, the backend's logits only %d",
                          (int)tl_number_index_n_tokens(idx), (int)b->n_vocab);
        goto done;
    }
    if ((st = tl_number_automaton_new(idx, spec, close, &a, err)))
        goto done;
    size_t max_steps = sp->max_tokens > 0 ? (size_t)sp->max_tokens : default_steps(spec, close);
    tl_step_automaton sa = {a, number_allowed, number_accept, number_done, number_text,
                            (size_t)tl_number_index_n_tokens(idx), "number"};
    st = tl_step_generate(b, &sa, ids, n, max_steps, sp, &run, err);
    out->usage = run.usage;
    if (st)
        goto done;
    out->ids = run.ids;
    out->n_ids = run.n_ids;
    out->logprob_full = run.logprob_full;
    out->logprob_allowed = run.logprob_allowed;
    out->sum_logprob_full = run.sum_logprob_full;
    out->sum_logprob_allowed = run.sum_logprob_allowed;
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
    return st;
}
