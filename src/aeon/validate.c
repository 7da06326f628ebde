/* validate.c: the final word on a finished candidate, independent of the
 * oracle: parse, resolve and type-check it in the hole (refinements erased),
 * then check refinements by evaluation (closed defs directly; functions on a
 * small grid of sample inputs that satisfy the parameter refinements) and
 * run @example / @minimize_* / @maximize_* goals. Evaluation shows a
 * refinement violated; it never proves one holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "util/error.h"
#include "util/rng.h"

#define EVAL_FUEL 200000
#define MAX_SAMPLES 64

/* Keeps the first failure message (truncated to fit). */
static void note(tl_aeon_validation *v, const char *what, const char *detail) {
    if (v->message[0])
        return;
    size_t cap = sizeof v->message;
    int n = snprintf(v->message, cap, "%s", what);
    if (n >= 0 && (size_t)n < cap - 1)
        snprintf(v->message + n, cap - (size_t)n, "%.*s", (int)(cap - (size_t)n - 1), detail);
}

/* Sample values for one parameter type; returns the count. */
static int samples_for(tl_aeon_type t, tl_aeon_scalar *out) {
    static const int64_t ints[] = {0, 1, -1, 2, 5, 10, -7, 100};
    static const double floats[] = {0.0, 1.5, -2.0, 10.0};
    static const char *strs[] = {"", "a", "abc"};
    int n = 0;
    switch (t) {
    case TL_AEON_T_INT:
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
            out[n++] = (tl_aeon_scalar){TL_AEON_V_INT, ints[i], 0, NULL, 0};
        break;
    case TL_AEON_T_BOOL:
        out[n++] = (tl_aeon_scalar){TL_AEON_V_BOOL, 0, 0, NULL, 0};
        out[n++] = (tl_aeon_scalar){TL_AEON_V_BOOL, 1, 0, NULL, 0};
        break;
    case TL_AEON_T_FLOAT:
        for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
            out[n++] = (tl_aeon_scalar){TL_AEON_V_FLOAT, 0, floats[i], NULL, 0};
        break;
    case TL_AEON_T_STRING:
        for (size_t i = 0; i < 3; i++)
            out[n++] = (tl_aeon_scalar){TL_AEON_V_STRING, 0, 0, strs[i], strlen(strs[i])};
        break;
    case TL_AEON_T_UNIT:
        out[n++] = (tl_aeon_scalar){TL_AEON_V_UNIT, 0, 0, NULL, 0};
        break;
    default: /* function parameters: no samples */
        break;
    }
    return n;
}

/* Refinement checks of the hole's def on sample inputs. */
static void check_refinements(tl_aeon_program *p, const tl_aeon_expr *cand, tl_aeon_validation *v) {
    const tl_aeon_def *d = &p->defs[p->hole_def];
    bool any_pred = d->result.pred != NULL;
    for (int i = 0; i < d->n_params; i++)
        any_pred |= d->params[i].rt.pred != NULL;
    if (!any_pred || d->n_params > 8)
        return;
    tl_aeon_scalar vals[8][8];
    int counts[8], idx[8] = {0};
    for (int i = 0; i < d->n_params; i++) {
        counts[i] = samples_for(d->params[i].rt.ty, vals[i]);
        if (counts[i] == 0)
            return; /* cannot sample a function argument */
    }
    tl_error err;
    for (int s = 0; s < MAX_SAMPLES; s++) {
        tl_aeon_scalar args[8];
        for (int i = 0; i < d->n_params; i++)
            args[i] = vals[i][idx[i]];
        bool admissible = true;
        for (int i = 0; i < d->n_params && admissible; i++) {
            bool holds;
            if (tl_aeon_eval_pred(p, &d->params[i].rt, &args[i], args, cand, EVAL_FUEL, &holds, &err) || !holds)
                admissible = false;
        }
        if (admissible) {
            tl_aeon_scalar res;
            bool holds = false;
            v->refinement_checks++;
            if (tl_aeon_eval_call_hole_def(p, args, cand, EVAL_FUEL, &res, &err)) {
                note(v, "evaluation failed: ", err.msg);
            } else if (tl_aeon_eval_pred(p, &d->result, &res, args, cand, EVAL_FUEL, &holds, &err)) {
                note(v, "refinement evaluation failed: ", err.msg);
            } else if (!holds) {
                note(v, "the result refinement is violated on a sample input", "");
            }
            if (!holds)
                v->refinement_failures++;
        }
        /* next combination (odometer) */
        int k = 0;
        while (k < d->n_params && ++idx[k] == counts[k])
            idx[k++] = 0;
        if (k == d->n_params)
            break;
    }
}

