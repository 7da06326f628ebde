/* syntax.c: the whole-file reader for the Aeon fragment: a lexer and a
 * recursive-descent parser producing the AST of aeon.h.
 *
 * This is deliberately a different code path from oracle.c's prefix engine:
 * it parses complete text only and is the referee for the oracle's witnesses.
 * Operator levels, loosest first (aeon_sugar.lark): || (right), && (right),
 * = != (non-assoc), prefix !, < <= > >= (non-assoc), + - (left),
 * * / % (left), application (left). Errors carry line:column. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/internal.h"
#include "aeon/lexicon.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/utf8.h"

/* ---- lexer ---------------------------------------------------------------- */

typedef enum tk {
    TK_EOF, TK_IDENT, TK_INT, TK_FLOAT, TK_STRING, TK_HOLE, TK_KEYWORD,
    TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_LBRACK, TK_RBRACK, TK_COLON, TK_ASSIGN, TK_SEMI, TK_COMMA,
    TK_BAR, TK_OROR, TK_ANDAND, TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE, TK_PLUS, TK_MINUS, TK_STAR,
    TK_SLASH, TK_PERCENT, TK_BANG, TK_ARROW, TK_DARROW, TK_AT, TK_DOT
} tk;

typedef struct token {
    tk kind;
    size_t off, len;
    int line, col;
    int64_t ival;
    double fval;
    char *str;      /* decoded string / identifier / keyword / hole name (arena) */
    size_t str_len;
} token;

typedef struct parser {
    tl_aeon_program *prog;
    const char *src;
    size_t len, pos;
    int line, col;
    token tok;       /* current token */
    tl_error *err;
    tl_status st;    /* first error */
    int depth;
    int n_holes;
    tl_aeon_expr *hole;
    const char *unsupported; /* first type outside the fragment seen in the current def */
    bool candidate;  /* reading a hole's candidate: the generation grammar's expressions only */
} parser;

#define MAX_NESTING 200

