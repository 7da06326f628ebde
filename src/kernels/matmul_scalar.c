/* matmul_scalar.c: the portable kernels, the reference every SIMD path is
 * tested against and the fallback on CPUs without AVX2. Same algorithm as the
 * SIMD ones (8-bit activations, canonical unpacked weights, exact integer
 * sums per 16 elements), only the float summation order differs. Each weight
 * row is unpacked once and dotted with every token row. */
#include <stdlib.h>

#include "kernels/kernels_internal.h"

/* Weight element i of row w as float (F32/F16/BF16). */
static inline float float_weight(tl_ggml_type t, const uint8_t *w, int64_t i) {
    if (t == TL_TYPE_F32) { float f; memcpy(&f, w + 4 * i, 4); return f; }
    uint16_t h;
    memcpy(&h, w + 2 * i, 2);
    return t == TL_TYPE_F16 ? tl_half_to_f32(h) : tl_bf16_to_f32(h);
}

void tl_rows_float_scalar(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out;
    float *row = malloc((size_t)n_in * sizeof *row);
    if (!row) return;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *w = (const uint8_t *)W->data + (size_t)o * W->row_bytes;
        for (int64_t i = 0; i < n_in; i++) row[i] = float_weight(W->type, w, i);
        for (int64_t t = 0; t < n_tok; t++) {
            /* 8 interleaved partial sums, combined pairwise */
            const float *x = X + t * n_in;
            float acc[8] = {0};
            int64_t i = 0;
            for (; i + 8 <= n_in; i += 8) {
                for (int k = 0; k < 8; k++) acc[k] += row[i + k] * x[i + k];
            }
            for (int k = 0; i < n_in; i++, k++) acc[k] += row[i] * x[i];
            Y[t * n_out + o] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        }
    }
    free(row);
}

void tl_rows_quant_scalar(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out, nb = n_in / QK32;
    tl_unpack_info info = tl_unpack_info_of(W->type);
    uint8_t *code = malloc((size_t)n_in);
    float *ws = malloc((size_t)(2 * nb) * sizeof *ws);
    float *wm = calloc((size_t)nb, sizeof *wm);
    if (code && ws && wm) {
        for (int64_t o = o0; o < o1; o++) {
            tl_unpack_row_scalar(W->type, (const uint8_t *)W->data + (size_t)o * W->row_bytes, n_in, code, ws, wm);
            for (int64_t t = 0; t < A->n_tok; t++) {
                const int8_t *q = A->q + t * n_in;
                const float *d = A->d + t * nb;
                const float *dsum = A->dsum + t * nb;
                float acc = 0, acc_min = 0;
                for (int64_t b = 0; b < nb; b++) {
                    /* one float step per scale: per 16-element half, or per block */
                    int parts = info.scale16 ? 2 : 1, len = QK32 / parts;
                    for (int h = 0; h < parts; h++) {
                        int isum = 0;
                        for (int i = 32 * (int)b + len * h; i < 32 * (int)b + len * (h + 1); i++) {
                            isum += ((int)code[i] - info.offset) * q[i];
                        }
                        acc += (float)isum * ws[2 * b + h] * d[b];
                    }
                    if (info.has_min) acc_min += wm[b] * dsum[b];
                }
                Y[t * n_out + o] = acc + acc_min;
            }
        }
    }
    free(code);
    free(ws);
    free(wm);
}
