/* test_arrays.c: arrays of objects, numbers and strings and presence
 * decisions on a real fixture model: the array in "values" has exactly the
 * length its length decision chose (or as many items as "more" answers),
 * items past it are inactive and never asked, the control decisions'
 * probabilities are the softmax of their candidates' logprobs, a given
 * length or presence is obeyed (null without generating, absent left out),
 * in every mode and style. */
#include <math.h>

#include "decide/decide.h"
#include "decide_fixture.h"

static const char *CONTEXT = "Jane (34) and Bob (41) met in Lyon on 2024-03-05. They bought 3 mugs and 2 plates.";

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"people\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"description\":\"Who is named\","
    " \"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},"
    "  \"age\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},{\"type\":\"null\"}]}},"
    "  \"required\":[\"name\",\"age\"]}},"
    "\"counts\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9},\"maxItems\":3,"
    " \"x-length\":\"open\"},"
    "\"place\":{\"type\":[\"object\",\"null\"],\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":6}}},"
    "\"note\":{\"type\":\"string\",\"maxLength\":6,\"x-optional\":\"ask\"},"
    "\"tags\":{\"type\":[\"array\",\"null\"],\"items\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5},"
    " \"maxItems\":2}},\"required\":[\"people\",\"counts\",\"place\",\"tags\"]}";

static const json_t *field(const json_t *res, const char *key) {
    return json_object_get(json_object_get(res, "fields"), key);
}

static double T; /* the run's temperature: probabilities are softmax(logprob / T) */

/* The probabilities of a decided categorical field are the softmax of its candidates' logprobs. */
static void check_softmax(const json_t *fj, const char *what) {
    const json_t *cands = json_object_get(fj, "candidates"), *probs = json_object_get(fj, "probabilities");
    double mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < json_array_size(cands); i++)
        mx = fmax(mx, json_number_value(json_object_get(json_array_get(cands, i), "logprob")));
    for (size_t i = 0; i < json_array_size(cands); i++)
        sum += exp((json_number_value(json_object_get(json_array_get(cands, i), "logprob")) - mx) / T);
    size_t i = 0;
    const char *k;
    const json_t *p;
    json_object_foreach((json_t *)probs, k, p) {
        double lp = json_number_value(json_object_get(json_array_get(cands, i++), "logprob"));
        CHECKF(fabs(json_number_value(p) - exp((lp - mx) / T) / sum) < 1e-9, "%s/%s: probability is not the softmax", what, k);
    }
    CHECKF(i == json_array_size(cands) && i >= 2, "%s: %zu probabilities", what, i);
}

