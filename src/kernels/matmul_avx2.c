/* matmul_avx2.c: the AVX2 + FMA + F16C kernels, for x86 CPUs without
 * AVX-512 (compiled with target attributes; the dispatcher checks cpuid).
 *
 * Same structure as matmul_avx512.c with one 32-block per 256-bit step:
 * lane k of a block covers elements 4k..4k+3. Integer sums use
 * vpmaddubsw + vpmaddwd, whose 16-bit pair sums must not saturate: codes are
 * <= 63 for every type but Q8_0, which takes the |w| x sign(x, w) form
 * instead (|w| <= 128, |x| <= 127: pair sums <= 32512). Tiles are 4 rows x
 * up to 2 tokens (16 ymm registers). */
#include <immintrin.h>
#include <stdlib.h>

#include "kernels/kernels_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) static inline
#define UNROLL _Pragma("GCC unroll 4")

/* TOK_CHUNK: tokens whose int8 activations (<= 256 x n_in bytes) stay in L2
 * while a chunk's weight rows are unpacked once for them; float
 * activations are 4 bytes each, so a quarter as many. */
enum { ROWS = 4, TOK_TILE = 2, TOK_CHUNK = 256, TOK_CHUNK_FLOAT = 64 };

/* Sum of the 8 lanes in a fixed order. */
TARGET INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* ---- float weights ------------------------------------------------------- */

