/* openai_decisions.c: OpenAI's Decisions API (POST /v1/decisions), as the
 * official `openai` npm SDK (7.55.0, src/resources/decisions.ts) types it,
 * answered from any model through tl_decide.
 *
 * The input (a string, or messages / tool items rendered as a transcript) is
 * the shared context; the questions become one decision schema, one property
 * per question (q0, q1, ...) shown to the model under the neutral x-name
 * "answer", decided in batch mode: the input is computed once and every
 * question is a branch that sees only the input and itself. Questions are
 * independent, so their order and names never change an answer.
 *
 * Mapping: predicate -> boolean (probability = P(true)); choice -> a string
 * enum of the values (a boolean value is shown as true/false, or, when a
 * string with the same text is also offered, as "true (boolean)"), or a
 * boolean field when every value is a boolean; score -> a string enum of the
 * level labels, value = the level's index (0 = first level). Answers carry
 * the extension field label_mass: the full-vocabulary probability of the
 * question's labels at the answer position. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"
#include "typellm/common.h"
#include "typellm/util.h"

/* ---- validation ------------------------------------------------------------ */


/* Appends one content part (or a plain string) to out. where names it
 * ("input[2].content[0]"). Images are refused: typellm's models read text. */
static bool append_part(const json_t *part, const char *where, bool assistant, tl_strbuf *out, parse_failure *f) {
    if (json_is_string(part)) {
        tl_strbuf_append(out, json_string_value(part), json_string_length(part));
        return true;
    }
    if (!json_is_object(part)) {
        fail_openai(f, 400, where, "invalid_type", "%s: expected a string or a content part object", where);
        return false;
    }
    const char *t = json_string_value(json_object_get(part, "type"));
    if (!t) {
        fail_openai(f, 400, where, "invalid_type", "%s.type: required (input_text, input_json, ...)", where);
        return false;
    }
    const char *key = !strcmp(t, "input_text") || !strcmp(t, "output_text") ? "text"
                      : !strcmp(t, "refusal") && assistant                   ? "refusal"
                                                                             : NULL;
    if (key) {
        const json_t *v = json_object_get(part, key);
        if (!json_is_string(v)) {
            fail_openai(f, 400, where, "invalid_type", "%s.%s: required string", where, key);
            return false;
        }
        tl_strbuf_append(out, json_string_value(v), json_string_length(v));
        return true;
    }
    if (!strcmp(t, "input_json")) {
        const json_t *d = json_object_get(part, "data");
        if (!json_is_object(d) && !json_is_array(d)) {
            fail_openai(f, 400, where, "invalid_type", "%s.data: must be an object or an array", where);
            return false;
        }
        char *txt = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
        if (txt)
            tl_strbuf_puts(out, txt);
        free(txt);
        return true;
    }
    if (!strcmp(t, "input_image")) {
        fail_openai(f, 400, where, "unsupported_content",
                 "%s: image parts are not supported: typellm serves a text-only model", where);
        return false;
    }
    fail_openai(f, 400, where, "invalid_value", "%s.type: unknown content part type '%s'", where, t);
    return false;
}

/* content: a string or an array of parts, joined by newlines. */
static bool append_content(const json_t *content, const char *where, bool assistant, tl_strbuf *out,
                           parse_failure *f) {
    if (json_is_string(content))
        return append_part(content, where, assistant, out, f);
    if (!json_is_array(content)) {
        fail_openai(f, 400, where, "invalid_type", "%s: must be a string or an array of content parts", where);
        return false;
    }
    char pw[200];
    for (size_t i = 0; i < json_array_size(content); i++) {
        if (i)
            tl_strbuf_putc(out, '\n');
        snprintf(pw, sizeof pw, "%s[%zu]", where, i);
        if (!append_part(json_array_get(content, i), pw, assistant, out, f))
            return false;
    }
    return true;
}

