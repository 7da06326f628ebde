/* sglang.c: the remote backend: an SGLang server (or `typellm serve`, which
 * speaks the same API) over HTTP with libcurl.
 *
 * Everything is sent as token ids (input_ids), so the server's prefix cache
 * sees exactly the sequences the decision layer built. A scoring call is one
 * POST /generate of the whole batch as a list: max_new_tokens 1, temperature
 * 0 (logprobs are then plain log_softmax), return_logprob with
 * token_ids_logprob = the candidates, logprob_start_len -1 (anything >= 0
 * would cap cache reuse). Tokenization runs on a local tokenizer GGUF when
 * one is given (no round trip), else on the server's /tokenize and
 * /detokenize, each distinct text once (a per-backend cache). Only what real
 * SGLang serves is used: /model_info (or /get_model_info), /v1/models for
 * the served name, /tokenize, /detokenize, /generate; SGLang does not send
 * the chat template, so the caller must give one (template_from_caller).
 * 429 and 5xx answers and connection failures are retried with exponential
 * backoff (honouring Retry-After); any other surprise is a TL_ERR_REMOTE
 * naming the endpoint and the JSON path that was wrong. */
#define _GNU_SOURCE /* strncasecmp */
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/strbuf.h"

typedef struct sglang_impl {
    char *base;          /* base URL without trailing slash */
    char *auth_header;   /* "Authorization: Bearer KEY" or NULL */
    double timeout_s;
    int max_retries;
    bool remote_tokenizer; /* the server answers /tokenize and /detokenize */
    tl_vocab *local_vocab; /* from tokenizer_path, or NULL */
    char *model_name;
    char *chat_template;
    CURL *curl;
    pthread_mutex_t mu;  /* one transfer at a time on the handle */
    tl_backend_requests *counts; /* the backend's public counters, updated under mu */
    /* /tokenize replies by (flags, text): a decision tokenizes the same
     * framing and label texts many times. Open addressing, cleared when full. */
    struct tok_entry {
        uint64_t hash;
        char *text;     /* flags byte + text; NULL: empty slot */
        size_t len;
        int32_t *ids;
        size_t n;
    } *tok_cache;
    size_t tok_cap, tok_used, tok_bytes;
    pthread_mutex_t cache_mu;
} sglang_impl;

#define TOK_CACHE_SLOTS 4096          /* power of two */
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

/* One HTTP exchange with retries. body NULL: GET. *status gets the final
 * HTTP status; reply the body. Network failures after all retries are
 * TL_ERR_NETWORK; 429/5xx after all retries TL_ERR_REMOTE. */
static tl_status http_call(sglang_impl *im, const char *path, const char *body, long *status, tl_strbuf *reply,
                           tl_error *err) {
    char url[2048];
    snprintf(url, sizeof url, "%s%s", im->base, path);
    pthread_mutex_lock(&im->mu);
    tl_status st = TL_OK;
    int64_t *count = !strcmp(path, "/tokenize")     ? &im->counts->tokenize
                     : !strcmp(path, "/detokenize") ? &im->counts->detokenize
                     : !strcmp(path, "/generate")   ? &im->counts->generate
                                                    : &im->counts->other;
    for (int attempt = 0;; attempt++) {
        (*count)++;
        tl_strbuf_clear(reply);
        header_state hs = {0};
        CURL *c = im->curl;
        curl_easy_reset(c);
        struct curl_slist *hdrs = NULL;
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        hdrs = curl_slist_append(hdrs, "Expect:");
        if (im->auth_header)
            hdrs = curl_slist_append(hdrs, im->auth_header);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &hs);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(im->timeout_s * 1000));
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (body) {
            curl_easy_setopt(c, CURLOPT_POST, 1L);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
        }
        CURLcode cc = curl_easy_perform(c);
        curl_slist_free_all(hdrs);
        *status = 0;
        if (cc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        bool retryable = cc != CURLE_OK || *status == 429 || *status >= 500;
        if (!retryable) {
            st = TL_OK;
            break;
        }
        if (attempt >= im->max_retries) {
            if (cc != CURLE_OK)
                st = tl_error_set(err, cc == CURLE_OPERATION_TIMEDOUT ? TL_ERR_TIMEOUT : TL_ERR_NETWORK,
                                  "sglang: %s: %s (after %d attempts)", url, curl_easy_strerror(cc), attempt + 1);
            else
                st = tl_error_set(err, TL_ERR_REMOTE, "sglang: %s answered HTTP %ld (after %d attempts): %.300s", url,
                                  *status, attempt + 1, tl_strbuf_cstr(reply));
            break;
        }
        double wait = 0.2 * (double)(1 << (attempt < 6 ? attempt : 6));
        if (hs.retry_after_s > 0)
            wait = hs.retry_after_s > 10 ? 10 : (double)hs.retry_after_s;
        sleep_s(wait);
    }
    pthread_mutex_unlock(&im->mu);
    return st;
}

