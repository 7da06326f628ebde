/* test_two_token.c: fields with more values than single-token labels take
 * two-token labels (decide/labels.h), on real fixture models:
 *   - the pair labels themselves, on five vocabularies (SPM, Qwen BPE,
 *     Llama-3 BPE, GPT-2 BPE, Phi-3 SPM) and three answer positions: each
 *     label tokenizes in context to exactly its two tokens and reads back,
 *     pairs of one first token are contiguous with distinct second tokens,
 *     and TL_DFIELD_MAX_VALUES pairs exist on every one of them;
 *   - the 255 -> 256 boundary (255 values keep single-token labels, 256 take
 *     pairs) and 500 values: each distribution equals the softmax over the
 *     declared values of log P(first) + log P(second | first) recomputed from
 *     the engine's full logits, sums to 1 within 1e-9, and the value is the
 *     argmax; at temperature 2 the probabilities are that softmax at T = 2;
 *   - refusals with their exact JSON paths: one value past the limit (no
 *     tokenizer needed), and more values than a small vocabulary has pairs;
 *   - sequential, batch and auto modes and given answers with a large enum in
 *     a multi-field schema: the chosen pair's two tokens are what later
 *     decisions read; the shared backend gives bit-identical results. */
#include "decide/decide.h"
#include "decide/labels.h"
#include "decide/schema.h"
#include "engine/engine.h"
#include "decide_fixture.h"
#include "test_two_token.h"
#include "typellm/typellm.h"

static const char *CONTEXT = "Ticket 4471: the parcel is stuck in the depot since Monday; the customer asks for a "
                             "refund and mentions the driver never called.";

/* ---- the labels --------------------------------------------------------- */

static void check_pairs(tl_backend *b, const char *tail, const char *prefix, const char *what) {
    tl_labelpairs lp;
    memset(&lp, 0, sizeof lp);
    tl_error err = {0};
    CHECKF(tl_labelpairs_fill(&lp, b, tail, prefix, TL_DFIELD_MAX_VALUES + 1, &err) == TL_OK, "%s: %s", what,
           err.msg);
    CHECKF(lp.n >= TL_DFIELD_MAX_VALUES + 1, "%s: only %zu pairs", what, lp.n);
    int32_t *tail_ids = NULL;
    size_t n_tail = 0;
    CHECK(tl_backend_tokenize(b, tail, strlen(tail), false, true, &tail_ids, &n_tail, &err) == TL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < lp.n; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s%s%s", tail, prefix, lp.text[i]);
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(tl_backend_tokenize(b, text, strlen(text), false, true, &ids, &n, &err) == TL_OK);
        bad += !(n == n_tail + 2 && ids[n_tail] == lp.first[i] && ids[n_tail + 1] == lp.second[i]);
        free(ids);
        /* the pieces read back: the first with the prefix, the second alone */
        char bytes[16], want[16];
        size_t nb = tl_vocab_token_bytes(b->vocab, lp.first[i], false, bytes, sizeof bytes);
        snprintf(want, sizeof want, "%s%.*s", prefix, (int)lp.split[i], lp.text[i]);
        bad += !(nb == strlen(want) && !memcmp(bytes, want, nb));
        nb = tl_vocab_token_bytes(b->vocab, lp.second[i], false, bytes, sizeof bytes);
        bad += !(nb == strlen(lp.text[i] + lp.split[i]) && !memcmp(bytes, lp.text[i] + lp.split[i], nb));
        /* groups: contiguous, numbered in order, distinct first tokens, distinct seconds within */
        if (i && lp.first[i] == lp.first[i - 1]) {
            bad += lp.group[i] != lp.group[i - 1];
        } else {
            bad += lp.group[i] != (i ? lp.group[i - 1] + 1 : 0);
            for (size_t j = 0; j < i; j++)
                bad += lp.first[j] == lp.first[i];
        }
        for (size_t j = i; j > 0 && lp.first[j - 1] == lp.first[i]; j--)
            bad += lp.second[j - 1] == lp.second[i];
    }
    CHECKF(bad == 0, "%s: %zu pair checks failed", what, bad);
    printf("%s: %zu pairs over %zu first tokens (first %s, last %s)\n", what, lp.n, lp.n_groups, lp.text[0],
           lp.text[lp.n - 1]);
    free(tail_ids);
    tl_labelpairs_free(&lp);
}

