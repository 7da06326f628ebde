/* test_matmul.c: tl_matmul against a double-precision reference, and the
 * three invariants the engine relies on, for every weight type and every ISA
 * path the CPU has:
 *   (a) bit-identical output with 1, 2 and 3 threads;
 *   (b) row t of Y is the same bits whether computed alone (n_tok = 1) or in
 *       a batch of 2, 3, 7 or 64 rows;
 *   (c) each SIMD path agrees with the scalar path within a small tolerance
 *       (the AMX path where the CPU has AMX, and on emulated tiles in
 *       kernels/test_matmul_emu512; test_matmul skips it elsewhere, saying so);
 *       the AVX2, AVX-512 and AMX integer kernels give exactly its bits (AVX-512
 *       and AMX also in the emulated build, kernels/test_matmul_emu512).
 * Also the thread pool's split: every index exactly once, by a fixed thread;
 * and its dynamic runs: every index exactly once, in whole chunks, never by
 * two calls at once under one thread index. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "kernels/kernels_internal.h"
#include "tl_test.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static float rnd_uniform(void) { /* in [-1, 1) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) / 8388608.0 - 1.0);
}

/* ---- thread pool ----------------------------------------------------------- */

typedef struct { int *hits; int *owner; } cover_arg;
static void cover(void *v, int64_t b, int64_t e, int thread) {
    cover_arg *a = v;
    for (int64_t i = b; i < e; i++) { a->hits[i]++; a->owner[i] = thread; }
}

/* Dynamic runs: chunks of grain items handed to whoever is free. Each call
 * marks its thread slot busy, so two calls sharing a slot (which would share
 * that thread's scratch) are caught. */
typedef struct {
    int *hits;
    int64_t grain, n;
    int n_threads;
    _Atomic int busy[8];
    _Atomic int bad;
} dyn_arg;
static void dyn_cover(void *v, int64_t b, int64_t e, int thread) {
    dyn_arg *a = v;
    if (thread < 0 || thread >= a->n_threads || atomic_exchange(&a->busy[thread], 1)) {
        atomic_fetch_add(&a->bad, 1);
        return;
    }
    if (b % a->grain || (e != a->n && e - b != a->grain)) atomic_fetch_add(&a->bad, 1);
    for (int64_t i = b; i < e; i++) a->hits[i]++;
    atomic_store(&a->busy[thread], 0);
}

static void check_pool_dynamic(tl_pool *p, int nt) {
    int bad_runs = 0;
    for (int r = 0; r < 3000; r++) {
        static const int64_t ns[] = {1, 5, 64, 333, 1000};
        int64_t n = ns[r % 5], grain = 1 + r % 7;
        int hits[1000] = {0};
        dyn_arg a = {.hits = hits, .grain = grain, .n = n, .n_threads = nt};
        tl_pool_run_dynamic(p, n, grain, dyn_cover, &a);
        int ok = atomic_load(&a.bad) == 0;
        for (int64_t i = 0; i < n; i++) ok &= hits[i] == 1;
        bad_runs += !ok;
        if (r % 100 == 0) { /* static runs between dynamic ones still split as before */
            int sh[64] = {0}, so[64];
            cover_arg c = {sh, so};
            tl_pool_run(p, 64, 1, cover, &c);
            for (int i = 0; i < 64; i++) bad_runs += sh[i] != 1 || !(64 * so[i] / nt <= i && i < 64 * (so[i] + 1) / nt);
        }
    }
    CHECKF(bad_runs == 0, "pool %d threads: %d of 3000 dynamic runs ran an index twice or never, or shared a thread slot", nt, bad_runs);
}

