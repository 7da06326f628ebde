/* test_attention.c: tl_attention on every ISA path the CPU has (portable =
 * TL_ISA scalar, the AVX2 path, and its 16-lane form on avx512) against a
 * double-precision reference computed here from the same cache rows, for
 * plain causal attention and with each of the parameters other families
 * use (sliding window, soft-cap, sinks), on two head shapes (group 3 with
 * head sizes not a multiple of 8; group 7 at 64/64, the Qwen2.5-0.5B shape).
 *
 * Two branches share a 150-token prefix (nine shared blocks, one copied
 * partial block) and have tails of 7 and 40 tokens: contexts cross the AVX2
 * path's 128-position chunks (its online softmax rescales what it summed
 * when a later chunk has a larger score) and batches span several of its
 * 16-token tiles. On each path the output of a token must be bit-identical
 * whether it runs in one batch with every other token of both branches,
 * alone, or with 1 or 3 threads; and the AVX-512 path (16-lane steps) must
 * give the AVX2 path's bits.
 *
 * Again with Q8_0 caches, and F16 keys beside F32 values: the reference then reads the decoded rows, which must lie
 * within the format's rounding of the rows written (Q8_0: |x - q d| <= d / 2
 * plus the half scale's own rounding, 127 d 2^-11; F16: half an ulp). */
#include <math.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/kv_cache.h"
#include "tl_test.h"

enum { PREFIX = 150, TAIL_A = 7, TAIL_B = 40, N_A = PREFIX + TAIL_A, N_B = PREFIX + TAIL_B, N_TOK = N_A + N_B };

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float urand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / (double)(1ull << 52) - 1.0);
}

typedef struct setup {
    tl_model m;
    tl_layer_weights layer; /* the one layer: its attention shape */
    kv_cache c;
    kv_seq sa, sb;
    fwd_token toks[N_TOK];
    float *q;     /* (N_TOK, n_head * dk) */
    float *sinks; /* (n_head) */
} setup;

/* The most |x - decoded x| may be for an element x of a row stored as t,
 * amax the largest |x| of its Q8_0 block (32 elements of the row). */
static double decode_bound(tl_cache_type t, double x, double amax) {
    if (t == TL_CACHE_F16) /* half an ulp; subnormal halves are 2^-24 apart */
        return fabs(x) * 0x1p-11 > 0x1p-25 ? fabs(x) * 0x1p-11 : 0x1p-25;
    if (t == TL_CACHE_Q8_0)
        return amax / 127 * (0.5 + 127 * 0x1p-11);
    return 0;
}

/* Checks the decoded head rows of row r against the n-element row x written there. */
static void check_decoded(tl_cache_type t, const float *x, int64_t n, int64_t dh, const float *got, int64_t dstride,
                          int32_t g, const char *what) {
    for (int64_t d = 0; d < dh; d++) {
        int64_t i = g * dh + d, b0 = i / 32 * 32;
        double amax = 0;
        for (int64_t j = b0; j < b0 + 32 && j < n; j++)
            amax = fabs(x[j]) > amax ? fabs(x[j]) : amax;
        double err = fabs(x[i] - got[d * dstride]);
        CHECKF(err <= decode_bound(t, x[i], amax), "%s %s element %lld: |%g - %g| = %g", tl_cache_type_name(t),
               what, (long long)i, x[i], got[d * dstride], err);
    }
}

