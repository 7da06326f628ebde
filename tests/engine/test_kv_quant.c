/* test_kv_quant.c: F16 and Q8_0 KV caches (tl_session_params.cache_type_k /
 * _v) on every fixture architecture, against the F32 cache.
 *
 * Per model, one prompt of N tokens (windows, chunks and several blocks
 * crossed) is evaluated with each cache type, and the logits of its last
 * LAST positions are compared with the F32 cache's: the largest |Δlogit|,
 * relative to the row's largest |logit|, must stay within the tolerance
 * derived below; the deviations are printed (a table on stderr). Under Q8_0
 * the project's invariant must hold bit for bit: logits from a cached prefix
 * equal those from an empty cache, and branches evaluated in one batch (2
 * threads) equal each branch alone (1 thread). F16 and Q8_0 caches cost less
 * than F32 per cached token, the cache's byte count (what the budget limits)
 * is exactly its tokens times that cost, and a Q8_0 cache under a 1 MB budget
 * stays within it while holding about 3.7x the tokens an F32 one does.
 *
 * The tolerance, from the formats' error bounds and the model's measured
 * response to a perturbation of known size:
 *  - F16: each element is off by at most half an ulp, |x| 2^-11, the rounding
 *    F16 weights already carry on every matmul; so F16 gets the fixtures' bar
 *    (fixtures/README.md): max |Δlogit| <= 2% of the row's max |logit| for
 *    models with float weights, 5% for quantized weights (whose integer
 *    kernels round activations to Q8_0: any perturbation flips some of those
 *    roundings, so even tiny KV errors show up at that rounding's size).
 *  - Q8_0: an element is off by at most d/2 + 127 |d - half(d)| <= 0.562 d,
 *    d = amax / 127 of its block of 32: relative to |x| this is unbounded (small
 *    elements beside a large one), so the bound is propagated statistically.
 *    To first order the logits move linearly with the KV perturbation, so the
 *    deviation of a cache type scales with its RMS rounding error; the F16
 *    cache is a probe of that response whose error is known exactly. The ratio
 *    of the two formats' RMS errors on Gaussian rows, rms_ratio() below
 *    (computed here in double from the formats' definitions, not with the
 *    engine's encoders), is about 26; real rows have heavier tails (larger
 *    amax for their spread), and the response is not quite linear, hence a
 *    margin of 2: TOL(q8_0) = 2 * rms_ratio * deviation(f16), and no less than
 *    0.1% (the agreement of a float64 forward pass with the references).
 *    With quantized weights the probe measures those activation roundings
 *    flipping, not a linear response, and bounds nothing useful (over 50%):
 *    there the tolerance is at most twice the fixtures' 5% bar, the cache's
 *    rounding adding to the activations' own of the same size.
 * A wrong scale or code shows up far beyond these (and test_attention checks
 * every decoded element against its bound exactly). */
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "tl_test.h"

enum { N = 80, LAST = 4, SHARED = 40, N_BRANCH = 3 };

#define TOL_F16_FLOAT 0.02 /* the fixtures' bars: float weights */
#define TOL_F16_QUANT 0.05 /* quantized weights */
#define Q8_MARGIN 2.0
#define Q8_FLOOR 1e-3

/* Weight types whose matmuls round activations to Q8_0 (the integer kernels). */
static bool quantized_weights(const tl_model *m) {
    const char *t = tl_model_type_name(m);
    return strcmp(t, "F32") && strcmp(t, "F16") && strcmp(t, "BF16");
}

/* RMS error of Q8_0 over that of F16 on N(0, 1) rows, from the formats'
 * definitions in double: Q8_0 codes round(x / d), d = amax / 127 per 32;
 * F16 x rounded to 11 significant bits (normal range down to 2^-14). */
