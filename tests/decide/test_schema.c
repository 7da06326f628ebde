/* test_schema.c: the schema layer: what each accepted shape becomes, and one
 * test per error class, each checking the code and the JSON path named.
 * Issue 13's shapes: $defs/$ref through allOf, title as the question, const,
 * unions, nullable values, optional properties, nested objects, multi-label
 * arrays, generated strings; one test per refusal class with its exact JSON
 * path, in strict and in --lenient mode. */
#include <jansson.h>
#include <stdlib.h>

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

    /* TL_DFIELD_MAX_VALUES (10,000: two-token labels past 255) is the limit and is fine. */
    json_t *big = json_object(), *props = json_object(), *f255 = json_object(), *en = json_array();
    for (int i = 0; i < TL_DFIELD_MAX_VALUES; i++)
        json_array_append_new(en, json_integer(i));
    json_object_set_new(f255, "type", json_string("integer"));
    json_object_set_new(f255, "enum", en);
    json_object_set_new(props, "many", f255);
    json_object_set_new(big, "properties", props);
    tl_error err = {0};
    tl_dschema *sb = NULL;
    CHECK(tl_dschema_parse(big, &sb, &err) == TL_OK && sb && sb->fields[0].n_values == TL_DFIELD_MAX_VALUES);
    tl_dschema_free(sb);
    json_array_append_new(en, json_integer(TL_DFIELD_MAX_VALUES));
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
    expect_error("{\"properties\":{\"a\":{\"type\":\"array\"}}}", TL_ERR_SCHEMA, "/properties/a/items: missing");
    expect_error("{\"properties\":{\"a\":{\"type\":[\"string\",\"integer\"],\"enum\":[\"x\"]}}}", TL_ERR_SCHEMA,
                 "/properties/a/type: a list of several types");
    expect_error("{\"properties\":{\"a\":{}}}", TL_ERR_SCHEMA, "/properties/a: missing \"type\"");
    expect_error("{\"x-strict\":true,\"properties\":{\"note\":{\"type\":\"string\"}}}", TL_ERR_SCHEMA,
                 "/properties/note: string without enum would be free text, refused in strict mode");
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
    expect_error("{\"properties\":{\"a\":{\"oneOf\":[{\"const\":\"x\"},{\"description\":\"y\"}]}}}", TL_ERR_SCHEMA,
                 "/properties/a/oneOf/1: a union member needs a \"const\", an \"enum\" or a \"type\"");
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
                 TL_ERR_SCHEMA, "/$defs/B/$ref: reference cycle through '#/$defs/A'");
    expect_error("{\"properties\":{\"a\":{\"$ref\":\"#/$defs/A\"}},\"$defs\":{\"A\":[1]}}", TL_ERR_SCHEMA,
                 "/properties/a/$ref: '#/$defs/A' is not a schema object");
    /* one value past TL_DFIELD_MAX_VALUES; a multi-label array past 255 items */
    json_t *big = json_array();
    for (int i = 0; i <= TL_DFIELD_MAX_VALUES; i++)
        json_array_append_new(big, json_integer(i));
    char *bigtext = json_dumps(big, JSON_COMPACT);
    size_t cap = strlen(bigtext) + 256;
    char *buf = malloc(cap);
    snprintf(buf, cap, "{\"properties\":{\"a\":{\"type\":\"integer\",\"enum\":%s}}}", bigtext);
    expect_error(buf, TL_ERR_SCHEMA, "/properties/a/enum: 10001 values; a field may have at most 10000");
    free(bigtext);
    json_decref(big);
    big = json_array();
    for (int i = 0; i < 256; i++)
        json_array_append_new(big, json_integer(i));
    bigtext = json_dumps(big, JSON_COMPACT);
    snprintf(buf, cap, "{\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"enum\":%s}}}}", bigtext);
    expect_error(buf, TL_ERR_SCHEMA,
                 "/properties/tags/items: 256 values; a multi-label array may have at most 255 (one yes/no decision each)");
    free(bigtext);
    free(buf);
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

/* ---- the schemas users write (issue 13) ---------------------------------- */

/* Fails with exactly `msg` (the whole message); with --lenient, when
 * lenient_ok, parses and warns with the same text minus "schema: ". */
