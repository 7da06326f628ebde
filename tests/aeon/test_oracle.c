/* test_oracle.c: the completion oracle against the independent parser +
 * type checker, in the style of the PLDI 2025 authors' tests:
 *   - LIVE prefixes come with a witness that extends the prefix and that
 *     syntax.c + check.c (a separate code path) parse and type to the goal;
 *   - DEAD prefixes are confirmed by brute-force enumeration of short
 *     completions over a small token alphabet (none type-checks);
 *   - "just before reject" pairs (a LIVE prefix, one more character DEAD);
 *   - prefix closure (every prefix of a LIVE prefix is LIVE);
 *   - no false DEAD: every prefix of a random string the checker accepts is LIVE.
 * Hundreds of prefixes per context, from seeded random walks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/oracle.h"
#include "tl_test.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef struct ctx {
    const char *name;
    tl_aeon_program *prog;
    tl_aeon_scope *scope;
    tl_aeon_engine *eng;
    const char *alphabet[40]; /* tokens for walks and brute force */
    int n_alpha;
} ctx;

/* Full path: parse + type-check text as the hole's candidate. */
static bool full_accepts(ctx *c, const char *text, size_t len) {
    tl_aeon_expr *e;
    tl_error err;
    if (tl_aeon_parse_expr(c->prog, text, len, &e, &err))
        return false;
    return tl_aeon_check_candidate(c->prog, e, &err) == TL_OK;
}

static tl_aeon_verdict query(ctx *c, const char *text, size_t len, tl_strbuf *wit) {
    tl_aeon_state *s0 = tl_aeon_state_initial();
    tl_aeon_state *s = tl_aeon_state_advance(s0, text, len);
    tl_aeon_verdict v = tl_aeon_completion_status(c->eng, s, wit, NULL);
    tl_aeon_state_free(s0);
    tl_aeon_state_free(s);
    return v;
}

static int n_live, n_dead, n_pairs, n_bruteforce;

/* A LIVE answer's witness extends the prefix and passes the full checker. */
static void check_live(ctx *c, const char *text, size_t len, const tl_strbuf *wit) {
    n_live++;
    CHECKF(wit->len >= len && !memcmp(wit->buf, text, len), "%s: witness '%s' does not extend '%.*s'", c->name,
           tl_strbuf_cstr(wit), (int)len, text);
    CHECKF(full_accepts(c, wit->buf, wit->len), "%s: witness '%s' (prefix '%.*s') rejected by the checker",
           c->name, tl_strbuf_cstr(wit), (int)len, text);
}

/* Depth-limited enumeration of completions over the alphabet; true if one
 * type-checks (which would refute a DEAD verdict). */
static bool some_completion(ctx *c, char *buf, size_t len, int depth) {
    n_bruteforce++;
    if (full_accepts(c, buf, len))
        return true;
    if (depth == 0)
        return false;
    for (int i = 0; i < c->n_alpha; i++) {
        size_t n = strlen(c->alphabet[i]);
        if (len + n >= 256)
            continue;
        memcpy(buf + len, c->alphabet[i], n);
        buf[len + n] = '\0';
        if (some_completion(c, buf, len + n, depth - 1))
            return true;
    }
    buf[len] = '\0';
    return false;
}

static void check_dead(ctx *c, const char *text, size_t len, int depth) {
    n_dead++;
    char buf[256];
    if (len >= 200)
        return;
    memcpy(buf, text, len);
    buf[len] = '\0';
    CHECKF(!some_completion(c, buf, len, depth), "%s: DEAD prefix '%.*s' has a completion '%s'", c->name,
           (int)len, text, buf);
}

/* Every prefix of a LIVE text is LIVE. */
static void check_closure(ctx *c, const char *text, size_t len) {
    tl_strbuf w = TL_STRBUF_INIT;
    for (size_t k = 0; k < len; k++) {
        tl_aeon_verdict v = query(c, text, k, &w);
        CHECKF(v == TL_AEON_LIVE, "%s: prefix '%.*s' of LIVE '%.*s' is %s", c->name, (int)k, text, (int)len, text,
               tl_aeon_verdict_name(v));
    }
    tl_strbuf_free(&w);
}

/* Random walks: extend by alphabet tokens while LIVE; at the first DEAD
 * extension probe it character by character for the reject point. */
