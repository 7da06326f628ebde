/* common.c: what every subcommand does the same way beyond option parsing
 * (opt.c): where the model comes from, how -c/--ctx-size maps onto a session,
 * and how a library error is printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"

const char *tl_cli_model(const char *arg) {
    if (arg && *arg)
        return arg;
    const char *env = getenv("TYPELLM_MODEL");
    return env && *env ? env : NULL;
}

void tl_cli_ctx(const char *cmd, const tl_model *m, long n_ctx, tl_session_params *sp) {
    int32_t train = tl_model_n_ctx_train(m);
    if (n_ctx <= 0)
        return;
    sp->n_ctx = (int32_t)n_ctx;
    if (n_ctx > train) {
        sp->extend_ctx = true;
        fprintf(stderr,
                "typellm %s: warning: --ctx-size %ld is beyond the %d tokens the model was trained for; "
                "output quality may drop past that\n",
                cmd, n_ctx, train);
    }
}

void tl_cli_error(const char *cmd, const char *msg) {
    /* Library messages often start with their layer's name ("decide: ..."):
     * "typellm decide: decide: ..." says it twice. */
    size_t n = strlen(cmd);
    if (!strncmp(msg, cmd, n) && msg[n] == ':' && msg[n + 1] == ' ')
        msg += n + 2;
    fprintf(stderr, "typellm %s: %s\n", cmd, msg);
}

tl_status tl_cli_model_load(const char *cmd, const char *path, bool no_mmap, tl_model **m) {
    tl_error err = {0};
    tl_status st = tl_model_load_ex(path, no_mmap ? TL_MODEL_NO_MMAP : 0, m, &err);
    if (st)
        tl_cli_error(cmd, err.msg);
    return st;
}

bool tl_cli_parse_ids(const char *cmd, const char *s, int32_t **ids, size_t *n) {
    size_t cap = 16, count = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) {
        tl_cli_error(cmd, "out of memory");
        return false;
    }
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX ||
            (*end && *end != ' ' && *end != ',' && *end != '\t' && *end != '\n')) {
            fprintf(stderr, "typellm %s: --ids: bad token id at column %zu: expected an integer, got '%.10s'\n", cmd,
                    (size_t)(p - s) + 1, p);
            free(v);
            return false;
        }
        if (count == cap) {
            int32_t *nv = realloc(v, 2 * cap * sizeof *nv);
            if (!nv) {
                free(v);
                tl_cli_error(cmd, "out of memory");
                return false;
            }
            v = nv;
            cap *= 2;
        }
        v[count++] = (int32_t)x;
        p = end;
    }
    *ids = v;
    *n = count;
    return true;
}

tl_status tl_cli_chat_template(const char *arg, const char **name, char **jinja, tl_error *err) {
    *name = NULL;
    *jinja = NULL;
    if (!arg)
        return TL_OK;
    size_t n = strlen(arg);
    if (!strchr(arg, '/') && !(n > 6 && !strcmp(arg + n - 6, ".jinja"))) {
        *name = arg;
        return TL_OK;
    }
    size_t len;
    tl_status st = tl_read_file(arg, TL_CLI_MAX_TEMPLATE_BYTES, jinja, &len, err);
    if (!st && strlen(*jinja) != len) {
        free(*jinja);
        *jinja = NULL;
        st = tl_error_set(err, TL_ERR_INVALID, "%s: the template contains a NUL byte", arg);
    }
    return st;
}

bool tl_cli_cache_type(const char *value, void *dest, const char **why) {
    if (tl_cache_type_parse(value, dest, NULL) == TL_OK)
        return true;
    *why = "not a KV cache type (allowed: " TL_CACHE_TYPE_NAMES ")";
    return false;
}

bool tl_cli_var(const char *value, void *dest, const char **why) {
    json_t *vars = dest;
    const char *eq = strchr(value, '=');
    json_t *v = eq && eq > value ? json_loads(eq + 1, JSON_DECODE_ANY, NULL) : NULL;
    if (!v) {
        *why = "expected NAME=JSON (e.g. enable_thinking=false)";
        return false;
    }
    if (json_object_size(vars) >= TL_CLI_MAX_VARS) {
        json_decref(v);
        *why = "too many --var options";
        return false;
    }
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - value), value);
    json_object_set_new(vars, key, v);
    return true;
}
