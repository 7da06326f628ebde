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

static int print_ids(const tl_vocab *v, const int32_t *ids, size_t n, bool pieces) {
    tl_strbuf sb = TL_STRBUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (pieces) {
            char small[256];
            size_t len = tl_vocab_token_bytes(v, ids[i], true, small, sizeof small);
            char *big = len > sizeof small ? malloc(len) : NULL;
            if (big)
                tl_vocab_token_bytes(v, ids[i], true, big, len);
            const char *bytes = big ? big : small;
            size_t n_bytes = big || len <= sizeof small ? len : sizeof small;
            tl_strbuf_printf(&sb, "%d\t", ids[i]);
            if (tl_utf8_check(bytes, n_bytes, NULL) == 0) {
                tl_strbuf_json_string(&sb, bytes, n_bytes);
            } else { /* part of a character (byte-fallback and BPE pieces): the bytes themselves */
                tl_strbuf_putc(&sb, '[');
                for (size_t k = 0; k < n_bytes; k++)
                    tl_strbuf_printf(&sb, "%s%u", k ? "," : "", (unsigned char)bytes[k]);
                tl_strbuf_putc(&sb, ']');
            }
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
        tl_cli_error("tokenize", err.msg);
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
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model),
        {'p', "text", TL_OPT_STR, &text, .metavar = "STR", .alias = "prompt", .help = "text to tokenize (also --prompt)"},
        {'f', "file", TL_OPT_STR, &file, .metavar = "F", .help = "read the text from F ('-' = stdin)"},
        {0, "test-file", TL_OPT_STR, &test_file, .metavar = "X",
         .help = "strings separated by \"\\n__ggml_vocab_test__\\n\"; one line per string, each id after a space"},
        {0, "bos", TL_OPT_FLAG, &bos, .help = "add BOS/EOS as the vocabulary's metadata asks"},
        {0, "special", TL_OPT_FLAG, &special, .help = "parse control-token texts (e.g. <|im_start|>) as those tokens"},
        {0, "pieces", TL_OPT_FLAG, &pieces,
         .help = "one token per line: id, tab, its bytes as a JSON string, or as a JSON array of byte values\n"
                 "                             when they are not whole UTF-8 characters (e.g. [226,150])"},
        {0},
    };
    const tl_opt_cmd cmd = {"tokenize", "-m M.gguf (-p STR | -f F | --test-file X.inp) [--bos] [--special] [--pieces]",
                            "text -> token ids with the model's vocabulary (the weights are never read)", .opts = opts};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!(model = tl_cli_model(model)) || (!!text + !!file + !!test_file) != 1)
        return tl_opt_fail(&cmd, "need a model (-m/--model or TYPELLM_MODEL) and exactly one of --text, --file, --test-file");
    tl_error err = {0};
    tl_vocab *v;
    if (tl_vocab_load_file(model, &v, &err) != TL_OK) {
        tl_cli_error("tokenize", err.msg);
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
                tl_cli_error("tokenize", err.msg);
                tl_vocab_free(v);
                return 1;
            }
        } else {
            len = strlen(text);
        }
        int32_t *ids;
        size_t n;
        if (tl_vocab_tokenize(v, data ? data : text, len, bos, special, &ids, &n, &err) != TL_OK) {
            tl_cli_error("tokenize", err.msg);
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