static void expect_refusal(const char *text, const char *msg, bool lenient_ok) {
    json_t *j = parse(text);
    tl_dschema *s = NULL;
    tl_error err = {0};
    tl_status st = tl_dschema_parse(j, &s, &err);
    CHECKF(st == TL_ERR_SCHEMA && !strcmp(err.msg, msg), "%s:\n  got  '%s'\n  want '%s'", text, err.msg, msg);
    CHECK(s == NULL);
    tl_dschema_opts lenient = {.lenient = true};
    st = tl_dschema_parse_opts(j, &lenient, &s, &err);
    if (lenient_ok) {
        CHECKF(st == TL_OK && s && s->n_warnings >= 1 && !strcmp(s->warnings[0], msg + strlen("schema: ")),
               "%s: lenient: %s / %s", text, err.msg, s && s->n_warnings ? s->warnings[0] : "(no warning)");
    } else {
        CHECKF(st == TL_ERR_SCHEMA, "%s: lenient must still refuse", text);
    }
    tl_dschema_free(s);
    json_decref(j);
}

static void test_refs_and_titles(void) {
    /* Pydantic v2: $defs, allOf-wrapped $ref with a sibling description, title as question */
    tl_dschema *s = expect_ok(
        "{\"$defs\":{\"Tier\":{\"enum\":[\"free\",\"pro\"],\"title\":\"Tier\",\"type\":\"string\"}},"
        "\"properties\":{"
        "\"tier\":{\"allOf\":[{\"$ref\":\"#/$defs/Tier\"}],\"description\":\"The plan\"},"
        "\"plan\":{\"$ref\":\"#/$defs/Tier\"},"
        "\"vip\":{\"type\":\"boolean\",\"title\":\"Is the customer a VIP\"},"
        "\"flag\":{\"type\":\"boolean\"}},"
        "\"required\":[\"tier\"],\"title\":\"Ticket\",\"type\":\"object\"}");
    if (!s)
        return;
    CHECK(s->n_fields == 4);
    CHECK(s->fields[0].kind == TL_DFIELD_STRING_ENUM && s->fields[0].n_values == 2 && s->fields[0].required);
    CHECK(!strcmp(s->fields[0].question, "The plan"));
    CHECK(!strcmp(s->fields[1].question, "Tier")); /* the definition's title */
    CHECK(!strcmp(s->fields[2].question, "Is the customer a VIP"));
    CHECK(!strcmp(s->fields[3].question, "flag"));
    CHECK(!s->fields[1].required);
    tl_dschema_free(s);
}

static void test_values(void) {
    tl_dschema *s = expect_ok(
        "{\"properties\":{"
        "\"kind\":{\"const\":\"ticket\"},"
        "\"mood\":{\"anyOf\":[{\"const\":\"calm\",\"description\":\"no anger\"},{\"const\":\"angry\"},{\"type\":\"null\"}]},"
        "\"mix\":{\"oneOf\":[{\"enum\":[\"auto\",\"off\"]},{\"type\":\"boolean\"},{\"const\":3}]},"
        "\"opt\":{\"type\":[\"string\",\"null\"],\"enum\":[\"a\",\"b\",null]},"
        "\"nb\":{\"type\":\"integer\",\"enum\":[1,2],\"nullable\":true},"
        "\"n\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":1,\"maximum\":5},{\"type\":\"null\"}]},"
        "\"ask\":{\"enum\":[\"x\",\"y\"],\"x-optional\":\"ask\"},"
        "\"skip\":{\"type\":\"boolean\",\"x-optional\":\"skip\"}}}");
    if (!s)
        return;
    const tl_dfield *f = &s->fields[0];
    CHECK(f->constant && f->n_values == 1 && !strcmp(json_string_value(f->values[0]), "ticket"));
    f = &s->fields[1];
    CHECK(f->kind == TL_DFIELD_STRING_ENUM && f->n_values == 3 && f->nullable && json_is_null(f->values[2]));
    CHECK(f->value_descs[0] && !strcmp(f->value_descs[0], "no anger") && !strcmp(f->value_keys[2], "null"));
    f = &s->fields[2];
    CHECK(f->kind == TL_DFIELD_UNION && f->n_values == 5 && json_is_true(f->values[2]) && json_is_integer(f->values[4]));
    f = &s->fields[3];
    CHECK(f->kind == TL_DFIELD_STRING_ENUM && f->n_values == 3 && f->nullable);
    f = &s->fields[4];
    CHECK(f->kind == TL_DFIELD_INTEGER_ENUM && f->n_values == 3 && json_is_null(f->values[0]));
    /* a nullable generated value: a presence decision ("(present)", null) first */
    f = &s->fields[5];
    CHECK(f->role == TL_DROLE_PRESENCE && !strcmp(f->key, "n#present") && f->n_values == 2);
    CHECK(!strcmp(f->value_keys[0], "(present)") && json_is_null(f->values[1]) && f->absent == SIZE_MAX);
    f = &s->fields[6];
    CHECK(f->kind == TL_DFIELD_INTEGER && f->nullable && f->n_values == 0 && !strcmp(f->key, "n"));
    CHECK(f->cond.field == 5 && f->cond.lo == 0 && f->cond.hi == 0 && f->n_after == 1 && f->after[0] == 5);
    f = &s->fields[7];
    CHECK(f->absent == 2 && f->n_values == 3 && !strcmp(f->value_keys[2], "(absent)"));
    f = &s->fields[8];
    CHECK(f->skip && f->kind == TL_DFIELD_BOOLEAN);
    tl_dschema_free(s);
}

