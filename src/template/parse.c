/* parse.c: tokens -> AST, a recursive-descent parser following Jinja2's
 * grammar and operator precedence (condexpr < or < and < not < compare <
 * + - < ~ < * / // % < ** < unary - < postfix . [] () | is).
 * Nesting is bounded (PARSE_MAX_DEPTH) so hostile input cannot overflow the
 * C stack; every error names line:column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"
#include "util/error.h"

#define PARSE_MAX_DEPTH 200

typedef struct parser {
    tl_template *t;
    const tl_tok *tk;
    size_t n, i;
    int depth;
    tl_error *err;
    jmp_buf fail;
} parser;

_Noreturn static void perr(parser *P, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
_Noreturn static void perr(parser *P, size_t pos, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    tl_tpl_linecol(P->t->src, P->t->len, pos, &line, &col);
    tl_error_set(P->err, TL_ERR_FORMAT, "template:%d:%d: %s", line, col, msg);
    longjmp(P->fail, 1);
}

static void *palloc(parser *P, size_t n) {
    void *p = tl_arena_alloc(&P->t->arena, n);
    if (!p) {
        tl_error_set(P->err, TL_ERR_NOMEM, "template: out of memory");
        longjmp(P->fail, 1);
    }
    return p;
}

static tl_node *new_node(parser *P, tl_node_kind k, uint32_t pos) {
    tl_node *n = palloc(P, sizeof *n);
    n->kind = (uint8_t)k;
    n->pos = pos;
    return n;
}

/* growable arrays built in the arena */
typedef struct nvec {
    tl_node **v;
    size_t n, cap;
} nvec;

/* A block of cap items holding the n items of old: how the parser's arrays
 * grow (doubling, from 4). */
static void *presize(parser *P, const void *old, size_t n, size_t cap, size_t elem) {
    void *v = palloc(P, cap * elem);
    if (n)
        memcpy(v, old, n * elem);
    return v;
}

static void nvec_push(parser *P, nvec *a, tl_node *x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->v = presize(P, a->v, a->n, a->cap, sizeof *a->v);
    }
    a->v[a->n++] = x;
}

typedef struct svec {
    tl_str *v;
    size_t n, cap;
} svec;

static void svec_push(parser *P, svec *a, tl_str x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->v = presize(P, a->v, a->n, a->cap, sizeof *a->v);
    }
    a->v[a->n++] = x;
}

/* ---- token access ------------------------------------------------------------ */

static const tl_tok *cur(parser *P) { return &P->tk[P->i]; }
static const tl_tok *peek(parser *P, size_t k) { return &P->tk[P->i + k < P->n ? P->i + k : P->n - 1]; }
static void advance(parser *P) {
    if (P->i + 1 < P->n)
        P->i++;
}
static bool tok_is(const tl_tok *t, tl_tok_kind k, const char *text) {
    if (t->kind != k)
        return false;
    if (!text)
        return true;
    size_t m = strlen(text);
    return t->len == m && !memcmp(t->text, text, m);
}
static bool is_op(parser *P, const char *op) { return tok_is(cur(P), TK_OP, op); }
static bool is_name(parser *P, const char *name) { return tok_is(cur(P), TK_NAME, name); }
static bool skip_op(parser *P, const char *op) {
    if (is_op(P, op)) {
        advance(P);
        return true;
    }
    return false;
}
static bool skip_name(parser *P, const char *name) {
    if (is_name(P, name)) {
        advance(P);
        return true;
    }
    return false;
}

static const char *describe(const tl_tok *t, char *buf, size_t cap) {
    switch (t->kind) {
    case TK_EOF: return "end of template";
    case TK_DATA: return "template text";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_BLOCK_END: return "'%}'";
    case TK_STRING: return "a string";
    case TK_INT: case TK_FLOAT: return "a number";
    default:
        snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text);
        return buf;
    }
}

static void expect_op(parser *P, const char *op) {
    if (!skip_op(P, op)) {
        char b[64];
        perr(P, cur(P)->pos, "expected '%s', got %s", op, describe(cur(P), b, sizeof b));
    }
}

