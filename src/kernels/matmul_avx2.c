/* matmul_avx2.c: the AVX2 + FMA + F16C kernels, for x86 CPUs without
 * AVX-512 (compiled with target attributes; the dispatcher checks cpuid),
 * and the integer kernels of CPUs with AVX-512 too, whose prefill tiles use
 * vpdpbusd (vnni_tile) for the same bits.
 *
 * Float weights: tiles of 4 rows x up to 2 tokens (16 ymm registers), one
 * 8-lane step per 8 elements. Integer weights: 8-row panels whose integer
 * sums take the portable kernel's float steps exactly (see "quantized
 * weights" below). Integer sums use vpmaddubsw + vpmaddwd, whose 16-bit
 * pair sums must not saturate (|w| <= 128, |x| <= 127: at most 32512). */
#include <immintrin.h>
#include <stdlib.h>

#include "kernels/kernels_internal.h"

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define INLINE __attribute__((always_inline)) static inline
#define UNROLL _Pragma("GCC unroll 4")
#define UNROLL8 _Pragma("GCC unroll 8") /* loops over a panel's rows: their vectors stay in registers */

/* The prefill tiles' AVX-512 VNNI form (vnni_tile), for CPUs with AVX-512:
 * 256-bit vpdpbusd with the EVEX encoding (32 registers). The test build
 * TL_EMULATE_AVX512 (tests/kernels/CMakeLists.txt) runs it on AVX2 with the
 * instruction's exact integer semantics written out lane by lane. */
#ifdef TL_EMULATE_AVX512
#define TARGET_VNNI TARGET
TARGET static inline __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) {
    int32_t a[8];
    uint8_t ub[32];
    int8_t sb[32];
    _mm256_storeu_si256((__m256i *)a, acc);
    _mm256_storeu_si256((__m256i *)ub, u);
    _mm256_storeu_si256((__m256i *)sb, s);
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 4; j++) a[k] = (int32_t)((uint32_t)a[k] + (uint32_t)(ub[4 * k + j] * sb[4 * k + j]));
    return _mm256_loadu_si256((const __m256i *)a);
}
#else
#define TARGET_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define dpbusd256 _mm256_dpbusd_epi32
#endif

/* TOK_CHUNK: tokens whose weight panels are packed once for all of them: a
 * whole engine pass (512 tokens). Their int8 activations (512 x n_in bytes)
 * stay in L2 only for the narrower matrices, yet packing every panel half as
 * often was worth more (ab_kernels one-thread prefill of 512 tokens against
 * chunks of 256: Q8_0 0.968x the time). Float activations are 4 bytes each,
 * so a quarter as many. */
enum { ROWS = 4, ROWS_DECODE = 6, TOK_TILE = 2, TOK_CHUNK = 512, TOK_CHUNK_FLOAT = 64 };

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
                              int T, float *Y, int64_t n_out, prefetch_plan pf) {
    __m256 acc[ROWS_DECODE][TOK_TILE];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n_in; i += 8) {
        prefetch_slice(pf, i / 8);
        __m256 wv[ROWS_DECODE];
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) wv[r] = load_w8(type, w[r], i);
        UNROLL for (int t = 0; t < T; t++) {
            __m256 xv = _mm256_loadu_ps(X + t * n_in + i);
            _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    if (i < n_in) {
        __m256 wv[ROWS_DECODE];
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) wv[r] = load_w8_tail(type, w[r], i, n_in - i);
        UNROLL for (int t = 0; t < T; t++) {
            float tmp[8] = {0};
            memcpy(tmp, X + t * n_in + i, sizeof(float) * (size_t)(n_in - i));
            __m256 xv = _mm256_loadu_ps(tmp);
            _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) Y[t * n_out + r] = hsum8(acc[r][t]);
}

#define FLOAT_TILE(R, T)                                                                          \
    TARGET static void float_tile_##R##_##T(tl_ggml_type ty, const uint8_t *const *w, const float *X, \
                                            int64_t n_in, float *Y, int64_t n_out, prefetch_plan pf) { \
        if (ty == TL_TYPE_F16) float_tile(TL_TYPE_F16, w, R, X, n_in, T, Y, n_out, pf);           \
        else if (ty == TL_TYPE_BF16) float_tile(TL_TYPE_BF16, w, R, X, n_in, T, Y, n_out, pf);    \
        else float_tile(TL_TYPE_F32, w, R, X, n_in, T, Y, n_out, pf);                             \
    }
FLOAT_TILE(4, 1) FLOAT_TILE(4, 2) FLOAT_TILE(1, 1) FLOAT_TILE(1, 2) FLOAT_TILE(6, 1)

typedef void (*float_tile_fn)(tl_ggml_type, const uint8_t *const *, const float *, int64_t, float *, int64_t,
                              prefetch_plan);
static const float_tile_fn float_tiles[2][2] = {{float_tile_1_1, float_tile_1_2}, {float_tile_4_1, float_tile_4_2}};

/* Row r of a 16-bit float matrix as floats (exact: the values load_w8 gives). */
TARGET static void widen_row(tl_ggml_type t, const uint8_t *w, int64_t n, float *out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_w8(t, w, i));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, w + 2 * i, 2);
        out[i] = t == TL_TYPE_F16 ? tl_half_to_f32(h) : tl_bf16_to_f32(h);
    }
}

TARGET void tl_widen_rows_avx2(tl_ggml_type t, const uint8_t **w, int R, int64_t n, float *wide) {
    for (int r = 0; r < R; r++) {
        widen_row(t, w[r], n, wide + (size_t)r * n);
        w[r] = (const uint8_t *)(wide + (size_t)r * n);
    }
}

/* From this many tokens on, F16/BF16 rows are widened to floats once per
 * token chunk (WIDEN_MIN_TOK / 2 or more tile passes read them) instead of
 * converted again by every 2-token tile: the same floats, so the same bits. */
enum { WIDEN_MIN_TOK = 4 };

TARGET void tl_rows_float_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y) {
    const int64_t n_in = W->n_in, n_out = W->n_out;
    float *wide = W->type != TL_TYPE_F32 && n_tok >= WIDEN_MIN_TOK ? malloc(sizeof(float) * ROWS * (size_t)n_in) : NULL;
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK_FLOAT) {
        int64_t tc_end = tc + TOK_CHUNK_FLOAT < n_tok ? tc + TOK_CHUNK_FLOAT : n_tok;
        for (int64_t o = o0; o < o1;) {
            /* one token (decode): 6 rows at a time, more of the rows streaming from memory at once */
            int R = n_tok == 1 && o1 - o >= ROWS_DECODE ? ROWS_DECODE : o1 - o >= ROWS ? ROWS : 1;
            const uint8_t *w[ROWS_DECODE];
            for (int r = 0; r < R; r++) w[r] = (const uint8_t *)W->data + (size_t)(o + r) * W->row_bytes;
            if (R == ROWS_DECODE) {
                float_tile_6_1(W->type, w, X + tc * n_in, n_in, Y + tc * n_out + o, n_out,
                               prefetch_ahead(W, o, ROWS_DECODE, o1, n_in / 8));
                o += R;
                continue;
            }
            if (wide) tl_widen_rows_avx2(W->type, w, R, n_in, wide);
            tl_ggml_type type = wide ? TL_TYPE_F32 : W->type;
            for (int64_t t = tc; t < tc_end; t += TOK_TILE) {
                int T = tc_end - t >= TOK_TILE ? TOK_TILE : (int)(tc_end - t);
                float_tiles[R == ROWS][T - 1](type, w, X + t * n_in, n_in, Y + t * n_out + o, n_out, (prefetch_plan){NULL, 0, 0});
            }
            o += R;
        }
    }
    free(wide);
}

