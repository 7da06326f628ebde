/* matmul.c: tl_matmul, the driver: picks the kernel family for the weight
 * type and the ISA, quantizes the activations once per call (for integer
 * kernels), and splits the output rows across the pool's threads. Every
 * output element is computed by one kernel call in an order fixed by the
 * ISA and the row alone (never by n_tok, tiling or thread count). */
#include <stdlib.h>

#include "kernels/kernels_internal.h"

/* Rows per pool chunk: a multiple of every kernel's row tile, big enough that
 * the per-chunk unpack buffers are amortized. */
#define ROW_GRAIN 16

typedef struct {
    const tl_matrix *W;
    const float *X;
    int64_t n_tok;
    float *Y;
    tl_act *act;
    tl_isa isa;
} matmul_job;

static void act_rows(void *v, int64_t t0, int64_t t1, int thread) {
    matmul_job *j = v;
    tl_act_quantize_rows(j->act, j->X, t0, t1);
}

static void float_rows(void *v, int64_t o0, int64_t o1, int thread) {
    matmul_job *j = v;
    switch (j->isa) {
    case TL_ISA_AVX512: tl_rows_float_avx512(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    case TL_ISA_AVX2: tl_rows_float_avx2(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    default: tl_rows_float_scalar(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    }
}

static void quant_rows(void *v, int64_t o0, int64_t o1, int thread) {
    matmul_job *j = v;
    switch (j->isa) {
    case TL_ISA_AVX512: tl_rows_quant_avx512(j->W, o0, o1, j->act, j->Y); break;
    case TL_ISA_AVX2: tl_rows_quant_avx2(j->W, o0, o1, j->act, j->Y); break;
    default: tl_rows_quant_scalar(j->W, o0, o1, j->act, j->Y); break;
    }
}

void tl_matmul(tl_pool *p, const tl_matrix *W, const float *X, int64_t n_tok, float *Y) {
    if (n_tok <= 0 || W->n_out <= 0) return;
    matmul_job job = {W, X, n_tok, Y, NULL, tl_kernels_isa_id()};
    if (W->type == TL_TYPE_F32 || W->type == TL_TYPE_F16 || W->type == TL_TYPE_BF16) {
        tl_pool_run(p, W->n_out, ROW_GRAIN, float_rows, &job);
        return;
    }
    if (!tl_kernels_supports(W->type) || W->n_in % QK32) return;
    /* one allocation for the quantized activations: codes, block scales, block sums */
    int64_t nb = W->n_in / QK32;
    size_t n_blocks = (size_t)(n_tok * nb);
    size_t bytes = n_blocks * (32 + 4 + 4) + 64;
    uint8_t *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf) return;
    tl_act act = {n_tok, W->n_in, nb, NULL, NULL, NULL};
    act.q = (int8_t *)buf;                               /* 32 B per block */
    act.d = (float *)(buf + n_blocks * 32);              /* 4 B per block */
    act.dsum = (float *)(buf + n_blocks * 36);           /* 4 B per block */
    job.act = &act;
    tl_pool_run(p, n_tok, 4, act_rows, &job);
    tl_pool_run(p, W->n_out, ROW_GRAIN, quant_rows, &job);
    free(buf);
}
