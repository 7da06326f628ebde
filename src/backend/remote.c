/* remote.c: HTTP with retries, JSON calls and the tokenizer cache shared by
 * the remote backends (remote.h). 429 and 5xx answers and connection
 * failures are retried with exponential backoff (honouring Retry-After); a
 * 2xx reply that is not JSON (cut off, or an intermediary's page) is retried
 * the same way and reported with the parse position when it persists. */
#define _GNU_SOURCE /* strncasecmp, strcasestr */
#include "backend/remote.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/hash.h"

#define TOK_CACHE_SLOTS 4096 /* power of two */
#define TOK_CACHE_MAX_BYTES (16u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud) {
    tl_strbuf *sb = ud;
    size_t n = size * nmemb;
    if (sb->len + n > ((size_t)512 << 20)) /* a reply this large is not a reply we asked for */
        return 0;
    return tl_strbuf_append(sb, data, n) ? n : 0;
}

typedef struct header_state {
    long retry_after_s;
} header_state;

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud) {
    header_state *h = ud;
    size_t n = size * nmemb;
    if (n > 12 && !strncasecmp(data, "Retry-After:", 12))
        h->retry_after_s = strtol(data + 12, NULL, 10);
    return n;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static double backoff_s(int attempt) { return 0.2 * (double)(1 << (attempt < 6 ? attempt : 6)); }

/* libcurl's progress callback (about once a second, and on every chunk):
 * non-zero aborts the transfer when the caller has cancelled. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const tl_call_limits *l = ud;
    return l->cancelled && l->cancelled(l->ctx);
}

/* Seconds left before the caller's deadline (r->limits), at most cap; <= 0 when passed. */
static double time_left_s(const tl_remote *r, double cap) {
    if (r->limits.deadline_s <= 0)
        return cap;
    double left = r->limits.deadline_s - tl_now_s();
    return left < cap ? left : cap;
}

tl_status tl_remote_init(tl_remote *r, const char *engine, const char *generate_path, const char *base_url,
                         const char *api_key, double timeout_s, int max_retries, tl_backend_requests *counts,
                         tl_error *err) {
    memset(r, 0, sizeof *r);
    r->engine = engine;
    r->generate_path = generate_path;
    r->counts = counts;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->cache_mu, NULL);
    if (!base_url || strncmp(base_url, "http", 4))
        return tl_error_set(err, TL_ERR_INVALID, "%s: the server URL must start with http:// or https://", engine);
    pthread_once(&curl_once, curl_init_once);
    r->tok_cache = calloc(TOK_CACHE_SLOTS, sizeof *r->tok_cache);
    r->tok_cap = r->tok_cache ? TOK_CACHE_SLOTS : 0;
    r->base = strdup(base_url);
    if (!r->base)
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", engine);
    size_t bl = strlen(r->base);
    while (bl > 0 && r->base[bl - 1] == '/')
        r->base[--bl] = '\0';
    if (api_key) {
        size_t n = strlen(api_key) + 32;
        r->auth_header = malloc(n);
        if (!r->auth_header)
            return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", engine);
        snprintf(r->auth_header, n, "Authorization: Bearer %s", api_key);
    }
    r->timeout_s = timeout_s > 0 ? timeout_s : 60;
    r->max_retries = max_retries >= 0 ? max_retries : 3;
    r->curl = curl_easy_init();
    return r->curl ? TL_OK : tl_error_set(err, TL_ERR_INTERNAL, "%s: curl_easy_init failed", engine);
}

static void tok_cache_clear(tl_remote *r) {
    for (size_t i = 0; i < r->tok_cap; i++) {
        free(r->tok_cache[i].text);
        free(r->tok_cache[i].ids);
    }
    memset(r->tok_cache, 0, r->tok_cap * sizeof *r->tok_cache);
    r->tok_used = r->tok_bytes = 0;
}

void tl_remote_free(tl_remote *r) {
    if (r->curl)
        curl_easy_cleanup(r->curl);
    if (r->tok_cache) {
        tok_cache_clear(r);
        free(r->tok_cache);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->cache_mu);
    free(r->base);
    free(r->auth_header);
    memset(r, 0, sizeof *r);
}

/* One HTTP exchange with retries. body NULL: GET. *status gets the final
 * HTTP status; reply the body. Network failures after all retries are
 * TL_ERR_NETWORK (TL_ERR_TIMEOUT for timeouts); 429/5xx after all retries
 * TL_ERR_REMOTE. */
