/* test_regex.c: the regexes sent to remote engines, checked with PCRE2 as an
 * independent regex engine: each compiles; a number regex matches every value
 * its spec accepts (the regex may be wider: ranges are checked after), and
 * exactly the strings that the spec tl_regex_parse reads back from it
 * accepts; enum and free-text regexes match exactly their values; regexes
 * typellm did not build are refused by the parser. Integer regexes are exact
 * ranges: checked value by value around random and extreme ranges. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "tl_test.h"

static uint64_t rng_state = 0xABCDEF;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static pcre2_code *compile(const char *re, bool utf) {
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                                  PCRE2_ANCHORED | PCRE2_ENDANCHORED | (utf ? PCRE2_UTF : 0), &ec, &eo, NULL);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        fprintf(stderr, "regex %s: %s at %zu\n", re, (char *)msg, (size_t)eo);
    }
    return c;
}

static bool full_match(pcre2_code *c, const char *s, size_t n) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(c, NULL);
    int rc = pcre2_match(c, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static void test_number_regexes(void) {
    static const char *specs[] = {
        "{\"type\":\"integer\",\"minimum\":0,\"maximum\":250}",
        "{\"type\":\"integer\",\"minimum\":-90,\"maximum\":-3}",
        "{\"type\":\"integer\",\"minimum\":-1000,\"maximum\":5000,\"multipleOf\":5}",
        "{\"type\":\"integer\"}",
        "{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"x-decimals\":3}",
        "{\"type\":\"number\",\"minimum\":-12.5,\"maximum\":99.75,\"multipleOf\":0.25}",
        "{\"type\":\"number\",\"maximum\":-0.5,\"x-decimals\":1}",
        "{\"type\":\"number\",\"minimum\":-3,\"maximum\":7,\"x-decimals\":0}",
    };
    static const char *terms[] = {"\"", "\",", NULL, "</v>", "\n", "*)"};
    static const char alphabet[] = "0123456789-. \"";
    int matched = 0;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
        for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++)
            for (int lead = 0; lead < 2; lead++) {
                tl_number_spec spec;
                tl_error err = {0};
                CHECKF(tl_number_spec_from_json(specs[s], strlen(specs[s]), "/x", &spec, &err) == TL_OK, "%s",
                       err.msg);
                tl_number_close close = {.terminator = terms[t], .allow_leading_space = lead};
                tl_strbuf re = TL_STRBUF_INIT;
                CHECK(tl_number_regex(&spec, &close, &re, &err) == TL_OK);
                pcre2_code *c = compile(tl_strbuf_cstr(&re), false);
                CHECKF(c != NULL, "%s", tl_strbuf_cstr(&re));
                tl_regex_info info;
                CHECKF(tl_regex_parse(re.buf, re.len, &info, &err) == TL_OK, "%s: %s", tl_strbuf_cstr(&re), err.msg);
                CHECK(info.kind == TL_REGEX_NUMBER);
                CHECK(info.leading_space == (bool)lead);
                size_t tl = terms[t] ? strlen(terms[t]) : 0;
                CHECK(info.terminator_len == tl && (tl == 0 || memcmp(info.terminator, terms[t], tl) == 0));
                /* the regex carries the exact range (not the step); x-decimals 0 reads as an integer */
                CHECK(info.number.lo == spec.lo && info.number.hi == spec.hi &&
                      info.number.decimals == spec.decimals &&
                      (info.number.kind == spec.kind || spec.decimals == 0));
                if (!c) {
                    tl_regex_info_free(&info);
                    tl_strbuf_free(&re);
                    continue;
                }
                for (int r = 0; r < 3000; r++) {
                    char str[40];
                    size_t n;
                    if (r % 2) {
                        /* a value the spec accepts, written out */
                        long long v = (long long)(rnd() % 20000) - 10000;
                        int dec = spec.decimals;
                        if (dec)
                            n = (size_t)snprintf(str, sizeof str, "%s%s%lld.%0*lld", lead && rnd() % 2 ? " " : "",
                                                 v < 0 ? "-" : "", llabs(v) / 100, 2,
                                                 (long long)(llabs(v) % 100));
                        else
                            n = (size_t)snprintf(str, sizeof str, "%s%lld", lead && rnd() % 2 ? " " : "", v);
                    } else {
                        n = 1 + rnd() % 8;
                        for (size_t k = 0; k < n; k++)
                            str[k] = alphabet[rnd() % (sizeof alphabet - 1)];
                        str[n] = '\0';
                    }
                    memcpy(str + n, terms[t] ? terms[t] : "", tl + 1);
                    size_t total = n + tl;
                    size_t off = lead && str[0] == ' ' ? 1 : 0;
                    bool spec_ok = tl_number_spec_accepts(&spec, str + off, n - off, NULL);
                    bool parsed_ok = tl_number_spec_accepts(&info.number, str + off, n - off, NULL);
                    bool m = full_match(c, str, total);
                    matched += m;
                    if (spec_ok)
                        CHECKF(m, "%s: %s accepted by the spec, not matched", tl_strbuf_cstr(&re), str);
                    /* the one known difference: a required '-' before a zero ("-0.0") matches the
                     * regex, while the parsed spec wants a value below zero */
                    bool neg_zero = m && !parsed_ok && spec.hi < 0 && strtod(str + off, NULL) == 0;
                    CHECKF(m == parsed_ok || neg_zero, "%s: \"%s\": regex %d, parsed spec %d", tl_strbuf_cstr(&re),
                           str, m, parsed_ok);
                }
                pcre2_code_free(c);
                tl_regex_info_free(&info);
                tl_strbuf_free(&re);
            }
    fprintf(stderr, "number regexes: %d matching strings\n", matched);
}

