/* regex.c: the regexes typellm sends to remote engines (SGLang's `regex`
 * sampling parameter: Python re syntax as outlines/xgrammar read it), and a
 * parser that recognises exactly those shapes again, so typellm's own server
 * can enforce a received regex with the number automaton instead of a
 * general regex engine.
 *
 * Shapes (N = max_int_digits - 1, F = decimals, TERM = escaped terminator):
 *   integer, min >= 0:  (0|[1-9][0-9]{0,N})TERM
 *   integer, max < 0:   -[1-9][0-9]{0,N}TERM
 *   integer, otherwise: (0|-?[1-9][0-9]{0,N})TERM
 *   number:             SIGN(0|[1-9][0-9]{0,N})(\.[0-9]{1,F})?TERM   SIGN: "", "-" or "-?"
 *   any of the above may start with " ?" (an optional leading space)
 *   enum:               (LIT|LIT|...)TERM
 *   free text, JSON:    ([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}){0,M}TERM
 *   free text, raw:     [^T]{0,M}T (one-byte terminator T) or [\s\S]{0,M} (none)
 * Literals escape . ^ $ | ? * + ( ) [ ] { } \ - / with a backslash and control
 * bytes as \xHH; other bytes (UTF-8 included) stand for themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/number_core.h"
#include "util/error.h"

static const char META[] = ".^$|?*+()[]{}\\-/";

static bool put_literal(tl_strbuf *out, const char *s, size_t n) {
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c && strchr(META, c))
            ok = tl_strbuf_putc(out, '\\') && tl_strbuf_putc(out, (char)c);
        else if (c < 0x20 || c == 0x7f)
            ok = tl_strbuf_printf(out, "\\x%02x", c);
        else
            ok = tl_strbuf_putc(out, (char)c);
    }
    return ok;
}

static size_t term_len_of(const char *t, size_t n) { return t ? (n ? n : strlen(t)) : 0; }

tl_status tl_number_regex(const tl_number_spec *spec, const tl_number_close *close, tl_strbuf *out,
                          tl_error *err) {
    if (!spec || spec->max_int_digits < 1 || spec->max_int_digits > TL_NUMBER_MAX_INT_DIGITS)
        return tl_error_set(err, TL_ERR_INVALID, "number regex: bad spec");
    int N = spec->max_int_digits - 1;
    bool ok = true;
    if (close && close->allow_leading_space)
        ok = tl_strbuf_puts(out, " ?");
    if (spec->kind == TL_NUMBER_INTEGER) {
        if (spec->lo >= 0)
            ok = ok && tl_strbuf_printf(out, "(0|[1-9][0-9]{0,%d})", N);
        else if (spec->hi < 0)
            ok = ok && tl_strbuf_printf(out, "-[1-9][0-9]{0,%d}", N);
        else
            ok = ok && tl_strbuf_printf(out, "(0|-?[1-9][0-9]{0,%d})", N);
    } else {
        const char *sign = spec->lo >= 0 ? "" : spec->hi < 0 ? "-" : "-?";
        ok = ok && tl_strbuf_printf(out, "%s(0|[1-9][0-9]{0,%d})", sign, N);
        if (spec->decimals > 0)
            ok = ok && tl_strbuf_printf(out, "(\\.[0-9]{1,%d})?", spec->decimals);
    }
    if (close && close->terminator)
        ok = ok && put_literal(out, close->terminator, term_len_of(close->terminator, close->terminator_len));
    return ok ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "number regex: out of memory");
}

tl_status tl_enum_regex(const char *const *values, size_t n_values, const char *terminator, tl_strbuf *out,
                        tl_error *err) {
    if (!values || n_values == 0)
        return tl_error_set(err, TL_ERR_INVALID, "enum regex: no values");
    bool ok = tl_strbuf_putc(out, '(');
    for (size_t i = 0; i < n_values && ok; i++) {
        if (!values[i])
            return tl_error_set(err, TL_ERR_INVALID, "enum regex: value %zu is NULL", i);
        ok = (i == 0 || tl_strbuf_putc(out, '|')) && put_literal(out, values[i], strlen(values[i]));
    }
    ok = ok && tl_strbuf_putc(out, ')');
    if (terminator)
        ok = ok && put_literal(out, terminator, strlen(terminator));
    return ok ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "enum regex: out of memory");
}

static const char JSON_CHAR[] = "([^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})";
static const char ANY_CHAR[] = "[\\s\\S]";

tl_status tl_freetext_regex(size_t max_chars, bool json_escapes, const char *terminator, tl_strbuf *out,
                            tl_error *err) {
    size_t tl = term_len_of(terminator, 0);
    bool ok;
    if (json_escapes) {
        ok = tl_strbuf_printf(out, "%s{0,%zu}", JSON_CHAR, max_chars);
    } else if (tl == 0) {
        ok = tl_strbuf_printf(out, "%s{0,%zu}", ANY_CHAR, max_chars);
    } else if (tl == 1) {
        ok = tl_strbuf_puts(out, "[^") && put_literal(out, terminator, 1) &&
             tl_strbuf_printf(out, "]{0,%zu}", max_chars);
    } else {
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            "free-text regex: a raw value cannot exclude a %zu-byte terminator; use json_escapes", tl);
    }
    if (tl)
        ok = ok && put_literal(out, terminator, tl);
    return ok ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "free-text regex: out of memory");
}

/* ===== recognising our own regexes ====================================== */

