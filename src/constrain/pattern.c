/* pattern.c: JSON Schema `pattern` regexes as a DFA over code points, and the
 * token-level automaton that generates a string field's value under it.
 *
 * Syntax (the ECMA-262 / PCRE subset JSON Schema patterns use): literals,
 * `.`, classes `[a-z_]`, `[^...]`, escapes \d \w \s \D \W \S \t \n \r \f \v
 * \xHH \uHHHH and escaped punctuation, groups `( )` `(?: )` `(?<name> )`,
 * alternation `|`, quantifiers `* + ? {n} {n,} {n,m}` (lazy `?` and
 * possessive `+` suffixes read as greedy: the language is the same), `^` at
 * the start and `$` at the end of a top-level alternative. A JSON Schema
 * pattern is unanchored (it may match anywhere in the value); typellm
 * generates values that begin with a match (a searching DFA would be
 * exponential in counted repeats) and, where the alternative has no `$`,
 * continue with any text. Every such value matches as the pattern says.
 * Refused, with the offset: backreferences, lookaround, \b \B, anchors
 * elsewhere, flags.
 *
 * Generated values are JSON string bodies written literally, so they never
 * contain `"`, `\` or control characters (U+0000..U+001F), nor surrogates:
 * every class is intersected with that set. The DFA's states carry, per
 * remaining length, whether an accepting state is reachable, so the
 * automaton enforces minLength/maxLength (in code points) together with the
 * pattern: a token is allowed only if the text stays a prefix of some
 * matching value of allowed length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "constrain/sample.h"
#include "util/error.h"

#define CP_MAX 0x10FFFF
#define NFA_MAX 20000
#define DFA_MAX 4096
#define REPEAT_MAX 1000
#define DP_BUDGET 8000000ull /* (successor edges + states) x lengths */
#define DFA_BUDGET 100000000ull /* NFA-state visits while determinizing */

/* ---- code point sets ------------------------------------------------------ */

typedef struct range {
    uint32_t lo, hi;
} range;

typedef struct cset {
    range *r;
    size_t n, cap;
} cset;

static bool cset_add(cset *s, uint32_t lo, uint32_t hi) {
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 4;
        range *p = realloc(s->r, c * sizeof *p);
        if (!p)
            return false;
        s->r = p;
        s->cap = c;
    }
    s->r[s->n++] = (range){lo, hi};
    return true;
}

static int range_cmp(const void *a, const void *b) {
    const range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges. */
static void cset_norm(cset *s) {
    if (!s->n)
        return;
    qsort(s->r, s->n, sizeof *s->r, range_cmp);
    size_t o = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->r[i].lo <= s->r[o].hi + 1) {
            if (s->r[i].hi > s->r[o].hi)
                s->r[o].hi = s->r[i].hi;
        } else {
            s->r[++o] = s->r[i];
        }
    }
    s->n = o + 1;
}

/* s = complement of s over [0, CP_MAX]. */
static bool cset_negate(cset *s) {
    cset_norm(s);
    cset t = {0};
    uint32_t next = 0;
    bool ok = true;
    for (size_t i = 0; i < s->n && ok; i++) {
        if (s->r[i].lo > next)
            ok = cset_add(&t, next, s->r[i].lo - 1);
        next = s->r[i].hi + 1;
    }
    if (ok && next <= CP_MAX)
        ok = cset_add(&t, next, CP_MAX);
    free(s->r);
    *s = t;
    return ok;
}

/* What a generated literal may hold: no '"', '\\', controls, surrogates. */
static bool cset_restrict(cset *s) {
    cset_norm(s);
    static const range SAFE[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, CP_MAX}};
    cset t = {0};
    bool ok = true;
    for (size_t i = 0; i < s->n && ok; i++)
        for (size_t j = 0; j < sizeof SAFE / sizeof SAFE[0] && ok; j++) {
            uint32_t lo = s->r[i].lo > SAFE[j].lo ? s->r[i].lo : SAFE[j].lo;
            uint32_t hi = s->r[i].hi < SAFE[j].hi ? s->r[i].hi : SAFE[j].hi;
            if (lo <= hi)
                ok = cset_add(&t, lo, hi);
        }
    free(s->r);
    *s = t;
    return ok;
}

/* ---- the NFA -------------------------------------------------------------- */

typedef struct nstate {
    int out1, out2; /* epsilon edges (-1 none) when cls < 0; else out1 on cls */
    int cls;        /* index into classes, or -1 */
} nstate;

typedef struct nfa {
    nstate *st;
    size_t n, cap;
    cset *cls;
    size_t n_cls, cap_cls;
} nfa;

static int nfa_new(nfa *a, int cls) {
    if (a->n >= NFA_MAX)
        return -1;
    if (a->n == a->cap) {
        size_t c = a->cap ? 2 * a->cap : 64;
        nstate *p = realloc(a->st, c * sizeof *p);
        if (!p)
            return -1;
        a->st = p;
        a->cap = c;
    }
    a->st[a->n] = (nstate){-1, -1, cls};
    return (int)a->n++;
}

static int nfa_class(nfa *a, cset *s) {
    if (a->n_cls == a->cap_cls) {
        size_t c = a->cap_cls ? 2 * a->cap_cls : 16;
        cset *p = realloc(a->cls, c * sizeof *p);
        if (!p)
            return -1;
        a->cls = p;
        a->cap_cls = c;
    }
    a->cls[a->n_cls] = *s;
    memset(s, 0, sizeof *s);
    return (int)a->n_cls++;
}

/* ---- the parser: an AST first (repeats re-emit it) ------------------------ */

typedef enum { AST_CLASS, AST_CAT, AST_ALT, AST_REPEAT, AST_EMPTY } ast_kind;

typedef struct ast {
    ast_kind kind;
    cset set;                  /* CLASS */
    struct ast **kids;         /* CAT, ALT */
    size_t n_kids;
    struct ast *sub;           /* REPEAT */
    int min, max;              /* max -1: unbounded */
} ast;

static void ast_free(ast *t) {
    if (!t)
        return;
    free(t->set.r);
    for (size_t i = 0; i < t->n_kids; i++)
        ast_free(t->kids[i]);
    free(t->kids);
    ast_free(t->sub);
    free(t);
}

static ast *ast_new(ast_kind k) {
    ast *t = calloc(1, sizeof *t);
    if (t)
        t->kind = k;
    return t;
}

