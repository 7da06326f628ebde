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

static void usage(FILE *f) {
    fprintf(f, "usage: typellm logits --model M (--prompt-file P | --ids \"1 2 3\") [--last K] [--threads N]\n"
               "                      [--extend-ctx]\n"
               "  print the logits after each of the last K positions (default 4) as JSON:\n"
               "  n_vocab, tokens, and per position the %d largest logits and every %dth id's logit\n"
               "  --prompt-file P  tokenized as the model asks (BOS when add_bos, special tokens parsed)\n"
               "  --ids LIST       token ids separated by spaces or commas\n"
               "  --extend-ctx     accept prompts longer than the model's context length\n",
               TOP_N, SAMPLE_STRIDE);
}

/* Parses "1 2, 3" into ids; false (with a message) on anything else. */
static bool parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 16;
    *n = 0;
    *ids = malloc(cap * sizeof **ids);
    if (!*ids)
        return false;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return true;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "typellm logits: --ids: bad token id at column %zu: '%.10s'\n", (size_t)(p - s) + 1, p);
            return false;
        }
        if (*n == cap) {
            int32_t *q = realloc(*ids, 2 * cap * sizeof *q);
            if (!q)
                return false;
            *ids = q;
            cap *= 2;
        }
        (*ids)[(*n)++] = (int32_t)v;
        p = end;
    }
}

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
    long last = 4, threads = 0;
    bool extend = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") && has) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--prompt-file") && has) {
            prompt_file = argv[++i];
        } else if (!strcmp(a, "--ids") && has) {
            ids_arg = argv[++i];
        } else if (!strcmp(a, "--last") && has) {
            if (!tl_cli_long("logits", a, argv[++i], &last)) return 2;
        } else if (!strcmp(a, "--threads") && has) {
            if (!tl_cli_long("logits", a, argv[++i], &threads)) return 2;
        } else if (!strcmp(a, "--extend-ctx")) {
            extend = true;
        } else {
            fprintf(stderr, "typellm logits: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model_path || (!prompt_file == !ids_arg) || last < 1 || threads < 0 || threads > 1024) {
        usage(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (ids_arg && !parse_ids(ids_arg, &ids, &n)) {
        free(ids);
        return 2;
    }
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(model_path, &m, &err) != TL_OK) {
        fprintf(stderr, "typellm logits: %s\n", err.msg);
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
            fprintf(stderr, "typellm logits: %s\n", err.msg);
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
    tl_session_params sp = {.n_threads = (int)threads};
    if (extend && n > (size_t)tl_model_n_ctx_train(m)) {
        sp.n_ctx = n > INT32_MAX ? INT32_MAX : (int32_t)n;
        sp.extend_ctx = true;
    }
    int32_t n_vocab = tl_model_n_vocab(m);
    logits = malloc((size_t)last * (size_t)n_vocab * sizeof *logits);
    if (!logits || tl_session_new(m, &sp, &s, &err) != TL_OK ||
        tl_session_eval_last(s, ids, n, (size_t)last, logits, NULL, &err) != TL_OK) {
        fprintf(stderr, "typellm logits: %s\n", logits ? err.msg : "out of memory");
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
