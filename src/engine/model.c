/* model.c: loading a GGUF of one of the architectures in ARCHS into a tl_model.
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
#include "engine/deltanet.h"
#include "engine/moe.h"
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

/* ---- architectures -------------------------------------------------------- */

/* One row per family: the traits the keys of a file do not carry. */
static const tl_arch_desc ARCHS[] = {
    {.name = "llama", .arch = TL_ARCH_LLAMA},
    {.name = "qwen2", .arch = TL_ARCH_QWEN2, .rope_neox = true, .flags = TL_AF_QKV_BIAS},
    {.name = "qwen3", .arch = TL_ARCH_QWEN3, .rope_neox = true, .flags = TL_AF_QK_NORM_HEAD},
    {.name = "gemma2", .arch = TL_ARCH_GEMMA2, .rope_neox = true,
     .flags = TL_AF_POST_NORMS | TL_AF_GELU | TL_AF_EMBD_SQRT | TL_AF_SWA_SCALED, .swa_period = 2,
     .swa_window = 4096,
     .attn_softcap = 50.0f, .final_softcap = 30.0f},
    {.name = "gemma3", .arch = TL_ARCH_GEMMA3, .rope_neox = true,
     .flags = TL_AF_POST_NORMS | TL_AF_GELU | TL_AF_EMBD_SQRT | TL_AF_QK_NORM_HEAD | TL_AF_SWA_OWN_ROPE,
     .swa_period = 6},
    {.name = "gemma4", .arch = TL_ARCH_GEMMA4, .rope_neox = true,
     .flags = TL_AF_POST_NORMS | TL_AF_GELU | TL_AF_EMBD_SQRT | TL_AF_QK_NORM_HEAD | TL_AF_SWA_OWN_ROPE |
              TL_AF_V_NORM | TL_AF_SWA_PER_LAYER,
     .final_softcap = 30.0f},
    {.name = "phi3", .arch = TL_ARCH_PHI3, .rope_neox = true}, /* its sliding_window key is ignored */
    {.name = "smollm3", .arch = TL_ARCH_SMOLLM3, .nope_period = 4},
    {.name = "olmo2", .arch = TL_ARCH_OLMO2, .rope_neox = true,
     .flags = TL_AF_NO_PRE_NORMS | TL_AF_POST_NORMS | TL_AF_QK_NORM_FULL | TL_AF_SWA_PLAIN_ROPE, .swa_period = 4},
    {.name = "granite", .arch = TL_ARCH_GRANITE, .flags = TL_AF_MULTIPLIERS},
    {.name = "mistral3", .arch = TL_ARCH_MISTRAL3, .flags = TL_AF_ATTN_TEMP},
    {.name = "qwen2moe", .arch = TL_ARCH_QWEN2MOE, .rope_neox = true, .flags = TL_AF_QKV_BIAS | TL_AF_MOE},
    {.name = "qwen3moe", .arch = TL_ARCH_QWEN3MOE, .rope_neox = true, .flags = TL_AF_QK_NORM_HEAD | TL_AF_MOE},
    {.name = "gpt-oss", .arch = TL_ARCH_GPT_OSS, .rope_neox = true,
     .flags = TL_AF_QKV_BIAS | TL_AF_O_BIAS | TL_AF_SINKS | TL_AF_FFN_NORM_POST_ATTN | TL_AF_MOE | TL_AF_SWA_SCALED,
     .swa_period = 2},
    {.name = "qwen35", .arch = TL_ARCH_QWEN35, .rope_neox = true,
     .flags = TL_AF_QK_NORM_HEAD | TL_AF_GATED_Q | TL_AF_FFN_NORM_POST_ATTN | TL_AF_HYBRID},
};

const tl_arch_desc *tl_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (!strcmp(ARCHS[i].name, name))
            return &ARCHS[i];
    return NULL;
}

const char *tl_arch_supported_list(void) {
    static char list[256];
    if (!list[0]) {
        size_t w = 0;
        for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0] && w < sizeof list; i++)
            w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", i ? ", " : "", ARCHS[i].name);
    }
    return list;
}

/* ---- RoPE ----------------------------------------------------------------- */

/* The file's RoPE scaling, shared by every table the model builds. */
typedef struct rope_params {
    float base, base_swa;
    double freq_scale;    /* 1 / rope.scaling.factor for linear and yarn, else 1 */
    bool yarn;
    float attn_factor;    /* rope.scaling.attn_factor (default 1) */
    double yarn_mscale;   /* what the ggml rope multiplies cos/sin by under YaRN, before attn_factor */
    float beta_fast, beta_slow;
} rope_params;

