/* test_prefix_cache.c: the session's KV prefix cache and branch batching.
 *  - cached and uncached evaluations give bit-identical logits;
 *  - a sequential extension computes only the new tail (usage accounting);
 *  - K = 1, 16, 256 branches with unequal tails in one batch: each branch's
 *    logits equal those of context+tail run alone from an empty cache, the
 *    shared context is computed once, candidate log-probs match the logits;
 *  - branches diverging inside a block (copy on write) leave both cached;
 *  - memory stays within the budget over 1,000 different prompts, and a
 *    pinned prefix survives them all. */
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "tl_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int32_t rand_id(int32_t n_vocab) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return 3 + (int32_t)(rng % (uint64_t)(n_vocab - 3));
}

static tl_session *new_session(const tl_model *m, size_t cache_mb) {
    tl_session_params sp = {.n_threads = 2, .cache_mb = cache_mb};
    tl_session *s = NULL;
    tl_error err = {0};
    CHECKF(tl_session_new(m, &sp, &s, &err) == TL_OK, "%s", err.msg);
    return s;
}

/* Logits of ids[0..n) from an empty cache. */
static void fresh_logits(tl_session *s, const int32_t *ids, size_t n, float *out) {
    tl_error err = {0};
    tl_session_flush(s);
    CHECKF(tl_session_eval(s, ids, n, out, NULL, &err) == TL_OK, "%s", err.msg);
}

static void test_cached_vs_uncached(const tl_model *m) {
    size_t nv = (size_t)tl_model_n_vocab(m);
    int32_t ids[70];
    for (int i = 0; i < 70; i++)
        ids[i] = rand_id((int32_t)nv);
    float *a = malloc(nv * sizeof *a), *b = malloc(nv * sizeof *b);
    tl_session *s = new_session(m, 0);
    tl_error err = {0};
    fresh_logits(s, ids, 70, a);

    /* the same sequence again: only the last token runs */
    tl_usage u = {0};
    CHECK(tl_session_eval(s, ids, 70, b, &u, &err) == TL_OK);
    CHECK(!memcmp(a, b, nv * sizeof *a));
    CHECK(u.prompt_tokens == 70 && u.computed_tokens == 1 && u.cached_tokens == 69 && u.forward_passes == 1);

    /* sequential extension: 21, then 21+17 (mid-block), then +1 steps, then +31 */
    tl_session_flush(s);
    size_t steps[] = {21, 38, 39, 40, 41, 70};
    size_t prev = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        memset(&u, 0, sizeof u);
        CHECK(tl_session_eval(s, ids, steps[i], b, &u, &err) == TL_OK);
        CHECKF(u.computed_tokens == (int64_t)(steps[i] - prev), "step %zu computed %lld", steps[i],
               (long long)u.computed_tokens);
        CHECK(u.cached_tokens == (int64_t)prev);
        CHECK(tl_session_cached_prefix(s, ids, 70) == steps[i]);
        prev = steps[i];
    }
    CHECK(!memcmp(a, b, nv * sizeof *a)); /* grown piecewise == computed at once */

    /* a prefix's logits from the cache == from scratch (rewrite of a cached row) */
    float *c = malloc(nv * sizeof *c);
    CHECK(tl_session_eval(s, ids, 33, b, NULL, &err) == TL_OK);
    fresh_logits(s, ids, 33, c);
    CHECK(!memcmp(b, c, nv * sizeof *b));

    /* divergence inside a block: both branches cached, both exact */
    int32_t alt[70];
    memcpy(alt, ids, sizeof alt);
    alt[37] = ids[37] == 5 ? 6 : 5;
    tl_session_flush(s);
    CHECK(tl_session_eval(s, ids, 70, b, NULL, &err) == TL_OK);
    memset(&u, 0, sizeof u);
    CHECK(tl_session_eval(s, alt, 70, c, &u, &err) == TL_OK);
    /* a hybrid model's recurrent layers resume only where a state snapshot
     * exists (ends of earlier evaluations): none inside ids here, so alt runs
     * whole, and stays exact */
    bool recurrent = !strcmp(tl_model_arch(m), "qwen35");
    CHECKF(u.computed_tokens == (recurrent ? 70 : 70 - 37), "divergence computed %lld", (long long)u.computed_tokens);
    CHECK(tl_session_cached_prefix(s, ids, 70) == 70 && tl_session_cached_prefix(s, alt, 70) == 70);
    CHECK(!memcmp(a, b, nv * sizeof *a));
    float *d = malloc(nv * sizeof *d);
    fresh_logits(s, alt, 70, d);
    CHECK(!memcmp(c, d, nv * sizeof *c));
    free(a), free(b), free(c), free(d);
    tl_session_free(s);
}

