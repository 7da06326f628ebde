/* batches_api.c: OpenAI's Batch API: POST /v1/batches, GET /v1/batches,
 * GET /v1/batches/ID, POST /v1/batches/ID/cancel.
 *
 * Each batch runs on its own thread through tl_batch_run (typellm/batch.h)
 * over the input file's OpenAI batch lines, every line a request to this
 * server's own handler at TL_PRIORITY_BATCH, so interactive requests always
 * take the next model step first. Status: validating (every line JSON with
 * the batch's endpoint) -> in_progress -> finalizing (the output split into
 * the output file, status < 400, and the error file) -> completed; or failed
 * (validation), or cancelling -> cancelled (what was done is kept). The
 * batch object is rewritten atomically at each change and at most once a
 * second for request_counts; a server stopped or killed mid-batch resumes it
 * at its next start from the resumable output. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/batch_store.h"
#include "typellm/batch.h"

#define BATCH_PARALLEL 8
#define MAX_LINE_BYTES ((size_t)16 << 20)

typedef struct batch_entry {
    char id[64];
    json_t *obj;       /* the batch object (under the store's mu) */
    pthread_t th;
    bool has_thread;
    bool cancel;
    double saved_s;    /* when obj was last written */
    uint64_t base_done, base_failed; /* lines already in the output when this run started */
    struct batch_entry *next;
} batch_entry;

struct batch_store {
    pthread_mutex_t mu;
    bool closing;
    batch_entry *list; /* newest first */
    tl_server *s;
};

typedef struct runner {
    tl_server *s;
    batch_entry *e;
} runner;

static const char *const ENDPOINTS[] = {"/v1/decisions", "/v1/chat/completions", "/v1/completions"};

static char *batch_file(tl_server *s, const char *id, const char *ext) {
    char name[96];
    snprintf(name, sizeof name, "%s%s", id, ext);
    return store_path(s, "batches", name);
}

/* Writes e->obj (under mu). */
static void persist(tl_server *s, batch_entry *e) {
    char *p = batch_file(s, e->id, ".json");
    tl_error err = {0};
    if (p && store_write_json(p, e->obj, &err) && s->p.log)
        fprintf(s->p.log, "batch %s: %s\n", e->id, err.msg);
    free(p);
    e->saved_s = tl_now_s();
}

static const char *status_of(const batch_entry *e) { return json_string_value(json_object_get(e->obj, "status")); }

static void set_status(batch_entry *e, const char *status, const char *at_key) {
    json_object_set_new(e->obj, "status", json_string(status));
    if (at_key)
        json_object_set_new(e->obj, at_key, json_integer((json_int_t)time(NULL)));
}

static void set_counts(batch_entry *e, uint64_t total, uint64_t completed, uint64_t failed) {
    json_object_set_new(e->obj, "request_counts", json_pack("{s:I,s:I,s:I}", "total", (json_int_t)total, "completed",
                                                            (json_int_t)completed, "failed", (json_int_t)failed));
}

static uint64_t count_total(const batch_entry *e) {
    return (uint64_t)json_integer_value(json_object_get(json_object_get(e->obj, "request_counts"), "total"));
}

/* A line of the output failed: an error, or a response with status >= 400. */
static bool line_failed(const json_t *line) {
    const json_t *resp = json_object_get(line, "response");
    return !json_is_null(json_object_get(line, "error")) || !resp ||
           json_integer_value(json_object_get(resp, "status_code")) >= 400;
}

/* ---- the runner ----------------------------------------------------------------- */

static bool run_stop(void *ctx) {
    runner *r = ctx;
    pthread_mutex_lock(&r->s->batches->mu);
    bool stop = r->s->batches->closing || r->e->cancel;
    pthread_mutex_unlock(&r->s->batches->mu);
    return stop;
}

static void run_progress(void *ctx, const tl_batch_progress *p) {
    runner *r = ctx;
    batch_entry *e = r->e;
    pthread_mutex_lock(&r->s->batches->mu);
    uint64_t failed = e->base_failed + p->errors;
    uint64_t done = e->base_done + (p->done - p->resumed);
    set_counts(e, count_total(e), done - failed, failed);
    if (tl_now_s() - e->saved_s >= 1.0)
        persist(r->s, e);
    pthread_mutex_unlock(&r->s->batches->mu);
}

