/* bench_kernels.c: matmul microbenchmark at the shapes of a Qwen2.5-0.5B-like
 * model (dim 896, 24 layers, 14/2 heads of 64, ff 4864, vocab 151936), so the
 * kernels can be measured before (and apart from) the engine. It times only
 * the weight matmuls of a forward pass: decode = one token through all
 * layers + the output projection; prefill = P tokens through all layers + the
 * output projection of the last token. Weights are real quantized random
 * data, one distinct copy per layer so decode streams from memory as it would.
 *
 *   bench_kernels [--type Q8_0] [--threads 2] [--prefill 512] [--decode 32] [--isa avx512] [--json]
 *
 * Built by bench/compare_llamacpp.sh (or by hand: cc -O2 -Isrc -Iinclude
 * bench/bench_kernels.c build/libtl_kernels.a build/libtl_gguf.a build/libtl_util.a -lm -lpthread). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typellm/gguf.h"
#include "kernels/kernels.h"

enum { DIM = 896, LAYERS = 24, KV_DIM = 128, FF = 4864, VOCAB = 151936 };

typedef struct {
    int64_t n_in, n_out;
    const char *name;
} shape;

static const shape layer_shapes[] = {
    {DIM, DIM, "attn_q"}, {DIM, KV_DIM, "attn_k"}, {DIM, KV_DIM, "attn_v"}, {DIM, DIM, "attn_output"},
    {DIM, FF, "ffn_gate"}, {DIM, FF, "ffn_up"}, {FF, DIM, "ffn_down"},
};
enum { N_SHAPES = sizeof layer_shapes / sizeof layer_shapes[0] };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process: on a shared, oversubscribed machine this
 * (with --threads 1) measures the kernels where wall time measures the queue. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float rnd(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 40) / 8388608.0 - 1.0) * 0.05f;
}

/* A matrix of the given shape: quantize one template row block, then repeat
 * it (quantizing 500M weights would dominate the run). */
static tl_matrix make_matrix(tl_ggml_type t, int64_t n_in, int64_t n_out) {
    size_t rb = tl_type_row_bytes(t, n_in);
    enum { TEMPLATE_ROWS = 64 };
    uint8_t *data = malloc(rb * (size_t)n_out);
    float *row = malloc(sizeof(float) * (size_t)n_in);
    for (int64_t o = 0; o < n_out; o++) {
        if (o < TEMPLATE_ROWS) {
            for (int64_t i = 0; i < n_in; i++) row[i] = rnd();
            tl_quantize_row(t, row, data + (size_t)o * rb, n_in);
        } else {
            memcpy(data + (size_t)o * rb, data + (size_t)(o % TEMPLATE_ROWS) * rb, rb);
        }
    }
    free(row);
    return (tl_matrix){t, n_in, n_out, rb, data};
}

/* Which type each tensor gets: a uniform type, or the Q4_K_M mix as
 * `typellm quantize` writes it for this model (rows of 896 are not a multiple
 * of 256, so those fall back to Q5_0; ffn_down/attn_v get Q6_K->Q8_0/Q6_K on
 * some layers; the tied output is Q6_K->Q8_0). */
static tl_ggml_type type_for(const char *mix, const char *name, int layer) {
    if (strcmp(mix, "Q4_K_M") != 0) {
        for (int t = 0; t < TL_TYPE_COUNT; t++)
            if (!strcmp(tl_type_name((tl_ggml_type)t), mix)) return (tl_ggml_type)t;
        return TL_TYPE_COUNT;
    }
    int more_bits = layer < LAYERS / 8 || layer >= 7 * LAYERS / 8 || (layer - LAYERS / 8) % 3 == 2;
    if (!strcmp(name, "output")) return TL_TYPE_Q8_0;
    if (!strcmp(name, "ffn_down")) return more_bits ? TL_TYPE_Q6_K : TL_TYPE_Q4_K;
    if (!strcmp(name, "attn_v")) return more_bits ? TL_TYPE_Q8_0 : TL_TYPE_Q5_0;
    return TL_TYPE_Q5_0;
}

