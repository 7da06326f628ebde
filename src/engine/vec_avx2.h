/* vec_avx2.h: the AVX2 + FMA helpers the engine's non-matmul steps share
 * (attention, SwiGLU): an 8-lane exp and fixed-order horizontal reductions.
 * Each is a fixed sequence of IEEE operations, so a value depends only on
 * its inputs: never on which token or batch it belongs to. Only for code
 * that runs where the kernels chose a path with AVX2 and FMA
 * (tl_engine_simd() below). */
#ifndef TL_ENGINE_VEC_AVX2_H
#define TL_ENGINE_VEC_AVX2_H

#include <stdbool.h>
#include <string.h>

#include "kernels/kernels.h"

/* True when the kernels run a path that has AVX2 and FMA (every path but
 * "scalar"); the engine's steps then use these helpers too, so TL_ISA=scalar
 * keeps the whole pass portable. */
static inline bool tl_engine_simd(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    return strcmp(tl_kernels_isa(), "scalar") != 0;
#else
    return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TL_ENGINE_AVX2 1
#include <immintrin.h>

#define TL_AVX2 __attribute__((target("avx2,fma")))
#define TL_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

/* e^x lane-wise (Cephes' single-precision scheme: x = n ln2 + r, |r| <= ln2/2,
 * a degree-6 polynomial in r, times 2^n), relative error about 2e-7. Lanes
 * below ln(FLT_MIN) (-inf included) give exactly 0; above 88 saturate at e^88.
 * NaN stays NaN. */
TL_AVX2_INLINE __m256 tl_exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.0f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    y = _mm256_andnot_ps(under, y);
    return _mm256_blendv_ps(y, x, nan);
}

/* Sum of the 8 lanes in a fixed order. */
TL_AVX2_INLINE float tl_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TL_AVX2_INLINE float tl_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

#endif
