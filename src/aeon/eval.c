/* eval.c: a small interpreter for the Aeon fragment (Int, Bool, Float,
 * String, Unit, functions, let, if, operators), used to check refinements
 * and @examples on finished candidates and to score objectives.
 *
 * Semantics follow Aeon's Python backend where the fragment meets it: Int
 * `/` and `%` floor (Python // and %), Int overflow beyond 64 bits is a
 * runtime error rather than a bignum, strings compare by code point (UTF-8
 * byte order). Every evaluation has fuel (steps), a depth limit and a cap on
 * string sizes, so a candidate cannot hang or exhaust memory. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/internal.h"
#include "util/error.h"

#define MAX_DEPTH 1500
#define MAX_STRING (1u << 20)

struct ae_value {
    ae_value_kind kind;
    int64_t i;
    double f;
    const char *s;
    size_t s_len;
    /* AE_V_CLOSURE: a lambda and its environment */
    const ae_expr *fun;
    const struct venv *env;
    /* AE_V_BUILTIN: a def (index) or toFloat (-1), with the arguments so far */
    int def;
    int n_args;
    const ae_value *const *args;
};

typedef struct venv {
    const char *name;
    const ae_value *v;
    const struct venv *next;
} venv;

typedef struct evaluator {
    ae_program *prog;
    ae_arena arena;
    const ae_expr *candidate;
    int64_t fuel;
    int depth;
    tl_error *err;
} evaluator;