/* ---- unpacking quantized rows ----------------------------------------------
 * As in matmul_avx512.c: a row's scales go to small arrays (row_scales), its
 * codes are made one 32-block at a time in a register (codes_block), stored
 * for the prefill panel and used directly for decode -- the same bytes
 * either way. */

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

/* ws (per 16 elements) and wm (per 32, for types with mins) of a row of nb
 * blocks: ws[i * st] for half block i, wm[b * st] (st = 1: the row's own
 * arrays; st = 8: one lane of a panel's). */
TARGET static void row_scales(tl_ggml_type t, const uint8_t *s, int64_t nb, float *ws, float *wm, size_t st) {
    switch (t) {
    case TL_TYPE_Q8_0: case TL_TYPE_Q4_0: case TL_TYPE_Q5_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_1: {
        size_t bb = t == TL_TYPE_Q8_0 ? sizeof(blk_q8_0) : t == TL_TYPE_Q4_0 ? sizeof(blk_q4_0)
                  : t == TL_TYPE_Q5_0 ? sizeof(blk_q5_0) : t == TL_TYPE_Q4_1 ? sizeof(blk_q4_1) : sizeof(blk_q5_1);
        int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        for (int64_t b = 0; b < nb; b++, s += bb) {
            tl_half d;
            memcpy(&d, s, 2);
            ws[2 * b * st] = ws[(2 * b + 1) * st] = _cvtsh_ss(d);
            if (has_m) {
                tl_half m;
                memcpy(&m, s + 2, 2);
                wm[b * st] = _cvtsh_ss(m);
            }
        }
        break;
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        /* the 8 six-bit scales and mins of a super-block (tl_k4_scale_min) four
         * at a time in 32-bit words, then d x scale and -(dmin x min) 8 lanes at once */
        size_t bb = t == TL_TYPE_Q5_K ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
        for (int64_t sb = 0; sb < nb / 8; sb++, s += bb, ws += 16 * st, wm += 8 * st) {
            tl_half dh, mh;
            uint32_t a, b, c;
            memcpy(&dh, s, 2);
            memcpy(&mh, s + 2, 2);
            memcpy(&a, s + 4, 4);
            memcpy(&b, s + 8, 4);
            memcpy(&c, s + 12, 4);
            uint32_t sc_lo = a & 0x3F3F3F3Fu, sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
            uint32_t mn_lo = b & 0x3F3F3F3Fu, mn_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
            __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo)));
            __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)mn_hi, (int)mn_lo)));
            float sv[8], mv[8];
            _mm256_storeu_ps(sv, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)), sc));
            _mm256_storeu_ps(mv, _mm256_xor_ps(_mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(mh)), mn), _mm256_set1_ps(-0.0f)));
            for (int j = 0; j < 8; j++) {
                ws[2 * j * st] = ws[(2 * j + 1) * st] = sv[j];
                wm[j * st] = mv[j];
            }
        }
        break;
    }
    case TL_TYPE_Q6_K:
        for (int64_t sb = 0; sb < nb / 8; sb++, s += sizeof(blk_q6_k), ws += 16 * st) {
            const blk_q6_k *blk = (const blk_q6_k *)s;
            __m256 d = _mm256_set1_ps(_cvtsh_ss(blk->d));
            __m128i sc = _mm_loadu_si128((const __m128i *)blk->scales);
            float v[16];
            _mm256_storeu_ps(v, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d));
            _mm256_storeu_ps(v + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d));
            for (int k = 0; k < 16; k++) ws[k * st] = v[k];
        }
        break;
    default: break;
    }
}

TARGET void tl_unpack_row_avx2(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm) {
    if (t == TL_TYPE_MXFP4) { tl_unpack_mxfp4_avx2(src, n, code, ws); return; }
    int64_t nb = n / QK32;
    row_scales(t, src, nb, ws, wm, 1);
    for (int64_t b = 0; b < nb; b++) _mm256_storeu_si256((__m256i *)(code + 32 * b), codes_block(t, src, b));
}

/* ---- quantized weights -------------------------------------------------------
 * Every integer type is multiplied in one form: signed int8 weights
 * w = code - offset (|w| <= 128 for Q8_0, <= 32 for every other type), the
 * scale ws of each 16 elements and the min wm of each 32 (types with mins).
 * For output row o and token t both kernels below take the portable
 * kernel's steps (matmul_scalar.c), one rounding each, in its order:
 *   acc = sum over blocks b, parts h of ((float)isum(b, h) * ws[2b+h]) * d[t][b]
 *   Y   = acc + sum over b of wm[b] * dsum[t][b]
 * isum(b, h) being the exact integer dot product of the weights and
 * activation codes of part h of block b: the whole block (one part) when
 * both its halves share a scale, each 16-element half for Q6_K. How isum is
 * found never changes a bit, so prefill, decode and any tiling or thread
 * split agree exactly.
 *
 *  - Prefill (panel_tile): 8 rows repacked into a panel, interleaved by
 *    4-element groups (per group, 32 bytes: 4 weights of row 0, of row 1, ...),
 *    so one vpmaddubsw multiplies all 8 rows by a broadcast of 4 activation
 *    codes and the lanes of every sum are rows: no horizontal sums, and each
 *    float step serves 8 rows. A tile is 8 rows x up to 4 tokens (16 ymm:
 *    4 float and 4 integer accumulators, the group's weights, temporaries).
 *    vpmaddubsw wants one unsigned side: Q8_0 multiplies |w| by x ^ (the
 *    sign mask of w), Q6_K |w| by sign(x, w), every other type its unsigned
 *    codes by x; groups' 16-bit pair sums add up before vpmaddwd widens
 *    them, as many as cannot overflow (see TILE_Q8 ..).
 *  - Decode (direct_rows, 1 or 2 tokens): rows read straight from the file;
 *    per row a vector of 8 lane sums (lane k = elements 4k..4k+3; unsigned
 *    codes x activations less offset x their sum, except Q8_0), turned into
 *    the same 8-row vectors of half sums by a transpose-and-add (and the
 *    two halves added, but for Q6_K). The 8 rows'
 *    scales are read block by block, and the rows two panels on are
 *    prefetched while these are multiplied. */

enum { PANEL = 8, PF_TOK = 4, DIRECT_MAX_TOK = 2 };

typedef struct {
    int8_t *w;     /* [nb][8 groups][8 rows][4]: signed weights (TILE_HALF), their signs as
                    * masks, -1 where w < 0, else 0 (TILE_Q8), or the unsigned codes (TILE_U16,
                    * TILE_U32) */
    uint8_t *wabs; /* the same layout: |w| (not written for the unsigned kinds) */
    float *ws;     /* [2 nb][8 rows]: scale of each half block */
    float *wm;     /* [nb][8 rows]: min of each block (types with mins) */
    int32_t *wneg; /* [nb][8 rows]: sum of |w| over the block's negative weights (TILE_Q8) */
} panel;

