/* test_utf8_sample.c: the shared UTF-8 decoder (strict RFC 3629 and
 * llama.cpp-lenient modes, cut-off prefixes), the RNG stream and the token
 * sampler's filters and determinism. */
#include <math.h>
#include <stdint.h>

#include "tl_test.h"
#include "util/rng.h"
#include "util/sample.h"
#include "util/utf8.h"

static int dec(const char *s, size_t n, int mode, uint32_t *cp) { return tl_utf8_decode(s, n, cp, mode); }

static void test_utf8(void) {
    uint32_t cp = 0;
    CHECK(dec("A", 1, TL_UTF8_STRICT, &cp) == 1 && cp == 'A');
    CHECK(dec("\xC3\xA9", 2, TL_UTF8_STRICT, &cp) == 2 && cp == 0xE9);
    CHECK(dec("\xE2\x82\xAC", 3, TL_UTF8_STRICT, &cp) == 3 && cp == 0x20AC);
    CHECK(dec("\xF0\x9F\x98\x80", 4, TL_UTF8_STRICT, &cp) == 4 && cp == 0x1F600);
    /* cut off: a proper prefix of a valid character */
    CHECK(dec("\xF0\x9F\x98", 3, TL_UTF8_STRICT, &cp) == TL_UTF8_CUT);
    CHECK(dec("\xE2", 1, TL_UTF8_STRICT, &cp) == TL_UTF8_CUT);
    /* a prefix that can never be valid is invalid, not cut */
    CHECK(dec("\xE0\x80", 2, TL_UTF8_STRICT, &cp) == 0);  /* overlong */
    CHECK(dec("\xED\xA0", 2, TL_UTF8_STRICT, &cp) == 0);  /* surrogate */
    CHECK(dec("\xF4\x90", 2, TL_UTF8_STRICT, &cp) == 0);  /* above U+10FFFF */
    CHECK(dec("\xC0\x80", 2, TL_UTF8_STRICT, &cp) == 0);
    CHECK(dec("\x80", 1, TL_UTF8_STRICT, &cp) == 0);
    CHECK(dec("\xF8\x88\x80\x80", 4, TL_UTF8_STRICT, &cp) == 0);
    /* lenient (tokenizers): overlongs and surrogates decode */
    CHECK(dec("\xC0\x80", 2, TL_UTF8_LENIENT, &cp) == 2 && cp == 0);
    CHECK(dec("\xED\xA0\x80", 3, TL_UTF8_LENIENT, &cp) == 3 && cp == 0xD800);
    CHECK(dec("\xF7\xBF\xBF\xBF", 4, TL_UTF8_LENIENT, &cp) == 0); /* > U+10FFFF */
    CHECK(dec("\x80", 1, TL_UTF8_LENIENT, &cp) == 0);

    size_t bad = 99;
    CHECK(tl_utf8_check("ok \xC3\xA9", 5, &bad) == 0 && bad == 5);
    CHECK(tl_utf8_check("ab\xC3", 3, &bad) == 1 && bad == 2);
    CHECK(tl_utf8_check("ab\xFF" "cd", 5, &bad) == -1 && bad == 2);
    CHECK(tl_utf8_check("", 0, &bad) == 0 && bad == 0);

    char out[4];
    uint32_t samples[] = {0x24, 0xA2, 0x20AC, 0x10348, 0x10FFFF};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        size_t n = tl_utf8_encode(samples[i], out);
        CHECK(dec(out, n, TL_UTF8_STRICT, &cp) == (int)n && cp == samples[i]);
    }
}

static void test_rng(void) {
    /* splitmix64 reference values for seed 0 (Vigna's splitmix64.c) */
    uint64_t s = 0;
    CHECK(tl_rng_next(&s) == 0xE220A8397B1DCDAFull);
    CHECK(tl_rng_next(&s) == 0x6E789E6AA1B965F4ull);
    uint64_t a = 7, b = 7;
    for (int i = 0; i < 1000; i++) {
        double u = tl_rng_uniform(&a), v = tl_rng_uniform_open(&b);
        CHECK(u >= 0 && u < 1 && v > 0 && v < 1);
    }
}

