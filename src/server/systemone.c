/* systemone.c: the System One decision API (POST /v1/systemone, GET
 * /v1/models), answered from any model through tl_decide.
 *
 * A request's questions become one decision schema (one property per
 * question, shown to the model under the neutral x-name "answer" so the
 * caller's ids never reach it) decided in batch mode: the state is the shared
 * context, computed once, and each question is a branch that sees only the
 * state and itself. Answers are then reshaped into TypeSafe's wire format
 * with its confidence formulas. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"
#include "typellm/common.h"
#include "typellm/util.h"

/* ---- validation ------------------------------------------------------------ */

static json_t *loc2(const char *a, const char *b) { return json_pack("[s,s]", a, b); }
static json_t *loc_q(const char *id, const char *field) {
    return field ? json_pack("[s,s,s,s]", "body", "questions", id, field) : json_pack("[s,s,s]", "body", "questions", id);
}

static void fail_detail(parse_failure *f, int status, json_t *loc, const char *type, const char *msg) {
    f->status = status;
    f->body = json_pack("{s:[{s:o,s:o,s:s}]}", "detail", "loc", loc ? loc : json_array(), "msg",
                        json_string_lossy(msg, strlen(msg)), "type", type);
}

/* A string, or an object/array compacted to JSON text (key order kept). */
static char *text_or_compact(const json_t *v) {
    if (json_is_string(v))
        return strndup(json_string_value(v), json_string_length(v));
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* The SDKs' EntryType: string, object, array or null (numbers and booleans are not). */
static bool is_entry(const json_t *v) {
    return json_is_null(v) || json_is_string(v) || json_is_object(v) || json_is_array(v);
}

/* A description as the model reads it: strings as they are, objects/arrays
 * compacted; NULL for null. Caller frees. */
static char *description_text(const json_t *v) { return json_is_null(v) || !v ? NULL : text_or_compact(v); }

static bool parse_question(const char *id, json_t *q, so_question *out, parse_failure *f) {
    char msg[300];
    if (!json_is_object(q)) {
        fail_detail(f, 422, loc_q(id, NULL), "dict_type", "Input should be a valid dictionary");
        return false;
    }
    json_t *type = json_object_get(q, "type");
    if (!type) {
        fail_detail(f, 422, loc_q(id, "type"), "missing", "Field required");
        return false;
    }
    const char *t = json_string_value(type);
    if (t && !strcmp(t, "noul"))
        out->type = SO_NOUL;
    else if (t && !strcmp(t, "choice"))
        out->type = SO_CHOICE;
    else if (t && !strcmp(t, "score"))
        out->type = SO_SCORE;
    else {
        fail_detail(f, 422, loc_q(id, "type"), "literal_error", "Input should be 'noul', 'choice' or 'score'");
        return false;
    }
    json_t *instr = json_object_get(q, "instructions");
    if (instr && !json_is_null(instr) && !json_is_string(instr) && !json_is_object(instr) && !json_is_array(instr)) {
        fail_detail(f, 422, loc_q(id, "instructions"), "string_type",
                    "instructions must be a string, an object or an array");
        return false;
    }
    out->instructions = (instr && !json_is_null(instr)) ? text_or_compact(instr) : strdup("");
    json_t *crit = json_object_get(q, "criteria");
    if (crit && json_is_null(crit))
        crit = NULL;
    out->criteria = crit;
    switch (out->type) {
    case SO_NOUL: {
        out->n_options = 2;
        if (!crit)
            return true;
        if (!json_is_object(crit)) {
            fail_detail(f, 422, loc_q(id, "criteria"), "dict_type",
                        "noul criteria must be an object {\"true\": description, \"false\": description}");
            return false;
        }
        const char *key;
        json_t *v;
        json_object_foreach(crit, key, v) {
            if (strcmp(key, "true") && strcmp(key, "false")) {
                json_t *l = loc_q(id, "criteria");
                json_array_append_new(l, json_string(key));
                fail_detail(f, 422, l, "extra_forbidden", "noul criteria keys are \"true\" and \"false\"");
                return false;
            }
            if (!is_entry(v)) {
                json_t *l = loc_q(id, "criteria");
                json_array_append_new(l, json_string(key));
                fail_detail(f, 422, l, "string_type", "a criterion must be a string, an object, an array or null");
                return false;
            }
        }
        return true;
    }
    case SO_CHOICE: {
        if (!crit) {
            fail_detail(f, 422, loc_q(id, "criteria"), "missing", "choice questions need criteria {option: description}");
            return false;
        }
        if (!json_is_object(crit)) {
            fail_detail(f, 422, loc_q(id, "criteria"), "dict_type", "choice criteria must be an object {option: description}");
            return false;
        }
        size_t n = json_object_size(crit);
        if (n < 2 || n > 255) {
            snprintf(msg, sizeof msg, "choice criteria need 2 to 255 options, got %zu", n);
            fail_detail(f, 422, loc_q(id, "criteria"), n < 2 ? "too_short" : "too_long", msg);
            return false;
        }
        const char *key;
        json_t *v;
        json_object_foreach(crit, key, v) {
            if (!is_entry(v)) {
                json_t *l = loc_q(id, "criteria");
                json_array_append_new(l, json_string(key));
                fail_detail(f, 422, l, "string_type", "an option's description must be a string, an object, an array or null");
                return false;
            }
        }
        out->n_options = n;
        return true;
    }
    case SO_SCORE: {
        if (!crit) {
            fail_detail(f, 422, loc_q(id, "criteria"), "missing", "score questions need criteria [level descriptions, lowest first]");
            return false;
        }
        if (!json_is_array(crit)) {
            fail_detail(f, 422, loc_q(id, "criteria"), "list_type",
                        "score criteria must be an array of level descriptions, lowest first");
            return false;
        }
        size_t n = json_array_size(crit);
        if (n < 2 || n > 10) {
            snprintf(msg, sizeof msg, "score criteria need 2 to 10 levels, got %zu", n);
            fail_detail(f, 422, loc_q(id, "criteria"), n < 2 ? "too_short" : "too_long", msg);
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (!is_entry(json_array_get(crit, i))) {
                json_t *l = loc_q(id, "criteria");
                json_array_append_new(l, json_integer((json_int_t)i));
                fail_detail(f, 422, l, "string_type", "a level description must be a string, an object, an array or null");
                return false;
            }
        }
        out->n_options = n;
        return true;
    }
    }
    return false;
}

bool so_request_parse(const char *body, size_t len, int max_questions, so_request *out, parse_failure *f) {
    memset(out, 0, sizeof *out);
    f->status = 0;
    f->body = NULL;
    json_t *root = parse_json_body(body, len, true, f);
    if (!root)
        return false;
    out->root = root;
    if (!json_is_object(root)) {
        fail_detail(f, 422, json_pack("[s]", "body"), "dict_type", "the body must be a JSON object");
        goto bad;
    }
    json_t *state = json_object_get(root, "state");
    if (!state) {
        fail_detail(f, 422, loc2("body", "state"), "missing", "Field required");
        goto bad;
    }
    if (!json_is_string(state) && !json_is_object(state) && !json_is_array(state)) {
        fail_detail(f, 422, loc2("body", "state"), "string_type", "state must be a string, an object or an array");
        goto bad;
    }
    out->state = text_or_compact(state);
    out->state_len = out->state ? strlen(out->state) : 0;
    if (json_is_string(state))
        out->state_len = json_string_length(state); /* may hold NULs */
    json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) {
        fail_detail(f, 422, loc2("body", "model"), "string_type", "model must be a string");
        goto bad;
    }
    if (json_is_string(model))
        out->model = strdup(json_string_value(model));
    json_t *qs = json_object_get(root, "questions");
    if (!qs) {
        fail_detail(f, 422, loc2("body", "questions"), "missing", "Field required");
        goto bad;
    }
    if (!json_is_object(qs)) {
        fail_detail(f, 422, loc2("body", "questions"), "dict_type", "questions must be an object {id: question}");
        goto bad;
    }
    size_t nq = json_object_size(qs);
    if (nq == 0) {
        fail_detail(f, 422, loc2("body", "questions"), "too_short", "at least one question is required");
        goto bad;
    }
    if (max_questions > 0 && nq > (size_t)max_questions) {
        char msg[200];
        snprintf(msg, sizeof msg, "%zu questions exceed this server's limit of %d per request", nq, max_questions);
        fail_detail(f, 422, loc2("body", "questions"), "too_long", msg);
        goto bad;
    }
    out->questions = calloc(nq, sizeof *out->questions);
    if (!out->questions) {
        fail_detail(f, 413, loc2("body", "questions"), "too_long", "out of memory");
        goto bad;
    }
    const char *id;
    json_t *q;
    json_object_foreach(qs, id, q) {
        so_question *sq = &out->questions[out->n_questions++];
        sq->id = strdup(id);
        if (!parse_question(id, q, sq, f))
            goto bad;
    }
    return true;
bad:
    so_request_free(out);
    return false;
}

