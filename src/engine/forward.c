/* forward.c: the transformer forward pass (llama / qwen2 / qwen3):
 *   x = embed(id)
 *   per layer:  h = RMSNorm(x)·attn_norm;  q,k,v = Wq h (+bq), Wk h (+bk), Wv h (+bv)
 *               [qwen3: per-head RMSNorm of q and k];  RoPE(q, k, pos);  store k, v
 *               x += Wo · softmax(q·K^T / sqrt(d)) V          (grouped-query heads)
 *               h = RMSNorm(x)·ffn_norm;  x += Wdown (silu(Wgate h) * (Wup h))
 *   out = RMSNorm(x)·output_norm
 * Matrix products go to tl_matmul; everything else is here, reducing in a
 * fixed order per token so results are batch- and thread-independent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/forward.h"
#include "engine/moe.h"
#include "util/error.h"

void fwd_scratch_free(fwd_scratch *sc) {
    free(sc->buf);
    free(sc->scores);
    tl_moe_scratch_free(sc->moe);
    memset(sc, 0, sizeof *sc);
}

/* ---- per-token numerics --------------------------------------------------- */

/* 8-lane float vectors (GCC vector extensions): the same lane-wise
 * operations on every ISA (SSE pairs, AVX2, AVX-512 clones below), so results
 * never depend on which clone runs. No FMA: the clones do not enable it, so
 * a*b+c rounds twice everywhere. */
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

/* y[i] += a * x[i] */
static inline void axpy_f32(float *y, float a, const float *x, int64_t n) {
    int64_t i = 0;
    v8f av = {a, a, a, a, a, a, a, a};
    for (; i + 8 <= n; i += 8)
        STORE8(y + i, LOAD8(y + i) + av * LOAD8(x + i));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* out = x / sqrt(mean(x^2) + eps) * w; the mean in double (as ggml does). */
static void rms_norm(const float *x, const float *w, float *out, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * (double)x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

/* Rotates the first rope_dim dims of one head by pos. */
static void rope_head(const tl_model *m, float *x, const float *cs, const float *sn) {
    int32_t half = m->rope_dim / 2;
    if (m->rope_neox) {
        for (int32_t i = 0; i < half; i++) {
            float a = x[i], b = x[i + half];
            x[i] = a * cs[i] - b * sn[i];
            x[i + half] = a * sn[i] + b * cs[i];
        }
    } else {
        for (int32_t i = 0; i < half; i++) {
            float a = x[2 * i], b = x[2 * i + 1];
            x[2 * i] = a * cs[i] - b * sn[i];
            x[2 * i + 1] = a * sn[i] + b * cs[i];
        }
    }
}

/* ---- the pass --------------------------------------------------------------- */

typedef struct pass {
    const tl_model *m;
    kv_cache *c;
    fwd_scratch *sc;
    const fwd_token *toks;
    int32_t n_tok;
    int32_t layer;
    float *x;     /* (n_tok, n_embd) residual stream */
    float *h;     /* (n_tok, max(n_embd, n_head*head_dim_v)) normed input / attention output */
    float *q;     /* (n_tok, n_head * head_dim_k) */
    float *k;     /* (n_tok, kv_k) */
    float *v;     /* (n_tok, kv_v) */
    float *g;     /* (n_tok, n_ff) gate, then silu(gate) * up */
    float *u;     /* (n_tok, n_ff) up; also (n_tok, n_embd) matmul outputs */
    int64_t h_stride;
    float *hidden_out;
} pass;

static void embed_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_matrix *E = &P->m->tok_embd;
    for (int64_t t = b; t < e; t++)
        tl_dequant_row(E->type, (const uint8_t *)E->data + (size_t)P->toks[t].id * E->row_bytes,
                       P->x + t * P->m->n_embd, P->m->n_embd);
}

static void attn_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    for (int64_t t = b; t < e; t++)
        rms_norm(P->x + t * m->n_embd, m->layers[P->layer].attn_norm, P->h + t * m->n_embd, m->n_embd,
                 m->norm_eps);
}

static void ffn_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    for (int64_t t = b; t < e; t++)
        rms_norm(P->x + t * m->n_embd, m->layers[P->layer].ffn_norm, P->h + t * m->n_embd, m->n_embd,
                 m->norm_eps);
}

