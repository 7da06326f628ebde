/* test_open.c: open string fields ("open": true / "x-open") and x-domain-from
 * on the fixture models. Random weights write garbage text, which is exactly
 * why the machinery must bound it: these tests check that
 *   - every open value is a string of at most maxLength code points, every
 *     run ends, every non-open pick is a declared value (random schemas,
 *     seeds, temperatures, styles and modes);
 *   - the open path (label, then free text) works in both styles and all
 *     three modes, forced by sampling seeds until the open label is drawn;
 *   - a written value joins a later x-domain-from field's domain (sequential),
 *     and not when both run in the same batch;
 *   - schema errors name the JSON path. */
#include <jansson.h>
#include <math.h>

#include "backend/backend.h"
#include "constrain/constrain.h"
#include "decide/decide.h"
#include "engine/engine.h"
#include "tl_test.h"

static const char *CONTEXT = "Ticket #93: the mobile app logs users out every few minutes since version 4.2; "
                             "web login works. Customer asks for a refund of the annual plan.";

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

static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static json_t *run(tl_backend *b, const json_t *schema, const tl_decide_opts *o) {
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_json(b, CONTEXT, strlen(CONTEXT), schema, o, &res, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    return res;
}

/* Every field of res against its schema: open values are strings within
 * maxLength with the open label's probability; other values are declared. */
static void check_fields(const json_t *schema, const json_t *res) {
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop) {
        json_t *f = json_object_get(json_object_get(res, "fields"), key);
        json_t *v = json_object_get(json_object_get(res, "values"), key);
        CHECKF(f && v, "%s missing", key);
        if (!f || !v || json_is_null(v))
            continue;
        double sum = 0;
        const char *k;
        json_t *p;
        json_object_foreach(json_object_get(f, "probabilities"), k, p) sum += json_real_value(p);
        CHECKF(fabs(sum - 1) < 1e-9, "%s: probabilities sum to %.12f", key, sum);
        json_t *en = json_object_get(prop, "enum");
        bool open_field = json_is_true(json_object_get(prop, "open")) || json_object_get(prop, "x-open");
        if (json_is_true(json_object_get(f, "open"))) {
            CHECKF(open_field, "%s: open value on a closed field", key);
            json_t *ml = json_object_get(prop, "maxLength");
            size_t max = ml ? (size_t)json_integer_value(ml) : 256;
            CHECKF(json_is_string(v) && utf8_chars(json_string_value(v)) <= max, "%s: open value too long", key);
            CHECK(json_integer_value(json_object_get(f, "characters")) == (json_int_t)utf8_chars(json_string_value(v)));
            const char *name = json_object_get(prop, "x-open") ? json_string_value(json_object_get(prop, "x-open"))
                                                               : "other";
            double po = json_real_value(json_object_get(json_object_get(f, "probabilities"), name));
            CHECKF(fabs(po - json_real_value(json_object_get(f, "probability"))) < 1e-12, "%s: open probability",
                   key);
            /* the label is the open candidate's, the last one */
            json_t *cands = json_object_get(f, "candidates");
            json_t *last = json_array_get(cands, json_array_size(cands) - 1);
            CHECK(json_is_true(json_object_get(last, "open")) && json_is_null(json_object_get(last, "value")));
            CHECK(json_equal(json_object_get(last, "label"), json_object_get(f, "label")));
        } else if (en) {
            bool found = false;
            for (size_t i = 0; i < json_array_size(en); i++)
                found |= json_equal(json_array_get(en, i), v);
            CHECKF(found, "%s: value not in enum", key);
        }
    }
}