/* K branches: a shared context of n_ctx tokens, then tails of 1..max_tail tokens. */
static void test_branches(const tl_model *m, size_t K, size_t n_ctx, size_t max_tail) {
    size_t nv = (size_t)tl_model_n_vocab(m), total = 0;
    int32_t *ctx = malloc(n_ctx * sizeof *ctx);
    for (size_t i = 0; i < n_ctx; i++)
        ctx[i] = rand_id((int32_t)nv);
    tl_seq *seqs = calloc(K, sizeof *seqs);
    int32_t cands[3] = {0, 7, 11};
    for (size_t k = 0; k < K; k++) {
        size_t tail = 1 + (k * 7 + 3) % max_tail;
        int32_t *ids = malloc((n_ctx + tail) * sizeof *ids);
        memcpy(ids, ctx, n_ctx * sizeof *ids);
        for (size_t i = 0; i < tail; i++)
            ids[n_ctx + i] = rand_id((int32_t)nv);
        ids[n_ctx] = 3 + (int32_t)k; /* tails diverge at once: nothing else is shared */
        seqs[k].ids = ids;
        seqs[k].n = n_ctx + tail;
        seqs[k].logits = malloc(nv * sizeof(float));
        seqs[k].cands = cands;
        seqs[k].n_cands = 3;
        seqs[k].cand_logprobs = malloc(3 * sizeof(double));
        total += tail;
    }
    tl_session *s = new_session(m, 0);
    tl_usage u = {0};
    tl_error err = {0};
    CHECKF(tl_session_eval_batch(s, seqs, K, &u, &err) == TL_OK, "%s", err.msg);
    CHECKF(u.computed_tokens == (int64_t)(n_ctx + total), "K=%zu computed %lld, want %zu", K,
           (long long)u.computed_tokens, n_ctx + total);
    int64_t prompt = 0;
    for (size_t k = 0; k < K; k++)
        prompt += (int64_t)seqs[k].n;
    CHECK(u.prompt_tokens == prompt && u.cached_tokens == prompt - u.computed_tokens);
    /* K > 1: one pass for the shared context, then the tails in passes of <= 512 tokens */
    int64_t want_passes = K > 1 ? 1 + ((int64_t)total + 511) / 512 : ((int64_t)(n_ctx + total) + 511) / 512;
    CHECKF(u.forward_passes == want_passes, "K=%zu passes %lld want %lld", K, (long long)u.forward_passes,
           (long long)want_passes);

    /* each branch alone, from an empty cache, in another session */
    tl_session *alone = new_session(m, 0);
    float *ref = malloc(nv * sizeof *ref);
    int mismatches = 0;
    /* under the sanitizers (slow) every 8th branch of a big batch */
    size_t every = getenv("TL_SANITIZER_RUN") && K > 16 ? 8 : 1;
    for (size_t k = 0; k < K; k += every) {
        fresh_logits(alone, seqs[k].ids, seqs[k].n, ref);
        if (memcmp(ref, seqs[k].logits, nv * sizeof *ref))
            mismatches++;
        double mx = -INFINITY, sum = 0;
        for (size_t i = 0; i < nv; i++)
            mx = fmax(mx, ref[i]);
        for (size_t i = 0; i < nv; i++)
            sum += exp(ref[i] - mx);
        for (int c = 0; c < 3; c++)
            CHECK(fabs(seqs[k].cand_logprobs[c] - (ref[cands[c]] - mx - log(sum))) < 1e-9);
    }
    CHECKF(mismatches == 0, "K=%zu: %d branches differ from running alone", K, mismatches);

    /* the same batch again: all cached, one token recomputed per branch, same bits */
    float *first = malloc(nv * sizeof *first);
    memcpy(first, seqs[K - 1].logits, nv * sizeof *first);
    memset(&u, 0, sizeof u);
    CHECK(tl_session_eval_batch(s, seqs, K, &u, &err) == TL_OK);
    CHECK(u.computed_tokens == (int64_t)K);
    CHECK(!memcmp(first, seqs[K - 1].logits, nv * sizeof *first));

    free(first);
    free(ref);
    for (size_t k = 0; k < K; k++) {
        free((void *)seqs[k].ids);
        free(seqs[k].logits);
        free(seqs[k].cand_logprobs);
    }
    free(seqs);
    free(ctx);
    tl_session_free(alone);
    tl_session_free(s);
}

/* Requests of different contexts merged into one batch, one with a nested
 * shared part: every shared prefix computed once, in one pass per level. */