static double rms_ratio(void) {
    uint64_t x = 0x2545F4914F6CDD1Dull;
    double e8 = 0, e16 = 0;
    for (int b = 0; b < 4096; b++) {
        double v[32], amax = 0;
        for (int j = 0; j < 32; j += 2) { /* Box-Muller */
            double u[2];
            for (int k = 0; k < 2; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                u[k] = ((double)(x >> 11) + 0.5) / 0x1p53;
            }
            double r = sqrt(-2 * log(u[0]));
            v[j] = r * cos(2 * M_PI * u[1]);
            v[j + 1] = r * sin(2 * M_PI * u[1]);
        }
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(v[j]));
        double d = amax / 127;
        for (int j = 0; j < 32; j++) {
            double q = round(v[j] / d) * d;
            int e = (int)floor(log2(fabs(v[j])));
            double ulp = ldexp(1, (e < -14 ? -14 : e) - 10), h = nearbyint(v[j] / ulp) * ulp;
            e8 += (v[j] - q) * (v[j] - q);
            e16 += (v[j] - h) * (v[j] - h);
        }
    }
    return sqrt(e8 / e16);
}

static const char *const MODELS[] = {
    "stories260k-f32.gguf",        "llama-spm-d64-f32.gguf",    "llama3-d64-bf16.gguf",
    "qwen2-d64-q8_0.gguf",         "qwen3-d64-f16.gguf",        "qwen3moe-d64-q8_0.gguf",
    "qwen35-d64-q8_0.gguf",        "gemma2-spm-d64-f32.gguf",   "gemma3-spm-d128-f16.gguf",
    "gemma4-spm-d128-bf16.gguf",   "phi3-d64-bf16.gguf",        "gpt-oss-gpt2-d64-mxfp4.gguf",
    "smollm3-gpt2-d64-f16.gguf",   "olmo2-gpt2-d64-q8_0.gguf",  "granite-gpt2-d64-bf16.gguf",
    "mistral3-spm-d256-q4_k_m.gguf",
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int32_t rand_id(int32_t n_vocab) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return 3 + (int32_t)(rng % (uint64_t)(n_vocab - 3));
}

static tl_session *new_session(const tl_model *m, tl_cache_type tk, tl_cache_type tv, int threads) {
    tl_session_params sp = {.n_threads = threads, .cache_type_k = tk, .cache_type_v = tv};
    tl_session *s = NULL;
    tl_error err = {0};
    CHECKF(tl_session_new(m, &sp, &s, &err) == TL_OK, "%s", err.msg);
    return s;
}

/* Logits of the last LAST positions of ids[0..n), from an empty cache of types tk / tv. */
static void last_logits(const tl_model *m, tl_cache_type tk, tl_cache_type tv, const int32_t *ids, size_t n,
                        float *out, double *token_bytes) {
    tl_session *s = new_session(m, tk, tv, 2);
    tl_error err = {0};
    CHECKF(tl_session_eval_last(s, ids, n, LAST, out, NULL, &err) == TL_OK, "%s", err.msg);
    *token_bytes = tl_session_cache_token_bytes(s);
    /* n is whole blocks: the cache holds n tokens' encoded rows (a hybrid
     * model's recurrent-state snapshots on top) */
    double held = (double)tl_session_cache_bytes(s), want = (double)n * *token_bytes;
    bool hybrid = !strcmp(tl_model_arch(m), "qwen35");
    CHECKF(hybrid ? held >= want : held == want, "%s K %s V %s: the cache holds %.0f bytes for %zu tokens of %.1f",
           tl_model_name(m), tl_cache_type_name(tk), tl_cache_type_name(tv), held, n, *token_bytes);
    tl_session_free(s);
}

/* Largest |a - b| over the LAST rows relative to the row's largest |a|; *abs_dev the largest |a - b|. */
static double deviation(const float *a, const float *b, size_t nv, double *abs_dev) {
    double worst = 0;
    *abs_dev = 0;
    for (int r = 0; r < LAST; r++) {
        double top = 0, d = 0;
        for (size_t i = 0; i < nv; i++) {
            top = fmax(top, fabs(a[r * nv + i]));
            d = fmax(d, fabs((double)a[r * nv + i] - b[r * nv + i]));
        }
        *abs_dev = fmax(*abs_dev, d);
        worst = fmax(worst, top > 0 ? d / top : d);
    }
    return worst;
}

