/* utf8.c: see utf8.h. */
#include "util/utf8.h"

int tl_utf8_decode(const void *src, size_t n, uint32_t *cp, int mode) {
    const unsigned char *s = src;
    unsigned c = s[0];
    if (c < 0x80) {
        if (cp)
            *cp = c;
        return 1;
    }
    int len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (mode == TL_UTF8_LENIENT) {
        if ((c & 0xE0) == 0xC0)
            len = 2;
        else if ((c & 0xF0) == 0xE0)
            len = 3;
        else if ((c & 0xF8) == 0xF0)
            len = 4;
        else
            return 0;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    uint32_t v = c & (0x7Fu >> len);
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return TL_UTF8_CUT;
        unsigned b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (b & 0x3F);
    }
    if (v > 0x10FFFF)
        return 0;
    if (cp)
        *cp = v;
    return len;
}

int tl_utf8_check(const void *src, size_t n, size_t *bad_at) {
    const unsigned char *s = src;
    size_t i = 0;
    int state = 0;
    while (i < n) {
        int l = tl_utf8_decode(s + i, n - i, NULL, TL_UTF8_STRICT);
        if (l <= 0) {
            state = l == TL_UTF8_CUT ? 1 : -1;
            break;
        }
        i += (size_t)l;
    }
    if (bad_at)
        *bad_at = i;
    return state;
}

size_t tl_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | ((cp >> 18) & 0x07));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
