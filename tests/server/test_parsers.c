/* test_parsers.c: the server's request parsers and answer shaping without a
 * socket or a model: the System One validation table (status, loc path,
 * type), TypeSafe's confidence formulas on the documented live capture, the
 * decision schema built per request, /generate and /v1/decide parsing. */
#include <math.h>
#include <string.h>

#include "server/server_internal.h"
#include "tl_test.h"

/* Parses a System One body and returns the failure status (0 = valid). */
static int so_status(const char *body, const char *want_loc, const char *want_type) {
    so_request r;
    parse_failure f = {0};
    if (so_request_parse(body, strlen(body), 256, &r, &f)) {
        so_request_free(&r);
        return 0;
    }
    json_t *d0 = json_array_get(json_object_get(f.body, "detail"), 0);
    if (want_loc) {
        char *loc = json_dumps(json_object_get(d0, "loc"), JSON_COMPACT);
        CHECKF(loc && !strcmp(loc, want_loc), "%s: loc %s, want %s", body, loc ? loc : "(none)", want_loc);
        free(loc);
    }
    if (want_type) {
        const char *t = json_string_value(json_object_get(d0, "type"));
        CHECKF(t && !strcmp(t, want_type), "%s: type %s, want %s", body, t ? t : "(none)", want_type);
    }
    CHECKF(json_is_string(json_object_get(d0, "msg")) || f.status == 400, "%s: no msg", body);
    int st = f.status;
    json_decref(f.body);
    return st;
}

