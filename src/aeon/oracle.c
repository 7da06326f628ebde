/* oracle.c: the prefix engine behind type-constrained decoding.
 *
 * A query lexes the snapshot text (the last lexeme may be unfinished: it is
 * expanded into its lexical alternatives — keyword, longer identifier,
 * longer operator, number growing into a float or exponent, unfinished
 * string or escape), then runs a typed precedence parser over each
 * alternative token stream. Where the tokens run out the parser switches to
 * completion: every pending continuation frame (an operator level, an
 * application spine, `then ... else ...`, a closing parenthesis) reports the
 * set of types it can still end up with, each with the shortest text that
 * gets there. That set is finite (the scope's type universe), so each level
 * closes it under its own operators (an Int prefix becomes a Bool by
 * appending `< 0`; a function by applying it) with a visited set, which is
 * the cycle detection of the inhabitation search. Every type of the fragment
 * has a closed inhabitant (a literal, or `(fun v => ...)` for arrows), so an
 * empty set means the prefix is DEAD in the documented grammar.
 *
 * The independent referee of every LIVE witness is syntax.c + check.c. */
#include "aeon/oracle.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/internal.h"
#include "aeon/lexicon.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/hash.h"

const char *tl_aeon_verdict_name(tl_aeon_verdict v) {
    return v == TL_AEON_LIVE ? "LIVE" : v == TL_AEON_DEAD ? "DEAD" : "UNKNOWN";
}

/* ---- scope ---------------------------------------------------------------- */

typedef struct scope_name {
    const char *name;
    size_t len;
    int u; /* universe index of its type */
} scope_name;

struct tl_aeon_scope {
    int nu;                        /* universe size */
    tl_aeon_type utype[TL_AEON_MAX_UNIVERSE];/* universe index -> program type */
    int uarg[TL_AEON_MAX_UNIVERSE], ures[TL_AEON_MAX_UNIVERSE]; /* arrows: universe indices; -1 for base */
    char *inhabitant[TL_AEON_MAX_UNIVERSE]; /* closed atom of that type */
    char *type_text[TL_AEON_MAX_UNIVERSE];
    int goal;                      /* universe index */
    scope_name *names;             /* innermost first, unique names */
    int n_names;
};

static int universe_index(const tl_aeon_scope *s, tl_aeon_type t) {
    for (int i = 0; i < s->nu; i++)
        if (s->utype[i] == t)
            return i;
    return -1;
}

/* Adds t and its arrow subtypes; false when the universe is full. */
static bool universe_add(tl_aeon_scope *s, const tl_aeon_types *tt, tl_aeon_type t) {
    if (t < 0)
        return false;
    if (universe_index(s, t) >= 0)
        return true;
    if (tl_aeon_type_is_arrow(tt, t)) {
        if (!universe_add(s, tt, tt->t[t].arg) || !universe_add(s, tt, tt->t[t].res))
            return false;
    }
    if (s->nu == TL_AEON_MAX_UNIVERSE)
        return false;
    s->utype[s->nu++] = t;
    return true;
}

void tl_aeon_scope_free(tl_aeon_scope *s) {
    if (!s)
        return;
    for (int i = 0; i < s->nu; i++) {
        free(s->inhabitant[i]);
        free(s->type_text[i]);
    }
    free(s->names);
    free(s);
}

tl_status tl_aeon_scope_new(const tl_aeon_program *p, tl_aeon_scope **out, tl_error *err) {
    *out = NULL;
    tl_aeon_scope *s = calloc(1, sizeof *s);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    for (int i = 0; i < TL_AEON_N_BASE; i++)
        universe_add(s, &p->types, i);
    if (!universe_add(s, &p->types, p->goal)) {
        tl_aeon_scope_free(s);
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "aeon: the goal type has more than %d distinct subtypes",
                            TL_AEON_MAX_UNIVERSE);
    }
    s->goal = universe_index(s, p->goal);
    s->names = calloc((size_t)p->n_context + 1, sizeof *s->names);
    if (!s->names) {
        tl_aeon_scope_free(s);
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    }
    for (int i = 0; i < p->n_context; i++) {
        int nu_before = s->nu;
        if (!universe_add(s, &p->types, p->context[i].ty)) {
            s->nu = nu_before; /* leave the component out rather than the universe half-filled */
            continue;
        }
        s->names[s->n_names++] = (scope_name){p->context[i].name, strlen(p->context[i].name),
                                              universe_index(s, p->context[i].ty)};
    }
    /* Arrow structure and closed inhabitants, arguments before results. */
    for (int i = 0; i < s->nu; i++) {
        tl_aeon_type t = s->utype[i];
        s->uarg[i] = tl_aeon_type_is_arrow(&p->types, t) ? universe_index(s, p->types.t[t].arg) : -1;
        s->ures[i] = tl_aeon_type_is_arrow(&p->types, t) ? universe_index(s, p->types.t[t].res) : -1;
    }
    static const char *literal[TL_AEON_N_BASE] = {"0", "true", "0.0", "\"\"", "unit"};
    for (int i = 0; i < s->nu; i++) { /* subtypes come first in utype, so results exist already */
        tl_strbuf sb = TL_STRBUF_INIT;
        if (s->uarg[i] < 0)
            tl_strbuf_puts(&sb, literal[s->utype[i]]);
        else
            tl_strbuf_printf(&sb, "(fun v => %s)", s->inhabitant[s->ures[i]]);
        s->inhabitant[i] = tl_strbuf_detach(&sb);
        tl_strbuf tb = TL_STRBUF_INIT;
        tl_aeon_type_print(&p->types, s->utype[i], &tb);
        s->type_text[i] = tl_strbuf_detach(&tb);
        if (!s->inhabitant[i] || !s->type_text[i]) {
            tl_aeon_scope_free(s);
            return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
        }
    }
    *out = s;
    return TL_OK;
}

const char *tl_aeon_scope_goal_text(const tl_aeon_scope *s) { return s->type_text[s->goal]; }

void tl_aeon_scope_describe(const tl_aeon_scope *s, tl_strbuf *out) {
    for (int i = 0; i < s->n_names; i++)
        tl_strbuf_printf(out, "%s : %s\n", s->names[i].name, s->type_text[s->names[i].u]);
}