static void test_pairs(void) {
    static const char *models[] = {"models/llama-spm-d64-f32.gguf", "models/qwen2-d64-q8_0.gguf",
                                   "models/llama3-d64-bf16.gguf", "models/smollm3-gpt2-d64-f16.gguf",
                                   "models/phi3-d64-bf16.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        fixture fx;
        if (!fixture_open(models[i], &fx)) {
            CHECK(0);
            continue;
        }
        char what[128];
        snprintf(what, sizeof what, "%s record", models[i]);
        check_pairs(fx.b, "answer=\"", "", what);
        snprintf(what, sizeof what, "%s chatml", models[i]);
        check_pairs(fx.b, "<|im_start|>assistant\n", "", what);
        snprintf(what, sizeof what, "%s [/INST]", models[i]);
        check_pairs(fx.b, " [/INST]", " ", what);
        fixture_close(&fx);
    }
    char t[4];
    tl_label_first_text(0, t);
    CHECK(!strcmp(t, "0"));
    tl_label_first_text(10, t);
    CHECK(!strcmp(t, "A"));
    tl_label_first_text(62, t);
    CHECK(!strcmp(t, "AA"));
    tl_label_first_text(TL_LABEL_FIRST_POOL_SIZE - 1, t);
    CHECK(!strcmp(t, "999"));
    tl_label_first_text(TL_LABEL_FIRST_POOL_SIZE, t);
    CHECK(!strcmp(t, ""));
}

/* ---- decisions ---------------------------------------------------------- */

static json_t *decide(tl_backend *b, const json_t *schema, const json_t *given, const tl_decide_opts *o) {
    json_t *res = NULL;
    tl_error err = {0};
    tl_status st = tl_decide_given_json(b, CONTEXT, strlen(CONTEXT), schema, given, o, &res, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    return res;
}

static const json_t *field_of(const json_t *res, const char *key) {
    return json_object_get(json_object_get(res, "fields"), key);
}

static json_t *one_field_schema(size_t n) {
    return json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "city",
                     enum_property(n, "Which depot city is the parcel in?"));
}

static void test_boundary(tl_backend *b) {
    tl_decide_opts o = {.trace = true};
    /* 255: single-token labels, as before */
    json_t *s255 = one_field_schema(255), *r255 = decide(b, s255, NULL, &o);
    const json_t *cands = json_object_get(field_of(r255, "city"), "candidates");
    CHECK(json_array_size(cands) == 255);
    bool single = true;
    for (size_t i = 0; i < json_array_size(cands); i++)
        single &= !json_object_get(json_array_get(cands, i), "tokens");
    CHECK(single);
    json_decref(r255);
    json_decref(s255);
    /* 256 and 500: pairs */
    size_t counts[2] = {256, 500};
    for (size_t c = 0; c < 2; c++) {
        json_t *s = one_field_schema(counts[c]), *r = decide(b, s, NULL, &o);
        size_t firsts = 0;
        double worst = r ? check_pair_field(b, field_of(r, "city"), counts[c], 1e-9, &firsts) : INFINITY;
        printf("%zu values: %zu first tokens, max |p - softmax(full logits)| %.3g\n", counts[c], firsts, worst);
        /* temperature 2: the reported distribution is the softmax of logprob / 2 */
        tl_decide_opts hot = {.trace = true, .temperature = 2.0, .seed = 7};
        json_t *rh = decide(b, s, NULL, &hot);
        const json_t *fr = field_of(r, "city"), *fh = field_of(rh, "city");
        double max = -INFINITY, sum = 0, worst_t = 0;
        for (size_t i = 0; i < counts[c]; i++)
            max = fmax(max, json_real_value(json_object_get(json_array_get(json_object_get(fr, "candidates"), i),
                                                            "logprob")));
        for (size_t i = 0; i < counts[c]; i++)
            sum += exp((json_real_value(json_object_get(json_array_get(json_object_get(fr, "candidates"), i),
                                                        "logprob")) - max) / 2);
        for (size_t i = 0; i < counts[c]; i++) {
            char key[32];
            snprintf(key, sizeof key, "v%zu", i);
            double lp = json_real_value(json_object_get(json_array_get(json_object_get(fr, "candidates"), i),
                                                        "logprob"));
            worst_t = fmax(worst_t, fabs(json_real_value(json_object_get(json_object_get(fh, "probabilities"), key)) -
                                         exp((lp - max) / 2) / sum));
        }
        CHECKF(worst_t < 1e-12, "T=2: max difference %.3g", worst_t);
        CHECK(json_is_string(json_object_get(fh, "value")) && json_real_value(json_object_get(fh, "label_mass")) > 0);
        json_decref(rh);
        json_decref(r);
        json_decref(s);
    }
}