static void test_systemone_validation(void) {
    CHECK(so_status("{\"state\":\"x\",\"questions\":{\"a\":{\"type\":\"noul\"}}}", NULL, NULL) == 0);
    CHECK(so_status("{\"state\":{\"k\":[1,2]},\"questions\":{\"a\":{\"type\":\"noul\",\"criteria\":{\"true\":\"y\",\"false\":null}}}}", NULL, NULL) == 0);
    CHECK(so_status("{\"state\":[1],\"model\":\"jev\",\"extra\":1,\"questions\":{\"a\":{\"type\":\"choice\",\"criteria\":{\"x\":null,\"y\":\"why\"}}}}", NULL, NULL) == 0);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"a\":{\"type\":\"score\",\"instructions\":{\"k\":1},\"criteria\":[\"lo\",\"hi\"]}}}", NULL, NULL) == 0);
    /* malformed JSON -> 422 json_invalid (FastAPI) */
    CHECK(so_status("{\"state\":", NULL, "json_invalid") == 422);
    CHECK(so_status("", NULL, NULL) == 422);
    /* wrong types / missing fields -> 422 with loc */
    CHECK(so_status("[]", "[\"body\"]", "dict_type") == 422);
    CHECK(so_status("{\"questions\":{}}", "[\"body\",\"state\"]", "missing") == 422);
    CHECK(so_status("{\"state\":5,\"questions\":{}}", "[\"body\",\"state\"]", "string_type") == 422);
    CHECK(so_status("{\"state\":\"s\"}", "[\"body\",\"questions\"]", "missing") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":[]}", "[\"body\",\"questions\"]", "dict_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{}}", "[\"body\",\"questions\"]", "too_short") == 422);
    CHECK(so_status("{\"state\":\"s\",\"model\":3,\"questions\":{\"a\":{\"type\":\"noul\"}}}", "[\"body\",\"model\"]", "string_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":5}}", "[\"body\",\"questions\",\"q1\"]", "dict_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":{}}}", "[\"body\",\"questions\",\"q1\",\"type\"]", "missing") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":{\"type\":\"rank\"}}}", "[\"body\",\"questions\",\"q1\",\"type\"]", "literal_error") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":{\"type\":\"noul\",\"instructions\":7}}}", "[\"body\",\"questions\",\"q1\",\"instructions\"]", "string_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":{\"type\":\"noul\",\"criteria\":[\"a\"]}}}", "[\"body\",\"questions\",\"q1\",\"criteria\"]", "dict_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"q1\":{\"type\":\"noul\",\"criteria\":{\"maybe\":\"m\"}}}}", "[\"body\",\"questions\",\"q1\",\"criteria\",\"maybe\"]", "extra_forbidden") == 422);
    /* 1 option, 256 options */
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"criteria\":{\"only\":null}}}}", "[\"body\",\"questions\",\"c\",\"criteria\"]", "too_short") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\"}}}", "[\"body\",\"questions\",\"c\",\"criteria\"]", "missing") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"criteria\":{\"a\":1,\"b\":null}}}}", "[\"body\",\"questions\",\"c\",\"criteria\",\"a\"]", "string_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"criteria\":{\"a\":{\"k\":1},\"b\":[\"x\"]}}}}", NULL, NULL) == 0);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":[null,{\"k\":\"v\"}]}}}", NULL, NULL) == 0);
    tl_strbuf big = TL_STRBUF_INIT;
    for (int n = 255; n <= 256; n++) {
        tl_strbuf_clear(&big);
        tl_strbuf_puts(&big, "{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"criteria\":{");
        for (int i = 0; i < n; i++)
            tl_strbuf_printf(&big, "%s\"opt%d\":null", i ? "," : "", i);
        tl_strbuf_puts(&big, "}}}}");
        int st = so_status(big.buf, n == 256 ? "[\"body\",\"questions\",\"c\",\"criteria\"]" : NULL, n == 256 ? "too_long" : NULL);
        CHECKF(st == (n == 256 ? 422 : 0), "%d options: status %d", n, st);
    }
    tl_strbuf_free(&big);
    /* score: 11 levels, 1 level, criteria as object, non-string level */
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":[\"0\",\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}}}", NULL, NULL) == 0);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":[\"0\",\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\"]}}}", "[\"body\",\"questions\",\"u\",\"criteria\"]", "too_long") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":[\"0\"]}}}", "[\"body\",\"questions\",\"u\",\"criteria\"]", "too_short") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":{\"0\":\"low\",\"1\":\"high\"}}}}", "[\"body\",\"questions\",\"u\",\"criteria\"]", "list_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"score\",\"criteria\":[\"a\",2]}}}", "[\"body\",\"questions\",\"u\",\"criteria\",1]", "string_type") == 422);
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"u\":{\"type\":\"noul\",\"criteria\":{\"true\":false}}}}", "[\"body\",\"questions\",\"u\",\"criteria\",\"true\"]", "string_type") == 422);
    /* duplicate question ids are malformed JSON for us */
    CHECK(so_status("{\"state\":\"s\",\"questions\":{\"a\":{\"type\":\"noul\"},\"a\":{\"type\":\"noul\"}}}", NULL, "json_invalid") == 422);
    /* too many questions */
    so_request r;
    parse_failure f = {0};
    const char *two = "{\"state\":\"s\",\"questions\":{\"a\":{\"type\":\"noul\"},\"b\":{\"type\":\"noul\"}}}";
    CHECK(!so_request_parse(two, strlen(two), 1, &r, &f) && f.status == 422);
    json_decref(f.body);
}

