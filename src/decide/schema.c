/* schema.c: JSON Schema object -> tl_dschema (see schema.h). The one place
 * that knows which JSON Schema shapes are decisions; everything downstream
 * sees only finite typed domains. */
#include "decide/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/strbuf.h"

#define REF_MAX_DEPTH 8

/* ---- small helpers ------------------------------------------------------- */

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

/* Appends key to a JSON pointer, escaping '~' and '/' as RFC 6901 says. */
static bool pointer_append(tl_strbuf *sb, const char *key) {
    if (!tl_strbuf_putc(sb, '/'))
        return false;
    for (const char *p = key; *p; p++) {
        bool ok = *p == '~' ? tl_strbuf_puts(sb, "~0") : *p == '/' ? tl_strbuf_puts(sb, "~1") : tl_strbuf_putc(sb, *p);
        if (!ok)
            return false;
    }
    return true;
}

void tl_json_number_text(const json_t *v, char *buf, size_t cap) {
    if (json_is_integer(v)) {
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        return;
    }
    double d = json_number_value(v);
    if (!isfinite(d)) {
        snprintf(buf, cap, "null");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    if (!strpbrk(buf, ".eEn")) {
        size_t n = strlen(buf);
        if (n + 3 <= cap)
            memcpy(buf + n, ".0", 3);
    }
}

/* Text of a value: strings as themselves, numbers shortest, booleans true/false. */
static char *value_key_text(const json_t *v) {
    char buf[64];
    if (json_is_string(v))
        return dup_str(json_string_value(v));
    if (json_is_boolean(v))
        return dup_str(json_is_true(v) ? "true" : "false");
    tl_json_number_text(v, buf, sizeof buf);
    return dup_str(buf);
}

static char *value_json_text(const json_t *v) {
    if (json_is_number(v))
        return value_key_text(v);
    tl_strbuf sb = TL_STRBUF_INIT;
    if (json_is_string(v)) {
        if (!tl_strbuf_json_string(&sb, json_string_value(v), json_string_length(v))) {
            tl_strbuf_free(&sb);
            return NULL;
        }
        return tl_strbuf_detach(&sb);
    }
    return value_key_text(v);
}

static bool values_equal(const json_t *a, const json_t *b) {
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

long tl_dfield_value_index(const tl_dfield *f, const json_t *v) {
    for (size_t i = 0; i < f->n_values; i++)
        if (values_equal(f->values[i], v))
            return (long)i;
    return -1;
}

long tl_dschema_find(const tl_dschema *s, const char *key) {
    for (size_t i = 0; i < s->n_fields; i++)
        if (!strcmp(s->fields[i].key, key))
            return (long)i;
    return -1;
}

static void field_free(tl_dfield *f) {
    free(f->key);
    free(f->name);
    free(f->question);
    free(f->path);
    for (size_t i = 0; i < f->n_values; i++) {
        json_decref(f->values ? f->values[i] : NULL);
        if (f->value_keys) free(f->value_keys[i]);
        if (f->value_json) free(f->value_json[i]);
        if (f->value_descs) free(f->value_descs[i]);
    }
    free(f->values);
    free(f->value_keys);
    free(f->value_json);
    free(f->value_descs);
    free(f->deps);
    free(f->open_name);
}

void tl_dschema_free(tl_dschema *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n_fields; i++)
        field_free(&s->fields[i]);
    free(s->fields);
    free(s->title);
    free(s->description);
    free(s);
}

/* ---- $ref ---------------------------------------------------------------- */

/* Resolves a local reference ("#", "#/$defs/Severity", "#/definitions/x/y")
 * against the root schema; NULL when it names nothing. */
static const json_t *resolve_ref(const json_t *root, const char *ref) {
    if (ref[0] != '#')
        return NULL;
    const json_t *node = root;
    const char *p = ref + 1;
    char tok[256];
    while (*p) {
        if (*p != '/')
            return NULL;
        p++;
        size_t n = 0;
        while (*p && *p != '/') {
            char c = *p++;
            if (c == '~') {
                if (*p == '0') c = '~';
                else if (*p == '1') c = '/';
                else return NULL;
                p++;
            }
            if (n + 1 >= sizeof tok)
                return NULL;
            tok[n++] = c;
        }
        tok[n] = '\0';
        if (json_is_object(node)) {
            node = json_object_get(node, tok);
        } else if (json_is_array(node)) {
            char *end;
            unsigned long idx = strtoul(tok, &end, 10);
            if (*end || !n)
                return NULL;
            node = json_array_get(node, idx);
        } else {
            return NULL;
        }
        if (!node)
            return NULL;
    }
    return node;
}

/* A property seen through its $ref chain: keys are looked up in the property
 * first, then in what it references, so a property may override the
 * definition's description or question. */
typedef struct prop_view {
    const json_t *layer[REF_MAX_DEPTH + 1];
    size_t n;
} prop_view;

static const json_t *view_get(const prop_view *v, const char *key) {
    for (size_t i = 0; i < v->n; i++) {
        const json_t *x = json_object_get(v->layer[i], key);
        if (x)
            return x;
    }
    return NULL;
}

static tl_status view_build(const json_t *root, const json_t *prop, const char *path, prop_view *v, tl_error *err) {
    v->n = 0;
    v->layer[v->n++] = prop;
    const json_t *cur = prop;
    for (;;) {
        const json_t *ref = json_object_get(cur, "$ref");
        if (!ref)
            return TL_OK;
        if (!json_is_string(ref))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/$ref: must be a string", path);
        const json_t *target = resolve_ref(root, json_string_value(ref));
        if (!target)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/$ref: cannot resolve '%s' (only local refs like #/$defs/NAME)",
                                path, json_string_value(ref));
        if (!json_is_object(target))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/$ref: '%s' is not a schema object", path,
                                json_string_value(ref));
        for (size_t i = 0; i < v->n; i++)
            if (v->layer[i] == target)
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/$ref: reference cycle through '%s'", path,
                                    json_string_value(ref));
        if (v->n > REF_MAX_DEPTH)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/$ref: references nest deeper than %d", path,
                                REF_MAX_DEPTH);
        v->layer[v->n++] = target;
        cur = target;
    }
}

