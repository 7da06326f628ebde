/* decision.c: the public decision API (typellm/decide.h): tl_schema,
 * tl_decide, and tl_decision, the typed view of a result.
 *
 * The decision core (decide.c) writes one result document, the JSON the CLI
 * prints and the server sends; a tl_decision owns that document and, built
 * once in tl_decision_wrap, an index per field (kind, type, choices with their
 * probabilities and log-probabilities as doubles) so every accessor is O(1)
 * and none re-reads the document by key. Values are the document's own JSON
 * values (a tl_value is a json_t the caller cannot name), so any value the
 * core can produce (strings, numbers, null, arrays, nested objects) reaches
 * the API without a new accessor. A new field kind needs a case in
 * field_type_name / field_kind_of and, if its result has another shape, in
 * index_field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decide/decide.h"
#include "decide/schema.h"
#include "util/error.h"
#include "util/json_text.h"

/* Shared by any number of deciding threads: each tl_decide parses root into
 * its own tl_dschema (which only takes references: jansson's reference
 * counts are atomic, its lookups read-only). */
struct tl_schema {
    json_t *root;     /* the schema document (validated) */
    size_t n_fields;
};

typedef struct choice_view {
    const json_t *value; /* JSON null for the open option */
    const char *label;
    int32_t token;
    double probability;  /* renormalized over the choices (corrected, when a correction was asked) */
    double raw_probability; /* the model's own, before any correction */
    double logprob;      /* full vocabulary; NaN when not scored */
} choice_view;

typedef struct field_view {
    char *key, *path, *name; /* owned copies */
    tl_field_kind kind;
    const char *type;        /* static */
    const json_t *fj;        /* the field's object in "fields" */
    const json_t *value;
    const char *label;       /* NULL when none */
    bool abstained, given;
    double probability, label_mass;
    size_t n_choices;
    choice_view *choices;
    long chosen;
} field_view;

struct tl_decision {
    json_t *root;  /* the result document */
    size_t n_fields;
    field_view *fields;
    tl_usage usage;
    double prepare_ms, score_ms, total_ms;
};

/* ---- schemas --------------------------------------------------------------- */

tl_status tl_schema_parse(const char *json, size_t len, tl_schema **out, tl_error *err) {
    return tl_schema_parse_opts(json, len, NULL, out, err);
}

tl_status tl_schema_parse_opts(const char *json, size_t len, const tl_decide_opts *opts, tl_schema **out,
                               tl_error *err) {
    *out = NULL;
    if (!json && len)
        return tl_error_set(err, TL_ERR_INVALID, "schema: no text");
    json_error_t je;
    json_t *root = json_loadb(json ? json : "", len, 0, &je);
    if (!root)
        return tl_error_set(err, TL_ERR_SCHEMA, "%d:%d: invalid JSON: %s", je.line, je.column, je.text);
    tl_dschema *ds = NULL;
    tl_dschema_opts so = {.lenient = opts && opts->lenient, .strict = opts && opts->strict};
    tl_status st = tl_dschema_parse_opts(root, &so, &ds, err);
    tl_schema *s = st ? NULL : calloc(1, sizeof *s);
    if (!st && !s)
        st = tl_error_set(err, TL_ERR_NOMEM, "schema: out of memory");
    if (st) {
        tl_dschema_free(ds);
        json_decref(root);
        return st;
    }
    s->root = root;
    s->n_fields = ds->n_fields;
    tl_dschema_free(ds);
    *out = s;
    return TL_OK;
}

void tl_schema_free(tl_schema *s) {
    if (!s)
        return;
    json_decref(s->root);
    free(s);
}

size_t tl_schema_n_fields(const tl_schema *s) { return s ? s->n_fields : 0; }

/* ---- deciding ---------------------------------------------------------------- */

tl_status tl_decide(tl_backend *b, const char *context, size_t context_len, const tl_schema *schema,
                    const tl_decide_opts *opts, tl_decision **out, tl_error *err) {
    return tl_decide_given(b, context, context_len, schema, NULL, 0, opts, out, err);
}

