/* cmd_detokenize.c: `typellm detokenize`: token ids -> text with a model's
 * vocabulary (the weights are never read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

int tl_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *ids_arg = NULL;
    bool special = false, keep_space = false;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model),
        {0, "ids", TL_OPT_STR, &ids_arg, .metavar = "LIST", .help = "token ids separated by spaces or commas"},
        {0, "special", TL_OPT_FLAG, &special, .help = "print control tokens (BOS, <|im_end|>, ...) as their text"},
        {0, "keep-space", TL_OPT_FLAG, &keep_space, .help = "keep the space SPM vocabularies add in front of the text"},
        {0},
    };
    const tl_opt_cmd cmd = {"detokenize", "-m M.gguf --ids \"1 2 3\" [--special] [--keep-space]",
                            "token ids -> text with the model's vocabulary (the weights are never read)", .opts = opts};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!(model = tl_cli_model(model)) || !ids_arg)
        return tl_opt_fail(&cmd, "need a model (-m/--model or TYPELLM_MODEL) and --ids");
    int32_t *ids;
    size_t n;
    if (!tl_cli_parse_ids("detokenize", ids_arg, &ids, &n))
        return 2;
    tl_error err = {0};
    tl_vocab *v;
    if (tl_vocab_load_file(model, &v, &err) != TL_OK) {
        tl_cli_error("detokenize", err.msg);
        free(ids);
        return 1;
    }
    tl_strbuf sb = TL_STRBUF_INIT;
    int rc = 0;
    if (tl_vocab_detokenize(v, ids, n, !keep_space, special, &sb, &err) != TL_OK) {
        tl_cli_error("detokenize", err.msg);
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
