/* matmul_avx512.c: the AVX-512 (F, BW, VL, VNNI) float kernels and row
 * unpacking, compiled with target attributes so the build needs no -march
 * and the dispatcher only calls them where cpuid says they run. Integer
 * weights: 16-row VNNI tiles for prefill (tl_rows_quant_vnni16, at the end),
 * matmul_avx2.c's 8-row panels for fewer than 8 tokens; the portable
 * kernel's bits either way.
 *
 * Float weights: a tile of ROWS weight rows x up to 4 token rows with one
 * accumulator register per output, lane k accumulating elements
 * i = k (mod 16) by FMA; the per-output operation sequence is the same
 * whatever the tile shape (T = 1 for decode, 4 for prefill), so a row's
 * result never depends on the batch around it. */
#include "kernels/avx512.h"
#include <stdlib.h>

#include "kernels/kernels_internal.h"

#define INLINE __attribute__((always_inline)) static inline
#define UNROLL _Pragma("GCC unroll 4")

enum { ROWS = 4, TOK_TILE = 4 };

/* ---- float weights ------------------------------------------------------- */

/* 16 weights of row w starting at element i (mask m for a short tail). */
TARGET INLINE __m512 load_w16(tl_ggml_type t, const uint8_t *w, int64_t i, __mmask16 m) {
    if (t == TL_TYPE_F32) return _mm512_maskz_loadu_ps(m, (const float *)w + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
    if (t == TL_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

TARGET INLINE void float_tile(tl_ggml_type type, const uint8_t *const *w, int R, const float *X, int64_t n_in,
                              int T, float *Y, int64_t n_out) {
    __m512 acc[ROWS][TOK_TILE];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n_in; i += 16) {
        __m512 wv[ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w16(type, w[r], i, 0xFFFF);
        UNROLL for (int t = 0; t < T; t++) {
            __m512 xv = _mm512_loadu_ps(X + t * n_in + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    if (i < n_in) {
        __mmask16 m = (__mmask16)((1u << (n_in - i)) - 1);
        __m512 wv[ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w16(type, w[r], i, m);
        UNROLL for (int t = 0; t < T; t++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, X + t * n_in + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) Y[t * n_out + r] = _mm512_reduce_add_ps(acc[r][t]);
}

/* Instantiations with constant R and T so the accumulators live in registers. */
#define FLOAT_TILE(R, T)                                                                          \
    TARGET static void float_tile_##R##_##T(tl_ggml_type ty, const uint8_t *const *w, const float *X, \
                                            int64_t n_in, float *Y, int64_t n_out) {              \
        if (ty == TL_TYPE_F16) float_tile(TL_TYPE_F16, w, R, X, n_in, T, Y, n_out);               \
        else if (ty == TL_TYPE_BF16) float_tile(TL_TYPE_BF16, w, R, X, n_in, T, Y, n_out);        \
        else float_tile(TL_TYPE_F32, w, R, X, n_in, T, Y, n_out);                                 \
    }
FLOAT_TILE(4, 1) FLOAT_TILE(4, 2) FLOAT_TILE(4, 3) FLOAT_TILE(4, 4)
FLOAT_TILE(1, 1) FLOAT_TILE(1, 2) FLOAT_TILE(1, 3) FLOAT_TILE(1, 4)

typedef void (*float_tile_fn)(tl_ggml_type, const uint8_t *const *, const float *, int64_t, float *, int64_t);
static const float_tile_fn float_tiles[2][4] = {
    {float_tile_1_1, float_tile_1_2, float_tile_1_3, float_tile_1_4},
    {float_tile_4_1, float_tile_4_2, float_tile_4_3, float_tile_4_4},
};

/* Tokens per chunk: a chunk's activations are read again for every 4-row
 * panel, so they should stay in L2 (halved while over 640 KB: 64 tokens for
 * n_in 896, 32 for 4864). Measured on Zen 5 (bench/README, ninth pass): for
 * 896 x 4864 weights, 32 tokens give 77 GMAC/s on one core, 64 give 71. */
static int64_t tok_chunk(int64_t n_in) {
    int64_t c = 64;
    while (c > 16 && c * n_in * (int64_t)sizeof(float) > 640 * 1024) c /= 2;
    return c;
}

/* F16/BF16 weights are converted in every tile (load_w16), not widened to
 * floats once per chunk as on AVX2 CPUs: four F16 rows of 4864 fit in L1,
 * their floats do not, and the conversion is cheap here (Zen 5: 896 x 4864 at
 * 68.9 GMAC/s converting in the tile, 54.8 widened). The same floats reach the
 * same FMAs either way, so the bits do not depend on this. While a panel is
 * multiplied by a chunk of tokens, the next-but-one panel is prefetched into
 * L1, a slice per tile; for one token (decode) a panel further on, into L2. */
TARGET void tl_rows_float_avx512(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok,
                                 float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out, chunk = tok_chunk(n_in);
    for (int64_t tc = 0; tc < n_tok; tc += chunk) {
        int64_t tc_end = tc + chunk < n_tok ? tc + chunk : n_tok;
        for (int64_t o = o0; o < o1;) {
            int R = o1 - o >= ROWS ? ROWS : 1;
            const uint8_t *w[ROWS];
            UNROLL for (int r = 0; r < R; r++) w[r] = (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes;
            int64_t steps = (tc_end - tc + TOK_TILE - 1) / TOK_TILE;
            prefetch_plan pf = n_tok == 1 ? prefetch_ahead(W, o, ROWS, o1, steps) : prefetch_near(W, o, ROWS, o1, steps);
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                prefetch_slice(pf, (t - tc) / TOK_TILE);
                float_tiles[R == ROWS][T - 1](W->type, w, X + t * n_in, n_in, Y + t * n_out + o, n_out);
            }
            o += R;
        }
    }
}

/* ---- unpacking quantized rows ----------------------------------------------
 * A row is unpacked in two parts: its scales (ws per 16 elements, wm per 32)
 * into small arrays, and its codes one pair of 32-blocks at a time into a
 * register (codes_pair). Prefill stores the codes of a few rows and reuses
 * them across token tiles; decode (one token) uses codes_pair directly, so
 * both see the very same bytes and do the same arithmetic. */

/* The codes of 32-blocks 2p and 2p+1 of row s (64 bytes); half = 1 when only
 * block 2p exists (odd block count: upper 32 bytes zero). */
TARGET INLINE __m512i codes_pair(tl_ggml_type t, const uint8_t *s, int64_t p, int half) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    switch (t) {
    case TL_TYPE_Q8_0: {
        const uint8_t *b0 = s + (size_t)(2 * p) * sizeof(blk_q8_0);
        __m256i lo = _mm256_loadu_si256((const __m256i *)(b0 + 2));
        __m256i hi = half ? _mm256_set1_epi8((char)0x80) : _mm256_loadu_si256((const __m256i *)(b0 + sizeof(blk_q8_0) + 2));
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        return _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)); /* int8 + 128; pad -> 0 */
    }
    case TL_TYPE_Q4_0: case TL_TYPE_Q5_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: {
        int five = t == TL_TYPE_Q5_0 || t == TL_TYPE_Q5_1, has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        size_t bb = five ? (has_m ? sizeof(blk_q5_1) : sizeof(blk_q5_0)) : (has_m ? sizeof(blk_q4_1) : sizeof(blk_q4_0));
        size_t qs_at = 2 + 2 * has_m + 4 * five;
        const uint8_t *b0 = s + (size_t)(2 * p) * bb, *b1 = b0 + bb;
        __m128i q0 = _mm_loadu_si128((const __m128i *)(b0 + qs_at));
        __m128i q1 = half ? _mm_setzero_si128() : _mm_loadu_si128((const __m128i *)(b1 + qs_at));
        /* 128-bit lanes: [q0, q0, q1, q1]; odd lanes take the high nibbles */
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(q0)),
                                       _mm256_broadcastsi128_si256(q1), 1);
        v = _mm512_and_si512(_mm512_mask_blend_epi64(0xCC, v, _mm512_srli_epi16(v, 4)), low4);
        if (five) {
            uint32_t h0, h1 = 0;
            memcpy(&h0, b0 + 2 + 2 * has_m, 4);
            if (!half) memcpy(&h1, b1 + 2 + 2 * has_m, 4);
            __mmask64 m = (__mmask64)h0 | (__mmask64)h1 << 32;
            v = _mm512_mask_add_epi8(v, m, v, _mm512_set1_epi8(16));
        }
        if (half) v = _mm512_maskz_mov_epi8(0xFFFFFFFFull, v);
        return v;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        int five = t == TL_TYPE_Q5_K;
        size_t bb = five ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
        const uint8_t *blk = s + (size_t)(p / 4) * bb;
        int c = (int)(p % 4); /* 64-element chunk: low nibbles = block 2c, high = 2c+1 */
        __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * five + 32 * c));
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(q), q, 1);
        v = _mm512_and_si512(_mm512_mask_blend_epi64(0xF0, v, _mm512_srli_epi16(v, 4)), low4);
        if (five) {
            __m256i h = _mm256_loadu_si256((const __m256i *)(blk + 16));
            __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(h), h, 1);
            __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))), _mm256_set1_epi8((char)(2 << (2 * c))), 1);
            v = _mm512_mask_add_epi8(v, _mm512_test_epi8_mask(hz, bit), v, _mm512_set1_epi8(16));
        }
        return v;
    }
    case TL_TYPE_Q6_K: {
        const blk_q6_k *blk = (const blk_q6_k *)(s + (size_t)(p / 4) * sizeof(blk_q6_k));
        int k = (int)(p % 4), h = k / 2, upper = k % 2; /* quarters 2*upper, 2*upper+1 of half h */
        __m512i ql = _mm512_loadu_si512((const void *)(blk->ql + 64 * h));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h));
        __m512i qhz = _mm512_inserti64x4(_mm512_castsi256_si512(qh), qh, 1);
        __m512i hi2;
        if (!upper) { /* quarters 0, 1: low nibbles; qh bits 0-1 / 2-3 moved to bits 4-5 */
            ql = _mm512_and_si512(ql, low4);
            hi2 = _mm512_sllv_epi16(qhz, _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1));
        } else { /* quarters 2, 3: high nibbles; qh bits 4-5 / 6-7 */
            ql = _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
            hi2 = _mm512_srlv_epi16(qhz, _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1));
        }
        return _mm512_or_si512(ql, _mm512_and_si512(hi2, _mm512_set1_epi8(0x30)));
    }
    default: return _mm512_setzero_si512();
    }
}

