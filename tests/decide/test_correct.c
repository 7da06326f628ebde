/* test_correct.c: corrected distributions (x-debias, x-calibrate; correct.h).
 *   - the estimators on numbers: on logprobs made as log prior(position) +
 *     log content(value), PriDe recovers both, and the average over all n!
 *     orders of a position-free model is the content itself;
 *   - exactness, on two fixture models and both styles: every branch the
 *     trace names (each order, each calibration branch) is checked against
 *     the text it must be (the default rendering with the choices line
 *     re-labelled, or the context replaced by the content-free input), its
 *     label logprobs are recomputed from the engine's full logits, and the
 *     corrected distribution is recomputed from them by the code here, to
 *     within 1e-9; "full" on a 4-value field has the 24 orders a separate
 *     enumeration (Heap's algorithm) gives; the raw distribution is the
 *     uncorrected decision's, bit for bit, on the same token ids;
 *   - invariance: with "full", random schemas give the same distribution
 *     (within 1e-9) under random reorderings of their enum;
 *   - the calibration branch is computed once: a second context reuses it
 *     from the prefix cache (one recomputed output token);
 *   - errors name the JSON path. */
#include <math.h>

#include "decide/correct.h"
#include "decide/decide.h"
#include "decide_fixture.h"
#include "util/strbuf.h"

static const char *CONTEXT = "The payment service is down for every customer since 09:12; the status page is red.";

/* ---- the estimators on numbers -------------------------------------------- */

static void test_estimators(void) {
    const size_t n = 4;
    const double prior[4] = {0.5, 0.25, 0.15, 0.1}, content[4] = {0.1, 0.6, 0.2, 0.1};
    size_t *orders = NULL, k = 0;
    tl_error err = {0};
    CHECK(tl_debias_orders(TL_DEBIAS_PERMUTE, n, 0, &orders, &k, &err) == TL_OK && k == 4);
    double lp[4 * 4], out[4], est[4];
    for (size_t o = 0; o < k; o++)
        for (size_t p = 0; p < n; p++)
            lp[o * n + p] = log(prior[p]) + log(content[orders[o * n + p]]) - 3.0;
    tl_correct_combine(TL_DEBIAS_PRIDE, n, k, orders, lp, NULL, false, est, out);
    for (size_t i = 0; i < n; i++) {
        CHECKF(fabs(est[i] - prior[i]) < 1e-12, "prior[%zu] %.15f", i, est[i]);
        CHECKF(fabs(out[i] - content[i]) < 1e-12, "content[%zu] %.15f", i, out[i]);
    }
    free(orders);
    CHECK(tl_debias_orders(TL_DEBIAS_FULL, n, 0, &orders, &k, &err) == TL_OK && k == 24);
    double lp24[24 * 4];
    for (size_t o = 0; o < k; o++)
        for (size_t p = 0; p < n; p++)
            lp24[o * n + p] = log(content[orders[o * n + p]]) + 1.5;
    tl_correct_combine(TL_DEBIAS_FULL, n, k, orders, lp24, NULL, false, NULL, out);
    for (size_t i = 0; i < n; i++)
        CHECKF(fabs(out[i] - content[i]) < 1e-12, "full[%zu] %.15f", i, out[i]);
    free(orders);
    CHECK(tl_debias_orders(TL_DEBIAS_FULL, 7, 0, &orders, &k, &err) == TL_ERR_INVALID);
    CHECK(tl_debias_orders(TL_DEBIAS_PERMUTE, 3, 4, &orders, &k, &err) == TL_ERR_INVALID);
    /* 11 values, 8 cyclic orders: distinct shifts */
    CHECK(tl_debias_orders(TL_DEBIAS_PERMUTE, 11, 0, &orders, &k, &err) == TL_OK && k == 8);
    for (size_t a = 0; a < k; a++)
        for (size_t b = a + 1; b < k; b++)
            CHECK(orders[a * 11] != orders[b * 11]);
    free(orders);
}

/* ---- independent recomputation ------------------------------------------------ */