/* POSTs j (or GETs when j is NULL) and parses a JSON reply into *out.
 * A non-2xx status is TL_ERR_REMOTE with the server's message. A 2xx reply
 * that is not JSON (cut off, or an intermediary's page) is retried like a
 * 5xx — every request this backend makes is idempotent — and reported with
 * the parse position when it persists. */
static tl_status call_json(sglang_impl *im, const char *path, json_t *j, json_t **out, long *status_out,
                           tl_error *err) {
    char *body = NULL;
    if (j) {
        body = json_dumps(j, JSON_COMPACT);
        if (!body)
            return tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
    }
    tl_strbuf reply = TL_STRBUF_INIT;
    long status = 0;
    tl_status st = TL_OK;
    for (int attempt = 0;; attempt++) {
        st = http_call(im, path, body, &status, &reply, err);
        if (st == TL_OK && (status < 200 || status >= 300)) {
            st = tl_error_set(err, TL_ERR_REMOTE, "sglang: %s answered HTTP %ld: %.300s", path, status,
                              tl_strbuf_cstr(&reply));
            break;
        }
        if (st)
            break;
        json_error_t je;
        *out = json_loadb(reply.buf ? reply.buf : "", reply.len, 0, &je);
        if (*out)
            break;
        if (attempt >= im->max_retries) {
            st = tl_error_set(err, TL_ERR_REMOTE,
                              "sglang: %s: reply is not JSON (line %d, column %d: %s; %zu bytes, after %d attempts)",
                              path, je.line, je.column, je.text, reply.len, attempt + 1);
            break;
        }
        sleep_s(0.2 * (double)(1 << (attempt < 6 ? attempt : 6)));
    }
    if (status_out)
        *status_out = status;
    free(body);
    tl_strbuf_free(&reply);
    return st;
}

static json_t *ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* ---- ops ------------------------------------------------------------------ */

/* ---- the /tokenize cache ---------------------------------------------- */

static void tok_cache_clear(sglang_impl *im) {
    for (size_t i = 0; i < im->tok_cap; i++) {
        free(im->tok_cache[i].text);
        free(im->tok_cache[i].ids);
    }
    memset(im->tok_cache, 0, im->tok_cap * sizeof *im->tok_cache);
    im->tok_used = im->tok_bytes = 0;
}

/* key = one flags byte + the text; the slot it is in or would go to. */
static struct tok_entry *tok_cache_slot(sglang_impl *im, const char *key, size_t len, uint64_t h) {
    size_t mask = im->tok_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct tok_entry *e = &im->tok_cache[i];
        if (!e->text || (e->hash == h && e->len == len && !memcmp(e->text, key, len)))
            return e;
    }
}

/* A copy of the cached ids for key, or false. */
static bool tok_cache_get(sglang_impl *im, const char *key, size_t len, int32_t **ids, size_t *n) {
    if (!im->tok_cache)
        return false;
    pthread_mutex_lock(&im->cache_mu);
    struct tok_entry *e = tok_cache_slot(im, key, len, tl_hash_bytes(key, len));
    bool hit = e->text != NULL;
    if (hit) {
        *ids = malloc((e->n ? e->n : 1) * sizeof **ids);
        hit = *ids != NULL;
        if (hit) {
            memcpy(*ids, e->ids, e->n * sizeof **ids);
            *n = e->n;
        }
    }
    pthread_mutex_unlock(&im->cache_mu);
    return hit;
}

