/* bench_decide_loop.c: N decisions on a cached context through the public C
 * API, each as a Python caller makes it (parse the schema, decide on a client
 * of the shared backend, render the JSON document), so
 * python/bench/bench_overhead.py can put the Python package's cost beside it.
 *   bench_decide_loop MODEL.gguf SCHEMA.json CONTEXT.txt N [THREADS]
 * Prints "c: N decisions in S s (M ms per decision)". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_decide_loop MODEL.gguf SCHEMA.json CONTEXT.txt N [THREADS]\n");
        return 2;
    }
    tl_error err = {0};
    char *schema_text = NULL, *context = NULL;
    size_t schema_len = 0, context_len = 0;
    long n = strtol(argv[4], NULL, 10);
    int threads = argc > 5 ? atoi(argv[5]) : 1;
    tl_model *m = NULL;
    tl_backend *shared = NULL;
    if (tl_read_file(argv[2], 1 << 20, &schema_text, &schema_len, &err) ||
        tl_read_file(argv[3], 1 << 24, &context, &context_len, &err) || tl_model_load(argv[1], &m, &err)) {
        fprintf(stderr, "bench_decide_loop: %s\n", err.msg);
        return 1;
    }
    tl_shared_params sp = {.session = {.n_threads = threads}};
    if (tl_backend_shared_new(m, &sp, &shared, &err)) {
        fprintf(stderr, "bench_decide_loop: %s\n", err.msg);
        return 1;
    }
    double t0 = 0;
    for (long i = -20; i < n; i++) { /* 20 warm-up decisions fill the prefix cache */
        if (i == 0)
            t0 = tl_now_s();
        tl_schema *s = NULL;
        tl_backend *c = NULL;
        tl_decision *d = NULL;
        if (tl_schema_parse(schema_text, schema_len, &s, &err) || tl_backend_shared_client(shared, NULL, &c, &err) ||
            tl_decide(c, context, context_len, s, NULL, &d, &err)) {
            fprintf(stderr, "bench_decide_loop: %s\n", err.msg);
            return 1;
        }
        tl_free(tl_decision_to_json(d, 0));
        tl_decision_free(d);
        tl_backend_free(c);
        tl_schema_free(s);
    }
    double dt = tl_now_s() - t0;
    printf("c: %ld decisions in %.3f s (%.3f ms per decision)\n", n, dt, dt * 1e3 / (double)n);
    tl_backend_free(shared);
    tl_model_free(m);
    tl_free(schema_text);
    tl_free(context);
    return 0;
}
