/* test_schema.c: the schema layer: what each accepted shape becomes, and one
 * test per error class, each checking the code and the JSON path named. */
#include <jansson.h>

#include "decide/decide.h"
#include "decide/plan.h"
#include "decide/schema.h"
#include "tl_test.h"

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fprintf(stderr, "bad test JSON: %s: %s\n", je.text, text);
    return j;
}

/* The schema must fail with code and a message containing `where`. */
static void expect_error(const char *text, tl_status code, const char *where) {
    json_t *j = parse(text);
    tl_dschema *s = NULL;
    tl_error err = {0};
    tl_status st = tl_dschema_parse(j, &s, &err);
    CHECKF(st == code, "%s: got %s (%s)", text, tl_status_name(st), err.msg);
    CHECKF(strstr(err.msg, where) != NULL, "%s: message '%s' lacks '%s'", text, err.msg, where);
    CHECK(s == NULL);
    /* The public check agrees. */
    tl_error err2 = {0};
    CHECK(tl_decide_check_schema(j, &err2) == code);
    json_decref(j);
}

static tl_dschema *expect_ok(const char *text) {
    json_t *j = parse(text);
    tl_dschema *s = NULL;
    tl_error err = {0};
    tl_status st = tl_dschema_parse(j, &s, &err);
    CHECKF(st == TL_OK, "%s: %s", text, err.msg);
    json_decref(j); /* the parsed schema owns copies */
    return s;
}

