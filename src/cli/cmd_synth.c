/* cmd_synth.c: `typellm synth` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_synth(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm synth: not available in this build yet\n");
    return 1;
}
