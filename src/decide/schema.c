/* schema.c: JSON Schema object -> tl_dschema (see schema.h). The one place
 * that knows which JSON Schema shapes are decisions; everything downstream
 * sees only finite typed domains. */
#include "decide/schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide/correct.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/strbuf.h"

#define REF_MAX_DEPTH 8
#define VIEW_MAX_LAYERS 24
#define NEST_MAX_DEPTH 32
#define GROUP_MAX_VALUES 255

/* ---- small helpers ------------------------------------------------------- */

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

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
    if (json_is_null(v))
        return dup_str("null");
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

/* A hash that agrees with values_equal: numbers by their value as a double
 * (1 and 1.0 meet, so do -0.0 and 0), strings by their bytes, anything else
 * by its type alone. */
static uint64_t value_hash(const json_t *v) {
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (d == 0)
            d = 0; /* -0.0 */
        return tl_hash_bytes(&d, sizeof d);
    }
    if (json_is_string(v))
        return tl_hash_bytes(json_string_value(v), json_string_length(v));
    int type = (int)json_typeof(v);
    return tl_hash_bytes(&type, sizeof type);
}

long tl_dfield_value_index(const tl_dfield *f, const json_t *v) {
    for (size_t i = 0; i < f->n_values; i++)
        if (values_equal(f->values[i], v))
            return (long)i;
    return -1;
}

long tl_dschema_find(const tl_dschema *s, const char *key) {
    if (key[0] == '/')
        key++;
    for (size_t i = 0; i < s->n_fields; i++)
        if (!strcmp(s->fields[i].key, key))
            return (long)i;
    return -1;
}

static void free_segs(char **segs, size_t n) {
    for (size_t i = 0; segs && i < n; i++)
        free(segs[i]);
    free(segs);
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
    free_segs(f->segs, f->n_segs);
    free(f->pattern);
    free(f->after);
    free(f->place);
    free(f->prior);
    free(f->cf_input);
}

void tl_dschema_free(tl_dschema *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n_fields; i++)
        field_free(&s->fields[i]);
    free(s->fields);
    for (size_t i = 0; i < s->n_groups; i++) {
        for (size_t j = 0; s->groups[i].values && j < s->groups[i].n; j++) {
            json_decref(s->groups[i].values[j]);
            free(s->groups[i].value_keys[j]);
        }
        free(s->groups[i].values);
        free(s->groups[i].value_keys);
        free(s->groups[i].key);
        free(s->groups[i].path);
        free_segs(s->groups[i].segs, s->groups[i].n_segs);
    }
    free(s->groups);
    for (size_t i = 0; i < s->n_objects; i++) {
        free(s->objects[i].path);
        free_segs(s->objects[i].segs, s->objects[i].n_segs);
    }
    free(s->objects);
    for (size_t i = 0; i < s->n_arrays; i++) {
        free(s->arrays[i].key);
        free(s->arrays[i].path);
        free_segs(s->arrays[i].segs, s->arrays[i].n_segs);
    }
    free(s->arrays);
    free(s->nodes);
    for (size_t i = 0; i < s->n_warnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    free(s->title);
    free(s->description);
    free(s);
}

static tl_status nomem(tl_error *err) { return tl_error_set(err, TL_ERR_NOMEM, "schema: out of memory"); }

/* ---- lookups by hash ----------------------------------------------------- */

/* Items 0, 1, ... of a caller's list by 64-bit hash, open addressing at most
 * half full. The caller compares the items (several may share a hash) and
 * stores one of each kind, so a match is the first earlier one. */
typedef struct hash_index {
    uint64_t *hash; /* [mask + 1] the item's hash */
    uint32_t *item; /* [mask + 1] item + 1; 0: empty */
    size_t mask, n; /* slots - 1 (0 before the first add), items stored */
} hash_index;

static void hash_index_free(hash_index *t) {
    free(t->hash), free(t->item);
    memset(t, 0, sizeof *t);
}

static size_t hash_index_slot(const hash_index *t, uint64_t h) {
    return (size_t)(h ^ h >> 32) & t->mask; /* FNV-1a's low bits alone are weak */
}

/* The stored item with hash h that same(list, item, x) takes for x, or -1. */
static long hash_index_find(const hash_index *t, uint64_t h, bool (*same)(const void *, size_t, const void *),
                            const void *list, const void *x) {
    if (!t->item)
        return -1;
    for (size_t i = hash_index_slot(t, h); t->item[i]; i = (i + 1) & t->mask)
        if (t->hash[i] == h && same(list, t->item[i] - 1, x))
            return (long)t->item[i] - 1;
    return -1;
}

static void hash_index_put(hash_index *t, uint64_t h, uint32_t item1) {
    size_t i = hash_index_slot(t, h);
    while (t->item[i])
        i = (i + 1) & t->mask;
    t->hash[i] = h;
    t->item[i] = item1;
}

static bool hash_index_add(hash_index *t, uint64_t h, size_t item) {
    size_t slots = t->item ? t->mask + 1 : 0;
    if (2 * (t->n + 1) > slots) {
        size_t cap = slots ? 2 * slots : 64;
        hash_index g = {malloc(cap * sizeof *g.hash), calloc(cap, sizeof *g.item), cap - 1, t->n};
        if (!g.hash || !g.item) {
            hash_index_free(&g);
            return false;
        }
        for (size_t i = 0; i < slots; i++)
            if (t->item[i])
                hash_index_put(&g, t->hash[i], t->item[i]);
        hash_index_free(t);
        *t = g;
    }
    hash_index_put(t, h, (uint32_t)item + 1);
    t->n++;
    return true;
}

/* A field's values and their key texts, f->values[0 .. n), for
 * field_add_value's checks: an equal value, a key that reads the same. */
typedef struct value_index {
    tl_dfield *f;
    size_t n;
    hash_index by_value, by_key;
} value_index;

static void value_index_free(value_index *vi) {
    hash_index_free(&vi->by_value);
    hash_index_free(&vi->by_key);
}

static uint64_t key_hash(const char *key) { return tl_hash_bytes(key, strlen(key)); }

static bool field_value_same(const void *f, size_t i, const void *v) {
    return values_equal(((const tl_dfield *)f)->values[i], v);
}

static bool field_key_same(const void *f, size_t i, const void *key) {
    return !strcmp(((const tl_dfield *)f)->value_keys[i], key);
}

/* Indexes the values added to the field since the last call (markers too:
 * field_add_marker does not check them, so a value or key may repeat; only
 * its first is stored). */
static bool value_index_sync(value_index *vi) {
    const tl_dfield *f = vi->f;
    for (; vi->n < f->n_values; vi->n++) {
        const json_t *v = f->values[vi->n];
        const char *key = f->value_keys[vi->n];
        uint64_t hv = value_hash(v), hk = key_hash(key);
        if (hash_index_find(&vi->by_value, hv, field_value_same, f, v) < 0 && !hash_index_add(&vi->by_value, hv, vi->n))
            return false;
        if (hash_index_find(&vi->by_key, hk, field_key_same, f, key) < 0 && !hash_index_add(&vi->by_key, hk, vi->n))
            return false;
    }
    return true;
}

/* ---- the parse state ----------------------------------------------------- */

typedef struct walk {
    const json_t *root;
    tl_dschema *s;
    tl_dschema_opts opts;
    size_t cap_fields, cap_nodes, cap_groups, cap_objects, cap_arrays, cap_warnings;
    bool dup_seen;           /* field_add_value met a value already declared */
    value_index *vidx;       /* the lookups of the field collect_field_values fills, kept across its values */
    tl_dcond cond;           /* the condition of what is walked now (inside an array item, a present value) */
    int in_items;            /* > 0 inside an array's items: fields get their value's JSON path (place) */
    /* auto mode: item i's fields wait for item i-1's (pairs field, first, n) */
    size_t *implicit, n_implicit, cap_implicit;
    const json_t *cur_props; /* the properties of the object being walked (tells a later field from an unknown one) */
    tl_error *err;
} walk;

/* A keyword typellm does not honour: an error, or with --lenient a warning
 * (the keyword is then ignored). Returns TL_OK when only warned. */
static tl_status refuse(walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tl_status refuse(walk *w, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!w->opts.lenient)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s", msg);
    tl_dschema *s = w->s;
    for (size_t i = 0; i < s->n_warnings; i++) /* an array's items are walked once per item */
        if (!strcmp(s->warnings[i], msg))
            return TL_OK;
    if (s->n_warnings == w->cap_warnings) {
        size_t cap = w->cap_warnings ? 2 * w->cap_warnings : 8;
        char **p = realloc(s->warnings, cap * sizeof *p);
        if (!p)
            return nomem(w->err);
        s->warnings = p;
        w->cap_warnings = cap;
    }
    if (!(s->warnings[s->n_warnings] = dup_str(msg)))
        return nomem(w->err);
    s->n_warnings++;
    return TL_OK;
}

static bool grow(void **p, size_t *cap, size_t n, size_t elem) {
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 16;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
    *p = q;
    *cap = c;
    return true;
}

/* A node of the result layout under the current condition (presence: -1, set by the caller). */
static tl_status add_node(walk *w, tl_dnode_kind kind, size_t index) {
    if (!grow((void **)&w->s->nodes, &w->cap_nodes, w->s->n_nodes, sizeof *w->s->nodes))
        return nomem(w->err);
    w->s->nodes[w->s->n_nodes++] = (tl_dnode){kind, index, w->cond, -1};
    return TL_OK;
}

/* Field fi is decided after field j in every mode but sequential. */
static tl_status add_after(walk *w, size_t fi, size_t j) {
    tl_dfield *f = &w->s->fields[fi];
    for (size_t i = 0; i < f->n_after; i++)
        if (f->after[i] == j)
            return TL_OK;
    size_t *p = realloc(f->after, (f->n_after + 1) * sizeof *p);
    if (!p)
        return nomem(w->err);
    f->after = p;
    f->after[f->n_after++] = j;
    w->s->any_after = true;
    return TL_OK;
}

static char **segs_copy(char *const *segs, size_t n, const char *extra) {
    char **out = calloc(n + 1, sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n + (extra != NULL); i++)
        if (!(out[i] = dup_str(i < n ? segs[i] : extra))) {
            free_segs(out, i);
            return NULL;
        }
    return out;
}

static char *segs_join(char *const *segs, size_t n) {
    tl_strbuf sb = TL_STRBUF_INIT;
    for (size_t i = 0; i < n; i++)
        if ((i && !tl_strbuf_putc(&sb, '/')) || !tl_strbuf_puts(&sb, segs[i])) {
            tl_strbuf_free(&sb);
            return NULL;
        }
    return n ? tl_strbuf_detach(&sb) : dup_str("");
}

/* ---- keywords ------------------------------------------------------------ */

enum {
    KW_ANNOT = 1,   /* annotations and structure: everywhere */
    KW_LEAF = 2,    /* a decided value (field or array) */
    KW_ENUM = 4,    /* declared values */
    KW_OPEN = 8,    /* open string enums */
    KW_NUM = 16,    /* generated numbers */
    KW_STR = 32,    /* generated strings */
    KW_ARR = 64,    /* arrays */
    KW_OBJ = 128,   /* objects */
    KW_ROOT = 256,  /* the root only */
    KW_REFUSED = 0  /* recognised JSON Schema, but typellm cannot honour it */
};

typedef struct keyword {
    const char *name;
    unsigned where;
    const char *why; /* KW_REFUSED: why not */
} keyword;

