/* download.c: model resolution (--model, $TYPELLM_MODEL, --hf) and the
 * resumable, verified Hugging Face download behind it (see download.h).
 *
 * Invariants: the cache only ever holds complete, size- (and, where a digest
 * is known, SHA-256-) checked files under their final name; everything in
 * flight lives in NAME.part, which a later run resumes with a Range request. */
#include "backend/download.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/strbuf.h"

#define DOWNLOAD_ATTEMPTS 5 /* transfers that break off are resumed this many times in one call */

static const char local_hint[] =
    "to run without network, pass a local GGUF file with --model PATH or TYPELLM_MODEL=PATH";

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------ */

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;   /* bytes hashed */
    uint8_t buf[64];  /* pending partial block */
    size_t used;
} sha256_ctx;

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(sha256_ctx *c, const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6],
             h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = cc;
        cc = b;
        b = a;
        a = t1 + t2;
    }
    c->h[0] += a;
    c->h[1] += b;
    c->h[2] += cc;
    c->h[3] += d;
    c->h[4] += e;
    c->h[5] += f;
    c->h[6] += g;
    c->h[7] += h;
}

static void sha256_init(sha256_ctx *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->total = 0;
    c->used = 0;
}

static void sha256_update(sha256_ctx *c, const void *data, size_t n) {
    const uint8_t *p = data;
    c->total += n;
    while (n) {
        if (c->used == 0 && n >= 64) {
            sha256_block(c, p);
            p += 64;
            n -= 64;
            continue;
        }
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->buf + c->used, p, take);
        c->used += take;
        p += take;
        n -= take;
        if (c->used == 64) {
            sha256_block(c, c->buf);
            c->used = 0;
        }
    }
}

static void sha256_final_hex(sha256_ctx *c, char out[65]) {
    uint64_t bits = c->total * 8;
    uint8_t pad = 0x80;
    sha256_update(c, &pad, 1);
    uint8_t zero = 0;
    while (c->used != 56)
        sha256_update(c, &zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, len, 8);
    for (int i = 0; i < 8; i++)
        snprintf(out + 8 * i, 9, "%08" PRIx32, c->h[i]);
}

void tl_sha256_hex(const void *data, size_t n, char out[65]) {
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, n);
    sha256_final_hex(&c, out);
}

static tl_status sha256_file(const char *path, char out[65], tl_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: cannot open for hashing: %s", path, strerror(errno));
    sha256_ctx c;
    sha256_init(&c);
    static const size_t chunk = 1 << 20;
    uint8_t *buf = malloc(chunk);
    if (!buf) {
        fclose(f);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory hashing %s", path);
    }
    size_t n;
    while ((n = fread(buf, 1, chunk, f)) > 0)
        sha256_update(&c, buf, n);
    bool bad = ferror(f);
    free(buf);
    fclose(f);
    if (bad)
        return tl_error_set(err, TL_ERR_IO, "%s: read error while hashing", path);
    sha256_final_hex(&c, out);
    return TL_OK;
}

/* ---- the spec ORG/REPO:FILE[@sha256=HEX] ------------------------------- */

typedef struct hf_spec {
    char *repo;      /* "ORG/REPO" */
    char *file;      /* path inside the repo */
    char sha256[65]; /* lowercase hex, "" when not given */
} hf_spec;

static bool is_hex64(const char *s, size_t n) {
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A path segment list that cannot climb out of the cache: no empty, "." or ".." parts. */
static bool safe_rel_path(const char *s, size_t n) {
    if (n == 0)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && (s[i] == '\\' || (unsigned char)s[i] < 0x20))
            return false;
        if (i == n || s[i] == '/') {
            size_t len = i - start;
            if (len == 0 || (len == 1 && s[start] == '.') || (len == 2 && s[start] == '.' && s[start + 1] == '.'))
                return false;
            start = i + 1;
        }
    }
    return true;
}

static void spec_free(hf_spec *sp) {
    free(sp->repo);
    free(sp->file);
}