/* ws (per 16 elements) and wm (per 32, for types with mins) of a row of nb
 * blocks. Values are exact (fp16 -> f32, and products of an fp16 by a 6- or
 * 8-bit integer), so they equal the scalar unpack's bit for bit. */
TARGET static void row_scales(tl_ggml_type t, const uint8_t *s, int64_t nb, float *ws, float *wm) {
    switch (t) {
    case TL_TYPE_Q8_0: case TL_TYPE_Q4_0: case TL_TYPE_Q5_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: {
        /* 16 blocks at a time: gather each block's first 4 bytes (d, and m for
         * Q4_1/Q5_1), convert, and write d twice (two 16-element halves). */
        int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        int bb = t == TL_TYPE_Q8_0 ? (int)sizeof(blk_q8_0) : t == TL_TYPE_Q4_0 ? (int)sizeof(blk_q4_0)
               : t == TL_TYPE_Q5_0 ? (int)sizeof(blk_q5_0) : t == TL_TYPE_Q4_1 ? (int)sizeof(blk_q4_1)
               : (int)sizeof(blk_q5_1);
        const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                _mm512_set1_epi32(bb));
        const __m512i dup_lo = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        const __m512i dup_hi = _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
        for (int64_t b = 0; b < nb; b += 16) {
            int64_t left = nb - b;
            __mmask16 m = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
            __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, s + (size_t)b * bb, 1);
            __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
            __mmask16 m_lo = left >= 8 ? 0xFFFF : (__mmask16)((1u << (2 * left)) - 1);
            __mmask16 m_hi = left >= 16 ? 0xFFFF : left <= 8 ? 0 : (__mmask16)((1u << (2 * (left - 8))) - 1);
            _mm512_mask_storeu_ps(ws + 2 * b, m_lo, _mm512_permutexvar_ps(dup_lo, d));
            _mm512_mask_storeu_ps(ws + 2 * b + 16, m_hi, _mm512_permutexvar_ps(dup_hi, d));
            if (has_m) _mm512_mask_storeu_ps(wm + b, m, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(g, 16))));
        }
        break;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        size_t bb = t == TL_TYPE_Q5_K ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
        const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        for (int64_t sb = 0; sb < nb / 8; sb++, s += bb, ws += 16, wm += 8) {
            tl_half dh, mh;
            memcpy(&dh, s, 2);
            memcpy(&mh, s + 2, 2);
            /* the 12 scale bytes as 3 words: 6-bit scales/mins 0-3 in words 0/1,
             * the low nibbles of 4-7 in word 2, their top bits in bits 6-7 of words 0/1 */
            uint32_t w0, w1, w2;
            memcpy(&w0, s + 4, 4);
            memcpy(&w1, s + 8, 4);
            memcpy(&w2, s + 12, 4);
            uint32_t sc03 = w0 & 0x3f3f3f3fu, mn03 = w1 & 0x3f3f3f3fu;
            uint32_t sc47 = (w2 & 0x0f0f0f0fu) | ((w0 >> 6) & 0x03030303u) << 4;
            uint32_t mn47 = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 6) & 0x03030303u) << 4;
            __m128i sc = _mm_shuffle_epi8(_mm_setr_epi32((int)sc03, (int)sc47, 0, 0), dup);
            __m512 scf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc));
            _mm512_storeu_ps(ws, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(dh)), scf));
            __m256 mnf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_setr_epi32((int)mn03, (int)mn47, 0, 0)));
            __m256 prod = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(mh)), mnf);
            _mm256_storeu_ps(wm, _mm256_xor_ps(prod, _mm256_set1_ps(-0.0f))); /* -(dmin * m) */
        }
        break;
    }
    case TL_TYPE_Q6_K:
        for (int64_t sb = 0; sb < nb / 8; sb++, s += sizeof(blk_q6_k), ws += 16) {
            const blk_q6_k *blk = (const blk_q6_k *)s;
            __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)blk->scales)));
            _mm512_storeu_ps(ws, _mm512_mul_ps(sc, _mm512_set1_ps(_cvtsh_ss(blk->d))));
        }
        break;
    default: break;
    }
}

