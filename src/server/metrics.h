/* metrics.h: what `GET /metrics` reports (Prometheus text format, names
 * prefixed `typellm:` and modelled on vLLM's `vllm:*` and SGLang's
 * `sglang:*`; docs/server.md maps them) and the one-line request log.
 *
 * Every counter is a relaxed atomic: request threads and the shared
 * backend's step callback add to them without a lock, and a scrape reads
 * them without stopping anyone (a scrape may see one counter of a request
 * moved and the next not yet: each is exact, the set is not a snapshot).
 *
 * Per-request token usage is collected on the request's own thread
 * (server_usage_note, called by server_eval / server_eval_last /
 * server_decide), so the log line names the tokens of its own request even
 * when its forward passes were shared with others. */
#ifndef TL_SERVER_METRICS_H
#define TL_SERVER_METRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "typellm/backend.h"
#include "typellm/common.h"
#include "typellm/util.h"

typedef struct server_metrics server_metrics;

/* Endpoint labels: the route table's paths, by index (server.c). */
server_metrics *metrics_new(size_t n_endpoints);
void metrics_free(server_metrics *m);

/* tl_shared_params.on_step: tokens, forward-pass time, cache size. */
void metrics_on_step(void *ctx, const tl_shared_step *step);
/* A request answered: endpoint (route index, or -1 for an unknown path),
 * status, seconds from its first byte to its reply, and whether it ran the
 * model (only those enter the latency histogram, so scrapes and health
 * checks do not dilute it). 499 / 504 also count as aborted (cancelled /
 * timed out). */
void metrics_request(server_metrics *m, int endpoint, int status, double seconds, bool ran_model);
/* A generation's first output token, seconds after its generation started. */
void metrics_first_token(server_metrics *m, double seconds);
/* n tokens generated. */
void metrics_generated(server_metrics *m, size_t n);
/* The fields of a decided schema, counted by kind (enum, boolean, score,
 * integer, number, string). */
void metrics_decided(server_metrics *m, const json_t *schema);

/* The whole exposition. endpoint_name(i) for i < n_endpoints; sched the
 * scheduler's reading now; running the requests holding a model slot. */
typedef struct metrics_view {
    const char *(*endpoint_name)(size_t i);
    tl_shared_stats sched;
    int running;
    const char *model;
} metrics_view;
bool metrics_render(const server_metrics *m, const metrics_view *v, tl_strbuf *out);

/* ---- per-request usage (thread-local) ------------------------------------ */

/* Starts collecting into *u on this thread (NULL: stop). */
void server_usage_begin(tl_usage *u);
/* Adds u (NULL: nothing) to this thread's request, if one is collecting. */
void server_usage_note(const tl_usage *u);

/* ---- the request log ------------------------------------------------------- */

typedef struct request_log_line {
    uint64_t id;             /* the server's request number */
    const char *method;
    const char *endpoint;    /* the path as routed */
    int status;
    size_t bytes_in, bytes_out;
    tl_usage usage;          /* tokens this request's forward passes presented / found cached / computed */
    double ms;
} request_log_line;
/* One line: "text" (TIME id=N METHOD PATH STATUS prompt=.. cached=.. ...)
 * or "json" (one object). Never the body, never the key. */
void request_log_format(tl_strbuf *out, const request_log_line *l, bool json);

#endif
