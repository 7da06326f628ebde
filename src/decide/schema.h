/* schema.h: the decision schema, parsed once from JSON Schema into the
 * fields the rest of decide/ works on (decision order = properties order).
 *
 * Every field has a finite, ordered, duplicate-free domain of at most
 * TL_DFIELD_MAX_VALUES typed values; every error names its JSON path
 * (/properties/severity/enum/3) and why. */
#ifndef TL_DECIDE_SCHEMA_H
#define TL_DECIDE_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "constrain/constrain.h"
#include "typellm/common.h"

/* Values of one field: up to 255 take single-token labels, more take
 * two-token labels (labels.h). The choices line lists every value (about 6-10
 * tokens each), so 10,000 values already fill a 64k-100k context. */
#define TL_DFIELD_MAX_VALUES 10000
#define TL_DSCHEMA_MAX_FIELDS 4096

typedef enum tl_dfield_kind {
    TL_DFIELD_STRING_ENUM,  /* {"type":"string","enum":[...]} */
    TL_DFIELD_INTEGER_ENUM, /* {"type":"integer","enum":[...]} */
    TL_DFIELD_NUMBER_ENUM,  /* {"type":"number","enum":[...]} */
    TL_DFIELD_BOOLEAN,      /* {"type":"boolean"}: true, false */
    TL_DFIELD_SCORE,        /* {"type":"number","format":"score"}: 0.0, 0.1, ..., 1.0 */
    TL_DFIELD_INTEGER,      /* {"type":"integer"} without enum: generated under the number automaton */
    TL_DFIELD_NUMBER,       /* {"type":"number"} without enum: likewise */
    TL_DFIELD_UNION,        /* declared values of mixed JSON types (anyOf/oneOf of consts, enums, booleans, null) */
    TL_DFIELD_STRING        /* {"type":"string"} without enum: generated text (minLength, maxLength, pattern, format) */
} tl_dfield_kind;

/* A condition: a field (an object, an array) is decided only when the
 * control field `field` was answered, itself active, with a value index in
 * [lo, hi]. field = -1: always. A control field always comes before what it
 * controls (lower index), so one pass in index order evaluates them all. */
typedef struct tl_dcond {
    long field;
    size_t lo, hi;
} tl_dcond;

#define TL_DCOND_ALWAYS ((tl_dcond){-1, 0, 0})

/* What a field's answer is for. Control fields are categorical decisions
 * about the shape of the result; their answers are not values. */
typedef enum tl_dfield_role {
    TL_DROLE_VALUE = 0, /* its value goes into "values" */
    TL_DROLE_LENGTH,    /* an array's length: the values minItems..maxItems (key "people#length") */
    TL_DROLE_MORE,      /* an open-ended array: is there item i? "more" or "done" (key "people/2#more") */
    TL_DROLE_PRESENCE   /* a generated field's, object's or array's: "(present)", null, "(absent)" (key "x#present") */
} tl_dfield_role;