static bool ast_push(ast *t, ast *kid) {
    ast **p = realloc(t->kids, (t->n_kids + 1) * sizeof *p);
    if (!p)
        return false;
    t->kids = p;
    t->kids[t->n_kids++] = kid;
    return true;
}

typedef struct parser {
    const char *s;
    size_t n, i;
    int depth;
    tl_error *err;
    bool failed;
} parser;

static ast *fail(parser *p, const char *fmt, const char *what) {
    if (!p->failed)
        tl_error_set(p->err, TL_ERR_UNSUPPORTED, fmt, p->i, what);
    p->failed = true;
    return NULL;
}

/* Decodes one UTF-8 code point at p->i (invalid bytes read as themselves). */
static uint32_t next_cp(parser *p) {
    const unsigned char *u = (const unsigned char *)p->s + p->i;
    size_t left = p->n - p->i;
    uint32_t c = u[0];
    size_t len = 1;
    if (c >= 0xC0 && c < 0xE0 && left >= 2)
        c = ((c & 0x1F) << 6) | (u[1] & 0x3F), len = 2;
    else if (c >= 0xE0 && c < 0xF0 && left >= 3)
        c = ((c & 0x0F) << 12) | ((u[1] & 0x3F) << 6) | (u[2] & 0x3F), len = 3;
    else if (c >= 0xF0 && left >= 4)
        c = ((c & 0x07) << 18) | ((u[1] & 0x3F) << 12) | ((u[2] & 0x3F) << 6) | (u[3] & 0x3F), len = 4;
    p->i += len;
    return c;
}

/* \d \w \s differ across dialects (ECMA-262, PCRE2, Python's re with
 * Unicode strings): the "sure" set is what every dialect counts (ASCII), the
 * "maybe" set what any dialect may count (ASCII plus anything non-ASCII).
 * A class generates from its sure set; a negation generates from the
 * complement of the maybe set, so every generated value matches in every
 * dialect. */
static bool add_perl_class(cset *s, char c, bool maybe) {
    bool ok = true;
    switch (c) {
    case 'd': case 'D': ok = cset_add(s, '0', '9'); break;
    case 'w': case 'W':
        ok = cset_add(s, '0', '9') && cset_add(s, 'A', 'Z') && cset_add(s, 'a', 'z') && cset_add(s, '_', '_');
        break;
    case 's': case 'S':
        ok = cset_add(s, ' ', ' ') && cset_add(s, '\t', '\r') && (!maybe || cset_add(s, 0x1C, 0x1F));
        break;
    }
    return ok && (!maybe || cset_add(s, 0x80, CP_MAX));
}

static bool cset_add_all(cset *to, const cset *from) {
    for (size_t i = 0; i < from->n; i++)
        if (!cset_add(to, from->r[i].lo, from->r[i].hi))
            return false;
    return true;
}

static int hexv(char h) {
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* An escape after '\' at p->i: a single code point (*cp) or a class (its
 * sure set into s, its maybe set into maybe when non-NULL; *is_class).
 * in_class: inside [...]. */
static bool parse_escape(parser *p, bool in_class, uint32_t *cp, cset *s, cset *maybe, bool *is_class) {
    *is_class = false;
    if (p->i >= p->n) {
        fail(p, "pattern: offset %zu: %s", "a trailing backslash");
        return false;
    }
    char c = p->s[p->i++];
    switch (c) {
    case 'd': case 'w': case 's': case 'D': case 'W': case 'S': {
        bool neg = c == 'D' || c == 'W' || c == 'S';
        cset sure = {0}, may = {0};
        bool ok = add_perl_class(&sure, c, false) && add_perl_class(&may, c, true);
        if (ok && neg) {
            /* the negation's sure set is the complement of the maybe set, and vice versa */
            ok = cset_negate(&sure) && cset_negate(&may);
            cset t = sure;
            sure = may;
            may = t;
        }
        ok = ok && cset_add_all(s, &sure) && (!maybe || cset_add_all(maybe, &may));
        free(sure.r);
        free(may.r);
        *is_class = true;
        if (!ok)
            fail(p, "pattern: offset %zu: %s", "out of memory");
        return ok;
    }
    case 't': *cp = '\t'; return true;
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 'f': *cp = '\f'; return true;
    case 'v': *cp = '\v'; return true;
    case '0': *cp = 0; return true;
    case 'x': case 'u': {
        size_t want = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        if (p->i + want > p->n) {
            fail(p, "pattern: offset %zu: %s", "a short \\x / \\u escape");
            return false;
        }
        for (size_t k = 0; k < want; k++) {
            int h = hexv(p->s[p->i + k]);
            if (h < 0) {
                fail(p, "pattern: offset %zu: %s", "a bad hex digit in an escape");
                return false;
            }
            v = v * 16 + (uint32_t)h;
        }
        p->i += want;
        *cp = v;
        return true;
    }
    case 'b':
        if (in_class) {
            *cp = '\b';
            return true;
        }
        fail(p, "pattern: offset %zu: unsupported %s", "word boundary \\b");
        return false;
    case 'B': fail(p, "pattern: offset %zu: unsupported %s", "word boundary \\B"); return false;
    case 'p': case 'P': fail(p, "pattern: offset %zu: unsupported %s", "Unicode property class \\p"); return false;
    default:
        if (c >= '1' && c <= '9') {
            fail(p, "pattern: offset %zu: unsupported %s", "backreference");
            return false;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            fail(p, "pattern: offset %zu: unsupported %s", "escape (a letter that is not \\d \\w \\s \\t \\n \\r \\f "
                                                          "\\v \\x \\u)");
            return false;
        }
        p->i--;
        *cp = next_cp(p);
        return true;
    }
}