static void check_pool(void) {
    for (int nt = 1; nt <= 4; nt++) {
        tl_pool *p = tl_pool_new(nt);
        CHECK(p && tl_pool_size(p) == nt);
        static const int64_t ns[] = {1, 2, 3, 17, 100, 1000};
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            for (int64_t grain = 1; grain <= 64; grain *= 4) {
                int64_t n = ns[k];
                int hits[1000] = {0}, owner[1000], owner2[1000];
                cover_arg a = {hits, owner};
                tl_pool_run(p, n, grain, cover, &a);
                int ok = 1;
                for (int64_t i = 0; i < n; i++) ok &= hits[i] == 1;
                CHECKF(ok, "pool %d threads n=%lld grain=%lld: an index not run exactly once", nt,
                       (long long)n, (long long)grain);
                /* same split on the next call (static, not work stealing) */
                cover_arg a2 = {hits, owner2};
                tl_pool_run(p, n, grain, cover, &a2);
                CHECK(memcmp(owner, owner2, (size_t)n * sizeof owner[0]) == 0);
            }
        }
        /* many short runs back to back (the decode pattern; on a busy machine
         * the caller takes over slices of late workers): each index exactly
         * once per run, always with the same thread index */
        int bad_runs = 0;
        int owner0[64];
        for (int r = 0; r < 2000; r++) {
            int hits[64] = {0}, owner[64];
            cover_arg a = {hits, owner};
            tl_pool_run(p, 64, 1, cover, &a);
            int ok = 1;
            for (int i = 0; i < 64; i++) ok &= hits[i] == 1;
            if (r == 0) memcpy(owner0, owner, sizeof owner);
            bad_runs += !ok || memcmp(owner, owner0, sizeof owner) != 0;
        }
        CHECKF(bad_runs == 0, "pool %d threads: %d of 2000 short runs ran an index twice, never, or on another slot", nt, bad_runs);
        check_pool_dynamic(p, nt);
        tl_pool_free(p);
    }
}

/* ---- matmul ------------------------------------------------------------------ */

enum { MAX_IN = 2816, MAX_OUT = 37, MAX_TOK = 64 };
/* Current shape: 512 x 37 for every type; 96 x 5 (an odd number of 32-blocks)
 * and 100 x 6 (float types: a tail shorter than a vector) for the edges;
 * 2816 x 6: rows long enough that the AVX-512 float kernel takes 32-token
 * chunks (64 tokens of 2816 floats would not stay in L2). */
static int N_IN = 512, N_OUT = 37;

typedef struct {
    tl_ggml_type type;
    tl_matrix W;
    uint8_t *wdata;
    float *wf;      /* [N_OUT][N_IN] dequantized weights */
} weights;

static void make_weights(weights *w, tl_ggml_type t) {
    float *src = malloc(sizeof(float) * N_IN * N_OUT);
    rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1); /* same weights on every ISA pass */
    for (int i = 0; i < N_IN * N_OUT; i++) src[i] = rnd_uniform();
    size_t rb = tl_type_row_bytes(t, N_IN);
    w->type = t;
    w->wdata = malloc(rb * N_OUT);
    w->wf = malloc(sizeof(float) * N_IN * N_OUT);
    for (int o = 0; o < N_OUT; o++) {
        tl_quantize_row(t, src + o * N_IN, w->wdata + o * rb, N_IN);
        tl_dequant_row(t, w->wdata + o * rb, w->wf + o * N_IN, N_IN);
    }
    w->W = (tl_matrix){t, N_IN, N_OUT, rb, w->wdata};
    free(src);
}

/* Bound on |Y - exact| for one output: float rounding over the sum of
 * |w||x|, plus, for quantized weights, the activations' 8-bit rounding
 * (each x within half a step of its 32-block's absmax/127). */
static double tolerance(const weights *w, int o, const float *x) {
    double sum_abs = 0, act = 0;
    for (int i = 0; i < N_IN; i++) sum_abs += fabs((double)w->wf[o * N_IN + i] * x[i]);
    int int8_acts = w->type != TL_TYPE_F32 && w->type != TL_TYPE_F16 && w->type != TL_TYPE_BF16;
    if (int8_acts) {
        for (int b = 0; b < N_IN; b += 32) {
            double amax = 0, wsum = 0;
            for (int i = b; i < b + 32; i++) { amax = fmax(amax, fabs(x[i])); wsum += fabs(w->wf[o * N_IN + i]); }
            act += wsum * amax / 254.0;
        }
    }
    /* the AMX tiles split x (and F16 weights) into two bf16 terms each, which
     * leaves every product within about 2^-17 of exact; every other float
     * path multiplies in float */
    int bf16_tiles = (w->type == TL_TYPE_F16 || w->type == TL_TYPE_BF16) && !strcmp(tl_kernels_isa(), "amx");
    if (bf16_tiles) act += sum_abs * 0x1p-15;
    return 2e-6 * sum_abs + act + 1e-30;
}

