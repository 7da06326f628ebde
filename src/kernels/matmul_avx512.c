/* matmul_avx512.c: the AVX-512 (F, BW, VL, VNNI) kernels, compiled with
 * target attributes so the build needs no -march and the dispatcher only
 * calls them where cpuid says they run.
 *
 * Both kernel families compute a tile of ROWS weight rows x up to 4 token
 * rows with one accumulator register per output; the per-output operation
 * sequence is the same whatever the tile shape (T = 1 for decode, 4 for
 * prefill), so a row's result never depends on the batch around it.
 *  - float weights: lane k accumulates elements i = k (mod 16) by FMA;
 *  - quantized weights: per pair of 32-blocks, vpdpbusd (u8 codes x s8
 *    activations, started from -offset * activation lane sums, so the 32-bit
 *    lane sums are exact), then acc += (float(lanes) * weight scales) *
 *    activation scales; the mins (if any) are a separate dot over blocks. */
#include <immintrin.h>
#include <stdlib.h>

#include "kernels/kernels_internal.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c,bmi2")))
#define INLINE __attribute__((always_inline)) static inline
#define UNROLL _Pragma("GCC unroll 4")

enum { ROWS = 4, TOK_TILE = 4, TOK_CHUNK = 64 };

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

TARGET void tl_rows_float_avx512(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok,
                                 float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out;
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK) {
        int64_t tc_end = tc + TOK_CHUNK < n_tok ? tc + TOK_CHUNK : n_tok;
        for (int64_t o = o0; o < o1;) {
            int R = o1 - o >= ROWS ? ROWS : 1;
            const uint8_t *w[ROWS];
            UNROLL for (int r = 0; r < R; r++) w[r] = (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes;
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                float_tiles[R == ROWS][T - 1](W->type, w, X + t * n_in, n_in, Y + t * n_out + o, n_out);
            }
            o += R;
        }
    }
}

/* ---- unpacking quantized rows ---------------------------------------------- */

TARGET static void unpack_q8_0(const uint8_t *s, int64_t nb, uint8_t *code, float *ws) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++, s += sizeof(blk_q8_0)) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(s + 2));
        _mm256_storeu_si256((__m256i *)(code + 32 * b), _mm256_xor_si256(q, flip));
        tl_half d;
        memcpy(&d, s, 2);
        ws[2 * b] = ws[2 * b + 1] = _cvtsh_ss(d);
    }
}

/* Q4_0 / Q5_0: 16 bytes of nibbles (low = elements 0-15) and, for Q5_0, the
 * 32 fifth bits as a byte mask. */
TARGET static void unpack_q4_0_q5_0(const uint8_t *s, int64_t nb, int five, uint8_t *code, float *ws) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i sixteen = _mm256_set1_epi8(16);
    size_t bb = five ? sizeof(blk_q5_0) : sizeof(blk_q4_0);
    for (int64_t b = 0; b < nb; b++, s += bb) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + 2 + 4 * five));
        __m256i c = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(a, 4), low4), _mm_and_si128(a, low4));
        if (five) {
            uint32_t qh;
            memcpy(&qh, s + 2, 4);
            c = _mm256_or_si256(c, _mm256_maskz_mov_epi8((__mmask32)qh, sixteen));
        }
        _mm256_storeu_si256((__m256i *)(code + 32 * b), c);
        tl_half d;
        memcpy(&d, s, 2);
        ws[2 * b] = ws[2 * b + 1] = _cvtsh_ss(d);
    }
}