tl_status tl_aeon_validate(tl_aeon_program *p, const char *candidate, size_t len, tl_aeon_validation *v, tl_error *err) {
    memset(v, 0, sizeof *v);
    tl_aeon_expr *cand;
    tl_error local;
    if (tl_aeon_parse_expr(p, candidate, len, &cand, &local)) {
        note(v, "", local.msg);
        return TL_OK;
    }
    v->parsed = true;
    if (tl_aeon_check_candidate(p, cand, &local)) {
        note(v, "", local.msg);
        return TL_OK;
    }
    v->typed = true;
    check_refinements(p, cand, v);
    const tl_aeon_def *d = &p->defs[p->hole_def];
    for (int i = 0; i < d->n_decos; i++) {
        const tl_aeon_decorator *dc = &d->decos[i];
        if (!dc->arg)
            continue;
        bool is_example = !strcmp(dc->name, "example");
        bool minimize = !strncmp(dc->name, "minimize", 8), maximize = !strncmp(dc->name, "maximize", 8);
        if (!is_example && !minimize && !maximize)
            continue;
        tl_aeon_scalar r;
        tl_status st = tl_aeon_eval_closed(p, dc->arg, cand, EVAL_FUEL, &r, &local);
        if (is_example) {
            v->examples_total++;
            if (st || r.kind != TL_AEON_V_BOOL || !r.i) {
                v->examples_failed++;
                char where[64];
                snprintf(where, sizeof where, "@example at %d:%d", dc->line, dc->col);
                note(v, where, " fails");
            }
            continue;
        }
        if (v->n_objectives == TL_AEON_MAX_OBJECTIVES)
            continue;
        double x = 1e300; /* an objective that cannot be evaluated is the worst value */
        if (!st && r.kind == TL_AEON_V_INT)
            x = (double)r.i;
        else if (!st && r.kind == TL_AEON_V_FLOAT)
            x = r.f;
        v->objectives[v->n_objectives++] = maximize && x != 1e300 ? -x : x;
    }
    v->refinements_ok = v->refinement_failures == 0;
    (void)err;
    return TL_OK;
}

static bool dominates(const tl_aeon_validation *a, const tl_aeon_validation *b) {
    bool strictly = a->examples_failed < b->examples_failed;
    if (a->examples_failed > b->examples_failed)
        return false;
    int n = a->n_objectives < b->n_objectives ? a->n_objectives : b->n_objectives;
    for (int i = 0; i < n; i++) {
        if (a->objectives[i] > b->objectives[i])
            return false;
        if (a->objectives[i] < b->objectives[i])
            strictly = true;
    }
    return strictly;
}

int tl_aeon_pareto_pick(const tl_aeon_validation *vs, int n, uint64_t seed) {
    int front[256], nf = 0;
    for (int i = 0; i < n && nf < 256; i++) {
        if (!vs[i].typed || !vs[i].refinements_ok)
            continue;
        bool dominated = false;
        for (int j = 0; j < n && !dominated; j++)
            if (j != i && vs[j].typed && vs[j].refinements_ok && dominates(&vs[j], &vs[i]))
                dominated = true;
        if (!dominated)
            front[nf++] = i;
    }
    if (nf == 0)
        return -1;
    /* a seeded choice among the non-dominated candidates (splitmix64 of the seed) */
    uint64_t state = seed;
    return front[tl_rng_next(&state) % (uint64_t)nf];
}

int tl_aeon_rank_pick(const tl_aeon_validation *vs, const double *logprob, int n) {
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (!vs[i].typed || !vs[i].refinements_ok)
            continue;
        bool dominated = false;
        for (int j = 0; j < n && !dominated; j++)
            dominated = j != i && vs[j].typed && vs[j].refinements_ok && dominates(&vs[j], &vs[i]);
        if (!dominated && (best < 0 || logprob[i] > logprob[best]))
            best = i;
    }
    return best;
}
