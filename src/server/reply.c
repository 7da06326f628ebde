/* reply.c: building HTTP replies, and the two error dialects the server
 * speaks: SGLang's {"error":{"message","code"}} on its native endpoints and
 * FastAPI's {"detail":...} on the System One / decide endpoints (which
 * clients parse: a 422 carries a list with loc paths, auth and limit errors
 * an object with error_type), and OpenAI's {"error":{"message","type",
 * "param","code"}} on /v1/decisions, /v1/chat/completions, /v1/completions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/server_internal.h"
#include "typellm/common.h"

void tl_http_reply_free(tl_http_reply *r) { tl_strbuf_free(&r->body); }

void reply_json(tl_http_reply *r, int status, json_t *j) {
    r->status = status;
    r->content_type = "application/json";
    tl_strbuf_clear(&r->body);
    char *text = j ? tl_json_dumps(j, JSON_COMPACT) : NULL;
    if (text) {
        tl_strbuf_puts(&r->body, text);
        free(text);
    } else {
        r->status = 500;
        tl_strbuf_puts(&r->body, "{\"error\":{\"message\":\"out of memory\",\"code\":500}}");
    }
    json_decref(j);
}

static void vformat(char *buf, size_t cap, const char *fmt, va_list ap) {
    vsnprintf(buf, cap, fmt, ap);
}

void reply_sglang_error(tl_http_reply *r, int status, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_json(r, status, json_pack("{s:{s:o,s:i}}", "error", "message", json_string_lossy(msg, strlen(msg)), "code", status));
}

void reply_detail_error(tl_http_reply *r, int status, json_t *loc, const char *type, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_json(r, status, json_pack("{s:[{s:o,s:o,s:s}]}", "detail", "loc", loc ? loc : json_array(), "msg",
                                    json_string_lossy(msg, strlen(msg)), "type", type));
}

void reply_typed_error(tl_http_reply *r, int status, const char *error_type, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_json(r, status, json_pack("{s:{s:s,s:o}}", "detail", "error_type", error_type, "message",
                                    json_string_lossy(msg, strlen(msg))));
}

void reply_openai_error(tl_http_reply *r, int status, const char *type, const char *param, const char *code,
                        const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_json(r, status, openai_error_body(type, param, code, msg));
}

void fail_openai(parse_failure *f, int status, const char *param, const char *code, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    f->status = status;
    f->body = openai_error_body("invalid_request_error", param, code, msg);
}

const char *openai_error_type(int status) {
    return status == 429 ? "rate_limit_error"
           : status == 504 ? "timeout_error"
           : status >= 500 ? "server_error"
                           : "invalid_request_error";
}

json_t *openai_error_body(const char *type, const char *param, const char *code, const char *msg) {
    return json_pack("{s:{s:o,s:s,s:o,s:o}}", "error", "message", json_string_lossy(msg, strlen(msg)), "type", type,
                     "param", param ? json_string_lossy(param, strlen(param)) : json_null(), "code",
                     code ? json_string(code) : json_null());
}

/* The one map from a library status to HTTP. The typed APIs (/v1/decide,
 * /v1/systemone) answer every bad-input status with a FastAPI-style 422; the
 * SGLang API answers bad sampling parameters and over-long inputs with 400,
 * as SGLang does; OpenAI's endpoints (/v1/decisions, chat, completions)
 * answer every bad request 400 as OpenAI does, an input past the context with
 * code context_length_exceeded. Statuses not listed are server faults: 500. */
