/* mxfp4.c: the MXFP4 weight format (OCP microscaling, as gpt-oss ships its
 * experts): blocks of 32 e2m1 values sharing one power-of-two scale.
 * Portable dequantization, quantization and the canonical unpack the integer
 * matmul runs on (see kernels_internal.h); the SIMD unpacks in
 * mxfp4_avx2.c / mxfp4_avx512.c must produce the same bytes. */
#include <math.h>

#include "kernels/kernels_internal.h"

/* e2m1 values x 2: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives. */
const int8_t TL_FP4_X2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float tl_e8m0_half(uint8_t e) {
    /* 2^(e-128): below e = 2 the result is subnormal (mantissa bit 21 or 22) */
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return tl_f32_from_bits(bits);
}

void tl_dequant_mxfp4(const void *src, float *dst, int64_t nb) {
    const blk_mxfp4 *b = src;
    for (int64_t i = 0; i < nb; i++, dst += QK32) {
        float d = tl_e8m0_half(b[i].e);
        for (int j = 0; j < QK32 / 2; j++) {
            dst[j] = (float)TL_FP4_X2[b[i].qs[j] & 0xF] * d;
            dst[j + 16] = (float)TL_FP4_X2[b[i].qs[j] >> 4] * d;
        }
    }
}

/* The code whose value is nearest x / d (first of equals, so 0 not -0). */
static uint8_t nearest_code(float x, float d) {
    int best = 0;
    float best_err = fabsf(x);
    for (int c = 1; c < 16; c++) {
        float err = fabsf((float)TL_FP4_X2[c] * d - x);
        if (err < best_err) {
            best_err = err;
            best = c;
        }
    }
    return (uint8_t)best;
}

void tl_quant_mxfp4(const float *src, void *dst, int64_t nb) {
    blk_mxfp4 *b = dst;
    for (int64_t i = 0; i < nb; i++, src += QK32) {
        float amax = 0;
        for (int j = 0; j < QK32; j++)
            amax = fmaxf(amax, fabsf(src[j]));
        /* the largest magnitude lands in [4, 8) x 2^(e-128) x 2 ... i.e. the
         * top code 6 covers amax: e = floor(log2(amax)) - 2 + 127 */
        int e = 0;
        if (amax > 0 && isfinite(amax)) {
            e = (int)floorf(log2f(amax)) - 2 + 127;
            e = e < 0 ? 0 : e > 254 ? 254 : e;
        }
        b[i].e = (uint8_t)e;
        float d = tl_e8m0_half((uint8_t)e);
        for (int j = 0; j < QK32 / 2; j++)
            b[i].qs[j] = (uint8_t)(nearest_code(src[j], d) | nearest_code(src[j + 16], d) << 4);
    }
}

void tl_unpack_mxfp4_scalar(const void *src, int64_t n, uint8_t *code, float *ws) {
    const blk_mxfp4 *b = src;
    for (int64_t i = 0; i < n / QK32; i++) {
        for (int j = 0; j < QK32 / 2; j++) {
            code[32 * i + j] = (uint8_t)(TL_FP4_X2[b[i].qs[j] & 0xF] + TL_MXFP4_OFFSET);
            code[32 * i + j + 16] = (uint8_t)(TL_FP4_X2[b[i].qs[j] >> 4] + TL_MXFP4_OFFSET);
        }
        ws[2 * i] = ws[2 * i + 1] = tl_e8m0_half(b[i].e);
    }
}
