/* cmd_detokenize.c: `typellm detokenize`: token ids -> text with a model's
 * vocabulary (the weights are never read). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

static void usage(FILE *f) {
    fprintf(f, "usage: typellm detokenize --model M.gguf --ids \"1 2 3\" [--special] [--keep-space]\n"
               "  --ids LIST     token ids separated by spaces or commas\n"
               "  --special      print control tokens (BOS, <|im_end|>, ...) as their text\n"
               "  --keep-space   keep the space SPM vocabularies add in front of the text\n");
}

/* Parses "1 2, 3" into ids; false (with a message naming the column) on junk. */
static bool parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 16, count = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v)
        return false;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX ||
            (*end && *end != ' ' && *end != ',' && *end != '\t' && *end != '\n')) {
            fprintf(stderr, "typellm detokenize: --ids: column %zu: expected an integer id\n", (size_t)(p - s) + 1);
            free(v);
            return false;
        }
        if (count == cap) {
            cap *= 2;
            int32_t *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                return false;
            }
            v = nv;
        }
        v[count++] = (int32_t)x;
        p = end;
    }
    *ids = v;
    *n = count;
    return true;
}

int tl_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *ids_arg = NULL;
    bool special = false, keep_space = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") && has_value) {
            model = argv[++i];
        } else if (!strcmp(a, "--ids") && has_value) {
            ids_arg = argv[++i];
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else if (!strcmp(a, "--keep-space")) {
            keep_space = true;
        } else {
            fprintf(stderr, "typellm detokenize: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || !ids_arg) {
        fprintf(stderr, "typellm detokenize: need --model and --ids\n");
        usage(stderr);
        return 2;
    }
    int32_t *ids;
    size_t n;
    if (!parse_ids(ids_arg, &ids, &n))
        return 2;
    tl_error err = {0};
    tl_vocab *v;
    if (tl_vocab_load_file(model, &v, &err) != TL_OK) {
        fprintf(stderr, "typellm detokenize: %s\n", err.msg);
        free(ids);
        return 1;
    }
    tl_strbuf sb = TL_STRBUF_INIT;
    int rc = 0;
    if (tl_vocab_detokenize(v, ids, n, !keep_space, special, &sb, &err) != TL_OK) {
        fprintf(stderr, "typellm detokenize: %s\n", err.msg);
        rc = 1;
    } else {
        fwrite(tl_strbuf_cstr(&sb), 1, sb.len, stdout);
        putchar('\n');
    }
    tl_strbuf_free(&sb);
    tl_vocab_free(v);
    free(ids);
    return rc;
}
