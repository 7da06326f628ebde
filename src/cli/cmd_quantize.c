/* cmd_quantize.c: `typellm quantize IN.gguf OUT.gguf TYPE [--threads N]`:
 * converts a model's weights (see src/kernels/quantize_model.h for the
 * rules: norms and 1-D tensors stay F32, Q4_K_M / Q5_K_M mix as llama.cpp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

static int usage(void) {
    fprintf(stderr, "usage: typellm quantize IN.gguf OUT.gguf TYPE [--threads N]\n  TYPE: %s\n", tl_quantize_type_names());
    return 2;
}

int tl_cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n_pos = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads")) {
            char *end = NULL;
            if (i + 1 >= argc) return usage();
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 1024) {
                fprintf(stderr, "typellm quantize: --threads wants a number from 1 to 1024, got '%s'\n", argv[i]);
                return 2;
            }
            threads = (int)v;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "typellm quantize: unknown option '%s'\n", argv[i]);
            return usage();
        } else if (n_pos < 3) {
            pos[n_pos++] = argv[i];
        } else {
            return usage();
        }
    }
    if (n_pos != 3) return usage();
    tl_quantize_stats stats;
    memset(&stats, 0, sizeof stats);
    tl_error err = {0};
    double t0 = tl_now_s();
    if (tl_quantize_model(pos[0], pos[1], pos[2], threads, &stats, &err) != TL_OK) {
        fprintf(stderr, "typellm quantize: %s\n", err.msg);
        return err.code == TL_ERR_INVALID ? 2 : 1;
    }
    fprintf(stderr, "typellm quantize: %s -> %s (%s): %.1f MB -> %.1f MB of tensors in %.1f s;",
            pos[0], pos[1], pos[2], stats.bytes_in / 1e6, stats.bytes_out / 1e6, tl_now_s() - t0);
    for (int t = 0; t < TL_TYPE_COUNT; t++)
        if (stats.tensors_by_type[t]) fprintf(stderr, " %s x%llu", tl_type_name((tl_ggml_type)t), (unsigned long long)stats.tensors_by_type[t]);
    fputc('\n', stderr);
    return 0;
}
