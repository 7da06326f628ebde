/* upstream.c: `typellm serve --upstream URL`: the server as a decision front
 * end for an engine that already runs (SGLang, llama.cpp's llama-server,
 * vLLM, or another typellm serve), its decisions computed by the remote
 * backends (tl_backend_remote_new) instead of a local model.
 *
 * A remote backend is one connection, used by one thread at a time
 * (backend.h), and the server answers from many request threads at once: it
 * keeps a pool of backends. A request takes an idle one, or makes one (the
 * engine already known, so its detection is not repeated; the constructor's
 * own requests run under the request's deadline), or, when `cap` are in use,
 * waits for one until its deadline; it sets its deadline and cancellation on
 * the backend (tl_backend_remote_set_limits) and gives it back. The upstream
 * engine batches the requests of the pool's connections as it batches any
 * clients'.
 *
 * Invariants: made <= cap; every backend made is in idle[] or held by one
 * request; the first backend (the probe, whose names and capabilities the
 * server reports) lives until the pool is freed. */
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"
#include "typellm/util.h"

struct upstream_pool {
    tl_remote_params params;  /* the engine resolved (never AUTO); strings below */
    char *url, *key, *tokenizer;
    pthread_mutex_t mu;
    pthread_cond_t freed;     /* signalled when a backend is given back */
    tl_backend **idle;        /* cap slots */
    size_t n_idle, made, cap;
    tl_backend *first;
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

tl_status upstream_pool_new(const tl_remote_params *rp, size_t cap, upstream_pool **out, tl_error *err) {
    *out = NULL;
    upstream_pool *p = calloc(1, sizeof *p);
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "upstream: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->freed, NULL);
    p->cap = cap ? cap : 1;
    p->params = *rp;
    p->url = dup_or_null(rp->conn.base_url);
    p->key = dup_or_null(rp->conn.api_key);
    p->tokenizer = dup_or_null(rp->conn.tokenizer_path);
    p->params.conn.base_url = p->url;
    p->params.conn.api_key = p->key;
    p->params.conn.tokenizer_path = p->tokenizer;
    p->idle = calloc(p->cap, sizeof *p->idle);
    tl_status st = p->idle && (p->url || !rp->conn.base_url) ? TL_OK
                                                             : tl_error_set(err, TL_ERR_NOMEM, "upstream: out of memory");
    if (!st && (st = tl_backend_remote_new(&p->params, &p->first, err)) != TL_OK)
        tl_error_wrap(err, "upstream %s%s", rp->conn.base_url,
                      rp->engine == TL_ENGINE_AUTO ? " (engine auto: asked as llama.cpp's server first)" : "");
    if (st) {
        upstream_pool_free(p);
        return st;
    }
    tl_backend_caps caps;
    tl_backend_capabilities(p->first, &caps);
    tl_engine_parse(caps.engine, &p->params.engine); /* later backends skip the detection */
    p->idle[p->n_idle++] = p->first;
    p->made = 1;
    *out = p;
    return TL_OK;
}

void upstream_pool_free(upstream_pool *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_idle; i++)
        tl_backend_free(p->idle[i]);
    free(p->idle);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->freed);
    free(p->url);
    free(p->key);
    free(p->tokenizer);
    free(p);
}

const tl_backend *upstream_pool_probe(const upstream_pool *p) { return p->first; }

const char *upstream_pool_url(const upstream_pool *p) { return p->url; }

tl_status upstream_acquire(upstream_pool *p, const sched_wait *w, tl_backend **out, tl_error *err) {
    *out = NULL;
    pthread_mutex_lock(&p->mu);
    while (p->n_idle == 0 && p->made >= p->cap) {
        if (w && w->cancelled && w->cancelled(w->ctx)) {
            pthread_mutex_unlock(&p->mu);
            return tl_error_set(err, TL_ERR_CANCELLED, "upstream: the client went away while waiting for a connection");
        }
        if (w && w->deadline_s > 0 && tl_now_s() >= w->deadline_s) {
            pthread_mutex_unlock(&p->mu);
            return tl_error_set(err, TL_ERR_TIMEOUT, "upstream: all %zu connections to %s stayed busy until the deadline",
                                p->cap, p->url);
        }
        struct timespec ts = realtime_in_ms(100); /* polls cancellation and the deadline */
        pthread_cond_timedwait(&p->freed, &p->mu, &ts);
    }
    tl_backend *b = NULL;
    bool make = p->n_idle == 0;
    if (make)
        p->made++; /* reserved: made outside the lock (it talks to the server) */
    else
        b = p->idle[--p->n_idle];
    pthread_mutex_unlock(&p->mu);
    tl_status st = TL_OK;
    if (make && (st = tl_backend_remote_new_limited(&p->params, w, &b, err)) != TL_OK) {
        pthread_mutex_lock(&p->mu);
        p->made--;
        pthread_cond_signal(&p->freed);
        pthread_mutex_unlock(&p->mu);
        return st;
    }
    tl_backend_remote_set_limits(b, w, NULL);
    *out = b;
    return TL_OK;
}

tl_status upstream_check(upstream_pool *p, const sched_wait *w, tl_error *err) {
    tl_backend *b = NULL;
    tl_status st = upstream_acquire(p, w, &b, err);
    if (st)
        return st;
    int32_t id = 0; /* a valid id in every vocabulary: one position's forward pass */
    double lp = 0;
    tl_score_req q = {.ids = &id, .n = 1, .cands = &id, .n_cands = 1, .logprobs = &lp};
    st = tl_backend_score(b, &q, 1, NULL, err);
    upstream_release(p, b);
    return st;
}

void upstream_release(upstream_pool *p, tl_backend *b) {
    if (!b)
        return;
    tl_backend_remote_set_limits(b, NULL, NULL);
    pthread_mutex_lock(&p->mu);
    p->idle[p->n_idle++] = b;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}