static const char *get_str(const json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

static bool call_id_known(const json_t *items, size_t upto, const char *call_type, const char *id) {
    for (size_t k = 0; k < upto; k++) {
        const json_t *it = json_array_get(items, k);
        const char *t = get_str(it, "type");
        const char *c = get_str(it, "call_id");
        if (t && c && !strcmp(t, call_type) && !strcmp(c, id))
            return true;
    }
    return false;
}

/* The input as the context text: a string as it is; a lone user message as
 * its text; otherwise a transcript, one block per item ("User: ...",
 * "Function call NAME (call ID): ARGS", ...) separated by blank lines. */
static bool render_input(const json_t *input, tl_strbuf *out, parse_failure *f) {
    if (json_is_string(input)) {
        tl_strbuf_append(out, json_string_value(input), json_string_length(input));
        return true;
    }
    if (!json_is_array(input)) {
        fail_openai(f, 400, "input", "invalid_type", "input: must be a string or an array of input items");
        return false;
    }
    size_t n = json_array_size(input);
    if (n == 0) {
        fail_openai(f, 400, "input", "empty_array", "input: the array is empty");
        return false;
    }
    char w[160], w2[200];
    for (size_t i = 0; i < n; i++) {
        const json_t *it = json_array_get(input, i);
        snprintf(w, sizeof w, "input[%zu]", i);
        if (!json_is_object(it)) {
            fail_openai(f, 400, w, "invalid_type", "%s: must be an object", w);
            return false;
        }
        const char *type = get_str(it, "type");
        const char *role = get_str(it, "role");
        if (json_object_get(it, "type") && !type) {
            fail_openai(f, 400, w, "invalid_type", "%s.type: must be a string", w);
            return false;
        }
        if (i)
            tl_strbuf_puts(out, "\n\n");
        if (!type || !strcmp(type, "message")) {
            static const char *roles[][2] = {
                {"user", "User"}, {"system", "System"}, {"developer", "Developer"}, {"assistant", "Assistant"}};
            const char *shown = NULL;
            for (size_t r = 0; r < 4 && role; r++)
                if (!strcmp(role, roles[r][0]))
                    shown = roles[r][1];
            if (!shown) {
                fail_openai(f, 400, w, "invalid_value", "%s.role: must be 'user', 'system', 'developer' or 'assistant'", w);
                return false;
            }
            const json_t *content = json_object_get(it, "content");
            snprintf(w2, sizeof w2, "%s.content", w);
            if (!content) {
                fail_openai(f, 400, w2, "missing_required_parameter", "%s: required", w2);
                return false;
            }
            if (!(n == 1 && !strcmp(role, "user")))
                tl_strbuf_printf(out, "%s: ", shown);
            if (!append_content(content, w2, !strcmp(role, "assistant"), out, f))
                return false;
            continue;
        }
        bool is_call = !strcmp(type, "function_call") || !strcmp(type, "custom_tool_call");
        bool is_output = !strcmp(type, "function_call_output") || !strcmp(type, "custom_tool_call_output");
        if (!is_call && !is_output) {
            fail_openai(f, 400, w, "invalid_value", "%s.type: unknown input item type '%s'", w, type);
            return false;
        }
        bool function = !strncmp(type, "function", 8);
        const char *call_id = get_str(it, "call_id");
        if (!call_id) {
            snprintf(w2, sizeof w2, "%s.call_id", w);
            fail_openai(f, 400, w2, "missing_required_parameter", "%s: required string", w2);
            return false;
        }
        if (is_call) {
            const char *name = get_str(it, "name");
            const char *body_key = function ? "arguments" : "input";
            const char *body = get_str(it, body_key);
            if (!name || !body) {
                snprintf(w2, sizeof w2, "%s.%s", w, name ? body_key : "name");
                fail_openai(f, 400, w2, "missing_required_parameter", "%s: required string", w2);
                return false;
            }
            tl_strbuf_printf(out, "%s %s (call %s): %s", function ? "Function call" : "Tool call", name, call_id, body);
        } else {
            const char *call_type = function ? "function_call" : "custom_tool_call";
            if (!call_id_known(input, i, call_type, call_id)) {
                snprintf(w2, sizeof w2, "%s.call_id", w);
                fail_openai(f, 400, w2, "invalid_value", "%s: no earlier %s has call_id '%s'", w2, call_type, call_id);
                return false;
            }
            tl_strbuf_printf(out, "%s (call %s): ", function ? "Function output" : "Tool output", call_id);
            snprintf(w2, sizeof w2, "%s.output", w);
            const json_t *output = json_object_get(it, "output");
            if (!output) {
                fail_openai(f, 400, w2, "missing_required_parameter", "%s: required", w2);
                return false;
            }
            if (!append_content(output, w2, false, out, f))
                return false;
        }
    }
    return true;
}

/* Checks o's keys against allowed (NULL-terminated); 400 naming the first other. */
static bool only_known_keys(const json_t *o, const char *const *allowed, const char *where, parse_failure *f) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(allowed[i], key);
        if (!ok) {
            char p[300];
            snprintf(p, sizeof p, "%s%s%s", where, *where ? "." : "", key);
            fail_openai(f, 400, p, "unknown_parameter", "Unknown parameter: '%s'", p);
            return false;
        }
    }
    return true;
}