static ast *parse_class(parser *p) {
    /* at the byte after '[' */
    ast *t = ast_new(AST_CLASS);
    if (!t)
        return fail(p, "pattern: offset %zu: %s", "out of memory");
    bool neg = p->i < p->n && p->s[p->i] == '^';
    if (neg)
        p->i++;
    cset maybe = {0}; /* what any dialect may count in the class (see add_perl_class) */
    bool first = true;
    while (p->i < p->n && (p->s[p->i] != ']' || first)) {
        first = false;
        uint32_t lo;
        bool is_class = false;
        if (p->s[p->i] == '\\') {
            p->i++;
            if (!parse_escape(p, true, &lo, &t->set, &maybe, &is_class)) {
                free(maybe.r);
                ast_free(t);
                return NULL;
            }
            if (is_class)
                continue;
        } else if (p->s[p->i] == '[' && p->i + 1 < p->n && p->s[p->i + 1] == ':') {
            free(maybe.r);
            ast_free(t);
            return fail(p, "pattern: offset %zu: unsupported %s", "POSIX class [:name:]");
        } else {
            lo = next_cp(p);
        }
        uint32_t hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            p->i++;
            if (p->s[p->i] == '\\') {
                p->i++;
                if (!parse_escape(p, true, &hi, &t->set, &maybe, &is_class)) {
                    free(maybe.r);
                    ast_free(t);
                    return NULL;
                }
                if (is_class) {
                    free(maybe.r);
                    ast_free(t);
                    return fail(p, "pattern: offset %zu: %s", "a class escape as a range end");
                }
            } else {
                hi = next_cp(p);
            }
            if (hi < lo) {
                free(maybe.r);
                ast_free(t);
                return fail(p, "pattern: offset %zu: %s", "a range out of order");
            }
        }
        if (!cset_add(&t->set, lo, hi) || !cset_add(&maybe, lo, hi)) {
            free(maybe.r);
            ast_free(t);
            return fail(p, "pattern: offset %zu: %s", "out of memory");
        }
    }
    if (p->i >= p->n) {
        free(maybe.r);
        ast_free(t);
        return fail(p, "pattern: offset %zu: %s", "an unclosed [");
    }
    p->i++;
    if (neg) {
        /* [^...]: generate from what no dialect counts in the class */
        free(t->set.r);
        t->set = maybe;
        memset(&maybe, 0, sizeof maybe);
        if (!cset_negate(&t->set)) {
            ast_free(t);
            return fail(p, "pattern: offset %zu: %s", "out of memory");
        }
    }
    free(maybe.r);
    return t;
}

static ast *parse_alt(parser *p, bool top);

static bool read_int(parser *p, int *v) {
    size_t st = p->i;
    long x = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9' && x <= 100000)
        x = x * 10 + (p->s[p->i++] - '0');
    *v = (int)x;
    return p->i > st;
}

static ast *parse_atom(parser *p) {
    char c = p->s[p->i];
    if (c == '(') {
        p->i++;
        if (p->i < p->n && p->s[p->i] == '?') {
            if (p->i + 1 < p->n && p->s[p->i + 1] == ':') {
                p->i += 2;
            } else if (p->i + 1 < p->n && p->s[p->i + 1] == '<' && p->i + 2 < p->n && p->s[p->i + 2] != '=' &&
                       p->s[p->i + 2] != '!') {
                p->i += 2;
                while (p->i < p->n && p->s[p->i] != '>')
                    p->i++;
                if (p->i >= p->n)
                    return fail(p, "pattern: offset %zu: %s", "an unclosed group name");
                p->i++;
            } else if (p->i + 1 < p->n && p->s[p->i + 1] == 'P' && p->i + 2 < p->n && p->s[p->i + 2] == '<') {
                p->i += 3;
                while (p->i < p->n && p->s[p->i] != '>')
                    p->i++;
                if (p->i >= p->n)
                    return fail(p, "pattern: offset %zu: %s", "an unclosed group name");
                p->i++;
            } else {
                return fail(p, "pattern: offset %zu: unsupported %s", "group (lookaround, flags or atomic group)");
            }
        }
        if (++p->depth > 200)
            return fail(p, "pattern: offset %zu: %s", "groups nest too deep");
        ast *t = parse_alt(p, false);
        p->depth--;
        if (!t)
            return NULL;
        if (p->i >= p->n || p->s[p->i] != ')') {
            ast_free(t);
            return fail(p, "pattern: offset %zu: %s", "an unclosed (");
        }
        p->i++;
        return t;
    }
    if (c == '[') {
        p->i++;
        return parse_class(p);
    }
    ast *t = ast_new(AST_CLASS);
    if (!t)
        return fail(p, "pattern: offset %zu: %s", "out of memory");
    bool ok = true;
    if (c == '.') {
        p->i++;
        /* any character but the line terminators of any dialect */
        ok = cset_add(&t->set, 0, '\n' - 1) && cset_add(&t->set, '\n' + 1, '\r' - 1) &&
             cset_add(&t->set, '\r' + 1, 0x2027) && cset_add(&t->set, 0x202A, CP_MAX);
    } else if (c == '\\') {
        p->i++;
        uint32_t cp;
        bool is_class;
        if (!parse_escape(p, false, &cp, &t->set, NULL, &is_class)) {
            ast_free(t);
            return NULL;
        }
        if (!is_class)
            ok = cset_add(&t->set, cp, cp);
    } else if (c == '^' || c == '$') {
        ast_free(t);
        return fail(p, "pattern: offset %zu: unsupported %s", "anchor (^ and $ only at the start and end of the "
                                                              "pattern or of a top-level alternative)");
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        ast_free(t);
        return fail(p, "pattern: offset %zu: %s", "a quantifier with nothing to repeat");
    } else if (c == ')') {
        ast_free(t);
        return fail(p, "pattern: offset %zu: %s", "an unmatched )");
    } else {
        uint32_t cp = next_cp(p);
        ok = cset_add(&t->set, cp, cp);
    }
    if (!ok) {
        ast_free(t);
        return fail(p, "pattern: offset %zu: %s", "out of memory");
    }
    return t;
}

static ast *parse_repeat(parser *p) {
    ast *t = parse_atom(p);
    while (t && p->i < p->n) {
        char c = p->s[p->i];
        int mn, mx;
        if (c == '*')
            mn = 0, mx = -1, p->i++;
        else if (c == '+')
            mn = 1, mx = -1, p->i++;
        else if (c == '?')
            mn = 0, mx = 1, p->i++;
        else if (c == '{') {
            size_t save = p->i++;
            if (!read_int(p, &mn)) {
                /* a literal '{' (as PCRE reads it) */
                p->i = save;
                break;
            }
            mx = mn;
            if (p->i < p->n && p->s[p->i] == ',') {
                p->i++;
                if (!read_int(p, &mx))
                    mx = -1;
            }
            if (p->i >= p->n || p->s[p->i] != '}') {
                p->i = save;
                break;
            }
            p->i++;
            if (mn > REPEAT_MAX || mx > REPEAT_MAX) {
                ast_free(t);
                return fail(p, "pattern: offset %zu: %s", "a repeat count above 1000");
            }
            if (mx >= 0 && mx < mn) {
                ast_free(t);
                return fail(p, "pattern: offset %zu: %s", "a repeat {n,m} with m < n");
            }
        } else {
            break;
        }
        if (p->i < p->n && (p->s[p->i] == '?' || p->s[p->i] == '+'))
            p->i++; /* lazy / possessive: same language */
        ast *r = ast_new(AST_REPEAT);
        if (!r) {
            ast_free(t);
            return fail(p, "pattern: offset %zu: %s", "out of memory");
        }
        r->sub = t;
        r->min = mn;
        r->max = mx;
        t = r;
    }
    return t;
}

