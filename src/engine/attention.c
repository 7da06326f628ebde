/* attention.c: tl_attention (see attention.h), two implementations:
 *
 *  - portable (TL_ISA=scalar, non-x86): one pool item is one (token, kv
 *    head); the group of query heads sharing that kv head reads each K/V row
 *    once; GCC vector extensions, libm expf.
 *  - AVX2 + FMA (every other path): one pool item is one (tile, kv head), a
 *    tile being up to TILE consecutive tokens of one sequence (a prefill
 *    chunk, or a branch's tail after the shared prefix). The positions are
 *    taken CHUNK at a time (chunks at absolute multiples of CHUNK), with an
 *    online softmax: per chunk, the scores are a blocked product of the
 *    tile's query rows (all tokens x the head group) with each 16-row K
 *    block, read once per tile; each row's running max and sum are updated
 *    (its output rescaled when the max grows), and the weighted sum of V runs
 *    over a group of query rows at a time, each V row read once per group.
 *    So the scores of a tile never outgrow L1/L2, however long the context,
 *    and a tile can be large: the K/V of a long context is read once per 16
 *    tokens. Exp is 8-lane (vec_avx2.h).
 *
 * Both read the cache through kv_k_view / kv_v_view (kv_rows.c): an F32
 * cache in place, an F16 or Q8_0 one as a block of one kv head decoded into
 * the thread's scratch (the AVX2 path decodes the V rows of PV_SUB positions
 * at once, before every row group reads them), so the kernels only ever see
 * floats, and the same decoded floats whoever reads a row.
 *
 * Both keep every value a fixed-order reduction of that token's own inputs:
 * a score is q·k summed over d in order; the portable softmax sums in j
 * order, the AVX2 one lanes by j mod 8 within each chunk, chunk after chunk;
 * an output is sum_j p_j v_j in increasing j. Tiling only decides which of
 * these chains run side by side in registers, never their order (nor the
 * chunks, fixed by position), so results do not depend on the batch, the
 * tile or the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/vec_avx2.h"
#include "util/error.h"

#define TILE 16 /* tokens per tile of the AVX2 path */
#define CHUNK 128 /* positions per online-softmax step of the AVX2 path (a multiple of PV_SUB) */
#define PV_SUB 64  /* positions per pass of the output sums: 64 V rows of a head stay in L1 for every row group */

/* 8-lane float vectors (GCC vector extensions): the same lane-wise
 * operations on every ISA (SSE pairs, AVX2 clone below). No FMA: the clones
 * do not enable it, so a*b+c rounds twice everywhere. */
typedef float v8f __attribute__((vector_size(32), aligned(4))); /* aligned(4): loads need not be */
_Static_assert(TL_KV_BLOCK == 16, "attention scores a block as two 8-lane vectors");
/* Macros, not functions: a 32-byte vector crossing a call between code built
 * with and without AVX changes the ABI (clang refuses it). */
#define LOAD8(p) (*(const v8f *)(p))
#define STORE8(p, v) (*(v8f *)(p) = (v))
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TL_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TL_VECTOR_CLONES
#endif

tl_attn_params tl_attn_default(const tl_model *m, int32_t layer) {
    return (tl_attn_params){.scale = (float)(1.0 / sqrt((double)m->layers[layer].head_dim_k))};
}

void tl_attn_scratch_free(tl_attn_scratch *s) {
    free(s->buf);
    free(s->tiles);
    memset(s, 0, sizeof *s);
}

typedef struct attn_job {
    const tl_model *m;
    const kv_cache *c;
    int32_t layer;
    tl_attn_params p;
    const fwd_token *toks;
    const float *q;
    float *out;
    int64_t out_stride;
    float *scores;        /* per thread: score_stride floats, of which the last
                             dec_floats hold K / V rows decoded from the cache's type */
    size_t score_stride, dec_floats;
    const int32_t *tiles; /* AVX2: tile i is tokens [tiles[i], tiles[i + 1]) */
    int32_t n_tiles;
    int wide;             /* AVX-512 CPU: scores and outputs in 16-lane steps (the same bits) */
} attn_job;

