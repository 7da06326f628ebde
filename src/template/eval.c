/* eval.c: walks the AST: expressions to values, statements to output.
 *
 * Scoping follows Jinja2: a for loop's body gets a fresh scope every
 * iteration (assignments inside a loop never leak out; namespace() objects
 * are how templates carry state across iterations), a macro call gets its
 * own scope whose parent is the scope the macro was defined in, and if
 * blocks share their enclosing scope.
 *
 * Failure (runtime error, raise_exception, exceeded bound) longjmps to the
 * render entry, which frees every capture buffer and the value arena: all
 * memory a render allocates is owned by the state, so no error path leaks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/internal.h"
#include "util/error.h"

static void exec(tl_render_state *st, tl_scope *sc, const tl_node *n);

/* ---- failure ----------------------------------------------------------------------- */

_Noreturn void tl_tpl_fail(tl_render_state *st, uint32_t pos, tl_status code, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (code == TL_ERR_LIMIT || code == TL_ERR_NOMEM || !strncmp(msg, "template:", 9)) {
        tl_error_set(st->err, code, "%s", msg);
    } else {
        int line, col;
        tl_tpl_linecol(st->t->src, st->t->len, pos ? pos : st->pos, &line, &col);
        tl_error_set(st->err, code, "template:%d:%d: %s", line, col, msg);
    }
    st->status = code;
    longjmp(st->fail, 1);
}

_Noreturn void tl_tpl_raise(tl_render_state *st, const char *msg, size_t n) {
    tl_error_set(st->err, TL_ERR_INVALID, "%.*s", (int)(n > 1000 ? 1000 : n), msg);
    st->status = TL_ERR_INVALID;
    longjmp(st->fail, 1);
}

void tl_tpl_step(tl_render_state *st, uint32_t pos) {
    if (++st->steps > st->max_steps)
        tl_tpl_fail(st, pos, TL_ERR_LIMIT, "template: work limit exceeded (%llu steps)",
                    (unsigned long long)st->max_steps);
}

static void enter(tl_render_state *st) {
    if (++st->depth > st->max_depth)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: nesting or recursion deeper than %d", st->max_depth);
}
static void leave(tl_render_state *st) { st->depth--; }

/* ---- captures ------------------------------------------------------------------------ */

tl_strbuf *tl_tpl_capture_push(tl_render_state *st) {
    if (st->n_captures == st->cap_captures) {
        size_t cap = st->cap_captures ? st->cap_captures * 2 : 16;
        tl_strbuf **nc = realloc(st->captures, cap * sizeof *nc);
        if (!nc)
            tl_tpl_fail(st, 0, TL_ERR_NOMEM, "template: out of memory");
        for (size_t i = st->cap_captures; i < cap; i++)
            nc[i] = NULL;
        st->captures = nc;
        st->cap_captures = cap;
    }
    tl_strbuf *b = st->captures[st->n_captures];
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b)
            tl_tpl_fail(st, 0, TL_ERR_NOMEM, "template: out of memory");
        st->captures[st->n_captures] = b;
    }
    tl_strbuf_clear(b);
    st->n_captures++;
    return b;
}

tl_val tl_tpl_capture_pop(tl_render_state *st) {
    tl_strbuf *b = st->captures[--st->n_captures];
    tl_val v = tl_val_str(st, b->buf ? b->buf : "", b->len);
    tl_strbuf_clear(b);
    return v;
}

/* ---- scopes ---------------------------------------------------------------------------- */

static tl_scope *scope_new(tl_render_state *st, tl_scope *parent) {
    tl_scope *s = tl_tpl_alloc(st, sizeof *s);
    s->parent = parent;
    return s;
}

static tl_val *scope_find(tl_scope *s, const char *name, size_t n) {
    for (; s; s = s->parent)
        for (size_t i = s->n; i-- > 0;)
            if (s->names[i].n == n && !memcmp(s->names[i].s, name, n))
                return &s->vals[i];
    return NULL;
}

static void scope_set(tl_render_state *st, tl_scope *s, tl_str name, tl_val v) {
    for (size_t i = 0; i < s->n; i++)
        if (s->names[i].n == name.n && !memcmp(s->names[i].s, name.s, name.n)) {
            s->vals[i] = v;
            return;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        s->names = tl_tpl_resize(st, s->names, s->n, cap, sizeof *s->names);
        s->vals = tl_tpl_resize(st, s->vals, s->n, cap, sizeof *s->vals);
        s->cap = cap;
    }
    s->names[s->n] = name;
    s->vals[s->n] = v;
    s->n++;
}

/* ---- attribute and item access ------------------------------------------------------------ */

_Noreturn static void undefined_use(tl_render_state *st, uint32_t pos, tl_val u) {
    if (u.n)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "'%.*s' is undefined", (int)(u.n > 200 ? 200 : u.n), u.u.s);
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "undefined value used");
}

/* A function value: a macro or caller (node, closure) or a bound method (self, name). */
static tl_val func_val(tl_render_state *st, tl_fn_kind kind, const tl_node *node, tl_scope *closure, tl_val self,
                       tl_str name) {
    tl_func *f = tl_tpl_alloc(st, sizeof *f);
    *f = (tl_func){.kind = kind, .node = node, .closure = closure, .self = self, .name = name};
    tl_val v = {.t = V_FUNC};
    v.u.fn = f;
    return v;
}

static tl_val bound_method(tl_render_state *st, tl_val self, tl_str name) {
    return func_val(st, FN_METHOD, NULL, NULL, self, name);
}