TARGET void tl_unpack_row_avx512(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm) {
    if (t == TL_TYPE_MXFP4) { tl_unpack_mxfp4_avx512(src, n, code, ws); return; }
    int64_t nb = n / QK32, np = nb / 2;
    row_scales(t, src, nb, ws, wm);
    for (int64_t p = 0; p < np; p++) _mm512_storeu_si512((void *)(code + 64 * p), codes_pair(t, src, p, 0));
    if (nb & 1) _mm512_mask_storeu_epi8(code + 64 * np, 0xFFFFFFFFull, codes_pair(t, src, np, 1));
}

/* ---- integer weights: 16-row VNNI tiles (prefill) ---------------------------
 * For 8 tokens or more (tl_rows_quant_vnni, the 8-row 256-bit panels, takes
 * fewer). 16 weight rows in the 16 lanes of a 512-bit vpdpbusd: every row's
 * codes (the canonical unsigned form, tl_unpack_row_avx512) packed as
 * packed[j][row][4] = codes 4j .. 4j+3 of each row, so that one load gives
 * dword j of all 16 rows; each token's four int8 activation codes broadcast
 * against it. Per scale group (a 32-block; 16 elements for Q6_K) the sum
 * starts from -offset x the group's activation sum (csum, or hsum for
 * halves), so after kg/4 vpdpbusd each lane holds the exact integer dot
 * product of w = code - offset with x, and the portable kernel's float step
 * follows, one rounding each: acc + ((float)dot * ws) * d; the mins' share
 * summed apart over blocks and added at the end (as matmul_scalar.c). Hence
 * the same bits as every other integer path. Twice the work per instruction
 * of the 256-bit panels (bench/README, ninth pass). */
