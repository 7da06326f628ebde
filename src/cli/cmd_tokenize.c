/* cmd_tokenize.c: `typellm tokenize`: text -> token ids with a model's
 * vocabulary (the weights are never read). --test-file reproduces the
 * tokenizer test-vector format of ../shared/fixtures/vocab (NAME.gguf.inp ->
 * NAME.gguf.out) so the vectors can be checked byte for byte. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

#define MAX_INPUT_BYTES ((size_t)1 << 30)
static const char TEST_SEPARATOR[] = "\n__ggml_vocab_test__\n";

static void usage(FILE *f) {
    fprintf(f, "usage: typellm tokenize --model M.gguf (--text STR | --file F | --test-file X.inp)\n"
               "                        [--bos] [--special] [--pieces]\n"
               "  --text STR       text to tokenize\n"
               "  --file F         read the text from F ('-' = stdin)\n"
               "  --test-file X    strings separated by \"\\n__ggml_vocab_test__\\n\"; prints one line\n"
               "                   per string, each id preceded by a space (no BOS, specials as text)\n"
               "  --bos            add BOS/EOS as the vocabulary's metadata asks\n"
               "  --special        parse control-token texts (e.g. <|im_start|>) as those tokens\n"
               "  --pieces         print one token per line: id, tab, its bytes as a JSON string\n");
}

static int print_ids(const tl_vocab *v, const int32_t *ids, size_t n, bool pieces) {
    tl_strbuf sb = TL_STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (pieces) {
            char small[256];
            size_t len = tl_vocab_token_bytes(v, ids[i], true, small, sizeof small);
            char *big = len > sizeof small ? malloc(len) : NULL;
            if (big)
                tl_vocab_token_bytes(v, ids[i], true, big, len);
            tl_strbuf_printf(&sb, "%d\t", ids[i]);
            tl_strbuf_json_string(&sb, big ? big : small, big || len <= sizeof small ? len : sizeof small);
            tl_strbuf_putc(&sb, '\n');
            free(big);
        } else {
            tl_strbuf_printf(&sb, i ? " %d" : "%d", ids[i]);
        }
    }
    if (!pieces)
        tl_strbuf_putc(&sb, '\n');
    fwrite(tl_strbuf_cstr(&sb), 1, sb.len, stdout);
    tl_strbuf_free(&sb);
    return 0;
}

static int run_test_file(const tl_vocab *v, const char *path) {
    char *data;
    size_t len;
    tl_error err = {0};
    if (tl_read_file(path, MAX_INPUT_BYTES, &data, &len, &err) != TL_OK) {
        fprintf(stderr, "typellm tokenize: %s\n", err.msg);
        return 1;
    }
    tl_strbuf sb = TL_STRBUF_INIT;
    size_t sep_len = sizeof TEST_SEPARATOR - 1;
    size_t at = 0;
    int rc = 0;
    /* every string is followed by the separator; a tail without one is a last string too */
    while (at < len) {
        const char *end = memmem(data + at, len - at, TEST_SEPARATOR, sep_len);
        size_t slen = end ? (size_t)(end - (data + at)) : len - at;
        int32_t *ids;
        size_t n;
        if (tl_vocab_tokenize(v, data + at, slen, false, false, &ids, &n, &err) != TL_OK) {
            fprintf(stderr, "typellm tokenize: %s: string at byte %zu: %s\n", path, at, err.msg);
            rc = 1;
            break;
        }
        for (size_t i = 0; i < n; i++)
            tl_strbuf_printf(&sb, " %d", ids[i]);
        tl_strbuf_putc(&sb, '\n');
        free(ids);
        at += slen + (end ? sep_len : 0);
    }
    fwrite(tl_strbuf_cstr(&sb), 1, sb.len, stdout);
    tl_strbuf_free(&sb);
    free(data);
    return rc;
}

int tl_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *test_file = NULL;
    bool bos = false, special = false, pieces = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") && has_value) {
            model = argv[++i];
        } else if (!strcmp(a, "--text") && has_value) {
            text = argv[++i];
        } else if (!strcmp(a, "--file") && has_value) {
            file = argv[++i];
        } else if (!strcmp(a, "--test-file") && has_value) {
            test_file = argv[++i];
        } else if (!strcmp(a, "--bos")) {
            bos = true;
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else if (!strcmp(a, "--pieces")) {
            pieces = true;
        } else {
            fprintf(stderr, "typellm tokenize: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!!text + !!file + !!test_file) != 1) {
        fprintf(stderr, "typellm tokenize: need --model and exactly one of --text, --file, --test-file\n");
        usage(stderr);
        return 2;
    }
    tl_error err = {0};
    tl_vocab *v;
    if (tl_vocab_load_file(model, &v, &err) != TL_OK) {
        fprintf(stderr, "typellm tokenize: %s\n", err.msg);
        return 1;
    }
    int rc;
    if (test_file) {
        rc = run_test_file(v, test_file);
    } else {
        char *data = NULL;
        size_t len;
        if (file) {
            if (tl_read_file(file, MAX_INPUT_BYTES, &data, &len, &err) != TL_OK) {
                fprintf(stderr, "typellm tokenize: %s\n", err.msg);
                tl_vocab_free(v);
                return 1;
            }
        } else {
            len = strlen(text);
        }
        int32_t *ids;
        size_t n;
        if (tl_vocab_tokenize(v, data ? data : text, len, bos, special, &ids, &n, &err) != TL_OK) {
            fprintf(stderr, "typellm tokenize: %s\n", err.msg);
            rc = 1;
        } else {
            rc = print_ids(v, ids, n, pieces);
            free(ids);
        }
        free(data);
    }
    tl_vocab_free(v);
    return rc;
}
