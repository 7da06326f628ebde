/* test_local.c: the local-engine backend: candidate logprobs equal the
 * log-softmax of the full next-token logits, a batch of k requests equals k
 * single requests, a growing sequence is served from the prefix cache,
 * tokenize/detokenize round-trip, and bad ids are errors, not reads out of
 * bounds. */
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "tl_test.h"

static void test_model(const char *rel) {
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_error err = {0};
    if (tl_model_load(tl_fixture(rel), &m, &err) != TL_OK) {
        CHECKF(0, "%s: %s", rel, err.msg);
        return;
    }
    tl_session_params sp = {.n_threads = 1};
    CHECK(tl_backend_local_new(m, &sp, &b, &err) == TL_OK);
    if (!b) {
        tl_model_free(m);
        return;
    }
    CHECK(!strcmp(b->ops->kind, "local") && b->vocab == tl_model_vocab(m));
    CHECK(b->n_vocab == tl_model_n_vocab(m) && b->model_name && tl_backend_local_session(b) != NULL);

    /* tokenize / detokenize */
    const char *text = "The receipt says 324 pounds, hotel in London.";
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tl_backend_tokenize(b, text, strlen(text), false, false, &ids, &n, &err) == TL_OK && n > 5);
    tl_strbuf sb = TL_STRBUF_INIT;
    CHECK(tl_backend_detokenize(b, ids, n, &sb, &err) == TL_OK);
    CHECKF(!strcmp(tl_strbuf_cstr(&sb), text), "%s: round trip gave '%s'", rel, tl_strbuf_cstr(&sb));
    tl_strbuf_free(&sb);

    /* score == log-softmax of next_logits at the candidates */
    int32_t nv = b->n_vocab;
    float *logits = malloc((size_t)nv * sizeof *logits);
    int32_t cands[5] = {0, 1, nv / 3, nv / 2, nv - 1};
    double lp[5], lp_batch[3][5];
    tl_usage u = {0};
    CHECK(tl_backend_next_logits(b, ids, n, logits, &u, &err) == TL_OK);
    double max = -INFINITY, lse = 0;
    for (int32_t t = 0; t < nv; t++)
        max = logits[t] > max ? logits[t] : max;
    for (int32_t t = 0; t < nv; t++)
        lse += exp(logits[t] - max);
    lse = max + log(lse);
    tl_score_req one = {ids, n, cands, 5, lp};
    CHECK(tl_backend_score(b, &one, 1, &u, &err) == TL_OK);
    for (int i = 0; i < 5; i++)
        CHECKF(fabs(lp[i] - (logits[cands[i]] - lse)) < 1e-3, "%s: cand %d: %f vs %f", rel, i, lp[i],
               logits[cands[i]] - lse);

    /* a batch of three prefixes of one sequence == three single requests */
    tl_score_req reqs[3] = {{ids, n, cands, 5, lp_batch[0]}, {ids, n - 2, cands, 5, lp_batch[1]},
                            {ids, n - 4, cands, 5, lp_batch[2]}};
    tl_usage ub = {0};
    CHECK(tl_backend_score(b, reqs, 3, &ub, &err) == TL_OK);
    CHECK(ub.prompt_tokens == (int64_t)(3 * n - 6));
    for (int r = 0; r < 3; r++) {
        double single[5];
        tl_score_req s1 = {ids, n - 2 * (size_t)r, cands, 5, single};
        CHECK(tl_backend_score(b, &s1, 1, NULL, &err) == TL_OK);
        for (int i = 0; i < 5; i++)
            CHECKF(fabs(single[i] - lp_batch[r][i]) < 1e-4, "%s: batch %d cand %d", rel, r, i);
    }

    /* a growing sequence: the whole earlier prefix comes from the cache */
    tl_session_flush(tl_backend_local_session(b));
    tl_usage g1 = {0}, g2 = {0};
    tl_score_req first = {ids, n - 3, cands, 5, lp};
    tl_score_req grown = {ids, n, cands, 5, lp};
    CHECK(tl_backend_score(b, &first, 1, &g1, &err) == TL_OK);
    CHECK(tl_backend_score(b, &grown, 1, &g2, &err) == TL_OK);
    CHECKF(g1.cached_tokens == 0 && g2.cached_tokens >= (int64_t)n - 4 && g2.computed_tokens <= 4,
           "%s: cached %lld computed %lld", rel, (long long)g2.cached_tokens, (long long)g2.computed_tokens);

    /* bad input */
    int32_t bad[2] = {ids[0], nv};
    tl_score_req br = {bad, 2, cands, 5, lp};
    CHECK(tl_backend_score(b, &br, 1, NULL, &err) == TL_ERR_INVALID && strstr(err.msg, "ids[1]"));
    int32_t badc[1] = {-1};
    tl_score_req bc = {ids, n, badc, 1, lp};
    CHECK(tl_backend_score(b, &bc, 1, NULL, &err) == TL_ERR_INVALID && strstr(err.msg, "cands[0]"));
    tl_score_req empty = {ids, 0, cands, 5, lp};
    CHECK(tl_backend_score(b, &empty, 1, NULL, &err) == TL_ERR_INVALID);
    CHECK(tl_backend_next_logits(b, bad, 2, logits, NULL, &err) == TL_ERR_INVALID);
    CHECK(tl_backend_score(b, NULL, 0, NULL, &err) == TL_OK);

    free(logits);
    free(ids);
    tl_backend_free(b);
    tl_model_free(m);
}

int main(void) {
    test_model("models/stories260k-f32.gguf");
    test_model("models/qwen2-d64-q8_0.gguf");
    test_model("models/llama-spm-d64-f32.gguf");
    return TEST_DONE();
}
