/* emulate_avx512.h: the AVX-512 intrinsics on SIMDe (Debian's libsimde-dev),
 * for the test build (TL_EMULATE_AVX512) that runs the AVX-512 kernels on
 * machines without AVX-512. Never part of the library itself. */
#ifndef TL_EMULATE_AVX512_H
#define TL_EMULATE_AVX512_H
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <simde/x86/fma.h>

/* macros, not typedefs or functions: GCC's <immintrin.h> (which SIMDe includes
 * for its AVX2 parts) declares these names for the real instructions */
#define __mmask8 simde__mmask8
#define __mmask16 simde__mmask16
#define __mmask32 simde__mmask32
#define __mmask64 simde__mmask64

/* What this SIMDe lacks, lane by lane through arrays (slow, plainly right). */
#include <stdint.h>
#include <string.h>
#define TL_EMU static inline __attribute__((unused))
#define TL_EMU_I32(v, a) int32_t a[16]; simde_mm512_storeu_si512((void *)a, v)
TL_EMU float tl_emu_cvtsh_ss(unsigned short h) {
    return simde_mm_cvtss_f32(simde_mm_cvtph_ps(simde_mm_cvtsi32_si128(h)));
}
TL_EMU __m512 tl_emu_mm512_cvtph_ps(__m256i h) {
    return simde_mm512_insertf32x8(simde_mm512_castps256_ps512(simde_mm256_cvtph_ps(simde_mm256_castsi256_si128(h))),
                                   simde_mm256_cvtph_ps(simde_mm256_extracti128_si256(h, 1)), 1);
}
TL_EMU __m512 tl_emu_mm512_cvtepi32_ps(__m512i v) {
    TL_EMU_I32(v, a);
    float f[16];
    for (int i = 0; i < 16; i++) f[i] = (float)a[i];
    return simde_mm512_loadu_ps(f);
}
TL_EMU __m256i tl_emu_mm512_cvtepi32_epi16(__m512i v) {
    TL_EMU_I32(v, a);
    int16_t o[16];
    for (int i = 0; i < 16; i++) o[i] = (int16_t)a[i];
    return simde_mm256_loadu_si256((const void *)o);
}
TL_EMU __m512i tl_emu_mm512_cvtepi8_epi32(__m128i v) {
    int8_t b[16]; int32_t o[16];
    simde_mm_storeu_si128((void *)b, v);
    for (int i = 0; i < 16; i++) o[i] = b[i];
    return simde_mm512_loadu_si512((const void *)o);
}
TL_EMU __m512i tl_emu_mm512_cvtepu8_epi32(__m128i v) {
    uint8_t b[16]; int32_t o[16];
    simde_mm_storeu_si128((void *)b, v);
    for (int i = 0; i < 16; i++) o[i] = b[i];
    return simde_mm512_loadu_si512((const void *)o);
}
TL_EMU __m512i tl_emu_mm512_cvtepu16_epi32(__m256i v) {
    uint16_t b[16]; int32_t o[16];
    simde_mm256_storeu_si256((void *)b, v);
    for (int i = 0; i < 16; i++) o[i] = b[i];
    return simde_mm512_loadu_si512((const void *)o);
}
TL_EMU __m512i tl_emu_mm512_maskz_loadu_epi8(__mmask64 k, const void *p) {
    uint8_t o[64];
    for (int i = 0; i < 64; i++) o[i] = (k >> i) & 1 ? ((const uint8_t *)p)[i] : 0;
    return simde_mm512_loadu_si512((const void *)o);
}
TL_EMU __m256i tl_emu_mm256_maskz_loadu_epi16(__mmask16 k, const void *p) {
    uint16_t o[16];
    for (int i = 0; i < 16; i++) o[i] = (k >> i) & 1 ? ((const uint16_t *)p)[i] : 0;
    return simde_mm256_loadu_si256((const void *)o);
}
TL_EMU __m512 tl_emu_mm512_maskz_loadu_ps(__mmask16 k, const void *p) {
    float o[16];
    for (int i = 0; i < 16; i++) o[i] = (k >> i) & 1 ? ((const float *)p)[i] : 0.0f;
    return simde_mm512_loadu_ps(o);
}
TL_EMU __m128 tl_emu_mm_maskz_loadu_ps(__mmask8 k, const void *p) {
    float o[4];
    for (int i = 0; i < 4; i++) o[i] = (k >> i) & 1 ? ((const float *)p)[i] : 0.0f;
    return simde_mm_loadu_ps(o);
}
TL_EMU void tl_emu_mm512_mask_storeu_epi8(void *p, __mmask64 k, __m512i v) {
    uint8_t a[64];
    simde_mm512_storeu_si512((void *)a, v);
    for (int i = 0; i < 64; i++) if ((k >> i) & 1) ((uint8_t *)p)[i] = a[i];
}
TL_EMU void tl_emu_mm512_mask_storeu_ps(void *p, __mmask16 k, __m512 v) {
    float a[16];
    simde_mm512_storeu_ps(a, v);
    for (int i = 0; i < 16; i++) if ((k >> i) & 1) ((float *)p)[i] = a[i];
}
/* the hardware's order: halves added, then quarters, then pairs (as GCC's expansion) */
TL_EMU float tl_emu_mm512_reduce_add_ps(__m512 v) {
    float a[16];
    simde_mm512_storeu_ps(a, v);
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) a[i] = a[i] + a[i + w];
    return a[0];
}
TL_EMU __m512i tl_emu_mm512_mask_i32gather_epi32(__m512i src, __mmask16 k, __m512i idx, const void *base, int scale) {
    TL_EMU_I32(src, s);
    TL_EMU_I32(idx, ix);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1) memcpy(&s[i], (const char *)base + (int64_t)ix[i] * scale, 4);
    return simde_mm512_loadu_si512((const void *)s);
}
#define _cvtsh_ss tl_emu_cvtsh_ss
#define _mm512_cvtph_ps tl_emu_mm512_cvtph_ps
#define _mm512_cvtepi32_ps tl_emu_mm512_cvtepi32_ps
#define _mm512_cvtepi32_epi16 tl_emu_mm512_cvtepi32_epi16
#define _mm512_cvtepi8_epi32 tl_emu_mm512_cvtepi8_epi32
#define _mm512_cvtepu8_epi32 tl_emu_mm512_cvtepu8_epi32
#define _mm512_cvtepu16_epi32 tl_emu_mm512_cvtepu16_epi32
#define _mm512_maskz_loadu_epi8 tl_emu_mm512_maskz_loadu_epi8
#define _mm256_maskz_loadu_epi16 tl_emu_mm256_maskz_loadu_epi16
#define _mm512_maskz_loadu_ps tl_emu_mm512_maskz_loadu_ps
#define _mm_maskz_loadu_ps tl_emu_mm_maskz_loadu_ps
#define _mm512_mask_storeu_epi8 tl_emu_mm512_mask_storeu_epi8
#define _mm512_mask_storeu_ps tl_emu_mm512_mask_storeu_ps
#define _mm512_reduce_add_ps tl_emu_mm512_reduce_add_ps
#define _mm512_mask_i32gather_epi32 tl_emu_mm512_mask_i32gather_epi32
#endif