/* The engine's full-vocabulary log-softmax after ids, at the n label tokens. */
static bool engine_logprobs(fixture *fx, const json_t *ids, const int32_t *toks, size_t n, double *out) {
    size_t len = json_array_size(ids);
    int32_t *v = malloc((len ? len : 1) * sizeof *v);
    float *logits = malloc((size_t)fx->b->n_vocab * sizeof *logits);
    for (size_t i = 0; i < len; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    tl_usage u = {0};
    tl_error err = {0};
    bool ok = tl_backend_next_logits(fx->b, v, len, logits, &u, &err) == TL_OK;
    if (ok) {
        double max = -INFINITY, sum = 0;
        for (int32_t t = 0; t < fx->b->n_vocab; t++)
            max = logits[t] > max ? logits[t] : max;
        for (int32_t t = 0; t < fx->b->n_vocab; t++)
            sum += exp((double)logits[t] - max);
        for (size_t i = 0; i < n; i++)
            out[i] = (double)logits[toks[i]] - max - log(sum);
    }
    free(v);
    free(logits);
    return ok;
}

static void dist(const double *lp, size_t n, double *q) {
    double m = lp[0], s = 0;
    for (size_t i = 1; i < n; i++)
        m = lp[i] > m ? lp[i] : m;
    for (size_t i = 0; i < n; i++)
        s += q[i] = exp(lp[i] - m);
    for (size_t i = 0; i < n; i++)
        q[i] /= s;
}

static char *detok(fixture *fx, const json_t *ids) {
    size_t len = json_array_size(ids);
    int32_t *v = malloc((len ? len : 1) * sizeof *v);
    for (size_t i = 0; i < len; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_error err = {0};
    tl_backend_detokenize(fx->b, v, len, &sb, &err);
    free(v);
    return tl_strbuf_detach(&sb);
}

/* s with the first `from` replaced by `to` (NULL when absent). */
static char *replace(const char *s, const char *from, const char *to) {
    const char *at = strstr(s, from);
    if (!at)
        return NULL;
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_strbuf_append(&sb, s, (size_t)(at - s));
    tl_strbuf_puts(&sb, to);
    tl_strbuf_puts(&sb, at + strlen(from));
    return tl_strbuf_detach(&sb);
}

#define NV 4
static const char *VALUES[NV] = {"low", "medium", "high", "critical"};
static const char *DESCS[NV] = {NULL, "degraded for some", NULL, "down for everyone"};

/* The choices (and descriptions) lines as the rendering writes them for order ord (chat: with ",\n  " between). */
static void choices_text(const char *const *labels, const size_t *ord, bool chat, tl_strbuf *out) {
    tl_strbuf_puts(out, "choices={");
    for (size_t p = 0; p < NV; p++)
        tl_strbuf_printf(out, "%s\"%s\":\"%s\"", p ? "," : "", labels[p], VALUES[ord[p]]);
    tl_strbuf_printf(out, "}%sdescriptions={", chat ? ",\n  " : "\n");
    bool first = true;
    for (size_t p = 0; p < NV; p++)
        if (DESCS[ord[p]]) {
            tl_strbuf_printf(out, "%s\"%s\":\"%s\"", first ? "" : ",", labels[p], DESCS[ord[p]]);
            first = false;
        }
    tl_strbuf_putc(out, '}');
}

/* Every permutation of 0..3 by Heap's algorithm (an enumeration unlike correct.c's). */
static size_t heap_perms(size_t perms[24][NV]) {
    size_t a[NV] = {0, 1, 2, 3}, c[NV] = {0}, n = 0, i = 0;
    memcpy(perms[n++], a, sizeof a);
    while (i < NV) {
        if (c[i] < i) {
            size_t j = i % 2 ? c[i] : 0, t = a[j];
            a[j] = a[i], a[i] = t;
            memcpy(perms[n++], a, sizeof a);
            c[i]++, i = 0;
        } else {
            c[i++] = 0;
        }
    }
    return n;
}

static size_t n_exact;
static double worst;

static json_t *decide(fixture *fx, const char *schema_text, const char *style, const char *context, bool trace) {
    json_t *schema = fixture_json(schema_text);
    tl_decide_opts o = {.mode = "batch", .style = style, .trace = trace};
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_json(fx->b, context, strlen(context), schema, &o, &res, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    json_decref(schema);
    return res;
}

static char *schema_with(const char *corr) {
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_strbuf_printf(&sb,
                     "{\"properties\":{\"severity\":{\"enum\":[\"low\",\"medium\",\"high\",\"critical\"],"
                     "\"question\":\"How severe is the incident?\",\"x-descriptions\":{\"medium\":\"%s\","
                     "\"critical\":\"%s\"}%s%s},\"customer_facing\":{\"type\":\"boolean\"}}}",
                     DESCS[1], DESCS[3], corr ? "," : "", corr ? corr : "");
    return tl_strbuf_detach(&sb);
}

/* One corrected decision checked against the engine (see the top). */
static void check_exact(fixture *fx, const char *style, const char *corr, tl_debias dm, tl_calibrate cm,
                        const char *cf_input, const double *given_prior, size_t want_orders) {
    char *plain_s = schema_with(NULL), *corr_s = schema_with(corr);
    json_t *plain = decide(fx, plain_s, style, CONTEXT, true), *res = decide(fx, corr_s, style, CONTEXT, true);
    free(plain_s), free(corr_s);
    if (!plain || !res) {
        json_decref(plain), json_decref(res);
        return;
    }
    bool chat = !strcmp(style, "chat");
    const json_t *pf = json_object_get(json_object_get(plain, "fields"), "severity");
    const json_t *f = json_object_get(json_object_get(res, "fields"), "severity");
    const json_t *tr = json_object_get(f, "trace"), *cands = json_object_get(f, "candidates");
    /* the identity branch is the default rendering, and its distribution the raw one, bit for bit */
    CHECK(json_equal(json_object_get(json_object_get(pf, "trace"), "ids"), json_object_get(tr, "ids")));
    const char *labels[NV];
    int32_t toks[NV];
    for (size_t p = 0; p < NV; p++) {
        labels[p] = json_string_value(json_object_get(json_array_get(cands, p), "label"));
        toks[p] = (int32_t)json_integer_value(json_object_get(json_array_get(cands, p), "token"));
        double a = json_real_value(json_object_get(json_object_get(pf, "probabilities"), VALUES[p]));
        double b = json_real_value(json_object_get(json_object_get(f, "raw_probabilities"), VALUES[p]));
        CHECKF(a == b, "%s %s: raw %.17g, uncorrected %.17g", style, corr, b, a);
    }
    const json_t *orders = json_object_get(tr, "orders"), *cal = json_object_get(tr, "calibration");
    size_t k = json_array_size(orders);
    CHECKF(k == want_orders, "%s %s: %zu orders", style, corr, k);
    CHECK(json_integer_value(json_object_get(json_object_get(f, "correction"), "orders")) == (json_int_t)k);
    CHECK(cm ? json_array_size(cal) == k : cal == NULL);
    size_t perms[24][NV];
    size_t n_perms = heap_perms(perms);
    bool seen[24] = {false};
    char *ident = detok(fx, json_object_get(tr, "ids"));
    tl_strbuf ident_choices = TL_STRBUF_INIT;
    size_t id_ord[NV] = {0, 1, 2, 3};
    choices_text(labels, id_ord, chat, &ident_choices);
    CHECK(strstr(ident, tl_strbuf_cstr(&ident_choices)) != NULL);
    double *q = calloc(k * NV, sizeof *q), *c = calloc(k * NV, sizeof *c);
    size_t *ord = calloc(k * NV, sizeof *ord);
    size_t shared = SIZE_MAX, ident_n = json_array_size(json_object_get(tr, "ids"));
    for (size_t pass = 0; pass < (cm ? 2u : 1u); pass++)
        for (size_t o = 0; o < k; o++) {
            const json_t *e = json_array_get(pass ? cal : orders, o);
            const json_t *ids = json_object_get(e, "ids");
            bool used[NV] = {false};
            for (size_t p = 0; p < NV; p++) {
                size_t v = (size_t)json_integer_value(json_array_get(json_object_get(e, "order"), p));
                CHECK(v < NV && !used[v]);
                used[v % NV] = true;
                ord[o * NV + p] = v % NV;
            }
            if (!pass && dm == TL_DEBIAS_FULL)
                for (size_t i = 0; i < n_perms; i++)
                    if (!memcmp(perms[i], ord + o * NV, sizeof perms[i]))
                        seen[i] = true;
            if (!pass && dm == TL_DEBIAS_PERMUTE) /* cyclic: value (p + s) mod n at position p */
                for (size_t p = 0; p < NV; p++)
                    CHECK(ord[o * NV + p] == (p + ord[o * NV]) % NV);
            /* the text it must be */
            tl_strbuf ch = TL_STRBUF_INIT;
            choices_text(labels, ord + o * NV, chat, &ch);
            char *want = replace(ident, tl_strbuf_cstr(&ident_choices), tl_strbuf_cstr(&ch));
            if (pass && want) {
                char *w2 = replace(want, CONTEXT, cf_input);
                free(want);
                want = w2;
            }
            char *got = detok(fx, ids);
            CHECKF(want && !strcmp(want, got), "%s %s: branch %zu/%zu reads\n%s\nnot\n%s", style, corr, pass, o, got,
                   want ? want : "?");
            free(want), free(got);
            tl_strbuf_free(&ch);
            if (!pass) { /* the orders share everything before the choices line */
                size_t j = 0, m = json_array_size(ids) < ident_n ? json_array_size(ids) : ident_n;
                while (j < m && json_integer_value(json_array_get(ids, j)) ==
                                    json_integer_value(json_array_get(json_object_get(tr, "ids"), j)))
                    j++;
                shared = j < shared ? j : shared;
            }
            double lp[NV];
            CHECK(engine_logprobs(fx, ids, toks, NV, lp));
            for (size_t p = 0; p < NV; p++) {
                double rep = json_real_value(json_array_get(json_object_get(e, "logprobs"), p));
                CHECKF(fabs(rep - lp[p]) < 1e-9, "logprob %.17g vs engine %.17g", rep, lp[p]);
            }
            dist(lp, NV, (pass ? c : q) + o * NV);
        }
    CHECKF(shared + 45 >= ident_n, "%s %s: the orders share %zu of %zu tokens", style, corr, shared, ident_n);
    if (dm == TL_DEBIAS_FULL)
        for (size_t i = 0; i < n_perms; i++)
            CHECKF(seen[i], "permutation %zu missing", i);
    /* the corrected distribution, recomputed */
    for (size_t o = 0; cm && o < k; o++) {
        double s = 0;
        for (size_t p = 0; p < NV; p++)
            s += q[o * NV + p] /= c[o * NV + p];
        for (size_t p = 0; p < NV; p++)
            q[o * NV + p] /= s;
    }
    double want[NV] = {0};
    if (dm == TL_DEBIAS_PRIDE) {
        double pr[NV], s = 0;
        for (size_t p = 0; p < NV; p++) {
            double l = 0;
            for (size_t o = 0; o < k; o++)
                l += log(q[o * NV + p]);
            s += pr[p] = given_prior ? given_prior[p] : exp(l / (double)k);
        }
        double t = 0;
        for (size_t v = 0; v < NV; v++)
            t += want[v] = q[v] / (pr[v] / s);
        for (size_t v = 0; v < NV; v++)
            want[v] /= t;
        const json_t *jp = json_object_get(json_object_get(f, "correction"), "prior");
        for (size_t p = 0; p < NV; p++)
            CHECKF(fabs(json_real_value(json_array_get(jp, p)) - pr[p] / s) < 1e-9, "prior %zu", p);
    } else {
        for (size_t o = 0; o < k; o++)
            for (size_t p = 0; p < NV; p++)
                want[ord[o * NV + p]] += q[o * NV + p] / (double)k;
    }
    for (size_t v = 0; v < NV; v++) {
        double got = json_real_value(json_object_get(json_object_get(f, "probabilities"), VALUES[v]));
        double d = fabs(got - want[v]);
        worst = d > worst ? d : worst;
        CHECKF(d < 1e-9, "%s %s: p(%s) %.17g, recomputed %.17g", style, corr, VALUES[v], got, want[v]);
    }
    n_exact++;
    free(q), free(c), free(ord), free(ident);
    tl_strbuf_free(&ident_choices);
    json_decref(plain);
    json_decref(res);
}

static void test_exact(fixture *fx, const char *style) {
    static const double prior[NV] = {0.4, 0.3, 0.2, 0.1};
    check_exact(fx, style, "\"x-debias\":\"permute\"", TL_DEBIAS_PERMUTE, 0, NULL, NULL, 4);
    check_exact(fx, style, "\"x-debias\":{\"method\":\"permute\",\"orders\":2}", TL_DEBIAS_PERMUTE, 0, NULL, NULL, 2);
    check_exact(fx, style, "\"x-debias\":\"full\"", TL_DEBIAS_FULL, 0, NULL, NULL, 24);
    check_exact(fx, style, "\"x-debias\":\"pride\"", TL_DEBIAS_PRIDE, 0, NULL, NULL, 4);
    check_exact(fx, style, "\"x-debias\":{\"method\":\"pride\",\"prior\":[0.4,0.3,0.2,0.1]}", TL_DEBIAS_PRIDE, 0,
                NULL, prior, 1);
    check_exact(fx, style, "\"x-calibrate\":\"content-free\"", 0, TL_CALIBRATE_CONTENT_FREE, "N/A", NULL, 1);
    check_exact(fx, style, "\"x-calibrate\":{\"method\":\"content-free\",\"input\":\"[MASK]\"}", 0,
                TL_CALIBRATE_CONTENT_FREE, "[MASK]", NULL, 1);
    check_exact(fx, style, "\"x-calibrate\":\"pmi\"", 0, TL_CALIBRATE_PMI, "", NULL, 1);
    check_exact(fx, style, "\"x-debias\":\"permute\",\"x-calibrate\":\"content-free\"", TL_DEBIAS_PERMUTE,
                TL_CALIBRATE_CONTENT_FREE, "N/A", NULL, 4);
}

/* ---- invariance under enum reordering ---------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t n_invariant;

static void test_invariance(fixture *fx, const char *style, uint64_t seed, size_t n_schemas) {
    static const char *words[] = {"billing", "outage", "login", "refund", "latency", "spam", "export", "privacy",
                                  "upgrade", "crash"};
    static const char *questions[] = {"What is the ticket about?", "Which team should own it?",
                                      "What is the main topic?"};
    for (size_t si = 0; si < n_schemas; si++) {
        size_t n = 2 + rng_next(&seed) % 4, pick[10], nw = sizeof words / sizeof *words;
        for (size_t i = 0; i < nw; i++)
            pick[i] = i;
        for (size_t i = 0; i < n; i++) {
            size_t j = i + rng_next(&seed) % (nw - i), t = pick[i];
            pick[i] = pick[j], pick[j] = t;
        }
        const char *q = questions[rng_next(&seed) % 3];
        double first[6] = {0};
        for (size_t rep = 0; rep < 3; rep++) {
            size_t perm[6];
            for (size_t i = 0; i < n; i++)
                perm[i] = i;
            for (size_t i = n; rep && i > 1; i--) {
                size_t j = rng_next(&seed) % i, t = perm[i - 1];
                perm[i - 1] = perm[j], perm[j] = t;
            }
            tl_strbuf sb = TL_STRBUF_INIT;
            tl_strbuf_printf(&sb, "{\"properties\":{\"topic\":{\"question\":\"%s\",\"x-debias\":\"full\",\"enum\":[", q);
            for (size_t i = 0; i < n; i++)
                tl_strbuf_printf(&sb, "%s\"%s\"", i ? "," : "", words[pick[perm[i]]]);
            tl_strbuf_puts(&sb, "]}}}");
            json_t *res = decide(fx, tl_strbuf_cstr(&sb), style, CONTEXT, false);
            tl_strbuf_free(&sb);
            const json_t *pr = json_object_get(json_object_get(json_object_get(res, "fields"), "topic"),
                                               "probabilities");
            for (size_t v = 0; v < n; v++) {
                double p = json_real_value(json_object_get(pr, words[pick[v]]));
                if (!rep)
                    first[v] = p;
                CHECKF(fabs(p - first[v]) < 1e-9, "%s schema %zu order %zu: p(%s) %.17g vs %.17g", style, si, rep,
                       words[pick[v]], p, first[v]);
            }
            n_invariant++;
            json_decref(res);
        }
    }
}

/* ---- the calibration branch comes from the prefix cache ------------------------ */

static json_int_t computed(const json_t *res) {
    return json_integer_value(json_object_get(json_object_get(res, "usage"), "computed_tokens"));
}

static void test_cached(fixture *fx) {
    char *cal = schema_with("\"x-calibrate\":\"content-free\""), *plain = schema_with(NULL);
    const char *other = "A customer cannot log in since yesterday; everything else works.";
    tl_error err = {0};
    json_t *r;
    CHECK(tl_backend_flush(fx->b, &err) == TL_OK);
    json_t *cold = decide(fx, cal, "chat", other, false);
    CHECK(tl_backend_flush(fx->b, &err) == TL_OK);
    json_decref(decide(fx, cal, "chat", CONTEXT, false));
    json_t *base = decide(fx, plain, "chat", other, false);
    CHECK(tl_backend_flush(fx->b, &err) == TL_OK);
    json_decref(decide(fx, cal, "chat", CONTEXT, false));
    json_t *warm = decide(fx, cal, "chat", other, false);
    /* served from the cache: only its output position is recomputed */
    CHECKF(computed(warm) == computed(base) + 1, "calibrated %lld computed, uncalibrated %lld", (long long)computed(warm),
           (long long)computed(base));
    CHECKF(computed(cold) > computed(base) + 10, "cold %lld", (long long)computed(cold));
    printf("calibration branch: cold run %lld computed tokens, warm %lld, uncalibrated %lld\n",
           (long long)computed(cold), (long long)computed(warm), (long long)computed(base));
    (void)r;
    json_decref(cold), json_decref(base), json_decref(warm);
    free(cal), free(plain);
}

/* ---- errors ------------------------------------------------------------------- */

static void expect_schema_error(fixture *fx, const char *field, const char *want) {
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_strbuf_printf(&sb, "{\"properties\":{\"f\":%s}}", field);
    json_t *schema = fixture_json(tl_strbuf_cstr(&sb));
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_json(fx->b, "x", 1, schema, NULL, &res, &err);
    CHECKF(st == TL_ERR_SCHEMA && strstr(err.msg, want), "%s: %s", field, err.msg);
    json_decref(res), json_decref(schema);
    tl_strbuf_free(&sb);
}

static void test_errors(fixture *fx) {
    expect_schema_error(fx, "{\"enum\":[\"a\",\"b\"],\"x-debias\":\"sort\"}", "/properties/f/x-debias: must be");
    expect_schema_error(fx, "{\"enum\":[1,2,3,4,5,6,7],\"x-debias\":\"full\"}", "/properties/f/x-debias: \"full\"");
    expect_schema_error(fx, "{\"enum\":[\"a\",\"b\"],\"x-debias\":{\"method\":\"pride\",\"prior\":[1]}}",
                        "/properties/f/x-debias/prior: must be an array of 2");
    expect_schema_error(fx, "{\"enum\":[\"a\",\"b\"],\"x-debias\":{\"method\":\"permute\",\"orders\":3}}",
                        "/properties/f/x-debias/orders");
    expect_schema_error(fx, "{\"enum\":[\"a\",\"b\"],\"x-calibrate\":{\"method\":\"pmi\",\"input\":\"N/A\"}}",
                        "/properties/f/x-calibrate/input: only content-free");
    expect_schema_error(fx, "{\"enum\":[\"a\",\"b\"],\"open\":true,\"x-debias\":\"permute\"}",
                        "/properties/f/x-debias: does not apply");
    expect_schema_error(fx, "{\"type\":\"integer\",\"x-debias\":\"permute\"}", "x-debias");
    json_t *schema = fixture_json("{\"properties\":{\"f\":{\"enum\":[\"a\",\"b\"]}}}");
    tl_decide_opts o = {.debias = "sorted"};
    json_t *res = NULL;
    tl_error err = {0};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID && strstr(err.msg, "sorted"));
    /* the option on a field the schema leaves alone, "none" in the schema wins */
    json_decref(schema);
    schema = fixture_json("{\"properties\":{\"f\":{\"enum\":[\"a\",\"b\"]},\"g\":{\"enum\":[\"a\",\"b\"],"
                          "\"x-debias\":\"none\"}}}");
    o = (tl_decide_opts){.debias = "permute", .mode = "batch"};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_OK);
    const json_t *fields = json_object_get(res, "fields");
    CHECK(json_object_get(json_object_get(fields, "f"), "raw_probabilities") != NULL);
    CHECK(json_object_get(json_object_get(fields, "g"), "raw_probabilities") == NULL);
    json_decref(res), json_decref(schema);
}

int main(void) {
    test_estimators();
    fixture chat, rec;
    if (!fixture_open("models/qwen2-d64-q8_0.gguf", &chat) || !fixture_open("models/llama-spm-d64-f32.gguf", &rec))
        return 1;
    test_exact(&chat, "chat");
    test_exact(&rec, "record");
    test_invariance(&chat, "chat", 33, 5);
    test_invariance(&rec, "record", 34, 5);
    test_cached(&chat);
    test_errors(&chat);
    printf("%zu corrected decisions recomputed from the engine's logits (worst difference %.3g), %zu reorderings "
           "invariant\n", n_exact, worst, n_invariant);
    fixture_close(&chat);
    fixture_close(&rec);
    return TEST_DONE();
}
