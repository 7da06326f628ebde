/* mxfp4_avx512.c: the AVX-512 unpack of MXFP4 rows into the canonical form
 * (same bytes as tl_unpack_mxfp4_scalar): two 32-blocks per step, 128-bit
 * lanes [low nibbles of block 0, high of 0, low of 1, high of 1] mapped
 * through the e2m1 table with one byte shuffle. */
#include "kernels/avx512.h"

#include "kernels/kernels_internal.h"

TARGET void tl_unpack_mxfp4_avx512(const void *src, int64_t n, uint8_t *code, float *ws) {
    const blk_mxfp4 *b = src;
    int8_t tab[16];
    for (int c = 0; c < 16; c++)
        tab[c] = (int8_t)(TL_FP4_X2[c] + TL_MXFP4_OFFSET);
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)tab));
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    int64_t nb = n / QK32, i = 0;
    for (; i + 2 <= nb; i += 2) {
        __m128i q0 = _mm_loadu_si128((const __m128i *)b[i].qs), q1 = _mm_loadu_si128((const __m128i *)b[i + 1].qs);
        __m256i v0 = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), _mm_srli_epi16(q0, 4), 1);
        __m256i v1 = _mm256_inserti128_si256(_mm256_castsi128_si256(q1), _mm_srli_epi16(q1, 4), 1);
        __m512i v = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1), low4);
        _mm512_storeu_si512((void *)(code + 32 * i), _mm512_shuffle_epi8(table, v));
        ws[2 * i] = ws[2 * i + 1] = tl_e8m0_half(b[i].e);
        ws[2 * i + 2] = ws[2 * i + 3] = tl_e8m0_half(b[i + 1].e);
    }
    if (i < nb) {
        __m128i q = _mm_loadu_si128((const __m128i *)b[i].qs);
        __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
        v = _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
        _mm256_storeu_si256((__m256i *)(code + 32 * i), _mm256_shuffle_epi8(_mm512_castsi512_si256(table), v));
        ws[2 * i] = ws[2 * i + 1] = tl_e8m0_half(b[i].e);
    }
}
