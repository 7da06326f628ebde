/* server.c: the server's life cycle and its libmicrohttpd glue: bind,
 * collect request bodies under the size limit (a POST /v1/files body is
 * handed to files_api.c as it arrives, under its own limit), check the API
 * key, route to the endpoint handlers, log one line per request, shut down
 * cleanly.
 *
 * MHD runs one thread per connection, so a handler may block on the
 * shared backend without holding up other clients; while it waits it polls its
 * socket to notice a client that went away. */
#define _GNU_SOURCE /* POLLRDHUP, strncasecmp */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/metrics.h"
#include "server/server_internal.h"
#include "typellm/common.h"
#include "typellm/template.h"
#include "typellm/util.h"

#define SERVER_MAX_CONNECTIONS 512

/* ---- life cycle ------------------------------------------------------------- */

/* The state every server has, from params: defaults filled in, locks,
 * metrics. NULL when out of memory. */
static tl_server *server_alloc(const tl_server_params *params) {
    tl_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = *params;
    s->host = strdup(params->host ? params->host : "127.0.0.1");
    s->api_key = params->api_key ? strdup(params->api_key) : NULL;
    s->p.host = s->host;
    s->p.api_key = s->api_key;
    if (!s->p.max_body) s->p.max_body = 8u << 20;
    s->od_max_questions = params->max_questions > 0 && params->max_questions < OD_MAX_QUESTIONS ? params->max_questions
                                                                                                 : OD_MAX_QUESTIONS;
    if (s->p.max_questions <= 0) s->p.max_questions = 256;
    if (s->p.max_new_tokens <= 0) s->p.max_new_tokens = 4096;
    if (s->p.max_queue <= 0) s->p.max_queue = 64;
    if (s->p.request_timeout_s <= 0) s->p.request_timeout_s = 300;
    if (s->p.header_timeout_s <= 0) s->p.header_timeout_s = 10;
    if (s->p.body_timeout_s <= 0) s->p.body_timeout_s = 60;
    if (s->p.max_client_conns <= 0) s->p.max_client_conns = 64;
    if (s->p.drain_timeout_s <= 0) s->p.drain_timeout_s = 30;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->streams_cv, NULL);
    s->started_s = tl_now_s();
    s->started_wall = time(NULL);
    s->metrics = metrics_new(server_n_routes());
    if (!s->host || (params->api_key && !s->api_key) || !s->metrics) {
        tl_server_free(s);
        return NULL;
    }
    return s;
}

/* The token-count bound (max_token_bytes) and the --chat-template check,
 * once s->vocab (may be NULL upstream), n_ctx and max_tokens are known. */
static tl_status server_vocab_setup(tl_server *s, tl_error *err) {
    if (s->p.max_tokens <= 0 || (s->n_ctx > 0 && s->p.max_tokens > s->n_ctx))
        s->p.max_tokens = s->n_ctx > 0 ? s->n_ctx : INT32_MAX;
    char tb[512];
    for (int32_t id = 0; s->vocab && id < tl_vocab_n_tokens(s->vocab); id++) {
        size_t n = tl_vocab_token_bytes(s->vocab, id, true, tb, sizeof tb);
        size_t m = tl_vocab_token_bytes(s->vocab, id, false, tb, sizeof tb);
        n = n > m ? n : m;
        if (n > s->max_token_bytes)
            s->max_token_bytes = n;
    }
    if (s->max_token_bytes == 0) /* no vocabulary here: no token is longer than the 512 bytes checked above */
        s->max_token_bytes = s->vocab ? 1 : sizeof tb;
    if (!s->p.chat_template && !s->p.chat_template_jinja)
        return TL_OK;
    tl_status st = TL_OK;
    if (s->vocab) {
        /* an override that cannot render a plain conversation fails here, not on every request */
        tl_chat_prompt_opts po = {.template_name = s->p.chat_template,
                                  .template_jinja = s->p.chat_template_jinja,
                                  .add_generation_prompt = true};
        tl_chat_prompt cp;
        st = tl_chat_prompt_build(s->vocab, "[{\"role\":\"user\",\"content\":\"Hello\"}]", &po, &cp, err);
        tl_chat_prompt_free(&cp);
    } else if (s->p.chat_template_jinja) { /* upstream without a tokenizer: the source must at least parse */
        tl_template *t = NULL;
        st = tl_template_parse(s->p.chat_template_jinja, strlen(s->p.chat_template_jinja), &t, err);
        tl_template_free(t);
    }
    return st ? tl_error_wrap(err, "server: --chat-template") : TL_OK;
}