/* y[i] += a * x[i] */
static inline void axpy_f32(float *y, float a, const float *x, int64_t n) {
    int64_t i = 0;
    v8f av = {a, a, a, a, a, a, a, a};
    for (; i + 8 <= n; i += 8)
        STORE8(y + i, LOAD8(y + i) + av * LOAD8(x + i));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* First position a query at pos sees. */
static inline int32_t first_visible(const tl_attn_params *p, int32_t pos) {
    return p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
}

/* One (token, kv head) per item: for each query head h of the group sharing
 * kv head g, softmax over the visible j of the scores, times v_j. Reads only
 * rows on the token's path, written earlier in this pass or by earlier ones. */
TL_VECTOR_CLONES static void attention_items(void *arg, int64_t b, int64_t e, int thread) {
    attn_job *J = arg;
    const tl_model *m = J->m;
    const kv_cache *c = J->c;
    const tl_attn_params *p = &J->p;
    const tl_layer_weights *w = &m->layers[J->layer];
    int64_t dk = w->head_dim_k, dv = w->head_dim_v;
    int32_t group = m->n_head / w->n_head_kv;
    float scale = p->scale, cap = p->softcap;
    float *scores = J->scores + (size_t)thread * J->score_stride;
    float *kbuf = scores + J->score_stride - J->dec_floats, *vbuf = kbuf + kv_k_scratch(dk);
    for (int64_t item = b; item < e; item++) {
        int64_t t = item / w->n_head_kv;
        int32_t g = (int32_t)(item % w->n_head_kv), h0 = g * group;
        const fwd_token *tk = &J->toks[t];
        const float *q = J->q + t * m->n_head * dk + h0 * dk;
        int32_t n_ctx = tk->pos + 1, lo = first_visible(p, tk->pos);
        int32_t jb = lo / TL_KV_BLOCK * TL_KV_BLOCK; /* first block scored */
        for (int32_t j0 = jb; j0 < n_ctx; j0 += TL_KV_BLOCK) {
            const kv_node *nd = tk->seq->path[j0 / TL_KV_BLOCK];
            int32_t rows = n_ctx - j0 < TL_KV_BLOCK ? n_ctx - j0 : TL_KV_BLOCK;
            const float *kt = kv_k_view(c, nd, J->layer, g, kbuf);
            for (int32_t hh = 0; hh < group; hh++) {
                /* rows j0..j0+15 at once: lane r sums q[d] * k_r[d] over d in order */
                const float *qh = q + hh * dk;
                v8f vlo = {0}, vhi = {0};
                for (int64_t d = 0; d < dk; d++) {
                    float qd = qh[d];
                    v8f qv = {qd, qd, qd, qd, qd, qd, qd, qd};
                    vlo += qv * LOAD8(kt + d * TL_KV_BLOCK);
                    vhi += qv * LOAD8(kt + d * TL_KV_BLOCK + 8);
                }
                float *out = scores + (size_t)hh * n_ctx + j0;
                for (int32_t r = 0; r < rows; r++)
                    out[r] = (r < 8 ? vlo[r] : vhi[r - 8]) * scale;
                if (cap > 0.0f)
                    for (int32_t r = 0; r < rows; r++)
                        out[r] = cap * tanhf(out[r] / cap);
            }
        }
        for (int32_t hh = 0; hh < group; hh++) {
            float *s = scores + (size_t)hh * n_ctx, top = -INFINITY;
            float sink = p->sinks ? p->sinks[h0 + hh] : -INFINITY;
            for (int32_t j = lo; j < n_ctx; j++)
                top = s[j] > top ? s[j] : top;
            top = sink > top ? sink : top;
            for (int32_t j = lo; j < n_ctx; j++)
                s[j] = expf(s[j] - top);
            double sum = 0.0;
            for (int32_t j = lo; j < n_ctx; j++)
                sum += s[j];
            if (p->sinks)
                sum += expf(sink - top);
            float inv = (float)(1.0 / sum);
            for (int32_t j = lo; j < n_ctx; j++)
                s[j] *= inv;
            memset(J->out + t * J->out_stride + (h0 + hh) * dv, 0, sizeof(float) * (size_t)dv);
        }
        /* out_h[i] = sum over j in order of s_h[j] * v_j[i], a block of V rows
         * (decoded once) for every query head of the group */
        for (int32_t j0 = jb; j0 < n_ctx; j0 += TL_KV_BLOCK) {
            int32_t rows = n_ctx - j0 < TL_KV_BLOCK ? n_ctx - j0 : TL_KV_BLOCK;
            int64_t vs;
            const float *vb = kv_v_view(c, tk->seq->path[j0 / TL_KV_BLOCK], J->layer, g, vbuf, &vs);
            for (int32_t hh = 0; hh < group; hh++) {
                const float *s = scores + (size_t)hh * n_ctx;
                float *out = J->out + t * J->out_stride + (h0 + hh) * dv;
                for (int32_t r = j0 < lo ? lo - j0 : 0; r < rows; r++)
                    axpy_f32(out, s[j0 + r], vb + r * vs, dv);
            }
        }
    }
}


#ifdef TL_ENGINE_AVX2
/* ---- AVX2 + FMA --------------------------------------------------------- */

/* Loops over a tile's rows and vectors unrolled: their accumulators then
 * stay in registers (at -O2 GCC keeps a loop-indexed array in memory). */
#define UNROLL_ALL _Pragma("GCC unroll 16")

enum { QK_ROWS = 6, PV_ROWS = 3 };

/* The V rows of one kv head over positions [j0, j0 + PV_SUB) (j0 a multiple
 * of PV_SUB): row j at blk[(j - j0) / TL_KV_BLOCK] + (j % TL_KV_BLOCK) * stride,
 * in the cache node (F32) or decoded into the thread's scratch. */
typedef struct v_rows {
    const float *blk[PV_SUB / TL_KV_BLOCK];
    int32_t j0;
    int64_t stride, dv;
} v_rows;

static inline const float *v_row(const v_rows *V, int32_t j) {
    return V->blk[(j - V->j0) / TL_KV_BLOCK] + (j % TL_KV_BLOCK) * V->stride;
}

/* s_a[r] = scale * sum_d q_a[d] * k_r[d] for the 16 rows r of one K block
 * (kt: transposed, kt[d * 16 + r]) and NA query rows. */
TL_AVX2_INLINE void qk_tile(const float *kt, int64_t dk, const float *const *qa, float *const *sa, float scale,
                            const int NA) {
    __m256 acc[QK_ROWS][2];
    UNROLL_ALL for (int a = 0; a < NA; a++)
        acc[a][0] = acc[a][1] = _mm256_setzero_ps();
    for (int64_t d = 0; d < dk; d++) {
        __m256 k0 = _mm256_loadu_ps(kt + d * TL_KV_BLOCK), k1 = _mm256_loadu_ps(kt + d * TL_KV_BLOCK + 8);
        UNROLL_ALL for (int a = 0; a < NA; a++) {
            __m256 qd = _mm256_broadcast_ss(qa[a] + d);
            acc[a][0] = _mm256_fmadd_ps(qd, k0, acc[a][0]);
            acc[a][1] = _mm256_fmadd_ps(qd, k1, acc[a][1]);
        }
    }
    __m256 sc = _mm256_set1_ps(scale);
    UNROLL_ALL for (int a = 0; a < NA; a++) {
        _mm256_storeu_ps(sa[a], _mm256_mul_ps(acc[a][0], sc));
        _mm256_storeu_ps(sa[a] + 8, _mm256_mul_ps(acc[a][1], sc));
    }
}

TL_AVX2 static void qk_rows(const float *kt, int64_t dk, const float *const *qa, float *const *sa, float scale,
                            int na) {
    switch (na) {
    case 1: qk_tile(kt, dk, qa, sa, scale, 1); break;
    case 2: qk_tile(kt, dk, qa, sa, scale, 2); break;
    case 3: qk_tile(kt, dk, qa, sa, scale, 3); break;
    case 4: qk_tile(kt, dk, qa, sa, scale, 4); break;
    case 5: qk_tile(kt, dk, qa, sa, scale, 5); break;
    default: qk_tile(kt, dk, qa, sa, scale, 6); break;
    }
}

/* o_a[i0 + ..8 NV) += sum_{j in [j0, j1)} p_a[j - base] * v_j[i0 + ..] for NA
 * query rows (accumulating in j order from what o_a holds). */
TL_AVX2_INLINE void pv_tile(const v_rows *V, int32_t j0, int32_t j1, const float *const *pa, int32_t base,
                            float *const *oa, int64_t i0, const int NA, const int NV) {
    __m256 acc[PV_ROWS][4];
    UNROLL_ALL for (int a = 0; a < NA; a++)
        UNROLL_ALL for (int v = 0; v < NV; v++)
            acc[a][v] = _mm256_loadu_ps(oa[a] + i0 + 8 * v);
    for (int32_t j = j0; j < j1;) {
        int32_t blk_end = (j / TL_KV_BLOCK + 1) * TL_KV_BLOCK, end = blk_end < j1 ? blk_end : j1;
        const float *vr = v_row(V, j) + i0;
        for (; j < end; j++, vr += V->stride) {
            __m256 p[PV_ROWS];
            UNROLL_ALL for (int a = 0; a < NA; a++)
                p[a] = _mm256_broadcast_ss(pa[a] + (j - base));
            UNROLL_ALL for (int v = 0; v < NV; v++) {
                __m256 x = _mm256_loadu_ps(vr + 8 * v);
                UNROLL_ALL for (int a = 0; a < NA; a++)
                    acc[a][v] = _mm256_fmadd_ps(p[a], x, acc[a][v]);
            }
        }
    }
    UNROLL_ALL for (int a = 0; a < NA; a++)
        UNROLL_ALL for (int v = 0; v < NV; v++)
            _mm256_storeu_ps(oa[a] + i0 + 8 * v, acc[a][v]);
}

#define PV_CASE(NA)                                                                  \
    switch (nv) {                                                                    \
    case 1: pv_tile(V, j0, j1, pa, base, oa, i0, NA, 1); break;                      \
    case 2: pv_tile(V, j0, j1, pa, base, oa, i0, NA, 2); break;                      \
    case 3: pv_tile(V, j0, j1, pa, base, oa, i0, NA, 3); break;                      \
    default: pv_tile(V, j0, j1, pa, base, oa, i0, NA, 4); break;                     \
    }

/* pv_tile over every dim of the head: 32 at a time, then 8, then one by one. */
TL_AVX2 static void pv_rows_from(const v_rows *V, int32_t j0, int32_t j1, const float *const *pa, int32_t base,
                                 float *const *oa, int na, int64_t i0) {
    int64_t dv = V->dv;
    if (j1 <= j0)
        return;
    while (i0 + 8 <= dv) {
        int nv = (int)((dv - i0) / 8 < 4 ? (dv - i0) / 8 : 4);
        if (na == 1) { PV_CASE(1) }
        else if (na == 2) { PV_CASE(2) }
        else { PV_CASE(3) }
        i0 += 8 * nv;
    }
    for (; i0 < dv; i0++) /* head sizes that are not a multiple of 8 */
        for (int a = 0; a < na; a++) {
            float acc = oa[a][i0];
            for (int32_t j = j0; j < j1; j++)
                acc = fmaf(pa[a][j - base], v_row(V, j)[i0], acc);
            oa[a][i0] = acc;
        }
}

/* ---- the same on AVX-512: 16 lanes per step, each lane the very chain its
 * AVX2 lane runs (a score's FMAs over d in order, an output's over j in
 * order, from the same start), so the same bits; twice the work per
 * instruction, and up to 12 query rows per K block. */
#define TL_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define TL_AVX512_INLINE __attribute__((target("avx512f,avx2,fma"), always_inline)) static inline
enum { QK_ROWS_512 = 12, PV_ROWS_512 = 6 };

TL_AVX512_INLINE void qk_tile512(const float *kt, int64_t dk, const float *const *qa, float *const *sa, float scale,
                                 const int NA) {
    __m512 acc[QK_ROWS_512];
    UNROLL_ALL for (int a = 0; a < NA; a++)
        acc[a] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dk; d++) {
        __m512 k = _mm512_loadu_ps(kt + d * TL_KV_BLOCK);
        UNROLL_ALL for (int a = 0; a < NA; a++)
            acc[a] = _mm512_fmadd_ps(_mm512_set1_ps(qa[a][d]), k, acc[a]);
    }
    __m512 sc = _mm512_set1_ps(scale);
    UNROLL_ALL for (int a = 0; a < NA; a++)
        _mm512_storeu_ps(sa[a], _mm512_mul_ps(acc[a], sc));
}

