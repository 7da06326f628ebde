/* plan.c: decision waves for each mode (see plan.h). */
#include "decide/plan.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

tl_status tl_dmode_parse(const char *name, tl_dmode *out, tl_error *err) {
    if (!name || !strcmp(name, "auto"))
        *out = TL_DMODE_AUTO;
    else if (!strcmp(name, "sequential"))
        *out = TL_DMODE_SEQUENTIAL;
    else if (!strcmp(name, "batch"))
        *out = TL_DMODE_BATCH;
    else
        return tl_error_set(err, TL_ERR_INVALID, "decide: unknown mode '%s' (sequential, batch, auto)", name);
    return TL_OK;
}

const char *tl_dmode_name(tl_dmode m) {
    return m == TL_DMODE_SEQUENTIAL ? "sequential" : m == TL_DMODE_BATCH ? "batch" : "auto";
}

void tl_dplan_free(tl_dplan *p) {
    free(p->order);
    free(p->wave_start);
    memset(p, 0, sizeof *p);
}

tl_status tl_dplan_make(const tl_dschema *s, tl_dmode mode, const bool *done, tl_dplan *out, tl_error *err) {
    size_t n = s->n_fields;
    memset(out, 0, sizeof *out);
    out->order = calloc(n + 1, sizeof *out->order);
    out->wave_start = calloc(n + 2, sizeof *out->wave_start);
    /* level[i]: the wave of field i (SIZE_MAX for done fields). */
    size_t *level = calloc(n + 1, sizeof *level);
    if (!out->order || !out->wave_start || !level) {
        free(level);
        tl_dplan_free(out);
        return tl_error_set(err, TL_ERR_NOMEM, "plan: out of memory");
    }
    size_t n_levels = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        if (!done || !done[i])
            level[i] = mode == TL_DMODE_SEQUENTIAL ? k++ : 0;
    bool use_deps = mode == TL_DMODE_AUTO && s->any_deps;
    if (mode == TL_DMODE_SEQUENTIAL)
        n_levels = k;
    else if (!use_deps && !s->any_after)
        n_levels = k = 1;
    if (mode != TL_DMODE_SEQUENTIAL && (use_deps || s->any_after)) {
        /* Longest-path levels over the DAG of the structural edges (a
         * control field before what it controls; every mode) and, in auto
         * mode, depends_on (schema.c rejected cycles, and structural edges
         * only point back, so n relaxation rounds reach the fixed point). */
        for (size_t round = 0; round < n; round++) {
            bool changed = false;
            for (size_t i = 0; i < n; i++) {
                if (done && done[i])
                    continue;
                size_t lv = 0;
                const tl_dfield *f = &s->fields[i];
                for (size_t d = 0; d < f->n_after + (use_deps ? f->n_deps : 0); d++) {
                    size_t j = d < f->n_after ? f->after[d] : f->deps[d - f->n_after];
                    if (!(done && done[j]) && level[j] + 1 > lv)
                        lv = level[j] + 1;
                }
                if (lv != level[i])
                    level[i] = lv, changed = true;
            }
            if (!changed)
                break;
        }
        n_levels = 0;
        for (size_t i = 0; i < n; i++)
            if ((!done || !done[i]) && level[i] + 1 > n_levels)
                n_levels = level[i] + 1;
    }
    size_t pos = 0;
    for (size_t w = 0; w < n_levels; w++) {
        out->wave_start[w] = pos;
        for (size_t i = 0; i < n; i++)
            if ((!done || !done[i]) && level[i] == w)
                out->order[pos++] = i;
    }
    /* Batch with every field given: no wave at all. */
    if (pos == 0)
        n_levels = 0;
    out->wave_start[n_levels] = pos;
    out->n_waves = n_levels;
    out->n_order = pos;
    free(level);
    return TL_OK;
}
