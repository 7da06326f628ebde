/* files_api.c: OpenAI's Files API as its SDK calls it: POST /v1/files
 * (multipart/form-data with "purpose" and "file"), GET /v1/files,
 * GET /v1/files/ID, GET /v1/files/ID/content, DELETE /v1/files/ID; and the
 * data directory's helpers (batch_store.h). Uploads are bounded by
 * --max-body like every request body. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/batch_store.h"
#include "util/fileio.h"

#define MAX_FILE_BYTES ((size_t)1 << 32)

/* ---- the data directory ------------------------------------------------------ */

char *store_path(const tl_server *s, const char *sub, const char *name) {
    size_t n = strlen(s->p.data_dir) + strlen(sub) + (name ? strlen(name) : 0) + 3;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s%s", s->p.data_dir, sub, name ? "/" : "", name ? name : "");
    return p;
}

void store_new_id(const char *prefix, char *out, size_t cap) {
    unsigned char b[12];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)tl_now_ns();
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)i;
    }
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof b && n + 2 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%02x", b[i]);
}

tl_status store_write_json(const char *path, const json_t *j, tl_error *err) {
    char *text = tl_json_dumps(j, JSON_INDENT(1));
    if (!text)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    tl_status st = tl_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return st;
}

json_t *store_read_json(const char *path) {
    char *data = NULL;
    size_t len = 0;
    tl_error e = {0};
    if (tl_read_file(path, STORE_MAX_OBJECT_BYTES, &data, &len, &e))
        return NULL;
    json_t *j = json_loadb(data, len, 0, NULL);
    tl_free(data);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* An id as it may appear in a path: [A-Za-z0-9_-], no dots or slashes. */
static bool id_ok(const char *id, size_t n) {
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static char *object_path(tl_server *s, const char *id, const char *ext) {
    char name[96];
    snprintf(name, sizeof name, "%s%s", id, ext);
    return store_path(s, "files", name);
}

static json_t *file_object(const char *id, size_t bytes, const char *filename, const char *purpose) {
    /* the filename is the client's bytes: invalid UTF-8 becomes U+FFFD */
    return json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:s,s:n,s:n}", "id", id, "object", "file", "bytes", (json_int_t)bytes,
                     "created_at", (json_int_t)time(NULL), "filename", json_string_lossy(filename, strlen(filename)),
                     "purpose", purpose, "status", "processed", "expires_at", "status_details");
}

tl_status files_adopt(tl_server *s, const char *src_path, const char *filename, const char *purpose, char *id_out,
                      size_t id_cap, tl_error *err) {
    struct stat st;
    if (stat(src_path, &st))
        return tl_error_set(err, TL_ERR_IO, "%s: %s", src_path, strerror(errno));
    store_new_id("file-", id_out, id_cap);
    char *data = object_path(s, id_out, ".data"), *meta = object_path(s, id_out, ".json");
    json_t *obj = file_object(id_out, (size_t)st.st_size, filename, purpose);
    tl_status rc = TL_OK;
    if (!data || !meta || !obj)
        rc = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    else if (rename(src_path, data))
        rc = tl_error_set(err, TL_ERR_IO, "%s -> %s: %s", src_path, data, strerror(errno));
    if (!rc)
        rc = store_write_json(meta, obj, err);
    json_decref(obj);
    free(data);
    free(meta);
    return rc;
}

char *files_data_path(tl_server *s, const char *id, json_t **obj) {
    if (obj)
        *obj = NULL;
    if (!id_ok(id, strlen(id)))
        return NULL;
    char *meta = object_path(s, id, ".json");
    json_t *o = meta ? store_read_json(meta) : NULL;
    free(meta);
    if (!o)
        return NULL;
    char *data = object_path(s, id, ".data");
    if (obj)
        *obj = o;
    else
        json_decref(o);
    return data;
}

/* ---- multipart/form-data ------------------------------------------------------ */

typedef struct form_part {
    const char *name, *filename; /* within hdr (NUL-terminated copies in the part) */
    char name_buf[64], filename_buf[256];
    const char *data;
    size_t len;
} form_part;