/* Random K/V rows for positions [from, n) of seq s, stored and read back. */
static void fill_rows(setup *S, const kv_seq *s, int32_t from, int32_t n) {
    const tl_layer_weights *w = &S->layer;
    int64_t dk = w->head_dim_k, dv = w->head_dim_v, nk = (int64_t)w->n_head_kv * dk, nv = (int64_t)w->n_head_kv * dv;
    float *k = malloc(sizeof(float) * (size_t)(nk + nv)), *v = k + nk;
    size_t scratch = kv_k_scratch(dk) + TL_KV_BLOCK * (size_t)dv;
    float *kbuf = malloc(sizeof(float) * scratch), *vbuf = kbuf + kv_k_scratch(dk);
    float *alt = malloc(sizeof(float) * scratch);
    for (int32_t p = from; p < n; p++) {
        kv_node *nd = s->path[p / TL_KV_BLOCK];
        int32_t r = p % TL_KV_BLOCK;
        for (int64_t i = 0; i < nk; i++)
            k[i] = urand();
        for (int64_t i = 0; i < nv; i++)
            v[i] = urand();
        kv_store_row(&S->c, nd, 0, r, k, v);
        for (int32_t g = 0; g < w->n_head_kv; g++) {
            int64_t vs;
            const float *kt = kv_k_view(&S->c, nd, 0, g, kbuf), *vr = kv_v_view(&S->c, nd, 0, g, vbuf, &vs);
            check_decoded(S->c.type_k, k, nk, dk, kt + r, TL_KV_BLOCK, g, "key");
            check_decoded(S->c.type_v, v, nv, dv, vr + r * vs, 1, g, "value");
            if (S->c.simd_decode && kt == kbuf && vr == vbuf) { /* the portable decoders give the same values */
                S->c.simd_decode = false;
                kv_k_view(&S->c, nd, 0, g, alt);
                kv_v_view(&S->c, nd, 0, g, alt + kv_k_scratch(dk), &vs);
                S->c.simd_decode = true;
                CHECKF(!memcmp(kbuf, alt, sizeof(float) * TL_KV_BLOCK * (size_t)dk) &&
                           !memcmp(vbuf, alt + kv_k_scratch(dk), sizeof(float) * TL_KV_BLOCK * (size_t)dv),
                       "K %s V %s: AVX2 and portable decoders differ", tl_cache_type_name(S->c.type_k),
                       tl_cache_type_name(S->c.type_v));
            }
        }
    }
    free(k);
    free(kbuf);
    free(alt);
}

static void setup_init(setup *S, int32_t n_head, int32_t n_head_kv, int32_t dk, int32_t dv, tl_cache_type tk,
                       tl_cache_type tv) {
    memset(S, 0, sizeof *S);
    S->m.n_layer = 1;
    S->m.n_head = n_head;
    S->m.n_head_kv = n_head_kv;
    S->m.head_dim_k = dk;
    S->m.head_dim_v = dv;
    S->layer.n_head_kv = n_head_kv;
    S->layer.head_dim_k = dk;
    S->layer.head_dim_v = dv;
    S->m.layers = &S->layer;
    S->m.max_kv_k = (int64_t)n_head_kv * dk;
    S->m.max_kv_v = (int64_t)n_head_kv * dv;
    tl_error err = {0};
    CHECKF(kv_cache_init(&S->c, &S->m, 0, tk, tv, &err) == TL_OK, "%s", err.msg);
    int32_t ids_a[N_A], ids_b[N_B];
    for (int i = 0; i < N_B; i++) {
        if (i < N_A)
            ids_a[i] = i < PREFIX ? 10 + i : 1000 + i;
        ids_b[i] = i < PREFIX ? 10 + i : 2000 + i;
    }
    CHECKF(kv_seq_acquire(&S->c, ids_a, N_A, &S->sa, &err) == TL_OK, "%s", err.msg);
    fill_rows(S, &S->sa, 0, N_A);
    kv_seq_commit(&S->c, &S->sa);
    CHECKF(kv_seq_acquire(&S->c, ids_b, N_B, &S->sb, &err) == TL_OK, "%s", err.msg);
    CHECKF(S->sb.matched == PREFIX, "branch b matched %d of the %d shared tokens", S->sb.matched, PREFIX);
    fill_rows(S, &S->sb, S->sb.matched, N_B);
    kv_seq_commit(&S->c, &S->sb);
    for (int t = 0; t < N_TOK; t++)
        S->toks[t] = t < N_A ? (fwd_token){.id = 0, .pos = t, .seq = &S->sa, .out = -1}
                             : (fwd_token){.id = 0, .pos = t - N_A, .seq = &S->sb, .out = -1};
    size_t nq = (size_t)n_head * (size_t)dk;
    S->q = malloc(sizeof(float) * N_TOK * nq);
    for (size_t i = 0; i < N_TOK * nq; i++)
        S->q[i] = 2.0f * urand();
    S->sinks = malloc(sizeof(float) * (size_t)n_head);
    for (int h = 0; h < n_head; h++)
        S->sinks[h] = 2.0f * urand();
}