static tl_status run_request(void *ctx, tl_backend *b, const char *url, const char *body, size_t len, int *status,
                             char **reply, tl_error *err) {
    (void)b;
    runner *r = ctx;
    pthread_mutex_lock(&r->s->batches->mu);
    const char *endpoint = json_string_value(json_object_get(r->e->obj, "endpoint"));
    bool match = endpoint && !strcmp(endpoint, url);
    pthread_mutex_unlock(&r->s->batches->mu);
    if (!match) {
        *status = 400;
        *reply = strdup("{\"error\":{\"message\":\"The URL provided for this request does not match the batch "
                        "endpoint.\",\"type\":\"invalid_request_error\",\"param\":\"url\",\"code\":null}}");
        return *reply ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    char auth[600] = "";
    if (r->s->api_key)
        snprintf(auth, sizeof auth, "Bearer %s", r->s->api_key);
    tl_http_request rq = {.method = "POST", .path = url, .authorization = r->s->api_key ? auth : NULL, .body = body,
                          .body_len = len, .priority = TL_PRIORITY_BATCH};
    tl_http_reply rp = {.stream_fd = -1};
    tl_server_handle(r->s, &rq, &rp);
    *status = rp.status;
    *reply = tl_strbuf_detach(&rp.body);
    tl_http_reply_free(&rp);
    return *reply ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "out of memory");
}

/* Reads path's lines one at a time into *line (false at the end). */
static bool next_line(FILE *f, tl_strbuf *line) {
    tl_strbuf_clear(line);
    int c;
    bool any = false;
    while ((c = getc_unlocked(f)) != EOF) {
        any = true;
        if (c == '\n')
            return true;
        if (line->len < MAX_LINE_BYTES)
            tl_strbuf_putc(line, (char)c);
    }
    return any;
}

/* Checks every input line; on failure fills the batch's "errors". */
static bool validate(tl_server *s, batch_entry *e, const char *input, const char *endpoint, uint64_t *total) {
    FILE *f = fopen(input, "rb");
    json_t *errors = json_array();
    tl_strbuf line = TL_STRBUF_INIT;
    uint64_t n = 0, lineno = 0;
    while (f && next_line(f, &line) && json_array_size(errors) < 100) {
        lineno++;
        const char *t = tl_strbuf_cstr(&line);
        if (!t[strspn(t, " \t\r")])
            continue;
        n++;
        json_error_t je;
        json_t *j = json_loadb(t, line.len, 0, &je);
        const char *url = json_string_value(json_object_get(j, "url"));
        const char *why = !j ? "the line is not valid JSON"
                          : !json_is_string(json_object_get(j, "custom_id")) ? "custom_id must be a string"
                          : !json_is_object(json_object_get(j, "body")) ? "body must be an object"
                          : !url || strcmp(url, endpoint) ? "the url does not match the batch endpoint" : NULL;
        if (why)
            json_array_append_new(errors, json_pack("{s:s,s:s,s:n,s:I}", "code", "invalid_request", "message", why,
                                                    "param", "line", (json_int_t)lineno));
        json_decref(j);
    }
    if (!f)
        json_array_append_new(errors, json_pack("{s:s,s:s,s:n,s:n}", "code", "file_missing", "message",
                                                "the input file's bytes are missing", "param", "line"));
    else if (n == 0)
        json_array_append_new(errors, json_pack("{s:s,s:s,s:n,s:n}", "code", "empty_file", "message",
                                                "the input file has no requests", "param", "line"));
    if (f)
        fclose(f);
    tl_strbuf_free(&line);
    bool ok = json_array_size(errors) == 0;
    pthread_mutex_lock(&s->batches->mu);
    if (ok) {
        set_counts(e, n, 0, 0);
    } else {
        json_object_set_new(e->obj, "errors", json_pack("{s:s,s:o}", "object", "list", "data", errors));
        errors = NULL;
    }
    pthread_mutex_unlock(&s->batches->mu);
    json_decref(errors);
    *total = n;
    return ok;
}

/* Counts the lines (and failed lines) of the output so far. */
static void count_done(const char *path, uint64_t *done, uint64_t *failed) {
    *done = *failed = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    tl_strbuf line = TL_STRBUF_INIT;
    long long good = 0;
    int c = 0;
    while (next_line(f, &line)) {
        /* a torn last line (no newline) is redone by the resume, so not counted */
        if (fseek(f, -1, SEEK_CUR) == 0 && (c = getc_unlocked(f)) != '\n')
            break;
        json_t *j = json_loadb(line.buf ? line.buf : "", line.len, 0, NULL);
        (*done)++;
        *failed += line_failed(j);
        json_decref(j);
        good++;
    }
    (void)good;
    tl_strbuf_free(&line);
    fclose(f);
}