TL_AVX512 static void qk_rows512(const float *kt, int64_t dk, const float *const *qa, float *const *sa, float scale,
                                 int na) {
    switch (na) {
    case 1: qk_tile512(kt, dk, qa, sa, scale, 1); break;
    case 2: qk_tile512(kt, dk, qa, sa, scale, 2); break;
    case 3: qk_tile512(kt, dk, qa, sa, scale, 3); break;
    case 4: qk_tile512(kt, dk, qa, sa, scale, 4); break;
    case 5: qk_tile512(kt, dk, qa, sa, scale, 5); break;
    case 6: qk_tile512(kt, dk, qa, sa, scale, 6); break;
    case 7: qk_tile512(kt, dk, qa, sa, scale, 7); break;
    case 8: qk_tile512(kt, dk, qa, sa, scale, 8); break;
    case 9: qk_tile512(kt, dk, qa, sa, scale, 9); break;
    case 10: qk_tile512(kt, dk, qa, sa, scale, 10); break;
    case 11: qk_tile512(kt, dk, qa, sa, scale, 11); break;
    default: qk_tile512(kt, dk, qa, sa, scale, 12); break;
    }
}

TL_AVX512_INLINE void pv_tile512(const v_rows *V, int32_t j0, int32_t j1, const float *const *pa, int32_t base,
                                 float *const *oa, int64_t i0, const int NA, const int NV) {
    __m512 acc[PV_ROWS_512][4];
    UNROLL_ALL for (int a = 0; a < NA; a++)
        UNROLL_ALL for (int v = 0; v < NV; v++)
            acc[a][v] = _mm512_loadu_ps(oa[a] + i0 + 16 * v);
    for (int32_t j = j0; j < j1;) {
        int32_t blk_end = (j / TL_KV_BLOCK + 1) * TL_KV_BLOCK, end = blk_end < j1 ? blk_end : j1;
        const float *vr = v_row(V, j) + i0;
        for (; j < end; j++, vr += V->stride) {
            __m512 p[PV_ROWS_512];
            UNROLL_ALL for (int a = 0; a < NA; a++)
                p[a] = _mm512_set1_ps(pa[a][j - base]);
            UNROLL_ALL for (int v = 0; v < NV; v++) {
                __m512 x = _mm512_loadu_ps(vr + 16 * v);
                UNROLL_ALL for (int a = 0; a < NA; a++)
                    acc[a][v] = _mm512_fmadd_ps(p[a], x, acc[a][v]);
            }
        }
    }
    UNROLL_ALL for (int a = 0; a < NA; a++)
        UNROLL_ALL for (int v = 0; v < NV; v++)
            _mm512_storeu_ps(oa[a] + i0 + 16 * v, acc[a][v]);
}

