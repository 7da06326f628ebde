/* deltanet.c: loading and running gated delta-net layers (see deltanet.h).
 *
 * A pass: the four input projections for all tokens (shared matmuls); then
 * per sequence run (its consecutive tokens) the causal convolution, one item
 * per (run, 64 channels), and the delta rule, one item per (run, value
 * head), each walking its tokens in order from the sequence's working state
 * and leaving it there; then the gated RMS norm and the output projection.
 * A kv_seq asking for a snapshot at position p (rsnap_pos) gets the state
 * after token p-1 copied into rsnap while the pass goes by. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/deltanet.h"
#include "engine/forward.h"
#include "engine/loader.h"
#include "util/error.h"

#define CONV_CHANNELS 64 /* channels per conv work item */

struct tl_dnet_scratch {
    size_t cap_tok;
    int32_t conv_dim, value_dim, n_v;
    float *qkv;   /* (tok, conv_dim) projections, then conv + SiLU outputs */
    float *z;     /* (tok, value_dim) */
    float *beta;  /* (tok, n_v) */
    float *g;     /* (tok, n_v) */
    float *o;     /* (tok, value_dim) */
    int32_t *run; /* (tok + 1) first token of each sequence run */
    int32_t n_run;
};

/* ---- loading --------------------------------------------------------------- */

static const char *blk(char *buf, size_t cap, int32_t layer, const char *suffix) {
    snprintf(buf, cap, "blk.%d.%s", (int)layer, suffix);
    return buf;
}

tl_status tl_dnet_load(const tl_gguf *g, const char *path, const char *arch, int32_t n_layer, int32_t n_embd,
                       float eps, const bool *recurrent, tl_dnet **out, tl_error *err) {
    *out = NULL;
    tl_dnet *d = calloc(1, sizeof *d);
    if (!d)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    tl_loader L = {.g = g, .path = path, .arch = arch};
    uint32_t kernel, state, inner, rank, groups;
    tl_status st;
    if ((st = tl_ld_u32(&L, "ssm.conv_kernel", true, 0, 1, 64, &kernel, err)) ||
        (st = tl_ld_u32(&L, "ssm.state_size", true, 0, 1, 4096, &state, err)) ||
        (st = tl_ld_u32(&L, "ssm.inner_size", true, 0, 1, 1u << 20, &inner, err)) ||
        (st = tl_ld_u32(&L, "ssm.time_step_rank", true, 0, 1, 4096, &rank, err)) ||
        (st = tl_ld_u32(&L, "ssm.group_count", true, 0, 1, 4096, &groups, err)))
        goto fail;
    if (inner % rank || rank % groups || inner / rank != state) {
        st = tl_error_set(err, TL_ERR_FORMAT,
                          "%s: %s.ssm.inner_size %u / time_step_rank %u must equal state_size %u, and time_step_rank "
                          "be a multiple of group_count %u",
                          path, arch, inner, rank, state, groups);
        goto fail;
    }
    d->kernel = (int32_t)kernel;
    d->head_k = (int32_t)state;
    d->n_k = (int32_t)groups;
    d->n_v = (int32_t)rank;
    d->head_v = (int32_t)(inner / rank);
    d->key_dim = d->head_k * d->n_k;
    d->value_dim = (int32_t)inner;
    d->conv_dim = 2 * d->key_dim + d->value_dim;
    d->eps = eps;
    d->layer_floats = (int64_t)(d->kernel - 1) * d->conv_dim + (int64_t)d->n_v * d->head_v * d->head_v;
    d->layers = calloc((size_t)n_layer, sizeof *d->layers);
    int32_t n_rec = 0;
    for (int32_t l = 0; l < n_layer; l++)
        n_rec += recurrent[l];
    L.vec_cap = (size_t)n_rec * ((size_t)d->conv_dim * kernel + 2 * (size_t)d->n_v + (size_t)d->head_v);
    d->vectors = L.vec = malloc(sizeof(float) * (L.vec_cap ? L.vec_cap : 1));
    if (!d->layers || !d->vectors) {
        st = tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory for %d layers", path, n_layer);
        goto fail;
    }
    for (int32_t l = 0; l < n_layer; l++) {
        tl_dnet_layer *w = &d->layers[l];
        if (!recurrent[l])
            continue;
        char n[96];
        w->recurrent = true;
        w->state_off = (int64_t)d->n_recurrent++ * d->layer_floats;
        if ((st = tl_ld_matrix(&L, blk(n, sizeof n, l, "attn_qkv.weight"), n_embd, d->conv_dim, 1, true, &w->wqkv,
                               NULL, err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "attn_gate.weight"), n_embd, d->value_dim, 1, true, &w->wz,
                               NULL, err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ssm_beta.weight"), n_embd, d->n_v, 1, true, &w->wbeta, NULL,
                               err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ssm_alpha.weight"), n_embd, d->n_v, 1, true, &w->walpha, NULL,
                               err)) ||
            (st = tl_ld_matrix(&L, blk(n, sizeof n, l, "ssm_out.weight"), d->value_dim, n_embd, 1, true, &w->wout,
                               NULL, err)) ||
            (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ssm_conv1d.weight"), d->kernel, d->conv_dim, true, &w->conv,
                               err)) ||
            (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ssm_dt.bias"), d->n_v, 1, true, &w->dt_bias, err)) ||
            (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ssm_a"), d->n_v, 1, true, &w->a, err)) ||
            (st = tl_ld_vector(&L, blk(n, sizeof n, l, "ssm_norm.weight"), d->head_v, 1, true, &w->norm, err)))
            goto fail;
    }
    d->state_floats = (int64_t)d->n_recurrent * d->layer_floats;
    *out = d;
    return TL_OK;
fail:
    tl_dnet_free(d);
    return st;
}