static void check_type(tl_ggml_type t, const float *X, tl_pool *p1, tl_pool *p2, tl_pool *p3,
                       float *Y_scalar) {
    weights w;
    make_weights(&w, t);
    const char *isa = tl_kernels_isa();
    float *Y1 = malloc(sizeof(float) * MAX_TOK * MAX_OUT), *Y2 = malloc(sizeof(float) * MAX_TOK * MAX_OUT);
    float *Y3 = malloc(sizeof(float) * MAX_TOK * MAX_OUT), *Yt = malloc(sizeof(float) * MAX_TOK * MAX_OUT);

    tl_matmul(p1, &w.W, X, MAX_TOK, Y1);
    /* reference */
    int bad = 0;
    for (int tk = 0; tk < MAX_TOK; tk++) {
        for (int o = 0; o < N_OUT; o++) {
            double ref = 0;
            for (int i = 0; i < N_IN; i++) ref += (double)w.wf[o * N_IN + i] * X[tk * N_IN + i];
            double tol = tolerance(&w, o, X + tk * N_IN);
            if (fabs(Y1[tk * N_OUT + o] - ref) > tol) {
                if (bad++ < 3) fprintf(stderr, "%s %s: Y[%d][%d] = %.8g, reference %.8g (tol %g)\n", isa,
                                       tl_type_name(t), tk, o, Y1[tk * N_OUT + o], ref, tol);
            }
        }
    }
    CHECKF(bad == 0, "%s %s: %d outputs off the double reference", isa, tl_type_name(t), bad);

    /* (a) thread count */
    tl_matmul(p2, &w.W, X, MAX_TOK, Y2);
    tl_matmul(p3, &w.W, X, MAX_TOK, Y3);
    CHECKF(!memcmp(Y1, Y2, sizeof(float) * MAX_TOK * N_OUT), "%s %s: 1 vs 2 threads differ", isa, tl_type_name(t));
    CHECKF(!memcmp(Y1, Y3, sizeof(float) * MAX_TOK * N_OUT), "%s %s: 1 vs 3 threads differ", isa, tl_type_name(t));

    /* (b) batch independence: each row alone, and batches of 7 at odd offsets */
    int differ = 0;
    for (int tk = 0; tk < MAX_TOK; tk++) {
        tl_matmul(p1, &w.W, X + tk * N_IN, 1, Yt); /* p1: (a) covers threads; this covers n_tok */
        differ += memcmp(Yt, Y1 + tk * N_OUT, sizeof(float) * N_OUT) != 0;
    }
    for (int start = 0; start + 7 <= MAX_TOK; start += 9) {
        tl_matmul(p2, &w.W, X + start * N_IN, 7, Yt);
        differ += memcmp(Yt, Y1 + start * N_OUT, sizeof(float) * 7 * N_OUT) != 0;
    }
    for (int n = 2; n <= 3; n++) { /* decode's two-token rows; a three-token tile */
        tl_matmul(p2, &w.W, X + 5 * N_IN, n, Yt);
        differ += memcmp(Yt, Y1 + 5 * N_OUT, sizeof(float) * (size_t)n * N_OUT) != 0;
    }
    CHECKF(differ == 0, "%s %s: %d rows change with the batch they are in", isa, tl_type_name(t), differ);

    /* (c) agreement with the scalar path (Y_scalar filled on the scalar pass) */
    if (strcmp(isa, "scalar") == 0) {
        memcpy(Y_scalar, Y1, sizeof(float) * MAX_TOK * N_OUT);
    } else {
        int far = 0;
        for (int tk = 0; tk < MAX_TOK; tk++) {
            for (int o = 0; o < N_OUT; o++) {
                double d = fabs(Y1[tk * N_OUT + o] - Y_scalar[tk * N_OUT + o]);
                /* same algorithm, different summation order: float rounding only */
                double sum_abs = 0;
                for (int i = 0; i < N_IN; i++) sum_abs += fabs((double)w.wf[o * N_IN + i] * X[tk * N_IN + i]);
                int bf16_tiles = (t == TL_TYPE_F16 || t == TL_TYPE_BF16) && !strcmp(isa, "amx");
                if (d > 2e-6 * sum_abs + (bf16_tiles ? sum_abs * 0x1p-14 : 0))
                    far++;
            }
        }
        CHECKF(far == 0, "%s %s: %d outputs differ from the scalar path", isa, tl_type_name(t), far);
        /* the AVX2 integer kernels (and on AVX-512 CPUs the same panels with
         * vpdpbusd tiles, and the AMX tiles) take the scalar kernel's rounding
         * steps: the same bits, in prefill tiles (n_tok 64) and decode rows alike */
        int quant = t != TL_TYPE_F32 && t != TL_TYPE_F16 && t != TL_TYPE_BF16;
        if (quant && (!strcmp(isa, "avx2") || !strcmp(isa, "avx512") || !strcmp(isa, "amx")))
            CHECKF(!memcmp(Y1, Y_scalar, sizeof(float) * MAX_TOK * N_OUT), "%s %s: not the scalar path's bits", isa,
                   tl_type_name(t));
    }
    free(Y1); free(Y2); free(Y3); free(Yt);
    free(w.wdata); free(w.wf);
}

