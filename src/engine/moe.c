/* moe.c: loading and running mixture-of-experts FFN blocks (see moe.h).
 *
 * A pass over n_tok tokens: (1) router logits for all tokens (one matmul);
 * (2) per token, the top n_used experts and their weights; (3) the routed
 * (token, slot) pairs grouped by expert, and each used expert run once as
 * three matrix products over its gathered rows; (4) per token, the slot
 * outputs summed in rank order. Only routed experts' weights are read. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/loader.h"
#include "engine/moe.h"
#include "util/error.h"

#define MAX_EXPERTS 4096

struct tl_moe_scratch {
    size_t cap_tok;     /* tokens the buffers below hold */
    int32_t n_expert, n_used, n_embd, n_ff;
    float *logits;      /* (tok, n_expert) */
    int32_t *sel;       /* (tok, n_used) expert ids, best first */
    float *wt;          /* (tok, n_used) weights */
    int32_t *count;     /* (n_expert + 1) offsets into order */
    int32_t *order;     /* (tok * n_used) slot indices t * n_used + k, grouped by expert */
    float *xg;          /* (tok, n_embd) gathered inputs of one expert */
    float *g, *u;       /* (tok, n_ff) */
    float *d;           /* (tok, n_embd) one expert's outputs */
    float *y;           /* (tok * n_used, n_embd) every slot's output */
    float *shg;         /* (tok) shared-expert gate logits */
};

/* ---- loading --------------------------------------------------------------- */

/* blk.L.<suffix> into a buffer. */
static const char *blk(char *buf, size_t cap, int32_t layer, const char *suffix) {
    snprintf(buf, cap, "blk.%d.%s", (int)layer, suffix);
    return buf;
}

tl_status tl_moe_load(const tl_gguf *g, const char *path, const char *arch, int32_t n_layer, int32_t n_embd,
                      int32_t n_ff, const tl_moe_spec *spec, tl_moe **out, tl_error *err) {
    *out = NULL;
    tl_moe *moe = calloc(1, sizeof *moe);
    if (!moe)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    tl_loader L = {.g = g, .path = path, .arch = arch};
    moe->gating = spec->gating;
    moe->act = spec->act;
    uint32_t v;
    tl_status st;
    if ((st = tl_ld_u32(&L, "expert_count", true, 0, 1, MAX_EXPERTS, &v, err)) != TL_OK)
        goto fail;
    moe->n_expert = (int32_t)v;
    if ((st = tl_ld_u32(&L, "expert_used_count", true, 0, 1, (uint32_t)moe->n_expert, &v, err)) != TL_OK)
        goto fail;
    moe->n_used = (int32_t)v;
    if ((st = tl_ld_u32(&L, "expert_feed_forward_length", n_ff / moe->n_used < 1, (uint32_t)(n_ff / moe->n_used), 1,
                        1u << 22, &v, err)) != TL_OK)
        goto fail;
    moe->n_ff_exp = (int32_t)v;
    if (spec->shared_expert) {
        if ((st = tl_ld_u32(&L, "expert_shared_feed_forward_length", false, (uint32_t)n_ff, 1, 1u << 22, &v, err)) !=
            TL_OK)
            goto fail;
        moe->n_ff_shexp = (int32_t)v;
    }
    if ((st = tl_ld_f32(&L, "expert_weights_scale", 1.0f, &moe->w_scale, err)) != TL_OK)
        goto fail;
    if (moe->w_scale == 0.0f)
        moe->w_scale = 1.0f; /* llama.cpp: 0 means unset */
    int64_t E = moe->n_expert, F = moe->n_ff_exp;
    L.vec_cap = (size_t)n_layer * ((spec->biases ? (size_t)E * (1 + 2 * (size_t)F + (size_t)n_embd) : 0) +
                                   (spec->shared_expert ? (size_t)n_embd : 0));
    moe->layers = calloc((size_t)n_layer, sizeof *moe->layers);
    moe->vectors = L.vec = malloc(sizeof(float) * (L.vec_cap ? L.vec_cap : 1));
    if (!moe->layers || !moe->vectors) {
        st = tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory for %d MoE layers", path, n_layer);
        goto fail;
    }
    for (int32_t l = 0; l < n_layer; l++) {
        tl_moe_layer *w = &moe->layers[l];
        char n[96];
        if ((st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_gate_inp.weight"), n_embd, E, 1, true, &w->router, NULL,
                               err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_gate_exps.weight"), n_embd, F, E, true, &w->gate.m,
                               &w->gate.stride, err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_up_exps.weight"), n_embd, F, E, true, &w->up.m,
                               &w->up.stride, err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_down_exps.weight"), F, n_embd, E, true, &w->down.m,
                               &w->down.stride, err)))
            goto fail;
        if (spec->biases) {
            if ((st = tl_ld_vector(&L, blk(n, sizeof n, l, "ffn_gate_inp.bias"), E, 1, true, &w->router_b, err)) ||
                (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ffn_gate_exps.bias"), F, E, true, &w->gate_b, err)) ||
                (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ffn_up_exps.bias"), F, E, true, &w->up_b, err)) ||
                (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ffn_down_exps.bias"), n_embd, E, true, &w->down_b, err)))
                goto fail;
        }
        if (spec->shared_expert) {
            int64_t S = moe->n_ff_shexp;
            if ((st = tl_ld_vector(&L, blk(n, sizeof n, l, "ffn_gate_inp_shexp.weight"), n_embd, 1, true,
                                   &w->sh_gate_inp, err)) ||
                (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_gate_shexp.weight"), n_embd, S, 1, true, &w->sh_gate,
                                   NULL, err)) ||
                (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_up_shexp.weight"), n_embd, S, 1, true, &w->sh_up, NULL,
                                   err)) ||
                (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ffn_down_shexp.weight"), S, n_embd, 1, true, &w->sh_down,
                                   NULL, err)))
                goto fail;
        }
    }
    *out = moe;
    return TL_OK;
fail:
    tl_moe_free(moe);
    return st;
}