static const keyword KEYWORDS[] = {
    {"title", KW_ANNOT, NULL}, {"description", KW_ANNOT, NULL}, {"$comment", KW_ANNOT, NULL},
    {"examples", KW_ANNOT, NULL}, {"default", KW_ANNOT, NULL}, {"deprecated", KW_ANNOT, NULL},
    {"readOnly", KW_ANNOT, NULL}, {"writeOnly", KW_ANNOT, NULL}, {"$schema", KW_ANNOT, NULL},
    {"$id", KW_ANNOT, NULL}, {"$defs", KW_ANNOT, NULL}, {"definitions", KW_ANNOT, NULL},
    {"$ref", KW_ANNOT, NULL}, {"allOf", KW_ANNOT, NULL}, {"anyOf", KW_ANNOT, NULL},
    {"oneOf", KW_ANNOT, NULL}, {"type", KW_ANNOT, NULL}, {"nullable", KW_ANNOT, NULL},
    {"x-optional", KW_ANNOT, NULL},
    {"question", KW_LEAF, NULL}, {"x-name", KW_LEAF, NULL}, {"depends_on", KW_LEAF, NULL},
    {"enum", KW_ENUM, NULL}, {"const", KW_ENUM, NULL}, {"x-descriptions", KW_ENUM, NULL},
    {"open", KW_OPEN, NULL}, {"x-open", KW_OPEN, NULL}, {"x-domain-from", KW_OPEN, NULL},
    {"maxLength", KW_OPEN | KW_STR, NULL}, {"x-max-tokens", KW_OPEN | KW_STR, NULL},
    {"minLength", KW_STR, NULL}, {"pattern", KW_STR, NULL}, {"format", KW_STR | KW_NUM, NULL},
    {"minimum", KW_NUM, NULL}, {"maximum", KW_NUM, NULL}, {"exclusiveMinimum", KW_NUM, NULL},
    {"exclusiveMaximum", KW_NUM, NULL}, {"multipleOf", KW_NUM, NULL}, {"x-decimals", KW_NUM, NULL},
    {"x-max-digits", KW_NUM, NULL},
    {"items", KW_ARR, NULL}, {"minItems", KW_ARR, NULL}, {"maxItems", KW_ARR, NULL},
    {"uniqueItems", KW_ARR, NULL}, {"x-length", KW_ARR, NULL},
    {"properties", KW_OBJ, NULL}, {"required", KW_OBJ, NULL}, {"additionalProperties", KW_OBJ, NULL},
    {"x-debias", KW_ENUM, NULL}, {"x-calibrate", KW_ENUM, NULL}, {"x-think", KW_ENUM, NULL},
    {"x-strict", KW_ROOT, NULL},
    {"not", KW_REFUSED, "a negation has no finite domain or automaton"},
    {"if", KW_REFUSED, "conditional schemas are not decided"},
    {"then", KW_REFUSED, "conditional schemas are not decided"},
    {"else", KW_REFUSED, "conditional schemas are not decided"},
    {"patternProperties", KW_REFUSED, "only declared properties are decided"},
    {"propertyNames", KW_REFUSED, "only declared properties are decided"},
    {"minProperties", KW_REFUSED, "the properties decided are the declared ones"},
    {"maxProperties", KW_REFUSED, "the properties decided are the declared ones"},
    {"dependentRequired", KW_REFUSED, "requirements between properties are not decided"},
    {"dependentSchemas", KW_REFUSED, "conditional schemas are not decided"},
    {"dependencies", KW_REFUSED, "requirements between properties are not decided"},
    {"contains", KW_REFUSED, "array items are decided per declared value, not matched"},
    {"minContains", KW_REFUSED, "array items are decided per declared value, not matched"},
    {"maxContains", KW_REFUSED, "array items are decided per declared value, not matched"},
    {"prefixItems", KW_REFUSED, "tuples are not supported (declare an object)"},
    {"additionalItems", KW_REFUSED, "tuples are not supported (declare an object)"},
    {"unevaluatedItems", KW_REFUSED, "annotation-dependent validation is not supported"},
    {"unevaluatedProperties", KW_REFUSED, "annotation-dependent validation is not supported"},
    {"contentEncoding", KW_REFUSED, "encoded content is not generated"},
    {"contentMediaType", KW_REFUSED, "encoded content is not generated"},
    {"contentSchema", KW_REFUSED, "encoded content is not generated"},
    {"$anchor", KW_REFUSED, "only local JSON-pointer references (#/$defs/NAME) are resolved"},
    {"$dynamicRef", KW_REFUSED, "only local JSON-pointer references (#/$defs/NAME) are resolved"},
    {"$dynamicAnchor", KW_REFUSED, "only local JSON-pointer references (#/$defs/NAME) are resolved"},
    {"$recursiveRef", KW_REFUSED, "only local JSON-pointer references (#/$defs/NAME) are resolved"},
    {"$recursiveAnchor", KW_REFUSED, "only local JSON-pointer references (#/$defs/NAME) are resolved"},
    {"$vocabulary", KW_REFUSED, "vocabularies are not supported"},
};

static const keyword *keyword_find(const char *name) {
    for (size_t i = 0; i < sizeof KEYWORDS / sizeof KEYWORDS[0]; i++)
        if (!strcmp(KEYWORDS[i].name, name))
            return &KEYWORDS[i];
    return NULL;
}

/* Every keyword of one schema object (at path) must be known and apply to
 * `what` (allowed: KW_* bits). */
static tl_status check_keywords(walk *w, const json_t *obj, const char *path, unsigned allowed, const char *what) {
    const char *key;
    const json_t *val;
    tl_status st = TL_OK;
    json_object_foreach((json_t *)obj, key, val) {
        const keyword *k = keyword_find(key);
        if (!k)
            st = refuse(w, "%s/%s: unknown keyword (a typo? --lenient ignores it)", path, key);
        else if (k->where == KW_REFUSED)
            st = refuse(w, "%s/%s: typellm cannot honour '%s' (%s)", path, key, key, k->why);
        else if (!(k->where & (allowed | KW_ANNOT)))
            st = refuse(w, "%s/%s: does not apply to %s (typellm cannot honour it here)", path, key, what);
        if (st)
            return st;
    }
    return TL_OK;
}

/* ---- $ref and views ------------------------------------------------------- */

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

/* A schema seen through its $ref chain and allOf-of-one wrappers: keys are
 * looked up in the first layer that has them, so a property may override its
 * definition's description or question. Layers marked `outer` were consumed
 * by an anyOf/oneOf that was unwrapped: their anyOf/oneOf/type/nullable are
 * no longer read. */
typedef struct prop_view {
    const json_t *layer[VIEW_MAX_LAYERS];
    char *lpath[VIEW_MAX_LAYERS];
    bool outer[VIEW_MAX_LAYERS];
    size_t n;
} prop_view;

static void view_free(prop_view *v) {
    for (size_t i = 0; i < v->n; i++)
        free(v->lpath[i]);
    v->n = 0;
}

static bool outer_hidden(const char *key) {
    return !strcmp(key, "anyOf") || !strcmp(key, "oneOf") || !strcmp(key, "type") || !strcmp(key, "nullable");
}

static const json_t *view_get(const prop_view *v, const char *key) {
    for (size_t i = 0; i < v->n; i++) {
        if (v->outer[i] && outer_hidden(key))
            continue;
        const json_t *x = json_object_get(v->layer[i], key);
        if (x)
            return x;
    }
    return NULL;
}

/* The path of the layer a key comes from (for error messages). */
static const char *view_path_of(const prop_view *v, const char *key) {
    for (size_t i = 0; i < v->n; i++) {
        if (v->outer[i] && outer_hidden(key))
            continue;
        if (json_object_get(v->layer[i], key))
            return v->lpath[i];
    }
    return v->n ? v->lpath[0] : "";
}

static tl_status view_push(walk *w, prop_view *v, const json_t *obj, const char *path) {
    for (size_t i = 0; i < v->n; i++)
        if (v->layer[i] == obj)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: reference cycle through '%s'", path, path);
    if (v->n >= VIEW_MAX_LAYERS)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: references nest deeper than %d", path, REF_MAX_DEPTH);
    v->layer[v->n] = obj;
    v->outer[v->n] = false;
    if (!(v->lpath[v->n] = dup_str(path)))
        return nomem(w->err);
    v->n++;
    return TL_OK;
}

/* Adds obj (at path) and everything it references ($ref, allOf of one schema). */
static tl_status view_add(walk *w, prop_view *v, const json_t *obj, const char *path, int depth) {
    if (!json_is_object(obj))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: must be a schema object", path);
    if (depth > REF_MAX_DEPTH)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: references nest deeper than %d", path, REF_MAX_DEPTH);
    tl_status st = view_push(w, v, obj, path);
    if (st)
        return st;
    const json_t *ref = json_object_get(obj, "$ref");
    if (ref) {
        if (!json_is_string(ref))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/$ref: must be a string", path);
        const char *r = json_string_value(ref);
        const json_t *target = resolve_ref(w->root, r);
        if (!target)
            return tl_error_set(w->err, TL_ERR_SCHEMA,
                                "schema: %s/$ref: cannot resolve '%s' (only local refs like #/$defs/NAME)", path, r);
        if (!json_is_object(target))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/$ref: '%s' is not a schema object", path, r);
        for (size_t i = 0; i < v->n; i++)
            if (v->layer[i] == target)
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/$ref: reference cycle through '%s'", path, r);
        if ((st = view_add(w, v, target, r + 1, depth + 1)))
            return st;
    }
    const json_t *all = json_object_get(obj, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) == 0)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/allOf: must be a non-empty array of schemas", path);
        if (json_array_size(all) > 1 &&
            (st = refuse(w, "%s/allOf: typellm cannot honour an allOf of %zu schemas (only allOf of one schema, "
                         "e.g. a wrapped $ref)", path, json_array_size(all))))
            return st;
        /* (--lenient: every member is a layer, the first's keywords first) */
        for (size_t i = 0; i < json_array_size(all) && !st; i++) {
            tl_strbuf p = TL_STRBUF_INIT;
            if (!tl_strbuf_printf(&p, "%s/allOf/%zu", path, i)) {
                tl_strbuf_free(&p);
                return nomem(w->err);
            }
            st = view_add(w, v, json_array_get(all, i), tl_strbuf_cstr(&p), depth + 1);
            tl_strbuf_free(&p);
        }
    }
    return st;
}

/* On failure the view is freed here (callers return at once). */
static tl_status view_build(walk *w, const json_t *obj, const char *path, prop_view *v) {
    v->n = 0;
    tl_status st = view_add(w, v, obj, path, 0);
    if (st)
        view_free(v);
    return st;
}

/* Checks every layer's keywords. */
static tl_status view_check(walk *w, const prop_view *v, unsigned allowed, const char *what) {
    for (size_t i = 0; i < v->n; i++) {
        tl_status st = check_keywords(w, v->layer[i], v->lpath[i], allowed, what);
        if (st)
            return st;
    }
    return TL_OK;
}

/* ---- types --------------------------------------------------------------- */

/* The view's "type": one name, or [T, "null"] (sets *nullable). NULL when absent. */
static tl_status view_type(walk *w, const prop_view *v, const char *path, const char **type, bool *nullable) {
    *type = NULL;
    const json_t *t = view_get(v, "type");
    const json_t *nb = view_get(v, "nullable");
    if (nb && !json_is_boolean(nb))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/nullable: must be true or false", view_path_of(v, "nullable"));
    if (json_is_true(nb))
        *nullable = true;
    if (!t)
        return TL_OK;
    if (json_is_string(t)) {
        *type = json_string_value(t);
        return TL_OK;
    }
    if (json_is_array(t)) {
        const char *one = NULL;
        for (size_t i = 0; i < json_array_size(t); i++) {
            const json_t *x = json_array_get(t, i);
            if (!json_is_string(x))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/type/%zu: must be a type name", path, i);
            if (!strcmp(json_string_value(x), "null"))
                *nullable = true;
            else if (one)
                return tl_error_set(w->err, TL_ERR_SCHEMA,
                                    "schema: %s/type: a list of several types ('%s', '%s'); typellm decides one type "
                                    "(plus \"null\")", path, one, json_string_value(x));
            else
                one = json_string_value(x);
        }
        *type = one ? one : "null";
        return TL_OK;
    }
    return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/type: must be a type name or a list of them", path);
}

static bool is_object_view(const prop_view *v, const char *type) {
    return (type && !strcmp(type, "object")) || (!type && view_get(v, "properties"));
}

/* ---- declared values ----------------------------------------------------- */