/* ---- one field ----------------------------------------------------------- */

static tl_status nomem(tl_error *err) { return tl_error_set(err, TL_ERR_NOMEM, "schema: out of memory"); }

/* Sets the field's domain from a list of values (owned by the caller), checking
 * each against the kind. src names where the list came from (enum / oneOf). */
static tl_status field_set_values(tl_dfield *f, json_t *const *vals, size_t n, const char *src, tl_error *err) {
    if (n == 0)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s: empty enum (a decision needs at least one value)",
                            f->path, src);
    if (n > TL_DFIELD_MAX_VALUES)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s: %zu values; a field may have at most %d", f->path, src,
                            n, TL_DFIELD_MAX_VALUES);
    f->values = calloc(n, sizeof *f->values);
    f->value_keys = calloc(n, sizeof *f->value_keys);
    f->value_json = calloc(n, sizeof *f->value_json);
    f->value_descs = calloc(n, sizeof *f->value_descs);
    if (!f->values || !f->value_keys || !f->value_json || !f->value_descs)
        return nomem(err);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = vals[i];
        const char *want = NULL;
        switch (f->kind) {
        case TL_DFIELD_STRING_ENUM: if (!json_is_string(v)) want = "a string"; break;
        case TL_DFIELD_INTEGER_ENUM: if (!json_is_integer(v)) want = "an integer"; break;
        case TL_DFIELD_NUMBER_ENUM:
        case TL_DFIELD_SCORE:
            if (!json_is_number(v) || !isfinite(json_number_value(v))) want = "a finite number";
            break;
        case TL_DFIELD_BOOLEAN: if (!json_is_boolean(v)) want = "a boolean"; break;
        case TL_DFIELD_INTEGER:
        case TL_DFIELD_NUMBER: want = "allowed (generated fields have no value list)"; break;
        }
        if (want)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s/%zu: value is not %s", f->path, src, i, want);
        for (size_t j = 0; j < i; j++)
            if (values_equal(f->values[j], v))
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s/%zu: duplicate value (same as %s/%s/%zu)",
                                    f->path, src, i, f->path, src, j);
        f->values[i] = json_deep_copy(v);
        f->n_values = i + 1;
        f->value_keys[i] = value_key_text(v);
        f->value_json[i] = value_json_text(v);
        if (!f->values[i] || !f->value_keys[i] || !f->value_json[i])
            return nomem(err);
    }
    return TL_OK;
}