static bool parse_options(const json_t *q, od_question *out, const char *where, parse_failure *f) {
    bool choice = out->type == OD_CHOICE;
    const char *key = choice ? "choices" : "levels";
    char w[200];
    snprintf(w, sizeof w, "%s.%s", where, key);
    const json_t *a = json_object_get(q, key);
    if (!a) {
        fail_openai(f, 400, w, "missing_required_parameter", "%s: required for %s questions", w, choice ? "choice" : "score");
        return false;
    }
    if (!json_is_array(a)) {
        fail_openai(f, 400, w, "invalid_type", "%s: must be an array", w);
        return false;
    }
    size_t n = json_array_size(a);
    if (n < 2 || n > OD_MAX_OPTIONS) {
        fail_openai(f, 400, w, n < 2 ? "array_below_min_length" : "array_above_max_length",
                 "%s: %zu %s; a question needs 2 to %d", w, n, key, OD_MAX_OPTIONS);
        return false;
    }
    static const char *const choice_keys[] = {"value", "description", NULL};
    static const char *const level_keys[] = {"label", "description", NULL};
    char e[240];
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(a, i);
        snprintf(e, sizeof e, "%s[%zu]", w, i);
        if (!json_is_object(o)) {
            fail_openai(f, 400, e, "invalid_type", "%s: must be an object", e);
            return false;
        }
        if (!only_known_keys(o, choice ? choice_keys : level_keys, e, f))
            return false;
        const json_t *v = json_object_get(o, choice ? "value" : "label");
        if (choice ? !(json_is_string(v) || json_is_boolean(v)) : !json_is_string(v)) {
            fail_openai(f, 400, e, v ? "invalid_type" : "missing_required_parameter", "%s.%s: required %s", e,
                     choice ? "value" : "label", choice ? "string or boolean" : "string");
            return false;
        }
        const json_t *d = json_object_get(o, "description");
        if (d && !json_is_string(d) && !json_is_null(d)) {
            fail_openai(f, 400, e, "invalid_type", "%s.description: must be a string", e);
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            const json_t *u = json_object_get(json_array_get(a, j), choice ? "value" : "label");
            if (json_equal((json_t *)u, (json_t *)v)) {
                fail_openai(f, 400, e, "invalid_value", "%s: duplicate of %s[%zu]; each %s must be unique", e, w, j,
                         choice ? "choice" : "level label");
                return false;
            }
        }
    }
    out->options = a;
    out->n_options = n;
    return true;
}

static bool parse_question(const json_t *q, size_t i, od_question *out, parse_failure *f) {
    char w[64];
    snprintf(w, sizeof w, "questions[%zu]", i);
    if (!json_is_object(q)) {
        fail_openai(f, 400, w, "invalid_type", "%s: must be an object", w);
        return false;
    }
    const char *t = get_str(q, "type");
    if (!t) {
        fail_openai(f, 400, w, "missing_required_parameter", "%s.type: required ('predicate', 'choice' or 'score')", w);
        return false;
    }
    static const char *const pred_keys[] = {"type", "instructions", "name", NULL};
    static const char *const choice_keys[] = {"type", "instructions", "name", "choices", NULL};
    static const char *const score_keys[] = {"type", "instructions", "name", "levels", NULL};
    const char *const *keys;
    if (!strcmp(t, "predicate"))
        out->type = OD_PREDICATE, keys = pred_keys;
    else if (!strcmp(t, "choice"))
        out->type = OD_CHOICE, keys = choice_keys;
    else if (!strcmp(t, "score"))
        out->type = OD_SCORE, keys = score_keys;
    else {
        fail_openai(f, 400, w, "invalid_value", "%s.type: '%s' is not one of 'predicate', 'choice', 'score'", w, t);
        return false;
    }
    if (!only_known_keys(q, keys, w, f))
        return false;
    const json_t *name = json_object_get(q, "name");
    if (name && !json_is_string(name) && !json_is_null(name)) {
        fail_openai(f, 400, w, "invalid_type", "%s.name: must be a string", w);
        return false;
    }
    if (json_is_string(name))
        out->name = strdup(json_string_value(name));
    const json_t *instr = json_object_get(q, "instructions");
    char wi[96];
    snprintf(wi, sizeof wi, "%s.instructions", w);
    if (!instr) {
        fail_openai(f, 400, wi, "missing_required_parameter", "%s: required", wi);
        return false;
    }
    tl_strbuf sb = TL_STRBUF_INIT;
    bool ok = append_content(instr, wi, false, &sb, f);
    out->instructions = ok ? tl_strbuf_detach(&sb) : NULL;
    tl_strbuf_free(&sb);
    if (!ok)
        return false;
    if (out->type == OD_PREDICATE) {
        out->n_options = 2;
        return true;
    }
    return parse_options(q, out, w, f);
}