TARGET INLINE __m256 load_w8(tl_ggml_type t, const uint8_t *w, int64_t i) {
    if (t == TL_TYPE_F32) return _mm256_loadu_ps((const float *)w + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (t == TL_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The last n_in % 8 weights, zero-padded to 8. */
TARGET INLINE __m256 load_w8_tail(tl_ggml_type t, const uint8_t *w, int64_t i, int64_t n) {
    float tmp[8] = {0};
    for (int64_t k = 0; k < n; k++) {
        if (t == TL_TYPE_F32) memcpy(&tmp[k], w + 4 * (i + k), 4);
        else {
            uint16_t h;
            memcpy(&h, w + 2 * (i + k), 2);
            tmp[k] = t == TL_TYPE_F16 ? tl_half_to_f32(h) : tl_bf16_to_f32(h);
        }
    }
    return _mm256_loadu_ps(tmp);
}

TARGET INLINE void float_tile(tl_ggml_type type, const uint8_t *const *w, int R, const float *X, int64_t n_in,
                              int T, float *Y, int64_t n_out) {
    __m256 acc[ROWS][TOK_TILE];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n_in; i += 8) {
        __m256 wv[ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w8(type, w[r], i);
        UNROLL for (int t = 0; t < T; t++) {
            __m256 xv = _mm256_loadu_ps(X + t * n_in + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    if (i < n_in) {
        __m256 wv[ROWS];
        UNROLL for (int r = 0; r < R; r++) wv[r] = load_w8_tail(type, w[r], i, n_in - i);
        UNROLL for (int t = 0; t < T; t++) {
            float tmp[8] = {0};
            memcpy(tmp, X + t * n_in + i, sizeof(float) * (size_t)(n_in - i));
            __m256 xv = _mm256_loadu_ps(tmp);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) Y[t * n_out + r] = hsum8(acc[r][t]);
}

#define FLOAT_TILE(R, T)                                                                          \
    TARGET static void float_tile_##R##_##T(tl_ggml_type ty, const uint8_t *const *w, const float *X, \
                                            int64_t n_in, float *Y, int64_t n_out) {              \
        if (ty == TL_TYPE_F16) float_tile(TL_TYPE_F16, w, R, X, n_in, T, Y, n_out);               \
        else if (ty == TL_TYPE_BF16) float_tile(TL_TYPE_BF16, w, R, X, n_in, T, Y, n_out);        \
        else float_tile(TL_TYPE_F32, w, R, X, n_in, T, Y, n_out);                                 \
    }
FLOAT_TILE(4, 1) FLOAT_TILE(4, 2) FLOAT_TILE(1, 1) FLOAT_TILE(1, 2)

typedef void (*float_tile_fn)(tl_ggml_type, const uint8_t *const *, const float *, int64_t, float *, int64_t);
static const float_tile_fn float_tiles[2][2] = {{float_tile_1_1, float_tile_1_2}, {float_tile_4_1, float_tile_4_2}};

TARGET void tl_rows_float_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out;
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK_FLOAT) {
        int64_t tc_end = tc + TOK_CHUNK_FLOAT < n_tok ? tc + TOK_CHUNK_FLOAT : n_tok;
        for (int64_t o = o0; o < o1;) {
            int R = o1 - o >= ROWS ? ROWS : 1;
            const uint8_t *w[ROWS];
            for (int r = 0; r < R; r++) w[r] = (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes;
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                float_tiles[R == ROWS][T - 1](W->type, w, X + t * n_in, n_in, Y + t * n_out + o, n_out);
            }
            o += R;
        }
    }
}

/* ---- unpacking quantized rows ----------------------------------------------
 * As in matmul_avx512.c: a row's scales go to small arrays (row_scales), its
 * codes are made one 32-block at a time in a register (codes_block), stored
 * for prefill and used directly for decode -- the same bytes either way. */

/* 32 bytes, byte i = 0xFF where bit i of bits is set. */
TARGET INLINE __m256i bits_to_bytes(uint32_t bits) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* The 32 codes of block b of row s. */
TARGET INLINE __m256i codes_block(tl_ggml_type t, const uint8_t *s, int64_t b) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    switch (t) {
    case TL_TYPE_Q8_0:
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(s + (size_t)b * sizeof(blk_q8_0) + 2)),
                                _mm256_set1_epi8((char)0x80));
    case TL_TYPE_Q4_0: case TL_TYPE_Q5_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: {
        int five = t == TL_TYPE_Q5_0 || t == TL_TYPE_Q5_1, has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        size_t bb = five ? (has_m ? sizeof(blk_q5_1) : sizeof(blk_q5_0)) : (has_m ? sizeof(blk_q4_1) : sizeof(blk_q4_0));
        const uint8_t *blk = s + (size_t)b * bb;
        __m128i a = _mm_loadu_si128((const __m128i *)(blk + 2 + 2 * has_m + 4 * five));
        __m256i c = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(a, 4), a), low4);
        if (five) {
            uint32_t qh;
            memcpy(&qh, blk + 2 + 2 * has_m, 4);
            c = _mm256_or_si256(c, _mm256_and_si256(bits_to_bytes(qh), sixteen));
        }
        return c;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        int five = t == TL_TYPE_Q5_K;
        size_t bb = five ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
        const uint8_t *blk = s + (size_t)(b / 8) * bb;
        int j = (int)(b % 8); /* sub-block: chunk j/2, high nibbles when odd */
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * five + 32 * (j / 2)));
        __m256i c = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, low4);
        if (five) {
            __m256i bit = _mm256_set1_epi8((char)(1 << j));
            __m256i h = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(blk + 16)), bit);
            c = _mm256_or_si256(c, _mm256_and_si256(_mm256_cmpeq_epi8(h, bit), sixteen));
        }
        return c;
    }
    case TL_TYPE_Q6_K: {
        const blk_q6_k *blk = (const blk_q6_k *)(s + (size_t)(b / 8) * sizeof(blk_q6_k));
        int j = (int)(b % 8), h = j / 4, quarter = j % 4;
        __m256i ql = _mm256_loadu_si256((const __m256i *)(blk->ql + 64 * h + 32 * (quarter & 1)));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h));
        __m256i lo = _mm256_and_si256(quarter >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
        __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * quarter)), _mm256_set1_epi8(3));
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)); /* hi <= 3: no carry across bytes */
    }
    default: return _mm256_setzero_si256();
    }
}

