/* metrics.c: the counters behind `GET /metrics`, their Prometheus text
 * exposition, and the request log's line format (see metrics.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/metrics.h"
#include "util/json_text.h"

/* Histogram buckets. Times (seconds): forward passes of a 0.5B model on a
 * laptop take milliseconds, long prompts seconds. Sizes: sequences per
 * forward pass, up to the backend's cap of 256. Both have 15 bounds. */
#define N_BUCKETS 15
static const double BUCKETS_S[N_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const double BUCKETS_SEQS[N_BUCKETS] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256};

typedef struct histogram {
    const double *bounds;               /* N_BUCKETS upper bounds */
    double unit;                        /* sum_units per observed unit (1e9: ns of seconds) */
    _Atomic uint64_t le[N_BUCKETS + 1]; /* per bucket (not cumulative); [N_BUCKETS]: above the last */
    _Atomic uint64_t sum_units;
} histogram;

/* HTTP statuses are 100..599: one counter each per endpoint. */
#define STATUS_MIN 100
#define STATUS_N 500

enum { KIND_ENUM, KIND_BOOLEAN, KIND_SCORE, KIND_INTEGER, KIND_NUMBER, KIND_STRING, KIND_N };
static const char *const KIND_NAMES[KIND_N] = {"enum", "boolean", "score", "integer", "number", "string"};

struct server_metrics {
    size_t n_endpoints;
    _Atomic uint64_t *requests;      /* [(n_endpoints + 1) x STATUS_N]; the last row: unknown paths */
    _Atomic uint64_t aborted_cancelled, aborted_timeout;
    _Atomic uint64_t prompt_tokens, cached_tokens, computed_tokens, generated_tokens;
    _Atomic uint64_t steps, step_seqs, step_errors;
    _Atomic uint64_t cache_bytes, cache_budget; /* as of the last step */
    _Atomic uint64_t decisions[KIND_N];
    histogram forward_s, first_token_s, latency_s, step_seqs_h;
};

server_metrics *metrics_new(size_t n_endpoints) {
    server_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->n_endpoints = n_endpoints;
    histogram *times[] = {&m->forward_s, &m->first_token_s, &m->latency_s};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        times[i]->bounds = BUCKETS_S;
        times[i]->unit = 1e9;
    }
    m->step_seqs_h.bounds = BUCKETS_SEQS;
    m->step_seqs_h.unit = 1;
    m->requests = calloc((n_endpoints + 1) * STATUS_N, sizeof *m->requests);
    if (!m->requests) {
        free(m);
        return NULL;
    }
    return m;
}

void metrics_free(server_metrics *m) {
    if (!m)
        return;
    free(m->requests);
    free(m);
}

static void add(_Atomic uint64_t *c, uint64_t n) { atomic_fetch_add_explicit(c, n, memory_order_relaxed); }
static uint64_t get(const _Atomic uint64_t *c) {
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}
static uint64_t nonneg(int64_t x) { return x > 0 ? (uint64_t)x : 0; }

static void observe(histogram *h, double x) {
    size_t b = 0;
    while (b < N_BUCKETS && x > h->bounds[b])
        b++;
    add(&h->le[b], 1);
    add(&h->sum_units, x > 0 ? (uint64_t)(x * h->unit + 0.5) : 0);
}

void metrics_on_step(void *ctx, const tl_shared_step *st) {
    server_metrics *m = ctx;
    if (!m)
        return;
    add(&m->steps, 1);
    add(&m->step_seqs, st->seqs);
    if (!st->ok)
        add(&m->step_errors, 1);
    add(&m->prompt_tokens, nonneg(st->usage.prompt_tokens));
    add(&m->cached_tokens, nonneg(st->usage.cached_tokens));
    add(&m->computed_tokens, nonneg(st->usage.computed_tokens));
    atomic_store_explicit(&m->cache_bytes, st->cache_bytes, memory_order_relaxed);
    atomic_store_explicit(&m->cache_budget, st->cache_budget, memory_order_relaxed);
    observe(&m->forward_s, st->seconds);
    observe(&m->step_seqs_h, (double)st->seqs);
}

void metrics_request(server_metrics *m, int endpoint, int status, double seconds, bool ran_model) {
    if (!m)
        return;
    size_t row = endpoint >= 0 && (size_t)endpoint < m->n_endpoints ? (size_t)endpoint : m->n_endpoints;
    int code = status >= STATUS_MIN && status < STATUS_MIN + STATUS_N ? status : 500;
    add(&m->requests[row * STATUS_N + (size_t)(code - STATUS_MIN)], 1);
    if (status == 499)
        add(&m->aborted_cancelled, 1);
    else if (status == 504)
        add(&m->aborted_timeout, 1);
    if (ran_model)
        observe(&m->latency_s, seconds);
}

void metrics_first_token(server_metrics *m, double seconds) {
    if (m)
        observe(&m->first_token_s, seconds);
}

