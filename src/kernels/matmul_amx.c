/* matmul_amx.c: AMX tile kernels (Intel Sapphire Rapids and later), used
 * when TL_ISA=amx and the CPU and kernel allow it (tl_amx_usable).
 *
 * NOT MEASURED: written on machines without AMX, so the path is opt-in
 * rather than the default. Its logic is tested everywhere: the test build
 * TL_EMULATE_AVX512 (tests/kernels/CMakeLists.txt) runs this file on
 * emulated tiles (emulate_amx.h) and test_matmul holds the integer kernel to
 * the portable kernel's bits; where the CPU has AMX it runs the real thing.
 *
 * Integer weights (every quantized type): tiles of 16 output rows x up to
 * 16 tokens. Each weight row is unpacked (tl_unpack_row_avx512) and turned
 * into signed int8 (code - offset, in [-128, 127] for every type), packed
 * in the layout TDPBSSD wants for its B operand; the activations' int8
 * codes are the A operand as they lie in tl_act (one token per tile row).
 * One TDPBSSD per scale group (a 32-block, or 16 elements for Q6_K) gives
 * the exact integer dot product of every (token, row) pair of the tile;
 * then, per pair, the portable kernel's float steps (matmul_scalar.c), one
 * rounding each in its order: acc + ((float)dot * ws) * d per group, the
 * mins' share (Q4_1/Q5_1/K-quants) summed apart and added at the end. So
 * the bits are those of every other integer path, and calls of fewer than
 * AMX_MIN_TOK tokens (decode) take the AVX-512 panels (tl_rows_quant_vnni)
 * instead of packing 16 rows for one token: prefill, decode and branch
 * evaluation agree exactly.
 *
 * F16 / BF16 weights: TDPBF16PS on activations (and F16 weights) split into
 * two bfloat16 terms each (see "float weights" below), accumulating every
 * 32-element chunk into the float32 tile in K order; F32 weights stay on the
 * AVX-512 kernel. These results are not the other paths' bits, so this
 * kernel serves every call, decode included (batch-independent all the same:
 * a (token, row) pair's sum depends on nothing else in its tile). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#ifdef TL_EMULATE_AVX512
#include "kernels/emulate_avx512.h"
#include "kernels/emulate_amx.h"

int tl_amx_usable(void) { return 1; } /* the emulated CPU has AMX */

#define TARGET
#else
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int tl_amx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    int tile = (d >> 24) & 1, int8 = (d >> 25) & 1, bf16 = (d >> 22) & 1;
    if (!tile || !int8 || !bf16) return 0;
    /* Linux keeps the 8 KiB tile state off until the process asks for it */
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

#define TARGET __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#endif
#define INLINE __attribute__((always_inline)) static inline
#define UNROLL16 _Pragma("GCC unroll 16") /* loops over a tile's tokens: accumulators in registers */

/* output rows / tokens per tile; the fewest tokens worth packing tiles for */
enum { TN = 16, TM = 16, AMX_MIN_TOK = 8 };

/* The 64-byte tile configuration (palette 1). */
typedef struct __attribute__((packed, aligned(64))) {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Two sets of tiles, so one dot product runs while the last one's results
 * are taken: tmm0 / tmm3: A (m rows x ka bytes), tmm1 / tmm4: B (kb rows x
 * 64 bytes), tmm2 / tmm5: C (m x 64 bytes). */
TARGET static void configure(int m, int ka, int kb) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int s = 0; s < 6; s += 3) {
        cfg.rows[s] = (uint8_t)m, cfg.colsb[s] = (uint16_t)ka;
        cfg.rows[s + 1] = (uint8_t)kb, cfg.colsb[s + 1] = 64;
        cfg.rows[s + 2] = (uint8_t)m, cfg.colsb[s + 2] = 64;
    }
    _tile_loadconfig(&cfg);
}

/* ---- integer weights ----------------------------------------------------- */

/* The exact dot products of scale group g (kg elements) for the tile's
 * tokens and 16 rows, into C tile set s (tile numbers are immediates). */
TARGET INLINE void group_dot(int s, const int8_t *a, int64_t a_stride, const int8_t *b) {
    if (s == 0) {
        _tile_zero(2);
        _tile_loadd(0, a, a_stride);
        _tile_loadd(1, b, 64);
        _tile_dpbssd(2, 0, 1);
    } else {
        _tile_zero(5);
        _tile_loadd(3, a, a_stride);
        _tile_loadd(4, b, 64);
        _tile_dpbssd(5, 3, 4);
    }
}

/* One tile of T tokens (t0 ..) x 16 rows over every group, the portable
 * kernel's float steps per (token, row); T a constant where it is TM, so the
 * 16 accumulators stay in registers. */
