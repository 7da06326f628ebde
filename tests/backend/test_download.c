/* test_download.c: tl_model_resolve against a loopback Hugging Face stand-in
 * (libmicrohttpd, serving a fixture GGUF with Range support) reached through
 * TYPELLM_HF_ENDPOINT: a download that breaks off half-way and is resumed with a
 * Range request, byte-equality with the fixture, the cache hit that needs no
 * request, SHA-256 checks (ETag and explicit @sha256=), HTTP errors, the
 * no-network message, and the --model / TYPELLM_MODEL precedence. */
#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/download.h"
#include "tl_test.h"
#include "util/fileio.h"

/* sha256sum of models/stories260k-f32.gguf, computed outside typellm. */
#define FIXTURE_SHA256 "3c4a7c3a8313e00ae6a6b64df717828f4ba18391ea31ffb01abe9a2c4f7bb9a9"

/* ---- the server ---------------------------------------------------------- */

typedef struct server_state {
    const char *body; /* the fixture bytes */
    size_t len;
    pthread_mutex_t mu;
    int requests;          /* GETs of the model path */
    int range_requests;    /* of those, with a Range header */
    long long last_range;  /* start of the last Range, -1 none */
    bool truncate_next;    /* cut the next full response at half */
    const char *etag;      /* X-Linked-ETag to send, NULL none */
} server_state;

static server_state srv;