void tl_dnet_free(tl_dnet *d) {
    if (!d)
        return;
    free(d->layers);
    free(d->vectors);
    free(d);
}

/* ---- the layer --------------------------------------------------------------- */

void tl_dnet_scratch_free(tl_dnet_scratch *sc) {
    if (!sc)
        return;
    free(sc->qkv);
    free(sc->z);
    free(sc->beta);
    free(sc->g);
    free(sc->o);
    free(sc->run);
    free(sc);
}

static tl_status scratch_get(tl_dnet_scratch **psc, const tl_dnet *d, int32_t n_tok, tl_error *err) {
    tl_dnet_scratch *sc = *psc;
    if (sc && sc->cap_tok >= (size_t)n_tok && sc->conv_dim == d->conv_dim && sc->value_dim == d->value_dim &&
        sc->n_v == d->n_v)
        return TL_OK;
    tl_dnet_scratch_free(sc);
    *psc = sc = calloc(1, sizeof *sc);
    if (!sc)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    size_t T = (size_t)n_tok;
    sc->cap_tok = T;
    sc->conv_dim = d->conv_dim;
    sc->value_dim = d->value_dim;
    sc->n_v = d->n_v;
    sc->qkv = malloc(sizeof(float) * T * (size_t)d->conv_dim);
    sc->z = malloc(sizeof(float) * T * (size_t)d->value_dim);
    sc->beta = malloc(sizeof(float) * T * (size_t)d->n_v);
    sc->g = malloc(sizeof(float) * T * (size_t)d->n_v);
    sc->o = malloc(sizeof(float) * T * (size_t)d->value_dim);
    sc->run = malloc(sizeof(int32_t) * (T + 1));
    if (!sc->qkv || !sc->z || !sc->beta || !sc->g || !sc->o || !sc->run) {
        tl_dnet_scratch_free(sc);
        *psc = NULL;
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for the recurrent activations of %d tokens", n_tok);
    }
    return TL_OK;
}

typedef struct dnet_job {
    const tl_dnet *d;
    const tl_dnet_layer *w;
    tl_dnet_scratch *sc;
    const fwd_token *toks;
    int64_t n_embd;
} dnet_job;

/* The working state of toks[t]'s sequence for this layer. The pass owns the
 * sequence's working buffers (kv_seq.rstate / rsnap) while it runs. */
static float *seq_state(const dnet_job *J, int32_t t) {
    return ((kv_seq *)J->toks[t].seq)->rstate + J->w->state_off;
}

