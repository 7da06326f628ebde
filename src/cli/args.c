/* args.c: numeric option values for the subcommands, so "-n abc" or
 * "--top-p 0.9x" is a usage error naming the option, not a silent 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

bool tl_cli_long(const char *cmd, const char *flag, const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno) {
        fprintf(stderr, "typellm %s: %s: '%s' is not an integer\n", cmd, flag, s);
        return false;
    }
    *out = v;
    return true;
}

bool tl_cli_double(const char *cmd, const char *flag, const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno) {
        fprintf(stderr, "typellm %s: %s: '%s' is not a number\n", cmd, flag, s);
        return false;
    }
    *out = v;
    return true;
}