typedef struct stream {
    size_t pos, end; /* bytes [pos, end) of the body still to send */
    size_t stop_at;  /* close the connection (error) at this offset */
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *s = cls;
    (void)pos;
    if (s->pos >= s->stop_at)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* the connection breaks off */
    size_t n = s->end - s->pos;
    if (n > max)
        n = max;
    if (s->pos + n > s->stop_at)
        n = s->stop_at - s->pos;
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    memcpy(buf, srv.body + s->pos, n);
    s->pos += n;
    return (ssize_t)n;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_len, void **con_cls) {
    (void)cls; (void)version; (void)upload; (void)upload_len; (void)con_cls;
    struct MHD_Response *r;
    enum MHD_Result ret;
    if (strcmp(method, "GET") != 0 || strcmp(url, "/org/repo/resolve/main/sub/tiny.gguf") != 0) {
        static const char nf[] = "not found";
        r = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
        ret = MHD_queue_response(c, MHD_HTTP_NOT_FOUND, r);
        MHD_destroy_response(r);
        return ret;
    }
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
    long long start = 0;
    pthread_mutex_lock(&srv.mu);
    srv.requests++;
    srv.last_range = -1;
    if (range && sscanf(range, "bytes=%lld-", &start) == 1) {
        srv.range_requests++;
        srv.last_range = start;
    }
    bool truncate = srv.truncate_next && !range;
    if (truncate)
        srv.truncate_next = false;
    const char *etag = srv.etag;
    pthread_mutex_unlock(&srv.mu);

    if (start < 0 || (size_t)start >= srv.len) {
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        ret = MHD_queue_response(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, r);
        MHD_destroy_response(r);
        return ret;
    }
    stream *s = calloc(1, sizeof *s);
    s->pos = (size_t)start;
    s->end = srv.len;
    s->stop_at = truncate ? srv.len / 2 : srv.len;
    r = MHD_create_response_from_callback(srv.len - (size_t)start, 64 * 1024, stream_read, s, free);
    if (etag)
        MHD_add_response_header(r, "X-Linked-ETag", etag);
    if (start > 0) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %lld-%zu/%zu", start, srv.len - 1, srv.len);
        MHD_add_response_header(r, "Content-Range", cr);
    }
    ret = MHD_queue_response(c, start > 0 ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* ---- helpers ------------------------------------------------------------- */

static bool same_bytes(const char *path, const char *want, size_t want_len) {
    char *data = NULL;
    size_t len = 0;
    tl_error err;
    if (tl_read_file(path, 64 << 20, &data, &len, &err) != TL_OK)
        return false;
    bool same = len == want_len && memcmp(data, want, len) == 0;
    free(data);
    return same;
}

static void rm_rf(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
    /* SHA-256 known answers (FIPS 180-4 examples). */
    char hex[65];
    tl_sha256_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    tl_sha256_hex("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    tl_sha256_hex(two_blocks, strlen(two_blocks), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);

    const char *fixture = tl_fixture("models/stories260k-f32.gguf");
    char *body = NULL;
    size_t body_len = 0;
    tl_error err = {0};
    if (tl_read_file(fixture, 64 << 20, &body, &body_len, &err) != TL_OK) {
        CHECKF(0, "%s", err.msg);
        return TEST_DONE();
    }
    tl_sha256_hex(body, body_len, hex);
    CHECK(strcmp(hex, FIXTURE_SHA256) == 0);
    srv.body = body;
    srv.len = body_len;
    pthread_mutex_init(&srv.mu, NULL);

    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            answer, NULL, MHD_OPTION_END);
    CHECK(d != NULL);
    if (!d)
        return TEST_DONE();
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%u/", (unsigned)info->port);

    char tmpl[] = "/tmp/tl_download_XXXXXX";
    char *cache = mkdtemp(tmpl);
    CHECK(cache != NULL);
    if (!cache)
        return TEST_DONE();
    setenv("TYPELLM_HF_ENDPOINT", endpoint, 1);
    setenv("TYPELLM_CACHE", cache, 1);
    unsetenv("TYPELLM_MODEL");
    unsetenv("HF_TOKEN");
    char want_path[4200];
    snprintf(want_path, sizeof want_path, "%s/org/repo/sub/tiny.gguf", cache);

    /* 1. First response breaks off half-way; the resolver resumes with Range. */
    srv.truncate_next = true;
    srv.etag = FIXTURE_SHA256;
    char *path = NULL;
    tl_status st = tl_model_resolve(NULL, "org/repo:sub/tiny.gguf", &path, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    CHECK(path && strcmp(path, want_path) == 0);
    CHECK(srv.requests == 2 && srv.range_requests == 1 && srv.last_range == (long long)(body_len / 2));
    CHECK(path && same_bytes(path, body, body_len));
    char part[4300];
    snprintf(part, sizeof part, "%s.part", want_path);
    CHECK(access(part, F_OK) != 0);
    free(path);

    /* 2. Cached: no request. */
    int before = srv.requests;
    path = NULL;
    CHECK(tl_model_resolve(NULL, "org/repo:sub/tiny.gguf", &path, &err) == TL_OK && path &&
          strcmp(path, want_path) == 0);
    CHECK(srv.requests == before);
    free(path);

    /* 3. A .part left by an earlier run is resumed, not refetched. */
    unlink(want_path);
    FILE *f = fopen(part, "wb");
    CHECK(f && fwrite(body, 1, 1000, f) == 1000);
    if (f)
        fclose(f);
    path = NULL;
    st = tl_model_resolve(NULL, "org/repo:sub/tiny.gguf@sha256=" FIXTURE_SHA256, &path, &err);
    CHECKF(st == TL_OK, "%s", err.msg);
    CHECK(srv.last_range == 1000 && path && same_bytes(path, body, body_len));
    free(path);

    /* 4. SHA-256 mismatch (server digest, then explicit digest): error, nothing cached. */
    unlink(want_path);
    srv.etag = "0000000000000000000000000000000000000000000000000000000000000000";
    path = NULL;
    st = tl_model_resolve(NULL, "org/repo:sub/tiny.gguf", &path, &err);
    CHECKF(st == TL_ERR_REMOTE && strstr(err.msg, "sha256") && strstr(err.msg, FIXTURE_SHA256), "%s", err.msg);
    CHECK(path == NULL && access(want_path, F_OK) != 0 && access(part, F_OK) != 0);
    srv.etag = NULL;
    st = tl_model_resolve(NULL, "org/repo:sub/tiny.gguf@sha256=" "1111111111111111111111111111111111111111111111111111111111111111",
                          &path, &err);
    CHECKF(st == TL_ERR_REMOTE && strstr(err.msg, "expected 1111"), "%s", err.msg);
    CHECK(access(want_path, F_OK) != 0);

    /* 5. No digest at all: size check only, succeeds. */
    st = tl_model_resolve(NULL, "org/repo:sub/tiny.gguf", &path, &err);
    CHECKF(st == TL_OK && path && same_bytes(path, body, body_len), "%s", err.msg);
    free(path);
    path = NULL;

    /* 6. HTTP 404: TL_ERR_REMOTE naming the status, no file left behind. */
    st = tl_model_resolve(NULL, "org/repo:missing.gguf", &path, &err);
    CHECKF(st == TL_ERR_REMOTE && strstr(err.msg, "HTTP 404"), "%s", err.msg);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/org/repo/missing.gguf", cache);
    CHECK(access(missing, F_OK) != 0);

    /* 7. Malformed specs. */
    static const char *bad_specs[] = {"noslash:file.gguf", "org/repo", "org/repo:", "org/../x:f.gguf",
                                      "org/repo:../../etc/passwd", "org/repo/extra:f.gguf",
                                      "org/repo:f.gguf@sha256=abc", "/org:f"};
    for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
        st = tl_model_resolve(NULL, bad_specs[i], &path, &err);
        CHECKF(st == TL_ERR_INVALID && strstr(err.msg, "--hf"), "%s: %s", bad_specs[i], err.msg);
    }

    /* 8. --model and TYPELLM_MODEL win over --hf. */
    CHECK(tl_model_resolve(fixture, "org/repo:sub/tiny.gguf", &path, &err) == TL_OK && path &&
          strcmp(path, fixture) == 0);
    free(path);
    setenv("TYPELLM_MODEL", fixture, 1);
    CHECK(tl_model_resolve(NULL, "org/repo:other.gguf", &path, &err) == TL_OK && path && strcmp(path, fixture) == 0);
    free(path);
    CHECK(tl_model_resolve("/nonexistent/m.gguf", NULL, &path, &err) == TL_ERR_IO &&
          strstr(err.msg, "/nonexistent/m.gguf"));
    setenv("TYPELLM_MODEL", "/nonexistent/env.gguf", 1);
    CHECK(tl_model_resolve(NULL, NULL, &path, &err) == TL_ERR_IO && strstr(err.msg, "TYPELLM_MODEL"));
    unsetenv("TYPELLM_MODEL");

    /* 9. No network: a closed port, then the default model with nothing given. */
    MHD_stop_daemon(d);
    st = tl_model_resolve(NULL, "org/repo:sub/other.gguf", &path, &err);
    CHECKF(st == TL_ERR_NETWORK && strstr(err.msg, "--model PATH") && strstr(err.msg, "TYPELLM_MODEL"), "%s",
           err.msg);
    st = tl_model_resolve(NULL, NULL, &path, &err);
    CHECKF(st == TL_ERR_NETWORK && strstr(err.msg, "Qwen/Qwen2.5-0.5B-Instruct-GGUF") &&
               strstr(err.msg, "--model PATH"),
           "%s", err.msg);
    CHECK(path == NULL);

    rm_rf(cache);
    free(body);
    return TEST_DONE();
}
