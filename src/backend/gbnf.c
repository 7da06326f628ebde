/* gbnf.c: a regex (the Python-re subset typellm's constrain layer writes, and
 * user patterns in that subset) as a GBNF grammar, the constraint language of
 * llama.cpp's server. Both languages are sets of code-point strings matched
 * whole, so the translation is structural:
 *   literal c        -> "c"  (escaped: \" \\ \xHH \uHHHH \UHHHHHHHH)
 *   [..] / [^..]     -> the same class with members escaped; \d \s \w inside
 *   \d \s \w \D \S \W, .  -> their classes ([\s\S] and friends -> .)
 *   ( ) (?: ) |      -> ( ) |
 *   ? * + {m} {m,} {m,n} -> the same (a lazy ? after them is dropped: same language)
 *   ^ at the start, $ at the end -> nothing (matches are whole anyway)
 * Anything else (backreferences, lookaround, \b, inline flags) is
 * TL_ERR_UNSUPPORTED naming the construct and its byte offset. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "util/error.h"
#include "util/utf8.h"

#define MAX_DEPTH 200
#define MAX_REPEAT 100000

typedef struct rx {
    const char *s;
    size_t n, i;
    tl_strbuf *o;
    tl_error *err;
    tl_status st;
    int depth;
} rx;

static bool fail(rx *r, tl_status code, const char *what) {
    if (!r->st)
        r->st = tl_error_set(r->err, code, "regex -> grammar: offset %zu: %s", r->i, what);
    return false;
}

static bool put(rx *r, const char *s) { return tl_strbuf_puts(r->o, s) || fail(r, TL_ERR_NOMEM, "out of memory"); }

/* One code point as GBNF writes it inside "..." or [...]. */
static bool put_cp(rx *r, uint32_t cp, bool in_class) {
    char buf[16];
    if (cp >= 0x80)
        snprintf(buf, sizeof buf, cp > 0xffff ? "\\U%08X" : "\\u%04X", (unsigned)cp);
    else if (cp < 0x20 || cp == 0x7f || cp == '"' || cp == '\\' ||
             (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')))
        snprintf(buf, sizeof buf, "\\x%02X", (unsigned)cp);
    else
        snprintf(buf, sizeof buf, "%c", (char)cp);
    return put(r, buf);
}

static int hexval(char h) {
    static const char digits[] = "0123456789abcdef";
    const char *p = h ? strchr(digits, h | 0x20) : NULL; /* | 0x20: lower case */
    return p ? (int)(p - digits) : -1;
}

/* The next UTF-8 character of the pattern. */
static bool next_cp(rx *r, uint32_t *cp) {
    int l = tl_utf8_decode(r->s + r->i, r->n - r->i, cp, TL_UTF8_STRICT);
    if (l <= 0)
        return fail(r, TL_ERR_INVALID, "not valid UTF-8");
    r->i += (size_t)l;
    return true;
}

/* \xHH, \uHHHH, \U00HHHHHH after the backslash and letter. */
static bool hex_escape(rx *r, size_t digits, uint32_t *cp) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; k++) {
        int h = r->i < r->n ? hexval(r->s[r->i]) : -1;
        if (h < 0)
            return fail(r, TL_ERR_INVALID, "a hex escape needs more hex digits");
        v = v * 16 + (uint32_t)h;
        r->i++;
    }
    if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return fail(r, TL_ERR_INVALID, "a hex escape names no character");
    *cp = v;
    return true;
}

/* Escapes that are classes: the members (as GBNF class text) and whether negated. */
static const char *class_escape(char c, bool *neg) {
    *neg = c == 'D' || c == 'S' || c == 'W';
    switch (c) {
    case 'd': case 'D': return "0-9";
    case 's': case 'S': return "\\x09-\\x0D\\x20";
    case 'w': case 'W': return "a-zA-Z0-9_";
    default: return NULL;
    }
}

/* After a backslash (r->i at the letter): a single character into *cp, or
 * (returning true with *cls set) a class escape. */
