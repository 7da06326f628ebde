/* test_number_gen.c: property tests of number generation over the real
 * local backend and the random-weight fixture models: for hundreds of random
 * ranges / multipleOf / decimals / temperatures / seeds, every generation
 * ends, every integer parses exactly and lies in range, every number lies in
 * range on its decimal grid, logprobs are consistent, and a seed reproduces
 * its result. Also the remote path: a backend that only offers
 * generate_regex (served here by the automaton from tl_regex_parse of the
 * regex it receives, as typellm's server does) with the range checked after.
 * TL_GEN_SPECS overrides the number of specs per model. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "tl_test.h"

#ifndef GEN_SPECS_DEFAULT
#define GEN_SPECS_DEFAULT 150
#define GEN_SEED 0xC0FFEE
#endif

static uint64_t rng_state = GEN_SEED;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void random_spec_json(char *buf, size_t cap) {
    int kind = (int)(rnd() % 12);
    if (kind == 0) {
        snprintf(buf, cap, "{\"type\":\"integer\"}");
        return;
    }
    if (kind == 1) {
        snprintf(buf, cap, "{\"type\":\"number\"}");
        return;
    }
    bool is_int = kind < 7;
    int dec = is_int ? 0 : (int)(rnd() % 4);
    double scale = 1;
    for (int i = 0; i < dec; i++)
        scale *= 10;
    int mag = 1 + (int)(rnd() % 12);
    int64_t top = 1;
    for (int i = 0; i < mag; i++)
        top *= 10;
    int64_t a = (int64_t)(rnd() % (uint64_t)(2 * top)) - top, b = (int64_t)(rnd() % (uint64_t)(2 * top)) - top;
    if (rnd() % 4 == 0)
        a = 0;
    if (a > b) {
        int64_t t = a;
        a = b;
        b = t;
    }
    int64_t step = rnd() % 3 == 0 ? 1 + (int64_t)(rnd() % 97) : 1;
    int o = snprintf(buf, cap, "{\"type\":\"%s\"", is_int ? "integer" : "number");
    if (rnd() % 6)
        o += snprintf(buf + o, cap - (size_t)o, ",\"%s\":%.*f", rnd() % 3 ? "minimum" : "exclusiveMinimum", dec,
                      a / scale);
    if (rnd() % 6)
        o += snprintf(buf + o, cap - (size_t)o, ",\"%s\":%.*f", rnd() % 3 ? "maximum" : "exclusiveMaximum", dec,
                      b / scale);
    if (!is_int)
        o += snprintf(buf + o, cap - (size_t)o, ",\"x-decimals\":%d", dec);
    if (step > 1)
        o += snprintf(buf + o, cap - (size_t)o, ",\"multipleOf\":%.*f", dec, step / scale);
    snprintf(buf + o, cap - (size_t)o, "}");
}

/* ---- a regex-only backend: remote in shape, served by the local engine ---- */

typedef struct regex_backend {
    tl_backend *local;
    const tl_number_index *idx;
    int calls;
} regex_backend;

static tl_status rb_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    regex_backend *rb = b->impl;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *t = tl_number_index_token(rb->idx, ids[i], &len);
        tl_strbuf_append(out, t, len);
    }
    return TL_OK;
}

static tl_status rb_generate_regex(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                   double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                   tl_usage *usage, tl_error *err) {
    regex_backend *rb = b->impl;
    rb->calls++;
    tl_regex_info info;
    tl_status st = tl_regex_parse(regex, strlen(regex), &info, err);
    if (st)
        return st;
    if (info.kind != TL_REGEX_NUMBER) {
        tl_regex_info_free(&info);
        return TL_ERR_UNSUPPORTED;
    }
    tl_number_close close = {.terminator = info.terminator_len ? info.terminator : NULL,
                             .terminator_len = info.terminator_len,
                             .allow_leading_space = info.leading_space};
    tl_sample_params sp = {temperature, seed, max_tokens};
    tl_number_result r;
    st = tl_number_generate(rb->local, rb->idx, &info.number, &close, ids, n, &sp, &r, err);
    if (!st) {
        *out_ids = r.ids;
        *n_out = r.n_ids;
        r.ids = NULL;
        usage->output_tokens += r.usage.output_tokens;
    }
    tl_number_result_free(&r);
    tl_regex_info_free(&info);
    return st;
}

