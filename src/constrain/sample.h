/* sample.h: seeded token choice over a subset of the logits and the one
 * constrained step loop (internal to src/constrain; numbers, patterned
 * strings and free text share them), on top of util/sample.h. Implemented
 * in step.c. */
#ifndef TL_CONSTRAIN_SAMPLE_H
#define TL_CONSTRAIN_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "constrain/constrain.h"

#include "util/rng.h"    /* tl_rng_next, tl_rng_uniform */
#include "util/sample.h" /* the draw itself, tl_logsumexp_f */

/* Picks one of ids: the argmax at temperature <= 0 (ties: smallest id), else a
 * draw from softmax(logits[ids] / temperature). -1 when n == 0. */
int32_t tl_sample_ids(const float *logits, const int32_t *ids, size_t n, double temperature, uint64_t *rng);

/* One generation step's scores over the k allowed tokens, written to
 * scores[allowed[i]] (scores has the backend's n_vocab entries; the others
 * are left as they are), with *lse_full such that scores[id] - *lse_full is
 * the token's log-softmax over the whole vocabulary. Local backends: full
 * logits and their log-normaliser. Remote backends: exactly the allowed ids'
 * log-probabilities from one candidate-only score call (lp has room for k),
 * normaliser 0 — so an automaton enforced client-side gives remotely the
 * same choices and probabilities as locally. */
tl_status tl_step_scores(tl_backend *b, const int32_t *seq, size_t len, const int32_t *allowed, size_t k,
                         float *scores, double *lp, double *lse_full, tl_usage *usage, tl_error *err);

/* A token automaton the step loop drives (the number automaton, the string
 * automaton): the tokens that may come next, taking one, whether the value
 * is complete, and its text so far (for messages). */
typedef struct tl_step_automaton {
    void *self;
    size_t (*allowed)(const void *self, int32_t *out); /* out has room for n_tokens ids */
    tl_status (*accept)(void *self, int32_t id, tl_error *err);
    bool (*done)(const void *self);
    const char *(*text)(const void *self, size_t *len);
    size_t n_tokens;   /* ids the automaton knows (its index's vocabulary) */
    const char *what;  /* "number", "string": the messages' prefix */
} tl_step_automaton;

/* What one constrained generation produced: the tokens (the closing one
 * included) and, per token, its log-softmax over the whole vocabulary and
 * renormalised over that step's allowed tokens (temperature 1), with their
 * sums. Arrays malloc'd with room for max_steps; freed by tl_step_run_free. */
typedef struct tl_step_run {
    int32_t *ids;
    size_t n_ids;
    double *logprob_full, *logprob_allowed;
    double sum_logprob_full, sum_logprob_allowed;
    tl_usage usage;
} tl_step_run;

/* Per step: a's allowed tokens, their scores (tl_step_scores), temperature
 * applied to the allowed tokens only (greedy at 0, else drawn with a stream
 * seeded by sp->seed), the token accepted and appended after ids[0..n), until
 * a is done. TL_ERR_LIMIT after max_steps tokens without closing,
 * TL_ERR_UNSUPPORTED when no token continues the value. On failure out keeps
 * only its usage. */
tl_status tl_step_generate(tl_backend *b, const tl_step_automaton *a, const int32_t *ids, size_t n,
                           size_t max_steps, const tl_sample_params *sp, tl_step_run *out, tl_error *err);
void tl_step_run_free(tl_step_run *r);

#endif