static float *seq_snap(const dnet_job *J, int32_t t) {
    kv_seq *s = (kv_seq *)J->toks[t].seq;
    return s->rsnap_pos == J->toks[t].pos + 1 ? s->rsnap + J->w->state_off : NULL;
}

/* Item (run r, channel block cb): the causal conv of those channels over the
 * run's tokens, in place in qkv, then SiLU; the conv state is the last
 * kernel-1 inputs, oldest first: hist[k * conv_dim + c]. */
static void conv_items(void *arg, int64_t b, int64_t e, int thread) {
    dnet_job *J = arg;
    const tl_dnet *d = J->d;
    int32_t C = d->conv_dim, K = d->kernel, nblk = (C + CONV_CHANNELS - 1) / CONV_CHANNELS;
    for (int64_t item = b; item < e; item++) {
        int32_t r = (int32_t)(item / nblk), c0 = (int32_t)(item % nblk) * CONV_CHANNELS;
        int32_t c1 = c0 + CONV_CHANNELS < C ? c0 + CONV_CHANNELS : C;
        int32_t t0 = J->sc->run[r], t1 = J->sc->run[r + 1];
        float *hist = seq_state(J, t0);
        for (int32_t t = t0; t < t1; t++) {
            float *x = J->sc->qkv + (size_t)t * C;
            for (int32_t c = c0; c < c1; c++) {
                const float *wc = J->w->conv + (size_t)c * K;
                float in = x[c], sum = 0.0f;
                for (int32_t k = 0; k < K - 1; k++)
                    sum += hist[(size_t)k * C + c] * wc[k];
                sum += in * wc[K - 1];
                for (int32_t k = 0; k + 1 < K - 1; k++)
                    hist[(size_t)k * C + c] = hist[(size_t)(k + 1) * C + c];
                if (K > 1)
                    hist[(size_t)(K - 2) * C + c] = in;
                x[c] = sum / (1.0f + expf(-sum));
            }
            float *snap = seq_snap(J, t);
            if (snap)
                for (int32_t k = 0; k < K - 1; k++)
                    memcpy(snap + (size_t)k * C + c0, hist + (size_t)k * C + c0, sizeof(float) * (size_t)(c1 - c0));
        }
    }
}

