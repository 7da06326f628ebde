/* forward.c: the transformer forward pass, one decoder block per layer:
 *   x = embed(id) * embd_scale
 *   per layer:  h = RMSNorm(x)·attn_norm (none: olmo2);  q,k,v = Wq h, Wk h, Wv h (or one fused Wqkv;
 *               V = K when there is no Wv) (+ biases)
 *               [q/k RMSNorm per head or over the whole projection];  [V RMSNorm];
 *               RoPE(q, k, pos) with the layer's table (none on NoPE layers);  [q x temperature];  store k, v
 *               a = Wo · softmax(cap(scale q·K^T)) V over the layer's window (grouped-query heads:
 *               attention.c)
 *               x += residual_scale · post_norm(a)
 *               h = RMSNorm(x)·ffn_norm;  f = Wdown (act(Wgate h) * (Wup h))   (act: SiLU or tanh GELU;
 *               gate and up may be one fused matrix)
 *               x += residual_scale · post_norm(f);  x *= out_scale
 *   out = RMSNorm(x)·output_norm;  logits = cap(W_out out / logit_scale)
 * Which of the bracketed steps a layer takes is data in tl_model (see
 * model_internal.h). Matrix products go to tl_matmul; everything else is
 * here, reducing in a fixed order per token so results are batch- and
 * thread-independent. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/vec_avx2.h"
#include "engine/deltanet.h"
#include "engine/moe.h"
#include "util/error.h"

void fwd_scratch_free(fwd_scratch *sc) {
    free(sc->buf);
    free(sc->scores);
    tl_moe_scratch_free(sc->moe);
    tl_dnet_scratch_free(sc->dnet);
    tl_attn_scratch_free(&sc->att);
    free(sc->kept);
    memset(sc, 0, sizeof *sc);
}

/* ---- per-token numerics --------------------------------------------------- */

/* out = x / sqrt(mean(x^2) + eps) * w (w NULL: no weight); the mean in
 * double (as ggml does). */
static void rms_norm(const float *x, const float *w, float *out, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * (double)x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    if (w)
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale * w[i];
    else
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale;
}

/* Rotates the first r->dim dims of one head by the cos/sin of its pairs. */
static void rope_head(const tl_rope *r, bool neox, float *x, const float *cs, const float *sn) {
    int32_t half = r->dim / 2;
    if (neox) {
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

/* GELU, tanh approximation (what ggml's CPU backend computes). */
static inline float gelu_tanh(float x) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(c * x * (1.0f + 0.044715f * x * x)));
}

/* ---- the pass --------------------------------------------------------------- */

typedef struct pass {
    const tl_model *m;
    kv_cache *c;
    fwd_scratch *sc;
    const fwd_token *toks;
    int32_t n_tok;
    int32_t layer;
    const tl_layer_weights *w;
    float *x;     /* (n_tok, n_embd) residual stream */
    float *h;     /* (n_tok, max(n_embd, n_head*head_dim_v)) normed input / attention output */
    float *q;     /* (n_tok, max_q) */
    float *k;     /* (n_tok, max_kv_k) */
    float *v;     /* (n_tok, max_kv_v) */
    float *g;     /* (n_tok, n_ff) gate, then act(gate) * up */
    float *u;     /* (n_tok, n_ff) up; also (n_tok, n_embd) matmul outputs */
    float *f;     /* (n_tok, fused_floats) output of a fused qkv / gate-up matrix, or NULL */
    int64_t fused_stride;
    int64_t h_stride;
    float *hidden_out;
    bool simd;    /* tl_engine_simd() */
} pass;

static void embed_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    const tl_matrix *E = &m->tok_embd;
    for (int64_t t = b; t < e; t++) {
        float *x = P->x + t * m->n_embd;
        tl_dequant_row(E->type, (const uint8_t *)E->data + (size_t)P->toks[t].id * E->row_bytes, x, m->n_embd);
        if (m->embd_scale != 1.0f)
            for (int64_t i = 0; i < m->n_embd; i++)
                x[i] *= m->embd_scale;
    }
}

/* h = RMSNorm(x) * w, or a copy of x when the layer has no such norm. */
static void norm_rows(pass *P, const float *w, int64_t b, int64_t e) {
    const tl_model *m = P->m;
    for (int64_t t = b; t < e; t++) {
        if (w)
            rms_norm(P->x + t * m->n_embd, w, P->h + t * m->n_embd, m->n_embd, m->norm_eps);
        else
            memcpy(P->h + t * m->n_embd, P->x + t * m->n_embd, sizeof(float) * (size_t)m->n_embd);
    }
}