/* Copies the value of key="..." from the header block h[0..n) into buf. */
static bool header_param(const char *h, size_t n, const char *key, char *buf, size_t cap) {
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= n; i++) {
        if (memcmp(h + i, key, kl) || h[i + kl] != '=' || h[i + kl + 1] != '"')
            continue;
        if (i > 0 && h[i - 1] != ' ' && h[i - 1] != ';')
            continue;
        size_t j = i + kl + 2, k = 0;
        while (j < n && h[j] != '"' && k + 1 < cap)
            buf[k++] = h[j++];
        buf[k] = '\0';
        return true;
    }
    return false;
}

/* Splits body (whose first line is "--BOUNDARY") into up to max parts;
 * false with why on a malformed body. */
static bool form_parse(const char *body, size_t len, form_part *parts, size_t max, size_t *n_parts,
                       const char **why) {
    *n_parts = 0;
    const char *eol = len > 2 ? memmem(body, len, "\r\n", 2) : NULL;
    if (len < 4 || memcmp(body, "--", 2) || !eol || eol - body > 200) {
        *why = "the body is not multipart/form-data (it must start with --BOUNDARY)";
        return false;
    }
    char delim[210];
    size_t dl = (size_t)(eol - body) + 2;
    delim[0] = '\r';
    delim[1] = '\n';
    memcpy(delim + 2, body, dl - 2);
    const char *p = eol + 2, *end = body + len;
    for (;;) {
        const char *hend = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!hend) {
            *why = "a form part has no end of headers";
            return false;
        }
        const char *data = hend + 4;
        const char *next = memmem(data, (size_t)(end - data), delim, dl);
        if (!next) {
            *why = "a form part has no closing boundary";
            return false;
        }
        if (*n_parts < max) {
            form_part *fp = &parts[(*n_parts)++];
            memset(fp, 0, sizeof *fp);
            if (header_param(p, (size_t)(hend - p), "name", fp->name_buf, sizeof fp->name_buf))
                fp->name = fp->name_buf;
            if (header_param(p, (size_t)(hend - p), "filename", fp->filename_buf, sizeof fp->filename_buf))
                fp->filename = fp->filename_buf;
            fp->data = data;
            fp->len = (size_t)(next - data);
        }
        p = next + dl;
        if (end - p >= 2 && !memcmp(p, "--", 2))
            return true;
        if (end - p < 2 || memcmp(p, "\r\n", 2)) {
            *why = "a boundary is followed by neither CRLF nor --";
            return false;
        }
        p += 2;
    }
}

/* ---- routes ---------------------------------------------------------------------- */

static void reply_no_file(tl_http_reply *r, const char *id) {
    reply_openai_error(r, 404, "invalid_request_error", "id", NULL, "No such File object: %s", id);
}

static void files_upload(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    form_part parts[8];
    size_t n = 0;
    const char *why = NULL;
    if (!form_parse(req->body ? req->body : "", req->body_len, parts, 8, &n, &why)) {
        reply_openai_error(r, 400, "invalid_request_error", NULL, NULL, "%s", why);
        return;
    }
    const form_part *file = NULL;
    char purpose[64] = "";
    for (size_t i = 0; i < n; i++) {
        if (parts[i].name && !strcmp(parts[i].name, "file"))
            file = &parts[i];
        else if (parts[i].name && !strcmp(parts[i].name, "purpose"))
            snprintf(purpose, sizeof purpose, "%.*s", (int)(parts[i].len < 63 ? parts[i].len : 63), parts[i].data);
    }
    if (!file) {
        reply_openai_error(r, 400, "invalid_request_error", "file", NULL, "a \"file\" form field is required");
        return;
    }
    if (!purpose[0]) {
        reply_openai_error(r, 400, "invalid_request_error", "purpose", NULL, "a \"purpose\" form field is required");
        return;
    }
    if (!id_ok(purpose, strlen(purpose))) {
        reply_openai_error(r, 400, "invalid_request_error", "purpose", NULL,
                           "purpose: letters, digits, '_' and '-' only (e.g. batch)");
        return;
    }
    char id[64];
    store_new_id("file-", id, sizeof id);
    char *data = object_path(s, id, ".data"), *meta = object_path(s, id, ".json");
    json_t *obj = file_object(id, file->len, file->filename ? file->filename : "upload", purpose);
    tl_error err = {0};
    tl_status st = data && meta && obj ? TL_OK : tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
    tl_atomic_file af;
    if (!st)
        st = tl_atomic_open(data, &af, &err);
    if (!st) {
        fwrite(file->data, 1, file->len, af.f);
        st = tl_atomic_commit(&af, &err);
    }
    if (!st)
        st = store_write_json(meta, obj, &err);
    if (st) {
        reply_openai_status_error(r, st, NULL, err.msg);
        json_decref(obj);
    } else {
        reply_json(r, 200, obj);
    }
    free(data);
    free(meta);
}