static tl_status perr(parser *p, tl_status code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static tl_status perr(parser *p, tl_status code, int line, int col, const char *fmt, ...) {
    if (p->st != TL_OK)
        return p->st;
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->st = tl_error_set(p->err, code, "aeon: %d:%d: %s", line, col, msg);
    return p->st;
}

static void advance_char(parser *p) {
    if (p->pos >= p->len)
        return;
    unsigned char c = (unsigned char)p->src[p->pos++];
    if (c == '\n') {
        p->line++;
        p->col = 1;
    } else if ((c & 0xC0) != 0x80) {
        p->col++;
    }
}

static int peekc(parser *p, size_t k) { return p->pos + k < p->len ? (unsigned char)p->src[p->pos + k] : -1; }

static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(int c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* Decodes the string literal starting at the opening quote. */
static tl_status lex_string(parser *p, token *t) {
    tl_strbuf sb = TL_STRBUF_INIT;
    advance_char(p); /* opening quote */
    for (;;) {
        int c = peekc(p, 0);
        if (c < 0 || c == '\n' || c == '\r') {
            tl_strbuf_free(&sb);
            return perr(p, TL_ERR_FORMAT, t->line, t->col, "unterminated string literal");
        }
        if (c == '"') {
            advance_char(p);
            break;
        }
        if (c != '\\') {
            tl_strbuf_putc(&sb, (char)c);
            advance_char(p);
            continue;
        }
        int el = p->line, ec = p->col;
        advance_char(p);
        int e = peekc(p, 0);
        uint32_t cp = 0;
        int ndig = tl_aeon_escape_hex_digits(e);
        if (ndig > 0) {
            advance_char(p);
            for (int i = 0; i < ndig; i++) {
                int h = peekc(p, 0);
                int v = tl_aeon_hex_value(h);
                if (v < 0) {
                    tl_strbuf_free(&sb);
                    return perr(p, TL_ERR_FORMAT, el, ec, "bad \\%c escape: expected %d hex digits", e, ndig);
                }
                cp = cp * 16 + (uint32_t)v;
                advance_char(p);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                tl_strbuf_free(&sb);
                return perr(p, TL_ERR_FORMAT, el, ec, "escape is not a Unicode scalar value");
            }
            char u[4];
            tl_strbuf_append(&sb, u, tl_utf8_encode(cp, u));
            continue;
        }
        int simple = tl_aeon_escape_simple(e);
        if (simple < 0) {
            tl_strbuf_free(&sb);
            return perr(p, TL_ERR_FORMAT, el, ec, "unsupported escape in string literal");
        }
        tl_strbuf_putc(&sb, (char)simple);
        advance_char(p);
    }
    t->str_len = sb.len;
    t->str = tl_arena_strndup(p->prog->arena, tl_strbuf_cstr(&sb), sb.len);
    tl_strbuf_free(&sb);
    t->kind = TK_STRING;
    return TL_OK;
}

static tl_status lex_number(parser *p, token *t) {
    size_t start = p->pos;
    bool is_float = false;
    while (is_digit(peekc(p, 0)))
        advance_char(p);
    if (peekc(p, 0) == '.' && !is_ident_start(peekc(p, 1))) {
        is_float = true;
        advance_char(p);
        while (is_digit(peekc(p, 0)))
            advance_char(p);
    }
    if (peekc(p, 0) == 'e' || peekc(p, 0) == 'E') {
        is_float = true;
        advance_char(p);
        if (peekc(p, 0) == '+' || peekc(p, 0) == '-')
            advance_char(p);
        if (!is_digit(peekc(p, 0)))
            return perr(p, TL_ERR_FORMAT, t->line, t->col, "float exponent without digits");
        while (is_digit(peekc(p, 0)))
            advance_char(p);
    }
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof buf)
        return perr(p, TL_ERR_FORMAT, t->line, t->col, "numeric literal too long");
    memcpy(buf, p->src + start, n);
    buf[n] = '\0';
    if (is_float) {
        t->kind = TK_FLOAT;
        t->fval = strtod(buf, NULL);
        if (!isfinite(t->fval))
            return perr(p, TL_ERR_FORMAT, t->line, t->col, "float literal is not finite");
    } else {
        t->kind = TK_INT;
        errno = 0;
        long long v = strtoll(buf, NULL, 10);
        if (errno == ERANGE)
            return perr(p, TL_ERR_FORMAT, t->line, t->col, "integer literal out of range");
        t->ival = v;
    }
    return TL_OK;
}

static tl_status lex_next(parser *p) {
    token *t = &p->tok;
    memset(t, 0, sizeof *t);
    for (;;) {
        int c = peekc(p, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            advance_char(p);
        } else if (c == '#') {
            while (peekc(p, 0) >= 0 && peekc(p, 0) != '\n')
                advance_char(p);
        } else {
            break;
        }
    }
    t->off = p->pos;
    t->line = p->line;
    t->col = p->col;
    int c = peekc(p, 0);
    tl_status st = TL_OK;
    if (c < 0) {
        t->kind = TK_EOF;
    } else if (is_ident_start(c)) {
        while (is_ident_char(peekc(p, 0)) || (peekc(p, 0) == '.' && is_ident_start(peekc(p, 1)))) {
            advance_char(p);
        }
        size_t n = p->pos - t->off;
        t->str = tl_arena_strndup(p->prog->arena, p->src + t->off, n);
        t->kind = tl_aeon_is_reserved(t->str) ? TK_KEYWORD : TK_IDENT;
    } else if (is_digit(c) || (c == '.' && is_digit(peekc(p, 1)))) {
        st = lex_number(p, t);
    } else if (c == '"') {
        st = lex_string(p, t);
    } else if (c == '?') {
        advance_char(p);
        size_t s = p->pos;
        while (is_ident_char(peekc(p, 0)))
            advance_char(p);
        t->kind = TK_HOLE;
        t->str = tl_arena_strndup(p->prog->arena, p->src + s, p->pos - s);
    } else if (c == 0xE2 && peekc(p, 1) == 0x86 && peekc(p, 2) == 0x92) { /* U+2192 → */
        advance_char(p);
        advance_char(p);
        advance_char(p);
        t->kind = TK_ARROW;
    } else {
        static const struct { const char *s; tk k; } punct[] = {
            {":=", TK_ASSIGN}, {"||", TK_OROR}, {"&&", TK_ANDAND}, {"!=", TK_NE}, {"<=", TK_LE}, {">=", TK_GE},
            {"->", TK_ARROW}, {"=>", TK_DARROW}, {"(", TK_LPAREN}, {")", TK_RPAREN}, {"{", TK_LBRACE},
            {"}", TK_RBRACE}, {"[", TK_LBRACK}, {"]", TK_RBRACK}, {":", TK_COLON}, {";", TK_SEMI},
            {",", TK_COMMA}, {"|", TK_BAR}, {"=", TK_EQ}, {"<", TK_LT}, {">", TK_GT}, {"+", TK_PLUS},
            {"-", TK_MINUS}, {"*", TK_STAR}, {"/", TK_SLASH}, {"%", TK_PERCENT}, {"!", TK_BANG}, {"@", TK_AT},
            {".", TK_DOT},
        };
        bool found = false;
        for (size_t i = 0; i < sizeof punct / sizeof punct[0]; i++) {
            size_t n = strlen(punct[i].s);
            if (p->pos + n <= p->len && !memcmp(p->src + p->pos, punct[i].s, n)) {
                for (size_t j = 0; j < n; j++)
                    advance_char(p);
                t->kind = punct[i].k;
                found = true;
                break;
            }
        }
        if (!found) {
            if (c >= 0x20 && c < 0x7F)
                return perr(p, TL_ERR_FORMAT, t->line, t->col, "unexpected character '%c'", c);
            return perr(p, TL_ERR_FORMAT, t->line, t->col, "unexpected byte 0x%02x", c);
        }
    }
    t->len = p->pos - t->off;
    return st;
}

static bool is_kw(const parser *p, const char *kw) { return p->tok.kind == TK_KEYWORD && !strcmp(p->tok.str, kw); }

static tl_status unexpected(parser *p, const char *wanted) {
    if (p->st)
        return p->st;
    if (p->tok.kind == TK_EOF)
        return perr(p, TL_ERR_FORMAT, p->tok.line, p->tok.col, "expected %s, found end of input", wanted);
    int n = (int)(p->tok.len > 40 ? 40 : p->tok.len);
    return perr(p, TL_ERR_FORMAT, p->tok.line, p->tok.col, "expected %s, found '%.*s'", wanted, n,
                p->src + p->tok.off);
}

static tl_status expect(parser *p, tk kind, const char *what) {
    if (p->tok.kind != kind)
        return unexpected(p, what);
    return lex_next(p);
}

static tl_status expect_kw(parser *p, const char *kw) {
    if (!is_kw(p, kw)) {
        char w[32];
        snprintf(w, sizeof w, "'%s'", kw);
        return unexpected(p, w);
    }
    return lex_next(p);
}

/* Keywords naming constructs outside the fragment, for capability errors. */
static tl_status check_capability_kw(parser *p) {
    if (p->tok.kind != TK_KEYWORD)
        return TL_OK;
    const char *what = tl_aeon_unsupported_keyword(p->tok.str);
    if (what)
        return perr(p, TL_ERR_UNSUPPORTED, p->tok.line, p->tok.col, "%s ('%s') is outside the supported Aeon fragment",
                    what, p->tok.str);
    return TL_OK;
}

/* ---- expressions ---------------------------------------------------------- */

static tl_aeon_expr *new_expr(parser *p, tl_aeon_expr_kind k, int line, int col) {
    tl_aeon_expr *e = tl_arena_alloc(p->prog->arena, sizeof *e);
    if (!e) {
        perr(p, TL_ERR_NOMEM, line, col, "out of memory");
        return NULL;
    }
    e->kind = k;
    e->line = line;
    e->col = col;
    e->ty = -1;
    return e;
}

static tl_aeon_expr *parse_expr(parser *p);
static tl_status parse_type(parser *p, tl_aeon_rtype *out);

static bool starts_atom(const parser *p) {
    switch (p->tok.kind) {
    case TK_IDENT: case TK_INT: case TK_FLOAT: case TK_STRING: case TK_HOLE: case TK_LPAREN:
        return true;
    case TK_KEYWORD:
        return !strcmp(p->tok.str, "true") || !strcmp(p->tok.str, "false") || !strcmp(p->tok.str, "unit");
    default:
        return false;
    }
}

static tl_aeon_expr *parse_atom(parser *p) {
    token t = p->tok;
    tl_aeon_expr *e = NULL;
    if (check_capability_kw(p))
        return NULL;
    switch (t.kind) {
    case TK_INT:
        if ((e = new_expr(p, TL_AEON_E_INT, t.line, t.col)))
            e->ival = t.ival;
        break;
    case TK_FLOAT:
        if ((e = new_expr(p, TL_AEON_E_FLOAT, t.line, t.col)))
            e->fval = t.fval;
        break;
    case TK_STRING:
        if ((e = new_expr(p, TL_AEON_E_STRING, t.line, t.col))) {
            e->str = t.str;
            e->str_len = t.str_len;
        }
        break;
    case TK_IDENT:
        if ((e = new_expr(p, TL_AEON_E_VAR, t.line, t.col)))
            e->str = t.str;
        break;
    case TK_HOLE:
        if ((e = new_expr(p, TL_AEON_E_HOLE, t.line, t.col))) {
            e->str = t.str;
            e->ival = (int64_t)t.off; /* byte offset and length of `?name`, for splicing */
            e->str_len = t.len;
            p->n_holes++;
            if (p->n_holes > 1) {
                perr(p, TL_ERR_UNSUPPORTED, t.line, t.col,
                     "a second hole '?%s': the supported fragment has exactly one hole", t.str);
                return NULL;
            }
            p->hole = e;
        }
        break;
    case TK_KEYWORD:
        if (!strcmp(t.str, "true") || !strcmp(t.str, "false")) {
            if ((e = new_expr(p, TL_AEON_E_BOOL, t.line, t.col)))
                e->ival = t.str[0] == 't';
        } else if (!strcmp(t.str, "unit")) {
            e = new_expr(p, TL_AEON_E_UNIT, t.line, t.col);
        } else {
            unexpected(p, "an expression");
            return NULL;
        }
        break;
    case TK_LPAREN: {
        if (lex_next(p))
            return NULL;
        tl_aeon_expr *inner = parse_expr(p);
        if (!inner)
            return NULL;
        if (inner->kind == TL_AEON_E_IF)
            inner->ival = 1; /* written in parentheses: see check.c's let rule */
        if (p->tok.kind == TK_COLON) {
            if (lex_next(p))
                return NULL;
            tl_aeon_rtype rt;
            if (parse_type(p, &rt))
                return NULL;
            if (!(e = new_expr(p, TL_AEON_E_ANNOT, t.line, t.col)))
                return NULL;
            e->a = inner;
            e->ty = rt.ty;
        } else {
            e = inner;
        }
        if (expect(p, TK_RPAREN, "')'"))
            return NULL;
        return e;
    }
    default:
        unexpected(p, "an expression");
        return NULL;
    }
    if (!e || lex_next(p))
        return NULL;
    return e;
}

static tl_aeon_expr *parse_app(parser *p) {
    tl_aeon_expr *e = parse_atom(p);
    while (e && starts_atom(p)) {
        tl_aeon_expr *arg = parse_atom(p);
        if (!arg)
            return NULL;
        tl_aeon_expr *app = new_expr(p, TL_AEON_E_APP, e->line, e->col);
        if (!app)
            return NULL;
        app->a = e;
        app->b = arg;
        e = app;
    }
    return e;
}

typedef struct level_op { tk tok; tl_aeon_binop op; } level_op;
static const level_op ops_mul[] = {{TK_STAR, TL_AEON_OP_MUL}, {TK_SLASH, TL_AEON_OP_DIV}, {TK_PERCENT, TL_AEON_OP_MOD}};
static const level_op ops_add[] = {{TK_PLUS, TL_AEON_OP_ADD}, {TK_MINUS, TL_AEON_OP_SUB}};
static const level_op ops_cmp[] = {{TK_LT, TL_AEON_OP_LT}, {TK_LE, TL_AEON_OP_LE}, {TK_GT, TL_AEON_OP_GT}, {TK_GE, TL_AEON_OP_GE}};
static const level_op ops_eq[] = {{TK_EQ, TL_AEON_OP_EQ}, {TK_NE, TL_AEON_OP_NE}};

static int find_op(const parser *p, const level_op *ops, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p->tok.kind == ops[i].tok)
            return (int)i;
    return -1;
}