TARGET static void unpack_q4_k_q5_k(const uint8_t *s, int64_t nsb, int five, uint8_t *code, float *ws, float *wm) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i sixteen = _mm256_set1_epi8(16);
    size_t bb = five ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
    for (int64_t sb = 0; sb < nsb; sb++, s += bb, code += QKK, ws += 16, wm += 8) {
        tl_half dh, mh;
        memcpy(&dh, s, 2);
        memcpy(&mh, s + 2, 2);
        float d = _cvtsh_ss(dh), dmin = _cvtsh_ss(mh);
        const uint8_t *scales = s + 4, *qh = s + 16, *qs = s + 16 + 32 * five;
        __m256i hb = five ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo = _mm256_and_si256(v, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
            if (five) {
                __mmask32 m_lo = _mm256_test_epi8_mask(hb, _mm256_set1_epi8((char)(1 << (2 * c))));
                __mmask32 m_hi = _mm256_test_epi8_mask(hb, _mm256_set1_epi8((char)(1 << (2 * c + 1))));
                lo = _mm256_or_si256(lo, _mm256_maskz_mov_epi8(m_lo, sixteen));
                hi = _mm256_or_si256(hi, _mm256_maskz_mov_epi8(m_hi, sixteen));
            }
            _mm256_storeu_si256((__m256i *)(code + 64 * c), lo);
            _mm256_storeu_si256((__m256i *)(code + 64 * c + 32), hi);
        }
        for (int j = 0; j < 8; j++) {
            uint8_t sc, mn;
            tl_k4_scale_min(j, scales, &sc, &mn);
            ws[2 * j] = ws[2 * j + 1] = d * (float)sc;
            wm[j] = -(dmin * (float)mn);
        }
    }
}

TARGET static void unpack_q6_k(const uint8_t *s, int64_t nsb, uint8_t *code, float *ws) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    for (int64_t sb = 0; sb < nsb; sb++, s += sizeof(blk_q6_k), code += QKK, ws += 16) {
        const blk_q6_k *blk = (const blk_q6_k *)s;
        for (int h = 0; h < 2; h++) {
            __m256i ql0 = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h));
            __m256i ql1 = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h));
            __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
            __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
            __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, bits45));
            __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
            uint8_t *c = code + 128 * h;
            _mm256_storeu_si256((__m256i *)(c), q0);
            _mm256_storeu_si256((__m256i *)(c + 32), q1);
            _mm256_storeu_si256((__m256i *)(c + 64), q2);
            _mm256_storeu_si256((__m256i *)(c + 96), q3);
        }
        __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)blk->scales)));
        _mm512_storeu_ps(ws, _mm512_mul_ps(sc, _mm512_set1_ps(_cvtsh_ss(blk->d))));
    }
}

TARGET void tl_unpack_row_avx512(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm) {
    switch (t) {
    case TL_TYPE_Q8_0: unpack_q8_0(src, n / QK32, code, ws); break;
    case TL_TYPE_Q4_0: unpack_q4_0_q5_0(src, n / QK32, 0, code, ws); break;
    case TL_TYPE_Q5_0: unpack_q4_0_q5_0(src, n / QK32, 1, code, ws); break;
    case TL_TYPE_Q4_K: unpack_q4_k_q5_k(src, n / QKK, 0, code, ws, wm); break;
    case TL_TYPE_Q5_K: unpack_q4_k_q5_k(src, n / QKK, 1, code, ws, wm); break;
    case TL_TYPE_Q6_K: unpack_q6_k(src, n / QKK, code, ws); break;
    default: tl_unpack_row_scalar(t, src, n, code, ws, wm); break;
    }
}

/* ---- quantized weights ------------------------------------------------------- */

typedef struct {
    const uint8_t *code[ROWS]; /* unpacked rows */
    const float *ws[ROWS];     /* per 16 elements */
    const float *wm[ROWS];     /* per 32 elements (has_min) */
    int has_min;
} qrows;

/* Lane k of the 16 covers elements 4k..4k+3 of a block pair, i.e. the
 * 16-element half k/4: ws for a pair is ws[4p + k/4]. */
TARGET INLINE __m512 pair_scales(const float *ws, int64_t p, __mmask16 m) {
    const __m512i idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_maskz_loadu_ps((__mmask8)m, ws + 4 * p)));
}

