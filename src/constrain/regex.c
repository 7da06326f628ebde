/* regex.c: the regexes typellm sends to remote engines (SGLang's `regex`
 * sampling parameter: Python re syntax as outlines/xgrammar read it), and a
 * parser that recognises exactly those shapes again, so typellm's own server
 * can enforce a received regex with the number automaton instead of a
 * general regex engine.
 *
 * Shapes (N = max_int_digits - 1, F = decimals, TERM = escaped terminator):
 *   integer:            (-(NEG)|POS)TERM, exact: NEG and POS spell the
 *                       magnitudes of [lo, hi] digit by digit (see put_range)
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

/* ---- exact integer ranges ----
 * [a, b] (0 <= a <= b) as the alternation of one block per digit count; a
 * block of equal-length bounds splits on the first digit where they differ:
 *   [125, 349] -> 1(2[5-9]|[3-9][0-9])|2[0-9]{2}|3([0-3][0-9]|4[0-9])
 * (written here with the middle digits merged into one class when whole). */

static void put_any(tl_strbuf *o, size_t k) {
    if (k == 1)
        tl_strbuf_puts(o, "[0-9]");
    else if (k > 1)
        tl_strbuf_printf(o, "[0-9]{%zu}", k);
}

static void put_class(tl_strbuf *o, char x, char y) {
    if (x == y)
        tl_strbuf_putc(o, x);
    else
        tl_strbuf_printf(o, "[%c-%c]", x, y);
}

static bool all_digit(const char *s, size_t n, char d) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != d)
            return false;
    return true;
}

/* Equal-length digit strings lo <= hi (inner digits may be 0). */
static void range_same_len(tl_strbuf *o, const char *lo, const char *hi, size_t L) {
    if (L == 0)
        return;
    if (memcmp(lo, hi, L) == 0) {
        tl_strbuf_append(o, lo, L);
        return;
    }
    if (lo[0] == hi[0]) {
        tl_strbuf_putc(o, lo[0]);
        range_same_len(o, lo + 1, hi + 1, L - 1);
        return;
    }
    char nines[24], zeros[24];
    memset(nines, '9', sizeof nines);
    memset(zeros, '0', sizeof zeros);
    bool lo_zeros = all_digit(lo + 1, L - 1, '0'), hi_nines = all_digit(hi + 1, L - 1, '9');
    char start = lo_zeros ? lo[0] : (char)(lo[0] + 1), end = hi_nines ? hi[0] : (char)(hi[0] - 1);
    int alts = !lo_zeros + (start <= end) + !hi_nines;
    if (alts > 1)
        tl_strbuf_putc(o, '(');
    bool first = true;
    if (!lo_zeros) {
        tl_strbuf_putc(o, lo[0]);
        range_same_len(o, lo + 1, nines, L - 1);
        first = false;
    }
    if (start <= end) {
        if (!first)
            tl_strbuf_putc(o, '|');
        put_class(o, start, end);
        put_any(o, L - 1);
        first = false;
    }
    if (!hi_nines) {
        if (!first)
            tl_strbuf_putc(o, '|');
        tl_strbuf_putc(o, hi[0]);
        range_same_len(o, zeros, hi + 1, L - 1);
    }
    if (alts > 1)
        tl_strbuf_putc(o, ')');
}

static void put_range(tl_strbuf *o, uint64_t a, uint64_t b) {
    char as[24], bs[24];
    int la = snprintf(as, sizeof as, "%llu", (unsigned long long)a);
    int lb = snprintf(bs, sizeof bs, "%llu", (unsigned long long)b);
    for (int l = la; l <= lb; l++) {
        char lo[24], hi[24];
        if (l == la)
            memcpy(lo, as, (size_t)l);
        else
            lo[0] = '1', memset(lo + 1, '0', (size_t)l - 1);
        if (l == lb)
            memcpy(hi, bs, (size_t)l);
        else
            memset(hi, '9', (size_t)l);
        if (l > la)
            tl_strbuf_putc(o, '|');
        range_same_len(o, lo, hi, (size_t)l);
    }
}