static bool escape(rx *r, uint32_t *cp, const char **cls, bool *neg) {
    *cls = NULL;
    if (r->i >= r->n)
        return fail(r, TL_ERR_INVALID, "a trailing backslash");
    char c = r->s[r->i++];
    if ((*cls = class_escape(c, neg)))
        return true;
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 't': *cp = '\t'; return true;
    case 'r': *cp = '\r'; return true;
    case 'f': *cp = '\f'; return true;
    case 'v': *cp = '\v'; return true;
    case 'x': return hex_escape(r, 2, cp);
    case 'u': return hex_escape(r, 4, cp);
    case 'U': return hex_escape(r, 8, cp);
    default: break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        r->i--;
        return fail(r, TL_ERR_UNSUPPORTED, "this escape (a backreference, anchor or unknown letter) has no grammar form");
    }
    r->i--;
    return next_cp(r, cp); /* an escaped punctuation character or other code point stands for itself */
}

/* [...] with r->i after '['. */
static bool char_class(rx *r) {
    bool negated = r->i < r->n && r->s[r->i] == '^';
    if (negated)
        r->i++;
    size_t start = r->i;
    /* [\s\S], [\d\D], [\w\W]: any character */
    static const char *const anys[] = {"\\s\\S]", "\\S\\s]", "\\d\\D]", "\\D\\d]", "\\w\\W]", "\\W\\w]"};
    for (size_t k = 0; k < sizeof anys / sizeof *anys && !negated; k++)
        if (r->n - r->i >= 5 && !memcmp(r->s + r->i, anys[k], 5)) {
            r->i += 5;
            return put(r, ".");
        }
    if (!put(r, negated ? "[^" : "["))
        return false;
    for (;;) {
        if (r->i >= r->n)
            return fail(r, TL_ERR_INVALID, "a character class is not closed");
        if (r->s[r->i] == ']' && r->i > start)
            break;
        if (r->s[r->i] == '[' && r->i + 1 < r->n && r->s[r->i + 1] == ':')
            return fail(r, TL_ERR_UNSUPPORTED, "POSIX classes ([:alpha:]) have no grammar form");
        uint32_t lo;
        const char *cls = NULL;
        bool neg = false;
        if (r->s[r->i] == '\\') {
            r->i++;
            if (!escape(r, &lo, &cls, &neg))
                return false;
            if (cls) {
                if (neg)
                    return fail(r, TL_ERR_UNSUPPORTED, "a negated class escape inside a class");
                if (!put(r, cls))
                    return false;
                continue;
            }
        } else if (!next_cp(r, &lo)) {
            return false;
        }
        if (!put_cp(r, lo, true))
            return false;
        if (r->i + 1 < r->n && r->s[r->i] == '-' && r->s[r->i + 1] != ']') {
            r->i++;
            uint32_t hi;
            if (r->s[r->i] == '\\') {
                r->i++;
                if (!escape(r, &hi, &cls, &neg))
                    return false;
                if (cls)
                    return fail(r, TL_ERR_INVALID, "a range ends in a class escape");
            } else if (!next_cp(r, &hi)) {
                return false;
            }
            if (hi < lo)
                return fail(r, TL_ERR_INVALID, "a range's end is below its start");
            if (!put(r, "-") || !put_cp(r, hi, true))
                return false;
        }
    }
    r->i++; /* ']' */
    return put(r, "]");
}

static bool read_uint(rx *r, size_t *v) {
    size_t start = r->i, x = 0;
    while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9' && x <= MAX_REPEAT)
        x = x * 10 + (size_t)(r->s[r->i++] - '0');
    *v = x;
    if (r->i == start)
        return false;
    return x <= MAX_REPEAT || fail(r, TL_ERR_LIMIT, "a repeat count above 100000");
}