/* Integer regexes are exact: every integer near the range matches iff inside. */
static void test_integer_ranges(void) {
    int64_t edges[][2] = {{INT64_MIN, INT64_MAX}, {INT64_MIN, -1}, {0, INT64_MAX}, {-9, 9}, {0, 0}, {-1, -1},
                          {10, 99},   {100, 100},  {1, 1000000},  {-999, -100}, {9, 10}, {-10, -9}};
    tl_error err = {0};
    int ranges = 0;
    for (int r = 0; r < 400; r++) {
        int64_t lo, hi;
        if (r < (int)(sizeof edges / sizeof edges[0])) {
            lo = edges[r][0];
            hi = edges[r][1];
        } else {
            lo = (int64_t)(rnd() % 2400) - 1200;
            hi = lo + (int64_t)(rnd() % (r % 2 ? 30 : 1500));
        }
        tl_number_spec spec;
        CHECK(tl_number_spec_integer(lo, hi, 1, &spec, &err) == TL_OK);
        tl_number_close close = {.terminator = "\""};
        tl_strbuf re = TL_STRBUF_INIT;
        CHECK(tl_number_regex(&spec, &close, &re, &err) == TL_OK);
        pcre2_code *c = compile(tl_strbuf_cstr(&re), false);
        CHECKF(c != NULL, "[%lld, %lld]: %s", (long long)lo, (long long)hi, tl_strbuf_cstr(&re));
        tl_regex_info info;
        CHECKF(tl_regex_parse(re.buf, re.len, &info, &err) == TL_OK && info.kind == TL_REGEX_NUMBER &&
                   info.number.lo == lo && info.number.hi == hi,
               "[%lld, %lld]: %s not read back", (long long)lo, (long long)hi, tl_strbuf_cstr(&re));
        tl_regex_info_free(&info);
        if (c) {
            ranges++;
            int64_t from = lo > INT64_MIN + 2000 ? lo - 1000 : INT64_MIN;
            for (int64_t v = from, k = 0; k < 3500; v++, k++) {
                char s[32];
                int n = snprintf(s, sizeof s, "%lld\"", (long long)v);
                CHECKF(full_match(c, s, (size_t)n) == (v >= lo && v <= hi), "[%lld, %lld]: %s on %s",
                       (long long)lo, (long long)hi, s, tl_strbuf_cstr(&re));
                if (v == INT64_MAX)
                    break;
            }
            for (int k = 0; k < 200; k++) { /* random wide values, and spellings that are not canonical */
                char s[40];
                int64_t v = (int64_t)rnd();
                int n = snprintf(s, sizeof s, "%lld\"", (long long)v);
                CHECK(full_match(c, s, (size_t)n) == (v >= lo && v <= hi));
            }
            CHECK(!full_match(c, "007\"", 4) && !full_match(c, "-0\"", 3) && !full_match(c, "+1\"", 3));
            pcre2_code_free(c);
        }
        tl_strbuf_free(&re);
    }
    fprintf(stderr, "integer ranges: %d exact regexes checked\n", ranges);
}

