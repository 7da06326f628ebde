/* typellm/decide.h: typed decisions. A context and an ordered JSON Schema
 * object in; for each field, a value from its declared domain with the
 * probabilities behind it out, as a tl_decision you read through accessors
 * (or render as the JSON document `typellm decide` prints).
 *
 * Each categorical field (string/number/integer enum, boolean, score) is one
 * forward pass that reads the log-probabilities of single-token labels only
 * (A, B, C, ...; a field of more than 255 values: two-token labels 0A, 0B,
 * ..., scored as P(first) * P(second | first) in the same batched step), so
 * a value outside the schema can never be chosen. Numbers
 * without enum are generated under a number automaton; open string fields
 * ("open"/"x-open") let the model write the value. The schema language is
 * documented in docs/decide.md, the C API in docs/api.md.
 *
 * Threading: a tl_schema and a tl_decision are immutable and may be read by
 * any number of threads. tl_decide uses its backend as the backend's kind
 * allows (backend.h): many threads may decide at once on one shared backend,
 * each with its own tl_backend_shared_client. */
#ifndef TYPELLM_DECIDE_H
#define TYPELLM_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_schema tl_schema;     /* a parsed, validated decision schema */
typedef struct tl_decision tl_decision; /* the result of one tl_decide */
typedef struct tl_value tl_value;       /* a JSON value owned by a tl_decision */
struct tl_decide_opts;

/* ---- schemas ------------------------------------------------------------- */

/* Parses json[0..len) (a JSON Schema object; properties order = decision
 * order) and validates it as tl_decide will, except for what needs the
 * tokenizer (more values than the tokenizer has labels: those fail tl_decide).
 * Errors: TL_ERR_SCHEMA with "line:column: invalid JSON: ..." for bad JSON or
 * the JSON path (/properties/NAME/...) and why for a bad schema. */
TL_API tl_status tl_schema_parse(const char *json, size_t len, tl_schema **out, tl_error *err);
/* The same, validated under opts' lenient / strict (opts may be NULL); decide
 * it with the same opts. */
TL_API tl_status tl_schema_parse_opts(const char *json, size_t len, const struct tl_decide_opts *opts, tl_schema **out,
                                      tl_error *err);
TL_API void tl_schema_free(tl_schema *s);
/* Number of fields (top-level properties). */
TL_API size_t tl_schema_n_fields(const tl_schema *s);

/* ---- deciding ------------------------------------------------------------ */

typedef struct tl_decide_opts {
    const char *mode;          /* "sequential" | "batch" | "auto"; NULL = auto */
    const char *style;         /* "chat" | "record"; NULL = chat if the model has a chat template */
    const char *chat_template; /* built-in family to force ("chatml", "llama3", "llama2", "gemma", "phi3"), or NULL */
    double temperature;        /* 0 = argmax; > 0 divides the candidate logprobs, then seeded sampling */
    uint64_t seed;             /* sampling seed (used only when temperature > 0) */
    double threshold;          /* 0 = none; a chosen value with probability below it is abstained */
    bool trace;                /* the JSON gets a per-field "trace" (token ids sent, position scored) */
    bool lenient;              /* unknown / unhonourable schema keywords are warnings ("warnings" in the JSON) */
    bool strict;               /* refuse free text: strings without enum are schema errors (as "x-strict": true) */
    bool partial;              /* a run that outgrows the context returns the fields decided before it */
    /* Jinja source rendered instead of the model's tokenizer.chat_template
     * (docs/templates.md), or NULL. Chat style renders the template with
     * thinking off and scores where the model gives its final answer. */
    const char *chat_template_jinja;
    /* Corrections of the label distribution (docs/decide.md, Corrected
     * distributions), for every categorical field whose schema says neither
     * "x-debias" nor "x-calibrate" (fields that cannot take one are left as
     * they are: open fields, x-domain-from fields, two-token labels). The
     * result then has "probabilities" corrected and "raw_probabilities" as
     * the model gave them. */
    const char *debias;       /* "permute" | "full" | "pride" | "none" | NULL */
    const char *calibrate;    /* "content-free" | "pmi" | "none" | NULL */
    const char *content_free; /* the content-free input; NULL = "N/A" */
    /* Think-then-decide (reasoning templates): up to this many reasoning
     * tokens before each decision whose schema does not say "x-think"; 0 = none. */
    int think;
} tl_decide_opts;

