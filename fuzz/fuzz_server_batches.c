/* fuzz_server_batches.c: libFuzzer target for the Files and Batch API's
 * request handling (files_api.c, batches_api.c): the first byte picks the
 * route (POST /v1/files with the rest as a multipart body, POST /v1/batches
 * with it as JSON, GET / DELETE / cancel with it as the id); every reply must
 * be 200 or an OpenAI error (400, 404, 405, 409), never a crash or a 5xx. An
 * upload is also streamed as the HTTP transport does (files_upload_feed in
 * pieces of 1 to 32 bytes, form_stream.c) and must get the same status as the
 * whole body. An uploaded file is deleted again so the data directory (a
 * temporary folder) does not grow. The model (qwen2-d64-q8_0) comes from $TL_FIXTURES.
 * Seeds: fuzz/corpus/server_batches/. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

static tl_model *model;
static tl_server *server;
static char data_dir[] = "/tmp/fuzz_batches.XXXXXX";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *root = getenv("TL_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/qwen2-d64-q8_0.gguf", root ? root : "../shared/fixtures");
    tl_error err = {0};
    if (!mkdtemp(data_dir))
        abort();
    tl_server_params p = {.n_threads = 1, .max_tokens = 2000, .data_dir = data_dir};
    if (tl_model_load(path, &model, &err) != TL_OK || tl_server_new(model, &p, &server, &err) != TL_OK) {
        fprintf(stderr, "fuzz_server_batches: %s\n", err.msg);
        abort();
    }
    return 0;
}

static int handle(const char *method, const char *path, const char *body, size_t len, tl_http_reply *r) {
    tl_http_request rq = {.method = method, .path = path, .body = body, .body_len = len};
    memset(r, 0, sizeof *r);
    tl_server_handle(server, &rq, r);
    int st = r->status;
    if (st != 200 && st != 400 && st != 404 && st != 405 && st != 409)
        __builtin_trap();
    return st;
}

/* Deletes the file a 200 reply to POST /v1/files names. */
static void delete_uploaded(const tl_http_reply *r) {
    json_t *j = json_loadb(r->body.buf, r->body.len, 0, NULL);
    const char *fid = json_string_value(json_object_get(j, "id"));
    if (!fid)
        __builtin_trap();
    char path[256];
    snprintf(path, sizeof path, "/v1/files/%s", fid);
    tl_http_reply d;
    if (handle("DELETE", path, NULL, 0, &d) != 200)
        __builtin_trap();
    tl_http_reply_free(&d);
    json_decref(j);
}

/* body[0..len) as the transport streams it, in pieces of 1..32 bytes. */
static int upload_in_pieces(const char *body, size_t len, unsigned seed) {
    files_upload *u = files_upload_begin(server, len);
    if (!u)
        __builtin_trap();
    for (size_t off = 0; off < len;) {
        size_t k = 1 + (seed = seed * 1103515245u + 12345u) % 32;
        k = k < len - off ? k : len - off;
        files_upload_feed(u, body + off, k);
        off += k;
    }
    tl_http_reply r = {.status = 500, .stream_fd = -1};
    files_upload_end(u, &r);
    int st = r.status;
    if (st == 200)
        delete_uploaded(&r);
    tl_http_reply_free(&r);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char path[256], id[128];
    snprintf(id, sizeof id, "%.*s", (int)(len < 100 ? len : 100), body);
    if (memchr(id, '\0', strlen(id) + 1) != id + strlen(id))
        return 0;
    tl_http_reply r;
    switch (data[0] % 6) {
    case 0:
        if (handle("POST", "/v1/files", body, len, &r) == 200)
            delete_uploaded(&r);
        if (upload_in_pieces(body, len, data[0]) != r.status)
            __builtin_trap();
        break;
    case 1:
        handle("POST", "/v1/batches", body, len, &r);
        break;
    case 2:
        snprintf(path, sizeof path, "/v1/files/%s", id);
        handle("GET", path, NULL, 0, &r);
        break;
    case 3:
        snprintf(path, sizeof path, "/v1/files/%s/content", id);
        handle("GET", path, NULL, 0, &r);
        break;
    case 4:
        snprintf(path, sizeof path, "/v1/batches/%s", id);
        handle("GET", path, NULL, 0, &r);
        break;
    default:
        snprintf(path, sizeof path, "/v1/batches/%s/cancel", id);
        handle("POST", path, NULL, 0, &r);
        break;
    }
    tl_http_reply_free(&r);
    return 0;
}
