/* decide_api.c: POST /v1/decide, `typellm decide` over HTTP:
 * {context, schema, mode, style, temperature, seed, threshold, debias,
 * calibrate, content_free, think} -> the same
 * JSON the command prints. Validation errors are FastAPI-shaped (422 with a
 * loc path); schema errors from tl_decide keep its JSON path in the message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"
#include "server/server_internal.h"
#include "typellm/common.h"

static void fail(parse_failure *f, const char *field, const char *type, const char *msg) {
    f->status = 422;
    f->body = json_pack("{s:[{s:[s,s],s:o,s:s}]}", "detail", "loc", "body", field, "msg",
                        json_string_lossy(msg, strlen(msg)), "type", type);
}

void decide_request_free(decide_request *r) {
    free(r->context);
    free(r->mode);
    free(r->style);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}

bool decide_request_parse(const char *body, size_t len, decide_request *out, parse_failure *f) {
    memset(out, 0, sizeof *out);
    json_t *root = parse_json_body(body, len, true, f);
    if (!root)
        return false;
    out->root = root;
    if (!json_is_object(root)) {
        f->status = 422;
        f->body = json_pack("{s:[{s:[s],s:s,s:s}]}", "detail", "loc", "body", "msg", "the body must be a JSON object",
                            "type", "dict_type");
        goto bad;
    }
    const json_t *ctx = json_object_get(root, "context");
    if (!ctx) {
        fail(f, "context", "missing", "Field required");
        goto bad;
    }
    if (json_is_string(ctx)) {
        out->context_len = json_string_length(ctx);
        out->context = malloc(out->context_len + 1);
        if (out->context)
            memcpy(out->context, json_string_value(ctx), out->context_len + 1);
    } else if (json_is_object(ctx) || json_is_array(ctx)) {
        out->context = json_dumps(ctx, JSON_COMPACT);
        out->context_len = out->context ? strlen(out->context) : 0;
    } else {
        fail(f, "context", "string_type", "context must be a string (or an object/array, sent as JSON text)");
        goto bad;
    }
    if (!out->context) {
        fail(f, "context", "value_error", "out of memory");
        goto bad;
    }
    const json_t *schema = json_object_get(root, "schema");
    if (!schema) {
        fail(f, "schema", "missing", "Field required");
        goto bad;
    }
    if (!json_is_object(schema)) {
        fail(f, "schema", "dict_type", "schema must be a JSON Schema object");
        goto bad;
    }
    out->schema = schema;
    const char *strs[2] = {"mode", "style"};
    char **dst[2] = {&out->mode, &out->style};
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(root, strs[k]);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_string(v)) {
            fail(f, strs[k], "string_type", k == 0 ? "mode must be \"sequential\", \"batch\" or \"auto\""
                                                   : "style must be \"chat\" or \"record\"");
            goto bad;
        }
        const char *sv = json_string_value(v);
        bool okv = k == 0 ? (!strcmp(sv, "sequential") || !strcmp(sv, "batch") || !strcmp(sv, "auto"))
                          : (!strcmp(sv, "chat") || !strcmp(sv, "record"));
        if (!okv) {
            fail(f, strs[k], "literal_error", k == 0 ? "mode must be \"sequential\", \"batch\" or \"auto\""
                                                     : "style must be \"chat\" or \"record\"");
            goto bad;
        }
        *dst[k] = strdup(sv);
    }
    const json_t *t = json_object_get(root, "temperature");
    if (t && !json_is_null(t)) {
        if (!json_is_number(t) || !(json_number_value(t) >= 0) || !isfinite(json_number_value(t))) {
            fail(f, "temperature", "float_type", "temperature must be a number >= 0");
            goto bad;
        }
        out->temperature = json_number_value(t);
    }
    const json_t *seed = json_object_get(root, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0) {
            fail(f, "seed", "int_type", "seed must be a non-negative integer");
            goto bad;
        }
        out->seed = (uint64_t)json_integer_value(seed);
    }
    const json_t *th = json_object_get(root, "threshold");
    if (th && !json_is_null(th)) {
        double x = json_is_number(th) ? json_number_value(th) : -1;
        if (!(x >= 0 && x <= 1)) {
            fail(f, "threshold", "float_type", "threshold must be a number in [0, 1]");
            goto bad;
        }
        out->threshold = x;
    }
    const json_t *tr = json_object_get(root, "trace");
    if (tr && !json_is_null(tr)) {
        if (!json_is_boolean(tr)) {
            fail(f, "trace", "bool_type", "trace must be true or false");
            goto bad;
        }
        out->trace = json_is_true(tr);
    }
    const char *key = NULL, *msg = NULL;
    if (!decide_corrections_parse(root, &out->corr, &key, &msg)) {
        fail(f, key, "value_error", msg);
        goto bad;
    }
    return true;
bad:
    decide_request_free(out);
    return false;
}

/* The schema as the public API's tl_schema (the server builds schemas as JSON). */
static tl_status schema_of(const json_t *schema, tl_schema **out, tl_error *err) {
    *out = NULL;
    char *text = json_dumps(schema, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!text)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    tl_status st = tl_schema_parse(text, strlen(text), out, err);
    free(text);
    return st;
}

