/* emulate_amx.h: the AMX tile intrinsics matmul_amx.c uses, written out in
 * C for the test build (TL_EMULATE_AVX512) on machines without AMX, so the
 * AMX kernels' logic (tile shapes, packing, the float steps after each
 * TDPBSSD) is checked against the portable kernel everywhere. Never part of
 * the library itself.
 *
 * The semantics are those of Intel's SDM (palette 1: 8 tiles of up to 16
 * rows x 64 bytes), per thread as the hardware's tile state is:
 *  - TILELOADD reads rows[t] rows of colsb[t] bytes, stride apart, and zeroes
 *    the rest of the tile; TILESTORED writes rows[t] rows of colsb[t] bytes;
 *  - TDPBSSD: C[m][n] += sum over k < colsb[a]/4, i < 4 of
 *    A.s8[m][4k+i] * B.s8[k][4n+i], in 32 bits, wrapping, never saturating;
 *  - TDPBF16PS: C.f32[m][n] += A.bf16[m][2k] B.bf16[k][2n] + A.bf16[m][2k+1] B.bf16[k][2n+1],
 *    the products exact in float (8-bit significands), each added in turn
 *    with round-to-nearest-even (the hardware's order within a pair is not
 *    specified bit for bit: the tests hold this path to a tolerance).
 * A configuration the hardware would refuse with #UD (shapes that do not
 * fit) aborts with a message: in a test build that is a failure to see. */
#ifndef TL_EMULATE_AMX_H
#define TL_EMULATE_AMX_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int configured;
    uint16_t colsb[8];
    uint8_t rows[8];
    uint8_t data[8][16 * 64];
} tl_emu_tiles;

static __thread tl_emu_tiles tl_emu_amx;

#define TL_EMU_AMX static inline __attribute__((unused))

TL_EMU_AMX void tl_emu_amx_fault(const char *what) {
    fprintf(stderr, "emulated AMX: %s (the hardware would raise #UD)\n", what);
    abort();
}

/* The 64-byte palette-1 configuration: byte 0 palette, 16.. colsb (u16 x 16), 48.. rows (u8 x 16). */
TL_EMU_AMX void tl_emu_tile_loadconfig(const void *cfg) {
    const uint8_t *c = cfg;
    if (c[0] != 1) tl_emu_amx_fault("palette other than 1");
    memset(&tl_emu_amx, 0, sizeof tl_emu_amx);
    for (int t = 0; t < 8; t++) {
        memcpy(&tl_emu_amx.colsb[t], c + 16 + 2 * t, 2);
        tl_emu_amx.rows[t] = c[48 + t];
        if (tl_emu_amx.rows[t] > 16 || tl_emu_amx.colsb[t] > 64) tl_emu_amx_fault("tile larger than 16 x 64 bytes");
    }
    tl_emu_amx.configured = 1;
}

TL_EMU_AMX void tl_emu_tile_check(int t) {
    if (!tl_emu_amx.configured) tl_emu_amx_fault("tile instruction before LDTILECFG");
    if (t < 0 || t > 7) tl_emu_amx_fault("tile number out of range");
}

TL_EMU_AMX void tl_emu_tile_loadd(int t, const void *base, long stride) {
    tl_emu_tile_check(t);
    uint8_t *d = tl_emu_amx.data[t];
    memset(d, 0, sizeof tl_emu_amx.data[t]);
    for (int r = 0; r < tl_emu_amx.rows[t]; r++)
        memcpy(d + 64 * r, (const uint8_t *)base + (long)r * stride, tl_emu_amx.colsb[t]);
}

TL_EMU_AMX void tl_emu_tile_stored(int t, void *base, long stride) {
    tl_emu_tile_check(t);
    for (int r = 0; r < tl_emu_amx.rows[t]; r++)
        memcpy((uint8_t *)base + (long)r * stride, tl_emu_amx.data[t] + 64 * r, tl_emu_amx.colsb[t]);
}

TL_EMU_AMX void tl_emu_tile_zero(int t) {
    tl_emu_tile_check(t);
    memset(tl_emu_amx.data[t], 0, sizeof tl_emu_amx.data[t]);
}

/* The shapes TDPBSSD / TDPBF16PS require: C is M x N dwords, A is M x K
 * dwords, B is K rows x N dwords. */
TL_EMU_AMX void tl_emu_tile_shapes(int c, int a, int b) {
    tl_emu_tile_check(c), tl_emu_tile_check(a), tl_emu_tile_check(b);
    if (c == a || c == b || a == b) tl_emu_amx_fault("dot product with a repeated tile");
    if (tl_emu_amx.rows[a] != tl_emu_amx.rows[c] || tl_emu_amx.rows[b] * 4 != tl_emu_amx.colsb[a] ||
        tl_emu_amx.colsb[b] != tl_emu_amx.colsb[c] || tl_emu_amx.colsb[a] % 4 || tl_emu_amx.colsb[c] % 4)
        tl_emu_amx_fault("tile shapes do not fit the dot product");
}

TL_EMU_AMX void tl_emu_tile_dpbssd(int c, int a, int b) {
    tl_emu_tile_shapes(c, a, b);
    int M = tl_emu_amx.rows[c], N = tl_emu_amx.colsb[c] / 4, K = tl_emu_amx.colsb[a] / 4;
    const int8_t *A = (const int8_t *)tl_emu_amx.data[a], *B = (const int8_t *)tl_emu_amx.data[b];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            uint32_t acc;
            memcpy(&acc, tl_emu_amx.data[c] + 64 * m + 4 * n, 4);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < 4; i++)
                    acc += (uint32_t)((int32_t)A[64 * m + 4 * k + i] * (int32_t)B[64 * k + 4 * n + i]);
            memcpy(tl_emu_amx.data[c] + 64 * m + 4 * n, &acc, 4);
        }
}

TL_EMU_AMX float tl_emu_bf16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

TL_EMU_AMX void tl_emu_tile_dpbf16ps(int c, int a, int b) {
    tl_emu_tile_shapes(c, a, b);
    int M = tl_emu_amx.rows[c], N = tl_emu_amx.colsb[c] / 4, K = tl_emu_amx.colsb[a] / 4;
    const uint8_t *A = tl_emu_amx.data[a], *B = tl_emu_amx.data[b];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc;
            memcpy(&acc, tl_emu_amx.data[c] + 64 * m + 4 * n, 4);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < 2; i++) {
                    volatile float p = tl_emu_bf16(A + 64 * m + 4 * k + 2 * i) * tl_emu_bf16(B + 64 * k + 4 * n + 2 * i);
                    acc += p; /* volatile: no contraction into an fma */
                }
            memcpy(tl_emu_amx.data[c] + 64 * m + 4 * n, &acc, 4);
        }
}

TL_EMU_AMX void tl_emu_tile_release(void) { memset(&tl_emu_amx, 0, sizeof tl_emu_amx); }

/* GCC's <immintrin.h> (which SIMDe includes) defines some of these names as macros */
#undef _tile_loadconfig
#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbf16ps
#undef _tile_release
#define _tile_loadconfig(cfg) tl_emu_tile_loadconfig(cfg)
#define _tile_loadd(t, base, stride) tl_emu_tile_loadd(t, base, stride)
#define _tile_stored(t, base, stride) tl_emu_tile_stored(t, base, stride)
#define _tile_zero(t) tl_emu_tile_zero(t)
#define _tile_dpbssd(c, a, b) tl_emu_tile_dpbssd(c, a, b)
#define _tile_dpbf16ps(c, a, b) tl_emu_tile_dpbf16ps(c, a, b)
#define _tile_release() tl_emu_tile_release()
#endif