static void test_shapes(void) {
    tl_dschema *s = expect_ok(
        "{\"type\":\"object\",\"title\":\"Expenses\",\"description\":\"Classify receipts.\","
        "\"properties\":{"
        " \"expense_type\":{\"type\":\"string\",\"enum\":[\"meal\",\"travel\",\"equipment\"],"
        "   \"question\":\"What type of expense is this?\",\"x-descriptions\":{\"meal\":\"food and drink\"}},"
        " \"refundable\":{\"type\":\"boolean\",\"description\":\"Can it be refunded?\"},"
        " \"confidence\":{\"type\":\"number\",\"format\":\"score\"},"
        " \"seats\":{\"type\":\"integer\",\"enum\":[1,2,4]},"
        " \"ratio\":{\"type\":\"number\",\"enum\":[0.5,1,2.25]},"
        " \"sev\":{\"$ref\":\"#/$defs/Severity\",\"x-name\":\"q1\",\"depends_on\":[\"expense_type\"]},"
        " \"tone\":{\"oneOf\":[{\"const\":\"calm\",\"description\":\"no heat\"},{\"const\":\"angry\"}]}"
        "},\"required\":[\"expense_type\"],"
        "\"$defs\":{\"Severity\":{\"type\":\"string\",\"enum\":[\"low\",\"high\"],\"question\":\"How bad?\"}}}");
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(s->n_fields == 7);
    CHECK(!strcmp(s->title, "Expenses") && !strcmp(s->description, "Classify receipts."));
    const tl_dfield *f = &s->fields[0];
    CHECK(f->kind == TL_DFIELD_STRING_ENUM && f->n_values == 3 && f->required);
    CHECK(!strcmp(f->question, "What type of expense is this?") && !strcmp(f->name, "expense_type"));
    CHECK(!strcmp(f->value_keys[1], "travel") && !strcmp(f->value_json[1], "\"travel\""));
    CHECK(f->value_descs[0] && !strcmp(f->value_descs[0], "food and drink") && !f->value_descs[1]);
    CHECK(!strcmp(f->path, "/properties/expense_type"));
    f = &s->fields[1];
    CHECK(f->kind == TL_DFIELD_BOOLEAN && f->n_values == 2 && json_is_true(f->values[0]) && !f->required);
    CHECK(!strcmp(f->question, "Can it be refunded?"));
    f = &s->fields[2];
    CHECK(f->kind == TL_DFIELD_SCORE && f->n_values == 11);
    CHECK(!strcmp(f->value_keys[0], "0.0") && !strcmp(f->value_keys[3], "0.3") && !strcmp(f->value_keys[10], "1.0"));
    CHECK(!strcmp(f->question, "confidence")); /* no question, no description: the name */
    f = &s->fields[3];
    CHECK(f->kind == TL_DFIELD_INTEGER_ENUM && json_is_integer(f->values[2]) && !strcmp(f->value_keys[2], "4"));
    f = &s->fields[4];
    CHECK(f->kind == TL_DFIELD_NUMBER_ENUM && !strcmp(f->value_keys[0], "0.5") && !strcmp(f->value_keys[1], "1"));
    f = &s->fields[5];
    CHECK(f->kind == TL_DFIELD_STRING_ENUM && f->n_values == 2 && !strcmp(f->name, "q1") && !strcmp(f->key, "sev"));
    CHECK(!strcmp(f->question, "How bad?"));
    CHECK(f->n_deps == 1 && f->deps[0] == 0 && s->any_deps);
    f = &s->fields[6];
    CHECK(f->kind == TL_DFIELD_STRING_ENUM && f->n_values == 2 && f->value_descs[0] && !f->value_descs[1]);
    CHECK(tl_dschema_find(s, "tone") == 6 && tl_dschema_find(s, "nope") == -1);
    json_t *one = json_integer(1), *onef = json_real(1.0), *three = json_integer(3);
    CHECK(tl_dfield_value_index(&s->fields[4], one) == 1);
    CHECK(tl_dfield_value_index(&s->fields[4], onef) == 1);
    CHECK(tl_dfield_value_index(&s->fields[3], three) == -1);
    json_decref(one), json_decref(onef), json_decref(three);
    tl_dschema_free(s);

    /* Type inferred from the values; unicode strings kept byte for byte. */
    s = expect_ok("{\"properties\":{\"a\":{\"enum\":[\"\xc3\xa9t\xc3\xa9\",\"\xe6\x98\xa5\"]},\"b\":{\"enum\":[1,2]},"
                  "\"c\":{\"enum\":[true,false]},\"d\":{\"enum\":[1,2.5]}}}");
    if (s) {
        CHECK(s->fields[0].kind == TL_DFIELD_STRING_ENUM && !strcmp(s->fields[0].value_keys[1], "\xe6\x98\xa5"));
        CHECK(s->fields[1].kind == TL_DFIELD_INTEGER_ENUM);
        CHECK(s->fields[2].kind == TL_DFIELD_BOOLEAN);
        CHECK(s->fields[3].kind == TL_DFIELD_NUMBER_ENUM);
        CHECK(!s->any_deps);
    }
    tl_dschema_free(s);

    /* integer/number without enum: generated, with a number spec */
    s = expect_ok("{\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"
                  "\"x\":{\"$ref\":\"#/$defs/Amount\",\"question\":\"How much?\"}},"
                  "\"$defs\":{\"Amount\":{\"type\":\"number\",\"minimum\":0,\"maximum\":500,\"x-decimals\":2}}}");
    if (s) {
        CHECK(s->fields[0].kind == TL_DFIELD_INTEGER && tl_dfield_generated(&s->fields[0]) && s->fields[0].n_values == 0);
        CHECK(s->fields[0].number.kind == TL_NUMBER_INTEGER && s->fields[0].number.lo == 1 && s->fields[0].number.hi == 10);
        CHECK(s->fields[1].kind == TL_DFIELD_NUMBER && s->fields[1].number.decimals == 2);
        CHECK(!strcmp(s->fields[1].question, "How much?"));
    }
    tl_dschema_free(s);

    /* 255 values is the limit and is fine. */
    json_t *big = json_object(), *props = json_object(), *f255 = json_object(), *en = json_array();
    for (int i = 0; i < 255; i++)
        json_array_append_new(en, json_integer(i));
    json_object_set_new(f255, "type", json_string("integer"));
    json_object_set_new(f255, "enum", en);
    json_object_set_new(props, "many", f255);
    json_object_set_new(big, "properties", props);
    tl_error err = {0};
    tl_dschema *sb = NULL;
    CHECK(tl_dschema_parse(big, &sb, &err) == TL_OK && sb && sb->fields[0].n_values == 255);
    tl_dschema_free(sb);
    json_array_append_new(en, json_integer(255));
    CHECK(tl_dschema_parse(big, &sb, &err) == TL_ERR_SCHEMA && strstr(err.msg, "/properties/many/enum"));
    json_decref(big);
}