int main(int argc, char **argv) {
    const char *type_name = "Q8_0", *isa = NULL;
    int threads = 2, prefill = 512, decode = 32, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--type") && i + 1 < argc) type_name = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prefill") && i + 1 < argc) prefill = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode") && i + 1 < argc) decode = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else {
            fprintf(stderr, "usage: bench_kernels [--type T|Q4_K_M] [--threads N] [--prefill P] [--decode D] [--isa I] [--json]\n");
            return 2;
        }
    }
    if (isa && !tl_kernels_force_isa(isa)) {
        fprintf(stderr, "bench_kernels: ISA %s not available\n", isa);
        return 1;
    }
    if (type_for(type_name, "attn_q", 0) == TL_TYPE_COUNT) {
        fprintf(stderr, "bench_kernels: unknown type %s\n", type_name);
        return 2;
    }
    tl_matrix W[LAYERS][N_SHAPES], out;
    double bytes = 0;
    for (int l = 0; l < LAYERS; l++)
        for (int s = 0; s < N_SHAPES; s++) {
            W[l][s] = make_matrix(type_for(type_name, layer_shapes[s].name, l), layer_shapes[s].n_in, layer_shapes[s].n_out);
            bytes += (double)W[l][s].row_bytes * W[l][s].n_out;
        }
    out = make_matrix(type_for(type_name, "output", 0), DIM, VOCAB);
    bytes += (double)out.row_bytes * out.n_out;

    tl_pool *pool = tl_pool_new(threads);
    int64_t max_tok = prefill > 1 ? prefill : 1;
    float *X = malloc(sizeof(float) * (size_t)max_tok * FF);
    float *Y = malloc(sizeof(float) * (size_t)max_tok * FF);
    float *logits = malloc(sizeof(float) * VOCAB);
    for (int64_t i = 0; i < max_tok * FF; i++) X[i] = rnd() * 20;

    /* decode: one token through every matrix, repeated */
    double best_decode = INFINITY, best_decode_cpu = INFINITY;
    for (int rep = 0; rep < decode + 2; rep++) {
        double t0 = now_s(), c0 = cpu_s();
        for (int l = 0; l < LAYERS; l++)
            for (int s = 0; s < N_SHAPES; s++) tl_matmul(pool, &W[l][s], X, 1, Y);
        tl_matmul(pool, &out, X, 1, logits);
        double dt = now_s() - t0, dc = cpu_s() - c0;
        if (rep >= 2 && dt < best_decode) best_decode = dt; /* the first two warm up */
        if (rep >= 2 && dc < best_decode_cpu) best_decode_cpu = dc;
    }
    double t_prefill = 0, c_prefill = 0;
    if (prefill > 0) {
        double t0 = now_s(), c0 = cpu_s();
        for (int l = 0; l < LAYERS; l++)
            for (int s = 0; s < N_SHAPES; s++) tl_matmul(pool, &W[l][s], X, prefill, Y);
        tl_matmul(pool, &out, X, 1, logits);
        t_prefill = now_s() - t0;
        c_prefill = cpu_s() - c0;
    }
    double dec_tps = 1.0 / best_decode, pre_tps = prefill > 0 ? prefill / t_prefill : 0;
    if (json) {
        printf("{\"type\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"weights_mb\":%.1f,\"decode_tok_s\":%.2f,"
               "\"prefill\":%d,\"prefill_tok_s\":%.2f,\"decode_cpu_s\":%.5f,\"prefill_cpu_s\":%.4f}\n",
               type_name, tl_kernels_isa(), threads, bytes / 1e6, dec_tps, prefill, pre_tps, best_decode_cpu, c_prefill);
    } else {
        printf("%-7s isa=%-6s threads=%d weights=%.0f MB  decode %.2f tok/s (%.1f GB/s; cpu %.1f ms/tok)  "
               "prefill(%d) %.1f tok/s (cpu %.2f ms/tok)\n",
               type_name, tl_kernels_isa(), threads, bytes / 1e6, dec_tps, bytes / best_decode / 1e9,
               best_decode_cpu * 1e3, prefill, pre_tps, prefill > 0 ? c_prefill * 1e3 / prefill : 0);
    }
    tl_pool_free(pool);
    return 0;
}
