/* openai_chat.c: OpenAI's text endpoints, POST /v1/chat/completions and
 * POST /v1/completions, in the shapes of the official `openai` npm SDK
 * (chat/completions/completions.ts, completions.ts).
 *
 * Both are translated into a /generate request (sglang_api.c's gen_run does
 * the sampling, stops, logprobs and batching through the shared backend), and its
 * result is reshaped: one item per choice (n), streamed as OpenAI's chunks
 * ending in `data: [DONE]`. Chat messages are rendered with the model's own
 * chat template (tl_chat_prompt_build, typellm/template.h; the server's
 * --chat-template overrides it); a model without a template reads a plain
 * "User: ... Assistant:" transcript.
 *
 * response_format {"type":"json_schema"} is not generated token by token: the
 * schema is decided by tl_decide (every field a typed decision, so the reply
 * is always valid against the schema), the message content is the JSON of
 * the values, and the per-field distributions come in the extension field
 * "decision". A schema typellm cannot decide is a 400 naming why. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"
#include "typellm/common.h"
#include "typellm/template.h"
#include "typellm/util.h"

#define OAI_MAX_N 16            /* choices per request */
#define OAI_DEFAULT_MAX_TOKENS 256


/* ---- the parsed request ------------------------------------------------------ */

typedef struct oai_request {
    bool chat;
    json_t *root;
    json_t *gen;              /* the /generate body built from it */
    size_t n_prompts;         /* completions: prompts; chat: 1 */
    size_t n;                 /* choices per prompt */
    bool logprobs;            /* chat: logprobs; completions: logprobs >= 0 */
    int top_logprobs;
    int prompt_logprobs;      /* vLLM's extension (completions): top-N per prompt token; -1: none */
    bool stream, include_usage;
    size_t max_stop_len;
    const json_t *schema;     /* response_format json_schema's schema, or NULL */
    char *context;            /* json_schema: the messages as the decision's context */
    size_t context_len;
} oai_request;

static void oai_request_free(oai_request *r) {
    json_decref(r->root);
    json_decref(r->gen);
    free(r->context);
    memset(r, 0, sizeof *r);
}

/* One message's content as text: a string or text parts; images refused. */
static bool message_text(const json_t *content, const char *where, tl_strbuf *out, parse_failure *f) {
    if (json_is_string(content)) {
        tl_strbuf_append(out, json_string_value(content), json_string_length(content));
        return true;
    }
    if (json_is_null(content) || !content)
        return true;
    if (!json_is_array(content)) {
        fail_openai(f, 400, where, "invalid_type", "%s: must be a string or an array of content parts", where);
        return false;
    }
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *p = json_array_get(content, i);
        const char *t = json_string_value(json_object_get(p, "type"));
        const json_t *text = json_object_get(p, "text");
        if (t && !strcmp(t, "text") && json_is_string(text)) {
            if (i)
                tl_strbuf_putc(out, '\n');
            tl_strbuf_append(out, json_string_value(text), json_string_length(text));
            continue;
        }
        char w[200];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        if (t && (!strcmp(t, "image_url") || !strcmp(t, "input_audio") || !strcmp(t, "file")))
            fail_openai(f, 400, w, "unsupported_content", "%s: '%s' parts are not supported: typellm serves a text-only model",
                     w, t);
        else
            fail_openai(f, 400, w, "invalid_value", "%s: expected {\"type\":\"text\",\"text\":...}", w);
        return false;
    }
    return true;
}

/* The chat prompt's token ids: the conversation rendered with the model's
 * chat template (or the server's --chat-template), tokenized as SGLang and
 * llama.cpp tokenize a rendered chat (tl_chat_prompt_build, template.h), so
 * the prompt is exactly what `typellm template` prints for these messages.
 * Content parts become one string (text parts joined by newlines); a
 * developer message is a system message. Request field chat_template_kwargs
 * (SGLang's and vLLM's extension, e.g. {"enable_thinking": false}) sets
 * template variables. Also returns the conversation as a plain transcript
 * (json_schema's decision context). */
