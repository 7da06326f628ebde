/* quant.c: the scalar codecs of every weight format the engine reads:
 * tl_dequant_row (exact: the stored codes times the stored scales, in the same
 * float operations ggml uses, so results match other GGUF readers bit for bit)
 * and tl_quantize_row (used by `typellm quantize`; chooses scales by a small
 * least-squares search, which is what makes K-quants worth their bits). */
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels_internal.h"

/* ---- type table ---------------------------------------------------------- */

int64_t tl_kernels_block_elems(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_F32: case TL_TYPE_F16: case TL_TYPE_BF16: return 1;
    case TL_TYPE_Q4_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: case TL_TYPE_Q8_0:
    case TL_TYPE_MXFP4:
        return QK32;
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: case TL_TYPE_Q6_K: return QKK;
    default: return 0;
    }
}

size_t tl_kernels_block_bytes(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_F32: return 4;
    case TL_TYPE_F16: case TL_TYPE_BF16: return 2;
    case TL_TYPE_Q4_0: return sizeof(blk_q4_0);
    case TL_TYPE_Q4_1: return sizeof(blk_q4_1);
    case TL_TYPE_Q5_0: return sizeof(blk_q5_0);
    case TL_TYPE_Q5_1: return sizeof(blk_q5_1);
    case TL_TYPE_Q8_0: return sizeof(blk_q8_0);
    case TL_TYPE_MXFP4: return sizeof(blk_mxfp4);
    case TL_TYPE_Q4_K: return sizeof(blk_q4_k);
    case TL_TYPE_Q5_K: return sizeof(blk_q5_k);
    case TL_TYPE_Q6_K: return sizeof(blk_q6_k);
    default: return 0;
    }
}

int tl_kernels_supports(tl_ggml_type t) { return tl_kernels_block_elems(t) != 0; }

/* ---- dequantization ------------------------------------------------------ */

static void dequant_q4_0(const blk_q4_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK32) {
        float d = tl_half_to_f32(b[i].d);
        for (int j = 0; j < QK32 / 2; j++) {
            y[j] = (float)((b[i].qs[j] & 0xF) - 8) * d;
            y[j + 16] = (float)((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

static void dequant_q4_1(const blk_q4_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK32) {
        float d = tl_half_to_f32(b[i].d), m = tl_half_to_f32(b[i].m);
        for (int j = 0; j < QK32 / 2; j++) {
            y[j] = (float)(b[i].qs[j] & 0xF) * d + m;
            y[j + 16] = (float)(b[i].qs[j] >> 4) * d + m;
        }
    }
}

static uint32_t load_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void dequant_q5_0(const blk_q5_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK32) {
        float d = tl_half_to_f32(b[i].d);
        uint32_t qh = load_u32le(b[i].qh); /* bit j: 5th bit of element j */
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = (b[i].qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
            int hi = (b[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)(lo - 16) * d;
            y[j + 16] = (float)(hi - 16) * d;
        }
    }
}

static void dequant_q5_1(const blk_q5_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK32) {
        float d = tl_half_to_f32(b[i].d), m = tl_half_to_f32(b[i].m);
        uint32_t qh = load_u32le(b[i].qh);
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = (b[i].qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
            int hi = (b[i].qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)lo * d + m;
            y[j + 16] = (float)hi * d + m;
        }
    }
}

static void dequant_q8_0(const blk_q8_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK32) {
        float d = tl_half_to_f32(b[i].d);
        for (int j = 0; j < QK32; j++) y[j] = (float)b[i].qs[j] * d;
    }
}

static void dequant_q4_k(const blk_q4_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        float d = tl_half_to_f32(b[i].d), dmin = tl_half_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int c = 0; c < 4; c++, q += 32, y += 64) { /* 64 elements = 2 sub-blocks */
            uint8_t sc, mn;
            tl_k4_scale_min(2 * c, b[i].scales, &sc, &mn);
            float d1 = d * sc, m1 = dmin * mn;
            tl_k4_scale_min(2 * c + 1, b[i].scales, &sc, &mn);
            float d2 = d * sc, m2 = dmin * mn;
            for (int l = 0; l < 32; l++) {
                y[l] = d1 * (float)(q[l] & 0xF) - m1;
                y[l + 32] = d2 * (float)(q[l] >> 4) - m2;
            }
        }
    }
}

