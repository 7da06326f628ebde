/* kv_rows.c: encoding KV rows into a node and decoding them for attention,
 * in the cache's types (tl_cache_type; layout in kv_cache.h).
 *
 * An F32 cache is read in place. F16 and Q8_0 rows are encoded once, when
 * the forward pass computes them, with the kernels' own encoders (llama.cpp's
 * formats), and attention decodes a block's rows of one kv head into scratch
 * before its float kernels: so every reader, the pass that wrote the rows
 * included, sees the same decoded values, and the cache stays exact in the
 * project's sense (cached == uncached, batched == alone) for a given type.
 *
 * Q8_0 rows whose width is not a multiple of 32 (tiny models' kv heads of 16)
 * end with one block zero-padded to 32: its scale is max|x| / 127 over the
 * row's remaining elements (the zeros change nothing), its padding decodes
 * to zeros no reader uses. */
#include <string.h>

#include "engine/kv_cache.h"

enum { QBLOCK = 32, QBLOCK_BYTES = 34 }; /* Q8_0: 32 elements, a half scale and 32 int8 codes */

/* row (n elements of x) encoded as t. */
static void row_encode(tl_cache_type t, const float *x, int64_t n, uint8_t *row) {
    if (n <= 0)
        return;
    if (t == TL_CACHE_F16) {
        tl_quantize_row(TL_TYPE_F16, x, row, n);
        return;
    }
    int64_t full = n / QBLOCK * QBLOCK;
    if (full)
        tl_quantize_row(TL_TYPE_Q8_0, x, row, full);
    if (n > full) {
        float pad[QBLOCK] = {0};
        memcpy(pad, x + full, sizeof(float) * (size_t)(n - full));
        tl_quantize_row(TL_TYPE_Q8_0, pad, row + full / QBLOCK * QBLOCK_BYTES, QBLOCK);
    }
}

/* out[i * stride] = element from + i of a row encoded as t (F16 or Q8_0),
 * for i in [0, n): up to a block at a time through a small buffer. */
static void row_decode(tl_cache_type t, const uint8_t *row, int64_t from, int64_t n, float *out, int64_t stride) {
    float buf[QBLOCK];
    for (int64_t i = from; i < from + n;) {
        int64_t lo = i % QBLOCK, take = QBLOCK - lo < from + n - i ? QBLOCK - lo : from + n - i;
        const float *src = buf;
        if (t == TL_CACHE_F16) {
            tl_dequant_row(TL_TYPE_F16, row + 2 * i, buf, take);
        } else {
            tl_dequant_row(TL_TYPE_Q8_0, row + i / QBLOCK * QBLOCK_BYTES, buf, QBLOCK);
            src = buf + lo;
        }
        if (stride == 1)
            memcpy(out + (i - from), src, sizeof(float) * (size_t)take);
        else
            for (int64_t j = 0; j < take; j++)
                out[(i - from + j) * stride] = src[j];
        i += take;
    }
}

void kv_store_row(const kv_cache *c, kv_node *nd, int32_t layer, int32_t row, const float *k, const float *v) {
    const tl_layer_weights *w = &c->m->layers[layer];
    const kv_layout *L = &c->layout[layer];
    int64_t nk = (int64_t)w->n_head_kv * w->head_dim_k, nv = (int64_t)w->n_head_kv * w->head_dim_v;
    if (c->type_k == TL_CACHE_F32) {
        float *kt = kv_k_block(c, nd, layer);
        for (int64_t i = 0; i < nk; i++)
            kt[i * TL_KV_BLOCK + row] = k[i];
    } else {
        row_encode(c->type_k, k, nk, nd->kv + L->k_off + (size_t)row * L->k_row);
    }
    if (c->type_v == TL_CACHE_F32)
        memcpy(kv_v_row(c, nd, layer, row), v, sizeof(float) * (size_t)nv);
    else
        row_encode(c->type_v, v, nv, nd->kv + L->v_off + (size_t)row * L->v_row);
}

const float *kv_k_view(const kv_cache *c, const kv_node *nd, int32_t layer, int32_t g, float *scratch) {
    int64_t dk = c->m->layers[layer].head_dim_k;
    if (c->type_k == TL_CACHE_F32)
        return kv_k_block(c, nd, layer) + (size_t)g * (size_t)dk * TL_KV_BLOCK;
    const kv_layout *L = &c->layout[layer];
    for (int32_t r = 0; r < TL_KV_BLOCK; r++)
        row_decode(c->type_k, nd->kv + L->k_off + (size_t)r * L->k_row, g * dk, dk, scratch + r, TL_KV_BLOCK);
    return scratch;
}

const float *kv_v_view(const kv_cache *c, const kv_node *nd, int32_t layer, int32_t g, float *scratch,
                       int64_t *stride) {
    const tl_layer_weights *w = &c->m->layers[layer];
    int64_t dv = w->head_dim_v;
    if (c->type_v == TL_CACHE_F32) {
        *stride = (int64_t)w->n_head_kv * dv;
        return kv_v_row(c, nd, layer, 0) + g * dv;
    }
    const kv_layout *L = &c->layout[layer];
    for (int32_t r = 0; r < TL_KV_BLOCK; r++)
        row_decode(c->type_v, nd->kv + L->v_off + (size_t)r * L->v_row, g * dv, dv, scratch + r * dv, 1);
    *stride = dv;
    return scratch;
}