tl_status server_check_schema(const json_t *schema, tl_error *err) {
    tl_schema *ts = NULL;
    tl_status st = schema_of(schema, &ts, err);
    tl_schema_free(ts);
    return st;
}

tl_status server_decide(tl_server *s, const tl_http_request *req, const char *context, size_t context_len,
                        const json_t *schema, const tl_decide_opts *opts, json_t **result, tl_error *err) {
    *result = NULL;
    sched_wait w = server_wait_for(s, req);
    tl_backend *b = NULL;
    tl_schema *ts = NULL;
    tl_decision *d = NULL;
    tl_decide_opts o = opts ? *opts : (tl_decide_opts){0};
    if (!o.chat_template && !o.chat_template_jinja) { /* the server's --chat-template */
        o.chat_template_jinja = s->p.chat_template_jinja;
        o.chat_template = o.chat_template_jinja ? NULL : s->p.chat_template;
    }
    tl_status st = schema_of(schema, &ts, err);
    if (!st)
        st = server_backend_take(s, &w, &b, err);
    if (!st)
        st = tl_decide(b, context, context_len, ts, &o, &d, err);
    if (st == TL_ERR_LIMIT && err && !s->upstream) { /* name the server's flag, not only the model */
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        tl_error_set(err, st, "%s (this server's context is %d tokens; `typellm serve -c/--ctx-size N` sets a longer one)",
                     msg, (int)s->n_ctx);
    }
    char *text = st ? NULL : tl_decision_to_json(d, 0);
    if (!st && !(text && (*result = json_loads(text, 0, NULL))))
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    if (!st) {
        const json_t *u = json_object_get(*result, "usage");
        tl_usage du = {.prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens")),
                       .cached_tokens = json_integer_value(json_object_get(u, "cached_tokens")),
                       .computed_tokens = json_integer_value(json_object_get(u, "computed_tokens")),
                       .forward_passes = json_integer_value(json_object_get(u, "forward_passes"))};
        server_usage_note(&du);
        metrics_decided(s->metrics, schema);
    }
    tl_free(text);
    tl_decision_free(d);
    server_backend_done(s, b);
    tl_schema_free(ts);
    return st;
}

/* With "trace": every field's trace gets "pieces", the text of each token
 * id it scored (special tokens as their text), so a reader (the playground)
 * can show the prompt token by token. */
static void add_trace_pieces(tl_server *s, json_t *result) {
    if (!s->vocab) /* upstream without a tokenizer here: the trace keeps its ids */
        return;
    const char *k;
    json_t *f;
    char buf[512];
    json_object_foreach(json_object_get(result, "fields"), k, f) {
        json_t *tr = json_object_get(f, "trace");
        const json_t *ids = json_object_get(tr, "ids");
        if (!json_is_array(ids))
            continue;
        json_t *pieces = json_array();
        size_t i;
        const json_t *id;
        json_array_foreach(ids, i, id) {
            json_int_t t = json_integer_value(id);
            size_t n = t >= 0 && t < s->n_vocab ? tl_vocab_token_bytes(s->vocab, (int32_t)t, true, buf, sizeof buf) : 0;
            json_array_append_new(pieces, json_string_lossy(buf, n < sizeof buf ? n : sizeof buf));
        }
        json_object_set_new(tr, "pieces", pieces);
    }
}

void handle_decide(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    decide_request dr;
    parse_failure f;
    if (!decide_request_parse(req->body, req->body_len, &dr, &f)) {
        reply_json(r, f.status, f.body);
        return;
    }
    tl_error err = {0};
    tl_status st = server_check_prompt(s, "context", dr.context, dr.context_len, &err);
    if (st != TL_OK) {
        reply_status_error(r, st, json_pack("[s,s]", "body", "context"), err.msg);
        decide_request_free(&dr);
        return;
    }
    if (!tl_server_slot_acquire(s)) {
        r->retry_after_s = 1;
        reply_typed_error(r, 429, "overloaded_error", "the server is busy; retry shortly");
        decide_request_free(&dr);
        return;
    }
    tl_decide_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.mode = dr.mode;
    opts.style = dr.style;
    opts.temperature = dr.temperature;
    opts.seed = dr.seed;
    opts.threshold = dr.threshold;
    opts.trace = dr.trace;
    decide_corrections_apply(&dr.corr, &opts);
    json_t *result = NULL;
    st = server_decide(s, req, dr.context, dr.context_len, dr.schema, &opts, &result, &err);
    tl_server_slot_release(s);
    if (st == TL_OK && dr.trace)
        add_trace_pieces(s, result);
    if (st == TL_OK) {
        reply_json(r, 200, result);
    } else {
        reply_status_error(r, st, json_pack("[s,s]", "body", "schema"), err.msg);
    }
    decide_request_free(&dr);
}