static bool chat_prompt(const tl_server *s, const json_t *root, const json_t *msgs, json_t *ids, tl_strbuf *plain,
                        parse_failure *f) {
    json_t *conv = json_array();
    tl_strbuf text = TL_STRBUF_INIT;
    char *conv_text = NULL, *vars_text = NULL;
    bool ok = false, any_turn = false;
    size_t n = json_array_size(msgs), bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(msgs, i);
        char w[64];
        snprintf(w, sizeof w, "messages[%zu]", i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!json_is_object(m) || !role) {
            fail_openai(f, 400, w, "invalid_type", "%s: must be an object with a role", w);
            goto out;
        }
        if (json_object_get(m, "tool_calls") || !strcmp(role, "tool") || !strcmp(role, "function")) {
            fail_openai(f, 400, w, "unsupported_value", "%s: tool and function messages are not supported by this server", w);
            goto out;
        }
        bool is_sys = !strcmp(role, "system") || !strcmp(role, "developer");
        bool is_user = !strcmp(role, "user"), is_asst = !strcmp(role, "assistant");
        if (!is_sys && !is_user && !is_asst) {
            fail_openai(f, 400, w, "invalid_value", "%s.role: '%s' is not system, developer, user or assistant", w, role);
            goto out;
        }
        char wc[80];
        snprintf(wc, sizeof wc, "%s.content", w);
        tl_strbuf_clear(&text);
        if (!message_text(json_object_get(m, "content"), wc, &text, f))
            goto out;
        bytes += text.len;
        if (bytes / s->max_token_bytes > (size_t)s->p.max_tokens) { /* cannot fit: refuse before rendering */
            fail_openai(f, 400, "messages", "context_length_exceeded",
                     "messages: %zu bytes of text are at least %zu tokens; this server accepts %d per request "
                     "(--max-tokens, --ctx-size)", bytes, bytes / s->max_token_bytes, s->p.max_tokens);
            goto out;
        }
        tl_strbuf_printf(plain, "%s%s: %s", plain->len ? "\n\n" : "", is_sys ? "System" : is_user ? "User" : "Assistant",
                         tl_strbuf_cstr(&text));
        any_turn |= is_user || is_sys;
        json_array_append_new(conv, json_pack("{s:s,s:o}", "role", is_sys ? "system" : role, "content",
                                              json_string_lossy(tl_strbuf_cstr(&text), text.len)));
    }
    if (!any_turn) {
        fail_openai(f, 400, "messages", "invalid_value", "messages: at least one user or system message is required");
        goto out;
    }
    const json_t *kw = json_object_get(root, "chat_template_kwargs");
    if (kw && !json_is_null(kw) && !json_is_object(kw)) {
        fail_openai(f, 400, "chat_template_kwargs", "invalid_type", "chat_template_kwargs: must be an object");
        goto out;
    }
    conv_text = json_dumps(conv, JSON_COMPACT);
    vars_text = json_is_object(kw) ? json_dumps(kw, JSON_COMPACT) : NULL;
    tl_chat_prompt_opts po = {.template_name = s->p.chat_template,
                              .template_jinja = s->p.chat_template_jinja,
                              .vars_json = vars_text,
                              .add_generation_prompt = true};
    tl_chat_prompt cp;
    tl_error err = {0};
    tl_status st = conv_text ? tl_chat_prompt_build(s->vocab, conv_text, &po, &cp, &err)
                             : tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
    if (st) {
        int code = http_status_for(st, HTTP_API_OPENAI);
        f->status = code;
        f->body = openai_error_body(openai_error_type(code), "messages",
                                    st == TL_ERR_LIMIT ? "context_length_exceeded" : NULL, err.msg);
        goto out;
    }
    for (size_t i = 0; i < cp.n_ids; i++)
        json_array_append_new(ids, json_integer(cp.ids[i]));
    tl_chat_prompt_free(&cp);
    ok = true;
out:
    json_decref(conv);
    free(conv_text);
    free(vars_text);
    tl_strbuf_free(&text);
    return ok;
}

static bool get_num(const json_t *root, const char *key, double lo, double hi, double *out, parse_failure *f) {
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi) {
        fail_openai(f, 400, key, "invalid_value", "%s: must be a number in [%g, %g]", key, lo, hi);
        return false;
    }
    *out = json_number_value(v);
    return true;
}

static bool get_intv(const json_t *root, const char *key, long long lo, long long hi, long long *out,
                     parse_failure *f) {
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        fail_openai(f, 400, key, "invalid_value", "%s: must be an integer in [%lld, %lld]", key, lo, hi);
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

/* Fields that change what is generated in ways typellm does not implement:
 * refused (400) rather than silently ignored when set to a non-default. */
static bool refuse_unsupported(const json_t *root, parse_failure *f) {
    static const char *const numeric_zero[] = {"presence_penalty", "frequency_penalty"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(root, numeric_zero[i]);
        if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0)) {
            fail_openai(f, 400, numeric_zero[i], "unsupported_parameter", "%s: only 0 is supported by this server",
                     numeric_zero[i]);
            return false;
        }
    }
    static const char *const empty[] = {"logit_bias", "tools", "functions", "audio", "prediction", "suffix"};
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        const json_t *v = json_object_get(root, empty[i]);
        bool set = v && !json_is_null(v) && !(json_is_object(v) && !json_object_size(v)) &&
                   !(json_is_array(v) && !json_array_size(v)) && !(json_is_string(v) && !json_string_length(v));
        if (set) {
            fail_openai(f, 400, empty[i], "unsupported_parameter", "%s: not supported by this server", empty[i]);
            return false;
        }
    }
    const json_t *tc = json_object_get(root, "tool_choice");
    if (tc && !json_is_null(tc) && !(json_is_string(tc) && !strcmp(json_string_value(tc), "none"))) {
        fail_openai(f, 400, "tool_choice", "unsupported_parameter", "tool_choice: this server has no tools");
        return false;
    }
    const json_t *echo = json_object_get(root, "echo");
    if (json_is_true(echo)) {
        fail_openai(f, 400, "echo", "unsupported_parameter", "echo: not supported by this server");
        return false;
    }
    long long best_of = 1;
    if (!get_intv(root, "best_of", 1, 1, &best_of, f))
        return false;
    return true;
}