/* The last step of both constructors: after st (the model's or the
 * upstream's setup), the Files and Batch API's store (--data-dir, which may
 * resume batches and so needs the backend); *out = s, or s freed. */
static tl_status server_finish(tl_server *s, tl_status st, tl_server **out, tl_error *err) {
    if (st == TL_OK && s->p.data_dir)
        st = batch_store_open(s, err);
    if (st != TL_OK) {
        tl_server_free(s);
        return st;
    }
    *out = s;
    return TL_OK;
}

tl_status tl_server_new(const tl_model *m, const tl_server_params *params, tl_server **out, tl_error *err) {
    *out = NULL;
    if (!m)
        return tl_error_set(err, TL_ERR_INVALID, "server: no model (tl_server_new_upstream serves a remote engine)");
    tl_server *s = server_alloc(params);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "server: out of memory");
    s->model = m;
    s->model_name = tl_model_name(m);
    s->vocab = tl_model_vocab(m);
    s->n_vocab = tl_model_n_vocab(m);
    s->n_ctx = params->n_ctx > 0 ? params->n_ctx : tl_model_n_ctx_train(m);
    tl_status st = server_vocab_setup(s, err);
    tl_shared_params sp = {.session = {.n_threads = params->n_threads, .cache_mb = params->cache_mb, .n_ctx = s->n_ctx,
                                       .extend_ctx = params->extend_ctx, .cache_type_k = params->cache_type_k,
                                       .cache_type_v = params->cache_type_v},
                           .max_batch_seqs = 0 /* the backend default */,
                           .on_step = metrics_on_step, .on_step_ctx = s->metrics};
    sp.max_step_tokens = params->step_tokens;
    if (st == TL_OK)
        st = tl_backend_shared_new(m, &sp, &s->shared, err);
    return server_finish(s, st, out, err);
}

tl_status tl_server_new_upstream(const tl_remote_params *upstream, const tl_server_params *params, tl_server **out,
                                 tl_error *err) {
    *out = NULL;
    if (!upstream || !upstream->conn.base_url)
        return tl_error_set(err, TL_ERR_INVALID, "server: no upstream URL");
    tl_server *s = server_alloc(params);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "server: out of memory");
    tl_status st = upstream_pool_new(upstream, (size_t)s->p.max_queue, &s->upstream, err);
    if (st == TL_OK) {
        const tl_backend *b = upstream_pool_probe(s->upstream);
        tl_backend_caps caps;
        tl_backend_capabilities(b, &caps);
        snprintf(s->upstream_desc, sizeof s->upstream_desc, "%s server at %s", caps.engine,
                 upstream_pool_url(s->upstream));
        s->model_name = tl_backend_model_name(b);
        s->vocab = tl_backend_vocab(b);
        s->n_vocab = tl_backend_n_vocab(b);
        s->n_ctx = tl_backend_n_ctx(b);
        st = server_vocab_setup(s, err);
        if (!st && !(caps.flags & TL_CAP_CHAT_TEMPLATE) && !s->p.chat_template && !s->p.chat_template_jinja &&
            s->p.log) /* said once here rather than only in each refused request */
            fprintf(s->p.log,
                    "typellm serve: the %s sends no chat template: chat-style decisions are refused (422) until "
                    "--chat-template NAME|FILE or --tokenizer M.gguf names one; record-style ones work\n",
                    s->upstream_desc);
    }
    return server_finish(s, st, out, err);
}