static tl_val loop_attr(tl_render_state *st, tl_val lv, tl_str name) {
    const tl_loop *lp = lv.u.lp;
    if (tl_str_eq(name, "index"))
        return tl_val_int(lp->index0 + 1);
    if (tl_str_eq(name, "index0"))
        return tl_val_int(lp->index0);
    if (tl_str_eq(name, "revindex"))
        return tl_val_int(lp->length - lp->index0);
    if (tl_str_eq(name, "revindex0"))
        return tl_val_int(lp->length - lp->index0 - 1);
    if (tl_str_eq(name, "first"))
        return tl_val_bool(lp->index0 == 0);
    if (tl_str_eq(name, "last"))
        return tl_val_bool(lp->index0 == lp->length - 1);
    if (tl_str_eq(name, "length"))
        return tl_val_int(lp->length);
    if (tl_str_eq(name, "depth"))
        return tl_val_int(lp->depth0 + 1);
    if (tl_str_eq(name, "depth0"))
        return tl_val_int(lp->depth0);
    if (tl_str_eq(name, "previtem"))
        return lp->index0 > 0 ? lp->items->v[lp->index0 - 1] : tl_val_undef("previtem", 8);
    if (tl_str_eq(name, "nextitem"))
        return lp->index0 + 1 < lp->length ? lp->items->v[lp->index0 + 1] : tl_val_undef("nextitem", 8);
    if (tl_str_eq(name, "cycle"))
        return bound_method(st, lv, name);
    return tl_val_undef(name.s, name.n);
}

static tl_val get_attr(tl_render_state *st, uint32_t pos, tl_val obj, tl_str name) {
    if (obj.t == V_UNDEF)
        undefined_use(st, pos, obj);
    if (name.n && name.s[0] == '_')
        return tl_val_undef(name.s, name.n); /* the sandbox hides private attributes */
    switch (obj.t) {
    case V_DICT: {
        if (tl_tpl_has_method(obj, name))
            return bound_method(st, obj, name);
        tl_val *v = tl_dict_get_str(obj.u.d, name.s, name.n);
        return v ? *v : tl_val_undef(name.s, name.n);
    }
    case V_NS: {
        tl_val *v = tl_dict_get_str(obj.u.d, name.s, name.n);
        return v ? *v : tl_val_undef(name.s, name.n);
    }
    case V_LOOP: return loop_attr(st, obj, name);
    case V_STR:
    case V_LIST:
        if (tl_tpl_has_method(obj, name))
            return bound_method(st, obj, name);
        return tl_val_undef(name.s, name.n);
    default: return tl_val_undef(name.s, name.n);
    }
}

static bool as_index(tl_val k, int64_t *i) {
    if (k.t == V_INT || k.t == V_BOOL) {
        *i = k.u.i;
        return true;
    }
    return false;
}

static tl_val get_item(tl_render_state *st, uint32_t pos, tl_val obj, tl_val key) {
    if (obj.t == V_UNDEF)
        undefined_use(st, pos, obj);
    int64_t i;
    switch (obj.t) {
    case V_DICT:
    case V_NS: {
        tl_val *v = tl_dict_get(obj.u.d, key);
        if (v)
            return *v;
        if (key.t == V_STR && obj.t == V_DICT && tl_tpl_has_method(obj, (tl_str){key.u.s, key.n}))
            return bound_method(st, obj, (tl_str){key.u.s, key.n});
        return key.t == V_STR ? tl_val_undef(key.u.s, key.n) : tl_val_undef(NULL, 0);
    }
    case V_LIST:
        if (as_index(key, &i)) {
            int64_t n = (int64_t)obj.u.l->n;
            if (i < 0)
                i += n;
            if (i >= 0 && i < n)
                return obj.u.l->v[i];
        }
        return tl_val_undef(NULL, 0);
    case V_STR:
        if (as_index(key, &i)) {
            int64_t n = (int64_t)tl_utf8_count(obj.u.s, obj.n);
            if (i < 0)
                i += n;
            if (i >= 0 && i < n) {
                size_t a = tl_utf8_offset(obj.u.s, obj.n, (size_t)i);
                size_t b = a;
                tl_utf8_next(obj.u.s, obj.n, &b);
                tl_val r = obj;
                r.u.s = obj.u.s + a;
                r.n = (uint32_t)(b - a);
                return r;
            }
        }
        return tl_val_undef(NULL, 0);
    case V_LOOP:
        if (key.t == V_STR)
            return loop_attr(st, obj, (tl_str){key.u.s, key.n});
        return tl_val_undef(NULL, 0);
    default: return tl_val_undef(NULL, 0);
    }
}

/* One given slice bound v (None/undefined: *out keeps its default) as
 * Python adjusts it for length n and step s: negative counts from the end,
 * then clamped to [0, n] (s > 0) or [-1, n - 1] (s < 0). */
static void slice_bound(tl_render_state *st, uint32_t pos, tl_val v, int64_t n, int64_t s, int64_t *out) {
    int64_t x;
    if (v.t == V_NONE || v.t == V_UNDEF)
        return;
    if (!as_index(v, &x))
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "slice indices must be integers");
    if (x < 0)
        x += n;
    if (s > 0)
        *out = x < 0 ? 0 : x > n ? n : x;
    else
        *out = x < 0 ? -1 : x >= n ? n - 1 : x;
}

/* Python slice bounds for length n */
static void slice_bounds(tl_render_state *st, uint32_t pos, int64_t n, tl_val a, tl_val b, tl_val c, int64_t *start,
                         int64_t *stop, int64_t *step) {
    int64_t s = 1;
    if (c.t != V_NONE && c.t != V_UNDEF) {
        if (!as_index(c, &s))
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "slice indices must be integers");
        if (s == 0)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "slice step cannot be zero");
    }
    int64_t lo, hi;
    if (s > 0) {
        lo = 0;
        hi = n;
    } else {
        lo = n - 1;
        hi = -1;
    }
    slice_bound(st, pos, a, n, s, &lo);
    slice_bound(st, pos, b, n, s, &hi);
    *start = lo;
    *stop = hi;
    *step = s;
}