typedef struct cursor {
    const char *s;
    size_t n, i;
} cursor;

static bool eat(cursor *c, const char *lit) {
    size_t l = strlen(lit);
    if (c->n - c->i < l || memcmp(c->s + c->i, lit, l) != 0)
        return false;
    c->i += l;
    return true;
}

static bool eat_uint(cursor *c, size_t *v, size_t max) {
    size_t start = c->i, x = 0;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9' && c->i - start < 9)
        x = x * 10 + (size_t)(c->s[c->i++] - '0');
    *v = x;
    return c->i > start && x <= max;
}

static int hexval(char h) {
    if (h >= '0' && h <= '9')
        return h - '0';
    if (h >= 'a' && h <= 'f')
        return h - 'a' + 10;
    if (h >= 'A' && h <= 'F')
        return h - 'A' + 10;
    return -1;
}

/* Reads an escaped literal up to `stop` bytes (unescaped) or the end; false
 * on any regex syntax a literal never contains. */
static bool read_literal(cursor *c, const char *stops, tl_strbuf *out) {
    while (c->i < c->n) {
        char ch = c->s[c->i];
        if (stops && ch && strchr(stops, ch))
            return true;
        if (ch == '\\') {
            if (c->i + 1 >= c->n)
                return false;
            char e = c->s[c->i + 1];
            if (e == 'x') {
                if (c->i + 3 >= c->n)
                    return false;
                int h1 = hexval(c->s[c->i + 2]), h2 = hexval(c->s[c->i + 3]);
                if (h1 < 0 || h2 < 0)
                    return false;
                tl_strbuf_putc(out, (char)(h1 * 16 + h2));
                c->i += 4;
                continue;
            }
            if (!strchr(META, e) || !e)
                return false;
            tl_strbuf_putc(out, e);
            c->i += 2;
            continue;
        }
        if (ch && strchr(META, ch))
            return false;
        tl_strbuf_putc(out, ch);
        c->i++;
    }
    return true;
}

static bool read_terminator(cursor *c, tl_regex_info *info) {
    tl_strbuf t = TL_STRBUF_INIT;
    if (!read_literal(c, NULL, &t) || c->i != c->n) {
        tl_strbuf_free(&t);
        return false;
    }
    info->terminator_len = t.len;
    info->terminator = t.buf ? tl_strbuf_detach(&t) : calloc(1, 1);
    return info->terminator != NULL;
}

static bool parse_number(cursor *c, tl_regex_info *info) {
    tl_number_spec *sp = &info->number;
    memset(sp, 0, sizeof *sp);
    info->leading_space = eat(c, " ?");
    /* the five shapes: sign 0 none, 1 optional, 2 required */
    static const struct {
        const char *head, *close;
        int sign;
        bool integer_only;
    } shapes[] = {
        {"(0|[1-9][0-9]{0,", "})", 0, false},
        {"(0|-?[1-9][0-9]{0,", "})", 1, true},
        {"-[1-9][0-9]{0,", "}", 2, true},
        {"-?(0|[1-9][0-9]{0,", "})", 1, false},
        {"-(0|[1-9][0-9]{0,", "})", 2, false},
    };
    size_t k, N, F = 0;
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        if (eat(c, shapes[k].head))
            break;
    if (k == sizeof shapes / sizeof shapes[0])
        return false;
    if (!eat_uint(c, &N, TL_NUMBER_MAX_INT_DIGITS - 1) || !eat(c, shapes[k].close))
        return false;
    if (!shapes[k].integer_only && eat(c, "(\\.[0-9]{1,")) {
        if (!eat_uint(c, &F, TL_NUMBER_MAX_DECIMALS) || F == 0 || !eat(c, "})?"))
            return false;
    }
    int sign = shapes[k].sign;
    /* shape 0 without a fraction reads as an integer; 3 and 4 are always numbers */
    bool is_int = shapes[k].integer_only || (k == 0 && F == 0);
    sp->kind = is_int ? TL_NUMBER_INTEGER : TL_NUMBER_DECIMAL;
    sp->max_int_digits = (int)N + 1;
    sp->decimals = (int)F;
    sp->step = 1;
    i128 cap = num_pow10((int)N + 1 + (int)F) - 1;
    if (is_int && cap > INT64_MAX)
        cap = INT64_MAX;
    /* a required '-' makes the value negative: the regex also matches "-0.0",
     * which the automaton never writes (it needs a value below zero) */
    sp->lo = sign == 0 ? 0 : -cap;
    sp->hi = sign == 2 ? -1 : cap;
    return read_terminator(c, info);
}