static tl_status http_call(tl_remote *r, const char *path, const char *body, size_t body_len, long *status,
                           tl_strbuf *reply, tl_error *err) {
    char url[2048];
    snprintf(url, sizeof url, "%s%s", r->base, path);
    pthread_mutex_lock(&r->mu);
    tl_status st = TL_OK;
    int64_t *count = !strcmp(path, "/tokenize")                             ? &r->counts->tokenize
                     : !strcmp(path, "/detokenize")                         ? &r->counts->detokenize
                     : r->generate_path && !strcmp(path, r->generate_path) ? &r->counts->generate
                                                                            : &r->counts->other;
    for (int attempt = 0;; attempt++) {
        double timeout = time_left_s(r, r->timeout_s);
        if (timeout <= 0) {
            st = tl_error_set(err, TL_ERR_TIMEOUT, "%s: %s: the request's deadline passed (%d attempts made)", r->engine,
                              url, attempt);
            break;
        }
        (*count)++;
        tl_strbuf_clear(reply);
        header_state hs = {0};
        CURL *c = r->curl;
        curl_easy_reset(c);
        struct curl_slist *hdrs = NULL;
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        hdrs = curl_slist_append(hdrs, "Expect:");
        if (r->auth_header)
            hdrs = curl_slist_append(hdrs, r->auth_header);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &hs);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000) + 1);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout < 10 ? (long)(timeout * 1000) + 1 : 10000L);
        if (r->limits.cancelled) {
            curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
            curl_easy_setopt(c, CURLOPT_XFERINFODATA, &r->limits);
            curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        }
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (body) {
            curl_easy_setopt(c, CURLOPT_POST, 1L);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
        CURLcode cc = curl_easy_perform(c);
        curl_slist_free_all(hdrs);
        *status = 0;
        if (cc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (cc == CURLE_ABORTED_BY_CALLBACK) {
            st = tl_error_set(err, TL_ERR_CANCELLED, "%s: %s: cancelled by the caller", r->engine, url);
            break;
        }
        bool retryable = cc != CURLE_OK || *status == 429 || *status >= 500;
        if (!retryable) {
            st = TL_OK;
            break;
        }
        if (attempt >= r->max_retries) {
            if (cc != CURLE_OK)
                st = tl_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? TL_ERR_TIMEOUT : TL_ERR_NETWORK,
                                  "%s: %s: %s (after %d attempts)", r->engine, url, curl_easy_strerror(cc),
                                  attempt + 1);
            else
                st = tl_error_set(err, TL_ERR_REMOTE, "%s: %s answered HTTP %ld (after %d attempts): %.300s",
                                  r->engine, url, *status, attempt + 1, tl_strbuf_cstr(reply));
            break;
        }
        double wait = backoff_s(attempt);
        if (hs.retry_after_s > 0)
            wait = hs.retry_after_s > 10 ? 10 : (double)hs.retry_after_s;
        wait = time_left_s(r, wait);
        if (wait > 0)
            sleep_s(wait);
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

/* Whether an engine's 4xx reply refuses the request as longer than its
 * context: SGLang's "longer than the model's context length", vLLM's
 * "maximum context length is", llama.cpp's "exceeds the available context
 * size", typellm serve's "exceeds the context". The caller's input was too
 * long (TL_ERR_LIMIT: a 413 in the typed APIs, not a 502), which a backend
 * that does not know the engine's context (SGLang) cannot check before. */
static bool context_refusal(long status, const tl_strbuf *reply) {
    if (status != 400 && status != 413)
        return false;
    static const char *const words[] = {"context length", "context size", "exceeds the context", "context window"};
    const char *text = tl_strbuf_cstr(reply);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasestr(text, words[i]))
            return true;
    return false;
}

