/* bench_oracle.c: time per oracle query (advance + completion_status) on the
 * examples in examples/synthesis/type_constrained, as decoding sees them:
 *   commit: every character prefix of a finished candidate (LIVE path);
 *   probe:  at each such prefix, 16 trial extensions drawn from a token-like
 *           alphabet (mostly DEAD), as the sampler probes rejected tokens.
 * Every query misses the per-engine answer cache (each character step gets a
 * fresh engine, and its probes are distinct texts), so the figures are the
 * cost of a real search; a cache hit costs a hash and a compare.
 * Prints median and p99 in µs.
 * usage: bench_oracle EXAMPLES_DIR   (bench/bench_oracle.sh builds and runs it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

static void add(samples *s, double x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, sizeof *s->v * s->cap);
    }
    s->v[s->n++] = x;
}

static void report(const char *what, samples *s) {
    if (!s->n)
        return;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    printf("%-8s queries %7zu  median %7.1f us  p99 %7.1f us  max %8.1f us\n", what, s->n, s->v[s->n / 2] * 1e6,
           s->v[(size_t)(s->n * 0.99)] * 1e6, s->v[s->n - 1] * 1e6);
}

/* One timed query: a new state from st plus chars, and its status. */
static double timed_query(tl_aeon_engine *eng, const tl_aeon_state *st, const char *chars, size_t n, tl_aeon_verdict *v) {
    double t0 = tl_now_s();
    tl_aeon_state *ns = tl_aeon_state_advance(st, chars, n);
    *v = tl_aeon_completion_status(eng, ns, NULL, NULL);
    double dt = tl_now_s() - t0;
    tl_aeon_state_free(ns);
    return dt;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_oracle EXAMPLES_DIR\n");
        return 2;
    }
    struct { const char *file; const char *cands[4]; } cases[] = {
        {"application.ae", {"f (f v)", "let w := f v in f w", "if v < 0 then f v else f (f v)", NULL}},
        {"conditional_let.ae", {"let m := limit in if n < m then n else m", "if n <= limit then n else limit", NULL}},
        {"whole_function.ae", {"fun x => x + 1", "fun y => if y < 0 then 0 - y else y + 1", NULL}},
        {"positive.ae", {"x * x + 1", "if x > 0 then x else 1 - x", NULL}},
        {"answer.ae", {"35", "5 * 7", NULL}},
        {"not_found.ae", {"404", NULL}},
        {"double.ae", {"a + a", "2 * a", NULL}},
        {"clamp.ae", {"if n > 10 then 10 else n", NULL}},
        {"twice.ae", {"f (f v)", NULL}},
        {"mixed.ae", {"toFloat k * scale > 10.0 && name != \"\"", NULL}},
        {"minimize.ae", {"toFloat k / 2.0 - 1.5e0", NULL}},
    };
    static const char *probes[] = {" ", "x", "(", ")", "+", " <", " then", " else", "1", "\"", "in", " :=", "&&",
                                   "fun", ".", "e"};
    samples commit = {0}, probe = {0};
    size_t live = 0, dead = 0, unknown = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", argv[1], cases[c].file);
        tl_aeon_program *p;
        tl_aeon_scope *s;
        tl_aeon_engine *e = NULL;
        tl_error err;
        if (tl_aeon_program_load_file(path, &p, &err) || tl_aeon_scope_new(p, &s, &err)) {
            fprintf(stderr, "%s: %s\n", path, err.msg);
            return 1;
        }
        for (int rep = 0; rep < 5; rep++) {
            for (int k = 0; k < 4 && cases[c].cands[k]; k++) {
                /* repetitions differ by leading whitespace */
                char text[512];
                snprintf(text, sizeof text, "%*s%s", rep, "", cases[c].cands[k]);
                size_t n = strlen(text);
                tl_aeon_state *st = tl_aeon_state_initial();
                for (size_t i = 0; i < n; i++) {
                    tl_aeon_engine_free(e);
                    if (tl_aeon_engine_new(s, NULL, &e, &err))
                        return 1;
                    tl_aeon_verdict v;
                    add(&commit, timed_query(e, st, text + i, 1, &v));
                    live += v == TL_AEON_LIVE;
                    dead += v == TL_AEON_DEAD;
                    unknown += v == TL_AEON_UNKNOWN;
                    for (size_t q = 0; q < sizeof probes / sizeof probes[0]; q++) {
                        tl_aeon_verdict pv;
                        add(&probe, timed_query(e, st, probes[q], strlen(probes[q]), &pv));
                    }
                    tl_aeon_state *ns = tl_aeon_state_advance(st, text + i, 1);
                    tl_aeon_state_free(st);
                    st = ns;
                }
                tl_aeon_state_free(st);
            }
        }
        tl_aeon_engine_free(e);
        e = NULL;
        tl_aeon_scope_free(s);
        tl_aeon_program_free(p);
    }
    printf("oracle on %zu example files (commit path: %zu LIVE, %zu DEAD, %zu UNKNOWN)\n",
           sizeof cases / sizeof cases[0], live, dead, unknown);
    report("commit", &commit);
    report("probe", &probe);
    samples all = {0};
    for (size_t i = 0; i < commit.n; i++)
        add(&all, commit.v[i]);
    for (size_t i = 0; i < probe.n; i++)
        add(&all, probe.v[i]);
    report("all", &all);
    free(commit.v);
    free(probe.v);
    free(all.v);
    return dead || unknown ? 1 : 0;
}