/* The 32 signed weights of block b of a stored row (not MXFP4). */
TARGET INLINE __m256i signed_block(tl_ggml_type t, const uint8_t *raw, int64_t b, __m256i offv) {
    if (t == TL_TYPE_Q8_0) return _mm256_loadu_si256((const __m256i *)(raw + (size_t)b * sizeof(blk_q8_0) + 2));
    return _mm256_sub_epi8(codes_block(t, raw, b), offv);
}

/* Transposes 8 rows of 8 dwords: out[k] holds dword k of rows 0..7. */
TARGET INLINE void transpose8_epi32(__m256i *v) {
    __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
    __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    v[0] = _mm256_permute2x128_si256(u0, u4, 0x20), v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    v[1] = _mm256_permute2x128_si256(u1, u5, 0x20), v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    v[2] = _mm256_permute2x128_si256(u2, u6, 0x20), v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    v[3] = _mm256_permute2x128_si256(u3, u7, 0x20), v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

/* Scales of the R rows (ws, wm: 2 nb and nb floats per row, rows apart by
 * ws_stride / wm_stride) spread into the panel layout; lanes of rows >= R
 * copy row 0 (computed and thrown away). */
static void panel_scales(const float *ws, size_t ws_stride, const float *wm, size_t wm_stride, int R, int64_t nb,
                         int has_min, float *pws, float *pwm) {
    for (int r = 0; r < PANEL; r++) {
        const float *s = ws + (r < R ? r : 0) * ws_stride, *m = wm + (r < R ? r : 0) * wm_stride;
        for (int64_t i = 0; i < 2 * nb; i++) pws[PANEL * i + r] = s[i];
        if (has_min)
            for (int64_t b = 0; b < nb; b++) pwm[PANEL * b + r] = m[b];
    }
}

/* The reference's float step for one part of a block, 8 rows at once:
 * acc + ((float)isum * ws) * d, one rounding each. */
TARGET INLINE __m256 float_step(__m256 acc, __m256i isum, __m256 ws, __m256 d) {
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), ws), d));
}

/* Y[t][0..R) = acc + mins for one token: the final steps both kernels share. */
TARGET INLINE void store_rows(__m256 acc, const float *pwm, int has_min, const float *dsum, int64_t nb, float *y, int R) {
    __m256 mn = _mm256_setzero_ps();
    if (has_min)
        for (int64_t b = 0; b < nb; b++) mn = _mm256_add_ps(mn, _mm256_mul_ps(_mm256_loadu_ps(pwm + PANEL * b), _mm256_broadcast_ss(dsum + b)));
    acc = _mm256_add_ps(acc, mn);
    if (R == PANEL) {
        _mm256_storeu_ps(y, acc);
    } else {
        float tmp[PANEL];
        _mm256_storeu_ps(tmp, acc);
        memcpy(y, tmp, sizeof(float) * (size_t)R);
    }
}

/* How a prefill tile sums a block (the widest integer sums that cannot
 * overflow, then as few float steps as the scales allow):
 *  - TILE_Q8 (Q8_0, |w| <= 128, one scale per block): |w| x (x ^ sign mask
 *    of w) (vpmaddubsw wants one unsigned side; pairs stay within
 *    [-32768, 32258] since |x| <= 127), every group's 16-bit pair sums
 *    widened at once (vpmaddwd) and added in 32 bits over the block, plus
 *    the block's wneg;
 *  - TILE_U16 (codes <= 15, one scale per block: Q4_0, Q4_1, Q4_K): the
 *    unsigned codes times x as they are, 16-bit sums over all 8 groups
 *    (8 x 2 x 15 x 127 = 30480), one vpmaddwd per block;
 *  - TILE_U32 (codes <= 31, one scale per block: Q5_0, Q5_1, Q5_K, MXFP4):
 *    the same, 16-bit sums over each half's 4 groups (4 x 2 x 31 x 127 =
 *    31496), both halves widened and added;
 *  - TILE_HALF (Q6_K, a scale per half, codes <= 63): |w| x sign(x, w) with
 *    |w| <= 32, 16-bit sums per half, a float step per half.
 * The unsigned kinds take offset x the sum of the block's activation codes
 * off the block's sum (types with an offset), which leaves exactly the sum
 * of w x x. */
enum { TILE_Q8, TILE_U16, TILE_U32, TILE_HALF };

/* The largest code of a type's canonical form. */
static int max_code(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_Q4_0: case TL_TYPE_Q4_1: case TL_TYPE_Q4_K: return 15;
    case TL_TYPE_MXFP4: return 24;
    case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: case TL_TYPE_Q5_K: return 31;
    case TL_TYPE_Q6_K: return 63;
    default: return 255; /* Q8_0 */
    }
}

static int tile_kind(tl_ggml_type t, tl_unpack_info info) {
    int m = max_code(t);
    if (info.scale16) return TILE_HALF;
    return m <= 15 ? TILE_U16 : m <= 31 ? TILE_U32 : TILE_Q8;
}

/* How a tile's vpmaddubsw gets an unsigned side (see TILE_Q8 ..). */
enum { BY_SIGN, BY_CODE, BY_MASK };

/* The products of group g (4 elements of 8 rows) of the panel with token t's
 * 4 activation codes at xq: 16-bit pair sums.
 *  - BY_SIGN: |w| x sign(x, w), w signed;
 *  - BY_CODE: the unsigned codes in w times x (wabs unused);
 *  - BY_MASK: |w| x (x ^ m), m the sign mask of w in w: where w < 0 that is
 *    |w| x (-x - 1) = w x - |w|, which the block's wneg puts back. One vpxor,
 *    which runs beside the multiplies, where vpsignb competes with them:
 *    Q8_0 prefill tiles 5% faster (best of 200 on the L1-resident tile). */
TARGET INLINE __m256i group_products(__m256i w, __m256i wabs, const int8_t *xq, const int how) {
    int32_t x4;
    memcpy(&x4, xq, 4);
    __m256i x = _mm256_set1_epi32(x4);
    if (how == BY_CODE) return _mm256_maddubs_epi16(w, x);
    if (how == BY_MASK) return _mm256_maddubs_epi16(wabs, _mm256_xor_si256(x, w));
    return _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(x, w));
}

/* 16-bit sums over the 4 groups of half h of a block, for T tokens. */
TARGET INLINE void half_sums16(const __m256i *wv, const __m256i *wa, const int8_t *const *xb, int h, const int T,
                               const int how, __m256i *hs) {
    UNROLL for (int g = 0; g < 4; g++) {
        __m256i w = _mm256_load_si256(wv + 4 * h + g), a = how == BY_CODE ? w : _mm256_load_si256(wa + 4 * h + g);
        UNROLL for (int t = 0; t < T; t++) {
            __m256i p = group_products(w, a, xb[t] + 16 * h + 4 * g, how);
            hs[t] = g ? _mm256_add_epi16(hs[t], p) : p;
        }
    }
}

/* Prefill tile: the panel's 8 rows times tokens t0 .. t0+T-1 (offset: the
 * codes' zero point, taken off by the unsigned kinds when has_off). */