void tl_moe_free(tl_moe *moe) {
    if (!moe)
        return;
    free(moe->layers);
    free(moe->vectors);
    free(moe);
}

static double mat_bytes(const tl_matrix *m) { return (double)m->row_bytes * (double)m->n_out; }

double tl_moe_active_bytes(const tl_moe *moe, int32_t layer) {
    const tl_moe_layer *w = &moe->layers[layer];
    double b = mat_bytes(&w->gate.m) + mat_bytes(&w->up.m) + mat_bytes(&w->down.m);
    double sh = w->sh_down.data ? mat_bytes(&w->sh_gate) + mat_bytes(&w->sh_up) + mat_bytes(&w->sh_down) : 0;
    return b * moe->n_used + sh + mat_bytes(&w->router);
}

double tl_moe_total_bytes(const tl_moe *moe, int32_t layer) {
    const tl_moe_layer *w = &moe->layers[layer];
    double b = mat_bytes(&w->gate.m) + mat_bytes(&w->up.m) + mat_bytes(&w->down.m);
    double sh = w->sh_down.data ? mat_bytes(&w->sh_gate) + mat_bytes(&w->sh_up) + mat_bytes(&w->sh_down) : 0;
    return b * moe->n_expert + sh + mat_bytes(&w->router);
}

void tl_moe_count_types(const tl_moe *moe, int32_t n_layer, double *by_type, int n_types) {
    for (int32_t l = 0; l < n_layer; l++) {
        const tl_moe_layer *w = &moe->layers[l];
        const tl_matrix *ms[] = {&w->gate.m, &w->up.m, &w->down.m};
        for (int i = 0; i < 3; i++)
            if ((int)ms[i]->type < n_types)
                by_type[ms[i]->type] += (double)ms[i]->n_in * (double)ms[i]->n_out * moe->n_expert;
    }
}

/* ---- the forward block ----------------------------------------------------- */

void tl_moe_scratch_free(tl_moe_scratch *sc) {
    if (!sc)
        return;
    free(sc->logits);
    free(sc->sel);
    free(sc->wt);
    free(sc->count);
    free(sc->order);
    free(sc->xg);
    free(sc->g);
    free(sc->u);
    free(sc->d);
    free(sc->y);
    free(sc->shg);
    free(sc);
}

