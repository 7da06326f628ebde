/* check.c: types, the whole-program type checker and the hole's typing
 * context (the front end's second half, after syntax.c).
 *
 * Checking is bidirectional with refinements erased: literals, names,
 * applications and operators infer; `fun` needs an expected arrow type;
 * if-branches, let bodies and lambda bodies are checked against the expected
 * type. The hole needs an expected type, which becomes the goal; the names in
 * scope there (innermost first, shadowed ones dropped) become its context. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/internal.h"
#include "aeon/lexicon.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/fileio.h"

/* ---- types ---------------------------------------------------------------- */

void tl_aeon_types_init(tl_aeon_types *tt) {
    memset(tt, 0, sizeof *tt);
    tt->n = TL_AEON_N_BASE;
    for (int i = 0; i < TL_AEON_N_BASE; i++) {
        tt->t[i].arg = -1;
        tt->t[i].res = -1;
    }
}

tl_aeon_type tl_aeon_type_arrow(tl_aeon_types *tt, tl_aeon_type arg, tl_aeon_type res) {
    if (arg < 0 || res < 0)
        return -1;
    for (int i = TL_AEON_N_BASE; i < tt->n; i++)
        if (tt->t[i].arg == arg && tt->t[i].res == res)
            return i;
    if (tt->n == TL_AEON_MAX_TYPES)
        return -1;
    tt->t[tt->n].arrow = true;
    tt->t[tt->n].arg = arg;
    tt->t[tt->n].res = res;
    return tt->n++;
}

bool tl_aeon_type_is_arrow(const tl_aeon_types *tt, tl_aeon_type t) { return t >= 0 && t < tt->n && tt->t[t].arrow; }

static void type_print_depth(const tl_aeon_types *tt, tl_aeon_type t, tl_strbuf *out, int depth) {
    static const char *base[] = {"Int", "Bool", "Float", "String", "Unit"};
    if (t >= 0 && t < TL_AEON_N_BASE) {
        tl_strbuf_puts(out, base[t]);
    } else if (tl_aeon_type_is_arrow(tt, t)) {
        tl_strbuf_printf(out, "(x%d:", depth);
        type_print_depth(tt, tt->t[t].arg, out, depth + 1);
        tl_strbuf_puts(out, ") -> ");
        type_print_depth(tt, tt->t[t].res, out, depth + 1);
    } else {
        tl_strbuf_puts(out, "?");
    }
}

void tl_aeon_type_print(const tl_aeon_types *tt, tl_aeon_type t, tl_strbuf *out) { type_print_depth(tt, t, out, 0); }

/* ---- checker -------------------------------------------------------------- */

typedef struct env {
    const char *name;
    tl_aeon_type ty;
    const struct env *next;
    bool global; /* a top-level def (or the prelude), not a parameter or let */
} env;

typedef struct checker {
    tl_aeon_program *prog;
    tl_error *err;
    bool in_hole_def;
    bool found_hole;
    int depth;
} checker;

static tl_aeon_type lookup(const env *e, const char *name) {
    for (; e; e = e->next)
        if (!strcmp(e->name, name))
            return e->ty;
    return -1;
}