/* T tokens of X times W on the current ISA, as one batch and token by token,
 * against the scalar path (its result left in Yr): how many outputs of
 * either differ from it (any bit on AVX2, AVX-512 and AMX, beyond a tolerance elsewhere). */
static int paths_vs_scalar(tl_pool *pool, const tl_matrix *W, const float *X, int T, float *Yr) {
    float *Y = malloc(sizeof(float) * T * N_OUT), *Yd = malloc(sizeof(float) * T * N_OUT);
    const char *isa = tl_kernels_isa();
    tl_matmul(pool, W, X, T, Y);
    for (int tk = 0; tk < T; tk++) tl_matmul(pool, W, X + tk * N_IN, 1, Yd + tk * N_OUT);
    tl_kernels_force_isa("scalar");
    tl_matmul(pool, W, X, T, Yr);
    tl_kernels_force_isa(isa);
    int exact = !strcmp(isa, "avx2") || !strcmp(isa, "avx512") || !strcmp(isa, "amx") || !strcmp(isa, "scalar"), far = 0;
    for (int i = 0; i < T * N_OUT; i++) {
        double tol = exact ? 0 : 2e-6 * fabs((double)Yr[i]) * 4;
        far += fabs((double)Y[i] - Yr[i]) > tol || fabs((double)Yd[i] - Yr[i]) > tol;
    }
    free(Y); free(Yd);
    return far;
}

/* The integer kernels add 16-bit pair sums over as many 4-element groups as
 * a type's widest factor allows without overflow: |w| = |code - offset| on
 * the signed paths, the code itself on the unsigned ones (which take
 * offset x the activations' sum off afterwards). Two cases drive those sums
 * to their bound, all but one element of each block at the extreme and
 * activation codes of 127 whose signs make every product positive:
 *  - wide: the largest |w| (offset types: their most negative code);
 *  - top: the largest code (offset types: values of the sign opposite to
 *    the block's largest, at the top code).
 * Each path must still give the scalar path's exact integers (AVX2: its
 * bits), in prefill tiles and decode rows. The extreme the weights reach is
 * checked too, so the case cannot go soft. */