static void dequant_q5_k(const blk_q5_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        float d = tl_half_to_f32(b[i].d), dmin = tl_half_to_f32(b[i].dmin);
        const uint8_t *ql = b[i].qs, *qh = b[i].qh;
        for (int c = 0; c < 4; c++, ql += 32, y += 64) {
            uint8_t sc, mn;
            tl_k4_scale_min(2 * c, b[i].scales, &sc, &mn);
            float d1 = d * sc, m1 = dmin * mn;
            tl_k4_scale_min(2 * c + 1, b[i].scales, &sc, &mn);
            float d2 = d * sc, m2 = dmin * mn;
            uint8_t u1 = (uint8_t)(1u << (2 * c)), u2 = (uint8_t)(2u << (2 * c));
            for (int l = 0; l < 32; l++) {
                y[l] = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
                y[l + 32] = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            }
        }
    }
}

static void dequant_q6_k(const blk_q6_k *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        float d = tl_half_to_f32(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * (float)sc[is + 0] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

void tl_dequant_row(tl_ggml_type t, const void *src, float *dst, int64_t n) {
    int64_t be = tl_kernels_block_elems(t);
    if (be == 0 || n <= 0 || n % be) return;
    int64_t nb = n / be;
    switch (t) {
    case TL_TYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case TL_TYPE_F16: {
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++) {
            tl_half h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = tl_half_to_f32(h);
        }
        break;
    }
    case TL_TYPE_BF16: {
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = tl_bf16_to_f32(h);
        }
        break;
    }
    case TL_TYPE_Q4_0: dequant_q4_0(src, dst, nb); break;
    case TL_TYPE_Q4_1: dequant_q4_1(src, dst, nb); break;
    case TL_TYPE_Q5_0: dequant_q5_0(src, dst, nb); break;
    case TL_TYPE_Q5_1: dequant_q5_1(src, dst, nb); break;
    case TL_TYPE_Q8_0: dequant_q8_0(src, dst, nb); break;
    case TL_TYPE_Q4_K: dequant_q4_k(src, dst, nb); break;
    case TL_TYPE_Q5_K: dequant_q5_k(src, dst, nb); break;
    case TL_TYPE_Q6_K: dequant_q6_k(src, dst, nb); break;
    case TL_TYPE_MXFP4: tl_dequant_mxfp4(src, dst, nb); break;
    default: break;
    }
}

/* ---- quantization: 32-blocks --------------------------------------------- */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
/* Round half away from zero (as ggml's reference quantizers do), inline;
 * values beyond +-1e9 (a degenerate scale) saturate, NaN gives -1e9. */
static inline int round_int(float v) {
    if (!(v > -1e9f && v < 1e9f)) return v >= 1e9f ? 1000000000 : -1000000000;
    return (int)(v >= 0 ? v + 0.5f : v - 0.5f);
}
/* 1/d, or 0 when d is 0 or so small that 1/d overflows (codes then all 0). */
static float safe_inv(float d) {
    float id = d != 0 ? 1.0f / d : 0;
    return isfinite(id) ? id : 0;
}

/* The element of largest magnitude, keeping its sign (symmetric formats put
 * the extreme code on it so it is represented exactly). */
static float signed_absmax(const float *x, int n) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    }
    return max;
}

static void quant_q4_0(const float *x, blk_q4_0 *b, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        float max = signed_absmax(x, QK32);
        float d = max / -8, id = safe_inv(d);
        b[i].d = tl_f32_to_half(d);
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = clampi((int)(x[j] * id + 8.5f), 0, 15);
            int hi = clampi((int)(x[j + 16] * id + 8.5f), 0, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

static void minmax(const float *x, int n, float *mn, float *mx) {
    *mn = *mx = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < *mn) *mn = x[j];
        if (x[j] > *mx) *mx = x[j];
    }
}

