/* cmd_bench.c: `typellm bench`: prefill and decode speed of the embedded
 * engine, llama-bench style: pp = one forward over P prompt tokens (fresh
 * cache), tg = N tokens decoded one at a time (each step computes one token
 * after a cached prefix). Token ids are a fixed pseudo-random sequence so
 * runs compare. A one-token warm-up pages the mmap'd weights in first.
 *
 * Decode is bound by memory bandwidth: each step reads every weight once
 * (the token embedding one row, unless it is also the output matrix; of
 * mixture-of-experts tensors the used share) and the KV rows of every
 * earlier position. The report gives those bytes per token and the rate
 * they were read at; with --bandwidth (bench/bench_bandwidth.sh measures
 * it), as a share of what the machine can stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

static bool name_is(const tl_gguf_tensor *t, const char *want) {
    return t->name.len == strlen(want) && !memcmp(t->name.ptr, want, t->name.len);
}

static bool name_has(const tl_gguf_tensor *t, const char *part) {
    size_t n = strlen(part);
    for (uint64_t i = 0; i + n <= t->name.len; i++)
        if (!memcmp(t->name.ptr + i, part, n))
            return true;
    return false;
}

/* Weight bytes one decode step reads. */
static double decode_weight_bytes(const tl_model *m) {
    const tl_gguf *g = tl_model_gguf(m);
    tl_model_features f;
    tl_model_get_features(m, &f);
    bool tied = !tl_gguf_find_tensor(g, "output.weight");
    double bytes = 0;
    for (uint64_t i = 0; i < tl_gguf_n_tensors(g); i++) {
        const tl_gguf_tensor *t = tl_gguf_tensor_at(g, i);
        double b = (double)t->nbytes;
        if (name_is(t, "token_embd.weight") && !tied && t->ne[1] > 0)
            b /= (double)t->ne[1]; /* one row looked up */
        else if (name_has(t, "_exps") && f.n_expert > 0 && f.n_expert_used > 0)
            b *= (double)f.n_expert_used / (double)f.n_expert;
        bytes += b;
    }
    return bytes;
}

int tl_cmd_bench(int argc, char **argv) {
    const char *model_path = NULL;
    long n_prompt = 512, n_gen = 128, threads = 0, reps = 1, n_ctx = 0;
    bool json = false, no_mmap = false;
    double bandwidth = 0;
    tl_cache_type cache_k = TL_CACHE_F32, cache_v = TL_CACHE_F32;
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
        TL_OPT_CACHE_TYPES(&cache_k, &cache_v),
        {0, "json", TL_OPT_FLAG, &json,
         .help = "one object {\"model\",\"type\",\"threads\",\"prefill_tokens\",\"prefill_tok_s\",\n"
                 "                             \"decode_tokens\",\"decode_tok_s\"}"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0, "bandwidth", TL_OPT_DOUBLE, &bandwidth, .min = 0, .max = 1e6, .metavar = "GB/S",
         .help = "the machine's memory bandwidth (bench/bench_bandwidth.sh's triad): decode is\n"
                 "                             also reported as a share of it"},
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
    tl_session_params sp = {.n_threads = (int)threads, .cache_type_k = cache_k, .cache_type_v = cache_v};
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
    double pp_s = 0, tg_s = 0, kv_token_bytes = 0;
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
            kv_token_bytes = (double)tl_session_cache_bytes(s) / (double)n_gen;
        }
    }
    double pp = pp_s > 0 ? (double)n_prompt * reps / pp_s : 0, tg = tg_s > 0 ? (double)n_gen * reps / tg_s : 0;
    int n_threads = tl_session_n_threads(s);
    /* step i reads the KV rows of its i earlier positions: n(n+1)/2 rows in all */
    double w_bytes = decode_weight_bytes(m);
    double kv_bytes = n_gen > 0 ? kv_token_bytes * (double)(n_gen + 1) / 2 : 0;
    double step_bytes = w_bytes + kv_bytes, gb_s = step_bytes * tg / 1e9;
    double share = bandwidth > 0 ? gb_s / bandwidth : 0;
    const char *ctk = tl_cache_type_name(sp.cache_type_k), *ctv = tl_cache_type_name(sp.cache_type_v);
    double cached_token_bytes = tl_session_cache_token_bytes(s);
    if (json) {
        printf("{\"model\":\"");
        for (const char *p = tl_model_name(m); *p; p++)
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p >= 0x20)
                putchar(*p);
        printf("\",\"type\":\"%s\",\"threads\":%d,\"prefill_tokens\":%ld,\"prefill_tok_s\":%.2f,"
               "\"decode_tokens\":%ld,\"decode_tok_s\":%.2f,\"decode_bytes_per_token\":%.0f,"
               "\"decode_kv_bytes_per_token\":%.0f,\"decode_gb_s\":%.3f",
               tl_model_type_name(m), n_threads, n_prompt, pp, n_gen, tg, step_bytes, kv_bytes, gb_s);
        if (bandwidth > 0)
            printf(",\"bandwidth_gb_s\":%.3f,\"decode_bandwidth_share\":%.4f", bandwidth, share);
        printf(",\"cache_type_k\":\"%s\",\"cache_type_v\":\"%s\",\"kv_bytes_per_cached_token\":%.1f}\n", ctk, ctv,
               cached_token_bytes);
    } else {
        printf("| model | type | threads | isa | test | t/s |\n| --- | --- | ---: | --- | ---: | ---: |\n");
        if (n_prompt > 0)
            printf("| %s | %s | %d | %s | pp%ld | %.2f |\n", tl_model_name(m), tl_model_type_name(m), n_threads,
                   tl_kernels_isa(), n_prompt, pp);
        if (n_gen > 0)
            printf("| %s | %s | %d | %s | tg%ld | %.2f |\n", tl_model_name(m), tl_model_type_name(m), n_threads,
                   tl_kernels_isa(), n_gen, tg);
        if (n_gen > 0) {
            printf("\ndecode reads %.1f MB a token (weights %.1f, KV %.2f on average) = %.2f GB/s", step_bytes / 1e6,
                   w_bytes / 1e6, kv_bytes / 1e6, gb_s);
            if (bandwidth > 0)
                printf(", %.0f%% of %.2f GB/s", share * 100, bandwidth);
            printf("\n");
        }
        printf("%sKV cache (K %s, V %s): %.1f bytes per cached token\n", n_gen > 0 ? "" : "\n", ctk, ctv,
               cached_token_bytes);
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    tl_session_free(s);
    free(logits);
    free(ids);
    tl_model_free(m);
    return rc;
}