/* response_format: text (default), json_schema (decided); json_object refused. */
static bool parse_response_format(const json_t *root, oai_request *r, parse_failure *f) {
    const json_t *rf = json_object_get(root, "response_format");
    if (!rf || json_is_null(rf))
        return true;
    const char *t = json_string_value(json_object_get(rf, "type"));
    if (!json_is_object(rf) || !t) {
        fail_openai(f, 400, "response_format", "invalid_type", "response_format: must be {\"type\": ...}");
        return false;
    }
    if (!strcmp(t, "text"))
        return true;
    if (strcmp(t, "json_schema")) {
        fail_openai(f, 400, "response_format.type", "unsupported_value",
                 "response_format.type '%s' is not supported: use 'json_schema' with a schema of typed fields "
                 "(enums, booleans, scores, numbers), which typellm decides", t);
        return false;
    }
    const json_t *js = json_object_get(rf, "json_schema");
    const json_t *schema = json_object_get(js, "schema");
    if (!json_is_object(schema)) {
        fail_openai(f, 400, "response_format.json_schema.schema", "missing_required_parameter",
                 "response_format.json_schema.schema: required object");
        return false;
    }
    tl_error err = {0};
    if (server_check_schema(schema, &err) != TL_OK) {
        fail_openai(f, 400, "response_format.json_schema.schema", "unsupported_schema",
                 "response_format.json_schema.schema: typellm cannot decide this schema: %s", err.msg);
        return false;
    }
    if (r->n != 1) {
        fail_openai(f, 400, "n", "unsupported_value", "n: json_schema answers are decided once; n must be 1");
        return false;
    }
    r->schema = schema;
    return true;
}

/* vLLM's `prompt_logprobs` (completions, not streamed): N >= 0 asks each
 * prompt token's logprob plus the top N, as vLLM's CompletionResponseChoice
 * .prompt_logprobs. */
static bool vllm_prompt_logprobs(const json_t *root, bool chat, oai_request *r, parse_failure *f) {
    long long plp = -1;
    r->prompt_logprobs = -1;
    if (chat)
        return true;
    if (!get_intv(root, "prompt_logprobs", 0, 20, &plp, f))
        return false;
    if (plp >= 0 && json_is_true(json_object_get(root, "stream"))) {
        fail_openai(f, 400, "prompt_logprobs", "unsupported_parameter", "prompt_logprobs: not with stream");
        return false;
    }
    r->prompt_logprobs = (int)plp;
    return true;
}