static void test_refusals(tl_backend *b) {
    /* one value past TL_DFIELD_MAX_VALUES: refused by the schema layer (no tokenizer) */
    json_t *s = one_field_schema(TL_DFIELD_MAX_VALUES + 1), *res = NULL;
    tl_error err = {0};
    CHECK(tl_decide_check_schema(s, &err) == TL_ERR_SCHEMA);
    CHECKF(!strcmp(err.msg, "schema: /properties/city/enum: 10001 values; a field may have at most 10000"), "%s",
           err.msg);
    CHECK(tl_decide_json(b, CONTEXT, strlen(CONTEXT), s, NULL, &res, &err) == TL_ERR_SCHEMA && !res);
    CHECKF(strstr(err.msg, "schema: /properties/city/enum: 10001 values") == err.msg, "%s", err.msg);
    json_decref(s);
    /* more values than a 512-token vocabulary has pairs: refused once the
     * tokenizer is known, naming the field, before any model work */
    fixture fx;
    if (!fixture_open("models/stories260k-f32.gguf", &fx)) {
        CHECK(0);
        return;
    }
    s = json_pack("{s:s, s:{s:{s:s}, s:o}}", "type", "object", "properties", "ok", "type", "boolean", "city",
                  enum_property(4000, "Which city?"));
    tl_decide_opts o = {.style = "record"};
    CHECK(tl_decide_json(fx.b, CONTEXT, strlen(CONTEXT), s, &o, &res, &err) == TL_ERR_SCHEMA && !res);
    CHECKF(strstr(err.msg, "schema: /properties/city: 4000 choices, but only 62 labels are single tokens and ") ==
                   err.msg &&
               strstr(err.msg, " two-token labels verify with this tokenizer in this rendering"),
           "%s", err.msg);
    json_decref(s);
    fixture_close(&fx);
}

/* The two tokens of the chosen label of field fr. */
static void chosen_pair(const json_t *fr, int32_t pair[2]) {
    const char *label = json_string_value(json_object_get(fr, "label"));
    const json_t *cands = json_object_get(fr, "candidates");
    pair[0] = pair[1] = -1;
    for (size_t i = 0; label && i < json_array_size(cands); i++) {
        const json_t *c = json_array_get(cands, i);
        if (!strcmp(json_string_value(json_object_get(c, "label")), label)) {
            pair[0] = (int32_t)json_integer_value(json_array_get(json_object_get(c, "tokens"), 0));
            pair[1] = (int32_t)json_integer_value(json_array_get(json_object_get(c, "tokens"), 1));
        }
    }
}

/* Whether the traced ids of field fr hold `after` (the branch of an earlier
 * field) followed by the pair. */
static bool ids_follow(const json_t *fr, const json_t *after, const int32_t pair[2]) {
    const json_t *ids = json_object_get(json_object_get(fr, "trace"), "ids");
    size_t n = json_array_size(after);
    if (json_array_size(ids) < n + 2)
        return false;
    for (size_t i = 0; i < n; i++)
        if (json_integer_value(json_array_get(ids, i)) != json_integer_value(json_array_get(after, i)))
            return false;
    return json_integer_value(json_array_get(ids, n)) == pair[0] &&
           json_integer_value(json_array_get(ids, n + 1)) == pair[1];
}

/* Whether the pair occurs anywhere in the traced ids of fr. */
static bool ids_contain(const json_t *fr, const int32_t pair[2]) {
    const json_t *ids = json_object_get(json_object_get(fr, "trace"), "ids");
    for (size_t i = 0; i + 1 < json_array_size(ids); i++)
        if (json_integer_value(json_array_get(ids, i)) == pair[0] &&
            json_integer_value(json_array_get(ids, i + 1)) == pair[1])
            return true;
    return false;
}