static tl_aeon_expr *binop(parser *p, tl_aeon_binop op, tl_aeon_expr *a, tl_aeon_expr *b, int line, int col) {
    tl_aeon_expr *e = new_expr(p, TL_AEON_E_BINOP, line, col);
    if (e) {
        e->op = op;
        e->a = a;
        e->b = b;
    }
    return e;
}

/* One binary level: left-associative (a - b - c is (a - b) - c), or
 * non-associative (at most one operator: a < b < c needs parentheses). */
static tl_aeon_expr *parse_level(parser *p, const level_op *ops, size_t n, tl_aeon_expr *(*operand)(parser *),
                                 bool assoc) {
    tl_aeon_expr *e = operand(p);
    int k;
    while (e && (k = find_op(p, ops, n)) >= 0) {
        int line = p->tok.line, col = p->tok.col;
        if (lex_next(p))
            return NULL;
        tl_aeon_expr *r = operand(p);
        if (!r)
            return NULL;
        e = binop(p, ops[k].op, e, r, line, col);
        if (!assoc) {
            if (e && find_op(p, ops, n) >= 0) {
                perr(p, TL_ERR_FORMAT, p->tok.line, p->tok.col, "operator is non-associative: add parentheses");
                return NULL;
            }
            break;
        }
    }
    return e;
}