enum { VROWS = 16, VTOK = 8, VNNI16_MIN_TOK = 8 };

TARGET INLINE void vnni16_tile(const tl_act *A, int64_t t0, const int T, const int kg, const uint8_t *packed,
                               const float *gs, const float *gm, int offset, int has_min, float *Y, int64_t n_out,
                               int nr) {
    const int64_t n_in = A->n_in, nb = A->nb, ng = n_in / kg;
    const int8_t *xq[VTOK];
    __m512 acc[VTOK];
    _Pragma("GCC unroll 8") for (int t = 0; t < VTOK; t++) { /* all VTOK: no lane is read unset */
        acc[t] = _mm512_setzero_ps();
        xq[t] = A->q + (t0 + (t < T ? t : 0)) * n_in;
    }
    for (int64_t g = 0; g < ng; g++) {
        const int64_t b = g * kg / QK32;
        __m512i is[VTOK] = {0};
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
            int32_t s = kg == QK32 ? A->csum[(t0 + t) * nb + b] : A->hsum[2 * ((t0 + t) * nb + b) + (g & 1)];
            is[t] = _mm512_set1_epi32(-offset * s);
        }
        const uint8_t *wp = packed + (size_t)g * kg * VROWS;
        _Pragma("GCC unroll 8") for (int j = 0; j < kg / 4; j++) {
            __m512i w = _mm512_load_si512((const void *)(wp + 64 * j));
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
                int32_t x4;
                memcpy(&x4, xq[t] + g * kg + 4 * j, 4);
                is[t] = _mm512_dpbusd_epi32(is[t], w, _mm512_set1_epi32(x4));
            }
        }
        __m512 sv = _mm512_loadu_ps(gs + g * VROWS);
        _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is[t]), sv),
                                                         _mm512_set1_ps(A->d[(t0 + t) * nb + b])));
    }
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
        float sums[VROWS];
        _mm512_storeu_ps(sums, acc[t]);
        tl_rows16_finish(sums, gm, has_min, A->dsum + (t0 + t) * nb, nb, Y + (t0 + t) * n_out, nr);
    }
}