void tl_server_free(tl_server *s) {
    if (!s)
        return;
    tl_server_stop(s);
    conn_guard_free(s->guard);
    tl_backend_free(s->shared);
    upstream_pool_free(s->upstream);
    metrics_free(s->metrics);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->streams_cv);
    free(s->host);
    free(s->api_key);
    free(s);
}

int tl_server_port(const tl_server *s) { return s->port; }

bool tl_server_slot_acquire(tl_server *s) {
    pthread_mutex_lock(&s->mu);
    bool ok = s->in_flight < s->p.max_queue;
    if (ok)
        s->in_flight++;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void tl_server_slot_release(tl_server *s) {
    pthread_mutex_lock(&s->mu);
    s->in_flight--;
    pthread_mutex_unlock(&s->mu);
}

void tl_server_stream_begin(tl_server *s) {
    pthread_mutex_lock(&s->mu);
    s->streams++;
    pthread_mutex_unlock(&s->mu);
}

void tl_server_stream_done(tl_server *s) {
    pthread_mutex_lock(&s->mu);
    s->streams--;
    pthread_cond_broadcast(&s->streams_cv);
    pthread_mutex_unlock(&s->mu);
}

uint64_t tl_server_next_rid(tl_server *s) {
    pthread_mutex_lock(&s->mu);
    uint64_t r = ++s->next_rid;
    pthread_mutex_unlock(&s->mu);
    return r;
}

sched_wait server_wait_for(const tl_server *s, const tl_http_request *req) {
    sched_wait w = {0};
    w.deadline_s = tl_now_s() + s->p.request_timeout_s;
    w.cancelled = req->client_gone;
    w.ctx = req->client_ctx;
    w.priority = req->priority;
    return w;
}

tl_status server_backend_take(tl_server *s, const sched_wait *w, tl_backend **out, tl_error *err) {
    return s->upstream ? upstream_acquire(s->upstream, w, out, err) : tl_backend_shared_client(s->shared, w, out, err);
}

void server_backend_done(tl_server *s, tl_backend *b) {
    if (s->upstream)
        upstream_release(s->upstream, b);
    else
        tl_backend_free(b);
}

/* One call through a client of the shared backend carrying w. */
tl_status server_eval(tl_server *s, const sched_wait *w, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err) {
    tl_backend *c = NULL;
    tl_status st = tl_backend_shared_client(s->shared, w, &c, err);
    tl_usage u = {0};
    if (!st)
        st = tl_backend_eval(c, seqs, k, &u, err);
    tl_backend_free(c);
    server_usage_note(&u);
    tl_usage_add(usage, &u);
    return st;
}

tl_status server_eval_last(tl_server *s, const sched_wait *w, const int32_t *ids, size_t n, size_t k_last,
                           float *logits, tl_usage *usage, tl_error *err) {
    tl_backend *c = NULL;
    tl_status st = tl_backend_shared_client(s->shared, w, &c, err);
    tl_usage u = {0};
    if (!st)
        st = tl_backend_eval_last(c, ids, n, k_last, logits, &u, err);
    tl_backend_free(c);
    server_usage_note(&u);
    tl_usage_add(usage, &u);
    return st;
}

tl_status server_count_tokens(const tl_server *s, const char *text, size_t n, size_t *n_tok, tl_error *err) {
    size_t lower = (n + s->max_token_bytes - 1) / s->max_token_bytes;
    if (lower > (size_t)s->p.max_tokens) {
        *n_tok = lower;
        return tl_error_set(err, TL_ERR_LIMIT, "the text (%zu bytes) is at least %zu tokens; this server accepts %d", n,
                            lower, s->p.max_tokens);
    }
    if (!s->vocab) { /* upstream without a tokenizer here: the bound; the decision's own tokenizing checks the rest */
        *n_tok = lower;
        return TL_OK;
    }
    int32_t *ids = NULL;
    tl_status st = tl_vocab_tokenize(s->vocab, text, n, false, false, &ids, n_tok, err);
    free(ids);
    return st;
}

tl_status server_check_prompt(const tl_server *s, const char *what, const char *text, size_t n, tl_error *err) {
    size_t n_tok = 0;
    tl_status st = server_count_tokens(s, text, n, &n_tok, err);
    if (st == TL_ERR_LIMIT || (st == TL_OK && n_tok > (size_t)s->p.max_tokens))
        return tl_error_set(err, TL_ERR_LIMIT,
                            "the %s is %s%zu tokens; this server accepts %d per request (--max-tokens, --ctx-size)",
                            what, st == TL_ERR_LIMIT ? "at least " : "", n_tok, s->p.max_tokens);
    if (st)
        tl_error_wrap(err, "%s", what);
    return st;
}

/* ---- routing (socket-free) ----------------------------------------------------- */

/* Constant-time comparison of the presented key with ours. */
static bool key_matches(const char *want, const char *got) {
    size_t wl = strlen(want), gl = strlen(got);
    unsigned diff = (unsigned)(wl ^ gl);
    for (size_t i = 0; i < gl; i++)
        diff |= (unsigned char)got[i] ^ (unsigned char)want[i % (wl ? wl : 1)];
    return diff == 0 && wl == gl;
}

/* The error dialect of a route: what its clients parse. */
typedef enum route_dialect {
    DIALECT_SGLANG,  /* {"error":{"message","code"}} */
    DIALECT_FASTAPI, /* {"detail":...} (System One, /v1/decide) */
    DIALECT_OPENAI   /* {"error":{"message","type","param","code"}} */
} route_dialect;

/* What a route needs here beyond the server: over an upstream engine a
 * route whose need is not met answers 501. */
typedef enum route_needs {
    NEEDS_NOTHING,
    NEEDS_VOCAB, /* the model's tokenizer (the model's, or upstream --tokenizer) */
    NEEDS_MODEL  /* the local model's logits or session */
} route_needs;

typedef struct route {
    const char *method; /* NULL: GET or POST */
    const char *path;
    void (*handler)(tl_server *s, const tl_http_request *req, tl_http_reply *r);
    route_dialect dialect;
    route_needs needs;
} route;

void reply_health_ok(tl_http_reply *r) {
    r->status = 200;
    r->content_type = "text/plain";
    tl_strbuf_clear(&r->body);
}

static void handle_health(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    (void)s;
    (void)req;
    reply_health_ok(r);
}

static const route routes[] = {
    {"GET", "/health", handle_health, DIALECT_SGLANG, NEEDS_NOTHING},
    {"GET", "/health_generate", handle_health_generate, DIALECT_SGLANG, NEEDS_NOTHING},
    {"POST", "/generate", handle_generate, DIALECT_SGLANG, NEEDS_MODEL},
    {"POST", "/tokenize", handle_tokenize, DIALECT_SGLANG, NEEDS_VOCAB},
    {"POST", "/v1/tokenize", handle_tokenize, DIALECT_SGLANG, NEEDS_VOCAB},
    {"POST", "/detokenize", handle_detokenize, DIALECT_SGLANG, NEEDS_VOCAB},
    {"POST", "/v1/detokenize", handle_detokenize, DIALECT_SGLANG, NEEDS_VOCAB},
    {"GET", "/model_info", handle_model_info, DIALECT_SGLANG, NEEDS_MODEL},
    {"GET", "/get_model_info", handle_model_info, DIALECT_SGLANG, NEEDS_MODEL},
    {NULL, "/flush_cache", handle_flush_cache, DIALECT_SGLANG, NEEDS_MODEL},
    {"POST", "/v1/systemone", handle_systemone, DIALECT_FASTAPI, NEEDS_NOTHING},
    {"GET", "/v1/models", handle_models, DIALECT_FASTAPI, NEEDS_NOTHING},
    {"POST", "/v1/decide", handle_decide, DIALECT_FASTAPI, NEEDS_NOTHING},
    {"POST", "/v1/decisions", handle_decisions, DIALECT_OPENAI, NEEDS_NOTHING},
    {"POST", "/v1/chat/completions", handle_chat_completions, DIALECT_OPENAI, NEEDS_MODEL},
    {"POST", "/v1/completions", handle_completions, DIALECT_OPENAI, NEEDS_MODEL},
    {"GET", "/", handle_ui_page, DIALECT_SGLANG, NEEDS_NOTHING},
    {"GET", "/ui/app.js", handle_ui_script, DIALECT_SGLANG, NEEDS_NOTHING},
    {"GET", "/ui/style.css", handle_ui_style, DIALECT_SGLANG, NEEDS_NOTHING},
    {"GET", "/ui/examples.json", handle_ui_examples, DIALECT_SGLANG, NEEDS_NOTHING},
    {"GET", "/metrics", handle_metrics, DIALECT_SGLANG, NEEDS_NOTHING},
};

size_t server_n_routes(void) { return sizeof routes / sizeof routes[0]; }

const char *server_route_path(size_t i) { return i < server_n_routes() ? routes[i].path : "other"; }

int server_route_index(const char *path) {
    for (size_t i = 0; path && i < server_n_routes(); i++)
        if (!strcmp(routes[i].path, path))
            return (int)i;
    return -1;
}

/* Routes answered without the API key: /health, the playground (which asks
 * for the key itself) and, with --metrics-public, /metrics. */
static bool route_is_public(const tl_server *s, const char *path) {
    return !strcmp(path, "/health") || !strcmp(path, "/") || !strncmp(path, "/ui/", 4) ||
           (s->p.metrics_public && !strcmp(path, "/metrics"));
}

/* Auth failures and oversize bodies, in the route's dialect. */
static void reply_auth_error(tl_http_reply *r, route_dialect d, bool missing) {
    if (d == DIALECT_OPENAI)
        reply_openai_error(r, 401, "invalid_request_error", NULL, missing ? NULL : "invalid_api_key",
                           missing ? "You didn't provide an API key: send Authorization: Bearer KEY"
                                   : "Incorrect API key provided");
    else
        reply_typed_error(r, missing ? 403 : 401, "authentication_error", "%s",
                          missing ? "missing API key: send Authorization: Bearer KEY" : "invalid API key");
}

static void reply_too_large(tl_http_reply *r, route_dialect d, size_t limit) {
    const char *fmt = "the request body exceeds this server's limit of %zu bytes (--max-body)";
    if (d == DIALECT_OPENAI)
        reply_openai_error(r, 413, "invalid_request_error", NULL, "request_too_large", fmt, limit);
    else if (d == DIALECT_FASTAPI)
        reply_typed_error(r, 413, "request_too_large", fmt, limit);
    else
        reply_sglang_error(r, 413, fmt, limit);
}

/* 501 for a route whose need (route_needs) is not met over an upstream engine. */
static void reply_upstream_unsupported(const tl_server *s, tl_http_reply *r, const route *rt) {
    const char *why = rt->needs == NEEDS_VOCAB
                          ? "which needs the model's tokenizer here: start this server with --tokenizer M.gguf, or"
                          : "which gives no full-vocabulary logits (capability full_logits): this server answers "
                            "/v1/decide, /v1/decisions and /v1/systemone;";
    const char *fmt = "%s: this server is a decision front end for the %s, %s send %s to the engine itself";
    if (rt->dialect == DIALECT_OPENAI)
        reply_openai_error(r, 501, "invalid_request_error", NULL, "unsupported_by_upstream", fmt, rt->path,
                           s->upstream_desc, why, rt->path);
    else if (rt->dialect == DIALECT_FASTAPI)
        reply_typed_error(r, 501, "unsupported_by_upstream", fmt, rt->path, s->upstream_desc, why, rt->path);
    else
        reply_sglang_error(r, 501, fmt, rt->path, s->upstream_desc, why, rt->path);
}

bool server_authorized(const tl_server *s, const char *path, const char *authorization) {
    if (!s->api_key || route_is_public(s, path))
        return true;
    const char *key = authorization && !strncasecmp(authorization, "Bearer ", 7) ? authorization + 7 : NULL;
    return key && key_matches(s->api_key, key);
}

void tl_server_handle(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    r->status = 500;
    r->stream_fd = -1;
    r->content_type = "application/json";
    r->retry_after_s = 0;
    const char *path = req->path ? req->path : "/";
    const char *method = req->method ? req->method : "GET";
    const route *rt = NULL;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(routes[i].path, path))
            continue;
        path_known = true;
        if (routes[i].method ? !strcmp(routes[i].method, method)
                             : (!strcmp(method, "GET") || !strcmp(method, "POST"))) {
            rt = &routes[i];
            break;
        }
    }
    static const route files_batches = {NULL, "", handle_files_batches, DIALECT_OPENAI, NEEDS_NOTHING};
    if (!rt && files_batches_path(path))
        rt = &files_batches; /* ids in the path: the handler routes by method and path */
    bool fastapi = !strncmp(path, "/v1/", 4);
    if (!rt) {
        int code = path_known ? 405 : 404;
        if (fastapi)
            reply_json(r, code, json_pack("{s:s}", "detail", code == 404 ? "Not Found" : "Method Not Allowed"));
        else
            reply_sglang_error(r, code, "%s %s: %s", method, path, code == 404 ? "no such endpoint" : "method not allowed");
        return;
    }
    if (!server_authorized(s, path, req->authorization)) {
        reply_auth_error(r, rt->dialect, !req->authorization || !*req->authorization);
        return;
    }
    if (req->body_too_large) {
        reply_too_large(r, rt->dialect, s->p.max_body);
        return;
    }
    pthread_mutex_lock(&s->mu);
    bool draining = s->draining;
    pthread_mutex_unlock(&s->mu);
    if (draining) {
        r->retry_after_s = 1;
        const char *msg = "the server is shutting down; retry on another instance or after its restart";
        if (rt->dialect == DIALECT_OPENAI)
            reply_openai_error(r, 503, "server_error", NULL, "server_shutting_down", "%s", msg);
        else if (rt->dialect == DIALECT_FASTAPI)
            reply_typed_error(r, 503, "overloaded_error", "%s", msg);
        else
            reply_sglang_error(r, 503, "%s", msg);
        return;
    }
    if (s->upstream && (rt->needs == NEEDS_MODEL || (rt->needs == NEEDS_VOCAB && !s->vocab))) {
        reply_upstream_unsupported(s, r, rt);
        return;
    }
    rt->handler(s, req, r);
}