static tl_status scratch_get(tl_moe_scratch **psc, const tl_moe *moe, int32_t n_embd, int32_t n_tok,
                             tl_error *err) {
    tl_moe_scratch *sc = *psc;
    int32_t F = moe->n_ff_exp > moe->n_ff_shexp ? moe->n_ff_exp : moe->n_ff_shexp;
    if (sc && sc->cap_tok >= (size_t)n_tok && sc->n_expert == moe->n_expert && sc->n_used == moe->n_used &&
        sc->n_embd == n_embd && sc->n_ff == F)
        return TL_OK;
    tl_moe_scratch_free(sc);
    *psc = sc = calloc(1, sizeof *sc);
    if (!sc)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    size_t T = (size_t)n_tok, K = (size_t)moe->n_used, E = (size_t)moe->n_expert;
    sc->cap_tok = T;
    sc->n_expert = moe->n_expert;
    sc->n_used = moe->n_used;
    sc->n_embd = n_embd;
    sc->n_ff = F;
    sc->logits = malloc(sizeof(float) * T * E);
    sc->sel = malloc(sizeof(int32_t) * T * K);
    sc->wt = malloc(sizeof(float) * T * K);
    sc->count = malloc(sizeof(int32_t) * (E + 1));
    sc->order = malloc(sizeof(int32_t) * T * K);
    sc->xg = malloc(sizeof(float) * T * (size_t)n_embd);
    sc->g = malloc(sizeof(float) * T * (size_t)F);
    sc->u = malloc(sizeof(float) * T * (size_t)F);
    sc->d = malloc(sizeof(float) * T * (size_t)n_embd);
    sc->y = malloc(sizeof(float) * T * K * (size_t)n_embd);
    sc->shg = malloc(sizeof(float) * T);
    if (!sc->logits || !sc->sel || !sc->wt || !sc->count || !sc->order || !sc->xg || !sc->g || !sc->u || !sc->d ||
        !sc->y || !sc->shg) {
        tl_moe_scratch_free(sc);
        *psc = NULL;
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for the expert activations of %d tokens", n_tok);
    }
    return TL_OK;
}

/* Top k of x[0..n) by value, best first (ties: the lower index). */
static void top_k(const float *x, int32_t n, int32_t k, int32_t *idx) {
    for (int32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t e = 0; e < n; e++) {
            bool taken = false;
            for (int32_t i = 0; i < j; i++)
                taken |= idx[i] == e;
            if (!taken && (best < 0 || x[e] > x[best]))
                best = e;
        }
        idx[j] = best;
    }
}

/* Router logits of one token -> its experts and weights. */
static void route_token(const tl_moe *moe, const tl_moe_layer *w, float *logits, int32_t *sel, float *wt) {
    int32_t E = moe->n_expert, K = moe->n_used;
    if (w->router_b)
        for (int32_t e = 0; e < E; e++)
            logits[e] += w->router_b[e];
    if (moe->gating == TL_MOE_TOPK_SOFTMAX) {
        top_k(logits, E, K, sel);
        float mx = logits[sel[0]];
        double sum = 0;
        for (int32_t k = 0; k < K; k++) {
            wt[k] = expf(logits[sel[k]] - mx);
            sum += wt[k];
        }
        float inv = (float)(1.0 / sum);
        for (int32_t k = 0; k < K; k++)
            wt[k] *= inv;
    } else {
        float mx = logits[0];
        for (int32_t e = 1; e < E; e++)
            mx = logits[e] > mx ? logits[e] : mx;
        double sum = 0;
        for (int32_t e = 0; e < E; e++) {
            logits[e] = expf(logits[e] - mx);
            sum += logits[e];
        }
        float inv = (float)(1.0 / sum);
        for (int32_t e = 0; e < E; e++)
            logits[e] *= inv;
        top_k(logits, E, K, sel);
        for (int32_t k = 0; k < K; k++)
            wt[k] = logits[sel[k]];
        if (moe->gating == TL_MOE_SOFTMAX_NORM) {
            float s = 0;
            for (int32_t k = 0; k < K; k++)
                s += wt[k];
            if (s < 6.103515625e-5f)
                s = 6.103515625e-5f; /* as llama.cpp: the smallest normal F16 */
            for (int32_t k = 0; k < K; k++)
                wt[k] /= s;
        }
    }
    if (moe->w_scale != 1.0f)
        for (int32_t k = 0; k < K; k++)
            wt[k] *= moe->w_scale;
}

