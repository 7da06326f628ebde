/* bench_attention.c: what a quantized KV cache costs attention. One layer of
 * the Qwen2.5-0.5B shape (14 query heads, 2 KV heads of 64) over a cached
 * context of N tokens of random rows, for each cache type (F32, F16, Q8_0):
 *   decode:  one query token at the end of the context (every block read,
 *            and for F16 / Q8_0 decoded, for 7 query rows);
 *   prefill: a tile of 64 query tokens at the end of the context.
 * Prints microseconds per call (best of 5 rounds) and the ratio to F32.
 * usage: bench_attention [--ctx N] [--threads N]   (defaults 2048, 1)
 * Build: cmake --build BUILD --target bench_attention (defined in tests/engine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/kv_cache.h"

enum { N_HEAD = 14, N_HEAD_KV = 2, HEAD_DIM = 64, TILE_TOKENS = 64, ROUNDS = 5 };

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float urand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / (double)(1ull << 52) - 1.0);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Best time of ROUNDS rounds of reps calls over toks[0..n). */
static double time_calls(tl_pool *pool, const tl_model *m, const kv_cache *c, const fwd_token *toks, int32_t n,
                         const float *q, float *out, int reps) {
    tl_attn_scratch sc = {0};
    tl_attn_params p = tl_attn_default(m, 0);
    tl_error err = {0};
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++)
            if (tl_attention(pool, m, c, 0, &p, toks, n, q, out, N_HEAD * HEAD_DIM, &sc, &err) != TL_OK) {
                fprintf(stderr, "bench_attention: %s\n", err.msg);
                exit(1);
            }
        double t = (now_s() - t0) / reps;
        best = t < best ? t : best;
    }
    tl_attn_scratch_free(&sc);
    return best;
}

int main(int argc, char **argv) {
    int32_t n_ctx = 2048;
    int threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ctx"))
            n_ctx = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
    }
    if (n_ctx < TILE_TOKENS || threads < 1) {
        fprintf(stderr, "usage: bench_attention [--ctx N >= %d] [--threads N >= 1]\n", TILE_TOKENS);
        return 2;
    }
    tl_layer_weights layer = {.n_head_kv = N_HEAD_KV, .head_dim_k = HEAD_DIM, .head_dim_v = HEAD_DIM};
    tl_model m = {.n_layer = 1, .n_head = N_HEAD, .n_head_kv = N_HEAD_KV, .head_dim_k = HEAD_DIM,
                  .head_dim_v = HEAD_DIM, .layers = &layer, .max_kv_k = N_HEAD_KV * HEAD_DIM,
                  .max_kv_v = N_HEAD_KV * HEAD_DIM};
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n_ctx);
    float *q = malloc(sizeof(float) * TILE_TOKENS * N_HEAD * HEAD_DIM);
    float *out = malloc(sizeof(float) * TILE_TOKENS * N_HEAD * HEAD_DIM);
    float k[N_HEAD_KV * HEAD_DIM], v[N_HEAD_KV * HEAD_DIM];
    for (int32_t i = 0; i < n_ctx; i++)
        ids[i] = 10 + i;
    for (int i = 0; i < TILE_TOKENS * N_HEAD * HEAD_DIM; i++)
        q[i] = urand();
    tl_pool *pool = tl_pool_new(threads);
    const tl_cache_type types[] = {TL_CACHE_F32, TL_CACHE_F16, TL_CACHE_Q8_0};
    double base_decode = 0, base_prefill = 0;
    printf("attention, %d cached tokens, %d thread(s), isa %s\n", n_ctx, threads, tl_kernels_isa());
    for (int ti = 0; ti < 3; ti++) {
        kv_cache c;
        kv_seq s = {0};
        tl_error err = {0};
        if (kv_cache_init(&c, &m, 0, types[ti], types[ti], &err) != TL_OK ||
            kv_seq_acquire(&c, ids, n_ctx, &s, &err) != TL_OK) {
            fprintf(stderr, "bench_attention: %s\n", err.msg);
            return 1;
        }
        for (int32_t p = 0; p < n_ctx; p++) {
            for (int i = 0; i < N_HEAD_KV * HEAD_DIM; i++)
                k[i] = urand(), v[i] = urand();
            kv_store_row(&c, s.path[p / TL_KV_BLOCK], 0, p % TL_KV_BLOCK, k, v);
        }
        kv_seq_commit(&c, &s);
        fwd_token toks[TILE_TOKENS];
        for (int t = 0; t < TILE_TOKENS; t++)
            toks[t] = (fwd_token){.pos = n_ctx - TILE_TOKENS + t, .seq = &s, .out = -1};
        double decode = time_calls(pool, &m, &c, toks + TILE_TOKENS - 1, 1, q, out, 50);
        double prefill = time_calls(pool, &m, &c, toks, TILE_TOKENS, q, out, 5);
        if (ti == 0)
            base_decode = decode, base_prefill = prefill;
        printf("  %-5s decode %8.1f us (%.2fx)   prefill tile of %d %8.1f us (%.2fx)\n", tl_cache_type_name(types[ti]),
               decode * 1e6, decode / base_decode, TILE_TOKENS, prefill * 1e6, prefill / base_prefill);
        kv_seq_free(&s);
        kv_cache_free(&c);
    }
    tl_pool_free(pool);
    free(ids);
    free(q);
    free(out);
    return 0;
}
