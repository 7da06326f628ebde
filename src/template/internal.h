/* internal.h: the template layer's own types: the arena, tokens, the AST and
 * the value type. Shared by lex.c, parse.c, value.c, eval.c and builtins.c;
 * nothing outside src/template includes it. */
#ifndef TL_TEMPLATE_INTERNAL_H
#define TL_TEMPLATE_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "template/template.h"

#include "util/arena.h" /* every AST node and every runtime value lives in one */

/* ---- tokens --------------------------------------------------------------- */

typedef enum {
    TK_EOF,
    TK_DATA,        /* template text (already whitespace-controlled) */
    TK_VAR_BEGIN,   /* {{ */
    TK_VAR_END,     /* }} */
    TK_BLOCK_BEGIN, /* {% */
    TK_BLOCK_END,   /* %} */
    TK_NAME,
    TK_STRING, /* decoded value in text/len */
    TK_INT,
    TK_FLOAT,
    TK_OP /* operator: text/len is its spelling */
} tl_tok_kind;

typedef struct tl_tok {
    tl_tok_kind kind;
    uint32_t pos; /* byte offset in the source (for line:column) */
    const char *text;
    size_t len;
    int64_t ival;
    double fval;
} tl_tok;

typedef struct tl_toklist {
    tl_tok *v;
    size_t n, cap;
} tl_toklist;

/* Fills out (arena-owned strings). Errors carry line:column. */
tl_status tl_tpl_lex(const char *src, size_t len, tl_arena *a, tl_toklist *out, tl_error *err);
/* 1-based line and column of byte offset pos. */
void tl_tpl_linecol(const char *src, size_t len, size_t pos, int *line, int *col);

/* ---- values --------------------------------------------------------------- */

typedef enum {
    V_UNDEF, /* Jinja's lenient Undefined; s/n may name what was missing */
    V_NONE,
    V_BOOL,
    V_INT,
    V_FLOAT,
    V_STR,
    V_LIST, /* also tuples (flag) */
    V_DICT,
    V_NS,   /* namespace(): a mutable dict */
    V_FUNC, /* builtin, macro, caller or bound method */
    V_LOOP  /* the 'loop' variable of a for */
} tl_vtype;

#define VF_TUPLE 1
#define VF_GEN 2 /* a generator (map, select, ... in Jinja): iterable, but no len(), no JSON, always true */

struct tl_list;
struct tl_dict;
struct tl_func;
struct tl_loop;

typedef struct tl_val {
    uint8_t t;
    uint8_t flags;
    uint32_t n; /* string length in bytes */
    union {
        int64_t i;
        double f;
        const char *s;
        struct tl_list *l;
        struct tl_dict *d;
        struct tl_func *fn;
        struct tl_loop *lp;
    } u;
} tl_val;

typedef struct tl_list {
    size_t n, cap;
    tl_val *v;
} tl_list;

typedef struct tl_dict {
    size_t n, cap;
    tl_val *k, *v;
} tl_dict;

/* ---- AST -------------------------------------------------------------------- */

typedef enum {
    /* expressions */
    N_LIT,
    N_NAME,
    N_ATTR,    /* a.name */
    N_ITEM,    /* a[b] */
    N_SLICE,   /* a[b:c:d] (any may be NULL) */
    N_CALL,    /* a(args, kw=...) */
    N_FILTER,  /* a | name(args) */
    N_TEST,    /* a is [not] name(args) */
    N_BIN,     /* op: + - * / // % ** ~ */
    N_NEG,
    N_POS,
    N_NOT,
    N_AND,
    N_OR,
    N_CMP,     /* a op b [op c ...]: kids are operands, ops in cmp_ops */
    N_COND,    /* a if b else c */
    N_LIST,
    N_TUPLE,
    N_DICT,    /* kids: k0, v0, k1, v1 ... */
    /* statements */
    N_BODY,    /* kids: statements */
    N_TEXT,
    N_PRINT,
    N_IF,      /* a: test, b: body, c: else (body or nested N_IF) */
    N_FOR,     /* targets in names, a: iter, b: body, c: else, d: filter */
    N_SET,     /* names (one or more, or ns.attr with attr), a: value */
    N_SETBLOCK,/* names[0], a: body, filters chain in b (N_FILTER with NULL subject) */
    N_MACRO,   /* name, params in names, defaults in kids (NULL when none), a: body */
    N_CALLBLOCK, /* a: the call, params/defaults like a macro for caller(), b: body */
    N_FILTERBLOCK, /* b: filter chain, a: body */
    N_BREAK,
    N_CONTINUE
} tl_node_kind;

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FDIV, OP_MOD, OP_POW, OP_CONCAT,
    CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN
} tl_op;

