/* corrections.c: the corrected-distribution extension fields shared by
 * /v1/decide and /v1/decisions: {"debias", "calibrate", "content_free",
 * "think"} -> tl_decide_opts (docs/decide.md, Corrected distributions). */
#include <string.h>

#include "server/server_internal.h"

static bool one_of(const char *s, const char *const *names) {
    for (; *names; names++)
        if (!strcmp(s, *names))
            return true;
    return false;
}

bool decide_corrections_parse(const json_t *root, decide_corrections *out, const char **key, const char **msg) {
    static const char *const debias[] = {"permute", "full", "pride", "none", NULL};
    static const char *const calibrate[] = {"content-free", "pmi", "none", NULL};
    memset(out, 0, sizeof *out);
    const json_t *d = json_object_get(root, "debias"), *c = json_object_get(root, "calibrate");
    const json_t *cf = json_object_get(root, "content_free"), *t = json_object_get(root, "think");
    if (d && !json_is_null(d) && !(json_is_string(d) && one_of(json_string_value(d), debias))) {
        *key = "debias";
        *msg = "debias must be \"permute\", \"full\", \"pride\" or \"none\"";
        return false;
    }
    if (c && !json_is_null(c) && !(json_is_string(c) && one_of(json_string_value(c), calibrate))) {
        *key = "calibrate";
        *msg = "calibrate must be \"content-free\", \"pmi\" or \"none\"";
        return false;
    }
    if (cf && !json_is_null(cf) && !json_is_string(cf)) {
        *key = "content_free";
        *msg = "content_free must be a string (the content-free input)";
        return false;
    }
    if (t && !json_is_null(t) && !(json_is_integer(t) && json_integer_value(t) >= 0 && json_integer_value(t) <= 65536)) {
        *key = "think";
        *msg = "think must be an integer in [0, 65536] (reasoning tokens)";
        return false;
    }
    out->debias = json_string_value(d);
    out->calibrate = json_string_value(c);
    out->content_free = json_string_value(cf);
    out->think = json_is_integer(t) ? (int)json_integer_value(t) : 0;
    return true;
}

void decide_corrections_apply(const decide_corrections *c, tl_decide_opts *o) {
    o->debias = c->debias;
    o->calibrate = c->calibrate;
    o->content_free = c->content_free;
    o->think = c->think;
}