/* ---- states --------------------------------------------------------------- */

tl_aeon_state *tl_aeon_state_initial(void) { return calloc(1, sizeof(tl_aeon_state) + 1); }

tl_aeon_state *tl_aeon_state_advance(const tl_aeon_state *st, const char *chars, size_t n) {
    if (n > SIZE_MAX / 2 - st->len)
        return NULL;
    tl_aeon_state *ns = malloc(sizeof *ns + st->len + n + 1);
    if (!ns)
        return NULL;
    ns->len = st->len + n;
    memcpy(ns->text, st->text, st->len);
    memcpy(ns->text + st->len, chars, n);
    ns->text[ns->len] = '\0';
    return ns;
}

void tl_aeon_state_free(tl_aeon_state *st) { free(st); }

/* ---- prefix lexer ----------------------------------------------------------- */

typedef enum ptk {
    K_EOF, K_IDENT, K_IDENT_OPEN, K_INT, K_FLOAT, K_NUM_OPEN, K_STRING, K_STRING_OPEN,
    K_IF, K_THEN, K_ELSE, K_LET, K_IN, K_FUN, K_TRUE, K_FALSE, K_UNIT, K_RESERVED,
    K_LPAREN, K_RPAREN, K_ASSIGN, K_SEMI, K_DARROW, K_OROR, K_ANDAND, K_EQ, K_NE, K_LT, K_LE, K_GT, K_GE,
    K_PLUS, K_MINUS, K_STAR, K_SLASH, K_PCT, K_BANG
} ptk;

typedef struct ptok {
    ptk kind;
    const char *text; /* into the snapshot */
    size_t len;
    const char *open_suffix; /* K_STRING_OPEN: text that closes the string */
} ptok;

static ptk keyword_kind(const char *w, size_t n) {
    static const struct { const char *w; ptk k; } kws[] = {
        {"if", K_IF}, {"then", K_THEN}, {"else", K_ELSE}, {"let", K_LET}, {"in", K_IN},
        {"fun", K_FUN}, {"true", K_TRUE}, {"false", K_FALSE}, {"unit", K_UNIT},
    };
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++)
        if (strlen(kws[i].w) == n && !memcmp(kws[i].w, w, n))
            return kws[i].k;
    for (size_t i = 0; i < TL_AEON_N_RESERVED; i++)
        if (strlen(tl_aeon_reserved_words[i]) == n && !memcmp(tl_aeon_reserved_words[i], w, n))
            return K_RESERVED;
    return K_IDENT;
}

static bool c_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool c_ident(int c) { return c_ident_start(c) || (c >= '0' && c <= '9'); }
static bool c_digit(int c) { return c >= '0' && c <= '9'; }

/* One alternative reading of the final lexeme: a token plus the characters
 * (pending) that must follow it before anything else. */
typedef struct alt {
    ptok tok;
    const char *pending;
} alt;

#define MAX_ALTS 24

typedef struct lexed {
    ptok *toks;   /* closed tokens */
    int n;
    alt alts[MAX_ALTS]; /* readings of the final lexeme when it is unfinished */
    int n_alts;
    bool last_open;
    char string_suffix[16];
} lexed;

/* Scans a string body from s[i] (after the quote). Returns the index after
 * the closing quote, or -1 for an invalid string, or -2 when the text ends
 * inside the string (then suffix holds a shortest valid completion, or is ""
 * with -1 returned when none exists). */
static long scan_string(const char *s, size_t n, size_t i, char *suffix, size_t cap) {
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return (long)(i + 1);
        if (c == '\n' || c == '\r')
            return -1;
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= n) {
            snprintf(suffix, cap, "n\"");
            return -2;
        }
        int e = (unsigned char)s[i + 1];
        int nd = tl_aeon_escape_hex_digits(e);
        if (nd) {
            uint32_t cp = 0;
            size_t j = i + 2;
            int got = 0;
            while (got < nd && j < n) {
                int v = tl_aeon_hex_value((unsigned char)s[j]);
                if (v < 0)
                    return -1;
                cp = cp * 16 + (uint32_t)v;
                got++;
                j++;
            }
            for (int k = got; k < nd; k++)
                cp *= 16; /* zero padding: the smallest completion */
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return -1;
            if (got < nd) {
                int k = 0;
                for (; k < nd - got; k++)
                    suffix[k] = '0';
                suffix[k++] = '"';
                suffix[k] = '\0';
                return -2;
            }
            i = j;
            continue;
        }
        if (tl_aeon_escape_simple(e) < 0)
            return -1;
        i += 2;
    }
    snprintf(suffix, cap, "\"");
    return -2;
}

