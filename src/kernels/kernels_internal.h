/* kernels_internal.h: what the kernel files share but the engine need not see:
 * the on-disk block layouts of the quantized formats, half-precision
 * conversions, and the per-ISA entry points that dispatch.c chooses between.
 *
 * Block layouts follow ggml's (GGUF files are written by ggml): a block is a
 * run of weights stored as scale(s) + packed integer codes; see
 * ../shared/docs/engine.md for the formulas. All multi-byte fields are
 * little-endian and blocks are packed (sizes checked by static asserts). */
#ifndef TL_KERNELS_INTERNAL_H
#define TL_KERNELS_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"

#define QK32 32   /* elements per block of the 32-blocks (Q4_0 .. Q8_0) */
#define QKK 256   /* elements per super-block of the K-quants */
#define K_SCALE_BYTES 12 /* packed 6-bit scales + mins of Q4_K / Q5_K */

typedef uint16_t tl_half; /* IEEE binary16 bits */

typedef struct { tl_half d; uint8_t qs[QK32 / 2]; } blk_q4_0;            /* 18 B */
typedef struct { tl_half d, m; uint8_t qs[QK32 / 2]; } blk_q4_1;         /* 20 B */
typedef struct { tl_half d; uint8_t qh[4]; uint8_t qs[QK32 / 2]; } blk_q5_0;    /* 22 B */
typedef struct { tl_half d, m; uint8_t qh[4]; uint8_t qs[QK32 / 2]; } blk_q5_1; /* 24 B */
typedef struct { tl_half d; int8_t qs[QK32]; } blk_q8_0;                 /* 34 B */
typedef struct {
    tl_half d, dmin;                 /* super-block scales for sub-block scales / mins */
    uint8_t scales[K_SCALE_BYTES];   /* 8 x (6-bit scale, 6-bit min) */
    uint8_t qs[QKK / 2];             /* 4-bit codes: byte l of 32-chunk c holds
                                        element 64c+l (low) and 64c+32+l (high) */
} blk_q4_k;                          /* 144 B */
typedef struct {
    tl_half d, dmin;
    uint8_t scales[K_SCALE_BYTES];
    uint8_t qh[QKK / 8];             /* 5th bit: bit 2c (low) / 2c+1 (high) of byte l */
    uint8_t qs[QKK / 2];
} blk_q5_k;                          /* 176 B */
typedef struct {
    uint8_t ql[QKK / 2];             /* low 4 bits */
    uint8_t qh[QKK / 4];             /* high 2 bits */
    int8_t scales[QKK / 16];         /* one per 16 elements */
    tl_half d;
} blk_q6_k;                          /* 210 B */

typedef struct { uint8_t e; uint8_t qs[QK32 / 2]; } blk_mxfp4;        /* 17 B: 2^(e-127) x e2m1 codes */

_Static_assert(sizeof(blk_q4_0) == 18, "Q4_0 block");
_Static_assert(sizeof(blk_mxfp4) == 17, "MXFP4 block");
_Static_assert(sizeof(blk_q4_1) == 20, "Q4_1 block");
_Static_assert(sizeof(blk_q5_0) == 22, "Q5_0 block");
_Static_assert(sizeof(blk_q5_1) == 24, "Q5_1 block");
_Static_assert(sizeof(blk_q8_0) == 34, "Q8_0 block");
_Static_assert(sizeof(blk_q4_k) == 144, "Q4_K block");
_Static_assert(sizeof(blk_q5_k) == 176, "Q5_K block");
_Static_assert(sizeof(blk_q6_k) == 210, "Q6_K block");

/* ---- half precision ------------------------------------------------------ */