static void setup_free(setup *S) {
    kv_seq_free(&S->sa);
    kv_seq_free(&S->sb);
    kv_cache_free(&S->c);
    free(S->q);
    free(S->sinks);
}

/* The definition, in double, straight from the cache rows. */
static void reference(const setup *S, const tl_attn_params *p, int t, double *out) {
    const tl_model *m = &S->m;
    const fwd_token *tk = &S->toks[t];
    int64_t dk = m->head_dim_k, dv = m->head_dim_v;
    int32_t group = m->n_head / m->n_head_kv, n = tk->pos + 1;
    int32_t lo = p->window > 0 && n - p->window > 0 ? n - p->window : 0;
    double *s = malloc(sizeof(double) * (size_t)n);
    size_t scratch = kv_k_scratch(dk) + TL_KV_BLOCK * (size_t)dv;
    float *kbuf = malloc(sizeof(float) * scratch), *vbuf = kbuf + kv_k_scratch(dk);
    for (int32_t h = 0; h < m->n_head; h++) {
        int32_t g = h / group;
        const float *q = S->q + (size_t)t * m->n_head * dk + (size_t)h * dk;
        double top = p->sinks ? p->sinks[h] : -INFINITY;
        for (int32_t j = lo; j < n; j++) {
            const float *kt = kv_k_view(&S->c, tk->seq->path[j / TL_KV_BLOCK], 0, g, kbuf);
            double d = 0;
            for (int64_t i = 0; i < dk; i++)
                d += (double)q[i] * kt[i * TL_KV_BLOCK + j % TL_KV_BLOCK];
            d *= p->scale;
            if (p->softcap > 0)
                d = p->softcap * tanh(d / p->softcap);
            s[j] = d;
            top = d > top ? d : top;
        }
        double sum = p->sinks ? exp(p->sinks[h] - top) : 0.0;
        for (int32_t j = lo; j < n; j++)
            sum += (s[j] = exp(s[j] - top));
        for (int64_t i = 0; i < dv; i++)
            out[h * dv + i] = 0;
        for (int32_t j = lo; j < n; j++) {
            int64_t vs;
            const float *vr = kv_v_view(&S->c, tk->seq->path[j / TL_KV_BLOCK], 0, g, vbuf, &vs);
            for (int64_t i = 0; i < dv; i++)
                out[h * dv + i] += s[j] / sum * vr[(j % TL_KV_BLOCK) * vs + i];
        }
    }
    free(s);
    free(kbuf);
}

static void run(setup *S, const tl_attn_params *p, int threads, int t0, int n, float *out, int64_t stride) {
    tl_pool *pool = tl_pool_new(threads);
    tl_attn_scratch sc = {0};
    tl_error err = {0};
    CHECKF(tl_attention(pool, &S->m, &S->c, 0, p, S->toks + t0, n,
                        S->q + (size_t)t0 * S->m.n_head * S->m.head_dim_k, out, stride, &sc, &err) == TL_OK,
           "%s", err.msg);
    tl_attn_scratch_free(&sc);
    tl_pool_free(pool);
}

/* The AVX2 path's batch outputs of one shape, by check: the AVX-512 path (its
 * 16-lane score and output steps) must give the very same bits. */
enum { N_CHECKS = 6 };
static float *avx2_out[N_CHECKS];
static int check_i;
static char cache_desc[64]; /* "K q8_0 V f32 6x2 40/36": the setup being checked, for messages */

