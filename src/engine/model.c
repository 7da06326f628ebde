/* model.c: loading a llama / qwen2 / qwen3 GGUF into a tl_model.
 *
 * Every hyperparameter is read from the architecture's keys and every tensor
 * is checked (present, shape, a type the kernels can multiply) before the
 * model is handed out, so the forward pass never meets a surprise. Errors
 * name the file, the key or the tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model_internal.h"
#include "util/error.h"

/* Hyperparameters beyond these are not a real model, and would only turn a
 * corrupt header into a huge allocation. */
#define MAX_LAYERS 4096
#define MAX_HEADS 4096
#define MAX_HEAD_DIM 4096

typedef struct loader {
    tl_model *m;
    const char *path;
    size_t vec_used, vec_cap; /* floats in m->vectors */
} loader;

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static tl_status read_u32_key(loader *L, const char *suffix, bool required, uint32_t def, uint32_t *out,
                              tl_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->arch_name, suffix);
    if (!tl_gguf_get(L->m->gguf, key)) {
        if (required)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
        *out = def;
        return TL_OK;
    }
    if (tl_gguf_get_u32(L->m->gguf, key, out, err) != TL_OK)
        return tl_error_wrap(err, "%s", L->path);
    return TL_OK;
}

static tl_status read_f32_key(loader *L, const char *suffix, float def, float *out, tl_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->arch_name, suffix);
    if (!tl_gguf_get(L->m->gguf, key)) {
        *out = def;
        return TL_OK;
    }
    if (tl_gguf_get_f32(L->m->gguf, key, out, err) != TL_OK)
        return tl_error_wrap(err, "%s", L->path);
    return TL_OK;
}

static const char *shape_str(const tl_gguf_tensor *t, char *buf, size_t cap) {
    int w = snprintf(buf, cap, "[%lld", (long long)t->ne[0]);
    for (uint32_t d = 1; d < t->n_dims && w > 0 && (size_t)w < cap; d++)
        w += snprintf(buf + w, cap - (size_t)w, ", %lld", (long long)t->ne[d]);
    if (w > 0 && (size_t)w < cap)
        snprintf(buf + w, cap - (size_t)w, "]");
    return buf;
}

/* Finds a tensor and checks its shape {ne0} (ne1 == 0) or {ne0, ne1}. */
static tl_status find_tensor(loader *L, const char *name, int64_t ne0, int64_t ne1, bool required,
                             const tl_gguf_tensor **out, tl_error *err) {
    const tl_gguf_tensor *t = tl_gguf_find_tensor(L->m->gguf, name);
    *out = t;
    if (!t)
        return required ? tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor '%s'", L->path, name) : TL_OK;
    int64_t want1 = ne1 ? ne1 : 1;
    if (t->ne[0] != ne0 || t->ne[1] != want1 || t->ne[2] != 1 || t->ne[3] != 1) {
        char got[96];
        if (ne1)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected [%lld, %lld]", L->path,
                                name, shape_str(t, got, sizeof got), (long long)ne0, (long long)ne1);
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected [%lld]", L->path, name,
                            shape_str(t, got, sizeof got), (long long)ne0);
    }
    return TL_OK;
}

static tl_status load_matrix(loader *L, const char *name, int64_t n_in, int64_t n_out, bool required,
                             tl_matrix *mat, tl_error *err) {
    const tl_gguf_tensor *t;
    memset(mat, 0, sizeof *mat);
    tl_status st = find_tensor(L, name, n_in, n_out, required, &t, err);
    if (st != TL_OK || !t)
        return st;
    if (!tl_kernels_supports(t->type))
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which the engine cannot multiply",
                            L->path, name, tl_type_name(t->type));
    size_t row_bytes = tl_type_row_bytes(t->type, n_in);
    if (!row_bytes || t->nbytes < row_bytes * (size_t)n_out)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s': %zu bytes of data, %s rows of %lld need more",
                            L->path, name, t->nbytes, tl_type_name(t->type), (long long)n_in);
    mat->type = t->type;
    mat->n_in = n_in;
    mat->n_out = n_out;
    mat->row_bytes = row_bytes;
    mat->data = t->data;
    return TL_OK;
}