static void random_walks(ctx *c, int walks, int brute_depth) {
    tl_strbuf w = TL_STRBUF_INIT;
    for (int k = 0; k < walks; k++) {
        char text[512] = "";
        size_t len = 0;
        for (int step = 0; step < 14; step++) {
            const char *tok = c->alphabet[rng() % (uint64_t)c->n_alpha];
            size_t n = strlen(tok);
            if (len + n >= 200)
                break;
            memcpy(text + len, tok, n);
            text[len + n] = '\0';
            tl_aeon_verdict v = query(c, text, len + n, &w);
            if (v == TL_AEON_LIVE) {
                check_live(c, text, len + n, &w);
                if (w.len == len + n) /* accepting: the text itself checks */
                    CHECKF(full_accepts(c, text, len + n), "%s: accepting '%s' rejected by the checker", c->name,
                           text);
                len += n;
                continue;
            }
            CHECKF(v == TL_AEON_DEAD, "%s: '%s' is %s (%s)", c->name, text, tl_aeon_verdict_name(v), tl_strbuf_cstr(&w));
            /* find the first character after which the text is DEAD */
            size_t j = len + 1;
            while (j < len + n && query(c, text, j, &w) == TL_AEON_LIVE)
                j++;
            if (query(c, text, j - 1, &w) == TL_AEON_LIVE && query(c, text, j, &w) == TL_AEON_DEAD) {
                n_pairs++;
                check_dead(c, text, j, brute_depth);
            }
            text[len] = '\0';
            if (rng() % 4 == 0)
                break;
        }
        if (len > 0 && k % 8 == 0)
            check_closure(c, text, len);
    }
    tl_strbuf_free(&w);
}

/* No false DEAD: random alphabet strings the full checker accepts have only
 * LIVE prefixes (and are accepting). */
static void accepted_strings(ctx *c, int tries) {
    tl_strbuf w = TL_STRBUF_INIT;
    int found = 0;
    for (int k = 0; k < tries; k++) {
        char text[256] = "";
        size_t len = 0;
        int n_tok = 1 + (int)(rng() % 6);
        for (int i = 0; i < n_tok; i++) {
            const char *tok = c->alphabet[rng() % (uint64_t)c->n_alpha];
            size_t n = strlen(tok);
            memcpy(text + len, tok, n);
            len += n;
        }
        text[len] = '\0';
        if (!full_accepts(c, text, len))
            continue;
        found++;
        check_closure(c, text, len);
        tl_aeon_verdict v = query(c, text, len, &w);
        CHECKF(v == TL_AEON_LIVE && w.len == len, "%s: checker accepts '%s' but the oracle says %s (witness '%s')",
               c->name, text, tl_aeon_verdict_name(v), tl_strbuf_cstr(&w));
    }
    CHECKF(found > 0, "%s: no accepted random strings", c->name);
    tl_strbuf_free(&w);
}