bool od_request_parse(const char *body, size_t len, int max_questions, od_request *out, parse_failure *f) {
    memset(out, 0, sizeof *out);
    f->status = 0;
    f->body = NULL;
    tl_strbuf input = TL_STRBUF_INIT;
    json_t *root = parse_json_body_openai(body, len, f);
    if (!root)
        return false;
    out->root = root;
    if (!json_is_object(root)) {
        fail_openai(f, 400, NULL, "invalid_type", "the request body must be a JSON object");
        goto bad;
    }
    static const char *const top_keys[] = {"model", "input", "questions", "prompt_cache_key", "prompt_cache_options",
                                           "safety_identifier", "return_prompt_token_ids",
                                           /* extensions: corrected distributions */
                                           "debias", "calibrate", "content_free", "think", NULL};
    if (!only_known_keys(root, top_keys, "", f))
        goto bad;
    const json_t *model = json_object_get(root, "model");
    if (!json_is_string(model)) {
        fail_openai(f, 400, "model", model ? "invalid_type" : "missing_required_parameter", "model: required string");
        goto bad;
    }
    out->model = strdup(json_string_value(model));
    static const char *const str_or_null[] = {"prompt_cache_key", "safety_identifier"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(root, str_or_null[i]);
        if (v && !json_is_string(v) && !json_is_null(v)) {
            fail_openai(f, 400, str_or_null[i], "invalid_type", "%s: must be a string", str_or_null[i]);
            goto bad;
        }
    }
    const json_t *pco = json_object_get(root, "prompt_cache_options");
    if (pco && !json_is_object(pco) && !json_is_null(pco)) {
        fail_openai(f, 400, "prompt_cache_options", "invalid_type", "prompt_cache_options: must be an object");
        goto bad;
    }
    const json_t *rpt = json_object_get(root, "return_prompt_token_ids");
    if (rpt && !json_is_boolean(rpt)) {
        fail_openai(f, 400, "return_prompt_token_ids", "invalid_type", "return_prompt_token_ids: must be a boolean");
        goto bad;
    }
    out->return_prompt_token_ids = json_is_true(rpt);
    const char *ckey = NULL, *cmsg = NULL;
    if (!decide_corrections_parse(root, &out->corr, &ckey, &cmsg)) {
        fail_openai(f, 400, ckey, "invalid_value", "%s", cmsg);
        goto bad;
    }
    const json_t *in = json_object_get(root, "input");
    if (!in) {
        fail_openai(f, 400, "input", "missing_required_parameter", "input: required");
        goto bad;
    }
    if (!render_input(in, &input, f))
        goto bad;
    out->input_len = input.len;
    out->input = tl_strbuf_detach(&input);
    const json_t *qs = json_object_get(root, "questions");
    if (!json_is_array(qs)) {
        fail_openai(f, 400, "questions", qs ? "invalid_type" : "missing_required_parameter",
                 "questions: required array of 1 to %d questions", max_questions);
        goto bad;
    }
    size_t nq = json_array_size(qs);
    if (nq == 0 || nq > (size_t)max_questions) {
        fail_openai(f, 400, "questions", nq ? "array_above_max_length" : "array_below_min_length",
                 "questions: %zu questions; a request asks 1 to %d", nq, max_questions);
        goto bad;
    }
    out->questions = calloc(nq, sizeof *out->questions);
    if (!out->questions) {
        fail_openai(f, http_status_for(TL_ERR_NOMEM, HTTP_API_OPENAI), "questions", NULL, "out of memory");
        goto bad;
    }
    for (size_t i = 0; i < nq; i++) {
        out->n_questions++;
        if (!parse_question(json_array_get(qs, i), i, &out->questions[i], f))
            goto bad;
    }
    return true;
bad:
    tl_strbuf_free(&input);
    od_request_free(out);
    return false;
}