#define PV_CASE512(NA)                                                               \
    switch (nv) {                                                                    \
    case 1: pv_tile512(V, j0, j1, pa, base, oa, i0, NA, 1); break;                   \
    case 2: pv_tile512(V, j0, j1, pa, base, oa, i0, NA, 2); break;                   \
    case 3: pv_tile512(V, j0, j1, pa, base, oa, i0, NA, 3); break;                   \
    default: pv_tile512(V, j0, j1, pa, base, oa, i0, NA, 4); break;                  \
    }

/* pv_rows on AVX-512, up to PV_ROWS_512 rows: 64 dims at a time, then 16;
 * what is left of the head (fewer than 16) as pv_rows_from takes it. */
TL_AVX512 static void pv_rows512(const v_rows *V, int32_t j0, int32_t j1, const float *const *pa, int32_t base,
                                 float *const *oa, int na) {
    int64_t dv = V->dv, i0 = 0;
    if (j1 <= j0)
        return;
    while (i0 + 16 <= dv) {
        int nv = (int)((dv - i0) / 16 < 4 ? (dv - i0) / 16 : 4);
        switch (na) {
        case 1: PV_CASE512(1) break;
        case 2: PV_CASE512(2) break;
        case 3: PV_CASE512(3) break;
        case 4: PV_CASE512(4) break;
        case 5: PV_CASE512(5) break;
        default: PV_CASE512(6) break;
        }
        i0 += 16 * nv;
    }
    for (int a = 0; a < na && i0 < dv; a += PV_ROWS) /* pv_rows_from takes PV_ROWS rows at most */
        pv_rows_from(V, j0, j1, pa + a, base, oa + a, na - a < PV_ROWS ? na - a : PV_ROWS, i0);
}

