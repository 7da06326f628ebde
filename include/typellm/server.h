/* typellm/server.h: typellm's HTTP server (`typellm serve`): OpenAI's API
 * (/v1/decisions, /v1/chat/completions, /v1/completions, /v1/models), the
 * SGLang native API (/generate, /tokenize, ...), the System One decision API
 * (/v1/systemone) and /v1/decide, over one loaded model (tl_server_new), or
 * as a decision front end for an engine already running elsewhere
 * (tl_server_new_upstream).
 *
 * Threads: libmicrohttpd runs one thread per connection (so a slow client
 * only holds its own thread); the model runs behind one shared batching
 * backend (tl_backend_shared_new, backend.h): request threads tokenize and
 * validate on their own, then call it at once, and the calls waiting at the
 * same moment run as one batched forward pass over one prefix cache.
 *
 * Every request handler is reachable without a socket through
 * tl_server_handle(), which the tests and fuzz targets call directly. */
#ifndef TYPELLM_SERVER_H
#define TYPELLM_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "model.h"
#include "common.h"
#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_server tl_server;

typedef struct tl_server_params {
    const char *model_path;   /* reported by /model_info; may be NULL */
    const char *host;         /* bind address; NULL: 127.0.0.1 */
    int port;                 /* 0: pick a free port (tl_server_port tells which) */
    const char *api_key;      /* NULL: no auth; else Bearer KEY on all but /health */
    int n_threads;            /* engine threads; <= 0: all cores */
    size_t cache_mb;          /* prefix-cache budget; 0: engine default */
    size_t max_body;          /* request body limit in bytes; 0: 8 MiB */
    size_t max_file_bytes;    /* POST /v1/files uploads (streamed to --data-dir, not held): 0: 200 MiB */
    int max_questions;        /* per /v1/systemone request; 0: 256 */
    int max_tokens;           /* prompt tokens per request (state + question); 0: the model context */
    int max_new_tokens;       /* cap on /generate max_new_tokens; 0: 4096 */
    int max_queue;            /* requests waiting for the model before 429; 0: 64 */
    double request_timeout_s; /* per request; 0: 300 s */
    double header_timeout_s;  /* longest wait for a request's headers, idle keep-alive included; 0: 10 s */
    double body_timeout_s;    /* longest upload of a request body; 0: 60 s */
    int max_client_conns;     /* connections per client address; 0: 64 (of 512 in all) */
    double drain_timeout_s;   /* on stop: how long running requests may finish; 0: 30 s */
    FILE *log;                /* one line per request; NULL: quiet */
    /* Instead of the model's tokenizer.chat_template, for chat completions and
     * decisions (docs/templates.md): a built-in family ("chatml", "llama3",
     * "llama2", "gemma", "phi3"), or Jinja source (wins). Both NULL: the
     * model's. Checked by tl_server_new; must outlive the server. */
    const char *chat_template;
    const char *chat_template_jinja;
    bool no_ui;               /* no playground page at GET / (404) */
    bool metrics_public;      /* GET /metrics without the API key */
    bool log_json;            /* request log lines as JSON objects instead of text */
    /* The shared session's context (tl_session_params.n_ctx): 0 is the model's
     * trained context; beyond it only with extend_ctx (`serve -c N`). */
    int32_t n_ctx;
    bool extend_ctx;
    /* OpenAI's Files and Batch API (/v1/files, /v1/batches) keep their files
     * and jobs here (created if missing); batches left unfinished by an
     * earlier server resume. NULL: those routes answer 404. */
    const char *data_dir;
    /* Uncached tokens per scheduler step: a longer new context is computed in
     * chunks beside the other requests' steps (tl_shared_params.max_step_tokens).
     * 0: 512; < 0: no chunking. */
    int step_tokens;
    /* The shared session's KV cache element types (tl_session_params.cache_type_k / _v). */
    tl_cache_type cache_type_k;
    tl_cache_type cache_type_v;
} tl_server_params;

/* Creates the server state (session, scheduler) over m, which must outlive it.
 * Nothing listens until tl_server_start. */
TL_API tl_status tl_server_new(const tl_model *m, const tl_server_params *params, tl_server **out, tl_error *err);
/* A decision front end for an engine that already runs (`typellm serve
 * --upstream URL`): the same server, its decisions (/v1/decide,
 * /v1/decisions, /v1/systemone, the playground, the Batch API) computed by
 * the remote backend upstream describes (engine AUTO: asked here), so values
 * are in domain and probabilities the model's own as the backend contract
 * gives them. The server is asked at once: unreachable or not an engine is
 * this call's error (TL_ERR_NETWORK, TL_ERR_UNSUPPORTED...). Concurrent
 * requests each use their own connection (at most max_queue), under their
 * deadline and cancellation. What needs the model's full logits here
 * (/generate, chat and text completions, /flush_cache, /model_info;
 * /tokenize and /detokenize without a tokenizer GGUF here) answers 501 in its API's dialect naming the
 * upstream engine and the capability it lacks. params->n_threads, cache_mb,
 * n_ctx, extend_ctx and step_tokens do not apply. */
TL_API tl_status tl_server_new_upstream(const tl_remote_params *upstream, const tl_server_params *params,
                                        tl_server **out, tl_error *err);
/* Binds and starts serving in background threads. */
TL_API tl_status tl_server_start(tl_server *s, tl_error *err);
/* The bound port (after start). */
TL_API int tl_server_port(const tl_server *s);
/* Drains, then stops: new requests get 503 + Retry-After while the running
 * ones finish (up to drain_timeout_s), then the listener closes and the
 * threads are joined. */
TL_API void tl_server_stop(tl_server *s);
TL_API void tl_server_free(tl_server *s);

/* ---- socket-free request handling (tests, fuzzing) ----------------------- */

/* An HTTP answer. body is JSON unless content_type says otherwise. */
typedef struct tl_http_reply {
    int status;
    int stream_fd;              /* >= 0: the body is read from this pipe until EOF (SSE) */
    const char *content_type;   /* static string */
    int retry_after_s;          /* > 0: send Retry-After */
    tl_strbuf body;
} tl_http_reply;

/* Request-side context a handler may consult (NULLs allowed). */
typedef struct tl_http_request {
    const char *method;         /* "GET", "POST", ... */
    const char *path;           /* "/generate", ... (no query string) */
    const char *authorization;  /* the Authorization header or NULL */
    const char *body;
    size_t body_len;
    bool body_too_large;        /* the transport cut the body at max_body */
    /* Called between model steps; returns true when the client has gone.
     * NULL: never. */
    bool (*client_gone)(void *ctx);
    void *client_ctx;
    /* The transport can send a body from reply->stream_fd as it is written
     * (SSE streaming); false: streams are collected into the body. */
    bool allow_stream;
    /* The model's scheduling class for this request (TL_PRIORITY_*, backend.h):
     * the Batch API's own requests are TL_PRIORITY_BATCH. */
    int priority;
} tl_http_request;

/* Routes one request and fills reply (reply->body must start empty). Never
 * fails: every problem becomes an HTTP error reply. */
TL_API void tl_server_handle(tl_server *s, const tl_http_request *req, tl_http_reply *reply);
TL_API void tl_http_reply_free(tl_http_reply *r);


#ifdef __cplusplus
}
#endif
#endif