static void check_result(const json_t *res, const char *what) {
    const json_t *values = json_object_get(res, "values");
    /* people: exactly the decided length; the items past it were not asked */
    const json_t *len = field(res, "people#length");
    CHECKF(!strcmp(json_string_value(json_object_get(len, "control")), "length"), "%s: length control", what);
    check_softmax(len, what);
    json_int_t n = json_integer_value(json_object_get(len, "value"));
    const json_t *people = json_object_get(values, "people");
    CHECKF(json_is_array(people) && (json_int_t)json_array_size(people) == n && n >= 1 && n <= 3,
           "%s: %zu people for length %lld", what, json_array_size(people), (long long)n);
    for (json_int_t i = 0; i < 3; i++) {
        char key[64];
        snprintf(key, sizeof key, "people/%lld/name", (long long)i);
        const json_t *fj = field(res, key);
        bool inactive = json_is_true(json_object_get(fj, "inactive"));
        CHECKF(inactive == (i >= n), "%s: %s inactive %d for length %lld", what, key, inactive, (long long)n);
        if (i < n) {
            const json_t *item = json_array_get(people, (size_t)i);
            CHECKF(json_equal(json_object_get(item, "name"), json_object_get(fj, "value")), "%s: %s value", what, key);
            snprintf(key, sizeof key, "people/%lld/age#present", (long long)i);
            const json_t *pj = field(res, key);
            check_softmax(pj, key);
            bool null = json_is_null(json_object_get(pj, "value"));
            const json_t *age = json_object_get(item, "age");
            CHECKF(null ? json_is_null(age) : json_is_integer(age), "%s: %s says %s, age is %s", what, key,
                   null ? "null" : "present", json_is_null(age) ? "null" : "a value");
        }
    }
    /* counts: open-ended; as many items as "more" answers before the first "done" */
    size_t more = 0;
    for (int i = 0; i < 3; i++) {
        char key[64];
        snprintf(key, sizeof key, "counts/%d#more", i);
        const json_t *m = field(res, key);
        if (json_is_true(json_object_get(m, "inactive")))
            break;
        check_softmax(m, key);
        const char *mv = json_string_value(json_object_get(m, "value"));
        if (!mv || strcmp(mv, "more"))
            break;
        more++;
    }
    CHECKF(json_array_size(json_object_get(values, "counts")) == more, "%s: %zu counts after %zu 'more'", what,
           json_array_size(json_object_get(values, "counts")), more);
    /* place: null or an object, as its presence decision says */
    const json_t *pp = field(res, "place#present");
    const char *pv = json_string_value(json_object_get(pp, "value"));
    bool present = pv && !strcmp(pv, "(present)");
    CHECKF(present ? json_is_object(json_object_get(values, "place")) : json_is_null(json_object_get(values, "place")),
           "%s: place vs its presence", what);
    /* note: absent or a string */
    bool absent = json_is_true(json_object_get(field(res, "note#present"), "absent"));
    CHECKF(absent ? !json_object_get(values, "note") : json_is_string(json_object_get(values, "note")),
           "%s: note vs its presence", what);
    /* tags: a nullable array: null (its length never asked) or as long as its length decision */
    const char *tv = json_string_value(json_object_get(field(res, "tags#present"), "value"));
    const json_t *tags = json_object_get(values, "tags");
    if (tv && !strcmp(tv, "(present)"))
        CHECKF(json_is_array(tags) && (json_int_t)json_array_size(tags) ==
                                          json_integer_value(json_object_get(field(res, "tags#length"), "value")),
               "%s: tags vs its length", what);
    else
        CHECKF(json_is_null(tags) && json_is_true(json_object_get(field(res, "tags#length"), "inactive")),
               "%s: tags null, its length inactive", what);
}

int main(void) {
    fixture fx;
    if (!fixture_open("models/qwen2-d64-q8_0.gguf", &fx)) {
        CHECK(0);
        return TEST_DONE();
    }
    json_t *schema = fixture_json(SCHEMA);
    static const char *modes[] = {"sequential", "batch", "auto"}, *styles[] = {"chat", "record"};
    for (int k = 0; k < 6; k++) {
        tl_decide_opts o = {.mode = modes[k % 3], .style = styles[k / 3], .temperature = k % 2 ? 1.5 : 0, .seed = (uint64_t)k};
        T = k % 2 ? 1.5 : 1.0;
        char what[64];
        snprintf(what, sizeof what, "%s/%s", o.mode, o.style);
        json_t *res = NULL;
        tl_error err = {0};
        tl_status st = tl_decide_json(fx.b, CONTEXT, strlen(CONTEXT), schema, &o, &res, &err);
        CHECKF(st == TL_OK, "%s: %s", what, err.msg);
        if (res)
            check_result(res, what);
        json_decref(res);
    }
    /* given shape decisions are obeyed: two people, no counts, place null, note absent */
    json_t *given = fixture_json("{\"people#length\":2,\"counts/0#more\":\"done\",\"place#present\":null,\"tags#present\":null}");
    tl_decide_opts o = {.mode = "auto"};
    json_t *res = NULL;
    tl_error err = {0};
    CHECK(tl_decide_given_json(fx.b, CONTEXT, strlen(CONTEXT), schema, given, &o, &res, &err) == TL_OK);
    if (res) {
        const json_t *values = json_object_get(res, "values");
        CHECK(json_array_size(json_object_get(values, "people")) == 2);
        CHECK(json_is_array(json_object_get(values, "counts")) && json_array_size(json_object_get(values, "counts")) == 0);
        CHECK(json_is_null(json_object_get(values, "place")));
        CHECK(json_is_null(json_object_get(values, "tags"))); /* a required nullable array decided null */
        CHECK(json_is_true(json_object_get(field(res, "place/city"), "inactive")));
        CHECK(json_is_true(json_object_get(field(res, "people/2/name"), "inactive")));
        CHECK(json_is_true(json_object_get(field(res, "people#length"), "given")));
    }
    json_decref(res);
    json_decref(given);
    json_decref(schema);
    fixture_close(&fx);
    return TEST_DONE();
}