/* Collects the field's values from "enum", or from "oneOf"/"anyOf" consts
 * (whose descriptions become per-value descriptions). */
static tl_status field_collect_values(tl_dfield *f, const prop_view *v, tl_error *err) {
    const json_t *en = view_get(v, "enum");
    if (en) {
        if (!json_is_array(en))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/enum: must be an array", f->path);
        size_t n = json_array_size(en);
        json_t **vals = calloc(n ? n : 1, sizeof *vals);
        if (!vals)
            return nomem(err);
        for (size_t i = 0; i < n; i++)
            vals[i] = json_array_get(en, i);
        tl_status st = field_set_values(f, vals, n, "enum", err);
        free(vals);
        return st;
    }
    const char *alt = view_get(v, "oneOf") ? "oneOf" : "anyOf";
    const json_t *one = view_get(v, alt);
    if (!json_is_array(one))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s: must be an array of {\"const\": ...}", f->path, alt);
    size_t n = json_array_size(one);
    json_t **vals = calloc(n ? n : 1, sizeof *vals);
    if (!vals)
        return nomem(err);
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(one, i);
        vals[i] = json_is_object(item) ? json_object_get(item, "const") : NULL;
        if (!vals[i]) {
            free(vals);
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s/%zu: each alternative needs a \"const\"", f->path,
                                alt, i);
        }
    }
    tl_status st = field_set_values(f, vals, n, alt, err);
    free(vals);
    for (size_t i = 0; st == TL_OK && i < n; i++) {
        const json_t *item = json_array_get(one, i);
        const json_t *d = json_object_get(item, "description");
        if (!d)
            d = json_object_get(item, "title");
        if (d && !json_is_string(d))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s/%zu/description: must be a string", f->path, alt, i);
        if (d && !(f->value_descs[i] = dup_str(json_string_value(d))))
            return nomem(err);
    }
    return st;
}

/* The kind implied by the values when "type" is absent. */
static tl_status infer_kind(tl_dfield *f, const prop_view *v, tl_error *err) {
    const json_t *en = view_get(v, "enum");
    const json_t *one = view_get(v, "oneOf") ? view_get(v, "oneOf") : view_get(v, "anyOf");
    const json_t *first = NULL;
    size_t n = 0;
    bool all_str = true, all_bool = true, all_num = true, all_int = true;
    for (;;) {
        const json_t *x;
        if (json_is_array(en))
            x = json_array_get(en, n);
        else if (json_is_array(one))
            x = json_object_get(json_array_get(one, n), "const");
        else
            break;
        if (!x) {
            if (json_is_array(one) && n < json_array_size(one)) {
                n++;
                continue;
            }
            break;
        }
        if (!first)
            first = x;
        all_str &= json_is_string(x);
        all_bool &= json_is_boolean(x);
        all_num &= json_is_number(x);
        all_int &= json_is_integer(x);
        n++;
    }
    if (!en && !one)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s: missing \"type\" (and no enum to infer it from)", f->path);
    if (!first || all_str)
        f->kind = TL_DFIELD_STRING_ENUM;
    else if (all_bool)
        f->kind = TL_DFIELD_BOOLEAN;
    else if (all_int)
        f->kind = TL_DFIELD_INTEGER_ENUM;
    else if (all_num)
        f->kind = TL_DFIELD_NUMBER_ENUM;
    else
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/enum: values of mixed types; declare \"type\"", f->path);
    return TL_OK;
}