static bool ctx_open(ctx *c, const char *name, const char *src, const char *const *alpha) {
    tl_error err = {0};
    memset(c, 0, sizeof *c);
    c->name = name;
    if (tl_aeon_program_load(src, strlen(src), &c->prog, &err) || tl_aeon_scope_new(c->prog, &c->scope, &err) ||
        tl_aeon_engine_new(c->scope, NULL, &c->eng, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return false;
    }
    while (alpha[c->n_alpha])
        c->alphabet[c->n_alpha] = alpha[c->n_alpha], c->n_alpha++;
    return true;
}

static void ctx_close(ctx *c) {
    tl_aeon_engine_free(c->eng);
    tl_aeon_scope_free(c->scope);
    tl_aeon_program_free(c->prog);
}

/* Exact verdicts the oracle must give (hand-checked). */
static void fixed_cases(void) {
    ctx c;
    static const char *const alpha[] = {" ", NULL};
    CHECK(ctx_open(&c, "clamp", "def limit : Int := 10;\ndef clamp (n:Int) : Int := ?hole;", alpha));
    struct { const char *prefix; tl_aeon_verdict v; } cases[] = {
        {"", TL_AEON_LIVE}, {"n", TL_AEON_LIVE}, {"n <", TL_AEON_DEAD}, {"if n < li", TL_AEON_LIVE}, {"if n < limit then limit else n", TL_AEON_LIVE},
        {"if n < limit then limit else n <", TL_AEON_DEAD}, {"true", TL_AEON_DEAD}, {"tr", TL_AEON_DEAD}, {"t", TL_AEON_DEAD},
        {"(n", TL_AEON_LIVE}, {"(n)", TL_AEON_LIVE}, {"(n))", TL_AEON_DEAD}, {"n + ", TL_AEON_LIVE}, {"n +-", TL_AEON_DEAD},
        {"1e", TL_AEON_DEAD}, {"1.", TL_AEON_DEAD}, {"12", TL_AEON_LIVE}, {"\"a", TL_AEON_DEAD}, {"let x := \"a", TL_AEON_LIVE},
        {"let x := 1.5e", TL_AEON_LIVE}, {"let x := 1.5e+", TL_AEON_LIVE}, {"let x := \"\\u00", TL_AEON_LIVE},
        {"let x := \"\\uD8", TL_AEON_DEAD}, {"let x := \"\\N", TL_AEON_DEAD}, {"let in ", TL_AEON_DEAD}, {"let in", TL_AEON_LIVE}, {"let i", TL_AEON_LIVE},
        {"fun", TL_AEON_DEAD}, {"n < 1 < 2", TL_AEON_DEAD}, {"if n = 1 = ", TL_AEON_DEAD}, {"le", TL_AEON_LIVE}, {"li", TL_AEON_LIVE},
        {"limit limit", TL_AEON_DEAD}, {"clamp", TL_AEON_DEAD}, {"# comment", TL_AEON_DEAD}, {"?h", TL_AEON_DEAD},
        {"if !(n < 2) && true then n % 2 else 0", TL_AEON_LIVE}, {"n - -", TL_AEON_DEAD}, {"n -> ", TL_AEON_DEAD},
    };
    tl_strbuf w = TL_STRBUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_aeon_verdict v = query(&c, cases[i].prefix, strlen(cases[i].prefix), &w);
        CHECKF(v == cases[i].v, "clamp: '%s' is %s, expected %s (%s)", cases[i].prefix, tl_aeon_verdict_name(v),
               tl_aeon_verdict_name(cases[i].v), tl_strbuf_cstr(&w));
        if (v == TL_AEON_LIVE)
            check_live(&c, cases[i].prefix, strlen(cases[i].prefix), &w);
    }
    /* an Int prefix stays live for a Bool goal: it can become a comparison */
    ctx b;
    CHECK(ctx_open(&b, "big", "def big (k:Int) : Bool := ?hole;", alpha));
    CHECK(query(&b, "k", 1, &w) == TL_AEON_LIVE);
    CHECK(query(&b, "k + 1", 5, &w) == TL_AEON_LIVE && strstr(tl_strbuf_cstr(&w), "k + 1 ") != NULL);
    CHECK(query(&b, "k < 1 &&", 8, &w) == TL_AEON_LIVE);
    CHECK(query(&b, "\"s\"", 3, &w) == TL_AEON_LIVE); /* "s" = "" */
    CHECK(query(&b, "unit", 4, &w) == TL_AEON_LIVE);  /* unit = unit */
    /* an arrow goal: a lambda or a partial application */
    ctx f;
    CHECK(ctx_open(&f, "fn", "def add (a:Int) (b:Int) : Int := a + b;\ndef inc : (x:Int) -> Int := ?hole;", alpha));
    CHECK(query(&f, "add 1", 5, &w) == TL_AEON_LIVE && w.len == 5);
    CHECK(query(&f, "fun y => y + 1", 14, &w) == TL_AEON_LIVE && w.len == 14);
    CHECK(query(&f, "fun y => y + 1 2", 16, &w) == TL_AEON_DEAD);
    CHECK(query(&f, "(fun y => y) 1", 14, &w) == TL_AEON_DEAD);
    CHECK(query(&f, "add 1 2", 7, &w) == TL_AEON_DEAD);
    /* work limit: UNKNOWN, never DEAD */
    tl_aeon_engine *tiny;
    tl_aeon_oracle_limits lim = {.max_states = 3};
    CHECK(tl_aeon_engine_new(c.scope, &lim, &tiny, NULL) == TL_OK);
    tl_aeon_state *s0 = tl_aeon_state_initial(), *s = tl_aeon_state_advance(s0, "if n < 1 then", 13);
    CHECK(tl_aeon_completion_status(tiny, s, &w, NULL) == TL_AEON_UNKNOWN);
    tl_aeon_state_free(s);
    /* text limit */
    char big[TL_AEON_MAX_TEXT + 10];
    memset(big, ' ', sizeof big);
    s = tl_aeon_state_advance(s0, big, sizeof big);
    CHECK(tl_aeon_completion_status(tiny, s, &w, NULL) == TL_AEON_UNKNOWN);
    tl_aeon_state_free(s);
    /* nesting limit: 200 parentheses */
    memset(big, '(', 200);
    s = tl_aeon_state_advance(s0, big, 200);
    CHECK(tl_aeon_completion_status(c.eng, s, &w, NULL) == TL_AEON_UNKNOWN);
    tl_aeon_state_free(s);
    /* deadline in the past */
    tl_aeon_engine_set_deadline(tiny, 1e-9);
    s = tl_aeon_state_advance(s0, "n + 1", 5);
    CHECK(tl_aeon_completion_status(tiny, s, &w, NULL) == TL_AEON_UNKNOWN);
    tl_aeon_state_free(s);
    tl_aeon_state_free(s0);
    tl_aeon_engine_free(tiny);
    tl_strbuf_free(&w);
    ctx_close(&c);
    ctx_close(&b);
    ctx_close(&f);
}

