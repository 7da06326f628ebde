/* cmd_quantize.c: `typellm quantize` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_quantize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm quantize: not available in this build yet\n");
    return 1;
}
