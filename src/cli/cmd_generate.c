/* cmd_generate.c: `typellm generate` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_generate(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm generate: not available in this build yet\n");
    return 1;
}