static void test_nesting_and_arrays(void) {
    tl_dschema *s = expect_ok(
        "{\"$defs\":{\"Customer\":{\"type\":\"object\",\"properties\":{"
        "\"tier\":{\"enum\":[\"free\",\"pro\"]},\"address\":{\"type\":\"object\",\"properties\":{"
        "\"country\":{\"enum\":[\"FR\",\"DE\"]}}}},\"required\":[\"tier\"]}},"
        "\"properties\":{"
        "\"customer\":{\"$ref\":\"#/$defs/Customer\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",\"c\"]},\"minItems\":1,\"maxItems\":2,"
        "\"uniqueItems\":true},"
        "\"maybe\":{\"anyOf\":[{\"$ref\":\"#/$defs/Customer\"},{\"type\":\"null\"}]},"
        "\"after\":{\"type\":\"boolean\",\"depends_on\":[\"customer\",\"/tags\"]}}}");
    if (!s)
        return;
    /* customer/tier, customer/address/country, tags/0..2, maybe#present, maybe/tier, maybe/address/country, after */
    CHECK(s->n_fields == 9 && s->n_groups == 1 && s->n_objects == 4);
    CHECK(!strcmp(s->fields[0].key, "customer/tier") && !strcmp(s->fields[0].name, "/customer/tier"));
    CHECK(!strcmp(s->fields[0].path, "/properties/customer/properties/tier") && s->fields[0].required);
    CHECK(!strcmp(s->fields[1].key, "customer/address/country") && s->fields[1].n_segs == 3);
    CHECK(tl_dschema_find(s, "/customer/address/country") == 1);
    const tl_dgroup *g = &s->groups[0];
    CHECK(!strcmp(g->key, "tags") && g->first == 2 && g->n == 3 && g->min_items == 1 && g->max_items == 2);
    CHECK(s->fields[3].group == 0 && s->fields[3].group_item == 1 && s->fields[3].kind == TL_DFIELD_BOOLEAN);
    /* Optional[Model]: a presence decision, then the object's fields under it */
    CHECK(!strcmp(s->fields[5].key, "maybe#present") && s->fields[5].role == TL_DROLE_PRESENCE);
    CHECK(!strcmp(s->fields[6].key, "maybe/tier") && s->fields[6].cond.field == 5);
    /* depends_on an object (every field under it) and a group (every value) */
    const tl_dfield *after = &s->fields[8];
    CHECK(after->n_deps == 5 && s->any_deps);
    tl_dplan p;
    tl_error err = {0};
    /* the maybe/... fields wait for maybe#present in every mode but sequential */
    CHECK(tl_dplan_make(s, TL_DMODE_AUTO, NULL, &p, &err) == TL_OK && p.n_waves == 2 && p.order[8] == 8);
    tl_dplan_free(&p);
    CHECK(tl_dplan_make(s, TL_DMODE_BATCH, NULL, &p, &err) == TL_OK && p.n_waves == 2 && p.wave_start[1] == 7);
    tl_dplan_free(&p);
    tl_dschema_free(s);
}

