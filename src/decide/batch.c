/* batch.c: tl_batch_run (typellm/batch.h): a dataset's records decided by
 * n_parallel workers, written in input order, resumable.
 *
 * One mutex guards the reader, the reorder window and the output: a worker
 * takes the next record under it (only the read: parsing and deciding run
 * outside), and the worker that finishes the record the output waits for
 * writes it and every finished one after it. A worker may not take record i
 * until i < written + window, so at most `window` lines wait in memory
 * whatever the input's size. Each line is one write(2) on an O_APPEND fd
 * (a SIGKILL leaves whole lines only; a power loss at worst a torn last
 * line, which a resume cuts), fdatasync'd at most once a second and at the
 * end. */
#include "typellm/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decide/batch_input.h"
#include "decide/batch_route.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_text.h"
#include "util/strbuf.h"

#define DEFAULT_PARALLEL 16
#define DEFAULT_MAX_RECORD ((size_t)16 << 20)
#define MAX_SIDECAR_BYTES ((size_t)1 << 20)
#define MAX_ELSEWHERE 3 /* retries of a record whose backend is unreachable */

typedef struct batch_job {
    const tl_batch_params *p;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch_reader rd;
    batch_fields bf;
    bool csv_out;
    tl_schema *schema;          /* the default schema, or NULL */
    batch_router *router;       /* n_routes > 1: which route each record runs on */
    char **keys;                /* CSV output columns: the default schema's property keys */
    size_t n_keys;
    uint64_t next_index;        /* records taken */
    uint64_t written;           /* records in the output */
    size_t window;
    int n_workers;
    char **slots;               /* finished lines waiting for their turn, by index % window */
    size_t *slot_len;
    int fd;
    double last_sync;
    bool eof, stopped, failed;
    tl_error fail_err;
    tl_batch_progress prog;
    double t0;
} batch_job;

static void job_fail(batch_job *j, const tl_error *e) {
    if (!j->failed) {
        j->failed = true;
        j->fail_err = *e;
    }
    pthread_cond_broadcast(&j->cv);
}

/* ---- fingerprints and the sidecar ------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) {
    h = fnv(h, s ? s : "\x01(null)", s ? strlen(s) : 7);
    return fnv(h, "", 1);
}

static uint64_t options_fingerprint(const tl_batch_params *p, tl_batch_format fmt, bool csv_out) {
    const tl_decide_opts *o = p->opts;
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_strbuf_printf(&sb, "fmt=%d csv=%d values_only=%d ", (int)fmt, csv_out, p->values_only);
    if (o)
        tl_strbuf_printf(&sb, "T=%.17g seed=%llu thr=%.17g trace=%d lenient=%d strict=%d partial=%d ",
                         o->temperature, (unsigned long long)o->seed, o->threshold, o->trace, o->lenient, o->strict,
                         o->partial);
    uint64_t h = fnv(1469598103934665603ull, sb.buf ? sb.buf : "", sb.len);
    tl_strbuf_free(&sb);
    h = fnv_str(h, o ? o->mode : NULL);
    h = fnv_str(h, o ? o->style : NULL);
    h = fnv_str(h, o ? o->chat_template : NULL);
    h = fnv_str(h, o ? o->chat_template_jinja : NULL);
    h = fnv_str(h, p->context_field);
    h = fnv_str(h, p->id_field);
    h = fnv_str(h, p->context_column);
    h = fnv_str(h, p->id_column);
    h = fnv_str(h, p->request_id_prefix);
    return fnv_str(h, p->fingerprint_extra);
}

typedef struct fingerprint {
    uint64_t input_bytes, input_records, input_sum, schema_sum, options_sum;
} fingerprint;

static char *sidecar_path(const char *out) {
    size_t n = strlen(out);
    char *s = malloc(n + 16);
    if (s)
        snprintf(s, n + 16, "%s.typellm-batch", out);
    return s;
}

static tl_status sidecar_write(const char *path, const char *input, const fingerprint *fp, tl_error *err) {
    char hex[3][17];
    snprintf(hex[0], 17, "%016llx", (unsigned long long)fp->input_sum);
    snprintf(hex[1], 17, "%016llx", (unsigned long long)fp->schema_sum);
    snprintf(hex[2], 17, "%016llx", (unsigned long long)fp->options_sum);
    json_t *j = json_pack("{s:i,s:s,s:I,s:I,s:s,s:s,s:s}", "typellm_batch", 1, "input", input, "input_bytes",
                          (json_int_t)fp->input_bytes, "input_records", (json_int_t)fp->input_records,
                          "input_fnv1a64", hex[0], "schema_fnv1a64", hex[1], "options_fnv1a64", hex[2]);
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    size_t len = text ? strlen(text) : 0;
    char *line = text ? realloc(text, len + 2) : NULL;
    if (!line) {
        free(text);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    tl_status st = tl_write_file_atomic(path, line, len + 1, err);
    free(line);
    return st;
}

/* TL_OK when the sidecar at path matches fp; TL_ERR_INVALID naming what differs. */
static tl_status sidecar_check(const char *path, const char *out, const fingerprint *fp, tl_error *err) {
    char *data = NULL;
    size_t len = 0;
    tl_error e = {0};
    if (tl_read_file(path, MAX_SIDECAR_BYTES, &data, &len, &e))
        return tl_error_set(err, TL_ERR_INVALID,
                            "%s exists but was not written by typellm batch (no readable %s); --overwrite replaces it",
                            out, path);
    json_t *j = json_loadb(data, len, 0, NULL);
    tl_free(data);
    const char *what = NULL;
    char hex[17];
    if (!j) {
        what = "its job record (unreadable)";
    } else {
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fp->input_sum);
        const char *in = json_string_value(json_object_get(j, "input_fnv1a64"));
        if (!in || strcmp(in, hex) ||
            json_integer_value(json_object_get(j, "input_bytes")) != (json_int_t)fp->input_bytes)
            what = "the input";
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fp->schema_sum);
        const char *sc = json_string_value(json_object_get(j, "schema_fnv1a64"));
        if (!what && (!sc || strcmp(sc, hex)))
            what = "the schema";
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fp->options_sum);
        const char *op = json_string_value(json_object_get(j, "options_fnv1a64"));
        if (!what && (!op || strcmp(op, hex)))
            what = "the options (format, decide options, fields or model)";
    }
    json_decref(j);
    if (what)
        return tl_error_set(err, TL_ERR_INVALID,
                            "%s was written by a job whose %s differs from this one's: refusing to resume "
                            "(--overwrite starts over)", out, what);
    return TL_OK;
}