/* Lexes the snapshot. false: the closed part is not lexable (DEAD). */
static bool prefix_lex(const char *s, size_t n, lexed *lx) {
    size_t i = 0;
    lx->n = 0;
    lx->n_alts = 0;
    lx->last_open = false;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
            i++;
        if (i >= n)
            return true;
        size_t st = i;
        int c = (unsigned char)s[i];
        ptok t = {K_EOF, s + st, 0, NULL};
        bool open = false;
        if (c_ident_start(c)) {
            while (i < n && (c_ident((unsigned char)s[i]) ||
                             (s[i] == '.' && (i + 1 >= n || c_ident_start((unsigned char)s[i + 1]))))) {
                i++;
            }
            t.kind = keyword_kind(s + st, i - st);
            open = i >= n;
        } else if (c_digit(c) || c == '.') {
            if (c == '.' && !(i + 1 >= n || c_digit((unsigned char)s[i + 1])))
                return false;
            bool is_float = false;
            while (i < n && c_digit((unsigned char)s[i]))
                i++;
            if (i < n && s[i] == '.' && (i + 1 >= n || !c_ident_start((unsigned char)s[i + 1]))) {
                is_float = true;
                i++;
                while (i < n && c_digit((unsigned char)s[i]))
                    i++;
            }
            if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                is_float = true;
                i++;
                if (i < n && (s[i] == '+' || s[i] == '-'))
                    i++;
                if (i < n && !c_digit((unsigned char)s[i]))
                    return false;
                while (i < n && c_digit((unsigned char)s[i]))
                    i++;
            }
            open = i >= n;
            t.kind = is_float ? K_FLOAT : K_INT;
            if (!open) { /* closed literals must be what the whole-file lexer accepts */
                char buf[64];
                if (i - st >= sizeof buf)
                    return false;
                memcpy(buf, s + st, i - st);
                buf[i - st] = '\0';
                if (is_float) {
                    if (!isfinite(strtod(buf, NULL)))
                        return false;
                } else {
                    errno = 0;
                    (void)strtoll(buf, NULL, 10);
                    if (errno == ERANGE)
                        return false;
                }
            } else {
                t.kind = K_NUM_OPEN;
            }
        } else if (c == '"') {
            long r = scan_string(s, n, i + 1, lx->string_suffix, sizeof lx->string_suffix);
            if (r == -1)
                return false;
            if (r == -2) {
                i = n;
                open = true;
                t.kind = K_STRING_OPEN;
                t.open_suffix = lx->string_suffix;
            } else {
                i = (size_t)r;
                t.kind = K_STRING;
            }
        } else {
            static const struct { const char *s; ptk k; } punct[] = {
                {":=", K_ASSIGN}, {"||", K_OROR}, {"&&", K_ANDAND}, {"!=", K_NE}, {"<=", K_LE}, {">=", K_GE},
                {"=>", K_DARROW}, {"(", K_LPAREN}, {")", K_RPAREN}, {";", K_SEMI}, {"=", K_EQ}, {"<", K_LT},
                {">", K_GT}, {"+", K_PLUS}, {"-", K_MINUS}, {"*", K_STAR}, {"/", K_SLASH}, {"%", K_PCT},
                {"!", K_BANG},
            };
            /* "->" is a single lexeme for the whole-file lexer; it never occurs in expressions. */
            if (c == '-' && i + 1 < n && s[i + 1] == '>')
                return false;
            bool found = false;
            for (size_t k = 0; k < sizeof punct / sizeof punct[0]; k++) {
                size_t m = strlen(punct[k].s);
                if (i + m <= n && !memcmp(s + i, punct[k].s, m)) {
                    t.kind = punct[k].k;
                    i += m;
                    found = true;
                    break;
                }
            }
            if (!found) {
                /* unfinished two-character operators at the very end */
                if (i + 1 == n && (c == ':' || c == '&' || c == '|')) {
                    t.kind = c == ':' ? K_ASSIGN : c == '&' ? K_ANDAND : K_OROR;
                    i++;
                    t.len = 1;
                    lx->last_open = true;
                    static const char *fill[] = {"=", "&", "|"};
                    lx->alts[lx->n_alts++] = (alt){t, fill[c == ':' ? 0 : c == '&' ? 1 : 2]};
                    return true;
                }
                return false;
            }
            /* one-character operators that can still grow */
            open = i >= n && i - st == 1 && (c == '<' || c == '>' || c == '=' || c == '!' || c == '-');
        }
        t.len = i - st;
        if (!open) {
            lx->toks[lx->n++] = t;
            continue;
        }
        /* The final lexeme is unfinished: list its readings. */
        lx->last_open = true;
        switch (t.kind) {
        case K_LT: case K_GT: case K_BANG: case K_EQ: case K_MINUS: {
            lx->alts[lx->n_alts++] = (alt){t, ""};
            ptok longer = t;
            longer.kind = t.kind == K_LT ? K_LE : t.kind == K_GT ? K_GE : t.kind == K_BANG ? K_NE
                        : t.kind == K_EQ ? K_DARROW : K_EOF;
            if (longer.kind != K_EOF)
                lx->alts[lx->n_alts++] = (alt){longer, t.kind == K_EQ ? ">" : "="};
            break;
        }
        case K_NUM_OPEN: case K_STRING_OPEN:
            lx->alts[lx->n_alts++] = (alt){t, ""};
            break;
        default: { /* a word: keywords it may still become, or an identifier */
            static const char *kws[] = {"if", "then", "else", "let", "in", "fun", "true", "false", "unit"};
            for (size_t k = 0; k < sizeof kws / sizeof kws[0]; k++) {
                size_t m = strlen(kws[k]);
                if (m >= t.len && !memcmp(kws[k], t.text, t.len)) {
                    ptok kt = t;
                    kt.kind = keyword_kind(kws[k], m);
                    lx->alts[lx->n_alts++] = (alt){kt, kws[k] + t.len};
                }
            }
            ptok it = t;
            it.kind = K_IDENT_OPEN;
            lx->alts[lx->n_alts++] = (alt){it, ""};
            break;
        }
        }
        return true;
    }
}

/* ---- typed prefix parser --------------------------------------------------- */

/* A parse outcome: FAIL (no derivation), DONE (a complete phrase of type ty,
 * tokens remain), MAP (the tokens ran out inside or right after the phrase:
 * m[u] is the shortest continuation text giving type u; mn[u] the same among
 * derivations whose type did not come from the expected-type hint, which
 * alone may be applied or used as an operand), ABORT (a limit). */
typedef enum { R_FAIL, R_DONE, R_MAP, R_ABORT } rkind;

typedef struct pres {
    rkind kind;
    int ty;
    bool hinted;        /* DONE: the type was taken from the hint (a lambda) */
    const char **m, **mn;
} pres;

typedef struct local {
    const char *name;
    size_t len;
    int u;
} local;

typedef struct engine_run {
    const tl_aeon_scope *s;
    tl_arena *arena;
    const ptok *toks;
    int n, pos;
    local locals[TL_AEON_MAX_FRAMES];
    int n_locals;
    int depth;
    int no_let;         /* inside a parenthesized if (outside a fun body): no let (check.c's rule) */
    int64_t work, max_work;
    double deadline;
    const char *abort_reason;
} engine_run;

static pres r_fail(void) { return (pres){R_FAIL, -1, false, NULL, NULL}; }
static pres r_abort(engine_run *r, const char *why) {
    if (!r->abort_reason)
        r->abort_reason = why;
    return (pres){R_ABORT, -1, false, NULL, NULL};
}
static pres r_done(int ty, bool hinted) { return (pres){R_DONE, ty, hinted, NULL, NULL}; }