static tl_val do_slice(tl_render_state *st, uint32_t pos, tl_val obj, tl_val a, tl_val b, tl_val c) {
    int64_t start, stop, step;
    if (obj.t == V_UNDEF)
        undefined_use(st, pos, obj);
    if (obj.t == V_LIST) {
        slice_bounds(st, pos, (int64_t)obj.u.l->n, a, b, c, &start, &stop, &step);
        tl_list *l = tl_list_new(st, 0);
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            tl_tpl_step(st, pos);
            tl_list_push(st, l, obj.u.l->v[i]);
        }
        tl_val r = tl_val_list(l);
        r.flags = obj.flags;
        return r;
    }
    if (obj.t == V_STR) {
        bool ascii = true;
        for (size_t i = 0; i < obj.n && ascii; i++)
            ascii = (unsigned char)obj.u.s[i] < 0x80;
        int64_t n = ascii ? (int64_t)obj.n : (int64_t)tl_utf8_count(obj.u.s, obj.n);
        slice_bounds(st, pos, n, a, b, c, &start, &stop, &step);
        if (step == 1) {
            if (stop <= start)
                return tl_val_cstr_static("");
            size_t x = ascii ? (size_t)start : tl_utf8_offset(obj.u.s, obj.n, (size_t)start);
            size_t y = ascii ? (size_t)stop : tl_utf8_offset(obj.u.s, obj.n, (size_t)stop);
            tl_val r = obj;
            r.u.s = obj.u.s + x;
            r.n = (uint32_t)(y - x);
            return r;
        }
        /* general step: collect code point offsets */
        size_t *offs = tl_tpl_alloc(st, ((size_t)n + 1) * sizeof *offs);
        size_t i = 0;
        for (int64_t k = 0; k < n; k++) {
            offs[k] = i;
            tl_utf8_next(obj.u.s, obj.n, &i);
        }
        offs[n] = obj.n;
        tl_strbuf *out = tl_tpl_capture_push(st);
        for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
            tl_tpl_step(st, pos);
            tl_tpl_put(st, out, obj.u.s + offs[k], offs[k + 1] - offs[k]);
        }
        return tl_tpl_capture_pop(st);
    }
    if (obj.t == V_NONE)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "'NoneType' object is not subscriptable");
    return tl_val_undef(NULL, 0);
}

/* ---- operators ------------------------------------------------------------------------------ */

static bool is_num(tl_val v) { return v.t == V_BOOL || v.t == V_INT || v.t == V_FLOAT; }
static double num_d(tl_val v) { return v.t == V_FLOAT ? v.u.f : (double)v.u.i; }

static tl_val concat_str(tl_render_state *st, tl_val a, tl_val b) {
    if (!a.n)
        return b;
    if (!b.n)
        return a;
    if ((size_t)a.n + b.n > st->max_output)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: string longer than %zu bytes", st->max_output);
    char *p = tl_tpl_alloc(st, (size_t)a.n + b.n + 1);
    if (a.n)
        memcpy(p, a.u.s, a.n);
    if (b.n)
        memcpy(p + a.n, b.u.s, b.n);
    tl_val r = {.t = V_STR, .n = a.n + b.n};
    r.u.s = p;
    return r;
}