typedef struct tl_str {
    const char *s;
    size_t n;
} tl_str;

typedef struct tl_node {
    uint8_t kind;
    uint8_t op;
    uint8_t negated;   /* N_TEST: 'is not'; N_FOR: recursive */
    uint32_t pos;      /* source offset */
    struct tl_node *a, *b, *c, *d;
    struct tl_node **kids; /* args, list items, statements */
    size_t n_kids;
    struct tl_node **kwvals; /* keyword argument values */
    tl_str *kwnames;
    size_t n_kw;
    tl_str name;       /* N_NAME, N_ATTR, N_FILTER, N_TEST, N_MACRO, N_SET attr */
    tl_str *names;     /* N_FOR/N_SET targets, N_MACRO params */
    size_t n_names;
    uint8_t *cmp_ops;  /* N_CMP: n_kids - 1 operators */
    tl_val lit;        /* N_LIT, N_TEXT (string) */
} tl_node;

struct tl_template {
    tl_arena arena; /* the AST */
    char *src;      /* a copy of the source, for line:column */
    size_t len;
    tl_node *root;
};

tl_status tl_tpl_parse_tokens(tl_template *t, const tl_toklist *toks, tl_error *err);

/* ---- functions -------------------------------------------------------------- */

typedef struct tl_scope tl_scope;
typedef struct tl_render_state tl_render_state;

typedef enum { FN_BUILTIN, FN_MACRO, FN_CALLER, FN_METHOD, FN_LOOP } tl_fn_kind;

typedef struct tl_func {
    uint8_t kind;
    uint8_t builtin;      /* FN_BUILTIN: which global */
    tl_str name;          /* FN_METHOD: method name */
    tl_val self;          /* FN_METHOD: bound object */
    const tl_node *node;  /* FN_MACRO / FN_CALLER: the macro or call-block node */
    tl_scope *closure;    /* scope the macro or caller body sees */
    tl_val caller;        /* FN_MACRO invoked from a call block */
} tl_func;

typedef struct tl_loop {
    int64_t index0, length;
    const tl_list *items;
    const tl_node *for_node; /* recursive loops */
    tl_scope *scope;
    int depth0;
} tl_loop;

/* ---- render state ---------------------------------------------------------- */

struct tl_scope {
    tl_scope *parent;
    size_t n, cap;
    tl_str *names;
    tl_val *vals;
};

struct tl_render_state {
    const tl_template *t;
    tl_arena arena; /* values */
    tl_strbuf *out; /* current output (captures redirect it) */
    tl_strbuf **captures; /* capture stack: heap buffers, all freed if the render fails */
    size_t n_captures, cap_captures;
    size_t max_output;
    uint64_t steps, max_steps;
    int depth, max_depth;
    bool fixed_now;
    int64_t now_unix;
    int signal; /* 1: break, 2: continue */
    uint32_t pos; /* source offset of the node being evaluated (for errors) */
    jmp_buf fail;
    tl_error *err;
    tl_status status;
};