static tl_status spec_parse(const char *spec, hf_spec *sp, tl_error *err) {
    memset(sp, 0, sizeof *sp);
    const char *colon = strchr(spec, ':');
    const char *slash = strchr(spec, '/');
    if (!colon || !slash || slash > colon)
        return tl_error_set(err, TL_ERR_INVALID, "--hf '%s': expected ORG/REPO:FILE[@sha256=HEX]", spec);
    size_t repo_len = (size_t)(colon - spec);
    const char *file = colon + 1;
    const char *at = strstr(file, "@sha256=");
    size_t file_len = at ? (size_t)(at - file) : strlen(file);
    const char *second_slash = strchr(slash + 1, '/');
    if (!safe_rel_path(spec, repo_len) || (second_slash && second_slash < colon))
        return tl_error_set(err, TL_ERR_INVALID, "--hf '%s': repository must be ORG/REPO", spec);
    if (!safe_rel_path(file, file_len))
        return tl_error_set(err, TL_ERR_INVALID, "--hf '%s': bad file name '%.*s'", spec, (int)file_len, file);
    if (at) {
        const char *hex = at + strlen("@sha256=");
        if (!is_hex64(hex, strlen(hex)))
            return tl_error_set(err, TL_ERR_INVALID, "--hf '%s': sha256 must be 64 hex digits", spec);
        for (int i = 0; i < 64; i++)
            sp->sha256[i] = (char)tolower((unsigned char)hex[i]);
        sp->sha256[64] = '\0';
    }
    sp->repo = strndup(spec, repo_len);
    sp->file = strndup(file, file_len);
    if (!sp->repo || !sp->file) {
        spec_free(sp);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    return TL_OK;
}

/* ---- filesystem ---------------------------------------------------------- */

/* mkdir -p of the directory part of path. */
static tl_status make_parent_dirs(const char *path, tl_error *err) {
    char *p = strdup(path);
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            tl_status st = tl_error_set(err, TL_ERR_IO, "cannot create cache directory %s: %s", p, strerror(errno));
            free(p);
            return st;
        }
        *s = '/';
    }
    free(p);
    return TL_OK;
}

static int64_t file_size_or_neg(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
}

/* ---- one HTTP transfer --------------------------------------------------- */

typedef struct transfer {
    CURL *h;
    const char *part_path;
    const char *label;     /* FILE, for the progress bar */
    FILE *out;             /* opened on the first body byte, per the response code */
    int64_t resume_from;   /* bytes already in .part when the request was made */
    int64_t written;       /* body bytes written in this transfer */
    int64_t total;         /* expected full size, -1 unknown */
    long status;           /* status of the final response */
    char etag[80];         /* last ETag seen (any response in the redirect chain) */
    char linked_etag[80];  /* X-Linked-ETag (Hugging Face: the LFS sha256) */
    int64_t linked_size;   /* X-Linked-Size, -1 absent */
    int64_t content_length;
    int64_t range_start, range_total; /* Content-Range "bytes S-E/T", -1 absent */
    bool io_failed;
    int io_errno;
    bool bad_range;        /* 206 that does not start where our .part ends */
    bool progress;         /* draw the bar */
    bool drawn;            /* a bar is on the terminal line */
    int64_t last_drawn_bytes;
    double last_draw;
    double started;
} transfer;

