/* step.c: the one constrained generation loop and its sampling helpers
 * (sample.h). Numbers (number_gen.c) and patterned strings (pattern.c) are
 * the same loop over different automata: per step the automaton's allowed
 * tokens, their scores (full logits locally; exactly the allowed tokens'
 * log-probabilities from a remote server), temperature over the allowed
 * tokens only, the chosen token accepted, until the value is complete. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/sample.h"
#include "util/error.h"

/* ===== sampling helpers ================================================= */

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

/* ===== the step loop ==================================================== */

/* Allowed sets above this many tokens go through score_greedy where a remote
 * backend has it (reading every allowed token's logprob would cost a reply
 * the size of the vocabulary per step). */
#define TL_STEP_GREEDY_MIN 256

void tl_step_run_free(tl_step_run *r) {
    if (!r)
        return;
    free(r->ids);
    free(r->logprob_full);
    free(r->logprob_allowed);
    memset(r, 0, sizeof *r);
}

tl_status tl_step_generate(tl_backend *b, const tl_step_automaton *a, const int32_t *ids, size_t n,
                           size_t max_steps, const tl_sample_params *sp, tl_step_run *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    int32_t *seq = malloc((n + max_steps) * sizeof *seq);
    int32_t *allowed = malloc((a->n_tokens ? a->n_tokens : 1) * sizeof *allowed);
    float *logits = malloc((size_t)b->n_vocab * sizeof *logits);
    double *cand_lp = malloc((a->n_tokens ? a->n_tokens : 1) * sizeof *cand_lp);
    out->ids = malloc((max_steps ? max_steps : 1) * sizeof *out->ids);
    out->logprob_full = malloc((max_steps ? max_steps : 1) * sizeof(double));
    out->logprob_allowed = malloc((max_steps ? max_steps : 1) * sizeof(double));
    tl_status st = TL_OK;
    if (!seq || !allowed || !logits || !cand_lp || !out->ids || !out->logprob_full || !out->logprob_allowed) {
        st = tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", a->what);
        goto done;
    }
    if (n)
        memcpy(seq, ids, n * sizeof *seq);
    uint64_t rng = sp->seed;
    size_t len = n, tl;
    while (!a->done(a->self)) {
        if (out->n_ids == max_steps) {
            const char *t = a->text(a->self, &tl);
            st = tl_error_set(err, TL_ERR_LIMIT, "%s: %zu tokens generated and \"%.*s\" is not closed", a->what,
                              max_steps, (int)(tl > 64 ? 64 : tl), t);
            goto done;
        }
        size_t k = a->allowed(a->self, allowed);
        if (k == 0) {
            const char *t = a->text(a->self, &tl);
            st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: no token of this vocabulary continues \"%.*s\"", a->what,
                              (int)(tl > 64 ? 64 : tl), t);
            goto done;
        }
        double lse_full = 0, lp_full, lp_allowed;
        int32_t id;
        if (!b->ops->next_logits && b->ops->score_greedy && !(sp->temperature > 0) && k > TL_STEP_GREEDY_MIN) {
            /* a remote server picks the best allowed token and reports the mask's mass */
            double log_mass = 0;
            if ((st = b->ops->score_greedy(b, seq, len, allowed, k, &id, &lp_full, &log_mass, &out->usage, err)))
                goto done;
            lp_allowed = lp_full - log_mass;
        } else {
            if ((st = tl_step_scores(b, seq, len, allowed, k, logits, cand_lp, &lse_full, &out->usage, err)))
                goto done;
            id = tl_sample_ids(logits, allowed, k, sp->temperature, &rng);
            lp_full = logits[id] - lse_full;
            lp_allowed = logits[id] - tl_logsumexp_ids(logits, allowed, k);
        }
        if ((st = a->accept(a->self, id, err))) {
            tl_error_wrap(err, "%s: internal mask/accept mismatch", a->what);
            st = TL_ERR_INTERNAL;
            goto done;
        }
        out->logprob_full[out->n_ids] = lp_full;
        out->logprob_allowed[out->n_ids] = lp_allowed;
        out->sum_logprob_full += out->logprob_full[out->n_ids];
        out->sum_logprob_allowed += out->logprob_allowed[out->n_ids];
        out->ids[out->n_ids++] = id;
        seq[len++] = id;
        out->usage.output_tokens++;
    }
done:
    if (st) {
        tl_usage u = out->usage;
        tl_step_run_free(out);
        out->usage = u;
    }
    free(seq);
    free(allowed);
    free(logits);
    free(cand_lp);
    return st;
}