typedef struct moe_job {
    const tl_moe *moe;
    const tl_moe_layer *w;
    tl_moe_scratch *sc;
    const float *h;
    float *out;
    int32_t n_embd;
    int32_t expert;  /* for the per-expert steps */
    int32_t n_rows;  /* rows gathered for it */
    const int32_t *rows; /* their slot indices */
} moe_job;

static void route_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int32_t E = J->moe->n_expert, K = J->moe->n_used;
    for (int64_t t = b; t < e; t++)
        route_token(J->moe, J->w, J->sc->logits + t * E, J->sc->sel + t * K, J->sc->wt + t * K);
}

static void gather_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int32_t K = J->moe->n_used;
    for (int64_t i = b; i < e; i++)
        memcpy(J->sc->xg + i * J->n_embd, J->h + (size_t)(J->rows[i] / K) * J->n_embd, sizeof(float) * J->n_embd);
}

/* g = act(g + gate bias, u + up bias) for the gathered rows of one expert. */
static void act_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int64_t F = J->moe->n_ff_exp;
    const float *gb = J->w->gate_b ? J->w->gate_b + (size_t)J->expert * F : NULL;
    const float *ub = J->w->up_b ? J->w->up_b + (size_t)J->expert * F : NULL;
    for (int64_t i = b; i < e; i++) {
        float *g = J->sc->g + i * F, *u = J->sc->u + i * F;
        if (J->moe->act == TL_MOE_SWIGLU_OAI) {
            const float alpha = 1.702f, limit = 7.0f;
            for (int64_t j = 0; j < F; j++) {
                float x = g[j] + (gb ? gb[j] : 0.0f), y = u[j] + (ub ? ub[j] : 0.0f);
                x = x < limit ? x : limit;
                y = y < -limit ? -limit : y > limit ? limit : y;
                g[j] = x / (1.0f + expf(alpha * -x)) * (y + 1.0f);
            }
        } else {
            for (int64_t j = 0; j < F; j++) {
                float x = g[j] + (gb ? gb[j] : 0.0f), y = u[j] + (ub ? ub[j] : 0.0f);
                g[j] = x / (1.0f + expf(-x)) * y;
            }
        }
    }
}

/* Each gathered row's output (+ down bias) into its slot. */
static void scatter_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int64_t D = J->n_embd;
    const float *db = J->w->down_b ? J->w->down_b + (size_t)J->expert * D : NULL;
    for (int64_t i = b; i < e; i++) {
        float *dst = J->sc->y + (size_t)J->rows[i] * D;
        const float *src = J->sc->d + i * D;
        if (db)
            for (int64_t j = 0; j < D; j++)
                dst[j] = src[j] + db[j];
        else
            memcpy(dst, src, sizeof(float) * (size_t)D);
    }
}

/* out[t] = sum over k in rank order of wt[t,k] * y[t,k]. */
static void combine_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int32_t K = J->moe->n_used;
    int64_t D = J->n_embd;
    for (int64_t t = b; t < e; t++) {
        float *o = J->out + t * D;
        const float *wt = J->sc->wt + t * K;
        const float *y = J->sc->y + (size_t)t * K * D;
        for (int64_t j = 0; j < D; j++)
            o[j] = y[j] * wt[0];
        for (int32_t k = 1; k < K; k++)
            for (int64_t j = 0; j < D; j++)
                o[j] += y[k * D + j] * wt[k];
    }
}

/* Shared expert (qwen2moe): out[t] += sigmoid(gate_inp · h[t]) * down(silu(gate h) * up h). */
static void shared_gate_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int64_t D = J->n_embd, S = J->moe->n_ff_shexp;
    for (int64_t t = b; t < e; t++) {
        const float *h = J->h + t * D;
        double acc = 0; /* fixed order per token */
        for (int64_t j = 0; j < D; j++)
            acc += (double)J->w->sh_gate_inp[j] * h[j];
        J->sc->shg[t] = (float)acc;
        float *g = J->sc->g + t * S, *u = J->sc->u + t * S;
        for (int64_t j = 0; j < S; j++)
            g[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
    }
}