static void tok_cache_put(sglang_impl *im, const char *key, size_t len, const int32_t *ids, size_t n) {
    if (!im->tok_cache || len + n * sizeof *ids > TOK_CACHE_MAX_BYTES / 16)
        return; /* long texts (contexts) are sent once anyway */
    pthread_mutex_lock(&im->cache_mu);
    if (im->tok_used * 2 >= im->tok_cap || im->tok_bytes + len + n * sizeof *ids > TOK_CACHE_MAX_BYTES)
        tok_cache_clear(im);
    uint64_t h = tl_hash_bytes(key, len);
    struct tok_entry *e = tok_cache_slot(im, key, len, h);
    if (!e->text) {
        char *t = malloc(len);
        int32_t *c = malloc((n ? n : 1) * sizeof *c);
        if (t && c) {
            memcpy(t, key, len);
            memcpy(c, ids, n * sizeof *c);
            *e = (struct tok_entry){h, t, len, c, n};
            im->tok_used++;
            im->tok_bytes += len + n * sizeof *ids;
        } else {
            free(t);
            free(c);
        }
    }
    pthread_mutex_unlock(&im->cache_mu);
}

static tl_status sg_tokenize_remote(sglang_impl *im, const char *text, size_t len, bool add_special, int32_t **ids,
                                    size_t *n, tl_error *err);

static tl_status sg_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, tl_error *err) {
    sglang_impl *im = b->impl;
    if (im->local_vocab) /* the same model's tokenizer, here: no round trip */
        return tl_vocab_tokenize(im->local_vocab, text, len, add_special, parse_special, ids, n, err);
    char *key = malloc(len + 1);
    if (!key)
        return tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
    key[0] = (char)add_special;
    memcpy(key + 1, text, len);
    tl_status st = TL_OK;
    if (!tok_cache_get(im, key, len + 1, ids, n)) {
        st = sg_tokenize_remote(im, text, len, add_special, ids, n, err);
        if (!st)
            tok_cache_put(im, key, len + 1, *ids, *n);
    }
    free(key);
    return st;
}

static tl_status sg_tokenize_remote(sglang_impl *im, const char *text, size_t len, bool add_special, int32_t **ids,
                                    size_t *n, tl_error *err) {
    /* A server tokenizer always parses special-token text (as HF tokenizers do). */
    json_t *req = json_pack("{s:s%,s:b}", "prompt", text, len, "add_special_tokens", add_special);
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, "sglang: /tokenize: text is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = call_json(im, "/tokenize", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *toks = json_object_get(rep, "tokens");
    if (!json_is_array(toks)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /tokenize: reply lacks the list /tokens");
    }
    size_t m = json_array_size(toks);
    *ids = malloc((m ? m : 1) * sizeof **ids);
    *n = 0;
    for (size_t i = 0; *ids && i < m; i++) {
        const json_t *v = json_array_get(toks, i);
        if (!json_is_integer(v)) {
            free(*ids);
            *ids = NULL;
            json_decref(rep);
            return tl_error_set(err, TL_ERR_REMOTE, "sglang: /tokenize: /tokens/%zu is not an integer", i);
        }
        (*ids)[(*n)++] = (int32_t)json_integer_value(v);
    }
    json_decref(rep);
    return *ids ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
}

static tl_status sg_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    sglang_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_detokenize(im->local_vocab, ids, n, false, true, out, err);
    json_t *req = json_pack("{s:o,s:b}", "tokens", ids_json(ids, n), "skip_special_tokens", 0);
    json_t *rep = NULL;
    tl_status st = call_json(im, "/detokenize", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *t = json_object_get(rep, "text");
    if (!json_is_string(t)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /detokenize: reply lacks the string /text");
    }
    tl_strbuf_append(out, json_string_value(t), json_string_length(t));
    json_decref(rep);
    return TL_OK;
}

/* Adds meta_info's token counts to usage. */
static void add_usage(const json_t *meta, tl_usage *u) {
    if (!u)
        return;
    json_int_t p = json_integer_value(json_object_get(meta, "prompt_tokens"));
    json_int_t c = json_integer_value(json_object_get(meta, "cached_tokens"));
    json_int_t o = json_integer_value(json_object_get(meta, "completion_tokens"));
    u->prompt_tokens += p;
    u->cached_tokens += c;
    u->computed_tokens += p - c;
    u->output_tokens += o;
}