static bool tick(engine_run *r, int64_t n) {
    r->work += n;
    if (r->work > r->max_work) {
        r->abort_reason = "work limit (AEON_TC_MAX_STATES) reached";
        return false;
    }
    if (r->deadline > 0 && (r->work & 63) < n + 1 && tl_now_s() > r->deadline) {
        r->abort_reason = "deadline passed during the search";
        return false;
    }
    return true;
}

static pres r_map(engine_run *r) {
    pres p = {R_MAP, -1, false, NULL, NULL};
    p.m = tl_arena_alloc(r->arena, sizeof *p.m * (size_t)r->s->nu);
    p.mn = tl_arena_alloc(r->arena, sizeof *p.mn * (size_t)r->s->nu);
    if (!p.m || !p.mn)
        return r_abort(r, "out of memory");
    return p;
}

static const char *cat(engine_run *r, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = tl_arena_alloc(r->arena, la + lb + 1);
    if (!s)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    return s;
}

static const char *cat3(engine_run *r, const char *a, const char *b, const char *c) {
    const char *ab = cat(r, a, b);
    return ab ? cat(r, ab, c) : NULL;
}

static bool shorter(const char *cand, const char *cur) { return cur == NULL || strlen(cand) < strlen(cur); }

/* Records continuation text for type u; hinted entries go into m only. */
static void map_put(pres *p, int u, const char *text, bool hinted) {
    if (u < 0 || !text)
        return;
    if (shorter(text, p->m[u]))
        p->m[u] = text;
    if (!hinted && shorter(text, p->mn[u]))
        p->mn[u] = text;
}

static const ptok *peek(engine_run *r) {
    static const ptok eof = {K_EOF, "", 0, NULL};
    return r->pos < r->n ? &r->toks[r->pos] : &eof;
}

static const char *inh(engine_run *r, int u) { return cat(r, " ", r->s->inhabitant[u]); }

/* Completion of a fresh phrase at the end of the input: a literal of each
 * base type, or a lambda for an expected arrow type. */
static pres synth_fresh(engine_run *r, int hint) {
    pres p = r_map(r);
    if (p.kind != R_MAP)
        return p;
    for (int u = 0; u < r->s->nu; u++)
        if (r->s->uarg[u] < 0)
            map_put(&p, u, inh(r, u), false);
    if (hint >= 0 && r->s->uarg[hint] >= 0)
        map_put(&p, hint, inh(r, hint), true);
    return p;
}

/* Name lookup: locals innermost first, then the scope. */
static int lookup_name(engine_run *r, const char *name, size_t len) {
    for (int i = r->n_locals - 1; i >= 0; i--)
        if (r->locals[i].len == len && !memcmp(r->locals[i].name, name, len))
            return r->locals[i].u;
    for (int i = 0; i < r->s->n_names; i++)
        if (r->s->names[i].len == len && !memcmp(r->s->names[i].name, name, len))
            return r->s->names[i].u;
    return -1;
}

/* Operator tables per level. */
typedef struct lvl { const ptk *toks; const tl_aeon_binop *ops; int n; bool nonassoc; } lvl;
static const ptk t_or[] = {K_OROR};            static const tl_aeon_binop o_or[] = {TL_AEON_OP_OR};
static const ptk t_and[] = {K_ANDAND};         static const tl_aeon_binop o_and[] = {TL_AEON_OP_AND};
static const ptk t_eq[] = {K_EQ, K_NE};        static const tl_aeon_binop o_eq[] = {TL_AEON_OP_EQ, TL_AEON_OP_NE};
static const ptk t_cmp[] = {K_LT, K_LE, K_GT, K_GE};
static const tl_aeon_binop o_cmp[] = {TL_AEON_OP_LT, TL_AEON_OP_LE, TL_AEON_OP_GT, TL_AEON_OP_GE};
static const ptk t_add[] = {K_PLUS, K_MINUS};  static const tl_aeon_binop o_add[] = {TL_AEON_OP_ADD, TL_AEON_OP_SUB};
static const ptk t_mul[] = {K_STAR, K_SLASH, K_PCT};
static const tl_aeon_binop o_mul[] = {TL_AEON_OP_MUL, TL_AEON_OP_DIV, TL_AEON_OP_MOD};
static const char *op_text(tl_aeon_binop op) {
    static const char *t[] = {"||", "&&", "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"};
    return t[op];
}
enum { LV_OR, LV_AND, LV_EQ, LV_NOT, LV_CMP, LV_ADD, LV_MUL, LV_APP };
static const lvl levels[] = {
    [LV_OR] = {t_or, o_or, 1, false},   [LV_AND] = {t_and, o_and, 1, false},
    [LV_EQ] = {t_eq, o_eq, 2, true},    [LV_NOT] = {NULL, NULL, 0, false},
    [LV_CMP] = {t_cmp, o_cmp, 4, true}, [LV_ADD] = {t_add, o_add, 2, false},
    [LV_MUL] = {t_mul, o_mul, 3, false},
};

/* Type of `l op r` in universe indices (base types are their own indices). */
static int binop_u(const engine_run *r, tl_aeon_binop op, int lu, int ru) {
    if (lu != ru || lu < 0 || r->s->uarg[lu] >= 0)
        return -1;
    int t = tl_aeon_binop_result_type((int)op, r->s->utype[lu]);
    return t < 0 ? -1 : universe_index(r->s, t);
}

/* Closes a completion map under the operators of level lv: appending
 * ` op <literal>` to a phrase of type S yields the operator's result type.
 * Non-associative levels allow one step; the others iterate to a fixpoint
 * (the universe is finite, each type is visited once per round). */