static tl_str expect_ident(parser *P) {
    const tl_tok *t = cur(P);
    if (t->kind != TK_NAME) {
        char b[64];
        perr(P, t->pos, "expected a name, got %s", describe(t, b, sizeof b));
    }
    advance(P);
    return (tl_str){t->text, t->len};
}

static void expect_block_end(parser *P) {
    if (cur(P)->kind != TK_BLOCK_END) {
        char b[64];
        perr(P, cur(P)->pos, "expected end of statement '%%}', got %s", describe(cur(P), b, sizeof b));
    }
    advance(P);
}

static void enter(parser *P) {
    if (++P->depth > PARSE_MAX_DEPTH)
        perr(P, cur(P)->pos, "template nested too deeply (more than %d levels)", PARSE_MAX_DEPTH);
}
static void leave(parser *P) { P->depth--; }

/* ---- expressions --------------------------------------------------------------- */

static tl_node *parse_expr(parser *P, bool with_condexpr);
static tl_node *parse_unary(parser *P, bool with_filter);

static tl_node *lit_node(parser *P, uint32_t pos, tl_val v) {
    tl_node *n = new_node(P, N_LIT, pos);
    n->lit = v;
    return n;
}

/* (args, kw=val) — the '(' is current */
static void parse_call_args(parser *P, tl_node *call) {
    expect_op(P, "(");
    nvec args = {0}, kwv = {0};
    svec kwn = {0};
    while (!is_op(P, ")")) {
        if (args.n + kwv.n)
            expect_op(P, ",");
        if (is_op(P, ")"))
            break; /* trailing comma */
        if (cur(P)->kind == TK_NAME && tok_is(peek(P, 1), TK_OP, "=")) {
            tl_str name = expect_ident(P);
            advance(P);
            svec_push(P, &kwn, name);
            nvec_push(P, &kwv, parse_expr(P, true));
        } else {
            if (kwv.n)
                perr(P, cur(P)->pos, "positional argument after keyword argument");
            nvec_push(P, &args, parse_expr(P, true));
        }
    }
    expect_op(P, ")");
    call->kids = args.v;
    call->n_kids = args.n;
    call->kwvals = kwv.v;
    call->kwnames = kwn.v;
    call->n_kw = kwn.n;
}

/* A list [a, b] or dict {k: v} display after its opening bracket: items
 * separated by commas (a trailing one allowed) up to close; a dict's kids
 * alternate keys and values. */
static tl_node *parse_display(parser *P, uint32_t pos, const char *close, tl_node_kind kind) {
    advance(P);
    nvec items = {0};
    while (!is_op(P, close)) {
        if (items.n)
            expect_op(P, ",");
        if (is_op(P, close))
            break;
        nvec_push(P, &items, parse_expr(P, true));
        if (kind == N_DICT) {
            expect_op(P, ":");
            nvec_push(P, &items, parse_expr(P, true));
        }
    }
    expect_op(P, close);
    tl_node *n = new_node(P, kind, pos);
    n->kids = items.v;
    n->n_kids = items.n;
    return n;
}