static tl_status read_rope_params(loader *L, rope_params *rp, tl_error *err) {
    tl_model *m = L->m;
    tl_status st;
    if ((st = read_f32_key(L, "rope.freq_base", 10000.0f, &rp->base, err)) != TL_OK)
        return st;
    if (!(rp->base > 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.freq_base is %g, must be positive", L->path,
                            m->arch_name, rp->base);
    float swa_default = (m->desc->flags & TL_AF_SWA_OWN_ROPE) ? 10000.0f : rp->base;
    if ((st = read_f32_key(L, "rope.freq_base_swa", swa_default, &rp->base_swa, err)) != TL_OK)
        return st;
    if (!(rp->base_swa > 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.freq_base_swa is %g, must be positive", L->path,
                            m->arch_name, rp->base_swa);

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
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: %s.rope.scaling.type '%.*s' is not supported", L->path,
                            m->arch_name, (int)(type.len > 32 ? 32 : type.len), type.ptr);
    if (!(factor > 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.scaling.factor %g must be positive", L->path,
                            m->arch_name, factor);
    rp->yarn = yarn;
    rp->freq_scale = (linear || yarn) ? 1.0 / factor : 1.0;
    if ((st = read_f32_key(L, "rope.scaling.attn_factor", 1.0f, &rp->attn_factor, err)) != TL_OK ||
        (st = read_f32_key(L, "rope.scaling.yarn_beta_fast", 32.0f, &rp->beta_fast, err)) != TL_OK ||
        (st = read_f32_key(L, "rope.scaling.yarn_beta_slow", 1.0f, &rp->beta_slow, err)) != TL_OK)
        return st;
    rp->yarn_mscale = 1.0;
    if (yarn && factor > 1.0f) {
        /* llama.cpp: attn_factor = mscale(f, 1) [/ mscale(f, log_mul)], divided by the
         * 1 + 0.1 ln f the rope kernel multiplies back in: the net factor is
         * mscale(f, 1) / mscale(f, log_mul) or mscale(f, 1) = 1 + 0.1 ln f. */
        float log_mul;
        if ((st = read_f32_key(L, "rope.scaling.yarn_log_multiplier", 0.0f, &log_mul, err)) != TL_OK)
            return st;
        double ms = 1.0 + 0.1 * log((double)factor);
        rp->yarn_mscale = log_mul != 0.0f ? ms / (1.0 + 0.1 * log_mul * log((double)factor)) : ms;
    }
    return TL_OK;
}

/* Adds a RoPE table over dim dims from base: base^(-2i/dim), divided by the
 * factors (rope_freqs / LongRoPE), scaled linearly or by YaRN when scaled;
 * mscale multiplies cos and sin. Returns its index in m->ropes or -1. */
static int add_rope(loader *L, const rope_params *rp, int32_t dim, float base, bool scaled, float mscale,
                    const float *factors, tl_error *err) {
    tl_model *m = L->m;
    if (m->n_ropes == TL_MAX_ROPES) {
        tl_error_set(err, TL_ERR_INTERNAL, "%s: too many RoPE tables", L->path);
        return -1;
    }
    int32_t half = dim / 2;
    tl_rope *r = &m->ropes[m->n_ropes];
    r->freq = malloc(sizeof(float) * (size_t)(half > 0 ? half : 1));
    if (!r->freq) {
        tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        return -1;
    }
    r->dim = dim;
    double fs = scaled ? rp->freq_scale : 1.0;
    bool yarn = scaled && rp->yarn;
    /* Under YaRN the ramp runs over the dims whose wavelength spans beta_fast ..
     * beta_slow turns over the original context (YaRN paper, sec. 3.2). */
    double corr_lo = 0, corr_hi = 0;
    if (yarn) {
        double d = dim, lb = 2.0 * log(base);
        corr_lo = floor(d * log(m->n_ctx_orig / (rp->beta_fast * 2.0 * M_PI)) / lb);
        corr_hi = ceil(d * log(m->n_ctx_orig / (rp->beta_slow * 2.0 * M_PI)) / lb);
        if (corr_lo < 0) corr_lo = 0;
        if (corr_hi > d - 1) corr_hi = d - 1;
    }
    r->mscale = mscale;
    for (int32_t i = 0; i < half; i++) {
        double f = pow((double)base, -2.0 * i / dim);
        if (factors)
            f /= factors[i];
        if (yarn) {
            double y = (i - corr_lo) / fmax(0.001, corr_hi - corr_lo);
            double ramp = 1.0 - fmin(1.0, fmax(0.0, y)); /* 1: extrapolate (high freq), 0: interpolate */
            f = f * (fs * (1.0 - ramp) + ramp);
        } else {
            f *= fs;
        }
        r->freq[i] = (float)f;
    }
    return m->n_ropes++;
}

/* Builds the model's RoPE tables and gives each layer its own: full layers
 * the file's base and scaling (with rope_freqs, or LongRoPE's short/long
 * factors), window layers rope.freq_base_swa unscaled, NoPE layers none. */
static tl_status setup_rope(loader *L, tl_error *err) {
    tl_model *m = L->m;
    rope_params rp;
    tl_status st = read_rope_params(L, &rp, err);
    if (st != TL_OK)
        return st;
    uint32_t rope_dim, rope_dim_swa;
    if ((st = read_u32_key(L, "rope.dimension_count", false, (uint32_t)m->head_dim_k, &rope_dim, err)) != TL_OK)
        return st;
    if ((st = read_u32_key(L, "rope.dimension_count_swa", false, rope_dim, &rope_dim_swa, err)) != TL_OK)
        return st;
    int32_t dim_full = 0, dim_swa = 0; /* head sizes of the two kinds of layers */
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        int32_t *d = w->window ? &dim_swa : &dim_full;
        if (!*d)
            *d = w->head_dim_k;
    }
    if (rope_dim == 0 || rope_dim % 2 || (dim_full && (int32_t)rope_dim > dim_full))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.dimension_count = %u does not fit head size %d",
                            L->path, m->arch_name, rope_dim, dim_full);
    if (rope_dim_swa == 0 || rope_dim_swa % 2 || (dim_swa && (int32_t)rope_dim_swa > dim_swa))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.rope.dimension_count_swa = %u does not fit head size %d",
                            L->path, m->arch_name, rope_dim_swa, dim_swa);
    int32_t half = (int32_t)rope_dim / 2;

    const float *freqs = NULL, *f_short = NULL, *f_long = NULL;
    if (tl_gguf_find_tensor(m->gguf, "rope_freqs.weight") &&
        (st = load_vector(L, "rope_freqs.weight", half, true, &freqs, err)) != TL_OK)
        return st;
    if ((st = load_vector(L, "rope_factors_short.weight", half, false, &f_short, err)) != TL_OK ||
        (st = load_vector(L, "rope_factors_long.weight", half, false, &f_long, err)) != TL_OK)
        return st;
    if (!f_short != !f_long)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor '%s' (LongRoPE needs both factor tensors)",
                            L->path, f_short ? "rope_factors_long.weight" : "rope_factors_short.weight");

    /* Full layers: the file's scaling, cos/sin x attn_factor (x YaRN's magnitude).
     * Window layers turn unscaled (llama.cpp's freq_scale_swa = 1) unless the
     * family scales them too; they keep the attention factor, less the part of
     * YaRN's that the rope kernel would add for a scaled table. Olmo-3's window
     * layers rotate plainly. */
    float ms_full = (float)(rp.attn_factor * (rp.yarn ? rp.yarn_mscale : 1.0));
    int full = add_rope(L, &rp, (int32_t)rope_dim, rp.base, true, ms_full, f_short ? f_short : freqs, err);
    int full_long = f_long ? add_rope(L, &rp, (int32_t)rope_dim, rp.base, true, ms_full, f_long, err) : full;
    int swa = -1;
    if (dim_swa) {
        uint32_t fl = m->desc->flags;
        bool scaled = fl & TL_AF_SWA_SCALED;
        float ms = scaled ? ms_full
                   : (fl & TL_AF_SWA_PLAIN_ROPE)
                       ? 1.0f
                       : (float)(rp.attn_factor * (rp.yarn ? rp.yarn_mscale / (1.0 + 0.1 * log(1.0 / rp.freq_scale)) : 1.0));
        swa = add_rope(L, &rp, (int32_t)rope_dim_swa, rp.base_swa, scaled, ms, NULL, err);
    }
    if (full < 0 || full_long < 0 || (dim_swa && swa < 0))
        return err->code;
    for (int32_t l = 0; l < m->n_layer; l++) {
        tl_layer_weights *w = &m->layers[l];
        bool nope = m->desc->nope_period && (l + 1) % (int32_t)m->desc->nope_period == 0;
        w->rope = nope ? -1 : (int8_t)(w->window ? swa : full);
        w->rope_long = nope ? -1 : (int8_t)(w->window ? swa : full_long);
    }
    return TL_OK;
}

