/* test_freetext.c: free text for open fields. The record-rendering escape
 * rules (round trip of random strings with quotes, backslashes, control
 * characters and UTF-8; escapes and terminators split anywhere), then
 * generation on the fixture models over random maxLength / temperature /
 * seed / terminator settings: every value is valid UTF-8 (checked with
 * utf8proc) of at most maxLength code points, every run ends, and seeds
 * reproduce. Also the regex-only remote path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "constrain/constrain.h"
#include "tl_test.h"

static uint64_t rng_state = 0xF00D;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Code points of valid UTF-8, or -1 (utf8proc as the independent decoder). */
static long utf8_chars(const char *s, size_t n) {
    long count = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (l <= 0)
            return -1;
        i += (size_t)l;
        count++;
    }
    return count;
}

static void test_escapes(void) {
    static const char *pieces[] = {"a", "\"", "\\", "\n", "\t", "\x01", "caf\xc3\xa9", "\xf0\x9f\x98\x80", " ", "/", "u"};
    for (int r = 0; r < 2000; r++) {
        tl_strbuf val = TL_STRBUF_INIT, esc = TL_STRBUF_INIT, back = TL_STRBUF_INIT;
        int k = (int)(rnd() % 12);
        for (int i = 0; i < k; i++)
            tl_strbuf_puts(&val, pieces[rnd() % (sizeof pieces / sizeof pieces[0])]);
        CHECK(tl_freetext_escape(&esc, val.buf ? val.buf : "", val.len));
        size_t esc_len = esc.len;
        tl_strbuf_puts(&esc, "\", \"next\": 1");
        bool closed = false;
        size_t used = tl_freetext_unescape(tl_strbuf_cstr(&esc), esc.len, "\"", true, &back, &closed);
        CHECK(closed && used == esc_len + 1);
        CHECKF(back.len == val.len && memcmp(tl_strbuf_cstr(&back), tl_strbuf_cstr(&val), val.len) == 0,
               "round trip of \"%s\"", tl_strbuf_cstr(&esc));
        /* cut anywhere, the escape or terminator at the cut is left for later */
        size_t cut = esc_len ? rnd() % esc_len : 0;
        tl_strbuf part = TL_STRBUF_INIT;
        used = tl_freetext_unescape(tl_strbuf_cstr(&esc), cut, "\"", true, &part, &closed);
        CHECK(!closed && used <= cut);
        CHECK(part.len <= val.len && memcmp(tl_strbuf_cstr(&part), tl_strbuf_cstr(&val), part.len) == 0);
        tl_strbuf_free(&part);
        tl_strbuf_free(&val);
        tl_strbuf_free(&esc);
        tl_strbuf_free(&back);
    }
    /* the documented cases */
    struct {
        const char *raw, *term, *value;
        bool json, closed;
    } cases[] = {
        {"say \\\"hi\\\"\" rest", "\"", "say \"hi\"", true, true},
        {"a\\qb\"", "\"", "a\\qb", true, true},          /* unknown escape kept */
        {"\\u00e9\\ud83d\\ude00\"", "\"", "\xc3\xa9\xf0\x9f\x98\x80", true, true},
        {"\\ud83dx\"", "\"", "\xef\xbf\xbdx", true, true}, /* lone surrogate */
        {"raw \\\" text\"", "\"", "raw \\", false, true},  /* no escapes in chat style */
        {"x</a", "</a>", "x", false, false},              /* terminator may still come */
        {"x</b>y</a>z", "</a>", "x</b>y", false, true},
        {"no end", NULL, "no end", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_strbuf v = TL_STRBUF_INIT;
        bool closed;
        tl_freetext_unescape(cases[i].raw, strlen(cases[i].raw), cases[i].term, cases[i].json, &v, &closed);
        CHECKF(strcmp(tl_strbuf_cstr(&v), cases[i].value) == 0 && closed == cases[i].closed, "case %zu: \"%s\"", i,
               tl_strbuf_cstr(&v));
        tl_strbuf_free(&v);
    }
}

/* ---- a regex-only backend served by the local engine ---- */

typedef struct regex_backend {
    tl_backend *local;
    int calls;
} regex_backend;

static tl_status rb_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    regex_backend *rb = b->impl;
    char buf[512];
    for (size_t i = 0; i < n; i++) {
        size_t l = tl_vocab_token_bytes(rb->local->vocab, ids[i], false, buf, sizeof buf);
        tl_strbuf_append(out, buf, l < sizeof buf ? l : sizeof buf);
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
    tl_freetext_params p = {.terminator = info.terminator_len ? info.terminator : NULL,
                            .json_escapes = info.json_escapes,
                            .max_chars = info.max_chars,
                            .sample = {temperature, seed, max_tokens}};
    tl_freetext_result r;
    st = info.kind == TL_REGEX_FREETEXT ? tl_freetext_generate(rb->local, ids, n, &p, &r, err) : TL_ERR_UNSUPPORTED;
    if (!st) {
        /* what a server returns: the tokens, terminator included */
        *out_ids = r.ids;
        *n_out = r.n_ids;
        r.ids = NULL;
        tl_freetext_result_free(&r);
    }
    tl_regex_info_free(&info);
    return st;
}

static const tl_backend_ops regex_ops = {.kind = "regex-only", .detokenize = rb_detokenize,
                                         .generate_regex = rb_generate_regex};

static void check_value(const char *model, const tl_freetext_params *p, const tl_freetext_result *r) {
    size_t max = p->max_chars ? p->max_chars : 4096;
    long chars = utf8_chars(r->value, r->value_len);
    CHECKF(chars >= 0, "%s: value is not valid UTF-8", model);
    CHECKF(chars == (long)r->n_chars && r->n_chars <= max, "%s: %ld chars, reported %zu, max %zu", model, chars,
           r->n_chars, max);
    CHECK(strlen(r->value) <= r->value_len);
    CHECK(r->closed || r->truncated);
}

static void run_model(const char *file, int runs) {
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
    const char *prompt = "Once upon a time, the little girl said: \"";
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tl_backend_tokenize(b, prompt, strlen(prompt), true, false, &ids, &n, &err) == TL_OK);
    int32_t eot = tl_vocab_eot(b->vocab) >= 0 ? tl_vocab_eot(b->vocab) : tl_vocab_eos(b->vocab);
    regex_backend rbi = {.local = b};
    tl_backend rb = {.ops = &regex_ops, .n_vocab = b->n_vocab, .model_name = "regex", .impl = &rbi};
    int closed = 0, truncated = 0, remote = 0;
    size_t total_chars = 0;
    for (int i = 0; i < runs; i++) {
        tl_freetext_params p = {.json_escapes = rnd() % 3 != 0,
                                .max_chars = 1 + rnd() % 40,
                                .sample = {.temperature = rnd() % 4 == 0 ? 0 : 0.5 + (double)(rnd() % 100) / 100,
                                           .seed = rnd()}};
        p.terminator = p.json_escapes || rnd() % 2 ? "\"" : NULL;
        if (!p.terminator || rnd() % 3 == 0) {
            p.terminator_ids = &eot;
            p.n_terminator_ids = eot >= 0;
        }
        if (rnd() % 5 == 0)
            p.sample.max_tokens = 1 + (int)(rnd() % 5);
        tl_freetext_result r;
        tl_status st = tl_freetext_generate(b, ids, n, &p, &r, &err);
        CHECKF(st == TL_OK, "%s: %s", file, err.msg);
        if (st)
            continue;
        check_value(file, &p, &r);
        if (p.sample.max_tokens > 0)
            CHECK(r.n_ids <= (size_t)p.sample.max_tokens);
        closed += r.closed;
        truncated += r.truncated;
        total_chars += r.n_chars;
        if (i % 8 == 0) {
            tl_freetext_result r2;
            CHECK(tl_freetext_generate(b, ids, n, &p, &r2, &err) == TL_OK);
            CHECK(r2.value_len == r.value_len && memcmp(r2.value, r.value, r.value_len) == 0);
            tl_freetext_result_free(&r2);
        }
        if (i % 5 == 0 && p.terminator && (p.json_escapes || strlen(p.terminator) == 1)) {
            tl_freetext_result rr;
            tl_error e2 = {0};
            remote++;
            CHECKF(tl_freetext_generate(&rb, ids, n, &p, &rr, &e2) == TL_OK, "%s", e2.msg);
            check_value(file, &p, &rr);
            CHECK(rr.logprob_full == NULL);
            /* greedy runs agree between the local and the regex path */
            if (p.sample.temperature == 0 && p.sample.max_tokens <= 0 && !p.n_terminator_ids)
                CHECKF(rr.value_len == r.value_len && memcmp(rr.value, r.value, r.value_len) == 0, "%s: \"%s\" vs \"%s\"",
                       file, rr.value, r.value);
            tl_freetext_result_free(&rr);
        }
        tl_freetext_result_free(&r);
    }
    fprintf(stderr, "%s: %d runs, %d closed, %d truncated, %zu chars, %d remote\n", file, runs, closed, truncated,
            total_chars, remote);
    CHECK(rbi.calls == remote);
    free(ids);
    tl_backend_free(b);
    tl_model_free(m);
}

int main(void) {
    test_escapes();
    int n = getenv("TL_SANITIZER_RUN") ? 12 : 60;
    run_model("stories260k-f32.gguf", n);
    run_model("llama-spm-d64-f32.gguf", n);
    run_model("qwen2-d64-q8_0.gguf", n / 3);
    return TEST_DONE();
}