static tl_node *parse_primary(parser *P) {
    const tl_tok *t = cur(P);
    uint32_t pos = t->pos;
    char b[64];
    switch (t->kind) {
    case TK_NAME:
        advance(P);
        if (tok_is(t, TK_NAME, "true") || tok_is(t, TK_NAME, "True"))
            return lit_node(P, pos, tl_val_bool(true));
        if (tok_is(t, TK_NAME, "false") || tok_is(t, TK_NAME, "False"))
            return lit_node(P, pos, tl_val_bool(false));
        if (tok_is(t, TK_NAME, "none") || tok_is(t, TK_NAME, "None"))
            return lit_node(P, pos, tl_val_none());
        {
            tl_node *n = new_node(P, N_NAME, pos);
            n->name = (tl_str){t->text, t->len};
            return n;
        }
    case TK_STRING: {
        /* adjacent literals concatenate */
        size_t total = 0, k = P->i;
        while (P->tk[k].kind == TK_STRING)
            total += P->tk[k++].len;
        char *s = palloc(P, total + 1);
        size_t o = 0;
        while (cur(P)->kind == TK_STRING) {
            memcpy(s + o, cur(P)->text, cur(P)->len);
            o += cur(P)->len;
            advance(P);
        }
        tl_val v = {.t = V_STR, .n = (uint32_t)total};
        v.u.s = s;
        return lit_node(P, pos, v);
    }
    case TK_INT:
        advance(P);
        return lit_node(P, pos, tl_val_int(t->ival));
    case TK_FLOAT:
        advance(P);
        return lit_node(P, pos, tl_val_float(t->fval));
    case TK_OP:
        if (tok_is(t, TK_OP, "(")) {
            advance(P);
            if (skip_op(P, ")"))
                return new_node(P, N_TUPLE, pos);
            tl_node *e = parse_expr(P, true);
            if (is_op(P, ",")) {
                nvec items = {0};
                nvec_push(P, &items, e);
                while (skip_op(P, ",")) {
                    if (is_op(P, ")"))
                        break;
                    nvec_push(P, &items, parse_expr(P, true));
                }
                e = new_node(P, N_TUPLE, pos);
                e->kids = items.v;
                e->n_kids = items.n;
            }
            expect_op(P, ")");
            return e;
        }
        if (tok_is(t, TK_OP, "["))
            return parse_display(P, pos, "]", N_LIST);
        if (tok_is(t, TK_OP, "{"))
            return parse_display(P, pos, "}", N_DICT);
        /* fallthrough */
    default:
        perr(P, pos, "unexpected %s in expression", describe(t, b, sizeof b));
    }
}

static tl_node *parse_subscript_arg(parser *P) {
    uint32_t pos = cur(P)->pos;
    tl_node *parts[3] = {NULL, NULL, NULL};
    if (!is_op(P, ":")) {
        parts[0] = parse_expr(P, true);
        if (!is_op(P, ":"))
            return parts[0];
    }
    /* a slice */
    tl_node *s = new_node(P, N_SLICE, pos);
    advance(P); /* ':' */
    if (!is_op(P, "]") && !is_op(P, ",") && !is_op(P, ":"))
        parts[1] = parse_expr(P, true);
    if (skip_op(P, ":") && !is_op(P, "]") && !is_op(P, ","))
        parts[2] = parse_expr(P, true);
    s->b = parts[0];
    s->c = parts[1];
    s->d = parts[2];
    return s;
}

static tl_node *parse_postfix(parser *P, tl_node *node) {
    for (;;) {
        const tl_tok *t = cur(P);
        if (tok_is(t, TK_OP, ".")) {
            advance(P);
            const tl_tok *a = cur(P);
            if (a->kind == TK_NAME) {
                advance(P);
                tl_node *n = new_node(P, N_ATTR, a->pos);
                n->a = node;
                n->name = (tl_str){a->text, a->len};
                node = n;
            } else if (a->kind == TK_INT) {
                advance(P);
                tl_node *n = new_node(P, N_ITEM, a->pos);
                n->a = node;
                n->b = lit_node(P, a->pos, tl_val_int(a->ival));
                node = n;
            } else {
                char b[64];
                perr(P, a->pos, "expected an attribute name after '.', got %s", describe(a, b, sizeof b));
            }
        } else if (tok_is(t, TK_OP, "[")) {
            advance(P);
            nvec args = {0};
            while (!is_op(P, "]")) {
                if (args.n)
                    expect_op(P, ",");
                if (is_op(P, "]"))
                    break;
                nvec_push(P, &args, parse_subscript_arg(P));
            }
            expect_op(P, "]");
            if (!args.n)
                perr(P, t->pos, "empty subscript");
            tl_node *key = args.v[0];
            if (args.n > 1) {
                for (size_t k = 0; k < args.n; k++)
                    if (args.v[k]->kind == N_SLICE)
                        perr(P, args.v[k]->pos, "a slice inside a tuple subscript is not supported");
                key = new_node(P, N_TUPLE, t->pos);
                key->kids = args.v;
                key->n_kids = args.n;
            }
            if (key->kind == N_SLICE) {
                key->a = node;
                node = key;
            } else {
                tl_node *n = new_node(P, N_ITEM, t->pos);
                n->a = node;
                n->b = key;
                node = n;
            }
        } else if (tok_is(t, TK_OP, "(")) {
            tl_node *n = new_node(P, N_CALL, t->pos);
            n->a = node;
            parse_call_args(P, n);
            node = n;
        } else
            return node;
    }
}