static void test_state_and_schema(void) {
    const char *body = "{\"state\":{\"b\":1,\"a\":[true,\"\\u00e9\"]},\"questions\":{"
                       "\"billing\":{\"type\":\"noul\",\"instructions\":\"Is it about billing?\",\"criteria\":{\"true\":\"yes\",\"false\":null}},"
                       "\"tone\":{\"type\":\"choice\",\"instructions\":[\"x\",1],\"criteria\":{\"calm\":null,\"angry\":\"shouting\",\"frustrated\":null}},"
                       "\"urgency\":{\"type\":\"score\",\"criteria\":[\"can wait\",\"this week\",\"today\"]}}}";
    so_request r;
    parse_failure f = {0};
    CHECK(so_request_parse(body, strlen(body), 256, &r, &f));
    CHECK(!strcmp(r.state, "{\"b\":1,\"a\":[true,\"\xc3\xa9\"]}"));
    CHECK(r.n_questions == 3);
    CHECK(!strcmp(r.questions[1].instructions, "[\"x\",1]"));
    json_t *schema = so_build_schema(&r);
    char *text = json_dumps(schema, JSON_COMPACT);
    /* ids never reach the model: no property, name or text carries them. */
    CHECKF(!strstr(text, "billing") || strstr(text, "Is it about billing?"), "%s", text);
    CHECKF(!strstr(text, "\"tone\"") && !strstr(text, "urgency"), "%s", text);
    json_t *props = json_object_get(schema, "properties");
    json_t *q0 = json_object_get(props, "q0"), *q1 = json_object_get(props, "q1"), *q2 = json_object_get(props, "q2");
    CHECK(!strcmp(json_string_value(json_object_get(q0, "type")), "boolean"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(q0, "x-descriptions"), "true")), "yes"));
    CHECK(json_object_get(json_object_get(q0, "x-descriptions"), "false") == NULL);
    CHECK(!strcmp(json_string_value(json_object_get(q1, "type")), "string"));
    CHECK(json_array_size(json_object_get(q1, "enum")) == 3);
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(q1, "enum"), 2)), "frustrated"));
    CHECK(!strcmp(json_string_value(json_object_get(q2, "type")), "integer"));
    CHECK(json_integer_value(json_array_get(json_object_get(q2, "enum"), 2)) == 2);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(q2, "x-descriptions"), "1")), "this week"));
    CHECK(!strcmp(json_string_value(json_object_get(q2, "x-name")), "answer"));
    free(text);

    /* Answers from a decide-shaped result reproduce the live capture's numbers. */
    const char *res = "{\"fields\":{"
                      "\"q0\":{\"probabilities\":{\"true\":0.99,\"false\":0.01}},"
                      "\"q1\":{\"probabilities\":{\"calm\":0.0,\"angry\":0.11,\"frustrated\":0.89}},"
                      "\"q2\":{\"probabilities\":{\"0\":0.0,\"1\":0.12,\"2\":0.88}}}}";
    json_t *result = json_loads(res, 0, NULL);
    json_t *answers = NULL;
    tl_error err = {0};
    CHECK(so_build_answers(&r, result, &answers, &err));
    json_t *a = json_object_get(answers, "billing");
    CHECK(json_object_size(a) == 2 && fabs(json_real_value(json_object_get(a, "noul")) - 0.99) < 1e-12);
    a = json_object_get(answers, "tone");
    CHECK(!strcmp(json_string_value(json_object_get(a, "choice")), "frustrated"));
    CHECK(fabs(json_real_value(json_object_get(a, "confidence")) - 0.835) < 1e-9);
    CHECK(json_object_size(json_object_get(a, "probabilities")) == 3);
    a = json_object_get(answers, "urgency");
    CHECK(fabs(json_real_value(json_object_get(a, "score")) - 1.88) < 1e-12);
    CHECK(fabs(json_real_value(json_object_get(a, "confidence")) - 0.82) < 1e-9);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(a, "legend"), "0")), "can wait"));
    json_decref(answers);
    json_decref(result);
    json_decref(schema);
    so_request_free(&r);
}

static void test_confidence(void) {
    double u[4] = {0.25, 0.25, 0.25, 0.25}, one[4] = {0, 0, 1, 0};
    CHECK(fabs(so_choice_confidence(u, 4)) < 1e-12);
    CHECK(fabs(so_choice_confidence(one, 4) - 1) < 1e-12);
    CHECK(fabs(so_score_confidence(one, 4) - 1) < 1e-12);
    double spread[3] = {0.5, 0, 0.5};
    CHECK(so_score_confidence(spread, 3) == 0); /* clamped at 0 */
}

static int gen_status(const char *body, int32_t n_vocab) {
    gen_request r;
    parse_failure f = {0};
    if (gen_request_parse(body, strlen(body), n_vocab, 4096, &r, &f)) {
        gen_request_free(&r);
        return 0;
    }
    CHECKF(json_is_string(json_object_get(json_object_get(f.body, "error"), "message")), "%s", body);
    json_decref(f.body);
    return f.status;
}