static void quant_q4_1(const float *x, blk_q4_1 *b, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        float mn, mx;
        minmax(x, QK32, &mn, &mx);
        float d = (mx - mn) / 15, id = safe_inv(d);
        b[i].d = tl_f32_to_half(d);
        b[i].m = tl_f32_to_half(mn);
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = clampi((int)((x[j] - mn) * id + 0.5f), 0, 15);
            int hi = clampi((int)((x[j + 16] - mn) * id + 0.5f), 0, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

static void store_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static void quant_q5_0(const float *x, blk_q5_0 *b, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        float max = signed_absmax(x, QK32);
        float d = max / -16, id = safe_inv(d);
        b[i].d = tl_f32_to_half(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = clampi((int)(x[j] * id + 16.5f), 0, 31);
            int hi = clampi((int)(x[j + 16] * id + 16.5f), 0, 31);
            b[i].qs[j] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
            qh |= (uint32_t)(lo >> 4) << j | (uint32_t)(hi >> 4) << (j + 16);
        }
        store_u32le(b[i].qh, qh);
    }
}

static void quant_q5_1(const float *x, blk_q5_1 *b, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        float mn, mx;
        minmax(x, QK32, &mn, &mx);
        float d = (mx - mn) / 31, id = safe_inv(d);
        b[i].d = tl_f32_to_half(d);
        b[i].m = tl_f32_to_half(mn);
        uint32_t qh = 0;
        for (int j = 0; j < QK32 / 2; j++) {
            int lo = clampi((int)((x[j] - mn) * id + 0.5f), 0, 31);
            int hi = clampi((int)((x[j + 16] - mn) * id + 0.5f), 0, 31);
            b[i].qs[j] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
            qh |= (uint32_t)(lo >> 4) << j | (uint32_t)(hi >> 4) << (j + 16);
        }
        store_u32le(b[i].qh, qh);
    }
}

static void quant_q8_0(const float *x, blk_q8_0 *b, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK32) {
        float amax = 0;
        for (int j = 0; j < QK32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127, id = safe_inv(d);
        b[i].d = tl_f32_to_half(d);
        for (int j = 0; j < QK32; j++) b[i].qs[j] = (int8_t)round_int(x[j] * id);
    }
}

/* ---- quantization: K-quants ---------------------------------------------- */

/* Fits x[0..n) ~ scale*q - offset with q in [0, nmax] (offset >= 0, the
 * format's "min"), minimizing the squared error: starts from the min/max
 * fit, then tries a few scales around it and refits scale and offset by
 * least squares for each code assignment. Codes go to L. */
static float fit_scale_min(const float *x, int n, int nmax, uint8_t *L, float *offset) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < n; j++) { if (x[j] < mn) mn = x[j]; if (x[j] > mx) mx = x[j]; }
    if (mn > 0) mn = 0; /* the format subtracts a non-negative offset */
    if (mx == mn) {
        for (int j = 0; j < n; j++) L[j] = 0;
        *offset = -mn;
        return 0;
    }
    float best_scale = (mx - mn) / nmax, best_min = mn, best_err = INFINITY;
    uint8_t trial[QK32];
    for (int step = -4; step <= 8; step++) {
        float iscale = ((float)nmax + 0.1f * (float)step) / (mx - mn);
        /* codes for this trial scale */
        for (int j = 0; j < n; j++) trial[j] = (uint8_t)clampi(round_int(iscale * (x[j] - mn)), 0, nmax);
        /* least squares for x ~ s*q + m over these codes */
        double sq = 0, sqq = 0, sx = 0, sqx = 0;
        for (int j = 0; j < n; j++) { sq += trial[j]; sqq += (double)trial[j] * trial[j]; sx += x[j]; sqx += (double)trial[j] * x[j]; }
        double det = n * sqq - sq * sq;
        float s, m;
        if (det > 0) {
            s = (float)((n * sqx - sq * sx) / det);
            m = (float)((sqq * sx - sq * sqx) / det);
        } else {
            s = 1.0f / iscale;
            m = mn;
        }
        if (m > 0) { /* offset must be non-negative: refit the scale alone */
            m = 0;
            s = sqq > 0 ? (float)(sqx / sqq) : 0;
        }
        if (s <= 0) continue;
        float err = 0;
        for (int j = 0; j < n; j++) { float e = s * trial[j] + m - x[j]; err += e * e; }
        if (err < best_err) { best_err = err; best_scale = s; best_min = m; memcpy(L, trial, (size_t)n); }
    }
    if (best_err == INFINITY) {
        for (int j = 0; j < n; j++) L[j] = (uint8_t)clampi(round_int((x[j] - mn) / best_scale), 0, nmax);
    }
    *offset = -best_min;
    return best_scale;
}