void od_request_free(od_request *r) {
    for (size_t i = 0; i < r->n_questions; i++) {
        free(r->questions[i].name);
        free(r->questions[i].instructions);
    }
    free(r->questions);
    free(r->input);
    free(r->model);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

/* ---- schema ------------------------------------------------------------------ */

/* True when a choice question's values are all booleans (-> a boolean field). */
static bool all_boolean(const od_question *q) {
    for (size_t i = 0; i < q->n_options; i++)
        if (!json_is_boolean(json_object_get(json_array_get(q->options, i), "value")))
            return false;
    return true;
}

/* The text option i is decided under (the key of its probability in
 * tl_decide's result). Strings as they are; booleans as true/false, or
 * "true (boolean)" when a string "true" is offered too. buf: 32 bytes. */
static const char *option_key(const od_question *q, size_t i, char *buf) {
    const json_t *o = json_array_get(q->options, i);
    const json_t *v = json_object_get(o, q->type == OD_CHOICE ? "value" : "label");
    if (json_is_string(v))
        return json_string_value(v);
    const char *t = json_is_true(v) ? "true" : "false";
    if (all_boolean(q))
        return t;
    for (size_t j = 0; j < q->n_options; j++) {
        const char *s = json_string_value(json_object_get(json_array_get(q->options, j), "value"));
        if (s && !strcmp(s, t)) {
            snprintf(buf, 32, "%s (boolean)", t);
            return buf;
        }
    }
    return t;
}

json_t *od_build_schema(const od_request *r) {
    json_t *props = json_object();
    char kb[32];
    for (size_t i = 0; i < r->n_questions; i++) {
        const od_question *q = &r->questions[i];
        json_t *field = json_object();
        json_object_set_new(field, "x-name", json_string("answer"));
        if (q->instructions && q->instructions[0])
            json_object_set_new(field, "question", json_string(q->instructions));
        if (q->type == OD_PREDICATE || (q->type == OD_CHOICE && all_boolean(q))) {
            json_object_set_new(field, "type", json_string("boolean"));
        } else {
            json_object_set_new(field, "type", json_string("string"));
        }
        if (q->type != OD_PREDICATE) {
            json_t *en = json_array(), *desc = json_object();
            bool boolean = q->type == OD_CHOICE && all_boolean(q);
            for (size_t k = 0; k < q->n_options; k++) {
                const json_t *o = json_array_get(q->options, k);
                const char *key = option_key(q, k, kb);
                json_array_append_new(en, boolean ? json_incref(json_object_get(o, "value")) : json_string(key));
                const char *d = get_str(o, "description");
                if (d && *d)
                    json_object_set_new(desc, key, json_string(d));
            }
            json_object_set_new(field, "enum", en);
            if (json_object_size(desc))
                json_object_set_new(field, "x-descriptions", desc);
            else
                json_decref(desc);
        }
        char key[32];
        snprintf(key, sizeof key, "q%zu", i);
        json_object_set_new(props, key, field);
    }
    return json_pack("{s:s,s:o}", "type", "object", "properties", props);
}

/* ---- answers ----------------------------------------------------------------- */

double decision_label_mass(const json_t *field) {
    const json_t *m = json_object_get(field, "label_mass");
    if (json_is_number(m))
        return json_number_value(m);
    double mass = 0;
    const json_t *cands = json_object_get(field, "candidates");
    for (size_t i = 0; i < json_array_size(cands); i++) {
        const json_t *lp = json_object_get(json_array_get(cands, i), "logprob");
        if (json_is_number(lp))
            mass += exp(json_number_value(lp));
    }
    return mass > 1 ? 1 : mass;
}

bool decision_read_probs(const json_t *field, const char *const *keys, size_t n, double *p, tl_error *err) {
    const json_t *probs = json_object_get(field, "probabilities");
    if (!json_is_object(probs))
        return tl_error_set(err, TL_ERR_INTERNAL, "decide result has no probabilities object"), false;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(probs, keys[i]);
        double x = json_is_number(v) ? json_number_value(v) : 0.0;
        if (!isfinite(x) || x < 0)
            x = 0;
        p[i] = x;
        sum += x;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = sum > 0 ? p[i] / sum : 1.0 / (double)n;
    return true;
}

bool decision_question_answer(const json_t *result, size_t i, const char *const *keys, size_t n, double *p,
                              question_answer *qa, tl_error *err) {
    char fkey[32];
    snprintf(fkey, sizeof fkey, "q%zu", i);
    qa->field = json_object_get(json_object_get(result, "fields"), fkey);
    if (!qa->field)
        return tl_error_set(err, TL_ERR_INTERNAL, "decide result lacks field %s", fkey), false;
    if (!decision_read_probs(qa->field, keys, n, p, err))
        return false;
    qa->best = 0;
    qa->mean = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k] > p[qa->best])
            qa->best = k;
        qa->mean += (double)k * p[k];
    }
    return true;
}