static void test_sample(void) {
    double w[6] = {0.5, 1.0, 0.25, 0.0, 0.125, 1.0};
    int32_t order[6];
    /* no filter: the draw walks indexes in order, u picks by cumulative weight */
    CHECK(tl_sample_weights(w, 6, NULL, 0.0, NULL) == 0);
    CHECK(tl_sample_weights(w, 6, NULL, 0.999999, NULL) == 5);
    CHECK(tl_sample_weights(w, 6, NULL, 0.5 / 2.875 + 1e-9, NULL) == 1);
    /* top_k 2: the two heaviest (ties: lower index first), u splits them */
    tl_sample_filter k2 = {.top_k = 2, .top_p = 1};
    CHECK(tl_sample_weights(w, 6, &k2, 0.0, order) == 1);
    CHECK(tl_sample_weights(w, 6, &k2, 0.75, order) == 5);
    /* top_k 1 is greedy whatever u is */
    tl_sample_filter k1 = {.top_k = 1, .top_p = 1};
    for (double u = 0; u < 1; u += 0.1)
        CHECK(tl_sample_weights(w, 6, &k1, u, order) == 1);
    /* top_p: 2.0 / 2.875 = 0.696 of the mass in the two heaviest */
    tl_sample_filter p6 = {.top_k = 0, .top_p = 0.6};
    int seen[6] = {0};
    for (double u = 0; u < 1; u += 0.01)
        seen[tl_sample_weights(w, 6, &p6, u, order)]++;
    CHECK(seen[1] > 0 && seen[5] > 0 && !seen[0] && !seen[2] && !seen[3] && !seen[4]);
    /* min_p 0.3: keeps weights >= 0.3 (0, 1, 5) */
    tl_sample_filter m3 = {.top_k = 0, .top_p = 1, .min_p = 0.3};
    memset(seen, 0, sizeof seen);
    for (double u = 0; u < 1; u += 0.01)
        seen[tl_sample_weights(w, 6, &m3, u, order)]++;
    CHECK(seen[0] && seen[1] && seen[5] && !seen[2] && !seen[3] && !seen[4]);
    /* nothing to draw */
    double z[3] = {0, 0, 0};
    CHECK(tl_sample_weights(z, 3, NULL, 0.5, NULL) == -1);
    CHECK(tl_sample_weights(z, 3, &k2, 0.5, order) == -1);
    /* a large vocabulary spread over every band: top_k 3 keeps the three
     * heaviest, found without sorting the tail */
    enum { NV = 5000 };
    static double big[NV];
    static int32_t ord[NV];
    for (int i = 0; i < NV; i++)
        big[i] = exp(-0.01 * (double)((i * 7919) % NV));
    tl_sample_filter k3 = {.top_k = 3, .top_p = 1};
    uint64_t rng = 42;
    for (int t = 0; t < 200; t++) {
        int32_t id = tl_sample_weights(big, NV, &k3, tl_rng_uniform(&rng), ord);
        int rank = (id * 7919) % NV;
        CHECKF(rank < 3, "id %d has rank %d", id, rank);
    }
    /* bands: every positive weight lands in exactly one band, heaviest first */
    size_t total = 0;
    for (int b = 0; b < TL_SAMPLE_N_BANDS; b++) {
        size_t m = tl_sample_band(big, NV, b, ord);
        for (size_t i = 1; i < m; i++)
            CHECK(big[ord[i - 1]] >= big[ord[i]]);
        total += m;
    }
    CHECK(total == NV);
    float lg[4] = {1, 3, 3, 2};
    CHECK(tl_argmax_f(lg, 4) == 1);
}

int main(void) {
    test_utf8();
    test_rng();
    test_sample();
    return TEST_DONE();
}