/* The matrix type holding the most weights ("Q4_K" for a Q4_K_M file). */
static void set_type_name(tl_model *m) {
    double bytes_by_type[TL_TYPE_COUNT] = {0};
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        const tl_matrix *mats[] = {&w->wqkv, &w->wq, &w->wk, &w->wv, &w->wo, &w->w_gate, &w->w_up, &w->w_down};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            if (mats[i]->data && (unsigned)mats[i]->type < TL_TYPE_COUNT)
                bytes_by_type[mats[i]->type] += (double)mats[i]->n_in * (double)mats[i]->n_out;
    }
    if (m->moe)
        tl_moe_count_types(m->moe, m->n_layer, bytes_by_type, TL_TYPE_COUNT);
    int best = 0;
    for (int t = 1; t < TL_TYPE_COUNT; t++)
        if (bytes_by_type[t] > bytes_by_type[best])
            best = t;
    snprintf(m->type_name, sizeof m->type_name, "%s", tl_type_name((tl_ggml_type)best));
}

/* Reads key "A.suffix" as a per-layer u32 array (n_layer entries) or a
 * scalar for every layer; def when absent. */
static tl_status read_u32_per_layer(loader *L, const char *suffix, uint32_t def, uint32_t *out, tl_error *err) {
    tl_model *m = L->m;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch_name, suffix);
    const tl_gguf_value *v = tl_gguf_get(m->gguf, key);
    if (v && v->type == TL_GGUF_ARRAY) {
        if (v->v.arr.n != (uint64_t)m->n_layer || !v->v.arr.raw)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: %s has %llu entries, expected %d numbers (one per layer)",
                                L->path, key, (unsigned long long)v->v.arr.n, m->n_layer);
        for (int32_t l = 0; l < m->n_layer; l++) {
            int64_t x = tl_gguf_arr_int(v, (uint64_t)l);
            if (x < 0 || x > UINT32_MAX)
                return tl_error_set(err, TL_ERR_FORMAT, "%s: %s[%d] = %lld is out of range", L->path, key, (int)l,
                                    (long long)x);
            out[l] = (uint32_t)x;
        }
        return TL_OK;
    }
    uint32_t x;
    tl_status st = read_u32_key(L, suffix, false, def, &x, err);
    for (int32_t l = 0; st == TL_OK && l < m->n_layer; l++)
        out[l] = x;
    return st;
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
    U32("context_length", false, 4096, n_ctx_train, 1, 1u << 30);
    U32("rope.scaling.original_context_length", false, (uint32_t)m->n_ctx_train, n_ctx_orig, 1, 1u << 30);
    U32("attention.key_length", false, (uint32_t)(m->n_embd / m->n_head), head_dim_k, 1, MAX_HEAD_DIM);
    U32("attention.value_length", false, (uint32_t)m->head_dim_k, head_dim_v, 1, MAX_HEAD_DIM);
    if ((st = read_f32_key(L, "attention.layer_norm_rms_epsilon", 1e-5f, &m->norm_eps, err)) != TL_OK)
        return st;
    if (!(m->norm_eps >= 0.0f && m->norm_eps < 1.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: layer_norm_rms_epsilon %g out of range", L->path, m->norm_eps);
#undef U32
    /* window layers may have their own head size (gemma4) */
    uint32_t head_k_swa, head_v_swa;
    if ((st = read_u32_key(L, "attention.key_length_swa", false, (uint32_t)m->head_dim_k, &head_k_swa, err)) ||
        (st = read_u32_key(L, "attention.value_length_swa", false, (uint32_t)m->head_dim_v, &head_v_swa, err)))
        return st;
    if (head_k_swa < 1 || head_k_swa > MAX_HEAD_DIM || head_v_swa < 1 || head_v_swa > MAX_HEAD_DIM)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.attention.key_length_swa / value_length_swa out of range",
                            L->path, m->arch_name);
    m->layers = calloc((size_t)m->n_layer, sizeof *m->layers);
    if (!m->layers)
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory for %d layers", L->path, m->n_layer);
    const tl_arch_desc *d = m->desc;
    uint32_t u;
    if (d->flags & TL_AF_SWA_PER_LAYER) {
        /* gemma4: per-layer KV sharing and per-layer input embeddings are not implemented */
        if ((st = read_u32_key(L, "attention.shared_kv_layers", false, 0, &u, err)) != TL_OK)
            return st;
        if (u)
            return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: %s.attention.shared_kv_layers = %u is not supported",
                                L->path, m->arch_name, u);
        if ((st = read_u32_key(L, "embedding_length_per_layer_input", false, 0, &u, err)) != TL_OK)
            return st;
        if (u)
            return tl_error_set(err, TL_ERR_UNSUPPORTED,
                                "%s: %s.embedding_length_per_layer_input = %u (per-layer embeddings) is not supported",
                                L->path, m->arch_name, u);
    }

    /* ---- per layer: KV heads, window, head sizes ---- */
    uint32_t *kvh = malloc(sizeof(uint32_t) * (size_t)m->n_layer);
    if (!kvh)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    st = read_u32_per_layer(L, "attention.head_count_kv", (uint32_t)m->n_head, kvh, err);
    for (int32_t l = 0; st == TL_OK && l < m->n_layer; l++) {
        if (kvh[l] < 1 || kvh[l] > (uint32_t)m->n_head || m->n_head % (int32_t)kvh[l])
            st = tl_error_set(err, TL_ERR_FORMAT,
                              "%s: %s.attention.head_count_kv = %u (layer %d) does not divide head_count %d", L->path,
                              m->arch_name, kvh[l], (int)l, m->n_head);
        else
            m->layers[l].n_head_kv = (int32_t)kvh[l];
    }
    free(kvh);
    if (st != TL_OK)
        return st;

    /* Sliding window: on when the family has one by default or the file names
     * one; the pattern is a period P (layer il local iff il % P < P-1) or, for
     * gemma4, a bool per layer. A period given as an array (Olmo-3) is read as
     * llama.cpp's scalar reader does: ignored, the default period stays. */
    uint32_t window = 0;
    if (d->swa_period || (d->flags & TL_AF_SWA_PER_LAYER)) {
        bool required = d->flags & TL_AF_SWA_PER_LAYER;
        if ((st = read_u32_key(L, "attention.sliding_window", required, d->swa_window, &window, err)) != TL_OK)
            return st;
    }
    if (window) {
        char key[128];
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", m->arch_name);
        const tl_gguf_value *pv = tl_gguf_get(m->gguf, key);
        if (d->flags & TL_AF_SWA_PER_LAYER) {
            if (!pv)
                return tl_error_set(err, TL_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
            if (pv->type != TL_GGUF_ARRAY || pv->v.arr.n != (uint64_t)m->n_layer || !pv->v.arr.raw)
                return tl_error_set(err, TL_ERR_FORMAT, "%s: %s must be an array of %d bools (one per layer)", L->path,
                                    key, m->n_layer);
            for (int32_t l = 0; l < m->n_layer; l++)
                m->layers[l].window = tl_gguf_arr_int(pv, (uint64_t)l) ? (int32_t)window : 0;
        } else {
            uint32_t period = d->swa_period;
            if (pv && pv->type != TL_GGUF_ARRAY &&
                (st = read_u32_key(L, "attention.sliding_window_pattern", false, period, &period, err)) != TL_OK)
                return st;
            for (int32_t l = 0; l < m->n_layer; l++)
                m->layers[l].window = (period == 0 || (uint32_t)l % period < period - 1) ? (int32_t)window : 0;
        }
        if (window > (1u << 30))
            return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.attention.sliding_window = %u is out of range", L->path,
                                m->arch_name, window);
    }

    /* Attention scale: 1/sqrt(head size), or what the family says. */
    float attn_scale = 0.0f;
    if ((d->flags & TL_AF_MULTIPLIERS) &&
        (st = read_f32_key(L, "attention.scale", 0.0f, &attn_scale, err)) != TL_OK)
        return st;
    if (d->flags & TL_AF_V_NORM)
        attn_scale = 1.0f; /* gemma4: q and k are RMS-normed, no 1/sqrt(d) */
    /* Gemma 2/3 27B scale by n_embd / n_head instead of the head size. */
    bool gemma_27b = (m->arch == TL_ARCH_GEMMA2 && m->n_layer == 46) || (m->arch == TL_ARCH_GEMMA3 && m->n_layer == 62);
    if (d->flags & TL_AF_HYBRID) {
        /* qwen35: every interval-th layer is full attention, the others recurrent */
        if ((st = read_u32_key(L, "full_attention_interval", false, 4, &u, err)) != TL_OK)
            return st;
        if (u < 1 || u > (uint32_t)m->n_layer)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.full_attention_interval = %u is out of range [1, %d]",
                                L->path, m->arch_name, u, m->n_layer);
        for (int32_t l = 0; l < m->n_layer; l++)
            m->layers[l].recurrent = (uint32_t)(l + 1) % u != 0;
    }
    if (m->arch == TL_ARCH_GPT_OSS && !window)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: missing metadata key '%s.attention.sliding_window'", L->path,
                            m->arch_name);
    m->max_q = m->max_kv_k = m->max_kv_v = 0;
    m->n_head_kv = 0;
    for (int32_t l = 0; l < m->n_layer; l++) {
        tl_layer_weights *w = &m->layers[l];
        w->head_dim_k = w->window ? (int32_t)head_k_swa : m->head_dim_k;
        w->head_dim_v = w->window ? (int32_t)head_v_swa : m->head_dim_v;
        w->attn_scale = attn_scale != 0.0f ? attn_scale
                        : gemma_27b        ? 1.0f / sqrtf((float)(m->n_embd / m->n_head))
                                           : 1.0f / sqrtf((float)w->head_dim_k);
        w->out_scale = 1.0f;
        int64_t q = (int64_t)m->n_head * w->head_dim_k, k = (int64_t)w->n_head_kv * w->head_dim_k,
                vv = (int64_t)w->n_head_kv * w->head_dim_v;
        if (w->recurrent)
            k = vv = 0; /* a recurrent state instead of KV rows */
        if (q > m->max_q) m->max_q = q;
        if (k > m->max_kv_k) m->max_kv_k = k;
        if (vv > m->max_kv_v) m->max_kv_v = vv;
        if (w->n_head_kv > m->n_head_kv) m->n_head_kv = w->n_head_kv;
    }

    /* Multipliers and soft-caps. */
    m->embd_scale = (d->flags & TL_AF_EMBD_SQRT) ? sqrtf((float)m->n_embd) : 1.0f;
    m->residual_scale = 1.0f;
    m->logit_scale = 1.0f;
    if (d->flags & TL_AF_MULTIPLIERS) {
        float es, rs, ls;
        if ((st = read_f32_key(L, "embedding_scale", 0.0f, &es, err)) != TL_OK ||
            (st = read_f32_key(L, "residual_scale", 0.0f, &rs, err)) != TL_OK ||
            (st = read_f32_key(L, "logit_scale", 0.0f, &ls, err)) != TL_OK)
            return st;
        char key[128];
        snprintf(key, sizeof key, "%s.logit_scale", m->arch_name);
        if (!tl_gguf_get(m->gguf, key)) /* llama.cpp requires it for granite */
            return tl_error_set(err, TL_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
        if (!(ls > 0.0f) || !isfinite(es) || !isfinite(rs))
            return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.logit_scale %g must be positive", L->path, m->arch_name,
                                ls);
        if (es != 0.0f) m->embd_scale = es;
        if (rs != 0.0f) m->residual_scale = rs;
        m->logit_scale = ls;
    }
    if ((st = read_f32_key(L, "attn_logit_softcapping", d->attn_softcap, &m->attn_softcap, err)) != TL_OK ||
        (st = read_f32_key(L, "final_logit_softcapping", d->final_softcap, &m->final_softcap, err)) != TL_OK)
        return st;
    if (!d->attn_softcap) /* only gemma2 soft-caps attention scores */
        m->attn_softcap = 0.0f;
    if (!(m->attn_softcap >= 0.0f) || !(m->final_softcap >= 0.0f))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: soft-cap values must not be negative", L->path);
    m->attn_temp_scale = 0.0f;
    if ((d->flags & TL_AF_ATTN_TEMP) &&
        (st = read_f32_key(L, "attention.temperature_scale", 0.0f, &m->attn_temp_scale, err)) != TL_OK)
        return st;
    if (!isfinite(m->attn_temp_scale))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s.attention.temperature_scale is not finite", L->path,
                            m->arch_name);
    return TL_OK;
}

