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

#endif