static bool oai_request_parse(const tl_server *s, const tl_http_request *req, bool chat, oai_request *r,
                              parse_failure *f) {
    memset(r, 0, sizeof *r);
    r->chat = chat;
    r->root = parse_json_body_openai(req->body, req->body_len, f);
    if (!r->root)
        return false;
    const json_t *root = r->root;
    if (!json_is_object(root)) {
        fail_openai(f, 400, NULL, "invalid_type", "the request body must be a JSON object");
        return false;
    }
    const json_t *model = json_object_get(root, "model");
    if (!json_is_string(model)) {
        fail_openai(f, 400, "model", "missing_required_parameter", "model: required string");
        return false;
    }
    const char *served = s->model_name;
    if (strcmp(json_string_value(model), served)) {
        char msg[400];
        snprintf(msg, sizeof msg, "The model '%.100s' does not exist; this server serves '%.100s' (GET /v1/models)",
                 json_string_value(model), served);
        f->status = 404;
        f->body = openai_error_body("invalid_request_error", "model", "model_not_found", msg);
        return false;
    }
    if (!refuse_unsupported(root, f))
        return false;
    double temperature = 1, top_p = 1;
    long long max_tokens = OAI_DEFAULT_MAX_TOKENS, n = 1, top = 0, seed = 0, lp_int = -1;
    bool has_seed = json_is_integer(json_object_get(root, "seed"));
    const char *mt_key = chat && json_object_get(root, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (!get_num(root, "temperature", 0, 2, &temperature, f) || !get_num(root, "top_p", 0, 1, &top_p, f) ||
        !get_intv(root, mt_key, 1, s->p.max_new_tokens, &max_tokens, f) || !get_intv(root, "n", 1, OAI_MAX_N, &n, f) ||
        !get_intv(root, "seed", INT64_MIN, INT64_MAX, &seed, f))
        return false;
    if (top_p <= 0) {
        fail_openai(f, 400, "top_p", "invalid_value", "top_p: must be in (0, 1]");
        return false;
    }
    r->n = (size_t)n;
    const json_t *lp = json_object_get(root, "logprobs");
    if (chat) {
        if (lp && !json_is_null(lp) && !json_is_boolean(lp)) {
            fail_openai(f, 400, "logprobs", "invalid_type", "logprobs: must be a boolean");
            return false;
        }
        r->logprobs = json_is_true(lp);
        if (!get_intv(root, "top_logprobs", 0, 20, &top, f))
            return false;
        if (top > 0 && !r->logprobs) {
            fail_openai(f, 400, "top_logprobs", "invalid_value", "top_logprobs: requires logprobs: true");
            return false;
        }
    } else {
        if (!get_intv(root, "logprobs", 0, 5, &lp_int, f))
            return false;
        r->logprobs = lp_int >= 0;
        top = lp_int > 0 ? lp_int : 0;
    }
    if (!vllm_prompt_logprobs(root, chat, r, f))
        return false;
    r->top_logprobs = (int)top;
    const json_t *stream = json_object_get(root, "stream");
    if (stream && !json_is_null(stream) && !json_is_boolean(stream)) {
        fail_openai(f, 400, "stream", "invalid_type", "stream: must be a boolean");
        return false;
    }
    r->stream = json_is_true(stream);
    r->include_usage = json_is_true(json_object_get(json_object_get(root, "stream_options"), "include_usage"));
    const json_t *stop = json_object_get(root, "stop");
    json_t *stops = json_array();
    if (json_is_string(stop)) {
        json_array_append(stops, (json_t *)stop);
    } else if (json_is_array(stop) && json_array_size(stop) <= 4) {
        for (size_t i = 0; i < json_array_size(stop); i++) {
            const json_t *v = json_array_get(stop, i);
            if (!json_is_string(v) || !json_string_length(v)) {
                json_decref(stops);
                fail_openai(f, 400, "stop", "invalid_value", "stop[%zu]: must be a non-empty string", i);
                return false;
            }
            json_array_append(stops, (json_t *)v);
        }
    } else if (stop && !json_is_null(stop)) {
        json_decref(stops);
        fail_openai(f, 400, "stop", "invalid_value", "stop: a string or up to 4 strings");
        return false;
    }
    for (size_t i = 0; i < json_array_size(stops); i++)
        if (json_string_length(json_array_get(stops, i)) > r->max_stop_len)
            r->max_stop_len = json_string_length(json_array_get(stops, i));
    if (chat && !parse_response_format(root, r, f)) {
        json_decref(stops);
        return false;
    }
    /* The prompts: chat messages as ids; completions' prompt as text or ids. */
    json_t *inputs = json_array();
    bool as_text = false;
    if (chat) {
        const json_t *msgs = json_object_get(root, "messages");
        if (!json_is_array(msgs) || !json_array_size(msgs)) {
            json_decref(stops), json_decref(inputs);
            fail_openai(f, 400, "messages", "missing_required_parameter", "messages: required non-empty array");
            return false;
        }
        json_t *ids = json_array();
        tl_strbuf plain = TL_STRBUF_INIT;
        bool ok = chat_prompt(s, root, msgs, ids, &plain, f);
        r->context_len = plain.len;
        r->context = tl_strbuf_detach(&plain);
        tl_strbuf_free(&plain);
        if (!ok) {
            json_decref(ids), json_decref(stops), json_decref(inputs);
            return false;
        }
        json_array_append_new(inputs, ids);
    } else {
        const json_t *p = json_object_get(root, "prompt");
        if (json_is_string(p)) {
            as_text = true;
            json_array_append(inputs, (json_t *)p);
        } else if (json_is_array(p) && json_array_size(p) && json_is_string(json_array_get(p, 0))) {
            as_text = true;
            for (size_t i = 0; i < json_array_size(p); i++) {
                if (!json_is_string(json_array_get(p, i))) {
                    json_decref(stops), json_decref(inputs);
                    fail_openai(f, 400, "prompt", "invalid_type", "prompt[%zu]: must be a string", i);
                    return false;
                }
                json_array_append(inputs, json_array_get(p, i));
            }
        } else if (json_is_array(p) && json_array_size(p) && json_is_array(json_array_get(p, 0))) {
            json_array_extend(inputs, (json_t *)p);
        } else if (json_is_array(p) && json_array_size(p)) {
            json_array_append(inputs, (json_t *)p);
        } else {
            json_decref(stops), json_decref(inputs);
            fail_openai(f, 400, "prompt", "missing_required_parameter",
                     "prompt: required string, array of strings, token array or array of token arrays");
            return false;
        }
        if (json_array_size(inputs) * r->n > OAI_MAX_N * 4) {
            json_decref(stops), json_decref(inputs);
            fail_openai(f, 400, "prompt", "array_above_max_length", "prompt x n: at most %d completions per request",
                     OAI_MAX_N * 4);
            return false;
        }
    }
    r->n_prompts = json_array_size(inputs);
    /* The /generate body: every prompt repeated n times, seeds seed + choice. */
    json_t *items = json_array(), *sps = json_array();
    for (size_t i = 0; i < r->n_prompts; i++)
        for (size_t j = 0; j < r->n; j++) {
            json_array_append(items, json_array_get(inputs, i));
            json_t *sp = json_pack("{s:I,s:f,s:f,s:O}", "max_new_tokens", (json_int_t)max_tokens, "temperature",
                                   temperature, "top_p", top_p, "stop", stops);
            if (has_seed)
                json_object_set_new(sp, "seed", json_integer((json_int_t)(seed + (long long)j)));
            json_array_append_new(sps, sp);
        }
    json_decref(inputs);
    json_decref(stops);
    r->gen = json_pack("{s:o,s:o,s:b,s:i,s:b}", as_text ? "text" : "input_ids", items, "sampling_params", sps,
                       "return_logprob", r->logprobs, "top_logprobs_num", r->top_logprobs, "return_text_in_logprobs", 1);
    if (r->prompt_logprobs >= 0) { /* every prompt position's logprob: SGLang's input logprobs from 0 */
        json_object_set_new(r->gen, "return_logprob", json_true());
        json_object_set_new(r->gen, "logprob_start_len", json_integer(0));
        if (r->prompt_logprobs > r->top_logprobs)
            json_object_set_new(r->gen, "top_logprobs_num", json_integer(r->prompt_logprobs));
    }
    return true;
}

/* ---- reply shapes ---------------------------------------------------------- */

static json_t *token_bytes(const char *t) {
    json_t *b = json_array();
    for (const unsigned char *p = (const unsigned char *)t; p && *p; p++)
        json_array_append_new(b, json_integer(*p));
    return b;
}

/* OpenAI logprob entries for generated tokens [from, to) of one item's meta. */
static json_t *chat_logprobs(const json_t *meta, size_t from, size_t to) {
    const json_t *lp = json_object_get(meta, "output_token_logprobs");
    const json_t *top = json_object_get(meta, "output_top_logprobs");
    json_t *content = json_array();
    for (size_t i = from; i < to && i < json_array_size(lp); i++) {
        const json_t *t = json_array_get(lp, i);
        const char *tok = json_string_value(json_array_get(t, 2));
        json_t *tops = json_array();
        const json_t *tl = json_array_get(top, i);
        for (size_t k = 0; k < json_array_size(tl); k++) {
            const json_t *e = json_array_get(tl, k);
            const char *et = json_string_value(json_array_get(e, 2));
            json_array_append_new(tops, json_pack("{s:s,s:O,s:o}", "token", et ? et : "", "logprob", json_array_get(e, 0),
                                                  "bytes", token_bytes(et)));
        }
        json_array_append_new(content, json_pack("{s:s,s:O,s:o,s:o}", "token", tok ? tok : "", "logprob",
                                                 json_array_get(t, 0), "bytes", token_bytes(tok), "top_logprobs", tops));
    }
    return json_pack("{s:o,s:n}", "content", content, "refusal");
}

/* Legacy completions logprobs: tokens, token_logprobs, top_logprobs, text_offset. */
static json_t *completion_logprobs(const json_t *meta, size_t from, size_t to, size_t offset0) {
    const json_t *lp = json_object_get(meta, "output_token_logprobs");
    const json_t *top = json_object_get(meta, "output_top_logprobs");
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t off = offset0;
    for (size_t i = from; i < to && i < json_array_size(lp); i++) {
        const json_t *t = json_array_get(lp, i);
        const char *tok = json_string_value(json_array_get(t, 2));
        json_array_append_new(toks, json_string(tok ? tok : ""));
        json_array_append(lps, json_array_get(t, 0));
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += tok ? strlen(tok) : 0;
        json_t *m = json_object();
        const json_t *tl = json_array_get(top, i);
        for (size_t k = 0; k < json_array_size(tl); k++) {
            const json_t *e = json_array_get(tl, k);
            const char *et = json_string_value(json_array_get(e, 2));
            if (et && !json_object_get(m, et))
                json_object_set(m, et, json_array_get(e, 0));
        }
        json_array_append_new(tops, m);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops, "text_offset",
                     offs);
}

static const char *finish_reason_of(const json_t *meta) {
    const char *t = json_string_value(json_object_get(json_object_get(meta, "finish_reason"), "type"));
    if (!t)
        return NULL;
    return !strcmp(t, "length") ? "length" : "stop";
}

static json_t *usage_json(json_int_t prompt, json_int_t completion, json_int_t cached) {
    return json_pack("{s:I,s:I,s:I,s:{s:I},s:{s:i}}", "prompt_tokens", prompt, "completion_tokens", completion,
                     "total_tokens", prompt + completion, "prompt_tokens_details", "cached_tokens", cached,
                     "completion_tokens_details", "reasoning_tokens", 0);
}

typedef struct oai_ctx {
    tl_server *s;
    oai_request rq;
    gen_request gen;
    sched_wait w;
    char id[48];
    json_int_t created;
    size_t *sent_text;   /* per item: text bytes already streamed */
    size_t *sent_lp;     /* per item: logprob entries already streamed */
    bool *started;       /* per item: the role chunk went out */
    sse_out *out;
} oai_ctx;

static json_t *chunk_base(const oai_ctx *c) {
    const char *name = c->s->model_name;
    return json_pack("{s:s,s:s,s:I,s:o,s:n}", "id", c->id, "object",
                     c->rq.chat ? "chat.completion.chunk" : "text_completion", "created", c->created, "model",
                     json_string_lossy(name, strlen(name)), "system_fingerprint");
}

/* How many bytes of text may be streamed now: all of it once finished;
 * before, not what could still become a stop string, nor a trailing
 * replacement character (a multi-byte character still arriving). */
static size_t streamable(const oai_ctx *c, const char *text, size_t len, bool finished) {
    if (finished)
        return len;
    size_t keep = c->rq.max_stop_len > 0 ? c->rq.max_stop_len - 1 : 0;
    size_t n = len > keep ? len - keep : 0;
    while (n >= 3 && !memcmp(text + n - 3, "\xef\xbf\xbd", 3))
        n -= 3;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80 && n < len)
        n--; /* never split a character */
    return n;
}