/* prompt_token_ids and label_token_ids (in the answer's option order) of one
 * field (return_prompt_token_ids). */
static void add_token_ids(json_t *a, const json_t *field, const od_question *q, const char *const *keys) {
    const json_t *trace = json_object_get(field, "trace");
    json_object_set(a, "prompt_token_ids", json_object_get(trace, "ids") ? json_object_get(trace, "ids") : json_null());
    json_t *labels = json_array();
    const json_t *cands = json_object_get(field, "candidates");
    for (size_t k = 0; k < q->n_options; k++) {
        const json_t *tok = NULL;
        for (size_t i = 0; i < json_array_size(cands) && !tok; i++) {
            const json_t *c = json_array_get(cands, i), *v = json_object_get(c, "value");
            bool same = json_is_boolean(v) ? !strcmp(keys[k], json_is_true(v) ? "true" : "false")
                                           : json_is_string(v) && !strcmp(keys[k], json_string_value(v));
            if (same)
                tok = json_object_get(c, "token");
        }
        json_array_append_new(labels, tok ? json_incref((json_t *)tok) : json_null());
    }
    json_object_set_new(a, "label_token_ids", labels);
}

/* Extension, when a correction was asked: the model's own distribution beside
 * the corrected one, in the answer's shape (predicate: raw_probability;
 * choice, score: raw_probabilities in option order). */
static void add_raw_probabilities(json_t *a, const json_t *field, const od_question *q, const char *const *keys,
                                  size_t n) {
    const json_t *raw = json_object_get(field, "raw_probabilities");
    double p[OD_MAX_OPTIONS], sum = 0;
    for (size_t k = 0; k < n; k++) {
        const json_t *v = json_object_get(raw, keys[k]);
        sum += p[k] = json_is_number(v) ? json_number_value(v) : 0.0;
    }
    for (size_t k = 0; k < n; k++)
        p[k] = sum > 0 ? p[k] / sum : 1.0 / (double)n;
    if (q->type == OD_PREDICATE) {
        json_object_set_new(a, "raw_probability", json_real(p[0]));
        return;
    }
    json_t *arr = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(arr, json_real(p[k]));
    json_object_set_new(a, "raw_probabilities", arr);
}

bool od_build_answers(const od_request *r, const json_t *result, json_t **answers_out, tl_error *err) {
    json_t *answers = json_array();
    double p[OD_MAX_OPTIONS];
    const char *keys[OD_MAX_OPTIONS];
    char kbuf[OD_MAX_OPTIONS][32];
    for (size_t i = 0; i < r->n_questions; i++) {
        const od_question *q = &r->questions[i];
        size_t n = q->type == OD_PREDICATE ? 2 : q->n_options;
        if (q->type == OD_PREDICATE) {
            keys[0] = "true";
            keys[1] = "false";
        } else {
            for (size_t k = 0; k < n; k++)
                keys[k] = option_key(q, k, kbuf[k]);
        }
        question_answer qa;
        if (!decision_question_answer(result, i, keys, n, p, &qa, err))
            goto fail;
        json_t *name = q->name ? json_string(q->name) : json_null();
        json_t *a;
        if (q->type == OD_PREDICATE) {
            a = json_pack("{s:s,s:o,s:f}", "type", "predicate", "name", name, "probability", p[0]);
        } else {
            json_t *probs = json_array();
            for (size_t k = 0; k < n; k++) {
                const json_t *o = json_array_get(q->options, k);
                if (q->type == OD_CHOICE)
                    json_array_append_new(probs, json_pack("{s:O,s:f}", "value", json_object_get(o, "value"),
                                                           "probability", p[k]));
                else
                    json_array_append_new(probs, json_pack("{s:O,s:I,s:f}", "label", json_object_get(o, "label"),
                                                           "value", (json_int_t)k, "probability", p[k]));
            }
            if (q->type == OD_CHOICE)
                a = json_pack("{s:s,s:o,s:O,s:f,s:o}", "type", "choice", "name", name, "choice",
                              json_object_get(json_array_get(q->options, qa.best), "value"), "confidence",
                              so_choice_confidence(p, n), "probabilities", probs);
            else
                a = json_pack("{s:s,s:o,s:f,s:f,s:o}", "type", "score", "name", name, "score", qa.mean, "confidence",
                              so_score_confidence(p, n), "probabilities", probs);
        }
        json_object_set_new(a, "label_mass", json_real(decision_label_mass(qa.field)));
        if (json_object_get(qa.field, "raw_probabilities"))
            add_raw_probabilities(a, qa.field, q, keys, n);
        if (r->return_prompt_token_ids)
            add_token_ids(a, qa.field, q, keys);
        json_array_append_new(answers, a);
    }
    *answers_out = answers;
    return true;
fail:
    json_decref(answers);
    return false;
}

