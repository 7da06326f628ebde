/* typellm/util.h: the small helpers the API's callers need too: the growable
 * byte buffer several calls append their text to (tl_strbuf, cf. Redis sds),
 * whole-file reads with clear errors, a monotonic clock, and the project's one
 * seeded RNG, token sampler and UTF-8 decoder.
 *
 * tl_strbuf invariant: buf[len] == '\0' whenever buf != NULL, so the data can
 * be handed to C string APIs; embedded NULs are allowed. A tl_strbuf is plain
 * data owned by its declarer: start it as TL_STRBUF_INIT, free it with
 * tl_strbuf_free (or take its memory with tl_strbuf_detach, then tl_free). */
#ifndef TYPELLM_UTIL_H
#define TYPELLM_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_strbuf {
    char *buf;   /* NULL until first append */
    size_t len;  /* bytes used, excluding the trailing NUL */
    size_t cap;  /* bytes allocated */
} tl_strbuf;
#define TL_STRBUF_INIT {NULL, 0, 0}

/* All appends return false only on allocation failure (buffer left intact). */
TL_API bool tl_strbuf_reserve(tl_strbuf *sb, size_t extra);
TL_API bool tl_strbuf_append(tl_strbuf *sb, const void *data, size_t n);
TL_API bool tl_strbuf_puts(tl_strbuf *sb, const char *s);
TL_API bool tl_strbuf_putc(tl_strbuf *sb, char c);
TL_API bool tl_strbuf_printf(tl_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TL_API bool tl_strbuf_vprintf(tl_strbuf *sb, const char *fmt, va_list ap);
/* Appends s as a JSON string literal (with quotes), escaping as RFC 8259 requires;
 * invalid UTF-8 bytes become U+FFFD. */
TL_API bool tl_strbuf_json_string(tl_strbuf *sb, const char *s, size_t n);
TL_API void tl_strbuf_clear(tl_strbuf *sb);             /* len = 0, keeps memory */
TL_API void tl_strbuf_free(tl_strbuf *sb);              /* releases memory, back to INIT */
TL_API char *tl_strbuf_detach(tl_strbuf *sb);           /* caller tl_free()s; never NULL unless OOM */
TL_API const char *tl_strbuf_cstr(const tl_strbuf *sb); /* "" when empty */

/* Reads the whole file (or stdin when path is "-") into a NUL-terminated
 * buffer (*data, caller tl_free()s); *len excludes the NUL. Refuses files over
 * max_bytes (TL_ERR_LIMIT); TL_ERR_IO names the path and why. */
TL_API tl_status tl_read_file(const char *path, size_t max_bytes, char **data, size_t *len, tl_error *err);

/* Monotonic time in seconds / nanoseconds (CLOCK_MONOTONIC; only differences mean anything). */
TL_API double tl_now_s(void);
TL_API uint64_t tl_now_ns(void);


/* ---- seeded randomness (splitmix64) ----------------------------------------
 * The one random stream of the project: token sampling, Gumbel keys, number
 * generation and seeded tie-breaks all draw from it, so a seed means the same
 * stream everywhere. The state is a uint64_t the caller owns. Not for
 * cryptography. */

/* splitmix64's output function: a well-mixed 64-bit hash of x. */
static inline uint64_t tl_rng_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* The golden-ratio increment; also derives independent per-field seeds
 * (seed ^ TL_RNG_GOLDEN * k). */
#define TL_RNG_GOLDEN 0x9E3779B97F4A7C15ull
/* Next 64 random bits; advances *state. */
static inline uint64_t tl_rng_next(uint64_t *state) { return tl_rng_mix(*state += TL_RNG_GOLDEN); }
/* Uniform in [0, 1): the top 53 bits of the next draw. */
static inline double tl_rng_uniform(uint64_t *state) { return (double)(tl_rng_next(state) >> 11) * 0x1.0p-53; }
/* Uniform in (0, 1): never 0, so log(u) is finite (Gumbel keys). */
static inline double tl_rng_uniform_open(uint64_t *state) {
    return ((double)(tl_rng_next(state) >> 11) + 0.5) * 0x1.0p-53;
}

/* ---- the token sampler -----------------------------------------------------
 * `typellm generate`, the server's /generate and OpenAI completions,
 * constrained free text and numbers, and decide's temperature draws all choose
 * through tl_sample_weights: top-k, then top-p over what top-k kept, then
 * min-p (llama.cpp's and SGLang's order). Weights, not logits: the caller
 * turns scores into w[i] >= 0 proportional to the wanted probability
 * (exp((l_i - max) / T) at temperature T; 0 for a token a constraint forbids).
 * Only the head of the distribution is sorted (weight bands relative to the
 * heaviest), so a 150k-token vocabulary is never fully sorted. Ties go to the
 * lower index; the only randomness is the caller's u. */
typedef struct tl_sample_filter {
    int32_t top_k; /* keep the k heaviest; <= 0: off */
    double top_p;  /* keep the smallest heaviest-first prefix with mass >= top_p; >= 1: off */
    double min_p;  /* drop weights below min_p * heaviest; <= 0: off */
} tl_sample_filter;

/* Draws an index of w[0..n) with probability w[i] / sum over what the filter
 * (NULL: none) keeps, u uniform in [0, 1). order: scratch for n indexes (may be
 * NULL when the filter is NULL or all off). -1 when no weight is > 0. */
TL_API int32_t tl_sample_weights(const double *w, int32_t n, const tl_sample_filter *f, double u, int32_t *order);
/* The indexes whose weight lies in band b (0 .. TL_SAMPLE_N_BANDS-1: [1e-2, inf),
 * [1e-5, 1e-2), [1e-10, 1e-5), (0, 1e-10), for a heaviest weight of 1) written
 * to out heaviest first (ties: lower index); returns how many. For walking
 * tokens best-first (greedy under a constraint) without sorting them all. */
#define TL_SAMPLE_N_BANDS 4
TL_API size_t tl_sample_band(const double *w, int32_t n, int band, int32_t *out);
/* log(sum(exp(x))) over x[0..n) / over logits[ids[0..n)], in double with the
 * maximum taken out first (the non-finite maximum when nothing is finite).
 * log_softmax(x)[i] = x[i] - tl_logsumexp_f(x, n). */
TL_API double tl_logsumexp_f(const float *x, size_t n);
TL_API double tl_logsumexp_ids(const float *logits, const int32_t *ids, size_t n);
/* Index of the largest x[0..n) (ties: the lowest index); 0 when n == 0. */
TL_API int32_t tl_argmax_f(const float *x, int32_t n);

/* ---- UTF-8 -------------------------------------------------------------------
 * The one decoder: GGUF string validation, JSON escaping, regex-constrained
 * generation, free-text sanitising, the Aeon sampler and the tokenizers decode
 * through it. Strict mode is RFC 3629 (no overlongs, no surrogates, nothing
 * above U+10FFFF; the second byte's range is checked as soon as it is present,
 * so a cut-off prefix counts as cut only when it can still become valid).
 * TL_UTF8_LENIENT is llama.cpp's tokenizer decoding (any lead 0xC0..0xF7 with
 * continuation bytes; overlongs and surrogates accepted). */
enum { TL_UTF8_STRICT = 0, TL_UTF8_LENIENT = 1 };
#define TL_UTF8_CUT (-1) /* s[0..n) is a proper prefix of a valid character */
/* One character from s[0..n) (n >= 1): its length 1..4 (code point in *cp, cp
 * may be NULL), 0 when s does not start a valid character, TL_UTF8_CUT. */
TL_API int tl_utf8_decode(const void *s, size_t n, uint32_t *cp, int mode);
/* Strict check of a buffer: 0 valid, 1 valid but ending inside a character
 * (a token may carry part of one), -1 invalid; *bad_at (may be NULL): offset of
 * the first byte not part of a complete valid character (n if none). */
TL_API int tl_utf8_check(const void *s, size_t n, size_t *bad_at);
/* cp as 1..4 bytes into out (room for 4); surrogates are encoded like any value. */
TL_API size_t tl_utf8_encode(uint32_t cp, char *out);


/* ---- JSON reals --------------------------------------------------------------
 * typellm prints each real in the shortest form that reads back to the same
 * double (0.3, not 0.29999999999999999; 444444444444.0 exactly), kept
 * recognisable as a real ("1.0", never "1"). */
/* The text for finite v into buf (cap >= 32); returns its length (0: no room). */
TL_API size_t tl_json_real_text(double v, char *buf, size_t cap);
/* A copy of JSON text with every real number token (outside strings) in that
 * form, e.g. the output of a JSON library printing 17 digits; caller
 * tl_free()s; NULL on allocation failure. */
TL_API char *tl_json_shorten_reals(const char *json);

#ifdef __cplusplus
}
#endif
#endif