/* Decides every field of schema over context[0..context_len) on backend b.
 * opts may be NULL (auto mode, argmax, no threshold). *out: free with
 * tl_decision_free. Results are deterministic: the same backend model,
 * context, schema and opts give bit-identical probabilities whatever the
 * cache state, thread count or concurrent callers of a shared backend.
 * Errors: TL_ERR_SCHEMA (JSON path) for what the tokenizer cannot label;
 * TL_ERR_INVALID / TL_ERR_UNSUPPORTED for bad options (unknown mode, style,
 * template); TL_ERR_LIMIT when the prompt exceeds the context; backend errors
 * (TL_ERR_NETWORK, TL_ERR_REMOTE, TL_ERR_TIMEOUT, TL_ERR_CANCELLED) as they come. */
TL_API tl_status tl_decide(tl_backend *b, const char *context, size_t context_len, const tl_schema *schema,
                           const tl_decide_opts *opts, tl_decision **out, tl_error *err);

/* As tl_decide, with some answers already known: given_json[0..given_len) is
 * a JSON object {field: value} (or NULL). Those fields are not decided; they
 * are rendered as answered turns, in given's order, between the context and
 * the decisions, and reported with probability 1 (given = true). An open field
 * may be given any string of at most maxLength characters.
 * Errors as tl_decide, and TL_ERR_INVALID naming given/FIELD for an unknown
 * field or a value outside the domain. */
TL_API tl_status tl_decide_given(tl_backend *b, const char *context, size_t context_len, const tl_schema *schema,
                                 const char *given_json, size_t given_len, const tl_decide_opts *opts,
                                 tl_decision **out, tl_error *err);

TL_API void tl_decision_free(tl_decision *d);

/* ---- the whole decision --------------------------------------------------- */

/* tl_decision_to_json flags. */
#define TL_JSON_INDENT 0x1      /* two-space indentation (what the CLI prints); else compact */
#define TL_JSON_VALUES_ONLY 0x2 /* only the "values" object: {field: value, ...} */

/* The decision as a JSON document (caller tl_free()s; NULL only when out of
 * memory), exactly what `typellm decide` prints:
 *   {"values": {field: typed value | null, ... in schema order},
 *    "fields": {field: {"value", "label", "probabilities": {value text: p},
 *                       "candidates": [{"value", "label", "token", "logprob"}],
 *                       "label_mass", "abstained", ("given"), ("trace": {...})}},
 *    "usage": {"prompt_tokens", "cached_tokens", "computed_tokens", "forward_passes"},
 *    "timing_ms": {"prepare", "score", "total"}, "mode", "style", ("chat_template"), "model"}.
 * Generated number fields report {"value", "label": null, "text", "probability",
 * "logprob", "tokens", "abstained"}; open fields add "open" (and, when the model
 * wrote the value, "probability", "closed", "characters", "tokens").
 * docs/decide.md describes every key. Reals are printed with 17 significant digits. */
TL_API char *tl_decision_to_json(const tl_decision *d, unsigned flags);

/* Token accounting of the whole decision (copied into *out). */
TL_API void tl_decision_usage(const tl_decision *d, tl_usage *out);
/* Wall time in milliseconds: preparing (schema, labels, rendering), scoring,
 * and in all. Any pointer may be NULL. */
TL_API void tl_decision_timing(const tl_decision *d, double *prepare_ms, double *score_ms, double *total_ms);
/* "sequential", "batch" or "auto"; "chat" or "record"; the chat template
 * family ("chatml", ...) or NULL in record style; the backend's model name.
 * Owned by the decision. */
TL_API const char *tl_decision_mode(const tl_decision *d);
TL_API const char *tl_decision_style(const tl_decision *d);
TL_API const char *tl_decision_chat_template(const tl_decision *d);
TL_API const char *tl_decision_model(const tl_decision *d);
/* The "values" object {field: value | null} (an object tl_value). */
TL_API const tl_value *tl_decision_values(const tl_decision *d);

/* ---- fields (index i in schema order, 0 <= i < n_fields) ------------------- */

/* Out-of-range indices return NULL / 0 / false / NaN / -1 as the type allows. */
TL_API size_t tl_decision_n_fields(const tl_decision *d);
/* Index of the field with property key `key`, or -1. */
TL_API long tl_decision_find(const tl_decision *d, const char *key);
/* The property key (the caller's id, the JSON's key), its JSON pointer in the
 * schema ("/properties/severity") and the name the model read ("x-name", else
 * the key). Owned by the decision. */
TL_API const char *tl_decision_field_key(const tl_decision *d, size_t i);
TL_API const char *tl_decision_field_path(const tl_decision *d, size_t i);
TL_API const char *tl_decision_field_name(const tl_decision *d, size_t i);

/* What kind of field: how the value was found. */
typedef enum tl_field_kind {
    TL_FIELD_CHOICE = 0,    /* one label chosen among the declared values (enum, boolean, score) */
    TL_FIELD_OPEN = 1,      /* a choice with an open option: the model may write the value */
    TL_FIELD_GENERATED = 2  /* a number generated under the number automaton */
} tl_field_kind;
TL_API tl_field_kind tl_decision_field_kind(const tl_decision *d, size_t i);
/* The schema type: "string", "integer", "number", "boolean" or "score". Static string. */
TL_API const char *tl_decision_field_type(const tl_decision *d, size_t i);