static inline float tl_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t tl_bits_from_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Exact binary16 -> binary32 (subnormals, inf and NaN included). */
static inline float tl_half_to_f32(tl_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return tl_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return tl_f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

/* binary32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN. */
static inline tl_half tl_f32_to_half(float f) {
    uint32_t u = tl_bits_from_f32(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffff;
    if (a >= 0x7f800000u) return (tl_half)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
    if (a >= 0x477ff000u) return (tl_half)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {
        /* result is subnormal or zero: value / 2^-24 rounded to nearest even */
        if (a < 0x33000000u) return (tl_half)sign; /* < 2^-25: rounds to 0 */
        uint32_t man = (a & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(a >> 23); /* 14 + (113 - exp) */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (tl_half)(sign | q);
    }
    uint32_t r = a + 0xfff + ((a >> 13) & 1); /* round mantissa to 10 bits, ties to even */
    return (tl_half)(sign | ((r - 0x38000000u) >> 13));
}

static inline float tl_bf16_to_f32(uint16_t b) { return tl_f32_from_bits((uint32_t)b << 16); }
static inline uint16_t tl_f32_to_bf16(float f) {
    uint32_t u = tl_bits_from_f32(f);
    if ((u & 0x7fffffff) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* ---- K-quant scale packing ---------------------------------------------- */

/* Sub-block j (0..7) of a Q4_K/Q5_K super-block: 6-bit scale *sc and min *mn.
 * Bytes 0-3 hold scales 0-3 (low 6 bits), 4-7 mins 0-3; bytes 8-11 hold the low
 * nibbles of scales/mins 4-7, whose top 2 bits sit in bits 6-7 of bytes 0-7. */
static inline void tl_k4_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *mn = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* ---- type table (private copy so kernels do not depend on the reader's) -- */

int64_t tl_kernels_block_elems(tl_ggml_type t);   /* 0 = unsupported by the kernels */
size_t tl_kernels_block_bytes(tl_ggml_type t);

/* ---- the integer matmul's working forms ----------------------------------

 * Activations (one per X row): each 32-block quantized to int8 with one
 * float scale. Kept compact (prefill streams them once per weight-row tile):
 * 52 bytes per 32 values. */
typedef struct {
    int64_t n_tok, n_in, nb;  /* nb = n_in / 32 blocks per row */
    int8_t *q;                /* [n_tok][n_in] codes, |q| <= 127 */
    float *d;                 /* [n_tok][nb] block scale */
    float *dsum;              /* [n_tok][nb] scale * sum of the block's codes */
    int32_t *csum;            /* [n_tok][nb] sum of the block's codes */
    int32_t *hsum;            /* [n_tok][2 nb] sum of each 16-code half (Q6_K's VNNI tile) */
} tl_act;

/* Weights, unpacked one row at a time into a canonical form every weight
 * type maps to exactly:  w[i] = ws[i/16] * (code[i] - offset) + wm[i/32]
 * with code[i] an unsigned byte (<= 63, except Q8_0: <= 255), offset a
 * per-type constant, wm zero for types without mins. */
typedef struct {
    int offset;     /* 0, 8, 16, 32 or 128 */
    int has_min;    /* wm is meaningful */
    int scale16;    /* the two halves of a 32-block have scales of their own
                     * (Q6_K); else ws[2b] == ws[2b + 1], and the dot product
                     * takes one float step per block instead of one per half */
} tl_unpack_info;

tl_unpack_info tl_unpack_info_of(tl_ggml_type t);
/* Scalar unpack of one row of n elements (the reference for the SIMD ones). */
void tl_unpack_row_scalar(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm);
/* SIMD unpacks: byte-identical output to the scalar one (call only where the CPU has the ISA). */
void tl_unpack_row_avx2(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm);
void tl_unpack_row_avx512(tl_ggml_type t, const void *src, int64_t n, uint8_t *code, float *ws, float *wm);

/* MXFP4 (mxfp4.c, mxfp4_avx2.c, mxfp4_avx512.c). A block is an E8M0
 * exponent e and 32 e2m1 codes (element j in the low nibble of byte j, j+16
 * in its high nibble); an e2m1 code c stands for TL_FP4_X2[c] / 2, so
 * w = TL_FP4_X2[c] * 2^(e-128). Canonical form: code = TL_FP4_X2[c] + 12
 * (0..24), offset 12, ws = 2^(e-128) for both halves of the block. */
#define TL_MXFP4_OFFSET 12
extern const int8_t TL_FP4_X2[16];
float tl_e8m0_half(uint8_t e); /* 2^(e-128), exact (subnormal below e = 2) */
void tl_dequant_mxfp4(const void *src, float *dst, int64_t nb);
void tl_quant_mxfp4(const float *src, void *dst, int64_t nb);
void tl_unpack_mxfp4_scalar(const void *src, int64_t n, uint8_t *code, float *ws);
void tl_unpack_mxfp4_avx2(const void *src, int64_t n, uint8_t *code, float *ws);
void tl_unpack_mxfp4_avx512(const void *src, int64_t n, uint8_t *code, float *ws);

/* ---- prefetch of the rows a later step reads -------------------------------
 * Decode multiplies a group of rows from cache after one pass that pulls them
 * in from memory; while it multiplies, nothing else would be requested, so a
 * group further on is prefetched in even slices, one per step of the multiply
 * loop. Only rows inside [o, o1) (the caller's slice) are fetched. A prefetch
 * never faults and changes no result.
 *
 * Decode (prefetch_ahead) fetches the group AHEAD_BYTES of rows on (at least
 * AHEAD_MIN groups) into L2 (prefetcht1), not L1: a group's rows arrive as 8
 * interleaved streams that the hardware prefetcher follows poorly, and L1
 * prefetches 2 groups ahead (the earlier plan) kept too few lines in flight,
 * so the first pass over each group waited on memory. One thread's Q8_0
 * decode of the Qwen2.5-0.5B-shaped model: 7-8 GB/s before, 15-19 GB/s after
 * (bench/README.md, "Issue 31: decode prefetch"). Prefill's float panels
 * (prefetch_near), each reused by many token tiles, keep the next-but-one
 * panel in L1. */
enum { AHEAD_MIN = 2, AHEAD_BYTES = 64 * 1024 };

typedef struct {
    const char *p; /* NULL: nothing to prefetch */
    size_t step;   /* bytes per loop step, whole cache lines */
    int to_l1;     /* prefetcht0 instead of prefetcht1 */
} prefetch_plan;

static inline prefetch_plan prefetch_plan_at(const tl_matrix *W, int64_t o, int rows, int64_t o1, int64_t n_steps,
                                             int64_t ahead, int to_l1) {
    if (n_steps <= 0 || o + (ahead + 1) * rows > o1) return (prefetch_plan){NULL, 0, 0};
    return (prefetch_plan){(const char *)W->data + (size_t)(o + ahead * rows) * W->row_bytes,
                           ((size_t)rows * W->row_bytes / (size_t)n_steps + 63) / 64 * 64, to_l1};
}

/* Decode: the group of `rows` rows AHEAD_BYTES (at least AHEAD_MIN groups)
 * after row o, into L2 over n_steps steps. */
static inline prefetch_plan prefetch_ahead(const tl_matrix *W, int64_t o, int rows, int64_t o1, int64_t n_steps) {
    int64_t group_bytes = (int64_t)rows * (int64_t)W->row_bytes;
    int64_t ahead = group_bytes > 0 ? AHEAD_BYTES / group_bytes : AHEAD_MIN;
    return prefetch_plan_at(W, o, rows, o1, n_steps, ahead < AHEAD_MIN ? AHEAD_MIN : ahead, 0);
}

/* Prefill: the group AHEAD_MIN groups after row o, into L1 over n_steps steps. */
static inline prefetch_plan prefetch_near(const tl_matrix *W, int64_t o, int rows, int64_t o1, int64_t n_steps) {
    return prefetch_plan_at(W, o, rows, o1, n_steps, AHEAD_MIN, 1);
}

/* Step i's slice. */
static inline __attribute__((always_inline)) void prefetch_slice(prefetch_plan pf, int64_t i) {
    if (!pf.p) return;
    const char *p = pf.p + pf.step * (size_t)i;
    if (pf.to_l1)
        for (size_t k = 0; k < pf.step; k += 64) __builtin_prefetch(p + k, 0, 3);
    else
        for (size_t k = 0; k < pf.step; k += 64) __builtin_prefetch(p + k, 0, 2);
}

/* Quantizes X rows [t0, t1) into act (portable; the AVX2 one gives the same bytes). */
void tl_act_quantize_rows(tl_act *a, const float *X, int64_t t0, int64_t t1);
void tl_act_quantize_rows_avx2(tl_act *a, const float *X, int64_t t0, int64_t t1);

/* ---- ISA selection --------------------------------------------------------- */

/* AMX: the AVX-512 kernels plus AMX tiles for the matrix products (opt-in, TL_ISA=amx). */
typedef enum { TL_ISA_SCALAR = 0, TL_ISA_AVX2 = 1, TL_ISA_AVX512 = 2, TL_ISA_AMX = 3 } tl_isa;
tl_isa tl_kernels_isa_id(void);

/* Per-ISA kernels: output rows [o0, o1) of Y for all n_tok tokens.
 * Float weights (F32/F16/BF16) read X directly; the others read act. */
typedef void (*tl_rows_float_fn)(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y);
typedef void (*tl_rows_quant_fn)(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);

void tl_rows_float_scalar(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y);
void tl_rows_quant_scalar(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);
void tl_rows_float_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y);
void tl_rows_quant_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);
/* AVX-512 CPUs, fewer than 8 tokens: the AVX2 panels with 256-bit vpdpbusd tiles (the same bits) */
void tl_rows_quant_vnni(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);
/* matmul_avx512.c: 16-row 512-bit VNNI tiles for 8 tokens or more (fewer: tl_rows_quant_vnni); the same bits. */
void tl_rows_quant_vnni16(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);
/* 16 weight rows packed for the 16-lane tiles (tl_rows_quant_vnni16, tl_rows_quant_amx):
 * packed[j][row][4] = dword j of each row's codes (unsigned, or code - offset when packed
 * with sign), gs[g][row] the scale of group g (kg elements), gm[b][row] the block mins;
 * codes / ws / wm are scratch. Rows past nr are zero codes with scale 0. */
typedef struct {
    int kg, offset, has_min;
    size_t code_stride;
    uint8_t *packed, *codes;
    float *gs, *gm, *ws, *wm;
} tl_rows16;
int tl_rows16_init(tl_rows16 *P, const tl_matrix *W); /* 0: out of memory */
void tl_rows16_free(tl_rows16 *P);
/* rows o .. o+nr-1; also prefetches the next 16 rows below o1 */
void tl_rows16_pack(tl_rows16 *P, const tl_matrix *W, int64_t o, int nr, int64_t o1, int sign);
/* y[0..nr) = acc (16 sums) + the mins' share (sum over blocks of gm * dsum, in order) */
void tl_rows16_finish(const float *acc, const float *gm, int has_min, const float *dsum, int64_t nb, float *y, int nr);
void tl_rows_float_avx512(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y);
/* 16-bit float rows w[0..R) (n elements) widened into wide (R x n floats, exact: the values the float
 * tiles read), w[r] pointed at its floats: the AVX2 float kernel's prefill (the AVX-512 one
 * converts in the tile: faster where four F16 rows fit in L1 and their floats do not). */
void tl_widen_rows_avx2(tl_ggml_type t, const uint8_t **w, int R, int64_t n, float *wide);
/* matmul_amx.c: call only after tl_amx_usable() returned 1 (it asks Linux for the tile state). */
int tl_amx_usable(void);
/* The AMX F16/BF16 tiles' activations: each row of X split into bf16 hi and lo terms, rows of
 * tl_amx_row_elems(n_in) (zero-padded to whole 32-element chunks); xs holds the n_tok hi rows, then
 * the n_tok lo rows. tl_amx_split_rows fills rows [t0, t1) of both, once per matmul call. */
static inline int64_t tl_amx_row_elems(int64_t n_in) { return (n_in + 31) / 32 * 32; }
void tl_amx_split_rows(const float *X, int64_t n_in, int64_t n_tok, int64_t t0, int64_t t1, uint16_t *xs);
void tl_rows_float_amx(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, const uint16_t *xs, int64_t n_tok,
                       float *Y);
void tl_rows_quant_amx(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y);

#endif
