/* unpack.c: the two conversions the integer matmul runs on, in portable C:
 * activations -> 8-bit blocks (tl_act), and any quantized weight row -> the
 * canonical form w = ws * (code - offset) + wm (see kernels_internal.h).
 * Both are exact functions of their input: the SIMD versions must produce
 * the same bytes, and the tests check that they do. */
#include <math.h>

#include "kernels/kernels_internal.h"

tl_unpack_info tl_unpack_info_of(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_Q8_0: return (tl_unpack_info){.offset = 128};
    case TL_TYPE_Q4_0: return (tl_unpack_info){.offset = 8};
    case TL_TYPE_Q5_0: return (tl_unpack_info){.offset = 16};
    case TL_TYPE_Q6_K: return (tl_unpack_info){.offset = 32, .scale16 = 1};
    case TL_TYPE_MXFP4: return (tl_unpack_info){.offset = TL_MXFP4_OFFSET};
    case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: case TL_TYPE_Q4_K: case TL_TYPE_Q5_K:
        return (tl_unpack_info){.has_min = 1};
    default: return (tl_unpack_info){0};
    }
}

/* ---- activations ----------------------------------------------------------- */

void tl_act_quantize_rows(tl_act *a, const float *X, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
        const float *x = X + t * a->n_in;
        int8_t *q = a->q + t * a->n_in;
        for (int64_t b = 0; b < a->nb; b++, x += QK32, q += QK32) {
            float amax = 0;
            for (int i = 0; i < QK32; i++) amax = fmaxf(amax, fabsf(x[i]));
            /* as ggml's q8_0: codes from the exact scale, rounded half away
             * from zero; the block keeps the scale rounded to binary16 */
            float d = amax / 127.f;
            float id = d != 0 ? 1.0f / d : 0;
            int sum = 0, half[2] = {0, 0};
            for (int i = 0; i < QK32; i++) {
                float v = x[i] * id;
                int c = v >= 127.f ? 127 : v <= -127.f ? -127 : (int)roundf(v);
                if (v != v) c = 0; /* NaN input */
                q[i] = (int8_t)c;
                sum += c;
                half[i / 16] += c;
            }
            a->hsum[2 * (t * a->nb + b)] = half[0];
            a->hsum[2 * (t * a->nb + b) + 1] = half[1];
            d = tl_half_to_f32(tl_f32_to_half(d));
            a->d[t * a->nb + b] = d;
            a->dsum[t * a->nb + b] = d * (float)sum;
            a->csum[t * a->nb + b] = sum;
        }
    }
}

/* ---- weights ---------------------------------------------------------------- */

static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 32-block formats: nibbles (low half of the block first), optional 5th bit
 * from qh, scale d and (Q4_1/Q5_1) min m. */
static void unpack_32(const uint8_t *blk, int has_m, int five, uint8_t *code, float *ws, float *wm) {
    tl_half dh, mh = 0;
    memcpy(&dh, blk, 2);
    if (has_m) memcpy(&mh, blk + 2, 2);
    const uint8_t *qh = blk + 2 + 2 * has_m;
    const uint8_t *qs = qh + 4 * five;
    uint32_t hb = five ? load_u32le(qh) : 0;
    for (int j = 0; j < 16; j++) {
        code[j] = (uint8_t)((qs[j] & 0xF) | ((hb >> j) & 1) << 4);
        code[j + 16] = (uint8_t)((qs[j] >> 4) | ((hb >> (j + 16)) & 1) << 4);
    }
    ws[0] = ws[1] = tl_half_to_f32(dh);
    if (has_m) *wm = tl_half_to_f32(mh);
}

void tl_unpack_row_scalar(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm) {
    const uint8_t *s = src;
    switch (t) {
    case TL_TYPE_Q8_0:
        for (int64_t b = 0; b < n / QK32; b++) {
            const blk_q8_0 *blk = (const blk_q8_0 *)(s + b * sizeof(blk_q8_0));
            for (int i = 0; i < QK32; i++) code[32 * b + i] = (uint8_t)(blk->qs[i] + 128);
            ws[2 * b] = ws[2 * b + 1] = tl_half_to_f32(blk->d);
        }
        break;
    case TL_TYPE_Q4_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: {
        int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        int five = t == TL_TYPE_Q5_0 || t == TL_TYPE_Q5_1;
        size_t bb = tl_kernels_block_bytes(t);
        for (int64_t b = 0; b < n / QK32; b++) {
            unpack_32(s + b * bb, has_m, five, code + 32 * b, ws + 2 * b, wm + b);
        }
        break;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        int five = t == TL_TYPE_Q5_K;
        size_t bb = tl_kernels_block_bytes(t);
        for (int64_t sb = 0; sb < n / QKK; sb++) {
            const uint8_t *blk = s + sb * bb;
            tl_half dh, mh;
            memcpy(&dh, blk, 2);
            memcpy(&mh, blk + 2, 2);
            float d = tl_half_to_f32(dh), dmin = tl_half_to_f32(mh);
            const uint8_t *scales = blk + 4, *qh = blk + 16, *qs = blk + 16 + 32 * five;
            uint8_t *c = code + QKK * sb;
            for (int j = 0; j < 8; j++) {
                uint8_t sc, mn;
                tl_k4_scale_min(j, scales, &sc, &mn);
                ws[16 * sb + 2 * j] = ws[16 * sb + 2 * j + 1] = d * (float)sc;
                wm[8 * sb + j] = -(dmin * (float)mn);
                int chunk = j / 2, upper = j & 1;
                for (int l = 0; l < 32; l++) {
                    uint8_t byte = qs[32 * chunk + l];
                    int q = upper ? byte >> 4 : byte & 0xF;
                    if (five) q |= ((qh[l] >> j) & 1) << 4; /* bit 2*chunk+upper == j */
                    c[32 * j + l] = (uint8_t)q;
                }
            }
        }
        break;
    }
    case TL_TYPE_Q6_K:
        for (int64_t sb = 0; sb < n / QKK; sb++) {
            const blk_q6_k *blk = (const blk_q6_k *)(s + sb * sizeof(blk_q6_k));
            float d = tl_half_to_f32(blk->d);
            uint8_t *c = code + QKK * sb;
            for (int j = 0; j < 8; j++) { /* 32-element group j: half h, quarter j%4 */
                int h = j / 4, quarter = j % 4;
                for (int l = 0; l < 32; l++) {
                    uint8_t lowbyte = blk->ql[64 * h + l + 32 * (quarter & 1)];
                    int q = quarter >= 2 ? lowbyte >> 4 : lowbyte & 0xF;
                    q |= ((blk->qh[32 * h + l] >> (2 * quarter)) & 3) << 4;
                    c[32 * j + l] = (uint8_t)q;
                }
            }
            for (int k = 0; k < 16; k++) ws[16 * sb + k] = d * (float)blk->scales[k];
        }
        break;
    case TL_TYPE_MXFP4:
        tl_unpack_mxfp4_scalar(src, n, code, ws);
        break;
    default:
        break;
    }
}
