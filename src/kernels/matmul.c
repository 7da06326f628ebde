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
/* From this many tokens on, row chunks go to whichever thread is free
 * (tl_pool_run_dynamic): a chunk is then long enough that claiming it costs
 * nothing, and a core slowed by the machine's other work takes fewer. Below
 * it (decode) each thread keeps its fixed slice. */
#define DYNAMIC_MIN_TOK 8

static void run_rows(tl_pool *p, int64_t n_tok, int64_t n, int64_t grain, tl_pool_fn fn, void *arg) {
    if (n_tok >= DYNAMIC_MIN_TOK) tl_pool_run_dynamic(p, n, grain, fn, arg);
    else tl_pool_run(p, n, grain, fn, arg);
}

typedef struct {
    const tl_matrix *W;
    const float *X;
    int64_t n_tok;
    float *Y;
    tl_act *act;
    tl_isa isa;
    uint16_t *xs; /* AMX F16/BF16: X split into bf16 terms (tl_amx_split_rows), else NULL */
} matmul_job;

static void act_rows(void *v, int64_t t0, int64_t t1, int thread) {
    matmul_job *j = v;
    if (j->isa >= TL_ISA_AVX2) tl_act_quantize_rows_avx2(j->act, j->X, t0, t1);
    else tl_act_quantize_rows(j->act, j->X, t0, t1);
}

