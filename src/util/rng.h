/* rng.h: the one seeded random stream of the project (splitmix64). Every
 * layer that draws (token sampling, Gumbel keys, number generation, seeded
 * tie-breaks) uses these, so a given seed means the same stream everywhere.
 * The state is a plain uint64_t the caller owns: no hidden globals, and two
 * streams never interfere. Not for cryptography. */
#ifndef TL_UTIL_RNG_H
#define TL_UTIL_RNG_H

#include <stdint.h>

/* splitmix64's output function applied to x: a well-mixed 64-bit hash of x.
 * tl_rng_next is mix(state += golden) . */
static inline uint64_t tl_rng_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The golden-ratio increment of splitmix64; also used to derive independent
 * per-field / per-step seeds (seed ^ TL_RNG_GOLDEN * k). */
#define TL_RNG_GOLDEN 0x9E3779B97F4A7C15ull

/* Next 64 random bits; advances *state. */
static inline uint64_t tl_rng_next(uint64_t *state) { return tl_rng_mix(*state += TL_RNG_GOLDEN); }

/* Uniform double in [0, 1): the top 53 bits of the next draw. */
static inline double tl_rng_uniform(uint64_t *state) { return (double)(tl_rng_next(state) >> 11) * 0x1.0p-53; }

/* Uniform double in (0, 1): never 0, so log(u) is finite (Gumbel keys). */
static inline double tl_rng_uniform_open(uint64_t *state) {
    return ((double)(tl_rng_next(state) >> 11) + 0.5) * 0x1.0p-53;
}

#endif