/* An integer/number field without enum: its range, step and digits become a
 * number spec (constrain.h), read from the property seen through its $ref
 * chain (the property's own keywords win). */
static tl_status field_parse_number(tl_dfield *f, const prop_view *v, bool integer, tl_error *err) {
    json_t *merged = json_object();
    if (!merged)
        return nomem(err);
    for (size_t i = v->n; i-- > 0;)
        json_object_update(merged, (json_t *)v->layer[i]);
    json_object_del(merged, "$ref");
    tl_status st = tl_number_spec_from_schema(merged, f->path, &f->number, err);
    json_decref(merged);
    if (st) {
        if (err)
            tl_error_wrap(err, "schema");
        return st;
    }
    f->kind = integer ? TL_DFIELD_INTEGER : TL_DFIELD_NUMBER;
    return TL_OK;
}

static tl_status field_parse_kind_and_values(tl_dfield *f, const prop_view *v, tl_error *err) {
    const json_t *type = view_get(v, "type");
    bool has_values = view_get(v, "enum") || view_get(v, "oneOf") || view_get(v, "anyOf");
    if (!type) {
        tl_status st = infer_kind(f, v, err);
        if (st)
            return st;
    } else if (!json_is_string(type)) {
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/type: must be one string (string, boolean, integer, number)",
                            f->path);
    } else {
        const char *t = json_string_value(type);
        const json_t *fmt = view_get(v, "format");
        if (!strcmp(t, "string")) {
            if (!has_values)
                return tl_error_set(err, TL_ERR_SCHEMA,
                                    "schema: %s: string field without enum (declare its values with \"enum\")", f->path);
            f->kind = TL_DFIELD_STRING_ENUM;
        } else if (!strcmp(t, "boolean")) {
            f->kind = TL_DFIELD_BOOLEAN;
        } else if (!strcmp(t, "number") && json_is_string(fmt) && !strcmp(json_string_value(fmt), "score")) {
            f->kind = TL_DFIELD_SCORE;
        } else if (!strcmp(t, "integer") || !strcmp(t, "number")) {
            bool integer = !strcmp(t, "integer");
            if (!has_values)
                return field_parse_number(f, v, integer, err);
            f->kind = integer ? TL_DFIELD_INTEGER_ENUM : TL_DFIELD_NUMBER_ENUM;
        } else if (!strcmp(t, "array") || !strcmp(t, "object") || !strcmp(t, "null")) {
            return tl_error_set(err, TL_ERR_SCHEMA,
                                "schema: %s/type: '%s' is not a decision (fields are enums, booleans, scores)", f->path,
                                t);
        } else {
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/type: unknown type '%s'", f->path, t);
        }
    }
    if (f->kind == TL_DFIELD_SCORE) {
        json_t *levels[11];
        for (int i = 0; i <= 10; i++)
            levels[i] = json_real(i / 10.0);
        tl_status st = field_set_values(f, levels, 11, "format", err);
        for (int i = 0; i <= 10; i++)
            json_decref(levels[i]);
        return st;
    }
    if (f->kind == TL_DFIELD_BOOLEAN && !has_values) {
        json_t *tf[2] = {json_true(), json_false()};
        return field_set_values(f, tf, 2, "type", err);
    }
    return field_collect_values(f, v, err);
}

static tl_status field_parse_texts(tl_dfield *f, const prop_view *v, tl_error *err) {
    const json_t *xname = view_get(v, "x-name");
    if (xname && (!json_is_string(xname) || !json_string_length(xname)))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-name: must be a non-empty string", f->path);
    f->name = dup_str(xname ? json_string_value(xname) : f->key);
    const char *qkeys[2] = {"question", "description"};
    const json_t *q = NULL;
    for (int i = 0; i < 2 && !q; i++) {
        q = view_get(v, qkeys[i]);
        if (q && !json_is_string(q))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s: must be a string", f->path, qkeys[i]);
    }
    f->question = dup_str(q ? json_string_value(q) : f->name);
    if (!f->name || !f->question)
        return nomem(err);

    const json_t *xd = view_get(v, "x-descriptions");
    if (xd) {
        if (!json_is_object(xd))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-descriptions: must be an object {value: text}",
                                f->path);
        const char *k;
        const json_t *d;
        json_object_foreach((json_t *)xd, k, d) {
            size_t i = 0;
            while (i < f->n_values && strcmp(f->value_keys[i], k))
                i++;
            if (i == f->n_values)
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-descriptions/%s: no such value", f->path, k);
            if (!json_is_string(d))
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-descriptions/%s: must be a string", f->path, k);
            free(f->value_descs[i]);
            if (!(f->value_descs[i] = dup_str(json_string_value(d))))
                return nomem(err);
        }
    }
    return TL_OK;
}