static void attn_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    norm_rows(P, P->w->attn_norm, b, e);
}

static void ffn_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    norm_rows(P, P->w->ffn_norm, b, e);
}

/* A fused attn_qkv output row split into q, k, v. */
static void qkv_split_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_layer_weights *w = P->w;
    int64_t nq = (int64_t)P->m->n_head * w->head_dim_k, nk = (int64_t)w->n_head_kv * w->head_dim_k,
            nv = (int64_t)w->n_head_kv * w->head_dim_v;
    for (int64_t t = b; t < e; t++) {
        const float *src = P->f + t * P->fused_stride;
        memcpy(P->q + t * nq, src, sizeof(float) * (size_t)nq);
        memcpy(P->k + t * nk, src + nq, sizeof(float) * (size_t)nk);
        memcpy(P->v + t * nv, src + nq + nk, sizeof(float) * (size_t)nv);
    }
}

/* Biases, q/k norms, V = K and V's norm, RoPE and the attention temperature
 * on q and k; then k and v go to the cache. */
static void qk_prepare_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    const tl_model *m = P->m;
    const tl_layer_weights *w = P->w;
    int64_t dk = w->head_dim_k, dv = w->head_dim_v, nq = m->n_head * dk, nk = (int64_t)w->n_head_kv * dk,
            nv = (int64_t)w->n_head_kv * dv;
    int rope_id = P->c->rope_long ? w->rope_long : w->rope;
    const tl_rope *rope = rope_id >= 0 ? &m->ropes[rope_id] : NULL;
    int32_t half = rope ? rope->dim / 2 : 0;
    float *cs = P->sc->scores + (size_t)thread * P->sc->score_stride; /* borrowed: 2*half floats */
    float *sn = cs + half;
    bool head_norm = w->q_norm && !(m->desc->flags & TL_AF_QK_NORM_FULL);
    for (int64_t t = b; t < e; t++) {
        float *q = P->q + t * nq, *k = P->k + t * nk, *v = P->v + t * nv;
        if (!w->wv.data && !w->wqkv.data)
            memcpy(v, k, sizeof(float) * (size_t)nv); /* V = K (gemma4 global layers): the raw projection */
        if (w->bq) {
            for (int64_t i = 0; i < nq; i++) q[i] += w->bq[i];
            for (int64_t i = 0; i < nk; i++) k[i] += w->bk[i];
            for (int64_t i = 0; i < nv; i++) v[i] += w->bv[i];
        }
        if (head_norm) {
            for (int32_t hd = 0; hd < m->n_head; hd++)
                rms_norm(q + hd * dk, w->q_norm, q + hd * dk, dk, m->norm_eps);
            for (int32_t hd = 0; hd < w->n_head_kv; hd++)
                rms_norm(k + hd * dk, w->k_norm, k + hd * dk, dk, m->norm_eps);
        } else if (w->q_norm) { /* olmo2: over the whole projection, before the head split */
            rms_norm(q, w->q_norm, q, nq, m->norm_eps);
            rms_norm(k, w->k_norm, k, nk, m->norm_eps);
        }
        if (m->desc->flags & TL_AF_V_NORM)
            for (int32_t hd = 0; hd < w->n_head_kv; hd++)
                rms_norm(v + hd * dv, NULL, v + hd * dv, dv, m->norm_eps);
        if (rope) {
            double pos = P->toks[t].pos;
            for (int32_t i = 0; i < half; i++) {
                double theta = pos * (double)rope->freq[i];
                cs[i] = (float)cos(theta) * rope->mscale;
                sn[i] = (float)sin(theta) * rope->mscale;
            }
            for (int32_t hd = 0; hd < m->n_head; hd++)
                rope_head(rope, m->rope_neox, q + hd * dk, cs, sn);
            for (int32_t hd = 0; hd < w->n_head_kv; hd++)
                rope_head(rope, m->rope_neox, k + hd * dk, cs, sn);
        }
        if (m->attn_temp_scale != 0.0f) {
            /* Llama 4 / Mistral 3 attention temperature, growing by steps of the original context */
            float ts = (float)(log(floor((double)P->toks[t].pos / (double)m->n_ctx_orig) + 1.0) *
                                   (double)m->attn_temp_scale + 1.0);
            for (int64_t i = 0; i < nq; i++)
                q[i] *= ts;
        }
        const fwd_token *tk = &P->toks[t];
        kv_store_row(P->c, tk->seq->path[tk->pos / TL_KV_BLOCK], P->layer, tk->pos % TL_KV_BLOCK, k, v);
    }
}

