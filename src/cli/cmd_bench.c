/* cmd_bench.c: `typellm bench` (not built yet: see the open issue that owns it). */
#include <stdio.h>

#include "cli/cli.h"

int tl_cmd_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "typellm bench: not available in this build yet\n");
    return 1;
}
