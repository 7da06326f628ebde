/* sample.h: seeded token choice over a subset of the logits (internal to
 * src/constrain; numbers and free text share it), on top of util/sample.h. */
#ifndef TL_CONSTRAIN_SAMPLE_H
#define TL_CONSTRAIN_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

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
#include "backend/backend.h"
tl_status tl_step_scores(tl_backend *b, const int32_t *seq, size_t len, const int32_t *allowed, size_t k,
                         float *scores, double *lp, double *lse_full, tl_usage *usage, tl_error *err);

#endif