#ifdef TL_ENGINE_AVX2
/* g[i] = gate[i] / (1 + e^-gate[i]) * up[i], 8 at a time (the exp of vec_avx2.h), the rest one by one */
TL_AVX2 static void swiglu_avx2(float *g, const float *gate, const float *up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gv = _mm256_loadu_ps(gate + i);
        __m256 den = _mm256_add_ps(one, tl_exp8(_mm256_sub_ps(zero, gv)));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(gv, den), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        __m256 den = _mm256_add_ps(one, tl_exp8(_mm256_set1_ps(-gate[i])));
        g[i] = gate[i] / _mm256_cvtss_f32(den) * up[i];
    }
}
#endif

/* Gated q (qwen35): the attn_q output row, [query; gate] per head, in f:
 * the queries go to q, the gates stay in f for out_gate_rows. */
static void q_gate_split_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t dk = P->w->head_dim_k, nq = (int64_t)P->m->n_head * dk;
    for (int64_t t = b; t < e; t++)
        for (int32_t hd = 0; hd < P->m->n_head; hd++)
            memcpy(P->q + t * nq + hd * dk, P->f + t * P->fused_stride + 2 * hd * dk, sizeof(float) * (size_t)dk);
}

/* The attention output in h times sigmoid(gate) (qwen35). */
static void out_gate_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t dk = P->w->head_dim_k, dv = P->w->head_dim_v;
    for (int64_t t = b; t < e; t++)
        for (int32_t hd = 0; hd < P->m->n_head; hd++) {
            float *o = P->h + t * P->h_stride + hd * dv;
            const float *g = P->f + t * P->fused_stride + 2 * hd * dk + dk;
            for (int64_t i = 0; i < dv; i++)
                o[i] *= 1.0f / (1.0f + expf(-g[i]));
        }
}

/* g = act(gate) * up, from g and u, or from the fused [gate; up] rows in f. */
static void glu_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    int64_t F = P->m->n_ff;
    bool gelu = P->m->desc->flags & TL_AF_GELU;
    for (int64_t t = b; t < e; t++) {
        float *g = P->g + t * F;
        const float *gate = P->w->w_gate.data ? g : P->f + t * P->fused_stride;
        const float *up = P->w->w_gate.data ? P->u + t * F : P->f + t * P->fused_stride + F;
#ifdef TL_ENGINE_AVX2
        if (P->simd && !gelu) {
            swiglu_avx2(g, gate, up, F);
            continue;
        }
#endif
        for (int64_t i = 0; i < F; i++) {
            float gv = gate[i];
            g[i] = (gelu ? gelu_tanh(gv) : gv / (1.0f + expf(-gv))) * up[i];
        }
    }
}

/* x += residual_scale * post_norm(u), the norm (gemma, olmo2) in place in u. */
static void residual_rows_with(pass *P, const float *post_norm, int64_t b, int64_t e) {
    const tl_model *m = P->m;
    int64_t d = m->n_embd;
    float rs = m->residual_scale;
    for (int64_t t = b; t < e; t++) {
        float *u = P->u + t * d, *x = P->x + t * d;
        if (post_norm)
            rms_norm(u, post_norm, u, d, m->norm_eps);
        if (rs != 1.0f)
            for (int64_t i = 0; i < d; i++)
                x[i] += u[i] * rs;
        else
            for (int64_t i = 0; i < d; i++)
                x[i] += u[i];
    }
}

static void attn_residual_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    if (P->w->bo) /* gpt-oss: the output projection's bias */
        for (int64_t t = b; t < e; t++)
            for (int64_t i = 0; i < P->m->n_embd; i++)
                P->u[t * P->m->n_embd + i] += P->w->bo[i];
    residual_rows_with(P, P->w->post_attn_norm, b, e);
}