/* ( -(NEGATIVE MAGNITUDES) | NON-NEGATIVE ) for the integers in [lo, hi]. */
static void put_int_range(tl_strbuf *o, int64_t lo, int64_t hi) {
    tl_strbuf_putc(o, '(');
    if (lo < 0) {
        uint64_t mlo = hi < 0 ? (uint64_t)(-(hi + 1)) + 1 : 1, mhi = (uint64_t)(-(lo + 1)) + 1;
        tl_strbuf_puts(o, "-(");
        put_range(o, mlo, mhi);
        tl_strbuf_putc(o, ')');
    }
    if (hi >= 0) {
        if (lo < 0)
            tl_strbuf_putc(o, '|');
        put_range(o, lo < 0 ? 0 : (uint64_t)lo, (uint64_t)hi);
    }
    tl_strbuf_putc(o, ')');
}

static bool number_regex(const tl_number_spec *spec, bool lead, const char *term, size_t term_len, tl_strbuf *out) {
    bool ok = true;
    if (lead)
        ok = tl_strbuf_puts(out, " ?");
    if (spec->kind == TL_NUMBER_INTEGER) {
        put_int_range(out, (int64_t)spec->lo, (int64_t)spec->hi);
    } else {
        int N = spec->max_int_digits - 1;
        const char *sign = spec->lo >= 0 ? "" : spec->hi < 0 ? "-" : "-?";
        ok = ok && tl_strbuf_printf(out, "%s(0|[1-9][0-9]{0,%d})", sign, N);
        if (spec->decimals > 0)
            ok = ok && tl_strbuf_printf(out, "(\\.[0-9]{1,%d})?", spec->decimals);
    }
    if (term_len)
        ok = ok && put_literal(out, term, term_len);
    return ok && out->buf;
}