static void check_extremes(tl_ggml_type t, tl_pool *pool, int top) {
    if (!tl_kernels_supports(t) || tl_type_block_elems(t) == 1 || N_IN % tl_type_block_elems(t)) return;
    tl_unpack_info info = tl_unpack_info_of(t);
    if (top && !info.offset) return; /* for them wide is top */
    int want = t == TL_TYPE_Q8_0 ? 127 : t == TL_TYPE_Q4_0 ? 8 : t == TL_TYPE_MXFP4 ? 12 : t == TL_TYPE_Q5_0 ? 16
             : t == TL_TYPE_Q4_1 || t == TL_TYPE_Q4_K ? 15 : t == TL_TYPE_Q6_K ? 32 : 31;
    if (top) want = t == TL_TYPE_Q8_0 ? 255 : t == TL_TYPE_Q4_0 ? 15 : t == TL_TYPE_MXFP4 ? 24 : t == TL_TYPE_Q6_K ? 63 : 31;
    /* 1.5: MXFP4 codes it as its widest, 6 x 2^-2; Q4_0 / Q5_0 give their top
     * code to 7/8 / 15/16 of a block's largest magnitude, of the other sign */
    float big = info.offset && !top ? -1.5f : 1.5f, odd = info.offset ? (top ? -1.5f : 0.5f) : 0.0f;
    if (top && t == TL_TYPE_Q4_0) big *= 7.0f / 8.0f;
    if (top && t == TL_TYPE_Q5_0) big *= 15.0f / 16.0f;
    enum { T_EX = 9 }; /* two 4-token tiles and one more */
    float *src = malloc(sizeof(float) * N_IN * N_OUT), *X = malloc(sizeof(float) * N_IN * T_EX);
    for (int i = 0; i < N_IN * N_OUT; i++) src[i] = i % 32 == 0 ? odd : big;
    for (int i = 0; i < N_IN * T_EX; i++) X[i] = big > 0 ? 1.5f : -1.5f;
    size_t rb = tl_type_row_bytes(t, N_IN);
    uint8_t *wd = malloc(rb * N_OUT), *code = malloc((size_t)N_IN);
    float *ws = malloc(sizeof(float) * (size_t)N_IN), *wm = malloc(sizeof(float) * (size_t)N_IN);
    int reached = 0;
    for (int o = 0; o < N_OUT; o++) {
        tl_quantize_row(t, src + o * N_IN, wd + o * rb, N_IN);
        tl_unpack_row_scalar(t, wd + o * rb, N_IN, code, ws, wm);
        for (int i = 0; i < N_IN; i++) {
            int a = top ? code[i] : abs((int)code[i] - info.offset);
            reached = a > reached ? a : reached;
        }
    }
    CHECKF(reached >= want, "%s extremes (%s): the weights reach %d, not %d", tl_type_name(t), top ? "top" : "wide",
           reached, want);
    tl_matrix W = {t, N_IN, N_OUT, rb, wd};
    float *Yr = malloc(sizeof(float) * T_EX * N_OUT);
    int far = paths_vs_scalar(pool, &W, X, T_EX, Yr);
    CHECKF(far == 0, "%s %s extremes (%s): %d outputs differ from the scalar path's", tl_kernels_isa(), tl_type_name(t),
           top ? "top" : "wide", far);
    free(src); free(X); free(wd); free(code); free(ws); free(wm); free(Yr);
}

/* Q8_0 codes a file may hold but the quantizer never writes (-128), and the
 * products at the edge of 16-bit pair sums: rows of all -128, of -128 and 127
 * alternating (both phases), of pseudo-random codes; tokens of all +127,
 * all -127 and alternating codes. The AVX2 prefill tile takes |w| x (x ^ the
 * sign mask of w), whose pairs reach exactly -32768 here. Every path against
 * the scalar one (its bits on AVX2) and all against a double-precision sum. */
static void check_q8_codes(tl_pool *pool) {
    if (N_IN % 32) return;
    enum { T_EX = 9 };
    int nb = N_IN / 32;
    size_t rb = tl_type_row_bytes(TL_TYPE_Q8_0, N_IN);
    uint8_t *wd = malloc(rb * N_OUT);
    float *wf = malloc(sizeof(float) * N_IN * N_OUT), *X = malloc(sizeof(float) * N_IN * T_EX);
    uint32_t h = 12345;
    for (int o = 0; o < N_OUT; o++)
        for (int b = 0; b < nb; b++) {
            blk_q8_0 *blk = (blk_q8_0 *)(wd + o * rb) + b;
            float d = 0.25f * (float)(1 + (o + b) % 3);
            blk->d = tl_f32_to_half(d);
            for (int i = 0; i < 32; i++) {
                int c;
                switch (o % 4) {
                case 0: c = -128; break;
                case 1: c = i % 2 ? 127 : -128; break;
                case 2: c = i % 2 ? -128 : 127; break;
                default: h = h * 1103515245u + 12345u; c = (h >> 16) % 3 == 0 ? -128 : (int)((h >> 8) % 256) - 128; break;
                }
                blk->qs[i] = (int8_t)c;
                wf[o * N_IN + 32 * b + i] = d * (float)c;
            }
        }
    for (int t = 0; t < T_EX; t++)
        for (int i = 0; i < N_IN; i++)
            X[t * N_IN + i] = t % 3 == 0 ? 1.5f : t % 3 == 1 ? -1.5f : (i % 2 ? 1.5f : -1.5f);
    tl_matrix W = {TL_TYPE_Q8_0, N_IN, N_OUT, rb, wd};
    float *Yr = malloc(sizeof(float) * T_EX * N_OUT);
    int far = paths_vs_scalar(pool, &W, X, T_EX, Yr), wrong = 0;
    for (int t = 0; t < T_EX; t++)
        for (int o = 0; o < N_OUT; o++) {
            int i = t * N_OUT + o;
            double ref = 0, mag = 0;
            for (int k = 0; k < N_IN; k++) {
                ref += (double)wf[o * N_IN + k] * X[t * N_IN + k];
                mag += fabs((double)wf[o * N_IN + k] * X[t * N_IN + k]);
            }
            wrong += fabs((double)Yr[i] - ref) > 1e-3 * mag; /* activation codes round 1.5 to 127 steps */
        }
    CHECKF(far == 0, "%s Q8_0 edge codes: %d outputs differ from the scalar path's", tl_kernels_isa(), far);
    CHECKF(wrong == 0, "%s Q8_0 edge codes: %d scalar outputs are off the double-precision sums", tl_kernels_isa(), wrong);
    free(wd); free(wf); free(X); free(Yr);
}