/* Records already in the output: complete lines (CSV: records, the header
 * included), and the byte length they end at; torn bytes after it are cut. */
static tl_status count_output(const char *path, bool csv, uint64_t *records, tl_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
    batch_reader r;
    batch_reader_init(&r, f, csv, 1);
    batch_rec rec;
    uint64_t n = 0, good_end = 0;
    int rc;
    while ((rc = batch_reader_next(&r, &rec)) == 1) {
        if (!rec.complete)
            break;
        n++;
        good_end = r.offset;
    }
    uint64_t size = r.offset;
    batch_reader_free(&r);
    fclose(f);
    if (rc < 0)
        return tl_error_set(err, TL_ERR_IO, "%s: read error", path);
    if (size > good_end) {
        if (truncate(path, (off_t)good_end))
            return tl_error_set(err, TL_ERR_IO, "%s: cutting its torn last line: %s", path, strerror(errno));
    }
    *records = n;
    return TL_OK;
}

/* Counts the input's records and fingerprints its bytes (one streaming pass). */
static tl_status scan_input(const char *path, bool csv, size_t max_bytes, fingerprint *fp, tl_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
    batch_reader r;
    batch_reader_init(&r, f, csv, max_bytes < 4096 ? max_bytes : 4096);
    batch_rec rec;
    uint64_t n = 0;
    int rc;
    while ((rc = batch_reader_next(&r, &rec)) == 1)
        n++;
    fp->input_bytes = r.offset;
    fp->input_sum = r.sum;
    fp->input_records = csv && n ? n - 1 : n; /* the header row */
    batch_reader_free(&r);
    fclose(f);
    if (rc < 0)
        return tl_error_set(err, TL_ERR_IO, "%s: read error", path);
    return TL_OK;
}

/* ---- output lines ------------------------------------------------------------- */

static bool put_json(tl_strbuf *sb, const json_t *j) {
    char *t = tl_json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    bool ok = t && tl_strbuf_puts(sb, t);
    free(t);
    return ok;
}

/* A CSV cell for a JSON value: strings as they are, null empty, else JSON. */
static bool put_csv_value(tl_strbuf *sb, const json_t *v) {
    if (!v || json_is_null(v))
        return true;
    if (json_is_string(v))
        return batch_csv_field(sb, json_string_value(v), json_string_length(v));
    char *t = tl_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    bool ok = t && batch_csv_field(sb, t, strlen(t));
    free(t);
    return ok;
}