tl_status tl_number_regex(const tl_number_spec *spec, const tl_number_close *close, tl_strbuf *out,
                          tl_error *err) {
    if (!spec || spec->max_int_digits < 1 || spec->max_int_digits > TL_NUMBER_MAX_INT_DIGITS || spec->lo > spec->hi ||
        (spec->kind == TL_NUMBER_INTEGER && (spec->lo < INT64_MIN || spec->hi > INT64_MAX)))
        return tl_error_set(err, TL_ERR_INVALID, "number regex: bad spec");
    const char *term = close ? close->terminator : NULL;
    size_t tl = term_len_of(term, close ? close->terminator_len : 0);
    if (!number_regex(spec, close && close->allow_leading_space, term, tl, out))
        return tl_error_set(err, TL_ERR_NOMEM, "number regex: out of memory");
    return TL_OK;
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

/* ---- integer ranges, recognised by regeneration ----
 * The smallest and largest numbers of the range part are read off the regex
 * (digits, [x-y]{k}, groups); the regex is accepted only when regenerating
 * it from those bounds gives the same bytes. */

#define LANG_MAX 40

typedef struct lang {
    char mn[LANG_MAX], mx[LANG_MAX];
    size_t lmn, lmx;
} lang;

static int numcmp(const char *a, size_t la, const char *b, size_t lb) {
    if (la != lb)
        return la < lb ? -1 : 1;
    return memcmp(a, b, la);
}

static bool lang_alt(cursor *c, lang *out, int depth);

static bool lang_append(char *dst, size_t *ld, const char *src, size_t n) {
    if (*ld + n > LANG_MAX)
        return false;
    memcpy(dst + *ld, src, n);
    *ld += n;
    return true;
}

static bool lang_seq(cursor *c, lang *out, int depth) {
    out->lmn = out->lmx = 0;
    while (c->i < c->n && c->s[c->i] != '|' && c->s[c->i] != ')') {
        char ch = c->s[c->i];
        if (ch >= '0' && ch <= '9') {
            if (!lang_append(out->mn, &out->lmn, &ch, 1) || !lang_append(out->mx, &out->lmx, &ch, 1))
                return false;
            c->i++;
        } else if (ch == '[') {
            if (c->n - c->i < 5 || c->s[c->i + 2] != '-' || c->s[c->i + 4] != ']')
                return false;
            char x = c->s[c->i + 1], y = c->s[c->i + 3];
            if (x < '0' || y > '9' || x >= y)
                return false;
            c->i += 5;
            size_t k = 1;
            if (eat(c, "{") && (!eat_uint(c, &k, LANG_MAX) || !eat(c, "}") || k < 2))
                return false;
            for (size_t j = 0; j < k; j++)
                if (!lang_append(out->mn, &out->lmn, &x, 1) || !lang_append(out->mx, &out->lmx, &y, 1))
                    return false;
        } else if (ch == '(') {
            c->i++;
            lang sub;
            if (depth > 24 || !lang_alt(c, &sub, depth + 1) || !eat(c, ")"))
                return false;
            if (!lang_append(out->mn, &out->lmn, sub.mn, sub.lmn) || !lang_append(out->mx, &out->lmx, sub.mx, sub.lmx))
                return false;
        } else {
            return false;
        }
    }
    return out->lmn > 0;
}

static bool lang_alt(cursor *c, lang *out, int depth) {
    if (!lang_seq(c, out, depth))
        return false;
    while (eat(c, "|")) {
        lang alt;
        if (!lang_seq(c, &alt, depth))
            return false;
        if (numcmp(alt.mn, alt.lmn, out->mn, out->lmn) < 0) {
            memcpy(out->mn, alt.mn, alt.lmn);
            out->lmn = alt.lmn;
        }
        if (numcmp(alt.mx, alt.lmx, out->mx, out->lmx) > 0) {
            memcpy(out->mx, alt.mx, alt.lmx);
            out->lmx = alt.lmx;
        }
    }
    return true;
}

static bool digits_u64(const char *s, size_t n, uint64_t *v) {
    uint64_t x = 0;
    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (x > (UINT64_MAX - 9) / 10)
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

static bool parse_int_range(cursor *c, tl_regex_info *info) {
    bool lead = eat(c, " ?");
    if (!eat(c, "("))
        return false;
    bool neg = false, pos = true;
    lang nl = {0}, pl = {0};
    if (eat(c, "-(")) {
        neg = true;
        if (!lang_alt(c, &nl, 0) || !eat(c, ")"))
            return false;
        pos = eat(c, "|");
    }
    if (pos && !lang_alt(c, &pl, 0))
        return false;
    if (!eat(c, ")"))
        return false;
    uint64_t nmin = 0, nmax = 0, pmin = 0, pmax = 0;
    if (neg && (!digits_u64(nl.mn, nl.lmn, &nmin) || !digits_u64(nl.mx, nl.lmx, &nmax) || nmax > (uint64_t)INT64_MAX + 1))
        return false;
    if (pos && (!digits_u64(pl.mn, pl.lmn, &pmin) || !digits_u64(pl.mx, pl.lmx, &pmax) || pmax > (uint64_t)INT64_MAX))
        return false;
    int64_t lo = neg ? (nmax == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)nmax) : (int64_t)pmin;
    int64_t hi = pos ? (int64_t)pmax : -(int64_t)nmin;
    if (!read_terminator(c, info))
        return false;
    tl_number_spec spec;
    if (lo > hi || tl_number_spec_integer(lo, hi, 1, &spec, NULL) != TL_OK)
        return false;
    tl_strbuf again = TL_STRBUF_INIT;
    bool same = number_regex(&spec, lead, info->terminator, info->terminator_len, &again) && again.len == c->n &&
                memcmp(again.buf, c->s, c->n) == 0;
    tl_strbuf_free(&again);
    if (!same)
        return false;
    info->number = spec;
    info->leading_space = lead;
    return true;
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
    if (parse_int_range(&c, out)) {
        out->kind = TL_REGEX_NUMBER;
        return TL_OK;
    }
    tl_regex_info_free(out);
    c.i = 0;
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