static tl_aeon_expr *parse_mul(parser *p) { return parse_level(p, ops_mul, 3, parse_app, true); }
static tl_aeon_expr *parse_add(parser *p) { return parse_level(p, ops_add, 2, parse_mul, true); }
static tl_aeon_expr *parse_cmp(parser *p) { return parse_level(p, ops_cmp, 4, parse_add, false); }

/* Counts one level of recursion that does not pass through parse_expr. */
static bool deeper(parser *p) {
    if (++p->depth > MAX_NESTING) {
        perr(p, TL_ERR_LIMIT, p->tok.line, p->tok.col, "expression nested deeper than %d", MAX_NESTING);
        return false;
    }
    return true;
}

static tl_aeon_expr *parse_not(parser *p) {
    if (p->tok.kind == TK_BANG) {
        int line = p->tok.line, col = p->tok.col;
        if (lex_next(p) || !deeper(p))
            return NULL;
        tl_aeon_expr *a = parse_not(p);
        p->depth--;
        if (!a)
            return NULL;
        tl_aeon_expr *e = new_expr(p, TL_AEON_E_NOT, line, col);
        if (e)
            e->a = a;
        return e;
    }
    return parse_cmp(p);
}

static tl_aeon_expr *parse_eq(parser *p) { return parse_level(p, ops_eq, 2, parse_not, false); }