static bool csv_header(const batch_job *j, tl_strbuf *sb) {
    bool ok = tl_strbuf_puts(sb, "id");
    for (size_t i = 0; i < j->n_keys && ok; i++) {
        ok = tl_strbuf_putc(sb, ',') && batch_csv_field(sb, j->keys[i], strlen(j->keys[i])) && tl_strbuf_putc(sb, ',');
        char *pk = ok ? malloc(strlen(j->keys[i]) + 3) : NULL;
        if (pk) {
            sprintf(pk, "%s_p", j->keys[i]);
            ok = batch_csv_field(sb, pk, strlen(pk));
            free(pk);
        } else {
            ok = false;
        }
    }
    return ok && tl_strbuf_puts(sb, ",error\n");
}

static bool error_line(const batch_job *j, const batch_task *t, const char *msg, const char *code, tl_strbuf *sb) {
    if (j->csv_out) {
        bool ok = put_csv_value(sb, t->id);
        for (size_t i = 0; i < j->n_keys && ok; i++)
            ok = tl_strbuf_puts(sb, ",,");
        return ok && tl_strbuf_putc(sb, ',') && batch_csv_field(sb, msg, strlen(msg)) && tl_strbuf_putc(sb, '\n');
    }
    json_t *e = json_pack("{s:O?,s:{s:s,s:s}}", "id", t->id, "error", "message", msg, "code", code);
    bool ok = e && put_json(sb, e) && tl_strbuf_putc(sb, '\n');
    json_decref(e);
    return ok;
}

static bool decision_line(const batch_job *j, const batch_task *t, const tl_decision *d, tl_strbuf *sb) {
    if (j->csv_out) {
        bool ok = put_csv_value(sb, t->id);
        for (size_t i = 0; i < j->n_keys && ok; i++) {
            long k = tl_decision_find(d, j->keys[i]);
            ok = tl_strbuf_putc(sb, ',');
            if (k < 0 || !ok)
                ok = ok && tl_strbuf_putc(sb, ',');
            else {
                char *v = tl_value_to_json(tl_decision_field_value(d, (size_t)k));
                json_t *jv = v ? json_loads(v, JSON_DECODE_ANY, NULL) : NULL;
                ok = v && put_csv_value(sb, jv) && tl_strbuf_putc(sb, ',');
                json_decref(jv);
                tl_free(v);
                double p = tl_decision_field_probability(d, (size_t)k);
                char num[40];
                if (ok && !isnan(p) && tl_json_real_text(p, num, sizeof num))
                    ok = tl_strbuf_puts(sb, num);
            }
        }
        return ok && tl_strbuf_puts(sb, ",\n");
    }
    char *text = tl_decision_to_json(d, j->p->values_only ? TL_JSON_VALUES_ONLY : 0);
    if (!text)
        return false;
    bool ok = tl_strbuf_puts(sb, "{\"id\":") && put_json(sb, t->id);
    const char *rest = text + 1; /* after the '{' */
    while (*rest == ' ' || *rest == '\n')
        rest++;
    ok = ok && (*rest == '}' || tl_strbuf_putc(sb, ',')) && tl_strbuf_puts(sb, rest) && tl_strbuf_putc(sb, '\n');
    tl_free(text);
    return ok;
}

/* OpenAI's batch output line. */
static bool openai_line(const batch_job *j, const batch_task *t, int status, const char *reply, const char *msg,
                        const char *code, tl_usage *usage, tl_strbuf *sb) {
    const char *prefix = j->p->request_id_prefix ? j->p->request_id_prefix : "batch_req_";
    char id[96], rid[64];
    snprintf(id, sizeof id, "%s%llu", prefix, (unsigned long long)t->index);
    snprintf(rid, sizeof rid, "req_%llu", (unsigned long long)t->index);
    json_t *line;
    if (msg) {
        line = json_pack("{s:s,s:O?,s:n,s:{s:s,s:s}}", "id", id, "custom_id", t->custom_id, "response", "error",
                         "code", code, "message", msg);
    } else {
        json_t *body = reply ? json_loads(reply, JSON_DECODE_ANY, NULL) : NULL;
        if (!body)
            body = json_string(reply ? reply : "");
        json_t *u = json_object_get(body, "usage");
        /* chat / completions: prompt_tokens (+ _details); decisions: input_tokens (+ _details) */
        json_t *pt = json_object_get(u, "prompt_tokens");
        usage->prompt_tokens += json_integer_value(pt ? pt : json_object_get(u, "input_tokens"));
        json_t *det = json_object_get(u, pt ? "prompt_tokens_details" : "input_tokens_details");
        usage->cached_tokens += json_integer_value(json_object_get(det ? det : u, "cached_tokens"));
        line = json_pack("{s:s,s:O?,s:{s:i,s:s,s:o},s:n}", "id", id, "custom_id", t->custom_id, "response",
                         "status_code", status, "request_id", rid, "body", body, "error");
    }
    bool ok = line && put_json(sb, line) && tl_strbuf_putc(sb, '\n');
    json_decref(line);
    return ok;
}

