/* test_two_token.h: checks shared by the two-token label tests
 * (test_two_token.c, test_two_token_slow.c; header-only).
 *
 * check_pair_field recomputes a decided field's distribution independently
 * from the engine's full logits: the first-token logits at the traced answer
 * position and, for every first token the field uses, the second-token logits
 * after appending it; each value's log-probability is the sum of the two
 * log-softmaxes (in double), and the distribution is their softmax over the
 * declared values only. */
#ifndef TL_TESTS_DECIDE_TWO_TOKEN_H
#define TL_TESTS_DECIDE_TWO_TOKEN_H

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "tl_test.h"

/* log-softmax of logits[id] over the vocabulary, in double. */
static inline double log_softmax_at(const float *logits, int32_t n_vocab, int32_t id) {
    double max = -INFINITY, sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (logits[i] > max)
            max = logits[i];
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - max);
    return (double)logits[id] - max - log(sum);
}

/* A string enum of n values "v0", "v1", ... as a JSON schema property. */
static inline json_t *enum_property(size_t n, const char *question) {
    json_t *en = json_array();
    for (size_t i = 0; i < n; i++) {
        char v[32];
        snprintf(v, sizeof v, "v%zu", i);
        json_array_append_new(en, json_string(v));
    }
    return json_pack("{s:s, s:o, s:s}", "type", "string", "enum", en, "question", question);
}

/* Field result fr (decided at temperature 0 with trace) of a field with
 * n_values declared values and two-token labels: its probabilities equal the
 * softmax of the label-sequence logprobs from full logits within tol, sum to
 * 1 within 1e-9, and the value is the argmax. Returns the max |difference|;
 * *firsts (optional) gets the number of distinct first tokens. */
static inline double check_pair_field(tl_backend *b, const json_t *fr, size_t n_values, double tol, size_t *firsts) {
    const json_t *cands = json_object_get(fr, "candidates");
    const json_t *trace = json_object_get(fr, "trace");
    const json_t *jids = json_object_get(trace, "ids");
    const json_t *probs = json_object_get(fr, "probabilities");
    CHECKF(json_array_size(cands) == n_values && json_array_size(jids) > 0, "%zu candidates, %zu ids",
           json_array_size(cands), json_array_size(jids));
    if (json_array_size(cands) != n_values || !json_array_size(jids))
        return INFINITY;
    size_t n = json_array_size(jids);
    int32_t *ids = malloc((n + 1) * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(jids, i));
    int32_t nv = tl_backend_n_vocab(b);
    float *logits = malloc((size_t)nv * sizeof *logits);
    double *lp = malloc(n_values * sizeof *lp);
    tl_error err = {0};
    CHECKF(tl_backend_next_logits(b, ids, n, logits, NULL, &err) == TL_OK, "%s", err.msg);
    for (size_t i = 0; i < n_values; i++) {
        const json_t *tk = json_object_get(json_array_get(cands, i), "tokens");
        int32_t a = (int32_t)json_integer_value(json_array_get(tk, 0));
        lp[i] = log_softmax_at(logits, nv, a);
    }
    /* second tokens: one next-logits call per distinct first token (pairs of
     * one first token are contiguous in the candidates) */
    float *second = malloc((size_t)nv * sizeof *second);
    int32_t cur = -1;
    size_t n_firsts = 0;
    for (size_t i = 0; i < n_values; i++) {
        const json_t *c = json_array_get(cands, i);
        const json_t *tk = json_object_get(c, "tokens");
        CHECKF(json_array_size(tk) == 2, "candidate %zu has no token pair", i);
        int32_t a = (int32_t)json_integer_value(json_array_get(tk, 0));
        int32_t s = (int32_t)json_integer_value(json_array_get(tk, 1));
        CHECK(json_integer_value(json_object_get(c, "token")) == a);
        if (a != cur) {
            cur = a;
            n_firsts++;
            ids[n] = a;
            CHECKF(tl_backend_next_logits(b, ids, n + 1, second, NULL, &err) == TL_OK, "%s", err.msg);
        }
        lp[i] += log_softmax_at(second, nv, s);
        /* the reported parts and their sum agree with the recomputation */
        double got = json_real_value(json_object_get(c, "logprob"));
        CHECKF(fabs(got - lp[i]) < 1e-4, "candidate %zu: logprob %.9f, full logits give %.9f", i, got, lp[i]);
        const json_t *parts = json_object_get(c, "logprobs");
        CHECK(fabs(json_real_value(json_array_get(parts, 0)) + json_real_value(json_array_get(parts, 1)) - got) <
              1e-12);
    }
    double max = -INFINITY, sum = 0, psum = 0, worst = 0;
    size_t best = 0;
    for (size_t i = 0; i < n_values; i++)
        if (lp[i] > max)
            max = lp[i], best = i;
    for (size_t i = 0; i < n_values; i++)
        sum += exp(lp[i] - max);
    for (size_t i = 0; i < n_values; i++) {
        char key[32];
        snprintf(key, sizeof key, "v%zu", i);
        double p = json_real_value(json_object_get(probs, key)), want = exp(lp[i] - max) / sum;
        psum += p;
        if (fabs(p - want) > worst)
            worst = fabs(p - want);
    }
    CHECKF(worst <= tol, "probabilities differ from the softmax of the full logits by %.3g", worst);
    CHECKF(fabs(psum - 1) < 1e-9, "probabilities sum to %.15f", psum);
    char want_value[32];
    snprintf(want_value, sizeof want_value, "v%zu", best);
    CHECKF(!strcmp(json_string_value(json_object_get(fr, "value")), want_value), "value %s, argmax %s",
           json_string_value(json_object_get(fr, "value")), want_value);
    if (firsts)
        *firsts = n_firsts;
    free(second);
    free(lp);
    free(logits);
    free(ids);
    return worst;
}

#endif