static ast *parse_cat(parser *p) {
    ast *t = ast_new(AST_CAT);
    if (!t)
        return fail(p, "pattern: offset %zu: %s", "out of memory");
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        if (p->depth == 0 && p->s[p->i] == '$' && (p->i + 1 == p->n || p->s[p->i + 1] == '|'))
            break;
        ast *k = parse_repeat(p);
        if (!k || !ast_push(t, k)) {
            ast_free(k);
            ast_free(t);
            return p->failed ? NULL : fail(p, "pattern: offset %zu: %s", "out of memory");
        }
    }
    return t;
}

/* A top-level alternative: "^"? cat "$"?, padded with any text where unanchored. */
static ast *any_text(void) {
    ast *a = ast_new(AST_CLASS), *r = ast_new(AST_REPEAT);
    if (!a || !r || !cset_add(&a->set, 0, CP_MAX)) {
        ast_free(a), ast_free(r);
        return NULL;
    }
    r->sub = a;
    r->min = 0;
    r->max = -1;
    return r;
}

static ast *parse_alt(parser *p, bool top) {
    ast *t = ast_new(AST_ALT);
    if (!t)
        return fail(p, "pattern: offset %zu: %s", "out of memory");
    for (;;) {
        bool start = false, end = false;
        if (top && p->i < p->n && p->s[p->i] == '^')
            start = true, p->i++;
        ast *c = parse_cat(p);
        if (!c) {
            ast_free(t);
            return NULL;
        }
        if (top && p->i < p->n && p->s[p->i] == '$')
            end = true, p->i++;
        if (top) {
            ast *seq = ast_new(AST_CAT);
            /* An unanchored start would need a searching DFA (exponential in
             * counted repeats); a value that begins with the match matches
             * too, so the start is generated as anchored. */
            (void)start;
            ast *pre = NULL, *post = end ? NULL : any_text();
            bool ok = seq && (end || post);
            if (ok && pre)
                ok = ast_push(seq, pre), pre = NULL;
            if (ok)
                ok = ast_push(seq, c), c = NULL;
            if (ok && post)
                ok = ast_push(seq, post), post = NULL;
            ast_free(pre), ast_free(post), ast_free(c);
            if (!ok) {
                ast_free(seq);
                ast_free(t);
                return fail(p, "pattern: offset %zu: %s", "out of memory");
            }
            c = seq;
        }
        if (!ast_push(t, c)) {
            ast_free(c);
            ast_free(t);
            return fail(p, "pattern: offset %zu: %s", "out of memory");
        }
        if (p->i < p->n && p->s[p->i] == '|') {
            p->i++;
            continue;
        }
        break;
    }
    return t;
}

/* Emits t into the NFA between a fresh entry and exit: returns false when
 * the NFA grows past NFA_MAX. */
static bool emit(nfa *a, const ast *t, int *in, int *out) {
    switch (t->kind) {
    case AST_EMPTY:
    case AST_CAT: {
        int s = nfa_new(a, -1);
        if (s < 0)
            return false;
        *in = s;
        int cur = s;
        for (size_t i = 0; i < t->n_kids; i++) {
            int ki, ko;
            if (!emit(a, t->kids[i], &ki, &ko))
                return false;
            a->st[cur].out1 = ki;
            cur = ko;
        }
        *out = cur;
        return true;
    }
    case AST_CLASS: {
        cset c = {0};
        for (size_t i = 0; i < t->set.n; i++)
            if (!cset_add(&c, t->set.r[i].lo, t->set.r[i].hi)) {
                free(c.r);
                return false;
            }
        if (!cset_restrict(&c)) {
            free(c.r);
            return false;
        }
        int ci = nfa_class(a, &c);
        free(c.r);
        if (ci < 0)
            return false;
        int s = nfa_new(a, ci), e = nfa_new(a, -1);
        if (s < 0 || e < 0)
            return false;
        a->st[s].out1 = e;
        *in = s, *out = e;
        return true;
    }
    case AST_ALT: {
        int e = nfa_new(a, -1);
        if (e < 0)
            return false;
        int prev = -1;
        *in = -1;
        for (size_t i = 0; i < t->n_kids; i++) {
            int ki, ko;
            if (!emit(a, t->kids[i], &ki, &ko))
                return false;
            a->st[ko].out1 = e;
            int sp = nfa_new(a, -1);
            if (sp < 0)
                return false;
            a->st[sp].out1 = ki;
            if (prev < 0)
                *in = sp;
            else
                a->st[prev].out2 = sp;
            prev = sp;
        }
        if (*in < 0) {
            *in = e;
        }
        *out = e;
        return true;
    }
    case AST_REPEAT: {
        int s = nfa_new(a, -1);
        if (s < 0)
            return false;
        *in = s;
        int cur = s;
        for (int i = 0; i < t->min; i++) {
            int ki, ko;
            if (!emit(a, t->sub, &ki, &ko))
                return false;
            a->st[cur].out1 = ki;
            cur = ko;
        }
        if (t->max < 0) {
            /* cur -> split(sub -> back to split, exit) */
            int sp = nfa_new(a, -1), e = nfa_new(a, -1);
            int ki, ko;
            if (sp < 0 || e < 0 || !emit(a, t->sub, &ki, &ko))
                return false;
            a->st[cur].out1 = sp;
            a->st[sp].out1 = ki;
            a->st[sp].out2 = e;
            a->st[ko].out1 = sp;
            *out = e;
            return true;
        }
        int e = nfa_new(a, -1);
        if (e < 0)
            return false;
        for (int i = t->min; i < t->max; i++) {
            int ki, ko;
            int sp = nfa_new(a, -1);
            if (sp < 0 || !emit(a, t->sub, &ki, &ko))
                return false;
            a->st[cur].out1 = sp;
            a->st[sp].out1 = ki;
            a->st[sp].out2 = e;
            cur = ko;
        }
        a->st[cur].out1 = e;
        *out = e;
        return true;
    }
    }
    return false;
}