/* Biases, qwen3 head norms and RoPE on q and k; then k and v go to the cache. */
static void qk_prepare_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    const tl_layer_weights *w = &m->layers[P->layer];
    int64_t dk = m->head_dim_k, nq = m->n_head * dk, nk = tl_model_kv_k(m), nv = tl_model_kv_v(m);
    int32_t half = m->rope_dim / 2;
    float *cs = P->sc->scores + (size_t)thread * P->sc->score_stride; /* borrowed: 2*half floats */
    float *sn = cs + half;
    for (int64_t t = b; t < e; t++) {
        float *q = P->q + t * nq, *k = P->k + t * nk, *v = P->v + t * nv;
        if (w->bq) {
            for (int64_t i = 0; i < nq; i++) q[i] += w->bq[i];
            for (int64_t i = 0; i < nk; i++) k[i] += w->bk[i];
            for (int64_t i = 0; i < nv; i++) v[i] += w->bv[i];
        }
        if (w->q_norm) {
            for (int32_t hd = 0; hd < m->n_head; hd++)
                rms_norm(q + hd * dk, w->q_norm, q + hd * dk, dk, m->norm_eps);
            for (int32_t hd = 0; hd < m->n_head_kv; hd++)
                rms_norm(k + hd * dk, w->k_norm, k + hd * dk, dk, m->norm_eps);
        }
        double pos = P->toks[t].pos;
        for (int32_t i = 0; i < half; i++) {
            double theta = pos * (double)m->rope_freq[i];
            cs[i] = (float)cos(theta) * m->rope_mscale;
            sn[i] = (float)sin(theta) * m->rope_mscale;
        }
        for (int32_t hd = 0; hd < m->n_head; hd++)
            rope_head(m, q + hd * dk, cs, sn);
        for (int32_t hd = 0; hd < m->n_head_kv; hd++)
            rope_head(m, k + hd * dk, cs, sn);
        const fwd_token *tk = &P->toks[t];
        const kv_node *nd = tk->seq->path[tk->pos / TL_KV_BLOCK];
        int32_t row = tk->pos % TL_KV_BLOCK;
        float *kt = kv_k_block(P->c, nd, P->layer);
        for (int64_t i = 0; i < nk; i++)
            kt[i * TL_KV_BLOCK + row] = k[i];
        memcpy(kv_v_row(P->c, nd, P->layer, row), v, sizeof(float) * (size_t)nv);
    }
}

/* One (token, kv head) per item: for each query head h of the group sharing
 * kv head g, softmax(q_h·k_j / sqrt(d)) over j <= pos on the token's path,
 * times v_j. Each K/V row is loaded once for the whole group. Reads only
 * rows on the path, written earlier in this pass or by earlier passes. */
