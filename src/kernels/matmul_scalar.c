/* matmul_scalar.c: the portable matrix product, the reference every SIMD path
 * is tested against and the fallback on CPUs without AVX2.
 *
 * Work is split across threads by output rows (weight rows); each weight row
 * is decoded once into a per-thread float buffer and then dotted with every
 * token row, so the weights are read once per call whatever n_tok is. Each
 * output element is one dot product in a fixed order (8 interleaved partial
 * sums, combined pairwise), so it depends only on its weight row and its X
 * row: the same bits for any thread count, tile or batch size. */
#include <stdlib.h>

#include "kernels/kernels_internal.h"

/* sum_i a[i]*b[i] in a fixed order: lane k sums i = k (mod 8), lanes are
 * combined as ((0+4)+(2+6)) + ((1+5)+(3+7)). */
static float dot_f32(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    }
    for (int k = 0; i < n; i++, k++) acc[k] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

typedef struct {
    const tl_matrix *W;
    const float *X;  /* [n_tok][n_in] */
    int64_t n_tok;
    float *Y;        /* [n_tok][n_out] */
} matmul_job;

static void matmul_rows(void *v, int64_t begin, int64_t end, int thread) {
    const matmul_job *job = v;
    const tl_matrix *W = job->W;
    const int64_t n_in = W->n_in, n_out = W->n_out;
    float *row = NULL;
    if (W->type != TL_TYPE_F32) {
        row = malloc((size_t)n_in * sizeof *row);
        if (!row) return; /* cannot happen for real shapes; output left as is */
    }
    for (int64_t o = begin; o < end; o++) {
        const void *w = (const uint8_t *)W->data + (size_t)o * W->row_bytes;
        const float *wf = w;
        if (row) {
            tl_dequant_row(W->type, w, row, n_in);
            wf = row;
        }
        for (int64_t t = 0; t < job->n_tok; t++) {
            job->Y[t * n_out + o] = dot_f32(wf, job->X + t * n_in, n_in);
        }
    }
    free(row);
}

void tl_matmul_scalar(tl_pool *p, const tl_matrix *W, const float *X, int64_t n_tok, float *Y) {
    matmul_job job = {W, X, n_tok, Y};
    tl_pool_run(p, W->n_out, 16, matmul_rows, &job);
}
