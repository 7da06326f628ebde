/* cmd_bench.c: `typellm bench`: prefill and decode speed of the embedded
 * engine, llama-bench style: pp = one forward over P prompt tokens (fresh
 * cache), tg = N tokens decoded one at a time (each step computes one token
 * after a cached prefix). Token ids are a fixed pseudo-random sequence so
 * runs compare. A one-token warm-up pages the mmap'd weights in first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

static void usage(FILE *f) {
    fprintf(f, "usage: typellm bench --model M [-p 512] [-n 128] [--threads N] [-r REPS] [--json]\n"
               "  prefill (pp) and decode (tg) tokens per second; -p 0 or -n 0 skips a test;\n"
               "  -r runs each test REPS times (default 1) and reports the mean\n"
               "  --json  one object {\"model\",\"type\",\"threads\",\"prefill_tokens\",\"prefill_tok_s\",\n"
               "          \"decode_tokens\",\"decode_tok_s\"}\n");
}

int tl_cmd_bench(int argc, char **argv) {
    const char *model_path = NULL;
    long n_prompt = 512, n_gen = 128, threads = 0, reps = 1;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "--model") || !strcmp(a, "-m")) && has) {
            model_path = argv[++i];
        } else if (!strcmp(a, "-p") && has) {
            if (!tl_cli_long("bench", a, argv[++i], &n_prompt)) return 2;
        } else if (!strcmp(a, "-n") && has) {
            if (!tl_cli_long("bench", a, argv[++i], &n_gen)) return 2;
        } else if ((!strcmp(a, "--threads") || !strcmp(a, "-t")) && has) {
            if (!tl_cli_long("bench", a, argv[++i], &threads)) return 2;
        } else if (!strcmp(a, "-r") && has) {
            if (!tl_cli_long("bench", a, argv[++i], &reps)) return 2;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else {
            fprintf(stderr, "typellm bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model_path || n_prompt < 0 || n_gen < 0 || threads < 0 || threads > 1024 || reps < 1 || reps > 1000) {
        usage(stderr);
        return 2;
    }
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(model_path, &m, &err) != TL_OK) {
        fprintf(stderr, "typellm bench: %s\n", err.msg);
        return 1;
    }
    int rc = 1;
    size_t total = (size_t)(n_prompt > n_gen ? n_prompt : n_gen) + 1;
    if (total > (size_t)tl_model_n_ctx_train(m)) {
        fprintf(stderr, "typellm bench: %zu tokens exceed the model's context length %d\n", total,
                tl_model_n_ctx_train(m));
        tl_model_free(m);
        return 1;
    }
    int32_t n_vocab = tl_model_n_vocab(m);
    int32_t *ids = malloc(sizeof(int32_t) * total);
    float *logits = malloc(sizeof(float) * (size_t)n_vocab);
    tl_session *s = NULL;
    tl_session_params sp = {.n_threads = (int)threads};
    if (!ids || !logits || tl_session_new(m, &sp, &s, &err) != TL_OK) {
        fprintf(stderr, "typellm bench: %s\n", ids && logits ? err.msg : "out of memory");
        goto done;
    }
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < total; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(x % (uint64_t)n_vocab);
    }
    if (tl_session_eval(s, ids, 1, logits, NULL, &err) != TL_OK) { /* warm-up */
        fprintf(stderr, "typellm bench: %s\n", err.msg);
        goto done;
    }
    double pp_s = 0, tg_s = 0;
    for (long r = 0; r < reps; r++) {
        if (n_prompt > 0) {
            tl_session_flush(s);
            double t0 = tl_now_s();
            if (tl_session_eval(s, ids + 1, (size_t)n_prompt, logits, NULL, &err) != TL_OK) {
                fprintf(stderr, "typellm bench: %s\n", err.msg);
                goto done;
            }
            pp_s += tl_now_s() - t0;
        }
        if (n_gen > 0) {
            tl_session_flush(s);
            double t0 = tl_now_s();
            for (long i = 1; i <= n_gen; i++)
                if (tl_session_eval(s, ids, (size_t)i, logits, NULL, &err) != TL_OK) {
                    fprintf(stderr, "typellm bench: %s\n", err.msg);
                    goto done;
                }
            tg_s += tl_now_s() - t0;
        }
    }
    double pp = pp_s > 0 ? (double)n_prompt * reps / pp_s : 0, tg = tg_s > 0 ? (double)n_gen * reps / tg_s : 0;
    int n_threads = tl_session_n_threads(s);
    if (json) {
        printf("{\"model\":\"");
        for (const char *p = tl_model_name(m); *p; p++)
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p >= 0x20)
                putchar(*p);
        printf("\",\"type\":\"%s\",\"threads\":%d,\"prefill_tokens\":%ld,\"prefill_tok_s\":%.2f,"
               "\"decode_tokens\":%ld,\"decode_tok_s\":%.2f}\n",
               tl_model_type_name(m), n_threads, n_prompt, pp, n_gen, tg);
    } else {
        printf("| model | type | threads | isa | test | t/s |\n| --- | --- | ---: | --- | ---: | ---: |\n");
        if (n_prompt > 0)
            printf("| %s | %s | %d | %s | pp%ld | %.2f |\n", tl_model_name(m), tl_model_type_name(m), n_threads,
                   tl_kernels_isa(), n_prompt, pp);
        if (n_gen > 0)
            printf("| %s | %s | %d | %s | tg%ld | %.2f |\n", tl_model_name(m), tl_model_type_name(m), n_threads,
                   tl_kernels_isa(), n_gen, tg);
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    tl_session_free(s);
    free(logits);
    free(ids);
    tl_model_free(m);
    return rc;
}