TL_VECTOR_CLONES static void attention_items(void *arg, int64_t b, int64_t e,
                                                                                int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    const kv_cache *c = P->c;
    int64_t dk = m->head_dim_k, dv = m->head_dim_v;
    int32_t group = m->n_head / m->n_head_kv;
    float scale = (float)(1.0 / sqrt((double)dk));
    float *scores = P->sc->scores + (size_t)thread * P->sc->score_stride;
    for (int64_t item = b; item < e; item++) {
        int64_t t = item / m->n_head_kv;
        int32_t g = (int32_t)(item % m->n_head_kv), h0 = g * group;
        const fwd_token *tk = &P->toks[t];
        const float *q = P->q + t * m->n_head * dk + h0 * dk;
        int32_t n_ctx = tk->pos + 1;
        for (int32_t j0 = 0; j0 < n_ctx; j0 += TL_KV_BLOCK) {
            const kv_node *nd = tk->seq->path[j0 / TL_KV_BLOCK];
            int32_t rows = n_ctx - j0 < TL_KV_BLOCK ? n_ctx - j0 : TL_KV_BLOCK;
            const float *kt = kv_k_block(c, nd, P->layer) + (size_t)g * dk * TL_KV_BLOCK;
            for (int32_t hh = 0; hh < group; hh++) {
                /* rows j0..j0+15 at once: lane r sums q[d] * k_r[d] over d in order */
                const float *qh = q + hh * dk;
                v8f lo = {0}, hi = {0};
                for (int64_t d = 0; d < dk; d++) {
                    float qd = qh[d];
                    v8f qv = {qd, qd, qd, qd, qd, qd, qd, qd};
                    lo += qv * LOAD8(kt + d * TL_KV_BLOCK);
                    hi += qv * LOAD8(kt + d * TL_KV_BLOCK + 8);
                }
                float *out = scores + (size_t)hh * n_ctx + j0;
                for (int32_t r = 0; r < rows; r++)
                    out[r] = (r < 8 ? lo[r] : hi[r - 8]) * scale;
            }
        }
        for (int32_t hh = 0; hh < group; hh++) {
            float *s = scores + (size_t)hh * n_ctx, top = -INFINITY;
            for (int32_t j = 0; j < n_ctx; j++)
                top = s[j] > top ? s[j] : top;
            for (int32_t j = 0; j < n_ctx; j++)
                s[j] = expf(s[j] - top);
            double sum = 0.0;
            for (int32_t j = 0; j < n_ctx; j++)
                sum += s[j];
            float inv = (float)(1.0 / sum);
            for (int32_t j = 0; j < n_ctx; j++)
                s[j] *= inv;
            /* out[i] = sum over j in order of s[j] * v_j[i], 32 outputs at a
             * time held in registers across all rows */
            float *out = P->h + t * P->h_stride + (h0 + hh) * dv;
            int64_t i0 = 0;
            for (; i0 + 32 <= dv; i0 += 32) {
                v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int32_t j0 = 0; j0 < n_ctx; j0 += TL_KV_BLOCK) {
                    const kv_node *nd = tk->seq->path[j0 / TL_KV_BLOCK];
                    int32_t rows = n_ctx - j0 < TL_KV_BLOCK ? n_ctx - j0 : TL_KV_BLOCK;
                    for (int32_t r = 0; r < rows; r++) {
                        const float *vr = kv_v_row(c, nd, P->layer, r) + g * dv + i0;
                        float p = s[j0 + r];
                        v8f pv = {p, p, p, p, p, p, p, p};
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
                for (int32_t j = 0; j < n_ctx; j++) {
                    const float *vr = kv_v_row(c, tk->seq->path[j / TL_KV_BLOCK], P->layer, j % TL_KV_BLOCK) + g * dv;
                    axpy_f32(out + i0, s[j], vr + i0, dv - i0);
                }
            }
        }
    }
}

static void swiglu_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t f = P->m->n_ff;
    for (int64_t i = b * f; i < e * f; i++) {
        float gv = P->g[i];
        P->g[i] = gv / (1.0f + expf(-gv)) * P->u[i];
    }
}

static void residual_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t d = P->m->n_embd;
    for (int64_t i = b * d; i < e * d; i++)
        P->x[i] += P->u[i];
}

static void output_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    for (int64_t t = b; t < e; t++)
        if (P->toks[t].out >= 0)
            rms_norm(P->x + t * m->n_embd, m->output_norm, P->hidden_out + (size_t)P->toks[t].out * m->n_embd,
                     m->n_embd, m->norm_eps);
}

static int64_t grain_for(int64_t floats_per_item) {
    int64_t g = 8192 / (floats_per_item > 0 ? floats_per_item : 1);
    return g > 1 ? g : 1;
}

static tl_status scratch_reserve(const tl_model *m, tl_pool *pool, fwd_scratch *sc, int32_t n_tok,
                                 int32_t max_pos, pass *P, tl_error *err) {
    int64_t E = m->n_embd, nq = (int64_t)m->n_head * m->head_dim_k, no = (int64_t)m->n_head * m->head_dim_v;
    int64_t hs = E > no ? E : no, F = m->n_ff, nk = tl_model_kv_k(m), nv = tl_model_kv_v(m);
    int64_t ue = F > E ? F : E;
    size_t need = (size_t)n_tok * (size_t)(E + hs + nq + nk + nv + F + ue);
    if (need > sc->cap_floats) {
        free(sc->buf);
        sc->buf = malloc(sizeof(float) * need);
        sc->cap_floats = sc->buf ? need : 0;
        if (!sc->buf)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for activations of %d tokens", n_tok);
    }
    /* per-thread scores: attention weights of a head group over max_pos+1 rows, or RoPE cos/sin */
    size_t att = ((size_t)max_pos + 1) * (size_t)(m->n_head / m->n_head_kv);
    size_t stride = att > (size_t)m->rope_dim ? att : (size_t)m->rope_dim;
    stride = (stride + 15) & ~(size_t)15;
    size_t n_threads = (size_t)tl_pool_size(pool);
    if (stride * n_threads > sc->cap_scores) {
        free(sc->scores);
        sc->scores = malloc(sizeof(float) * stride * n_threads);
        sc->cap_scores = sc->scores ? stride * n_threads : 0;
        if (!sc->scores)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for attention scores");
    }
    sc->score_stride = stride;
    float *p = sc->buf;
    P->x = p, p += (size_t)n_tok * E;
    P->h = p, p += (size_t)n_tok * hs;
    P->h_stride = no;
    P->q = p, p += (size_t)n_tok * nq;
    P->k = p, p += (size_t)n_tok * nk;
    P->v = p, p += (size_t)n_tok * nv;
    P->g = p, p += (size_t)n_tok * F;
    P->u = p;
    return TL_OK;
}