/* Number regexes are exact too: every spelling of every grid value near the
 * range, with 0..decimals+1 fraction digits, matches iff the (step-free)
 * spec accepts it. */
static void test_decimal_ranges(void) {
    tl_error err = {0};
    int checked = 0, n_ranges = getenv("TL_SANITIZER_RUN") ? 30 : 150;
    for (int r = 0; r < n_ranges; r++) {
        int d = 1 + (int)(rnd() % 3);
        int64_t S = d == 1 ? 10 : d == 2 ? 100 : 1000;
        int64_t lo = (int64_t)(rnd() % 4000) - 2000, hi = lo + (int64_t)(rnd() % (r % 2 ? 40 : 3000));
        char json[200];
        snprintf(json, sizeof json, "{\"type\":\"number\",\"minimum\":%.*f,\"maximum\":%.*f,\"x-decimals\":%d}", d,
                 (double)lo / (double)S, d, (double)hi / (double)S, d);
        tl_number_spec spec;
        CHECKF(tl_number_spec_from_json(json, strlen(json), "/x", &spec, &err) == TL_OK, "%s: %s", json, err.msg);
        tl_number_close close = {.terminator = "\"", .allow_leading_space = r % 3 == 0};
        tl_strbuf re = TL_STRBUF_INIT;
        CHECK(tl_number_regex(&spec, &close, &re, &err) == TL_OK);
        pcre2_code *c = compile(tl_strbuf_cstr(&re), false);
        tl_regex_info info;
        CHECKF(tl_regex_parse(re.buf, re.len, &info, &err) == TL_OK && info.number.lo == spec.lo &&
                   info.number.hi == spec.hi && info.number.decimals == d,
               "%s: %s not read back", json, tl_strbuf_cstr(&re));
        tl_regex_info_free(&info);
        if (!c) {
            CHECK(0);
            tl_strbuf_free(&re);
            continue;
        }
        for (int64_t N = lo - 300; N <= hi + 300; N++) {
            int64_t m = N < 0 ? -N : N;
            for (int f = 0; f <= d + 1; f++) {
                /* the spelling of N with f fraction digits, when N is on that grid */
                int64_t unit = 1;
                for (int k = f; k < d; k++)
                    unit *= 10;
                if (f <= d && m % unit != 0)
                    continue;
                char str[64];
                int n;
                int64_t ip = m / S, fp = m % S;
                if (f == 0)
                    n = snprintf(str, sizeof str, "%s%lld\"", N < 0 ? "-" : "", (long long)ip);
                else if (f <= d)
                    n = snprintf(str, sizeof str, "%s%lld.%0*lld\"", N < 0 ? "-" : "", (long long)ip, f & 7,
                                 (long long)(fp / unit));
                else
                    n = snprintf(str, sizeof str, "%s%lld.%0*lld0\"", N < 0 ? "-" : "", (long long)ip, d & 7,
                                 (long long)fp);
                bool want = tl_number_spec_accepts(&spec, str, (size_t)n - 1, NULL);
                checked++;
                CHECKF(full_match(c, str, (size_t)n) == want, "%s: %s (want %d) on %s", json, str, want,
                       tl_strbuf_cstr(&re));
            }
        }
        pcre2_code_free(c);
        tl_strbuf_free(&re);
    }
    fprintf(stderr, "decimal ranges: %d spellings checked\n", checked);
}