/* field_add_value with the field's lookups vi. */
static tl_status field_add_indexed(walk *w, value_index *vi, const json_t *v, const char *src, const char *desc) {
    tl_dfield *f = vi->f;
    size_t i = f->n_values;
    if (i >= TL_DFIELD_MAX_VALUES)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: more than %d values; a field may have at most %d", src,
                            TL_DFIELD_MAX_VALUES, TL_DFIELD_MAX_VALUES);
    if (!value_index_sync(vi))
        return nomem(w->err);
    if (hash_index_find(&vi->by_value, value_hash(v), field_value_same, f, v) >= 0) {
        w->dup_seen = true;
        return TL_OK; /* the union of declared values: one of each */
    }
    char *key = value_key_text(v), *js = value_json_text(v);
    if (!key || !js) {
        free(key), free(js);
        return nomem(w->err);
    }
    long j = hash_index_find(&vi->by_key, key_hash(key), field_key_same, f, key);
    if (j >= 0) {
        tl_status st = tl_error_set(w->err, TL_ERR_SCHEMA,
                                    "schema: %s: value %s reads the same as value %s ('%s'); probabilities are "
                                    "keyed by that text", src, js, f->value_json[j], key);
        free(key), free(js);
        return st;
    }
    size_t n = i + 1;
    json_t **vals = realloc(f->values, n * sizeof *vals);
    if (vals) f->values = vals;
    char **keys = realloc(f->value_keys, n * sizeof *keys);
    if (keys) f->value_keys = keys;
    char **jss = realloc(f->value_json, n * sizeof *jss);
    if (jss) f->value_json = jss;
    char **ds = realloc(f->value_descs, n * sizeof *ds);
    if (ds) f->value_descs = ds;
    json_t *copy = json_deep_copy(v);
    char *d = desc ? dup_str(desc) : NULL;
    if (!vals || !keys || !jss || !ds || !copy || (desc && !d)) {
        free(key), free(js), free(d), json_decref(copy);
        return nomem(w->err);
    }
    f->values[i] = copy;
    f->value_keys[i] = key;
    f->value_json[i] = js;
    f->value_descs[i] = d;
    f->n_values = n;
    return TL_OK;
}

/* One declared value joining field f (from src, a JSON path, for errors).
 * Inside collect_field_values the field's lookups are kept; elsewhere (a few
 * values each) they are built for the call. */
static tl_status field_add_value(walk *w, tl_dfield *f, const json_t *v, const char *src, const char *desc) {
    value_index own = {.f = f}, *vi = w->vidx && w->vidx->f == f ? w->vidx : &own;
    tl_status st = field_add_indexed(w, vi, v, src, desc);
    value_index_free(&own);
    return st;
}

/* A declared choice that stands for no JSON value of its own: "(absent)"
 * (leave the property out), "(present)" (a value is generated next). Its
 * value is `v` (JSON null for absent), its key and rendering `text`. */
static tl_status field_add_marker(walk *w, tl_dfield *f, json_t *v, const char *text, const char *desc) {
    size_t i = f->n_values;
    json_t **vals = realloc(f->values, (i + 1) * sizeof *vals);
    if (vals) f->values = vals;
    char **k = realloc(f->value_keys, (i + 1) * sizeof *k);
    if (k) f->value_keys = k;
    char **j = realloc(f->value_json, (i + 1) * sizeof *j);
    if (j) f->value_json = j;
    char **d = realloc(f->value_descs, (i + 1) * sizeof *d);
    if (d) f->value_descs = d;
    if (!vals || !k || !j || !d) {
        json_decref(v);
        return nomem(w->err);
    }
    f->values[i] = v;
    f->value_keys[i] = dup_str(text);
    f->value_json[i] = dup_str(text);
    f->value_descs[i] = dup_str(desc);
    f->n_values = i + 1;
    if (!v || !f->value_keys[i] || !f->value_json[i] || !f->value_descs[i])
        return nomem(w->err);
    return TL_OK;
}

#define ABSENT_DESC "leave the property out: the input does not say"

/* What a type name allows as a declared value; NULL = anything scalar. */
static const char *type_mismatch(const char *type, const json_t *v) {
    if (!type || json_is_null(v))
        return NULL;
    if (!strcmp(type, "string"))
        return json_is_string(v) ? NULL : "a string";
    if (!strcmp(type, "integer"))
        return json_is_integer(v) ? NULL : "an integer";
    if (!strcmp(type, "number"))
        return json_is_number(v) && isfinite(json_number_value(v)) ? NULL : "a finite number";
    if (!strcmp(type, "boolean"))
        return json_is_boolean(v) ? NULL : "a boolean";
    if (!strcmp(type, "null"))
        return "null";
    return "a string, number or boolean";
}

/* Collected values of one union member or of the field itself. */
typedef struct collect {
    size_t n_null, n_values, n_free;
    const char *free_path; /* the member that is free (generated) */
    long free_member;      /* its index, or -1 (the field itself) */
} collect;

static tl_status collect_values(walk *w, tl_dfield *f, const prop_view *v, const char *path, collect *c, int depth);

static bool enum_value_same(const void *en, size_t i, const void *v) { return values_equal(json_array_get(en, i), v); }

/* collect_values for field f, keeping its lookups across the values (an enum
 * or a union may declare TL_DFIELD_MAX_VALUES of them). */
static tl_status collect_field_values(walk *w, tl_dfield *f, const prop_view *v, const char *path, collect *c) {
    value_index vi = {.f = f}, *outer = w->vidx;
    w->vidx = &vi;
    tl_status st = collect_values(w, f, v, path, c, 0);
    w->vidx = outer;
    value_index_free(&vi);
    return st;
}

/* Declared values of a view: enum, const, boolean type, null type, or a
 * union of those (anyOf / oneOf). Counts views that declare no values
 * (free: generated text or numbers) in c->n_free. */
static tl_status collect_values(walk *w, tl_dfield *f, const prop_view *v, const char *path, collect *c, int depth) {
    if (depth > NEST_MAX_DEPTH)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: unions nest deeper than %d", path, NEST_MAX_DEPTH);
    bool nullable = false;
    const char *type;
    tl_status st = view_type(w, v, path, &type, &nullable);
    if (st)
        return st;
    if (nullable) {
        json_t *nul = json_null();
        c->n_null++;
        if ((st = field_add_value(w, f, nul, path, NULL)))
            return st;
    }
    const json_t *cst = view_get(v, "const");
    const json_t *en = view_get(v, "enum");
    const char *alt = view_get(v, "oneOf") ? "oneOf" : view_get(v, "anyOf") ? "anyOf" : NULL;
    const json_t *desc = view_get(v, "description");
    if (!desc)
        desc = view_get(v, "title");
    if (cst) {
        const char *want = type_mismatch(type, cst);
        if (want)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/const: value is not %s", view_path_of(v, "const"), want);
        if (!json_is_string(cst) && !json_is_number(cst) && !json_is_boolean(cst) && !json_is_null(cst))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/const: must be a string, number, boolean or null",
                                view_path_of(v, "const"));
        c->n_values++;
        if (json_is_null(cst))
            c->n_null++;
        return field_add_value(w, f, cst, path, depth && json_is_string(desc) ? json_string_value(desc) : NULL);
    }
    if (en) {
        const char *ep = view_path_of(v, "enum");
        if (!json_is_array(en))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/enum: must be an array", ep);
        if (!json_array_size(en))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/enum: empty enum (a decision needs at least one value)",
                                ep);
        if (json_array_size(en) > TL_DFIELD_MAX_VALUES)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/enum: %zu values; a field may have at most %d", ep,
                                json_array_size(en), TL_DFIELD_MAX_VALUES);
        hash_index seen = {0}; /* the enum's values so far */
        for (size_t i = 0; i < json_array_size(en); i++) {
            const json_t *x = json_array_get(en, i);
            const char *want = type_mismatch(type, x);
            if (!want && !json_is_string(x) && !json_is_number(x) && !json_is_boolean(x) && !json_is_null(x))
                want = "a string, number, boolean or null";
            if (!want && json_is_real(x) && !isfinite(json_real_value(x)))
                want = "a finite number";
            if (want) {
                st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/enum/%zu: value is not %s", ep, i, want);
                break;
            }
            uint64_t h = value_hash(x);
            long j = hash_index_find(&seen, h, enum_value_same, en, x);
            if (j >= 0) {
                st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/enum/%zu: duplicate value (same as %s/enum/%ld)",
                                  ep, i, ep, j);
                break;
            }
            if (!hash_index_add(&seen, h, i)) {
                st = nomem(w->err);
                break;
            }
            char ip[32];
            snprintf(ip, sizeof ip, "/enum/%zu", i);
            tl_strbuf p = TL_STRBUF_INIT;
            tl_strbuf_printf(&p, "%s%s", ep, ip);
            st = field_add_value(w, f, x, tl_strbuf_cstr(&p), NULL);
            tl_strbuf_free(&p);
            if (st)
                break;
            c->n_values++;
            if (json_is_null(x))
                c->n_null++;
        }
        hash_index_free(&seen);
        return st;
    }
    if (alt) {
        const json_t *one = view_get(v, alt);
        const char *ap = view_path_of(v, alt);
        if (!json_is_array(one) || !json_array_size(one))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: must be a non-empty array of schemas", ap, alt);
        for (size_t i = 0; i < json_array_size(one); i++) {
            tl_strbuf p = TL_STRBUF_INIT;
            if (!tl_strbuf_printf(&p, "%s/%s/%zu", ap, alt, i)) {
                tl_strbuf_free(&p);
                return nomem(w->err);
            }
            prop_view mv;
            st = view_build(w, json_array_get(one, i), tl_strbuf_cstr(&p), &mv);
            size_t before = c->n_free;
            w->dup_seen = false;
            if (!st)
                st = collect_values(w, f, &mv, tl_strbuf_cstr(&p), c, depth + 1);
            if (!st && w->dup_seen && !strcmp(alt, "oneOf"))
                st = tl_error_set(w->err, TL_ERR_SCHEMA,
                                  "schema: %s: a value of this member is also another member's; oneOf needs each value "
                                  "in exactly one member (use anyOf)", tl_strbuf_cstr(&p));
            if (!st && c->n_free > before && c->free_member < 0) {
                c->free_member = (long)i;
            }
            if (!st)
                st = view_check(w, &mv, KW_ENUM | KW_LEAF | (c->n_free > before ? KW_NUM | KW_STR | KW_OBJ | KW_ARR : 0),
                                "a union member");
            view_free(&mv);
            tl_strbuf_free(&p);
            if (st)
                return st;
        }
        return TL_OK;
    }
    if (type && !strcmp(type, "boolean")) {
        c->n_values += 2;
        if ((st = field_add_value(w, f, json_true(), path, NULL)))
            return st;
        return field_add_value(w, f, json_false(), path, NULL);
    }
    if (type && !strcmp(type, "null")) {
        if (!nullable) {
            c->n_null++;
            return field_add_value(w, f, json_null(), path, NULL);
        }
        return TL_OK;
    }
    if (type && !strcmp(type, "number")) {
        const json_t *fmt = view_get(v, "format");
        if (json_is_string(fmt) && !strcmp(json_string_value(fmt), "score")) {
            for (int i = 0; i <= 10; i++) {
                json_t *lv = json_real(i / 10.0);
                st = lv ? field_add_value(w, f, lv, path, NULL) : nomem(w->err);
                json_decref(lv);
                if (st)
                    return st;
            }
            c->n_values += 11;
            return TL_OK;
        }
    }
    if (depth > 0 && !type)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s: a union member needs a \"const\", an \"enum\" or a \"type\"", path);
    c->n_free++;
    if (!c->free_path)
        c->free_path = path;
    return TL_OK;
}

