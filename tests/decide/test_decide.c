/* test_decide.c: tl_decide end to end on the fixture models (random weights:
 * garbage text, real distributions).
 *   - probabilities are the softmax over the candidate labels' logits at the
 *     traced position, recomputed from the engine's own full logits;
 *   - sequential mode: each prompt is the previous prompt + answer + next
 *     question, and the cache serves all but the new tail;
 *   - batch mode computes the shared context once;
 *   - auto mode equals running its waves by hand (tl_decide_given);
 *   - temperature, seed, threshold and abstention; option and schema errors. */
#include <jansson.h>
#include <math.h>

#include "backend/backend.h"
#include "decide/decide.h"
#include "engine/engine.h"
#include "tl_test.h"

static const char *CONTEXT =
    "Ticket #4411: checkout page returns HTTP 500 for every customer since the 14:02 deploy of "
    "payments-api v2.3. Database CPU is normal. Rolling back fixed a similar issue last month.";

static const char *TICKET_SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"system\":{\"type\":\"string\",\"enum\":[\"database\",\"payments\",\"frontend\"],\"question\":\"Which system failed?\"},"
    "\"customer_facing\":{\"type\":\"boolean\",\"question\":\"Do customers see the failure?\"},"
    "\"severity\":{\"type\":\"integer\",\"enum\":[1,2,3,4],\"question\":\"Severity (1 = worst)?\",\"depends_on\":[\"system\"]},"
    "\"rollback\":{\"type\":\"boolean\",\"question\":\"Roll back the deploy?\",\"depends_on\":[\"system\",\"severity\"]},"
    "\"urgency\":{\"type\":\"number\",\"format\":\"score\",\"x-name\":\"q5\"}}}";

typedef struct fixture {
    tl_model *model;
    tl_backend *b;
} fixture;

static bool open_model(const char *rel, fixture *fx) {
    tl_error err = {0};
    memset(fx, 0, sizeof *fx);
    if (tl_model_load(tl_fixture(rel), &fx->model, &err) != TL_OK) {
        fprintf(stderr, "cannot load %s: %s\n", rel, err.msg);
        return false;
    }
    tl_session_params sp = {.n_threads = 1};
    if (tl_backend_local_new(fx->model, &sp, &fx->b, &err) != TL_OK) {
        fprintf(stderr, "backend: %s\n", err.msg);
        return false;
    }
    return true;
}

static void close_model(fixture *fx) {
    tl_backend_free(fx->b);
    tl_model_free(fx->model);
}

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fprintf(stderr, "bad JSON in test: %s\n", je.text);
    return j;
}

static json_t *run(tl_backend *b, const char *schema_text, const json_t *given, const tl_decide_opts *o) {
    json_t *schema = parse(schema_text), *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_given_json(b, CONTEXT, strlen(CONTEXT), schema, given, o, &res, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    json_decref(schema);
    return res;
}

static int64_t usage_of(const json_t *res, const char *k) {
    return json_integer_value(json_object_get(json_object_get(res, "usage"), k));
}

/* Every value is in its domain and every distribution sums to 1. */
static void check_types(const json_t *res, const char *schema_text) {
    json_t *schema = parse(schema_text);
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop) {
        json_t *f = json_object_get(json_object_get(res, "fields"), key);
        json_t *v = json_object_get(json_object_get(res, "values"), key);
        CHECKF(f && v, "field %s missing", key);
        if (!f || !v)
            continue;
        double sum = 0;
        const char *vk;
        json_t *p;
        json_object_foreach(json_object_get(f, "probabilities"), vk, p) sum += json_real_value(p);
        CHECKF(fabs(sum - 1) < 1e-9, "%s: probabilities sum to %.12f", key, sum);
        if (json_is_null(v))
            continue;
        json_t *en = json_object_get(prop, "enum");
        const char *type = json_string_value(json_object_get(prop, "type"));
        if (en) {
            bool found = false;
            for (size_t i = 0; i < json_array_size(en); i++)
                found |= json_equal(json_array_get(en, i), v);
            CHECKF(found, "%s: value not in enum", key);
        } else if (!strcmp(type, "boolean")) {
            CHECK(json_is_boolean(v));
        } else {
            double d = json_number_value(v);
            CHECKF(json_is_real(v) && d >= 0 && d <= 1 && fabs(d * 10 - round(d * 10)) < 1e-9, "%s: score", key);
        }
    }
    json_decref(schema);
}