static bool oai_event(void *ctx, size_t item, json_t *ev) {
    oai_ctx *c = ctx;
    const json_t *meta = json_object_get(ev, "meta_info");
    const char *text = json_string_value(json_object_get(ev, "text"));
    size_t len = json_string_length(json_object_get(ev, "text"));
    const char *fin = finish_reason_of(meta);
    size_t upto = streamable(c, text ? text : "", len, fin != NULL);
    bool ok = true;
    if (c->rq.chat && !c->started[item]) {
        json_t *ch = chunk_base(c);
        json_object_set_new(ch, "choices", json_pack("[{s:I,s:{s:s,s:s},s:n,s:n}]", "index", (json_int_t)item, "delta",
                                                     "role", "assistant", "content", "", "logprobs", "finish_reason"));
        ok = sse_send_json(c->out, ch);
        c->started[item] = true;
    }
    size_t n_lp = json_array_size(json_object_get(meta, "output_token_logprobs"));
    if (ok && (upto > c->sent_text[item] || fin)) {
        json_t *delta_text = json_string_lossy(text + c->sent_text[item], upto - c->sent_text[item]);
        json_t *choice;
        json_t *lp = json_null();
        if (c->rq.logprobs) {
            json_decref(lp);
            lp = c->rq.chat ? chat_logprobs(meta, c->sent_lp[item], n_lp)
                            : completion_logprobs(meta, c->sent_lp[item], n_lp, c->sent_text[item]);
            c->sent_lp[item] = n_lp;
        }
        if (c->rq.chat)
            choice = json_pack("{s:I,s:{s:o},s:o,s:o}", "index", (json_int_t)item, "delta", "content", delta_text,
                               "logprobs", lp, "finish_reason", fin ? json_string(fin) : json_null());
        else
            choice = json_pack("{s:I,s:o,s:o,s:o}", "index", (json_int_t)item, "text", delta_text, "logprobs", lp,
                               "finish_reason", fin ? json_string(fin) : json_null());
        c->sent_text[item] = upto;
        json_t *ch = chunk_base(c);
        json_object_set_new(ch, "choices", json_pack("[o]", choice));
        ok = sse_send_json(c->out, ch);
    }
    json_decref(ev);
    return ok;
}