/* The kind a list of declared values has. */
static tl_dfield_kind values_kind(const tl_dfield *f) {
    bool all_str = true, all_bool = true, all_num = true, all_int = true, any = false;
    for (size_t i = 0; i < f->n_values; i++) {
        const json_t *x = f->values[i];
        if (json_is_null(x))
            continue;
        any = true;
        all_str &= json_is_string(x);
        all_bool &= json_is_boolean(x);
        all_num &= json_is_number(x);
        all_int &= json_is_integer(x);
    }
    if (!any || all_str)
        return TL_DFIELD_STRING_ENUM;
    if (all_bool)
        return TL_DFIELD_BOOLEAN;
    if (all_int)
        return TL_DFIELD_INTEGER_ENUM;
    if (all_num)
        return TL_DFIELD_NUMBER_ENUM;
    return TL_DFIELD_UNION;
}

/* ---- string formats ------------------------------------------------------ */

/* Built-in patterns for the common formats (anchored, whole value). */
static const char *format_pattern(const char *fmt) {
    static const struct { const char *name, *re; } F[] = {
        {"date", "[1-9][0-9]{3}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|[1-9][0-9]{3}-(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
                 "[1-9][0-9]{3}-02-(0[1-9]|1[0-9]|2[0-8])"},
        {"time", "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"},
        {"date-time", "[1-9][0-9]{3}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                      "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])|"
                      "[1-9][0-9]{3}-(0[469]|11)-(0[1-9]|[12][0-9]|30)T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                      "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])|"
                      "[1-9][0-9]{3}-02-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                      "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"},
        {"email", "[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){0,4}\\.[A-Za-z]{2,12}"},
        {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"},
        {"uri", "https?://[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){0,4}(/[A-Za-z0-9._~%-]{0,32}){0,8}"},
        {"ipv4", "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"},
    };
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++)
        if (!strcmp(F[i].name, fmt))
            return F[i].re;
    return NULL;
}

const char *tl_dschema_format_pattern(const char *format) { return format_pattern(format); }

/* ---- one field ----------------------------------------------------------- */

/* A generated number field: its range, step and digits become a number spec
 * (constrain.h), read from the view (the property's own keywords win). */
static tl_status field_parse_number(walk *w, tl_dfield *f, const prop_view *v, bool integer) {
    json_t *merged = json_object();
    if (!merged)
        return nomem(w->err);
    for (size_t i = v->n; i-- > 0;)
        json_object_update(merged, (json_t *)v->layer[i]);
    static const char *drop[] = {"$ref", "allOf", "anyOf", "oneOf", "nullable", "open"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        json_object_del(merged, drop[i]);
    json_object_set_new(merged, "type", json_string(integer ? "integer" : "number"));
    tl_status st = tl_number_spec_from_schema(merged, f->path, &f->number, w->err);
    json_decref(merged);
    if (st) {
        tl_error_wrap(w->err, "schema");
        return st;
    }
    f->kind = integer ? TL_DFIELD_INTEGER : TL_DFIELD_NUMBER;
    return TL_OK;
}

static tl_status get_length(walk *w, const prop_view *v, const char *key, size_t lo, size_t hi, size_t *out, bool *has) {
    const json_t *x = view_get(v, key);
    *has = x != NULL;
    if (!x)
        return TL_OK;
    if (!json_is_integer(x) || json_integer_value(x) < (json_int_t)lo || json_integer_value(x) > (json_int_t)hi)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: must be an integer in [%zu, %zu]",
                            view_path_of(v, key), key, lo, hi);
    *out = (size_t)json_integer_value(x);
    return TL_OK;
}

/* A generated string field: lengths, pattern or format. */
static tl_status field_parse_string(walk *w, tl_dfield *f, const prop_view *v) {
    f->kind = TL_DFIELD_STRING;
    if (w->opts.strict)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s: string without enum would be free text, refused in strict mode "
                            "(\"x-strict\": true or --strict); declare its values with \"enum\"", f->path);
    bool has;
    tl_status st = get_length(w, v, "maxLength", 1, TL_DFIELD_OPEN_MAX_LENGTH_LIMIT, &f->max_length, &has);
    if (st)
        return st;
    if (!has)
        f->max_length = TL_DFIELD_OPEN_MAX_LENGTH;
    if ((st = get_length(w, v, "minLength", 0, TL_DFIELD_OPEN_MAX_LENGTH_LIMIT, &f->min_length, &has)))
        return st;
    if (f->min_length > f->max_length)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/minLength: %zu is greater than maxLength %zu",
                            view_path_of(v, "minLength"), f->min_length, f->max_length);
    const json_t *mt = view_get(v, "x-max-tokens");
    if (mt) {
        if (!json_is_integer(mt) || json_integer_value(mt) <= 0 || json_integer_value(mt) > 65536)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-max-tokens: must be an integer in [1, 65536]",
                                view_path_of(v, "x-max-tokens"));
        f->max_tokens = (int)json_integer_value(mt);
    }
    const json_t *pat = view_get(v, "pattern"), *fmt = view_get(v, "format");
    if (pat && !json_is_string(pat))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/pattern: must be a string (a regex)",
                            view_path_of(v, "pattern"));
    if (fmt && !json_is_string(fmt))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/format: must be a string", view_path_of(v, "format"));
    tl_status st2;
    if (pat && fmt &&
        (st2 = refuse(w, "%s/format: a string with both \"pattern\" and \"format\"; typellm enforces one of them",
                      view_path_of(v, "format"))))
        return st2;
    if (fmt && !pat) {
        const char *re = format_pattern(json_string_value(fmt));
        if (!re)
            return refuse(w, "%s/format: '%s' is not a format typellm can enforce (date, time, date-time, email, uuid, "
                          "uri, ipv4)", view_path_of(v, "format"), json_string_value(fmt));
        tl_strbuf p = TL_STRBUF_INIT;
        if (!tl_strbuf_printf(&p, "^(%s)$", re)) {
            tl_strbuf_free(&p);
            return nomem(w->err);
        }
        f->pattern = tl_strbuf_detach(&p);
    } else if (pat) {
        if (!(f->pattern = dup_str(json_string_value(pat))))
            return nomem(w->err);
    }
    if (f->pattern) {
        tl_error perr = {0};
        tl_pattern *cp = NULL;
        if (tl_pattern_compile(f->pattern, strlen(f->pattern), &cp, &perr)) {
            const char *pp = view_path_of(v, pat ? "pattern" : "format");
            tl_pattern_free(cp);
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: %s", pp, pat ? "pattern" : "format", perr.msg);
        }
        bool ok = tl_pattern_viable_length(cp, f->min_length, f->max_length);
        tl_pattern_free(cp);
        if (!ok)
            return tl_error_set(w->err, TL_ERR_SCHEMA,
                                "schema: %s/%s: no string of %zu to %zu characters matches it (minLength/maxLength)",
                                view_path_of(v, pat ? "pattern" : "format"), pat ? "pattern" : "format",
                                f->min_length, f->max_length);
    }
    return TL_OK;
}

/* f's name ("x-name", else the key, a nested one as its JSON path) and
 * question ("question", else "description", else "title", else the name). */
static tl_status field_name_question(walk *w, tl_dfield *f, const prop_view *v) {
    const json_t *xname = view_get(v, "x-name");
    if (xname && (!json_is_string(xname) || !json_string_length(xname)))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-name: must be a non-empty string", f->path);
    if (xname) {
        f->name = dup_str(json_string_value(xname));
    } else if (f->n_segs > 1) {
        tl_strbuf nm = TL_STRBUF_INIT;
        if (tl_strbuf_putc(&nm, '/') && tl_strbuf_puts(&nm, f->key))
            f->name = tl_strbuf_detach(&nm);
        else
            tl_strbuf_free(&nm);
    } else {
        f->name = dup_str(f->key);
    }
    const char *qkeys[3] = {"question", "description", "title"};
    const json_t *q = NULL;
    for (int i = 0; i < 3 && !q; i++) {
        q = view_get(v, qkeys[i]);
        if (q && !json_is_string(q))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: must be a string", view_path_of(v, qkeys[i]),
                                qkeys[i]);
    }
    f->question = dup_str(q ? json_string_value(q) : f->name);
    if (!f->name || !f->question)
        return nomem(w->err);
    return TL_OK;
}

static tl_status field_parse_texts(walk *w, tl_dfield *f, const prop_view *v) {
    tl_status st = field_name_question(w, f, v);
    if (st)
        return st;
    const json_t *xd = view_get(v, "x-descriptions");
    if (xd) {
        if (!json_is_object(xd))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-descriptions: must be an object {value: text}",
                                f->path);
        const char *k;
        const json_t *d;
        json_object_foreach((json_t *)xd, k, d) {
            size_t i = 0;
            while (i < f->n_values && strcmp(f->value_keys[i], k))
                i++;
            if (i == f->n_values)
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-descriptions/%s: no such value", f->path, k);
            if (!json_is_string(d))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-descriptions/%s: must be a string", f->path, k);
            free(f->value_descs[i]);
            if (!(f->value_descs[i] = dup_str(json_string_value(d))))
                return nomem(w->err);
        }
    }
    return TL_OK;
}

/* ---- open fields, x-domain-from ------------------------------------------ */

/* "open"/"x-open", "maxLength", "x-max-tokens" and "x-domain-from" of an enum
 * field f (index fi). */
static tl_status field_parse_open(walk *w, size_t fi, const prop_view *v) {
    tl_dschema *s = w->s;
    tl_dfield *f = &s->fields[fi];
    const json_t *op = view_get(v, "open"), *xo = view_get(v, "x-open");
    if (op && !json_is_boolean(op))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/open: must be true or false", f->path);
    if (xo && !(json_is_string(xo) && json_string_length(xo)))
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-open: must be a non-empty string (the open choice's name)", f->path);
    f->open = json_is_true(op) || xo;
    if (f->open && f->kind != TL_DFIELD_STRING_ENUM)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: only string enum fields can be open", f->path,
                            xo ? "x-open" : "open");
    const json_t *ml = view_get(v, "maxLength");
    if (ml) {
        if (!json_is_integer(ml) || json_integer_value(ml) <= 0)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/maxLength: must be an integer > 0", f->path);
        if (json_integer_value(ml) > TL_DFIELD_OPEN_MAX_LENGTH_LIMIT)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/maxLength: %lld; at most %d", f->path,
                                (long long)json_integer_value(ml), TL_DFIELD_OPEN_MAX_LENGTH_LIMIT);
    }
    f->max_length = ml ? (size_t)json_integer_value(ml) : TL_DFIELD_OPEN_MAX_LENGTH;
    if (ml && !f->open) /* open fields: maxLength bounds the written value */
        for (size_t i = 0; i < f->n_values; i++)
            if (json_is_string(f->values[i]) && utf8_len(json_string_value(f->values[i])) > f->max_length)
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/maxLength: declared value %s is longer than %zu",
                                    f->path, f->value_json[i], f->max_length);
    const json_t *mt = view_get(v, "x-max-tokens");
    if (mt) {
        if (!json_is_integer(mt) || json_integer_value(mt) <= 0 || json_integer_value(mt) > 65536)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-max-tokens: must be an integer in [1, 65536]",
                                f->path);
        f->max_tokens = (int)json_integer_value(mt);
    }
    if (f->open) {
        f->open_name = dup_str(xo ? json_string_value(xo) : "other");
        if (!f->open_name)
            return nomem(w->err);
        for (size_t i = 0; i < f->n_values; i++)
            if (!strcmp(f->value_keys[i], f->open_name))
                return tl_error_set(w->err, TL_ERR_SCHEMA,
                                    "schema: %s/enum/%zu: '%s' is also the open choice's name; name the open choice "
                                    "otherwise with \"x-open\"",
                                    f->path, i, f->open_name);
    }
    const json_t *df = view_get(v, "x-domain-from");
    if (df) {
        if (!json_is_string(df))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: must be a field name", f->path);
        const char *name = json_string_value(df);
        long src = tl_dschema_find(s, name);
        if (src < 0 || (size_t)src >= fi)
            return tl_error_set(w->err, TL_ERR_SCHEMA,
                                "schema: %s/x-domain-from: %s field '%s' (it must name an earlier open field)", f->path,
                                src >= 0 || (w->cur_props && json_object_get(w->cur_props, name)) ? "later" : "unknown",
                                name);
        if (!s->fields[src].open)
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-domain-from: field '%s' is not open", f->path,
                                name);
        if (f->kind != TL_DFIELD_STRING_ENUM)
            return tl_error_set(w->err, TL_ERR_SCHEMA,
                                "schema: %s/x-domain-from: only string enum fields take values from an open field",
                                f->path);
        f->domain_from = src;
    }
    return TL_OK;
}