/* Probabilities equal the softmax of the candidates' logits at the traced
 * position, computed by the engine's own full-logits path on a fresh session. */
static void check_probabilities(fixture *fx, const json_t *res) {
    tl_session *s = NULL;
    tl_error err = {0};
    tl_session_params sp = {.n_threads = 1};
    CHECK(tl_session_new(fx->model, &sp, &s, &err) == TL_OK);
    int32_t nv = tl_model_n_vocab(fx->model);
    float *logits = malloc((size_t)nv * sizeof *logits);
    const char *key;
    json_t *f;
    json_object_foreach(json_object_get(res, "fields"), key, f) {
        json_t *tr = json_object_get(f, "trace"), *ids_j = json_object_get(tr, "ids");
        size_t n = json_array_size(ids_j);
        CHECKF(tr && n > 0, "%s: no trace", key);
        if (!n)
            continue;
        CHECK((size_t)json_integer_value(json_object_get(tr, "position")) == n - 1);
        int32_t *ids = malloc(n * sizeof *ids);
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)json_integer_value(json_array_get(ids_j, i));
        CHECKF(tl_session_eval(s, ids, n, logits, NULL, &err) == TL_OK, "%s", err.msg);
        json_t *cands = json_object_get(f, "candidates");
        size_t k = json_array_size(cands);
        double max = -INFINITY, sum = 0, lse = 0;
        for (size_t i = 0; i < k; i++) {
            int tok = (int)json_integer_value(json_object_get(json_array_get(cands, i), "token"));
            if (logits[tok] > max)
                max = logits[tok];
        }
        for (size_t i = 0; i < k; i++)
            sum += exp(logits[json_integer_value(json_object_get(json_array_get(cands, i), "token"))] - max);
        double vmax = -INFINITY;
        for (int32_t t = 0; t < nv; t++)
            vmax = logits[t] > vmax ? logits[t] : vmax;
        for (int32_t t = 0; t < nv; t++)
            lse += exp(logits[t] - vmax);
        lse = vmax + log(lse);
        /* probabilities are keyed by value text in candidate order */
        void *it = json_object_iter(json_object_get(f, "probabilities"));
        for (size_t i = 0; i < k && it; i++, it = json_object_iter_next(json_object_get(f, "probabilities"), it)) {
            json_t *c = json_array_get(cands, i);
            int tok = (int)json_integer_value(json_object_get(c, "token"));
            double want = exp(logits[tok] - max) / sum;
            double got = json_real_value(json_object_iter_value(it));
            CHECKF(fabs(got - want) < 0.01, "%s/%s: p %.5f vs logits %.5f", key, json_object_iter_key(it), got, want);
            double lp = json_real_value(json_object_get(c, "logprob"));
            CHECKF(fabs(lp - (logits[tok] - lse)) < 0.01, "%s: logprob %.5f vs %.5f", key, lp, logits[tok] - lse);
        }
        free(ids);
    }
    free(logits);
    tl_session_free(s);
}

static json_t *trace_ids(const json_t *res, const char *field) {
    return json_object_get(json_object_get(json_object_get(json_object_get(res, "fields"), field), "trace"), "ids");
}