static void shared_add_rows(void *arg, int64_t b, int64_t e, int thread) {
    moe_job *J = arg;
    int64_t D = J->n_embd;
    for (int64_t t = b; t < e; t++) {
        float s = J->sc->shg[t];
        float gate = 1.0f / (1.0f + expf(-s));
        const float *d = J->sc->d + t * D;
        float *o = J->out + t * D;
        for (int64_t j = 0; j < D; j++)
            o[j] += d[j] * gate;
    }
}

static tl_matrix expert(const tl_expert_mats *s, int32_t e) {
    tl_matrix m = s->m;
    m.data = (const uint8_t *)s->m.data + (size_t)e * s->stride;
    return m;
}

tl_status tl_moe_ffn(const tl_moe *moe, int32_t layer, int32_t n_embd, tl_pool *pool, tl_moe_scratch **psc,
                     const float *h, int32_t n_tok, float *out, tl_error *err) {
    if (n_tok <= 0)
        return TL_OK;
    tl_status st = scratch_get(psc, moe, n_embd, n_tok, err);
    if (st != TL_OK)
        return st;
    tl_moe_scratch *sc = *psc;
    const tl_moe_layer *w = &moe->layers[layer];
    int32_t E = moe->n_expert, K = moe->n_used;
    moe_job J = {.moe = moe, .w = w, .sc = sc, .h = h, .out = out, .n_embd = n_embd};
    int64_t grain = 8192 / (n_embd > 0 ? n_embd : 1);
    grain = grain > 1 ? grain : 1;

    tl_matmul(pool, &w->router, h, n_tok, sc->logits);
    tl_pool_run(pool, n_tok, grain, route_rows, &J);

    /* group the slots by expert (counting sort: token order within an expert) */
    memset(sc->count, 0, sizeof(int32_t) * (size_t)(E + 1));
    int64_t n_slots = (int64_t)n_tok * K;
    for (int64_t s = 0; s < n_slots; s++)
        sc->count[sc->sel[s] + 1]++;
    for (int32_t e = 0; e < E; e++)
        sc->count[e + 1] += sc->count[e];
    for (int64_t s = 0; s < n_slots; s++)
        sc->order[sc->count[sc->sel[s]]++] = (int32_t)s;
    for (int32_t e = E; e > 0; e--)
        sc->count[e] = sc->count[e - 1];
    sc->count[0] = 0;

    int64_t F = moe->n_ff_exp;
    int64_t g_ff = 8192 / (F > 0 ? F : 1);
    g_ff = g_ff > 1 ? g_ff : 1;
    for (int32_t e = 0; e < E; e++) {
        int32_t n = sc->count[e + 1] - sc->count[e];
        if (n == 0)
            continue;
        J.expert = e;
        J.n_rows = n;
        J.rows = sc->order + sc->count[e];
        tl_pool_run(pool, n, grain, gather_rows, &J);
        tl_matrix mg = expert(&w->gate, e), mu = expert(&w->up, e), md = expert(&w->down, e);
        tl_matmul(pool, &mg, sc->xg, n, sc->g);
        tl_matmul(pool, &mu, sc->xg, n, sc->u);
        tl_pool_run(pool, n, g_ff, act_rows, &J);
        tl_matmul(pool, &md, sc->g, n, sc->d);
        tl_pool_run(pool, n, grain, scatter_rows, &J);
    }
    tl_pool_run(pool, n_tok, grain, combine_rows, &J);

    if (w->sh_down.data) {
        int64_t S = moe->n_ff_shexp;
        int64_t g_sh = 8192 / (S > 0 ? S : 1);
        tl_matmul(pool, &w->sh_gate, h, n_tok, sc->g);
        tl_matmul(pool, &w->sh_up, h, n_tok, sc->u);
        tl_pool_run(pool, n_tok, g_sh > 1 ? g_sh : 1, shared_gate_rows, &J);
        tl_matmul(pool, &w->sh_down, sc->g, n_tok, sc->d);
        tl_pool_run(pool, n_tok, grain, shared_add_rows, &J);
    }
    return TL_OK;
}
