/* json_text.c: see json_text.h. */
#include "util/json_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/utf8.h"

size_t tl_json_real_text(double v, char *buf, size_t cap) {
    /* Reading back exactly is monotonic in the digit count (17 always does):
     * binary search for the fewest digits. */
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(buf, cap, "%.*g", mid, v);
        if (strtod(buf, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    int n = snprintf(buf, cap, "%.*g", lo, v);
    const char *e = strchr(buf, 'e');
    if (e && e[1] == '+' && fabs(v) < 1e16) /* "1.2e+02": an integer below 1e16, written out as "120.0" */
        n = snprintf(buf, cap, "%.0f", v);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    if (!strpbrk(buf, ".eEn") && (size_t)n + 2 < cap) { /* "1" -> "1.0"; nan/inf never reach JSON */
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return (size_t)n;
}

/* Rewrites every real number token of JSON text (outside strings: one with a
 * '.', 'e' or 'E') in its shortest round-trip form. */
char *tl_json_shorten_reals(const char *s) {
    tl_strbuf out = TL_STRBUF_INIT;
    size_t i = 0, n = strlen(s);
    bool ok = tl_strbuf_reserve(&out, n);
    while (ok && i < n) {
        char c = s[i];
        if (c == '"') { /* copy the string, escapes included */
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            j = j < n ? j + 1 : n;
            ok = tl_strbuf_append(&out, s + i, j - i);
            i = j;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + 1;
            bool real = false;
            while (j < n && strchr("0123456789.eE+-", s[j])) {
                real |= s[j] == '.' || s[j] == 'e' || s[j] == 'E';
                j++;
            }
            char tok[64], alt[40];
            if (real && j - i < sizeof tok) {
                memcpy(tok, s + i, j - i);
                tok[j - i] = '\0';
                double v = strtod(tok, NULL);
                size_t k = isfinite(v) ? tl_json_real_text(v, alt, sizeof alt) : 0;
                ok = k ? tl_strbuf_append(&out, alt, k) : tl_strbuf_append(&out, tok, j - i);
            } else {
                ok = tl_strbuf_append(&out, s + i, j - i);
            }
            i = j;
        } else {
            ok = tl_strbuf_putc(&out, c);
            i++;
        }
    }
    if (!ok) {
        tl_strbuf_free(&out);
        return NULL;
    }
    return tl_strbuf_detach(&out);
}

char *tl_json_dumps(const json_t *j, size_t flags) {
    char *text = json_dumps(j, (flags & ~(size_t)JSON_REAL_PRECISION(31)) | JSON_REAL_PRECISION(17));
    if (!text)
        return NULL;
    char *s = tl_json_shorten_reals(text);
    free(text);
    return s;
}

json_t *json_string_lossy(const char *s, size_t n) {
    tl_strbuf b = TL_STRBUF_INIT;
    tl_strbuf_reserve(&b, n);
    for (size_t i = 0; i < n;) {
        int d = tl_utf8_decode(s + i, n - i, NULL, TL_UTF8_STRICT);
        size_t l = d > 0 ? (size_t)d : 0;
        if (l == 0 || (l == 1 && s[i] == 0)) {
            if (l == 0)
                tl_strbuf_puts(&b, "\xEF\xBF\xBD");
            else
                tl_strbuf_putc(&b, 0);
            i++;
        } else {
            tl_strbuf_append(&b, s + i, l);
            i += l;
        }
    }
    json_t *j = json_stringn(b.buf ? b.buf : "", b.len);
    tl_strbuf_free(&b);
    return j;
}
