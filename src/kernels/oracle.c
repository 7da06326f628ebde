/* oracle.c: a test instrument for the matrix product (kernels.h,
 * tl_kernels_set_oracle). In oracle mode tl_matmul dequantizes the weights to
 * F32 (exact for every type: the values the file stands for) and multiplies
 * on the float path, so a whole forward becomes the F32 forward of the
 * dequantized weights (the reference a BF16 or quantized model is measured
 * against; on the float kernel of the chosen ISA, the scalar one when forced). With a peer's activation rounding on, each product first rounds X
 * as llama.cpp's CPU kernel for that weight type does (F16, BF16, Q8_0 blocks
 * of 32 with an F16 scale, Q8_K blocks of 256 with an F32 scale), so the same
 * forward estimates the peer's own error on those weights; with typellm's own
 * rounding on (Q8_0 for every integer kernel), the exact arithmetic the
 * integer kernels must reproduce. Not for inference:
 * each call dequantizes the whole matrix. */
#include <math.h>
#include <stdlib.h>

#include "kernels/kernels_internal.h"

static int oracle_mode; /* tl_oracle_mode; set only between kernel calls (tests) */

void tl_kernels_set_oracle(tl_oracle_mode mode) { __atomic_store_n(&oracle_mode, (int)mode, __ATOMIC_RELEASE); }

tl_oracle_mode tl_kernels_oracle(void) { return (tl_oracle_mode)__atomic_load_n(&oracle_mode, __ATOMIC_ACQUIRE); }

/* The activation format typellm's own kernels use for weights of type t:
 * F32 activations for float weights, ggml's Q8_0 rounding (int8 per 32 with
 * a binary16 scale, tl_act) for every integer kernel. */
static tl_ggml_type own_act_type(tl_ggml_type t) {
    return t == TL_TYPE_F32 || t == TL_TYPE_F16 || t == TL_TYPE_BF16 ? TL_TYPE_F32 : TL_TYPE_Q8_0;
}

/* The activation format llama.cpp's CPU kernels pair with weights of type t
 * (its vec_dot_type): F32 for F32, the float type itself for F16/BF16, Q8_K
 * for the K-quants, Q8_0 (or Q8_1, which rounds the same) for the rest. */
static tl_ggml_type peer_act_type(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_F32: case TL_TYPE_F16: case TL_TYPE_BF16: return t;
    case TL_TYPE_Q2_K: case TL_TYPE_Q3_K: case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: case TL_TYPE_Q6_K: return TL_TYPE_Q8_K;
    default: return TL_TYPE_Q8_0;
    }
}

/* x[0..n) rounded as format f stores it, in place. */
static void round_as(tl_ggml_type f, float *x, int64_t n) {
    if (f == TL_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) x[i] = tl_half_to_f32(tl_f32_to_half(x[i]));
    } else if (f == TL_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) x[i] = tl_bf16_to_f32(tl_f32_to_bf16(x[i]));
    } else if (f == TL_TYPE_Q8_0) {
        /* d = amax / 127 stored as F16, q = round(x / d) (half away from zero) */
        for (int64_t b = 0; b + 32 <= n; b += 32) {
            float amax = 0;
            for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b + i]));
            float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f, dh = tl_half_to_f32(tl_f32_to_half(d));
            for (int i = 0; i < 32; i++) x[b + i] = roundf(x[b + i] * id) * dh;
        }
    } else if (f == TL_TYPE_Q8_K) {
        /* the signed value of largest magnitude maps to -127 (iscale = -127 / max),
         * q = nearest(iscale x) clamped to 127, value q / iscale */
        for (int64_t b = 0; b + 256 <= n; b += 256) {
            float amax = 0, max = 0;
            for (int i = 0; i < 256; i++)
                if (fabsf(x[b + i]) > amax) amax = fabsf(x[b + i]), max = x[b + i];
            if (amax == 0) continue;
            float iscale = -127.0f / max, d = 1.0f / iscale;
            for (int i = 0; i < 256; i++) {
                float q = nearbyintf(iscale * x[b + i]);
                x[b + i] = (q > 127 ? 127 : q) * d;
            }
        }
    }
}

void tl_oracle_matmul(const tl_matrix *W, const float *X, int64_t n_tok, float *Y) {
    int64_t n_in = W->n_in, n_out = W->n_out;
    float *w = malloc(sizeof(float) * (size_t)(n_in * n_out)), *x = malloc(sizeof(float) * (size_t)(n_in * n_tok));
    if (!w || !x) {
        free(w);
        free(x);
        return;
    }
    for (int64_t o = 0; o < n_out; o++)
        tl_dequant_row(W->type, (const uint8_t *)W->data + (size_t)o * W->row_bytes, w + o * n_in, n_in);
    for (int64_t i = 0; i < n_in * n_tok; i++) x[i] = X[i];
    tl_oracle_mode mode = tl_kernels_oracle();
    if (mode != TL_ORACLE_EXACT)
        for (int64_t t = 0; t < n_tok; t++)
            round_as(mode == TL_ORACLE_PEER_ACT ? peer_act_type(W->type) : own_act_type(W->type), x + t * n_in, n_in);
    tl_matrix f = {TL_TYPE_F32, n_in, n_out, sizeof(float) * (size_t)n_in, w};
    /* the float path of the chosen ISA (tl_kernels_force_isa("scalar") makes it the scalar one) */
    switch (tl_kernels_isa_id()) {
    case TL_ISA_AMX:
    case TL_ISA_AVX512: tl_rows_float_avx512(&f, 0, n_out, x, n_tok, Y); break;
    case TL_ISA_AVX2: tl_rows_float_avx2(&f, 0, n_out, x, n_tok, Y); break;
    default: tl_rows_float_scalar(&f, 0, n_out, x, n_tok, Y); break;
    }
    free(w);
    free(x);
}