TARGET INLINE void quant_tile(const qrows *w, int R, const tl_act *A, int64_t t0, int T, float *Y, int64_t n_out) {
    const int64_t nb = A->nb, n_in = A->n_in, np = nb / 2;
    __m512 acc[ROWS][TOK_TILE];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const int8_t *q[TOK_TILE];
    const float *d8[TOK_TILE];
    const int32_t *off8[TOK_TILE];
    UNROLL for (int t = 0; t < T; t++) {
        q[t] = A->q + (t0 + t) * n_in;
        d8[t] = A->d8 + (t0 + t) * nb * 8;
        off8[t] = A->off8 + (t0 + t) * nb * 8;
    }
    for (int64_t p = 0; p <= np; p++) {
        /* p == np is the odd last block, run as a half-empty pair */
        if (p == np && (nb & 1) == 0) break;
        __mmask64 m8 = p < np ? ~(__mmask64)0 : 0xFFFFFFFFull;
        __mmask16 m32 = p < np ? 0xFFFF : 0x00FF;
        __m512i wv[ROWS];
        __m512 wsv[ROWS];
        UNROLL for (int r = 0; r < R; r++) {
            wv[r] = _mm512_maskz_loadu_epi8(m8, w->code[r] + 64 * p);
            wsv[r] = pair_scales(w->ws[r], p, p < np ? 0xF : 0x3);
        }
        UNROLL for (int t = 0; t < T; t++) {
            __m512i xv = _mm512_maskz_loadu_epi8(m8, q[t] + 64 * p);
            __m512 dv = _mm512_maskz_loadu_ps(m32, d8[t] + 16 * p);
            __m512i ov = _mm512_maskz_loadu_epi32(m32, off8[t] + 16 * p);
            UNROLL for (int r = 0; r < R; r++) {
                __m512 f = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(ov, wv[r], xv));
                acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(f, wsv[r]), dv, acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int t = 0; t < T; t++) {
            float y = _mm512_reduce_add_ps(acc[r][t]);
            if (w->has_min) {
                const float *ds = A->dsum + (t0 + t) * nb;
                __m512 am = _mm512_setzero_ps();
                for (int64_t b = 0; b < nb; b += 16) {
                    __mmask16 m = nb - b >= 16 ? 0xFFFF : (__mmask16)((1u << (nb - b)) - 1);
                    am = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w->wm[r] + b), _mm512_maskz_loadu_ps(m, ds + b), am);
                }
                y += _mm512_reduce_add_ps(am);
            }
            Y[t * n_out + r] = y;
        }
    }
}

#define QUANT_TILE(R, T)                                                                              \
    TARGET static void quant_tile_##R##_##T(const qrows *w, const tl_act *A, int64_t t0, float *Y, int64_t n_out) { \
        quant_tile(w, R, A, t0, T, Y, n_out);                                                        \
    }
QUANT_TILE(4, 1) QUANT_TILE(4, 2) QUANT_TILE(4, 3) QUANT_TILE(4, 4)
QUANT_TILE(1, 1) QUANT_TILE(1, 2) QUANT_TILE(1, 3) QUANT_TILE(1, 4)

typedef void (*quant_tile_fn)(const qrows *, const tl_act *, int64_t, float *, int64_t);
static const quant_tile_fn quant_tiles[2][4] = {
    {quant_tile_1_1, quant_tile_1_2, quant_tile_1_3, quant_tile_1_4},
    {quant_tile_4_1, quant_tile_4_2, quant_tile_4_3, quant_tile_4_4},
};

TARGET void tl_rows_quant_avx512(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out, nb = A->nb, n_tok = A->n_tok;
    /* per-thread unpack buffers for ROWS rows (64-byte aligned rows) */
    size_t code_stride = (size_t)(n_in + 63) / 64 * 64;
    size_t ws_stride = (size_t)(2 * nb + 15) / 16 * 16, wm_stride = (size_t)(nb + 15) / 16 * 16;
    uint8_t *buf = aligned_alloc(64, ROWS * (code_stride + 4 * ws_stride + 4 * wm_stride));
    if (!buf) return;
    qrows w;
    w.has_min = tl_unpack_info_of(W->type).has_min;
    for (int r = 0; r < ROWS; r++) {
        w.code[r] = buf + r * code_stride;
        w.ws[r] = (float *)(buf + ROWS * code_stride) + r * ws_stride;
        w.wm[r] = (float *)(buf + ROWS * (code_stride + 4 * ws_stride)) + r * wm_stride;
    }
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK) {
        int64_t tc_end = tc + TOK_CHUNK < n_tok ? tc + TOK_CHUNK : n_tok;
        for (int64_t o = o0; o < o1;) {
            int R = o1 - o >= ROWS ? ROWS : 1;
            UNROLL for (int r = 0; r < R; r++) {
                tl_unpack_row_avx512(W->type, (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes, n_in,
                           (uint8_t *)w.code[r], (float *)w.ws[r], (float *)w.wm[r]);
            }
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                quant_tiles[R == ROWS][T - 1](&w, A, t, Y + t * n_out + o, n_out);
            }
            o += R;
        }
    }
    free(buf);
}