/* A 1-D tensor of n values, converted to float32 in m->vectors; *out stays
 * NULL when the tensor is absent and optional. */
static tl_status load_vector(loader *L, const char *name, int64_t n, bool required, const float **out,
                             tl_error *err) {
    const tl_gguf_tensor *t;
    *out = NULL;
    tl_status st = find_tensor(L, name, n, 0, required, &t, err);
    if (st != TL_OK || !t)
        return st;
    if (t->type != TL_TYPE_F32 && t->type != TL_TYPE_F16 && t->type != TL_TYPE_BF16)
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s; vectors must be F32, F16 or BF16",
                            L->path, name, tl_type_name(t->type));
    if (t->nbytes < tl_type_row_bytes(t->type, n))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' is too short", L->path, name);
    if (L->vec_used + (size_t)n > L->vec_cap)
        return tl_error_set(err, TL_ERR_INTERNAL, "%s: vector storage overflow at '%s'", L->path, name);
    float *dst = L->m->vectors + L->vec_used;
    L->vec_used += (size_t)n;
    tl_dequant_row(t->type, t->data, dst, n);
    *out = dst;
    return TL_OK;
}

/* Precomputes the per-pair RoPE frequencies: base^(-2i/d), divided by the
 * rope_freqs factors (Llama 3.1+) and adjusted for linear or YaRN scaling. */