/* qk_rows or its 16-lane form (the same bits) */
TL_AVX2 static void qk_rows_any(int wide, const float *kt, int64_t dk, const float *const *qa, float *const *sa,
                                float scale, int na) {
    if (wide) qk_rows512(kt, dk, qa, sa, scale, na);
    else qk_rows(kt, dk, qa, sa, scale, na);
}

TL_AVX2 static void pv_rows(int wide, const v_rows *V, int32_t j0, int32_t j1, const float *const *pa,
                            int32_t base, float *const *oa, int na) {
    if (wide) pv_rows512(V, j0, j1, pa, base, oa, na);
    else pv_rows_from(V, j0, j1, pa, base, oa, na, 0);
}

/* o[0 .. n) *= a */
TL_AVX2_INLINE void scale_row(float *o, float a, int64_t n) {
    __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(o + i), av));
    for (; i < n; i++)
        o[i] *= a;
}

/* One (tile, kv head) per item; items run tiles from both ends of the batch
 * alternately, so that the chunks tl_pool_run_dynamic hands out mix short
 * and long contexts and the last ones to go are not all long. Per thread:
 * CHUNK scores, a running max and a running sum per query row. */
TL_AVX2 static void attention_tiles(void *arg, int64_t b, int64_t e, int thread) {
    attn_job *J = arg;
    const tl_model *m = J->m;
    const tl_attn_params *p = &J->p;
    const tl_layer_weights *w = &m->layers[J->layer];
    int64_t dk = w->head_dim_k, dv = w->head_dim_v;
    int32_t n_kv = w->n_head_kv, group = m->n_head / n_kv, rows_max = TILE * group;
    float *scores = J->scores + (size_t)thread * J->score_stride;
    float *mx_a = scores + (size_t)rows_max * CHUNK, *sum_a = mx_a + rows_max;
    float *kbuf = scores + J->score_stride - J->dec_floats, *vbuf = kbuf + kv_k_scratch(dk);
    const float *qa[TILE * 64];
    float *sa[TILE * 64], *oa[TILE * 64];
    int32_t lo_a[TILE * 64], hi_a[TILE * 64];
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int64_t item = b; item < e; item++) {
        int64_t k = item / n_kv;
        int32_t g = (int32_t)(item % n_kv), h0 = g * group;
        int64_t tile = k % 2 ? J->n_tiles - 1 - k / 2 : k / 2;
        int32_t t0 = J->tiles[tile], t1 = J->tiles[tile + 1];
        const fwd_token *tk = &J->toks[t0];
        /* query rows a = (token - t0) * group + hh */
        int na = 0;
        int32_t jmin = INT32_MAX, jmax = 0;
        for (int32_t t = t0; t < t1; t++)
            for (int32_t hh = 0; hh < group; hh++, na++) {
                qa[na] = J->q + (int64_t)t * m->n_head * dk + (h0 + hh) * dk;
                sa[na] = scores + (size_t)na * CHUNK;
                oa[na] = J->out + (int64_t)t * J->out_stride + (h0 + hh) * dv;
                lo_a[na] = first_visible(p, J->toks[t].pos);
                hi_a[na] = J->toks[t].pos + 1;
                jmin = lo_a[na] < jmin ? lo_a[na] : jmin;
                jmax = hi_a[na] > jmax ? hi_a[na] : jmax;
                /* a sink joins the sum as exp(sink - max): start from max = sink, sum = 1 */
                mx_a[na] = p->sinks ? p->sinks[h0 + hh] : -INFINITY;
                sum_a[na] = p->sinks ? 1.0f : 0.0f;
                memset(oa[na], 0, sizeof(float) * (size_t)dv);
            }
        for (int32_t c0 = jmin / CHUNK * CHUNK; c0 < jmax; c0 += CHUNK) {
            int32_t c1 = c0 + CHUNK;
            /* scores: every K block of the chunk any row of the tile sees, read once */
            for (int32_t j0 = c0; j0 < c1 && j0 < jmax; j0 += TL_KV_BLOCK) {
                if (j0 + TL_KV_BLOCK <= jmin) continue;
                const float *kt = kv_k_view(J->c, tk->seq->path[j0 / TL_KV_BLOCK], J->layer, g, kbuf);
                float *sj[QK_ROWS_512];
                const float *qj[QK_ROWS_512];
                int n = 0, n_max = J->wide ? QK_ROWS_512 : QK_ROWS;
                for (int a = 0; a < na; a++) {
                    if (hi_a[a] <= j0 || lo_a[a] >= j0 + TL_KV_BLOCK)
                        continue;
                    qj[n] = qa[a];
                    sj[n++] = sa[a] + (j0 - c0);
                    if (n == n_max) {
                        qk_rows_any(J->wide, kt, dk, qj, sj, p->scale, n);
                        n = 0;
                    }
                }
                if (n)
                    qk_rows_any(J->wide, kt, dk, qj, sj, p->scale, n);
            }
            /* the online softmax step of each row that sees the chunk: scores outside
             * [lo, hi) are -inf (exp gives 0), the max so far grows to the chunk's,
             * what was summed so far is rescaled to it */
            for (int a = 0; a < na; a++) {
                int32_t u0 = lo_a[a] > c0 ? lo_a[a] : c0, u1 = hi_a[a] < c1 ? hi_a[a] : c1;
                if (u0 >= u1)
                    continue;
                /* s[j - c0]: position j of the chunk; the row's blocks are [i0, i1) */
                float *s = sa[a];
                int32_t i0 = (u0 - c0) / TL_KV_BLOCK * TL_KV_BLOCK, i1 = (u1 - c0 + TL_KV_BLOCK - 1) / TL_KV_BLOCK * TL_KV_BLOCK;
                if (p->softcap > 0.0f)
                    for (int32_t j = u0 - c0; j < u1 - c0; j++)
                        s[j] = p->softcap * tanhf(s[j] / p->softcap);
                for (int32_t j = i0; j < u0 - c0; j++)
                    s[j] = -INFINITY;
                for (int32_t j = u1 - c0; j < i1; j++)
                    s[j] = -INFINITY;
                __m256 mxv = ninf;
                for (int32_t i = i0; i < i1; i += 8)
                    mxv = _mm256_max_ps(mxv, _mm256_loadu_ps(s + i));
                float top = tl_hmax8(mxv), old = mx_a[a];
                top = old > top ? old : top;
                __m256 tv = _mm256_set1_ps(top), sum = _mm256_setzero_ps();
                for (int32_t i = i0; i < i1; i += 8) {
                    __m256 ev = tl_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + i), tv));
                    _mm256_storeu_ps(s + i, ev);
                    sum = _mm256_add_ps(sum, ev);
                }
                /* tl_exp8(0) is exactly 1: no call when the max stays */
                float alpha = old == top ? 1.0f : _mm256_cvtss_f32(tl_exp8(_mm256_set1_ps(old - top)));
                sum_a[a] = sum_a[a] * alpha + tl_hsum8(sum);
                mx_a[a] = top;
                if (alpha != 1.0f)
                    scale_row(oa[a], alpha, dv);
            }
            /* outputs, PV_SUB positions at a time, so that their V rows stay in L1
             * for every row group, and PV_ROWS rows at a time: their common range
             * [L, H) side by side, what only some of them see before and after
             * alone (each output sums its j in order) */