/* ---- corrections: x-debias, x-calibrate, x-think ----------------------------- */

/* "x-debias": "permute" | "full" | "pride" | "none", or {"method", "orders", "prior"}. */
static tl_status field_parse_debias(walk *w, tl_dfield *f, const prop_view *v) {
    const json_t *d = view_get(v, "x-debias");
    if (!d)
        return TL_OK;
    const char *at = view_path_of(v, "x-debias");
    const json_t *method = json_is_object(d) ? json_object_get(d, "method") : d;
    tl_debias m;
    if (!json_is_string(method) || !tl_debias_parse(json_string_value(method), &m))
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-debias%s: must be \"permute\", \"full\", \"pride\" or \"none\"%s", at,
                            json_is_object(d) ? "/method" : "",
                            json_is_object(d) ? "" : " (or an object {\"method\", \"orders\", \"prior\"})");
    if (json_is_object(d)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)d, k, x) {
            if (strcmp(k, "method") && strcmp(k, "orders") && strcmp(k, "prior"))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-debias/%s: unknown key (method, orders, prior)",
                                    at, k);
        }
        const json_t *ko = json_object_get(d, "orders");
        if (ko) {
            if (m != TL_DEBIAS_PERMUTE && m != TL_DEBIAS_PRIDE)
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-debias/orders: only permute and pride take "
                                    "a number of orders", at);
            if (!json_is_integer(ko) || json_integer_value(ko) < 1 || (size_t)json_integer_value(ko) > f->n_values)
                return tl_error_set(w->err, TL_ERR_SCHEMA,
                                    "schema: %s/x-debias/orders: must be an integer in [1, %zu] (one order per shift "
                                    "of the labels)", at, f->n_values);
            f->debias_orders = (size_t)json_integer_value(ko);
        }
        const json_t *pr = json_object_get(d, "prior");
        if (pr) {
            if (m != TL_DEBIAS_PRIDE)
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-debias/prior: only pride takes a prior", at);
            if (!json_is_array(pr) || json_array_size(pr) != f->n_values)
                return tl_error_set(w->err, TL_ERR_SCHEMA,
                                    "schema: %s/x-debias/prior: must be an array of %zu positive numbers (one per "
                                    "label position, A first)", at, f->n_values);
            if (!(f->prior = malloc(f->n_values * sizeof *f->prior)))
                return nomem(w->err);
            for (size_t i = 0; i < f->n_values; i++) {
                const json_t *x = json_array_get(pr, i);
                double p = json_is_number(x) ? json_number_value(x) : -1;
                if (!(p > 0) || !isfinite(p))
                    return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-debias/prior/%zu: must be a number > 0",
                                        at, i);
                f->prior[i] = p;
            }
        }
    }
    if (m == TL_DEBIAS_FULL && f->n_values > TL_DEBIAS_FULL_MAX_VALUES)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-debias: \"full\" scores all n! orders; %zu values would be %s; at most %d "
                            "values (use \"permute\")", at, f->n_values, "too many", TL_DEBIAS_FULL_MAX_VALUES);
    f->debias = (int)m;
    return TL_OK;
}

/* "x-calibrate": "content-free" | "pmi" | "none", or {"method", "input"}. */
static tl_status field_parse_calibrate(walk *w, tl_dfield *f, const prop_view *v) {
    const json_t *c = view_get(v, "x-calibrate");
    if (!c)
        return TL_OK;
    const char *at = view_path_of(v, "x-calibrate");
    const json_t *method = json_is_object(c) ? json_object_get(c, "method") : c;
    tl_calibrate m;
    if (!json_is_string(method) || !tl_calibrate_parse(json_string_value(method), &m))
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-calibrate%s: must be \"content-free\", \"pmi\" or \"none\"%s", at,
                            json_is_object(c) ? "/method" : "",
                            json_is_object(c) ? "" : " (or an object {\"method\", \"input\"})");
    if (json_is_object(c)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)c, k, x) {
            if (strcmp(k, "method") && strcmp(k, "input"))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-calibrate/%s: unknown key (method, input)",
                                    at, k);
        }
        const json_t *in = json_object_get(c, "input");
        if (in && (!json_is_string(in) || m != TL_CALIBRATE_CONTENT_FREE))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-calibrate/input: %s", at,
                                m != TL_CALIBRATE_CONTENT_FREE ? "only content-free takes an input"
                                                               : "must be a string (the content-free input)");
        if (in && !(f->cf_input = dup_str(json_string_value(in))))
            return nomem(w->err);
    }
    f->calibrate = (int)m;
    return TL_OK;
}

/* "x-think": {"max_tokens": N} or N (0..65536). */
static tl_status field_parse_think(walk *w, tl_dfield *f, const prop_view *v) {
    const json_t *t = view_get(v, "x-think");
    if (!t)
        return TL_OK;
    const json_t *n = t;
    if (json_is_object(t)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)t, k, x) {
            if (strcmp(k, "max_tokens"))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-think/%s: unknown key (max_tokens)",
                                    view_path_of(v, "x-think"), k);
        }
        n = json_object_get(t, "max_tokens");
    }
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 65536)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-think: must be {\"max_tokens\": N} with N an integer in [0, 65536]",
                            view_path_of(v, "x-think"));
    f->think_tokens = (long)json_integer_value(n);
    return TL_OK;
}

static tl_status field_parse_corrections(walk *w, tl_dfield *f, const prop_view *v) {
    tl_status st = field_parse_debias(w, f, v);
    if (!st)
        st = field_parse_calibrate(w, f, v);
    if (!st)
        st = field_parse_think(w, f, v);
    if (st)
        return st;
    f->corrections_set = view_get(v, "x-debias") || view_get(v, "x-calibrate");
    if ((f->debias || f->calibrate) && (f->open || f->domain_from >= 0))
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/%s: does not apply to a field whose domain grows (open, x-domain-from)",
                            f->path, f->debias ? "x-debias" : "x-calibrate");
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

/* ---- fields, arrays, objects -------------------------------------------- */

/* Where a property's depends_on comes from (resolved once every field exists). */
typedef struct dep_src {
    const json_t *deps; /* the depends_on array or NULL */
    char *path;         /* the JSON path it was read at */
} dep_src;

typedef struct walk_deps {
    dep_src *src; /* per field */
    size_t cap;
} walk_deps;


static tl_status new_field(walk *w, const char *path, char *const *segs, size_t n_segs, const char *leaf,
                           tl_dfield **out) {
    if (w->s->n_fields >= TL_DSCHEMA_MAX_FIELDS)
        return tl_error_set(w->err, TL_ERR_LIMIT, "schema: %s: more than %d decisions in one schema", path,
                            TL_DSCHEMA_MAX_FIELDS);
    if (!grow((void **)&w->s->fields, &w->cap_fields, w->s->n_fields, sizeof *w->s->fields))
        return nomem(w->err);
    tl_dfield *f = &w->s->fields[w->s->n_fields++];
    memset(f, 0, sizeof *f);
    f->domain_from = -1;
    f->think_tokens = -1;
    f->group = -1;
    f->absent = SIZE_MAX;
    f->path = dup_str(path);
    f->segs = segs_copy(segs, n_segs, leaf);
    f->n_segs = n_segs + (leaf != NULL);
    f->key = f->segs ? segs_join(f->segs, f->n_segs) : NULL;
    f->cond = w->cond;
    if (!f->path || !f->segs || !f->key)
        return nomem(w->err);
    if (w->in_items) {
        tl_strbuf pl = TL_STRBUF_INIT;
        if (!tl_strbuf_putc(&pl, '/') || !tl_strbuf_puts(&pl, f->key)) {
            tl_strbuf_free(&pl);
            return nomem(w->err);
        }
        f->place = tl_strbuf_detach(&pl);
    }
    if (w->cond.field >= 0) {
        tl_status st = add_after(w, w->s->n_fields - 1, (size_t)w->cond.field);
        if (st)
            return st;
        f = &w->s->fields[w->s->n_fields - 1];
    }
    *out = f;
    return TL_OK;
}

/* "x-optional": "ask" | "skip" of a property (required: listed in its object's required). */
static tl_status read_optional(walk *w, const prop_view *v, const char *path, bool required, int *mode) {
    *mode = 0;
    const json_t *xo = view_get(v, "x-optional");
    if (!xo)
        return TL_OK;
    const char *s = json_is_string(xo) ? json_string_value(xo) : "";
    if (strcmp(s, "ask") && strcmp(s, "skip"))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-optional: must be \"ask\" or \"skip\"", path);
    if (required)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-optional: the property is required (listed in its object's \"required\")",
                            path);
    *mode = !strcmp(s, "ask") ? 1 : 2;
    return TL_OK;
}

static tl_status record_deps(walk *w, walk_deps *wd, size_t fi, const prop_view *v, const char *path) {
    if (!grow((void **)&wd->src, &wd->cap, fi, sizeof *wd->src))
        return nomem(w->err);
    wd->src[fi].deps = view_get(v, "depends_on");
    wd->src[fi].path = wd->src[fi].deps ? dup_str(path) : NULL;
    return wd->src[fi].deps && !wd->src[fi].path ? nomem(w->err) : TL_OK;
}

/* A control field (schema.h, tl_dfield_role) for the value at path (view
 * v: its name and question): keyed by the value's key plus key_suffix
 * ("#present", "#length", "/2#more"), asked with the value's question
 * plus q_suffix (or as it is), under the current condition; its node is
 * added. Its values are the caller's to add. */
static tl_status add_control(walk *w, walk_deps *wd, const prop_view *v, const char *path, char *const *segs,
                             size_t n_segs, tl_dfield_role role, const char *key_suffix, const char *q_suffix,
                             bool skip, size_t *out) {
    tl_dfield *f;
    tl_status st = new_field(w, path, segs, n_segs, NULL, &f);
    if (st)
        return st;
    size_t fi = w->s->n_fields - 1;
    f->role = role;
    f->required = true;
    f->skip = skip;
    if ((st = field_name_question(w, f, v)))
        return st;
    tl_strbuf k = TL_STRBUF_INIT, q = TL_STRBUF_INIT;
    bool ok = tl_strbuf_printf(&k, "%s%s", f->key, key_suffix) &&
              (q_suffix ? tl_strbuf_printf(&q, "%s %s", f->question, q_suffix) : tl_strbuf_puts(&q, f->question));
    if (!ok) {
        tl_strbuf_free(&k), tl_strbuf_free(&q);
        return nomem(w->err);
    }
    free(f->key), free(f->question);
    f->key = tl_strbuf_detach(&k);
    f->question = tl_strbuf_detach(&q);
    if (w->in_items) {
        free(f->place);
        tl_strbuf pl = TL_STRBUF_INIT;
        tl_strbuf_printf(&pl, "/%s", f->key);
        f->place = tl_strbuf_detach(&pl);
    }
    if (!f->key || !f->question || (w->in_items && !f->place))
        return nomem(w->err);
    if ((st = record_deps(w, wd, fi, v, path)) || (st = add_node(w, TL_DNODE_FIELD, fi)))
        return st;
    *out = fi;
    return TL_OK;
}

/* Fields i and j traded places: so do their depends_on sources. */
static void walk_deps_swap(walk_deps *wd, size_t i, size_t j) {
    dep_src none = {0};
    dep_src *a = i < wd->cap ? &wd->src[i] : &none, *b = j < wd->cap ? &wd->src[j] : &none;
    dep_src t = *a;
    *a = *b;
    *b = t;
}

#define PRESENT_DESC "the input gives it: the value is written next"

/* The presence decision of a value at path: "(present)", then null
 * (nullable), then "(absent)" (x-optional "ask"). */
