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
#include "engine/vec_avx2.h"

/* row (n elements of x) encoded as t. */
static void row_encode(tl_cache_type t, const float *x, int64_t n, uint8_t *row) {
    if (n <= 0)
        return;
    if (t == TL_CACHE_F16) {
        tl_quantize_row(TL_TYPE_F16, x, row, n);
        return;
    }
    int64_t full = n / KV_Q8_BLOCK * KV_Q8_BLOCK;
    if (full)
        tl_quantize_row(TL_TYPE_Q8_0, x, row, full);
    if (n > full) {
        float pad[KV_Q8_BLOCK] = {0};
        memcpy(pad, x + full, sizeof(float) * (size_t)(n - full));
        tl_quantize_row(TL_TYPE_Q8_0, pad, row + full / KV_Q8_BLOCK * KV_Q8_BLOCK_BYTES, KV_Q8_BLOCK);
    }
}

/* The decoders: int8 to float and half to float are exact and a decoded
 * Q8_0 element is one product, so the AVX2 forms give the portable forms'
 * values; they only run faster. */
#ifdef TL_ENGINE_AVX2
#define TL_F16C __attribute__((target("avx2,f16c")))

TL_F16C static void f16_decode_avx2(const uint8_t *h, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + 2 * i))));
    if (i < n)
        tl_dequant_row(TL_TYPE_F16, h + 2 * i, out + i, n - i);
}

TL_F16C static void q8_decode_avx2(const uint8_t *row, int64_t from, int64_t n, float *out) {
    for (int64_t i = from; i < from + n;) {
        const uint8_t *blk = row + i / KV_Q8_BLOCK * KV_Q8_BLOCK_BYTES;
        int64_t lo = i % KV_Q8_BLOCK, take = KV_Q8_BLOCK - lo < from + n - i ? KV_Q8_BLOCK - lo : from + n - i, j = 0;
        uint16_t h;
        memcpy(&h, blk, 2);
        float d = _cvtsh_ss(h);
        const int8_t *codes = (const int8_t *)(blk + 2) + lo;
        float *o = out + (i - from);
        __m256 dv = _mm256_set1_ps(d);
        for (; j + 8 <= take; j += 8) {
            __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(codes + j)));
            _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), dv));
        }
        for (; j < take; j++)
            o[j] = (float)codes[j] * d;
        i += take;
    }
}

/* kt[d * TL_KV_BLOCK + r] = rows[r * dk + d] (dk a multiple of 8): 8 x 8
 * tiles transposed in registers (moves only: the same values). */
TL_AVX2 static void transpose_block_avx2(const float *rows, int64_t dk, float *kt) {
    for (int r0 = 0; r0 < TL_KV_BLOCK; r0 += 8)
        for (int64_t d0 = 0; d0 < dk; d0 += 8) {
            __m256 a[8], b[8], c[8];
            for (int i = 0; i < 8; i++)
                a[i] = _mm256_loadu_ps(rows + (r0 + i) * dk + d0);
            for (int i = 0; i < 8; i += 2) { /* pairs of rows interleaved */
                b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
                b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
            }
            for (int i = 0; i < 8; i += 4) { /* then quads: each 128-bit lane holds 4 rows of one column */
                c[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
                c[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
                c[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
                c[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
            }
            for (int i = 0; i < 4; i++) { /* columns i and i + 4: rows 0-3 from c[i], 4-7 from c[i + 4] */
                _mm256_storeu_ps(kt + (d0 + i) * TL_KV_BLOCK + r0, _mm256_permute2f128_ps(c[i], c[i + 4], 0x20));
                _mm256_storeu_ps(kt + (d0 + i + 4) * TL_KV_BLOCK + r0, _mm256_permute2f128_ps(c[i], c[i + 4], 0x31));
            }
        }
}
#endif

/* out[0..n) = elements [from, from + n) of a row encoded as t (F16 or Q8_0). */
static void row_decode(bool simd, tl_cache_type t, const uint8_t *row, int64_t from, int64_t n, float *out) {
#ifdef TL_ENGINE_AVX2
    if (simd) {
        if (t == TL_CACHE_F16)
            f16_decode_avx2(row + 2 * from, out, n);
        else
            q8_decode_avx2(row, from, n, out);
        return;
    }
#endif
    (void)simd;
    if (t == TL_CACHE_F16) {
        tl_dequant_row(TL_TYPE_F16, row + 2 * from, out, n);
        return;
    }
    float blk[KV_Q8_BLOCK];
    for (int64_t i = from; i < from + n;) {
        int64_t lo = i % KV_Q8_BLOCK, take = KV_Q8_BLOCK - lo < from + n - i ? KV_Q8_BLOCK - lo : from + n - i;
        tl_dequant_row(TL_TYPE_Q8_0, row + i / KV_Q8_BLOCK * KV_Q8_BLOCK_BYTES, blk, KV_Q8_BLOCK);
        memcpy(out + (i - from), blk + lo, sizeof(float) * (size_t)take);
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
    float *rows = scratch + TL_KV_BLOCK * dk; /* the block's rows decoded, then transposed into place */
    for (int32_t r = 0; r < TL_KV_BLOCK; r++)
        row_decode(c->simd_decode, c->type_k, nd->kv + L->k_off + (size_t)r * L->k_row, g * dk, dk, rows + r * dk);
#ifdef TL_ENGINE_AVX2
    if (c->simd_decode && dk % 8 == 0) {
        transpose_block_avx2(rows, dk, scratch);
        return scratch;
    }
#endif
    for (int32_t r = 0; r < TL_KV_BLOCK; r++)
        for (int64_t d = 0; d < dk; d++)
            scratch[d * TL_KV_BLOCK + r] = rows[r * dk + d];
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
        row_decode(c->simd_decode, c->type_v, nd->kv + L->v_off + (size_t)r * L->v_row, g * dv, dv, scratch + r * dv);
    *stride = dv;
    return scratch;
}