static void test_merged_groups(const tl_model *m) {
    size_t nv = (size_t)tl_model_n_vocab(m);
    enum { NA = 40, NSUB = 20, NB = 33, K = 16 };
    int32_t a[NA + NSUB], b[NB];
    for (int i = 0; i < NA + NSUB; i++)
        a[i] = rand_id((int32_t)nv);
    for (int i = 0; i < NB; i++)
        b[i] = rand_id((int32_t)nv);
    b[0] = a[0] == 5 ? 6 : 5; /* nothing in common with a */
    a[NA] = 1000;             /* tails below start with 3..18: none continues into sub */
    tl_seq seqs[K];
    size_t tails = 0;
    for (int k = 0; k < K; k++) {
        /* k % 3 == 0: context b; k % 3 == 1: a; k % 3 == 2: a + sub */
        const int32_t *ctx = k % 3 == 0 ? b : a;
        size_t n_ctx = k % 3 == 0 ? NB : k % 3 == 1 ? NA : NA + NSUB, tail = 1 + (size_t)k % 5;
        int32_t *ids = malloc((n_ctx + tail) * sizeof *ids);
        memcpy(ids, ctx, n_ctx * sizeof *ids);
        for (size_t i = 0; i < tail; i++)
            ids[n_ctx + i] = rand_id((int32_t)nv);
        ids[n_ctx] = 3 + k;
        seqs[k] = (tl_seq){.ids = ids, .n = n_ctx + tail, .logits = malloc(nv * sizeof(float))};
        tails += tail;
    }
    tl_session *s = new_session(m, 0), *alone = new_session(m, 0);
    tl_usage u = {0};
    tl_error err = {0};
    CHECKF(tl_session_eval_batch(s, seqs, K, &u, &err) == TL_OK, "%s", err.msg);
    CHECKF(u.computed_tokens == (int64_t)(NA + NSUB + NB + tails), "merged groups computed %lld, want %zu",
           (long long)u.computed_tokens, NA + NSUB + NB + tails);
    CHECKF(u.forward_passes == 3, "merged groups: %lld passes", (long long)u.forward_passes);
    float *ref = malloc(nv * sizeof *ref);
    for (int k = 0; k < K; k++) {
        fresh_logits(alone, seqs[k].ids, seqs[k].n, ref);
        CHECKF(!memcmp(ref, seqs[k].logits, nv * sizeof *ref), "merged groups: branch %d differs", k);
        free((void *)seqs[k].ids);
        free(seqs[k].logits);
    }
    free(ref);
    tl_session_free(alone);
    tl_session_free(s);
}

static void test_budget_and_pins(const tl_model *m) {
    size_t nv = (size_t)tl_model_n_vocab(m);
    tl_session *s = new_session(m, 1); /* 1 MB */
    size_t budget = tl_session_cache_budget(s);
    CHECK(budget == (1u << 20));
    tl_error err = {0};
    int32_t pinned[40];
    for (int i = 0; i < 40; i++)
        pinned[i] = rand_id((int32_t)nv);
    CHECK(tl_session_pin(s, pinned, 40, NULL, &err) == TL_OK);
    size_t max_bytes = 0;
    int32_t ids[64];
    int n_prompts = getenv("TL_SANITIZER_RUN") ? 300 : 1000;
    for (int p = 0; p < n_prompts; p++) {
        size_t n = 8 + (size_t)p % 50;
        for (size_t i = 0; i < n; i++)
            ids[i] = rand_id((int32_t)nv);
        CHECK(tl_session_eval(s, ids, n, NULL, NULL, &err) == TL_OK);
        size_t bytes = tl_session_cache_bytes(s);
        if (bytes > max_bytes)
            max_bytes = bytes;
    }
    CHECKF(max_bytes <= budget, "cache reached %zu bytes, budget %zu", max_bytes, budget);
    CHECKF(max_bytes > budget / 2, "cache never filled (%zu bytes): the test does not exercise eviction", max_bytes);
    CHECK(tl_session_cached_prefix(s, pinned, 40) == 40);
    tl_usage u = {0};
    CHECK(tl_session_eval(s, pinned, 40, NULL, &u, &err) == TL_OK && u.computed_tokens == 0);
    tl_session_unpin(s, pinned, 40);
    for (int p = 0; p < 200; p++) {
        for (size_t i = 0; i < 50; i++)
            ids[i] = rand_id((int32_t)nv);
        CHECK(tl_session_eval(s, ids, 50, NULL, NULL, &err) == TL_OK);
    }
    CHECK(tl_session_cached_prefix(s, pinned, 40) < 40); /* unpinned: evicted in time */
    tl_session_free(s);
}

