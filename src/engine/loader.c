/* loader.c: see loader.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/loader.h"
#include "util/error.h"

tl_status tl_ld_u32(tl_loader *L, const char *suffix, bool required, uint32_t def, uint32_t lo, uint32_t hi,
                    uint32_t *out, tl_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    if (!tl_gguf_get(L->g, key)) {
        if (required)
            return tl_error_set(err, TL_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
        *out = def;
        return TL_OK;
    }
    if (tl_gguf_get_u32(L->g, key, out, err) != TL_OK)
        return tl_error_wrap(err, "%s", L->path);
    if (*out < lo || *out > hi)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s = %u is out of range [%u, %u]", L->path, key, *out, lo, hi);
    return TL_OK;
}

tl_status tl_ld_f32(tl_loader *L, const char *suffix, float def, float *out, tl_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    *out = def;
    if (!tl_gguf_get(L->g, key))
        return TL_OK;
    if (tl_gguf_get_f32(L->g, key, out, err) != TL_OK)
        return tl_error_wrap(err, "%s", L->path);
    if (!isfinite(*out))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %s = %g is not finite", L->path, key, *out);
    return TL_OK;
}

static const char *dims_str(const int64_t *ne, uint32_t n_dims, char *buf, size_t cap) {
    int w = snprintf(buf, cap, "[%lld", (long long)ne[0]);
    for (uint32_t d = 1; d < n_dims && w > 0 && (size_t)w < cap; d++)
        w += snprintf(buf + w, cap - (size_t)w, ", %lld", (long long)ne[d]);
    if (w > 0 && (size_t)w < cap)
        snprintf(buf + w, cap - (size_t)w, "]");
    return buf;
}

tl_status tl_ld_tensor(tl_loader *L, const char *name, const int64_t ne[3], bool required,
                       const tl_gguf_tensor **out, tl_error *err) {
    const tl_gguf_tensor *t = tl_gguf_find_tensor(L->g, name);
    *out = t;
    if (!t)
        return required ? tl_error_set(err, TL_ERR_FORMAT, "%s: missing tensor '%s'", L->path, name) : TL_OK;
    if (t->ne[0] != ne[0] || t->ne[1] != ne[1] || t->ne[2] != ne[2] || t->ne[3] != 1) {
        char got[96], want[96];
        uint32_t nd = ne[2] != 1 ? 3 : ne[1] != 1 ? 2 : 1;
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s", L->path, name,
                            dims_str(t->ne, t->n_dims, got, sizeof got), dims_str(ne, nd, want, sizeof want));
    }
    return TL_OK;
}

tl_status tl_ld_matrix(tl_loader *L, const char *name, int64_t n_in, int64_t n_out, int64_t n_stack, bool required,
                       tl_matrix *m, size_t *stride, tl_error *err) {
    memset(m, 0, sizeof *m);
    const tl_gguf_tensor *t;
    int64_t ne[3] = {n_in, n_out, n_stack};
    tl_status st = tl_ld_tensor(L, name, ne, required, &t, err);
    if (st != TL_OK || !t)
        return st;
    if (!tl_kernels_supports(t->type))
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which the engine cannot multiply",
                            L->path, name, tl_type_name(t->type));
    size_t rb = tl_type_row_bytes(t->type, n_in);
    if (!rb || t->nbytes < rb * (size_t)n_out * (size_t)n_stack)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s': %zu bytes of data, %s rows of %lld need more",
                            L->path, name, t->nbytes, tl_type_name(t->type), (long long)n_in);
    *m = (tl_matrix){.type = t->type, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = t->data};
    if (stride)
        *stride = rb * (size_t)n_out;
    return TL_OK;
}

tl_status tl_ld_vector(tl_loader *L, const char *name, int64_t ne0, int64_t ne1, bool required, const float **out,
                       tl_error *err) {
    *out = NULL;
    const tl_gguf_tensor *t;
    int64_t ne[3] = {ne0, ne1, 1};
    tl_status st = tl_ld_tensor(L, name, ne, required, &t, err);
    if (st != TL_OK || !t)
        return st;
    if (t->type != TL_TYPE_F32 && t->type != TL_TYPE_F16 && t->type != TL_TYPE_BF16)
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s; vectors must be F32, F16 or BF16",
                            L->path, name, tl_type_name(t->type));
    size_t n = (size_t)(ne0 * ne1);
    if (t->nbytes < tl_type_row_bytes(t->type, (int64_t)n))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: tensor '%s' is too short", L->path, name);
    if (L->vec_used + n > L->vec_cap)
        return tl_error_set(err, TL_ERR_INTERNAL, "%s: vector storage overflow at '%s'", L->path, name);
    float *dst = L->vec + L->vec_used;
    L->vec_used += n;
    tl_dequant_row(t->type, t->data, dst, (int64_t)n);
    *out = dst;
    return TL_OK;
}