/* Random open schemas, seeds, temperatures, styles and modes. */
static void test_property(fixture *fx, int rounds) {
    static const char *words[] = {"bug", "billing", "refund", "login", "crash", "praise"};
    const char *modes[] = {"sequential", "batch", "auto"};
    uint64_t rng = 12345;
    int opened = 0;
    for (int round = 0; round < rounds; round++) {
        json_t *props = json_object();
        int n_fields = 1 + (int)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % 3;
        for (int fi = 0; fi < n_fields; fi++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            unsigned r = (unsigned)(rng >> 33);
            json_t *en = json_array();
            int nv = 1 + (int)(r % 3);
            for (int i = 0; i < nv; i++)
                json_array_append_new(en, json_string(words[(r / 3 + (unsigned)i) % 6]));
            json_t *prop = json_pack("{s:s, s:o}", "type", "string", "enum", en);
            if (r & 0x100) {
                json_object_set_new(prop, "open", json_true());
                json_object_set_new(prop, "maxLength", json_integer(1 + (r >> 10) % 16));
            } else if (r & 0x200) {
                json_object_set_new(prop, "x-open", json_string("something else"));
                json_object_set_new(prop, "maxLength", json_integer(1 + (r >> 12) % 8));
                json_object_set_new(prop, "x-max-tokens", json_integer(1 + (r >> 15) % 6));
            }
            char key[16];
            snprintf(key, sizeof key, "f%d", fi);
            json_object_set_new(props, key, prop);
        }
        json_t *schema = json_pack("{s:o}", "properties", props);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        tl_decide_opts o = {.mode = modes[(rng >> 40) % 3],
                            .style = (rng >> 45) & 1 ? "record" : "chat",
                            .chat_template = "chatml",
                            .temperature = (double)((rng >> 50) % 4),
                            .seed = rng};
        json_t *res = run(fx->b, schema, &o);
        if (res) {
            check_fields(schema, res);
            const char *k;
            json_t *f;
            json_object_foreach(json_object_get(res, "fields"), k, f) opened += json_is_true(json_object_get(f, "open"));
        }
        json_decref(res);
        json_decref(schema);
    }
    fprintf(stderr, "property: %d rounds, %d open values written\n", rounds, opened);
    CHECK(opened > 0); /* the random rounds must reach the free-text path */
}

/* Seeds at temperature 2 until the open label of field "what" is drawn; returns that result. */
static json_t *force_open(fixture *fx, const json_t *schema, tl_decide_opts o) {
    o.temperature = 2;
    for (uint64_t seed = 1; seed < 200; seed++) {
        o.seed = seed;
        json_t *res = run(fx->b, schema, &o);
        if (!res)
            return NULL;
        if (json_is_true(json_object_get(json_object_get(json_object_get(res, "fields"), "what"), "open")))
            return res;
        json_decref(res);
    }
    return NULL;
}

/* The open path in both styles and all modes; a later field still runs and,
 * in sequential mode, its prompt shows the written value. */
static void test_forced(fixture *fx) {
    json_t *schema = parse("{\"properties\":{"
                           "\"what\":{\"type\":\"string\",\"enum\":[\"bug\"],\"open\":true,\"maxLength\":12},"
                           "\"urgent\":{\"type\":\"boolean\"}}}");
    const char *styles[] = {"record", "chat"}, *modes[] = {"sequential", "batch", "auto"};
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < 3; m++) {
            tl_decide_opts o = {.mode = modes[m], .style = styles[s], .chat_template = "chatml", .trace = true};
            json_t *res = force_open(fx, schema, o);
            CHECKF(res != NULL, "open label never drawn (%s, %s)", styles[s], modes[m]);
            if (!res)
                continue;
            check_fields(schema, res);
            json_t *what = json_object_get(json_object_get(res, "fields"), "what");
            CHECK(json_integer_value(json_object_get(what, "tokens")) >= 1 ||
                  json_is_true(json_object_get(what, "closed")));
            json_t *urgent = json_object_get(json_object_get(res, "values"), "urgent");
            CHECK(json_is_boolean(urgent));
            const char *value = json_string_value(json_object_get(json_object_get(res, "values"), "what"));
            const char *t = json_string_value(
                json_object_get(json_object_get(json_object_get(json_object_get(res, "fields"), "urgent"), "trace"),
                                "text"));
            /* the question names the open label */
            const char *qt = json_string_value(json_object_get(json_object_get(what, "trace"), "text"));
            CHECK(qt && strstr(qt, "open={\"B\":\"other\"}"));
            if (m == 0 && t && value) {
                /* sequential: the next prompt holds the written value after the label */
                tl_strbuf want = TL_STRBUF_INIT;
                if (s == 0) {
                    tl_strbuf_puts(&want, "B\"\nvalue=\"");
                    tl_freetext_escape(&want, value, strlen(value));
                    tl_strbuf_puts(&want, "\"\n\n");
                } else {
                    tl_strbuf_printf(&want, "B\n%s<|im_end|>", value);
                }
                CHECKF(strstr(t, tl_strbuf_cstr(&want)) != NULL, "written value not in the next prompt (%s)",
                       styles[s]);
                tl_strbuf_free(&want);
            }
            json_decref(res);
        }
    json_decref(schema);
}