void metrics_generated(server_metrics *m, size_t n) {
    if (m)
        add(&m->generated_tokens, n);
}

static int field_kind(const json_t *f) {
    const char *type = json_string_value(json_object_get(f, "type"));
    const char *format = json_string_value(json_object_get(f, "format"));
    if (json_object_get(f, "enum") || json_object_get(f, "const"))
        return KIND_ENUM;
    if (type && !strcmp(type, "boolean"))
        return KIND_BOOLEAN;
    if (format && !strcmp(format, "score"))
        return KIND_SCORE;
    if (type && !strcmp(type, "integer"))
        return KIND_INTEGER;
    if (type && !strcmp(type, "number"))
        return KIND_NUMBER;
    return KIND_STRING;
}

void metrics_decided(server_metrics *m, const json_t *schema) {
    const json_t *props = json_object_get(schema, "properties");
    if (!m || !json_is_object(props))
        return;
    const char *k;
    const json_t *f;
    json_object_foreach((json_t *)props, k, f) add(&m->decisions[field_kind(f)], 1);
}

/* ---- exposition ------------------------------------------------------------ */

static void head(tl_strbuf *o, const char *name, const char *type, const char *help) {
    tl_strbuf_printf(o, "# HELP typellm:%s %s\n# TYPE typellm:%s %s\n", name, help, name, type);
}

static void counter(tl_strbuf *o, const char *name, const char *help, uint64_t v) {
    head(o, name, "counter", help);
    tl_strbuf_printf(o, "typellm:%s %llu\n", name, (unsigned long long)v);
}

static void gauge(tl_strbuf *o, const char *name, const char *help, double v) {
    head(o, name, "gauge", help);
    tl_strbuf_printf(o, "typellm:%s %.17g\n", name, v);
}

static void hist(tl_strbuf *o, const char *name, const char *help, const histogram *h) {
    head(o, name, "histogram", help);
    uint64_t cum = 0;
    for (size_t b = 0; b <= N_BUCKETS; b++) {
        cum += get(&h->le[b]);
        if (b < N_BUCKETS)
            tl_strbuf_printf(o, "typellm:%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[b], (unsigned long long)cum);
        else
            tl_strbuf_printf(o, "typellm:%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    tl_strbuf_printf(o, "typellm:%s_sum %.9f\ntypellm:%s_count %llu\n", name, (double)get(&h->sum_units) / h->unit,
                     name, (unsigned long long)cum);
}

/* A label value: backslash, quote and newline escaped, as the format asks,
 * and UTF-8 (which the format requires): a bad byte becomes U+FFFD. */
static void label_value(tl_strbuf *o, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"') {
            tl_strbuf_putc(o, '\\');
            tl_strbuf_putc(o, (char)c);
        } else if (c == '\n') {
            tl_strbuf_puts(o, "\\n");
        } else if (c >= 0x80) {
            int l = tl_utf8_decode(s + i, n - i, NULL, TL_UTF8_STRICT);
            if (l > 0) {
                tl_strbuf_append(o, s + i, (size_t)l);
                i += (size_t)l;
                continue;
            }
            tl_strbuf_puts(o, "\xEF\xBF\xBD");
        } else {
            tl_strbuf_putc(o, (char)c);
        }
        i++;
    }
}