static tl_status type_err(checker *c, const tl_aeon_expr *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tl_status type_err(checker *c, const tl_aeon_expr *e, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tl_error_set(c->err, TL_ERR_INVALID, "aeon: %d:%d: type error: %s", e->line, e->col, msg);
}

static bool mentions(const tl_aeon_expr *e, const char *name, int depth) {
    if (!e || depth > 400) /* deeper goals cannot be evaluated anyway (eval.c's depth limit) */
        return false;
    if (e->kind == TL_AEON_E_VAR && !strcmp(e->str, name))
        return true;
    return mentions(e->a, name, depth + 1) || mentions(e->b, name, depth + 1) || mentions(e->c, name, depth + 1);
}

/* Fitness helpers: top-level defs named by the hole def's @minimize_* /
 * @maximize_* goals are hidden from the hole (they score candidates). */
static bool is_fitness_helper(const tl_aeon_program *p, const char *name) {
    const tl_aeon_def *d = &p->defs[p->hole_def];
    for (int i = 0; i < d->n_decos; i++)
        if ((!strncmp(d->decos[i].name, "minimize", 8) || !strncmp(d->decos[i].name, "maximize", 8)) &&
            mentions(d->decos[i].arg, name, 0))
            return true;
    return false;
}

static tl_status capture_context(checker *c, const env *scope, tl_aeon_type goal) {
    tl_aeon_program *p = c->prog;
    int n = 0;
    for (const env *e = scope; e; e = e->next)
        n++;
    p->context = tl_arena_alloc(p->arena, sizeof *p->context * (size_t)(n ? n : 1));
    if (!p->context)
        return tl_error_set(c->err, TL_ERR_NOMEM, "aeon: out of memory");
    p->n_context = 0;
    for (const env *e = scope; e; e = e->next) {
        bool shadowed = false;
        for (int i = 0; i < p->n_context; i++)
            if (!strcmp(p->context[i].name, e->name))
                shadowed = true;
        if (!shadowed && e->global && is_fitness_helper(p, e->name)) {
            p->n_filtered++;
            shadowed = true;
        }
        if (!shadowed) {
            p->context[p->n_context].name = e->name;
            p->context[p->n_context].ty = e->ty;
            p->n_context++;
        }
    }
    p->goal = goal;
    return TL_OK;
}

/* The first `let` in e outside a `fun` body, or NULL. */
static const tl_aeon_expr *let_inside(const tl_aeon_expr *e) {
    if (!e || e->kind == TL_AEON_E_FUN)
        return NULL;
    if (e->kind == TL_AEON_E_LET)
        return e;
    const tl_aeon_expr *l = let_inside(e->a);
    if (!l)
        l = let_inside(e->b);
    if (!l)
        l = let_inside(e->c);
    return l;
}

/* Infers (expected < 0) or checks (expected >= 0) e; *out is its type. */
static tl_status check_expr(checker *c, const tl_aeon_expr *e, const env *scope, tl_aeon_type expected, tl_aeon_type *out) {
    tl_aeon_types *tt = &c->prog->types;
    tl_status st;
    tl_aeon_type t = -1, ta, tb;
    if (++c->depth > 400)
        return type_err(c, e, "expression nested too deeply");
    switch (e->kind) {
    case TL_AEON_E_INT: t = TL_AEON_T_INT; break;
    case TL_AEON_E_FLOAT: t = TL_AEON_T_FLOAT; break;
    case TL_AEON_E_BOOL: t = TL_AEON_T_BOOL; break;
    case TL_AEON_E_STRING: t = TL_AEON_T_STRING; break;
    case TL_AEON_E_UNIT: t = TL_AEON_T_UNIT; break;
    case TL_AEON_E_VAR:
        t = lookup(scope, e->str);
        if (t < 0)
            return type_err(c, e, "unknown name '%s'", e->str);
        break;
    case TL_AEON_E_HOLE:
        if (expected < 0)
            return tl_error_set(c->err, TL_ERR_UNSUPPORTED,
                                "aeon: %d:%d: the type of hole '?%s' is not determined by its position "
                                "(supported: a def body, let body, if branch, argument or annotation)",
                                e->line, e->col, e->str);
        if (c->in_hole_def && !c->found_hole) {
            c->found_hole = true;
            if ((st = capture_context(c, scope, expected)))
                return st;
        }
        t = expected;
        break;
    case TL_AEON_E_APP:
        if ((st = check_expr(c, e->a, scope, -1, &ta)))
            return st;
        if (!tl_aeon_type_is_arrow(tt, ta))
            return type_err(c, e, "applying a value that is not a function");
        if ((st = check_expr(c, e->b, scope, tt->t[ta].arg, &tb)))
            return st;
        t = tt->t[ta].res;
        break;
    case TL_AEON_E_BINOP:
        if ((st = check_expr(c, e->a, scope, -1, &ta)) || (st = check_expr(c, e->b, scope, ta, &tb)))
            return st;
        t = tl_aeon_binop_result_type((int)e->op, ta);
        if (t < 0)
            return type_err(c, e, "operator does not apply to these operand types");
        break;
    case TL_AEON_E_NOT:
        if ((st = check_expr(c, e->a, scope, TL_AEON_T_BOOL, &ta)))
            return st;
        t = TL_AEON_T_BOOL;
        break;
    case TL_AEON_E_NEG: /* Aeon's prelude minus on Int or Float */
        if ((st = check_expr(c, e->a, scope, expected, &ta)))
            return st;
        if (ta != TL_AEON_T_INT && ta != TL_AEON_T_FLOAT)
            return type_err(c, e, "unary minus needs an Int or a Float");
        t = ta;
        break;
    case TL_AEON_E_IF:
        /* Aeon rejects `((if n < 3 then (let w := 10 in 0 * 10) + 11 else 3) * 1000)` and accepts it
         * without the let, and accepts a let operand outside an if (`(let a := 1 in a) - (if ...)`):
         * a parenthesized if, which is how an if becomes an operand or an argument, is typed by
         * synthesizing and joining its branches, which a let inside does not survive. The oracle
         * applies the same rule (oracle.c, no_let), so no LIVE prefix leads there. */
        if (e->ival == 1) {
            const tl_aeon_expr *l = let_inside(e);
            if (l)
                return type_err(c, l, "a let inside a parenthesized if (an if used as an operand or argument): "
                                      "Aeon's checker rejects it; bind the let outside the if");
        }
        if ((st = check_expr(c, e->a, scope, TL_AEON_T_BOOL, &ta)) || (st = check_expr(c, e->b, scope, expected, &tb)))
            return st;
        if ((st = check_expr(c, e->c, scope, tb, &t)))
            return st;
        break;
    case TL_AEON_E_LET: {
        if ((st = check_expr(c, e->a, scope, e->ty, &ta)))
            return st;
        env b = {e->str, ta, scope, false};
        if ((st = check_expr(c, e->b, &b, expected, &t)))
            return st;
        break;
    }
    case TL_AEON_E_FUN: {
        tl_aeon_type ft = expected;
        if (!tl_aeon_type_is_arrow(tt, ft))
            return type_err(c, e, "'fun' needs an expected function type here");
        if (e->ty >= 0 && e->ty != tt->t[ft].arg)
            return type_err(c, e, "lambda parameter annotation differs from the expected type");
        env b = {e->str, tt->t[ft].arg, scope, false};
        if ((st = check_expr(c, e->a, &b, tt->t[ft].res, &tb)))
            return st;
        t = ft;
        break;
    }
    case TL_AEON_E_ANNOT:
        if (e->ty < 0)
            return type_err(c, e, "annotation with a type outside the fragment");
        if ((st = check_expr(c, e->a, scope, e->ty, &ta)))
            return st;
        t = e->ty;
        break;
    }
    if (expected >= 0 && t != expected) {
        tl_strbuf a = TL_STRBUF_INIT, b = TL_STRBUF_INIT;
        tl_aeon_type_print(tt, t, &a);
        tl_aeon_type_print(tt, expected, &b);
        st = type_err(c, e, "found %s where %s is expected", tl_strbuf_cstr(&a), tl_strbuf_cstr(&b));
        tl_strbuf_free(&a);
        tl_strbuf_free(&b);
        return st;
    }
    c->depth--;
    *out = t;
    return TL_OK;
}

/* The def's parameters pushed on scope (into caller-provided nodes). */
static const env *push_params(const tl_aeon_def *d, env *nodes, const env *scope) {
    for (int i = 0; i < d->n_params; i++) {
        nodes[i] = (env){d->params[i].name, d->params[i].rt.ty, scope, false};
        scope = &nodes[i];
    }
    return scope;
}

/* Global scope of def k: earlier usable defs and the prelude's toFloat. */
static env *global_scope(tl_aeon_program *p, int k, env *nodes) {
    static const char *prelude_name = "toFloat";
    env *scope = &nodes[0];
    nodes[0] = (env){prelude_name, tl_aeon_type_arrow(&p->types, TL_AEON_T_INT, TL_AEON_T_FLOAT), NULL, true};
    int n = 1;
    for (int i = 0; i < k; i++) {
        if (p->defs[i].unsupported || p->defs[i].fn_type < 0 || i == p->hole_def)
            continue;
        nodes[n] = (env){p->defs[i].name, p->defs[i].fn_type, scope, true};
        scope = &nodes[n++];
    }
    return scope;
}

static tl_aeon_type def_type(tl_aeon_program *p, const tl_aeon_def *d) {
    if (d->result.ty < 0)
        return -1;
    tl_aeon_type t = d->result.ty;
    for (int i = d->n_params - 1; i >= 0; i--) {
        if (d->params[i].rt.ty < 0)
            return -1;
        t = tl_aeon_type_arrow(&p->types, d->params[i].rt.ty, t);
    }
    return t;
}

/* Checks refinement predicates of d (erased: each must be a Bool). */
static tl_status check_refinements(checker *c, tl_aeon_def *d, const env *scope) {
    env nodes[66];
    tl_status st;
    tl_aeon_type t;
    if (d->n_params > 64)
        return tl_error_set(c->err, TL_ERR_LIMIT, "aeon: %d:%d: more than 64 parameters", d->line, d->col);
    const env *s = scope;
    for (int i = 0; i < d->n_params; i++) {
        const tl_aeon_rtype *rt = &d->params[i].rt;
        if (rt->pred) {
            env b = {rt->binder, rt->ty, s, false};
            if ((st = check_expr(c, rt->pred, &b, TL_AEON_T_BOOL, &t)))
                return tl_error_wrap(c->err, "refinement of parameter '%s'", d->params[i].name);
        }
        nodes[i] = (env){d->params[i].name, rt->ty, s, false};
        s = &nodes[i];
    }
    if (d->result.pred) {
        env b = {d->result.binder, d->result.ty, s, false};
        if ((st = check_expr(c, d->result.pred, &b, TL_AEON_T_BOOL, &t)))
            return tl_error_wrap(c->err, "refinement of the result of '%s'", d->name);
    }
    return TL_OK;
}

static tl_status check_program(tl_aeon_program *p, tl_error *err) {
    env *gnodes = calloc((size_t)p->n_defs + 2, sizeof *gnodes);
    env pnodes[64];
    if (!gnodes)
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    tl_status st = TL_OK;
    for (int k = 0; k < p->n_defs && st == TL_OK; k++) {
        tl_aeon_def *d = &p->defs[k];
        bool is_hole = k == p->hole_def;
        if (d->n_params > 64) {
            st = tl_error_set(err, TL_ERR_LIMIT, "aeon: %d:%d: more than 64 parameters", d->line, d->col);
            break;
        }
        if (!d->unsupported) {
            d->fn_type = def_type(p, d);
            if (d->fn_type < 0)
                d->unsupported = "too many distinct types";
        }
        if (d->unsupported) {
            if (is_hole) {
                st = tl_error_set(err, TL_ERR_UNSUPPORTED, "aeon: the hole's definition '%s' (%d:%d) is outside the fragment: %s",
                                  d->name, d->line, d->col, d->unsupported);
            } else {
                p->n_filtered++;
            }
            continue;
        }
        env *scope = global_scope(p, k, gnodes);
        env self;
        const env *s = scope;
        if (!is_hole) { /* an ordinary def may call itself */
            self = (env){d->name, d->fn_type, scope, false};
            s = &self;
        }
        tl_error local;
        checker c = {.prog = p, .err = is_hole ? err : &local, .in_hole_def = is_hole};
        const env *body_scope = push_params(d, pnodes, s);
        tl_aeon_type t;
        tl_status cst = check_refinements(&c, d, s);
        if (!cst)
            cst = check_expr(&c, d->body, body_scope, d->result.ty, &t);
        if (cst) {
            if (is_hole) {
                st = cst;
            } else {
                /* An unusable helper is filtered from the hole's context. */
                char *why = tl_arena_strndup(p->arena, local.msg, strlen(local.msg));
                d->unsupported = why ? why : "type error";
                d->fn_type = -1;
                p->n_filtered++;
            }
        }
    }
    free(gnodes);
    return st;
}

/* ---- loading -------------------------------------------------------------- */

tl_status tl_aeon_program_load(const char *source, size_t len, tl_aeon_program **out, tl_error *err) {
    *out = NULL;
    tl_aeon_program *p = calloc(1, sizeof *p);
    if (p && !(p->arena = calloc(1, sizeof *p->arena))) {
        free(p);
        p = NULL;
    }
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    tl_aeon_types_init(&p->types);
    p->hole_def = -1;
    p->goal = -1;
    char *src = tl_arena_strndup(p->arena, source, len);
    if (!src) {
        tl_aeon_program_free(p);
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    }
    p->source = src;
    p->source_len = len;
    if (memchr(source, '\0', len)) {
        tl_aeon_program_free(p);
        return tl_error_set(err, TL_ERR_FORMAT, "aeon: offset %zu: NUL byte in source",
                            (size_t)((const char *)memchr(source, '\0', len) - source));
    }
    tl_aeon_expr *hole = NULL;
    tl_status st = tl_aeon_parse_program(p, err, &hole);
    if (!st && !hole)
        st = tl_error_set(err, TL_ERR_INVALID, "aeon: the program has no hole (?name) to synthesize");
    if (!st) {
        p->hole = hole;
        st = check_program(p, err);
    }
    if (!st && p->goal < 0)
        st = tl_error_set(err, TL_ERR_UNSUPPORTED, "aeon: %d:%d: the hole's goal type could not be determined",
                          hole->line, hole->col);
    if (st) {
        tl_aeon_program_free(p);
        return st;
    }
    *out = p;
    return TL_OK;
}

tl_status tl_aeon_program_load_file(const char *path, tl_aeon_program **out, tl_error *err) {
    char *data;
    size_t len;
    tl_status st = tl_read_file(path, 1 << 20, &data, &len, err);
    if (st)
        return st;
    st = tl_aeon_program_load(data, len, out, err);
    free(data);
    if (st)
        tl_error_wrap(err, "%s", path);
    return st;
}

void tl_aeon_program_free(tl_aeon_program *p) {
    if (!p)
        return;
    if (p->arena)
        tl_arena_free(p->arena);
    free(p->arena);
    free(p);
}

tl_status tl_aeon_check_candidate(tl_aeon_program *p, const tl_aeon_expr *e, tl_error *err) {
    env *nodes = calloc((size_t)p->n_context + 1, sizeof *nodes);
    if (!nodes)
        return tl_error_set(err, TL_ERR_NOMEM, "aeon: out of memory");
    const env *scope = NULL;
    for (int i = p->n_context - 1; i >= 0; i--) { /* innermost ends up first */
        nodes[i] = (env){p->context[i].name, p->context[i].ty, scope, false};
        scope = &nodes[i];
    }
    checker c = {.prog = p, .err = err};
    tl_aeon_type t;
    tl_status st = check_expr(&c, e, scope, p->goal, &t);
    free(nodes);
    return st;
}