/* ws (per 16 elements) and wm (per 32, for types with mins) of a row of nb blocks. */
TARGET static void row_scales(tl_ggml_type t, const uint8_t *s, int64_t nb, float *ws, float *wm) {
    switch (t) {
    case TL_TYPE_Q8_0: case TL_TYPE_Q4_0: case TL_TYPE_Q5_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: {
        size_t bb = t == TL_TYPE_Q8_0 ? sizeof(blk_q8_0) : t == TL_TYPE_Q4_0 ? sizeof(blk_q4_0)
                  : t == TL_TYPE_Q5_0 ? sizeof(blk_q5_0) : t == TL_TYPE_Q4_1 ? sizeof(blk_q4_1) : sizeof(blk_q5_1);
        int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        for (int64_t b = 0; b < nb; b++, s += bb) {
            tl_half d;
            memcpy(&d, s, 2);
            ws[2 * b] = ws[2 * b + 1] = _cvtsh_ss(d);
            if (has_m) {
                tl_half m;
                memcpy(&m, s + 2, 2);
                wm[b] = _cvtsh_ss(m);
            }
        }
        break;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        size_t bb = t == TL_TYPE_Q5_K ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
        for (int64_t sb = 0; sb < nb / 8; sb++, s += bb, ws += 16, wm += 8) {
            tl_half dh, mh;
            memcpy(&dh, s, 2);
            memcpy(&mh, s + 2, 2);
            float d = _cvtsh_ss(dh), dmin = _cvtsh_ss(mh);
            for (int j = 0; j < 8; j++) {
                uint8_t sc, mn;
                tl_k4_scale_min(j, s + 4, &sc, &mn);
                ws[2 * j] = ws[2 * j + 1] = d * (float)sc;
                wm[j] = -(dmin * (float)mn);
            }
        }
        break;
    }
    case TL_TYPE_Q6_K:
        for (int64_t sb = 0; sb < nb / 8; sb++, s += sizeof(blk_q6_k), ws += 16) {
            const blk_q6_k *blk = (const blk_q6_k *)s;
            __m256 d = _mm256_set1_ps(_cvtsh_ss(blk->d));
            __m128i sc = _mm_loadu_si128((const __m128i *)blk->scales);
            _mm256_storeu_ps(ws, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d));
            _mm256_storeu_ps(ws + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d));
        }
        break;
    default: break;
    }
}

TARGET void tl_unpack_row_avx2(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm) {
    if (t == TL_TYPE_MXFP4) { tl_unpack_mxfp4_avx2(src, n, code, ws); return; }
    int64_t nb = n / QK32;
    row_scales(t, src, nb, ws, wm);
    for (int64_t b = 0; b < nb; b++) _mm256_storeu_si256((__m256i *)(code + 32 * b), codes_block(t, src, b));
}

/* ---- quantized weights ------------------------------------------------------- */

typedef struct {
    const uint8_t *code[ROWS];
    const float *ws[ROWS];
    const float *wm[ROWS];
    const uint8_t *raw[ROWS];  /* the stored rows (decode: codes made in registers) */
    int has_min;
    int offset;  /* codes' zero point (not used for Q8_0's signed form) */
} qrows;

/* sum_b wm[b] * dsum[b]: the mins' share of a row (types with mins). */
TARGET INLINE float min_term(const float *wm, const float *ds, int64_t nb) {
    __m256 am = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) am = _mm256_fmadd_ps(_mm256_loadu_ps(wm + b), _mm256_loadu_ps(ds + b), am);
    float m = hsum8(am);
    for (; b < nb; b++) m += wm[b] * ds[b];
    return m;
}

/* fused: TL_TYPE_COUNT to read the unpacked codes, else the weight type whose
 * codes are made from the raw rows (decode); the arithmetic is the same. */
TARGET INLINE void quant_tile(const qrows *w, int R, int signed_codes, int offset, tl_ggml_type fused, const tl_act *A,
                              int64_t t0, int T, float *Y, int64_t n_out) {
    const int64_t nb = A->nb, n_in = A->n_in;
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    const __m256i half_idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i offv = _mm256_set1_epi8((char)offset); /* codes' zero point, <= 32 here */
    __m256 acc[ROWS][TOK_TILE];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i wv[ROWS], wabs[ROWS];
        __m256 wsv[ROWS];
        UNROLL for (int r = 0; r < R; r++) {
            if (fused == TL_TYPE_COUNT) wv[r] = _mm256_loadu_si256((const __m256i *)(w->code[r] + 32 * b));
            else wv[r] = codes_block(fused, w->raw[r], b);
            if (signed_codes) {
                wv[r] = _mm256_xor_si256(wv[r], flip); /* back to the stored int8 */
                wabs[r] = _mm256_abs_epi8(wv[r]);
            }
            __m128 two = _mm_castpd_ps(_mm_load_sd((const double *)(w->ws[r] + 2 * b)));
            wsv[r] = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), half_idx);
        }
        UNROLL for (int t = 0; t < T; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            __m256i xv = _mm256_loadu_si256((const __m256i *)(A->q + (t0 + t) * n_in + 32 * b));
            __m256 dv = _mm256_broadcast_ss(A->d + tb);
            /* -offset * (sum of each lane's 4 activation codes) */
            __m256i ov = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(_mm256_maddubs_epi16(offv, xv), ones));
            UNROLL for (int r = 0; r < R; r++) {
                __m256i lanes;
                if (signed_codes) {
                    lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(xv, wv[r])), ones);
                } else {
                    lanes = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wv[r], xv), ones), ov);
                }
                __m256 f = _mm256_cvtepi32_ps(lanes);
                acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(f, wsv[r]), dv, acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int t = 0; t < T; t++) {
            float y = hsum8(acc[r][t]);
            if (w->has_min) y += min_term(w->wm[r], A->dsum + (t0 + t) * nb, nb);
            Y[t * n_out + r] = y;
        }
    }
}

