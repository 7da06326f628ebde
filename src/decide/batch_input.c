/* batch_input.c: records of a batch job, read one at a time from a stream
 * (batch_input.h). JSONL: one record per line, CR LF accepted, blank lines
 * skipped. CSV (RFC 4180): fields split by commas, records by CR LF or LF
 * outside quotes, a quoted field's "" is one quote. A record longer than
 * max_bytes is read to its end (so the next one starts in the right place)
 * but its bytes are not kept. */
#include "decide/batch_input.h"

#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "util/strbuf.h"

void batch_reader_init(batch_reader *r, FILE *f, bool csv, size_t max_bytes) {
    memset(r, 0, sizeof *r);
    r->f = f;
    r->csv = csv;
    r->max_bytes = max_bytes;
    r->sum = 1469598103934665603ull;
}

void batch_reader_free(batch_reader *r) {
    tl_strbuf_free(&r->buf);
    free(r->field_off);
    r->field_off = NULL;
}

static int next_byte(batch_reader *r) {
    int c = getc_unlocked(r->f);
    if (c != EOF) {
        r->offset++;
        r->sum = (r->sum ^ (unsigned char)c) * 1099511628211ull;
        if (c == '\n')
            r->line++;
    }
    return c;
}

/* Keeps c unless the record is already too big. false: out of memory. */
static bool keep(batch_reader *r, batch_rec *rec, char c) {
    if (rec->too_big)
        return true;
    if (r->buf.len >= r->max_bytes) {
        rec->too_big = true;
        return true;
    }
    return tl_strbuf_putc(&r->buf, c);
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static int next_jsonl(batch_reader *r, batch_rec *rec) {
    for (;;) {
        tl_strbuf_clear(&r->buf);
        memset(rec, 0, sizeof *rec);
        rec->line = r->line;
        rec->offset = r->offset;
        int c;
        bool any = false;
        while ((c = next_byte(r)) != EOF && c != '\n') {
            any = true;
            if (!keep(r, rec, (char)c))
                return -1;
        }
        if (c == EOF && ferror(r->f))
            return -1;
        rec->complete = c == '\n';
        if (r->buf.len && r->buf.buf[r->buf.len - 1] == '\r')
            r->buf.buf[--r->buf.len] = '\0';
        if (!any && c == EOF)
            return 0;
        if (rec->too_big || !blank(r->buf.buf ? r->buf.buf : "", r->buf.len))
            return 1;
        if (c == EOF)
            return 0;
    }
}

static bool end_field(batch_reader *r, size_t start) {
    if (r->n_fields == r->cap_fields) {
        size_t cap = r->cap_fields ? r->cap_fields * 2 : 16;
        size_t *p = realloc(r->field_off, cap * sizeof *p);
        if (!p)
            return false;
        r->field_off = p;
        r->cap_fields = cap;
    }
    r->field_off[r->n_fields++] = start;
    return tl_strbuf_putc(&r->buf, '\0');
}

static int next_csv(batch_reader *r, batch_rec *rec) {
    for (;;) {
        tl_strbuf_clear(&r->buf);
        r->n_fields = 0;
        memset(rec, 0, sizeof *rec);
        rec->line = r->line;
        rec->offset = r->offset;
        size_t start = 0;
        bool quoted = false, after_quote = false, any = false;
        uint64_t quote_line = 0;
        int c;
        for (;;) {
            c = next_byte(r);
            if (c == EOF)
                break;
            any = true;
            if (quoted) {
                if (c == '"') {
                    int d = next_byte(r);
                    if (d == '"') {
                        if (!keep(r, rec, '"'))
                            return -1;
                        continue;
                    }
                    quoted = false;
                    after_quote = true;
                    c = d;
                    if (c == EOF)
                        break;
                } else {
                    if (!keep(r, rec, (char)c))
                        return -1;
                    continue;
                }
            }
            if (c == ',') {
                if (!rec->too_big && !end_field(r, start))
                    return -1;
                start = r->buf.len;
                after_quote = false;
                continue;
            }
            if (c == '\n')
                break;
            if (c == '\r') {
                continue; /* CR LF ends the record at the LF; a lone CR is dropped */
            }
            if (c == '"' && !after_quote && r->buf.len == start) {
                quoted = true;
                quote_line = r->line;
                continue;
            }
            if (after_quote && !rec->bad[0])
                snprintf(rec->bad, sizeof rec->bad, "line %llu: text after a closing quote",
                         (unsigned long long)r->line + 1);
            if (c == '"' && !rec->bad[0])
                snprintf(rec->bad, sizeof rec->bad, "line %llu: a quote inside an unquoted field",
                         (unsigned long long)r->line + 1);
            if (!keep(r, rec, (char)c))
                return -1;
        }
        if (c == EOF && ferror(r->f))
            return -1;
        rec->complete = c == '\n';
        if (quoted && !rec->bad[0])
            snprintf(rec->bad, sizeof rec->bad, "line %llu: a quoted field is never closed",
                     (unsigned long long)quote_line + 1);
        if (!any && c == EOF)
            return 0;
        if (!rec->too_big && !end_field(r, start))
            return -1;
        bool empty = r->n_fields == 1 && r->buf.len == 1 && !rec->bad[0];
        if (!empty || rec->too_big) {
            rec->row = r->rows++;
            return 1;
        }
        if (c == EOF)
            return 0;
    }
}

int batch_reader_next(batch_reader *r, batch_rec *rec) {
    return r->csv ? next_csv(r, rec) : next_jsonl(r, rec);
}

const char *batch_reader_field(const batch_reader *r, size_t i, size_t *len) {
    if (i >= r->n_fields)
        return NULL;
    const char *s = r->buf.buf + r->field_off[i];
    if (len)
        *len = strlen(s);
    return s;
}

/* ---- tasks ----------------------------------------------------------------- */

static void task_fail(batch_task *t, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void task_fail(batch_task *t, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err_msg, sizeof t->err_msg, fmt, ap);
    va_end(ap);
    t->err_code = code;
}

static bool dup_text(batch_task *t, const char *s, size_t n) {
    t->context = malloc(n + 1);
    if (!t->context) {
        task_fail(t, "nomem", "out of memory");
        return false;
    }
    memcpy(t->context, s, n);
    t->context[n] = '\0';
    t->context_len = n;
    return true;
}

static void openai_task(json_t *root, uint64_t line, batch_task *t) {
    json_t *cid = json_object_get(root, "custom_id");
    if (cid)
        t->custom_id = json_incref(cid);
    const char *method = json_string_value(json_object_get(root, "method"));
    const char *url = json_string_value(json_object_get(root, "url"));
    json_t *body = json_object_get(root, "body");
    unsigned long long ln = (unsigned long long)line + 1;
    if (!json_is_string(cid))
        return task_fail(t, "invalid_request", "line %llu: custom_id: a string is required", ln);
    if (method && strcmp(method, "POST"))
        return task_fail(t, "invalid_request", "line %llu: method: only POST is supported, not '%s'", ln, method);
    if (!url)
        return task_fail(t, "invalid_request", "line %llu: url: a string is required", ln);
    if (strcmp(url, "/v1/decisions") && strcmp(url, "/v1/chat/completions") && strcmp(url, "/v1/completions"))
        return task_fail(t, "invalid_url", "line %llu: url: '%s' is not one of /v1/decisions, /v1/chat/completions, "
                         "/v1/completions", ln, url);
    if (!json_is_object(body))
        return task_fail(t, "invalid_request", "line %llu: body: an object is required", ln);
    t->url = strdup(url);
    t->body = tl_json_dumps(body, JSON_COMPACT);
    if (!t->url || !t->body)
        return task_fail(t, "nomem", "out of memory");
    t->body_len = strlen(t->body);
}

void batch_task_from_json(const char *data, size_t len, const batch_rec *rec, const batch_fields *bf,
                          batch_task *t) {
    unsigned long long ln = (unsigned long long)rec->line + 1;
    t->id = json_integer((json_int_t)rec->line);
    if (rec->too_big)
        return task_fail(t, "limit", "line %llu (offset %llu): the record exceeds the limit of %zu bytes", ln,
                         (unsigned long long)rec->offset, len);
    json_error_t je;
    json_t *root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!root)
        return task_fail(t, "format", "line %llu:%d: invalid JSON: %s", ln, je.column, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return task_fail(t, "format", "line %llu: a record must be a JSON object", ln);
    }
    if (bf->openai) {
        openai_task(root, rec->line, t);
        json_decref(root);
        return;
    }
    json_t *id = json_object_get(root, bf->id_field);
    if (id && !json_is_null(id)) {
        json_decref(t->id);
        t->id = json_incref(id);
    }
    json_t *schema = json_object_get(root, "schema");
    if (schema && !json_is_null(schema)) {
        if (!json_is_object(schema))
            task_fail(t, "schema", "line %llu: schema: a JSON Schema object is required", ln);
        else
            t->schema = json_incref(schema);
    }
    json_t *ctx = json_object_get(root, bf->context_field);
    if (!t->err_msg[0]) {
        if (!ctx)
            task_fail(t, "invalid_record", "line %llu: the record has no \"%s\" member", ln, bf->context_field);
        else if (!json_is_string(ctx))
            task_fail(t, "invalid_record", "line %llu: %s: a string is required", ln, bf->context_field);
        else
            dup_text(t, json_string_value(ctx), json_string_length(ctx));
    }
    json_decref(root);
}