/* ---- handler ------------------------------------------------------------------ */

void handle_decisions(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    od_request dr;
    parse_failure f;
    if (!od_request_parse(req->body, req->body_len, s->od_max_questions, &dr, &f)) {
        reply_json(r, f.status, f.body);
        return;
    }
    json_t *schema = NULL, *result = NULL, *answers = NULL;
    tl_error err = {0};
    const char *served = s->model_name;
    if (strcmp(dr.model, served)) {
        reply_openai_error(r, 404, "invalid_request_error", "model", "model_not_found",
                           "The model '%s' does not exist; this server serves '%s' (GET /v1/models)", dr.model, served);
        goto out;
    }
    tl_status st = server_check_prompt(s, "input", dr.input, dr.input_len, &err);
    if (st != TL_OK) {
        reply_openai_status_error(r, st, "input", err.msg);
        goto out;
    }
    if (!tl_server_slot_acquire(s)) {
        r->retry_after_s = 1;
        reply_openai_error(r, 429, "rate_limit_error", NULL, "rate_limit_exceeded",
                           "the server is busy (%d requests running); retry shortly", s->p.max_queue);
        goto out;
    }
    schema = od_build_schema(&dr);
    tl_decide_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.mode = "batch";
    opts.trace = dr.return_prompt_token_ids;
    decide_corrections_apply(&dr.corr, &opts);
    st = server_decide(s, req, dr.input, dr.input_len, schema, &opts, &result, &err);
    tl_server_slot_release(s);
    if (st != TL_OK) {
        /* the input past the context is the input's fault, anything else the questions' */
        reply_openai_status_error(r, st, st == TL_ERR_LIMIT ? "input" : "questions", err.msg);
        goto out;
    }
    if (!od_build_answers(&dr, result, &answers, &err)) {
        reply_openai_status_error(r, err.code, NULL, err.msg);
        goto out;
    }
    const json_t *u = json_object_get(result, "usage");
    json_int_t in_tok = json_integer_value(json_object_get(u, "prompt_tokens"));
    json_int_t cached = json_integer_value(json_object_get(u, "cached_tokens"));
    json_int_t computed = json_integer_value(json_object_get(u, "computed_tokens"));
    json_t *reply = json_pack("{s:o,s:o,s:{s:I,s:{s:I,s:I},s:i,s:{s:i},s:I}}", "answers", answers, "model",
                              json_string_lossy(served, strlen(served)), "usage", "input_tokens", in_tok,
                              "input_tokens_details", "cached_tokens", cached, "cache_write_tokens", computed,
                              "output_tokens", 0, "output_tokens_details", "reasoning_tokens", 0, "total_tokens",
                              in_tok);
    /* think-then-decide: the reasoning written is output */
    json_int_t reasoning = json_integer_value(json_object_get(u, "reasoning_tokens"));
    if (reasoning) {
        json_t *ru = json_object_get(reply, "usage");
        json_object_set_new(ru, "output_tokens", json_integer(reasoning));
        json_object_set_new(json_object_get(ru, "output_tokens_details"), "reasoning_tokens", json_integer(reasoning));
        json_object_set_new(ru, "total_tokens", json_integer(in_tok + reasoning));
    }
    answers = NULL;
    reply_json(r, 200, reply);
out:
    json_decref(answers);
    json_decref(result);
    json_decref(schema);
    od_request_free(&dr);
}