/* Arrays of objects, numbers and strings: the length first, then each item
 * under its condition; open-ended arrays ask "more" before each item past
 * minItems. */
static void test_item_arrays(void) {
    tl_dschema *s = expect_ok(
        "{\"properties\":{"
        "\"people\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"description\":\"Who is named\","
        " \"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},"
        "  \"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}},\"required\":[\"name\",\"age\"]}},"
        "\"nums\":{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":20},\"minItems\":1,"
        " \"maxItems\":3,\"x-length\":\"open\"},"
        "\"two\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"date\"},\"minItems\":2,\"maxItems\":2}}}");
    if (!s)
        return;
    /* people#length, 3 x (name, age), nums/0, nums/1#more, nums/1, nums/2#more, nums/2, two/0, two/1 */
    CHECK(s->n_fields == 14 && s->n_arrays == 3 && s->n_objects == 3);
    const tl_dfield *f = &s->fields[0];
    CHECK(f->role == TL_DROLE_LENGTH && !strcmp(f->key, "people#length") && f->kind == TL_DFIELD_INTEGER_ENUM);
    CHECK(f->n_values == 3 && json_integer_value(f->values[0]) == 1 && json_integer_value(f->values[2]) == 3);
    CHECK(!strcmp(f->question, "Who is named How many items?") && !strcmp(f->name, "people"));
    CHECK(s->arrays[0].length == 0 && s->arrays[0].min_items == 1 && s->arrays[0].max_items == 3);
    f = &s->fields[1];
    CHECK(!strcmp(f->key, "people/0/name") && !strcmp(f->name, "/people/0/name") && f->kind == TL_DFIELD_STRING);
    CHECK(!strcmp(f->path, "/properties/people/items/properties/name") && !strcmp(tl_dfield_where(f), "/people/0/name"));
    CHECK(f->cond.field == 0 && f->cond.lo == 0 && f->cond.hi == 2);
    CHECK(s->fields[3].cond.lo == 1 && !strcmp(s->fields[4].key, "people/1/age") && s->fields[5].cond.lo == 2);
    /* auto mode: item 1 waits for item 0 */
    CHECK(s->fields[3].n_deps == 2 && s->fields[3].deps[0] == 1 && s->any_deps);
    f = &s->fields[7];
    CHECK(!strcmp(f->key, "nums/0") && f->cond.field == -1 && f->kind == TL_DFIELD_NUMBER);
    f = &s->fields[8];
    CHECK(f->role == TL_DROLE_MORE && !strcmp(f->key, "nums/1#more") && f->n_values == 2 && f->cond.field == -1);
    CHECK(!strcmp(f->value_keys[0], "more") && !strcmp(f->value_keys[1], "done") && f->n_after == 1 && f->after[0] == 7);
    CHECK(s->fields[9].cond.field == 8 && !strcmp(s->fields[10].key, "nums/2#more") && s->fields[10].cond.field == 8);
    CHECK(s->fields[11].cond.field == 10 && s->arrays[1].open_end && s->arrays[1].length == -1);
    /* a fixed length: no decision */
    CHECK(!strcmp(s->fields[12].key, "two/0") && s->fields[12].cond.field == -1 && s->arrays[2].length == -1);
    tl_dplan p;
    tl_error err = {0};
    /* batch: length and the fixed items; then the items under it and nums/1#more; ... */
    CHECK(tl_dplan_make(s, TL_DMODE_BATCH, NULL, &p, &err) == TL_OK && p.n_waves == 5);
    CHECK(p.wave_start[1] == 4 && p.order[0] == 0 && p.order[1] == 7 && p.order[2] == 12);
    tl_dplan_free(&p);
    CHECK(tl_dplan_make(s, TL_DMODE_SEQUENTIAL, NULL, &p, &err) == TL_OK && p.n_waves == 14);
    tl_dplan_free(&p);
    CHECK(tl_dschema_find(s, "people#length") == 0 && tl_dschema_find(s, "/nums/1#more") == 8);
    tl_dschema_free(s);

    /* null and absent on objects and arrays: a presence decision before them */
    s = expect_ok("{\"properties\":{"
                  "\"addr\":{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},"
                  "{\"type\":\"null\"}]},"
                  "\"tags\":{\"type\":[\"array\",\"null\"],\"items\":{\"enum\":[\"a\",\"b\"]},\"x-optional\":\"ask\"},"
                  "\"amount\":{\"type\":\"number\",\"x-optional\":\"ask\"}}}");
    if (!s)
        return;
    CHECK(s->n_fields == 7);
    CHECK(s->fields[0].role == TL_DROLE_PRESENCE && !strcmp(s->fields[0].key, "addr#present"));
    CHECK(s->fields[0].n_values == 2 && s->fields[1].cond.field == 0);
    CHECK(!strcmp(s->fields[2].key, "tags#present") && s->fields[2].n_values == 3 && s->fields[2].absent == 2);
    CHECK(s->fields[3].group == 0 && s->fields[3].cond.field == 2);
    CHECK(!strcmp(s->fields[5].key, "amount#present") && s->fields[5].n_values == 2 && s->fields[5].absent == 1);
    CHECK(s->fields[6].kind == TL_DFIELD_NUMBER && s->fields[6].cond.field == 5);
    /* the nodes: addr#present, addr (presence 0), addr/city, tags#present, tags (presence 2), amount#present, amount */
    CHECK(s->n_nodes == 7 && s->nodes[1].kind == TL_DNODE_OBJECT && s->nodes[1].presence == 0);
    CHECK(s->nodes[4].kind == TL_DNODE_GROUP && s->nodes[4].presence == 2 && s->nodes[4].cond.field == -1);
    CHECK(s->nodes[6].presence == 5 && s->nodes[6].index == 6);
    tl_dschema_free(s);
}