/* x-domain-from: the written value is a new choice of the later field. */
static void test_domain_growth(fixture *fx) {
    json_t *schema = parse("{\"properties\":{"
                           "\"what\":{\"type\":\"string\",\"enum\":[\"bug\"],\"x-open\":\"new\",\"maxLength\":10},"
                           "\"same\":{\"type\":\"string\",\"enum\":[\"bug\"],\"x-domain-from\":\"what\"}}}");
    const char *modes[] = {"sequential", "auto", "batch"};
    for (int m = 0; m < 3; m++) {
        tl_decide_opts o = {.mode = modes[m], .style = "record", .trace = true};
        json_t *res = force_open(fx, schema, o);
        CHECKF(res != NULL, "open label never drawn (%s)", modes[m]);
        if (!res)
            continue;
        const char *written = json_string_value(json_object_get(json_object_get(res, "values"), "what"));
        json_t *same = json_object_get(json_object_get(res, "fields"), "same");
        json_t *cands = json_object_get(same, "candidates");
        json_t *probs = json_object_get(same, "probabilities");
        bool grows = m < 2 && written && strcmp(written, "bug") && strcmp(written, "new");
        CHECKF(json_array_size(cands) == (grows ? 2u : 1u), "%s: %zu candidates", modes[m], json_array_size(cands));
        if (grows) {
            CHECK(json_object_get(probs, written) != NULL);
            json_t *c = json_array_get(cands, 1);
            CHECK(!strcmp(json_string_value(json_object_get(c, "value")), written));
            const char *v = json_string_value(json_object_get(json_object_get(res, "values"), "same"));
            CHECK(v && (!strcmp(v, "bug") || !strcmp(v, written)));
            /* the question offers it as a choice, JSON-encoded */
            const char *qt = json_string_value(json_object_get(json_object_get(same, "trace"), "text"));
            json_t *js = json_string(written);
            char *enc = json_dumps(js, JSON_ENCODE_ANY | JSON_COMPACT);
            CHECK(qt && enc && strstr(qt, enc));
            free(enc);
            json_decref(js);
        }
        json_decref(res);
    }
    json_decref(schema);
}