void so_request_free(so_request *r) {
    for (size_t i = 0; i < r->n_questions; i++) {
        free(r->questions[i].id);
        free(r->questions[i].instructions);
    }
    free(r->questions);
    free(r->state);
    free(r->model);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

/* ---- schema and answers ------------------------------------------------------ */

json_t *so_build_schema(const so_request *r) {
    json_t *props = json_object();
    for (size_t i = 0; i < r->n_questions; i++) {
        const so_question *q = &r->questions[i];
        json_t *field = json_object();
        json_t *desc = json_object();
        json_object_set_new(field, "x-name", json_string("answer"));
        if (q->instructions && q->instructions[0])
            json_object_set_new(field, "question", json_string(q->instructions));
        if (q->type == SO_NOUL) {
            json_object_set_new(field, "type", json_string("boolean"));
            const char *sides[2] = {"true", "false"};
            for (int k = 0; k < 2; k++) {
                char *d = q->criteria ? description_text(json_object_get(q->criteria, sides[k])) : NULL;
                if (d)
                    json_object_set_new(desc, sides[k], json_string(d));
                free(d);
            }
        } else if (q->type == SO_CHOICE) {
            json_object_set_new(field, "type", json_string("string"));
            json_t *en = json_array();
            const char *opt;
            json_t *d;
            json_object_foreach(q->criteria, opt, d) {
                json_array_append_new(en, json_string(opt));
                char *dt = description_text(d);
                if (dt)
                    json_object_set_new(desc, opt, json_string(dt));
                free(dt);
            }
            json_object_set_new(field, "enum", en);
        } else {
            json_object_set_new(field, "type", json_string("integer"));
            json_t *en = json_array();
            for (size_t l = 0; l < q->n_options; l++) {
                char key[24];
                snprintf(key, sizeof key, "%zu", l);
                json_array_append_new(en, json_integer((json_int_t)l));
                char *dt = description_text(json_array_get(q->criteria, l));
                if (dt)
                    json_object_set_new(desc, key, json_string(dt));
                free(dt);
            }
            json_object_set_new(field, "enum", en);
        }
        if (json_object_size(desc))
            json_object_set_new(field, "x-descriptions", desc);
        else
            json_decref(desc);
        char key[32];
        snprintf(key, sizeof key, "q%zu", i);
        json_object_set_new(props, key, field);
    }
    return json_pack("{s:s,s:o}", "type", "object", "properties", props);
}

double so_choice_confidence(const double *p, size_t n) {
    if (n < 2)
        return 1.0;
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        mx = p[i] > mx ? p[i] : mx;
    double inv = 1.0 / (double)n;
    double c = (mx - inv) / (1.0 - inv);
    return c < 0 ? 0 : (c > 1 ? 1 : c);
}

double so_score_confidence(const double *p, size_t n) {
    if (n < 2)
        return 1.0;
    size_t mode = 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] > p[mode])
            mode = i;
    double spread = 0, uniform = 0, mid = ((double)n - 1) / 2;
    for (size_t i = 0; i < n; i++) {
        spread += p[i] * fabs((double)i - (double)mode);
        uniform += fabs((double)i - mid);
    }
    uniform /= (double)n;
    double c = 1.0 - spread / uniform;
    return c < 0 ? 0 : (c > 1 ? 1 : c);
}

