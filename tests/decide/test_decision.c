/* test_decision.c: the public decision API (typellm/decide.h) on a fixture
 * model, through the public headers only (jansson just to read documents):
 *   - tl_schema_parse errors: line:column for bad JSON, the JSON path for a bad schema;
 *   - tl_decision_to_json is the document the JSON entry point returns (timing aside);
 *   - every accessor agrees with that document: keys in schema order, paths,
 *     names, kinds, types, values, labels, choices, probabilities, usage;
 *   - label_mass equals the probability mass on the label tokens recomputed
 *     from the engine's full logits at the traced position;
 *   - given answers, abstention, generated numbers, open fields, tl_value accessors. */
#include <jansson.h>
#include <math.h>

#include "decide/decide.h" /* tl_decide_json: the document to compare with */
#include "tl_test.h"
#include "typellm/typellm.h"
#include "util/json_text.h"

static const char *CONTEXT = "Ticket #4411: checkout returns HTTP 500 since the payments-api deploy.";

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"system\":{\"type\":\"string\",\"enum\":[\"database\",\"payments\",\"frontend\"],\"question\":\"Which system?\"},"
    "\"customer_facing\":{\"type\":\"boolean\",\"x-name\":\"visible\"},"
    "\"severity\":{\"type\":\"integer\",\"enum\":[1,2,3,4]},"
    "\"urgency\":{\"type\":\"number\",\"format\":\"score\"},"
    "\"count\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":99}}}";

static const char *KEYS[] = {"system", "customer_facing", "severity", "urgency", "count"};
static const char *TYPES[] = {"string", "boolean", "integer", "score", "integer"};

static tl_schema *parse_schema(const char *text) {
    tl_schema *s = NULL;
    tl_error err = {0};
    tl_status st = tl_schema_parse(text, strlen(text), &s, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    return s;
}

static void test_schema_errors(void) {
    tl_schema *s = (tl_schema *)1;
    tl_error err = {0};
    const char *bad_json = "{\"type\":\"object\",\n \"properties\": {,}}";
    CHECK(tl_schema_parse(bad_json, strlen(bad_json), &s, &err) == TL_ERR_SCHEMA);
    CHECK(s == NULL);
    CHECKF(strstr(err.msg, "2:") && strstr(err.msg, "invalid JSON"), "%s", err.msg);
    const char *bad = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[]}}}";
    CHECK(tl_schema_parse(bad, strlen(bad), &s, &err) == TL_ERR_SCHEMA);
    CHECKF(strstr(err.msg, "/properties/a"), "%s", err.msg);
    s = parse_schema(SCHEMA);
    CHECK(tl_schema_n_fields(s) == 5);
    tl_schema_free(s);
    tl_schema_free(NULL);
}

/* log-softmax of logits at the candidate tokens, summed as probabilities. */
static double mass_from_logits(const float *logits, int32_t nv, const int32_t *tok, size_t n) {
    double max = -INFINITY, sum = 0;
    for (int32_t i = 0; i < nv; i++)
        if (logits[i] > max)
            max = logits[i];
    for (int32_t i = 0; i < nv; i++)
        sum += exp((double)logits[i] - max);
    double mass = 0;
    for (size_t j = 0; j < n; j++)
        mass += exp((double)logits[tok[j]] - max) / sum;
    return mass;
}

static void drop_timing(json_t *doc) { json_object_del(doc, "timing_ms"); }