static tl_str dotted_name(parser *P) {
    tl_str name = expect_ident(P);
    while (is_op(P, ".") && peek(P, 1)->kind == TK_NAME) {
        advance(P);
        tl_str more = expect_ident(P);
        name.n = (size_t)(more.s + more.n - name.s);
    }
    return name;
}

/* '|' name(args) — current is the name */
static tl_node *parse_filter_call(parser *P, tl_node *subject) {
    uint32_t pos = cur(P)->pos;
    tl_node *f = new_node(P, N_FILTER, pos);
    f->name = dotted_name(P);
    f->a = subject;
    if (is_op(P, "("))
        parse_call_args(P, f);
    return f;
}

static tl_node *parse_filter_expr(parser *P, tl_node *node) {
    for (;;) {
        if (skip_op(P, "|"))
            node = parse_filter_call(P, node);
        else if (is_name(P, "is")) {
            uint32_t pos = cur(P)->pos;
            advance(P);
            tl_node *t = new_node(P, N_TEST, pos);
            t->negated = skip_name(P, "not");
            t->name = dotted_name(P);
            t->a = node;
            const tl_tok *c = cur(P);
            if (is_op(P, "("))
                parse_call_args(P, t);
            else if ((c->kind == TK_NAME || c->kind == TK_STRING || c->kind == TK_INT || c->kind == TK_FLOAT ||
                      tok_is(c, TK_OP, "[") || tok_is(c, TK_OP, "{")) &&
                     !tok_is(c, TK_NAME, "else") && !tok_is(c, TK_NAME, "or") && !tok_is(c, TK_NAME, "and")) {
                if (tok_is(c, TK_NAME, "is"))
                    perr(P, c->pos, "cannot chain multiple tests with 'is'");
                tl_node *arg = parse_postfix(P, parse_primary(P));
                t->kids = palloc(P, sizeof *t->kids);
                t->kids[0] = arg;
                t->n_kids = 1;
            }
            node = t;
        } else if (is_op(P, "(")) {
            tl_node *n = new_node(P, N_CALL, cur(P)->pos);
            n->a = node;
            parse_call_args(P, n);
            node = n;
        } else
            return node;
    }
}

static tl_node *parse_unary(parser *P, bool with_filter) {
    enter(P);
    const tl_tok *t = cur(P);
    tl_node *node;
    if (tok_is(t, TK_OP, "-") || tok_is(t, TK_OP, "+")) {
        advance(P);
        node = new_node(P, tok_is(t, TK_OP, "-") ? N_NEG : N_POS, t->pos);
        node->a = parse_unary(P, false);
    } else
        node = parse_primary(P);
    node = parse_postfix(P, node);
    if (with_filter)
        node = parse_filter_expr(P, node);
    leave(P);
    return node;
}