static void test_modes(tl_backend *b) {
    json_t *schema = json_pack("{s:s, s:{s:{s:s, s:s}, s:o, s:{s:s, s:[s,s,s], s:[s]}}}", "type", "object",
                               "properties", "urgent", "type", "boolean", "question", "Is it urgent?", "city",
                               enum_property(300, "Which depot city?"), "team", "type", "string", "enum", "depot",
                               "drivers", "refunds", "depends_on", "city");
    const char *modes[3] = {"sequential", "batch", "auto"};
    for (int m = 0; m < 3; m++) {
        tl_decide_opts o = {.mode = modes[m], .trace = true};
        json_t *res = decide(b, schema, NULL, &o);
        if (!res)
            continue;
        const json_t *city = field_of(res, "city"), *team = field_of(res, "team");
        check_pair_field(b, city, 300, 1e-9, NULL);
        const json_t *values = json_object_get(res, "values");
        CHECK(json_is_boolean(json_object_get(values, "urgent")) && json_is_string(json_object_get(values, "team")));
        int32_t pair[2];
        chosen_pair(city, pair);
        const json_t *city_ids = json_object_get(json_object_get(city, "trace"), "ids");
        if (m == 0) /* sequential: the next prompt is city's prompt + its two label tokens + ... */
            CHECKF(ids_follow(team, city_ids, pair), "%s: team does not extend city's answer", modes[m]);
        else if (m == 2) /* auto: team's wave carries city's answer */
            CHECKF(ids_contain(team, pair), "%s: team does not read city's label", modes[m]);
        else /* batch: no field sees another's answer */
            CHECK(json_integer_value(json_object_get(json_object_get(team, "trace"), "wave")) == 0);
        json_decref(res);
    }
    /* given: a large enum's answer is rendered with its pair and reported with probability 1 */
    json_t *given = json_pack("{s:s}", "city", "v257");
    tl_decide_opts o = {.mode = "auto", .trace = true};
    json_t *res = decide(b, schema, given, &o);
    if (res) {
        const json_t *city = field_of(res, "city");
        CHECK(json_is_true(json_object_get(city, "given")) &&
              json_real_value(json_object_get(json_object_get(city, "probabilities"), "v257")) == 1.0);
        int32_t pair[2];
        chosen_pair(city, pair);
        CHECK(pair[0] >= 0 && ids_contain(field_of(res, "team"), pair));
        json_decref(res);
    }
    json_decref(given);
    json_decref(schema);
}

/* An open field of 300 values: the open choice takes the next pair. */
static void test_open(tl_backend *b) {
    json_t *prop = enum_property(300, "Which depot city?");
    json_object_set_new(prop, "open", json_true());
    json_t *schema = json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "city", prop);
    tl_decide_opts o = {.mode = "batch"};
    json_t *res = decide(b, schema, NULL, &o);
    const json_t *fr = field_of(res, "city"), *cands = json_object_get(fr, "candidates");
    const json_t *last = json_array_get(cands, 300);
    CHECK(json_array_size(cands) == 301 && json_is_true(json_object_get(last, "open")) &&
          json_array_size(json_object_get(last, "tokens")) == 2);
    double sum = 0;
    const char *k;
    json_t *p;
    json_object_foreach(json_object_get(fr, "probabilities"), k, p) sum += json_real_value(p);
    CHECKF(fabs(sum - 1) < 1e-9 && json_object_get(json_object_get(fr, "probabilities"), "other"), "sum %.15f", sum);
    json_decref(res);
    json_decref(schema);
}

/* The shared backend: the same decision, bit for bit. */
static void test_shared(const tl_model *m, tl_backend *local) {
    tl_shared_params sp = {.session = {.n_threads = 1, .n_ctx = 16384, .extend_ctx = true}};
    tl_backend *shared = NULL;
    tl_error err = {0};
    CHECKF(tl_backend_shared_new(m, &sp, &shared, &err) == TL_OK, "%s", err.msg);
    if (!shared)
        return;
    json_t *schema = json_pack("{s:s, s:{s:{s:s}, s:o}}", "type", "object", "properties", "urgent", "type",
                               "boolean", "city", enum_property(400, "Which depot city?"));
    tl_decide_opts o = {.mode = "batch"};
    json_t *a = decide(local, schema, NULL, &o), *c = decide(shared, schema, NULL, &o);
    if (a && c) {
        const json_t *fa = field_of(a, "city"), *fc = field_of(c, "city");
        CHECK(json_equal(json_object_get(a, "values"), json_object_get(c, "values")));
        CHECK(json_equal(json_object_get(fa, "candidates"), json_object_get(fc, "candidates")));
        CHECK(json_equal(json_object_get(fa, "probabilities"), json_object_get(fc, "probabilities")));
    }
    json_decref(a);
    json_decref(c);
    json_decref(schema);
    tl_backend_free(shared);
}

int main(void) {
    test_pairs();
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_error err = {0};
    /* llama-spm-d64 spreads its probability over many values (a real distribution to compare) */
    tl_session_params sp = {.n_threads = 1, .n_ctx = 16384, .extend_ctx = true};
    if (tl_model_load(tl_fixture("models/llama-spm-d64-f32.gguf"), &m, &err) ||
        tl_backend_local_new(m, &sp, &b, &err)) {
        CHECKF(0, "%s", err.msg);
        return TEST_DONE();
    }
    test_boundary(b);
    test_refusals(b);
    test_modes(b);
    test_open(b);
    test_shared(m, b);
    tl_backend_free(b);
    tl_model_free(m);
    return TEST_DONE();
}
