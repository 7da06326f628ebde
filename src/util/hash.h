/* hash.h: one byte-string hash for the project's in-memory caches (FNV-1a,
 * 64 bits: fast on short keys, no allocation; not for untrusted keys where
 * collisions could be forced at scale — callers compare the keys too). */
#ifndef TL_UTIL_HASH_H
#define TL_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TL_HASH_SEED 1469598103934665603ull

/* h extended by data[0..n): tl_hash_continue(tl_hash_bytes(a), b) hashes a then b. */
static inline uint64_t tl_hash_continue(uint64_t h, const void *data, size_t n) {
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t tl_hash_bytes(const void *data, size_t n) { return tl_hash_continue(TL_HASH_SEED, data, n); }

#endif