static const tl_backend_ops regex_ops = {.kind = "regex-only", .detokenize = rb_detokenize,
                                         .generate_regex = rb_generate_regex};

/* ---- a score-only backend (SGLang's shape with a local tokenizer): no
 * logits, only candidate log-probabilities, served by the local engine ---- */

static tl_status so_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    regex_backend *rb = b->impl;
    rb->calls++;
    return tl_backend_score(rb->local, reqs, k, usage, err);
}

static const tl_backend_ops score_ops = {.kind = "score-only", .score = so_score};

/* ---- the properties ---- */

typedef struct counts {
    int ok, schema_errors, remote_out_of_range, closed_by_id, negative, fractional, multi_digit_tokens;
} counts;

static void check_result(const char *model, const char *json, const tl_number_spec *spec, const tl_number_result *r,
                         counts *c) {
    size_t tl = strlen(r->text);
    tl_number_value v;
    CHECKF(tl_number_spec_accepts(spec, r->text, tl, &v), "%s %s: \"%s\" not accepted", model, json, r->text);
    if (spec->kind == TL_NUMBER_INTEGER) {
        CHECK(r->value.is_integer);
        char *end;
        long long x = strtoll(r->text, &end, 10);
        CHECKF(*end == '\0' && x == r->value.ival, "%s %s: \"%s\" vs %lld", model, json, r->text,
               (long long)r->value.ival);
        CHECKF((__int128)x >= spec->lo && (__int128)x <= spec->hi && x % (long long)spec->step == 0,
               "%s %s: %lld out of range", model, json, x);
    } else {
        CHECK(!r->value.is_integer);
        double scaled = r->value.dval * pow(10, spec->decimals);
        CHECKF(scaled >= (double)spec->lo - 0.5 && scaled <= (double)spec->hi + 0.5, "%s %s: %s out of range", model,
               json, r->text);
        c->fractional += strchr(r->text, '.') != NULL;
    }
    c->negative += r->text[0] == '-';
    c->closed_by_id += r->closed_by_id;
    CHECK(r->n_ids >= 1);
    if (r->logprob_full) {
        double sf = 0, sa = 0;
        for (size_t i = 0; i < r->n_ids; i++) {
            CHECK(r->logprob_full[i] <= 1e-9 && r->logprob_allowed[i] <= 1e-9);
            CHECK(r->logprob_allowed[i] >= r->logprob_full[i] - 1e-9);
            sf += r->logprob_full[i];
            sa += r->logprob_allowed[i];
        }
        CHECK(fabs(sf - r->sum_logprob_full) < 1e-6 && fabs(sa - r->sum_logprob_allowed) < 1e-6);
    }
}