static void ffn_residual_rows(void *arg, int64_t b, int64_t e, int thread) {
    pass *P = arg;
    residual_rows_with(P, P->w->post_ffn_norm, b, e);
    float os = P->w->out_scale;
    if (os != 1.0f)
        for (int64_t i = b * P->m->n_embd; i < e * P->m->n_embd; i++)
            P->x[i] *= os;
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

/* Floats per token of the widest fused matrix output (0 when there is none). */
static int64_t fused_floats(const tl_model *m) {
    int64_t most = 0;
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        if (w->wqkv.data && w->wqkv.n_out > most)
            most = w->wqkv.n_out;
        if (!w->w_gate.data && w->w_up.n_out > most)
            most = w->w_up.n_out;
        if ((m->desc->flags & TL_AF_GATED_Q) && w->wq.n_out > most)
            most = w->wq.n_out;
    }
    return most;
}

static tl_status scratch_reserve(const tl_model *m, tl_pool *pool, fwd_scratch *sc, int32_t n_tok, pass *P,
                                 tl_error *err) {
    int64_t E = m->n_embd, nq = m->max_q, no = 0;
    for (int32_t l = 0; l < m->n_layer; l++) {
        int64_t o = (int64_t)m->n_head * m->layers[l].head_dim_v;
        no = o > no ? o : no;
    }
    int64_t hs = E > no ? E : no, F = m->n_ff, nk = tl_model_kv_k(m), nv = tl_model_kv_v(m);
    int64_t ue = F > E ? F : E, fu = fused_floats(m);
    size_t need = (size_t)n_tok * (size_t)(E + hs + nq + nk + nv + F + ue + fu);
    if (need > sc->cap_floats) {
        free(sc->buf);
        sc->buf = malloc(sizeof(float) * need);
        sc->cap_floats = sc->buf ? need : 0;
        if (!sc->buf)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for activations of %d tokens", n_tok);
    }
    /* per thread: RoPE cos/sin of one position */
    int32_t max_rope = 0;
    for (int32_t i = 0; i < m->n_ropes; i++)
        max_rope = m->ropes[i].dim > max_rope ? m->ropes[i].dim : max_rope;
    size_t stride = ((size_t)max_rope + 16) & ~(size_t)15;
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
    P->q = p, p += (size_t)n_tok * nq;
    P->k = p, p += (size_t)n_tok * nk;
    P->v = p, p += (size_t)n_tok * nv;
    P->g = p, p += (size_t)n_tok * F;
    P->u = p, p += (size_t)n_tok * ue;
    P->f = fu ? p : NULL;
    return TL_OK;
}

/* Moves the rows of the tokens with out >= 0 (residual stream, queries, the
 * query gates) to the front, in order, and makes them the pass's tokens.
 * Every later step is per token, so their results keep the same bits. */