/* Fails the render: longjmps out (never returns). */
_Noreturn void tl_tpl_fail(tl_render_state *st, uint32_t pos, tl_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
_Noreturn void tl_tpl_raise(tl_render_state *st, const char *msg, size_t n);

/* Output captured for block set, macros, filter blocks and str(): push a
 * buffer, write to it, pop it as an arena string (eval.c). */
tl_strbuf *tl_tpl_capture_push(tl_render_state *st);
tl_val tl_tpl_capture_pop(tl_render_state *st);

/* value helpers (value.c) */
void *tl_tpl_alloc(tl_render_state *st, size_t n);
/* A block of cap items of elem bytes holding the n items of old (n may be 0,
 * old NULL): how the render's arrays grow. */
void *tl_tpl_resize(tl_render_state *st, const void *old, size_t n, size_t cap, size_t elem);
tl_val tl_val_str(tl_render_state *st, const char *s, size_t n); /* copies */
tl_val tl_val_cstr_static(const char *s);                      /* no copy: s must outlive the render */
tl_val tl_val_int(int64_t i);
tl_val tl_val_float(double f);
tl_val tl_val_bool(bool b);
tl_val tl_val_none(void);
tl_val tl_val_undef(const char *hint, size_t n);
tl_list *tl_list_new(tl_render_state *st, size_t cap);
void tl_list_push(tl_render_state *st, tl_list *l, tl_val v);
tl_dict *tl_dict_new(tl_render_state *st, size_t cap);
void tl_dict_set(tl_render_state *st, tl_dict *d, tl_val k, tl_val v);
tl_val *tl_dict_get(const tl_dict *d, tl_val k);
tl_val *tl_dict_get_str(const tl_dict *d, const char *s, size_t n);
tl_val tl_val_list(tl_list *l);
tl_val tl_val_dict(tl_dict *d);
tl_val tl_val_from_json(tl_render_state *st, const json_t *j);

bool tl_val_truthy(tl_val v);
bool tl_val_equal(tl_val a, tl_val b);
/* <0, 0, >0; fails on types Python cannot order */
int tl_val_compare(tl_render_state *st, uint32_t pos, tl_val a, tl_val b);
/* str(v) appended to out (undefined: nothing) */
void tl_val_str_to(tl_render_state *st, tl_strbuf *out, tl_val v);
void tl_val_repr_to(tl_render_state *st, tl_strbuf *out, tl_val v);
/* str(v) as a value (strings returned as they are) */
tl_val tl_val_to_str(tl_render_state *st, tl_val v);
const char *tl_val_type_name(tl_val v);
void tl_tpl_put(tl_render_state *st, tl_strbuf *out, const char *s, size_t n);

/* Python's json.dumps(v, ensure_ascii, indent, separators, sort_keys). indent < 0: none;
 * indent_str overrides indent when non-NULL. */
void tl_val_tojson(tl_render_state *st, uint32_t pos, tl_strbuf *out, tl_val v, bool ensure_ascii, int indent,
                   const char *item_sep, const char *key_sep, bool sort_keys, int level);

/* UTF-8 helpers */
size_t tl_utf8_count(const char *s, size_t n);
/* byte offset of code point index i (clamped to n) */
size_t tl_utf8_offset(const char *s, size_t n, size_t i);
/* decodes one code point at s[*i], advancing *i; invalid bytes decode as themselves */
uint32_t tl_utf8_next(const char *s, size_t n, size_t *i);
bool tl_py_isspace(uint32_t c);

/* eval.c */
tl_val tl_tpl_eval(tl_render_state *st, tl_scope *sc, const tl_node *n);
tl_val tl_tpl_call_value(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_val fn, size_t argc, const tl_val *argv,
                         size_t kwc, const tl_str *kwn, const tl_val *kwv);
void tl_tpl_step(tl_render_state *st, uint32_t pos);

/* builtins.c */
tl_val tl_tpl_filter(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_str name, tl_val subject, size_t argc,
                     const tl_val *argv, size_t kwc, const tl_str *kwn, const tl_val *kwv);
bool tl_tpl_test(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_str name, tl_val subject, size_t argc,
                 const tl_val *argv);
/* a str/list/dict method; *found false when obj has none of that name */
tl_val tl_tpl_method(tl_render_state *st, uint32_t pos, tl_val self, tl_str name, size_t argc, const tl_val *argv,
                     size_t kwc, const tl_str *kwn, const tl_val *kwv);
bool tl_tpl_has_method(tl_val self, tl_str name);
/* global functions: range, namespace, dict, raise_exception, strftime_now, ... */
bool tl_tpl_global(tl_str name, tl_val *out);
tl_val tl_tpl_call_builtin(tl_render_state *st, uint32_t pos, int which, size_t argc, const tl_val *argv, size_t kwc,
                           const tl_str *kwn, const tl_val *kwv);
/* iterable -> list (dict: keys, string: characters); fails on non-iterables */
const tl_list *tl_tpl_iterate(tl_render_state *st, uint32_t pos, tl_val v);

static inline bool tl_str_eq(tl_str a, const char *b) {
    size_t i = 0;
    for (; i < a.n; i++)
        if (!b[i] || a.s[i] != b[i])
            return false;
    return b[i] == 0;
}

#endif