static void test_decision(tl_model *m) {
    tl_error err = {0};
    tl_backend *b = NULL, *ref = NULL;
    tl_session_params sp = {.n_threads = 1};
    CHECK(tl_backend_local_new(m, &sp, &b, &err) == TL_OK);
    CHECK(tl_backend_local_new(m, &sp, &ref, &err) == TL_OK);
    tl_schema *schema = parse_schema(SCHEMA);
    tl_decide_opts opts = {.mode = "sequential", .trace = true};
    tl_decision *d = NULL;
    tl_status st = tl_decide(b, CONTEXT, strlen(CONTEXT), schema, &opts, &d, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    if (st)
        goto out;

    /* the document equals the JSON entry point's (a fresh backend: same numbers) */
    char *text = tl_decision_to_json(d, 0);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    CHECK(doc != NULL);
    json_t *schema_json = json_loads(SCHEMA, 0, &je), *direct = NULL;
    tl_backend *b2 = NULL;
    CHECK(tl_backend_local_new(m, &sp, &b2, &err) == TL_OK);
    CHECK(tl_decide_json(b2, CONTEXT, strlen(CONTEXT), schema_json, &opts, &direct, &err) == TL_OK);
    drop_timing(doc);
    drop_timing(direct);
    CHECK(json_equal(doc, direct));
    json_decref(direct);
    json_decref(schema_json);
    tl_backend_free(b2);

    char *indented = tl_decision_to_json(d, TL_JSON_INDENT);
    CHECK(indented && strstr(indented, "\n  \"values\""));
    char *values = tl_decision_to_json(d, TL_JSON_VALUES_ONLY);
    json_t *vj = json_loads(values, 0, &je);
    CHECK(json_equal(vj, json_object_get(doc, "values")));
    json_decref(vj);
    tl_free(values);
    tl_free(indented);
    tl_free(text);

    CHECK(tl_decision_n_fields(d) == 5);
    CHECK(!strcmp(tl_decision_mode(d), "sequential"));
    CHECK(tl_decision_style(d) != NULL);
    CHECK(tl_decision_find(d, "severity") == 2 && tl_decision_find(d, "nope") == -1);
    tl_usage u;
    tl_decision_usage(d, &u);
    const json_t *uj = json_object_get(doc, "usage");
    CHECK(u.prompt_tokens == json_integer_value(json_object_get(uj, "prompt_tokens")) && u.prompt_tokens > 0);
    CHECK(u.forward_passes == json_integer_value(json_object_get(uj, "forward_passes")) && u.forward_passes > 0);
    double prep, score, total;
    tl_decision_timing(d, &prep, &score, &total);
    CHECK(prep >= 0 && score >= 0 && total >= prep);

    int32_t nv = tl_model_n_vocab(m);
    float *logits = malloc((size_t)nv * sizeof *logits);
    const json_t *fields = json_object_get(doc, "fields");
    for (size_t i = 0; i < 5; i++) {
        const json_t *fj = json_object_get(fields, KEYS[i]);
        CHECK(!strcmp(tl_decision_field_key(d, i), KEYS[i]));
        CHECK(!strcmp(tl_decision_field_type(d, i), TYPES[i]));
        char path[64];
        snprintf(path, sizeof path, "/properties/%s", KEYS[i]);
        CHECK(!strcmp(tl_decision_field_path(d, i), path));
        CHECK(!strcmp(tl_decision_field_name(d, i), i == 1 ? "visible" : KEYS[i]));
        CHECK(!tl_decision_field_abstained(d, i) && !tl_decision_field_given(d, i));
        char *vtext = tl_value_to_json(tl_decision_field_value(d, i));
        char *want = tl_json_dumps(json_object_get(fj, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
        CHECKF(!strcmp(vtext, want), "%s: %s vs %s", KEYS[i], vtext, want);
        tl_free(vtext);
        free(want);
        if (i == 4) {
            CHECK(tl_decision_field_kind(d, i) == TL_FIELD_GENERATED);
            CHECK(tl_decision_field_n_choices(d, i) == 0 && tl_decision_field_chosen(d, i) == -1);
            CHECK(tl_value_type_of(tl_decision_field_value(d, i)) == TL_VALUE_INTEGER);
            int64_t c = tl_value_integer(tl_decision_field_value(d, i));
            CHECK(c >= 0 && c <= 99);
            CHECK(isnan(tl_decision_field_label_mass(d, i)));
            CHECK(tl_decision_field_probability(d, i) > 0 && tl_decision_field_probability(d, i) <= 1);
            continue;
        }
        CHECK(tl_decision_field_kind(d, i) == TL_FIELD_CHOICE);
        size_t nc = tl_decision_field_n_choices(d, i);
        CHECK(nc == json_array_size(json_object_get(fj, "candidates")));
        long chosen = tl_decision_field_chosen(d, i);
        CHECK(chosen >= 0 && (size_t)chosen < nc);
        CHECK(!strcmp(tl_decision_field_label(d, i), json_string_value(json_object_get(fj, "label"))));
        double psum = 0, best = -1;
        int32_t toks[16];
        for (size_t j = 0; j < nc && j < 16; j++) {
            double p = tl_decision_choice_probability(d, i, j);
            psum += p;
            if (p > best)
                best = p;
            toks[j] = tl_decision_choice_token(d, i, j);
            const json_t *cj = json_array_get(json_object_get(fj, "candidates"), j);
            CHECK(toks[j] == json_integer_value(json_object_get(cj, "token")));
            CHECK(tl_decision_choice_logprob(d, i, j) == json_real_value(json_object_get(cj, "logprob")));
            CHECK(!strcmp(tl_decision_choice_label(d, i, j), json_string_value(json_object_get(cj, "label"))));
        }
        CHECK(fabs(psum - 1) < 1e-9);
        CHECK(tl_decision_field_probability(d, i) == best); /* argmax at temperature 0 */
        /* label_mass from the full logits at the traced position */
        const json_t *ids = json_object_get(json_object_get(fj, "trace"), "ids");
        size_t n = json_array_size(ids);
        int32_t *seq = malloc(n * sizeof *seq);
        for (size_t k = 0; k < n; k++)
            seq[k] = (int32_t)json_integer_value(json_array_get(ids, k));
        CHECK(tl_backend_next_logits(ref, seq, n, logits, NULL, &err) == TL_OK);
        double want_mass = mass_from_logits(logits, nv, toks, nc);
        double mass = tl_decision_field_label_mass(d, i);
        CHECKF(fabs(mass - want_mass) < 1e-6 * (want_mass > 1e-3 ? want_mass : 1e-3), "%s: %.9g vs %.9g", KEYS[i],
               mass, want_mass);
        CHECK(mass > 0 && mass <= 1 + 1e-9);
        free(seq);
    }
    free(logits);
    /* out-of-range indices */
    CHECK(tl_decision_field_key(d, 9) == NULL && tl_decision_choice_label(d, 0, 99) == NULL);
    CHECK(isnan(tl_decision_field_probability(d, 9)) && tl_decision_field_chosen(d, 9) == -1);

    /* tl_value accessors over the values object */
    const tl_value *vals = tl_decision_values(d);
    CHECK(tl_value_type_of(vals) == TL_VALUE_OBJECT && tl_value_size(vals) == 5);
    CHECK(!strcmp(tl_value_key_at(vals, 1), "customer_facing"));
    CHECK(tl_value_type_of(tl_value_get(vals, "customer_facing")) == TL_VALUE_BOOL);
    CHECK(tl_value_at(vals, 0) == tl_value_get(vals, "system"));
    size_t len = 0;
    const char *sys = tl_value_string(tl_value_get(vals, "system"), &len);
    CHECK(sys && len == strlen(sys) && (!strcmp(sys, "database") || !strcmp(sys, "payments") || !strcmp(sys, "frontend")));
    CHECK(tl_value_type_of(tl_value_get(vals, "urgency")) == TL_VALUE_REAL);
    double urg = tl_value_number(tl_value_get(vals, "urgency"));
    CHECK(urg >= 0 && urg <= 1);
    CHECK(tl_value_string(tl_value_get(vals, "urgency"), NULL) == NULL); /* mismatched accessor */
    json_decref(doc);
    tl_decision_free(d);
    d = NULL;

    /* given answers and abstention */
    const char *given = "{\"system\":\"payments\"}";
    tl_decide_opts th = {.threshold = 0.999999};
    st = tl_decide_given(b, CONTEXT, strlen(CONTEXT), schema, given, strlen(given), &th, &d, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    if (!st) {
        CHECK(tl_decision_field_given(d, 0) && tl_decision_field_probability(d, 0) == 1);
        CHECK(isnan(tl_decision_field_label_mass(d, 0)));
        CHECK(!strcmp(tl_value_string(tl_decision_field_value(d, 0), NULL), "payments"));
        CHECK(tl_decision_field_abstained(d, 2)); /* random weights never reach 0.999999 on 4 values */
        CHECK(tl_value_type_of(tl_decision_field_value(d, 2)) == TL_VALUE_NULL);
        CHECK(tl_decision_field_label(d, 2) == NULL && tl_decision_field_chosen(d, 2) == -1);
        CHECK(isnan(tl_decision_field_probability(d, 2)));
        CHECK(tl_decision_field_label_mass(d, 2) > 0);
    }
    tl_decision_free(d);
    d = NULL;
    const char *bad_given = "{\"nope\":1}";
    CHECK(tl_decide_given(b, CONTEXT, strlen(CONTEXT), schema, bad_given, strlen(bad_given), NULL, &d, &err) ==
          TL_ERR_INVALID);
    CHECKF(strstr(err.msg, "given/nope"), "%s", err.msg);
    CHECK(d == NULL);
    CHECK(tl_decide_given(b, CONTEXT, strlen(CONTEXT), schema, "{", 1, NULL, &d, &err) == TL_ERR_INVALID);
    CHECK(tl_decide(b, CONTEXT, strlen(CONTEXT), NULL, NULL, &d, &err) == TL_ERR_INVALID);
out:
    tl_decision_free(d);
    tl_schema_free(schema);
    tl_backend_free(ref);
    tl_backend_free(b);
}

/* An open field: its choices are the declared values then the open option
 * (value null); given a written value, that option is chosen and the value is the text. */
static void test_open_field(tl_model *m) {
    static const char *OPEN =
        "{\"type\":\"object\",\"properties\":{"
        "\"channel\":{\"type\":\"string\",\"enum\":[\"email\",\"phone\"],\"x-open\":\"elsewhere\"},"
        "\"urgent\":{\"type\":\"boolean\"}}}";
    tl_error err = {0};
    tl_backend *b = NULL;
    tl_session_params sp = {.n_threads = 1};
    CHECK(tl_backend_local_new(m, &sp, &b, &err) == TL_OK);
    tl_schema *schema = parse_schema(OPEN);
    tl_decision *d = NULL;
    CHECK(tl_decide(b, CONTEXT, strlen(CONTEXT), schema, NULL, &d, &err) == TL_OK);
    if (d) {
        CHECK(tl_decision_field_kind(d, 0) == TL_FIELD_OPEN && !strcmp(tl_decision_field_type(d, 0), "string"));
        CHECK(tl_decision_field_n_choices(d, 0) == 3);
        CHECK(tl_value_type_of(tl_decision_choice_value(d, 0, 2)) == TL_VALUE_NULL);
        double psum = 0;
        for (size_t j = 0; j < 3; j++)
            psum += tl_decision_choice_probability(d, 0, j);
        CHECK(fabs(psum - 1) < 1e-9);
        long c = tl_decision_field_chosen(d, 0);
        CHECK(c >= 0 && c < 3);
        CHECK(tl_value_type_of(tl_decision_field_value(d, 0)) == TL_VALUE_STRING);
        CHECK(tl_decision_field_probability(d, 0) == tl_decision_choice_probability(d, 0, (size_t)c));
        CHECK(tl_decision_field_label_mass(d, 0) > 0);
    }
    tl_decision_free(d);
    d = NULL;
    const char *given = "{\"channel\":\"a carrier pigeon\"}";
    CHECK(tl_decide_given(b, CONTEXT, strlen(CONTEXT), schema, given, strlen(given), NULL, &d, &err) == TL_OK);
    if (d) {
        CHECK(tl_decision_field_given(d, 0) && tl_decision_field_chosen(d, 0) == 2);
        CHECK(!strcmp(tl_value_string(tl_decision_field_value(d, 0), NULL), "a carrier pigeon"));
        CHECK(tl_decision_choice_probability(d, 0, 2) == 1 && tl_decision_choice_probability(d, 0, 0) == 0);
        CHECK(tl_decision_field_probability(d, 0) == 1);
        CHECK(isnan(tl_decision_choice_logprob(d, 0, 0))); /* not scored */
        CHECK(!tl_decision_field_given(d, 1) && tl_decision_field_chosen(d, 1) >= 0);
    }
    tl_decision_free(d);
    tl_schema_free(schema);
    tl_backend_free(b);
}

int main(void) {
    test_schema_errors();
    tl_model *m = NULL;
    tl_error err = {0};
    if (tl_model_load(tl_fixture("models/qwen2-d64-q8_0.gguf"), &m, &err) != TL_OK) {
        fprintf(stderr, "cannot load fixture: %s\n", err.msg);
        return 1;
    }
    test_decision(m);
    test_open_field(m);
    tl_model_free(m);
    return TEST_DONE();
}