/* ---- the DFA -------------------------------------------------------------- */

struct tl_pattern {
    /* alphabet: elementary intervals [lo[k], lo[k+1]) of code points */
    uint32_t *lo;
    size_t n_sym;
    size_t n_states;
    int32_t *trans;    /* n_states * n_sym; -1 dead */
    bool *accept;
    int32_t start;
    /* lengths: reach[s * (max_len + 1) + r]: accept reachable from s in exactly r code points */
    size_t max_len;
    uint16_t *reach_cnt; /* prefix counts over r: cnt[s][r] = #{r' < r : reach} */
};

static void nfa_free(nfa *a) {
    for (size_t i = 0; i < a->n_cls; i++)
        free(a->cls[i].r);
    free(a->cls);
    free(a->st);
}

void tl_pattern_free(tl_pattern *p) {
    if (!p)
        return;
    free(p->lo);
    free(p->trans);
    free(p->accept);
    free(p->reach_cnt);
    free(p);
}

/* Epsilon closure, in place, of the set (bitset over NFA states) holding
 * seeds[0..n); returns the states visited. */
static size_t closure(const nfa *a, uint64_t *set, int *stack, const int *seeds, size_t n) {
    size_t sp = 0, visited = 0;
    for (size_t i = 0; i < n; i++)
        if (!(set[seeds[i] / 64] >> (seeds[i] % 64) & 1)) {
            set[seeds[i] / 64] |= 1ull << (seeds[i] % 64);
            stack[sp++] = seeds[i];
        }
    while (sp) {
        visited++;
        int s = stack[--sp];
        if (a->st[s].cls >= 0)
            continue;
        int outs[2] = {a->st[s].out1, a->st[s].out2};
        for (int k = 0; k < 2; k++) {
            int o = outs[k];
            if (o >= 0 && !(set[o / 64] >> (o % 64) & 1)) {
                set[o / 64] |= 1ull << (o % 64);
                stack[sp++] = o;
            }
        }
    }
    return visited;
}

static uint64_t set_hash(const uint64_t *w, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int u32cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static bool cset_has(const cset *s, uint32_t c) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (c < s->r[m].lo)
            hi = m;
        else if (c > s->r[m].hi)
            lo = m + 1;
        else
            return true;
    }
    return false;
}

tl_status tl_pattern_compile(const char *src, size_t len, tl_pattern **out, tl_error *err) {
    *out = NULL;
    parser p = {src, len, 0, 0, err, false};
    ast *t = parse_alt(&p, true);
    if (t && p.i < p.n) {
        fail(&p, "pattern: offset %zu: %s", p.s[p.i] == ')' ? "an unmatched )" : "unexpected text");
        ast_free(t);
        t = NULL;
    }
    if (!t)
        return TL_ERR_UNSUPPORTED;
    nfa a = {0};
    int in, fin;
    bool ok = emit(&a, t, &in, &fin);
    ast_free(t);
    if (!ok) {
        nfa_free(&a);
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "pattern: more than %d automaton states (repeat counts too large)",
                            NFA_MAX);
    }
    for (size_t i = 0; i < a.n_cls; i++)
        cset_norm(&a.cls[i]);
    /* alphabet */
    size_t nb = 2;
    for (size_t i = 0; i < a.n_cls; i++)
        nb += 2 * a.cls[i].n;
    uint32_t *b = malloc(nb * sizeof *b);
    tl_pattern *pt = calloc(1, sizeof *pt);
    size_t words = (a.n + 63) / 64;
    uint64_t *sets = NULL; /* DFA_MAX * words */
    int *stack = malloc((a.n + 1) * sizeof *stack);
    uint64_t *tmp = calloc(words, sizeof *tmp);
    tl_status st = TL_OK;
    if (!b || !pt || !stack || !tmp) {
        st = tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
        goto done;
    }
    size_t k = 0;
    b[k++] = 0;
    for (size_t i = 0; i < a.n_cls; i++)
        for (size_t j = 0; j < a.cls[i].n; j++) {
            b[k++] = a.cls[i].r[j].lo;
            if (a.cls[i].r[j].hi < CP_MAX)
                b[k++] = a.cls[i].r[j].hi + 1;
        }
    qsort(b, k, sizeof *b, u32cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (!m || b[i] != b[m - 1])
            b[m++] = b[i];
    pt->lo = b;
    b = NULL;
    pt->n_sym = m;
    /* symbol -> classes containing it */
    bool *sym_in = calloc(m * (a.n_cls ? a.n_cls : 1), sizeof *sym_in);
    if (!sym_in) {
        st = tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
        goto done;
    }
    for (size_t s = 0; s < m; s++)
        for (size_t c = 0; c < a.n_cls; c++)
            sym_in[s * a.n_cls + c] = cset_has(&a.cls[c], pt->lo[s]);
    /* subset construction */
    size_t cap = 64;
    sets = calloc(cap * words, sizeof *sets);
    pt->trans = malloc(cap * m * sizeof *pt->trans);
    pt->accept = calloc(cap, sizeof *pt->accept);
    if (!sets || !pt->trans || !pt->accept) {
        free(sym_in);
        st = tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
        goto done;
    }
    /* DFA states by the hash of their NFA set (open addressing, indices + 1) */
    size_t hcap = 2 * DFA_MAX;
    uint32_t *htab = calloc(hcap, sizeof *htab);
    int *chars = malloc((a.n + 1) * sizeof *chars), *seeds = malloc((a.n + 1) * sizeof *seeds);
    if (!htab || !chars || !seeds) {
        free(htab), free(chars), free(seeds), free(sym_in);
        st = tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
        goto done;
    }
    closure(&a, sets, stack, &in, 1);
    htab[set_hash(sets, words) & (hcap - 1)] = 1;
    pt->n_states = 1;
    pt->start = 0;
    unsigned long long work = 0;
    for (size_t d = 0; d < pt->n_states && !st; d++) {
        pt->accept[d] = sets[d * words + fin / 64] >> (fin % 64) & 1;
        /* the NFA states of d that read a character */
        size_t n_chars = 0;
        for (size_t wi = 0; wi < words; wi++)
            for (uint64_t bits = sets[d * words + wi]; bits; bits &= bits - 1) {
                size_t i = wi * 64 + (size_t)__builtin_ctzll(bits);
                if (a.st[i].cls >= 0)
                    chars[n_chars++] = (int)i;
            }
        work += words + n_chars;
        for (size_t s = 0; s < m && !st; s++) {
            size_t n_seeds = 0;
            for (size_t k = 0; k < n_chars; k++)
                if (sym_in[s * a.n_cls + (size_t)a.st[chars[k]].cls])
                    seeds[n_seeds++] = a.st[chars[k]].out1;
            work += n_chars;
            if (!n_seeds) {
                pt->trans[d * m + s] = -1;
                continue;
            }
            memset(tmp, 0, words * sizeof *tmp);
            work += words + closure(&a, tmp, stack, seeds, n_seeds);
            if (work > DFA_BUDGET) {
                st = tl_error_set(err, TL_ERR_UNSUPPORTED, "pattern: too complex to compile (%zu DFA states so far)",
                                  pt->n_states);
                break;
            }
            size_t h = set_hash(tmp, words) & (hcap - 1), e = SIZE_MAX;
            while (htab[h]) {
                size_t cand = htab[h] - 1;
                if (!memcmp(sets + cand * words, tmp, words * sizeof *tmp)) {
                    e = cand;
                    break;
                }
                h = (h + 1) & (hcap - 1);
            }
            if (e == SIZE_MAX) {
                if (pt->n_states >= DFA_MAX) {
                    st = tl_error_set(err, TL_ERR_UNSUPPORTED, "pattern: more than %d DFA states (too complex)",
                                      DFA_MAX);
                    break;
                }
                if (pt->n_states == cap) {
                    size_t c2 = cap * 2;
                    uint64_t *s2 = realloc(sets, c2 * words * sizeof *s2);
                    int32_t *t2 = s2 ? realloc(pt->trans, c2 * m * sizeof *t2) : NULL;
                    bool *a2 = t2 ? realloc(pt->accept, c2 * sizeof *a2) : NULL;
                    if (s2)
                        sets = s2;
                    if (t2)
                        pt->trans = t2;
                    if (a2)
                        pt->accept = a2;
                    if (!s2 || !t2 || !a2) {
                        st = tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
                        break;
                    }
                    cap = c2;
                }
                e = pt->n_states++;
                memcpy(sets + e * words, tmp, words * sizeof *tmp);
                pt->accept[e] = false;
                htab[h] = (uint32_t)e + 1;
            }
            pt->trans[d * m + s] = (int32_t)e;
        }
    }
    free(htab), free(chars), free(seeds);
    free(sym_in);
done:
    free(b);
    free(sets);
    free(stack);
    free(tmp);
    nfa_free(&a);
    if (st) {
        tl_pattern_free(pt);
        return st;
    }
    *out = pt;
    return TL_OK;
}