/* Instantiations with constant T and kg (the accumulators in registers); a
 * call's last few tokens take the variable-T form. */
TARGET static void vnni16_tile_full32(const tl_act *A, int64_t t0, const uint8_t *p, const float *gs, const float *gm,
                                      int off, int hm, float *Y, int64_t n_out, int nr) {
    vnni16_tile(A, t0, VTOK, QK32, p, gs, gm, off, hm, Y, n_out, nr);
}
TARGET static void vnni16_tile_full16(const tl_act *A, int64_t t0, const uint8_t *p, const float *gs, const float *gm,
                                      int off, int hm, float *Y, int64_t n_out, int nr) {
    vnni16_tile(A, t0, VTOK, 16, p, gs, gm, off, hm, Y, n_out, nr);
}
TARGET static void vnni16_tile_part(const tl_act *A, int64_t t0, int T, int kg, const uint8_t *p, const float *gs,
                                    const float *gm, int off, int hm, float *Y, int64_t n_out, int nr) {
    if (kg == QK32) vnni16_tile(A, t0, T, QK32, p, gs, gm, off, hm, Y, n_out, nr);
    else vnni16_tile(A, t0, T, 16, p, gs, gm, off, hm, Y, n_out, nr);
}

/* The mins' share and the store of one token's 16 rows (acc: their sums so far). */
TARGET void tl_rows16_finish(const float *acc, const float *gm, int has_min, const float *dsum, int64_t nb, float *y,
                             int nr) {
    __m512 v = _mm512_loadu_ps(acc);
    if (has_min) { /* per row: the sum over blocks in order of wm * dsum, then added once */
        __m512 mn = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; b++) mn = _mm512_add_ps(mn, _mm512_mul_ps(_mm512_loadu_ps(gm + b * VROWS), _mm512_set1_ps(dsum[b])));
        v = _mm512_add_ps(v, mn);
    }
    _mm512_mask_storeu_ps(y, (__mmask16)((1u << nr) - 1), v);
}