tl_status tl_decide_given(tl_backend *b, const char *context, size_t context_len, const tl_schema *schema,
                          const char *given_json, size_t given_len, const tl_decide_opts *opts, tl_decision **out,
                          tl_error *err) {
    *out = NULL;
    if (!schema)
        return tl_error_set(err, TL_ERR_INVALID, "decide: no schema");
    json_t *given = NULL;
    if (given_json) {
        json_error_t je;
        if (!(given = json_loadb(given_json, given_len, 0, &je)))
            return tl_error_set(err, TL_ERR_INVALID, "decide: given: %d:%d: invalid JSON: %s", je.line, je.column,
                                je.text);
    }
    tl_status st = tl_decide_run(b, context, context_len, schema->root, given, opts, NULL, out, err);
    json_decref(given);
    return st;
}

/* ---- building the view --------------------------------------------------------- */

static const char *field_type_name(const tl_dfield *f) {
    switch (f->kind) {
    case TL_DFIELD_STRING_ENUM: return "string";
    case TL_DFIELD_INTEGER_ENUM: return "integer";
    case TL_DFIELD_NUMBER_ENUM: return "number";
    case TL_DFIELD_BOOLEAN: return "boolean";
    case TL_DFIELD_SCORE: return "score";
    case TL_DFIELD_INTEGER: return "integer";
    case TL_DFIELD_NUMBER: return "number";
    case TL_DFIELD_UNION: return "union";
    case TL_DFIELD_STRING: return "string";
    }
    return "unknown";
}

static tl_field_kind field_kind_of(const tl_dfield *f) {
    if (tl_dfield_generated(f))
        return TL_FIELD_GENERATED;
    return f->open ? TL_FIELD_OPEN : TL_FIELD_CHOICE;
}

/* A JSON number as a double; NaN for null or anything else. */
static double number_or_nan(const json_t *v) { return json_is_number(v) ? json_number_value(v) : NAN; }

static tl_status index_field(field_view *fv, const tl_dfield *f, const json_t *fj, tl_error *err) {
    fv->key = strdup(f->key);
    fv->path = strdup(f->path);
    fv->name = strdup(f->name);
    if (!fv->key || !fv->path || !fv->name)
        return tl_error_set(err, TL_ERR_NOMEM, "decision: out of memory");
    fv->kind = field_kind_of(f);
    fv->type = field_type_name(f);
    fv->fj = fj;
    fv->value = json_object_get(fj, "value");
    fv->label = json_string_value(json_object_get(fj, "label"));
    fv->abstained = json_is_true(json_object_get(fj, "abstained"));
    fv->given = json_is_true(json_object_get(fj, "given"));
    fv->label_mass = number_or_nan(json_object_get(fj, "label_mass"));
    fv->chosen = -1;
    fv->probability = NAN;
    if (fv->kind == TL_FIELD_GENERATED) {
        if (!fv->abstained)
            fv->probability = number_or_nan(json_object_get(fj, "probability"));
        return TL_OK;
    }
    const json_t *cands = json_object_get(fj, "candidates");
    const json_t *probs = json_object_get(fj, "probabilities");
    const json_t *raw = json_object_get(fj, "raw_probabilities");
    if (!raw)
        raw = probs;
    if (json_is_true(json_object_get(fj, "constant"))) { /* known without asking: no choices scored */
        fv->probability = 1.0;
        return TL_OK;
    }
    if (json_is_true(json_object_get(fj, "skipped")) || json_is_true(json_object_get(fj, "undecided")) ||
        json_is_true(json_object_get(fj, "inactive")))
        return TL_OK;
    fv->n_choices = tl_dfield_n_choices(f);
    if (json_array_size(cands) != fv->n_choices)
        return tl_error_set(err, TL_ERR_INTERNAL, "decision: %s: %zu candidates for %zu choices", f->path,
                            json_array_size(cands), fv->n_choices);
    fv->choices = calloc(fv->n_choices ? fv->n_choices : 1, sizeof *fv->choices);
    if (!fv->choices)
        return tl_error_set(err, TL_ERR_NOMEM, "decision: out of memory");
    for (size_t j = 0; j < fv->n_choices; j++) {
        const json_t *c = json_array_get(cands, j);
        choice_view *cv = &fv->choices[j];
        /* probabilities are keyed by the value's text (the open option by its name) */
        const char *pkey = j < f->n_values ? f->value_keys[j] : f->open_name;
        cv->value = json_object_get(c, "value");
        cv->label = json_string_value(json_object_get(c, "label"));
        cv->token = (int32_t)json_integer_value(json_object_get(c, "token"));
        cv->probability = number_or_nan(json_object_get(probs, pkey));
        cv->raw_probability = number_or_nan(json_object_get(raw, pkey));
        cv->logprob = number_or_nan(json_object_get(c, "logprob"));
        if (fv->label && cv->label && !strcmp(fv->label, cv->label))
            fv->chosen = (long)j;
    }
    if (fv->chosen >= 0)
        fv->probability = fv->choices[fv->chosen].probability;
    return TL_OK;
}