static tl_status setup_rope(loader *L, tl_error *err) {
    tl_model *m = L->m;
    float base;
    tl_status st = read_f32_key(L, "rope.freq_base", 10000.0f, &base, err);
    if (st != TL_OK)
        return st;
    if (!(base > 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.freq_base is %g, must be positive", L->path,
                            m->arch_name, base);
    uint32_t rope_dim;
    if ((st = read_u32_key(L, "rope.dimension_count", false, (uint32_t)m->head_dim_k, &rope_dim, err)) != TL_OK)
        return st;
    if (rope_dim == 0 || rope_dim % 2 || (int32_t)rope_dim > m->head_dim_k)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.dimension_count = %u does not fit head size %d",
                            L->path, m->arch_name, rope_dim, m->head_dim_k);
    m->rope_dim = (int32_t)rope_dim;
    int32_t half = m->rope_dim / 2;

    /* Scaling: type "linear" divides positions by factor; "yarn" blends the
     * interpolated and extrapolated frequencies by a ramp over the dims. */
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch_name);
    tl_gguf_str type = {"none", 4};
    if (tl_gguf_get(m->gguf, key) && tl_gguf_get_str(m->gguf, key, &type, err) != TL_OK)
        return tl_error_wrap(err, "%s", L->path);
    float factor = 1.0f;
    if ((st = read_f32_key(L, "rope.scaling.factor", 1.0f, &factor, err)) != TL_OK)
        return st;
    if (!tl_gguf_get(m->gguf, key)) { /* older files: rope.scale_linear */
        float lin;
        if ((st = read_f32_key(L, "rope.scale_linear", 1.0f, &lin, err)) != TL_OK)
            return st;
        if (lin != 1.0f) {
            type = (tl_gguf_str){"linear", 6};
            factor = lin;
        }
    }
    bool linear = tl_gguf_str_eq(type, "linear"), yarn = tl_gguf_str_eq(type, "yarn");
    if (!linear && !yarn && !tl_gguf_str_eq(type, "none"))
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: rope scaling type '%.*s' is not supported", L->path,
                            (int)(type.len > 32 ? 32 : type.len), type.ptr);
    if (!(factor > 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: rope scaling factor %g must be positive", L->path, factor);
    double freq_scale = (linear || yarn) ? 1.0 / factor : 1.0;

    const tl_gguf_tensor *ff = tl_gguf_find_tensor(m->gguf, "rope_freqs.weight");
    const float *factors = NULL;
    if (ff && (st = load_vector(L, "rope_freqs.weight", half, true, &factors, err)) != TL_OK)
        return st;

    m->rope_freq = malloc(sizeof(float) * (size_t)half);
    if (!m->rope_freq)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    m->rope_mscale = 1.0f;
    double corr_lo = 0, corr_hi = 0;
    if (yarn) {
        uint32_t n_orig;
        if ((st = read_u32_key(L, "rope.scaling.original_context_length", false, (uint32_t)m->n_ctx_train, &n_orig,
                               err)) != TL_OK)
            return st;
        float attn_factor;
        if ((st = read_f32_key(L, "rope.scaling.attn_factor", 1.0f, &attn_factor, err)) != TL_OK)
            return st;
        /* The dims whose wavelength spans beta_fast=32 .. beta_slow=1 turns
         * over the original context get the ramp (YaRN paper, sec. 3.2). */
        double d = m->rope_dim, lb = 2.0 * log(base);
        corr_lo = floor(d * log(n_orig / (32.0 * 2.0 * M_PI)) / lb);
        corr_hi = ceil(d * log(n_orig / (1.0 * 2.0 * M_PI)) / lb);
        if (corr_lo < 0) corr_lo = 0;
        if (corr_hi > d - 1) corr_hi = d - 1;
        m->rope_mscale = (float)(attn_factor * (1.0 + 0.1 * log(1.0 / freq_scale)));
    }
    for (int32_t i = 0; i < half; i++) {
        double f = pow((double)base, -2.0 * i / m->rope_dim);
        if (factors)
            f /= factors[i];
        if (yarn) {
            double y = (i - corr_lo) / fmax(0.001, corr_hi - corr_lo);
            double ramp = 1.0 - fmin(1.0, fmax(0.0, y)); /* 1: extrapolate (high freq), 0: interpolate */
            f = f * (freq_scale * (1.0 - ramp) + ramp);
        } else {
            f *= freq_scale;
        }
        m->rope_freq[i] = (float)f;
    }
    return TL_OK;
}

/* The matrix type holding the most weights ("Q4_K" for a Q4_K_M file). */
static void set_type_name(tl_model *m) {
    double bytes_by_type[TL_TYPE_COUNT] = {0};
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        const tl_matrix *mats[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->w_gate, &w->w_up, &w->w_down};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            if ((unsigned)mats[i]->type < TL_TYPE_COUNT)
                bytes_by_type[mats[i]->type] += (double)mats[i]->n_in * (double)mats[i]->n_out;
    }
    int best = 0;
    for (int t = 1; t < TL_TYPE_COUNT; t++)
        if (bytes_by_type[t] > bytes_by_type[best])
            best = t;
    snprintf(m->type_name, sizeof m->type_name, "%s", tl_type_name((tl_ggml_type)best));
}