/* Splits the output into the output and error files; counts what it holds. */
static tl_status finalize(tl_server *s, batch_entry *e, const char *out_path, tl_error *err) {
    char *paths[2] = {batch_file(s, e->id, ".output.tmp"), batch_file(s, e->id, ".errors.tmp")};
    FILE *in = fopen(out_path, "rb");
    FILE *o[2] = {paths[0] ? fopen(paths[0], "wb") : NULL, paths[1] ? fopen(paths[1], "wb") : NULL};
    tl_status st = o[0] && o[1] ? TL_OK : tl_error_set(err, TL_ERR_IO, "batch %s: cannot write its files", e->id);
    uint64_t n[2] = {0, 0};
    tl_strbuf line = TL_STRBUF_INIT;
    while (!st && in && next_line(in, &line)) {
        json_t *j = json_loadb(line.buf ? line.buf : "", line.len, 0, NULL);
        int k = line_failed(j);
        json_decref(j);
        fwrite(line.buf ? line.buf : "", 1, line.len, o[k]);
        fputc('\n', o[k]);
        n[k]++;
    }
    tl_strbuf_free(&line);
    if (in)
        fclose(in);
    for (int k = 0; k < 2; k++)
        if (o[k] && (fflush(o[k]) || fsync(fileno(o[k])) || fclose(o[k])) && !st)
            st = tl_error_set(err, TL_ERR_IO, "batch %s: writing its files: %s", e->id, strerror(errno));
    char ids[2][64] = {"", ""};
    static const char *const names[2] = {"batch_output.jsonl", "batch_errors.jsonl"};
    for (int k = 0; k < 2 && !st; k++)
        if (n[k])
            st = files_adopt(s, paths[k], names[k], "batch_output", ids[k], sizeof ids[k], err);
    for (int k = 0; k < 2; k++) {
        if (paths[k])
            unlink(paths[k]);
        free(paths[k]);
    }
    if (st)
        return st;
    pthread_mutex_lock(&s->batches->mu);
    json_object_set_new(e->obj, "output_file_id", ids[0][0] ? json_string(ids[0]) : json_null());
    json_object_set_new(e->obj, "error_file_id", ids[1][0] ? json_string(ids[1]) : json_null());
    set_counts(e, count_total(e), n[0], n[1]);
    pthread_mutex_unlock(&s->batches->mu);
    return TL_OK;
}