static bool close_level(engine_run *r, pres *p, int lv, bool one_step) {
    const lvl *L = &levels[lv];
    bool changed = true;
    for (int round = 0; changed && round < r->s->nu + 1; round++) {
        changed = false;
        const char **snap = tl_arena_alloc(r->arena, sizeof *snap * (size_t)r->s->nu);
        if (!snap)
            return false;
        memcpy(snap, p->mn, sizeof *snap * (size_t)r->s->nu);
        for (int u = 0; u < r->s->nu; u++) {
            if (!snap[u])
                continue;
            for (int k = 0; k < L->n; k++) {
                if (!tick(r, 1))
                    return false;
                int res = binop_u(r, L->ops[k], u, u);
                if (res < 0)
                    continue;
                const char *t = cat(r, snap[u], cat3(r, " ", op_text(L->ops[k]), inh(r, u)));
                if (!t)
                    return false;
                if (shorter(t, p->mn[res]))
                    changed = true;
                map_put(p, res, t, false);
            }
        }
        if (one_step)
            break;
    }
    return true;
}

/* Closes a map under application: a function phrase followed by an argument. */
static bool close_app(engine_run *r, pres *p) {
    bool changed = true;
    for (int round = 0; changed && round < r->s->nu + 1; round++) {
        changed = false;
        for (int u = 0; u < r->s->nu; u++) {
            if (!p->mn[u] || r->s->uarg[u] < 0)
                continue;
            if (!tick(r, 1))
                return false;
            const char *t = cat(r, p->mn[u], inh(r, r->s->uarg[u]));
            if (!t)
                return false;
            int res = r->s->ures[u];
            if (shorter(t, p->mn[res]))
                changed = true;
            map_put(p, res, t, false);
        }
    }
    return true;
}

static pres p_expr(engine_run *r, int hint);
static pres p_level(engine_run *r, int lv, int hint);

static bool starts_atom(ptk k) {
    return k == K_IDENT || k == K_IDENT_OPEN || k == K_INT || k == K_FLOAT || k == K_NUM_OPEN || k == K_STRING ||
           k == K_STRING_OPEN || k == K_LPAREN || k == K_TRUE || k == K_FALSE || k == K_UNIT;
}

/* The map for an unfinished number lexeme: Int as is, Float by completing it. */
static pres num_open(engine_run *r, const ptok *t) {
    pres p = r_map(r);
    if (p.kind != R_MAP)
        return p;
    char buf[80];
    if (t->len >= 60)
        return r_fail();
    memcpy(buf, t->text, t->len);
    buf[t->len] = '\0';
    bool digits = true, has_dot = false;
    for (size_t i = 0; i < t->len; i++) {
        if (!c_digit((unsigned char)buf[i]))
            digits = false;
        if (buf[i] == '.')
            has_dot = true;
    }
    if (digits) {
        errno = 0;
        (void)strtoll(buf, NULL, 10);
        if (errno != ERANGE)
            map_put(&p, TL_AEON_T_INT, "", false);
    }
    const char *fill;
    char last = buf[t->len - 1];
    if (digits)
        fill = ".0";
    else if (last == 'e' || last == 'E' || last == '+' || last == '-' || (last == '.' && !c_digit(buf[0]) && t->len == 1))
        fill = "0";
    else
        fill = "";
    (void)has_dot;
    char full[96];
    snprintf(full, sizeof full, "%s%s", buf, fill);
    if (isfinite(strtod(full, NULL)))
        map_put(&p, TL_AEON_T_FLOAT, fill, false);
    return p;
}

static pres p_atom(engine_run *r, int hint) {
    if (!tick(r, 1))
        return r_abort(r, NULL);
    const ptok *t = peek(r);
    switch (t->kind) {
    case K_EOF:
        return synth_fresh(r, hint);
    case K_IDENT: {
        int u = lookup_name(r, t->text, t->len);
        if (u < 0)
            return r_fail();
        r->pos++;
        return r_done(u, false);
    }
    case K_IDENT_OPEN: {
        r->pos++;
        pres p = r_map(r);
        if (p.kind != R_MAP)
            return p;
        /* every visible name the lexeme can still grow into */
        for (int i = r->n_locals - 1; i >= -r->s->n_names; i--) {
            const char *name = i >= 0 ? r->locals[i].name : r->s->names[-i - 1].name;
            size_t len = i >= 0 ? r->locals[i].len : r->s->names[-i - 1].len;
            int u = i >= 0 ? r->locals[i].u : r->s->names[-i - 1].u;
            if (len < t->len || memcmp(name, t->text, t->len))
                continue;
            if (lookup_name(r, name, len) != u) /* shadowed by an inner binding of that name */
                continue;
            if (!tick(r, 1))
                return r_abort(r, NULL);
            char *rest = tl_arena_strndup(r->arena, name + t->len, len - t->len);
            map_put(&p, u, rest, false);
        }
        return p;
    }
    case K_INT: r->pos++; return r_done(TL_AEON_T_INT, false);
    case K_FLOAT: r->pos++; return r_done(TL_AEON_T_FLOAT, false);
    case K_STRING: r->pos++; return r_done(TL_AEON_T_STRING, false);
    case K_TRUE: case K_FALSE: r->pos++; return r_done(TL_AEON_T_BOOL, false);
    case K_UNIT: r->pos++; return r_done(TL_AEON_T_UNIT, false);
    case K_NUM_OPEN: r->pos++; return num_open(r, t);
    case K_STRING_OPEN: {
        r->pos++;
        pres p = r_map(r);
        if (p.kind == R_MAP)
            map_put(&p, TL_AEON_T_STRING, t->open_suffix, false);
        return p;
    }
    case K_LPAREN: {
        r->pos++;
        bool paren_if = peek(r)->kind == K_IF;
        r->no_let += paren_if;
        pres in = p_expr(r, hint);
        r->no_let -= paren_if;
        if (in.kind == R_FAIL || in.kind == R_ABORT)
            return in;
        if (in.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            for (int u = 0; u < r->s->nu; u++) {
                if (in.mn[u])
                    map_put(&p, u, cat(r, in.mn[u], ")"), false);
                if (in.m[u])
                    map_put(&p, u, cat(r, in.m[u], ")"), true);
            }
            return p;
        }
        const ptok *c = peek(r);
        if (c->kind == K_EOF) {
            pres p = r_map(r);
            if (p.kind == R_MAP)
                map_put(&p, in.ty, ")", in.hinted);
            return p;
        }
        if (c->kind != K_RPAREN)
            return r_fail();
        r->pos++;
        return in;
    }
    default:
        return r_fail();
    }
}