/* Copies a header value with surrounding blanks, quotes and a weak "W/" prefix removed. */
static void header_value(const char *v, size_t n, char *out, size_t cap) {
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= 2 && v[0] == 'W' && v[1] == '/') {
        v += 2;
        n -= 2;
    }
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
        v++;
        n -= 2;
    }
    if (n >= cap)
        n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name, const char **value, size_t *vlen) {
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return false;
    *value = line + k + 1;
    *vlen = n - k - 1;
    return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *userdata) {
    transfer *t = userdata;
    size_t n = size * nitems;
    const char *v;
    size_t vn;
    char buf[96];
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* A new response (redirects): its own length fields start over. */
        t->content_length = -1;
        t->range_start = t->range_total = -1;
    } else if (header_is(line, n, "content-length", &v, &vn)) {
        header_value(v, vn, buf, sizeof buf);
        t->content_length = strtoll(buf, NULL, 10);
    } else if (header_is(line, n, "content-range", &v, &vn)) {
        header_value(v, vn, buf, sizeof buf);
        long long s, e, total;
        if (sscanf(buf, "bytes %lld-%lld/%lld", &s, &e, &total) == 3) {
            t->range_start = s;
            t->range_total = total;
        }
    } else if (header_is(line, n, "etag", &v, &vn)) {
        header_value(v, vn, t->etag, sizeof t->etag);
    } else if (header_is(line, n, "x-linked-etag", &v, &vn)) {
        header_value(v, vn, t->linked_etag, sizeof t->linked_etag);
    } else if (header_is(line, n, "x-linked-size", &v, &vn)) {
        header_value(v, vn, buf, sizeof buf);
        t->linked_size = strtoll(buf, NULL, 10);
    }
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
    transfer *t = userdata;
    size_t n = size * nmemb;
    if (!t->out) {
        curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &t->status);
        if (t->status != 200 && t->status != 206)
            return n; /* an error page: not part of the model */
        if (t->status == 206 && (t->resume_from == 0 || t->range_start != t->resume_from)) {
            t->bad_range = true;
            return 0;
        }
        /* 206: the server honoured our Range, append; 200 restarts the file. */
        bool append = t->status == 206;
        t->out = fopen(t->part_path, append ? "ab" : "wb");
        if (!t->out) {
            t->io_failed = true;
            t->io_errno = errno;
            return 0;
        }
        if (!append)
            t->resume_from = 0;
    }
    if (fwrite(data, 1, n, t->out) != n) {
        t->io_failed = true;
        t->io_errno = errno;
        return 0;
    }
    t->written += (int64_t)n;
    return n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    transfer *t = userdata;
    if (!t->progress || dlnow == 0 || dlnow == t->last_drawn_bytes)
        return 0;
    double now = tl_now_s();
    if (now - t->last_draw < 0.2 && !(dltotal > 0 && dlnow == dltotal))
        return 0; /* redraw at most 5 times a second, and once at the end */
    t->last_draw = now;
    t->last_drawn_bytes = dlnow;
    t->drawn = true;
    double have = (double)(t->resume_from + dlnow), all = (double)(dltotal > 0 ? t->resume_from + dltotal : 0);
    double rate = now > t->started ? (double)dlnow / (now - t->started) : 0;
    const int width = 30;
    int filled = all > 0 ? (int)(width * have / all) : 0;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '-';
    bar[width] = '\0';
    if (all > 0)
        fprintf(stderr, "\r%s [%s] %5.1f%% %.1f/%.1f MiB %.1f MiB/s ", t->label, bar, 100.0 * have / all,
                have / 1048576.0, all / 1048576.0, rate / 1048576.0);
    else
        fprintf(stderr, "\r%s %.1f MiB %.1f MiB/s ", t->label, have / 1048576.0, rate / 1048576.0);
    return 0;
}

/* Runs one GET of url into part_path, resuming from its current size. */
static CURLcode run_transfer(const char *url, transfer *t, char *curl_msg, size_t curl_msg_cap) {
    CURL *h = curl_easy_init();
    if (!h)
        return CURLE_FAILED_INIT;
    t->h = h;
    struct curl_slist *headers = NULL;
    const char *token = getenv("HF_TOKEN");
    if (token && *token) {
        tl_strbuf auth = TL_STRBUF_INIT;
        tl_strbuf_printf(&auth, "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, tl_strbuf_cstr(&auth));
        tl_strbuf_free(&auth);
    }
    curl_msg[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L); /* give up on a transfer stalled for a minute */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "typellm/" TL_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
    if (headers)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (t->resume_from > 0)
        curl_easy_setopt(h, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)t->resume_from);
    t->status = 0;
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    t->status = status;
    if (headers)
        curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    t->h = NULL;
    (void)curl_msg_cap;
    return rc;
}

/* ---- the download -------------------------------------------------------- */