typedef struct tl_dfield {
    char *key;            /* property key: the caller's id, the result's key */
    char *name;           /* what the model reads: "x-name", else key */
    char *question;       /* "question", else "description", else name */
    char *path;           /* JSON pointer of the property, e.g. /properties/severity */
    tl_dfield_kind kind;
    bool required;
    size_t n_values;      /* 1..TL_DFIELD_MAX_VALUES; 0 for generated numbers */
    tl_number_spec number; /* TL_DFIELD_INTEGER / TL_DFIELD_NUMBER: the allowed set (constrain.h) */
    json_t **values;      /* n_values owned references: the typed values */
    char **value_keys;    /* n_values: the value as text ("travel", "true", "0.3", "2"): probability keys */
    char **value_json;    /* n_values: the value as compact JSON ("\"travel\"", "true", "0.3"): rendering */
    char **value_descs;   /* n_values: description or NULL */
    size_t n_deps;
    size_t *deps;         /* indices of the fields named in "depends_on" (and "x-domain-from") */
    /* Open string fields ("open": true or "x-open": NAME): one more label after
     * the values' labels; picking it makes the model write the value itself. */
    bool open;
    char *open_name;      /* "other" or x-open's NAME: the open choice's probability key */
    size_t max_length;    /* the written value's limit in code points ("maxLength"; default TL_DFIELD_OPEN_MAX_LENGTH) */
    int max_tokens;       /* token limit of the written value ("x-max-tokens"; 0: 4 * max_length + 16) */
    long domain_from;     /* "x-domain-from": earlier open field whose written values join this domain; -1 */
    /* Where the value goes in the result: the property keys from the root
     * ({"customer": {"tier": ...}} -> "customer", "tier"); key is them joined by '/'. */
    char **segs;
    size_t n_segs;
    bool nullable;        /* null is one of the values (anyOf/oneOf with {"type":"null"}, type [T,"null"], nullable) */
    bool constant;        /* "const" (or a one-value domain from const): known without asking; probability 1 */
    bool skip;            /* "x-optional": "skip": never asked, left out of the result */
    size_t absent;        /* index of the declared "absent" value ("x-optional": "ask"), or SIZE_MAX */
    long group;           /* the multi-label array (tl_dschema.groups) this yes/no decision is one value of, or -1 */
    size_t group_item;    /* which of the group's values */
    /* TL_DFIELD_STRING: max_length above; min_length, pattern (a regex over
     * the value, enforced during generation; NULL: any text) */
    size_t min_length;
    char *pattern;
    /* Arrays of objects, numbers and strings, null and "ask" on generated values */
    tl_dfield_role role;
    tl_dcond cond;        /* decided only when this holds (an item beyond the length: never) */
    size_t *after;        /* fields decided before this one in every mode but sequential (its condition's field; */
    size_t n_after;       /*  for "more" the previous item's fields) */
    char *place;          /* inside an array: the value's JSON path (/people/0/name) for messages; else NULL */
    /* Corrections of a categorical field's distribution (correct.h): "x-debias",
     * "x-calibrate"; and "x-think": reasoning tokens before the answer. */
    int debias;           /* tl_debias; 0: none (tl_decide_opts.debias may set it) */
    size_t debias_orders; /* cyclic orders wanted (permute, pride); 0: min(n, 8) */
    double *prior;        /* pride: the given prior over label positions (n_values), or NULL: estimated */
    int calibrate;        /* tl_calibrate; 0: none */
    char *cf_input;       /* content-free input, or NULL: the default ("N/A"; pmi: none) */
    bool corrections_set; /* the schema said x-debias or x-calibrate (the options do not override it) */
    long think_tokens;    /* x-think max_tokens; -1: not given (tl_decide_opts.think applies) */
} tl_dfield;

/* Where messages name a field: its value's path inside an array, else its schema path. */
static inline const char *tl_dfield_where(const tl_dfield *f) { return f->place ? f->place : f->path; }

/* An array of an enum/boolean item ({"type":"array","items":{"enum":[...]}}):
 * multi-label. Each value is one yes/no field (fields[first .. first + n));
 * the chosen set is the most probable one with min_items..max_items members. */
typedef struct tl_dgroup {
    char *key, *path;
    char **segs;
    size_t n_segs;
    size_t first, n;
    size_t min_items, max_items;
    bool skip;            /* x-optional: skip */
    json_t **values;      /* n: the item values (field first + i decides values[i]) */
    char **value_keys;    /* n: their text, the probabilities' keys */
} tl_dgroup;

/* An array of objects, numbers or strings: its length is decided first (a
 * TL_DROLE_LENGTH field over minItems..maxItems, or, open-ended, a
 * TL_DROLE_MORE field before each item past minItems), then each item in
 * order, depth-first; item i's fields are keyed "people/i/...". */
typedef struct tl_darray {
    char *key, *path;
    char **segs;
    size_t n_segs;
    size_t min_items, max_items;
    long length;          /* the TL_DROLE_LENGTH field, or -1 (open-ended, or minItems = maxItems) */
    bool open_end;        /* TL_DROLE_MORE fields decide the length */
    bool skip;
} tl_darray;

