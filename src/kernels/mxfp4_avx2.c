/* mxfp4_avx2.c: the AVX2 unpack of MXFP4 rows into the canonical form (same
 * bytes as tl_unpack_mxfp4_scalar): one 32-block per step, the 16 bytes of
 * nibbles split into low (elements 0-15) and high (16-31) halves and mapped
 * through the e2m1 table with one byte shuffle. */
#include <immintrin.h>

#include "kernels/kernels_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))

TARGET void tl_unpack_mxfp4_avx2(const void *src, int64_t n, uint8_t *code, float *ws) {
    const blk_mxfp4 *b = src;
    int8_t tab[16];
    for (int c = 0; c < 16; c++)
        tab[c] = (int8_t)(TL_FP4_X2[c] + TL_MXFP4_OFFSET);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / QK32; i++) {
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
        v = _mm256_and_si256(v, low4);
        _mm256_storeu_si256((__m256i *)(code + 32 * i), _mm256_shuffle_epi8(table, v));
        ws[2 * i] = ws[2 * i + 1] = tl_e8m0_half(b[i].e);
    }
}