/* Shared by Q4_K (nmax 15) and Q5_K (nmax 31): 8 sub-blocks of 32, each with a
 * 6-bit scale and min relative to the super-block's d and dmin. Writes d, dmin,
 * the packed scales and the final codes (0..nmax) to L[256]. */
static void quant_k_scales(const float *x, int nmax, tl_half *d_out, tl_half *dmin_out,
                           uint8_t *scales, uint8_t *L) {
    float sub_scale[8], sub_min[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        sub_scale[j] = fit_scale_min(x + 32 * j, 32, nmax, L + 32 * j, &sub_min[j]);
        if (sub_scale[j] > max_scale) max_scale = sub_scale[j];
        if (sub_min[j] > max_min) max_min = sub_min[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0;
    float inv_min = max_min > 0 ? 63.f / max_min : 0;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        ls[j] = (uint8_t)clampi(round_int(inv_scale * sub_scale[j]), 0, 63);
        lm[j] = (uint8_t)clampi(round_int(inv_min * sub_min[j]), 0, 63);
    }
    memset(scales, 0, K_SCALE_BYTES);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = (uint8_t)((ls[j] & 0xF) | (lm[j] & 0xF) << 4);
            scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
    *d_out = tl_f32_to_half(max_scale / 63.f);
    *dmin_out = tl_f32_to_half(max_min / 63.f);
    /* Re-derive the codes against the scales as stored (rounded to 6 bits and fp16). */
    float d = tl_half_to_f32(*d_out), dmin = tl_half_to_f32(*dmin_out);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, mn;
        tl_k4_scale_min(j, scales, &sc, &mn);
        float s = d * sc, m = dmin * mn;
        for (int l = 0; l < 32; l++) {
            L[32 * j + l] = s != 0 ? (uint8_t)clampi(round_int((x[32 * j + l] + m) / s), 0, nmax) : 0;
        }
    }
}

static void quant_q4_k(const float *x, blk_q4_k *b, int64_t nb) {
    uint8_t L[QKK];
    for (int64_t i = 0; i < nb; i++, x += QKK) {
        quant_k_scales(x, 15, &b[i].d, &b[i].dmin, b[i].scales, L);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l++) b[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
        }
    }
}

static void quant_q5_k(const float *x, blk_q5_k *b, int64_t nb) {
    uint8_t L[QKK];
    for (int64_t i = 0; i < nb; i++, x += QKK) {
        quant_k_scales(x, 31, &b[i].d, &b[i].dmin, b[i].scales, L);
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
                b[i].qs[32 * c + l] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
                b[i].qh[l] |= (uint8_t)((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
            }
        }
    }
}

/* Symmetric fit x ~ s*q with q in [-nmax, nmax-1]: tries scales around
 * absmax/nmax and keeps the least-squares best. Codes (signed) go to L. */