_Noreturn static void bad_operands(tl_render_state *st, uint32_t pos, const char *op, tl_val a, tl_val b) {
    if (a.t == V_UNDEF)
        undefined_use(st, pos, a);
    if (b.t == V_UNDEF)
        undefined_use(st, pos, b);
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "unsupported operand type(s) for %s: '%s' and '%s'", op, tl_val_type_name(a),
                tl_val_type_name(b));
}

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static tl_val binop(tl_render_state *st, uint32_t pos, int op, tl_val a, tl_val b) {
    static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**", "~"};
    if (op == OP_CONCAT)
        return concat_str(st, tl_val_to_str(st, a), tl_val_to_str(st, b));
    if (is_num(a) && is_num(b)) {
        bool ints = a.t != V_FLOAT && b.t != V_FLOAT;
        int64_t x = a.u.i, y = b.u.i, r;
        double fx = num_d(a), fy = num_d(b);
        switch (op) {
        case OP_ADD:
            if (ints && !__builtin_add_overflow(x, y, &r))
                return tl_val_int(r);
            return tl_val_float(fx + fy);
        case OP_SUB:
            if (ints && !__builtin_sub_overflow(x, y, &r))
                return tl_val_int(r);
            return tl_val_float(fx - fy);
        case OP_MUL:
            if (ints && !__builtin_mul_overflow(x, y, &r))
                return tl_val_int(r);
            return tl_val_float(fx * fy);
        case OP_DIV:
            if (fy == 0)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "division by zero");
            return tl_val_float(fx / fy);
        case OP_FDIV:
        case OP_MOD:
            if (fy == 0)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "integer division or modulo by zero");
            if (ints && !(x == INT64_MIN && y == -1)) {
                int64_t q = floordiv(x, y);
                return op == OP_FDIV ? tl_val_int(q) : tl_val_int(x - q * y);
            } else {
                double q = __builtin_floor(fx / fy);
                if (op == OP_FDIV)
                    return tl_val_float(q);
                double m = __builtin_fmod(fx, fy);
                if (m != 0 && ((m < 0) != (fy < 0)))
                    m += fy;
                return tl_val_float(m);
            }
        case OP_POW:
            if (ints && y >= 0) {
                int64_t acc = 1;
                bool ovf = false;
                for (int64_t k = 0; k < y && !ovf; k++) {
                    ovf = __builtin_mul_overflow(acc, x, &acc);
                    if (x == 0 || x == 1)
                        break;
                }
                if (x == 0 && y > 0)
                    acc = 0;
                if (!ovf)
                    return tl_val_int(acc);
            }
            return tl_val_float(__builtin_pow(fx, fy));
        }
    }
    if (op == OP_ADD && a.t == V_STR && b.t == V_STR)
        return concat_str(st, a, b);
    if (op == OP_ADD && a.t == V_LIST && b.t == V_LIST) {
        tl_list *l = tl_list_new(st, a.u.l->n + b.u.l->n);
        for (size_t i = 0; i < a.u.l->n; i++)
            l->v[l->n++] = a.u.l->v[i];
        for (size_t i = 0; i < b.u.l->n; i++)
            l->v[l->n++] = b.u.l->v[i];
        tl_val r = tl_val_list(l);
        r.flags = a.flags;
        return r;
    }
    if (op == OP_MUL && ((a.t == V_STR && (b.t == V_INT || b.t == V_BOOL)) || (b.t == V_STR && (a.t == V_INT || a.t == V_BOOL)))) {
        tl_val s = a.t == V_STR ? a : b;
        int64_t k = a.t == V_STR ? b.u.i : a.u.i;
        if (k <= 0 || !s.n)
            return tl_val_cstr_static("");
        if ((uint64_t)k > st->max_output / s.n)
            tl_tpl_fail(st, pos, TL_ERR_LIMIT, "template: string longer than %zu bytes", st->max_output);
        size_t total = (size_t)k * s.n;
        st->steps += total / 64;
        tl_tpl_step(st, pos);
        char *p = tl_tpl_alloc(st, total + 1);
        for (int64_t i = 0; i < k; i++)
            if (s.n)
                memcpy(p + (size_t)i * s.n, s.u.s, s.n);
        tl_val r = {.t = V_STR, .n = (uint32_t)total};
        r.u.s = p;
        return r;
    }
    if (op == OP_MOD && a.t == V_STR) {
        /* printf-style formatting: %s and %d with one value or a tuple */
        const tl_list *args = b.t == V_LIST && (b.flags & VF_TUPLE) ? b.u.l : NULL;
        size_t ai = 0;
        tl_strbuf *out = tl_tpl_capture_push(st);
        for (size_t i = 0; i < a.n; i++) {
            char c = a.u.s[i];
            if (c != '%' || i + 1 >= a.n) {
                tl_tpl_put(st, out, &c, 1);
                continue;
            }
            char f = a.u.s[++i];
            if (f == '%') {
                tl_tpl_put(st, out, "%", 1);
                continue;
            }
            tl_val arg;
            if (args) {
                if (ai >= args->n)
                    tl_tpl_fail(st, pos, TL_ERR_INVALID, "not enough arguments for format string");
                arg = args->v[ai++];
            } else {
                if (ai++)
                    tl_tpl_fail(st, pos, TL_ERR_INVALID, "not enough arguments for format string");
                arg = b;
            }
            if (f == 's')
                tl_val_str_to(st, out, arg);
            else if (f == 'r')
                tl_val_repr_to(st, out, arg);
            else if ((f == 'd' || f == 'i') && is_num(arg))
                tl_val_str_to(st, out, tl_val_int(arg.t == V_FLOAT ? (int64_t)arg.u.f : arg.u.i));
            else
                tl_tpl_fail(st, pos, TL_ERR_UNSUPPORTED, "unsupported format character '%c'", f);
        }
        return tl_tpl_capture_pop(st);
    }
    bad_operands(st, pos, names[op], a, b);
}

static bool contains(tl_render_state *st, uint32_t pos, tl_val item, tl_val container) {
    switch (container.t) {
    case V_STR:
        if (item.t != V_STR)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "'in <string>' requires string as left operand, not %s",
                        tl_val_type_name(item));
        if (!item.n)
            return true;
        for (size_t i = 0; i + item.n <= container.n; i++)
            if (container.u.s[i] == item.u.s[0] && !memcmp(container.u.s + i, item.u.s, item.n))
                return true;
        return false;
    case V_LIST:
        for (size_t i = 0; i < container.u.l->n; i++)
            if (tl_val_equal(container.u.l->v[i], item))
                return true;
        return false;
    case V_DICT:
    case V_NS: return tl_dict_get(container.u.d, item) != NULL;
    case V_UNDEF: return false;
    default:
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "argument of type '%s' is not iterable", tl_val_type_name(container));
    }
}

static bool compare(tl_render_state *st, uint32_t pos, int op, tl_val a, tl_val b) {
    switch (op) {
    case CMP_EQ: return tl_val_equal(a, b);
    case CMP_NE: return !tl_val_equal(a, b);
    case CMP_IN: return contains(st, pos, a, b);
    case CMP_NOTIN: return !contains(st, pos, a, b);
    default: {
        if (a.t == V_UNDEF)
            undefined_use(st, pos, a);
        if (b.t == V_UNDEF)
            undefined_use(st, pos, b);
        int c = tl_val_compare(st, pos, a, b);
        return op == CMP_LT ? c < 0 : op == CMP_LE ? c <= 0 : op == CMP_GT ? c > 0 : c >= 0;
    }
    }
}

/* ---- calls ------------------------------------------------------------------------------------ */