static tl_status sg_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    sglang_impl *im = b->impl;
    json_t *ids = json_array(), *cands = json_array();
    for (size_t i = 0; i < k; i++) {
        json_array_append_new(ids, ids_json(reqs[i].ids, reqs[i].n));
        json_array_append_new(cands, ids_json(reqs[i].cands, reqs[i].n_cands));
    }
    json_t *req = json_pack("{s:o,s:{s:i,s:f},s:b,s:o,s:i}", "input_ids", ids, "sampling_params", "max_new_tokens", 1,
                            "temperature", 0.0, "return_logprob", 1, "token_ids_logprob", cands, "logprob_start_len", -1);
    json_t *rep = NULL;
    tl_status st = call_json(im, "/generate", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    if (!json_is_array(rep) || json_array_size(rep) != k) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: expected a list of %zu results", k);
    }
    for (size_t i = 0; i < k && st == TL_OK; i++) {
        const json_t *meta = json_object_get(json_array_get(rep, i), "meta_info");
        const json_t *pos = json_array_get(json_object_get(meta, "output_token_ids_logprobs"), 0);
        if (!json_is_array(pos)) {
            st = tl_error_set(err, TL_ERR_REMOTE,
                              "sglang: /generate: /%zu/meta_info/output_token_ids_logprobs/0 is missing (the server "
                              "must support token_ids_logprob)",
                              i);
            break;
        }
        for (size_t c = 0; c < reqs[i].n_cands; c++)
            reqs[i].logprobs[c] = NAN;
        for (size_t e = 0; e < json_array_size(pos); e++) {
            const json_t *t = json_array_get(pos, e);
            const json_t *lp = json_array_get(t, 0);
            const json_t *id = json_array_get(t, 1);
            if (!json_is_number(lp) || !json_is_integer(id)) {
                st = tl_error_set(err, TL_ERR_REMOTE,
                                  "sglang: /generate: /%zu/meta_info/output_token_ids_logprobs/0/%zu is not "
                                  "[logprob, id, text]",
                                  i, e);
                break;
            }
            for (size_t c = 0; c < reqs[i].n_cands; c++)
                if (reqs[i].cands[c] == (int32_t)json_integer_value(id))
                    reqs[i].logprobs[c] = json_number_value(lp);
        }
        for (size_t c = 0; st == TL_OK && c < reqs[i].n_cands; c++)
            if (isnan(reqs[i].logprobs[c]))
                st = tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: result %zu has no logprob for token %d", i,
                                  reqs[i].cands[c]);
        add_usage(meta, usage);
    }
    if (usage && st == TL_OK)
        usage->forward_passes += 1;
    json_decref(rep);
    return st;
}

static tl_status sg_generate_regex(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                   double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                   tl_usage *usage, tl_error *err) {
    sglang_impl *im = b->impl;
    json_t *req = json_pack("{s:o,s:{s:i,s:f,s:s,s:I}}", "input_ids", ids_json(ids, n), "sampling_params",
                            "max_new_tokens", max_tokens, "temperature", temperature, "regex", regex, "sampling_seed",
                            (json_int_t)(seed & 0x7fffffffffffffffull));
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, "sglang: regex is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = call_json(im, "/generate", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *oids = json_object_get(rep, "output_ids");
    if (!json_is_array(oids)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: reply lacks the list /output_ids");
    }
    size_t m = json_array_size(oids);
    *out_ids = malloc((m ? m : 1) * sizeof **out_ids);
    *n_out = 0;
    for (size_t i = 0; *out_ids && i < m; i++)
        (*out_ids)[(*n_out)++] = (int32_t)json_integer_value(json_array_get(oids, i));
    add_usage(json_object_get(rep, "meta_info"), usage);
    if (usage)
        usage->forward_passes += (int64_t)m;
    json_decref(rep);
    return *out_ids ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
}

static void sg_free(tl_backend *b) {
    if (!b)
        return;
    sglang_impl *im = b->impl;
    if (im) {
        if (im->curl)
            curl_easy_cleanup(im->curl);
        tl_vocab_free(im->local_vocab);
        if (im->tok_cache) {
            tok_cache_clear(im);
            free(im->tok_cache);
        }
        pthread_mutex_destroy(&im->mu);
        pthread_mutex_destroy(&im->cache_mu);
        free(im->base);
        free(im->auth_header);
        free(im->model_name);
        free(im->chat_template);
        free(im);
    }
    free(b);
}

static const tl_backend_ops sglang_ops = {
    .kind = "sglang",
    .free = sg_free,
    .tokenize = sg_tokenize,
    .detokenize = sg_detokenize,
    .score = sg_score,
    .next_logits = NULL,
    .generate_regex = sg_generate_regex,
};