static tl_status add_presence(walk *w, walk_deps *wd, const prop_view *v, const char *path, char *const *segs,
                              size_t n_segs, bool nullable, bool ask, bool skip, size_t *out) {
    tl_status st = add_control(w, wd, v, path, segs, n_segs, TL_DROLE_PRESENCE, "#present", NULL, skip, out);
    tl_dfield *f = st ? NULL : &w->s->fields[*out];
    if (!st)
        st = field_add_marker(w, f, json_string("(present)"), "(present)", PRESENT_DESC);
    if (!st && nullable)
        st = field_add_value(w, f, json_null(), path, "the input says there is none");
    if (!st && ask) {
        f->absent = f->n_values;
        st = field_add_marker(w, f, json_null(), "(absent)", ABSENT_DESC);
    }
    if (!st)
        f->kind = TL_DFIELD_STRING_ENUM;
    return st;
}

/* A decided value at path (view v): declared values, or generated text/number. */
static tl_status add_leaf(walk *w, walk_deps *wd, prop_view *v, const char *path, char *const *segs, size_t n_segs,
                          bool required, bool skip) {
    tl_dfield *f;
    tl_status st = new_field(w, path, segs, n_segs, NULL, &f);
    if (st)
        return st;
    size_t fi = w->s->n_fields - 1;
    f->required = required;
    bool nullable = false;
    const char *type;
    if ((st = view_type(w, v, path, &type, &nullable)))
        return st;
    collect c = {.free_member = -1};
    if ((st = collect_field_values(w, f, v, path, &c)))
        return st;
    f = &w->s->fields[fi];
    prop_view gen = {0}; /* the view a generated field is read from */
    const prop_view *gv = v;
    const char *gtype = type;
    if (c.n_free) {
        if (c.n_free > 1 || c.n_values > c.n_null)
            return tl_error_set(w->err, TL_ERR_SCHEMA,
                                "schema: %s: a union of %s; typellm decides declared values or generates one type, "
                                "not both", path, c.n_free > 1 ? "several free types" : "declared values and a free type");
        if (c.free_member >= 0) {
            /* anyOf [X, {"type":"null"}]: X, with null declared */
            for (size_t i = 0; i < v->n && !st; i++) {
                st = view_push(w, &gen, v->layer[i], v->lpath[i]);
                if (!st)
                    gen.outer[gen.n - 1] = true;
            }
            const char *alt = view_get(v, "oneOf") ? "oneOf" : "anyOf";
            const json_t *m = json_array_get(view_get(v, alt), (size_t)c.free_member);
            tl_strbuf mp = TL_STRBUF_INIT;
            tl_strbuf_printf(&mp, "%s/%s/%ld", view_path_of(v, alt), alt, c.free_member);
            if (!st)
                st = view_add(w, &gen, m, tl_strbuf_cstr(&mp), 0);
            tl_strbuf_free(&mp);
            bool n2 = false;
            if (!st)
                st = view_type(w, &gen, path, &gtype, &n2);
            if (st) {
                view_free(&gen);
                return st;
            }
            gv = &gen;
        }
        f->nullable = c.n_null > 0;
        /* generated fields carry no declared values (null and absent are a presence decision before them) */
        for (size_t i = 0; i < f->n_values; i++) {
            json_decref(f->values[i]);
            free(f->value_keys[i]), free(f->value_json[i]), free(f->value_descs[i]);
        }
        f->n_values = 0;
        if (!gtype)
            st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: missing \"type\" (and no enum to infer it from)", path);
        else if (!strcmp(gtype, "string"))
            st = field_parse_string(w, f, gv);
        else if (!strcmp(gtype, "integer") || !strcmp(gtype, "number"))
            st = field_parse_number(w, f, gv, !strcmp(gtype, "integer"));
        else if (!strcmp(gtype, "object") || !strcmp(gtype, "array"))
            st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: an %s here is not supported (objects and arrays are "
                              "properties of an object, not union members)", path, gtype);
        else
            st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/type: unknown type '%s'", path, gtype);
        if (!st)
            st = view_check(w, gv, KW_LEAF | (f->kind == TL_DFIELD_STRING ? KW_STR : KW_NUM),
                            f->kind == TL_DFIELD_STRING ? "a generated string" : "a generated number");
        if (!st && f->kind != TL_DFIELD_STRING && view_get(gv, "format"))
            st = refuse(w, "%s/format: '%s' does not apply to a generated number (score is for declared levels)",
                        view_path_of(gv, "format"), json_is_string(view_get(gv, "format"))
                                                         ? json_string_value(view_get(gv, "format")) : "?");
    } else {
        if (type && strcmp(type, "string") && strcmp(type, "integer") && strcmp(type, "number") &&
            strcmp(type, "boolean") && strcmp(type, "null"))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/type: unknown type '%s'", path, type);
        f->kind = values_kind(f);
        f->nullable = c.n_null > 0;
        bool score = type && !strcmp(type, "number") && json_is_string(view_get(v, "format")) &&
                     !strcmp(json_string_value(view_get(v, "format")), "score");
        if (score && !view_get(v, "enum"))
            f->kind = TL_DFIELD_SCORE;
        st = view_check(w, v, KW_LEAF | KW_ENUM | (f->kind == TL_DFIELD_STRING_ENUM ? KW_OPEN : 0) |
                                  (score ? KW_NUM : 0),
                        "a field with declared values");
        if (!st && score)
            for (const char **k = (const char *[]){"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                    "multipleOf", "x-decimals", "x-max-digits", NULL};
                 *k && !st; k++)
                if (view_get(v, *k))
                    st = refuse(w, "%s/%s: does not apply to a score (its levels are 0.0 .. 1.0)", view_path_of(v, *k), *k);
        if (!st && !score && view_get(v, "format"))
            st = refuse(w, "%s/format: does not apply to a field with declared values", view_path_of(v, "format"));
        if (!st)
            st = field_parse_open(w, fi, v);
        f = &w->s->fields[fi];
        f->constant = !st && f->n_values == 1 && !f->open && f->domain_from < 0;
    }
    if (!st)
        st = field_parse_texts(w, f, v);
    int opt = 0;
    if (!st)
        st = read_optional(w, v, path, required, &opt);
    long presence = -1;
    tl_dcond outer = w->cond;
    if (!st && tl_dfield_generated(f) && (f->nullable || opt == 1)) {
        /* null or absent first, a declared decision; the value is generated
         * only when present: the presence field goes before this one */
        size_t pi = 0;
        st = add_presence(w, wd, v, path, segs, n_segs, f->nullable, opt == 1, skip || opt == 2, &pi);
        if (!st) {
            tl_dschema *s = w->s;
            tl_dfield tmp = s->fields[fi];
            s->fields[fi] = s->fields[pi];
            s->fields[pi] = tmp;
            s->nodes[s->n_nodes - 1].index = fi; /* the presence field's node, at its new place */
            walk_deps_swap(wd, fi, pi);
            s->fields[pi].cond = (tl_dcond){(long)fi, 0, 0};
            st = add_after(w, pi, fi);
            presence = (long)fi;
            fi = pi;
        }
    } else if (!st && opt == 1) {
        /* the declared "absent" choice: the property is left out */
        f->absent = f->n_values;
        f->constant = false;
        st = field_add_marker(w, f, json_null(), "(absent)", ABSENT_DESC);
    }
    f = &w->s->fields[fi];
    f->skip = skip || opt == 2;
    if (!st && presence < 0 && !tl_dfield_generated(f)) /* (absent, null: declared values by now) */
        st = field_parse_corrections(w, f, v);
    if (!st)
        st = record_deps(w, wd, fi, gv, path);
    if (!st)
        st = add_node(w, TL_DNODE_FIELD, fi);
    if (!st && presence >= 0) {
        w->s->nodes[w->s->n_nodes - 1].cond = outer;
        w->s->nodes[w->s->n_nodes - 1].presence = presence;
    }
    view_free(&gen);
    return st;
}

static tl_status add_property(walk *w, walk_deps *wd, const json_t *prop, const char *path, char *const *segs,
                              size_t n_segs, bool required, bool skip, int depth);

static void free_declared(tl_dfield *tmp) {
    for (size_t i = 0; i < tmp->n_values; i++) {
        json_decref(tmp->values[i]);
        free(tmp->value_keys[i]), free(tmp->value_json[i]), free(tmp->value_descs[i]);
    }
    free(tmp->values), free(tmp->value_keys), free(tmp->value_json), free(tmp->value_descs);
    memset(tmp, 0, sizeof *tmp);
}

/* Auto mode: the fields [first, end) of an item wait for the previous item's [pfirst, pend). */
static tl_status add_implicit(walk *w, size_t first, size_t end, size_t pfirst, size_t pend) {
    for (size_t fi = first; fi < end; fi++) {
        if (!grow((void **)&w->implicit, &w->cap_implicit, w->n_implicit + 2, sizeof *w->implicit))
            return nomem(w->err);
        w->implicit[w->n_implicit++] = fi;
        w->implicit[w->n_implicit++] = pfirst;
        w->implicit[w->n_implicit++] = pend - pfirst;
    }
    return TL_OK;
}

/* An array of objects, numbers or strings (items at ipath): the length
 * first (a TL_DROLE_LENGTH field over minItems..maxItems, or open-ended a
 * TL_DROLE_MORE field before each item past minItems), then each item in
 * order, walked like a property under its condition. */