int tl_rows16_init(tl_rows16 *P, const tl_matrix *W) {
    const int64_t n_in = W->n_in, nb = n_in / QK32;
    tl_unpack_info info = tl_unpack_info_of(W->type);
    P->kg = info.scale16 ? 16 : QK32;
    P->offset = info.offset;
    P->has_min = info.has_min;
    P->code_stride = (size_t)(n_in + 63) / 64 * 64;
    size_t packed_bytes = (size_t)n_in * VROWS, scales = (size_t)(n_in / P->kg) * VROWS, mins = (size_t)nb * VROWS;
    size_t ws_stride = (size_t)(2 * nb + 15) / 16 * 16, wm_stride = (size_t)(nb + 15) / 16 * 16;
    size_t bytes = packed_bytes + P->code_stride * VROWS + 4 * (scales + mins + ws_stride + wm_stride);
    uint8_t *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf) return 0;
    P->packed = buf;
    P->codes = buf + packed_bytes;
    memset(P->codes, 0, P->code_stride * VROWS); /* bytes past n_in in a row are read (not used) by the transposes */
    P->gs = (float *)(P->codes + P->code_stride * VROWS);
    P->gm = P->gs + scales;
    P->ws = P->gm + mins;
    P->wm = P->ws + ws_stride;
    return 1;
}

void tl_rows16_free(tl_rows16 *P) { free(P->packed); }

/* Transposes 16 rows of 16 dwords: v[j] then holds dword j of rows 0..15
 * (dwords within 128-bit lanes, then quadwords, then the lanes twice). */