bool so_build_answers(const so_request *r, const json_t *result, json_t **answers_out, tl_error *err) {
    json_t *answers = json_object();
    double p[OD_MAX_OPTIONS];
    const char *keys[OD_MAX_OPTIONS];
    char levels[OD_MAX_OPTIONS][24];
    for (size_t i = 0; i < r->n_questions; i++) {
        const so_question *q = &r->questions[i];
        size_t n = 0;
        if (q->type == SO_NOUL) {
            keys[n++] = "true";
            keys[n++] = "false";
        } else if (q->type == SO_CHOICE) {
            const char *opt;
            json_t *d;
            json_object_foreach(q->criteria, opt, d) keys[n++] = opt;
        } else {
            for (; n < q->n_options; n++) {
                snprintf(levels[n], sizeof levels[n], "%zu", n);
                keys[n] = levels[n];
            }
        }
        question_answer qa;
        if (!decision_question_answer(result, i, keys, n, p, &qa, err))
            goto fail;
        json_t *a;
        if (q->type == SO_NOUL) {
            a = json_pack("{s:s,s:f}", "type", "noul", "noul", p[0]);
            json_object_set_new(answers, q->id, a);
            continue;
        }
        json_t *probs = json_object();
        for (size_t k = 0; k < n; k++)
            json_object_set_new(probs, keys[k], json_real(p[k]));
        if (q->type == SO_CHOICE) {
            a = json_pack("{s:s,s:s,s:o,s:f}", "type", "choice", "choice", keys[qa.best], "probabilities", probs,
                          "confidence", so_choice_confidence(p, n));
        } else {
            /* A level sent as null ("undescribed", as the SDK's request types
             * allow) comes back as "": a legend value is never null, since the
             * SDK's answer parser refuses one (docs/server.md). */
            json_t *legend = json_object();
            for (size_t k = 0; k < n; k++) {
                json_t *desc = json_array_get(q->criteria, k);
                json_object_set_new(legend, keys[k], json_is_null(desc) ? json_string("") : json_incref(desc));
            }
            a = json_pack("{s:s,s:f,s:o,s:o,s:f}", "type", "score", "score", qa.mean, "legend", legend,
                          "probabilities", probs, "confidence", so_score_confidence(p, n));
        }
        json_object_set_new(answers, q->id, a);
    }
    *answers_out = answers;
    return true;
fail:
    json_decref(answers);
    return false;
}

