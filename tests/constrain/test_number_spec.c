/* test_number_spec.c: number specs from schema fields (every error class
 * with its JSON path), and the text predicates checked against an
 * independent oracle: for small ranges, every allowed value is written out in
 * every accepted spelling and a prefix is viable exactly when it starts one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "tl_test.h"

static tl_status parse(const char *json, tl_number_spec *sp, tl_error *err) {
    return tl_number_spec_from_json(json, strlen(json), "/properties/x", sp, err);
}

static void expect_error(const char *json, const char *needle) {
    tl_number_spec sp;
    tl_error err = {0};
    tl_status st = parse(json, &sp, &err);
    CHECKF(st == TL_ERR_SCHEMA, "%s: status %d", json, st);
    CHECKF(strstr(err.msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", json, err.msg, needle);
}

static void test_errors(void) {
    expect_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}", "/properties/x/minimum");
    expect_error("{\"type\":\"number\",\"minimum\":2.5,\"maximum\":2.25}", "/properties/x/minimum: 2.5 is greater than maximum 2.25");
    expect_error("{\"type\":\"integer\",\"multipleOf\":0}", "/properties/x/multipleOf: must be greater than 0");
    expect_error("{\"type\":\"integer\",\"multipleOf\":-2}", "/properties/x/multipleOf");
    expect_error("{\"type\":\"integer\",\"multipleOf\":1.5}", "must be an integer");
    expect_error("{\"type\":\"integer\",\"minimum\":\"5\"}", "/properties/x/minimum: must be a number");
    expect_error("{\"type\":\"number\",\"maximum\":null}", "/properties/x/maximum: must be a number");
    expect_error("{\"type\":\"integer\",\"minimum\":1,\"maximum\":9,\"multipleOf\":10}", "no integer satisfies");
    expect_error("{\"type\":\"integer\",\"exclusiveMinimum\":3,\"exclusiveMaximum\":4}", "no integer satisfies");
    expect_error("{\"type\":\"integer\",\"minimum\":0.2,\"maximum\":0.8}", "no integer satisfies");
    expect_error("{\"type\":\"number\",\"x-decimals\":1,\"minimum\":0.01,\"maximum\":0.09}", "no number satisfies");
    expect_error("{\"type\":\"integer\",\"open\":true}", "/properties/x/open");
    expect_error("{\"type\":\"number\",\"open\":[\"other\"]}", "/properties/x/open");
    expect_error("{\"type\":\"integer\",\"maximum\":1e19}", "int64");
    expect_error("{\"type\":\"integer\",\"minimum\":-1e30}", "int64");
    expect_error("{\"type\":\"string\"}", "/properties/x/type");
    expect_error("{\"minimum\":1}", "/properties/x/type");
    expect_error("[1,2]", "/properties/x");
    expect_error("{\"type\":\"number\",\"x-decimals\":13}", "x-decimals");
    expect_error("{\"type\":\"number\",\"x-decimals\":1,\"multipleOf\":0.25}", "more than x-decimals");
    expect_error("{\"type\":\"number\",\"x-max-digits\":0}", "x-max-digits");
    expect_error("{\"type\":\"integer\",\"exclusiveMinimum\":true}", "needs minimum");
    expect_error("{\"type\":\"integer\", \"minimum\": }", "line 1");
}

static void test_specs(void) {
    tl_number_spec sp;
    tl_error err = {0};
    CHECK(parse("{\"type\":\"integer\",\"minimum\":1,\"maximum\":10}", &sp, &err) == TL_OK);
    CHECK(sp.kind == TL_NUMBER_INTEGER && sp.lo == 1 && sp.hi == 10 && sp.step == 1 && sp.max_int_digits == 2);
    /* exclusive bounds, both spellings */
    CHECK(parse("{\"type\":\"integer\",\"exclusiveMinimum\":1,\"exclusiveMaximum\":10}", &sp, &err) == TL_OK);
    CHECK(sp.lo == 2 && sp.hi == 9);
    CHECK(parse("{\"type\":\"integer\",\"minimum\":1,\"exclusiveMinimum\":true,\"maximum\":10,"
                "\"exclusiveMaximum\":true}",
                &sp, &err) == TL_OK);
    CHECK(sp.lo == 2 && sp.hi == 9);
    /* the tighter of two lower bounds */
    CHECK(parse("{\"type\":\"integer\",\"minimum\":5,\"exclusiveMinimum\":5}", &sp, &err) == TL_OK);
    CHECK(sp.lo == 6 && sp.hi == INT64_MAX && sp.max_int_digits == 19);
    /* unbounded integers are int64 */
    CHECK(parse("{\"type\":\"integer\"}", &sp, &err) == TL_OK);
    CHECK(sp.lo == INT64_MIN + 0 || sp.lo == -(__int128)INT64_MAX); /* clamped to 19 digits */
    CHECK(sp.hi == INT64_MAX);
    /* decimals from multipleOf, exact decimal bounds (0.3 is 3 tenths, not 2.999..) */
    CHECK(parse("{\"type\":\"number\",\"minimum\":0.3,\"maximum\":2.5,\"multipleOf\":0.1}", &sp, &err) == TL_OK);
    CHECK(sp.kind == TL_NUMBER_DECIMAL && sp.decimals == 1 && sp.lo == 3 && sp.hi == 25 && sp.step == 1);
    CHECK(parse("{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":1.5,\"multipleOf\":0.25}", &sp, &err) == TL_OK);
    CHECK(sp.decimals == 2 && sp.lo == -150 && sp.hi == 150 && sp.step == 25);
    CHECK(parse("{\"type\":\"number\",\"x-decimals\":2,\"exclusiveMinimum\":0,\"maximum\":1}", &sp, &err) == TL_OK);
    CHECK(sp.lo == 1 && sp.hi == 100);
    CHECK(parse("{\"type\":\"number\"}", &sp, &err) == TL_OK);
    CHECK(sp.decimals == 6 && sp.max_int_digits == 12);
    /* a bound between grid points rounds inward */
    CHECK(parse("{\"type\":\"number\",\"x-decimals\":1,\"minimum\":0.15,\"maximum\":0.95}", &sp, &err) == TL_OK);
    CHECK(sp.lo == 2 && sp.hi == 9);
    /* int64 extremes are exact */
    CHECK(parse("{\"type\":\"integer\",\"minimum\":-9223372036854775807,\"maximum\":9223372036854775807}", &sp,
                &err) == TL_OK);
    CHECK(sp.hi == INT64_MAX && sp.max_int_digits == 19);
    CHECK(parse("{\"type\":\"integer\",\"minimum\":0,\"maximum\":100,\"x-max-digits\":2}", &sp, &err) == TL_OK);
    CHECK(sp.hi == 99);
    /* bounds far beyond the digits are clamped to what the digits can write */
    CHECK(parse("{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":100999999100000000000000000999999999990.25,"
                "\"multipleOf\":5.25}",
                &sp, &err) == TL_OK);
    CHECK(sp.decimals == 2 && sp.max_int_digits == 19 && sp.lo == -150 && sp.step == 525);
    CHECK(sp.hi == (__int128)1000000000000000000 * 1000 - 1); /* 10^21 - 1: 19 digits and 2 decimals */
    CHECK(parse("{\"type\":\"number\",\"minimum\":-1e300,\"maximum\":1e300}", &sp, &err) == TL_OK);
    CHECK(sp.max_int_digits == 19);
    expect_error("{\"type\":\"number\",\"minimum\":1e300}", "no number satisfies");
    tl_strbuf d = TL_STRBUF_INIT;
    CHECK(parse("{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":1.5,\"multipleOf\":0.25}", &sp, &err) == TL_OK);
    tl_number_spec_describe(&sp, &d);
    CHECKF(strcmp(tl_strbuf_cstr(&d), "number in [-1.50, 1.50], multiple of 0.25 with up to 2 decimals") == 0, "%s",
           tl_strbuf_cstr(&d));
    tl_strbuf_free(&d);
}