static tl_val call_macro(tl_render_state *st, uint32_t pos, const tl_func *f, size_t argc, const tl_val *argv,
                         size_t kwc, const tl_str *kwn, const tl_val *kwv, tl_val caller) {
    const tl_node *m = f->node;
    bool is_caller = f->kind == FN_CALLER;
    if (argc > m->n_names)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "macro '%.*s' takes not more than %zu argument(s)", (int)m->name.n,
                    m->name.s, m->n_names);
    enter(st);
    tl_scope *sc = scope_new(st, f->closure);
    bool *bound = tl_tpl_alloc(st, m->n_names + 1);
    for (size_t i = 0; i < argc; i++) {
        scope_set(st, sc, m->names[i], argv[i]);
        bound[i] = true;
    }
    for (size_t k = 0; k < kwc; k++) {
        size_t i = 0;
        while (i < m->n_names && !(m->names[i].n == kwn[k].n && !memcmp(m->names[i].s, kwn[k].s, kwn[k].n)))
            i++;
        if (i == m->n_names)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "macro '%.*s' takes no keyword argument '%.*s'", (int)m->name.n,
                        m->name.s, (int)kwn[k].n, kwn[k].s);
        scope_set(st, sc, m->names[i], kwv[k]);
        bound[i] = true;
    }
    for (size_t i = 0; i < m->n_names; i++)
        if (!bound[i])
            scope_set(st, sc, m->names[i],
                      m->kids[i] ? tl_tpl_eval(st, sc, m->kids[i]) : tl_val_undef(m->names[i].s, m->names[i].n));
    if (caller.t == V_FUNC)
        scope_set(st, sc, (tl_str){"caller", 6}, caller);
    tl_strbuf *saved = st->out;
    st->out = tl_tpl_capture_push(st);
    exec(st, sc, is_caller ? m->b : m->a);
    st->signal = 0;
    tl_val r = tl_tpl_capture_pop(st);
    st->out = saved;
    leave(st);
    return r;
}

static void run_for(tl_render_state *st, tl_scope *sc, const tl_node *n, const tl_list *items, int depth0);

tl_val tl_tpl_call_value(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_val fn, size_t argc, const tl_val *argv,
                         size_t kwc, const tl_str *kwn, const tl_val *kwv) {
    if (fn.t == V_UNDEF)
        undefined_use(st, pos, fn);
    if (fn.t == V_LOOP) {
        /* loop(children) in a recursive for */
        const tl_loop *lp = fn.u.lp;
        if (!lp->for_node || !lp->for_node->negated)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "loop() called in a loop that is not recursive");
        if (argc != 1)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "loop() takes one argument");
        const tl_list *items = tl_tpl_iterate(st, pos, argv[0]);
        tl_strbuf *saved = st->out;
        st->out = tl_tpl_capture_push(st);
        enter(st);
        run_for(st, lp->scope, lp->for_node, items, lp->depth0 + 1);
        leave(st);
        tl_val r = tl_tpl_capture_pop(st);
        st->out = saved;
        return r;
    }
    if (fn.t != V_FUNC)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "'%s' object is not callable", tl_val_type_name(fn));
    const tl_func *f = fn.u.fn;
    switch (f->kind) {
    case FN_BUILTIN: return tl_tpl_call_builtin(st, pos, f->builtin, argc, argv, kwc, kwn, kwv);
    case FN_METHOD:
        if (f->self.t == V_LOOP && tl_str_eq(f->name, "cycle")) {
            if (!argc)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "no items for cycling given");
            return argv[f->self.u.lp->index0 % (int64_t)argc];
        }
        return tl_tpl_method(st, pos, f->self, f->name, argc, argv, kwc, kwn, kwv);
    case FN_MACRO:
    case FN_CALLER: return call_macro(st, pos, f, argc, argv, kwc, kwn, kwv, tl_val_undef(NULL, 0));
    default: tl_tpl_fail(st, pos, TL_ERR_INTERNAL, "bad function");
    }
    (void)sc;
}

/* evaluates a call node's arguments into arena arrays */
static void eval_args(tl_render_state *st, tl_scope *sc, const tl_node *n, tl_val **argv, tl_val **kwv) {
    *argv = n->n_kids ? tl_tpl_alloc(st, n->n_kids * sizeof **argv) : NULL;
    for (size_t i = 0; i < n->n_kids; i++)
        (*argv)[i] = tl_tpl_eval(st, sc, n->kids[i]);
    *kwv = n->n_kw ? tl_tpl_alloc(st, n->n_kw * sizeof **kwv) : NULL;
    for (size_t i = 0; i < n->n_kw; i++)
        (*kwv)[i] = tl_tpl_eval(st, sc, n->kwvals[i]);
}

static tl_val apply_filter(tl_render_state *st, tl_scope *sc, const tl_node *f, tl_val subject) {
    tl_val *argv, *kwv;
    eval_args(st, sc, f, &argv, &kwv);
    return tl_tpl_filter(st, sc, f->pos, f->name, subject, f->n_kids, argv, f->n_kw, f->kwnames, kwv);
}

/* a chain parsed with NULL innermost subject (set-block and filter-block) */
static tl_val apply_chain(tl_render_state *st, tl_scope *sc, const tl_node *f, tl_val subject) {
    if (!f)
        return subject;
    return apply_filter(st, sc, f, apply_chain(st, sc, f->a, subject));
}

/* ---- expressions -------------------------------------------------------------------------------- */

static tl_val lookup(tl_render_state *st, tl_scope *sc, tl_str name) {
    tl_val *v = scope_find(sc, name.s, name.n);
    if (v)
        return *v;
    tl_val g;
    if (tl_tpl_global(name, &g))
        return g;
    return tl_val_undef(name.s, name.n);
}