static void test_generate_parse(void) {
    gen_request r;
    parse_failure f = {0};
    const char *b = "{\"input_ids\":[[1,2,3],[4]],\"sampling_params\":[{\"max_new_tokens\":0},{\"temperature\":0.5,"
                    "\"top_k\":5,\"stop\":[\"x\",\"yy\"],\"stop_token_ids\":[7],\"regex\":\"[0-9]+\"}],"
                    "\"return_logprob\":true,\"token_ids_logprob\":[[1,2],[3]],\"top_logprobs_num\":3,"
                    "\"logprob_start_len\":0,\"return_text_in_logprobs\":true,\"stream\":true,\"rid\":\"r1\"}";
    CHECK(gen_request_parse(b, strlen(b), 100, 4096, &r, &f));
    CHECK(r.batch && r.n_items == 2 && r.items[0].n_ids == 3 && r.items[1].ids[0] == 4);
    CHECK(r.items[0].sp.max_new_tokens == 0 && r.items[1].sp.max_new_tokens == 128);
    CHECK(r.items[1].sp.n_stop == 2 && r.items[1].sp.stop_ids[0] == 7 && !strcmp(r.items[1].sp.regex, "[0-9]+"));
    CHECK(r.items[0].n_token_ids_logprob == 2 && r.items[1].token_ids_logprob[0] == 3);
    CHECK(r.return_logprob && r.top_logprobs_num == 3 && r.logprob_start_len == 0 && r.stream);
    gen_request_free(&r);
    const char *one = "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":1,\"temperature\":0},\"token_ids_logprob\":[5,6]}";
    CHECK(gen_request_parse(one, strlen(one), 100, 4096, &r, &f));
    CHECK(!r.batch && r.n_items == 1 && r.items[0].n_token_ids_logprob == 2 && r.logprob_start_len == -1);
    gen_request_free(&r);
    CHECK(gen_status("{", 100) == 400);
    CHECK(gen_status("{}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"input_ids\":[1]}", 100) == 400);
    CHECK(gen_status("{\"input_ids\":[1,100]}", 100) == 400);
    CHECK(gen_status("{\"input_ids\":[1,-1]}", 100) == 400);
    CHECK(gen_status("{\"input_ids\":[1.5]}", 100) == 400);
    CHECK(gen_status("{\"text\":[]}", 100) == 400);
    CHECK(gen_status("{\"text\":[\"a\",3]}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"max_new_tokens\":-1}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"max_new_tokens\":99999}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"temperature\":\"hot\"}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"top_p\":0}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"top_k\":0}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"n\":2}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"stop\":[\"\"]}}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"sampling_params\":{\"json_schema\":\"{}\"}}", 100) == 400);
    CHECK(gen_status("{\"text\":[\"a\",\"b\"],\"sampling_params\":[{}]}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"token_ids_logprob\":[200]}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"return_logprob\":1}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"logprob_start_len\":-2}", 100) == 400);
    CHECK(gen_status("{\"text\":\"a\",\"return_logprob\":true,\"top_logprobs_num\":1000,\"sampling_params\":{\"max_new_tokens\":4096}}", 100) == 413);
}