static tl_status rt_err(evaluator *ev, tl_status code, const ae_expr *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tl_status rt_err(evaluator *ev, tl_status code, const ae_expr *e, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tl_error_set(ev->err, code, "aeon: %d:%d: runtime error: %s", e ? e->line : 0, e ? e->col : 0, msg);
}

static ae_value *new_value(evaluator *ev, ae_value_kind k) {
    ae_value *v = ae_alloc(&ev->arena, sizeof *v);
    if (v)
        v->kind = k;
    return v;
}

static tl_status eval(evaluator *ev, const ae_expr *e, const venv *env, const ae_value **out);

static int find_def(const ae_program *p, const char *name) {
    for (int i = 0; i < p->n_defs; i++)
        if (!strcmp(p->defs[i].name, name))
            return i;
    return -1;
}

/* Runs a def whose arguments are all present. */
static tl_status call_def(evaluator *ev, const ae_expr *site, int k, const ae_value *const *args,
                          const ae_value **out) {
    const ae_def *d = &ev->prog->defs[k];
    venv *nodes = ae_alloc(&ev->arena, sizeof *nodes * (size_t)(d->n_params + 1));
    if (!nodes)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    const venv *env = NULL;
    for (int i = 0; i < d->n_params; i++) {
        nodes[i] = (venv){d->params[i].name, args[i], env};
        env = &nodes[i];
    }
    return eval(ev, d->body, env, out);
}

static tl_status apply(evaluator *ev, const ae_expr *site, const ae_value *f, const ae_value *arg,
                       const ae_value **out) {
    if (f->kind == AE_V_CLOSURE) {
        venv *b = ae_alloc(&ev->arena, sizeof *b);
        if (!b)
            return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
        *b = (venv){f->fun->str, arg, f->env};
        return eval(ev, f->fun->a, b, out);
    }
    if (f->kind != AE_V_BUILTIN)
        return rt_err(ev, TL_ERR_INVALID, site, "applying a value that is not a function");
    if (f->def < 0) { /* toFloat */
        ae_value *r = new_value(ev, AE_V_FLOAT);
        if (!r)
            return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
        r->f = (double)arg->i;
        *out = r;
        return TL_OK;
    }
    const ae_def *d = &ev->prog->defs[f->def];
    const ae_value **args = ae_alloc(&ev->arena, sizeof *args * (size_t)(f->n_args + 1));
    if (!args)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    for (int i = 0; i < f->n_args; i++)
        args[i] = f->args[i];
    args[f->n_args] = arg;
    if (f->n_args + 1 == d->n_params)
        return call_def(ev, site, f->def, args, out);
    ae_value *r = new_value(ev, AE_V_BUILTIN);
    if (!r)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    r->def = f->def;
    r->n_args = f->n_args + 1;
    r->args = args;
    *out = r;
    return TL_OK;
}

static bool values_equal(const ae_value *a, const ae_value *b) {
    switch (a->kind) {
    case AE_V_INT: case AE_V_BOOL: return a->i == b->i;
    case AE_V_FLOAT: return a->f == b->f;
    case AE_V_STRING: return a->s_len == b->s_len && !memcmp(a->s, b->s, a->s_len);
    case AE_V_UNIT: return true;
    default: return a == b;
    }
}

static int values_compare(const ae_value *a, const ae_value *b) {
    switch (a->kind) {
    case AE_V_INT: return (a->i > b->i) - (a->i < b->i);
    case AE_V_FLOAT: return (a->f > b->f) - (a->f < b->f);
    case AE_V_STRING: {
        size_t n = a->s_len < b->s_len ? a->s_len : b->s_len;
        int c = memcmp(a->s, b->s, n);
        if (c)
            return c < 0 ? -1 : 1;
        return (a->s_len > b->s_len) - (a->s_len < b->s_len);
    }
    default: return 0;
    }
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static tl_status eval_binop(evaluator *ev, const ae_expr *e, const ae_value *a, const ae_value *b,
                            const ae_value **out) {
    ae_value *r = new_value(ev, a->kind);
    if (!r)
        return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
    switch (e->op) {
    case AE_OP_EQ: case AE_OP_NE:
        r->kind = AE_V_BOOL;
        r->i = values_equal(a, b) == (e->op == AE_OP_EQ);
        break;
    case AE_OP_LT: case AE_OP_LE: case AE_OP_GT: case AE_OP_GE: {
        int c = values_compare(a, b);
        if (a->kind == AE_V_FLOAT && (isnan(a->f) || isnan(b->f)))
            c = 2; /* unordered: every comparison false */
        r->kind = AE_V_BOOL;
        r->i = e->op == AE_OP_LT ? c == -1 : e->op == AE_OP_LE ? (c == -1 || c == 0)
             : e->op == AE_OP_GT ? c == 1 : (c == 1 || c == 0);
        break;
    }
    case AE_OP_AND: case AE_OP_OR: /* short-circuiting happens in eval */
        r->i = b->i;
        break;
    default:
        if (a->kind == AE_V_STRING) { /* + only */
            if (a->s_len + b->s_len > MAX_STRING)
                return rt_err(ev, TL_ERR_LIMIT, e, "string longer than %u bytes", MAX_STRING);
            char *s = ae_alloc(&ev->arena, a->s_len + b->s_len + 1);
            if (!s)
                return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
            memcpy(s, a->s, a->s_len);
            memcpy(s + a->s_len, b->s, b->s_len);
            r->s = s;
            r->s_len = a->s_len + b->s_len;
        } else if (a->kind == AE_V_FLOAT) {
            double x = a->f, y = b->f;
            r->f = e->op == AE_OP_ADD ? x + y : e->op == AE_OP_SUB ? x - y : e->op == AE_OP_MUL ? x * y : x / y;
            if (e->op == AE_OP_DIV && y == 0.0)
                return rt_err(ev, TL_ERR_INVALID, e, "float division by zero");
        } else {
            int64_t x = a->i, y = b->i, z = 0;
            bool ovf = false;
            switch (e->op) {
            case AE_OP_ADD: ovf = __builtin_add_overflow(x, y, &z); break;
            case AE_OP_SUB: ovf = __builtin_sub_overflow(x, y, &z); break;
            case AE_OP_MUL: ovf = __builtin_mul_overflow(x, y, &z); break;
            case AE_OP_DIV: case AE_OP_MOD:
                if (y == 0)
                    return rt_err(ev, TL_ERR_INVALID, e, "integer division by zero");
                if (x == INT64_MIN && y == -1) {
                    ovf = true;
                    break;
                }
                z = floor_div(x, y);
                if (e->op == AE_OP_MOD)
                    z = x - z * y;
                break;
            default: break;
            }
            if (ovf)
                return rt_err(ev, TL_ERR_INVALID, e, "integer overflow");
            r->i = z;
        }
    }
    *out = r;
    return TL_OK;
}

static tl_status eval(evaluator *ev, const ae_expr *e, const venv *env, const ae_value **out) {
    if (--ev->fuel < 0)
        return rt_err(ev, TL_ERR_LIMIT, e, "evaluation step limit reached");
    if (++ev->depth > MAX_DEPTH)
        return rt_err(ev, TL_ERR_LIMIT, e, "evaluation deeper than %d", MAX_DEPTH);
    tl_status st = TL_OK;
    const ae_value *a, *b;
    ae_value *r;
    switch (e->kind) {
    case AE_E_INT: case AE_E_BOOL: case AE_E_FLOAT: case AE_E_STRING: case AE_E_UNIT:
        if (!(r = new_value(ev, e->kind == AE_E_INT ? AE_V_INT : e->kind == AE_E_BOOL ? AE_V_BOOL
                                : e->kind == AE_E_FLOAT ? AE_V_FLOAT : e->kind == AE_E_STRING ? AE_V_STRING : AE_V_UNIT)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->i = e->ival;
        r->f = e->fval;
        r->s = e->str;
        r->s_len = e->str_len;
        *out = r;
        break;
    case AE_E_VAR: {
        const venv *b2 = env;
        while (b2 && strcmp(b2->name, e->str))
            b2 = b2->next;
        if (b2) {
            *out = b2->v;
            break;
        }
        int k = find_def(ev->prog, e->str);
        if (k >= 0 && ev->prog->defs[k].n_params == 0) {
            st = call_def(ev, e, k, NULL, out);
        } else if (k >= 0 || !strcmp(e->str, "toFloat")) {
            if (!(r = new_value(ev, AE_V_BUILTIN)))
                return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
            r->def = k;
            *out = r;
        } else {
            st = rt_err(ev, TL_ERR_INVALID, e, "unknown name '%s'", e->str);
        }
        break;
    }
    case AE_E_HOLE:
        if (!ev->candidate)
            return rt_err(ev, TL_ERR_INVALID, e, "evaluating an unfilled hole");
        st = eval(ev, ev->candidate, env, out);
        break;
    case AE_E_APP:
        if (!(st = eval(ev, e->a, env, &a)) && !(st = eval(ev, e->b, env, &b)))
            st = apply(ev, e, a, b, out);
        break;
    case AE_E_BINOP:
        if ((st = eval(ev, e->a, env, &a)))
            break;
        if ((e->op == AE_OP_AND && !a->i) || (e->op == AE_OP_OR && a->i)) {
            *out = a;
            break;
        }
        if (!(st = eval(ev, e->b, env, &b)))
            st = eval_binop(ev, e, a, b, out);
        break;
    case AE_E_NOT:
        if ((st = eval(ev, e->a, env, &a)))
            break;
        if (!(r = new_value(ev, AE_V_BOOL)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->i = !a->i;
        *out = r;
        break;
    case AE_E_IF:
        if (!(st = eval(ev, e->a, env, &a)))
            st = eval(ev, a->i ? e->b : e->c, env, out);
        break;
    case AE_E_LET: {
        if ((st = eval(ev, e->a, env, &a)))
            break;
        venv *bn = ae_alloc(&ev->arena, sizeof *bn);
        if (!bn)
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        *bn = (venv){e->str, a, env};
        st = eval(ev, e->b, bn, out);
        break;
    }
    case AE_E_FUN:
        if (!(r = new_value(ev, AE_V_CLOSURE)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->fun = e;
        r->env = env;
        *out = r;
        break;
    case AE_E_ANNOT:
        st = eval(ev, e->a, env, out);
        break;
    }
    ev->depth--;
    if (!st && ev->arena.total > 64u * MAX_STRING)
        st = rt_err(ev, TL_ERR_LIMIT, e, "evaluation used more than %u MiB", 64u * MAX_STRING >> 20);
    return st;
}

static const ae_value *scalar_value(evaluator *ev, const ae_scalar *s) {
    ae_value *v = new_value(ev, s->kind);
    if (v) {
        v->i = s->i;
        v->f = s->f;
        v->s = s->s;
        v->s_len = s->s_len;
    }
    return v;
}

static void to_scalar(const ae_value *v, ae_scalar *out) {
    memset(out, 0, sizeof *out);
    out->kind = v->kind;
    out->i = v->i;
    out->f = v->f;
}

tl_status ae_eval_closed(ae_program *p, const ae_expr *e, const ae_expr *candidate, int64_t fuel, ae_scalar *out,
                         tl_error *err) {
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const ae_value *v;
    tl_status st = eval(&ev, e, NULL, &v);
    if (!st)
        to_scalar(v, out);
    ae_arena_free(&ev.arena);
    return st;
}

tl_status ae_eval_call_hole_def(ae_program *p, const ae_scalar *args, const ae_expr *candidate, int64_t fuel,
                                ae_scalar *out, tl_error *err) {
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const ae_def *d = &p->defs[p->hole_def];
    const ae_value **vals = ae_alloc(&ev.arena, sizeof *vals * (size_t)(d->n_params + 1));
    tl_status st = TL_OK;
    if (!vals)
        st = tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    for (int i = 0; !st && i < d->n_params; i++)
        if (!(vals[i] = scalar_value(&ev, &args[i])))
            st = tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    const ae_value *v;
    if (!st && !(st = call_def(&ev, d->body, p->hole_def, vals, &v)))
        to_scalar(v, out);
    ae_arena_free(&ev.arena);
    return st;
}

tl_status ae_eval_pred(ae_program *p, const ae_rtype *rt, const ae_scalar *v, const ae_scalar *args,
                       const ae_expr *candidate, int64_t fuel, bool *holds, tl_error *err) {
    *holds = true;
    if (!rt->pred)
        return TL_OK;
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const ae_def *d = &p->defs[p->hole_def];
    venv *nodes = ae_alloc(&ev.arena, sizeof *nodes * (size_t)(d->n_params + 1));
    tl_status st = nodes ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    const venv *env = NULL;
    for (int i = 0; !st && args && i < d->n_params; i++) {
        nodes[i] = (venv){d->params[i].name, scalar_value(&ev, &args[i]), env};
        env = &nodes[i];
    }
    if (!st) {
        nodes[d->n_params] = (venv){rt->binder, scalar_value(&ev, v), env};
        const ae_value *r;
        if (!(st = eval(&ev, rt->pred, &nodes[d->n_params], &r)))
            *holds = r->i != 0;
    }
    ae_arena_free(&ev.arena);
    return st;
}