static void test_accepts(void) {
    tl_number_spec sp;
    tl_error err = {0};
    tl_number_value v;
    CHECK(parse("{\"type\":\"integer\",\"minimum\":-20,\"maximum\":300,\"multipleOf\":5}", &sp, &err) == TL_OK);
    CHECK(tl_number_spec_accepts(&sp, "15", 2, &v) && v.is_integer && v.ival == 15);
    CHECK(tl_number_spec_accepts(&sp, "-20", 3, &v) && v.ival == -20);
    CHECK(tl_number_spec_accepts(&sp, "0", 1, &v) && v.ival == 0);
    CHECK(!tl_number_spec_accepts(&sp, "-0", 2, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "016", 3, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "16", 2, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "305", 3, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "+5", 2, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "5.0", 3, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "", 0, NULL));
    CHECK(tl_number_spec_prefix_viable(&sp, "-", 1));
    CHECK(tl_number_spec_prefix_viable(&sp, "", 0));
    CHECK(!tl_number_spec_prefix_viable(&sp, "-3", 2));  /* -3x is below -20 or not a multiple */
    CHECK(tl_number_spec_prefix_viable(&sp, "-2", 2));   /* -20 */
    CHECK(!tl_number_spec_prefix_viable(&sp, "31", 2));  /* 31x > 300 */
    CHECK(tl_number_spec_prefix_viable(&sp, "30", 2));
    CHECK(parse("{\"type\":\"number\",\"minimum\":-1,\"maximum\":70.5,\"x-decimals\":2}", &sp, &err) == TL_OK);
    CHECK(tl_number_spec_accepts(&sp, "70.0", 4, &v) && !v.is_integer && v.dval == 70.0);
    CHECK(tl_number_spec_accepts(&sp, "-0.5", 4, &v) && v.dval == -0.5);
    CHECK(tl_number_spec_accepts(&sp, "70.50", 5, &v));
    CHECK(!tl_number_spec_accepts(&sp, "70.51", 5, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "1.234", 5, NULL));
    CHECK(!tl_number_spec_accepts(&sp, "5.", 2, NULL));
    CHECK(tl_number_spec_prefix_viable(&sp, "5.", 2));
    CHECK(!tl_number_spec_prefix_viable(&sp, "-1.5", 4));
    CHECK(!tl_number_spec_prefix_viable(&sp, "1e5", 3));
}