TARGET INLINE void quant_tile(const tl_act *A, int64_t t0, const int T, const int8_t *packed, const float *gs,
                              const float *gm, int kg, int has_min, int32_t *cbuf, float *Y, int64_t n_out, int nr) {
    const int64_t n_in = A->n_in, nb = A->nb, ng = n_in / kg;
    if (T > TM) __builtin_unreachable(); /* cbuf holds TM rows */
    const int8_t *a = A->q + t0 * n_in;
    __m512 acc[TM];
    UNROLL16 for (int t = 0; t < TM; t++) acc[t] = _mm512_setzero_ps();
    group_dot(0, a, n_in, packed);
    for (int64_t g = 0; g < ng; g++) {
        int s = (int)(g & 1);
        if (g + 1 < ng) /* the next group's product, in the other set, before this one's float steps */
            group_dot(s ^ 1, a + (g + 1) * kg, n_in, packed + (size_t)(g + 1) * kg * TN);
        if (s == 0) _tile_stored(2, cbuf, 64);
        else _tile_stored(5, cbuf, 64);
        int64_t b = g * kg / QK32;
        __m512 sv = _mm512_loadu_ps(gs + g * TN);
        const float *d = A->d + t0 * nb + b;
        UNROLL16 for (int t = 0; t < T; t++) {
            __m512 f = _mm512_cvtepi32_ps(_mm512_load_si512(cbuf + t * 16));
            /* three roundings, as the portable kernel (no fma) */
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(f, sv), _mm512_set1_ps(d[t * nb])));
        }
    }
    UNROLL16 for (int t = 0; t < T; t++) {
        float sums[TN];
        _mm512_storeu_ps(sums, acc[t]);
        tl_rows16_finish(sums, gm, has_min, A->dsum + (t0 + t) * nb, nb, Y + (t0 + t) * n_out, nr);
    }
}

TARGET void tl_rows_quant_amx(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    const int64_t n_out = W->n_out, n_tok = A->n_tok;
    if (n_tok < AMX_MIN_TOK) { /* the same bits without packing a tile per 16 rows */
        tl_rows_quant_vnni(W, o0, o1, A, Y);
        return;
    }
    /* per 16 rows: the signed int8 B tiles (tl_rows16_pack: packed row j holds the
     * 4 weights 4j .. 4j+3 of each of the 16 rows, so group g's tile is rows g kg/4 ..),
     * group scales and mins; cbuf: one C tile (16 x 16) */
    tl_rows16 P;
    if (!tl_rows16_init(&P, W)) return;
    int32_t *cbuf = aligned_alloc(64, 64 * 16);
    if (!cbuf) {
        tl_rows16_free(&P);
        return;
    }
    const int kg = P.kg;
    for (int64_t o = o0; o < o1; o += TN) {
        int nr = o1 - o < TN ? (int)(o1 - o) : TN;
        tl_rows16_pack(&P, W, o, nr, o1, 1);
        for (int64_t t0 = 0; t0 < n_tok; t0 += TM) {
            int m = n_tok - t0 < TM ? (int)(n_tok - t0) : TM;
            configure(m, kg, kg / 4);
            if (m == TM) quant_tile(A, t0, TM, (const int8_t *)P.packed, P.gs, P.gm, kg, P.has_min, cbuf, Y + o, n_out, nr);
            else quant_tile(A, t0, m, (const int8_t *)P.packed, P.gs, P.gm, kg, P.has_min, cbuf, Y + o, n_out, nr);
        }
    }
    _tile_release();
    free(cbuf);
    tl_rows16_free(&P);
}

/* ---- float weights (F16, BF16) ---------------------------------------------
 * TDPBF16PS multiplies bfloat16 pairs (8-bit significands) into float32
 * sums. Rounding the activations (and F16 weights) to bf16 would cost 16 of
 * their 24 bits, so each is split into two bf16 terms, hi = bf16(v) and
 * lo = bf16(v - hi): x keeps 16 bits, and an F16 weight (11 bits) is exactly
 * hi + lo. Per 32-element chunk, wh xh + wh xl + wl xh go into the float32
 * tile in K order (BF16 weights: wh xh + wh xl); the dropped wl xl and x's
 * rounding leave each product within 2^-15 of exact, where the AVX-512
 * kernel is within 2^-24. */

/* 16 floats to bf16 (round to nearest even; NaN stays a quiet NaN) and the
 * same values back as floats. */
TARGET INLINE __m256i bf16_16(__m512 f, __m512 *back) {
    __m512i u = _mm512_castps_si512(f);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                                     _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    r = _mm512_srli_epi32(r, 16);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    *back = _mm512_castsi512_ps(_mm512_slli_epi32(r, 16));
    return _mm512_cvtepi32_epi16(r);
}

/* n floats (x, or F16 halves when h) as hi and lo bf16 rows, zero-padded to kp. */
TARGET static void split_row(const float *x, const uint16_t *h, int64_t n, int64_t kp, uint16_t *hi, uint16_t *lo) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512 v = h ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + k))) : _mm512_loadu_ps(x + k), vh, vl;
        _mm256_storeu_si256((__m256i *)(hi + k), bf16_16(v, &vh));
        if (lo) _mm256_storeu_si256((__m256i *)(lo + k), bf16_16(_mm512_sub_ps(v, vh), &vl));
    }
    for (; k < n; k++) {
        float v = h ? tl_half_to_f32(h[k]) : x[k];
        hi[k] = tl_f32_to_bf16(v);
        if (lo) lo[k] = tl_f32_to_bf16(v - tl_bf16_to_f32(hi[k]));
    }
    for (; k < kp; k++) {
        hi[k] = 0;
        if (lo) lo[k] = 0;
    }
}