/* Right-associative level for && and ||. */
static tl_aeon_expr *parse_right(parser *p, tk tok, tl_aeon_binop op, tl_aeon_expr *(*operand)(parser *)) {
    tl_aeon_expr *e = operand(p);
    if (e && p->tok.kind == tok) {
        int line = p->tok.line, col = p->tok.col;
        if (lex_next(p) || !deeper(p))
            return NULL;
        tl_aeon_expr *r = parse_right(p, tok, op, operand);
        p->depth--;
        if (!r)
            return NULL;
        e = binop(p, op, e, r, line, col);
    }
    return e;
}

static tl_aeon_expr *parse_and(parser *p) { return parse_right(p, TK_ANDAND, TL_AEON_OP_AND, parse_eq); }
static tl_aeon_expr *parse_or(parser *p) { return parse_right(p, TK_OROR, TL_AEON_OP_OR, parse_and); }

static const char *parse_binder(parser *p) {
    if (p->tok.kind != TK_IDENT || strchr(p->tok.str, '.')) {
        unexpected(p, "a binder name");
        return NULL;
    }
    const char *name = p->tok.str;
    if (lex_next(p))
        return NULL;
    return name;
}

static tl_aeon_expr *parse_expr(parser *p) {
    if (++p->depth > MAX_NESTING) {
        perr(p, TL_ERR_LIMIT, p->tok.line, p->tok.col, "expression nested deeper than %d", MAX_NESTING);
        return NULL;
    }
    tl_aeon_expr *e = NULL;
    token t = p->tok;
    if (check_capability_kw(p))
        return NULL;
    if (p->tok.kind == TK_MINUS && p->candidate) {
        unexpected(p, "an expression (a candidate has no unary minus: write 0 - e)");
        return NULL;
    }
    if (p->tok.kind == TK_MINUS) {
        /* Aeon's `expression : "-" expression_i`: a minus starts an
         * expression and negates all of it (`-5 + 3` is `-(5 + 3)`); it is
         * not an operand (`1 + -2` is a syntax error). */
        if (lex_next(p))
            return NULL;
        if (p->tok.kind == TK_MINUS) {
            unexpected(p, "an expression after '-'");
            return NULL;
        }
        tl_aeon_expr *a = parse_expr(p);
        p->depth--;
        if (!a)
            return NULL;
        if ((e = new_expr(p, TL_AEON_E_NEG, t.line, t.col)))
            e->a = a;
        return p->st ? NULL : e;
    }
    if (is_kw(p, "if")) {
        if (lex_next(p))
            return NULL;
        tl_aeon_expr *c = parse_expr(p), *a = NULL, *b = NULL;
        if (c && !expect_kw(p, "then") && (a = parse_expr(p)) && !expect_kw(p, "else") && (b = parse_expr(p))) {
            if ((e = new_expr(p, TL_AEON_E_IF, t.line, t.col))) {
                e->a = c;
                e->b = a;
                e->c = b;
            }
        }
    } else if (is_kw(p, "let")) {
        if (lex_next(p))
            return NULL;
        const char *name = parse_binder(p);
        tl_aeon_type ty = -1;
        if (name && p->tok.kind == TK_COLON) {
            tl_aeon_rtype rt;
            if (lex_next(p) || parse_type(p, &rt))
                return NULL;
            ty = rt.ty;
        }
        tl_aeon_expr *v = NULL, *body = NULL;
        if (name && !expect(p, TK_ASSIGN, "':='") && (v = parse_expr(p))) {
            if (is_kw(p, "in") || p->tok.kind == TK_SEMI) {
                if (lex_next(p))
                    return NULL;
                body = parse_expr(p);
            } else {
                unexpected(p, "'in' or ';'");
            }
        }
        if (body && (e = new_expr(p, TL_AEON_E_LET, t.line, t.col))) {
            e->str = name;
            e->a = v;
            e->b = body;
            e->ty = ty;
        }
    } else if (is_kw(p, "fun")) {
        if (lex_next(p))
            return NULL;
        const char *name = parse_binder(p);
        tl_aeon_type ty = -1;
        if (name && p->tok.kind == TK_COLON) {
            tl_aeon_rtype rt;
            if (lex_next(p) || parse_type(p, &rt))
                return NULL;
            ty = rt.ty;
        }
        tl_aeon_expr *body = NULL;
        if (name && !expect(p, TK_DARROW, "'=>'") && (body = parse_expr(p))) {
            if ((e = new_expr(p, TL_AEON_E_FUN, t.line, t.col))) {
                e->str = name;
                e->a = body;
                e->ty = ty;
            }
        }
    } else {
        e = parse_or(p);
    }
    p->depth--;
    return p->st ? NULL : e;
}