#define CLAMP_LO(x) ((x) > v0 ? (x) : v0)
#define CLAMP_HI(x) ((x) < v1 ? (x) : v1)
            for (int32_t v0 = c0; v0 < c1 && v0 < jmax; v0 += PV_SUB) {
                int32_t v1 = v0 + PV_SUB;
                /* the sub-chunk's V blocks that any row sees, decoded once */
                v_rows V = {.j0 = v0, .dv = dv};
                for (int32_t j0 = v0; j0 < v1 && j0 < jmax; j0 += TL_KV_BLOCK)
                    if (j0 + TL_KV_BLOCK > jmin)
                        V.blk[(j0 - v0) / TL_KV_BLOCK] =
                            kv_v_view(J->c, tk->seq->path[j0 / TL_KV_BLOCK], J->layer, g,
                                      vbuf + (size_t)(j0 - v0) * (size_t)dv, &V.stride);
                const int pv_step = J->wide ? PV_ROWS_512 : PV_ROWS;
                for (int a0 = 0; a0 < na; a0 += pv_step) {
                    int n = na - a0 < pv_step ? na - a0 : pv_step;
                    int32_t L = 0, H = INT32_MAX;
                    for (int a = a0; a < a0 + n; a++) {
                        L = lo_a[a] > L ? lo_a[a] : L;
                        H = hi_a[a] < H ? hi_a[a] : H;
                    }
                    const float *const *pa = (const float *const *)&sa[a0];
                    if (L >= H) {
                        for (int a = a0; a < a0 + n; a++)
                            pv_rows(J->wide, &V, CLAMP_LO(lo_a[a]), CLAMP_HI(hi_a[a]), &pa[a - a0], c0, &oa[a], 1);
                        continue;
                    }
                    for (int a = a0; a < a0 + n; a++)
                        pv_rows(J->wide, &V, CLAMP_LO(lo_a[a]), CLAMP_HI(L), &pa[a - a0], c0, &oa[a], 1);
                    pv_rows(J->wide, &V, CLAMP_LO(L), CLAMP_HI(H), pa, c0, &oa[a0], n);
                    for (int a = a0; a < a0 + n; a++)
                        pv_rows(J->wide, &V, CLAMP_LO(H), CLAMP_HI(hi_a[a]), &pa[a - a0], c0, &oa[a], 1);
                }
            }