/* ---- libmicrohttpd glue -------------------------------------------------------- */

typedef struct conn_state {
    tl_strbuf body;
    size_t seen;     /* body bytes received, kept or dropped */
    bool too_large;
    bool replied;  /* a response is queued (early for an oversize body) */
    /* POST /v1/files: the body goes here as it arrives, not into body
     * (files_api.c writes the file to disk), bounded by --max-file-mb. */
    files_upload *upload;
    bool upload_failed; /* too large or malformed: the rest is dropped */
    struct MHD_Connection *conn;
    double t0;
} conn_state;

/* Oversize bodies up to this many bytes are drained before the 413. */
static size_t discard_limit(const tl_server *s) {
    size_t lim = (size_t)64 << 20;
    return s->p.max_body > lim / 4 ? s->p.max_body * 4 : lim;
}

/* POST /v1/files bodies may take the body deadline plus their size at this
 * rate (bytes/s): 200 MiB at 256 KiB/s is 800 s more. */
#define UPLOAD_MIN_RATE (256.0 * 1024)

/* A failed upload's bytes are dropped up to this many before the reply. */
static uint64_t upload_drop_limit(const tl_server *s) {
    uint64_t file = s->p.max_file_bytes ? s->p.max_file_bytes : FILES_DEFAULT_MAX_BYTES;
    return file + discard_limit(s);
}