tl_val tl_tpl_eval(tl_render_state *st, tl_scope *sc, const tl_node *n) {
    tl_tpl_step(st, n->pos);
    st->pos = n->pos;
    switch (n->kind) {
    case N_LIT: return n->lit;
    case N_NAME: return lookup(st, sc, n->name);
    default: break;
    }
    enter(st);
    tl_val r;
    switch (n->kind) {
    case N_ATTR: r = get_attr(st, n->pos, tl_tpl_eval(st, sc, n->a), n->name); break;
    case N_ITEM: {
        tl_val obj = tl_tpl_eval(st, sc, n->a);
        r = get_item(st, n->pos, obj, tl_tpl_eval(st, sc, n->b));
        break;
    }
    case N_SLICE: {
        tl_val obj = tl_tpl_eval(st, sc, n->a);
        tl_val none = tl_val_none();
        tl_val a = n->b ? tl_tpl_eval(st, sc, n->b) : none;
        tl_val b = n->c ? tl_tpl_eval(st, sc, n->c) : none;
        tl_val c = n->d ? tl_tpl_eval(st, sc, n->d) : none;
        r = do_slice(st, n->pos, obj, a, b, c);
        break;
    }
    case N_CALL: {
        tl_val *argv, *kwv;
        if (n->a->kind == N_ATTR) {
            /* obj.method(...) without allocating a bound method */
            tl_val obj = tl_tpl_eval(st, sc, n->a->a);
            if ((obj.t == V_STR || obj.t == V_LIST || obj.t == V_DICT) && tl_tpl_has_method(obj, n->a->name) &&
                !(n->a->name.n && n->a->name.s[0] == '_')) {
                eval_args(st, sc, n, &argv, &kwv);
                r = tl_tpl_method(st, n->pos, obj, n->a->name, n->n_kids, argv, n->n_kw, n->kwnames, kwv);
                break;
            }
            tl_val fn = get_attr(st, n->a->pos, obj, n->a->name);
            eval_args(st, sc, n, &argv, &kwv);
            r = tl_tpl_call_value(st, sc, n->pos, fn, n->n_kids, argv, n->n_kw, n->kwnames, kwv);
            break;
        }
        tl_val fn = tl_tpl_eval(st, sc, n->a);
        eval_args(st, sc, n, &argv, &kwv);
        r = tl_tpl_call_value(st, sc, n->pos, fn, n->n_kids, argv, n->n_kw, n->kwnames, kwv);
        break;
    }
    case N_FILTER: r = apply_filter(st, sc, n, tl_tpl_eval(st, sc, n->a)); break;
    case N_TEST: {
        tl_val subj = tl_tpl_eval(st, sc, n->a);
        tl_val *argv, *kwv;
        eval_args(st, sc, n, &argv, &kwv);
        bool b = tl_tpl_test(st, sc, n->pos, n->name, subj, n->n_kids, argv);
        r = tl_val_bool(n->negated ? !b : b);
        break;
    }
    case N_BIN: {
        tl_val a = tl_tpl_eval(st, sc, n->a);
        r = binop(st, n->pos, n->op, a, tl_tpl_eval(st, sc, n->b));
        break;
    }
    case N_NEG:
    case N_POS: {
        tl_val a = tl_tpl_eval(st, sc, n->a);
        if (a.t == V_INT || a.t == V_BOOL)
            r = tl_val_int(n->kind == N_NEG ? (a.u.i == INT64_MIN ? a.u.i : -a.u.i) : a.u.i);
        else if (a.t == V_FLOAT)
            r = tl_val_float(n->kind == N_NEG ? -a.u.f : a.u.f);
        else if (a.t == V_UNDEF)
            undefined_use(st, n->pos, a);
        else
            tl_tpl_fail(st, n->pos, TL_ERR_INVALID, "bad operand type for unary %c: '%s'",
                        n->kind == N_NEG ? '-' : '+', tl_val_type_name(a));
        break;
    }
    case N_NOT: r = tl_val_bool(!tl_val_truthy(tl_tpl_eval(st, sc, n->a))); break;
    case N_AND: {
        tl_val a = tl_tpl_eval(st, sc, n->a);
        r = tl_val_truthy(a) ? tl_tpl_eval(st, sc, n->b) : a;
        break;
    }
    case N_OR: {
        tl_val a = tl_tpl_eval(st, sc, n->a);
        r = tl_val_truthy(a) ? a : tl_tpl_eval(st, sc, n->b);
        break;
    }
    case N_CMP: {
        tl_val a = tl_tpl_eval(st, sc, n->kids[0]);
        r = tl_val_bool(true);
        for (size_t i = 1; i < n->n_kids; i++) {
            tl_val b = tl_tpl_eval(st, sc, n->kids[i]);
            if (!compare(st, n->pos, n->cmp_ops[i - 1], a, b)) {
                r = tl_val_bool(false);
                break;
            }
            a = b;
        }
        break;
    }
    case N_COND:
        if (tl_val_truthy(tl_tpl_eval(st, sc, n->b)))
            r = tl_tpl_eval(st, sc, n->a);
        else
            r = n->c ? tl_tpl_eval(st, sc, n->c) : tl_val_undef(NULL, 0);
        break;
    case N_LIST:
    case N_TUPLE: {
        tl_list *l = tl_list_new(st, n->n_kids);
        for (size_t i = 0; i < n->n_kids; i++)
            l->v[l->n++] = tl_tpl_eval(st, sc, n->kids[i]);
        r = tl_val_list(l);
        if (n->kind == N_TUPLE)
            r.flags = VF_TUPLE;
        break;
    }
    case N_DICT: {
        tl_dict *d = tl_dict_new(st, n->n_kids / 2);
        for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
            tl_val k = tl_tpl_eval(st, sc, n->kids[i]);
            tl_dict_set(st, d, k, tl_tpl_eval(st, sc, n->kids[i + 1]));
        }
        r = tl_val_dict(d);
        break;
    }
    default: tl_tpl_fail(st, n->pos, TL_ERR_INTERNAL, "template: bad expression node %d", n->kind);
    }
    leave(st);
    return r;
}