static void *batch_main(void *arg) {
    runner *r = arg;
    tl_server *s = r->s;
    batch_entry *e = r->e;
    struct batch_store *bs = s->batches;
    pthread_mutex_lock(&bs->mu);
    char status[32], input_id[80], endpoint[64];
    snprintf(status, sizeof status, "%s", status_of(e) ? status_of(e) : "");
    snprintf(input_id, sizeof input_id, "%s", json_string_value(json_object_get(e->obj, "input_file_id")) ?: "");
    snprintf(endpoint, sizeof endpoint, "%s", json_string_value(json_object_get(e->obj, "endpoint")) ?: "");
    pthread_mutex_unlock(&bs->mu);
    char *input = files_data_path(s, input_id, NULL);
    char *out = batch_file(s, e->id, ".out.jsonl");
    tl_error err = {0};
    tl_status st = input && out ? TL_OK : tl_error_set(&err, TL_ERR_IO, "the input file %s is gone", input_id);
    if (!st && !strcmp(status, "validating")) {
        uint64_t total = 0;
        bool ok = validate(s, e, input, endpoint, &total);
        pthread_mutex_lock(&bs->mu);
        if (!ok)
            set_status(e, "failed", "failed_at");
        else if (e->cancel)
            set_status(e, "cancelling", NULL);
        else
            set_status(e, "in_progress", "in_progress_at");
        persist(s, e);
        snprintf(status, sizeof status, "%s", status_of(e));
        pthread_mutex_unlock(&bs->mu);
    }
    bool run = !st && (!strcmp(status, "in_progress") || !strcmp(status, "finalizing"));
    if (run) {
        uint64_t done, failed;
        count_done(out, &done, &failed);
        pthread_mutex_lock(&bs->mu);
        e->base_done = done;
        e->base_failed = failed;
        pthread_mutex_unlock(&bs->mu);
        char prefix[96];
        snprintf(prefix, sizeof prefix, "%s_req_", e->id);
        tl_batch_params bp = {.input_path = input, .output_path = out, .format = TL_BATCH_OPENAI,
                              .n_parallel = BATCH_PARALLEL, .request = run_request, .request_ctx = r,
                              .request_id_prefix = prefix, .on_progress = run_progress, .progress_ctx = r,
                              .stop = run_stop, .stop_ctx = r};
        tl_batch_progress sum;
        st = tl_batch_run(&bp, &sum, &err);
    }
    pthread_mutex_lock(&bs->mu);
    bool closing = bs->closing, cancel = e->cancel;
    if (!st && closing && !cancel && run) {
        persist(s, e); /* stopped with the server: resumed at its next start */
        pthread_mutex_unlock(&bs->mu);
        goto out;
    }
    if (st) {
        set_status(e, "failed", "failed_at");
        json_object_set_new(e->obj, "errors", json_pack("{s:s,s:[{s:s,s:s,s:n,s:n}]}", "object", "list", "data",
                                                        "code", "batch_failed", "message", err.msg, "param", "line"));
        persist(s, e);
        pthread_mutex_unlock(&bs->mu);
        goto out;
    }
    if (!strcmp(status, "failed") || !strcmp(status, "completed") || !strcmp(status, "cancelled")) {
        pthread_mutex_unlock(&bs->mu);
        goto out;
    }
    if (!cancel)
        set_status(e, "finalizing", "finalizing_at");
    persist(s, e);
    pthread_mutex_unlock(&bs->mu);
    st = finalize(s, e, out, &err);
    pthread_mutex_lock(&bs->mu);
    if (st) {
        set_status(e, "failed", "failed_at");
        json_object_set_new(e->obj, "errors", json_pack("{s:s,s:[{s:s,s:s,s:n,s:n}]}", "object", "list", "data",
                                                        "code", "batch_failed", "message", err.msg, "param", "line"));
    } else {
        set_status(e, cancel ? "cancelled" : "completed", cancel ? "cancelled_at" : "completed_at");
    }
    persist(s, e);
    pthread_mutex_unlock(&bs->mu);
out:
    free(input);
    free(out);
    free(r);
    return NULL;
}

/* Starts e's runner (under mu). */
static bool start_runner(tl_server *s, batch_entry *e) {
    runner *r = malloc(sizeof *r);
    if (!r)
        return false;
    *r = (runner){s, e};
    if (pthread_create(&e->th, NULL, batch_main, r)) {
        free(r);
        return false;
    }
    e->has_thread = true;
    return true;
}

/* ---- the store ---------------------------------------------------------------- */

static bool mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST)
            return false;
        *p = '/';
    }
    return !mkdir(buf, 0755) || errno == EEXIST;
}

static bool terminal(const char *status) {
    return !status || !strcmp(status, "completed") || !strcmp(status, "failed") || !strcmp(status, "cancelled") ||
           !strcmp(status, "expired");
}

tl_status batch_store_open(tl_server *s, tl_error *err) {
    struct batch_store *bs = calloc(1, sizeof *bs);
    if (!bs)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&bs->mu, NULL);
    bs->s = s;
    s->batches = bs;
    char *files = store_path(s, "files", NULL), *batches = store_path(s, "batches", NULL);
    bool ok = files && batches && mkdirs(files) && mkdirs(batches);
    free(files);
    if (!ok) {
        free(batches);
        batch_store_close(s);
        return tl_error_set(err, TL_ERR_IO, "server: --data-dir %s: cannot create its folders: %s", s->p.data_dir,
                            strerror(errno));
    }
    /* Earlier batches, oldest first so the list ends newest first. */
    struct dirent **names = NULL;
    int n = scandir(batches, &names, NULL, alphasort);
    json_t **objs = n > 0 ? calloc((size_t)n, sizeof *objs) : NULL;
    int n_objs = 0;
    for (int i = 0; objs && i < n; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        if (nm[0] == '.' || len <= 5 || strchr(nm, '.') != nm + len - 5 || strcmp(nm + len - 5, ".json"))
            continue; /* BATCH_ID.json only: not its output, sidecar or temporaries */
        char *p = store_path(s, "batches", nm);
        json_t *o = p ? store_read_json(p) : NULL;
        free(p);
        if (!o)
            continue;
        int k = n_objs++; /* insertion by created_at */
        json_int_t c = json_integer_value(json_object_get(o, "created_at"));
        while (k > 0 && json_integer_value(json_object_get(objs[k - 1], "created_at")) > c) {
            objs[k] = objs[k - 1];
            k--;
        }
        objs[k] = o;
    }
    pthread_mutex_lock(&bs->mu);
    for (int i = 0; i < n_objs; i++) {
        const char *id = json_string_value(json_object_get(objs[i], "id"));
        batch_entry *e = id ? calloc(1, sizeof *e) : NULL;
        if (!e) {
            json_decref(objs[i]);
            continue;
        }
        snprintf(e->id, sizeof e->id, "%s", id);
        e->obj = objs[i];
        e->cancel = status_of(e) && !strcmp(status_of(e), "cancelling");
        e->next = bs->list;
        bs->list = e;
        if (!terminal(status_of(e))) {
            if (s->p.log)
                fprintf(s->p.log, "batch %s: resuming (%s)\n", e->id, status_of(e));
            start_runner(s, e);
        }
    }
    pthread_mutex_unlock(&bs->mu);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(objs);
    free(batches);
    return TL_OK;
}

