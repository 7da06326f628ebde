/* cmd_quantize.c: `typellm quantize IN.gguf OUT.gguf TYPE [--threads N]`:
 * converts a model's weights (see src/kernels/quantize_model.h for the
 * rules: norms and 1-D tensors stay F32, Q4_K_M / Q5_K_M mix as llama.cpp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

int tl_cmd_quantize(int argc, char **argv) {
    long threads = 0;
    const tl_opt opts[] = {
        {'t', "threads", TL_OPT_LONG, &threads, .min = 1, .max = 1024, .metavar = "N",
         .help = "CPU threads (default: all cores)"},
        {0},
    };
    char epilog[512];
    snprintf(epilog, sizeof epilog,
             "  TYPE: %s\n"
             "  OUT is written to a temporary file beside it and renamed at the end: an interrupted run never\n"
             "  leaves a partial OUT, and an existing OUT stays intact until the new one is complete.\n"
             "  OUT may not be IN (directly or through a link).\n",
             tl_quantize_type_names());
    const tl_opt_cmd cmd = {"quantize", "IN.gguf OUT.gguf TYPE [-t N]",
                            "convert a model's weights (norms and 1-D tensors stay F32)", .opts = opts, .max_positional = 3,
                            .epilog = epilog};
    const char *pos[3];
    int n_pos = 0;
    int prc = tl_opt_parse(&cmd, argc, argv, pos, &n_pos);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (n_pos != 3)
        return tl_opt_fail(&cmd, "need IN.gguf OUT.gguf TYPE");
    tl_quantize_stats stats;
    memset(&stats, 0, sizeof stats);
    tl_error err = {0};
    double t0 = tl_now_s();
    if (tl_quantize_model(pos[0], pos[1], pos[2], (int)threads, &stats, &err) != TL_OK) {
        tl_cli_error("quantize", err.msg);
        return err.code == TL_ERR_INVALID ? 2 : 1;
    }
    fprintf(stderr, "typellm quantize: %s -> %s (%s): %.1f MB -> %.1f MB of tensors in %.1f s;",
            pos[0], pos[1], pos[2], stats.bytes_in / 1e6, stats.bytes_out / 1e6, tl_now_s() - t0);
    for (int t = 0; t < TL_TYPE_COUNT; t++)
        if (stats.tensors_by_type[t]) fprintf(stderr, " %s x%llu", tl_type_name((tl_ggml_type)t), (unsigned long long)stats.tensors_by_type[t]);
    fputc('\n', stderr);
    return 0;
}
