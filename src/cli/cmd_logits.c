/* cmd_logits.c: `typellm logits` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_logits(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm logits: not available in this build yet\n");
    return 1;
}