static void check_params(setup *S, const char *isa, const char *what, const tl_attn_params *p) {
    const tl_model *m = &S->m;
    int64_t no = (int64_t)m->n_head * m->head_dim_v;
    size_t bytes = sizeof(float) * N_TOK * (size_t)no;
    float *batch = malloc(bytes), *alone = malloc(bytes), *three = malloc(bytes);
    run(S, p, 1, 0, N_TOK, batch, no);
    run(S, p, 3, 0, N_TOK, three, no);
    for (int t = 0; t < N_TOK; t++)
        run(S, p, 2, t, 1, alone + (size_t)t * no, no);
    CHECKF(!memcmp(batch, three, bytes), "%s %s %s: 3 threads differ from 1", cache_desc, isa, what);
    int differ = 0;
    for (int t = 0; t < N_TOK; t++)
        differ += memcmp(batch + (size_t)t * no, alone + (size_t)t * no, sizeof(float) * (size_t)no) != 0;
    CHECKF(differ == 0, "%s %s %s: %d tokens differ between the batch and running alone", cache_desc, isa, what, differ);
    double *ref = malloc(sizeof(double) * (size_t)no), worst = 0;
    for (int t = 0; t < N_TOK; t++) {
        reference(S, p, t, ref);
        for (int64_t i = 0; i < no; i++) {
            double d = fabs(ref[i] - batch[(size_t)t * no + i]);
            worst = d > worst ? d : worst;
        }
    }
    /* values are in [-1, 1]; float rounding of ~200-term sums stays near 1e-7 */
    if (getenv("TL_TEST_VERBOSE")) fprintf(stderr, "%s %s %s: worst %g\n", cache_desc, isa, what, worst);
    CHECKF(worst < 2e-6, "%s %s %s: max |out - reference| = %g", cache_desc, isa, what, worst);
    int k = check_i++;
    if (k < N_CHECKS && !strcmp(isa, "avx2")) {
        free(avx2_out[k]);
        avx2_out[k] = malloc(bytes);
        memcpy(avx2_out[k], batch, bytes);
    } else if (k < N_CHECKS && !strcmp(isa, "avx512") && avx2_out[k]) {
        CHECKF(!memcmp(avx2_out[k], batch, bytes), "%s avx512 %s: not the avx2 path's bits", cache_desc, what);
    }
    free(ref);
    free(batch);
    free(alone);
    free(three);
}

static void check_shape(int32_t n_head, int32_t n_head_kv, int32_t dk, int32_t dv, tl_cache_type tk,
                        tl_cache_type tv) {
    setup S;
    snprintf(cache_desc, sizeof cache_desc, "K %s V %s %dx%d %d/%d", tl_cache_type_name(tk), tl_cache_type_name(tv),
             n_head, n_head_kv, dk, dv);
    setup_init(&S, n_head, n_head_kv, dk, dv, tk, tv);
    const char *isas[] = {"scalar", "avx2", "avx512"};
    for (int i = 0; i < 3; i++) {
        if (!tl_kernels_force_isa(isas[i])) {
            fprintf(stderr, "test_attention: this CPU has no %s path: skipped\n", isas[i]);
            continue;
        }
        check_i = 0;
        tl_attn_params p = tl_attn_default(&S.m, 0);
        check_params(&S, isas[i], "causal", &p);
        p.window = 20;
        check_params(&S, isas[i], "window 20", &p);
        p.window = 16;
        check_params(&S, isas[i], "window 16", &p);
        p.window = 0;
        p.softcap = 0.5f;
        check_params(&S, isas[i], "soft-cap 0.5", &p);
        p.softcap = 0;
        p.sinks = S.sinks;
        check_params(&S, isas[i], "sinks", &p);
        p.window = 9;
        p.softcap = 1.5f;
        check_params(&S, isas[i], "window 9, soft-cap 1.5, sinks", &p);
    }
    for (int k = 0; k < N_CHECKS; k++) {
        free(avx2_out[k]);
        avx2_out[k] = NULL;
    }
    setup_free(&S);
}

int main(void) {
    const char *best = tl_kernels_isa();
    char keep[16];
    snprintf(keep, sizeof keep, "%s", best);
    /* both shapes exact and with Q8_0 keys and values (the first shape's rows,
     * 80 and 72 wide, end with padded blocks and have heads straddling
     * blocks); then F16 keys beside F32 values (a decoded and an in-place
     * region in one node) */
    check_shape(6, 2, 40, 36, TL_CACHE_F32, TL_CACHE_F32);
    check_shape(14, 2, 64, 64, TL_CACHE_F32, TL_CACHE_F32);
    check_shape(6, 2, 40, 36, TL_CACHE_Q8_0, TL_CACHE_Q8_0);
    check_shape(14, 2, 64, 64, TL_CACHE_Q8_0, TL_CACHE_Q8_0);
    check_shape(6, 2, 40, 36, TL_CACHE_F16, TL_CACHE_F32);
    tl_kernels_force_isa(keep);
    return TEST_DONE();
}