/* ---- statements ------------------------------------------------------------------------------------ */

static void assign_targets(tl_render_state *st, tl_scope *sc, const tl_node *n, tl_val v) {
    if (n->n_names == 1) {
        scope_set(st, sc, n->names[0], v);
        return;
    }
    const tl_list *items = tl_tpl_iterate(st, n->pos, v);
    if (items->n != n->n_names)
        tl_tpl_fail(st, n->pos, TL_ERR_INVALID, "%s values to unpack (expected %zu, got %zu)",
                    items->n > n->n_names ? "too many" : "not enough", n->n_names, items->n);
    for (size_t i = 0; i < n->n_names; i++)
        scope_set(st, sc, n->names[i], items->v[i]);
}

static void run_for(tl_render_state *st, tl_scope *sc, const tl_node *n, const tl_list *items, int depth0) {
    /* the optional 'if' filters first; loop.length counts what is left */
    if (n->d) {
        tl_list *kept = tl_list_new(st, 0);
        tl_scope *fs = scope_new(st, sc);
        for (size_t i = 0; i < items->n; i++) {
            fs->n = 0;
            assign_targets(st, fs, n, items->v[i]);
            if (tl_val_truthy(tl_tpl_eval(st, fs, n->d)))
                tl_list_push(st, kept, items->v[i]);
        }
        items = kept;
    }
    if (!items->n) {
        if (n->c)
            exec(st, sc, n->c);
        return;
    }
    tl_loop *lp = tl_tpl_alloc(st, sizeof *lp);
    lp->length = (int64_t)items->n;
    lp->items = items;
    lp->for_node = n;
    lp->scope = sc;
    lp->depth0 = depth0;
    tl_val lv = {.t = V_LOOP};
    lv.u.lp = lp;
    tl_scope *body = scope_new(st, sc);
    for (size_t i = 0; i < items->n; i++) {
        tl_tpl_step(st, n->pos);
        lp->index0 = (int64_t)i;
        body->n = 0; /* a fresh scope per iteration */
        scope_set(st, body, (tl_str){"loop", 4}, lv);
        assign_targets(st, body, n, items->v[i]);
        exec(st, body, n->b);
        if (st->signal == 1) {
            st->signal = 0;
            break;
        }
        st->signal = 0;
    }
}

/* The output of a block's body (n->a), captured, through its filter chain
 * (n->b): the value of {% set x %}...{% endset %} and {% filter %} blocks. */
static tl_val filtered_body(tl_render_state *st, tl_scope *sc, const tl_node *n) {
    tl_strbuf *saved = st->out;
    st->out = tl_tpl_capture_push(st);
    exec(st, sc, n->a);
    tl_val v = tl_tpl_capture_pop(st);
    st->out = saved;
    return apply_chain(st, sc, n->b, v);
}

static void exec(tl_render_state *st, tl_scope *sc, const tl_node *n) {
    tl_tpl_step(st, n->pos);
    st->pos = n->pos;
    enter(st);
    switch (n->kind) {
    case N_BODY:
        for (size_t i = 0; i < n->n_kids && !st->signal; i++)
            exec(st, sc, n->kids[i]);
        break;
    case N_TEXT: tl_tpl_put(st, st->out, n->lit.u.s, n->lit.n); break;
    case N_PRINT: {
        tl_val v = tl_tpl_eval(st, sc, n->a);
        if (v.t == V_STR)
            tl_tpl_put(st, st->out, v.u.s, v.n);
        else
            tl_val_str_to(st, st->out, v);
        break;
    }
    case N_IF:
        if (tl_val_truthy(tl_tpl_eval(st, sc, n->a)))
            exec(st, sc, n->b);
        else if (n->c)
            exec(st, sc, n->c);
        break;
    case N_FOR: {
        tl_val it = tl_tpl_eval(st, sc, n->a);
        run_for(st, sc, n, tl_tpl_iterate(st, n->a->pos, it), 0);
        break;
    }
    case N_SET: {
        tl_val v = tl_tpl_eval(st, sc, n->a);
        if (n->name.n) {
            tl_val *ns = scope_find(sc, n->names[0].s, n->names[0].n);
            if (!ns || ns->t != V_NS)
                tl_tpl_fail(st, n->pos, TL_ERR_INVALID, "cannot assign attribute on non-namespace object");
            tl_dict_set(st, ns->u.d, tl_val_str(st, n->name.s, n->name.n), v);
        } else
            assign_targets(st, sc, n, v);
        break;
    }
    case N_SETBLOCK:
        scope_set(st, sc, n->names[0], filtered_body(st, sc, n));
        break;
    case N_MACRO:
        scope_set(st, sc, n->name, func_val(st, FN_MACRO, n, sc, (tl_val){0}, (tl_str){0}));
        break;
    case N_CALLBLOCK: {
        tl_val caller = func_val(st, FN_CALLER, n, sc, (tl_val){0}, (tl_str){0});
        const tl_node *call = n->a;
        tl_val fn = tl_tpl_eval(st, sc, call->a);
        tl_val *argv, *kwv;
        eval_args(st, sc, call, &argv, &kwv);
        tl_val r;
        if (fn.t == V_FUNC && fn.u.fn->kind == FN_MACRO)
            r = call_macro(st, call->pos, fn.u.fn, call->n_kids, argv, call->n_kw, call->kwnames, kwv, caller);
        else
            r = tl_tpl_call_value(st, sc, call->pos, fn, call->n_kids, argv, call->n_kw, call->kwnames, kwv);
        tl_val_str_to(st, st->out, r);
        break;
    }
    case N_FILTERBLOCK: {
        tl_val v = filtered_body(st, sc, n);
        tl_val_str_to(st, st->out, v);
        break;
    }
    case N_BREAK: st->signal = 1; break;
    case N_CONTINUE: st->signal = 2; break;
    default: tl_tpl_fail(st, n->pos, TL_ERR_INTERNAL, "template: bad statement node %d", n->kind);
    }
    leave(st);
}