static bool is_prefix(const json_t *a, const json_t *b) {
    if (json_array_size(a) > json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (json_integer_value(json_array_get(a, i)) != json_integer_value(json_array_get(b, i)))
            return false;
    return true;
}

static void test_sequential(fixture *fx, const char *name) {
    tl_decide_opts o = {.mode = "sequential", .trace = true};
    json_t *res = run(fx->b, TICKET_SCHEMA, NULL, &o);
    if (!res)
        return;
    check_types(res, TICKET_SCHEMA);
    check_probabilities(fx, res);
    CHECK(!strcmp(json_string_value(json_object_get(res, "mode")), "sequential"));
    /* Each prompt extends the previous one; the cache serves all of the previous prompt. */
    const char *order[] = {"system", "customer_facing", "severity", "rollback", "urgency"};
    int64_t prompt_sum = 0;
    for (int i = 0; i < 5; i++) {
        json_t *ids = trace_ids(res, order[i]);
        json_t *wu = json_object_get(json_object_get(json_object_get(json_object_get(res, "fields"), order[i]), "trace"),
                                     "wave_usage");
        prompt_sum += (int64_t)json_array_size(ids);
        if (i == 0)
            continue;
        json_t *prev = trace_ids(res, order[i - 1]);
        CHECKF(is_prefix(prev, ids), "%s: %s prompt is not an extension of the previous one", name, order[i]);
        int64_t cached = json_integer_value(json_object_get(wu, "cached_tokens"));
        CHECKF(cached >= (int64_t)json_array_size(prev) - 1 && cached <= (int64_t)json_array_size(prev),
               "%s: %s: cached %lld of a %zu-token previous prompt", name, order[i], (long long)cached,
               json_array_size(prev));
    }
    CHECK(usage_of(res, "prompt_tokens") == prompt_sum);
    /* The new tail holds the previous label and its value written back. */
    json_t *f0 = json_object_get(json_object_get(res, "fields"), "system");
    const char *text1 = json_string_value(json_object_get(
        json_object_get(json_object_get(json_object_get(res, "fields"), "customer_facing"), "trace"), "text"));
    char want[128];
    snprintf(want, sizeof want, "value=\"%s\"", json_string_value(json_object_get(f0, "value")));
    CHECKF(text1 && strstr(text1, want), "%s: answer not written back", name);
    /* x-name is what the model reads; the result keeps the caller's key. */
    const char *text4 = json_string_value(
        json_object_get(json_object_get(json_object_get(json_object_get(res, "fields"), "urgency"), "trace"), "text"));
    CHECK(text4 && strstr(text4, "name=\"q5\"") && !strstr(text4, "urgency"));
    json_decref(res);
}

static void test_batch(fixture *fx, const char *name) {
    tl_decide_opts o = {.mode = "batch", .trace = true};
    json_t *res = run(fx->b, TICKET_SCHEMA, NULL, &o);
    if (!res)
        return;
    check_types(res, TICKET_SCHEMA);
    check_probabilities(fx, res);
    /* Every branch starts with the same context; it is computed once. */
    const char *order[] = {"system", "customer_facing", "severity", "rollback", "urgency"};
    json_t *first = trace_ids(res, order[0]);
    size_t common = json_array_size(first), tails = 0;
    for (int i = 1; i < 5; i++) {
        json_t *ids = trace_ids(res, order[i]);
        size_t c = 0;
        while (c < common && c < json_array_size(ids) &&
               json_integer_value(json_array_get(ids, c)) == json_integer_value(json_array_get(first, c)))
            c++;
        common = c;
        CHECK(json_integer_value(json_object_get(
                  json_object_get(json_object_get(json_object_get(res, "fields"), order[i]), "trace"), "wave")) == 0);
    }
    for (int i = 0; i < 5; i++)
        tails += json_array_size(trace_ids(res, order[i])) - common;
    int64_t computed = usage_of(res, "computed_tokens"), cached = usage_of(res, "cached_tokens");
    /* A fresh backend may still hold the sequential run's prefix: count only what was new. */
    CHECKF(computed <= (int64_t)(common + tails) && computed + cached == usage_of(res, "prompt_tokens"),
           "%s: batch computed %lld tokens; shared %zu + tails %zu", name, (long long)computed, common, tails);
    CHECKF(common > 40, "%s: branches share only %zu tokens", name, common);
    json_decref(res);
}

/* auto = waves {system, customer_facing, urgency}, {severity}, {rollback};
 * by hand: batch of wave 1 on its own, then each later wave given the answers so far. */
static void test_auto_equals_waves(const char *model_rel) {
    fixture a, h;
    if (!open_model(model_rel, &a) || !open_model(model_rel, &h))
        return;
    tl_decide_opts o = {.trace = true};
    json_t *res = run(a.b, TICKET_SCHEMA, NULL, &o);
    if (!res)
        return;
    CHECK(!strcmp(json_string_value(json_object_get(res, "mode")), "auto"));
    json_t *vals = json_object_get(res, "values");
    tl_decide_opts ob = {.mode = "batch", .trace = true};
    /* wave 1 by hand: the independent fields alone, in batch. */
    const char *wave1 = "{\"properties\":{"
                        "\"system\":{\"type\":\"string\",\"enum\":[\"database\",\"payments\",\"frontend\"],\"question\":\"Which system failed?\"},"
                        "\"customer_facing\":{\"type\":\"boolean\",\"question\":\"Do customers see the failure?\"},"
                        "\"urgency\":{\"type\":\"number\",\"format\":\"score\",\"x-name\":\"q5\"}}}";
    json_t *r1 = run(h.b, wave1, NULL, &ob);
    json_t *given = json_object();
    const char *w1[] = {"system", "customer_facing", "urgency"};
    for (int i = 0; r1 && i < 3; i++) {
        CHECKF(json_equal(trace_ids(r1, w1[i]), trace_ids(res, w1[i])), "wave 1 %s: ids differ", w1[i]);
        CHECK(json_equal(json_object_get(json_object_get(r1, "values"), w1[i]), json_object_get(vals, w1[i])));
        json_object_set(given, w1[i], json_object_get(json_object_get(r1, "values"), w1[i]));
    }
    /* wave 2: severity, given wave 1's answers (rollback waits for it: run it given too). */
    json_t *r2 = run(h.b, TICKET_SCHEMA, given, &ob);
    if (r2) {
        CHECKF(json_equal(trace_ids(r2, "severity"), trace_ids(res, "severity")), "wave 2: severity ids differ");
        json_t *p_auto = json_object_get(json_object_get(json_object_get(res, "fields"), "severity"), "probabilities");
        json_t *p_hand = json_object_get(json_object_get(json_object_get(r2, "fields"), "severity"), "probabilities");
        const char *k;
        json_t *p;
        json_object_foreach(p_auto, k, p)
            CHECKF(fabs(json_real_value(p) - json_real_value(json_object_get(p_hand, k))) < 1e-6, "severity %s", k);
        CHECK(json_is_true(json_object_get(json_object_get(json_object_get(r2, "fields"), "system"), "given")));
    }
    json_object_set(given, "severity", json_object_get(vals, "severity"));
    json_t *r3 = run(h.b, TICKET_SCHEMA, given, &ob);
    if (r3) {
        CHECKF(json_equal(trace_ids(r3, "rollback"), trace_ids(res, "rollback")), "wave 3: rollback ids differ");
        CHECK(json_equal(json_object_get(json_object_get(r3, "values"), "rollback"), json_object_get(vals, "rollback")));
    }
    /* Waves as the trace says. */
    CHECK(json_integer_value(json_object_get(
              json_object_get(json_object_get(json_object_get(res, "fields"), "rollback"), "trace"), "wave")) == 2);
    json_decref(r1), json_decref(r2), json_decref(r3), json_decref(given), json_decref(res);
    close_model(&a);
    close_model(&h);
}

static void test_sampling_and_threshold(fixture *fx) {
    const char *schema = "{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"w\",\"x\",\"y\",\"z\"]},"
                         "\"b\":{\"type\":\"boolean\"}}}";
    /* Temperature: reproducible per seed, different draws across seeds, and
     * a huge temperature flattens the distribution toward uniform. */
    tl_decide_opts hot = {.mode = "batch", .temperature = 1000, .seed = 1};
    json_t *r1 = run(fx->b, schema, NULL, &hot), *r2 = run(fx->b, schema, NULL, &hot);
    CHECK(r1 && r2 && json_equal(json_object_get(r1, "values"), json_object_get(r2, "values")));
    int distinct = 0;
    const char *seen[4] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        hot.seed = seed;
        json_t *r = run(fx->b, schema, NULL, &hot);
        const char *v = json_string_value(json_object_get(json_object_get(r, "values"), "a"));
        bool dup = false;
        for (int i = 0; i < distinct; i++)
            dup |= !strcmp(seen[i], v);
        if (!dup && distinct < 4)
            seen[distinct++] = v[0] == 'w' ? "w" : v[0] == 'x' ? "x" : v[0] == 'y' ? "y" : "z";
        check_types(r, schema);
        json_decref(r);
    }
    CHECKF(distinct >= 3, "only %d distinct values in 40 seeded draws at T=1000", distinct);
    json_t *pa = json_object_get(json_object_get(json_object_get(r1, "fields"), "a"), "probabilities");
    const char *k;
    json_t *p;
    json_object_foreach(pa, k, p) CHECK(fabs(json_real_value(p) - 0.25) < 0.01);
    json_decref(r1), json_decref(r2);

    /* Threshold 1: everything abstains (random models never reach p = 1);
     * the next sequential decision sees no answer for an abstained field. */
    tl_decide_opts strict = {.mode = "sequential", .threshold = 1.0, .trace = true};
    json_t *r = run(fx->b, schema, NULL, &strict);
    if (r) {
        json_t *fa = json_object_get(json_object_get(r, "fields"), "a");
        CHECK(json_is_null(json_object_get(json_object_get(r, "values"), "a")));
        CHECK(json_is_true(json_object_get(fa, "abstained")) && json_is_null(json_object_get(fa, "label")));
        const char *tb = json_string_value(
            json_object_get(json_object_get(json_object_get(json_object_get(r, "fields"), "b"), "trace"), "text"));
        CHECK(tb && !strstr(tb, "name=\"a\""));
        check_types(r, schema);
    }
    json_decref(r);
}