/* ---- weights ---------------------------------------------------------------- */

static tl_status load_layer(loader *L, int32_t l, tl_error *err) {
    tl_model *m = L->m;
    tl_layer_weights *w = &m->layers[l];
    uint32_t fl = m->desc->flags;
    tl_status st;
    int64_t E = m->n_embd, F = m->n_ff;
    int64_t q_out = (int64_t)m->n_head * w->head_dim_k, k_out = (int64_t)w->n_head_kv * w->head_dim_k,
            v_out = (int64_t)w->n_head_kv * w->head_dim_v, o_in = (int64_t)m->n_head * w->head_dim_v;
    char name[96];
#define NAME(s) (snprintf(name, sizeof name, "blk.%d." s, (int)l), name)
    bool pre = !(fl & TL_AF_NO_PRE_NORMS);
    if ((st = load_vector(L, NAME("attn_norm.weight"), E, pre, &w->attn_norm, err)) != TL_OK)
        return st;
    if (w->recurrent)
        goto ffn; /* its mixer's tensors: tl_dnet_load */
    /* q/k/v: separate, or one fused attn_qkv (phi3); each with optional biases */
    if (tl_gguf_find_tensor(m->gguf, NAME("attn_qkv.weight"))) {
        const float *b;
        if ((st = load_matrix(L, name, E, q_out + k_out + v_out, true, &w->wqkv, err)) != TL_OK ||
            (st = load_vector(L, NAME("attn_qkv.bias"), q_out + k_out + v_out, false, &b, err)) != TL_OK)
            return st;
        if (b) {
            w->bq = b;
            w->bk = b + q_out;
            w->bv = b + q_out + k_out;
        }
    } else {
        bool need_bias = fl & TL_AF_QKV_BIAS; /* llama files occasionally carry them too */
        int64_t q_rows = (fl & TL_AF_GATED_Q) ? 2 * q_out : q_out; /* [query; gate] per head */
        if ((st = load_matrix(L, NAME("attn_q.weight"), E, q_rows, true, &w->wq, err)) ||
            (st = load_matrix(L, NAME("attn_k.weight"), E, k_out, true, &w->wk, err)) ||
            (st = load_matrix(L, NAME("attn_v.weight"), E, v_out, !(fl & TL_AF_V_NORM), &w->wv, err)) ||
            (st = load_vector(L, NAME("attn_q.bias"), q_out, need_bias, &w->bq, err)) ||
            (st = load_vector(L, NAME("attn_k.bias"), k_out, need_bias, &w->bk, err)) ||
            (st = load_vector(L, NAME("attn_v.bias"), v_out, need_bias, &w->bv, err)))
            return st;
        if (!w->wv.data && w->head_dim_v != w->head_dim_k)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor '%s' (V = K needs value_length = key_length)",
                                L->path, NAME("attn_v.weight"));
        if (w->bq && (!w->bk || !w->bv))
            return tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor '%s'", L->path,
                                w->bk ? NAME("attn_v.bias") : NAME("attn_k.bias"));
    }
    if ((st = load_matrix(L, NAME("attn_output.weight"), o_in, E, true, &w->wo, err)) != TL_OK ||
        (st = load_vector(L, NAME("attn_output.bias"), E, fl & TL_AF_O_BIAS, &w->bo, err)) != TL_OK)
        return st;
    if ((fl & TL_AF_SINKS) && (st = load_vector(L, NAME("attn_sinks.weight"), m->n_head, true, &w->sinks, err)))
        return st;
    if (fl & (TL_AF_QK_NORM_HEAD | TL_AF_QK_NORM_FULL)) {
        bool full = fl & TL_AF_QK_NORM_FULL;
        if ((st = load_vector(L, NAME("attn_q_norm.weight"), full ? q_out : w->head_dim_k, true, &w->q_norm, err)) ||
            (st = load_vector(L, NAME("attn_k_norm.weight"), full ? k_out : w->head_dim_k, true, &w->k_norm, err)))
            return st;
    }
    if (fl & TL_AF_POST_NORMS) {
        if ((st = load_vector(L, NAME("post_attention_norm.weight"), E, true, &w->post_attn_norm, err)) ||
            (st = load_vector(L, NAME("post_ffw_norm.weight"), E, true, &w->post_ffn_norm, err)))
            return st;
    }
