/* test_shapes.c: the schemas users write, decided on fixture models (issue 13):
 *   - const fields come back with probability 1 and no forward pass;
 *   - nested objects keep their nesting in "values", fields are keyed by path;
 *   - multi-label arrays always hold minItems/maxItems, and every value's
 *     probability equals the softmax of its own yes/no label logits taken
 *     from the engine's full logits at the traced ids (within 1e-4);
 *   - x-optional "ask" either leaves the property out (absent) or gives a
 *     declared value, "skip" always leaves it out;
 *   - patterned strings match (checked by PCRE2, not by typellm's own DFA);
 *   - unions with null give a declared value or null.
 * In every mode, both styles, greedy and sampled. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>

#include "decide/decide.h"
#include "decide_fixture.h"

static const char *SCHEMA =
    "{\"properties\":{"
    "\"kind\":{\"const\":\"ticket\"},"
    "\"customer\":{\"type\":\"object\",\"properties\":{\"tier\":{\"enum\":[\"free\",\"pro\"]},"
    "\"vip\":{\"type\":\"boolean\"}},\"required\":[\"tier\",\"vip\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"billing\",\"bug\",\"feature\",\"outage\",\"account\"]},"
    "\"minItems\":1,\"maxItems\":2,\"uniqueItems\":true,\"question\":\"Which tags apply?\"},"
    "\"channel\":{\"enum\":[\"email\",\"phone\"],\"x-optional\":\"ask\"},"
    "\"internal\":{\"type\":\"boolean\",\"x-optional\":\"skip\"},"
    "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}[0-9]{3}$\"},"
    "\"mood\":{\"anyOf\":[{\"const\":\"calm\"},{\"const\":\"angry\"},{\"type\":\"null\"}]},"
    "\"after\":{\"type\":\"boolean\",\"depends_on\":[\"customer/tier\",\"tags\"]}},"
    "\"required\":[\"kind\",\"customer\",\"tags\",\"code\",\"mood\",\"after\"]}";

static const char *CONTEXT = "Ticket from a pro customer: charged twice (billing), reference AB123, very angry.";

static bool pcre_matches(const char *re, const char *s) {
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &eo, NULL);
    if (!c)
        return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(c, NULL);
    int rc = pcre2_match(c, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(c);
    return rc >= 0;
}

/* The probability of "true" from the engine's own logits at the traced ids. */
static double yes_probability(fixture *fx, const json_t *item) {
    const json_t *ids = json_object_get(json_object_get(item, "trace"), "ids");
    size_t n = json_array_size(ids);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    float *logits = malloc((size_t)fx->b->n_vocab * sizeof *logits);
    for (size_t i = 0; i < n; i++)
        v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    tl_usage u = {0};
    tl_error err = {0};
    double p = NAN;
    if (tl_backend_next_logits(fx->b, v, n, logits, &u, &err) == TL_OK) {
        double a = logits[json_integer_value(json_object_get(item, "token_true"))];
        double b = logits[json_integer_value(json_object_get(item, "token_false"))];
        double m = a > b ? a : b;
        p = exp(a - m) / (exp(a - m) + exp(b - m));
    }
    free(v);
    free(logits);
    return p;
}

static size_t n_runs, n_prob_checks, n_absent, n_null;
static double worst_prob_diff;

static void check_result(fixture *fx, const json_t *res, bool check_probs) {
    const json_t *values = json_object_get(res, "values"), *fields = json_object_get(res, "fields");
    n_runs++;
    CHECK(!strcmp(json_string_value(json_object_get(values, "kind")), "ticket"));
    const json_t *kf = json_object_get(fields, "kind");
    CHECK(json_is_true(json_object_get(kf, "constant")) &&
          json_real_value(json_object_get(json_object_get(kf, "probabilities"), "ticket")) == 1.0);
    const json_t *cu = json_object_get(values, "customer");
    CHECK(json_is_object(cu) && json_object_size(cu) == 2);
    const char *tier = json_string_value(json_object_get(cu, "tier"));
    CHECK(tier && (!strcmp(tier, "free") || !strcmp(tier, "pro")));
    CHECK(json_is_boolean(json_object_get(cu, "vip")));
    CHECK(json_object_get(fields, "customer/tier") && json_object_get(fields, "customer/vip"));
    /* tags: 1..2 distinct declared values, each with its own yes/no probability */
    const json_t *tags = json_object_get(values, "tags");
    CHECK(json_is_array(tags) && json_array_size(tags) >= 1 && json_array_size(tags) <= 2);
    if (json_array_size(tags) == 2)
        CHECK(!json_equal(json_array_get(tags, 0), json_array_get(tags, 1)));
    const json_t *items = json_object_get(json_object_get(fields, "tags"), "items");
    CHECK(json_array_size(items) == 5);
    size_t selected = 0;
    for (size_t i = 0; i < json_array_size(items); i++) {
        const json_t *it = json_array_get(items, i);
        selected += json_is_true(json_object_get(it, "selected"));
        if (check_probs) {
            double want = yes_probability(fx, it), got = json_real_value(json_object_get(it, "probability"));
            double d = fabs(want - got);
            if (d > worst_prob_diff)
                worst_prob_diff = d;
            CHECKF(d < 1e-4, "tags/%zu: probability %.9f, engine logits say %.9f", i, got, want);
            n_prob_checks++;
        }
    }
    CHECK(selected == json_array_size(tags));
    /* channel: absent or declared */
    const json_t *ch = json_object_get(values, "channel");
    bool absent = json_is_true(json_object_get(json_object_get(fields, "channel"), "absent"));
    CHECK(absent ? ch == NULL : (json_is_string(ch) && (!strcmp(json_string_value(ch), "email") ||
                                                        !strcmp(json_string_value(ch), "phone"))));
    n_absent += absent;
    CHECK(json_object_get(values, "internal") == NULL);
    const json_t *code = json_object_get(values, "code");
    CHECKF(json_is_string(code) && pcre_matches("^[A-Z]{2}[0-9]{3}$", json_string_value(code)), "code %s",
           json_is_string(code) ? json_string_value(code) : "?");
    const json_t *mood = json_object_get(values, "mood");
    CHECK(json_is_null(mood) || (json_is_string(mood) && (!strcmp(json_string_value(mood), "calm") ||
                                                          !strcmp(json_string_value(mood), "angry"))));
    n_null += json_is_null(mood);
    CHECK(json_is_boolean(json_object_get(values, "after")));
}