/* ---- open fields, x-domain-from ------------------------------------------ */

/* "open"/"x-open", "maxLength", "x-max-tokens" and "x-domain-from" of field
 * f (index fi; props: every property, to tell a later field from an unknown one). */
static tl_status field_parse_open(tl_dschema *s, size_t fi, const prop_view *v, const json_t *props, tl_error *err) {
    tl_dfield *f = &s->fields[fi];
    f->domain_from = -1;
    const json_t *op = view_get(v, "open"), *xo = view_get(v, "x-open");
    if (op && !json_is_boolean(op))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/open: must be true or false", f->path);
    if (xo && !(json_is_string(xo) && json_string_length(xo)))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-open: must be a non-empty string (the open choice's name)",
                            f->path);
    f->open = json_is_true(op) || xo;
    if (f->open && f->kind != TL_DFIELD_STRING_ENUM)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/%s: only string enum fields can be open", f->path,
                            xo ? "x-open" : "open");
    const json_t *ml = view_get(v, "maxLength");
    if (ml) {
        if (!json_is_integer(ml) || json_integer_value(ml) <= 0)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/maxLength: must be an integer > 0", f->path);
        if (json_integer_value(ml) > TL_DFIELD_OPEN_MAX_LENGTH_LIMIT)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/maxLength: %lld; at most %d", f->path,
                                (long long)json_integer_value(ml), TL_DFIELD_OPEN_MAX_LENGTH_LIMIT);
    }
    f->max_length = ml ? (size_t)json_integer_value(ml) : TL_DFIELD_OPEN_MAX_LENGTH;
    const json_t *mt = view_get(v, "x-max-tokens");
    if (mt) {
        if (!json_is_integer(mt) || json_integer_value(mt) <= 0 || json_integer_value(mt) > 65536)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-max-tokens: must be an integer in [1, 65536]",
                                f->path);
        f->max_tokens = (int)json_integer_value(mt);
    }
    if (f->open) {
        f->open_name = dup_str(xo ? json_string_value(xo) : "other");
        if (!f->open_name)
            return nomem(err);
        for (size_t i = 0; i < f->n_values; i++)
            if (!strcmp(f->value_keys[i], f->open_name))
                return tl_error_set(err, TL_ERR_SCHEMA,
                                    "schema: %s/enum/%zu: '%s' is also the open choice's name; name the open choice "
                                    "otherwise with \"x-open\"",
                                    f->path, i, f->open_name);
    }
    const json_t *df = view_get(v, "x-domain-from");
    if (df) {
        if (!json_is_string(df))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: must be a field name", f->path);
        const char *name = json_string_value(df);
        long src = tl_dschema_find(s, name);
        if (src < 0 || (size_t)src >= fi)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: %s field '%s' (it must name an earlier "
                                "open field)", f->path, json_object_get(props, name) ? "later" : "unknown", name);
        if (!s->fields[src].open)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: field '%s' is not open", f->path, name);
        if (f->kind != TL_DFIELD_STRING_ENUM)
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: only string enum fields take values "
                                "from an open field", f->path);
        f->domain_from = src;
    }
    return TL_OK;
}