static void test_strings(void) {
    tl_dschema *s = expect_ok(
        "{\"properties\":{"
        "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{2,4}$\",\"maxLength\":10},"
        "\"when\":{\"type\":\"string\",\"format\":\"date\"},"
        "\"note\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":30},"
        "\"opt\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":5},{\"type\":\"null\"}]}}}");
    if (!s)
        return;
    CHECK(s->fields[0].kind == TL_DFIELD_STRING && s->fields[0].max_length == 10 && s->fields[0].pattern);
    CHECK(s->fields[1].kind == TL_DFIELD_STRING && s->fields[1].pattern && strstr(s->fields[1].pattern, "02-"));
    CHECK(s->fields[2].min_length == 2 && s->fields[2].max_length == 30 && !s->fields[2].pattern);
    CHECK(s->fields[3].role == TL_DROLE_PRESENCE && !strcmp(s->fields[3].key, "opt#present"));
    CHECK(s->fields[4].kind == TL_DFIELD_STRING && s->fields[4].max_length == 5 && s->fields[4].nullable);
    CHECK(tl_dfield_generated(&s->fields[0]));
    tl_dschema_free(s);
    /* strict mode: by flag or by "x-strict" */
    tl_dschema_opts strict = {.strict = true};
    json_t *j = parse("{\"properties\":{\"note\":{\"type\":\"string\"}}}");
    tl_error err = {0};
    tl_dschema *t = NULL;
    CHECK(tl_dschema_parse_opts(j, &strict, &t, &err) == TL_ERR_SCHEMA &&
          strstr(err.msg, "/properties/note: string without enum would be free text"));
    json_decref(j);
}