/* The output line of task t, run on b; *is_error when the record failed. */
static bool run_task(batch_job *j, tl_backend *b, batch_task *t, tl_usage *usage, bool *is_error, tl_strbuf *sb,
                     tl_error *fail) {
    const tl_batch_params *p = j->p;
    *is_error = true;
    fail->code = TL_OK;
    if (j->bf.openai) {
        if (t->err_msg[0])
            return openai_line(j, t, 0, NULL, t->err_msg, t->err_code, usage, sb);
        int status = 0;
        char *reply = NULL;
        tl_error e = {0};
        tl_status st = p->request(p->request_ctx, b, t->url, t->body, t->body_len, &status, &reply, &e);
        bool ok = st ? openai_line(j, t, 0, NULL, e.msg, tl_status_name(st), usage, sb)
                     : openai_line(j, t, status, reply, NULL, NULL, usage, sb);
        if (st)
            *fail = e;
        *is_error = st || status >= 400;
        free(reply);
        return ok;
    }
    if (t->err_msg[0])
        return error_line(j, t, t->err_msg, t->err_code, sb);
    tl_error e = {0};
    tl_schema *own = NULL;
    tl_status st = TL_OK;
    if (t->schema) {
        char *text = tl_json_dumps(t->schema, JSON_COMPACT);
        st = text ? tl_schema_parse_opts(text, strlen(text), p->opts, &own, &e)
                  : tl_error_set(&e, TL_ERR_NOMEM, "out of memory");
        free(text);
        if (st)
            tl_error_wrap(&e, "schema");
    } else if (!j->schema) {
        st = tl_error_set(&e, TL_ERR_SCHEMA, "the record has no \"schema\" and the job none (--schema)");
    }
    tl_decision *d = NULL;
    if (!st)
        st = tl_decide(b, t->context, t->context_len, own ? own : j->schema, p->opts, &d, &e);
    tl_schema_free(own);
    if (st) {
        *fail = e;
        return error_line(j, t, e.msg, tl_status_name(st), sb);
    }
    tl_usage u;
    tl_decision_usage(d, &u);
    tl_usage_add(usage, &u);
    *is_error = false;
    bool ok = decision_line(j, t, d, sb);
    tl_decision_free(d);
    return ok;
}

/* ---- workers ------------------------------------------------------------------- */

static tl_status write_all(int fd, const char *s, size_t n, const char *path, tl_error *err) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return tl_error_set(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
        s += w;
        n -= (size_t)w;
    }
    return TL_OK;
}

/* Writes every finished line the output waits for (under mu). */
static void drain(batch_job *j) {
    for (;;) {
        size_t s = (size_t)(j->written % j->window);
        if (!j->slots[s] || j->failed)
            break;
        tl_error e = {0};
        if (write_all(j->fd, j->slots[s], j->slot_len[s], j->p->output_path, &e)) {
            job_fail(j, &e);
            break;
        }
        free(j->slots[s]);
        j->slots[s] = NULL;
        j->written++;
        j->prog.done = j->written;
        double now = tl_now_s();
        if (now - j->last_sync >= 1.0) {
            fdatasync(j->fd);
            j->last_sync = now;
        }
        j->prog.elapsed_s = now - j->t0;
        if (j->p->on_progress)
            j->p->on_progress(j->p->progress_ctx, &j->prog);
    }
    pthread_cond_broadcast(&j->cv);
}

typedef struct worker {
    batch_job *j;
    int index;
    tl_backend *b;       /* without routes: its backend */
    tl_backend **routes; /* with routes: its backend on each (made when first needed) */
} worker;

static bool unreachable(tl_status st) { return st == TL_ERR_NETWORK || st == TL_ERR_TIMEOUT; }

/* The line of a record that could not be sent anywhere. */
static bool unsent_line(const batch_job *j, const batch_task *t, const tl_error *e, tl_strbuf *sb) {
    tl_usage none = {0};
    const char *code = tl_status_name(e->code);
    return j->bf.openai ? openai_line(j, t, 0, NULL, e->msg, code, &none, sb) : error_line(j, t, e->msg, code, sb);
}