/* vLLM's prompt_logprobs from SGLang's input logprobs: null for the first
 * token, then per position {id: {logprob, rank, decoded_token}} for the
 * prompt's token and the top N (rank: null, not computed). */
static json_t *vllm_prompt_lp(const json_t *meta) {
    const json_t *in = json_object_get(meta, "input_token_logprobs"), *top = json_object_get(meta, "input_top_logprobs");
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(in); i++) {
        const json_t *t = json_array_get(in, i);
        if (json_is_null(json_array_get(t, 0))) {
            json_array_append_new(out, json_null());
            continue;
        }
        json_t *pos = json_object();
        const json_t *tops = json_array_get(top, i);
        for (size_t k = 0; k <= json_array_size(tops); k++) {
            const json_t *e = k ? json_array_get(tops, k - 1) : t;
            char key[16];
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_array_get(e, 1)));
            if (!json_object_get(pos, key))
                json_object_set_new(pos, key, json_pack("{s:O,s:n,s:O}", "logprob", json_array_get(e, 0), "rank",
                                                        "decoded_token", json_array_get(e, 2)));
        }
        json_array_append_new(out, pos);
    }
    return out;
}

/* The whole (non-streamed) reply from gen_run's result. */
static json_t *oai_reply(const oai_ctx *c, const json_t *result) {
    json_t *choices = json_array();
    json_int_t prompt = 0, completion = 0, cached = 0;
    size_t ni = json_is_array(result) ? json_array_size(result) : 1;
    for (size_t i = 0; i < ni; i++) {
        const json_t *it = json_is_array(result) ? json_array_get(result, i) : result;
        const json_t *meta = json_object_get(it, "meta_info");
        const json_t *text = json_object_get(it, "text");
        size_t n_lp = json_array_size(json_object_get(meta, "output_token_logprobs"));
        json_t *lp = c->rq.logprobs ? (c->rq.chat ? chat_logprobs(meta, 0, n_lp) : completion_logprobs(meta, 0, n_lp, 0))
                                    : json_null();
        const char *fin = finish_reason_of(meta);
        if (c->rq.chat)
            json_array_append_new(choices, json_pack("{s:I,s:{s:s,s:O,s:n},s:o,s:s}", "index", (json_int_t)i, "message",
                                                     "role", "assistant", "content", text, "refusal", "logprobs", lp,
                                                     "finish_reason", fin ? fin : "stop"));
        else
            json_array_append_new(choices, json_pack("{s:I,s:O,s:o,s:s}", "index", (json_int_t)i, "text", text,
                                                     "logprobs", lp, "finish_reason", fin ? fin : "stop"));
        if (!c->rq.chat && c->rq.prompt_logprobs >= 0)
            json_object_set_new(json_array_get(choices, json_array_size(choices) - 1), "prompt_logprobs",
                                vllm_prompt_lp(meta));
        /* A prompt repeated n times is counted once, as OpenAI does. */
        if (i % c->rq.n == 0) {
            prompt += json_integer_value(json_object_get(meta, "prompt_tokens"));
            cached += json_integer_value(json_object_get(meta, "cached_tokens"));
        }
        completion += json_integer_value(json_object_get(meta, "completion_tokens"));
    }
    json_t *reply = chunk_base(c);
    json_object_set_new(reply, "object", json_string(c->rq.chat ? "chat.completion" : "text_completion"));
    json_object_set_new(reply, "choices", choices);
    json_object_set_new(reply, "usage", usage_json(prompt, completion, cached));
    return reply;
}

