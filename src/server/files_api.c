/* files_api.c: OpenAI's Files API as its SDK calls it: POST /v1/files
 * (multipart/form-data with "purpose" and "file"), GET /v1/files,
 * GET /v1/files/ID, GET /v1/files/ID/content, DELETE /v1/files/ID; and the
 * data directory's helpers (batch_store.h). An upload is parsed as it
 * arrives (form_stream.h) and its file written straight to a temporary file
 * under the data directory, committed (renamed) only once the whole body is
 * in and well formed: server.c streams POST /v1/files bodies here, so a
 * file is bounded by --max-file-mb, not --max-body, and never held in memory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/batch_store.h"
#include "server/form_stream.h"
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

/* ---- uploads, streamed to disk -------------------------------------------------- */

struct files_upload {
    tl_server *s;
    form_stream fs;
    uint64_t limit;     /* bytes a file may have (--max-file-mb) */
    char id[64];
    tl_atomic_file af;  /* the "file" part's bytes, once it began */
    bool have_file;     /* a "file" part began (later ones are ignored) */
    enum { PART_OTHER, PART_FILE, PART_PURPOSE } part;
    uint64_t bytes;     /* of the file */
    char filename[256];
    char purpose[65];
    size_t purpose_len;
    bool too_large;
    tl_error err;       /* a write failure */
};

static bool on_part(void *ctx, const char *name, const char *filename) {
    files_upload *u = ctx;
    u->part = PART_OTHER;
    if (!strcmp(name, "purpose")) {
        u->part = PART_PURPOSE;
        u->purpose_len = 0;
        u->purpose[0] = '\0';
    } else if (!strcmp(name, "file") && !u->have_file) {
        u->have_file = true;
        snprintf(u->filename, sizeof u->filename, "%s", filename[0] ? filename : "upload");
        char *data = object_path(u->s, u->id, ".data");
        tl_status st = data ? tl_atomic_open(data, &u->af, &u->err) : tl_error_set(&u->err, TL_ERR_NOMEM, "out of memory");
        free(data);
        if (st)
            return false;
        u->part = PART_FILE;
    }
    return true;
}

static bool on_data(void *ctx, const char *data, size_t n) {
    files_upload *u = ctx;
    if (u->part == PART_PURPOSE) {
        size_t k = n < sizeof u->purpose - 1 - u->purpose_len ? n : sizeof u->purpose - 1 - u->purpose_len;
        memcpy(u->purpose + u->purpose_len, data, k);
        u->purpose_len += k;
        u->purpose[u->purpose_len] = '\0';
    } else if (u->part == PART_FILE) {
        u->bytes += n;
        if (u->bytes > u->limit) {
            u->too_large = true;
            return false;
        }
        if (fwrite(data, 1, n, u->af.f) != n) {
            tl_error_set(&u->err, TL_ERR_IO, "%s: %s", u->af.tmp_path, strerror(errno));
            return false;
        }
    }
    return true;
}

files_upload *files_upload_begin(tl_server *s, uint64_t declared) {
    files_upload *u = calloc(1, sizeof *u);
    form_callbacks cb = {on_part, on_data, u};
    if (!u || !form_stream_init(&u->fs, &cb)) {
        free(u);
        return NULL;
    }
    u->s = s;
    u->limit = s->p.max_file_bytes ? s->p.max_file_bytes : FILES_DEFAULT_MAX_BYTES;
    u->too_large = declared > u->limit;
    store_new_id("file-", u->id, sizeof u->id);
    return u;
}

bool files_upload_feed(files_upload *u, const char *data, size_t n) {
    return !u->too_large && form_stream_feed(&u->fs, data, n);
}

void files_upload_cancel(files_upload *u) {
    if (!u)
        return;
    tl_atomic_abort(&u->af);
    form_stream_free(&u->fs);
    free(u);
}

void files_upload_end(files_upload *u, tl_http_reply *r) {
    bool formed = !u->too_large && !u->err.code && form_stream_finish(&u->fs);
    if (u->too_large) {
        reply_openai_error(r, 413, "invalid_request_error", "file", "file_too_large",
                           "the file exceeds this server's limit of %llu bytes (--max-file-mb)",
                           (unsigned long long)u->limit);
    } else if (u->err.code) {
        reply_openai_status_error(r, u->err.code, NULL, u->err.msg);
    } else if (!formed) {
        reply_openai_error(r, 400, "invalid_request_error", NULL, NULL, "%s", u->fs.why ? u->fs.why : "bad form");
    } else if (!u->have_file) {
        reply_openai_error(r, 400, "invalid_request_error", "file", NULL, "a \"file\" form field is required");
    } else if (!u->purpose[0]) {
        reply_openai_error(r, 400, "invalid_request_error", "purpose", NULL, "a \"purpose\" form field is required");
    } else if (!id_ok(u->purpose, strlen(u->purpose)) || u->purpose_len != strlen(u->purpose)) {
        reply_openai_error(r, 400, "invalid_request_error", "purpose", NULL,
                           "purpose: letters, digits, '_' and '-' only (e.g. batch)");
    } else {
        tl_error err = {0};
        char *meta = object_path(u->s, u->id, ".json");
        json_t *obj = file_object(u->id, (size_t)u->bytes, u->filename, u->purpose);
        tl_status st = meta && obj ? tl_atomic_commit(&u->af, &err) : tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
        if (!st)
            st = store_write_json(meta, obj, &err);
        if (st) {
            reply_openai_status_error(r, st, NULL, err.msg);
            json_decref(obj);
        } else {
            reply_json(r, 200, obj);
        }
        free(meta);
    }
    files_upload_cancel(u); /* the temporary, when not committed */
}

/* ---- routes ---------------------------------------------------------------------- */

static void reply_no_file(tl_http_reply *r, const char *id) {
    reply_openai_error(r, 404, "invalid_request_error", "id", NULL, "No such File object: %s", id);
}

/* A body already in memory (tl_server_handle's callers) goes the same way as a streamed one. */
static void files_upload_whole(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    files_upload *u = files_upload_begin(s, req->body_len);
    if (!u) {
        reply_openai_status_error(r, TL_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    files_upload_feed(u, req->body ? req->body : "", req->body_len);
    files_upload_end(u, r);
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
            files_upload_whole(s, req, r);
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
    int fd = slash && !strcmp(method, "GET") && req->allow_stream ? open(data, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) { /* the transport sends the file as it reads it: a large file is not held in memory */
        r->status = 200;
        r->content_type = "application/octet-stream";
        r->stream_fd = fd;
    } else if (slash && !strcmp(method, "GET")) {
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