static float fit_scale_sym(const float *x, int n, int nmax, int8_t *L) {
    float max = signed_absmax(x, n);
    if (max == 0) { memset(L, 0, (size_t)n); return 0; }
    float best_scale = 0, best_err = INFINITY;
    int8_t trial[16];
    for (int step = -6; step <= 6; step++) {
        float iscale = -((float)nmax + 0.1f * (float)step) / max;
        double sqx = 0, sqq = 0;
        for (int j = 0; j < n; j++) {
            trial[j] = (int8_t)clampi(round_int(iscale * x[j]), -nmax, nmax - 1);
            sqx += (double)trial[j] * x[j];
            sqq += (double)trial[j] * trial[j];
        }
        if (sqq <= 0) continue;
        float s = (float)(sqx / sqq), err = 0;
        for (int j = 0; j < n; j++) { float e = s * trial[j] - x[j]; err += e * e; }
        if (err < best_err) { best_err = err; best_scale = s; memcpy(L, trial, (size_t)n); }
    }
    return best_scale;
}

static void quant_q6_k(const float *x, blk_q6_k *b, int64_t nb) {
    int8_t L[QKK];
    uint8_t U[QKK];
    for (int64_t i = 0; i < nb; i++, x += QKK) {
        float sub[16], max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            sub[j] = fit_scale_sym(x + 16 * j, 16, 32, L + 16 * j);
            if (fabsf(sub[j]) > amax) { amax = fabsf(sub[j]); max_scale = sub[j]; }
        }
        if (amax == 0) {
            memset(&b[i], 0, sizeof b[i]);
            /* codes 32 = value 0; d = 0 already makes every value 0 */
            continue;
        }
        float iscale = -128.f / max_scale;
        b[i].d = tl_f32_to_half(1.0f / iscale);
        float d = tl_half_to_f32(b[i].d);
        for (int j = 0; j < 16; j++) {
            int s = clampi(round_int(iscale * sub[j]), -128, 127);
            b[i].scales[j] = (int8_t)s;
            float ds = d * (float)s;
            for (int l = 0; l < 16; l++) {
                int q = ds != 0 ? clampi(round_int(x[16 * j + l] / ds), -32, 31) : 0;
                U[16 * j + l] = (uint8_t)(q + 32);
            }
        }
        for (int h = 0; h < 2; h++) {
            uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
            const uint8_t *u = U + 128 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((u[l] & 0xF) | (u[l + 64] & 0xF) << 4);
                ql[l + 32] = (uint8_t)((u[l + 32] & 0xF) | (u[l + 96] & 0xF) << 4);
                qh[l] = (uint8_t)((u[l] >> 4) | (u[l + 32] >> 4) << 2 | (u[l + 64] >> 4) << 4 | (u[l + 96] >> 4) << 6);
            }
        }
    }
}

size_t tl_quantize_row(tl_ggml_type t, const float *src, void *dst, int64_t n) {
    int64_t be = tl_kernels_block_elems(t);
    if (be == 0 || n <= 0 || n % be) return 0;
    int64_t nb = n / be;
    uint8_t *out = dst;
    switch (t) {
    case TL_TYPE_F32: memcpy(dst, src, (size_t)n * 4); break;
    case TL_TYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            tl_half h = tl_f32_to_half(src[i]);
            memcpy(out + 2 * i, &h, 2);
        }
        break;
    case TL_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = tl_f32_to_bf16(src[i]);
            memcpy(out + 2 * i, &h, 2);
        }
        break;
    case TL_TYPE_Q4_0: quant_q4_0(src, dst, nb); break;
    case TL_TYPE_Q4_1: quant_q4_1(src, dst, nb); break;
    case TL_TYPE_Q5_0: quant_q5_0(src, dst, nb); break;
    case TL_TYPE_Q5_1: quant_q5_1(src, dst, nb); break;
    case TL_TYPE_Q8_0: quant_q8_0(src, dst, nb); break;
    case TL_TYPE_Q4_K: quant_q4_k(src, dst, nb); break;
    case TL_TYPE_Q5_K: quant_q5_k(src, dst, nb); break;
    case TL_TYPE_Q6_K: quant_q6_k(src, dst, nb); break;
    case TL_TYPE_MXFP4: tl_quant_mxfp4(src, dst, nb); break;
    default: return 0;
    }
    return (size_t)nb * tl_kernels_block_bytes(t);
}