static bool parse_enum(cursor *c, tl_regex_info *info) {
    if (!eat(c, "("))
        return false;
    size_t cap = 0;
    for (;;) {
        tl_strbuf v = TL_STRBUF_INIT;
        if (!read_literal(c, "|)", &v) || c->i >= c->n) {
            tl_strbuf_free(&v);
            return false;
        }
        if (info->n_values == cap) {
            cap = cap ? cap * 2 : 8;
            char **nv = realloc(info->values, cap * sizeof *nv);
            size_t *nl = nv ? realloc(info->value_lens, cap * sizeof *nl) : NULL;
            if (nv)
                info->values = nv;
            if (!nv || !nl) {
                tl_strbuf_free(&v);
                return false;
            }
            info->value_lens = nl;
        }
        info->value_lens[info->n_values] = v.len;
        info->values[info->n_values] = v.buf ? tl_strbuf_detach(&v) : calloc(1, 1);
        if (!info->values[info->n_values])
            return false;
        info->n_values++;
        if (c->s[c->i++] == ')')
            break;
    }
    return read_terminator(c, info);
}

static bool parse_freetext(cursor *c, tl_regex_info *info) {
    size_t M = 0;
    if (eat(c, JSON_CHAR)) {
        info->json_escapes = true;
        if (!eat(c, "{0,") || !eat_uint(c, &M, 100000000) || !eat(c, "}"))
            return false;
        info->max_chars = M;
        return read_terminator(c, info);
    }
    if (eat(c, ANY_CHAR)) {
        if (!eat(c, "{0,") || !eat_uint(c, &M, 100000000) || !eat(c, "}") || c->i != c->n)
            return false;
        info->max_chars = M;
        info->terminator = calloc(1, 1);
        return info->terminator != NULL;
    }
    if (eat(c, "[^")) {
        tl_strbuf t = TL_STRBUF_INIT;
        bool ok = read_literal(c, "]", &t) && t.len == 1 && eat(c, "]{0,") && eat_uint(c, &M, 100000000) &&
                  eat(c, "}") && read_terminator(c, info) && info->terminator_len == 1 &&
                  info->terminator[0] == t.buf[0];
        tl_strbuf_free(&t);
        info->max_chars = M;
        return ok;
    }
    return false;
}

void tl_regex_info_free(tl_regex_info *info) {
    if (!info)
        return;
    free(info->terminator);
    for (size_t i = 0; i < info->n_values; i++)
        free(info->values[i]);
    free(info->values);
    free(info->value_lens);
    memset(info, 0, sizeof *info);
}

tl_status tl_regex_parse(const char *regex, size_t len, tl_regex_info *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    if (!regex)
        return tl_error_set(err, TL_ERR_INVALID, "regex: NULL");
    cursor c = {regex, len, 0};
    if (parse_number(&c, out)) {
        out->kind = TL_REGEX_NUMBER;
        return TL_OK;
    }
    tl_regex_info_free(out);
    c.i = 0;
    if (parse_freetext(&c, out)) {
        out->kind = TL_REGEX_FREETEXT;
        return TL_OK;
    }
    tl_regex_info_free(out);
    c.i = 0;
    if (parse_enum(&c, out)) {
        out->kind = TL_REGEX_ENUM;
        return TL_OK;
    }
    tl_regex_info_free(out);
    return tl_error_set(err, TL_ERR_UNSUPPORTED, "regex: not one of the shapes typellm builds (number, enum, "
                                                 "free text)");
}