static tl_node *bin(parser *P, tl_op op, uint32_t pos, tl_node *l, tl_node *r) {
    tl_node *n = new_node(P, N_BIN, pos);
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static tl_node *parse_pow(parser *P) {
    tl_node *l = parse_unary(P, true);
    while (is_op(P, "**")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        l = bin(P, OP_POW, pos, l, parse_unary(P, true));
    }
    return l;
}

static tl_node *parse_math2(parser *P) {
    tl_node *l = parse_pow(P);
    for (;;) {
        uint32_t pos = cur(P)->pos;
        tl_op op;
        if (is_op(P, "*"))
            op = OP_MUL;
        else if (is_op(P, "/"))
            op = OP_DIV;
        else if (is_op(P, "//"))
            op = OP_FDIV;
        else if (is_op(P, "%"))
            op = OP_MOD;
        else
            return l;
        advance(P);
        l = bin(P, op, pos, l, parse_pow(P));
    }
}

static tl_node *parse_concat(parser *P) {
    tl_node *l = parse_math2(P);
    while (is_op(P, "~")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        l = bin(P, OP_CONCAT, pos, l, parse_math2(P));
    }
    return l;
}

static tl_node *parse_math1(parser *P) {
    tl_node *l = parse_concat(P);
    for (;;) {
        uint32_t pos = cur(P)->pos;
        tl_op op;
        if (is_op(P, "+"))
            op = OP_ADD;
        else if (is_op(P, "-"))
            op = OP_SUB;
        else
            return l;
        advance(P);
        l = bin(P, op, pos, l, parse_concat(P));
    }
}

static tl_node *parse_compare(parser *P) {
    uint32_t pos = cur(P)->pos;
    tl_node *first = parse_math1(P);
    nvec operands = {0};
    uint8_t ops[64];
    size_t n_ops = 0;
    for (;;) {
        int op = -1;
        if (is_op(P, "=="))
            op = CMP_EQ;
        else if (is_op(P, "!="))
            op = CMP_NE;
        else if (is_op(P, "<"))
            op = CMP_LT;
        else if (is_op(P, "<="))
            op = CMP_LE;
        else if (is_op(P, ">"))
            op = CMP_GT;
        else if (is_op(P, ">="))
            op = CMP_GE;
        else if (is_name(P, "in"))
            op = CMP_IN;
        else if (is_name(P, "not") && tok_is(peek(P, 1), TK_NAME, "in")) {
            advance(P);
            op = CMP_NOTIN;
        }
        if (op < 0)
            break;
        if (n_ops == sizeof ops)
            perr(P, cur(P)->pos, "too many chained comparisons");
        advance(P);
        if (!operands.n)
            nvec_push(P, &operands, first);
        ops[n_ops++] = (uint8_t)op;
        nvec_push(P, &operands, parse_math1(P));
    }
    if (!n_ops)
        return first;
    tl_node *n = new_node(P, N_CMP, pos);
    n->kids = operands.v;
    n->n_kids = operands.n;
    n->cmp_ops = palloc(P, n_ops);
    memcpy(n->cmp_ops, ops, n_ops);
    return n;
}

static tl_node *parse_not(parser *P) {
    if (is_name(P, "not")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        enter(P);
        tl_node *n = new_node(P, N_NOT, pos);
        n->a = parse_not(P);
        leave(P);
        return n;
    }
    return parse_compare(P);
}

static tl_node *parse_and(parser *P) {
    tl_node *l = parse_not(P);
    while (is_name(P, "and")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        tl_node *n = new_node(P, N_AND, pos);
        n->a = l;
        n->b = parse_not(P);
        l = n;
    }
    return l;
}

static tl_node *parse_or(parser *P) {
    tl_node *l = parse_and(P);
    while (is_name(P, "or")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        tl_node *n = new_node(P, N_OR, pos);
        n->a = l;
        n->b = parse_and(P);
        l = n;
    }
    return l;
}

static tl_node *parse_expr(parser *P, bool with_condexpr) {
    enter(P);
    tl_node *e = parse_or(P);
    while (with_condexpr && is_name(P, "if")) {
        uint32_t pos = cur(P)->pos;
        advance(P);
        tl_node *c = new_node(P, N_COND, pos);
        c->a = e;
        c->b = parse_or(P);
        if (skip_name(P, "else"))
            c->c = parse_expr(P, true);
        e = c;
    }
    leave(P);
    return e;
}

/* expr [, expr ...] as a tuple when there is a comma */
static tl_node *parse_tuple(parser *P, bool with_condexpr) {
    uint32_t pos = cur(P)->pos;
    tl_node *e = parse_expr(P, with_condexpr);
    if (!is_op(P, ","))
        return e;
    nvec items = {0};
    nvec_push(P, &items, e);
    while (skip_op(P, ",")) {
        if (cur(P)->kind == TK_BLOCK_END || cur(P)->kind == TK_VAR_END || is_op(P, ")"))
            break;
        nvec_push(P, &items, parse_expr(P, with_condexpr));
    }
    tl_node *t = new_node(P, N_TUPLE, pos);
    t->kids = items.v;
    t->n_kids = items.n;
    return t;
}

/* ---- statements ---------------------------------------------------------------- */

static tl_node *parse_body(parser *P, const char *const *ends, const char **which);

/* names: a | a, b | (a, b) */
static void parse_targets(parser *P, tl_node *n) {
    svec names = {0};
    bool paren = skip_op(P, "(");
    do {
        if (paren && is_op(P, ")"))
            break;
        svec_push(P, &names, expect_ident(P));
    } while (skip_op(P, ","));
    if (paren)
        expect_op(P, ")");
    n->names = names.v;
    n->n_names = names.n;
}

static tl_node *parse_if(parser *P, uint32_t pos) {
    tl_node *n = new_node(P, N_IF, pos);
    n->a = parse_tuple(P, true);
    expect_block_end(P);
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *which;
    n->b = parse_body(P, ends, &which);
    uint32_t wpos = cur(P)->pos;
    advance(P); /* the keyword */
    if (!strcmp(which, "elif")) {
        enter(P);
        n->c = parse_if(P, wpos);
        leave(P);
        return n;
    }
    if (!strcmp(which, "else")) {
        expect_block_end(P);
        static const char *const end2[] = {"endif", NULL};
        n->c = parse_body(P, end2, &which);
        advance(P);
    }
    expect_block_end(P);
    return n;
}

static tl_node *parse_for(parser *P, uint32_t pos) {
    tl_node *n = new_node(P, N_FOR, pos);
    parse_targets(P, n);
    if (!skip_name(P, "in"))
        perr(P, cur(P)->pos, "expected 'in' in for statement");
    n->a = parse_tuple(P, false);
    if (skip_name(P, "if"))
        n->d = parse_expr(P, true);
    if (skip_name(P, "recursive"))
        n->negated = 1;
    expect_block_end(P);
    static const char *const ends[] = {"else", "endfor", NULL};
    const char *which;
    n->b = parse_body(P, ends, &which);
    advance(P);
    if (!strcmp(which, "else")) {
        expect_block_end(P);
        static const char *const end2[] = {"endfor", NULL};
        n->c = parse_body(P, end2, &which);
        advance(P);
    }
    expect_block_end(P);
    return n;
}

/* filter chain after 'set x |' or 'filter': name(args) | name ... with NULL subjects */
static tl_node *parse_filter_chain(parser *P) {
    tl_node *chain = NULL;
    do {
        chain = parse_filter_call(P, chain);
    } while (skip_op(P, "|"));
    return chain;
}

static tl_node *parse_set(parser *P, uint32_t pos) {
    /* set ns.attr = ... | set a, b = ... | set a = ... | set a %}...{% endset */
    if (cur(P)->kind == TK_NAME && tok_is(peek(P, 1), TK_OP, ".")) {
        tl_node *n = new_node(P, N_SET, pos);
        n->names = palloc(P, sizeof *n->names);
        n->names[0] = expect_ident(P);
        n->n_names = 1;
        advance(P);
        n->name = expect_ident(P);
        expect_op(P, "=");
        n->a = parse_tuple(P, true);
        expect_block_end(P);
        return n;
    }
    tl_node *n = new_node(P, N_SET, pos);
    parse_targets(P, n);
    if (skip_op(P, "=")) {
        n->a = parse_tuple(P, true);
        expect_block_end(P);
        return n;
    }
    if (n->n_names != 1)
        perr(P, cur(P)->pos, "expected '=' after the names of a set");
    n->kind = N_SETBLOCK;
    if (skip_op(P, "|"))
        n->b = parse_filter_chain(P);
    expect_block_end(P);
    static const char *const ends[] = {"endset", NULL};
    const char *which;
    n->a = parse_body(P, ends, &which);
    advance(P);
    expect_block_end(P);
    return n;
}

/* (a, b=default, ...) for macros and call blocks */
static void parse_params(parser *P, tl_node *n) {
    svec names = {0};
    nvec defs = {0};
    expect_op(P, "(");
    while (!is_op(P, ")")) {
        if (names.n)
            expect_op(P, ",");
        if (is_op(P, ")"))
            break;
        svec_push(P, &names, expect_ident(P));
        nvec_push(P, &defs, skip_op(P, "=") ? parse_expr(P, true) : NULL);
    }
    expect_op(P, ")");
    n->names = names.v;
    n->n_names = names.n;
    n->kids = defs.v;
    n->n_kids = defs.n;
}

static tl_node *parse_macro(parser *P, uint32_t pos) {
    tl_node *n = new_node(P, N_MACRO, pos);
    n->name = expect_ident(P);
    parse_params(P, n);
    expect_block_end(P);
    static const char *const ends[] = {"endmacro", NULL};
    const char *which;
    n->a = parse_body(P, ends, &which);
    advance(P);
    if (cur(P)->kind == TK_NAME)
        advance(P); /* {% endmacro name %} */
    expect_block_end(P);
    return n;
}

static tl_node *parse_callblock(parser *P, uint32_t pos) {
    tl_node *n = new_node(P, N_CALLBLOCK, pos);
    if (is_op(P, "("))
        parse_params(P, n);
    n->a = parse_expr(P, true);
    if (n->a->kind != N_CALL)
        perr(P, n->a->pos, "expected a call after 'call'");
    expect_block_end(P);
    static const char *const ends[] = {"endcall", NULL};
    const char *which;
    n->b = parse_body(P, ends, &which);
    advance(P);
    expect_block_end(P);
    return n;
}

static tl_node *parse_wrapped(parser *P, uint32_t pos, const char *end) {
    /* {% generation %} / {% block name %}: the body renders in place */
    const char *const ends[] = {end, NULL};
    const char *which;
    tl_node *body = parse_body(P, ends, &which);
    advance(P);
    if (cur(P)->kind == TK_NAME)
        advance(P);
    expect_block_end(P);
    (void)pos;
    return body;
}

static tl_node *parse_statement(parser *P) {
    uint32_t pos = cur(P)->pos;
    advance(P); /* {% */
    const tl_tok *kw = cur(P);
    if (kw->kind != TK_NAME) {
        char b[64];
        perr(P, kw->pos, "expected a statement name, got %s", describe(kw, b, sizeof b));
    }
    advance(P);
    enter(P);
    tl_node *n;
    if (tok_is(kw, TK_NAME, "if"))
        n = parse_if(P, pos);
    else if (tok_is(kw, TK_NAME, "for"))
        n = parse_for(P, pos);
    else if (tok_is(kw, TK_NAME, "set"))
        n = parse_set(P, pos);
    else if (tok_is(kw, TK_NAME, "macro"))
        n = parse_macro(P, pos);
    else if (tok_is(kw, TK_NAME, "call"))
        n = parse_callblock(P, pos);
    else if (tok_is(kw, TK_NAME, "filter")) {
        n = new_node(P, N_FILTERBLOCK, pos);
        n->b = parse_filter_chain(P);
        expect_block_end(P);
        static const char *const ends[] = {"endfilter", NULL};
        const char *which;
        n->a = parse_body(P, ends, &which);
        advance(P);
        expect_block_end(P);
    } else if (tok_is(kw, TK_NAME, "break") || tok_is(kw, TK_NAME, "continue")) {
        n = new_node(P, tok_is(kw, TK_NAME, "break") ? N_BREAK : N_CONTINUE, pos);
        expect_block_end(P);
    } else if (tok_is(kw, TK_NAME, "generation")) {
        expect_block_end(P);
        n = parse_wrapped(P, pos, "endgeneration");
    } else if (tok_is(kw, TK_NAME, "block")) {
        expect_ident(P);
        expect_block_end(P);
        n = parse_wrapped(P, pos, "endblock");
    } else
        perr(P, kw->pos, "unknown or unsupported statement '%.*s'", (int)(kw->len > 40 ? 40 : kw->len), kw->text);
    leave(P);
    return n;
}

/* Statements until "{% END" for one of ends (left current: the END name), or
 * the end of the template when ends is NULL. */
static tl_node *parse_body(parser *P, const char *const *ends, const char **which) {
    uint32_t start = cur(P)->pos;
    nvec stmts = {0};
    for (;;) {
        const tl_tok *t = cur(P);
        if (t->kind == TK_EOF) {
            if (ends)
                perr(P, t->pos, "unexpected end of template: expected '{%% %s %%}'", ends[0]);
            break;
        }
        if (t->kind == TK_DATA) {
            tl_node *n = new_node(P, N_TEXT, t->pos);
            n->lit.t = V_STR;
            n->lit.u.s = t->text;
            n->lit.n = (uint32_t)t->len;
            nvec_push(P, &stmts, n);
            advance(P);
        } else if (t->kind == TK_VAR_BEGIN) {
            advance(P);
            tl_node *n = new_node(P, N_PRINT, t->pos);
            n->a = parse_tuple(P, true);
            if (cur(P)->kind != TK_VAR_END) {
                char b[64];
                perr(P, cur(P)->pos, "expected '}}', got %s", describe(cur(P), b, sizeof b));
            }
            advance(P);
            nvec_push(P, &stmts, n);
        } else if (t->kind == TK_BLOCK_BEGIN) {
            const tl_tok *kw = peek(P, 1);
            if (kw->kind == TK_NAME && ends) {
                for (int k = 0; ends[k]; k++)
                    if (tok_is(kw, TK_NAME, ends[k])) {
                        *which = ends[k];
                        advance(P);
                        goto done;
                    }
            }
            if (kw->kind == TK_NAME &&
                (tok_is(kw, TK_NAME, "endif") || tok_is(kw, TK_NAME, "endfor") || tok_is(kw, TK_NAME, "else") ||
                 tok_is(kw, TK_NAME, "elif") || tok_is(kw, TK_NAME, "endset") || tok_is(kw, TK_NAME, "endmacro") ||
                 tok_is(kw, TK_NAME, "endcall") || tok_is(kw, TK_NAME, "endfilter") ||
                 tok_is(kw, TK_NAME, "endgeneration") || tok_is(kw, TK_NAME, "endblock")))
                perr(P, kw->pos, "unexpected '%.*s'%s%s", (int)kw->len, kw->text, ends ? ", expected " : "",
                     ends ? ends[0] : "");
            nvec_push(P, &stmts, parse_statement(P));
        } else {
            char b[64];
            perr(P, t->pos, "unexpected %s", describe(t, b, sizeof b));
        }
    }
done:;
    tl_node *body = new_node(P, N_BODY, start);
    body->kids = stmts.v;
    body->n_kids = stmts.n;
    return body;
}

tl_status tl_tpl_parse_tokens(tl_template *t, const tl_toklist *toks, tl_error *err) {
    parser P = {.t = t, .tk = toks->v, .n = toks->n, .err = err};
    if (setjmp(P.fail))
        return err ? err->code : TL_ERR_FORMAT;
    t->root = parse_body(&P, NULL, NULL);
    return TL_OK;
}

tl_status tl_template_parse(const char *src, size_t len, tl_template **out, tl_error *err) {
    *out = NULL;
    if (len > (1u << 30))
        return tl_error_set(err, TL_ERR_LIMIT, "template: source larger than 1 GiB");
    tl_template *t = calloc(1, sizeof *t);
    char *s = t ? malloc(len + 1) : NULL;
    if (!s) {
        free(t);
        return tl_error_set(err, TL_ERR_NOMEM, "template: out of memory");
    }
    /* newlines normalised, one trailing newline dropped (keep_trailing_newline=False) */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else
            s[n++] = src[i];
    }
    if (n && s[n - 1] == '\n')
        n--;
    s[n] = 0;
    t->src = s;
    t->len = n;
    tl_toklist toks = {0};
    tl_status st = tl_tpl_lex(s, n, &t->arena, &toks, err);
    if (!st)
        st = tl_tpl_parse_tokens(t, &toks, err);
    free(toks.v);
    if (st) {
        tl_template_free(t);
        return st;
    }
    *out = t;
    return TL_OK;
}

void tl_template_free(tl_template *t) {
    if (!t)
        return;
    tl_arena_free(&t->arena);
    free(t->src);
    free(t);
}