ffn:
    if ((st = load_vector(L, (fl & TL_AF_FFN_NORM_POST_ATTN) ? NAME("post_attention_norm.weight") : NAME("ffn_norm.weight"),
                          E, pre, &w->ffn_norm, err)) != TL_OK)
        return st;
    if (fl & TL_AF_MOE)
        goto out_scale; /* experts: tl_moe_load */
    /* gate and up, or up holding [gate; up] (phi3) */
    bool fused = !tl_gguf_find_tensor(m->gguf, NAME("ffn_gate.weight")) &&
                 tl_gguf_find_tensor(m->gguf, NAME("ffn_up.weight")) &&
                 tl_gguf_find_tensor(m->gguf, name)->ne[1] == 2 * F;
    if (!fused && (st = load_matrix(L, NAME("ffn_gate.weight"), E, F, true, &w->w_gate, err)) != TL_OK)
        return st;
    if ((st = load_matrix(L, NAME("ffn_up.weight"), E, fused ? 2 * F : F, true, &w->w_up, err)) ||
        (st = load_matrix(L, NAME("ffn_down.weight"), F, E, true, &w->w_down, err)))
        return st;
out_scale:;
    const float *os;
    if ((st = load_vector(L, NAME("layer_output_scale.weight"), 1, false, &os, err)) != TL_OK)
        return st;
    if (os) {
        if (!isfinite(os[0]))
            return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' is not finite", L->path, name);
        w->out_scale = os[0];
    }