void batch_store_close(tl_server *s) {
    struct batch_store *bs = s->batches;
    if (!bs)
        return;
    pthread_mutex_lock(&bs->mu);
    bs->closing = true;
    pthread_mutex_unlock(&bs->mu);
    for (batch_entry *e = bs->list; e; e = e->next)
        if (e->has_thread)
            pthread_join(e->th, NULL);
    s->batches = NULL;
    for (batch_entry *e = bs->list, *next; e; e = next) {
        next = e->next;
        json_decref(e->obj);
        free(e);
    }
    pthread_mutex_destroy(&bs->mu);
    free(bs);
}

/* ---- routes ------------------------------------------------------------------------ */

static batch_entry *find(struct batch_store *bs, const char *id, size_t n) {
    for (batch_entry *e = bs->list; e; e = e->next)
        if (strlen(e->id) == n && !memcmp(e->id, id, n))
            return e;
    return NULL;
}

static void batch_create(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    parse_failure f = {0};
    json_t *body = parse_json_body_openai(req->body, req->body_len, &f);
    if (!body) {
        reply_json(r, f.status, f.body);
        return;
    }
    const char *input = json_string_value(json_object_get(body, "input_file_id"));
    const char *endpoint = json_string_value(json_object_get(body, "endpoint"));
    const char *window = json_string_value(json_object_get(body, "completion_window"));
    json_t *metadata = json_object_get(body, "metadata");
    bool endpoint_ok = false;
    for (size_t i = 0; endpoint && i < sizeof ENDPOINTS / sizeof ENDPOINTS[0]; i++)
        endpoint_ok |= !strcmp(endpoint, ENDPOINTS[i]);
    json_t *file = NULL;
    char *data = input ? files_data_path(s, input, &file) : NULL;
    const char *purpose = json_string_value(json_object_get(file, "purpose"));
    if (!json_is_object(body))
        reply_openai_error(r, 400, "invalid_request_error", NULL, NULL, "the body must be a JSON object");
    else if (!input)
        reply_openai_error(r, 400, "invalid_request_error", "input_file_id", NULL, "input_file_id is required");
    else if (!endpoint_ok)
        reply_openai_error(r, 400, "invalid_request_error", "endpoint", NULL,
                           "endpoint must be one of /v1/decisions, /v1/chat/completions, /v1/completions");
    else if (!window || strcmp(window, "24h"))
        reply_openai_error(r, 400, "invalid_request_error", "completion_window", NULL,
                           "completion_window must be \"24h\"");
    else if (metadata && !json_is_null(metadata) && !json_is_object(metadata))
        reply_openai_error(r, 400, "invalid_request_error", "metadata", NULL, "metadata must be an object");
    else if (!data)
        reply_openai_error(r, 404, "invalid_request_error", "input_file_id", NULL, "No such File object: %s", input);
    else if (!purpose || strcmp(purpose, "batch"))
        reply_openai_error(r, 400, "invalid_request_error", "input_file_id", NULL,
                           "the input file's purpose must be \"batch\", not \"%s\"", purpose ? purpose : "");
    else {
        batch_entry *e = calloc(1, sizeof *e);
        json_int_t now = (json_int_t)time(NULL);
        if (e) {
            store_new_id("batch_", e->id, sizeof e->id);
            e->obj = json_pack("{s:s,s:s,s:s,s:n,s:s,s:s,s:s,s:n,s:n,s:I,s:n,s:I,s:n,s:n,s:n,s:n,s:n,s:n,s:{s:i,s:i,s:i},"
                               "s:O}",
                               "id", e->id, "object", "batch", "endpoint", endpoint, "errors", "input_file_id", input,
                               "completion_window", window, "status", "validating", "output_file_id", "error_file_id",
                               "created_at", now, "in_progress_at", "expires_at", now + 86400, "finalizing_at",
                               "completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at",
                               "request_counts", "total", 0, "completed", 0, "failed", 0, "metadata",
                               metadata ? metadata : json_null());
        }
        struct batch_store *bs = s->batches;
        pthread_mutex_lock(&bs->mu);
        bool ok = e && e->obj && !bs->closing;
        if (ok) {
            e->next = bs->list;
            bs->list = e;
            if (!start_runner(s, e)) {
                set_status(e, "failed", "failed_at");
                json_object_set_new(e->obj, "errors", json_pack("{s:s,s:[{s:s,s:s,s:n,s:n}]}", "object", "list",
                                                                "data", "code", "batch_failed", "message",
                                                                "cannot start a thread", "param", "line"));
            }
            persist(s, e);
            reply_json(r, 200, json_deep_copy(e->obj));
        }
        pthread_mutex_unlock(&bs->mu);
        if (!ok) {
            if (e)
                json_decref(e->obj);
            free(e);
            reply_openai_error(r, 503, "server_error", NULL, NULL, "the server is stopping: cannot start the batch");
        }
    }
    free(data);
    json_decref(file);
    json_decref(body);
}

