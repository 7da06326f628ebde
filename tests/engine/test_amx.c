/* test_amx.c: the AMX path (TL_ISA=amx, opt-in) through the whole engine,
 * wherever the CPU has AMX; elsewhere it says so and passes without
 * checking anything (it was written on a machine without AMX).
 *   - logits of a reference prompt bit-identical with 1, 2 and 3 threads;
 *   - a cached prefix and a batch of branches give the bits of the same
 *     sequences evaluated alone from an empty cache;
 *   - every logit within the logits test's tolerance of the portable path
 *     (TL_ISA=scalar), as a fraction of the largest |logit|. */
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "tl_test.h"

static tl_session *session(const tl_model *m, int threads) {
    tl_session_params sp = {.n_threads = threads};
    tl_session *s = NULL;
    tl_error err = {0};
    CHECKF(tl_session_new(m, &sp, &s, &err) == TL_OK, "%s", err.msg);
    return s;
}

static void logits_of(const tl_model *m, int threads, const int32_t *ids, size_t n, float *out) {
    tl_session *s = session(m, threads);
    tl_error err = {0};
    CHECKF(tl_session_eval(s, ids, n, out, NULL, &err) == TL_OK, "%s", err.msg);
    tl_session_free(s);
}

static void check_model(const char *name, double tol_frac) {
    tl_model *m = NULL;
    tl_error err = {0};
    CHECKF(tl_model_load(tl_fixture(name), &m, &err) == TL_OK, "%s: %s", name, err.msg);
    if (!m)
        return;
    size_t nv = (size_t)tl_model_n_vocab(m);
    enum { N = 90, K = 5 };
    int32_t ids[N + 20];
    for (int i = 0; i < N + 20; i++)
        ids[i] = 3 + (int32_t)((i * 7919u + 13u) % (uint32_t)(nv - 3));
    float *ref = malloc(nv * sizeof *ref), *a = malloc(nv * sizeof *a);
    CHECK(tl_kernels_force_isa("scalar"));
    logits_of(m, 2, ids, N, ref);
    CHECK(tl_kernels_force_isa("amx"));
    logits_of(m, 1, ids, N, a);
    double mx = 0, worst = 0;
    for (size_t i = 0; i < nv; i++) {
        mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
        worst = fabs(ref[i] - a[i]) > worst ? fabs(ref[i] - a[i]) : worst;
    }
    fprintf(stderr, "%s: amx vs portable worst |dlogit|/max %.5f\n", name, worst / mx);
    CHECKF(worst <= tol_frac * mx, "%s: amx logits off the portable path by %g (max |logit| %g)", name, worst, mx);
    for (int threads = 2; threads <= 3; threads++) {
        float *b = malloc(nv * sizeof *b);
        logits_of(m, threads, ids, N, b);
        CHECKF(!memcmp(a, b, nv * sizeof *a), "%s: amx, %d threads differ from 1", name, threads);
        free(b);
    }
    /* branches: the N-token context plus tails of 1..K tokens, one batch, vs alone */
    tl_session *s = session(m, 2);
    tl_seq seqs[K];
    float *got = malloc(K * nv * sizeof *got), *alone = malloc(nv * sizeof *alone);
    int32_t *seq_ids[K];
    for (int k = 0; k < K; k++) {
        seq_ids[k] = malloc((N + 1 + (size_t)k) * sizeof(int32_t));
        memcpy(seq_ids[k], ids, N * sizeof(int32_t));
        for (int j = 0; j <= k; j++)
            seq_ids[k][N + j] = ids[N + 4 * k + j];
        seqs[k] = (tl_seq){.ids = seq_ids[k], .n = N + 1 + (size_t)k, .logits = got + (size_t)k * nv};
    }
    CHECKF(tl_session_eval_batch(s, seqs, K, NULL, &err) == TL_OK, "%s", err.msg);
    for (int k = 0; k < K; k++) {
        logits_of(m, 1, seq_ids[k], N + 1 + (size_t)k, alone);
        CHECKF(!memcmp(alone, got + (size_t)k * nv, nv * sizeof *alone), "%s: amx branch %d differs from alone", name,
               k);
        free(seq_ids[k]);
    }
    tl_session_free(s);
    free(got);
    free(alone);
    free(ref);
    free(a);
    tl_model_free(m);
}

int main(void) {
    if (!tl_kernels_force_isa("amx")) {
        fprintf(stderr, "test_amx: SKIPPED: this CPU (or kernel) has no AMX; nothing was checked\n");
        return TEST_DONE();
    }
    check_model("models/qwen2-d64-q8_0.gguf", 0.05);
    check_model("models/llama-spm-d256-q4_k_m.gguf", 0.05);
    check_model("models/qwen3-d64-f16.gguf", 0.02);
    check_model("models/llama3-d64-bf16.gguf", 0.02);
    return TEST_DONE();
}
