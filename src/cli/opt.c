/* opt.c: the option-table parser (see opt.h for the grammar). */
#include "cli/opt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int tl_opt_fail(const tl_opt_cmd *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "typellm %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fprintf(stderr, "usage: typellm %s %s\n(typellm help %s lists the options)\n", cmd->name,
            cmd->synopsis ? cmd->synopsis : "[options]", cmd->name);
    return TL_OPT_USAGE;
}

static bool has_range(const tl_opt *o) { return o->min != 0 || o->max != 0; }

/* Stores v into o->dest; on failure *why says what is wrong with it. */
static bool set_value(const tl_opt *o, const char *v, char *why, size_t cap) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case TL_OPT_FLAG:
        *(bool *)o->dest = true;
        return true;
    case TL_OPT_STR:
        *(const char **)o->dest = v;
        return true;
    case TL_OPT_LONG: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno == EINVAL) {
            snprintf(why, cap, "'%s' is not an integer", v);
            return false;
        }
        if (errno == ERANGE || (has_range(o) && (x < o->min || x > o->max))) {
            snprintf(why, cap, "%s is out of range: it must be from %.0f to %.0f", v, o->min, o->max);
            return false;
        }
        *(long *)o->dest = x;
        return true;
    }
    case TL_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end) {
            snprintf(why, cap, "'%s' is not a number", v);
            return false;
        }
        if (!isfinite(x) || errno == ERANGE) {
            snprintf(why, cap, "'%s' is not a finite number", v);
            return false;
        }
        if (has_range(o) && ((o->flags & TL_OPT_GT_MIN ? x <= o->min : x < o->min) || x > o->max)) {
            snprintf(why, cap, "%s is out of range: it must be %s %g and at most %g", v,
                     o->flags & TL_OPT_GT_MIN ? "above" : "at least", o->min, o->max);
            return false;
        }
        *(double *)o->dest = x;
        return true;
    }
    case TL_OPT_U64: {
        if (*v == '-' || *v == '+') {
            snprintf(why, cap, "'%s' is not an unsigned integer", v);
            return false;
        }
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno) {
            snprintf(why, cap, "'%s' is not an unsigned integer%s", v, errno == ERANGE ? " below 2^64" : "");
            return false;
        }
        *(uint64_t *)o->dest = (uint64_t)x;
        return true;
    }
    case TL_OPT_CALL: {
        const char *reason = NULL;
        if (o->call(v, o->dest, &reason))
            return true;
        snprintf(why, cap, "'%s': %s", v, reason ? reason : "not accepted");
        return false;
    }
    }
    return false;
}

/* The option named by arg (without its "=value"), or NULL. */
static const tl_opt *find(const tl_opt *opts, const char *arg, size_t len) {
    for (const tl_opt *o = opts; o->name; o++) {
        if (arg[1] != '-') {
            if (len == 2 && o->short_name && arg[1] == o->short_name)
                return o;
            if (o->dash_name && strlen(o->dash_name) == len - 1 && !memcmp(arg + 1, o->dash_name, len - 1))
                return o;
            continue;
        }
        const char *names[2] = {o->name, o->alias};
        for (int k = 0; k < 2; k++)
            if (names[k] && strlen(names[k]) == len - 2 && !memcmp(arg + 2, names[k], len - 2))
                return o;
    }
    return NULL;
}

int tl_opt_parse(const tl_opt_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos) {
    int np = 0;
    bool only_pos = false;
    if (n_pos)
        *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool is_opt = !only_pos && a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9');
        if (!only_pos && !strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!is_opt) {
            if (np >= cmd->max_positional)
                return cmd->max_positional ? tl_opt_fail(cmd, "unexpected argument '%s'", a)
                                           : tl_opt_fail(cmd, "unexpected argument '%s' (options start with --)", a);
            pos[np++] = a;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tl_opt_usage(cmd, stdout);
            return TL_OPT_HELP;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const tl_opt *o = find(cmd->opts, a, len);
        if (!o)
            return tl_opt_fail(cmd, "unknown option '%.*s'", (int)len, a);
        char shown[128]; /* the option as the user typed it, for messages */
        snprintf(shown, sizeof shown, "%.*s", (int)len, a);
        const char *v = NULL;
        if (o->kind == TL_OPT_FLAG) {
            if (eq)
                return tl_opt_fail(cmd, "%s takes no value", shown);
        } else if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            return tl_opt_fail(cmd, "%s needs a value (%s)", shown, o->metavar ? o->metavar : "VALUE");
        }
        char why[300];
        if (!set_value(o, v, why, sizeof why))
            return tl_opt_fail(cmd, "%s: %s", shown, why);
    }
    if (n_pos)
        *n_pos = np;
    return TL_OPT_OK;
}

void tl_opt_usage(const tl_opt_cmd *cmd, FILE *f) {
    fprintf(f, "usage: typellm %s %s\n", cmd->name, cmd->synopsis ? cmd->synopsis : "[options]");
    if (cmd->summary)
        fprintf(f, "  %s\n", cmd->summary);
    bool any = false;
    for (const tl_opt *o = cmd->opts; o->name; o++) {
        if (!o->help || (o->flags & TL_OPT_HIDDEN))
            continue;
        if (!any)
            fprintf(f, "options (--opt VALUE or --opt=VALUE):\n");
        any = true;
        char left[96];
        int n = snprintf(left, sizeof left, "%s%c%s--%s", o->short_name ? "-" : "", o->short_name ? o->short_name : ' ',
                         o->short_name ? ", " : "  ", o->name);
        if (o->dash_name)
            n = snprintf(left, sizeof left, "-%s, --%s", o->dash_name, o->name);
        else if (!o->short_name)
            n = snprintf(left, sizeof left, "    --%s", o->name);
        if (o->metavar && o->kind != TL_OPT_FLAG && n > 0 && (size_t)n < sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, " %s", o->metavar);
        fprintf(f, "  %-26s %s\n", left, o->help);
    }
    if (cmd->epilog)
        fprintf(f, "%s", cmd->epilog);
}

int tl_opt_env(const tl_opt_cmd *cmd, const char *name, const char *env) {
    const char *v = getenv(env);
    if (!v || !*v)
        return TL_OPT_OK;
    for (const tl_opt *o = cmd->opts; o->name; o++)
        if (!strcmp(o->name, name)) {
            char why[300];
            if (set_value(o, v, why, sizeof why))
                return TL_OPT_OK;
            return tl_opt_fail(cmd, "%s: %s", env, why);
        }
    return TL_OPT_OK;
}