tl_status tl_dfield_add_string(tl_dfield *f, const char *text, bool *added, tl_error *err) {
    *added = false;
    if (f->n_values >= TL_DFIELD_MAX_VALUES)
        return TL_OK;
    for (size_t i = 0; i < f->n_values; i++)
        if (!strcmp(f->value_keys[i], text))
            return TL_OK;
    if (f->open && !strcmp(f->open_name, text))
        return TL_OK;
    size_t n = f->n_values + 1;
    json_t **vals = realloc(f->values, n * sizeof *vals);
    if (vals)
        f->values = vals;
    char **keys = realloc(f->value_keys, n * sizeof *keys);
    if (keys)
        f->value_keys = keys;
    char **js = realloc(f->value_json, n * sizeof *js);
    if (js)
        f->value_json = js;
    char **ds = realloc(f->value_descs, n * sizeof *ds);
    if (ds)
        f->value_descs = ds;
    if (!vals || !keys || !js || !ds)
        return nomem(err);
    json_t *v = json_string(text);
    char *k = dup_str(text), *j = v ? value_json_text(v) : NULL;
    if (!v || !k || !j) {
        json_decref(v), free(k), free(j);
        return nomem(err);
    }
    f->values[f->n_values] = v;
    f->value_keys[f->n_values] = k;
    f->value_json[f->n_values] = j;
    f->value_descs[f->n_values] = NULL;
    f->n_values = n;
    *added = true;
    return TL_OK;
}

/* ---- depends_on ---------------------------------------------------------- */

static tl_status parse_deps(tl_dschema *s, const json_t *props, tl_error *err) {
    size_t i = 0;
    const char *key;
    const json_t *prop;
    json_object_foreach((json_t *)props, key, prop) {
        tl_dfield *f = &s->fields[i++];
        const json_t *d = json_object_get(prop, "depends_on");
        if (!d && f->domain_from < 0)
            continue;
        if (d && !json_is_array(d))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on: must be an array of field names", f->path);
        f->deps = calloc(json_array_size(d) + 2, sizeof *f->deps);
        if (!f->deps)
            return nomem(err);
        if (f->domain_from >= 0) {
            /* x-domain-from needs the open field's answer first */
            f->deps[f->n_deps++] = (size_t)f->domain_from;
            s->any_deps = true;
        }
        for (size_t j = 0; j < json_array_size(d); j++) {
            const json_t *nm = json_array_get(d, j);
            long idx = json_is_string(nm) ? tl_dschema_find(s, json_string_value(nm)) : -1;
            if (!json_is_string(nm))
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on/%zu: must be a field name", f->path, j);
            if (idx < 0)
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on/%zu: unknown field '%s'", f->path, j,
                                    json_string_value(nm));
            bool dup = false;
            for (size_t k = 0; k < f->n_deps; k++)
                dup |= f->deps[k] == (size_t)idx;
            if (!dup)
                f->deps[f->n_deps++] = (size_t)idx;
            s->any_deps = true;
        }
    }
    /* Cycle check: depth-first search with colours; report the cycle's path. */
    size_t n = s->n_fields;
    unsigned char *colour = calloc(n, 1); /* 0 new, 1 on stack, 2 done */
    size_t *stack = calloc(n, sizeof *stack), *pos = calloc(n, sizeof *pos);
    if (!colour || !stack || !pos) {
        free(colour), free(stack), free(pos);
        return nomem(err);
    }
    tl_status st = TL_OK;
    for (size_t root = 0; root < n && !st; root++) {
        if (colour[root])
            continue;
        size_t sp = 0;
        stack[sp] = root;
        pos[sp++] = 0;
        colour[root] = 1;
        while (sp && !st) {
            size_t cur = stack[sp - 1];
            if (pos[sp - 1] == s->fields[cur].n_deps) {
                colour[cur] = 2;
                sp--;
                continue;
            }
            size_t nxt = s->fields[cur].deps[pos[sp - 1]++];
            if (colour[nxt] == 1) {
                tl_strbuf cyc = TL_STRBUF_INIT;
                size_t from = 0;
                while (stack[from] != nxt)
                    from++;
                for (size_t k = from; k < sp; k++)
                    tl_strbuf_printf(&cyc, "%s -> ", s->fields[stack[k]].key);
                tl_strbuf_puts(&cyc, s->fields[nxt].key);
                st = tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on: dependency cycle %s",
                                  s->fields[cur].path, tl_strbuf_cstr(&cyc));
                tl_strbuf_free(&cyc);
            } else if (colour[nxt] == 0) {
                colour[nxt] = 1;
                stack[sp] = nxt;
                pos[sp++] = 0;
            }
        }
    }
    free(colour), free(stack), free(pos);
    return st;
}