#undef CLAMP_LO
#undef CLAMP_HI
        }
        for (int a = 0; a < na; a++)
            scale_row(oa[a], 1.0f / sum_a[a], dv);
    }
}
#endif

static tl_status reserve(tl_attn_scratch *sc, size_t floats, size_t tiles, tl_error *err) {
    if (floats > sc->cap_floats) {
        free(sc->buf);
        sc->buf = malloc(sizeof(float) * floats);
        sc->cap_floats = sc->buf ? floats : 0;
        if (!sc->buf)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for attention scores");
    }
    if (tiles > sc->cap_tiles) {
        free(sc->tiles);
        sc->tiles = malloc(sizeof(int32_t) * tiles);
        sc->cap_tiles = sc->tiles ? tiles : 0;
        if (!sc->tiles)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for attention tiles");
    }
    return TL_OK;
}

tl_status tl_attention(tl_pool *pool, const tl_model *m, const kv_cache *c, int32_t layer,
                       const tl_attn_params *p, const fwd_token *toks, int32_t n_tok, const float *q,
                       float *out, int64_t out_stride, tl_attn_scratch *sc, tl_error *err) {
    if (n_tok <= 0)
        return TL_OK;
    int32_t max_pos = 0;
    for (int32_t t = 0; t < n_tok; t++)
        max_pos = toks[t].pos > max_pos ? toks[t].pos : max_pos;
    const tl_layer_weights *w = &m->layers[layer];
    int32_t group = m->n_head / w->n_head_kv;
    size_t threads = (size_t)tl_pool_size(pool);
    attn_job J = {.m = m, .c = c, .layer = layer, .p = *p, .toks = toks, .q = q, .out = out,
                  .out_stride = out_stride};
    /* a K block of one kv head, and the V rows of PV_SUB positions (the
     * portable path: of one block), decoded from the cache's types */
    if (kv_decodes(c))
        J.dec_floats = kv_k_scratch(w->head_dim_k) + (size_t)PV_SUB * (size_t)w->head_dim_v;
    /* items per pool chunk: enough work (~8K floats) that waking a thread pays */
    int64_t span = p->window > 0 && p->window < max_pos + 1 ? p->window + TL_KV_BLOCK : (int64_t)max_pos + 1;
    int64_t work = span * (w->head_dim_k + w->head_dim_v) * group;
    int64_t grain = 8192 / (work > 0 ? work : 1);
    grain = grain > 1 ? grain : 1;
    tl_status st;
#ifdef TL_ENGINE_AVX2
    if (tl_engine_simd() && group <= 64) {
        /* per thread: CHUNK scores, a max and a sum for each of a tile's TILE x group query rows */
        J.score_stride = (size_t)TILE * (size_t)group * (CHUNK + 2) + J.dec_floats;
        if ((st = reserve(sc, J.score_stride * threads, (size_t)n_tok + 1, err)) != TL_OK)
            return st;
        int32_t n = 0;
        for (int32_t t = 0; t < n_tok; t++)
            if (t == 0 || toks[t].seq != toks[t - 1].seq || t - sc->tiles[n - 1] == TILE)
                sc->tiles[n++] = t;
        sc->tiles[n] = n_tok;
        J.tiles = sc->tiles, J.n_tiles = n, J.scores = sc->buf;
        J.wide = !strcmp(tl_kernels_isa(), "avx512") || !strcmp(tl_kernels_isa(), "amx");
        grain = grain / TILE > 1 ? grain / TILE : 1;
        tl_pool_run_dynamic(pool, (int64_t)n * w->n_head_kv, grain, attention_tiles, &J);
        return TL_OK;
    }
#endif
    /* per thread: the weights of a head group over max_pos + 1 positions */
    J.score_stride = ((((size_t)max_pos + 1) * (size_t)group + 15) & ~(size_t)15) + J.dec_floats;
    if ((st = reserve(sc, J.score_stride * threads, 0, err)) != TL_OK)
        return st;
    J.scores = sc->buf;
    tl_pool_run(pool, (int64_t)n_tok * w->n_head_kv, grain, attention_items, &J);
    return TL_OK;
}