/* The SIMD unpacks write exactly the scalar unpack's bytes (codes, scales, mins). */
static void check_unpack(tl_ggml_type t) {
    if (!tl_kernels_supports(t) || tl_type_block_elems(t) == 1 || N_IN % tl_type_block_elems(t)) return;
    weights w;
    make_weights(&w, t);
    int nb = N_IN / 32;
    for (int k = 0; k < 2; k++) {
        const char *isa = k ? "avx512" : "avx2";
        if (!tl_kernels_force_isa(isa)) continue;
        for (int o = 0; o < N_OUT; o++) {
            uint8_t c0[MAX_IN], c1[MAX_IN];
            float ws0[MAX_IN / 16], ws1[MAX_IN / 16], wm0[MAX_IN / 32] = {0}, wm1[MAX_IN / 32] = {0};
            const uint8_t *src = w.wdata + (size_t)o * w.W.row_bytes;
            tl_unpack_row_scalar(t, src, N_IN, c0, ws0, wm0);
            if (k) tl_unpack_row_avx512(t, src, N_IN, c1, ws1, wm1);
            else tl_unpack_row_avx2(t, src, N_IN, c1, ws1, wm1);
            int same = !memcmp(c0, c1, (size_t)N_IN) && !memcmp(ws0, ws1, sizeof(float) * 2 * nb) &&
                       !memcmp(wm0, wm1, sizeof(float) * nb);
            CHECKF(same, "%s unpack of %s row %d differs from scalar", isa, tl_type_name(t), o);
            if (!same) break;
        }
    }
    free(w.wdata); free(w.wf);
}

/* The AVX2 activation quantizer writes exactly the portable one's codes,
 * scales and sums, special values (0, inf, NaN, ties) included. */
static void check_act_quantize(void) {
    if (!tl_kernels_force_isa("avx2")) {
        fprintf(stderr, "ISA avx2 not available here: activation quantizer check skipped\n");
        return;
    }
    enum { T = 9, NI = 256, NB = NI / 32 };
    float *X = malloc(sizeof(float) * T * NI);
    for (int i = 0; i < T * NI; i++) X[i] = rnd_uniform() * (i % 13 == 0 ? 100.f : 1.f);
    for (int i = 0; i < 32; i++) X[i] = 0;                      /* an all-zero block */
    X[40] = INFINITY; X[70] = -INFINITY; X[100] = NAN;          /* specials */
    for (int i = 128; i < 160; i++) X[i] = (float)(i - 144) * 0.5f; /* halves: ties away from zero */
    int8_t q0[T * NI], q1[T * NI];
    float d0[T * NB], d1[T * NB], s0[T * NB], s1[T * NB];
    int32_t c0[T * NB], c1[T * NB], h0[2 * T * NB], h1[2 * T * NB];
    tl_act a0 = {T, NI, NB, q0, d0, s0, c0, h0}, a1 = {T, NI, NB, q1, d1, s1, c1, h1};
    tl_act_quantize_rows(&a0, X, 0, T);
    tl_act_quantize_rows_avx2(&a1, X, 0, T);
    CHECK(!memcmp(q0, q1, sizeof q0));
    CHECK(!memcmp(d0, d1, sizeof d0));
    CHECK(!memcmp(s0, s1, sizeof s0));
    CHECK(!memcmp(c0, c1, sizeof c0));
    CHECK(!memcmp(h0, h1, sizeof h0));
    int sums_ok = 1; /* csum is the codes' sum, hsum each half's */
    for (int b = 0; b < T * NB; b++) {
        int sum = 0, half[2] = {0, 0};
        for (int i = 0; i < 32; i++) sum += q0[32 * b + i], half[i / 16] += q0[32 * b + i];
        sums_ok &= sum == c0[b] && half[0] == h0[2 * b] && half[1] == h0[2 * b + 1];
    }
    CHECK(sums_ok);
    free(X);
}

