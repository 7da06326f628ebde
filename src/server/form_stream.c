/* form_stream.c: multipart/form-data parsed as it arrives (form_stream.h).
 *
 * Every state works on buf, which holds the bytes not yet consumed: input
 * is appended up to its capacity, a step consumes from the front. In
 * FORM_DATA a step hands on everything except the last delim_len - 1 bytes
 * (they may begin the boundary), so a part's data passes through in
 * FORM_WINDOW-sized pieces whatever its size. */
#define _GNU_SOURCE /* memmem */
#include "server/form_stream.h"

#include <stdlib.h>
#include <string.h>

#define CAP (FORM_WINDOW + FORM_MAX_HEADER)

bool form_stream_init(form_stream *fs, const form_callbacks *cb) {
    memset(fs, 0, sizeof *fs);
    fs->cb = *cb;
    fs->buf = malloc(CAP);
    return fs->buf != NULL;
}

void form_stream_free(form_stream *fs) {
    free(fs->buf);
    fs->buf = NULL;
}

static void consume(form_stream *fs, size_t k) {
    memmove(fs->buf, fs->buf + k, fs->len - k);
    fs->len -= k;
}

static bool fail(form_stream *fs, const char *why) {
    fs->state = FORM_FAILED;
    fs->why = why;
    return false;
}

/* Copies the value of key="..." from the header block h[0..n) into buf ("" when absent). */
static void header_param(const char *h, size_t n, const char *key, char *buf, size_t cap) {
    size_t kl = strlen(key);
    buf[0] = '\0';
    for (size_t i = 0; i + kl + 2 <= n; i++) {
        if (memcmp(h + i, key, kl) || h[i + kl] != '=' || h[i + kl + 1] != '"')
            continue;
        if (i > 0 && h[i - 1] != ' ' && h[i - 1] != ';')
            continue;
        size_t j = i + kl + 2, k = 0;
        while (j < n && h[j] != '"' && k + 1 < cap)
            buf[k++] = h[j++];
        buf[k] = '\0';
        return;
    }
}

static const char NOT_FORM[] = "the body is not multipart/form-data (it must start with --BOUNDARY)";

/* One step on the bytes in buf: *progress when something was consumed or
 * the state changed; false when the parse failed or was stopped. */
static bool step(form_stream *fs, bool *progress) {
    *progress = false;
    switch (fs->state) {
    case FORM_FIRST_LINE: {
        const char *eol = fs->len >= 2 ? memmem(fs->buf, fs->len, "\r\n", 2) : NULL;
        if ((fs->len >= 2 && memcmp(fs->buf, "--", 2)) || (!eol && fs->len > FORM_MAX_BOUNDARY))
            return fail(fs, NOT_FORM);
        if (!eol)
            return true;
        size_t i = (size_t)(eol - fs->buf);
        if (i < 3 || i > FORM_MAX_BOUNDARY)
            return fail(fs, NOT_FORM);
        fs->delim[0] = '\r';
        fs->delim[1] = '\n';
        memcpy(fs->delim + 2, fs->buf, i);
        fs->delim_len = i + 2;
        consume(fs, i + 2);
        fs->state = FORM_HEADERS;
        *progress = true;
        return true;
    }
    case FORM_HEADERS: {
        const char *hend = fs->len >= 4 ? memmem(fs->buf, fs->len, "\r\n\r\n", 4) : NULL;
        if (!hend)
            return fs->len >= FORM_MAX_HEADER ? fail(fs, "a form part's headers are longer than 8192 bytes") : true;
        size_t i = (size_t)(hend - fs->buf);
        char name[64], filename[256];
        header_param(fs->buf, i, "name", name, sizeof name);
        header_param(fs->buf, i, "filename", filename, sizeof filename);
        consume(fs, i + 4);
        fs->state = FORM_DATA;
        *progress = true;
        return fs->cb.begin(fs->cb.ctx, name, filename) || fail(fs, NULL);
    }
    case FORM_DATA: {
        const char *d = memmem(fs->buf, fs->len, fs->delim, fs->delim_len);
        size_t safe = d ? (size_t)(d - fs->buf) : fs->len >= fs->delim_len ? fs->len - (fs->delim_len - 1) : 0;
        if (safe && !fs->cb.data(fs->cb.ctx, fs->buf, safe))
            return fail(fs, NULL);
        consume(fs, safe + (d ? fs->delim_len : 0));
        if (d)
            fs->state = FORM_AFTER_BOUNDARY;
        *progress = d || safe;
        return true;
    }
    case FORM_AFTER_BOUNDARY:
        if (fs->len < 2)
            return true;
        if (!memcmp(fs->buf, "--", 2)) {
            fs->state = FORM_DONE;
            fs->len = 0;
        } else if (!memcmp(fs->buf, "\r\n", 2)) {
            consume(fs, 2);
            fs->state = FORM_HEADERS;
        } else {
            return fail(fs, "a boundary is followed by neither CRLF nor --");
        }
        *progress = true;
        return true;
    case FORM_DONE:
        fs->len = 0; /* the epilogue */
        return true;
    case FORM_FAILED:
        return false;
    }
    return false;
}

bool form_stream_feed(form_stream *fs, const char *data, size_t n) {
    for (;;) {
        if (fs->state == FORM_FAILED)
            return false;
        if (fs->state == FORM_DONE)
            return true;
        size_t take = n < CAP - fs->len ? n : CAP - fs->len;
        memcpy(fs->buf + fs->len, data, take);
        fs->len += take;
        data += take;
        n -= take;
        bool progress;
        if (!step(fs, &progress))
            return false;
        if (!progress && n == 0)
            return true;
    }
}

bool form_stream_finish(form_stream *fs) {
    switch (fs->state) {
    case FORM_DONE:
        return true;
    case FORM_FIRST_LINE:
        return fail(fs, NOT_FORM);
    case FORM_HEADERS:
        return fail(fs, "a form part has no end of headers");
    case FORM_DATA:
        return fail(fs, "a form part has no closing boundary");
    case FORM_AFTER_BOUNDARY:
        return fail(fs, "a boundary is followed by neither CRLF nor --");
    case FORM_FAILED:
        return false;
    }
    return false;
}