/* Without routes: t on the worker's backend. One that cannot be reached (a
 * server down) is replaced by the backend new_backend gives for the next
 * attempt (the caller's next server) and t retried there, up to
 * MAX_ELSEWHERE times. */
static bool run_here(worker *w, batch_task *t, tl_usage *u, bool *is_error, tl_strbuf *line, tl_error *e) {
    batch_job *j = w->j;
    const tl_batch_params *p = j->p;
    bool ok = run_task(j, w->b, t, u, is_error, line, e);
    for (int attempt = 1; ok && *is_error && attempt <= MAX_ELSEWHERE && p->new_backend && unreachable(e->code);
         attempt++) {
        tl_backend *nb = NULL;
        tl_error be = {0};
        if (p->new_backend(p->backend_ctx, w->index + attempt * j->n_workers, &nb, &be))
            break;
        tl_backend_free(w->b);
        w->b = nb;
        tl_strbuf_clear(line);
        memset(e, 0, sizeof *e);
        *u = (tl_usage){0};
        ok = run_task(j, w->b, t, u, is_error, line, e);
    }
    return ok;
}

/* With routes: t on the route the router picks for its prefix
 * (batch_route.h). A route whose server cannot be reached (when its backend
 * is made or while t runs) is taken out and t retried on the next pick, up
 * to MAX_ELSEWHERE times; then t gets an error line. *fatal (with *e): no
 * route is left, or a backend failed otherwise: the job stops (resumable). */
static bool run_routed(worker *w, batch_task *t, tl_usage *u, bool *is_error, tl_strbuf *line, tl_error *e,
                       bool *fatal) {
    batch_job *j = w->j;
    const tl_batch_params *p = j->p;
    uint64_t h[BATCH_ROUTE_MAX_BLOCKS];
    size_t n = 0;
    if (j->bf.openai) {
        batch_route_key(t->url, t->url ? strlen(t->url) : 0, t->body, t->body_len, h, BATCH_ROUTE_MAX_BLOCKS, &n);
    } else {
        char *own = t->schema ? tl_json_dumps(t->schema, JSON_COMPACT) : NULL;
        const char *head = own ? own : p->schema_json;
        batch_route_key(head, own ? strlen(own) : p->schema_len, t->context, t->context_len, h, BATCH_ROUTE_MAX_BLOCKS,
                        &n);
        free(own);
    }
    tl_error last = {0};
    for (int attempt = 0; attempt <= MAX_ELSEWHERE; attempt++) {
        int r = batch_router_pick(j->router, h, n);
        if (r < 0) {
            *fatal = true;
            tl_error_set(e, last.code ? last.code : TL_ERR_NETWORK,
                         "every server is out (the last failure: %s); rerun the same command to resume",
                         last.code ? last.msg : "none");
            return true;
        }
        tl_status st = TL_OK;
        memset(e, 0, sizeof *e);
        if (!w->routes[r])
            st = p->new_backend(p->backend_ctx, w->index + r * j->n_workers, &w->routes[r], e);
        bool ok = true;
        if (!st) {
            tl_strbuf_clear(line);
            *u = (tl_usage){0};
            ok = run_task(j, w->routes[r], t, u, is_error, line, e);
        }
        batch_router_done(j->router, r);
        if (st && !unreachable(st)) {
            *fatal = true;
            return true;
        }
        if (!ok || !(st || (*is_error && unreachable(e->code))))
            return ok;
        batch_router_fail(j->router, r);
        tl_backend_free(w->routes[r]);
        w->routes[r] = NULL;
        last = *e;
        if (st && attempt == MAX_ELSEWHERE) {
            tl_strbuf_clear(line);
            *is_error = true;
            return unsent_line(j, t, e, line);
        }
    }
    return true;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    batch_job *j = w->j;
    const tl_batch_params *p = j->p;
    tl_error e = {0};
    /* A backend that cannot be had (a server down at the start): the next attempt's. */
    tl_status bst = TL_OK;
    for (int attempt = 0; p->new_backend && !j->router && attempt <= MAX_ELSEWHERE; attempt++)
        if (!(bst = p->new_backend(p->backend_ctx, w->index + attempt * j->n_workers, &w->b, &e)))
            break;
    if (!bst && j->router && !(w->routes = calloc((size_t)p->n_routes, sizeof *w->routes)))
        bst = tl_error_set(&e, TL_ERR_NOMEM, "out of memory");
    if (bst) {
        pthread_mutex_lock(&j->mu);
        job_fail(j, &e);
        pthread_mutex_unlock(&j->mu);
        return NULL;
    }
    tl_strbuf raw = TL_STRBUF_INIT, line = TL_STRBUF_INIT;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->failed && !j->eof && !j->stopped && j->next_index >= j->written + j->window)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->failed || j->eof || j->stopped)
            break;
        if (p->stop && p->stop(p->stop_ctx)) {
            j->stopped = j->prog.stopped = true;
            pthread_cond_broadcast(&j->cv);
            break;
        }
        batch_rec rec;
        int rc = batch_reader_next(&j->rd, &rec);
        if (rc <= 0) {
            if (rc < 0) {
                tl_error_set(&e, TL_ERR_IO, "%s: read error at offset %llu", p->input_path,
                             (unsigned long long)j->rd.offset);
                job_fail(j, &e);
            }
            j->eof = true;
            pthread_cond_broadcast(&j->cv);
            break;
        }
        batch_task t = {.index = j->next_index++};
        tl_strbuf_clear(&raw);
        if (j->rd.csv)
            batch_task_from_csv(&j->rd, &rec, &j->bf, &t);
        else if (!rec.too_big && !tl_strbuf_append(&raw, j->rd.buf.buf ? j->rd.buf.buf : "", j->rd.buf.len))
            snprintf(t.err_msg, sizeof t.err_msg, "out of memory"), t.err_code = "nomem";
        pthread_mutex_unlock(&j->mu);

        if (!j->rd.csv && !t.err_msg[0])
            batch_task_from_json(raw.buf ? raw.buf : "", rec.too_big ? j->rd.max_bytes : raw.len, &rec, &j->bf, &t);
        tl_usage u = {0};
        bool is_error = false, fatal = false;
        tl_strbuf_clear(&line);
        memset(&e, 0, sizeof e);
        /* A malformed record needs no backend: its error line is written wherever. */
        bool ok = j->router && !t.err_msg[0] ? run_routed(w, &t, &u, &is_error, &line, &e, &fatal)
                                            : run_here(w, &t, &u, &is_error, &line, &e);
        uint64_t index = t.index;
        batch_task_clear(&t);

        pthread_mutex_lock(&j->mu);
        if (fatal) {
            job_fail(j, &e);
            break;
        }
        if (!ok) {
            tl_error_set(&e, TL_ERR_NOMEM, "out of memory building an output line");
            job_fail(j, &e);
            break;
        }
        size_t s = (size_t)(index % j->window);
        j->slot_len[s] = line.len;
        j->slots[s] = tl_strbuf_detach(&line);
        j->prog.errors += is_error;
        tl_usage_add(&j->prog.usage, &u);
        drain(j);
    }
    pthread_mutex_unlock(&j->mu);
    tl_strbuf_free(&raw);
    tl_strbuf_free(&line);
    tl_backend_free(w->b);
    for (int r = 0; w->routes && r < p->n_routes; r++)
        tl_backend_free(w->routes[r]);
    free(w->routes);
    return NULL;
}