TARGET INLINE void transpose16_epi32(__m512i *v) {
    __m512i a[16], b[16];
    for (int i = 0; i < 16; i += 2) {
        a[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
        a[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int q = 0; q < 4; q++) { /* b[4q + k]: dword 4L + k of rows 4q .. 4q+3, in lane L */
        b[4 * q] = _mm512_unpacklo_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 1] = _mm512_unpackhi_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 2] = _mm512_unpacklo_epi64(a[4 * q + 1], a[4 * q + 3]);
        b[4 * q + 3] = _mm512_unpackhi_epi64(a[4 * q + 1], a[4 * q + 3]);
    }
    for (int k = 0; k < 4; k++) {
        __m512i c0 = _mm512_shuffle_i32x4(b[k], b[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i c1 = _mm512_shuffle_i32x4(b[k], b[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
        __m512i d0 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], _MM_SHUFFLE(2, 0, 2, 0));
        __m512i d1 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], _MM_SHUFFLE(3, 1, 3, 1));
        v[k] = _mm512_shuffle_i32x4(c0, d0, _MM_SHUFFLE(2, 0, 2, 0));
        v[8 + k] = _mm512_shuffle_i32x4(c0, d0, _MM_SHUFFLE(3, 1, 3, 1));
        v[4 + k] = _mm512_shuffle_i32x4(c1, d1, _MM_SHUFFLE(2, 0, 2, 0));
        v[12 + k] = _mm512_shuffle_i32x4(c1, d1, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

TARGET void tl_rows16_pack(tl_rows16 *P, const tl_matrix *W, int64_t o, int nr, int64_t o1, int sign) {
    const int64_t n_in = W->n_in, nb = n_in / QK32, ng = n_in / P->kg;
    const __m256i offv = _mm256_set1_epi8((char)P->offset);
    /* the next 16 rows (below o1) on their way from memory into L1 while these are
     * packed and multiplied: packing 16 rows for 8 tokens of a 32768 x 896 matrix took
     * 12.3 ms without, 6.7 ms with (into L2 only: 9.5 ms); unpacking waited on its gathers */
    if (o + VROWS < o1) {
        const char *next = (const char *)W->data + (size_t)(o + VROWS) * W->row_bytes;
        size_t len = (size_t)(o1 - o - VROWS < VROWS ? o1 - o - VROWS : VROWS) * W->row_bytes;
        for (size_t k = 0; k < len; k += 64) _mm_prefetch(next + k, _MM_HINT_T0);
    }
    if (nr < VROWS) { /* rows past the slice: scales 0, results never stored */
        memset(P->gs, 0, sizeof(float) * (size_t)ng * VROWS);
        memset(P->gm, 0, sizeof(float) * (size_t)nb * VROWS);
    }
    for (int n = 0; n < nr; n++) {
        uint8_t *c = P->codes + (size_t)n * P->code_stride;
        tl_unpack_row_avx512(W->type, (const uint8_t *)W->data + (size_t)(o + n) * W->row_bytes, n_in, c, P->ws, P->wm);
        if (sign) /* code - offset, in [-128, 127] (bytes wrap) */
            for (int64_t k = 0; k < n_in; k += 32)
                _mm256_store_si256((__m256i *)(c + k), _mm256_sub_epi8(_mm256_load_si256((const __m256i *)(c + k)), offv));
        for (int64_t g = 0; g < ng; g++) P->gs[g * VROWS + n] = P->ws[g * P->kg / 16];
        if (P->has_min)
            for (int64_t b = 0; b < nb; b++) P->gm[b * VROWS + n] = P->wm[b];
    }
    for (int n = nr; n < VROWS; n++) memset(P->codes + (size_t)n * P->code_stride, 0, P->code_stride);
    /* packed row j: dword j of each row, 16 dwords of the 16 rows at a time */
    for (int64_t c = 0; 64 * c < n_in; c++) {
        __m512i v[VROWS];
        _Pragma("GCC unroll 16") for (int r = 0; r < VROWS; r++)
            v[r] = _mm512_load_si512((const void *)(P->codes + (size_t)r * P->code_stride + 64 * c));
        transpose16_epi32(v);
        int64_t nj = (n_in - 64 * c) / 4 < 16 ? (n_in - 64 * c) / 4 : 16;
        for (int64_t j = 0; j < nj; j++) _mm512_store_si512((void *)(P->packed + 64 * (16 * c + j)), v[j]);
    }
}

TARGET void tl_rows_quant_vnni16(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    const int64_t n_out = W->n_out, n_tok = A->n_tok;
    if (n_tok < VNNI16_MIN_TOK) { /* the same bits without packing 16 rows for a few tokens */
        tl_rows_quant_vnni(W, o0, o1, A, Y);
        return;
    }
    tl_rows16 P;
    if (!tl_rows16_init(&P, W)) return;
    for (int64_t o = o0; o < o1; o += VROWS) {
        int nr = o1 - o < VROWS ? (int)(o1 - o) : VROWS;
        tl_rows16_pack(&P, W, o, nr, o1, 0);
        int64_t t = 0;
        for (; t + VTOK <= n_tok; t += VTOK) {
            if (P.kg == QK32) vnni16_tile_full32(A, t, P.packed, P.gs, P.gm, P.offset, P.has_min, Y + o, n_out, nr);
            else vnni16_tile_full16(A, t, P.packed, P.gs, P.gm, P.offset, P.has_min, Y + o, n_out, nr);
        }
        if (t < n_tok) vnni16_tile_part(A, t, (int)(n_tok - t), P.kg, P.packed, P.gs, P.gm, P.offset, P.has_min, Y + o, n_out, nr);
    }
    tl_rows16_free(&P);
}