static void oai_ctx_free(oai_ctx *c) {
    free(c->sent_text);
    free(c->sent_lp);
    free(c->started);
    gen_request_free(&c->gen);
    oai_request_free(&c->rq);
    free(c);
}

static int oai_error_for(tl_status st, int hs, const char *msg, json_t **body) {
    int code = generate_error_status(st, hs, HTTP_API_OPENAI);
    const char *ecode = (st == TL_ERR_LIMIT || hs == 413) && code == 400 ? "context_length_exceeded" : NULL;
    *body = openai_error_body(openai_error_type(code), NULL, ecode, msg);
    return code;
}

/* Runs the generation, streaming into c->out when it is set. */
static tl_status oai_generate(oai_ctx *c, json_t **result, int *hs, tl_error *err) {
    gen_sink sink = {oai_event, c};
    return gen_run(c->s, &c->gen, &c->w, result, c->out ? &sink : NULL, hs, err);
}

/* Final usage chunk (stream_options.include_usage) and [DONE]. */
static void stream_finish(oai_ctx *c, const json_t *result) {
    if (c->rq.include_usage) {
        json_t *full = oai_reply(c, result);
        json_t *ch = chunk_base(c);
        json_object_set_new(ch, "choices", json_array());
        json_object_set(ch, "usage", json_object_get(full, "usage"));
        json_decref(full);
        sse_send_json(c->out, ch);
    }
    sse_send_done(c->out);
}

static void stream_run(void *job, sse_out *out) {
    oai_ctx *c = job;
    c->out = out;
    json_t *result = NULL;
    tl_error err = {0};
    int hs = 500;
    tl_status st = oai_generate(c, &result, &hs, &err);
    if (st == TL_OK) {
        stream_finish(c, result);
    } else if (st != TL_ERR_CANCELLED) {
        json_t *body = NULL;
        oai_error_for(st, hs, err.msg, &body);
        sse_send_json(out, body);
        sse_send_done(out);
    }
    json_decref(result);
    oai_ctx_free(c);
}

/* response_format json_schema: the schema decided over the conversation. */
static void answer_json_schema(oai_ctx *c, const tl_http_request *req, tl_http_reply *r) {
    json_t *result = NULL;
    tl_error err = {0};
    tl_status st = server_decide(c->s, req, c->rq.context, c->rq.context_len, c->rq.schema, NULL, &result, &err);
    tl_server_slot_release(c->s);
    if (st != TL_OK) {
        int code = http_status_for(st, HTTP_API_OPENAI);
        bool limit = st == TL_ERR_LIMIT, bad = code == 400 && !limit;
        reply_openai_error(r, code, openai_error_type(code),
                           bad ? "response_format.json_schema.schema" : limit ? "messages" : NULL,
                           bad ? "unsupported_schema" : limit ? "context_length_exceeded" : NULL, "%s", err.msg);
        return;
    }
    char *content = server_json_dumps(json_object_get(result, "values"), JSON_COMPACT);
    json_t *fields = json_object();
    const char *key;
    json_t *fv;
    json_object_foreach(json_object_get(result, "fields"), key, fv) {
        json_t *d = json_pack("{s:O}", "value", json_object_get(fv, "value"));
        if (json_object_get(fv, "probabilities")) {
            json_object_set(d, "probabilities", json_object_get(fv, "probabilities"));
            json_object_set_new(d, "label_mass", json_real(decision_label_mass(fv)));
        } else if (json_object_get(fv, "probability")) {
            json_object_set(d, "probability", json_object_get(fv, "probability"));
        }
        json_object_set_new(fields, key, d);
    }
    const json_t *u = json_object_get(result, "usage");
    json_int_t prompt = json_integer_value(json_object_get(u, "prompt_tokens"));
    json_int_t cached = json_integer_value(json_object_get(u, "cached_tokens"));
    json_int_t completion = (json_int_t)json_object_size(fields);
    json_t *usage = usage_json(prompt, completion, cached);
    json_t *content_j = json_string(content ? content : "{}");
    free(content);
    json_decref(result);
    if (c->rq.stream) {
        sse_out buffered = SSE_OUT_BUFFER;
        json_t *ch = chunk_base(c);
        json_object_set_new(ch, "choices", json_pack("[{s:i,s:{s:s,s:o},s:n,s:n}]", "index", 0, "delta", "role",
                                                     "assistant", "content", content_j, "logprobs", "finish_reason"));
        json_object_set(ch, "decision", json_pack("{s:o}", "fields", json_incref(fields)));
        sse_send_json(&buffered, ch);
        ch = chunk_base(c);
        json_object_set_new(ch, "choices", json_pack("[{s:i,s:{},s:n,s:s}]", "index", 0, "delta", "logprobs",
                                                     "finish_reason", "stop"));
        sse_send_json(&buffered, ch);
        if (c->rq.include_usage) {
            ch = chunk_base(c);
            json_object_set_new(ch, "choices", json_array());
            json_object_set(ch, "usage", usage);
            sse_send_json(&buffered, ch);
        }
        sse_send_done(&buffered);
        json_decref(fields);
        json_decref(usage);
        r->status = 200;
        r->content_type = "text/event-stream";
        tl_strbuf_clear(&r->body);
        tl_strbuf_append(&r->body, buffered.buf.buf ? buffered.buf.buf : "", buffered.buf.len);
        tl_strbuf_free(&buffered.buf);
        return;
    }
    json_t *reply = chunk_base(c);
    json_object_set_new(reply, "object", json_string("chat.completion"));
    json_object_set_new(reply, "choices",
                        json_pack("[{s:i,s:{s:s,s:o,s:n},s:n,s:s}]", "index", 0, "message", "role", "assistant",
                                  "content", content_j, "refusal", "logprobs", "finish_reason", "stop"));
    json_object_set_new(reply, "usage", usage);
    json_object_set_new(reply, "decision", json_pack("{s:o}", "fields", fields));
    reply_json(r, 200, reply);
}