bool metrics_render(const server_metrics *m, const metrics_view *v, tl_strbuf *o) {
    head(o, "requests_total", "counter", "HTTP requests answered, by endpoint and status.");
    for (size_t row = 0; row <= m->n_endpoints; row++) {
        const char *ep = row < m->n_endpoints ? v->endpoint_name(row) : "other";
        for (size_t c = 0; c < STATUS_N; c++) {
            uint64_t n = get(&m->requests[row * STATUS_N + c]);
            if (!n)
                continue;
            tl_strbuf_puts(o, "typellm:requests_total{endpoint=\"");
            label_value(o, ep);
            tl_strbuf_printf(o, "\",status=\"%zu\"} %llu\n", c + STATUS_MIN, (unsigned long long)n);
        }
    }
    head(o, "aborted_requests_total", "counter", "Requests ended early: the client went away (499) or the deadline passed (504).");
    tl_strbuf_printf(o, "typellm:aborted_requests_total{reason=\"cancelled\"} %llu\n",
                     (unsigned long long)get(&m->aborted_cancelled));
    tl_strbuf_printf(o, "typellm:aborted_requests_total{reason=\"timeout\"} %llu\n",
                     (unsigned long long)get(&m->aborted_timeout));
    uint64_t prompt = get(&m->prompt_tokens), cached = get(&m->cached_tokens);
    counter(o, "prompt_tokens_total", "Prompt tokens presented to the model (cached or not).", prompt);
    counter(o, "cached_tokens_total", "Prompt tokens found in the prefix cache.", cached);
    counter(o, "computed_tokens_total", "Prompt tokens run through the model.", get(&m->computed_tokens));
    counter(o, "generation_tokens_total", "Tokens generated (/generate, completions, chat).", get(&m->generated_tokens));
    gauge(o, "prefix_cache_hit_ratio", "Cached over prompt tokens since the start.",
          prompt ? (double)cached / (double)prompt : 0);
    uint64_t cb = get(&m->cache_bytes), budget = get(&m->cache_budget);
    gauge(o, "prefix_cache_bytes", "Bytes the prefix (KV) cache holds, as of the last forward pass.", (double)cb);
    gauge(o, "prefix_cache_budget_bytes", "The prefix cache's budget (--cache-mb).", (double)budget);
    gauge(o, "prefix_cache_usage_ratio", "Prefix cache bytes over its budget.", budget ? (double)cb / (double)budget : 0);
    gauge(o, "num_requests_running", "Requests holding a model slot (--max-queue).", v->running);
    gauge(o, "num_requests_waiting", "Model calls queued for the next forward pass.", (double)v->sched.queued);
    gauge(o, "num_requests_waiting_batch", "Of those, batch-class calls.", (double)v->sched.queued_batch);
    gauge(o, "num_running_seqs", "Sequences in the forward pass running now (the batch size; 0 when idle).",
          (double)v->sched.running_seqs);
    counter(o, "forward_passes_total", "Batched forward passes (steps) run.", get(&m->steps));
    counter(o, "forward_pass_seqs_total", "Sequences evaluated over all forward passes.", get(&m->step_seqs));
    counter(o, "forward_pass_errors_total", "Forward passes in which the engine reported an error.", get(&m->step_errors));
    head(o, "decisions_total", "counter", "Fields decided, by kind.");
    for (int k = 0; k < KIND_N; k++)
        tl_strbuf_printf(o, "typellm:decisions_total{kind=\"%s\"} %llu\n", KIND_NAMES[k],
                         (unsigned long long)get(&m->decisions[k]));
    hist(o, "forward_pass_seconds", "Wall time of one batched forward pass.", &m->forward_s);
    hist(o, "forward_pass_batch_size", "Sequences evaluated in one batched forward pass.", &m->step_seqs_h);
    hist(o, "time_to_first_token_seconds", "From a generation's start to its first output token.", &m->first_token_s);
    hist(o, "e2e_request_latency_seconds", "From a request's first byte to its reply, of requests that ran the model.",
         &m->latency_s);
    head(o, "model_info", "gauge", "The model served (value 1).");
    tl_strbuf_puts(o, "typellm:model_info{model=\"");
    label_value(o, v->model ? v->model : "");
    return tl_strbuf_puts(o, "\"} 1\n");
}

/* ---- per-request usage ----------------------------------------------------- */

static _Thread_local tl_usage *request_usage;

void server_usage_begin(tl_usage *u) { request_usage = u; }

void server_usage_note(const tl_usage *u) {
    if (request_usage && u)
        tl_usage_add(request_usage, u);
}

/* ---- the request log ------------------------------------------------------- */

void request_log_format(tl_strbuf *o, const request_log_line *l, bool json) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const tl_usage *u = &l->usage;
    double reuse = u->prompt_tokens > 0 ? (double)u->cached_tokens / (double)u->prompt_tokens : 0;
    if (json) {
        tl_strbuf_printf(o, "{\"ts\":\"%s\",\"id\":%llu,\"method\":", ts, (unsigned long long)l->id);
        tl_strbuf_json_string(o, l->method, strlen(l->method));
        tl_strbuf_puts(o, ",\"endpoint\":");
        tl_strbuf_json_string(o, l->endpoint, strlen(l->endpoint));
        tl_strbuf_printf(o,
                         ",\"status\":%d,\"prompt_tokens\":%lld,\"cached_tokens\":%lld,\"computed_tokens\":%lld,"
                         "\"forward_passes\":%lld,\"cache_reuse\":%.4f,\"bytes_in\":%zu,\"bytes_out\":%zu,\"ms\":%.3f}\n",
                         l->status, (long long)u->prompt_tokens, (long long)u->cached_tokens,
                         (long long)u->computed_tokens, (long long)u->forward_passes, reuse, l->bytes_in, l->bytes_out,
                         l->ms);
        return;
    }
    tl_strbuf_printf(o, "%s id=%llu %s ", ts, (unsigned long long)l->id, l->method);
    /* A path is the client's text: no control characters or spaces reach the log. */
    for (const char *p = l->endpoint; *p; p++)
        tl_strbuf_putc(o, (unsigned char)*p <= ' ' || *p == 0x7f ? '?' : *p);
    tl_strbuf_printf(o, " %d prompt=%lld cached=%lld computed=%lld reuse=%.2f in=%zu out=%zu %.1fms\n", l->status,
                     (long long)u->prompt_tokens, (long long)u->cached_tokens, (long long)u->computed_tokens, reuse,
                     l->bytes_in, l->bytes_out, l->ms);
}