#undef NAME
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
    /* gemma2's loader has no output.weight: always tied */
    if (m->arch != TL_ARCH_GEMMA2 &&
        (st = load_matrix(L, "output.weight", m->n_embd, m->n_vocab, false, &m->output, err)) != TL_OK)
        return st;
    if (!m->output.data)
        m->output = m->tok_embd; /* tied */
    if ((st = load_vector(L, "output_norm.weight", m->n_embd, true, &m->output_norm, err)) != TL_OK)
        return st;
    for (int32_t l = 0; l < m->n_layer; l++)
        if ((st = load_layer(L, l, err)) != TL_OK)
            return st;
    uint32_t fl = m->desc->flags;
    if (fl & TL_AF_MOE) {
        tl_moe_spec spec = {.gating = TL_MOE_SOFTMAX_NORM, .act = TL_MOE_SWIGLU};
        if (m->arch == TL_ARCH_QWEN2MOE)
            spec.gating = TL_MOE_SOFTMAX, spec.shared_expert = true;
        if (m->arch == TL_ARCH_GPT_OSS)
            spec.gating = TL_MOE_TOPK_SOFTMAX, spec.act = TL_MOE_SWIGLU_OAI, spec.biases = true;
        if ((st = tl_moe_load(m->gguf, L->path, m->arch_name, m->n_layer, m->n_embd, m->n_ff, &spec, &m->moe,
                              err)) != TL_OK)
            return st;
    }
    if (fl & TL_AF_HYBRID) {
        bool *rec = malloc(sizeof(bool) * (size_t)m->n_layer);
        if (!rec)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        for (int32_t l = 0; l < m->n_layer; l++)
            rec[l] = m->layers[l].recurrent;
        st = tl_dnet_load(m->gguf, L->path, m->arch_name, m->n_layer, m->n_embd, m->norm_eps, rec, &m->dnet, err);
        free(rec);
        if (st != TL_OK)
            return st;
        m->rstate_floats = m->dnet->state_floats;
    }
    return TL_OK;
}