/* The value (JSON null when abstained). */
TL_API const tl_value *tl_decision_field_value(const tl_decision *d, size_t i);
/* The value was abstained (probability below opts.threshold) / given by the caller. */
TL_API bool tl_decision_field_abstained(const tl_decision *d, size_t i);
TL_API bool tl_decision_field_given(const tl_decision *d, size_t i);
/* The control label of the chosen value ("A", "B", ...), NULL when none
 * (abstained, generated number). Owned by the decision. */
TL_API const char *tl_decision_field_label(const tl_decision *d, size_t i);
/* Probability of the value: the chosen choice's renormalized probability
 * (1 when given); for generated numbers the probability of the whole text
 * under the constrained distribution. NaN when abstained. */
TL_API double tl_decision_field_probability(const tl_decision *d, size_t i);
/* label_mass: the total full-vocabulary probability (softmax over every
 * token, temperature 1) the model put on the field's declared labels at the
 * answer position: sum over the choices of exp(logprob). Near 1: the model
 * answered within the domain; small: its mass was elsewhere (the question or
 * rendering did not lead it to a label), so the renormalized probabilities
 * mean less. NaN for given and generated fields. */
TL_API double tl_decision_field_label_mass(const tl_decision *d, size_t i);

/* The choices scored for a CHOICE / OPEN field (its declared values, then the
 * open option); 0 for GENERATED fields. j indexes them. */
TL_API size_t tl_decision_field_n_choices(const tl_decision *d, size_t i);
/* Index of the chosen choice, or -1 (abstained, generated). For an OPEN field
 * whose value the model wrote, the open option's index (n_choices - 1). */
TL_API long tl_decision_field_chosen(const tl_decision *d, size_t i);
/* A choice's value (JSON null for the open option), label, token id (a
 * two-token label's first token; the JSON candidate has both), its
 * probability renormalized over the choices (after temperature), and its
 * full-vocabulary log-probability (NaN when not scored: given fields). */
TL_API const tl_value *tl_decision_choice_value(const tl_decision *d, size_t i, size_t j);
TL_API const char *tl_decision_choice_label(const tl_decision *d, size_t i, size_t j);
TL_API int32_t tl_decision_choice_token(const tl_decision *d, size_t i, size_t j);
TL_API double tl_decision_choice_probability(const tl_decision *d, size_t i, size_t j);
TL_API double tl_decision_choice_logprob(const tl_decision *d, size_t i, size_t j);
/* The choice's probability as the model gave it, before x-debias / x-calibrate
 * (tl_decide_opts.debias, .calibrate) corrected it; equal to
 * tl_decision_choice_probability when the field was not corrected. */
TL_API double tl_decision_choice_raw_probability(const tl_decision *d, size_t i, size_t j);

/* ---- values ----------------------------------------------------------------- */

/* A tl_value is a JSON value that lives as long as its decision. Scalars are
 * read with the accessor of their type (a mismatched accessor returns
 * false / 0 / NaN / NULL); arrays and objects have members. */
typedef enum tl_value_type {
    TL_VALUE_NULL = 0,
    TL_VALUE_BOOL = 1,
    TL_VALUE_INTEGER = 2,
    TL_VALUE_REAL = 3,
    TL_VALUE_STRING = 4,
    TL_VALUE_ARRAY = 5,
    TL_VALUE_OBJECT = 6
} tl_value_type;
TL_API tl_value_type tl_value_type_of(const tl_value *v);
TL_API bool tl_value_bool(const tl_value *v);
TL_API int64_t tl_value_integer(const tl_value *v);
/* Integers and reals as a double. */
TL_API double tl_value_number(const tl_value *v);
/* UTF-8 text (NUL-terminated; *len, if non-NULL, gets its byte length). */
TL_API const char *tl_value_string(const tl_value *v, size_t *len);
/* Elements of an array / members of an object (in their order); 0 otherwise. */
TL_API size_t tl_value_size(const tl_value *v);
TL_API const tl_value *tl_value_at(const tl_value *v, size_t i);
/* An object member's key by index, and a member by key (NULL when absent). */
TL_API const char *tl_value_key_at(const tl_value *v, size_t i);
TL_API const tl_value *tl_value_get(const tl_value *v, const char *key);
/* The value as compact JSON (caller tl_free()s; NULL when out of memory). */
TL_API char *tl_value_to_json(const tl_value *v);

#ifdef __cplusplus
}
#endif
#endif