/* ---- the job ---------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcasecmp(s + n - m, suffix);
}

tl_status tl_batch_detect_format(const char *path, tl_batch_format *out, tl_error *err) {
    if (ends_with(path, ".csv")) {
        *out = TL_BATCH_CSV;
        return TL_OK;
    }
    *out = TL_BATCH_JSONL;
    if (!strcmp(path, "-"))
        return TL_OK;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: %s", path, strerror(errno));
    batch_reader r;
    batch_reader_init(&r, f, false, DEFAULT_MAX_RECORD);
    batch_rec rec;
    if (batch_reader_next(&r, &rec) == 1 && !rec.too_big) {
        json_t *j = json_loadb(r.buf.buf, r.buf.len, 0, NULL);
        if (json_object_get(j, "custom_id") && json_object_get(j, "body"))
            *out = TL_BATCH_OPENAI;
        json_decref(j);
    }
    batch_reader_free(&r);
    fclose(f);
    return TL_OK;
}

/* The default schema's property keys (CSV columns). */
static tl_status schema_keys(batch_job *j, tl_error *err) {
    json_t *s = json_loadb(j->p->schema_json, j->p->schema_len, 0, NULL);
    json_t *props = json_object_get(s, "properties");
    size_t n = json_object_size(props);
    j->keys = calloc(n ? n : 1, sizeof *j->keys);
    if (!j->keys) {
        json_decref(s);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        if (!(j->keys[j->n_keys] = strdup(k)))
            break;
        j->n_keys++;
    }
    json_decref(s);
    return j->n_keys == n ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "out of memory");
}