static void handle_openai_text(tl_server *s, const tl_http_request *req, tl_http_reply *r, bool chat) {
    parse_failure f = {0};
    oai_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        reply_openai_error(r, 503, "server_error", NULL, NULL, "out of memory");
        return;
    }
    c->s = s;
    c->created = (json_int_t)time(NULL);
    snprintf(c->id, sizeof c->id, "%s-%016llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)tl_server_next_rid(s));
    if (!oai_request_parse(s, req, chat, &c->rq, &f)) {
        reply_json(r, f.status, f.body);
        oai_ctx_free(c);
        return;
    }
    if (!c->rq.schema && !gen_request_from_json(c->rq.gen, s->n_vocab, s->p.max_new_tokens, &c->gen, &f)) {
        /* gen_request_from_json speaks SGLang: carry its message over. */
        const char *msg = json_string_value(json_object_get(json_object_get(f.body, "error"), "message"));
        reply_openai_error(r, f.status, "invalid_request_error", NULL, NULL, "%s", msg ? msg : "invalid request");
        json_decref(f.body);
        oai_ctx_free(c);
        return;
    }
    if (!tl_server_slot_acquire(s)) {
        r->retry_after_s = 1;
        reply_openai_error(r, 429, "rate_limit_error", NULL, "rate_limit_exceeded",
                           "the server is busy (%d requests running); retry shortly", s->p.max_queue);
        oai_ctx_free(c);
        return;
    }
    c->w = server_wait_for(s, req);
    if (c->rq.schema) {
        answer_json_schema(c, req, r);
        oai_ctx_free(c);
        return;
    }
    size_t ni = c->gen.n_items;
    c->sent_text = calloc(ni, sizeof *c->sent_text);
    c->sent_lp = calloc(ni, sizeof *c->sent_lp);
    c->started = calloc(ni, sizeof *c->started);
    if (!c->sent_text || !c->sent_lp || !c->started) {
        tl_server_slot_release(s);
        reply_openai_error(r, 503, "server_error", NULL, NULL, "out of memory");
        oai_ctx_free(c);
        return;
    }
    if (c->rq.stream && req->allow_stream) {
        c->w.cancelled = NULL; /* the pipe reports a departed client */
        if (server_stream_start(s, r, stream_run, c))
            return; /* the stream thread owns c and the slot */
        tl_server_slot_release(s);
        reply_openai_error(r, 503, "server_error", NULL, NULL, "cannot start a stream");
        oai_ctx_free(c);
        return;
    }
    sse_out buffered = SSE_OUT_BUFFER;
    if (c->rq.stream)
        c->out = &buffered;
    json_t *result = NULL;
    tl_error err = {0};
    int hs = 500;
    tl_status st = oai_generate(c, &result, &hs, &err);
    tl_server_slot_release(s);
    if (st != TL_OK) {
        json_t *body = NULL;
        int code = oai_error_for(st, hs, err.msg, &body);
        reply_json(r, code, body);
    } else if (c->rq.stream) {
        stream_finish(c, result);
        r->status = 200;
        r->content_type = "text/event-stream";
        tl_strbuf_clear(&r->body);
        tl_strbuf_append(&r->body, buffered.buf.buf ? buffered.buf.buf : "", buffered.buf.len);
    } else {
        reply_json(r, 200, oai_reply(c, result));
    }
    json_decref(result);
    tl_strbuf_free(&buffered.buf);
    oai_ctx_free(c);
}

bool oai_request_check(const tl_server *s, const char *body, size_t len, bool chat, parse_failure *f) {
    tl_http_request req = {.method = "POST", .body = body, .body_len = len};
    oai_request rq;
    bool ok = oai_request_parse(s, &req, chat, &rq, f);
    if (ok && !rq.schema) {
        gen_request g;
        ok = gen_request_from_json(rq.gen, s->n_vocab, s->p.max_new_tokens, &g, f);
        if (ok)
            gen_request_free(&g);
    }
    oai_request_free(&rq);
    return ok;
}

void handle_chat_completions(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    handle_openai_text(s, req, r, true);
}

void handle_completions(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    handle_openai_text(s, req, r, false);
}