/* A given open value is rendered as written and grows x-domain-from domains. */
static void test_given(fixture *fx) {
    json_t *schema = parse("{\"properties\":{"
                           "\"what\":{\"type\":\"string\",\"enum\":[\"bug\"],\"open\":true,\"maxLength\":20},"
                           "\"same\":{\"type\":\"string\",\"enum\":[\"bug\"],\"x-domain-from\":\"what\"}}}");
    json_t *given = parse("{\"what\":\"sync \\\"drift\\\"\"}"), *res = NULL;
    tl_decide_opts o = {.style = "record", .trace = true};
    tl_error err = {0};
    CHECKF(tl_decide_given_json(fx->b, CONTEXT, strlen(CONTEXT), schema, given, &o, &res, &err) == TL_OK, "%s", err.msg);
    if (res) {
        json_t *what = json_object_get(json_object_get(res, "fields"), "what");
        CHECK(json_is_true(json_object_get(what, "open")) && json_is_true(json_object_get(what, "given")));
        CHECK(!strcmp(json_string_value(json_object_get(what, "value")), "sync \"drift\""));
        json_t *same = json_object_get(json_object_get(res, "fields"), "same");
        CHECK(json_array_size(json_object_get(same, "candidates")) == 2);
        const char *qt = json_string_value(json_object_get(json_object_get(same, "trace"), "text"));
        CHECK(qt && strstr(qt, "answer=\"B\"\nvalue=\"sync \\\"drift\\\"\"\n\n"));
        CHECK(qt && strstr(qt, "choices={\"A\":\"bug\",\"B\":\"sync \\\"drift\\\"\"}"));
    }
    json_decref(res);
    res = NULL;
    json_decref(given);
    given = parse("{\"what\":\"far longer than twenty characters\"}");
    CHECK(tl_decide_given_json(fx->b, CONTEXT, strlen(CONTEXT), schema, given, &o, &res, &err) == TL_ERR_INVALID &&
          strstr(err.msg, "maxLength"));
    json_decref(given);
    json_decref(schema);
}

static void expect_schema_error(const char *text, const char *want) {
    json_t *schema = parse(text);
    tl_error err = {0};
    tl_status st = tl_decide_check_schema(schema, &err);
    CHECKF(st == TL_ERR_SCHEMA && strstr(err.msg, want), "want '%s', got %d '%s'", want, (int)st, err.msg);
    json_decref(schema);
}

static void test_errors(void) {
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"open\":true}}}", "/properties/a/open");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"integer\",\"enum\":[1,2],\"x-open\":\"x\"}}}",
                        "/properties/a/x-open");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"integer\",\"open\":true}}}", "/properties/a");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":1}}}",
                        "/properties/a/open");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-open\":\"\"}}}",
                        "/properties/a/x-open");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true,\"maxLength\":0}}}",
                        "/properties/a/maxLength");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true,\"maxLength\":-3}}}",
                        "/properties/a/maxLength");
    expect_schema_error(
        "{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true,\"maxLength\":\"9\"}}}",
        "/properties/a/maxLength");
    expect_schema_error(
        "{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true,\"maxLength\":100000}}}",
        "/properties/a/maxLength");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"other\"],\"open\":true}}}",
                        "/properties/a/enum/0");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-domain-from\":\"zz\"}}}",
                        "/properties/a/x-domain-from: unknown field 'zz'");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-domain-from\":\"b\"},"
                        "\"b\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true}}}",
                        "/properties/a/x-domain-from: later field 'b'");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-domain-from\":\"a\"}}}",
                        "/properties/a/x-domain-from: later field 'a'");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"]},"
                        "\"b\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-domain-from\":\"a\"}}}",
                        "/properties/b/x-domain-from: field 'a' is not open");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"open\":true},"
                        "\"b\":{\"type\":\"boolean\",\"x-domain-from\":\"a\"}}}",
                        "/properties/b/x-domain-from");
    expect_schema_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\"],\"x-domain-from\":7}}}",
                        "/properties/a/x-domain-from");
}

int main(void) {
    test_errors();
    fixture fx;
    if (open_model("models/qwen2-d64-q8_0.gguf", &fx)) {
        test_forced(&fx);
        test_domain_growth(&fx);
        test_given(&fx);
        test_property(&fx, 40);
        close_model(&fx);
    } else {
        CHECK(0);
    }
    if (open_model("models/llama-spm-d64-q8_0.gguf", &fx)) {
        test_forced(&fx);
        test_property(&fx, 20);
        close_model(&fx);
    } else {
        CHECK(0);
    }
    return TEST_DONE();
}