/* The symbol (alphabet interval) of code point c. */
static size_t sym_of(const tl_pattern *p, uint32_t c) {
    size_t lo = 0, hi = p->n_sym;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (p->lo[mid] <= c)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int32_t tl_pattern_step(const tl_pattern *p, int32_t state, uint32_t cp) {
    if (state < 0)
        return -1;
    return p->trans[(size_t)state * p->n_sym + sym_of(p, cp)];
}

int32_t tl_pattern_start(const tl_pattern *p) { return p->start; }
bool tl_pattern_accepting(const tl_pattern *p, int32_t state) { return state >= 0 && p->accept[state]; }

/* Fills reach_cnt for lengths 0..max_len. */
static tl_status prepare_lengths(tl_pattern *p, size_t max_len, tl_error *err) {
    if (p->reach_cnt && p->max_len == max_len)
        return TL_OK;
    size_t L = max_len + 1, S = p->n_states;
    /* each state's distinct successors (far fewer than the symbols) */
    uint32_t *off = malloc((S + 1) * sizeof *off);
    int32_t *succ = malloc((S * p->n_sym + 1) * sizeof *succ);
    unsigned char *seen = calloc(S ? S : 1, 1);
    if (!off || !succ || !seen) {
        free(off), free(succ), free(seen);
        return tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
    }
    size_t n_succ = 0;
    for (size_t st = 0; st < S; st++) {
        off[st] = (uint32_t)n_succ;
        size_t first = n_succ;
        for (size_t y = 0; y < p->n_sym; y++) {
            int32_t t = p->trans[st * p->n_sym + y];
            if (t >= 0 && !seen[t]) {
                seen[t] = 1;
                succ[n_succ++] = t;
            }
        }
        for (size_t k = first; k < n_succ; k++)
            seen[succ[k]] = 0;
    }
    off[S] = (uint32_t)n_succ;
    free(seen);
    if ((unsigned long long)(n_succ + S) * L > DP_BUDGET) {
        free(off), free(succ);
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "pattern: too complex for maxLength %zu (%zu states)", max_len,
                            p->n_states);
    }
    free(p->reach_cnt);
    bool *reach = calloc(S * L, sizeof *reach);
    p->reach_cnt = malloc(S * (L + 1) * sizeof *p->reach_cnt);
    if (!reach || !p->reach_cnt) {
        free(reach), free(off), free(succ);
        free(p->reach_cnt);
        p->reach_cnt = NULL;
        return tl_error_set(err, TL_ERR_NOMEM, "pattern: out of memory");
    }
    for (size_t st = 0; st < S; st++)
        reach[st * L] = p->accept[st];
    for (size_t r = 1; r < L; r++)
        for (size_t st = 0; st < S; st++) {
            bool any = false;
            for (uint32_t k = off[st]; k < off[st + 1] && !any; k++)
                any = reach[(size_t)succ[k] * L + r - 1];
            reach[st * L + r] = any;
        }
    for (size_t st = 0; st < S; st++) {
        p->reach_cnt[st * (L + 1)] = 0;
        for (size_t r = 0; r < L; r++)
            p->reach_cnt[st * (L + 1) + r + 1] = (uint16_t)(p->reach_cnt[st * (L + 1) + r] + reach[st * L + r]);
    }
    free(reach), free(off), free(succ);
    p->max_len = max_len;
    return TL_OK;
}

/* Some accepting path from state with length in [lo, hi] (clipped to max_len). */
static bool reach_between(const tl_pattern *p, int32_t state, size_t lo, size_t hi) {
    if (state < 0 || lo > hi || lo > p->max_len)
        return false;
    if (hi > p->max_len)
        hi = p->max_len;
    size_t L1 = p->max_len + 2;
    const uint16_t *c = p->reach_cnt + (size_t)state * L1;
    return c[hi + 1] > c[lo];
}