TARGET INLINE void panel_tile(const panel *P, const int kind, const int has_off, int has_min, const tl_act *A,
                              int64_t t0, const int T, float *Y, int64_t n_out, int R, int offset) {
    const int64_t nb = A->nb, n_in = A->n_in;
    const __m256i ones = _mm256_set1_epi16(1), offv = _mm256_set1_epi32(offset);
    __m256 acc[PF_TOK];
    const int8_t *xq[PF_TOK];
    const float *xd[PF_TOK];
    UNROLL for (int t = 0; t < T; t++) {
        acc[t] = _mm256_setzero_ps();
        xq[t] = A->q + (t0 + t) * n_in;
        xd[t] = A->d + (t0 + t) * nb;
    }
    for (int64_t b = 0; b < nb; b++) {
        const __m256i *wv = (const __m256i *)(P->w + 256 * b), *wa = (const __m256i *)(P->wabs + 256 * b);
        const int8_t *xb[PF_TOK];
        UNROLL for (int t = 0; t < T; t++) xb[t] = xq[t] + 32 * b;
        if (kind == TILE_HALF) {
            _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) { /* unrolled, GCC spills the accumulators */
                __m256i is[PF_TOK];
                half_sums16(wv, wa, xb, h, T, BY_SIGN, is);
                __m256 sc = _mm256_load_ps(P->ws + PANEL * (2 * b + h));
                UNROLL for (int t = 0; t < T; t++)
                    acc[t] = float_step(acc[t], _mm256_madd_epi16(is[t], ones), sc, _mm256_broadcast_ss(xd[t] + b));
            }
            continue;
        }
        __m256i is[PF_TOK]; /* the block's sums: 32-bit (16-bit while TILE_U16 adds groups) */
        if (kind == TILE_U32) {
            _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
                __m256i hs[PF_TOK];
                half_sums16(wv, wa, xb, h, T, BY_CODE, hs);
                UNROLL for (int t = 0; t < T; t++) {
                    __m256i s = _mm256_madd_epi16(hs[t], ones);
                    is[t] = h ? _mm256_add_epi32(is[t], s) : s;
                }
            }
        } else {
            const int nosign = kind == TILE_U16;
            UNROLL8 for (int g = 0; g < 8; g++) {
                __m256i w = _mm256_load_si256(wv + g), a = nosign ? w : _mm256_load_si256(wa + g);
                UNROLL for (int t = 0; t < T; t++) {
                    __m256i p = group_products(w, a, xb[t] + 4 * g, nosign ? BY_CODE : BY_MASK);
                    if (nosign) is[t] = g ? _mm256_add_epi16(is[t], p) : p;
                    else {
                        p = _mm256_madd_epi16(p, ones);
                        is[t] = g ? _mm256_add_epi32(is[t], p) : p;
                    }
                }
            }
            if (nosign)
                UNROLL for (int t = 0; t < T; t++) is[t] = _mm256_madd_epi16(is[t], ones);
        }
        if (has_off)
            UNROLL for (int t = 0; t < T; t++)
                is[t] = _mm256_sub_epi32(is[t], _mm256_mullo_epi32(_mm256_set1_epi32(A->csum[(t0 + t) * nb + b]), offv));
        __m256 sc = _mm256_load_ps(P->ws + PANEL * (2 * b));
        if (kind == TILE_Q8) { /* the negative weights' |w| back */
            __m256i neg = _mm256_load_si256((const __m256i *)(P->wneg + PANEL * b));
            UNROLL for (int t = 0; t < T; t++)
                acc[t] = float_step(acc[t], _mm256_add_epi32(is[t], neg), sc, _mm256_broadcast_ss(xd[t] + b));
            continue;
        }
        UNROLL for (int t = 0; t < T; t++)
            acc[t] = float_step(acc[t], is[t], sc, _mm256_broadcast_ss(xd[t] + b));
    }
    UNROLL for (int t = 0; t < T; t++)
        store_rows(acc[t], P->wm, has_min, A->dsum + (t0 + t) * nb, nb, Y + t * n_out, R);
}

#define PANEL_TILE(T)                                                                                          \
    TARGET static void panel_tile_##T(const panel *P, int kind, int offset, int has_min, const tl_act *A,      \
                                      int64_t t0, float *Y, int64_t n_out, int R) {                            \
        switch (kind) {                                                                                        \
        case TILE_Q8: panel_tile(P, TILE_Q8, 0, has_min, A, t0, T, Y, n_out, R, 0); break;                     \
        case TILE_U16:                                                                                         \
            if (offset) panel_tile(P, TILE_U16, 1, has_min, A, t0, T, Y, n_out, R, offset);                    \
            else panel_tile(P, TILE_U16, 0, has_min, A, t0, T, Y, n_out, R, 0);                                \
            break;                                                                                             \
        case TILE_U32:                                                                                         \
            if (offset) panel_tile(P, TILE_U32, 1, has_min, A, t0, T, Y, n_out, R, offset);                    \
            else panel_tile(P, TILE_U32, 0, has_min, A, t0, T, Y, n_out, R, 0);                                \
            break;                                                                                             \
        default: panel_tile(P, TILE_HALF, 0, has_min, A, t0, T, Y, n_out, R, 0); break;                        \
        }                                                                                                      \
    }
PANEL_TILE(1) PANEL_TILE(2) PANEL_TILE(3) PANEL_TILE(4)
typedef void (*panel_tile_fn)(const panel *, int, int, int, const tl_act *, int64_t, float *, int64_t, int);
static const panel_tile_fn panel_tiles[PF_TOK] = {panel_tile_1, panel_tile_2, panel_tile_3, panel_tile_4};

/* AVX-512 VNNI prefill tile: the panel's 8 rows (unsigned codes: Q8_0 packed
 * as w + 128) times tokens t0 .. t0+T-1, T up to 8 (16 of the 32 registers
 * accumulate). vpdpbusd adds each group's four u8 x s8 products to a 32-bit
 * sum without saturating, so a block takes 8 of them per token, started
 * from -offset x the block's activation sum: the exact integer sum of w x x
 * that panel_tile finds, hence the same float steps and the same bits.
 * halves (Q6_K, a scale per 16 elements): each half-block its own 4 groups,
 * started from -offset x that half's activation sum (tl_act.hsum), and its
 * own float step, as the portable kernel takes them. */