/* The model over an opened file g (taken over, closed on failure). */
static tl_status model_from_gguf(tl_gguf *g, const char *path, tl_model **out, tl_error *err) {
    *out = NULL;
    tl_model *m = calloc(1, sizeof *m);
    if (!m) {
        tl_gguf_close(g);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    m->gguf = g;
    loader L = {.m = m, .path = path};
    tl_status st;

    const char *arch = tl_gguf_arch(m->gguf);
    m->desc = tl_arch_find(arch);
    if (!m->desc) {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)", path,
                          *arch ? arch : "(general.architecture missing)", tl_arch_supported_list());
        goto fail;
    }
    m->arch = m->desc->arch;
    snprintf(m->arch_name, sizeof m->arch_name, "%s", arch);
    m->rope_neox = m->desc->rope_neox;

    if ((st = load_hparams(&L, err)) != TL_OK)
        goto fail;
    /* Every vector: per layer 4 norms, q/k/v/o biases, q/k norms (at most a
     * whole projection each), sinks, the output scale; the output norm; RoPE factors. */
    L.vec_cap = (size_t)m->n_layer * (5 * (size_t)m->n_embd + 2 * (size_t)(m->max_q + m->max_kv_k) +
                                      (size_t)m->max_kv_v + (size_t)m->n_head + 1) +
                (size_t)m->n_embd + 3 * (size_t)MAX_HEAD_DIM;
    /* every vector is a tensor of the file, at least 2 bytes per value: a
     * header with huge dimensions cannot make this allocation huge */
    size_t file_cap = (size_t)(tl_gguf_file_size(m->gguf) / 2) + 3 * (size_t)MAX_HEAD_DIM;
    if (L.vec_cap > file_cap)
        L.vec_cap = file_cap;
    m->vectors = malloc(sizeof(float) * L.vec_cap);
    if (!m->vectors) {
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

tl_status tl_model_load(const char *path, tl_model **out, tl_error *err) { return tl_model_load_ex(path, 0, out, err); }

tl_status tl_model_load_ex(const char *path, unsigned flags, tl_model **out, tl_error *err) {
    *out = NULL;
    tl_gguf *g = NULL;
    tl_status st = tl_gguf_open_ex(path, flags & TL_MODEL_NO_MMAP ? TL_GGUF_NO_MMAP : 0, &g, err);
    return st != TL_OK ? st : model_from_gguf(g, path, out, err);
}

tl_status tl_model_load_memory(const void *data, size_t len, const char *name, tl_model **out, tl_error *err) {
    *out = NULL;
    tl_gguf *g = NULL;
    tl_status st = tl_gguf_open_memory(data, len, name, &g, err);
    return st != TL_OK ? st : model_from_gguf(g, name, out, err);
}

void tl_model_free(tl_model *m) {
    if (!m)
        return;
    tl_vocab_free(m->vocab);
    tl_gguf_close(m->gguf);
    free(m->layers);
    tl_moe_free(m->moe);
    tl_dnet_free(m->dnet);
    free(m->vectors);
    for (int32_t i = 0; i < m->n_ropes; i++)
        free(m->ropes[i].freq);
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

void tl_model_get_features(const tl_model *m, tl_model_features *f) {
    memset(f, 0, sizeof *f);
    uint32_t fl = m->desc->flags;
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        if (w->window) {
            f->window = w->window;
            f->n_window_layers++;
        }
        if (w->rope < 0)
            f->n_nope_layers++;
        if (w->rope != w->rope_long)
            f->longrope = true;
        f->qkv_bias |= w->bq != NULL;
        f->qk_norm |= w->q_norm != NULL;
        f->fused_qkv |= w->wqkv.data != NULL;
        f->fused_gate_up |= !w->w_gate.data && !m->moe; /* experts have their own gate/up stacks */
    }
    if (m->moe) {
        f->n_expert = m->moe->n_expert;
        f->n_expert_used = m->moe->n_used;
    }
    f->attn_softcap = m->attn_softcap;
    f->final_softcap = m->final_softcap;
    f->embd_scale = m->embd_scale;
    f->residual_scale = m->residual_scale;
    f->logit_scale = m->logit_scale;
    f->attn_temp_scale = m->attn_temp_scale;
    f->post_norms = fl & TL_AF_POST_NORMS;
    f->gelu = fl & TL_AF_GELU;
    f->v_norm = fl & TL_AF_V_NORM;
    f->n_rope_tables = m->n_ropes;
}