/* Application spine: head atom, then argument atoms while the head is a function. */
static pres p_app(engine_run *r, int hint) {
    pres head = p_atom(r, hint);
    if (head.kind == R_FAIL || head.kind == R_ABORT)
        return head;
    if (head.kind == R_MAP)
        return close_app(r, &head) ? head : r_abort(r, NULL);
    int S = head.ty;
    bool hinted = head.hinted;
    for (;;) {
        const ptok *t = peek(r);
        if (t->kind == K_EOF) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            map_put(&p, S, "", hinted);
            return close_app(r, &p) ? p : r_abort(r, NULL);
        }
        if (!starts_atom(t->kind))
            return r_done(S, hinted);
        if (r->s->uarg[S] < 0 || hinted)
            return r_fail(); /* applying a non-function, or a lambda typed only by the hint */
        int A = r->s->uarg[S];
        pres a = p_atom(r, A);
        if (a.kind == R_FAIL || a.kind == R_ABORT)
            return a;
        if (a.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            if (a.m[A])
                map_put(&p, r->s->ures[S], a.m[A], false);
            return close_app(r, &p) ? p : r_abort(r, NULL);
        }
        if (a.ty != A)
            return r_fail();
        S = r->s->ures[S];
        hinted = false;
    }
}

static pres p_operand(engine_run *r, int lv, int hint) {
    return lv + 1 == LV_APP ? p_app(r, hint) : p_level(r, lv + 1, hint);
}

/* Prefix `!` sits between = != and the comparisons. */
static pres p_not(engine_run *r, int hint) {
    if (peek(r)->kind != K_BANG)
        return p_level(r, LV_CMP, hint);
    r->pos++;
    if (++r->depth > TL_AEON_MAX_FRAMES)
        return r_abort(r, "more than 128 continuation frames");
    pres o = p_not(r, -1);
    r->depth--;
    if (o.kind == R_FAIL || o.kind == R_ABORT)
        return o;
    if (o.kind == R_DONE)
        return o.ty == TL_AEON_T_BOOL ? r_done(TL_AEON_T_BOOL, false) : r_fail();
    pres p = r_map(r);
    if (p.kind == R_MAP && o.mn[TL_AEON_T_BOOL])
        map_put(&p, TL_AEON_T_BOOL, o.mn[TL_AEON_T_BOOL], false);
    return p;
}

static int find_level_op(const lvl *L, ptk k) {
    for (int i = 0; i < L->n; i++)
        if (L->toks[i] == k)
            return i;
    return -1;
}

/* A binary operator level: operand (op operand)*, typed left to right. */
static pres p_level(engine_run *r, int lv, int hint) {
    if (lv == LV_NOT)
        return p_not(r, hint);
    if (!tick(r, 1))
        return r_abort(r, NULL);
    const lvl *L = &levels[lv];
    pres left = p_operand(r, lv, hint);
    if (left.kind == R_FAIL || left.kind == R_ABORT)
        return left;
    if (left.kind == R_MAP)
        return close_level(r, &left, lv, L->nonassoc) ? left : r_abort(r, NULL);
    int S = left.ty;
    bool hinted = left.hinted, applied = false;
    for (;;) {
        const ptok *t = peek(r);
        if (t->kind == K_EOF) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            map_put(&p, S, "", hinted);
            if (applied && L->nonassoc)
                return p;
            return close_level(r, &p, lv, L->nonassoc) ? p : r_abort(r, NULL);
        }
        int k = find_level_op(L, t->kind);
        if (k < 0)
            return r_done(S, hinted);
        if (applied && L->nonassoc)
            return r_fail();
        if (hinted)
            return r_fail();
        r->pos++;
        pres right = p_operand(r, lv, -1);
        if (right.kind == R_FAIL || right.kind == R_ABORT)
            return right;
        if (right.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            if (right.mn[S]) {
                int res = binop_u(r, L->ops[k], S, S);
                if (res >= 0)
                    map_put(&p, res, right.mn[S], false);
            }
            if (L->nonassoc)
                return p;
            return close_level(r, &p, lv, false) ? p : r_abort(r, NULL);
        }
        int res = binop_u(r, L->ops[k], S, right.ty);
        if (res < 0 || right.hinted)
            return r_fail();
        S = res;
        applied = true;
    }
}

/* Completion maps for `if`, `let` and `fun` tails: types we may still end with. */
static pres tail_map(engine_run *r, int hint, const char *head, const char *between, int n_tail) {
    pres p = r_map(r);
    if (p.kind != R_MAP)
        return p;
    for (int u = 0; u < r->s->nu; u++) {
        if (hint >= 0 && u != hint)
            continue;
        if (hint < 0 && r->s->uarg[u] >= 0)
            continue; /* without a hint a lambda cannot be typed */
        const char *t = cat(r, head, inh(r, u));
        if (n_tail == 2)
            t = cat(r, t, cat(r, between, inh(r, u)));
        map_put(&p, u, t, hint >= 0 && r->s->uarg[u] >= 0);
    }
    return p;
}

/* A binder position (after let / fun): the name, or a completion when the
 * input ends here. *name_out NULL + *suffix set means "ends here". */
static bool p_binder(engine_run *r, const char **name, size_t *len, const char **suffix) {
    const ptok *t = peek(r);
    *name = NULL;
    *suffix = NULL;
    if (t->kind == K_EOF) {
        *suffix = " v";
        return true;
    }
    if (t->kind == K_IDENT && !memchr(t->text, '.', t->len)) {
        *name = t->text;
        *len = t->len;
        r->pos++;
        return true;
    }
    if (t->kind == K_IDENT_OPEN && !memchr(t->text, '.', t->len)) {
        r->pos++;
        char buf[TL_AEON_MAX_TEXT + 2];
        memcpy(buf, t->text, t->len);
        buf[t->len] = '\0';
        *suffix = tl_aeon_is_reserved(buf) ? "x" : "";
        return true;
    }
    return false;
}