enum { VNNI_TOK = 8 };
TARGET_VNNI INLINE void vnni_tile(const panel *P, int has_min, const tl_act *A, int64_t t0, const int T, float *Y,
                                  int64_t n_out, int R, int offset, const int halves) {
    const int64_t nb = A->nb, n_in = A->n_in;
    __m256 acc[VNNI_TOK];
    const int8_t *xq[VNNI_TOK];
    const float *xd[VNNI_TOK];
    const int32_t *cs[VNNI_TOK];
    UNROLL8 for (int t = 0; t < T; t++) {
        acc[t] = _mm256_setzero_ps();
        xq[t] = A->q + (t0 + t) * n_in;
        xd[t] = A->d + (t0 + t) * nb;
        cs[t] = A->csum + (t0 + t) * nb;
    }
    for (int64_t b = 0; b < nb; b++) {
        const __m256i *wv = (const __m256i *)(P->w + 256 * b);
        __m256i is[VNNI_TOK];
        if (halves) {
            _Pragma("GCC unroll 1") for (int h = 0; h < 2; h++) {
                UNROLL8 for (int t = 0; t < T; t++) is[t] = _mm256_set1_epi32(-offset * A->hsum[2 * ((t0 + t) * nb + b) + h]);
                UNROLL for (int g = 4 * h; g < 4 * h + 4; g++) {
                    __m256i w = _mm256_load_si256(wv + g);
                    UNROLL8 for (int t = 0; t < T; t++) {
                        int32_t x4;
                        memcpy(&x4, xq[t] + 32 * b + 4 * g, 4);
                        is[t] = dpbusd256(is[t], w, _mm256_set1_epi32(x4));
                    }
                }
                __m256 sc = _mm256_load_ps(P->ws + PANEL * (2 * b + h));
                UNROLL8 for (int t = 0; t < T; t++) acc[t] = float_step(acc[t], is[t], sc, _mm256_broadcast_ss(xd[t] + b));
            }
            continue;
        }
        UNROLL8 for (int t = 0; t < T; t++) is[t] = _mm256_set1_epi32(-offset * cs[t][b]);
        UNROLL8 for (int g = 0; g < 8; g++) {
            __m256i w = _mm256_load_si256(wv + g);
            UNROLL8 for (int t = 0; t < T; t++) {
                int32_t x4;
                memcpy(&x4, xq[t] + 32 * b + 4 * g, 4);
                is[t] = dpbusd256(is[t], w, _mm256_set1_epi32(x4));
            }
        }
        __m256 sc = _mm256_load_ps(P->ws + PANEL * (2 * b));
        UNROLL8 for (int t = 0; t < T; t++) acc[t] = float_step(acc[t], is[t], sc, _mm256_broadcast_ss(xd[t] + b));
    }
    UNROLL8 for (int t = 0; t < T; t++)
        store_rows(acc[t], P->wm, has_min, A->dsum + (t0 + t) * nb, nb, Y + t * n_out, R);
}

#define VNNI_TILE(T)                                                                                           \
    TARGET_VNNI static void vnni_tile_##T(const panel *P, int has_min, const tl_act *A, int64_t t0, float *Y,  \
                                          int64_t n_out, int R, int offset, int halves) {                      \
        if (halves) vnni_tile(P, has_min, A, t0, T, Y, n_out, R, offset, 1);                                   \
        else vnni_tile(P, has_min, A, t0, T, Y, n_out, R, offset, 0);                                          \
    }
VNNI_TILE(1) VNNI_TILE(2) VNNI_TILE(3) VNNI_TILE(4) VNNI_TILE(5) VNNI_TILE(6) VNNI_TILE(7) VNNI_TILE(8)
typedef void (*vnni_tile_fn)(const panel *, int, const tl_act *, int64_t, float *, int64_t, int, int, int);
static const vnni_tile_fn vnni_tiles[VNNI_TOK] = {vnni_tile_1, vnni_tile_2, vnni_tile_3, vnni_tile_4,
                                                  vnni_tile_5, vnni_tile_6, vnni_tile_7, vnni_tile_8};

/* Q4_K/Q5_K: the scales and mins of the 8 rows raw[0..8) straight into the
 * panel layout (lane r = row r), 8 rows per vector step: the same floats
 * row_scales writes for each row. Prefill pack and decode alike (decode has
 * the rows prefetched ahead: see tl_rows_quant_avx2). */
TARGET static void k4_panel_scales(tl_ggml_type t, const uint8_t *const *raw, int64_t nb, float *pws, float *pwm) {
    size_t bb = t == TL_TYPE_Q5_K ? sizeof(blk_q5_k) : sizeof(blk_q4_k);
    const __m256i m6 = _mm256_set1_epi32(0x3F3F3F3F), m4 = _mm256_set1_epi32(0x0F0F0F0F);
    const __m256i top = _mm256_set1_epi32(0x30303030), byte = _mm256_set1_epi32(0xFF);
    const __m256 neg = _mm256_set1_ps(-0.0f);
    for (int64_t sb = 0; sb < nb / 8; sb++, pws += 16 * PANEL, pwm += 8 * PANEL) {
        uint16_t dh[PANEL], mh[PANEL];
        uint32_t a[PANEL], b[PANEL], c[PANEL];
        for (int r = 0; r < PANEL; r++) {
            const uint8_t *q = raw[r] + (size_t)sb * bb;
            memcpy(&dh[r], q, 2);
            memcpy(&mh[r], q + 2, 2);
            memcpy(&a[r], q + 4, 4);
            memcpy(&b[r], q + 8, 4);
            memcpy(&c[r], q + 12, 4);
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
        __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)mh));
        __m256i av = _mm256_loadu_si256((const __m256i *)a), bv = _mm256_loadu_si256((const __m256i *)b);
        __m256i cv = _mm256_loadu_si256((const __m256i *)c);
        /* bytes j of sc[0] / mn[0]: sub-blocks j < 4; of sc[1] / mn[1]: sub-blocks 4 + j (tl_k4_scale_min) */
        __m256i sc[2] = {_mm256_and_si256(av, m6),
                         _mm256_or_si256(_mm256_and_si256(cv, m4), _mm256_and_si256(_mm256_srli_epi32(av, 2), top))};
        __m256i mn[2] = {_mm256_and_si256(bv, m6),
                         _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(cv, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi32(bv, 2), top))};
        for (int j = 0; j < 8; j++) {
            __m128i sh = _mm_cvtsi32_si128(8 * (j % 4));
            __m256 s8 = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(sc[j / 4], sh), byte)));
            __m256 m8 = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srl_epi32(mn[j / 4], sh), byte)));
            _mm256_storeu_ps(pws + PANEL * (2 * j), s8);
            _mm256_storeu_ps(pws + PANEL * (2 * j + 1), s8);
            _mm256_storeu_ps(pwm + PANEL * j, _mm256_xor_ps(m8, neg));
        }
    }
}

/* Q6_K: the 16 scales of each super-block of the 8 rows raw[0..8) into the
 * panel layout: the rows' scale bytes transposed (8 x 16 -> 16 x 8), then
 * 8 rows per vector step; the same floats row_scales writes for each row. */
TARGET static void q6k_panel_scales(const uint8_t *const *raw, int64_t nb, float *pws) {
    for (int64_t sb = 0; sb < nb / 8; sb++, pws += 16 * PANEL) {
        __m128i v[PANEL];
        uint16_t dh[PANEL];
        for (int r = 0; r < PANEL; r++) {
            const blk_q6_k *blk = (const blk_q6_k *)(raw[r] + (size_t)sb * sizeof(blk_q6_k));
            v[r] = _mm_loadu_si128((const __m128i *)blk->scales);
            memcpy(&dh[r], &blk->d, 2);
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
        /* bytes (row r, scale k) -> vector k / 2, byte 8 (k % 2) + r */
        __m128i t[8], u[8], w[8];
        for (int i = 0; i < 4; i++) {
            t[2 * i] = _mm_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
            t[2 * i + 1] = _mm_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
        }
        for (int i = 0; i < 2; i++) /* rows 4i .. 4i+3 */
            for (int h = 0; h < 2; h++) { /* scales 8h .. 8h+7 */
                u[4 * i + 2 * h] = _mm_unpacklo_epi16(t[4 * i + h], t[4 * i + 2 + h]);
                u[4 * i + 2 * h + 1] = _mm_unpackhi_epi16(t[4 * i + h], t[4 * i + 2 + h]);
            }
        for (int q = 0; q < 4; q++) { /* scales 4q .. 4q+3 of rows 0-3 (u[q]) and 4-7 (u[4 + q]) */
            w[2 * q] = _mm_unpacklo_epi32(u[q], u[4 + q]);
            w[2 * q + 1] = _mm_unpackhi_epi32(u[q], u[4 + q]);
        }
        for (int k = 0; k < 16; k++) {
            __m128i b8 = k % 2 ? _mm_srli_si128(w[k / 2], 8) : w[k / 2];
            _mm256_storeu_ps(pws + PANEL * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b8)), d));
        }
    }
}