/* B tiles of 16 bf16 rows (row_stride bytes apart): tile row j holds dword j
 * (elements 2j, 2j+1) of each row. */
TARGET static void pack_pairs(const uint16_t *rows, int64_t row_stride, int nr, int64_t kp, uint16_t *packed) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i offs = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)row_stride));
    __mmask16 live = (__mmask16)((1u << nr) - 1);
    for (int64_t j = 0; j < kp / 2; j++)
        _mm512_store_si512(packed + 32 * j, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, offs, rows + 2 * j, 1));
}

TARGET void tl_amx_split_rows(const float *X, int64_t n_in, int64_t n_tok, int64_t t0, int64_t t1, uint16_t *xs) {
    const int64_t kp = tl_amx_row_elems(n_in);
    for (int64_t t = t0; t < t1; t++)
        split_row(X + t * n_in, NULL, n_in, kp, xs + (size_t)t * kp, xs + (size_t)(n_tok + t) * kp);
}

TARGET void tl_rows_float_amx(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, const uint16_t *xs,
                              int64_t n_tok, float *Y) {
    if (W->type == TL_TYPE_F32) {
        tl_rows_float_avx512(W, o0, o1, X, n_tok, Y);
        return;
    }
    const int64_t n_in = W->n_in, n_out = W->n_out;
    const int64_t kp = tl_amx_row_elems(n_in); /* padded with zeros to whole 32-element chunks */
    const int f16 = W->type == TL_TYPE_F16;     /* weights with a lo part */
    /* packed hi / lo B tiles (chunk c: 16 tile rows of 16 outputs x 2); the 16
     * rows' hi / lo bf16 (TN x kp each); the activations' hi / lo rows come split (xs) */
    size_t packed_bytes = (size_t)kp * TN * 2;
    uint8_t *buf = aligned_alloc(64, 4 * packed_bytes + 64 * 16 * 4);
    if (!buf) return;
    uint16_t *ph = (uint16_t *)buf, *pl = (uint16_t *)(buf + packed_bytes);
    uint16_t *rh = (uint16_t *)(buf + 2 * packed_bytes), *rl = (uint16_t *)(buf + 3 * packed_bytes);
    const uint16_t *ah = xs, *al = xs + (size_t)n_tok * kp;
    float *cbuf = (float *)(buf + 4 * packed_bytes);
    for (int64_t o = o0; o < o1; o += TN) {
        int nr = o1 - o < TN ? (int)(o1 - o) : TN;
        for (int n = 0; n < nr; n++) {
            const uint16_t *src = (const uint16_t *)((const uint8_t *)W->data + (size_t)(o + n) * W->row_bytes);
            if (f16) split_row(NULL, src, n_in, kp, rh + (size_t)n * kp, rl + (size_t)n * kp);
            else {
                memcpy(rh + (size_t)n * kp, src, sizeof(uint16_t) * (size_t)n_in);
                memset(rh + (size_t)n * kp + n_in, 0, sizeof(uint16_t) * (size_t)(kp - n_in));
            }
        }
        pack_pairs(rh, kp * 2, nr, kp, ph);
        if (f16) pack_pairs(rl, kp * 2, nr, kp, pl);
        for (int64_t t0 = 0; t0 < n_tok; t0 += TM) {
            int m = n_tok - t0 < TM ? (int)(n_tok - t0) : TM;
            configure(m, 64, 16);
            _tile_zero(2);
            for (int64_t c = 0; c < kp / 32; c++) {
                _tile_loadd(0, ah + (size_t)t0 * kp + c * 32, kp * 2);
                _tile_loadd(3, al + (size_t)t0 * kp + c * 32, kp * 2);
                _tile_loadd(1, ph + c * 512, 64);
                _tile_dpbf16ps(2, 0, 1);
                _tile_dpbf16ps(2, 3, 1);
                if (f16) {
                    _tile_loadd(4, pl + c * 512, 64);
                    _tile_dpbf16ps(2, 0, 4);
                }
            }
            _tile_stored(2, cbuf, 64);
            for (int t = 0; t < m; t++)
                memcpy(Y + (t0 + t) * n_out + o, cbuf + t * 16, sizeof(float) * (size_t)nr);
        }
    }
    _tile_release();
    free(buf);
}

#else
int tl_amx_usable(void) { return 0; }
void tl_rows_quant_amx(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {}
void tl_amx_split_rows(const float *X, int64_t n_in, int64_t n_tok, int64_t t0, int64_t t1, uint16_t *xs) {}
void tl_rows_float_amx(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, const uint16_t *xs, int64_t n_tok,
                       float *Y) {}
#endif