static const char *expected_sha(const hf_spec *sp, const transfer *t) {
    if (sp->sha256[0])
        return sp->sha256;
    if (is_hex64(t->linked_etag, strlen(t->linked_etag)))
        return t->linked_etag;
    if (is_hex64(t->etag, strlen(t->etag)))
        return t->etag;
    return NULL;
}

/* Full size the server announced, -1 if it did not. */
static int64_t announced_size(const transfer *t) {
    if (t->range_total >= 0)
        return t->range_total;
    if (t->status == 200 && t->content_length >= 0)
        return t->content_length;
    if (t->status == 206 && t->content_length >= 0)
        return t->resume_from + t->content_length;
    return t->linked_size;
}

static tl_status download(const hf_spec *sp, const char *url, const char *dest, tl_error *err) {
    tl_status st = make_parent_dirs(dest, err);
    if (st)
        return st;
    tl_strbuf part = TL_STRBUF_INIT;
    tl_strbuf_printf(&part, "%s.part", dest);
    const char *slash = strrchr(sp->file, '/');
    const char *label = slash ? slash + 1 : sp->file;
    bool progress = isatty(STDERR_FILENO);
    char curl_msg[CURL_ERROR_SIZE];
    transfer t;
    bool restarted = false;
    int64_t size = -1;

    for (int attempt = 0;; attempt++) {
        memset(&t, 0, sizeof t);
        t.part_path = tl_strbuf_cstr(&part);
        t.label = label;
        t.linked_size = t.content_length = t.range_start = t.range_total = -1;
        t.progress = progress;
        t.started = tl_now_s();
        int64_t have = file_size_or_neg(t.part_path);
        t.resume_from = have > 0 ? have : 0;

        CURLcode rc = run_transfer(url, &t, curl_msg, sizeof curl_msg);
        if (t.out && fclose(t.out) != 0 && !t.io_failed) {
            t.io_failed = true;
            t.io_errno = errno;
        }
        if (t.drawn)
            fputc('\n', stderr);
        if (t.io_failed) {
            st = tl_error_set(err, TL_ERR_IO, "cannot write %s: %s", t.part_path, strerror(t.io_errno));
            goto out;
        }
        /* No answer at all (DNS, connect, TLS, timeout): the network is the problem. */
        if (rc != CURLE_OK && t.written == 0 && t.status == 0) {
            st = tl_error_set(err, TL_ERR_NETWORK, "cannot download %s:%s from %s: %s; %s", sp->repo, sp->file, url,
                              curl_msg[0] ? curl_msg : curl_easy_strerror(rc), local_hint);
            goto out;
        }
        if ((t.status == 416 || t.bad_range) && !restarted) {
            /* Our .part is not a prefix the server recognises: start over once. */
            unlink(t.part_path);
            restarted = true;
            continue;
        }
        if (t.status != 0 && t.status != 200 && t.status != 206) {
            const char *why = t.status == 404   ? " (no such repository or file)"
                              : t.status == 401 || t.status == 403 ? " (gated or private: set HF_TOKEN)"
                                                                   : "";
            st = tl_error_set(err, TL_ERR_REMOTE, "downloading %s:%s from %s: HTTP %ld%s; %s", sp->repo, sp->file,
                              url, t.status, why, local_hint);
            goto out;
        }
        size = announced_size(&t);
        int64_t now = file_size_or_neg(t.part_path);
        if (now < 0)
            now = 0;
        if (rc == CURLE_OK && (size < 0 || now == size))
            break;
        /* The transfer broke off (or came up short): resume while it makes progress. */
        if (t.written > 0 && attempt + 1 < DOWNLOAD_ATTEMPTS)
            continue;
        if (rc != CURLE_OK)
            st = tl_error_set(err, TL_ERR_NETWORK,
                              "download of %s:%s broke off at %" PRId64 " of %" PRId64 " bytes: %s; run again to resume (%s), or %s",
                              sp->repo, sp->file, now, size, curl_msg[0] ? curl_msg : curl_easy_strerror(rc),
                              t.part_path, local_hint);
        else
            st = tl_error_set(err, TL_ERR_REMOTE, "download of %s:%s: got %" PRId64 " bytes, server announced %" PRId64,
                              sp->repo, sp->file, now, size);
        goto out;
    }

    const char *want = expected_sha(sp, &t);
    if (want) {
        char got[65];
        if ((st = sha256_file(t.part_path, got, err)))
            goto out;
        if (strcasecmp(got, want) != 0) {
            unlink(t.part_path);
            st = tl_error_set(err, TL_ERR_REMOTE, "download of %s:%s: sha256 %s, expected %s (partial file removed)",
                              sp->repo, sp->file, got, want);
            goto out;
        }
    }
    if (rename(t.part_path, dest) != 0)
        st = tl_error_set(err, TL_ERR_IO, "cannot move %s to %s: %s", t.part_path, dest, strerror(errno));
out:
    tl_strbuf_free(&part);
    return st;
}