static tl_status add_items(walk *w, walk_deps *wd, prop_view *v, const json_t *items, const char *ipath,
                           const char *path, char *const *segs, size_t n_segs, bool skip, int depth) {
    bool has;
    size_t min_items = 0, max_items = 0;
    const json_t *mx = view_get(v, "maxItems");
    if (!mx)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/maxItems: missing; an array of objects, numbers or strings needs maxItems "
                            "(its items are decided one by one, at most %d)", path, TL_DARRAY_MAX_ITEMS);
    if (json_is_integer(mx) && json_integer_value(mx) > TL_DARRAY_MAX_ITEMS)
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/maxItems: %lld; an array of objects, numbers or strings has at most %d items",
                            view_path_of(v, "maxItems"), (long long)json_integer_value(mx), TL_DARRAY_MAX_ITEMS);
    tl_status st = get_length(w, v, "maxItems", 0, TL_DARRAY_MAX_ITEMS, &max_items, &has);
    if (!st)
        st = get_length(w, v, "minItems", 0, TL_DARRAY_MAX_ITEMS, &min_items, &has);
    if (st)
        return st;
    if (min_items > max_items)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/minItems: %zu is greater than maxItems %zu",
                            view_path_of(v, "minItems"), min_items, max_items);
    const json_t *uq = view_get(v, "uniqueItems");
    if (uq && !json_is_boolean(uq))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/uniqueItems: must be true or false", path);
    if (json_is_true(uq) &&
        (st = refuse(w, "%s/uniqueItems: typellm cannot keep generated items distinct (objects, numbers, strings are "
                     "decided one by one)", view_path_of(v, "uniqueItems"))))
        return st;
    const json_t *xl = view_get(v, "x-length");
    if (xl && !(json_is_string(xl) && (!strcmp(json_string_value(xl), "count") || !strcmp(json_string_value(xl), "open"))))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-length: must be \"count\" or \"open\"",
                            view_path_of(v, "x-length"));
    if (json_is_object(items) && json_object_get(items, "x-optional"))
        return tl_error_set(w->err, TL_ERR_SCHEMA,
                            "schema: %s/x-optional: array items are not optional (minItems says how many there must be)",
                            ipath);
    size_t n_len = max_items - min_items + 1;
    bool open_end = xl ? !strcmp(json_string_value(xl), "open") : n_len > TL_DARRAY_COUNT_MAX;
    if (min_items == max_items)
        open_end = false;
    tl_dschema *s = w->s;
    if (!grow((void **)&s->arrays, &w->cap_arrays, s->n_arrays, sizeof *s->arrays))
        return nomem(w->err);
    size_t ai = s->n_arrays++;
    tl_darray *a = &s->arrays[ai];
    memset(a, 0, sizeof *a);
    a->path = dup_str(path);
    a->segs = segs_copy(segs, n_segs, NULL);
    a->n_segs = n_segs;
    a->key = a->segs ? segs_join(a->segs, n_segs) : NULL;
    a->min_items = min_items;
    a->max_items = max_items;
    a->length = -1;
    a->open_end = open_end;
    a->skip = skip;
    if (!a->path || !a->segs || !a->key)
        return nomem(w->err);
    if ((st = add_node(w, TL_DNODE_ARRAY, ai)))
        return st;
    tl_dcond outer = w->cond;
    size_t len_field = 0;
    if (!open_end && n_len > 1) {
        if ((st = add_control(w, wd, v, path, segs, n_segs, TL_DROLE_LENGTH, "#length", "How many items?", skip,
                              &len_field)))
            return st;
        for (size_t j = 0; j < n_len && !st; j++) {
            json_t *lv = json_integer((json_int_t)(min_items + j));
            st = lv ? field_add_value(w, &s->fields[len_field], lv, path, NULL) : nomem(w->err);
            json_decref(lv);
        }
        if (st)
            return st;
        s->fields[len_field].kind = TL_DFIELD_INTEGER_ENUM;
        s->arrays[ai].length = (long)len_field;
    }
    w->in_items++;
    size_t pfirst = 0, pend = 0;
    long more = -1;
    for (size_t i = 0; i < max_items && !st; i++) {
        w->cond = outer;
        if (open_end && i >= min_items) {
            char suf[40], q[120];
            snprintf(suf, sizeof suf, "/%zu#more", i);
            snprintf(q, sizeof q, "After %zu item%s, is there another item (more), or is the list complete (done)?", i,
                     i == 1 ? "" : "s");
            if (more >= 0)
                w->cond = (tl_dcond){more, 0, 0};
            size_t mf = 0;
            if ((st = add_control(w, wd, v, path, segs, n_segs, TL_DROLE_MORE, suf, q, skip, &mf)))
                break;
            tl_dfield *m = &s->fields[mf];
            json_t *yes = json_string("more"), *no = json_string("done");
            st = yes && no ? field_add_value(w, m, yes, path, "the input has one more item") : nomem(w->err);
            if (!st)
                st = field_add_value(w, &s->fields[mf], no, path, "the items above are all there are");
            json_decref(yes), json_decref(no);
            s->fields[mf].kind = TL_DFIELD_STRING_ENUM;
            for (size_t j = pfirst; j < pend && !st; j++) /* it reads the items before it */
                st = add_after(w, mf, j);
            more = (long)mf;
            w->cond = (tl_dcond){(long)mf, 0, 0};
        } else if (s->arrays[ai].length >= 0) {
            w->cond = (tl_dcond){(long)len_field, i + 1 > min_items ? i + 1 - min_items : 0, n_len - 1};
        }
        if (st)
            break;
        char idx[32];
        snprintf(idx, sizeof idx, "%zu", i);
        char **sg = segs_copy(segs, n_segs, idx);
        size_t first = s->n_fields;
        st = sg ? add_property(w, wd, items, ipath, sg, n_segs + 1, true, skip, depth) : nomem(w->err);
        free_segs(sg, n_segs + 1);
        if (!st && i > 0)
            st = add_implicit(w, first, s->n_fields, pfirst, pend);
        pfirst = first;
        pend = s->n_fields;
    }
    w->in_items--;
    w->cond = outer;
    return st;
}

/* An array: of an enum/boolean item, one yes/no field per value
 * (multi-label); of objects, numbers or strings, add_items. */
static tl_status add_array(walk *w, walk_deps *wd, prop_view *v, const char *path, char *const *segs, size_t n_segs,
                           bool required, bool skip, int depth) {
    if (depth > NEST_MAX_DEPTH)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: arrays nest deeper than %d", path, NEST_MAX_DEPTH);
    tl_status st = view_check(w, v, KW_LEAF | KW_ARR, "an array");
    if (st)
        return st;
    const json_t *items = view_get(v, "items");
    if (!items)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/items: missing (an array declares its item schema)",
                            path);
    tl_strbuf ip = TL_STRBUF_INIT;
    tl_strbuf_printf(&ip, "%s/items", view_path_of(v, "items"));
    prop_view iv;
    tl_dfield tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.path = (char *)tl_strbuf_cstr(&ip);
    collect c = {.free_member = -1};
    st = view_build(w, items, tl_strbuf_cstr(&ip), &iv);
    if (!st)
        st = collect_field_values(w, &tmp, &iv, tl_strbuf_cstr(&ip), &c);
    if (!st && c.n_free) {
        /* items that are generated or objects: decided one by one */
        view_free(&iv);
        tmp.path = NULL;
        free_declared(&tmp);
        st = add_items(w, wd, v, items, tl_strbuf_cstr(&ip), path, segs, n_segs, skip, depth);
        tl_strbuf_free(&ip);
        return st;
    }
    if (!st)
        st = view_check(w, &iv, KW_ENUM, "an array item");
    view_free(&iv);
    tmp.path = NULL;
    size_t n = tmp.n_values;
    if (!st && n > GROUP_MAX_VALUES)
        st = tl_error_set(w->err, TL_ERR_SCHEMA,
                          "schema: %s: %zu values; a multi-label array may have at most %d (one yes/no decision each)",
                          tl_strbuf_cstr(&ip), n, GROUP_MAX_VALUES);
    size_t min_items = 0, max_items = n;
    bool has;
    if (!st)
        st = get_length(w, v, "minItems", 0, GROUP_MAX_VALUES, &min_items, &has);
    if (!st)
        st = get_length(w, v, "maxItems", 0, 1u << 30, &max_items, &has);
    if (!st && has && max_items > n)
        max_items = n;
    const json_t *uq = view_get(v, "uniqueItems");
    if (!st && uq && !json_is_boolean(uq))
        st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/uniqueItems: must be true or false", path);
    if (!st && min_items > n)
        st = tl_error_set(w->err, TL_ERR_SCHEMA,
                          "schema: %s/minItems: %zu, but the items have only %zu values (each is chosen at most once)",
                          view_path_of(v, "minItems"), min_items, n);
    if (!st && min_items > max_items)
        st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/minItems: %zu is greater than maxItems %zu",
                          view_path_of(v, "minItems"), min_items, max_items);
    /* the group, then one boolean field per value */
    tl_dschema *s = w->s;
    size_t gi = s->n_groups;
    if (!st && !grow((void **)&s->groups, &w->cap_groups, s->n_groups, sizeof *s->groups))
        st = nomem(w->err);
    if (!st) {
        tl_dgroup *g = &s->groups[s->n_groups++];
        memset(g, 0, sizeof *g);
        g->path = dup_str(path);
        g->segs = segs_copy(segs, n_segs, NULL);
        g->n_segs = n_segs;
        g->key = g->segs ? segs_join(g->segs, n_segs) : NULL;
        g->first = s->n_fields;
        g->n = n;
        g->min_items = min_items;
        g->max_items = max_items;
        g->skip = skip;
        if (!g->path || !g->segs || !g->key)
            st = nomem(w->err);
    }
    const json_t *xname = view_get(v, "x-name");
    if (!st && xname && (!json_is_string(xname) || !json_string_length(xname)))
        st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/x-name: must be a non-empty string", path);
    const json_t *q = NULL;
    const char *qkeys[3] = {"question", "description", "title"};
    for (int i = 0; i < 3 && !q && !st; i++)
        if ((q = view_get(v, qkeys[i])) && !json_is_string(q))
            st = tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/%s: must be a string", view_path_of(v, qkeys[i]),
                              qkeys[i]);
    for (size_t i = 0; i < n && !st; i++) {
        char idx[32];
        snprintf(idx, sizeof idx, "%zu", i);
        tl_strbuf fp = TL_STRBUF_INIT;
        tl_strbuf_printf(&fp, "%s/items/%zu", path, i);
        tl_dfield *f;
        st = new_field(w, tl_strbuf_cstr(&fp), segs, n_segs, idx, &f);
        tl_strbuf_free(&fp);
        if (st)
            break;
        size_t fi = s->n_fields - 1;
        f->group = (long)gi;
        f->group_item = i;
        f->kind = TL_DFIELD_BOOLEAN;
        f->required = required;
        f->skip = s->groups[gi].skip;
        if ((st = field_add_value(w, f, json_true(), f->path, NULL)) ||
            (st = field_add_value(w, f, json_false(), f->path, NULL)))
            break;
        tl_strbuf nm = TL_STRBUF_INIT, qq = TL_STRBUF_INIT;
        if (xname)
            tl_strbuf_puts(&nm, json_string_value(xname));
        else if (n_segs > 1)
            tl_strbuf_printf(&nm, "/%s", s->groups[gi].key);
        else
            tl_strbuf_puts(&nm, s->groups[gi].key);
        tl_strbuf_printf(&qq, "%s Does it include %s?", q ? json_string_value(q) : tl_strbuf_cstr(&nm),
                         tmp.value_json[i]);
        if (tmp.value_descs[i])
            tl_strbuf_printf(&qq, " (%s: %s)", tmp.value_json[i], tmp.value_descs[i]);
        f->name = tl_strbuf_detach(&nm);
        f->question = tl_strbuf_detach(&qq);
        if (!f->name || !f->question)
            st = nomem(w->err);
        if (!st)
            st = record_deps(w, wd, fi, v, path);
    }
    /* the item values live on in the group's fields' questions; the group keeps them through field 0..n */
    if (!st) {
        tl_dgroup *g = &s->groups[gi];
        g->values = tmp.values;
        g->value_keys = tmp.value_keys;
        tmp.values = NULL;
        tmp.value_keys = NULL;
        tmp.n_values = 0;
    }
    for (size_t i = 0; i < tmp.n_values; i++) {
        json_decref(tmp.values[i]);
        free(tmp.value_keys[i]);
    }
    for (size_t i = 0; i < n; i++) {
        free(tmp.value_json ? tmp.value_json[i] : NULL);
        free(tmp.value_descs ? tmp.value_descs[i] : NULL);
    }
    free(tmp.values), free(tmp.value_keys), free(tmp.value_json), free(tmp.value_descs);
    tl_strbuf_free(&ip);
    if (!st)
        st = add_node(w, TL_DNODE_GROUP, gi);
    return st;
}

static tl_status walk_object(walk *w, walk_deps *wd, prop_view *v, const char *path, char *const *segs,
                             size_t n_segs, bool skip, int depth);