/* ---- the schema ---------------------------------------------------------- */

static tl_status top_text(const json_t *schema, const char *key, char **out, tl_error *err) {
    const json_t *t = json_object_get(schema, key);
    if (!t)
        return TL_OK;
    if (!json_is_string(t))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /%s: must be a string", key);
    return (*out = dup_str(json_string_value(t))) ? TL_OK : nomem(err);
}

static tl_status parse_into(const json_t *schema, tl_dschema *s, tl_error *err) {
    if (!json_is_object(schema))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /: must be a JSON object, got %s",
                            json_is_array(schema) ? "an array" : json_is_string(schema) ? "a string" : "a scalar");
    const json_t *type = json_object_get(schema, "type");
    if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "object")))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /type: the schema must be {\"type\":\"object\"}");
    tl_status st = top_text(schema, "title", &s->title, err);
    if (!st)
        st = top_text(schema, "description", &s->description, err);
    if (st)
        return st;
    const json_t *props = json_object_get(schema, "properties");
    if (!props)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /properties: missing (the fields to decide, in order)");
    if (!json_is_object(props))
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /properties: must be an object");
    size_t n = json_object_size(props);
    if (n == 0)
        return tl_error_set(err, TL_ERR_SCHEMA, "schema: /properties: no fields to decide");
    if (n > TL_DSCHEMA_MAX_FIELDS)
        return tl_error_set(err, TL_ERR_LIMIT, "schema: /properties: %zu fields; at most %d", n, TL_DSCHEMA_MAX_FIELDS);
    s->fields = calloc(n, sizeof *s->fields);
    if (!s->fields)
        return nomem(err);

    const char *key;
    const json_t *prop;
    json_object_foreach((json_t *)props, key, prop) {
        tl_dfield *f = &s->fields[s->n_fields++];
        tl_strbuf path = TL_STRBUF_INIT;
        if (!tl_strbuf_puts(&path, "/properties") || !pointer_append(&path, key)) {
            tl_strbuf_free(&path);
            return nomem(err);
        }
        f->path = tl_strbuf_detach(&path);
        f->key = dup_str(key);
        if (!f->path || !f->key)
            return nomem(err);
        if (!json_is_object(prop))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s: must be a schema object", f->path);
        prop_view v;
        if ((st = view_build(schema, prop, f->path, &v, err)) || (st = field_parse_kind_and_values(f, &v, err)) ||
            (st = field_parse_texts(f, &v, err)) || (st = field_parse_open(s, s->n_fields - 1, &v, props, err)))
            return st;
    }

    const json_t *req = json_object_get(schema, "required");
    if (req) {
        if (!json_is_array(req))
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: /required: must be an array of field names");
        for (size_t i = 0; i < json_array_size(req); i++) {
            const json_t *r = json_array_get(req, i);
            long idx = json_is_string(r) ? tl_dschema_find(s, json_string_value(r)) : -1;
            if (idx < 0)
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: /required/%zu: %s", i,
                                    json_is_string(r) ? "names no property" : "must be a string");
            s->fields[idx].required = true;
        }
    }
    return parse_deps(s, props, err);
}

tl_status tl_dschema_parse(const json_t *schema, tl_dschema **out, tl_error *err) {
    *out = NULL;
    tl_dschema *s = calloc(1, sizeof *s);
    if (!s)
        return nomem(err);
    tl_status st = parse_into(schema, s, err);
    if (st) {
        tl_dschema_free(s);
        return st;
    }
    *out = s;
    return TL_OK;
}