static void decision_free_fields(tl_decision *d) {
    for (size_t i = 0; i < d->n_fields; i++) {
        free(d->fields[i].key);
        free(d->fields[i].path);
        free(d->fields[i].name);
        free(d->fields[i].choices);
    }
    free(d->fields);
}

tl_status tl_decision_wrap(json_t *result, const tl_dschema *schema, tl_decision **out, tl_error *err) {
    *out = NULL;
    tl_decision *d = calloc(1, sizeof *d);
    if (!d || !(d->fields = calloc(schema->n_fields ? schema->n_fields : 1, sizeof *d->fields))) {
        free(d);
        return tl_error_set(err, TL_ERR_NOMEM, "decision: out of memory");
    }
    d->root = json_incref(result);
    const json_t *fields = json_object_get(result, "fields");
    tl_status st = TL_OK;
    /* one entry per result field: every field outside a multi-label array,
     * and each array (its value the chosen set), in schema order */
    for (size_t ni = 0; ni < schema->n_nodes && !st; ni++) {
        const tl_dnode *nd = &schema->nodes[ni];
        field_view *fv = &d->fields[d->n_fields];
        if (nd->kind == TL_DNODE_FIELD) {
            const tl_dfield *f = &schema->fields[nd->index];
            const json_t *fj = json_object_get(fields, f->key);
            st = fj ? index_field(fv, f, fj, err)
                    : tl_error_set(err, TL_ERR_INTERNAL, "decision: no result for %s", f->path);
            d->n_fields++;
        } else if (nd->kind == TL_DNODE_GROUP) {
            const tl_dgroup *g = &schema->groups[nd->index];
            const json_t *fj = json_object_get(fields, g->key);
            fv->key = strdup(g->key);
            fv->path = strdup(g->path);
            fv->name = strdup(g->key);
            fv->kind = TL_FIELD_CHOICE;
            fv->type = "array";
            fv->fj = fj;
            fv->value = json_object_get(fj, "value");
            fv->chosen = -1;
            fv->probability = fv->label_mass = NAN;
            d->n_fields++;
            if (!fv->key || !fv->path || !fv->name)
                st = tl_error_set(err, TL_ERR_NOMEM, "decision: out of memory");
        }
    }
    const json_t *u = json_object_get(result, "usage");
    d->usage.prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
    d->usage.cached_tokens = json_integer_value(json_object_get(u, "cached_tokens"));
    d->usage.computed_tokens = json_integer_value(json_object_get(u, "computed_tokens"));
    d->usage.forward_passes = json_integer_value(json_object_get(u, "forward_passes"));
    const json_t *t = json_object_get(result, "timing_ms");
    d->prepare_ms = number_or_nan(json_object_get(t, "prepare"));
    d->score_ms = number_or_nan(json_object_get(t, "score"));
    d->total_ms = number_or_nan(json_object_get(t, "total"));
    if (st) {
        tl_decision_free(d);
        return st;
    }
    *out = d;
    return TL_OK;
}

