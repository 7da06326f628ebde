/* cmd_serve.c: `typellm serve` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm serve: not available in this build yet\n");
    return 1;
}
