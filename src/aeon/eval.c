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
#include "util/arena.h"
#include "util/error.h"

#define MAX_DEPTH 1500
#define MAX_STRING (1u << 20)

struct tl_aeon_value {
    tl_aeon_value_kind kind;
    int64_t i;
    double f;
    const char *s;
    size_t s_len;
    /* TL_AEON_V_CLOSURE: a lambda and its environment */
    const tl_aeon_expr *fun;
    const struct venv *env;
    /* TL_AEON_V_BUILTIN: a def (index) or toFloat (-1), with the arguments so far */
    int def;
    int n_args;
    const tl_aeon_value *const *args;
};

typedef struct venv {
    const char *name;
    const tl_aeon_value *v;
    const struct venv *next;
} venv;

typedef struct evaluator {
    tl_aeon_program *prog;
    tl_arena arena;
    const tl_aeon_expr *candidate;
    int64_t fuel;
    int depth;
    tl_error *err;
} evaluator;

static tl_status rt_err(evaluator *ev, tl_status code, const tl_aeon_expr *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tl_status rt_err(evaluator *ev, tl_status code, const tl_aeon_expr *e, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tl_error_set(ev->err, code, "aeon: %d:%d: runtime error: %s", e ? e->line : 0, e ? e->col : 0, msg);
}

static tl_aeon_value *new_value(evaluator *ev, tl_aeon_value_kind k) {
    tl_aeon_value *v = tl_arena_alloc(&ev->arena, sizeof *v);
    if (v)
        v->kind = k;
    return v;
}

static tl_status eval(evaluator *ev, const tl_aeon_expr *e, const venv *env, const tl_aeon_value **out);

static int find_def(const tl_aeon_program *p, const char *name) {
    for (int i = 0; i < p->n_defs; i++)
        if (!strcmp(p->defs[i].name, name))
            return i;
    return -1;
}

/* Runs a def whose arguments are all present. */
static tl_status call_def(evaluator *ev, const tl_aeon_expr *site, int k, const tl_aeon_value *const *args,
                          const tl_aeon_value **out) {
    const tl_aeon_def *d = &ev->prog->defs[k];
    venv *nodes = tl_arena_alloc(&ev->arena, sizeof *nodes * (size_t)(d->n_params + 1));
    if (!nodes)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    const venv *env = NULL;
    for (int i = 0; i < d->n_params; i++) {
        nodes[i] = (venv){d->params[i].name, args[i], env};
        env = &nodes[i];
    }
    return eval(ev, d->body, env, out);
}

static tl_status apply(evaluator *ev, const tl_aeon_expr *site, const tl_aeon_value *f, const tl_aeon_value *arg,
                       const tl_aeon_value **out) {
    if (f->kind == TL_AEON_V_CLOSURE) {
        venv *b = tl_arena_alloc(&ev->arena, sizeof *b);
        if (!b)
            return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
        *b = (venv){f->fun->str, arg, f->env};
        return eval(ev, f->fun->a, b, out);
    }
    if (f->kind != TL_AEON_V_BUILTIN)
        return rt_err(ev, TL_ERR_INVALID, site, "applying a value that is not a function");
    if (f->def < 0) { /* toFloat */
        tl_aeon_value *r = new_value(ev, TL_AEON_V_FLOAT);
        if (!r)
            return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
        r->f = arg->kind == TL_AEON_V_FLOAT ? arg->f : (double)arg->i; /* Python's float() */
        *out = r;
        return TL_OK;
    }
    const tl_aeon_def *d = &ev->prog->defs[f->def];
    const tl_aeon_value **args = tl_arena_alloc(&ev->arena, sizeof *args * (size_t)(f->n_args + 1));
    if (!args)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    for (int i = 0; i < f->n_args; i++)
        args[i] = f->args[i];
    args[f->n_args] = arg;
    if (f->n_args + 1 == d->n_params)
        return call_def(ev, site, f->def, args, out);
    tl_aeon_value *r = new_value(ev, TL_AEON_V_BUILTIN);
    if (!r)
        return rt_err(ev, TL_ERR_NOMEM, site, "out of memory");
    r->def = f->def;
    r->n_args = f->n_args + 1;
    r->args = args;
    *out = r;
    return TL_OK;
}

static bool values_equal(const tl_aeon_value *a, const tl_aeon_value *b) {
    switch (a->kind) {
    case TL_AEON_V_INT: case TL_AEON_V_BOOL: return a->i == b->i;
    case TL_AEON_V_FLOAT: return a->f == b->f;
    case TL_AEON_V_STRING: return a->s_len == b->s_len && !memcmp(a->s, b->s, a->s_len);
    case TL_AEON_V_UNIT: return true;
    default: return a == b;
    }
}

static int values_compare(const tl_aeon_value *a, const tl_aeon_value *b) {
    switch (a->kind) {
    case TL_AEON_V_INT: return (a->i > b->i) - (a->i < b->i);
    case TL_AEON_V_FLOAT: return (a->f > b->f) - (a->f < b->f);
    case TL_AEON_V_STRING: {
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

/* Python's float %: the remainder takes the divisor's sign. */
static double py_fmod(double x, double y) {
    double m = fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0)))
        m += y;
    return m;
}

/* Aeon evaluates its prelude's operators with Python's (aeon/prelude:
 * `lambda x: lambda y: x / y`, `x % y`, `x == y`, ...): Int `/` is true
 * division and gives a float (7 / 2 is 3.5, so `7 / 2 = 3` is false and
 * 6 / 2 = 3 is true), and a float meeting an int is compared and computed
 * as floats. A mixed pair is promoted here before the operator runs. */
static tl_status eval_binop(evaluator *ev, const tl_aeon_expr *e, const tl_aeon_value *a, const tl_aeon_value *b,
                            const tl_aeon_value **out) {
    tl_aeon_value fa, fb;
    bool a_num = a->kind == TL_AEON_V_INT || a->kind == TL_AEON_V_FLOAT;
    bool b_num = b->kind == TL_AEON_V_INT || b->kind == TL_AEON_V_FLOAT;
    bool int_div = e->op == TL_AEON_OP_DIV && a->kind == TL_AEON_V_INT && b->kind == TL_AEON_V_INT;
    if (a_num && b_num && (a->kind != b->kind || int_div)) {
        fa = *a;
        fb = *b;
        fa.kind = fb.kind = TL_AEON_V_FLOAT;
        if (a->kind == TL_AEON_V_INT)
            fa.f = (double)a->i;
        if (b->kind == TL_AEON_V_INT)
            fb.f = (double)b->i;
        a = &fa;
        b = &fb;
    }
    tl_aeon_value *r = new_value(ev, a->kind);
    if (!r)
        return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
    switch (e->op) {
    case TL_AEON_OP_EQ: case TL_AEON_OP_NE:
        r->kind = TL_AEON_V_BOOL;
        r->i = values_equal(a, b) == (e->op == TL_AEON_OP_EQ);
        break;
    case TL_AEON_OP_LT: case TL_AEON_OP_LE: case TL_AEON_OP_GT: case TL_AEON_OP_GE: {
        int c = values_compare(a, b);
        if (a->kind == TL_AEON_V_FLOAT && (isnan(a->f) || isnan(b->f)))
            c = 2; /* unordered: every comparison false */
        r->kind = TL_AEON_V_BOOL;
        r->i = e->op == TL_AEON_OP_LT ? c == -1 : e->op == TL_AEON_OP_LE ? (c == -1 || c == 0)
             : e->op == TL_AEON_OP_GT ? c == 1 : (c == 1 || c == 0);
        break;
    }
    case TL_AEON_OP_AND: case TL_AEON_OP_OR: /* short-circuiting happens in eval */
        r->i = b->i;
        break;
    default:
        if (a->kind == TL_AEON_V_STRING) { /* + only */
            if (a->s_len + b->s_len > MAX_STRING)
                return rt_err(ev, TL_ERR_LIMIT, e, "string longer than %u bytes", MAX_STRING);
            char *s = tl_arena_alloc(&ev->arena, a->s_len + b->s_len + 1);
            if (!s)
                return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
            memcpy(s, a->s, a->s_len);
            memcpy(s + a->s_len, b->s, b->s_len);
            r->s = s;
            r->s_len = a->s_len + b->s_len;
        } else if (a->kind == TL_AEON_V_FLOAT) {
            double x = a->f, y = b->f;
            if ((e->op == TL_AEON_OP_DIV || e->op == TL_AEON_OP_MOD) && y == 0.0)
                return rt_err(ev, TL_ERR_INVALID, e, "division by zero");
            r->f = e->op == TL_AEON_OP_ADD   ? x + y
                 : e->op == TL_AEON_OP_SUB   ? x - y
                 : e->op == TL_AEON_OP_MUL   ? x * y
                 : e->op == TL_AEON_OP_MOD ? py_fmod(x, y)
                                             : x / y;
        } else {
            int64_t x = a->i, y = b->i, z = 0;
            bool ovf = false;
            switch (e->op) {
            case TL_AEON_OP_ADD: ovf = __builtin_add_overflow(x, y, &z); break;
            case TL_AEON_OP_SUB: ovf = __builtin_sub_overflow(x, y, &z); break;
            case TL_AEON_OP_MUL: ovf = __builtin_mul_overflow(x, y, &z); break;
            case TL_AEON_OP_DIV: case TL_AEON_OP_MOD:
                if (y == 0)
                    return rt_err(ev, TL_ERR_INVALID, e, "integer division by zero");
                if (x == INT64_MIN && y == -1) {
                    ovf = true;
                    break;
                }
                z = floor_div(x, y);
                if (e->op == TL_AEON_OP_MOD)
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

static tl_status eval(evaluator *ev, const tl_aeon_expr *e, const venv *env, const tl_aeon_value **out) {
    if (--ev->fuel < 0)
        return rt_err(ev, TL_ERR_LIMIT, e, "evaluation step limit reached");
    if (++ev->depth > MAX_DEPTH)
        return rt_err(ev, TL_ERR_LIMIT, e, "evaluation deeper than %d", MAX_DEPTH);
    tl_status st = TL_OK;
    const tl_aeon_value *a, *b;
    tl_aeon_value *r;
    switch (e->kind) {
    case TL_AEON_E_INT: case TL_AEON_E_BOOL: case TL_AEON_E_FLOAT: case TL_AEON_E_STRING: case TL_AEON_E_UNIT:
        if (!(r = new_value(ev, e->kind == TL_AEON_E_INT ? TL_AEON_V_INT : e->kind == TL_AEON_E_BOOL ? TL_AEON_V_BOOL
                                : e->kind == TL_AEON_E_FLOAT ? TL_AEON_V_FLOAT : e->kind == TL_AEON_E_STRING ? TL_AEON_V_STRING : TL_AEON_V_UNIT)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->i = e->ival;
        r->f = e->fval;
        r->s = e->str;
        r->s_len = e->str_len;
        *out = r;
        break;
    case TL_AEON_E_VAR: {
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
            if (!(r = new_value(ev, TL_AEON_V_BUILTIN)))
                return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
            r->def = k;
            *out = r;
        } else {
            st = rt_err(ev, TL_ERR_INVALID, e, "unknown name '%s'", e->str);
        }
        break;
    }
    case TL_AEON_E_HOLE:
        if (!ev->candidate)
            return rt_err(ev, TL_ERR_INVALID, e, "evaluating an unfilled hole");
        st = eval(ev, ev->candidate, env, out);
        break;
    case TL_AEON_E_APP:
        if (!(st = eval(ev, e->a, env, &a)) && !(st = eval(ev, e->b, env, &b)))
            st = apply(ev, e, a, b, out);
        break;
    case TL_AEON_E_BINOP:
        if ((st = eval(ev, e->a, env, &a)))
            break;
        if ((e->op == TL_AEON_OP_AND && !a->i) || (e->op == TL_AEON_OP_OR && a->i)) {
            *out = a;
            break;
        }
        if (!(st = eval(ev, e->b, env, &b)))
            st = eval_binop(ev, e, a, b, out);
        break;
    case TL_AEON_E_NEG:
        if ((st = eval(ev, e->a, env, &a)))
            break;
        if (!(r = new_value(ev, a->kind)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        if (a->kind == TL_AEON_V_FLOAT) {
            r->f = -a->f;
        } else {
            if (a->i == INT64_MIN)
                return rt_err(ev, TL_ERR_INVALID, e, "integer overflow");
            r->i = -a->i;
        }
        *out = r;
        break;
    case TL_AEON_E_NOT:
        if ((st = eval(ev, e->a, env, &a)))
            break;
        if (!(r = new_value(ev, TL_AEON_V_BOOL)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->i = !a->i;
        *out = r;
        break;
    case TL_AEON_E_IF:
        if (!(st = eval(ev, e->a, env, &a)))
            st = eval(ev, a->i ? e->b : e->c, env, out);
        break;
    case TL_AEON_E_LET: {
        if ((st = eval(ev, e->a, env, &a)))
            break;
        venv *bn = tl_arena_alloc(&ev->arena, sizeof *bn);
        if (!bn)
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        *bn = (venv){e->str, a, env};
        st = eval(ev, e->b, bn, out);
        break;
    }
    case TL_AEON_E_FUN:
        if (!(r = new_value(ev, TL_AEON_V_CLOSURE)))
            return rt_err(ev, TL_ERR_NOMEM, e, "out of memory");
        r->fun = e;
        r->env = env;
        *out = r;
        break;
    case TL_AEON_E_ANNOT:
        st = eval(ev, e->a, env, out);
        break;
    }
    ev->depth--;
    if (!st && ev->arena.used > 64u * MAX_STRING)
        st = rt_err(ev, TL_ERR_LIMIT, e, "evaluation used more than %u MiB", 64u * MAX_STRING >> 20);
    return st;
}

static const tl_aeon_value *scalar_value(evaluator *ev, const tl_aeon_scalar *s) {
    tl_aeon_value *v = new_value(ev, s->kind);
    if (v) {
        v->i = s->i;
        v->f = s->f;
        v->s = s->s;
        v->s_len = s->s_len;
    }
    return v;
}

static void to_scalar(const tl_aeon_value *v, tl_aeon_scalar *out) {
    memset(out, 0, sizeof *out);
    out->kind = v->kind;
    out->i = v->i;
    out->f = v->f;
}

tl_status tl_aeon_eval_closed(tl_aeon_program *p, const tl_aeon_expr *e, const tl_aeon_expr *candidate, int64_t fuel, tl_aeon_scalar *out,
                         tl_error *err) {
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const tl_aeon_value *v;
    tl_status st = eval(&ev, e, NULL, &v);
    if (!st)
        to_scalar(v, out);
    tl_arena_free(&ev.arena);
    return st;
}

tl_status tl_aeon_eval_call_hole_def(tl_aeon_program *p, const tl_aeon_scalar *args, const tl_aeon_expr *candidate, int64_t fuel,
                                tl_aeon_scalar *out, tl_error *err) {
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const tl_aeon_def *d = &p->defs[p->hole_def];
    const tl_aeon_value **vals = tl_arena_alloc(&ev.arena, sizeof *vals * (size_t)(d->n_params + 1));
    tl_status st = TL_OK;
    if (!vals)
        st = tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    for (int i = 0; !st && i < d->n_params; i++)
        if (!(vals[i] = scalar_value(&ev, &args[i])))
            st = tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    const tl_aeon_value *v;
    if (!st && !(st = call_def(&ev, d->body, p->hole_def, vals, &v)))
        to_scalar(v, out);
    tl_arena_free(&ev.arena);
    return st;
}

tl_status tl_aeon_eval_pred(tl_aeon_program *p, const tl_aeon_rtype *rt, const tl_aeon_scalar *v, const tl_aeon_scalar *args,
                       const tl_aeon_expr *candidate, int64_t fuel, bool *holds, tl_error *err) {
    *holds = true;
    if (!rt->pred)
        return TL_OK;
    evaluator ev = {.prog = p, .candidate = candidate, .fuel = fuel, .err = err};
    const tl_aeon_def *d = &p->defs[p->hole_def];
    venv *nodes = tl_arena_alloc(&ev.arena, sizeof *nodes * (size_t)(d->n_params + 1));
    tl_status st = nodes ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    const venv *env = NULL;
    for (int i = 0; !st && args && i < d->n_params; i++) {
        nodes[i] = (venv){d->params[i].name, scalar_value(&ev, &args[i]), env};
        env = &nodes[i];
    }
    if (!st) {
        nodes[d->n_params] = (venv){rt->binder, scalar_value(&ev, v), env};
        const tl_aeon_value *r;
        if (!(st = eval(&ev, rt->pred, &nodes[d->n_params], &r)))
            *holds = r->i != 0;
    }
    tl_arena_free(&ev.arena);
    return st;
}