void tl_decision_free(tl_decision *d) {
    if (!d)
        return;
    decision_free_fields(d);
    json_decref(d->root);
    free(d);
}

/* ---- the whole decision ---------------------------------------------------------- */

char *tl_decision_to_json(const tl_decision *d, unsigned flags) {
    if (!d)
        return NULL;
    const json_t *shown = flags & TL_JSON_VALUES_ONLY ? json_object_get(d->root, "values") : d->root;
    /* Reals in their shortest exact form: 0.3 (not 0.29999999999999999), and a
     * generated number such as 444444444444.0 reads back exactly. */
    return tl_json_dumps(shown, flags & TL_JSON_INDENT ? JSON_INDENT(2) : JSON_COMPACT);
}

void tl_decision_usage(const tl_decision *d, tl_usage *out) {
    if (out)
        *out = d ? d->usage : (tl_usage){0};
}

void tl_decision_timing(const tl_decision *d, double *prepare_ms, double *score_ms, double *total_ms) {
    if (prepare_ms)
        *prepare_ms = d ? d->prepare_ms : NAN;
    if (score_ms)
        *score_ms = d ? d->score_ms : NAN;
    if (total_ms)
        *total_ms = d ? d->total_ms : NAN;
}

static const char *root_string(const tl_decision *d, const char *key) {
    return d ? json_string_value(json_object_get(d->root, key)) : NULL;
}
const char *tl_decision_mode(const tl_decision *d) { return root_string(d, "mode"); }
const char *tl_decision_style(const tl_decision *d) { return root_string(d, "style"); }
const char *tl_decision_chat_template(const tl_decision *d) { return root_string(d, "chat_template"); }
const char *tl_decision_model(const tl_decision *d) { return root_string(d, "model"); }

const tl_value *tl_decision_values(const tl_decision *d) {
    return d ? (const tl_value *)json_object_get(d->root, "values") : NULL;
}

/* ---- fields ------------------------------------------------------------------------ */

size_t tl_decision_n_fields(const tl_decision *d) { return d ? d->n_fields : 0; }

long tl_decision_find(const tl_decision *d, const char *key) {
    for (size_t i = 0; d && key && i < d->n_fields; i++)
        if (!strcmp(d->fields[i].key, key))
            return (long)i;
    return -1;
}

static const field_view *field_at(const tl_decision *d, size_t i) {
    return d && i < d->n_fields ? &d->fields[i] : NULL;
}

/* Each field accessor: the member of field i, or the fallback out of range. */
#define FIELD_GETTER(type, fn, expr, fallback)          \
    type fn(const tl_decision *d, size_t i) {           \
        const field_view *f = field_at(d, i);           \
        return f ? (expr) : (fallback);                 \
    }
FIELD_GETTER(const char *, tl_decision_field_key, f->key, NULL)
FIELD_GETTER(const char *, tl_decision_field_path, f->path, NULL)
FIELD_GETTER(const char *, tl_decision_field_name, f->name, NULL)
FIELD_GETTER(tl_field_kind, tl_decision_field_kind, f->kind, TL_FIELD_CHOICE)
FIELD_GETTER(const char *, tl_decision_field_type, f->type, NULL)
FIELD_GETTER(const tl_value *, tl_decision_field_value, (const tl_value *)f->value, NULL)
FIELD_GETTER(bool, tl_decision_field_abstained, f->abstained, false)
FIELD_GETTER(bool, tl_decision_field_given, f->given, false)
FIELD_GETTER(const char *, tl_decision_field_label, f->label, NULL)
FIELD_GETTER(double, tl_decision_field_probability, f->probability, NAN)
FIELD_GETTER(double, tl_decision_field_label_mass, f->label_mass, NAN)
FIELD_GETTER(size_t, tl_decision_field_n_choices, f->n_choices, 0)
FIELD_GETTER(long, tl_decision_field_chosen, f->chosen, -1)

