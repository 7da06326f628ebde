/* decide.h: typed decisions, the layers' view. The public API (tl_schema,
 * tl_decision, tl_decide: include/typellm/decide.h) is built on the JSON
 * entry points here, which the server and tests use directly.
 *
 * Context + an ordered JSON Schema object in, values from each field's
 * declared domain (with their probabilities) out.
 *
 * Each categorical field (string/number/integer enum, boolean, score) is one
 * forward pass that reads the log-probabilities of single-token labels only
 * (A, B, C, ...; past the single-token labels, two-token labels whose
 * log-probability is log P(first) + log P(second | first)), so a value
 * outside the schema can never be chosen. The
 * server (/v1/decide, /v1/systemone) and `typellm decide` are built on this
 * header; the schema language is documented in docs/decide.md. */
#ifndef TL_DECIDE_DECIDE_H
#define TL_DECIDE_DECIDE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "typellm/decide.h"

/* Runs every field of schema over context[0..context_len) on backend b and
 * sets *result to a new JSON object (caller json_decref's it):
 *   {"values": {field: typed value | null, ... in schema order},
 *    "fields": {field: {"value", "label", "probabilities": {value text: p},
 *                       "candidates": [{"value", "label", "token", "logprob", (two-token labels: "tokens", "logprobs")}],
 *                       "label_mass", "abstained", ("trace": {"ids", "position", "wave", "text", "wave_usage"})}},
 *    "usage": {"prompt_tokens", "cached_tokens", "computed_tokens", "forward_passes"},
 *    "timing_ms": {"prepare", "score", "total"}, "mode", "style", ("chat_template"), "model"}.
 * Chat style renders the model's own Jinja template (or chat_template_jinja)
 * with thinking off; "chat_template" names its family ("chatml", ..., or
 * "jinja") and, with trace, "chat_template_source" says which template
 * ("model", "given", "builtin") and "reasoning" how the answer is kept out of
 * a reasoning block.
 * Trace: "ids" are the exact token ids sent for the field, "position" the
 * index of the last of them (the candidates are scored for the next token),
 * "wave" the batched step it ran in, "wave_usage" that step's token counts.
 * Generated number fields (integer/number without enum) report instead
 *   {"value", "label": null, "text", "probability", "logprob", "tokens", "abstained"}.
 * Open string fields ("open"/"x-open") add "open": whether the model picked
 * the open choice and wrote the value; when it did, "value" is the written
 * text and "probability", "closed", "characters", "tokens" describe it, the
 * open choice's probability is keyed by its name and its candidate has
 * "value": null, "open": true. See docs/decide.md, Open fields.
 * "label_mass" (decided categorical fields): sum of exp(logprob) over the
 * candidates, the full-vocabulary probability on the declared labels.
 * Field keys are the schema's property keys; the model sees "x-name" when a
 * field has one. opts may be NULL (auto mode, argmax, no threshold).
 * Errors: TL_ERR_SCHEMA with the JSON path (/properties/NAME/...) for a bad
 * schema; TL_ERR_INVALID for bad options; backend errors as they come. */
tl_status tl_decide_json(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                         const tl_decide_opts *opts, json_t **result, tl_error *err);

/* As tl_decide_json, with answers already known: given is an object {field: value}
 * (or NULL). Those fields are not decided; they are rendered as answered turns,
 * in given's order, between the context and the decisions (exactly what auto
 * mode carries into a later wave), and reported with probability 1. An open
 * field may be given any string of at most maxLength characters (rendered as
 * if the model had written it; x-domain-from fields grow from it). */
tl_status tl_decide_given_json(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                               const json_t *given, const tl_decide_opts *opts, json_t **result, tl_error *err);

/* The one core behind both: *result (optional) gets the JSON document,
 * *decision (optional) the typed view of it (decision.c). */
tl_status tl_decide_run(tl_backend *b, const char *context, size_t context_len, const json_t *schema,
                        const json_t *given, const tl_decide_opts *opts, json_t **result, tl_decision **decision,
                        tl_error *err);

/* The typed tl_decision over a result document (decision.c): takes its own
 * reference to result; reads each field's key, path, name and kind from
 * schema (the parsed one the result was decided with). */
struct tl_dschema;
tl_status tl_decision_wrap(json_t *result, const struct tl_dschema *schema, tl_decision **out, tl_error *err);

/* Validates schema without a model (for early 4xx answers): the same
 * TL_ERR_SCHEMA errors tl_decide gives, except those that need the tokenizer
 * (more values than the tokenizer has labels). */
tl_status tl_decide_check_schema(const json_t *schema, tl_error *err);
/* The same under opts' lenient / strict (opts may be NULL). */
tl_status tl_decide_check_schema_opts(const json_t *schema, const tl_decide_opts *opts, tl_error *err);

#endif
