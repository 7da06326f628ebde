/* cmd_detokenize.c: `typellm detokenize` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_detokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm detokenize: not available in this build yet\n");
    return 1;
}
