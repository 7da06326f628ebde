/* bench_decide.c: decision cost with the shared context already in the
 * prefix cache (the blog's setting: the context was read once, then a
 * schema's decisions run over it), sequential vs batch, in one process.
 * For each mode: flush the cache, warm it with a one-field schema over the
 * same context (same title and description, so the same prefix), then time
 * tl_decide on the whole schema. bench_decide.sh times the cold runs.
 *
 * Public API only (jansson just to cut the warm-up schema):
 *   cc -O2 bench/bench_decide.c $(pkg-config --cflags --libs typellm jansson) -o /tmp/bench_decide
 *   /tmp/bench_decide MODEL.gguf SCHEMA.json CONTEXT_FILE [threads] [runs] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typellm/typellm.h"

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_decide MODEL.gguf SCHEMA.json CONTEXT_FILE [threads] [runs]\n");
        return 2;
    }
    int threads = argc > 4 ? atoi(argv[4]) : 2, runs = argc > 5 ? atoi(argv[5]) : 1;
    tl_error err = {0};
    json_error_t je;
    json_t *schema = json_load_file(argv[2], 0, &je);
    char *ctx;
    size_t ctx_len;
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_session_params sp = {.n_threads = threads};
    if (!schema || tl_read_file(argv[3], 1 << 26, &ctx, &ctx_len, &err) || tl_model_load(argv[1], &m, &err) ||
        tl_backend_local_new(m, &sp, &b, &err)) {
        fprintf(stderr, "bench_decide: %s\n", schema ? err.msg : je.text);
        return 1;
    }
    /* The warm-up schema: the first field only, same title/description. */
    json_t *warm = json_deep_copy(schema), *props = json_object_get(warm, "properties");
    const char *first = json_object_iter_key(json_object_iter(props));
    json_t *keep = json_incref(json_object_get(props, first));
    json_object_clear(props);
    json_object_set_new(props, first, keep);
    size_t n_fields = json_object_size(json_object_get(schema, "properties"));
    char *whole_text = json_dumps(schema, 0), *warm_text = json_dumps(warm, 0);
    tl_schema *whole_s = NULL, *warm_s = NULL;
    if (tl_schema_parse(whole_text, strlen(whole_text), &whole_s, &err) ||
        tl_schema_parse(warm_text, strlen(warm_text), &warm_s, &err)) {
        fprintf(stderr, "bench_decide: %s\n", err.msg);
        return 1;
    }

    printf("%-10s %4s %10s %12s %8s %8s %8s %8s %10s\n", "mode", "run", "wall_ms", "per_decision", "prompt",
           "cached", "computed", "passes", "cpu_s");
    const char *modes[] = {"sequential", "batch"};
    for (int mi = 0; mi < 2; mi++) {
        for (int run = 1; run <= runs; run++) {
            tl_session_flush(tl_backend_local_session(b));
            tl_decide_opts o = {.mode = modes[mi]};
            tl_decision *res = NULL;
            if (tl_decide(b, ctx, ctx_len, warm_s, &o, &res, &err)) {
                fprintf(stderr, "bench_decide: warm-up: %s\n", err.msg);
                return 1;
            }
            tl_decision_free(res);
            double t0 = tl_now_s(), c0 = cpu_s();
            if (tl_decide(b, ctx, ctx_len, whole_s, &o, &res, &err)) {
                fprintf(stderr, "bench_decide: %s\n", err.msg);
                return 1;
            }
            double wall = (tl_now_s() - t0) * 1e3, cpu = cpu_s() - c0;
            tl_usage u;
            tl_decision_usage(res, &u);
            printf("%-10s %4d %10.0f %12.1f %8lld %8lld %8lld %8lld %10.2f\n", modes[mi], run, wall, wall / n_fields,
                   (long long)u.prompt_tokens, (long long)u.cached_tokens, (long long)u.computed_tokens,
                   (long long)u.forward_passes, cpu);
            fflush(stdout);
            tl_decision_free(res);
        }
    }
    tl_schema_free(whole_s);
    tl_schema_free(warm_s);
    free(whole_text);
    free(warm_text);
    json_decref(warm);
    json_decref(schema);
    free(ctx);
    tl_backend_free(b);
    tl_model_free(m);
    return 0;
}