static void test_enum_regexes(void) {
    const char *values[] = {"meal", "travel", "a.b|c", "(x)*", "tab\there", "caf\xc3\xa9", "[1-9]{2}", "back\\slash",
                            "0"};
    size_t nv = sizeof values / sizeof values[0];
    tl_strbuf re = TL_STRBUF_INIT;
    tl_error err = {0};
    CHECK(tl_enum_regex(values, nv, "\"", &re, &err) == TL_OK);
    pcre2_code *c = compile(tl_strbuf_cstr(&re), true);
    CHECK(c != NULL);
    for (size_t i = 0; i < nv && c; i++) {
        char s[64];
        snprintf(s, sizeof s, "%s\"", values[i]);
        CHECKF(full_match(c, s, strlen(s)), "%s does not match %s", s, tl_strbuf_cstr(&re));
        CHECK(!full_match(c, values[i], strlen(values[i])));
    }
    if (c) {
        CHECK(!full_match(c, "abxc\"", 5));
        CHECK(!full_match(c, "x\"", 2));
        CHECK(!full_match(c, "55\"", 3));
        pcre2_code_free(c);
    }
    tl_regex_info info;
    CHECKF(tl_regex_parse(re.buf, re.len, &info, &err) == TL_OK, "%s", err.msg);
    CHECK(info.kind == TL_REGEX_ENUM && info.n_values == nv);
    for (size_t i = 0; i < nv && i < info.n_values; i++)
        CHECKF(info.value_lens[i] == strlen(values[i]) && memcmp(info.values[i], values[i], info.value_lens[i]) == 0,
               "value %zu", i);
    CHECK(info.terminator_len == 1 && info.terminator[0] == '"');
    tl_regex_info_free(&info);
    tl_strbuf_free(&re);
    CHECK(tl_enum_regex(values, 0, "\"", &re, &err) == TL_ERR_INVALID);
    tl_strbuf_free(&re);
}

static void test_freetext_regexes(void) {
    tl_error err = {0};
    for (int json = 0; json < 2; json++) {
        tl_strbuf re = TL_STRBUF_INIT;
        CHECK(tl_freetext_regex(5, json, "\"", &re, &err) == TL_OK);
        pcre2_code *c = compile(tl_strbuf_cstr(&re), true);
        CHECKF(c != NULL, "%s", tl_strbuf_cstr(&re));
        if (c) {
            CHECK(full_match(c, "\"", 1));
            CHECK(full_match(c, "h\xc3\xa9llo\"", 7)); /* 5 characters, 6 bytes */
            CHECK(!full_match(c, "hello!\"", 7));
            CHECK(!full_match(c, "hello", 5));
            CHECK(full_match(c, "a\\\"b\"", 5) == (bool)json); /* an escaped quote inside */
            CHECK(!full_match(c, "a\"b\"", 4));
            pcre2_code_free(c);
        }
        tl_regex_info info;
        CHECKF(tl_regex_parse(re.buf, re.len, &info, &err) == TL_OK, "%s: %s", tl_strbuf_cstr(&re), err.msg);
        CHECK(info.kind == TL_REGEX_FREETEXT && info.max_chars == 5 && info.json_escapes == (bool)json);
        CHECK(info.terminator_len == 1 && info.terminator[0] == '"');
        tl_regex_info_free(&info);
        tl_strbuf_free(&re);
    }
    tl_strbuf re = TL_STRBUF_INIT;
    CHECK(tl_freetext_regex(3, false, NULL, &re, &err) == TL_OK);
    pcre2_code *c = compile(tl_strbuf_cstr(&re), true);
    CHECK(c && full_match(c, "a\nb", 3) && !full_match(c, "abcd", 4));
    if (c)
        pcre2_code_free(c);
    tl_strbuf_free(&re);
    CHECK(tl_freetext_regex(3, false, "</a>", &re, &err) == TL_ERR_UNSUPPORTED);
    tl_strbuf_free(&re);
}

static void test_foreign_regexes(void) {
    static const char *foreign[] = {"[0-9]+",   "(a|b",          "abc(",        "(0|[1-9][0-9]{0,x})",
                                    "-?\\d+",   "(0|[1-9][0-9]{0,3})(\\.[0-9]{1,0})?", "(0|[1-9][0-9]{0,99})",
                                    "(a|b)*",   ".*",            "(0|[1-9][0-9]{0,3})\\q"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        tl_regex_info info;
        tl_error err = {0};
        tl_status st = tl_regex_parse(foreign[i], strlen(foreign[i]), &info, &err);
        CHECKF(st == TL_ERR_UNSUPPORTED, "%s parsed (%d)", foreign[i], st);
        CHECK(info.values == NULL && info.terminator == NULL);
    }
}

int main(void) {
    test_number_regexes();
    test_integer_ranges();
    test_decimal_ranges();
    test_enum_regexes();
    test_freetext_regexes();
    test_foreign_regexes();
    return TEST_DONE();
}