bool tl_pattern_viable_length(tl_pattern *p, size_t min_len, size_t max_len) {
    tl_error e;
    if (prepare_lengths(p, max_len, &e))
        return true; /* too large to check here: generation reports it */
    return reach_between(p, p->start, min_len, max_len);
}

bool tl_pattern_matches(const tl_pattern *p, const char *s, size_t len) {
    parser q = {s, len, 0, 0, NULL, false};
    int32_t st = p->start;
    while (q.i < q.n && st >= 0)
        st = tl_pattern_step(p, st, next_cp(&q));
    return tl_pattern_accepting(p, st);
}

/* ===== the token-level string automaton ================================== */

struct tl_string_automaton {
    const tl_number_index *idx;
    tl_pattern *pattern;  /* owned: the compiled pattern, or the any-text pattern */
    size_t min_len, max_len;
    /* state */
    int32_t dfa;
    size_t n_chars;
    unsigned char pend[4];
    size_t n_pend;
    bool done;
    tl_strbuf text;
    /* the vocabulary's tokens by first byte: by_byte[start[b] .. start[b + 1]) */
    int32_t *by_byte;
    uint32_t start[257];
};

/* Length of a UTF-8 sequence from its lead byte (0: not a lead byte). */
static size_t utf8_need(unsigned char c) {
    return c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
}

static uint32_t utf8_decode(const unsigned char *u, size_t n) {
    if (n == 1)
        return u[0];
    if (n == 2)
        return ((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu);
    if (n == 3)
        return ((u[0] & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
    return ((u[0] & 0x07u) << 18) | ((u[1] & 0x3Fu) << 12) | ((u[2] & 0x3Fu) << 6) | (u[3] & 0x3Fu);
}

typedef struct sstate {
    int32_t dfa;
    size_t n_chars;
    unsigned char pend[4];
    size_t n_pend;
    bool done;
} sstate;

/* Viability of a state: a complete value of allowed length is still reachable. */
static bool sstate_viable(const tl_string_automaton *a, const sstate *s) {
    if (s->dfa < 0 || s->n_chars > a->max_len)
        return false;
    size_t lo = a->min_len > s->n_chars ? a->min_len - s->n_chars : 0;
    size_t hi = a->max_len - s->n_chars;
    if (!s->n_pend)
        return reach_between(a->pattern, s->dfa, lo, hi);
    /* a partial character: some code point with these leading bytes continues */
    size_t need = utf8_need(s->pend[0]);
    unsigned char lo_b[4], hi_b[4];
    memcpy(lo_b, s->pend, s->n_pend);
    memcpy(hi_b, s->pend, s->n_pend);
    for (size_t i = s->n_pend; i < need; i++)
        lo_b[i] = 0x80, hi_b[i] = 0xBF;
    uint32_t clo = utf8_decode(lo_b, need), chi = utf8_decode(hi_b, need);
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (clo < least[need])
        clo = least[need];
    if (chi > CP_MAX)
        chi = CP_MAX;
    if (clo > chi)
        return false;
    if (hi < 1)
        return false;
    size_t lo1 = lo > 0 ? lo - 1 : 0;
    const tl_pattern *p = a->pattern;
    for (size_t y = sym_of(p, clo); y < p->n_sym && p->lo[y] <= chi; y++) {
        int32_t t = p->trans[(size_t)s->dfa * p->n_sym + y];
        if (t >= 0 && reach_between(p, t, lo1, hi - 1))
            return true;
    }
    return false;
}

/* Feeds token bytes; false when they cannot continue a value. The closing
 * quote must be the token's last byte. */
static bool sstate_feed(const tl_string_automaton *a, sstate *s, const char *bytes, size_t n) {
    if (s->done || !n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (!s->n_pend && c == '"') {
            if (i + 1 != n || !tl_pattern_accepting(a->pattern, s->dfa) || s->n_chars < a->min_len)
                return false;
            s->done = true;
            return true;
        }
        if (!s->n_pend) {
            size_t need = utf8_need(c);
            if (!need)
                return false;
            s->pend[s->n_pend++] = c;
        } else {
            if ((c & 0xC0) != 0x80)
                return false;
            /* the second byte's narrower ranges (no overlong forms, no surrogates, nothing past U+10FFFF) */
            unsigned char l = s->pend[0];
            if (s->n_pend == 1 && ((l == 0xE0 && c < 0xA0) || (l == 0xED && c > 0x9F) || (l == 0xF0 && c < 0x90) ||
                                   (l == 0xF4 && c > 0x8F)))
                return false;
            s->pend[s->n_pend++] = c;
        }
        size_t need = utf8_need(s->pend[0]);
        if (s->n_pend == need) {
            uint32_t cp = utf8_decode(s->pend, need);
            /* overlong or surrogate forms never come from a valid literal */
            if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > CP_MAX)) ||
                (cp >= 0xD800 && cp <= 0xDFFF))
                return false;
            s->n_pend = 0;
            s->dfa = tl_pattern_step(a->pattern, s->dfa, cp);
            s->n_chars++;
            if (s->dfa < 0 || s->n_chars > a->max_len)
                return false;
        }
    }
    return sstate_viable(a, s);
}

tl_status tl_string_automaton_new(const tl_number_index *idx, const char *pattern, size_t min_len, size_t max_len,
                                  tl_string_automaton **out, tl_error *err) {
    *out = NULL;
    if (min_len > max_len)
        return tl_error_set(err, TL_ERR_INVALID, "string: minLength %zu > maxLength %zu", min_len, max_len);
    tl_string_automaton *a = calloc(1, sizeof *a);
    if (!a)
        return tl_error_set(err, TL_ERR_NOMEM, "string: out of memory");
    a->idx = idx;
    a->min_len = min_len;
    a->max_len = max_len;
    const char *src = pattern ? pattern : "";
    tl_status st = tl_pattern_compile(src, strlen(src), &a->pattern, err);
    if (!st)
        st = prepare_lengths(a->pattern, max_len, err);
    if (!st && !reach_between(a->pattern, a->pattern->start, min_len, max_len))
        st = tl_error_set(err, TL_ERR_SCHEMA, "string: no value of %zu to %zu characters matches the pattern", min_len,
                          max_len);
    if (st) {
        tl_string_automaton_free(a);
        return st;
    }
    if (!st) {
        /* bucket the tokens by first byte: a dead first byte rules out its whole bucket */
        int32_t n = tl_number_index_n_tokens(idx);
        a->by_byte = malloc(((size_t)n + 1) * sizeof *a->by_byte);
        if (!a->by_byte)
            st = tl_error_set(err, TL_ERR_NOMEM, "string: out of memory");
        uint32_t count[256] = {0};
        for (int32_t id = 0; !st && id < n; id++) {
            size_t len;
            const char *b = tl_number_index_token(idx, id, &len);
            if (len)
                count[(unsigned char)b[0]]++;
        }
        a->start[0] = 0;
        for (int b = 0; b < 256; b++)
            a->start[b + 1] = a->start[b] + count[b];
        uint32_t fill[256];
        memcpy(fill, a->start, sizeof fill);
        for (int32_t id = 0; !st && id < n; id++) {
            size_t len;
            const char *b = tl_number_index_token(idx, id, &len);
            if (len)
                a->by_byte[fill[(unsigned char)b[0]]++] = id;
        }
    }
    if (st) {
        tl_string_automaton_free(a);
        return st;
    }
    tl_string_automaton_reset(a);
    *out = a;
    return TL_OK;
}

