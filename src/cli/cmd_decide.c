/* cmd_decide.c: `typellm decide` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_decide(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm decide: not available in this build yet\n");
    return 1;
}