/* Prefill: codes unpacked for ROWS rows (pf_rows), every operand of the
 * inner loop read from L1 (memory operands), so the 4 x 2 accumulators stay
 * in registers. The arithmetic of each (row, token) is quant_tile's,
 * operation for operation, so prefill and decode rows are the same bits. */
typedef struct {
    const uint8_t *code[ROWS]; /* unsigned codes, or Q8_0: |w| */
    const int8_t *sgn[ROWS];   /* Q8_0: the stored int8 weights */
    const float *wse[ROWS];    /* 8 floats per block: ws of lanes 0-3, then 4-7 */
    const float *wm[ROWS];
    int has_min;
    int offset;
} pf_rows;

TARGET INLINE void quant_tile_pf(const pf_rows *w, const int R, const int signed_codes, const tl_act *A, int64_t t0,
                                 const int T, float *Y, int64_t n_out) {
    const int64_t nb = A->nb, n_in = A->n_in;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i offv = _mm256_set1_epi8((char)w->offset);
    __m256 acc[ROWS][TOK_TILE];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        UNROLL for (int t = 0; t < T; t++) {
            __m256i xv = _mm256_loadu_si256((const __m256i *)(A->q + (t0 + t) * n_in + 32 * b));
            __m256 dv = _mm256_broadcast_ss(A->d + (t0 + t) * nb + b);
            __m256i ov = _mm256_setzero_si256();
            if (!signed_codes)
                ov = _mm256_sub_epi32(ov, _mm256_madd_epi16(_mm256_maddubs_epi16(offv, xv), ones));
            UNROLL for (int r = 0; r < R; r++) {
                __m256i lanes;
                __m256i wc = _mm256_loadu_si256((const __m256i *)(w->code[r] + 32 * b));
                if (signed_codes) {
                    __m256i ws = _mm256_loadu_si256((const __m256i *)(w->sgn[r] + 32 * b));
                    lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(wc, _mm256_sign_epi8(xv, ws)), ones);
                } else {
                    lanes = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wc, xv), ones), ov);
                }
                __m256 f = _mm256_cvtepi32_ps(lanes);
                acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(f, _mm256_loadu_ps(w->wse[r] + 8 * b)), dv, acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int t = 0; t < T; t++) {
            float y = hsum8(acc[r][t]);
            if (w->has_min) y += min_term(w->wm[r], A->dsum + (t0 + t) * nb, nb);
            Y[t * n_out + r] = y;
        }
    }
}

#define QUANT_TILE(R, T)                                                                                 \
    TARGET static void quant_tile_##R##_##T(const pf_rows *w, int sc, const tl_act *A, int64_t t0, float *Y, \
                                            int64_t n_out) {                                            \
        if (sc) quant_tile_pf(w, R, 1, A, t0, T, Y, n_out);                                             \
        else quant_tile_pf(w, R, 0, A, t0, T, Y, n_out);                                                \
    }
QUANT_TILE(4, 1) QUANT_TILE(4, 2) QUANT_TILE(1, 1) QUANT_TILE(1, 2)

typedef void (*pf_tile_fn)(const pf_rows *, int, const tl_act *, int64_t, float *, int64_t);

typedef void (*quant_tile_fn)(const qrows *, int, const tl_act *, int64_t, float *, int64_t);

