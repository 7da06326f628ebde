/* forward.c: the transformer forward pass (llama / qwen2 / qwen3):
 *   x = embed(id)
 *   per layer:  h = RMSNorm(x)·attn_norm;  q,k,v = Wq h (+bq), Wk h (+bk), Wv h (+bv)
 *               [qwen3: per-head RMSNorm of q and k];  RoPE(q, k, pos);  store k, v
 *               x += Wo · softmax(q·K^T / sqrt(d)) V          (grouped-query heads: attention.c)
 *               h = RMSNorm(x)·ffn_norm;  x += Wdown (silu(Wgate h) * (Wup h))
 *   out = RMSNorm(x)·output_norm
 * Matrix products go to tl_matmul; everything else is here, reducing in a
 * fixed order per token so results are batch- and thread-independent. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/vec_avx2.h"
#include "util/error.h"

void fwd_scratch_free(fwd_scratch *sc) {
    free(sc->buf);
    free(sc->scores);
    tl_attn_scratch_free(&sc->att);
    memset(sc, 0, sizeof *sc);
}

/* ---- per-token numerics --------------------------------------------------- */

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
    bool simd;    /* tl_engine_simd() */
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
    float *cs = P->sc->scores + (size_t)thread * P->sc->score_stride; /* 2*half floats */
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

#ifdef TL_ENGINE_AVX2
/* g = g / (1 + e^-g) * u, 8 at a time (the exp of vec_avx2.h); the rest one by one */
TL_AVX2 static void swiglu_avx2(float *g, const float *u, int64_t i, int64_t end) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= end; i += 8) {
        __m256 gv = _mm256_loadu_ps(g + i);
        __m256 den = _mm256_add_ps(one, tl_exp8(_mm256_sub_ps(zero, gv)));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(gv, den), _mm256_loadu_ps(u + i)));
    }
    for (; i < end; i++) {
        __m256 den = _mm256_add_ps(one, tl_exp8(_mm256_set1_ps(-g[i])));
        g[i] = g[i] / _mm256_cvtss_f32(den) * u[i];
    }
}
#endif

static void swiglu_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t f = P->m->n_ff;
#ifdef TL_ENGINE_AVX2
    if (P->simd) { /* per row, so a value never depends on where a thread's slice starts */
        for (int64_t t = b; t < e; t++)
            swiglu_avx2(P->g, P->u, t * f, (t + 1) * f);
        return;
    }
#endif
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

static tl_status scratch_reserve(const tl_model *m, tl_pool *pool, fwd_scratch *sc, int32_t n_tok, pass *P,
                                 tl_error *err) {
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
    /* per thread: RoPE cos/sin of one position */
    size_t stride = ((size_t)m->rope_dim + 15) & ~(size_t)15;
    size_t n_threads = (size_t)tl_pool_size(pool);
    if (stride * n_threads > sc->cap_scores) {
        free(sc->scores);
        sc->scores = malloc(sizeof(float) * stride * n_threads);
        sc->cap_scores = sc->scores ? stride * n_threads : 0;
        if (!sc->scores)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for RoPE tables");
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
    for (int32_t t = 0; t < n_tok; t++)
        if (toks[t].id < 0 || toks[t].id >= m->n_vocab)
            return tl_error_set(err, TL_ERR_INVALID, "token id %d out of range [0, %d)", toks[t].id, m->n_vocab);
    pass P = {.m = m, .c = c, .sc = sc, .toks = toks, .n_tok = n_tok, .hidden_out = hidden_out,
              .simd = tl_engine_simd()};
    tl_status st = scratch_reserve(m, pool, sc, n_tok, &P, err);
    if (st != TL_OK)
        return st;
    /* Items per pool chunk: enough work (~8K floats) that waking a thread pays. */
    int64_t g_embd = grain_for(m->n_embd), g_ff = grain_for(m->n_ff);
    tl_attn_params ap = tl_attn_default(m);
    tl_pool_run(pool, n_tok, g_embd, embed_rows, &P);
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        P.layer = l;
        tl_pool_run(pool, n_tok, g_embd, attn_norm_rows, &P);
        /* q, k, v (and below gate, up) share one quantization of their input */
        const tl_matrix *qkv[3] = {&w->wq, &w->wk, &w->wv};
        float *qkv_out[3] = {P.q, P.k, P.v};
        tl_matmul_multi(pool, qkv, 3, P.h, n_tok, qkv_out);
        tl_pool_run(pool, n_tok, g_embd, qk_prepare_rows, &P);
        /* attention output (n_tok, n_head * head_dim_v) goes into h */
        if ((st = tl_attention(pool, m, c, l, &ap, toks, n_tok, P.q, P.h, P.h_stride, &sc->att, err)) != TL_OK)
            return st;
        tl_matmul(pool, &w->wo, P.h, n_tok, P.u);
        tl_pool_run(pool, n_tok, g_embd, residual_rows, &P);
        tl_pool_run(pool, n_tok, g_embd, ffn_norm_rows, &P);
        const tl_matrix *gu[2] = {&w->w_gate, &w->w_up};
        float *gu_out[2] = {P.g, P.u};
        tl_matmul_multi(pool, gu, 2, P.h, n_tok, gu_out);
        tl_pool_run(pool, n_tok, g_ff, swiglu_rows, &P);
        tl_matmul(pool, &w->w_down, P.g, n_tok, P.u);
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
