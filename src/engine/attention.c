/* attention.c: tl_attention (see attention.h). One pool item is one
 * (token, kv head): the group of query heads sharing that kv head reads each
 * K/V row once. Scores of a 16-row block come from transposed K with vector
 * loads; every lane-wise operation is the same on every ISA clone, so the
 * result never depends on which clone runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "util/error.h"

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
    float *scores;        /* per thread: score_stride floats */
    size_t score_stride;
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
            const float *kt = kv_k_block(c, nd, J->layer) + (size_t)g * dk * TL_KV_BLOCK;
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
            /* out[i] = sum over j in order of s[j] * v_j[i], 32 outputs at a
             * time held in registers across all rows */
            float *out = J->out + t * J->out_stride + (h0 + hh) * dv;
            int64_t i0 = 0;
            for (; i0 + 32 <= dv; i0 += 32) {
                v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int32_t j0 = jb; j0 < n_ctx; j0 += TL_KV_BLOCK) {
                    const kv_node *nd = tk->seq->path[j0 / TL_KV_BLOCK];
                    int32_t rows = n_ctx - j0 < TL_KV_BLOCK ? n_ctx - j0 : TL_KV_BLOCK;
                    for (int32_t r = j0 < lo ? lo - j0 : 0; r < rows; r++) {
                        const float *vr = kv_v_row(c, nd, J->layer, r) + g * dv + i0;
                        float pr = s[j0 + r];
                        v8f pv = {pr, pr, pr, pr, pr, pr, pr, pr};
                        a0 += pv * LOAD8(vr);
                        a1 += pv * LOAD8(vr + 8);
                        a2 += pv * LOAD8(vr + 16);
                        a3 += pv * LOAD8(vr + 24);
                    }
                }
                STORE8(out + i0, a0);
                STORE8(out + i0 + 8, a1);
                STORE8(out + i0 + 16, a2);
                STORE8(out + i0 + 24, a3);
            }
            if (i0 < dv) { /* head sizes that are not a multiple of 32 */
                memset(out + i0, 0, sizeof(float) * (size_t)(dv - i0));
                for (int32_t j = lo; j < n_ctx; j++) {
                    const float *vr =
                        kv_v_row(c, tk->seq->path[j / TL_KV_BLOCK], J->layer, j % TL_KV_BLOCK) + g * dv;
                    axpy_f32(out + i0, s[j], vr + i0, dv - i0);
                }
            }
        }
    }
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
    /* per thread: the weights of a head group over max_pos + 1 positions */
    size_t stride = (((size_t)max_pos + 1) * (size_t)group + 15) & ~(size_t)15;
    size_t need = stride * (size_t)tl_pool_size(pool);
    if (need > sc->cap_floats) {
        free(sc->buf);
        sc->buf = malloc(sizeof(float) * need);
        sc->cap_floats = sc->buf ? need : 0;
        if (!sc->buf)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for attention scores");
    }
    attn_job J = {.m = m, .c = c, .layer = layer, .p = *p, .toks = toks, .q = q, .out = out,
                  .out_stride = out_stride, .scores = sc->buf, .score_stride = stride};
    /* items per pool chunk: enough work (~8K floats) that waking a thread pays */
    int64_t span = p->window > 0 && p->window < max_pos + 1 ? p->window + TL_KV_BLOCK : (int64_t)max_pos + 1;
    int64_t work = span * (w->head_dim_k + w->head_dim_v) * group;
    int64_t grain = 8192 / (work > 0 ? work : 1);
    tl_pool_run(pool, (int64_t)n_tok * w->n_head_kv, grain > 1 ? grain : 1, attention_items, &J);
    return TL_OK;
}