static void run_model(const char *file, int n_specs) {
    tl_model *m = NULL;
    tl_error err = {0};
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", file);
    if (tl_model_load(tl_fixture(rel), &m, &err)) {
        CHECKF(0, "%s: %s", file, err.msg);
        return;
    }
    tl_session_params sp = {.n_threads = 1};
    tl_backend *b = NULL;
    CHECKF(tl_backend_local_new(m, &sp, &b, &err) == TL_OK, "%s", err.msg);
    tl_number_index *idx = NULL;
    CHECKF(tl_number_index_new(b->vocab, &idx, &err) == TL_OK, "%s", err.msg);
    const char *prompt = "Receipt from Hilton London. Total: 324 GBP.\nrecord(total=\"";
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tl_backend_tokenize(b, prompt, strlen(prompt), true, false, &ids, &n, &err) == TL_OK);
    int32_t eot = tl_vocab_eot(b->vocab) >= 0 ? tl_vocab_eot(b->vocab) : tl_vocab_eos(b->vocab);

    regex_backend rbi = {.local = b, .idx = idx};
    tl_backend rb = {.ops = &regex_ops, .vocab = NULL, .n_vocab = b->n_vocab, .model_name = "regex", .impl = &rbi};
    regex_backend sbi = {.local = b, .idx = idx};
    tl_backend sb = {.ops = &score_ops, .vocab = b->vocab, .n_vocab = b->n_vocab, .model_name = "score", .impl = &sbi};
    int regex_runs = 0, score_runs = 0;

    counts c = {0};
    int remote_runs = 0;
    for (int i = 0; i < n_specs; i++) {
        char json[256];
        random_spec_json(json, sizeof json);
        tl_number_spec spec;
        if (tl_number_spec_from_json(json, strlen(json), "/properties/total", &spec, &err) != TL_OK) {
            CHECKF(err.code == TL_ERR_SCHEMA && strstr(err.msg, "/properties/total"), "%s: %s", json, err.msg);
            c.schema_errors++;
            continue;
        }
        tl_number_close close = {.terminator = "\"", .allow_tail = rnd() % 2, .allow_leading_space = rnd() % 4 == 0};
        if (rnd() % 4 == 0 && eot >= 0) {
            close.terminator = rnd() % 2 ? NULL : "\"";
            close.terminator_ids = &eot;
            close.n_terminator_ids = 1;
        }
        tl_sample_params samp = {.temperature = rnd() % 3 == 0 ? 0 : 0.3 + (double)(rnd() % 200) / 100,
                                 .seed = rnd()};
        tl_number_result r;
        tl_status st = tl_number_generate(b, idx, &spec, &close, ids, n, &samp, &r, &err);
        CHECKF(st == TL_OK, "%s %s: %s", file, json, err.msg);
        if (st)
            continue;
        c.ok++;
        check_result(file, json, &spec, &r, &c);
        for (size_t k = 0; k < r.n_ids; k++) {
            size_t len;
            const char *t = tl_number_index_token(idx, r.ids[k], &len);
            int digits = 0;
            for (size_t j = 0; j < len; j++)
                digits += t[j] >= '0' && t[j] <= '9';
            c.multi_digit_tokens += digits > 1;
        }
        /* candidate-only scoring (the remote path with a local tokenizer):
         * the same tokens as with full logits, probabilities within 1e-4 */
        if (i % 4 == 1) {
            tl_number_result rs;
            tl_error e3 = {0};
            st = tl_number_generate(&sb, idx, &spec, &close, ids, n, &samp, &rs, &e3);
            CHECKF(st == TL_OK, "%s %s: score-only: %s", file, json, e3.msg);
            if (st == TL_OK) {
                score_runs++;
                CHECKF(rs.n_ids == r.n_ids && !memcmp(rs.ids, r.ids, r.n_ids * sizeof *r.ids),
                       "%s %s: score-only tokens differ from full-logit ones", file, json);
                CHECKF(fabs(rs.sum_logprob_allowed - r.sum_logprob_allowed) < 1e-4 &&
                           fabs(rs.sum_logprob_full - r.sum_logprob_full) < 1e-4,
                       "%s %s: score-only logprobs %g/%g vs %g/%g", file, json, rs.sum_logprob_allowed,
                       rs.sum_logprob_full, r.sum_logprob_allowed, r.sum_logprob_full);
            }
            tl_number_result_free(&rs);
        }
        /* the same seed gives the same tokens */
        if (i % 10 == 0) {
            tl_number_result r2;
            CHECK(tl_number_generate(b, idx, &spec, &close, ids, n, &samp, &r2, &err) == TL_OK);
            CHECK(r2.n_ids == r.n_ids && memcmp(r2.ids, r.ids, r.n_ids * sizeof *r.ids) == 0);
            tl_number_result_free(&r2);
        }
        tl_number_result_free(&r);
        /* the remote path without a vocabulary: the server's regex, only
         * where it is exact (a multipleOf is refused before any call) */
        if (i % 4 == 0 && close.terminator) {
            remote_runs++;
            tl_number_result rr;
            tl_error e2 = {0};
            st = tl_number_generate(&rb, NULL, &spec, &close, ids, n, &samp, &rr, &e2);
            if (spec.step > 1) {
                CHECKF(st == TL_ERR_UNSUPPORTED && strstr(e2.msg, "--tokenizer"), "%s %s: %s", file, json, e2.msg);
                c.remote_out_of_range++;
            } else {
                regex_runs++;
                CHECKF(st == TL_OK, "%s %s: regex path: %s", file, json, e2.msg);
                if (st == TL_OK) {
                    CHECK(rr.logprob_full == NULL && isnan(rr.sum_logprob_allowed));
                    check_result(file, json, &spec, &rr, &c);
                }
            }
            tl_number_result_free(&rr);
        }
    }
    fprintf(stderr,
            "%s: %d generated (%d negative, %d with a fraction, %d closed by id, %d multi-digit tokens), %d schema "
            "errors; regex-only path %d runs, %d multipleOf refused; score-only path %d runs, %d score calls\n",
            file, c.ok, c.negative, c.fractional, c.closed_by_id, c.multi_digit_tokens, c.schema_errors, remote_runs,
            c.remote_out_of_range, score_runs, sbi.calls);
    CHECK(c.ok > n_specs / 2);
    CHECK(rbi.calls == regex_runs);
    CHECK(score_runs > 0 && sbi.calls >= score_runs);
    free(ids);
    tl_number_index_free(idx);
    tl_backend_free(b);
    tl_model_free(m);
}