static pres p_expr_inner(engine_run *r, int hint) {
    const ptok *t = peek(r);
    switch (t->kind) {
    case K_EOF:
        return synth_fresh(r, hint);
    case K_IF: {
        r->pos++;
        pres c = p_expr(r, TL_AEON_T_BOOL);
        if (c.kind == R_FAIL || c.kind == R_ABORT)
            return c;
        if (c.kind == R_MAP)
            return c.m[TL_AEON_T_BOOL] ? tail_map(r, hint, cat(r, c.m[TL_AEON_T_BOOL], " then"), " else", 2) : r_fail();
        if (c.ty != TL_AEON_T_BOOL)
            return r_fail();
        if (peek(r)->kind == K_EOF)
            return tail_map(r, hint, " then", " else", 2);
        if (peek(r)->kind != K_THEN)
            return r_fail();
        r->pos++;
        pres a = p_expr(r, hint);
        if (a.kind == R_FAIL || a.kind == R_ABORT)
            return a;
        if (a.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind != R_MAP)
                return p;
            for (int u = 0; u < r->s->nu; u++) {
                if (!a.m[u] || (hint >= 0 && u != hint))
                    continue;
                bool lam = r->s->uarg[u] >= 0;
                if (lam && hint < 0)
                    continue;
                map_put(&p, u, cat3(r, a.m[u], " else", inh(r, u)), lam || !a.mn[u]);
            }
            return p;
        }
        if (hint >= 0 && a.ty != hint)
            return r_fail();
        if (peek(r)->kind == K_EOF) {
            pres p = r_map(r);
            if (p.kind == R_MAP && (hint >= 0 || r->s->uarg[a.ty] < 0))
                map_put(&p, a.ty, cat(r, " else", inh(r, a.ty)), a.hinted);
            return p;
        }
        if (peek(r)->kind != K_ELSE)
            return r_fail();
        r->pos++;
        int bt = hint >= 0 ? hint : a.ty;
        pres b = p_expr(r, bt);
        if (b.kind == R_FAIL || b.kind == R_ABORT)
            return b;
        if (b.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind == R_MAP && b.m[bt])
                map_put(&p, bt, b.m[bt], a.hinted || !b.mn[bt]);
            return p;
        }
        if (b.ty != bt)
            return r_fail();
        return r_done(bt, a.hinted || b.hinted);
    }
    case K_LET: case K_FUN: {
        bool is_let = t->kind == K_LET;
        if (!is_let && (hint < 0 || r->s->uarg[hint] < 0))
            return r_fail(); /* fun needs an expected arrow type */
        if (is_let && r->no_let > 0)
            return r_fail(); /* Aeon rejects a let inside a parenthesized if (check.c) */
        r->pos++;
        const char *name, *suffix;
        size_t len = 0;
        if (!p_binder(r, &name, &len, &suffix))
            return r_fail();
        if (!name) { /* the input ended in the binder */
            if (is_let)
                return tail_map(r, hint, cat3(r, suffix, " :=", cat(r, inh(r, TL_AEON_T_INT), " in")), "", 1);
            pres p = r_map(r);
            if (p.kind == R_MAP)
                map_put(&p, hint, cat3(r, suffix, " =>", inh(r, r->s->ures[hint])), true);
            return p;
        }
        int bound;
        if (is_let) {
            if (peek(r)->kind == K_EOF)
                return tail_map(r, hint, cat(r, " :=", cat(r, inh(r, TL_AEON_T_INT), " in")), "", 1);
            if (peek(r)->kind != K_ASSIGN)
                return r_fail();
            r->pos++;
            pres v = p_expr(r, -1);
            if (v.kind == R_FAIL || v.kind == R_ABORT)
                return v;
            if (v.kind == R_MAP) {
                const char *best = NULL;
                for (int u = 0; u < r->s->nu; u++)
                    if (v.mn[u] && shorter(v.mn[u], best))
                        best = v.mn[u];
                return best ? tail_map(r, hint, cat(r, best, " in"), "", 1) : r_fail();
            }
            if (v.hinted)
                return r_fail();
            if (peek(r)->kind == K_EOF)
                return tail_map(r, hint, " in", "", 1);
            if (peek(r)->kind != K_IN && peek(r)->kind != K_SEMI)
                return r_fail();
            r->pos++;
            bound = v.ty;
        } else {
            if (peek(r)->kind == K_EOF) {
                pres p = r_map(r);
                if (p.kind == R_MAP)
                    map_put(&p, hint, cat(r, " =>", inh(r, r->s->ures[hint])), true);
                return p;
            }
            if (peek(r)->kind != K_DARROW)
                return r_fail();
            r->pos++;
            bound = r->s->uarg[hint];
        }
        if (r->n_locals == TL_AEON_MAX_FRAMES)
            return r_abort(r, "more than 128 local bindings");
        r->locals[r->n_locals++] = (local){name, len, bound};
        int body_goal = is_let ? hint : r->s->ures[hint];
        int saved_no_let = r->no_let;
        if (!is_let)
            r->no_let = 0; /* a lambda's body is typed on its own */
        pres b = p_expr(r, body_goal);
        r->no_let = saved_no_let;
        r->n_locals--;
        if (is_let || b.kind == R_FAIL || b.kind == R_ABORT)
            return b;
        if (b.kind == R_MAP) {
            pres p = r_map(r);
            if (p.kind == R_MAP && b.m[body_goal])
                map_put(&p, hint, b.m[body_goal], true);
            return p;
        }
        return b.ty == body_goal ? r_done(hint, true) : r_fail();
    }
    default:
        return p_level(r, LV_OR, hint);
    }
}

static pres p_expr(engine_run *r, int hint) {
    if (++r->depth > TL_AEON_MAX_FRAMES)
        return r_abort(r, "more than 128 continuation frames");
    if (!tick(r, 1))
        return r_abort(r, NULL);
    pres p = p_expr_inner(r, hint);
    r->depth--;
    return p;
}

/* ---- engine ----------------------------------------------------------------- */

typedef struct cache_entry {
    char *text;
    size_t len;
    uint64_t hash;
    tl_aeon_verdict verdict;
    char *witness;
} cache_entry;

