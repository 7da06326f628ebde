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

int tl_cmd_bench(int argc, char **argv) {
    const char *model_path = NULL;
    long n_prompt = 512, n_gen = 128, threads = 0, reps = 1, n_ctx = 0;
    bool json = false, no_mmap = false;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model_path),
        {'p', "n-prompt", TL_OPT_LONG, &n_prompt, .min = 0, .max = 1 << 24, .metavar = "P",
         .help = "prefill test length (default 512, at most the context; 0 skips it)"},
        {'n', "n-gen", TL_OPT_LONG, &n_gen, .min = 0, .max = 1 << 24, .metavar = "N",
         .help = "decode test length (default 128; 0 skips it)"},
        {'r', "repetitions", TL_OPT_LONG, &reps, .min = 1, .max = 1000, .metavar = "REPS",
         .help = "run each test REPS times and report the mean (default 1)"},
        TL_OPT_THREADS(&threads),
        TL_OPT_CTX(&n_ctx),
        {0, "json", TL_OPT_FLAG, &json,
         .help = "one object {\"model\",\"type\",\"threads\",\"prefill_tokens\",\"prefill_tok_s\",\n"
                 "                             \"decode_tokens\",\"decode_tok_s\"}"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0},
    };
    const tl_opt_cmd cmd = {"bench", "-m M [-p 512] [-n 128] [-t N] [-r REPS] [--json]",
                            "prefill (pp) and decode (tg) tokens per second, llama-bench style", .opts = opts};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!(model_path = tl_cli_model(model_path)))
        return tl_opt_fail(&cmd, "no model: pass -m/--model PATH or set TYPELLM_MODEL");
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_cli_model_load("bench", model_path, no_mmap, &m) != TL_OK)
        return 1;
    int rc = 1;
    tl_session_params sp = {.n_threads = (int)threads};
    tl_cli_ctx("bench", m, n_ctx, &sp);
    int32_t ctx_len = sp.n_ctx > 0 ? sp.n_ctx : tl_model_n_ctx_train(m);
    /* The longest sequence either test evaluates; the warm-up token is not
     * part of the prefill, so -p 512 fits a 512-token context. */
    size_t longest = (size_t)(n_prompt > n_gen ? n_prompt : n_gen), total = longest + 1;
    if (longest > (size_t)ctx_len) {
        fprintf(stderr, "typellm bench: a %zu-token test does not fit the context length %d (lower -p/-n, or raise -c)\n",
                longest, ctx_len);
        tl_model_free(m);
        return 1;
    }
    int32_t n_vocab = tl_model_n_vocab(m);
    int32_t *ids = malloc(sizeof(int32_t) * total);
    float *logits = malloc(sizeof(float) * (size_t)n_vocab);
    tl_session *s = NULL;
    if (!ids || !logits || tl_session_new(m, &sp, &s, &err) != TL_OK) {
        tl_cli_error("bench", ids && logits ? err.msg : "out of memory");
        goto done;
    }
    uint64_t x = 0x2545F4914F6CDD1Dull; /* the same ids on every run */
    for (size_t i = 0; i < total; i++)
        ids[i] = (int32_t)(tl_rng_next(&x) % (uint64_t)n_vocab);
    if (tl_session_eval(s, ids, 1, logits, NULL, &err) != TL_OK) { /* warm-up */
        tl_cli_error("bench", err.msg);
        goto done;
    }
    double pp_s = 0, tg_s = 0;
    for (long r = 0; r < reps; r++) {
        if (n_prompt > 0) {
            tl_session_flush(s);
            double t0 = tl_now_s();
            if (tl_session_eval(s, ids + 1, (size_t)n_prompt, logits, NULL, &err) != TL_OK) {
                tl_cli_error("bench", err.msg);
                goto done;
            }
            pp_s += tl_now_s() - t0;
        }
        if (n_gen > 0) {
            tl_session_flush(s);
            double t0 = tl_now_s();
            for (long i = 1; i <= n_gen; i++)
                if (tl_session_eval(s, ids, (size_t)i, logits, NULL, &err) != TL_OK) {
                    tl_cli_error("bench", err.msg);
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