static inline short half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return (short)h;
}

/* The 32-element types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1): each block's scale
 * (and min) of the 8 rows raw[0..8), gathered into one vector of halves and
 * converted at once, into the panel layout: the same floats row_scales gives. */
TARGET static void q32_panel_scales(tl_ggml_type t, const uint8_t *const *raw, int64_t nb, float *pws, float *pwm) {
    size_t bb = t == TL_TYPE_Q8_0 ? sizeof(blk_q8_0) : t == TL_TYPE_Q4_0 ? sizeof(blk_q4_0)
              : t == TL_TYPE_Q5_0 ? sizeof(blk_q5_0) : t == TL_TYPE_Q4_1 ? sizeof(blk_q4_1) : sizeof(blk_q5_1);
    int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
    /* the halves go straight into a register (vpinsrw): 8 two-byte stores read back
     * as one vector would wait on store forwarding */
#define HALF_AT(r, off) half_at(raw[r] + (size_t)b * bb + (off))
#define GATHER8(off) _mm_setr_epi16(HALF_AT(0, off), HALF_AT(1, off), HALF_AT(2, off), HALF_AT(3, off), \
                                    HALF_AT(4, off), HALF_AT(5, off), HALF_AT(6, off), HALF_AT(7, off))
    for (int64_t b = 0; b < nb; b++) {
        __m256 dv = _mm256_cvtph_ps(GATHER8(0));
        _mm256_storeu_ps(pws + PANEL * (2 * b), dv);
        _mm256_storeu_ps(pws + PANEL * (2 * b + 1), dv);
        if (has_m) _mm256_storeu_ps(pwm + PANEL * b, _mm256_cvtph_ps(GATHER8(2)));
    }
#undef GATHER8
#undef HALF_AT
}

/* The scales (and mins) of the 8 rows raw[0..8) in the panel layout (lanes
 * of rows past a short panel's end repeat its first row and are thrown away
 * by store_rows). Every integer type but MXFP4, which goes through its row
 * unpack (panel_pack). */
TARGET static void panel_scales_raw(tl_ggml_type t, const uint8_t *const *raw, int64_t nb, float *pws, float *pwm) {
    if (t == TL_TYPE_Q4_K || t == TL_TYPE_Q5_K) k4_panel_scales(t, raw, nb, pws, pwm);
    else if (t == TL_TYPE_Q6_K) q6k_panel_scales(raw, nb, pws);
    else q32_panel_scales(t, raw, nb, pws, pwm);
}

/* Packs rows o .. o+R-1 (R <= 8; the rest repeat row o) into P for a tile
 * kind: each block's signed weights (TILE_HALF), sign masks and wneg
 * (TILE_Q8) or unsigned codes (TILE_U16, TILE_U32), and |w| but for the
 * unsigned kinds, made in registers from the stored rows and transposed into
 * groups. MXFP4 goes through its row unpack (code: 8 x code_stride bytes,
 * ws: 8 rows of ws_stride floats). */
TARGET static void panel_pack(const tl_matrix *W, int64_t o, int R, int offset, int has_min, int kind, uint8_t *code,
                              size_t code_stride, float *ws, size_t ws_stride, float *wm, size_t wm_stride,
                              panel *P) {
    const int codes = kind == TILE_U16 || kind == TILE_U32;
    const __m256i zero = _mm256_setzero_si256(), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    const int64_t nb = W->n_in / QK32;
    const __m256i offv = _mm256_set1_epi8((char)offset);
    const uint8_t *raw[PANEL];
    for (int r = 0; r < PANEL; r++) raw[r] = (const uint8_t *)W->data + (size_t)(o + (r < R ? r : 0)) * W->row_bytes;
    int mx = W->type == TL_TYPE_MXFP4;
    if (mx)
        for (int r = 0; r < R; r++) tl_unpack_row_avx2(W->type, raw[r], W->n_in, code + r * code_stride, ws + r * ws_stride, wm);
    for (int64_t b = 0; b < nb; b++) {
        __m256i v[PANEL];
        UNROLL8 for (int r = 0; r < PANEL; r++)
            v[r] = mx ? _mm256_sub_epi8(_mm256_loadu_si256((const __m256i *)(code + (r < R ? r : 0) * code_stride + 32 * b)), offv)
                      : signed_block(W->type, raw[r], b, offv);
        transpose8_epi32(v);
        __m256i neg = zero; /* lane r: row r's sum of |w| over w < 0 */
        UNROLL8 for (int g = 0; g < PANEL; g++) {
            if (codes) { /* the unsigned kinds read only the codes, from w */
                _mm256_store_si256((__m256i *)(P->w + 256 * b + 32 * g), _mm256_add_epi8(v[g], offv));
                continue;
            }
            __m256i a = _mm256_abs_epi8(v[g]);
            if (kind == TILE_Q8) {
                __m256i m = _mm256_cmpgt_epi8(zero, v[g]);
                _mm256_store_si256((__m256i *)(P->w + 256 * b + 32 * g), m);
                /* |w| <= 128 as unsigned bytes, 4 per row: their dword sums */
                neg = _mm256_add_epi32(neg, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(a, m), ones8), ones16));
            } else {
                _mm256_store_si256((__m256i *)(P->w + 256 * b + 32 * g), v[g]);
            }
            _mm256_store_si256((__m256i *)(P->wabs + 256 * b + 32 * g), a);
        }
        if (kind == TILE_Q8) _mm256_store_si256((__m256i *)(P->wneg + PANEL * b), neg);
    }
    if (mx) panel_scales(ws, ws_stride, wm, wm_stride, R, nb, has_min, P->ws, P->wm);
    else panel_scales_raw(W->type, raw, nb, P->ws, P->wm);
}

/* The 32-element types without mins: decode reads each block's scale in
 * the block loop (q32_block_scales: the floats q32_panel_scales would have
 * stored), so the panel is not passed over once more for its scales. That
 * separate pass was the first touch of every line of the panel, and its
 * chain of 8 inserted halves waited on each of them. */
#define FUSED_SCALES(t) ((t) == TL_TYPE_Q8_0 || (t) == TL_TYPE_Q4_0 || (t) == TL_TYPE_Q5_0)

TARGET INLINE __m256 q32_block_scales(tl_ggml_type t, const uint8_t *const *raw, int64_t b) {
    size_t bb = t == TL_TYPE_Q8_0 ? sizeof(blk_q8_0) : t == TL_TYPE_Q4_0 ? sizeof(blk_q4_0) : sizeof(blk_q5_0);
    return _mm256_cvtph_ps(_mm_setr_epi16(half_at(raw[0] + (size_t)b * bb), half_at(raw[1] + (size_t)b * bb),
                                          half_at(raw[2] + (size_t)b * bb), half_at(raw[3] + (size_t)b * bb),
                                          half_at(raw[4] + (size_t)b * bb), half_at(raw[5] + (size_t)b * bb),
                                          half_at(raw[6] + (size_t)b * bb), half_at(raw[7] + (size_t)b * bb)));
}