/* ---- types ---------------------------------------------------------------- */

/* T := Base | {x:T | pred} | (x:T) -> T | (T). Base names outside the
 * fragment (type variables, ADTs, List, ...) are capability errors. */
static tl_status parse_type(parser *p, tl_aeon_rtype *out) {
    memset(out, 0, sizeof *out);
    out->ty = -1;
    if (++p->depth > MAX_NESTING)
        return perr(p, TL_ERR_LIMIT, p->tok.line, p->tok.col, "type nested deeper than %d", MAX_NESTING);
    token t = p->tok;
    if (t.kind == TK_KEYWORD && !strcmp(t.str, "forall"))
        return perr(p, TL_ERR_UNSUPPORTED, t.line, t.col, "polymorphism ('forall') is outside the supported Aeon fragment");
    if (t.kind == TK_IDENT) {
        static const char *base[] = {"Int", "Bool", "Float", "String", "Unit"};
        for (int i = 0; i < TL_AEON_N_BASE; i++)
            if (!strcmp(t.str, base[i]))
                out->ty = i;
        if (out->ty < 0) {
            /* Not an error yet: a def using it is only filtered from contexts. */
            out->ty = TL_AEON_T_UNSUPPORTED;
            if (!p->unsupported) {
                char msg[200];
                snprintf(msg, sizeof msg, "%d:%d: type '%.60s' is outside the supported fragment", t.line, t.col,
                         t.str);
                p->unsupported = tl_arena_strndup(p->prog->arena, msg, strlen(msg));
            }
        }
        p->depth--;
        return lex_next(p);
    }
    if (t.kind == TK_LBRACE) {
        if (lex_next(p))
            return p->st;
        if (p->tok.kind != TK_IDENT)
            return unexpected(p, "a refinement binder");
        out->binder = p->tok.str;
        if (lex_next(p) || expect(p, TK_COLON, "':'"))
            return p->st;
        tl_aeon_rtype inner;
        if (parse_type(p, &inner) || expect(p, TK_BAR, "'|'"))
            return p->st;
        out->ty = inner.ty;
        if (!(out->pred = parse_expr(p)))
            return p->st;
        p->depth--;
        return expect(p, TK_RBRACE, "'}'");
    }
    if (t.kind == TK_LPAREN) {
        if (lex_next(p))
            return p->st;
        tl_aeon_rtype arg;
        if (p->tok.kind == TK_IDENT) {
            /* (x:T) -> U, or a parenthesized base type (Int) */
            parser save = *p;
            if (lex_next(p))
                return p->st;
            if (p->tok.kind == TK_COLON) {
                if (lex_next(p) || parse_type(p, &arg) || expect(p, TK_RPAREN, "')'"))
                    return p->st;
                if (p->tok.kind != TK_ARROW)
                    return unexpected(p, "'->' after a named parameter type");
                if (lex_next(p))
                    return p->st;
                tl_aeon_rtype res;
                if (parse_type(p, &res))
                    return p->st;
                if (arg.ty == TL_AEON_T_UNSUPPORTED || res.ty == TL_AEON_T_UNSUPPORTED) {
                    out->ty = TL_AEON_T_UNSUPPORTED;
                    p->depth--;
                    return TL_OK;
                }
                out->ty = tl_aeon_type_arrow(&p->prog->types, arg.ty, res.ty);
                if (out->ty < 0)
                    return perr(p, TL_ERR_LIMIT, t.line, t.col, "too many distinct types");
                p->depth--;
                return TL_OK;
            }
            *p = save;
        }
        if (parse_type(p, out) || expect(p, TK_RPAREN, "')'"))
            return p->st;
        if (p->tok.kind == TK_ARROW)
            return perr(p, TL_ERR_FORMAT, p->tok.line, p->tok.col,
                        "a function type needs a named parameter: (x:T) -> U");
        p->depth--;
        return TL_OK;
    }
    return unexpected(p, "a type");
}