static void float_rows(void *v, int64_t o0, int64_t o1, int thread) {
    matmul_job *j = v;
    switch (j->isa) {
    case TL_ISA_AMX: tl_rows_float_amx(j->W, o0, o1, j->X, j->xs, j->n_tok, j->Y); break;
    case TL_ISA_AVX512: tl_rows_float_avx512(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    case TL_ISA_AVX2: tl_rows_float_avx2(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    default: tl_rows_float_scalar(j->W, o0, o1, j->X, j->n_tok, j->Y); break;
    }
}

static void quant_rows(void *v, int64_t o0, int64_t o1, int thread) {
    matmul_job *j = v;
    switch (j->isa) {
    case TL_ISA_AMX: tl_rows_quant_amx(j->W, o0, o1, j->act, j->Y); break;
    case TL_ISA_AVX512: tl_rows_quant_vnni16(j->W, o0, o1, j->act, j->Y); break;
    case TL_ISA_AVX2: tl_rows_quant_avx2(j->W, o0, o1, j->act, j->Y); break;
    default: tl_rows_quant_scalar(j->W, o0, o1, j->act, j->Y); break;
    }
}

static int is_float(tl_ggml_type t) { return t == TL_TYPE_F32 || t == TL_TYPE_F16 || t == TL_TYPE_BF16; }

/* Whether the AMX bf16 tiles take W, and so want X split (once per call, for every row chunk). */
static int wants_split(tl_isa isa, const tl_matrix *W) {
    return isa == TL_ISA_AMX && (W->type == TL_TYPE_F16 || W->type == TL_TYPE_BF16);
}

static void split_rows(void *v, int64_t t0, int64_t t1, int thread) {
    matmul_job *j = v;
    tl_amx_split_rows(j->X, j->W->n_in, j->n_tok, t0, t1, j->xs);
}

/* X split for the AMX bf16 tiles into job->xs (NULL when out of memory). */
static uint16_t *split_alloc(tl_pool *p, matmul_job *job) {
    size_t n = 2 * (size_t)job->n_tok * (size_t)tl_amx_row_elems(job->W->n_in);
    job->xs = aligned_alloc(64, (sizeof(uint16_t) * n + 63) / 64 * 64);
    if (job->xs) tl_pool_run(p, job->n_tok, 4, split_rows, job);
    return job->xs;
}

/* Quantized activations of X for matrices of n_in columns: one allocation
 * for the codes, block scales and block sums; NULL when out of memory. */
static uint8_t *act_alloc(tl_act *act, int64_t n_tok, int64_t n_in) {
    int64_t nb = n_in / QK32;
    size_t n_blocks = (size_t)(n_tok * nb);
    size_t bytes = n_blocks * (32 + 4 + 4 + 4 + 8) + 64;
    uint8_t *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf) return NULL;
    *act = (tl_act){n_tok, n_in, nb, NULL, NULL, NULL, NULL, NULL};
    act->q = (int8_t *)buf;                               /* 32 B per block */
    act->d = (float *)(buf + n_blocks * 32);              /* 4 B per block */
    act->dsum = (float *)(buf + n_blocks * 36);           /* 4 B per block */
    act->csum = (int32_t *)(buf + n_blocks * 40);         /* 4 B per block */
    act->hsum = (int32_t *)(buf + n_blocks * 44);         /* 8 B per block */
    return buf;
}

enum { MULTI_MAX = 8 };

typedef struct {
    matmul_job job[MULTI_MAX];
    int n;
    int64_t first[MULTI_MAX + 1]; /* item index of each matrix's first row chunk */
} multi_job;

/* Items are ROW_GRAIN-row chunks of one matrix, numbered matrix after matrix:
 * each is the same chunk tl_matmul would hand one kernel call. */
static void multi_rows(void *v, int64_t i0, int64_t i1, int thread) {
    multi_job *mj = v;
    for (int k = 0; k < mj->n; k++) {
        int64_t a = i0 > mj->first[k] ? i0 : mj->first[k], b = i1 < mj->first[k + 1] ? i1 : mj->first[k + 1];
        if (a >= b) continue;
        int64_t n_out = mj->job[k].W->n_out;
        int64_t o0 = (a - mj->first[k]) * ROW_GRAIN, o1 = (b - mj->first[k]) * ROW_GRAIN;
        if (o1 > n_out) o1 = n_out;
        if (is_float(mj->job[k].W->type)) float_rows(&mj->job[k], o0, o1, thread);
        else quant_rows(&mj->job[k], o0, o1, thread);
    }
}

void tl_matmul_multi(tl_pool *p, const tl_matrix *const *W, int n, const float *X, int64_t n_tok, float *const *Y) {
    if (n_tok <= 0 || n <= 0) return;
    int quant = 0, ok = n <= MULTI_MAX && !tl_kernels_oracle();
    for (int k = 0; k < n && ok; k++) {
        ok = W[k]->n_in == W[0]->n_in && (is_float(W[k]->type) || (tl_kernels_supports(W[k]->type) && W[k]->n_in % QK32 == 0));
        quant |= !is_float(W[k]->type);
    }
    if (!ok) {
        for (int k = 0; k < n; k++) tl_matmul(p, W[k], X, n_tok, Y[k]);
        return;
    }
    multi_job mj = {.n = n};
    tl_act act;
    uint8_t *buf = NULL;
    uint16_t *xs = NULL; /* one split of X for every matrix the bf16 tiles take */
    tl_isa isa = tl_kernels_isa_id();
    if (quant) {
        if (!(buf = act_alloc(&act, n_tok, W[0]->n_in))) return;
    }
    mj.first[0] = 0;
    for (int k = 0; k < n; k++) {
        mj.job[k] = (matmul_job){W[k], X, n_tok, Y[k], quant ? &act : NULL, isa, NULL};
        if (wants_split(isa, W[k])) {
            if (!xs && !(xs = split_alloc(p, &mj.job[k]))) {
                free(buf);
                return;
            }
            mj.job[k].xs = xs;
        }
        mj.first[k + 1] = mj.first[k] + (W[k]->n_out + ROW_GRAIN - 1) / ROW_GRAIN;
    }
    if (quant) tl_pool_run(p, n_tok, 4, act_rows, &mj.job[0]);
    run_rows(p, n_tok, mj.first[n], 1, multi_rows, &mj);
    free(buf);
    free(xs);
}

void tl_matmul(tl_pool *p, const tl_matrix *W, const float *X, int64_t n_tok, float *Y) {
    if (n_tok <= 0 || W->n_out <= 0) return;
    if (tl_kernels_oracle()) {
        tl_oracle_matmul(W, X, n_tok, Y);
        return;
    }
    matmul_job job = {W, X, n_tok, Y, NULL, tl_kernels_isa_id(), NULL};
    if (is_float(W->type)) {
        if (wants_split(job.isa, W) && !split_alloc(p, &job)) return;
        run_rows(p, n_tok, W->n_out, ROW_GRAIN, float_rows, &job);
        free(job.xs);
        return;
    }
    if (!tl_kernels_supports(W->type) || W->n_in % QK32) return;
    tl_act act;
    uint8_t *buf = act_alloc(&act, n_tok, W->n_in);
    if (!buf) return;
    job.act = &act;
    tl_pool_run(p, n_tok, 4, act_rows, &job);
    run_rows(p, n_tok, W->n_out, ROW_GRAIN, quant_rows, &job);
    free(buf);
}