/* True when the peer closed its side (or the socket failed). */
static bool mhd_client_gone(void *ctx) {
    struct MHD_Connection *c = ctx;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    struct pollfd pfd = {.fd = ci->connect_fd, .events = POLLRDHUP};
    if (poll(&pfd, 1, 0) <= 0)
        return false;
    return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static enum MHD_Result send_reply(struct MHD_Connection *c, tl_http_reply *r) {
    struct MHD_Response *resp;
    if (r->stream_fd >= 0) {
        resp = MHD_create_response_from_pipe(r->stream_fd); /* MHD closes the fd */
        if (!resp) {
            close(r->stream_fd);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
    } else {
        size_t len = r->body.len;
        char *data = tl_strbuf_detach(&r->body);
        resp = MHD_create_response_from_buffer(len, data ? data : (char *)"",
                                               data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
            free(data);
            return MHD_NO;
        }
    }
    MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type : "application/json");
    if (r->retry_after_s > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after_s);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* One line per request (metrics.h's format), written with one fwrite so
 * lines of concurrent requests never interleave. */
static void log_request(tl_server *s, const request_log_line *l) {
    if (!s->p.log)
        return;
    tl_strbuf line = TL_STRBUF_INIT;
    request_log_format(&line, l, s->p.log_json);
    fwrite(line.buf, 1, line.len, s->p.log);
    fflush(s->p.log);
    tl_strbuf_free(&line);
}

static conn_entry *guard_entry(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    tl_server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs)
            return MHD_NO;
        cs->conn = c;
        cs->t0 = tl_now_s();
        *con_cls = cs;
        conn_guard_body(s->guard, guard_entry(c));
        pthread_mutex_lock(&s->mu);
        s->requests_open++;
        pthread_mutex_unlock(&s->mu);
        /* An oversize body is read and dropped (no memory held) so the client
         * gets its 413 instead of a reset connection, unless it is absurdly
         * large: then the 413 goes out at once and the connection closes. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
        if (!strcmp(method, "POST") && !strcmp(url, "/v1/files") && s->batches &&
            server_authorized(s, url, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"))) {
            if (!(cs->upload = files_upload_begin(s, declared)))
                return MHD_NO;
            cs->too_large = true; /* nothing goes into body */
            /* a large file at a slow client's pace: at least UPLOAD_MIN_RATE bytes/s */
            uint64_t expect = declared && declared < upload_drop_limit(s) ? declared : upload_drop_limit(s);
            conn_guard_body_extend(s->guard, guard_entry(c), (double)expect / UPLOAD_MIN_RATE);
            if (declared <= upload_drop_limit(s))
                return MHD_YES;
            cs->upload_failed = true; /* it says it is too large: the 413 goes out at once */
        } else {
            if (declared > s->p.max_body)
                cs->too_large = true;
            if (declared <= discard_limit(s))
                return MHD_YES;
        }
    }
    if (*upload_size && cs->upload) {
        cs->seen += *upload_size;
        if (!cs->upload_failed && !files_upload_feed(cs->upload, upload_data, *upload_size))
            cs->upload_failed = true;
        if (!cs->upload_failed || cs->seen <= upload_drop_limit(s)) {
            *upload_size = 0;
            return MHD_YES;
        }
    } else if (*upload_size) {
        cs->seen += *upload_size;
        if (!cs->too_large) {
            if (cs->body.len + *upload_size <= s->p.max_body &&
                tl_strbuf_append(&cs->body, upload_data, *upload_size)) {
                *upload_size = 0;
                return MHD_YES;
            }
            cs->too_large = true;
            tl_strbuf_free(&cs->body);
        }
        if (cs->seen <= discard_limit(s) || cs->replied) {
            *upload_size = 0; /* dropped */
            return MHD_YES;
        }
    }
    if (cs->replied) {
        *upload_size = 0;
        return MHD_YES;
    }
    *upload_size = 0;
    cs->replied = true;
    conn_guard_answering(s->guard, guard_entry(c));
    tl_http_request req = {
        .method = method,
        .path = url,
        .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
        .body = cs->body.buf ? cs->body.buf : "",
        .body_len = cs->body.len,
        .body_too_large = cs->too_large,
        .client_gone = mhd_client_gone,
        .client_ctx = c,
        .allow_stream = true,
    };
    tl_http_reply reply = {.status = 500, .stream_fd = -1, .content_type = "application/json", .body = TL_STRBUF_INIT};
    request_log_line line = {.id = __atomic_add_fetch(&s->next_log_id, 1, __ATOMIC_RELAXED), .method = method,
                             .endpoint = url, .bytes_in = cs->upload ? cs->seen : cs->body.len};
    server_usage_begin(&line.usage);
    if (cs->upload) {
        files_upload_end(cs->upload, &reply);
        cs->upload = NULL;
    } else {
        tl_server_handle(s, &req, &reply);
    }
    server_usage_begin(NULL);
    double dt = tl_now_s() - cs->t0;
    metrics_request(s->metrics, server_route_index(url), reply.status, dt, line.usage.prompt_tokens > 0);
    line.status = reply.status;
    line.bytes_out = reply.body.len;
    line.ms = dt * 1e3;
    log_request(s, &line);
    enum MHD_Result ret = send_reply(c, &reply);
    tl_http_reply_free(&reply);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    tl_server *s = cls;
    (void)toe;
    conn_state *cs = *con_cls;
    if (cs) {
        files_upload_cancel(cs->upload); /* the client left mid-upload: nothing is kept */
        tl_strbuf_free(&cs->body);
        free(cs);
        *con_cls = NULL;
        conn_guard_idle(s->guard, guard_entry(c));
        pthread_mutex_lock(&s->mu);
        s->requests_open--;
        pthread_cond_broadcast(&s->streams_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    tl_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? conn_guard_open(s->guard, ci->connect_fd) : NULL;
    } else {
        conn_guard_close(s->guard, *socket_context);
        *socket_context = NULL;
    }
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* URL decoding as MHD's default (%HH), except that %00 stays as it is: a
 * NUL would cut the path short ("/v1/decide%00" must not be /v1/decide). */
static size_t unescape_keep_nul(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex_digit(r[1])) >= 0 && (lo = hex_digit(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

tl_status tl_server_start(tl_server *s, tl_error *err) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (s->p.port < 0 || s->p.port > 65535)
        return tl_error_set(err, TL_ERR_INVALID, "server: port %d out of range", s->p.port);
    if (inet_pton(AF_INET, s->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)s->p.port);
        addr = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, s->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)s->p.port);
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        return tl_error_set(err, TL_ERR_INVALID, "server: --host '%s' is not a numeric IPv4/IPv6 address", s->host);
    }
    if (!s->guard && !(s->guard = conn_guard_new(s->p.header_timeout_s, s->p.body_timeout_s)))
        return tl_error_set(err, TL_ERR_NOMEM, "server: cannot start the connection watchdog");
    /* 512 connections in all, at most max_client_conns from one address, so
     * one client cannot take every slot from /health and the others. */
    s->daemon = MHD_start_daemon(flags, (uint16_t)s->p.port, NULL, NULL, on_request, s,
                                 MHD_OPTION_SOCK_ADDR, addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_UNESCAPE_CALLBACK, unescape_keep_nul, NULL,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVER_MAX_CONNECTIONS,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->p.max_client_conns,
                                 MHD_OPTION_END);
    if (!s->daemon)
        return tl_error_set(err, TL_ERR_IO, "server: cannot listen on %s:%d (in use or not permitted)", s->host,
                            s->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : s->p.port;
    return TL_OK;
}

void tl_server_stop(tl_server *s) {
    if (!s)
        return;
    batch_store_close(s); /* batch records in flight finish before the drain refuses requests */
    if (s->daemon) {
        /* Drain: new requests get 503; running ones (and their replies) finish. */
        double deadline = tl_now_s() + s->p.drain_timeout_s;
        pthread_mutex_lock(&s->mu);
        s->draining = true;
        while ((s->in_flight > 0 || s->streams > 0 || s->requests_open > 0) && tl_now_s() < deadline) {
            struct timespec ts = realtime_in_ms(50);
            pthread_cond_timedwait(&s->streams_cv, &s->mu, &ts);
        }
        pthread_mutex_unlock(&s->mu);
        MHD_stop_daemon(s->daemon);
        s->daemon = NULL;
    }
    /* Streams still generating stop at their next write (the pipe's reader is gone). */
    pthread_mutex_lock(&s->mu);
    while (s->streams > 0)
        pthread_cond_wait(&s->streams_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}