/* A quantifier after an atom, if there is one. */
static bool quantifier(rx *r) {
    if (r->i >= r->n)
        return true;
    char c = r->s[r->i];
    char buf[48];
    if (c == '?' || c == '*' || c == '+') {
        r->i++;
        snprintf(buf, sizeof buf, "%c", c);
    } else if (c == '{') {
        size_t save = r->i, m = 0, n = 0;
        r->i++;
        bool has_m = read_uint(r, &m), open = false, has_n = false;
        if (r->st)
            return false;
        if (has_m && r->i < r->n && r->s[r->i] == ',') {
            r->i++;
            has_n = read_uint(r, &n);
            if (r->st)
                return false;
            open = !has_n;
        } else {
            n = m;
            has_n = true;
        }
        if (!has_m || r->i >= r->n || r->s[r->i] != '}') {
            r->i = save;
            return fail(r, TL_ERR_UNSUPPORTED, "a brace that is not a {m}, {m,} or {m,n} repeat");
        }
        r->i++;
        if (has_n && n < m)
            return fail(r, TL_ERR_INVALID, "a repeat {m,n} with n < m");
        if (open)
            snprintf(buf, sizeof buf, "{%zu,}", m);
        else
            snprintf(buf, sizeof buf, "{%zu,%zu}", m, n);
    } else {
        return true;
    }
    if (r->i < r->n && r->s[r->i] == '?') /* lazy: the same strings */
        r->i++;
    if (r->i < r->n && (r->s[r->i] == '?' || r->s[r->i] == '*' || r->s[r->i] == '+' || r->s[r->i] == '{'))
        return fail(r, TL_ERR_UNSUPPORTED, "a quantifier of a quantifier");
    return put(r, buf);
}

static bool alternation(rx *r);

/* One atom and its quantifier; false at the end of a sequence (st unset) or on error. */
static bool atom(rx *r) {
    char c = r->s[r->i];
    bool ok;
    if (c == '(') {
        r->i++;
        if (r->i < r->n && r->s[r->i] == '?') {
            if (r->i + 1 < r->n && r->s[r->i + 1] == ':')
                r->i += 2;
            else
                return fail(r, TL_ERR_UNSUPPORTED, "a (?...) group (lookaround, named group or flags)");
        }
        if (++r->depth > MAX_DEPTH)
            return fail(r, TL_ERR_LIMIT, "groups nested more than 200 deep");
        ok = put(r, "(") && alternation(r);
        r->depth--;
        if (!ok)
            return false;
        if (r->i >= r->n || r->s[r->i] != ')')
            return fail(r, TL_ERR_INVALID, "a group is not closed");
        r->i++;
        ok = put(r, ")");
    } else if (c == '[') {
        r->i++;
        ok = char_class(r);
    } else if (c == '.') {
        r->i++;
        ok = put(r, "[^\\x0A]");
    } else if (c == '\\') {
        r->i++;
        uint32_t cp;
        const char *cls;
        bool neg;
        ok = escape(r, &cp, &cls, &neg);
        if (ok && cls)
            ok = put(r, neg ? "[^" : "[") && put(r, cls) && put(r, "]");
        else if (ok)
            ok = put(r, "\"") && put_cp(r, cp, false) && put(r, "\"");
    } else if (c == '?' || c == '*' || c == '+' || (c == '{' && r->i + 1 < r->n && r->s[r->i + 1] >= '0' &&
                                                     r->s[r->i + 1] <= '9')) {
        return fail(r, TL_ERR_INVALID, "a quantifier with nothing to repeat");
    } else if ((c == '^' && r->i == 0) || (c == '$' && r->i + 1 == r->n)) {
        r->i++;
        return true; /* whole-string anchors: implied */
    } else if (c == '^' || c == '$') {
        return fail(r, TL_ERR_UNSUPPORTED, "an anchor inside the pattern");
    } else {
        uint32_t cp;
        ok = next_cp(r, &cp) && put(r, "\"") && put_cp(r, cp, false) && put(r, "\"");
    }
    return ok && put(r, " ") && quantifier(r) && put(r, " ");
}

static bool sequence(rx *r) {
    size_t start = r->o->len;
    while (r->i < r->n && r->s[r->i] != '|' && r->s[r->i] != ')')
        if (!atom(r))
            return false;
    if (r->o->len == start)
        return put(r, "\"\" "); /* the empty string */
    return true;
}

static bool alternation(rx *r) {
    if (!sequence(r))
        return false;
    while (r->i < r->n && r->s[r->i] == '|') {
        r->i++;
        if (!put(r, "| ") || !sequence(r))
            return false;
    }
    return true;
}

tl_status tl_regex_to_gbnf(const char *re, size_t len, tl_strbuf *out, tl_error *err) {
    rx r = {re ? re : "", re ? len : 0, 0, out, err, TL_OK, 0};
    if (!put(&r, "root ::= ") || !alternation(&r))
        return r.st;
    if (r.i < r.n) {
        fail(&r, TL_ERR_INVALID, "an unmatched ')'");
        return r.st;
    }
    return put(&r, "\n") ? TL_OK : r.st;
}