void tl_string_automaton_free(tl_string_automaton *a) {
    if (!a)
        return;
    tl_pattern_free(a->pattern);
    tl_strbuf_free(&a->text);
    free(a->by_byte);
    free(a);
}

void tl_string_automaton_reset(tl_string_automaton *a) {
    a->dfa = a->pattern->start;
    a->n_chars = 0;
    a->n_pend = 0;
    a->done = false;
    tl_strbuf_clear(&a->text);
}

static sstate state_of(const tl_string_automaton *a) {
    sstate s = {a->dfa, a->n_chars, {0}, a->n_pend, a->done};
    memcpy(s.pend, a->pend, sizeof s.pend);
    return s;
}

size_t tl_string_automaton_allowed(const tl_string_automaton *a, int32_t *out) {
    if (a->done)
        return 0;
    size_t k = 0;
    sstate base = state_of(a);
    for (int byte = 1; byte < 256; byte++) {
        if (a->start[byte] == a->start[byte + 1])
            continue;
        char c = (char)byte;
        sstate first = base;
        if (!sstate_feed(a, &first, &c, 1))
            continue;
        for (uint32_t i = a->start[byte]; i < a->start[byte + 1]; i++) {
            int32_t id = a->by_byte[i];
            size_t len;
            const char *b = tl_number_index_token(a->idx, id, &len);
            sstate s = base;
            if (sstate_feed(a, &s, b, len))
                out[k++] = id;
        }
    }
    return k;
}

tl_status tl_string_automaton_accept(tl_string_automaton *a, int32_t id, tl_error *err) {
    size_t len;
    const char *b = id >= 0 && id < tl_number_index_n_tokens(a->idx) ? tl_number_index_token(a->idx, id, &len) : NULL;
    sstate s = state_of(a);
    if (!b || !sstate_feed(a, &s, b, len))
        return tl_error_set(err, TL_ERR_INVALID, "string: token %d does not continue the value", (int)id);
    a->dfa = s.dfa;
    a->n_chars = s.n_chars;
    a->n_pend = s.n_pend;
    memcpy(a->pend, s.pend, sizeof a->pend);
    a->done = s.done;
    size_t add = s.done ? len - 1 : len;
    if (!tl_strbuf_append(&a->text, b, add))
        return tl_error_set(err, TL_ERR_NOMEM, "string: out of memory");
    return TL_OK;
}

bool tl_string_automaton_done(const tl_string_automaton *a) { return a->done; }

const char *tl_string_automaton_text(const tl_string_automaton *a, size_t *len) {
    *len = a->text.len;
    return tl_strbuf_cstr(&a->text);
}

size_t tl_string_automaton_chars(const tl_string_automaton *a) { return a->n_chars; }

/* ===== generation ======================================================= */

void tl_string_result_free(tl_string_result *r) {
    if (!r)
        return;
    free(r->value);
    free(r->ids);
    memset(r, 0, sizeof *r);
}

/* The string automaton as the step loop sees it (sample.h). */
static size_t string_allowed(const void *a, int32_t *out) { return tl_string_automaton_allowed(a, out); }
static tl_status string_accept(void *a, int32_t id, tl_error *err) { return tl_string_automaton_accept(a, id, err); }
static bool string_done(const void *a) { return tl_string_automaton_done(a); }
static const char *string_text(const void *a, size_t *len) { return tl_string_automaton_text(a, len); }

tl_status tl_string_generate(tl_backend *b, const tl_number_index *idx, const char *pattern, size_t min_len,
                             size_t max_len, const int32_t *ids, size_t n, const tl_sample_params *sp,
                             tl_string_result *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    static const tl_sample_params greedy = {0, 0, 0};
    if (!sp)
        sp = &greedy;
    if (!idx || (!b->ops->next_logits && !b->vocab))
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            "string: generated strings over the %s backend need the model's tokenizer here (the "
                            "automaton runs client-side): pass --tokenizer M.gguf",
                            b->ops->kind);
    tl_string_automaton *a = NULL;
    tl_status st = tl_string_automaton_new(idx, pattern, min_len, max_len, &a, err);
    if (st)
        return st;
    size_t max_steps = sp->max_tokens > 0 ? (size_t)sp->max_tokens : 4 * max_len + 16;
    tl_step_automaton sa = {a, string_allowed, string_accept, string_done, string_text,
                            (size_t)tl_number_index_n_tokens(idx), "string"};
    tl_step_run run = {0};
    st = tl_step_generate(b, &sa, ids, n, max_steps, sp, &run, err);
    out->usage = run.usage;
    if (st)
        goto done;
    out->ids = run.ids;
    out->n_ids = run.n_ids;
    out->sum_logprob_full = run.sum_logprob_full;
    out->sum_logprob_allowed = run.sum_logprob_allowed;
    run.ids = NULL;
    size_t tl;
    const char *t = tl_string_automaton_text(a, &tl);
    out->value = malloc(tl + 1);
    if (!out->value) {
        st = tl_error_set(err, TL_ERR_NOMEM, "string: out of memory");
        goto done;
    }
    memcpy(out->value, t, tl);
    out->value[tl] = '\0';
    out->value_len = tl;
    out->n_chars = tl_string_automaton_chars(a);
done:
    if (st) {
        tl_usage u = out->usage;
        tl_string_result_free(out);
        out->usage = u;
    }
    tl_string_automaton_free(a);
    tl_step_run_free(&run);
    return st;
}