/* One block of decode: the 8 rows' dword sums l[] (lane k of row r: 4
 * products of block b) summed per row and taken through the float step into
 * acc (Q6_K: one step per 16-element half, each with its own scale). */
TARGET INLINE __m256 direct_block_step(tl_ggml_type type, const uint8_t *const *raw, const __m256i *l,
                                       const float *pws, int64_t b, __m256 d, __m256 acc) {
    /* lane sums of rows 2i, 2i+1 pairwise, then of 4 rows: [rows 0-3, half 0 | rows 0-3, half 1] */
    __m256i a[4];
    UNROLL for (int i = 0; i < 4; i++)
        a[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(l[2 * i], l[2 * i + 1]), _mm256_unpackhi_epi32(l[2 * i], l[2 * i + 1]));
    __m256i q0 = _mm256_add_epi32(_mm256_unpacklo_epi64(a[0], a[1]), _mm256_unpackhi_epi64(a[0], a[1]));
    __m256i q1 = _mm256_add_epi32(_mm256_unpacklo_epi64(a[2], a[3]), _mm256_unpackhi_epi64(a[2], a[3]));
    __m256i h0 = _mm256_permute2x128_si256(q0, q1, 0x20), h1 = _mm256_permute2x128_si256(q0, q1, 0x31);
    if (FUSED_SCALES(type)) /* the 8 rows' block scales, read beside their codes */
        return float_step(acc, _mm256_add_epi32(h0, h1), q32_block_scales(type, raw, b), d);
    if (type != TL_TYPE_Q6_K) /* one scale per block: one float step */
        return float_step(acc, _mm256_add_epi32(h0, h1), _mm256_loadu_ps(pws + PANEL * (2 * b)), d);
    acc = float_step(acc, h0, _mm256_loadu_ps(pws + PANEL * (2 * b)), d);
    return float_step(acc, h1, _mm256_loadu_ps(pws + PANEL * (2 * b + 1)), d);
}

/* Decode: rows raw[0..8) (repeats past R) times token t, codes made in
 * registers; pws / pwm in the panel layout. Block b also prefetches slice b
 * of pf (rows a later call reads). */
TARGET INLINE void direct_rows(tl_ggml_type type, const uint8_t *const *raw, int R, int offset, const float *pws,
                               const float *pwm, int has_min, const tl_act *A, int64_t t, float *y,
                               prefetch_plan pf) {
    const int64_t nb = A->nb;
    const __m256i ones = _mm256_set1_epi16(1), offv = _mm256_set1_epi8((char)offset);
    const int8_t *xq = A->q + t * A->n_in;
    const float *xd = A->d + t * nb;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_slice(pf, b);
        __m256i x = _mm256_loadu_si256((const __m256i *)(xq + 32 * b)), l[PANEL];
        if (type == TL_TYPE_Q8_0) {
            UNROLL8 for (int r = 0; r < PANEL; r++) {
                __m256i w = signed_block(type, raw[r], b, offv);
                l[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)), ones);
            }
        } else {
            /* unsigned codes (<= 63) times x, less offset x the lane's 4 activations: the same integers */
            __m256i xo = _mm256_madd_epi16(_mm256_maddubs_epi16(offv, x), ones);
            UNROLL8 for (int r = 0; r < PANEL; r++)
                l[r] = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(codes_block(type, raw[r], b), x), ones), xo);
        }
        acc = direct_block_step(type, raw, l, pws, b, _mm256_broadcast_ss(xd + b), acc);
    }
    store_rows(acc, pwm, has_min, A->dsum + t * nb, nb, y, R);
}

/* The 32 codes of block b of a Q5_0 / Q5_1 row on AVX-512 CPUs: the fifth
 * bits added under a mask made from qh in one step, where codes_block
 * spreads them over bytes with a shuffle, an and and a compare. The same bytes. */
TARGET_VNNI INLINE __m256i codes_block_q5_vnni(tl_ggml_type t, const uint8_t *s, int64_t b) {
#ifdef TL_EMULATE_AVX512
    return codes_block(t, s, b);
#else
    int has_m = t == TL_TYPE_Q5_1;
    const uint8_t *blk = s + (size_t)b * (has_m ? sizeof(blk_q5_1) : sizeof(blk_q5_0));
    __m128i a = _mm_loadu_si128((const __m128i *)(blk + 2 + 2 * has_m + 4));
    __m256i c = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(a, 4), a), _mm256_set1_epi8(0x0F));
    uint32_t qh;
    memcpy(&qh, blk + 2 + 2 * has_m, 4);
    return _mm256_mask_add_epi8(c, _cvtu32_mask32(qh), c, _mm256_set1_epi8(16));
#endif
}

/* direct_rows on AVX-512 VNNI CPUs: every type's unsigned codes (Q8_0:
 * w + 128, codes_block's) times x in one vpdpbusd per row and block, each
 * lane started from -offset x its 4 activations. vpdpbusd adds the 4
 * products to the lane without saturating, so the lanes hold exactly the
 * integers direct_rows finds, and the float steps are the same: the same bits. */
TARGET_VNNI INLINE void direct_rows_vnni(tl_ggml_type type, const uint8_t *const *raw, int R, int offset,
                                         const float *pws, const float *pwm, int has_min, const tl_act *A,
                                         int64_t t, float *y, prefetch_plan pf) {
    const int64_t nb = A->nb;
    const __m256i ones = _mm256_set1_epi16(1), offv = _mm256_set1_epi8((char)offset);
    const int8_t *xq = A->q + t * A->n_in;
    const float *xd = A->d + t * nb;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        prefetch_slice(pf, b);
        __m256i x = _mm256_loadu_si256((const __m256i *)(xq + 32 * b)), l[PANEL];
        __m256i nxo = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(_mm256_maddubs_epi16(offv, x), ones));
        UNROLL8 for (int r = 0; r < PANEL; r++) {
            __m256i c = type == TL_TYPE_Q5_0 || type == TL_TYPE_Q5_1 ? codes_block_q5_vnni(type, raw[r], b)
                                                                    : codes_block(type, raw[r], b);
            l[r] = dpbusd256(nxo, c, x);
        }
        acc = direct_block_step(type, raw, l, pws, b, _mm256_broadcast_ss(xd + b), acc);
    }
    store_rows(acc, pwm, has_min, A->dsum + t * nb, nb, y, R);
}

/* One instantiation per type, so codes_block's switch folds away: direct_TY
 * on AVX2, direct_vnni_TY on AVX-512 VNNI CPUs (offset: Q8_0's 128). */
