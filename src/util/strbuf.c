/* strbuf.c: see strbuf.h. */
#include "util/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

bool tl_strbuf_reserve(tl_strbuf *sb, size_t extra) {
    if (extra > SIZE_MAX - sb->len - 1)
        return false;
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(sb->buf, cap);
    if (!p)
        return false;
    if (!sb->buf)
        p[0] = '\0';
    sb->buf = p;
    sb->cap = cap;
    return true;
}

bool tl_strbuf_append(tl_strbuf *sb, const void *data, size_t n) {
    if (!tl_strbuf_reserve(sb, n))
        return false;
    if (n)
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
    return true;
}

bool tl_strbuf_puts(tl_strbuf *sb, const char *s) { return tl_strbuf_append(sb, s, strlen(s)); }

bool tl_strbuf_putc(tl_strbuf *sb, char c) { return tl_strbuf_append(sb, &c, 1); }

bool tl_strbuf_vprintf(tl_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !tl_strbuf_reserve(sb, (size_t)n))
        return false;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return true;
}

bool tl_strbuf_printf(tl_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = tl_strbuf_vprintf(sb, fmt, ap);
    va_end(ap);
    return ok;
}


bool tl_strbuf_json_string(tl_strbuf *sb, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    if (!tl_strbuf_putc(sb, '"'))
        return false;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        bool ok = true;
        if (c == '"') ok = tl_strbuf_append(sb, "\\\"", 2);
        else if (c == '\\') ok = tl_strbuf_append(sb, "\\\\", 2);
        else if (c == '\n') ok = tl_strbuf_append(sb, "\\n", 2);
        else if (c == '\r') ok = tl_strbuf_append(sb, "\\r", 2);
        else if (c == '\t') ok = tl_strbuf_append(sb, "\\t", 2);
        else if (c < 0x20 || c == 0x7F) ok = tl_strbuf_printf(sb, "\\u%04x", c);
        else if (c < 0x80) ok = tl_strbuf_putc(sb, (char)c);
        else {
            int l = tl_utf8_decode(p + i, n - i, NULL, TL_UTF8_STRICT);
            if (l <= 0) {
                ok = tl_strbuf_append(sb, "\xEF\xBF\xBD", 3);
                i++;
            } else {
                ok = tl_strbuf_append(sb, p + i, (size_t)l);
                i += (size_t)l;
            }
            if (!ok) return false;
            continue;
        }
        if (!ok) return false;
        i++;
    }
    return tl_strbuf_putc(sb, '"');
}

void tl_strbuf_clear(tl_strbuf *sb) {
    sb->len = 0;
    if (sb->buf) sb->buf[0] = '\0';
}

void tl_strbuf_free(tl_strbuf *sb) {
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

char *tl_strbuf_detach(tl_strbuf *sb) {
    if (!sb->buf && !tl_strbuf_reserve(sb, 0))
        return NULL;
    char *p = sb->buf;
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

const char *tl_strbuf_cstr(const tl_strbuf *sb) { return sb->buf ? sb->buf : ""; }