static const struct {
    tl_status st;
    int typed, sglang, openai;
    const char *error_type;  /* typed APIs' detail.error_type (422s carry a detail list instead) */
    const char *openai_code; /* OpenAI's error.code, or NULL (the type: openai_error_type) */
} http_map[] = {
    {TL_OK, 200, 200, 200, NULL, NULL},
    {TL_ERR_INVALID, 422, 400, 400, "value_error", "undecidable"},
    {TL_ERR_SCHEMA, 422, 422, 400, "value_error", "undecidable"},
    {TL_ERR_UNSUPPORTED, 422, 422, 400, "value_error", "undecidable"},
    {TL_ERR_FORMAT, 422, 400, 400, "value_error", "undecidable"},
    {TL_ERR_LIMIT, 413, 400, 400, "tokens_exceeded", "context_length_exceeded"},
    {TL_ERR_TIMEOUT, 504, 504, 504, "timeout_error", "timeout"},
    {TL_ERR_CANCELLED, 499, 499, 499, "api_error", "cancelled"},
    {TL_ERR_NOMEM, 503, 503, 503, "api_error", NULL},
    /* serve --upstream: the engine behind this server failed (the message names it) */
    {TL_ERR_NETWORK, 502, 502, 502, "upstream_error", "upstream_unreachable"},
    {TL_ERR_REMOTE, 502, 502, 502, "upstream_error", "upstream_error"},
};
#define N_HTTP_MAP (sizeof http_map / sizeof http_map[0])

/* The row of st, or -1 (a server fault). */
static int http_row(tl_status st) {
    for (size_t i = 0; i < N_HTTP_MAP; i++)
        if (http_map[i].st == st)
            return (int)i;
    return -1;
}

int http_status_for(tl_status st, http_api api) {
    int i = http_row(st);
    if (i < 0)
        return 500;
    return api == HTTP_API_SGLANG ? http_map[i].sglang : api == HTTP_API_OPENAI ? http_map[i].openai : http_map[i].typed;
}

int generate_error_status(tl_status st, int phase, http_api api) {
    if (phase == 413)
        return api == HTTP_API_OPENAI ? 400 : 413;
    int code = http_status_for(st, api);
    if (phase == 400 && code >= 400 && code < 500 && st != TL_ERR_CANCELLED)
        return 400;
    return code;
}

void reply_status_error(tl_http_reply *r, tl_status st, json_t *loc, const char *msg) {
    int i = http_row(st);
    const char *type = i >= 0 && http_map[i].error_type ? http_map[i].error_type : "api_error";
    int code = http_status_for(st, HTTP_API_TYPED);
    if (code == 422)
        reply_detail_error(r, 422, loc, type, "%s", msg);
    else {
        json_decref(loc);
        reply_typed_error(r, code, type, "%s", msg);
    }
}

void reply_openai_status_error(tl_http_reply *r, tl_status st, const char *param, const char *msg) {
    int i = http_row(st), status = http_status_for(st, HTTP_API_OPENAI);
    const char *type = openai_error_type(status);
    bool client_fault = status >= 400 && status < 500;
    reply_openai_error(r, status, type, client_fault ? param : NULL, i >= 0 ? http_map[i].openai_code : NULL, "%s",
                       msg);
}

json_t *parse_json_body(const char *body, size_t len, bool fastapi_style, parse_failure *fail) {
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
    if (root)
        return root;
    char msg[400];
    snprintf(msg, sizeof msg, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
    /* FastAPI answers malformed JSON with 422 and a json_invalid detail entry
     * (what System One clients parse); SGLang with 400. */
    fail->status = fastapi_style ? 422 : 400;
    /* jansson's message may quote the offending bytes, which need not be UTF-8. */
    json_t *m = json_string_lossy(msg, strlen(msg));
    if (fastapi_style)
        fail->body = json_pack("{s:[{s:[s,i],s:o,s:s}]}", "detail", "loc", "body", je.position, "msg", m, "type",
                               "json_invalid");
    else
        fail->body = json_pack("{s:{s:o,s:i}}", "error", "message", m, "code", 400);
    return NULL;
}

json_t *parse_json_body_openai(const char *body, size_t len, parse_failure *fail) {
    json_error_t je;
    json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
    if (root)
        return root;
    char msg[400];
    snprintf(msg, sizeof msg, "We could not parse the JSON body of your request: line %d, column %d: %s", je.line,
             je.column, je.text);
    fail->status = 400;
    fail->body = openai_error_body("invalid_request_error", NULL, NULL, msg);
    return NULL;
}