static tl_status load_hparams(loader *L, tl_error *err) {
    tl_model *m = L->m;
    uint32_t v;
    tl_status st;
#define U32(suffix, req, def, field, lo, hi)                                                                 \
    do {                                                                                                     \
        if ((st = read_u32_key(L, suffix, req, def, &v, err)) != TL_OK)                                      \
            return st;                                                                                       \
        if (v < (lo) || v > (hi))                                                                            \
            return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.%s = %u is out of range [%u, %u]", L->path,      \
                                m->arch_name, suffix, v, (unsigned)(lo), (unsigned)(hi));                   \
        m->field = (int32_t)v;                                                                               \
    } while (0)
    U32("embedding_length", true, 0, n_embd, 1, 1u << 20);
    U32("block_count", true, 0, n_layer, 1, MAX_LAYERS);
    U32("feed_forward_length", true, 0, n_ff, 1, 1u << 22);
    U32("attention.head_count", true, 0, n_head, 1, MAX_HEADS);
    U32("attention.head_count_kv", false, (uint32_t)m->n_head, n_head_kv, 1, (uint32_t)m->n_head);
    U32("context_length", false, 4096, n_ctx_train, 1, 1u << 30);
    U32("attention.key_length", false, (uint32_t)(m->n_embd / m->n_head), head_dim_k, 1, MAX_HEAD_DIM);
    U32("attention.value_length", false, (uint32_t)m->head_dim_k, head_dim_v, 1, MAX_HEAD_DIM);
#undef U32
    if (m->n_head % m->n_head_kv)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: head_count %d is not a multiple of head_count_kv %d", L->path,
                            m->n_head, m->n_head_kv);
    if ((st = read_f32_key(L, "attention.layer_norm_rms_epsilon", 1e-5f, &m->norm_eps, err)) != TL_OK)
        return st;
    if (!(m->norm_eps >= 0.0f && m->norm_eps < 1.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: layer_norm_rms_epsilon %g out of range", L->path, m->norm_eps);
    return TL_OK;
}

static tl_status load_weights(loader *L, tl_error *err) {
    tl_model *m = L->m;
    tl_status st;
    const tl_gguf_tensor *te = tl_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", L->path);
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor 'token_embd.weight' has %lld rows", L->path,
                            (long long)te->ne[1]);
    m->n_vocab = (int32_t)te->ne[1];
    if ((st = load_matrix(L, "token_embd.weight", m->n_embd, m->n_vocab, true, &m->tok_embd, err)) != TL_OK)
        return st;
    if ((st = load_matrix(L, "output.weight", m->n_embd, m->n_vocab, false, &m->output, err)) != TL_OK)
        return st;
    if (!m->output.data)
        m->output = m->tok_embd; /* tied */
    if ((st = load_vector(L, "output_norm.weight", m->n_embd, true, &m->output_norm, err)) != TL_OK)
        return st;

    int64_t q_out = (int64_t)m->n_head * m->head_dim_k, k_out = tl_model_kv_k(m), v_out = tl_model_kv_v(m);
    int64_t o_in = (int64_t)m->n_head * m->head_dim_v;
    for (int32_t l = 0; l < m->n_layer; l++) {
        tl_layer_weights *w = &m->layers[l];
        char name[96];
#define NAME(s) (snprintf(name, sizeof name, "blk.%d." s, (int)l), name)
        if ((st = load_vector(L, NAME("attn_norm.weight"), m->n_embd, true, &w->attn_norm, err)) ||
            (st = load_matrix(L, NAME("attn_q.weight"), m->n_embd, q_out, true, &w->wq, err)) ||
            (st = load_matrix(L, NAME("attn_k.weight"), m->n_embd, k_out, true, &w->wk, err)) ||
            (st = load_matrix(L, NAME("attn_v.weight"), m->n_embd, v_out, true, &w->wv, err)) ||
            (st = load_matrix(L, NAME("attn_output.weight"), o_in, m->n_embd, true, &w->wo, err)) ||
            (st = load_vector(L, NAME("ffn_norm.weight"), m->n_embd, true, &w->ffn_norm, err)) ||
            (st = load_matrix(L, NAME("ffn_gate.weight"), m->n_embd, m->n_ff, true, &w->w_gate, err)) ||
            (st = load_matrix(L, NAME("ffn_up.weight"), m->n_embd, m->n_ff, true, &w->w_up, err)) ||
            (st = load_matrix(L, NAME("ffn_down.weight"), m->n_ff, m->n_embd, true, &w->w_down, err)))
            return st;
        /* qwen2 requires the q/k/v biases; llama files occasionally carry them too. */
        bool need_bias = m->arch == TL_ARCH_QWEN2;
        if ((st = load_vector(L, NAME("attn_q.bias"), q_out, need_bias, &w->bq, err)) ||
            (st = load_vector(L, NAME("attn_k.bias"), k_out, need_bias, &w->bk, err)) ||
            (st = load_vector(L, NAME("attn_v.bias"), v_out, need_bias, &w->bv, err)))
            return st;
        if (m->arch == TL_ARCH_QWEN3) {
            if ((st = load_vector(L, NAME("attn_q_norm.weight"), m->head_dim_k, true, &w->q_norm, err)) ||
                (st = load_vector(L, NAME("attn_k_norm.weight"), m->head_dim_k, true, &w->k_norm, err)))
                return st;
        }
#undef NAME
    }
    return TL_OK;
}

tl_status tl_model_load(const char *path, tl_model **out, tl_error *err) { return tl_model_load_ex(path, 0, out, err); }

tl_status tl_model_load_ex(const char *path, unsigned flags, tl_model **out, tl_error *err) {
    *out = NULL;
    tl_model *m = calloc(1, sizeof *m);
    if (!m)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    loader L = {.m = m, .path = path};
    tl_status st = tl_gguf_open_ex(path, flags & TL_MODEL_NO_MMAP ? TL_GGUF_NO_MMAP : 0, &m->gguf, err);
    if (st != TL_OK)
        goto fail;

    const char *arch = tl_gguf_arch(m->gguf);
    if (!strcmp(arch, "llama"))
        m->arch = TL_ARCH_LLAMA;
    else if (!strcmp(arch, "qwen2"))
        m->arch = TL_ARCH_QWEN2;
    else if (!strcmp(arch, "qwen3"))
        m->arch = TL_ARCH_QWEN3;
    else {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                          "%s: architecture '%s' is not supported (supported: llama, qwen2, qwen3)", path,
                          *arch ? arch : "(general.architecture missing)");
        goto fail;
    }
    snprintf(m->arch_name, sizeof m->arch_name, "%s", arch);
    m->rope_neox = m->arch != TL_ARCH_LLAMA;

    if ((st = load_hparams(&L, err)) != TL_OK)
        goto fail;
    m->layers = calloc((size_t)m->n_layer, sizeof *m->layers);
    /* Every vector: per layer 2 norms, 3 biases, 2 head norms; output norm; rope factors. */
    L.vec_cap = (size_t)m->n_layer * (2 * (size_t)m->n_embd + (size_t)m->n_head * m->head_dim_k +
                                      2 * (size_t)tl_model_kv_k(m) + (size_t)tl_model_kv_v(m) +
                                      2 * (size_t)m->head_dim_k) +
                (size_t)m->n_embd + (size_t)m->head_dim_k;
    m->vectors = malloc(sizeof(float) * L.vec_cap);
    if (!m->layers || !m->vectors) {
        st = tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory for %d layers", path, m->n_layer);
        goto fail;
    }
    if ((st = load_weights(&L, err)) != TL_OK || (st = setup_rope(&L, err)) != TL_OK)
        goto fail;
    if ((st = tl_vocab_load(m->gguf, &m->vocab, err)) != TL_OK) {
        tl_error_wrap(err, "%s", path);
        goto fail;
    }
    tl_gguf_str name;
    if (tl_gguf_get(m->gguf, "general.name") && tl_gguf_get_str(m->gguf, "general.name", &name, NULL) == TL_OK &&
        name.len > 0) {
        m->name = malloc(name.len + 1);
        if (m->name) {
            memcpy(m->name, name.ptr, name.len);
            m->name[name.len] = 0;
        }
    } else {
        m->name = strdup(base_name(path));
    }
    if (!m->name) {
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        goto fail;
    }
    set_type_name(m);
    *out = m;
    return TL_OK;
fail:
    tl_model_free(m);
    return st;
}

void tl_model_free(tl_model *m) {
    if (!m)
        return;
    tl_vocab_free(m->vocab);
    tl_gguf_close(m->gguf);
    free(m->layers);
    free(m->vectors);
    free(m->rope_freq);
    free(m->name);
    free(m);
}

const tl_vocab *tl_model_vocab(const tl_model *m) { return m->vocab; }
const tl_gguf *tl_model_gguf(const tl_model *m) { return m->gguf; }
int32_t tl_model_n_vocab(const tl_model *m) { return m->n_vocab; }
int32_t tl_model_n_ctx_train(const tl_model *m) { return m->n_ctx_train; }
const char *tl_model_arch(const tl_model *m) { return m->arch_name; }
const char *tl_model_name(const tl_model *m) { return m->name; }
const char *tl_model_type_name(const tl_model *m) { return m->type_name; }