static void test_errors(void) {
    expect_error("[1,2]", TL_ERR_SCHEMA, "/: must be a JSON object");
    expect_error("\"x\"", TL_ERR_SCHEMA, "/: must be a JSON object");
    expect_error("{\"type\":\"array\",\"properties\":{}}", TL_ERR_SCHEMA, "/type");
    expect_error("{}", TL_ERR_SCHEMA, "/properties: missing");
    expect_error("{\"properties\":[]}", TL_ERR_SCHEMA, "/properties: must be an object");
    expect_error("{\"properties\":{}}", TL_ERR_SCHEMA, "/properties: no fields");
    expect_error("{\"title\":5,\"properties\":{\"a\":{\"type\":\"boolean\"}}}", TL_ERR_SCHEMA, "/title");
    expect_error("{\"properties\":{\"a\":5}}", TL_ERR_SCHEMA, "/properties/a: must be a schema object");
    expect_error("{\"properties\":{\"a\":{\"type\":\"frobnicate\"}}}", TL_ERR_SCHEMA,
                 "/properties/a/type: unknown type 'frobnicate'");
    expect_error("{\"properties\":{\"a\":{\"type\":\"array\"}}}", TL_ERR_SCHEMA, "/properties/a/type");
    expect_error("{\"properties\":{\"a\":{\"type\":[\"string\",\"null\"],\"enum\":[\"x\"]}}}", TL_ERR_SCHEMA,
                 "/properties/a/type");
    expect_error("{\"properties\":{\"a\":{}}}", TL_ERR_SCHEMA, "/properties/a: missing \"type\"");
    expect_error("{\"properties\":{\"note\":{\"type\":\"string\"}}}", TL_ERR_SCHEMA,
                 "/properties/note: string field without enum");
    /* integer/number without enum: number specs (src/constrain) with their own errors */
    expect_error("{\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}}}", TL_ERR_SCHEMA,
                 "/properties/n");
    expect_error("{\"properties\":{\"x\":{\"type\":\"number\",\"multipleOf\":-1}}}", TL_ERR_SCHEMA,
                 "/properties/x");
    expect_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum: empty enum");
    expect_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":\"x\"}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum: must be an array");
    expect_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\",\"y\",\"x\"]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum/2: duplicate value");
    expect_error("{\"properties\":{\"a\":{\"type\":\"number\",\"enum\":[1,1.0]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum/1: duplicate");
    expect_error("{\"properties\":{\"a\":{\"type\":\"string\",\"enum\":[\"x\",3]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum/1: value is not a string");
    expect_error("{\"properties\":{\"a\":{\"type\":\"integer\",\"enum\":[1,2.5]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum/1: value is not an integer");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"enum\":[true,1]}}}", TL_ERR_SCHEMA,
                 "/properties/a/enum/1: value is not a boolean");
    expect_error("{\"properties\":{\"a\":{\"enum\":[\"x\",1]}}}", TL_ERR_SCHEMA, "/properties/a/enum: values of mixed");
    expect_error("{\"properties\":{\"a\":{\"oneOf\":[{\"const\":\"x\"},{\"description\":\"y\"}]}}}", TL_ERR_SCHEMA,
                 "/properties/a/oneOf/1: each alternative needs a \"const\"");
    expect_error("{\"properties\":{\"a/b\":{\"type\":\"string\",\"enum\":[]}}}", TL_ERR_SCHEMA,
                 "/properties/a~1b/enum");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"question\":7}}}", TL_ERR_SCHEMA,
                 "/properties/a/question: must be a string");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"x-name\":\"\"}}}", TL_ERR_SCHEMA,
                 "/properties/a/x-name");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"x-descriptions\":{\"maybe\":\"?\"}}}}", TL_ERR_SCHEMA,
                 "/properties/a/x-descriptions/maybe: no such value");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"x-descriptions\":[1]}}}", TL_ERR_SCHEMA,
                 "/properties/a/x-descriptions: must be an object");
    /* $ref */
    expect_error("{\"properties\":{\"a\":{\"$ref\":\"#/$defs/Nope\"}}}", TL_ERR_SCHEMA,
                 "/properties/a/$ref: cannot resolve '#/$defs/Nope'");
    expect_error("{\"properties\":{\"a\":{\"$ref\":\"http://x/y\"}}}", TL_ERR_SCHEMA, "/properties/a/$ref: cannot resolve");
    expect_error("{\"properties\":{\"a\":{\"$ref\":\"#/$defs/A\"}},\"$defs\":{\"A\":{\"$ref\":\"#/$defs/B\"},"
                 "\"B\":{\"$ref\":\"#/$defs/A\"}}}",
                 TL_ERR_SCHEMA, "/properties/a/$ref: reference cycle");
    expect_error("{\"properties\":{\"a\":{\"$ref\":\"#/$defs/A\"}},\"$defs\":{\"A\":[1]}}", TL_ERR_SCHEMA,
                 "/properties/a/$ref: '#/$defs/A' is not a schema object");
    /* 256 values */
    json_t *big = json_array();
    for (int i = 0; i < 256; i++)
        json_array_append_new(big, json_integer(i));
    char *bigtext = json_dumps(big, JSON_COMPACT);
    char buf[4096];
    snprintf(buf, sizeof buf, "{\"properties\":{\"a\":{\"type\":\"integer\",\"enum\":%s}}}", bigtext);
    expect_error(buf, TL_ERR_SCHEMA, "/properties/a/enum: 256 values; a field may have at most 255");
    free(bigtext);
    json_decref(big);
    /* required */
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\"}},\"required\":[\"b\"]}", TL_ERR_SCHEMA,
                 "/required/0: names no property");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\"}},\"required\":\"a\"}", TL_ERR_SCHEMA, "/required");
    /* depends_on */
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"depends_on\":[\"zz\"]}}}", TL_ERR_SCHEMA,
                 "/properties/a/depends_on/0: unknown field 'zz'");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"depends_on\":\"b\"}}}", TL_ERR_SCHEMA,
                 "/properties/a/depends_on: must be an array");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"depends_on\":[\"a\"]}}}", TL_ERR_SCHEMA,
                 "dependency cycle a -> a");
    expect_error("{\"properties\":{\"a\":{\"type\":\"boolean\",\"depends_on\":[\"c\"]},"
                 "\"b\":{\"type\":\"boolean\",\"depends_on\":[\"a\"]},"
                 "\"c\":{\"type\":\"boolean\",\"depends_on\":[\"b\"]}}}",
                 TL_ERR_SCHEMA, "dependency cycle a -> c -> b -> a");
}