tl_status tl_forward(const tl_model *m, tl_pool *pool, kv_cache *c, fwd_scratch *sc, const fwd_token *toks,
                     int32_t n_tok, float *hidden_out, tl_error *err) {
    if (n_tok <= 0)
        return TL_OK;
    int32_t max_pos = 0;
    for (int32_t t = 0; t < n_tok; t++) {
        if (toks[t].id < 0 || toks[t].id >= m->n_vocab)
            return tl_error_set(err, TL_ERR_INVALID, "token id %d out of range [0, %d)", toks[t].id, m->n_vocab);
        if (toks[t].pos > max_pos)
            max_pos = toks[t].pos;
    }
    pass P = {.m = m, .c = c, .sc = sc, .toks = toks, .n_tok = n_tok, .hidden_out = hidden_out};
    tl_status st = scratch_reserve(m, pool, sc, n_tok, max_pos, &P, err);
    if (st != TL_OK)
        return st;
    /* Items per pool chunk: enough work (~8K floats) that waking a thread pays. */
    int64_t g_embd = grain_for(m->n_embd), g_ff = grain_for(m->n_ff);
    int64_t g_att = grain_for(((int64_t)max_pos + 1) * (m->head_dim_k + m->head_dim_v) * (m->n_head / m->n_head_kv));
    tl_pool_run(pool, n_tok, g_embd, embed_rows, &P);
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        P.layer = l;
        tl_pool_run(pool, n_tok, g_embd, attn_norm_rows, &P);
        tl_matmul(pool, &w->wq, P.h, n_tok, P.q);
        tl_matmul(pool, &w->wk, P.h, n_tok, P.k);
        tl_matmul(pool, &w->wv, P.h, n_tok, P.v);
        tl_pool_run(pool, n_tok, g_embd, qk_prepare_rows, &P);
        /* attention output (n_tok, n_head * head_dim_v) goes into h */
        tl_pool_run(pool, (int64_t)n_tok * m->n_head_kv, g_att, attention_items, &P);
        tl_matmul(pool, &w->wo, P.h, n_tok, P.u);
        tl_pool_run(pool, n_tok, g_embd, residual_rows, &P);
        tl_pool_run(pool, n_tok, g_embd, ffn_norm_rows, &P);
        if (m->moe) {
            if ((st = tl_moe_ffn(m->moe, l, m->n_embd, pool, &sc->moe, P.h, n_tok, P.u, err)) != TL_OK)
                return st;
        } else {
            tl_matmul(pool, &w->w_gate, P.h, n_tok, P.g);
            tl_matmul(pool, &w->w_up, P.h, n_tok, P.u);
            tl_pool_run(pool, n_tok, g_ff, swiglu_rows, &P);
            tl_matmul(pool, &w->w_down, P.g, n_tok, P.u);
        }
        tl_pool_run(pool, n_tok, g_embd, residual_rows, &P);
    }
    if (hidden_out)
        tl_pool_run(pool, n_tok, g_embd, output_norm_rows, &P);
    return TL_OK;
}

void tl_forward_logits(const tl_model *m, tl_pool *pool, const float *hidden, int32_t n_rows, float *logits) {
    if (n_rows > 0)
        tl_matmul(pool, &m->output, hidden, n_rows, logits);
}