tl_status tl_remote_call(tl_remote *r, const char *path, json_t *j, json_t **out, long *status_out, tl_error *err) {
    *out = NULL;
    char *body = NULL;
    if (j) {
        body = json_dumps(j, JSON_COMPACT);
        if (!body)
            return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", r->engine);
    }
    tl_strbuf reply = TL_STRBUF_INIT;
    long status = 0;
    tl_status st = TL_OK;
    for (int attempt = 0;; attempt++) {
        st = http_call(r, path, body, body ? strlen(body) : 0, &status, &reply, err);
        if (st == TL_OK && (status < 200 || status >= 300)) {
            st = tl_error_set(err, context_refusal(status, &reply) ? TL_ERR_LIMIT : TL_ERR_REMOTE,
                              "%s: %s answered HTTP %ld: %.300s", r->engine, path, status, tl_strbuf_cstr(&reply));
            break;
        }
        if (st)
            break;
        json_error_t je;
        *out = json_loadb(reply.buf ? reply.buf : "", reply.len, JSON_ALLOW_NUL, &je); /* token pieces may be NUL */
        if (*out)
            break;
        if (attempt >= r->max_retries) {
            st = tl_error_set(err, TL_ERR_REMOTE,
                              "%s: %s: reply is not JSON (line %d, column %d: %s; %zu bytes, after %d attempts)",
                              r->engine, path, je.line, je.column, je.text, reply.len, attempt + 1);
            break;
        }
        double wait = time_left_s(r, backoff_s(attempt));
        if (wait > 0)
            sleep_s(wait);
    }
    if (status_out)
        *status_out = status;
    free(body);
    tl_strbuf_free(&reply);
    return st;
}

tl_status tl_remote_forward(tl_remote *r, const char *path, const char *body, size_t len, int *status, char **reply,
                            tl_error *err) {
    *reply = NULL;
    *status = 0;
    tl_strbuf rep = TL_STRBUF_INIT;
    long code = 0;
    tl_status st = http_call(r, path, body, len, &code, &rep, err);
    if (st == TL_ERR_REMOTE && code) /* 429 / 5xx after the retries: an answer all the same */
        st = TL_OK;
    if (!st) {
        *status = (int)code;
        *reply = rep.buf ? tl_strbuf_detach(&rep) : strdup("");
        if (!*reply)
            st = tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", r->engine);
    }
    tl_strbuf_free(&rep);
    return st;
}

tl_status tl_remote_backend_forward(tl_backend *b, const char *path, const char *body, size_t len, int *status,
                                   char **reply, tl_error *err) {
    return tl_remote_forward(tl_remote_of(b), path, body, len, status, reply, err);
}

json_t *tl_remote_ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

tl_status tl_remote_read_ids(const tl_remote *r, const json_t *a, const char *where, int32_t **ids, size_t *n,
                             tl_error *err) {
    *ids = NULL;
    *n = 0;
    if (!json_is_array(a))
        return tl_error_set(err, TL_ERR_REMOTE, "%s: %s is not a list of token ids", r->engine, where);
    size_t m = json_array_size(a);
    int32_t *v = malloc((m ? m : 1) * sizeof *v);
    if (!v)
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", r->engine);
    for (size_t i = 0; i < m; i++) {
        const json_t *x = json_array_get(a, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            free(v);
            return tl_error_set(err, TL_ERR_REMOTE, "%s: %s/%zu is not a token id", r->engine, where, i);
        }
        v[i] = (int32_t)json_integer_value(x);
    }
    *ids = v;
    *n = m;
    return TL_OK;
}

/* ---- the tokenizer cache ---------------------------------------------- */

/* key = one flags byte + the text; the slot it is in or would go to. */
static tl_remote_tok_entry *tok_cache_slot(tl_remote *r, const char *key, size_t len, uint64_t h) {
    size_t mask = r->tok_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        tl_remote_tok_entry *e = &r->tok_cache[i];
        if (!e->text || (e->hash == h && e->len == len && !memcmp(e->text, key, len)))
            return e;
    }
}

static char *make_key(char flags, const char *text, size_t len) {
    char *key = malloc(len + 1);
    if (key) {
        key[0] = flags;
        memcpy(key + 1, text, len);
    }
    return key;
}

bool tl_remote_tok_get(tl_remote *r, char flags, const char *text, size_t len, int32_t **ids, size_t *n) {
    if (!r->tok_cache)
        return false;
    char *key = make_key(flags, text, len);
    if (!key)
        return false;
    pthread_mutex_lock(&r->cache_mu);
    tl_remote_tok_entry *e = tok_cache_slot(r, key, len + 1, tl_hash_bytes(key, len + 1));
    bool hit = e->text != NULL;
    if (hit) {
        *ids = malloc((e->n ? e->n : 1) * sizeof **ids);
        hit = *ids != NULL;
        if (hit) {
            memcpy(*ids, e->ids, e->n * sizeof **ids);
            *n = e->n;
        }
    }
    pthread_mutex_unlock(&r->cache_mu);
    free(key);
    return hit;
}