/* integer/number fields without enum: generated under the number automaton
 * (src/constrain), typed, in range, and written back for later decisions. */
static void test_numbers(fixture *fx, const char *style) {
    const char *schema = "{\"properties\":{"
                         "\"nights\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":30},"
                         "\"amount\":{\"type\":\"number\",\"minimum\":-50,\"maximum\":5000,\"x-decimals\":2},"
                         "\"kind\":{\"type\":\"string\",\"enum\":[\"hotel\",\"meal\"]}}}";
    const char *modes[] = {"sequential", "batch"};
    for (int m = 0; m < 2; m++) {
        tl_decide_opts o = {.mode = modes[m], .style = style, .trace = true};
        if (style && !strcmp(style, "chat") && !fx->b->chat_template)
            o.chat_template = "chatml";
        json_t *r = run(fx->b, schema, NULL, &o);
        if (!r)
            continue;
        json_t *vals = json_object_get(r, "values"), *fields = json_object_get(r, "fields");
        json_t *nights = json_object_get(vals, "nights"), *amount = json_object_get(vals, "amount");
        CHECKF(json_is_integer(nights) && json_integer_value(nights) >= 1 && json_integer_value(nights) <= 30,
               "nights out of range");
        double a = json_number_value(amount);
        CHECKF(json_is_number(amount) && a >= -50 && a <= 5000 && fabs(a * 100 - round(a * 100)) < 1e-6,
               "amount %g", a);
        json_t *fa = json_object_get(fields, "amount");
        double p = json_real_value(json_object_get(fa, "probability"));
        CHECK(p > 0 && p <= 1 + 1e-12);
        CHECK(json_integer_value(json_object_get(fa, "tokens")) >= 1);
        const char *kinds = json_string_value(json_object_get(vals, "kind"));
        CHECK(kinds && (!strcmp(kinds, "hotel") || !strcmp(kinds, "meal")));
        if (m == 0) {
            /* sequential: the amount's prompt shows the nights generated before it */
            const char *t = json_string_value(json_object_get(json_object_get(fa, "trace"), "text"));
            const char *nt = json_string_value(json_object_get(json_object_get(fields, "nights"), "text"));
            CHECK(t && nt && strstr(t, nt));
            CHECK(is_prefix(trace_ids(r, "nights"), trace_ids(r, "amount")));
        }
        json_decref(r);
    }
}