/* Reads the CSV header and finds the columns. */
static tl_status csv_columns(batch_job *j, tl_error *err) {
    const tl_batch_params *p = j->p;
    batch_rec rec;
    int rc = batch_reader_next(&j->rd, &rec);
    if (rc < 0)
        return tl_error_set(err, TL_ERR_IO, "%s: read error", p->input_path);
    if (rc == 0 || rec.too_big || rec.bad[0])
        return tl_error_set(err, TL_ERR_FORMAT, "%s: line 1: a header row is required%s%s", p->input_path,
                            rec.bad[0] ? ": " : "", rec.bad);
    j->rd.rows = 0;
    const char *want = p->context_column ? p->context_column : "context";
    const char *want_id = p->id_column ? p->id_column : "id";
    j->bf.context_col = j->bf.id_col = -1;
    for (size_t i = 0; i < j->rd.n_fields; i++) {
        const char *f = batch_reader_field(&j->rd, i, NULL);
        if (j->bf.context_col < 0 && !strcmp(f, want))
            j->bf.context_col = (long)i;
        if (j->bf.id_col < 0 && !strcmp(f, want_id))
            j->bf.id_col = (long)i;
    }
    if (j->bf.context_col < 0)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: line 1: the header has no column '%s' (--context-column)",
                            p->input_path, want);
    if (p->id_column && j->bf.id_col < 0)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: line 1: the header has no column '%s' (--id-column)",
                            p->input_path, want_id);
    return TL_OK;
}

/* Opens the output: fresh (with the sidecar first) or resumed after the
 * records it holds; *skip gets how many input records are done. */
static tl_status open_output(batch_job *j, const fingerprint *fp, bool resumable, uint64_t *skip, tl_error *err) {
    const tl_batch_params *p = j->p;
    char *side = sidecar_path(p->output_path);
    if (!side)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    struct stat st;
    bool exists = stat(p->output_path, &st) == 0 && st.st_size > 0;
    tl_status s = TL_OK;
    *skip = 0;
    bool fresh = !exists || p->overwrite;
    if (!fresh && !resumable)
        s = tl_error_set(err, TL_ERR_INVALID, "%s exists and the input is not a file, so it cannot be resumed; "
                         "--overwrite starts over", p->output_path);
    if (!s && !fresh)
        s = sidecar_check(side, p->output_path, fp, err);
    uint64_t have = 0;
    if (!s && !fresh)
        s = count_output(p->output_path, j->csv_out, &have, err);
    if (!s && !fresh && j->csv_out && have == 0)
        fresh = true; /* not even the header made it */
    if (!s && !fresh) {
        *skip = j->csv_out ? have - 1 : have;
        if (resumable && *skip > fp->input_records)
            s = tl_error_set(err, TL_ERR_INVALID, "%s has %llu records, more than the input's %llu: refusing to "
                             "resume (--overwrite starts over)", p->output_path, (unsigned long long)*skip,
                             (unsigned long long)fp->input_records);
    }
    if (!s && fresh && resumable)
        s = sidecar_write(side, p->input_path, fp, err);
    if (!s) {
        j->fd = open(p->output_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0644);
        if (j->fd < 0)
            s = tl_error_set(err, TL_ERR_IO, "%s: %s", p->output_path, strerror(errno));
    }
    if (!s && fresh && j->csv_out) {
        tl_strbuf h = TL_STRBUF_INIT;
        s = csv_header(j, &h) ? write_all(j->fd, h.buf, h.len, p->output_path, err)
                              : tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        tl_strbuf_free(&h);
    }
    free(side);
    return s;
}