/* ---- resolution ---------------------------------------------------------- */

static tl_status local_path(const char *path, const char *origin, char **out, tl_error *err) {
    if (access(path, R_OK) != 0)
        return tl_error_set(err, TL_ERR_IO, "%s %s: cannot read: %s", origin, path, strerror(errno));
    *out = strdup(path);
    return *out ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "out of memory");
}

tl_status tl_model_resolve(const char *model_path_or_null, const char *hf_spec_or_null, char **resolved_path,
                           tl_error *err) {
    *resolved_path = NULL;
    if (model_path_or_null)
        return local_path(model_path_or_null, "--model", resolved_path, err);
    const char *env = getenv("TYPELLM_MODEL");
    if (env && *env)
        return local_path(env, "TYPELLM_MODEL", resolved_path, err);

    hf_spec sp;
    tl_status st = spec_parse(hf_spec_or_null ? hf_spec_or_null : TL_DEFAULT_HF_MODEL, &sp, err);
    if (st)
        return st;
    tl_strbuf dest = TL_STRBUF_INIT, url = TL_STRBUF_INIT;
    const char *cache = getenv("TYPELLM_CACHE");
    const char *home = getenv("HOME");
    if (cache && *cache) {
        tl_strbuf_printf(&dest, "%s/%s/%s", cache, sp.repo, sp.file);
    } else if (home && *home) {
        tl_strbuf_printf(&dest, "%s/.cache/typellm/%s/%s", home, sp.repo, sp.file);
    } else {
        st = tl_error_set(err, TL_ERR_IO, "no cache directory: set TYPELLM_CACHE (or HOME); %s", local_hint);
        goto out;
    }
    if (file_size_or_neg(tl_strbuf_cstr(&dest)) >= 0) {
        /* Only verified downloads get their final name. */
        st = local_path(tl_strbuf_cstr(&dest), "cached model", resolved_path, err);
        goto out;
    }
    const char *endpoint = getenv("TYPELLM_HF_ENDPOINT");
    if (!endpoint || !*endpoint)
        endpoint = TL_DEFAULT_HF_ENDPOINT;
    size_t elen = strlen(endpoint);
    while (elen && endpoint[elen - 1] == '/')
        elen--;
    tl_strbuf_printf(&url, "%.*s/%s/resolve/main/", (int)elen, endpoint, sp.repo);
    /* Escape each path segment of FILE (keep the slashes). */
    CURL *h = curl_easy_init();
    if (!h) {
        st = tl_error_set(err, TL_ERR_INTERNAL, "libcurl initialisation failed");
        goto out;
    }
    for (const char *seg = sp.file; *seg;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        char *esc = curl_easy_escape(h, seg, (int)n);
        tl_strbuf_puts(&url, esc ? esc : "");
        curl_free(esc);
        seg += n;
        if (*seg == '/') {
            tl_strbuf_putc(&url, '/');
            seg++;
        }
    }
    curl_easy_cleanup(h);
    if ((st = download(&sp, tl_strbuf_cstr(&url), tl_strbuf_cstr(&dest), err)))
        goto out;
    *resolved_path = tl_strbuf_detach(&dest);
    if (!*resolved_path)
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
out:
    spec_free(&sp);
    tl_strbuf_free(&dest);
    tl_strbuf_free(&url);
    return st;
}
