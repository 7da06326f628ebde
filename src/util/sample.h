/* sample.h: the one token sampler of the project. `typellm generate`, the
 * server's /generate, constrained free text and numbers, and decide's
 * temperature draws all choose through tl_sample_weights, so top-k, top-p,
 * min-p and the draw itself mean the same thing everywhere (llama.cpp's and
 * SGLang's order: top_k, then top_p over what top_k kept, then min_p).
 *
 * Weights, not logits: the caller turns its scores into w[i] >= 0
 * proportional to the probability it wants (exp((l_i - max) / T) for logits
 * at temperature T; 0 for a token a constraint forbids), which lets each
 * caller mask tokens without this file knowing why. With the heaviest weight
 * scaled to 1, sorting is limited to the head of the distribution (weight
 * bands, see tl_sample_band), so a 150k-token vocabulary is never fully sorted.
 *
 * Deterministic: ties are broken by the lower index, and the only randomness
 * is the uniform u the caller draws (util/rng.h), so a seed fixes the result. */
#ifndef TL_UTIL_SAMPLE_H
#define TL_UTIL_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_sample_filter {
    int32_t top_k; /* keep the k heaviest; <= 0: off */
    double top_p;  /* keep the smallest heaviest-first prefix with mass >= top_p; >= 1: off */
    double min_p;  /* drop weights below min_p * heaviest; <= 0: off */
} tl_sample_filter;

/* Draws an index of w[0..n) with probability w[i] / sum over what the filter
 * (NULL: none) keeps, u uniform in [0, 1). order: scratch for n indexes, may
 * be NULL when the filter is NULL or all off. Returns -1 when no weight is > 0. */
int32_t tl_sample_weights(const double *w, int32_t n, const tl_sample_filter *f, double u, int32_t *order);

/* Number of weight bands and, for band b, the indexes whose weight lies in
 * that band written to out, heaviest first (ties: lower index); returns how
 * many. Bands are relative to a heaviest weight of 1: [1e-2, inf),
 * [1e-5, 1e-2), [1e-10, 1e-5), (0, 1e-10). For callers that walk tokens
 * best-first (greedy under a constraint) without sorting the whole vocabulary. */
#define TL_SAMPLE_N_BANDS 4
size_t tl_sample_band(const double *w, int32_t n, int band, int32_t *out);

/* log(sum(exp(x))) over x[0..n) / over logits[ids[0..n)], in double with
 * the maximum taken out first; -inf (or the non-finite maximum) when there is
 * nothing finite. log_softmax(x)[i] = x[i] - tl_logsumexp_f(x, n). */
double tl_logsumexp_f(const float *x, size_t n);
double tl_logsumexp_ids(const float *logits, const int32_t *ids, size_t n);

/* Index of the largest x[0..n) (ties: the lowest index); 0 when n == 0. */
int32_t tl_argmax_f(const float *x, int32_t n);

#endif