/* ---- program -------------------------------------------------------------- */

static tl_status parse_decorator(parser *p, tl_aeon_decorator *d) {
    d->line = p->tok.line;
    d->col = p->tok.col;
    if (lex_next(p))
        return p->st;
    if (p->tok.kind != TK_IDENT)
        return unexpected(p, "a decorator name");
    d->name = p->tok.str;
    if (lex_next(p))
        return p->st;
    if (p->tok.kind != TK_LPAREN)
        return TL_OK;
    if (lex_next(p))
        return p->st;
    if (p->tok.kind == TK_RPAREN)
        return lex_next(p);
    if (p->tok.kind == TK_STRING) {
        d->text = p->tok.str;
    }
    if (!(d->arg = parse_expr(p)))
        return p->st;
    while (p->tok.kind == TK_COMMA) {
        if (lex_next(p) || !parse_expr(p))
            return p->st;
    }
    return expect(p, TK_RPAREN, "')'");
}

static tl_status parse_def(parser *p, tl_aeon_def *d, tl_aeon_decorator *decos, int n_decos) {
    d->decos = decos;
    d->n_decos = n_decos;
    d->fn_type = -1;
    if (lex_next(p))
        return p->st;
    if (p->tok.kind != TK_IDENT)
        return unexpected(p, "a definition name");
    d->name = p->tok.str;
    d->line = p->tok.line;
    d->col = p->tok.col;
    if (lex_next(p))
        return p->st;
    int cap = 0;
    while (p->tok.kind == TK_LPAREN) {
        if (lex_next(p))
            return p->st;
        if (p->tok.kind != TK_IDENT)
            return unexpected(p, "a parameter name");
        if (d->n_params == cap) {
            cap = cap ? cap * 2 : 4;
            tl_aeon_param *np = tl_arena_alloc(p->prog->arena, sizeof *np * (size_t)cap);
            if (!np)
                return perr(p, TL_ERR_NOMEM, d->line, d->col, "out of memory");
            if (d->n_params)
                memcpy(np, d->params, sizeof *np * (size_t)d->n_params);
            d->params = np;
        }
        tl_aeon_param *pa = &d->params[d->n_params++];
        pa->name = p->tok.str;
        if (lex_next(p) || expect(p, TK_COLON, "':'") || parse_type(p, &pa->rt) || expect(p, TK_RPAREN, "')'"))
            return p->st;
    }
    if (p->tok.kind == TK_KEYWORD && !strcmp(p->tok.str, "forall"))
        return check_capability_kw(p) ? p->st : perr(p, TL_ERR_UNSUPPORTED, p->tok.line, p->tok.col, "polymorphism");
    if (expect(p, TK_COLON, "':'") || parse_type(p, &d->result))
        return p->st;
    if (expect(p, TK_ASSIGN, "':='"))
        return p->st;
    d->unsupported = p->unsupported;
    p->unsupported = NULL;
    if (!(d->body = parse_expr(p)))
        return p->st;
    if (p->unsupported && !d->unsupported)
        d->unsupported = p->unsupported;
    p->unsupported = NULL;
    if (p->tok.kind == TK_SEMI)
        return lex_next(p);
    return TL_OK;
}