static void run_all(const char *model_rel) {
    fixture fx;
    if (!fixture_open(model_rel, &fx)) {
        CHECK(0);
        return;
    }
    json_t *schema = fixture_json(SCHEMA);
    const char *modes[] = {"sequential", "batch", "auto"}, *styles[] = {"chat", "record"};
    for (int m = 0; m < 3; m++)
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < 3; k++) {
                if (s == 0 && !fx.b->chat_template)
                    continue;
                tl_decide_opts o = {.mode = modes[m], .style = styles[s], .trace = true,
                                    .temperature = k ? 2.5 : 0, .seed = (uint64_t)(17 * k + m)};
                json_t *res = NULL;
                tl_error err = {0};
                tl_status st = tl_decide_json(fx.b, CONTEXT, strlen(CONTEXT), schema, &o, &res, &err);
                CHECKF(st == TL_OK, "%s %s %s: %s", model_rel, modes[m], styles[s], err.msg);
                if (res)
                    check_result(&fx, res, k == 0);
                json_decref(res);
            }
    json_decref(schema);
    fixture_close(&fx);
}

/* A sequential run that outgrows the context fails before any model work,
 * naming the field; --partial returns the fields decided before it; batch
 * mode fits. The shared batching backend and its clients know the context
 * length too, so they refuse the same run up front with the same message. */
static void test_context(void) {
    fixture fx;
    if (!fixture_open("models/stories260k-f32.gguf", &fx)) {
        CHECK(0);
        return;
    }
    tl_strbuf sch = TL_STRBUF_INIT, ctx = TL_STRBUF_INIT;
    tl_strbuf_puts(&sch, "{\"properties\":{");
    for (int i = 0; i < 6; i++)
        tl_strbuf_printf(&sch, "%s\"f%d\":{\"enum\":[\"alpha one two three four five six\",\"beta one two three "
                         "four five six seven\"],\"question\":\"Is this a long question about many things and more "
                         "things and other things?\"}", i ? "," : "", i);
    tl_strbuf_puts(&sch, "}}");
    for (int i = 0; i < 30; i++)
        tl_strbuf_puts(&ctx, "word ");
    json_t *schema = fixture_json(sch.buf);
    tl_decide_opts o = {.mode = "sequential"};
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_json(fx.b, ctx.buf, ctx.len, schema, &o, &res, &err);
    CHECKF(st == TL_ERR_LIMIT && strstr(err.msg, "decide: /properties/f2: the prompt reaches at least ") &&
               strstr(err.msg, "past the context length 512") && strstr(err.msg, "--partial"),
           "%s", err.msg);
    CHECK(res == NULL);
    o.partial = true;
    CHECK(tl_decide_json(fx.b, ctx.buf, ctx.len, schema, &o, &res, &err) == TL_OK);
    if (res) {
        const json_t *values = json_object_get(res, "values");
        CHECK(json_is_true(json_object_get(res, "partial")) && json_object_size(values) == 2);
        CHECK(json_array_size(json_object_get(res, "undecided")) == 4);
        CHECK(json_is_true(json_object_get(json_object_get(json_object_get(res, "fields"), "f5"), "undecided")));
        json_decref(res);
        res = NULL;
    }
    o = (tl_decide_opts){.mode = "batch"};
    CHECK(tl_decide_json(fx.b, ctx.buf, ctx.len, schema, &o, &res, &err) == TL_OK && json_object_size(json_object_get(res, "values")) == 6);
    json_decref(res);
    res = NULL;
    tl_backend *shared = NULL, *client = NULL;
    tl_shared_params shp = {.session = {.n_threads = 1}};
    CHECK(tl_backend_shared_new(fx.model, &shp, &shared, &err) == TL_OK);
    CHECK(shared && tl_backend_shared_client(shared, NULL, &client, &err) == TL_OK);
    tl_backend *on[2] = {shared, client};
    for (int k = 0; k < 2 && client; k++) {
        o = (tl_decide_opts){.mode = "sequential"};
        err = (tl_error){0};
        st = tl_decide_json(on[k], ctx.buf, ctx.len, schema, &o, &res, &err);
        CHECKF(st == TL_ERR_LIMIT && strstr(err.msg, "decide: /properties/f2: the prompt reaches at least ") &&
                   strstr(err.msg, "past the context length 512"),
               "%s backend: %s", k ? "client" : "shared", err.msg);
        json_decref(res);
        res = NULL;
    }
    tl_backend_free(client);
    tl_backend_free(shared);
    json_decref(schema);
    tl_strbuf_free(&sch);
    tl_strbuf_free(&ctx);
    fixture_close(&fx);
}

int main(void) {
    test_context();
    run_all("models/qwen2-d64-q8_0.gguf");
    run_all("models/llama-spm-d64-f32.gguf");
    printf("shapes: %zu runs, %zu multi-label probabilities checked (worst |diff| %.3g), %zu absent, %zu null\n",
           n_runs, n_prob_checks, worst_prob_diff, n_absent, n_null);
    return TEST_DONE();
}