/* ---- handlers ----------------------------------------------------------------- */

/* OpenAI's list shape (object, data[] with id/object/created/owned_by), plus
 * System One's "models" array (name, description, release_date), which its
 * SDKs read: one body both kinds of client accept. */
void handle_models(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    (void)req;
    char desc[700];
    if (s->model)
        snprintf(desc, sizeof desc, "%s (%s, %s) served by typellm %s", s->model_name, tl_model_arch(s->model),
                 tl_model_type_name(s->model), TL_VERSION);
    else
        snprintf(desc, sizeof desc, "%s on the %s, decisions by typellm %s", s->model_name, s->upstream_desc, TL_VERSION);
    const char *name = s->model_name;
    reply_json(r, 200, json_pack("{s:s,s:[{s:o,s:s,s:I,s:s}],s:[{s:o,s:o,s:s}]}", "object", "list", "data", "id",
                                 json_string_lossy(name, strlen(name)), "object", "model", "created",
                                 (json_int_t)s->started_wall, "owned_by", "typellm", "models", "name",
                                 json_string_lossy(name, strlen(name)), "description",
                                 json_string_lossy(desc, strlen(desc)), "release_date", "2026-01-01"));
}

void handle_systemone(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    so_request sr;
    parse_failure f;
    if (!so_request_parse(req->body, req->body_len, s->p.max_questions, &sr, &f)) {
        reply_json(r, f.status, f.body);
        return;
    }
    /* Token budget: the state is what dominates; refuse before any work. */
    tl_error err = {0};
    tl_status tst = server_check_prompt(s, "state", sr.state, sr.state_len, &err);
    if (tst != TL_OK) {
        reply_status_error(r, tst, loc2("body", "state"), err.msg);
        so_request_free(&sr);
        return;
    }
    if (!tl_server_slot_acquire(s)) {
        r->retry_after_s = 1;
        reply_typed_error(r, 429, "overloaded_error", "the server is busy; retry shortly");
        so_request_free(&sr);
        return;
    }
    json_t *schema = so_build_schema(&sr);
    tl_decide_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.mode = "batch";
    json_t *result = NULL;
    tl_status st = server_decide(s, req, sr.state, sr.state_len, schema, &opts, &result, &err);
    tl_server_slot_release(s);
    json_decref(schema);
    if (st != TL_OK) {
        reply_status_error(r, st, json_pack("[s,s]", "body", "questions"), err.msg);
        so_request_free(&sr);
        return;
    }
    json_t *answers = NULL;
    if (!so_build_answers(&sr, result, &answers, &err)) {
        reply_status_error(r, err.code, NULL, err.msg);
        json_decref(result);
        so_request_free(&sr);
        return;
    }
    json_t *u = json_object_get(result, "usage");
    json_int_t in_tok = json_integer_value(json_object_get(u, "prompt_tokens"));
    const char *name = s->model_name;
    /* Extension, x_-prefixed as System One names fields its specification does
     * not define (outside the answers, whose shape the SDKs check): per
     * question the full-vocabulary probability of its labels at the answer
     * position. */
    json_t *mass = json_object();
    for (size_t i = 0; i < sr.n_questions; i++) {
        char fkey[32];
        snprintf(fkey, sizeof fkey, "q%zu", i);
        json_object_set_new(mass, sr.questions[i].id,
                            json_real(decision_label_mass(json_object_get(json_object_get(result, "fields"), fkey))));
    }
    json_t *reply = json_pack("{s:o,s:o,s:{s:I,s:I},s:o}", "model", json_string_lossy(name, strlen(name)), "answers",
                              answers, "usage", "input_tokens", (json_int_t)in_tok, "output_tokens",
                              (json_int_t)sr.n_questions, "x_label_mass", mass);
    reply_json(r, 200, reply);
    json_decref(result);
    so_request_free(&sr);
}