/* tl_matmul_multi gives each matrix exactly tl_matmul's bits. */
static void check_multi(const float *X, tl_pool *p) {
    static const tl_ggml_type mix[3][3] = {{TL_TYPE_Q8_0, TL_TYPE_Q5_0, TL_TYPE_Q4_K},
                                           {TL_TYPE_F16, TL_TYPE_F16, TL_TYPE_F32},
                                           {TL_TYPE_Q6_K, TL_TYPE_BF16, TL_TYPE_Q8_0}};
    for (int m = 0; m < 3; m++) {
        weights w[3];
        const tl_matrix *W[3];
        float *Y1[3], *Y2[3];
        for (int k = 0; k < 3; k++) {
            make_weights(&w[k], mix[m][k]);
            W[k] = &w[k].W;
            Y1[k] = malloc(sizeof(float) * MAX_TOK * MAX_OUT);
            Y2[k] = malloc(sizeof(float) * MAX_TOK * MAX_OUT);
            tl_matmul(p, W[k], X, 13, Y1[k]);
        }
        tl_matmul_multi(p, W, 3, X, 13, Y2);
        for (int k = 0; k < 3; k++) {
            CHECKF(!memcmp(Y1[k], Y2[k], sizeof(float) * 13 * (size_t)N_OUT), "%s multi %s differs from tl_matmul",
                   tl_kernels_isa(), tl_type_name(mix[m][k]));
            free(Y1[k]); free(Y2[k]); free(w[k].wdata); free(w[k].wf);
        }
    }
}

int main(void) {
    check_pool();
    check_act_quantize();

    static const tl_ggml_type types[] = {TL_TYPE_F32, TL_TYPE_F16, TL_TYPE_BF16, TL_TYPE_Q8_0,
                                         TL_TYPE_Q4_0, TL_TYPE_Q4_1, TL_TYPE_Q5_0, TL_TYPE_Q5_1,
                                         TL_TYPE_Q4_K, TL_TYPE_Q5_K, TL_TYPE_Q6_K, TL_TYPE_MXFP4};
    enum { NT = sizeof types / sizeof types[0] };
    float *X = malloc(sizeof(float) * MAX_TOK * MAX_IN);
    for (int i = 0; i < MAX_TOK * MAX_IN; i++) X[i] = rnd_uniform() * (i % 97 == 0 ? 8.f : 1.f);
    float *Y_scalar[NT];
    for (int k = 0; k < NT; k++) Y_scalar[k] = malloc(sizeof(float) * MAX_TOK * MAX_OUT);
    tl_pool *p1 = tl_pool_new(1), *p2 = tl_pool_new(2), *p3 = tl_pool_new(3);

    static const int shapes[4][2] = {{512, 37}, {96, 5}, {100, 6}, {2816, 6}};
    for (int sh = 0; sh < 4; sh++) {
        N_IN = shapes[sh][0];
        N_OUT = shapes[sh][1];
        for (int i = 0; i < NT; i++) check_unpack(types[i]);
        /* scalar first: (c) needs it; amx only where the CPU has AMX (never on
         * the machine it was written on: it says so when it skips) */
        static const char *isas[] = {"scalar", "avx2", "avx512", "amx"};
        for (int k = 0; k < 4; k++) {
            if (!tl_kernels_force_isa(isas[k])) {
                fprintf(stderr, "ISA %s not available here: skipped\n", isas[k]);
                continue;
            }
            for (int i = 0; i < NT; i++) {
                if (N_IN % tl_type_block_elems(types[i])) continue;
                check_type(types[i], X, p1, p2, p3, Y_scalar[i]);
                check_extremes(types[i], p2, 0);
                check_extremes(types[i], p2, 1);
            }
            check_q8_codes(p2);
            if (N_IN % 256 == 0) check_multi(X, p3);
        }
    }
    tl_pool_free(p1); tl_pool_free(p2); tl_pool_free(p3);
    for (int k = 0; k < NT; k++) free(Y_scalar[k]);
    free(X);
    return TEST_DONE();
}