static void test_decide_parse(void) {
    decide_request d;
    parse_failure f = {0};
    const char *ok = "{\"context\":\"c\",\"schema\":{\"type\":\"object\"},\"mode\":\"batch\",\"temperature\":0.5,\"seed\":3,\"threshold\":0.2}";
    CHECK(decide_request_parse(ok, strlen(ok), &d, &f));
    CHECK(!strcmp(d.mode, "batch") && d.seed == 3 && d.temperature == 0.5 && d.threshold == 0.2 && !d.trace);
    decide_request_free(&d);
    const char *traced = "{\"context\":\"c\",\"schema\":{\"type\":\"object\"},\"trace\":true}";
    CHECK(decide_request_parse(traced, strlen(traced), &d, &f) && d.trace);
    decide_request_free(&d);
    const char *bad[] = {"{\"context\":\"c\",\"schema\":{},\"trace\":1}","{\"schema\":{}}", "{\"context\":1,\"schema\":{}}", "{\"context\":\"c\"}",
                         "{\"context\":\"c\",\"schema\":[]}", "{\"context\":\"c\",\"schema\":{},\"mode\":\"fast\"}",
                         "{\"context\":\"c\",\"schema\":{},\"temperature\":-1}", "{\"context\":\"c\",\"schema\":{},\"seed\":-3}",
                         "{\"context\":\"c\",\"schema\":{},\"threshold\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(!decide_request_parse(bad[i], strlen(bad[i]), &d, &f) && f.status == 422, "%s", bad[i]);
        json_decref(f.body);
    }
    CHECK(!decide_request_parse("{x", 2, &d, &f) && f.status == 422);
    json_decref(f.body);
    /* Invalid UTF-8 inside a string: jansson's message quotes the bytes; the
     * 400 body must still be valid JSON (fuzzer finding). */
    const char *bad_utf8 = "{\"context\":\"T\",\"schema\":{\"a\":[\"\\\xca\x8b\"]}}";
    CHECK(!decide_request_parse(bad_utf8, strlen(bad_utf8), &d, &f) && f.status == 422 && f.body != NULL);
    json_decref(f.body);
    gen_request g;
    CHECK(!gen_request_parse(bad_utf8, strlen(bad_utf8), 100, 10, &g, &f) && f.status == 400 && f.body != NULL);
    json_decref(f.body);
}

static void test_regex_constraint(void) {
    tl_error err = {0};
    regex_constraint *rc = regex_constraint_new("-?(0|[1-9][0-9]*)(\\.[0-9]+)?", &err);
    CHECK(rc != NULL);
    if (rc) {
        CHECK(regex_constraint_viable(rc, "", 0));
        CHECK(regex_constraint_viable(rc, "-", 1) && !regex_constraint_complete(rc, "-", 1));
        CHECK(regex_constraint_viable(rc, "12", 2) && regex_constraint_complete(rc, "12", 2));
        CHECK(regex_constraint_viable(rc, "12.", 3) && !regex_constraint_complete(rc, "12.", 3));
        CHECK(!regex_constraint_viable(rc, "01", 2));
        CHECK(!regex_constraint_viable(rc, "1a", 2));
        regex_constraint_free(rc);
    }
    rc = regex_constraint_new("(meal|travel)", &err);
    CHECK(rc && regex_constraint_viable(rc, "tr", 2) && !regex_constraint_viable(rc, "x", 1) &&
          regex_constraint_complete(rc, "meal", 4) && !regex_constraint_viable(rc, "meals", 5));
    regex_constraint_free(rc);
    /* A token ending inside a multi-byte character: viable only when the
     * pattern can continue with that character. */
    rc = regex_constraint_new("(meal|caf\xc3\xa9)", &err);
    CHECK(rc && !regex_constraint_viable(rc, "t\xe2", 2) && !regex_constraint_viable(rc, "m\xc3", 2));
    CHECK(rc && regex_constraint_viable(rc, "caf\xc3", 4) && regex_constraint_complete(rc, "caf\xc3\xa9", 5));
    CHECK(rc && !regex_constraint_viable(rc, "caf\xc3\x28", 5));
    regex_constraint_free(rc);
    /* Catastrophic backtracking is cut off by the match limit, not run forever. */
    rc = regex_constraint_new("(a+)+b", &err);
    CHECK(rc && !regex_constraint_complete(rc, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", 43));
    regex_constraint_free(rc);
    CHECK(regex_constraint_new("(unclosed", &err) == NULL && err.code == TL_ERR_INVALID && strstr(err.msg, "offset"));
}

int main(void) {
    test_systemone_validation();
    test_state_and_schema();
    test_confidence();
    test_generate_parse();
    test_decide_parse();
    test_regex_constraint();
    return TEST_DONE();
}
