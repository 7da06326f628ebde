/* cmd_tokenize.c: `typellm tokenize` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm tokenize: not available in this build yet\n");
    return 1;
}