/* x / max(||x||, eps) */
static void l2_norm(float *x, int32_t n, float eps) {
    double ss = 0;
    for (int32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float s = 1.0f / fmaxf(sqrtf((float)ss), eps);
    for (int32_t i = 0; i < n; i++)
        x[i] *= s;
}

static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* Per token: L2-normed q and k heads, beta = sigmoid, g = softplus(alpha + dt) * a. */
static void gates_rows(void *arg, int64_t b, int64_t e, int thread) {
    dnet_job *J = arg;
    const tl_dnet *d = J->d;
    for (int64_t t = b; t < e; t++) {
        float *x = J->sc->qkv + t * d->conv_dim;
        for (int32_t h = 0; h < 2 * d->n_k; h++) /* q heads, then k heads */
            l2_norm(x + (size_t)h * d->head_k, d->head_k, d->eps);
        float *beta = J->sc->beta + t * d->n_v, *g = J->sc->g + t * d->n_v;
        for (int32_t h = 0; h < d->n_v; h++) {
            beta[h] = 1.0f / (1.0f + expf(-beta[h]));
            g[h] = softplus(g[h] + J->w->dt_bias[h]) * J->w->a[h];
        }
    }
}

/* Item (run r, value head h): the delta rule over the run's tokens. S is
 * stored row j (value dim) over i (key dim): S[j * dk + i]. */
static void delta_items(void *arg, int64_t b, int64_t e, int thread) {
    dnet_job *J = arg;
    const tl_dnet *d = J->d;
    int32_t dk = d->head_k, dv = d->head_v;
    float scale = 1.0f / sqrtf((float)dk);
    for (int64_t item = b; item < e; item++) {
        int32_t r = (int32_t)(item / d->n_v), h = (int32_t)(item % d->n_v), hk = h % d->n_k;
        int32_t t0 = J->sc->run[r], t1 = J->sc->run[r + 1];
        size_t s_off = (size_t)(d->kernel - 1) * d->conv_dim + (size_t)h * dv * dk;
        float *S = seq_state(J, t0) + s_off;
        for (int32_t t = t0; t < t1; t++) {
            const float *x = J->sc->qkv + (size_t)t * d->conv_dim;
            const float *q = x + (size_t)hk * dk, *k = x + d->key_dim + (size_t)hk * dk;
            const float *v = x + 2 * d->key_dim + (size_t)h * dv;
            float beta = J->sc->beta[(size_t)t * d->n_v + h], eg = expf(J->sc->g[(size_t)t * d->n_v + h]);
            float *o = J->sc->o + (size_t)t * d->value_dim + (size_t)h * dv;
            for (int32_t j = 0; j < dv; j++) {
                float *Sj = S + (size_t)j * dk;
                float sk = 0.0f;
                for (int32_t i = 0; i < dk; i++) {
                    Sj[i] *= eg;
                    sk += Sj[i] * k[i];
                }
                float delta = (v[j] - sk) * beta;
                float sq = 0.0f;
                for (int32_t i = 0; i < dk; i++) {
                    Sj[i] += k[i] * delta;
                    sq += Sj[i] * q[i];
                }
                o[j] = sq * scale;
            }
            float *snap = seq_snap(J, t);
            if (snap)
                memcpy(snap + s_off, S, sizeof(float) * (size_t)dv * dk);
        }
    }
}

/* o = RMSNorm(o per head) * norm * silu(z), in place. */
static void out_norm_rows(void *arg, int64_t b, int64_t e, int thread) {
    dnet_job *J = arg;
    const tl_dnet *d = J->d;
    for (int64_t t = b; t < e; t++)
        for (int32_t h = 0; h < d->n_v; h++) {
            float *o = J->sc->o + t * d->value_dim + (size_t)h * d->head_v;
            const float *z = J->sc->z + t * d->value_dim + (size_t)h * d->head_v;
            double ss = 0;
            for (int32_t j = 0; j < d->head_v; j++)
                ss += (double)o[j] * o[j];
            float s = (float)(1.0 / sqrt(ss / d->head_v + (double)d->eps));
            for (int32_t j = 0; j < d->head_v; j++)
                o[j] = o[j] * s * J->w->norm[j] * (z[j] / (1.0f + expf(-z[j])));
        }
}

tl_status tl_dnet_forward(const tl_dnet *d, int32_t layer, int32_t n_embd, tl_pool *pool, tl_dnet_scratch **psc,
                          const fwd_token *toks, int32_t n_tok, const float *h, float *out, tl_error *err) {
    if (n_tok <= 0)
        return TL_OK;
    tl_status st = scratch_get(psc, d, n_tok, err);
    if (st != TL_OK)
        return st;
    tl_dnet_scratch *sc = *psc;
    const tl_dnet_layer *w = &d->layers[layer];
    dnet_job J = {.d = d, .w = w, .sc = sc, .toks = toks, .n_embd = n_embd};
    for (int32_t t = 0; t < n_tok; t++)
        if (!toks[t].seq->rstate)
            return tl_error_set(err, TL_ERR_INTERNAL, "recurrent layer %d: sequence without a state", layer);
    sc->n_run = 0;
    for (int32_t t = 0; t < n_tok; t++)
        if (t == 0 || toks[t].seq != toks[t - 1].seq)
            sc->run[sc->n_run++] = t;
    sc->run[sc->n_run] = n_tok;

    tl_matmul(pool, &w->wqkv, h, n_tok, sc->qkv);
    tl_matmul(pool, &w->wz, h, n_tok, sc->z);
    tl_matmul(pool, &w->wbeta, h, n_tok, sc->beta);
    tl_matmul(pool, &w->walpha, h, n_tok, sc->g);
    int32_t nblk = (d->conv_dim + CONV_CHANNELS - 1) / CONV_CHANNELS;
    tl_pool_run(pool, (int64_t)sc->n_run * nblk, 1, conv_items, &J);
    tl_pool_run(pool, n_tok, 4, gates_rows, &J);
    tl_pool_run(pool, (int64_t)sc->n_run * d->n_v, 1, delta_items, &J);
    tl_pool_run(pool, n_tok, 4, out_norm_rows, &J);
    tl_matmul(pool, &w->wout, sc->o, n_tok, out);
    return TL_OK;
}
