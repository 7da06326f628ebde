/* cmd_oracle.c: `typellm oracle` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_oracle(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm oracle: not available in this build yet\n");
    return 1;
}