void tl_remote_tok_put(tl_remote *r, char flags, const char *text, size_t len, const int32_t *ids, size_t n) {
    if (!r->tok_cache || len + 1 + n * sizeof *ids > TOK_CACHE_MAX_BYTES / 16)
        return; /* long texts (contexts) are sent once anyway */
    char *key = make_key(flags, text, len);
    if (!key)
        return;
    size_t klen = len + 1;
    pthread_mutex_lock(&r->cache_mu);
    if (r->tok_used * 2 >= r->tok_cap || r->tok_bytes + klen + n * sizeof *ids > TOK_CACHE_MAX_BYTES)
        tok_cache_clear(r);
    uint64_t h = tl_hash_bytes(key, klen);
    tl_remote_tok_entry *e = tok_cache_slot(r, key, klen, h);
    if (!e->text) {
        int32_t *c = malloc((n ? n : 1) * sizeof *c);
        if (c) {
            memcpy(c, ids, n * sizeof *c);
            *e = (tl_remote_tok_entry){h, key, klen, c, n};
            key = NULL;
            r->tok_used++;
            r->tok_bytes += klen + n * sizeof *ids;
        }
    }
    pthread_mutex_unlock(&r->cache_mu);
    free(key);
}

void tl_remote_set_limits(tl_remote *r, const tl_call_limits *limits) {
    pthread_mutex_lock(&r->mu);
    r->limits = limits ? *limits : (tl_call_limits){0};
    pthread_mutex_unlock(&r->mu);
}

/* ---- shared by the llama.cpp and vLLM backends ---------------------------- */

void tl_remote_backend_free(tl_backend *b) {
    if (!b)
        return;
    tl_remote_impl *im = b->impl;
    if (im) {
        tl_remote_free(&im->rem);
        tl_vocab_free(im->local_vocab);
        free(im->model_name);
        free(im->chat_template);
        free(im->version);
        free(im);
    }
    free(b);
}

tl_status tl_remote_backend_new(const tl_backend_ops *ops, const char *engine, const char *generate_path,
                                const tl_sglang_params *p, const tl_call_limits *limits, tl_backend **out,
                                tl_error *err) {
    *out = NULL;
    if (!p)
        return tl_error_set(err, TL_ERR_INVALID, "%s: no parameters", engine);
    tl_backend *b = calloc(1, sizeof *b);
    tl_remote_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", engine);
    }
    b->ops = ops;
    b->impl = im;
    tl_status st = tl_remote_init(&im->rem, engine, generate_path, p->base_url, p->api_key, p->timeout_s,
                                  p->max_retries, &b->requests, err);
    if (!st)
        tl_remote_set_limits(&im->rem, limits);
    if (st)
        tl_remote_backend_free(b);
    else
        *out = b;
    return st;
}

static tl_status post(tl_remote *r, const char *path, json_t *req, json_t **rep, tl_error *err) {
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, "%s: %s: the request cannot be built (text not UTF-8?)", r->engine,
                            path);
    tl_status st = tl_remote_call(r, path, req, rep, NULL, err);
    json_decref(req);
    return st;
}

tl_status tl_remote_post_text(tl_remote *r, const char *path, json_t *req, const char *field, tl_strbuf *out,
                              tl_error *err) {
    json_t *rep = NULL;
    tl_status st = post(r, path, req, &rep, err);
    if (st)
        return st;
    const json_t *t = json_object_get(rep, field);
    if (json_is_string(t))
        tl_strbuf_append(out, json_string_value(t), json_string_length(t));
    else
        st = tl_error_set(err, TL_ERR_REMOTE, "%s: %s: reply lacks the string /%s", r->engine, path, field);
    json_decref(rep);
    return st;
}

tl_status tl_remote_post_ids(tl_remote *r, const char *path, json_t *req, const char *field, int32_t **ids, size_t *n,
                             tl_error *err) {
    json_t *rep = NULL;
    tl_status st = post(r, path, req, &rep, err);
    if (st)
        return st;
    char where[128];
    snprintf(where, sizeof where, "%s: /%s", path, field);
    st = tl_remote_read_ids(r, json_object_get(rep, field), where, ids, n, err);
    json_decref(rep);
    return st;
}