/* One test per refusal class, with its exact path. */
static void test_refusals(void) {
    /* unknown keywords, at the root, in a property, in a $defs target, in a union member */
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"boolean\",\"questionn\":\"?\"}}}",
                   "schema: /properties/a/questionn: unknown keyword (a typo? --lenient ignores it)", true);
    expect_refusal("{\"propertiez\":1,\"properties\":{\"a\":{\"type\":\"boolean\"}}}",
                   "schema: /propertiez: unknown keyword (a typo? --lenient ignores it)", true);
    expect_refusal("{\"$defs\":{\"T\":{\"enum\":[\"x\"],\"colour\":1}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/T\"}}}",
                   "schema: /$defs/T/colour: unknown keyword (a typo? --lenient ignores it)", true);
    expect_refusal("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":1,\"x-bad\":2},{\"type\":\"null\"}]}}}",
                   "schema: /properties/a/anyOf/0/x-bad: unknown keyword (a typo? --lenient ignores it)", true);
    /* keywords typellm cannot honour */
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"integer\",\"enum\":[1,2],\"minimum\":2}}}",
                   "schema: /properties/a/minimum: does not apply to a field with declared values (typellm cannot "
                   "honour it here)", true);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"string\",\"not\":{\"const\":\"x\"}}}}",
                   "schema: /properties/a/not: typellm cannot honour 'not' (a negation has no finite domain or "
                   "automaton)", true);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}}}",
                   "schema: /properties/a/pattern: pattern: offset 5: unsupported backreference", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"a(?=b)\"}}}",
                   "schema: /properties/a/pattern: pattern: offset 2: unsupported group (lookaround, flags or atomic "
                   "group)", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"hostname\"}}}",
                   "schema: /properties/a/format: 'hostname' is not a format typellm can enforce (date, time, "
                   "date-time, email, uuid, uri, ipv4)", true);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"^[a-z]{5}$\",\"maxLength\":3}}}",
                   "schema: /properties/a/pattern: no string of 0 to 3 characters matches it (minLength/maxLength)",
                   false);
    expect_refusal("{\"properties\":{\"a\":{\"allOf\":[{\"type\":\"boolean\"},{\"type\":\"boolean\"}]}}}",
                   "schema: /properties/a/allOf: typellm cannot honour an allOf of 2 schemas (only allOf of one "
                   "schema, e.g. a wrapped $ref)", true);
    expect_refusal("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":\"x\"},{\"type\":\"integer\"}]}}}",
                   "schema: /properties/a: a union of declared values and a free type; typellm decides declared "
                   "values or generates one type, not both", false);
    /* arrays of objects, numbers, strings */
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}",
                   "schema: /properties/a/maxItems: missing; an array of objects, numbers or strings needs maxItems (its "
                   "items are decided one by one, at most 256)", false);
    expect_refusal("{\"properties\":{\"o\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\","
                   "\"items\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\"}}}}}}}}",
                   "schema: /properties/o/properties/a/maxItems: missing; an array of objects, numbers or strings needs "
                   "maxItems (its items are decided one by one, at most 256)", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":300}}}",
                   "schema: /properties/a/maxItems: 300; an array of objects, numbers or strings has at most 256 items",
                   false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":4,"
                   "\"maxItems\":3}}}",
                   "schema: /properties/a/minItems: 4 is greater than maxItems 3", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":3,"
                   "\"uniqueItems\":true}}}",
                   "schema: /properties/a/uniqueItems: typellm cannot keep generated items distinct (objects, numbers, "
                   "strings are decided one by one)", true);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":3,"
                   "\"x-length\":\"guess\"}}}",
                   "schema: /properties/a/x-length: must be \"count\" or \"open\"", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"x-optional\":\"ask\"},"
                   "\"maxItems\":3}}}",
                   "schema: /properties/a/items/x-optional: array items are not optional (minItems says how many there "
                   "must be)", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
                   "\"n\":{\"type\":\"integer\",\"colour\":1}}},\"maxItems\":2}}}",
                   "schema: /properties/a/items/properties/n/colour: unknown keyword (a typo? --lenient ignores it)", true);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":9,"
                   "\"maxLength\":3},\"maxItems\":2}}}",
                   "schema: /properties/a/items/minLength: 9 is greater than maxLength 3", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"integer\",\"x-optional\":\"ask\"}},\"required\":[\"a\"]}",
                   "schema: /properties/a/x-optional: the property is required (listed in its object's \"required\")",
                   false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"minItems\":3}}}",
                   "schema: /properties/a/minItems: 3, but the items have only 2 values (each is chosen at most once)",
                   false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"boolean\",\"x-optional\":\"ask\"}},\"required\":[\"a\"]}",
                   "schema: /properties/a/x-optional: the property is required (listed in its object's \"required\")",
                   false);
    expect_refusal("{\"properties\":{\"o\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"}},"
                   "\"required\":[\"b\"]}}}",
                   "schema: /properties/o/required/0: names no property", false);
    expect_refusal("{\"properties\":{\"o\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\","
                   "\"depends_on\":[\"o/zz\"]}}}}}",
                   "schema: /properties/o/properties/a/depends_on/0: unknown field 'o/zz'", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":[\"string\",\"integer\"]}}}",
                   "schema: /properties/a/type: a list of several types ('string', 'integer'); typellm decides one "
                   "type (plus \"null\")", false);
    expect_refusal("{\"properties\":{\"a\":{\"type\":\"number\",\"format\":\"score\",\"minimum\":0.5}}}",
                   "schema: /properties/a/minimum: does not apply to a score (its levels are 0.0 .. 1.0)", true);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[\"1\",1]}}}",
                   "schema: /properties/a/enum/1: value 1 reads the same as value \"1\" ('1'); probabilities are keyed "
                   "by that text", false);
}