#define DIRECT(TY)                                                                                          \
    TARGET static void direct_##TY(const uint8_t *const *raw, int R, int offset, const float *pws,           \
                                   const float *pwm, int has_min, const tl_act *A, int64_t t, float *y,     \
                                   prefetch_plan pf) {                                                      \
        direct_rows(TL_TYPE_##TY, raw, R, offset, pws, pwm, has_min, A, t, y, pf);                          \
    }                                                                                                       \
    TARGET_VNNI static void direct_vnni_##TY(const uint8_t *const *raw, int R, int offset, const float *pws, \
                                             const float *pwm, int has_min, const tl_act *A, int64_t t,     \
                                             float *y, prefetch_plan pf) {                                  \
        direct_rows_vnni(TL_TYPE_##TY, raw, R, offset, pws, pwm, has_min, A, t, y, pf);                     \
    }
DIRECT(Q8_0) DIRECT(Q4_0) DIRECT(Q5_0) DIRECT(Q4_1) DIRECT(Q5_1) DIRECT(Q4_K) DIRECT(Q5_K) DIRECT(Q6_K)
typedef void (*direct_fn)(const uint8_t *const *, int, int, const float *, const float *, int, const tl_act *,
                          int64_t, float *, prefetch_plan);

#define DIRECT_CASE(TY) case TL_TYPE_##TY: return vnni ? direct_vnni_##TY : direct_##TY;
static direct_fn direct_kernel(tl_ggml_type t, int vnni) {
    switch (t) {
    DIRECT_CASE(Q8_0) DIRECT_CASE(Q4_0) DIRECT_CASE(Q5_0) DIRECT_CASE(Q4_1) DIRECT_CASE(Q5_1)
    DIRECT_CASE(Q4_K) DIRECT_CASE(Q5_K) DIRECT_CASE(Q6_K)
    default: return NULL; /* MXFP4: always through the panel */
    }
}
#undef DIRECT_CASE

/* vnni: prefill tiles through vnni_tile (CPUs with AVX-512 VNNI), but for Q6_K. */
TARGET static void rows_quant(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y, int vnni) {
    const int64_t n_in = W->n_in, n_out = W->n_out, nb = A->nb, n_tok = A->n_tok;
    size_t code_stride = (size_t)(n_in + 63) / 64 * 64;
    size_t ws_stride = (size_t)(2 * nb + 15) / 16 * 16, wm_stride = (size_t)(nb + 15) / 16 * 16;
    /* per thread: 8 unpacked rows, their scales, and the panel */
    size_t bytes = PANEL * code_stride + 4 * PANEL * (ws_stride + wm_stride) + 2 * PANEL * code_stride +
                   4 * PANEL * (2 * (size_t)nb + 2 * (size_t)nb) + 128;
    uint8_t *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf) return;
    uint8_t *code = buf;
    float *ws = (float *)(code + PANEL * code_stride), *wm = ws + PANEL * ws_stride;
    panel P;
    P.w = (int8_t *)(wm + PANEL * wm_stride);
    P.wabs = (uint8_t *)P.w + PANEL * code_stride;
    P.ws = (float *)(P.wabs + PANEL * code_stride);
    P.wm = P.ws + PANEL * 2 * nb;
    P.wneg = (int32_t *)(P.wm + PANEL * nb); /* 32-byte aligned: P.ws is 64-byte aligned, P.wm 32 nb bytes long */
    memset(P.ws, 0, sizeof(float) * PANEL * 3 * (size_t)nb); /* lanes past R of a short panel stay finite */
    tl_unpack_info info = tl_unpack_info_of(W->type);
    int kind = tile_kind(W->type, info);
    direct_fn direct = direct_kernel(W->type, vnni);
    /* VNNI packs every kind as unsigned codes (Q8_0: w + 128; Q6_K its 0..63) */
    int pack_kind = vnni ? TILE_U16 : kind, pack_offset = vnni && W->type == TL_TYPE_Q8_0 ? 128 : info.offset;
    for (int64_t tc = 0; tc < n_tok; tc += TOK_CHUNK) {
        int64_t tc_end = tc + TOK_CHUNK < n_tok ? tc + TOK_CHUNK : n_tok;
        for (int64_t o = o0; o < o1; o += PANEL) {
            int R = o1 - o < PANEL ? (int)(o1 - o) : PANEL;
            if (direct && tc_end - tc <= DIRECT_MAX_TOK) {
                const uint8_t *raw[PANEL];
                for (int r = 0; r < PANEL; r++) raw[r] = (const uint8_t *)W->data + (size_t)(o + (r < R ? r : 0)) * W->row_bytes;
                /* 8 rows' scales at a time, block by block. While these rows are multiplied
                 * (no memory traffic of their own), the rows a few panels on are
                 * prefetched, spread over the block loop, so that the next panel's scales
                 * are in cache when it starts. Without the prefetch, the 8-row gathers ran
                 * 10-25% slower than reading row by row (the hardware prefetcher follows
                 * one row front to back); with it, they run 20-30% faster (typellm bench,
                 * two threads, Q4_K_M / Q8_0 decode) */
                if (!FUSED_SCALES(W->type)) panel_scales_raw(W->type, raw, nb, P.ws, P.wm);
                prefetch_plan pf = prefetch_ahead(W, o, PANEL, o1, nb), none = {NULL, 0, 0};
                for (int64_t t = tc; t < tc_end; t++)
                    direct(raw, R, pack_offset, P.ws, P.wm, info.has_min, A, t, Y + t * n_out + o, t == tc ? pf : none);
                continue;
            }
            panel_pack(W, o, R, pack_offset, info.has_min, pack_kind, code, code_stride, ws, ws_stride, wm, wm_stride, &P);
            if (vnni) {
                for (int64_t t = tc; t < tc_end; t += VNNI_TOK) {
                    int T = tc_end - t >= VNNI_TOK ? VNNI_TOK : (int)(tc_end - t);
                    vnni_tiles[T - 1](&P, info.has_min, A, t, Y + t * n_out + o, n_out, R, pack_offset, kind == TILE_HALF);
                }
                continue;
            }
            for (int64_t t = tc; t < tc_end; t += PF_TOK) {
                int T = tc_end - t >= PF_TOK ? PF_TOK : (int)(tc_end - t);
                panel_tiles[T - 1](&P, kind, info.offset, info.has_min, A, t, Y + t * n_out + o, n_out, R);
            }
        }
    }
    free(buf);
}

TARGET void tl_rows_quant_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    rows_quant(W, o0, o1, A, Y, 0);
}

TARGET void tl_rows_quant_vnni(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    rows_quant(W, o0, o1, A, Y, 1);
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
            /* the sums of the two 16-code halves (lanes: the low one's, then the high one's) */
            __m256i h01 = _mm256_add_epi32(c[0], c[1]), h23 = _mm256_add_epi32(c[2], c[3]);
            __m128i s4 = _mm_hadd_epi32(_mm_add_epi32(_mm256_castsi256_si128(h01), _mm256_extracti128_si256(h01, 1)),
                                        _mm_add_epi32(_mm256_castsi256_si128(h23), _mm256_extracti128_si256(h23, 1)));
            s4 = _mm_hadd_epi32(s4, s4);
            int lo16 = _mm_cvtsi128_si32(s4), hi16 = _mm_extract_epi32(s4, 1);
            d = tl_half_to_f32(tl_f32_to_half(d)); /* the block keeps its scale as binary16 */
            a->d[t * a->nb + b] = d;
            a->dsum[t * a->nb + b] = d * (float)(lo16 + hi16);
            a->csum[t * a->nb + b] = lo16 + hi16;
            a->hsum[2 * (t * a->nb + b)] = lo16;
            a->hsum[2 * (t * a->nb + b) + 1] = hi16;
        }
    }
}
