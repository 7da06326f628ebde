/* cmd_logits.c: `typellm logits`: next-token logits at the last K positions
 * of a prompt, printed in exactly the format of the reference files in
 * ../shared/fixtures/ref (so engines can be compared with a diff):
 *   {"n_vocab":N,"tokens":[...],"logits":{"POS":{"top":[[id,logit],...40],
 *    "stride":101,"sample":[logit of id 0, 101, 202, ...]}}} */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

#define TOP_N 40
#define SAMPLE_STRIDE 101
#define MAX_PROMPT_BYTES (64u << 20)

/* Indices of the TOP_N largest values of row (descending; ties: lower id first). */
static size_t top_ids(const float *row, int32_t n_vocab, int32_t *top) {
    size_t k = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (k == TOP_N && row[i] <= row[top[k - 1]])
            continue;
        size_t j = k < TOP_N ? k++ : TOP_N - 1;
        while (j > 0 && row[top[j - 1]] < row[i]) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = i;
    }
    return k;
}

int tl_cmd_logits(int argc, char **argv) {
    const char *model_path = NULL, *prompt_file = NULL, *ids_arg = NULL;
    long last = 4, threads = 0, n_ctx = 0;
    bool extend = false, no_mmap = false;
    tl_cache_type cache_k = TL_CACHE_F32, cache_v = TL_CACHE_F32;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model_path),
        {'f', "file", TL_OPT_STR, &prompt_file, .metavar = "P", .alias = "prompt-file",
         .help = "prompt, tokenized as the model asks (BOS when add_bos, special tokens parsed); also --prompt-file"},
        {0, "ids", TL_OPT_STR, &ids_arg, .metavar = "LIST", .help = "token ids separated by spaces or commas"},
        {0, "last", TL_OPT_LONG, &last, .min = 1, .max = 1 << 24, .metavar = "K",
         .help = "positions to print, counted from the end (default 4)"},
        TL_OPT_THREADS(&threads),
        TL_OPT_CTX(&n_ctx),
        TL_OPT_CACHE_TYPES(&cache_k, &cache_v),
        {0, "extend-ctx", TL_OPT_FLAG, &extend, .help = "accept prompts longer than the model's context length"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0},
    };
    char summary[200];
    snprintf(summary, sizeof summary,
             "print the logits after each of the last K positions as JSON: n_vocab, tokens, and per position\n"
             "  the %d largest logits and every %dth id's logit",
             TOP_N, SAMPLE_STRIDE);
    const tl_opt_cmd cmd = {"logits", "-m M (-f PROMPT | --ids \"1 2 3\") [--last K] [options]", summary, .opts = opts};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!(model_path = tl_cli_model(model_path)))
        return tl_opt_fail(&cmd, "no model: pass -m/--model PATH or set TYPELLM_MODEL");
    if (!prompt_file == !ids_arg)
        return tl_opt_fail(&cmd, "give the input with -f/--file PROMPT or --ids LIST (one of them)");
    int32_t *ids = NULL;
    size_t n = 0;
    if (ids_arg && !tl_cli_parse_ids("logits", ids_arg, &ids, &n))
        return 2;
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_cli_model_load("logits", model_path, no_mmap, &m) != TL_OK) {
        free(ids);
        return 1;
    }
    int rc = 1;
    tl_session *s = NULL;
    float *logits = NULL;
    tl_strbuf out = TL_STRBUF_INIT;
    if (prompt_file) {
        char *text = NULL;
        size_t len = 0;
        if (tl_read_file(prompt_file, MAX_PROMPT_BYTES, &text, &len, &err) != TL_OK ||
            tl_vocab_tokenize(tl_model_vocab(m), text, len, true, true, &ids, &n, &err) != TL_OK) {
            tl_cli_error("logits", err.msg);
            free(text);
            goto done;
        }
        free(text);
    }
    if (n == 0) {
        fprintf(stderr, "typellm logits: the prompt has no tokens\n");
        goto done;
    }
    if ((size_t)last > n)
        last = (long)n;
    tl_session_params sp = {.n_threads = (int)threads, .cache_type_k = cache_k, .cache_type_v = cache_v};
    tl_cli_ctx("logits", m, n_ctx, &sp);
    if (extend && n > (size_t)tl_model_n_ctx_train(m) && n > (size_t)sp.n_ctx) {
        sp.n_ctx = n > INT32_MAX ? INT32_MAX : (int32_t)n;
        sp.extend_ctx = true;
    }
    int32_t n_vocab = tl_model_n_vocab(m);
    logits = malloc((size_t)last * (size_t)n_vocab * sizeof *logits);
    if (!logits || tl_session_new(m, &sp, &s, &err) != TL_OK ||
        tl_session_eval_last(s, ids, n, (size_t)last, logits, NULL, &err) != TL_OK) {
        tl_cli_error("logits", logits ? err.msg : "out of memory");
        goto done;
    }
    tl_strbuf_printf(&out, "{\"n_vocab\":%d,\"tokens\":[", n_vocab);
    for (size_t i = 0; i < n; i++)
        tl_strbuf_printf(&out, "%s%d", i ? "," : "", ids[i]);
    tl_strbuf_puts(&out, "],\"logits\":{");
    for (long r = 0; r < last; r++) {
        const float *row = logits + (size_t)r * (size_t)n_vocab;
        int32_t top[TOP_N];
        size_t k = top_ids(row, n_vocab, top);
        tl_strbuf_printf(&out, "%s\"%zu\":{\"top\":[", r ? "," : "", n - (size_t)last + (size_t)r);
        for (size_t j = 0; j < k; j++)
            tl_strbuf_printf(&out, "%s[%d,%.7g]", j ? "," : "", top[j], row[top[j]]);
        tl_strbuf_printf(&out, "],\"stride\":%d,\"sample\":[", SAMPLE_STRIDE);
        for (int32_t id = 0; id < n_vocab; id += SAMPLE_STRIDE)
            tl_strbuf_printf(&out, "%s%.7g", id ? "," : "", row[id]);
        tl_strbuf_puts(&out, "]}");
    }
    tl_strbuf_puts(&out, "}}\n");
    fwrite(out.buf, 1, out.len, stdout);
    rc = fflush(stdout) ? 1 : 0;
done:
    tl_strbuf_free(&out);
    free(logits);
    free(ids);
    tl_session_free(s);
    tl_model_free(m);
    return rc;
}