/* ---- entry points ------------------------------------------------------------------------------------ */

tl_status tl_template_render(const tl_template *t, const json_t *vars, const tl_template_opts *opts, tl_strbuf *out,
                             tl_error *err) {
    tl_render_state *st = calloc(1, sizeof *st);
    if (!st)
        return tl_error_set(err, TL_ERR_NOMEM, "template: out of memory");
    const tl_template_limits *lim = opts ? opts->limits : NULL;
    st->t = t;
    st->out = out;
    st->err = err;
    st->max_output = (lim && lim->max_output ? lim->max_output : TL_TEMPLATE_MAX_OUTPUT);
    st->max_steps = lim && lim->max_steps ? lim->max_steps : TL_TEMPLATE_MAX_STEPS;
    st->max_depth = lim && lim->max_depth ? lim->max_depth : TL_TEMPLATE_MAX_DEPTH;
    st->arena.limit = lim && lim->max_memory ? lim->max_memory : TL_TEMPLATE_MAX_MEMORY;
    st->fixed_now = opts && opts->fixed_now;
    st->now_unix = opts ? opts->now_unix : 0;
    size_t base = out->len;
    st->max_output += base;
    tl_status status = TL_OK;
    if (setjmp(st->fail)) {
        status = st->status ? st->status : TL_ERR_INTERNAL;
    } else {
        tl_scope *globals = scope_new(st, NULL);
        if (vars && json_is_object(vars)) {
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)vars, k, v) {
                size_t kn = strlen(k);
                char *name = tl_tpl_alloc(st, kn + 1);
                memcpy(name, k, kn);
                scope_set(st, globals, (tl_str){name, kn}, tl_val_from_json(st, v));
            }
        }
        tl_scope *top = scope_new(st, globals);
        exec(st, top, t->root);
    }
    for (size_t i = 0; i < st->cap_captures; i++)
        if (st->captures[i]) {
            tl_strbuf_free(st->captures[i]);
            free(st->captures[i]);
        }
    free(st->captures);
    tl_arena_free(&st->arena);
    free(st);
    return status;
}

tl_status tl_chat_render(const tl_template *t, const tl_chat_request *req, const tl_template_opts *opts, tl_strbuf *out,
                         tl_error *err) {
    if (!req->messages || !json_is_array(req->messages))
        return tl_error_set(err, TL_ERR_INVALID, "chat template: messages must be a JSON array");
    json_t *vars = json_object();
    if (!vars)
        return tl_error_set(err, TL_ERR_NOMEM, "chat template: out of memory");
    bool ok = !json_object_set(vars, "messages", (json_t *)req->messages);
    ok &= !json_object_set_new(vars, "add_generation_prompt", json_boolean(req->add_generation_prompt));
    ok &= !json_object_set_new(vars, "tools", req->tools ? json_incref((json_t *)req->tools) : json_null());
    ok &= !json_object_set_new(vars, "documents", json_null());
    ok &= !json_object_set_new(vars, "bos_token", json_string(req->bos_token ? req->bos_token : ""));
    ok &= !json_object_set_new(vars, "eos_token", json_string(req->eos_token ? req->eos_token : ""));
    if (req->vars && json_is_object(req->vars))
        ok &= !json_object_update(vars, (json_t *)req->vars);
    tl_status st = ok ? tl_template_render(t, vars, opts, out, err)
                      : tl_error_set(err, TL_ERR_INVALID, "chat template: bos/eos tokens must be UTF-8");
    json_decref(vars);
    return st;
}

/* JSON text -> value, with the position of a syntax error */
static tl_status load_json_text(const char *what, const char *text, json_t **out, tl_error *err) {
    *out = NULL;
    if (!text)
        return TL_OK;
    json_error_t je;
    *out = json_loads(text, JSON_DECODE_ANY, &je);
    if (!*out)
        return tl_error_set(err, TL_ERR_INVALID, "chat template: %s: JSON %d:%d: %s", what, je.line, je.column,
                            je.text);
    return TL_OK;
}

tl_status tl_template_render_chat(const tl_template *t, const tl_chat_text_request *req, const tl_template_opts *opts,
                                  tl_strbuf *out, tl_error *err) {
    json_t *msgs = NULL, *tools = NULL, *vars = NULL;
    tl_status st = load_json_text("messages", req->messages_json, &msgs, err);
    if (!st)
        st = load_json_text("tools", req->tools_json, &tools, err);
    if (!st)
        st = load_json_text("vars", req->vars_json, &vars, err);
    if (!st && vars && !json_is_object(vars))
        st = tl_error_set(err, TL_ERR_INVALID, "chat template: vars must be a JSON object");
    if (!st) {
        tl_chat_request r = {.messages = msgs,
                             .add_generation_prompt = req->add_generation_prompt,
                             .bos_token = req->bos_token,
                             .eos_token = req->eos_token,
                             .tools = json_is_null(tools) ? NULL : tools,
                             .vars = vars};
        st = tl_chat_render(t, &r, opts, out, err);
    }
    json_decref(msgs);
    json_decref(tools);
    json_decref(vars);
    return st;
}
