/* cmd_inspect.c: `typellm inspect` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_inspect(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm inspect: not available in this build yet\n");
    return 1;
}