void handle_batches(tl_server *s, const tl_http_request *req, tl_http_reply *r, const char *rest) {
    struct batch_store *bs = s->batches;
    const char *method = req->method ? req->method : "GET";
    if (!*rest) {
        if (!strcmp(method, "POST")) {
            batch_create(s, req, r);
        } else if (!strcmp(method, "GET")) {
            json_t *data = json_array();
            pthread_mutex_lock(&bs->mu);
            for (batch_entry *e = bs->list; e; e = e->next)
                json_array_append_new(data, json_deep_copy(e->obj));
            pthread_mutex_unlock(&bs->mu);
            json_t *first = json_object_get(json_array_get(data, 0), "id");
            json_t *last = json_object_get(json_array_get(data, json_array_size(data) - 1), "id");
            reply_json(r, 200, json_pack("{s:s,s:o,s:O?,s:O?,s:b}", "object", "list", "data", data, "first_id", first,
                                         "last_id", last, "has_more", 0));
        } else {
            reply_openai_error(r, 405, "invalid_request_error", NULL, NULL, "%s /v1/batches: method not allowed", method);
        }
        return;
    }
    const char *slash = strchr(rest, '/');
    size_t idn = slash ? (size_t)(slash - rest) : strlen(rest);
    bool cancel = slash && !strcmp(slash, "/cancel");
    if ((slash && !cancel) || (cancel && strcmp(method, "POST")) || (!cancel && strcmp(method, "GET"))) {
        reply_openai_error(r, slash && !cancel ? 404 : 405, "invalid_request_error", NULL, NULL,
                           "%s /v1/batches/%s: no such route", method, rest);
        return;
    }
    pthread_mutex_lock(&bs->mu);
    batch_entry *e = find(bs, rest, idn);
    if (!e) {
        pthread_mutex_unlock(&bs->mu);
        reply_openai_error(r, 404, "invalid_request_error", "batch_id", NULL, "No such Batch object: %.*s", (int)idn,
                           rest);
        return;
    }
    if (cancel) {
        const char *st = status_of(e);
        if (st && (!strcmp(st, "validating") || !strcmp(st, "in_progress"))) {
            e->cancel = true;
            set_status(e, "cancelling", "cancelling_at");
            persist(s, e);
        } else if (!st || strcmp(st, "cancelling")) {
            pthread_mutex_unlock(&bs->mu);
            reply_openai_error(r, 409, "invalid_request_error", NULL, NULL, "Cannot cancel a batch with status '%s'.",
                               st ? st : "");
            return;
        }
    }
    json_t *copy = json_deep_copy(e->obj);
    pthread_mutex_unlock(&bs->mu);
    reply_json(r, 200, copy);
}