tl_status tl_batch_run(const tl_batch_params *p, tl_batch_progress *summary, tl_error *err) {
    if (!p || !p->input_path || !p->output_path)
        return tl_error_set(err, TL_ERR_INVALID, "batch: an input and an output path are required");
    batch_job job = {.p = p, .fd = -1, .t0 = tl_now_s()};
    batch_job *j = &job;
    tl_batch_format fmt = p->format;
    tl_status st = fmt == TL_BATCH_AUTO ? tl_batch_detect_format(p->input_path, &fmt, err) : TL_OK;
    if (st)
        return st;
    j->csv_out = ends_with(p->output_path, ".csv");
    j->bf.openai = fmt == TL_BATCH_OPENAI;
    j->bf.context_field = p->context_field ? p->context_field : "context";
    j->bf.id_field = p->id_field ? p->id_field : "id";
    if (j->bf.openai && !p->request)
        return tl_error_set(err, TL_ERR_INVALID, "batch: OpenAI batch lines need a request runner");
    if (!j->bf.openai && !p->new_backend)
        return tl_error_set(err, TL_ERR_INVALID, "batch: a backend is required");
    if (j->bf.openai && j->csv_out)
        return tl_error_set(err, TL_ERR_INVALID, "batch: OpenAI batch lines are answered in JSONL, not CSV");
    if (j->csv_out && !p->schema_json)
        return tl_error_set(err, TL_ERR_INVALID, "batch: CSV output needs a schema (--schema) for its columns");
    if (!strcmp(p->input_path, "-") && fmt == TL_BATCH_CSV)
        return tl_error_set(err, TL_ERR_INVALID, "batch: CSV input must be a file");
    if (p->schema_json && !j->bf.openai) {
        st = tl_schema_parse_opts(p->schema_json, p->schema_len, p->opts, &j->schema, err);
        if (!st && j->csv_out)
            st = schema_keys(j, err);
        if (st)
            goto done;
    }
    size_t max_bytes = p->max_record_bytes ? p->max_record_bytes : DEFAULT_MAX_RECORD;
    bool from_file = strcmp(p->input_path, "-") != 0;
    fingerprint fp = {0};
    if (from_file)
        st = scan_input(p->input_path, fmt == TL_BATCH_CSV, max_bytes, &fp, err);
    if (st)
        goto done;
    fp.schema_sum = fnv(1469598103934665603ull, p->schema_json ? p->schema_json : "", p->schema_len);
    fp.options_sum = options_fingerprint(p, fmt, j->csv_out);
    j->prog.total = fp.input_records;
    FILE *in = from_file ? fopen(p->input_path, "rb") : stdin;
    if (!in) {
        st = tl_error_set(err, TL_ERR_IO, "%s: %s", p->input_path, strerror(errno));
        goto done;
    }
    batch_reader_init(&j->rd, in, fmt == TL_BATCH_CSV, max_bytes);
    if (fmt == TL_BATCH_CSV)
        st = csv_columns(j, err);
    uint64_t skip = 0;
    if (!st)
        st = open_output(j, &fp, from_file, &skip, err);
    for (uint64_t i = 0; !st && i < skip; i++) {
        batch_rec rec;
        if (batch_reader_next(&j->rd, &rec) != 1)
            st = tl_error_set(err, TL_ERR_IO, "%s: ended before the %llu records the output holds", p->input_path,
                              (unsigned long long)skip);
    }
    j->next_index = j->written = j->prog.done = j->prog.resumed = skip;
    int n = p->n_parallel > 0 ? p->n_parallel : DEFAULT_PARALLEL;
    j->window = (size_t)n * 4 < 16 ? 16 : (size_t)n * 4;
    j->n_workers = n;
    if (!st && p->n_routes > 1 && p->new_backend && !(j->router = batch_router_new(p->n_routes)))
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    j->slots = st ? NULL : calloc(j->window, sizeof *j->slots);
    j->slot_len = st ? NULL : calloc(j->window, sizeof *j->slot_len);
    if (!st && (!j->slots || !j->slot_len))
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    pthread_t *th = st ? NULL : calloc((size_t)n, sizeof *th);
    worker *ws = st ? NULL : calloc((size_t)n, sizeof *ws);
    if (!st && (!th || !ws))
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    if (!st) {
        pthread_mutex_init(&j->mu, NULL);
        pthread_cond_init(&j->cv, NULL);
        j->last_sync = tl_now_s();
        int started = 0;
        for (; started < n; started++) {
            ws[started] = (worker){.j = j, .index = started};
            if (pthread_create(&th[started], NULL, worker_main, &ws[started]))
                break;
        }
        if (started == 0)
            st = tl_error_set(err, TL_ERR_INTERNAL, "batch: cannot start a worker thread");
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        if (!st && j->failed) {
            *err = j->fail_err;
            st = j->fail_err.code ? j->fail_err.code : TL_ERR_INTERNAL;
        }
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
    }
    free(th);
    free(ws);
    if (j->fd >= 0) {
        if (fdatasync(j->fd) && !st && errno != EINVAL)
            st = tl_error_set(err, TL_ERR_IO, "%s: %s", p->output_path, strerror(errno));
        close(j->fd);
    }
    if (j->slots)
        for (size_t i = 0; i < j->window; i++)
            free(j->slots[i]);
    free(j->slots);
    free(j->slot_len);
    batch_reader_free(&j->rd);
    if (from_file)
        fclose(in);
done:
    j->prog.elapsed_s = tl_now_s() - j->t0;
    if (summary)
        *summary = j->prog;
    tl_schema_free(j->schema);
    batch_router_free(j->router);
    for (size_t i = 0; i < j->n_keys; i++)
        free(j->keys[i]);
    free(j->keys);
    return st;
}