/* Parses {"properties":{"a":{kw: list}}} (list: an enum's values, or the
 * consts of anyOf/oneOf members); *n_values: field a's, when it parses. */
static tl_status parse_list(const char *kw, json_t *list, size_t *n_values, tl_error *err) {
    json_t *a = json_object(), *props = json_object(), *schema = json_object();
    if (strcmp(kw, "enum")) {
        json_t *members = json_array();
        for (size_t i = 0; i < json_array_size(list); i++)
            json_array_append_new(members, json_pack("{s:O}", "const", json_array_get(list, i)));
        json_object_set_new(a, kw, members);
    } else {
        json_object_set(a, kw, list);
    }
    json_object_set_new(props, "a", a);
    json_object_set_new(schema, "properties", props);
    tl_dschema *s = NULL;
    tl_status st = tl_dschema_parse(schema, &s, err);
    *n_values = st == TL_OK ? s->fields[0].n_values : 0;
    tl_dschema_free(s);
    json_decref(schema);
    return st;
}

/* Strings v0 .. v<n-1>, or the integers 0 .. n-1. */
static json_t *many_values(int n, bool strings) {
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        char b[32];
        snprintf(b, sizeof b, "v%d", i);
        json_array_append_new(list, strings ? json_string(b) : json_integer(i));
    }
    return list;
}

/* Repeated values: refused inside one enum (naming the earlier one), merged
 * across anyOf members, refused across oneOf members; values equal as
 * numbers (1 and 1.0, -0.0 and 0) are the same value, a string and a
 * number are not, but two values whose key texts read the same are refused. */