/* Waves for each mode. */
static void test_plans(void) {
    tl_dschema *s = expect_ok("{\"properties\":{"
                              "\"system\":{\"type\":\"string\",\"enum\":[\"db\",\"web\"]},"
                              "\"flag\":{\"type\":\"boolean\"},"
                              "\"severity\":{\"type\":\"string\",\"enum\":[\"low\",\"high\"],\"depends_on\":[\"system\"]},"
                              "\"rollback\":{\"type\":\"boolean\",\"depends_on\":[\"system\",\"severity\"]},"
                              "\"other\":{\"type\":\"boolean\"}}}");
    if (!s)
        return;
    tl_dplan p;
    tl_error err = {0};
    CHECK(tl_dplan_make(s, TL_DMODE_AUTO, NULL, &p, &err) == TL_OK);
    CHECK(p.n_waves == 3 && p.n_order == 5);
    CHECK(p.wave_start[1] == 3 && p.order[0] == 0 && p.order[1] == 1 && p.order[2] == 4);
    CHECK(p.order[3] == 2 && p.order[4] == 3 && p.wave_start[3] == 5);
    tl_dplan_free(&p);
    CHECK(tl_dplan_make(s, TL_DMODE_BATCH, NULL, &p, &err) == TL_OK);
    CHECK(p.n_waves == 1 && p.n_order == 5 && p.order[2] == 2);
    tl_dplan_free(&p);
    CHECK(tl_dplan_make(s, TL_DMODE_SEQUENTIAL, NULL, &p, &err) == TL_OK);
    CHECK(p.n_waves == 5 && p.wave_start[2] == 2 && p.order[4] == 4);
    tl_dplan_free(&p);
    /* With system given, severity moves to the first wave. */
    bool done[5] = {true, false, false, false, false};
    CHECK(tl_dplan_make(s, TL_DMODE_AUTO, done, &p, &err) == TL_OK);
    CHECK(p.n_waves == 2 && p.n_order == 4 && p.wave_start[1] == 3 && p.order[1] == 2 && p.order[3] == 3);
    tl_dplan_free(&p);
    tl_dschema_free(s);

    tl_dmode m;
    CHECK(tl_dmode_parse(NULL, &m, &err) == TL_OK && m == TL_DMODE_AUTO);
    CHECK(tl_dmode_parse("batch", &m, &err) == TL_OK && m == TL_DMODE_BATCH);
    CHECK(tl_dmode_parse("parallel", &m, &err) == TL_ERR_INVALID && strstr(err.msg, "parallel"));
}

int main(void) {
    test_shapes();
    test_errors();
    test_plans();
    return TEST_DONE();
}