struct tl_aeon_engine {
    const tl_aeon_scope *scope;
    tl_aeon_oracle_limits limits;
    cache_entry cache[TL_AEON_CACHE_ENTRIES];
    int cache_next; /* FIFO eviction */
};

tl_status tl_aeon_engine_new(const tl_aeon_scope *s, const tl_aeon_oracle_limits *limits, tl_aeon_engine **out, tl_error *err) {
    tl_aeon_engine *e = calloc(1, sizeof *e);
    if (!e)
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    e->scope = s;
    if (limits)
        e->limits = *limits;
    if (e->limits.max_states <= 0)
        e->limits.max_states = TL_AEON_DEFAULT_MAX_STATES;
    *out = e;
    return TL_OK;
}

void tl_aeon_engine_set_deadline(tl_aeon_engine *e, double deadline) { e->limits.deadline = deadline; }

void tl_aeon_engine_free(tl_aeon_engine *e) {
    if (!e)
        return;
    for (int i = 0; i < TL_AEON_CACHE_ENTRIES; i++) {
        free(e->cache[i].text);
        free(e->cache[i].witness);
    }
    free(e);
}

static void cache_put(tl_aeon_engine *e, const tl_aeon_state *st, uint64_t h, tl_aeon_verdict v, const char *witness) {
    cache_entry *c = &e->cache[e->cache_next];
    e->cache_next = (e->cache_next + 1) % TL_AEON_CACHE_ENTRIES;
    free(c->text);
    free(c->witness);
    c->text = malloc(st->len + 1);
    c->witness = witness ? strdup(witness) : NULL;
    if (!c->text || (witness && !c->witness)) {
        free(c->text);
        free(c->witness);
        memset(c, 0, sizeof *c);
        return;
    }
    memcpy(c->text, st->text, st->len + 1);
    c->len = st->len;
    c->hash = h;
    c->verdict = v;
}

tl_aeon_verdict tl_aeon_completion_status(tl_aeon_engine *e, const tl_aeon_state *st, tl_strbuf *witness, tl_aeon_query_stats *stats) {
    tl_aeon_query_stats local_stats = {0};
    if (!stats)
        stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (witness)
        tl_strbuf_clear(witness);
    if (st->len > TL_AEON_MAX_TEXT) {
        if (witness)
            tl_strbuf_printf(witness, "candidate text longer than %d characters", TL_AEON_MAX_TEXT);
        return TL_AEON_UNKNOWN;
    }
    if (memchr(st->text, '\0', st->len))
        return TL_AEON_DEAD;
    uint64_t h = tl_hash_bytes(st->text, st->len);
    for (int i = 0; i < TL_AEON_CACHE_ENTRIES; i++) {
        cache_entry *c = &e->cache[i];
        if (c->text && c->hash == h && c->len == st->len && !memcmp(c->text, st->text, st->len)) {
            stats->cached = true;
            if (witness && c->witness)
                tl_strbuf_puts(witness, c->witness);
            return c->verdict;
        }
    }
    if (e->limits.deadline > 0 && tl_now_s() > e->limits.deadline) {
        if (witness)
            tl_strbuf_puts(witness, "deadline passed");
        return TL_AEON_UNKNOWN;
    }
    tl_arena arena = {0};
    ptok *toks = tl_arena_alloc(&arena, sizeof *toks * (st->len + 1));
    lexed lx = {.toks = toks};
    tl_aeon_verdict verdict = TL_AEON_DEAD;
    const char *best = NULL;
    const char *unknown_reason = NULL;
    if (!toks) {
        verdict = TL_AEON_UNKNOWN;
        unknown_reason = "out of memory";
    } else if (prefix_lex(st->text, st->len, &lx)) {
        int n_runs = lx.last_open ? lx.n_alts : 1;
        for (int k = 0; k < n_runs; k++) {
            if (lx.last_open)
                toks[lx.n] = lx.alts[k].tok;
            engine_run r = {.s = e->scope, .arena = &arena, .toks = toks, .n = lx.n + (lx.last_open ? 1 : 0),
                            .max_work = e->limits.max_states - stats->work, .deadline = e->limits.deadline};
            pres p = p_expr(&r, e->scope->goal);
            stats->work += r.work;
            if (p.kind == R_ABORT) {
                unknown_reason = r.abort_reason ? r.abort_reason : "limit reached";
                continue;
            }
            const char *suffix = NULL;
            if (p.kind == R_MAP && r.pos == r.n)
                suffix = p.m[e->scope->goal];
            else if (p.kind == R_DONE && r.pos == r.n && p.ty == e->scope->goal)
                suffix = "";
            if (!suffix)
                continue;
            const char *pending = lx.last_open ? lx.alts[k].pending : "";
            const char *full = cat(&r, pending, suffix);
            if (full && shorter(full, best))
                best = full;
        }
        if (best)
            verdict = TL_AEON_LIVE;
        else if (unknown_reason)
            verdict = TL_AEON_UNKNOWN; /* some reading was cut short: not a proof of DEAD */
    }
    tl_strbuf wit = TL_STRBUF_INIT;
    if (verdict == TL_AEON_LIVE) {
        tl_strbuf_append(&wit, st->text, st->len);
        tl_strbuf_puts(&wit, best);
    } else if (verdict == TL_AEON_UNKNOWN) {
        tl_strbuf_puts(&wit, unknown_reason);
    }
    if (verdict != TL_AEON_UNKNOWN)
        cache_put(e, st, h, verdict, verdict == TL_AEON_LIVE ? tl_strbuf_cstr(&wit) : NULL);
    if (witness)
        tl_strbuf_append(witness, wit.buf ? wit.buf : "", wit.len);
    tl_strbuf_free(&wit);
    tl_arena_free(&arena);
    return verdict;
}

bool tl_aeon_is_accepting(tl_aeon_engine *e, const tl_aeon_state *st) {
    tl_strbuf w = TL_STRBUF_INIT;
    tl_aeon_verdict v = tl_aeon_completion_status(e, st, &w, NULL);
    bool ok = v == TL_AEON_LIVE && w.len == st->len;
    tl_strbuf_free(&w);
    return ok;
}