static void test_duplicates(void) {
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[\"x\",\"y\",\"z\",\"y\"]}}}",
                   "schema: /properties/a/enum/3: duplicate value (same as /properties/a/enum/1)", false);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[1,2,1.0]}}}",
                   "schema: /properties/a/enum/2: duplicate value (same as /properties/a/enum/0)", false);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[-0.0,5,0]}}}",
                   "schema: /properties/a/enum/2: duplicate value (same as /properties/a/enum/0)", false);
    /* 1.0 equals 1 (a duplicate) before its text meets the string "1.0" */
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[1,\"1.0\",1.0]}}}",
                   "schema: /properties/a/enum/2: duplicate value (same as /properties/a/enum/0)", false);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[1.5,\"1.5\"]}}}",
                   "schema: /properties/a/enum/1: value \"1.5\" reads the same as value 1.5 ('1.5'); probabilities are "
                   "keyed by that text", false);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[true,\"true\"]}}}",
                   "schema: /properties/a/enum/1: value \"true\" reads the same as value true ('true'); probabilities "
                   "are keyed by that text", false);
    expect_refusal("{\"properties\":{\"a\":{\"enum\":[\"null\",null]}}}",
                   "schema: /properties/a/enum/1: value null reads the same as value \"null\" ('null'); probabilities "
                   "are keyed by that text", false);
    expect_refusal("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":\"x\"},{\"const\":\"2\"},{\"const\":2}]}}}",
                   "schema: /properties/a/anyOf/2: value 2 reads the same as value \"2\" ('2'); probabilities are keyed "
                   "by that text", false);
    expect_refusal("{\"properties\":{\"a\":{\"oneOf\":[{\"const\":0},{\"enum\":[2,-0.0]}]}}}",
                   "schema: /properties/a/oneOf/1: a value of this member is also another member's; oneOf needs each "
                   "value in exactly one member (use anyOf)", false);
    /* anyOf: the first of equal values stays (1, not 1.0; -0.0, not 0) */
    tl_dschema *s = expect_ok("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":1},{\"const\":1.0},{\"const\":-0.0},"
                  "{\"enum\":[0,2,\"x\"]},{\"type\":\"null\"},{\"const\":null}]}}}");
    if (s) {
        const tl_dfield *f = &s->fields[0];
        CHECK(f->n_values == 5 && json_is_integer(f->values[0]) && json_is_real(f->values[1]));
        CHECK(!strcmp(f->value_keys[0], "1") && !strcmp(f->value_keys[1], "-0.0") && !strcmp(f->value_keys[2], "2"));
        CHECK(!strcmp(f->value_keys[3], "x") && json_is_null(f->values[4]) && f->nullable);
    }
    tl_dschema_free(s);
    expect_refusal("{\"properties\":{\"a\":{\"anyOf\":[{\"const\":1},{\"const\":1.0},{\"enum\":[2,\"1\"]}]}}}",
                   "schema: /properties/a/anyOf/2/enum/1: value \"1\" reads the same as value 1 ('1'); probabilities are "
                   "keyed by that text", false);

    /* TL_DFIELD_MAX_VALUES values, the last one a repeat */
    tl_error err = {0};
    size_t n = 0;
    json_t *list = many_values(TL_DFIELD_MAX_VALUES, true);
    CHECKF(parse_list("enum", list, &n, &err) == TL_OK && n == TL_DFIELD_MAX_VALUES, "%s", err.msg);
    json_array_set_new(list, TL_DFIELD_MAX_VALUES - 1, json_string("v1234"));
    CHECK(parse_list("enum", list, &n, &err) == TL_ERR_SCHEMA);
    CHECKF(!strcmp(err.msg, "schema: /properties/a/enum/9999: duplicate value (same as /properties/a/enum/1234)"), "%s",
           err.msg);
    CHECKF(parse_list("anyOf", list, &n, &err) == TL_OK && n == TL_DFIELD_MAX_VALUES - 1, "%s", err.msg);
    CHECK(parse_list("oneOf", list, &n, &err) == TL_ERR_SCHEMA);
    CHECKF(strstr(err.msg, "schema: /properties/a/oneOf/9999: a value of this member is also another member's"), "%s",
           err.msg);
    json_decref(list);
    list = many_values(TL_DFIELD_MAX_VALUES, false);
    CHECKF(parse_list("enum", list, &n, &err) == TL_OK && n == TL_DFIELD_MAX_VALUES, "%s", err.msg);
    json_array_set_new(list, TL_DFIELD_MAX_VALUES - 1, json_real(4321.0));
    CHECK(parse_list("enum", list, &n, &err) == TL_ERR_SCHEMA);
    CHECKF(!strcmp(err.msg, "schema: /properties/a/enum/9999: duplicate value (same as /properties/a/enum/4321)"), "%s",
           err.msg);
    json_array_set_new(list, TL_DFIELD_MAX_VALUES - 1, json_string("4321"));
    CHECK(parse_list("enum", list, &n, &err) == TL_ERR_SCHEMA);
    CHECKF(!strcmp(err.msg, "schema: /properties/a/enum/9999: value \"4321\" reads the same as value 4321 ('4321'); "
                            "probabilities are keyed by that text"), "%s", err.msg);
    json_decref(list);
}

int main(void) {
    test_shapes();
    test_errors();
    test_duplicates();
    test_plans();
    test_refs_and_titles();
    test_values();
    test_nesting_and_arrays();
    test_item_arrays();
    test_strings();
    test_refusals();
    return TEST_DONE();
}