/* One property of an object (or an array's item). */
static tl_status add_property(walk *w, walk_deps *wd, const json_t *prop, const char *path, char *const *segs,
                              size_t n_segs, bool required, bool skip, int depth) {
    prop_view v;
    tl_status st = view_build(w, prop, path, &v);
    bool nullable = false;
    const char *type = NULL;
    if (!st)
        st = view_type(w, &v, path, &type, &nullable);
    /* Optional[Model] / Optional[list[...]]: anyOf [X, {"type":"null"}] with X
     * an object or array is X with a presence decision (null) before it. */
    prop_view inner = {0};
    prop_view *use = &v;
    const char *alt = view_get(&v, "oneOf") ? "oneOf" : view_get(&v, "anyOf") ? "anyOf" : NULL;
    if (!st && !type && alt && json_is_array(view_get(&v, alt))) {
        const json_t *arr = view_get(&v, alt);
        long other = -1;
        size_t n_null = 0;
        for (size_t i = 0; i < json_array_size(arr) && !st; i++) {
            prop_view mv;
            tl_strbuf mp = TL_STRBUF_INIT;
            tl_strbuf_printf(&mp, "%s/%s/%zu", view_path_of(&v, alt), alt, i);
            st = view_build(w, json_array_get(arr, i), tl_strbuf_cstr(&mp), &mv);
            const char *mt = NULL;
            bool mn = false;
            if (!st)
                st = view_type(w, &mv, tl_strbuf_cstr(&mp), &mt, &mn);
            if (!st && mt && !strcmp(mt, "null") && !view_get(&mv, "enum") && !view_get(&mv, "const"))
                n_null++;
            else if (!st && (is_object_view(&mv, mt) || (mt && !strcmp(mt, "array"))))
                other = other == -1 ? (long)i : -2;
            else
                other = -3;
            view_free(&mv);
            tl_strbuf_free(&mp);
        }
        if (!st && other >= 0 && n_null + 1 == json_array_size(arr)) {
            for (size_t i = 0; i < v.n && !st; i++) {
                st = view_push(w, &inner, v.layer[i], v.lpath[i]);
                if (!st)
                    inner.outer[inner.n - 1] = true;
            }
            tl_strbuf mp = TL_STRBUF_INIT;
            tl_strbuf_printf(&mp, "%s/%s/%ld", view_path_of(&v, alt), alt, other);
            if (!st)
                st = view_add(w, &inner, json_array_get(arr, (size_t)other), tl_strbuf_cstr(&mp), 0);
            tl_strbuf_free(&mp);
            if (!st)
                st = view_type(w, &inner, path, &type, &nullable);
            nullable |= n_null > 0;
            use = &inner;
        }
    }
    if (!st) {
        bool object = is_object_view(use, type), array = !object && type && !strcmp(type, "array");
        if (object || array) {
            /* null (nullable) or absent (x-optional "ask"): a presence decision first */
            int opt = 0;
            st = read_optional(w, use, path, required, &opt);
            tl_dcond outer = w->cond;
            size_t pi = 0, before = 0;
            bool presence = !st && opt != 2 && (nullable || opt == 1);
            if (presence) {
                st = add_presence(w, wd, use, path, segs, n_segs, nullable, opt == 1, skip, &pi);
                w->cond = (tl_dcond){(long)pi, 0, 0};
            }
            before = w->s->n_nodes;
            if (!st && object)
                st = walk_object(w, wd, use, path, segs, n_segs, skip || opt == 2, depth + 1);
            else if (!st)
                st = add_array(w, wd, use, path, segs, n_segs, required, skip || opt == 2, depth + 1);
            w->cond = outer;
            if (!st && presence && before < w->s->n_nodes) {
                /* the object's / array's own node: its first */
                w->s->nodes[before].cond = outer;
                w->s->nodes[before].presence = (long)pi;
            }
        } else {
            st = add_leaf(w, wd, use, path, segs, n_segs, required, skip);
        }
    }
    view_free(&inner);
    view_free(&v);
    return st;
}

static tl_status walk_object(walk *w, walk_deps *wd, prop_view *v, const char *path, char *const *segs,
                             size_t n_segs, bool skip, int depth) {
    if (depth > NEST_MAX_DEPTH)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s: objects nest deeper than %d", path, NEST_MAX_DEPTH);
    tl_status st = view_check(w, v, KW_OBJ | (depth == 0 ? KW_ROOT : 0), depth == 0 ? "the root object" : "an object");
    if (st)
        return st;
    const json_t *add = view_get(v, "additionalProperties");
    if (add && !json_is_boolean(add) && !json_is_object(add))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/additionalProperties: must be a boolean or a schema",
                            view_path_of(v, "additionalProperties"));
    const json_t *props = view_get(v, "properties");
    const char *pp = view_path_of(v, "properties");
    if (!props)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/properties: missing (the fields to decide, in order)",
                            path);
    if (!json_is_object(props))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/properties: must be an object", pp);
    if (json_object_size(props) == 0)
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/properties: no fields to decide", pp);
    if (json_object_size(props) > TL_DSCHEMA_MAX_FIELDS)
        return tl_error_set(w->err, TL_ERR_LIMIT, "schema: %s/properties: %zu fields; at most %d", pp,
                            json_object_size(props), TL_DSCHEMA_MAX_FIELDS);
    const json_t *req = view_get(v, "required");
    const char *rp = view_path_of(v, "required");
    if (req) {
        if (!json_is_array(req))
            return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/required: must be an array of field names", rp);
        for (size_t i = 0; i < json_array_size(req); i++) {
            const json_t *r = json_array_get(req, i);
            if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
                return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: %s/required/%zu: %s", rp, i,
                                    json_is_string(r) ? "names no property" : "must be a string");
        }
    }
    if (depth > 0) {
        tl_dschema *s = w->s;
        if (!grow((void **)&s->objects, &w->cap_objects, s->n_objects, sizeof *s->objects))
            return nomem(w->err);
        tl_dobject *o = &s->objects[s->n_objects++];
        memset(o, 0, sizeof *o);
        o->path = dup_str(path);
        o->segs = segs_copy(segs, n_segs, NULL);
        o->n_segs = n_segs;
        o->skip = skip;
        if (!o->path || !o->segs)
            return nomem(w->err);
        if ((st = add_node(w, TL_DNODE_OBJECT, s->n_objects - 1)))
            return st;
    }
    const char *key;
    const json_t *prop;
    json_object_foreach((json_t *)props, key, prop) {
        tl_strbuf p = TL_STRBUF_INIT;
        if (!tl_strbuf_puts(&p, path) || !tl_strbuf_puts(&p, "/properties") || !pointer_append(&p, key)) {
            tl_strbuf_free(&p);
            return nomem(w->err);
        }
        bool required = false;
        for (size_t i = 0; req && i < json_array_size(req); i++)
            required |= !strcmp(json_string_value(json_array_get(req, i)), key);
        w->cur_props = props;
        char **sg = segs_copy(segs, n_segs, key);
        st = sg ? add_property(w, wd, prop, tl_strbuf_cstr(&p), sg, n_segs + 1, required, skip, depth)
                : nomem(w->err);
        free_segs(sg, n_segs + 1);
        tl_strbuf_free(&p);
        if (st)
            return st;
    }
    return TL_OK;
}

/* ---- depends_on ---------------------------------------------------------- */

/* The fields a depends_on name stands for: a field, a multi-label array (all
 * its values), an object or an array of objects (every field under it, its
 * control fields "x#present", "x#length" too); a leading '/' allowed. */
static size_t resolve_name(const tl_dschema *s, const char *name, size_t *out) {
    if (name[0] == '/')
        name++;
    size_t n = 0, len = strlen(name);
    for (size_t i = 0; i < s->n_fields; i++) {
        const char *k = s->fields[i].key;
        if (!strcmp(k, name) || (len && !strncmp(k, name, len) && (k[len] == '/' || k[len] == '#')))
            out[n++] = i;
    }
    return n;
}

static tl_status parse_deps(walk *w, walk_deps *wd) {
    tl_dschema *s = w->s;
    tl_error *err = w->err;
    size_t *tmp = calloc(s->n_fields + 1, sizeof *tmp);
    if (!tmp)
        return nomem(err);
    for (size_t i = 0; i < s->n_fields; i++) {
        tl_dfield *f = &s->fields[i];
        const json_t *d = i < wd->cap ? wd->src[i].deps : NULL;
        const char *dpath = i < wd->cap && wd->src[i].path ? wd->src[i].path : f->path;
        if (!d && f->domain_from < 0)
            continue;
        if (d && !json_is_array(d)) {
            free(tmp);
            return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on: must be an array of field names", dpath);
        }
        size_t cap = 1;
        for (size_t j = 0; d && j < json_array_size(d); j++) {
            const json_t *nm = json_array_get(d, j);
            cap += json_is_string(nm) ? resolve_name(s, json_string_value(nm), tmp) : 0;
        }
        f->deps = calloc(cap + 1, sizeof *f->deps);
        if (!f->deps) {
            free(tmp);
            return nomem(err);
        }
        if (f->domain_from >= 0) {
            /* x-domain-from needs the open field's answer first */
            f->deps[f->n_deps++] = (size_t)f->domain_from;
            s->any_deps = true;
        }
        for (size_t j = 0; d && j < json_array_size(d); j++) {
            const json_t *nm = json_array_get(d, j);
            if (!json_is_string(nm)) {
                free(tmp);
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on/%zu: must be a field name", dpath, j);
            }
            size_t k = resolve_name(s, json_string_value(nm), tmp);
            if (!k) {
                free(tmp);
                return tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on/%zu: unknown field '%s'", dpath, j,
                                    json_string_value(nm));
            }
            for (size_t x = 0; x < k; x++) {
                bool dup = false;
                for (size_t y = 0; y < f->n_deps; y++)
                    dup |= f->deps[y] == tmp[x];
                if (!dup)
                    f->deps[f->n_deps++] = tmp[x];
            }
            s->any_deps = true;
        }
    }
    free(tmp);
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
                const char *cp = cur < wd->cap && wd->src[cur].path ? wd->src[cur].path : s->fields[cur].path;
                st = tl_error_set(err, TL_ERR_SCHEMA, "schema: %s/depends_on: dependency cycle %s", cp,
                                  tl_strbuf_cstr(&cyc));
                tl_strbuf_free(&cyc);
            } else if (colour[nxt] == 0) {
                colour[nxt] = 1;
                stack[sp] = nxt;
                pos[sp++] = 0;
            }
        }
    }
    free(colour), free(stack), free(pos);
    /* auto mode: each array item after the one before it (only earlier fields: no cycle) */
    for (size_t i = 0; !st && i + 2 < w->n_implicit; i += 3) {
        tl_dfield *f = &s->fields[w->implicit[i]];
        size_t first = w->implicit[i + 1], cnt = w->implicit[i + 2];
        size_t *d = realloc(f->deps, (f->n_deps + cnt + 1) * sizeof *d);
        if (!d)
            return nomem(err);
        f->deps = d;
        for (size_t j = first; j < first + cnt; j++) {
            bool dup = false;
            for (size_t y = 0; y < f->n_deps; y++)
                dup |= f->deps[y] == j;
            if (!dup)
                f->deps[f->n_deps++] = j;
        }
        s->any_deps = true;
    }
    return st;
}

/* ---- the schema ---------------------------------------------------------- */

static tl_status top_text(walk *w, const json_t *schema, const char *key, char **out) {
    const json_t *t = json_object_get(schema, key);
    if (!t)
        return TL_OK;
    if (!json_is_string(t))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: /%s: must be a string", key);
    return (*out = dup_str(json_string_value(t))) ? TL_OK : nomem(w->err);
}

static tl_status parse_into(walk *w, walk_deps *wd, const json_t *schema) {
    tl_dschema *s = w->s;
    if (!json_is_object(schema))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: /: must be a JSON object, got %s",
                            json_is_array(schema) ? "an array" : json_is_string(schema) ? "a string" : "a scalar");
    const json_t *type = json_object_get(schema, "type");
    if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "object")))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: /type: the schema must be {\"type\":\"object\"}");
    const json_t *xs = json_object_get(schema, "x-strict");
    if (xs && !json_is_boolean(xs))
        return tl_error_set(w->err, TL_ERR_SCHEMA, "schema: /x-strict: must be true or false");
    if (json_is_true(xs))
        w->opts.strict = true;
    tl_status st = top_text(w, schema, "title", &s->title);
    if (!st)
        st = top_text(w, schema, "description", &s->description);
    if (st)
        return st;
    prop_view v;
    if ((st = view_build(w, schema, "", &v)))
        return st;
    st = walk_object(w, wd, &v, "", NULL, 0, false, 0);
    view_free(&v);
    if (st)
        return st;
    return parse_deps(w, wd);
}

tl_status tl_dschema_parse_opts(const json_t *schema, const tl_dschema_opts *opts, tl_dschema **out, tl_error *err) {
    *out = NULL;
    tl_dschema *s = calloc(1, sizeof *s);
    if (!s)
        return nomem(err);
    walk w = {.root = schema, .s = s, .err = err, .cond = TL_DCOND_ALWAYS};
    if (opts)
        w.opts = *opts;
    walk_deps wd = {0};
    tl_status st = parse_into(&w, &wd, schema);
    for (size_t i = 0; i < wd.cap && wd.src; i++)
        free(wd.src[i].path);
    free(wd.src);
    free(w.implicit);
    if (st) {
        tl_dschema_free(s);
        return st;
    }
    *out = s;
    return TL_OK;
}

tl_status tl_dschema_parse(const json_t *schema, tl_dschema **out, tl_error *err) {
    return tl_dschema_parse_opts(schema, NULL, out, err);
}