static void files_list(tl_server *s, tl_http_reply *r) {
    json_t *list = json_array();
    char *dir = store_path(s, "files", NULL);
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") || e->d_name[0] == '.')
            continue;
        char *p = store_path(s, "files", e->d_name);
        json_t *o = p ? store_read_json(p) : NULL;
        free(p);
        if (o)
            json_array_append_new(list, o);
    }
    if (d)
        closedir(d);
    free(dir);
    reply_json(r, 200, json_pack("{s:s,s:o,s:b}", "object", "list", "data", list, "has_more", 0));
}

void handle_files(tl_server *s, const tl_http_request *req, tl_http_reply *r, const char *rest) {
    const char *method = req->method ? req->method : "GET";
    if (!*rest) {
        if (!strcmp(method, "POST"))
            files_upload(s, req, r);
        else if (!strcmp(method, "GET"))
            files_list(s, r);
        else
            reply_openai_error(r, 405, "invalid_request_error", NULL, NULL, "%s /v1/files: method not allowed", method);
        return;
    }
    const char *slash = strchr(rest, '/');
    size_t idn = slash ? (size_t)(slash - rest) : strlen(rest);
    char id[80];
    if (!id_ok(rest, idn) || (slash && strcmp(slash, "/content"))) {
        reply_openai_error(r, 404, "invalid_request_error", NULL, NULL, "No such route: %s /v1/files/%s", method,
                           rest);
        return;
    }
    memcpy(id, rest, idn);
    id[idn] = '\0';
    json_t *obj = NULL;
    char *data = files_data_path(s, id, &obj);
    if (!data) {
        reply_no_file(r, id);
        return;
    }
    if (slash && !strcmp(method, "GET")) {
        char *bytes = NULL;
        size_t len = 0;
        tl_error err = {0};
        if (tl_read_file(data, MAX_FILE_BYTES, &bytes, &len, &err)) {
            reply_openai_status_error(r, err.code, NULL, err.msg);
        } else {
            r->status = 200;
            r->content_type = "application/octet-stream";
            tl_strbuf_clear(&r->body);
            tl_strbuf_append(&r->body, bytes, len);
            tl_free(bytes);
        }
    } else if (!slash && !strcmp(method, "GET")) {
        reply_json(r, 200, json_incref(obj));
    } else if (!slash && !strcmp(method, "DELETE")) {
        char *meta = object_path(s, id, ".json");
        bool ok = meta && !unlink(meta);
        unlink(data);
        free(meta);
        if (ok)
            reply_json(r, 200, json_pack("{s:s,s:s,s:b}", "id", id, "object", "file", "deleted", 1));
        else
            reply_no_file(r, id);
    } else {
        reply_openai_error(r, 405, "invalid_request_error", NULL, NULL, "%s /v1/files/%s: method not allowed", method,
                           rest);
    }
    json_decref(obj);
    free(data);
}

/* ---- the hook ----------------------------------------------------------------------- */

bool files_batches_path(const char *path) {
    return !strcmp(path, "/v1/files") || !strncmp(path, "/v1/files/", 10) || !strcmp(path, "/v1/batches") ||
           !strncmp(path, "/v1/batches/", 12);
}

void handle_files_batches(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    const char *path = req->path ? req->path : "";
    if (!s->batches) {
        reply_openai_error(r, 404, "invalid_request_error", NULL, NULL,
                           "the Files and Batch API needs a data directory: start the server with --data-dir DIR");
        return;
    }
    bool files = !strncmp(path, "/v1/files", 9);
    const char *rest = path + (files ? 9 : 11);
    if (*rest == '/')
        rest++;
    if (files)
        handle_files(s, req, r, rest);
    else
        handle_batches(s, req, r, rest);
}