tl_status tl_backend_sglang_new(const tl_sglang_params *params, tl_backend **out, tl_error *err) {
    *out = NULL;
    if (!params || !params->base_url || strncmp(params->base_url, "http", 4))
        return tl_error_set(err, TL_ERR_INVALID, "sglang: the server URL must start with http:// or https://");
    pthread_once(&curl_once, curl_init_once);
    tl_backend *b = calloc(1, sizeof *b);
    sglang_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        return tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
    }
    b->ops = &sglang_ops;
    b->impl = im;
    im->counts = &b->requests;
    pthread_mutex_init(&im->mu, NULL);
    pthread_mutex_init(&im->cache_mu, NULL);
    im->tok_cache = calloc(TOK_CACHE_SLOTS, sizeof *im->tok_cache);
    im->tok_cap = im->tok_cache ? TOK_CACHE_SLOTS : 0;
    im->base = strdup(params->base_url);
    size_t bl = strlen(im->base);
    while (bl > 0 && im->base[bl - 1] == '/')
        im->base[--bl] = '\0';
    if (params->api_key) {
        size_t n = strlen(params->api_key) + 32;
        im->auth_header = malloc(n);
        snprintf(im->auth_header, n, "Authorization: Bearer %s", params->api_key);
    }
    im->timeout_s = params->timeout_s > 0 ? params->timeout_s : 60;
    im->max_retries = params->max_retries >= 0 ? params->max_retries : 3;
    im->curl = curl_easy_init();
    tl_status st = im->curl ? TL_OK : tl_error_set(err, TL_ERR_INTERNAL, "sglang: curl_easy_init failed");
    if (!st && params->tokenizer_path) {
        st = tl_vocab_load_file(params->tokenizer_path, &im->local_vocab, err);
        if (st)
            tl_error_wrap(err, "sglang: --tokenizer %s", params->tokenizer_path);
    }
    /* Who is there: /model_info (older servers: /get_model_info). */
    json_t *info = NULL;
    long status = 0;
    if (!st) {
        st = call_json(im, "/model_info", NULL, &info, &status, err);
        if (st && status == 404)
            st = call_json(im, "/get_model_info", NULL, &info, &status, err);
        if (st)
            tl_error_wrap(err, "sglang: cannot use the server at %s", im->base);
    }
    if (!st) {
        /* SGLang's /model_info names the path it loaded; the served name
         * (what OpenAI-style replies call the model) is /v1/models' id. */
        const char *path = json_string_value(json_object_get(info, "model_path"));
        json_t *models = NULL;
        tl_error merr = {0};
        const char *name = NULL;
        if (call_json(im, "/v1/models", NULL, &models, NULL, &merr) == TL_OK)
            name = json_string_value(json_object_get(json_array_get(json_object_get(models, "data"), 0), "id"));
        im->model_name = strdup(name ? name : path ? path : "sglang");
        json_decref(models);
        const char *tmpl = im->local_vocab ? tl_vocab_chat_template(im->local_vocab) : NULL;
        im->chat_template = tmpl ? strdup(tmpl) : NULL;
        b->n_vocab = im->local_vocab ? tl_vocab_n_tokens(im->local_vocab) : 0; /* 0: unknown, ids unchecked */
        json_decref(info);
        if (!im->local_vocab) {
            /* Probe the tokenizer endpoint (it answers with the same list for any text). */
            json_t *probe = json_pack("{s:s,s:b}", "prompt", "a", "add_special_tokens", 0), *rep = NULL;
            tl_error perr = {0};
            long pst = 0;
            im->remote_tokenizer = call_json(im, "/tokenize", probe, &rep, &pst, &perr) == TL_OK &&
                                   json_is_array(json_object_get(rep, "tokens"));
            json_decref(probe);
            json_decref(rep);
            if (!im->remote_tokenizer)
                st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                                  "sglang: %s has no /tokenize (%s); pass --tokenizer M.gguf with the same model's "
                                  "tokenizer",
                                  im->base, perr.msg[0] ? perr.msg : "unexpected reply");
        }
    }
    if (st) {
        sg_free(b);
        return st;
    }
    b->vocab = im->local_vocab;
    /* With the model's own GGUF here, its template (or its lack of one) is
     * known; otherwise only the caller can say. */
    b->template_from_caller = im->local_vocab == NULL;
    b->model_name = im->model_name;
    b->chat_template = im->chat_template;
    *out = b;
    return TL_OK;
}