static void test_errors(fixture *fx) {
    json_t *schema = parse("{\"properties\":{\"a\":{\"type\":\"boolean\"}}}"), *res = NULL;
    tl_error err = {0};
    tl_decide_opts o = {.mode = "parallel"};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID && strstr(err.msg, "parallel"));
    o = (tl_decide_opts){.style = "poem"};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID && strstr(err.msg, "poem"));
    o = (tl_decide_opts){.chat_template = "vicuna"};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID && strstr(err.msg, "vicuna"));
    o = (tl_decide_opts){.temperature = -1};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID);
    o = (tl_decide_opts){.threshold = 2};
    CHECK(tl_decide_json(fx->b, "x", 1, schema, &o, &res, &err) == TL_ERR_INVALID);
    json_t *given = parse("{\"nope\":true}");
    CHECK(tl_decide_given_json(fx->b, "x", 1, schema, given, NULL, &res, &err) == TL_ERR_INVALID &&
          strstr(err.msg, "given/nope"));
    json_decref(given);
    given = parse("{\"a\":3}");
    CHECK(tl_decide_given_json(fx->b, "x", 1, schema, given, NULL, &res, &err) == TL_ERR_INVALID &&
          strstr(err.msg, "domain"));
    json_decref(given);
    CHECK(res == NULL);
    json_decref(schema);
    schema = parse("{\"x-strict\":true,\"properties\":{\"a\":{\"type\":\"string\"}}}");
    CHECK(tl_decide_json(fx->b, "x", 1, schema, NULL, &res, &err) == TL_ERR_SCHEMA && strstr(err.msg, "/properties/a"));
    json_decref(schema);
}