/* Decode: one token, codes made in registers, one instantiation per type. */
#define QUANT_FUSED(TY, SIGNED)                                                                        \
    TARGET static void fused_4_##TY(const qrows *w, int sc, const tl_act *A, int64_t t0, float *Y, int64_t n_out) { \
        quant_tile(w, 4, SIGNED, w->offset, TL_TYPE_##TY, A, t0, 1, Y, n_out);                         \
    }                                                                                                  \
    TARGET static void fused_1_##TY(const qrows *w, int sc, const tl_act *A, int64_t t0, float *Y, int64_t n_out) { \
        quant_tile(w, 1, SIGNED, w->offset, TL_TYPE_##TY, A, t0, 1, Y, n_out);                         \
    }
QUANT_FUSED(Q8_0, 1) QUANT_FUSED(Q4_0, 0) QUANT_FUSED(Q5_0, 0) QUANT_FUSED(Q4_1, 0) QUANT_FUSED(Q5_1, 0)
QUANT_FUSED(Q4_K, 0) QUANT_FUSED(Q5_K, 0) QUANT_FUSED(Q6_K, 0)

static quant_tile_fn fused_kernel(tl_ggml_type t, int full) {
    switch (t) {
    case TL_TYPE_Q8_0: return full ? fused_4_Q8_0 : fused_1_Q8_0;
    case TL_TYPE_Q4_0: return full ? fused_4_Q4_0 : fused_1_Q4_0;
    case TL_TYPE_Q5_0: return full ? fused_4_Q5_0 : fused_1_Q5_0;
    case TL_TYPE_Q4_1: return full ? fused_4_Q4_1 : fused_1_Q4_1;
    case TL_TYPE_Q5_1: return full ? fused_4_Q5_1 : fused_1_Q5_1;
    case TL_TYPE_Q4_K: return full ? fused_4_Q4_K : fused_1_Q4_K;
    case TL_TYPE_Q5_K: return full ? fused_4_Q5_K : fused_1_Q5_K;
    case TL_TYPE_Q6_K: return full ? fused_4_Q6_K : fused_1_Q6_K;
    default: return NULL;
    }
}
static const pf_tile_fn quant_tiles[2][2] = {{quant_tile_1_1, quant_tile_1_2}, {quant_tile_4_1, quant_tile_4_2}};

/* One row unpacked for the prefill tile: codes (Q8_0: |w| and the int8
 * weights), ws spread to 8 lanes per block, wm. */
TARGET static void pf_unpack(tl_ggml_type t, const uint8_t *src, int64_t n_in, int signed_codes, uint8_t *code,
                             int8_t *sgn, float *ws, float *wse, float *wm) {
    int64_t nb = n_in / QK32;
    tl_unpack_row_avx2(t, src, n_in, code, ws, wm);
    const __m256i half_idx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1), flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        __m128 two = _mm_castpd_ps(_mm_load_sd((const double *)(ws + 2 * b)));
        _mm256_storeu_ps(wse + 8 * b, _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), half_idx));
        if (signed_codes) {
            __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(code + 32 * b)), flip);
            _mm256_storeu_si256((__m256i *)(sgn + 32 * b), v);
            _mm256_storeu_si256((__m256i *)(code + 32 * b), _mm256_abs_epi8(v));
        }
    }
}