tl_status tl_aeon_parse_program(tl_aeon_program *prog, tl_error *err, tl_aeon_expr **hole_out) {
    parser p = {.prog = prog, .src = prog->source, .len = prog->source_len, .line = 1, .col = 1, .err = err};
    if (lex_next(&p))
        return p.st;
    int cap = 0;
    tl_aeon_decorator decos[64];
    int n_decos = 0;
    while (p.tok.kind != TK_EOF) {
        if (is_kw(&p, "import") || is_kw(&p, "open")) {
            if (lex_next(&p))
                return p.st;
            if (p.tok.kind != TK_IDENT && p.tok.kind != TK_STRING)
                return unexpected(&p, "a module name");
            if (lex_next(&p))
                return p.st;
            if (p.tok.kind == TK_SEMI && lex_next(&p))
                return p.st;
            continue;
        }
        if (p.tok.kind == TK_AT) {
            if (n_decos == 64)
                return perr(&p, TL_ERR_LIMIT, p.tok.line, p.tok.col, "more than 64 decorators on one definition");
            memset(&decos[n_decos], 0, sizeof decos[0]);
            if (parse_decorator(&p, &decos[n_decos++]))
                return p.st;
            continue;
        }
        if (is_kw(&p, "def")) {
            if (prog->n_defs == cap) {
                cap = cap ? cap * 2 : 8;
                tl_aeon_def *nd = tl_arena_alloc(prog->arena, sizeof *nd * (size_t)cap);
                if (!nd)
                    return perr(&p, TL_ERR_NOMEM, p.tok.line, p.tok.col, "out of memory");
                if (prog->n_defs)
                    memcpy(nd, prog->defs, sizeof *nd * (size_t)prog->n_defs);
                prog->defs = nd;
            }
            tl_aeon_decorator *dc = NULL;
            if (n_decos) {
                dc = tl_arena_alloc(prog->arena, sizeof *dc * (size_t)n_decos);
                if (!dc)
                    return perr(&p, TL_ERR_NOMEM, p.tok.line, p.tok.col, "out of memory");
                memcpy(dc, decos, sizeof *dc * (size_t)n_decos);
            }
            tl_aeon_def *d = &prog->defs[prog->n_defs];
            memset(d, 0, sizeof *d);
            int holes_before = p.n_holes;
            if (parse_def(&p, d, dc, n_decos))
                return p.st;
            if (p.n_holes > holes_before)
                prog->hole_def = prog->n_defs;
            prog->n_defs++;
            n_decos = 0;
            continue;
        }
        if (check_capability_kw(&p))
            return p.st;
        return unexpected(&p, "'def', 'import' or a decorator");
    }
    *hole_out = p.hole;
    return TL_OK;
}

tl_status tl_aeon_parse_expr(tl_aeon_program *prog, const char *text, size_t len, tl_aeon_expr **out, tl_error *err) {
    parser p = {.prog = prog, .src = text, .len = len, .line = 1, .col = 1, .err = err, .candidate = true};
    if (lex_next(&p))
        return p.st;
    tl_aeon_expr *e = parse_expr(&p);
    if (!e)
        return p.st ? p.st : tl_error_set(err, TL_ERR_INTERNAL, "aeon: parse failed");
    if (p.tok.kind != TK_EOF)
        return unexpected(&p, "end of the expression");
    if (p.n_holes)
        return tl_error_set(err, TL_ERR_INVALID, "aeon: a candidate may not contain a hole");
    *out = e;
    return TL_OK;
}