int main(void) {
    fixture fx;
    /* Qwen2 (ChatML template: chat style) */
    if (open_model("models/qwen2-d64-q8_0.gguf", &fx)) {
        test_sequential(&fx, "qwen2");
        test_batch(&fx, "qwen2");
        test_sampling_and_threshold(&fx);
        test_numbers(&fx, NULL);
        test_numbers(&fx, "record");
        test_errors(&fx);
        /* record style on the same model */
        tl_decide_opts o = {.style = "record", .mode = "sequential", .trace = true};
        json_t *r = run(fx.b, TICKET_SCHEMA, NULL, &o);
        if (r) {
            CHECK(!strcmp(json_string_value(json_object_get(r, "style")), "record"));
            check_types(r, TICKET_SCHEMA);
            check_probabilities(&fx, r);
        }
        json_decref(r);
        close_model(&fx);
    }
    /* Llama-2 SPM vocabulary without a template: record style by default. */
    if (open_model("models/llama-spm-d64-f32.gguf", &fx)) {
        test_sequential(&fx, "llama-spm");
        test_batch(&fx, "llama-spm");
        test_numbers(&fx, NULL);
        test_numbers(&fx, "chat");
        /* a forced chat family on a model without a template */
        tl_decide_opts o = {.chat_template = "llama2", .mode = "sequential", .trace = true};
        json_t *r = run(fx.b, TICKET_SCHEMA, NULL, &o);
        if (r) {
            CHECK(!strcmp(json_string_value(json_object_get(r, "chat_template")), "llama2"));
            check_types(r, TICKET_SCHEMA);
            check_probabilities(&fx, r);
        }
        json_decref(r);
        close_model(&fx);
    }
    /* Llama 3 template */
    if (open_model("models/llama3-d64-bf16.gguf", &fx)) {
        test_sequential(&fx, "llama3");
        close_model(&fx);
    }
    test_auto_equals_waves("models/qwen2-d64-q8_0.gguf");
    return TEST_DONE();
}