void batch_task_from_csv(const batch_reader *r, const batch_rec *rec, const batch_fields *bf, batch_task *t) {
    t->id = json_integer((json_int_t)rec->row);
    if (rec->too_big)
        return task_fail(t, "limit", "line %llu (offset %llu): the record exceeds the limit of %zu bytes",
                         (unsigned long long)rec->line + 1, (unsigned long long)rec->offset, r->max_bytes);
    size_t n;
    const char *id = bf->id_col >= 0 ? batch_reader_field(r, (size_t)bf->id_col, &n) : NULL;
    if (id && n) {
        json_decref(t->id);
        t->id = json_string_lossy(id, n);
    }
    if (rec->bad[0])
        return task_fail(t, "format", "%s", rec->bad);
    const char *ctx = batch_reader_field(r, (size_t)bf->context_col, &n);
    if (!ctx)
        return task_fail(t, "invalid_record", "line %llu: the row has %zu fields, the context column is field %ld",
                         (unsigned long long)rec->line + 1, r->n_fields, bf->context_col + 1);
    dup_text(t, ctx, n);
}

void batch_task_clear(batch_task *t) {
    json_decref(t->id);
    json_decref(t->schema);
    json_decref(t->custom_id);
    free(t->context);
    free(t->url);
    free(t->body);
    memset(t, 0, sizeof *t);
}

bool batch_csv_field(tl_strbuf *sb, const char *s, size_t n) {
    if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) && !memchr(s, '\r', n))
        return tl_strbuf_append(sb, s, n);
    bool ok = tl_strbuf_putc(sb, '"');
    for (size_t i = 0; i < n && ok; i++)
        ok = s[i] == '"' ? tl_strbuf_append(sb, "\"\"", 2) : tl_strbuf_putc(sb, s[i]);
    return ok && tl_strbuf_putc(sb, '"');
}