/* ---- the enumeration oracle ---- */

typedef struct strset {
    char **s;
    size_t n, cap;
} strset;

static void add(strset *set, const char *s) {
    if (set->n == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 1024;
        set->s = realloc(set->s, set->cap * sizeof *set->s);
    }
    set->s[set->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every spelling of every allowed value: integer part, then for numbers
 * optionally a fraction of 1..decimals digits that keeps the value on grid. */
static void enumerate(const tl_number_spec *sp, strset *set) {
    int64_t S = 1;
    for (int i = 0; i < sp->decimals; i++)
        S *= 10;
    for (int64_t N = (int64_t)sp->lo; N <= (int64_t)sp->hi; N++) {
        if (N % (int64_t)sp->step != 0)
            continue;
        int64_t m = N < 0 ? -N : N;
        int64_t ip = m / S, fp = m % S;
        char buf[160];
        const char *sign = N < 0 ? "-" : "";
        if (fp == 0)
            snprintf(buf, sizeof buf, "%s%lld", sign, (long long)ip), add(set, buf);
        bool neg_zero = N == 0 && sp->kind == TL_NUMBER_DECIMAL && sp->lo < 0; /* "-0" reads as 0 */
        if (neg_zero)
            add(set, "-0");
        for (int f = 1; f <= sp->decimals; f++) {
            int64_t unit = 1;
            for (int i = f; i < sp->decimals; i++)
                unit *= 10;
            if (fp % unit != 0)
                continue;
            snprintf(buf, sizeof buf, "%s%lld.%0*lld", sign, (long long)ip, f & 7, (long long)(fp / unit));
            add(set, buf);
            if (neg_zero) {
                snprintf(buf, sizeof buf, "-0.%0*lld", f & 7, 0LL);
                add(set, buf); /* "-0.0" reads as 0 */
            }
        }
    }
    qsort(set->s, set->n, sizeof *set->s, cmp_str);
}

static bool set_has_prefix(const strset *set, const char *p) {
    size_t lo = 0, hi = set->n, l = strlen(p);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(set->s[mid], p) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < set->n && strncmp(set->s[lo], p, l) == 0;
}

static bool set_has(const strset *set, const char *p) {
    return bsearch(&p, set->s, set->n, sizeof *set->s, cmp_str) != NULL;
}

static uint64_t rng = 12345;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_enumeration_oracle(void) {
    static const char alphabet[] = "0123456789-.";
    int specs = 0, prefixes = 0;
    for (int trial = 0; trial < 300; trial++) {
        tl_number_spec sp;
        tl_error err = {0};
        char json[256];
        bool is_int = next() % 2;
        int dec = is_int ? 0 : (int)(next() % 3);
        int64_t span = (int64_t)(next() % 3000);
        int64_t lo = (int64_t)(next() % 4000) - 2000;
        int64_t step = next() % 3 == 0 ? 1 + (int64_t)(next() % 40) : 1;
        double scale = dec == 0 ? 1 : dec == 1 ? 10 : 100;
        snprintf(json, sizeof json,
                 "{\"type\":\"%s\",\"minimum\":%.*f,\"maximum\":%.*f,\"multipleOf\":%.*f%s}",
                 is_int ? "integer" : "number", dec, lo / scale, dec, (lo + span) / scale, dec, step / scale,
                 is_int ? "" : dec == 0 ? ",\"x-decimals\":0" : "");
        tl_status st = parse(json, &sp, &err);
        if (st != TL_OK) {
            CHECKF(strstr(err.msg, "satisfies") != NULL, "%s: %s", json, err.msg);
            continue;
        }
        specs++;
        strset set = {0};
        enumerate(&sp, &set);
        CHECKF(set.n > 0, "%s: nothing enumerated", json);
        /* every member and random strings: viability == "prefix of a member" */
        for (size_t i = 0; i < set.n; i += 1 + set.n / 50) {
            const char *s = set.s[i];
            size_t l = strlen(s);
            CHECKF(tl_number_spec_accepts(&sp, s, l, NULL), "%s: rejects %s", json, s);
            for (size_t k = 0; k <= l; k++) {
                char p[64];
                memcpy(p, s, k);
                p[k] = '\0';
                CHECKF(tl_number_spec_prefix_viable(&sp, p, k), "%s: prefix %s of %s not viable", json, p, s);
            }
        }
        for (int r = 0; r < 400; r++) {
            char p[16];
            size_t l = 1 + next() % 7;
            for (size_t k = 0; k < l; k++)
                p[k] = alphabet[next() % (sizeof alphabet - 1)];
            p[l] = '\0';
            prefixes++;
            CHECKF(tl_number_spec_prefix_viable(&sp, p, l) == set_has_prefix(&set, p), "%s: prefix \"%s\": %d vs %d",
                   json, p, tl_number_spec_prefix_viable(&sp, p, l), set_has_prefix(&set, p));
            CHECKF(tl_number_spec_accepts(&sp, p, l, NULL) == set_has(&set, p), "%s: accepts \"%s\"", json, p);
        }
        for (size_t i = 0; i < set.n; i++)
            free(set.s[i]);
        free(set.s);
    }
    fprintf(stderr, "enumeration oracle: %d specs, %d random prefixes\n", specs, prefixes);
    CHECK(specs > 100);
}

int main(void) {
    test_errors();
    test_specs();
    test_accepts();
    test_enumeration_oracle();
    return TEST_DONE();
}