/* Generation errors: bad arguments, a backend with neither logits nor
 * regex, a token cap the number cannot close within. */
static void test_errors(void) {
    tl_model *m = NULL;
    tl_error err = {0};
    if (tl_model_load(tl_fixture("models/llama-spm-d64-f32.gguf"), &m, &err)) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    tl_session_params sp = {.n_threads = 1};
    tl_backend *b = NULL;
    CHECK(tl_backend_local_new(m, &sp, &b, &err) == TL_OK);
    tl_number_spec spec;
    CHECK(tl_number_spec_integer(1000, 9999, 1, &spec, &err) == TL_OK);
    tl_number_close close = {.terminator = "\""};
    int32_t ids[] = {1, 450};
    tl_number_result r;
    CHECK(tl_number_generate(NULL, NULL, &spec, &close, ids, 2, NULL, &r, &err) == TL_ERR_INVALID);
    /* llama-spm writes one digit per token: 4 digits and a quote need 5 tokens */
    tl_sample_params tight = {.max_tokens = 3};
    CHECK(tl_number_generate(b, NULL, &spec, &close, ids, 2, &tight, &r, &err) == TL_ERR_LIMIT);
    CHECKF(strstr(err.msg, "not closed") != NULL, "%s", err.msg);
    CHECK(r.ids == NULL && r.text == NULL);
    tl_sample_params enough = {.max_tokens = 5};
    CHECK(tl_number_generate(b, NULL, &spec, &close, ids, 2, &enough, &r, &err) == TL_OK);
    CHECK(r.n_ids == 5 && r.value.ival >= 1000 && r.value.ival <= 9999 && strcmp(r.tail, "") == 0);
    tl_number_result_free(&r);
    tl_backend_ops none = {.kind = "none"};
    tl_backend nb = {.ops = &none, .n_vocab = b->n_vocab};
    CHECK(tl_number_generate(&nb, NULL, &spec, &close, ids, 2, NULL, &r, &err) == TL_ERR_UNSUPPORTED);
    tl_freetext_params fp = {.terminator = "\""};
    tl_freetext_result fr;
    CHECK(tl_freetext_generate(&nb, ids, 2, &fp, &fr, &err) == TL_ERR_UNSUPPORTED);
    CHECK(tl_freetext_generate(NULL, ids, 2, &fp, &fr, &err) == TL_ERR_INVALID);
    tl_backend_free(b);
    tl_model_free(m);
}

int main(void) {
    test_errors();
    const char *env = getenv("TL_GEN_SPECS");
    int n = env ? atoi(env) : getenv("TL_SANITIZER_RUN") ? 30 : GEN_SPECS_DEFAULT;
    run_model("llama-spm-d64-f32.gguf", n);
    run_model("stories260k-f32.gguf", n);
    run_model("qwen2-d64-q8_0.gguf", n / 3);
    run_model("llama3-d64-bf16.gguf", n / 3);
    return TEST_DONE();
}