static void test_bad_calls(const tl_model *m) {
    tl_session *s = new_session(m, 0);
    tl_error err = {0};
    int32_t ids[3] = {1, tl_model_n_vocab(m), 2};
    float *logits = malloc((size_t)tl_model_n_vocab(m) * sizeof *logits);
    CHECK(tl_session_eval(s, ids, 3, logits, NULL, &err) == TL_ERR_INVALID && strstr(err.msg, "token 1"));
    CHECK(tl_session_eval(s, ids, 0, logits, NULL, &err) == TL_ERR_INVALID);
    ids[1] = 5;
    int32_t bad_cand = -1;
    double lp;
    tl_seq q = {.ids = ids, .n = 3, .cands = &bad_cand, .n_cands = 1, .cand_logprobs = &lp};
    CHECK(tl_session_eval_batch(s, &q, 1, NULL, &err) == TL_ERR_INVALID && strstr(err.msg, "candidate"));
    CHECK(tl_session_eval_last(s, ids, 3, 4, logits, NULL, &err) == TL_ERR_INVALID);
    size_t n_long = (size_t)tl_model_n_ctx_train(m) + 1;
    int32_t *longer = calloc(n_long, sizeof *longer);
    CHECK(tl_session_eval(s, longer, n_long, logits, NULL, &err) == TL_ERR_LIMIT && strstr(err.msg, "context"));
    tl_session_params sp = {.n_ctx = tl_model_n_ctx_train(m) + 1};
    tl_session *s2 = NULL;
    CHECK(tl_session_new(m, &sp, &s2, &err) == TL_ERR_LIMIT && strstr(err.msg, "context length"));
    free(longer);
    free(logits);
    tl_session_free(s);
}

int main(void) {
    tl_model *m = NULL;
    tl_error err = {0};
    CHECKF(tl_model_load(tl_fixture("models/llama-spm-d64-f32.gguf"), &m, &err) == TL_OK, "%s", err.msg);
    if (!m)
        return TEST_DONE();
    test_cached_vs_uncached(m);
    test_branches(m, 1, 37, 9);
    test_branches(m, 16, 45, 13);
    test_branches(m, 256, 29, 6);
    test_merged_groups(m);
    test_budget_and_pins(m);
    test_bad_calls(m);
    tl_model_free(m);

    /* qwen3 (head_dim != n_embd / n_head, q/k norms) branches too */
    CHECKF(tl_model_load(tl_fixture("models/qwen3-d64-f16.gguf"), &m, &err) == TL_OK, "%s", err.msg);
    if (m) {
        test_branches(m, 16, 50, 20);
        tl_model_free(m);
    }

    /* issue 14's dense families: sliding windows (8 and 16 here, shorter than
     * the 70-token prompts, so cached rows outside a window are skipped, not
     * reused wrongly), soft-caps, fused q/k/v and gate/up, NoPE layers,
     * multipliers, attention temperature */
    static const char *more[] = {"models/gemma2-spm-d64-f32.gguf",   "models/gemma3-spm-d128-f16.gguf",
                                 "models/gemma4-spm-d128-bf16.gguf",
                                 "models/phi3-d64-bf16.gguf",        "models/smollm3-gpt2-d64-f16.gguf",
                                 "models/olmo2-gpt2-d64-q8_0.gguf",  "models/granite-gpt2-d64-bf16.gguf",
                                 "models/mistral3-spm-d256-q4_k_m.gguf"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        CHECKF(tl_model_load(tl_fixture(more[i]), &m, &err) == TL_OK, "%s", err.msg);
        if (!m)
            continue;
        test_cached_vs_uncached(m);
        test_branches(m, 16, 45, 13);
        tl_model_free(m);
    }

    /* MoE (qwen3moe, gpt-oss): tokens of a batch are grouped by expert, so a
     * branch's experts run with other branches' tokens; its logits must still
     * equal its own. qwen35: recurrent layers carry a state, resumed only from
     * snapshots (the shared context's end for the branches, each sequence's
     * output position for the repeated batch), forked per branch. */
    static const char *fam[] = {"models/qwen3moe-d64-q8_0.gguf", "models/gpt-oss-gpt2-d64-mxfp4.gguf",
                                "models/qwen35-d64-q8_0.gguf"};
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        CHECKF(tl_model_load(tl_fixture(fam[i]), &m, &err) == TL_OK, "%s", err.msg);
        if (!m)
            continue;
        test_cached_vs_uncached(m);
        test_branches(m, 16, 41, 11);
        tl_model_free(m);
    }
    return TEST_DONE();
}