#define TL_DARRAY_MAX_ITEMS 256   /* maxItems of an array of objects, numbers or strings */
#define TL_DARRAY_COUNT_MAX 16    /* at most this many lengths: one length decision; more: open-ended */

/* Result layout: objects, arrays, fields and groups in schema order
 * (depth-first). cond: the node is in the result only when it holds;
 * presence: its TL_DROLE_PRESENCE field (null or absent instead), or -1. */
typedef enum tl_dnode_kind { TL_DNODE_OBJECT = 1, TL_DNODE_FIELD, TL_DNODE_GROUP, TL_DNODE_ARRAY } tl_dnode_kind;
typedef struct tl_dnode {
    tl_dnode_kind kind;
    size_t index;         /* into fields / groups / objects / arrays */
    tl_dcond cond;
    long presence;
} tl_dnode;

typedef struct tl_dobject {
    char *path;           /* JSON pointer of its schema */
    char **segs;          /* property keys from the root */
    size_t n_segs;
    bool skip;            /* x-optional: skip (its fields are skipped too) */
} tl_dobject;

#define TL_DFIELD_OPEN_MAX_LENGTH 256
#define TL_DFIELD_OPEN_MAX_LENGTH_LIMIT 4096

typedef struct tl_dschema {
    char *title;          /* NULL when absent */
    char *description;    /* NULL when absent */
    size_t n_fields;
    tl_dfield *fields;
    bool any_deps;        /* some field declares depends_on */
    tl_dgroup *groups;
    size_t n_groups;
    tl_dobject *objects;  /* nested objects (not the root) */
    size_t n_objects;
    tl_darray *arrays;    /* arrays of objects, numbers, strings */
    size_t n_arrays;
    bool any_after;       /* some field has structural predecessors (tl_dfield.after) */
    tl_dnode *nodes;
    size_t n_nodes;
    char **warnings;      /* --lenient: what was ignored, with its JSON path */
    size_t n_warnings;
} tl_dschema;

typedef struct tl_dschema_opts {
    bool lenient;         /* unknown and unhonourable keywords are warnings, not errors */
    bool strict;          /* refuse free text (strings without enum), as "x-strict": true does */
} tl_dschema_opts;

/* True for fields generated token by token (integer/number without enum). */
static inline bool tl_dfield_generated(const tl_dfield *f) {
    return f->kind == TL_DFIELD_INTEGER || f->kind == TL_DFIELD_NUMBER || f->kind == TL_DFIELD_STRING;
}

/* Candidates scored for a categorical field: its values, plus the open choice. */
static inline size_t tl_dfield_n_choices(const tl_dfield *f) { return f->n_values + (f->open ? 1 : 0); }

/* Appends a string value (a written open value joining an x-domain-from
 * domain). *added = false, TL_OK when it is already there or the domain is full. */
tl_status tl_dfield_add_string(tl_dfield *f, const char *text, bool *added, tl_error *err);

/* Parses and validates; *out is freed with tl_dschema_free. opts may be NULL. */
tl_status tl_dschema_parse(const json_t *schema, tl_dschema **out, tl_error *err);
tl_status tl_dschema_parse_opts(const json_t *schema, const tl_dschema_opts *opts, tl_dschema **out, tl_error *err);
void tl_dschema_free(tl_dschema *s);

/* Index of the field with key `key` ("tier", "customer/tier"; a leading '/'
 * is allowed), or -1. */
long tl_dschema_find(const tl_dschema *s, const char *key);

/* Index of the value of field f equal to v (numbers compared by value), or -1. */
long tl_dfield_value_index(const tl_dfield *f, const json_t *v);

/* The built-in pattern of a string format ("date", "email", ...) or NULL. */
const char *tl_dschema_format_pattern(const char *format);

/* Shortest text of a JSON number that reads back to the same value
 * (integers as integers, reals always with a '.' or exponent). buf >= 32 bytes. */
void tl_json_number_text(const json_t *v, char *buf, size_t cap);

#endif