/* Q8_0: a cached prefix gives the bits of an empty cache; branches in one
 * batch (2 threads) give the bits of each alone (1 thread). */
static void check_exact(const tl_model *m, const char *name, const int32_t *ids) {
    size_t nv = (size_t)tl_model_n_vocab(m);
    float *a = malloc(nv * sizeof *a), *b = malloc(nv * sizeof *b);
    tl_error err = {0};
    tl_session *s = new_session(m, TL_CACHE_Q8_0, TL_CACHE_Q8_0, 2);
    tl_session *alone = new_session(m, TL_CACHE_Q8_0, TL_CACHE_Q8_0, 1);
    CHECKF(tl_session_eval(s, ids, SHARED + 5, NULL, NULL, &err) == TL_OK, "%s", err.msg);
    tl_usage u = {0};
    CHECKF(tl_session_eval(s, ids, N, a, &u, &err) == TL_OK, "%s", err.msg);
    CHECKF(tl_session_eval(alone, ids, N, b, NULL, &err) == TL_OK, "%s", err.msg);
    CHECKF(u.cached_tokens > 0, "%s: nothing came from the cache", name);
    CHECKF(!memcmp(a, b, nv * sizeof *a), "%s q8_0: logits from a cached prefix differ from an empty cache", name);

    tl_session_flush(s);
    int32_t branch[N_BRANCH][SHARED + 9];
    tl_seq seqs[N_BRANCH];
    for (int k = 0; k < N_BRANCH; k++) {
        memcpy(branch[k], ids, SHARED * sizeof(int32_t));
        for (int i = SHARED; i < SHARED + 3 + 3 * k; i++)
            branch[k][i] = rand_id((int32_t)nv);
        seqs[k] = (tl_seq){.ids = branch[k], .n = (size_t)(SHARED + 3 + 3 * k), .logits = malloc(nv * sizeof(float))};
    }
    CHECKF(tl_session_eval_batch(s, seqs, N_BRANCH, NULL, &err) == TL_OK, "%s", err.msg);
    for (int k = 0; k < N_BRANCH; k++) {
        tl_session_flush(alone);
        CHECKF(tl_session_eval(alone, seqs[k].ids, seqs[k].n, b, NULL, &err) == TL_OK, "%s", err.msg);
        CHECKF(!memcmp(seqs[k].logits, b, nv * sizeof *b), "%s q8_0: branch %d in a batch differs from alone", name,
               k);
        free(seqs[k].logits);
    }
    tl_session_free(s);
    tl_session_free(alone);
    free(a);
    free(b);
}

/* Distinct 80-token prompts into a 1 MB cache of type t until it has
 * evicted: returns the tokens it holds then, checking it kept the budget. */
static size_t tokens_within_budget(const tl_model *m, tl_cache_type t) {
    tl_session_params sp = {.n_threads = 2, .cache_mb = 1, .cache_type_k = t, .cache_type_v = t};
    tl_session *s = NULL;
    tl_error err = {0};
    CHECKF(tl_session_new(m, &sp, &s, &err) == TL_OK, "%s", err.msg);
    int32_t ids[N];
    size_t held = 0;
    for (int p = 0; p < 200; p++) {
        for (int j = 0; j < N; j++)
            ids[j] = rand_id(tl_model_n_vocab(m));
        CHECKF(tl_session_eval(s, ids, N, NULL, NULL, &err) == TL_OK, "%s", err.msg);
        CHECKF(tl_session_cache_bytes(s) <= tl_session_cache_budget(s), "%s: %zu bytes over a budget of %zu",
               tl_cache_type_name(t), tl_session_cache_bytes(s), tl_session_cache_budget(s));
        held = (size_t)((double)tl_session_cache_bytes(s) / tl_session_cache_token_bytes(s));
    }
    tl_session_free(s);
    return held;
}