static const choice_view *choice_at(const tl_decision *d, size_t i, size_t j) {
    const field_view *f = field_at(d, i);
    return f && j < f->n_choices ? &f->choices[j] : NULL;
}
/* Each choice accessor: the member of choice j of field i, or the fallback. */
#define CHOICE_GETTER(type, fn, expr, fallback)             \
    type fn(const tl_decision *d, size_t i, size_t j) {     \
        const choice_view *c = choice_at(d, i, j);          \
        return c ? (expr) : (fallback);                     \
    }
CHOICE_GETTER(const tl_value *, tl_decision_choice_value, (const tl_value *)c->value, NULL)
CHOICE_GETTER(const char *, tl_decision_choice_label, c->label, NULL)
CHOICE_GETTER(int32_t, tl_decision_choice_token, c->token, -1)
CHOICE_GETTER(double, tl_decision_choice_probability, c->probability, NAN)
CHOICE_GETTER(double, tl_decision_choice_logprob, c->logprob, NAN)
CHOICE_GETTER(double, tl_decision_choice_raw_probability, c->raw_probability, NAN)

/* ---- values ------------------------------------------------------------------------- */

#define JV(v) ((const json_t *)(v))

tl_value_type tl_value_type_of(const tl_value *v) {
    switch (v ? json_typeof(JV(v)) : JSON_NULL) {
    case JSON_OBJECT: return TL_VALUE_OBJECT;
    case JSON_ARRAY: return TL_VALUE_ARRAY;
    case JSON_STRING: return TL_VALUE_STRING;
    case JSON_INTEGER: return TL_VALUE_INTEGER;
    case JSON_REAL: return TL_VALUE_REAL;
    case JSON_TRUE:
    case JSON_FALSE: return TL_VALUE_BOOL;
    case JSON_NULL: return TL_VALUE_NULL;
    }
    return TL_VALUE_NULL;
}

bool tl_value_bool(const tl_value *v) { return v && json_is_true(JV(v)); }
int64_t tl_value_integer(const tl_value *v) { return v && json_is_integer(JV(v)) ? json_integer_value(JV(v)) : 0; }
double tl_value_number(const tl_value *v) { return v && json_is_number(JV(v)) ? json_number_value(JV(v)) : NAN; }

const char *tl_value_string(const tl_value *v, size_t *len) {
    bool is = v && json_is_string(JV(v));
    if (len)
        *len = is ? json_string_length(JV(v)) : 0;
    return is ? json_string_value(JV(v)) : NULL;
}

size_t tl_value_size(const tl_value *v) {
    if (!v)
        return 0;
    return json_is_array(JV(v)) ? json_array_size(JV(v)) : json_is_object(JV(v)) ? json_object_size(JV(v)) : 0;
}

/* The i-th member's iterator of an object (objects keep insertion order). */
static void *member_iter(const tl_value *v, size_t i) {
    if (!v || !json_is_object(JV(v)))
        return NULL;
    void *it = json_object_iter((json_t *)JV(v));
    while (it && i--)
        it = json_object_iter_next((json_t *)JV(v), it);
    return it;
}

const tl_value *tl_value_at(const tl_value *v, size_t i) {
    if (v && json_is_array(JV(v)))
        return (const tl_value *)json_array_get(JV(v), i);
    void *it = member_iter(v, i);
    return it ? (const tl_value *)json_object_iter_value(it) : NULL;
}

const char *tl_value_key_at(const tl_value *v, size_t i) {
    void *it = member_iter(v, i);
    return it ? json_object_iter_key(it) : NULL;
}

const tl_value *tl_value_get(const tl_value *v, const char *key) {
    return v && key && json_is_object(JV(v)) ? (const tl_value *)json_object_get(JV(v), key) : NULL;
}

char *tl_value_to_json(const tl_value *v) {
    return v ? tl_json_dumps(JV(v), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}