TARGET void tl_rows_quant_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out, nb = A->nb, n_tok = A->n_tok;
    size_t code_stride = (size_t)(n_in + 63) / 64 * 64;
    size_t ws_stride = (size_t)(2 * nb + 15) / 16 * 16, wm_stride = (size_t)(nb + 15) / 16 * 16;
    size_t wse_stride = (size_t)(8 * nb + 15) / 16 * 16;
    size_t row_bytes = 2 * code_stride + 4 * (ws_stride + wm_stride + wse_stride);
    uint8_t *buf = aligned_alloc(64, ROWS * row_bytes);
    if (!buf) return;
    tl_unpack_info info = tl_unpack_info_of(W->type);
    int signed_codes = info.offset == 128;
    qrows w;   /* decode */
    pf_rows pw; /* prefill */
    w.has_min = pw.has_min = info.has_min;
    w.offset = pw.offset = info.offset;
    float *ws[ROWS];
    for (int r = 0; r < ROWS; r++) {
        uint8_t *rb = buf + r * row_bytes;
        w.code[r] = pw.code[r] = rb;
        pw.sgn[r] = (int8_t *)(rb + code_stride);
        ws[r] = (float *)(rb + 2 * code_stride);
        w.ws[r] = ws[r];
        w.wm[r] = pw.wm[r] = ws[r] + ws_stride;
        pw.wse[r] = ws[r] + ws_stride + wm_stride;
    }
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK) {
        int64_t tc_end = tc + TOK_CHUNK < n_tok ? tc + TOK_CHUNK : n_tok;
        for (int64_t o = o0; o < o1;) {
            int R = o1 - o >= ROWS ? ROWS : 1;
            for (int r = 0; r < R; r++) w.raw[r] = (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes;
            quant_tile_fn fused = tc_end - tc == 1 ? fused_kernel(W->type, R == ROWS) : NULL;
            if (fused) {
                for (int r = 0; r < R; r++) row_scales(W->type, w.raw[r], nb, ws[r], (float *)w.wm[r]);
                fused(&w, signed_codes, A, tc, Y + tc * n_out + o, n_out);
                o += R;
                continue;
            }
            for (int r = 0; r < R; r++)
                pf_unpack(W->type, w.raw[r], n_in, signed_codes, (uint8_t *)pw.code[r], (int8_t *)pw.sgn[r], ws[r],
                          (float *)pw.wse[r], (float *)pw.wm[r]);
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                quant_tiles[R == ROWS][T - 1](&pw, signed_codes, A, t, Y + t * n_out + o, n_out);
            }
            o += R;
        }
    }
    free(buf);
}

/* ---- activations ---------------------------------------------------------------
 * tl_act_quantize_rows with 8-lane steps: the same bytes and floats as the
 * portable one (max of |x| is order-free and skips NaN like fmaxf does;
 * codes round half away from zero like roundf; NaN codes are 0). */
TARGET void tl_act_quantize_rows_avx2(tl_act *a, const float *X, int64_t t0, int64_t t1) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 hi = _mm256_set1_ps(127.f), lo = _mm256_set1_ps(-127.f);
    for (int64_t t = t0; t < t1; t++) {
        const float *x = X + t * a->n_in;
        int8_t *q = a->q + t * a->n_in;
        for (int64_t b = 0; b < a->nb; b++, x += QK32, q += QK32) {
            __m256 v[4], mx = _mm256_setzero_ps();
            for (int k = 0; k < 4; k++) {
                v[k] = _mm256_loadu_ps(x + 8 * k);
                mx = _mm256_max_ps(_mm256_and_ps(v[k], absmask), mx); /* NaN lane: keeps mx */
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
            float amax = _mm_cvtss_f32(m4);
            float d = amax / 127.f;
            float id = d != 0 ? 1.0f / d : 0;
            __m256 idv = _mm256_set1_ps(id);
            __m256i c[4];
            const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
            for (int k = 0; k < 4; k++) {
                __m256 s = _mm256_mul_ps(v[k], idv);
                __m256 ok = _mm256_cmp_ps(s, s, _CMP_ORD_Q);
                s = _mm256_and_ps(_mm256_min_ps(_mm256_max_ps(s, lo), hi), ok);
                /* roundf: half away from zero (s - trunc(s) is exact) */
                __m256 tr = _mm256_round_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
                __m256 away = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(s, tr), absmask), half, _CMP_GE_OQ);
                __m256 step = _mm256_or_ps(_mm256_andnot_ps(absmask, s), one); /* +-1 with the sign of s */
                c[k] = _mm256_cvtps_epi32(_mm256_add_ps(tr, _mm256_and_ps(away, step)));
            }
            /* int32 -> int8 in element order (packs interleave 128-bit lanes) */
            __m256i p01 = _mm256_packs_epi32(c[0], c[1]), p23 = _mm256_packs_epi32(c[2], c[3]);
            __m256i p = _mm256_packs_epi16(p01, p23);
            p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)q, p);
            __m256i s32 = _mm256_add_epi32(_mm256_add_epi32(c[0], c[1]), _mm256_add_epi32(c[2], c[3]));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
            d = tl_half_to_f32(tl_f32_to_half(d)); /* the block keeps its scale as binary16 */
            a->d[t * a->nb + b] = d;
            a->dsum[t * a->nb + b] = d * (float)_mm_cvtsi128_si32(s4);
        }
    }
}