int main(void) {
    double ratio = rms_ratio();
    fprintf(stderr, "Q8_0 / F16 RMS rounding error on Gaussian rows: %.1f\n", ratio);
    fprintf(stderr, "| model | arch | B/token f32 / f16 / q8_0 | f16 max|dlogit| (rel, tol) | q8_0 max|dlogit| (rel, tol) "
                    "| q8_0 K only, V only (rel) |\n");
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "models/%s", MODELS[i]);
        tl_model *m = NULL;
        tl_error err = {0};
        CHECKF(tl_model_load(tl_fixture(rel), &m, &err) == TL_OK, "%s", err.msg);
        if (!m)
            continue;
        size_t nv = (size_t)tl_model_n_vocab(m);
        int32_t ids[N];
        for (int j = 0; j < N; j++)
            ids[j] = rand_id((int32_t)nv);
        float *ref = malloc(LAST * nv * sizeof *ref), *got = malloc(LAST * nv * sizeof *got);
        double bytes[3], dev[3] = {0}, abs_dev[3] = {0};
        last_logits(m, TL_CACHE_F32, TL_CACHE_F32, ids, N, ref, &bytes[0]);
        const tl_cache_type types[] = {TL_CACHE_F16, TL_CACHE_Q8_0};
        double tol[3] = {0, quantized_weights(m) ? TOL_F16_QUANT : TOL_F16_FLOAT, 0};
        for (int t = 0; t < 2; t++) {
            last_logits(m, types[t], types[t], ids, N, got, &bytes[t + 1]);
            dev[t + 1] = deviation(ref, got, nv, &abs_dev[t + 1]);
            if (t == 0)
                tol[2] = quantized_weights(m) ? fmin(Q8_MARGIN * ratio * dev[1], 2 * TOL_F16_QUANT)
                                              : fmax(Q8_MARGIN * ratio * dev[1], Q8_FLOOR);
            CHECKF(dev[t + 1] <= tol[t + 1],
                   "%s %s: max |dlogit| is %.3g%% of the row's max |logit| (tolerance %.3g%%)", MODELS[i],
                   tl_cache_type_name(types[t]), 100 * dev[t + 1], 100 * tol[t + 1]);
        }
        /* which of keys and values the model is more sensitive to (reported only) */
        double only[2], unused;
        for (int kv = 0; kv < 2; kv++) {
            last_logits(m, kv ? TL_CACHE_F32 : TL_CACHE_Q8_0, kv ? TL_CACHE_Q8_0 : TL_CACHE_F32, ids, N, got, &unused);
            only[kv] = deviation(ref, got, nv, &unused);
        }
        /* rows of 16 (one kv head of 16) pad to a 34-byte Q8_0 block: more than
         * F16's 32, still less than F32 */
        CHECKF(bytes[2] < bytes[0] && bytes[1] < bytes[0], "%s: bytes per token f32 %.0f, f16 %.0f, q8_0 %.0f",
               MODELS[i], bytes[0], bytes[1], bytes[2]);
        fprintf(stderr, "| %s | %s | %.0f / %.0f / %.0f | %.3g (%.3f%%, %.2f%%) | %.3g (%.3f%%, %.2f%%) | %.3f%%, %.3f%% |\n",
                MODELS[i], tl_model_arch(m), bytes[0], bytes[1], bytes[2], abs_dev[1], 100 * dev[1], 100 * tol[1],
                abs_dev[2], 100 * dev[2], 100 * tol[2], 100 * only[0], 100 * only[1]);
        check_exact(m, MODELS[i], ids);
        free(ref);
        free(got);
        tl_model_free(m);
    }
    /* the budget counts encoded bytes: the same 1 MB holds 1289 / 349 = 3.7x the tokens */
    tl_model *m = NULL;
    tl_error err = {0};
    CHECKF(tl_model_load(tl_fixture("models/stories260k-f32.gguf"), &m, &err) == TL_OK, "%s", err.msg);
    if (m) {
        size_t f32 = tokens_within_budget(m, TL_CACHE_F32), q8 = tokens_within_budget(m, TL_CACHE_Q8_0);
        fprintf(stderr, "stories260k, 1 MB cache: %zu tokens f32, %zu q8_0\n", f32, q8);
        CHECKF(q8 >= 3.5 * (double)f32, "1 MB holds %zu tokens in q8_0, %zu in f32", q8, f32);
        tl_model_free(m);
    }
    return TEST_DONE();
}