int main(void) {
    fixed_cases();
    struct {
        const char *name, *src;
        const char *alpha[40];
        int walks, depth;
    } contexts[] = {
        {"clamp", "def limit : Int := 10;\n@example(clamp 15 = 10)\ndef clamp (n:Int) : Int := let helper := unit in ?hole;",
         {" ", "n", "limit", "helper", "1", "(", ")", "+", "<", "if", " then ", " else ", "let", " x", " := ", " in ", "x",
          "true", "=", "%", NULL},
         160, 2},
        {"big", "def scale : Float := 2.5;\ndef name : String := \"aeon\";\ndef big (k:Int) : Bool := ?hole;",
         {" ", "k", "scale", "name", "1", "1.5", "\"a\"", "(", ")", "+", "<", "&&", "||", "!", "=", "!=", "toFloat",
          "if", " then ", " else ", "true", "unit", NULL},
         160, 2},
        {"twice", "def twice (f:(x:Int) -> Int) (v:Int) : Int := ?hole;",
         {" ", "f", "v", "(", ")", "1", "+", "*", "fun", " y", " => ", "y", "if", " then ", " else ", "<", NULL},
         160, 2},
        {"inc", "def add (a:Int) (b:Int) : Int := a + b;\ndef inc : (x:Int) -> Int := ?hole;",
         {" ", "add", "x", "1", "(", ")", "+", "fun", " y", " => ", "y", "let", " z", " := ", " in ", "z", "add 1", "fun y => ", NULL},
         160, 2},
        {"flt", "def half : Float := 0.5;\ndef r (k:Int) : Float := ?hole;",
         {" ", "k", "half", "toFloat", "1", "2.", ".5", "e", "1e", "+", "-", "*", "/", "(", ")", "<", "if",
          " then ", " else ", NULL},
         120, 2},
        {"str", "def greet (who:String) (n:Int) : String := ?hole;",
         {" ", "who", "n", "\"", "a", "\\", "x", "u", "0", "+", "(", ")", "if", " then ", " else ", "<", "=", NULL},
         160, 2},
    };
    for (size_t i = 0; i < sizeof contexts / sizeof contexts[0]; i++) {
        ctx c;
        if (!ctx_open(&c, contexts[i].name, contexts[i].src, contexts[i].alpha)) {
            CHECK(0);
            continue;
        }
        int live0 = n_live, dead0 = n_dead;
        random_walks(&c, contexts[i].walks, contexts[i].depth);
        accepted_strings(&c, 3000);
        fprintf(stderr, "%s: %d LIVE prefixes checked, %d DEAD prefixes brute-forced\n", contexts[i].name,
                n_live - live0, n_dead - dead0);
        CHECK(n_live - live0 >= 100 && n_dead - dead0 >= 100);
        ctx_close(&c);
    }
    /* every example file, with an alphabet of its context names and common tokens */
    static const char *files[] = {"application.ae", "conditional_let.ae", "whole_function.ae", "positive.ae",
                                  "answer.ae", "not_found.ae", "double.ae", "clamp.ae", "twice.ae", "mixed.ae",
                                  "minimize.ae"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[2048];
        const char *srcdir = getenv("TL_SRC");
        snprintf(path, sizeof path, "%s/examples/synthesis/type_constrained/%s", srcdir ? srcdir : ".", files[i]);
        ctx c;
        memset(&c, 0, sizeof c);
        c.name = files[i];
        tl_error err;
        if (tl_aeon_program_load_file(path, &c.prog, &err) || tl_aeon_scope_new(c.prog, &c.scope, &err) ||
            tl_aeon_engine_new(c.scope, NULL, &c.eng, &err)) {
            CHECKF(0, "%s: %s", path, err.msg);
            continue;
        }
        static const char *common[] = {" ", "1", "(", ")", "+", "<", "=", "&&", "if", " then ", " else ", "fun",
                                       " y", " => ", "\"", NULL};
        for (int k = 0; common[k]; k++)
            c.alphabet[c.n_alpha++] = common[k];
        for (int k = 0; k < c.prog->n_context && c.n_alpha < 38; k++)
            c.alphabet[c.n_alpha++] = c.prog->context[k].name;
        int live0 = n_live, dead0 = n_dead;
        random_walks(&c, 60, 1);
        fprintf(stderr, "%s: %d LIVE prefixes checked, %d DEAD prefixes brute-forced\n", files[i], n_live - live0,
                n_dead - dead0);
        CHECK(n_live - live0 + n_dead - dead0 >= 100);
        ctx_close(&c);
    }
    fprintf(stderr, "LIVE checked %d, DEAD checked %d, reject pairs %d, brute-force candidates %d\n", n_live, n_dead,
            n_pairs, n_bruteforce);
    CHECK(n_live > 500);
    CHECK(n_pairs > 100);
    return TEST_DONE();
}