static tl_status keep_outputs(pass *P, fwd_scratch *sc, bool gated_q, tl_error *err) {
    const tl_model *m = P->m;
    int32_t n = 0;
    for (int32_t t = 0; t < P->n_tok; t++)
        n += P->toks[t].out >= 0;
    if (n == P->n_tok)
        return TL_OK;
    if ((size_t)n > sc->cap_kept) {
        fwd_token *k = realloc(sc->kept, sizeof *k * (size_t)n);
        if (!k)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory for %d tokens", n);
        sc->kept = k;
        sc->cap_kept = (size_t)n;
    }
    int64_t E = m->n_embd, nq = (int64_t)m->n_head * P->w->head_dim_k;
    int32_t j = 0;
    for (int32_t t = 0; t < P->n_tok; t++) {
        if (P->toks[t].out < 0)
            continue;
        if (j != t) { /* j < t: a row moves only to an earlier place */
            memcpy(P->x + j * E, P->x + t * E, sizeof(float) * (size_t)E);
            memcpy(P->q + j * nq, P->q + t * nq, sizeof(float) * (size_t)nq);
            if (gated_q)
                memcpy(P->f + j * P->fused_stride, P->f + t * P->fused_stride, sizeof(float) * (size_t)P->fused_stride);
        }
        sc->kept[j++] = P->toks[t];
    }
    P->toks = sc->kept;
    P->n_tok = n;
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
    tl_pool_run(pool, n_tok, g_embd, embed_rows, &P);
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        P.layer = l;
        P.w = w;
        int64_t nq = (int64_t)m->n_head * w->head_dim_k, nv = (int64_t)w->n_head_kv * w->head_dim_v;
        P.h_stride = (int64_t)m->n_head * w->head_dim_v;
        tl_pool_run(pool, n_tok, g_embd, attn_norm_rows, &P);
        bool gated_q = m->desc->flags & TL_AF_GATED_Q;
        if (w->recurrent) {
            /* gated delta net: the layer's state instead of attention */
            if ((st = tl_dnet_forward(m->dnet, l, m->n_embd, pool, &sc->dnet, toks, n_tok, P.h, P.u, err)) != TL_OK)
                return st;
        } else {
            if (w->wqkv.data) {
                P.fused_stride = w->wqkv.n_out;
                tl_matmul(pool, &w->wqkv, P.h, n_tok, P.f);
                tl_pool_run(pool, n_tok, grain_for(w->wqkv.n_out), qkv_split_rows, &P);
            } else {
                /* q (or [q; gate]), k, v share one quantization of their input (gate/up too, below) */
                const tl_matrix *qkv[3] = {&w->wq, &w->wk, &w->wv};
                float *qkv_out[3] = {gated_q ? P.f : P.q, P.k, P.v};
                if (gated_q)
                    P.fused_stride = w->wq.n_out;
                tl_matmul_multi(pool, qkv, w->wv.data ? 3 : 2, P.h, n_tok, qkv_out);
                if (gated_q)
                    tl_pool_run(pool, n_tok, grain_for(w->wq.n_out), q_gate_split_rows, &P);
            }
            tl_pool_run(pool, n_tok, grain_for(nq + nv), qk_prepare_rows, &P);
            if (l == m->n_layer - 1) {
                /* every K/V row is stored: from here on only the tokens whose states are wanted */
                if ((st = keep_outputs(&P, sc, gated_q, err)) != TL_OK)
                    return st;
                if ((n_tok = P.n_tok) == 0)
                    return TL_OK;
            }
            /* attention output (n_tok, n_head * head_dim_v) goes into h */
            tl_attn_params ap = {
                .scale = w->attn_scale, .softcap = m->attn_softcap, .window = w->window, .sinks = w->sinks};
            if ((st = tl_attention(pool, m, c, l, &ap, P.toks, n_tok, P.q, P.h, P.h_stride, &sc->att, err)) != TL_OK)
                return st;
            if (gated_q)
                tl_pool_run(pool, n_tok, grain_for(P.h_stride), out_gate_rows, &P);
            tl_matmul(pool, &w->wo, P.h, n_tok, P.u);
        }
        tl_pool_run(pool, n_tok, g_embd, attn_residual_rows, &P);
        tl_pool_run(pool, n_tok, g_embd, ffn_norm_rows, &P);
        if (m->moe) {
            if ((st = tl_moe_ffn(m->moe, l, m->n_embd, pool, &sc->moe, P.h, n_tok, P.u, err)) != TL_OK)
                return st;
        } else {
            if (w->w_gate.data) {
                const tl_matrix *gu[2] = {&w->w_gate, &w->w_up};
                float *gu_out[2] = {P.g, P.u};
                tl_matmul_multi(pool, gu, 2, P.h, n_tok, gu_out);
            } else {
                P.fused_stride = w->w_up.n_out;
                tl_matmul(pool, &w->w_up, P.h, n_tok, P.f);
            }
            tl_pool_run(pool, n_tok, g_ff, glu_rows, &P);
            tl_matmul(pool, &w->w_down, P.g, n_tok, P.u);
        }
        tl_pool_run(pool, n_tok, g_embd, ffn_residual_rows, &P);
    }
    if (hidden_out)
        tl_pool_run(pool, n_tok, g_embd, output_norm_rows, &P);
    return TL_OK;
}

/* Granite's logit scale and the final soft-cap, per logit. */
static void logit_post_items(void *arg, int64_t b, int64_t e, int thread) {
    const void **a = arg;
    const tl_model *m = a[0];
    float *logits = (float *)a[1];
    float inv = 1.0f / m->logit_scale, cap = m->final_softcap;
    for (int64_t i = b; i < e; i++) {
        float l = logits[i];
        if (m->logit_scale != 1.0f)
            l *= inv;
        if (cap > 0.0f)
            l = cap * tanhf(l / cap);
        logits[i] = l;
    }
}

void tl_forward_logits(const tl_model *m, tl_pool *pool, const float *hidden, int32_t n_rows, float *logits) {
    if (n_rows <= 0)
        return;
    tl_matmul(pool, &m->output, hidden, n_rows, logits);
    if (m->logit_scale != 1.0f || m->final_softcap > 0.0f) {
        const void *arg[2] = {m, logits};
        tl_pool_run(pool, (int64_t)n_rows * m->n_vocab, 16384, logit_post_items, (void *)arg);
    }
}
