/* regex.c: the regexes typellm sends to remote engines (SGLang's `regex`
 * sampling parameter: Python re syntax as outlines/xgrammar read it), and a
 * parser that recognises exactly those shapes again, so typellm's own server
 * can enforce a received regex with the number automaton instead of a
 * general regex engine.
 *
 * Shapes (TERM = the escaped terminator):
 *   numbers:            (-(NEG)|POS)TERM spelling exactly the values in
 *                       [lo, hi]: POS/NEG list the magnitudes digit by digit,
 *                       for numbers once per fraction length 0..decimals,
 *                       e.g. integer [-20, 300]:
 *                       (-([1-9]|(1[0-9]|20))|[0-9]|[1-9][0-9]|([1-2][0-9]{2}|300))
 *                       (multipleOf is not expressed: checked after)
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

/* Digit runs below all carry `f`: the number of trailing digits that form the
 * fraction, so a "\." is written before the digit whose remaining count
 * (itself included) is f. f = 0: integers, no point. */

static void put_point_if(tl_strbuf *o, size_t remaining, size_t f) {
    if (f > 0 && remaining == f)
        tl_strbuf_puts(o, "\\.");
}

/* k free digits, the last of which is at remaining count 1. */
static void put_any(tl_strbuf *o, size_t k, size_t f) {
    size_t before = f > 0 && f <= k ? k - f : k, after = f > 0 && f <= k ? f : 0;
    if (before == 1)
        tl_strbuf_puts(o, "[0-9]");
    else if (before > 1)
        tl_strbuf_printf(o, "[0-9]{%zu}", before);
    if (after) {
        tl_strbuf_puts(o, "\\.");
        tl_strbuf_puts(o, after == 1 ? "[0-9]" : "");
        if (after > 1)
            tl_strbuf_printf(o, "[0-9]{%zu}", after);
    }
}

static void put_digits(tl_strbuf *o, const char *s, size_t L, size_t f) {
    for (size_t i = 0; i < L; i++) {
        put_point_if(o, L - i, f);
        tl_strbuf_putc(o, s[i]);
    }
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

/* Equal-length digit strings lo <= hi (inner digits may be 0); L remaining digits. */
static void range_same_len(tl_strbuf *o, const char *lo, const char *hi, size_t L, size_t f) {
    if (L == 0)
        return;
    if (memcmp(lo, hi, L) == 0) {
        put_digits(o, lo, L, f);
        return;
    }
    put_point_if(o, L, f);
    if (lo[0] == hi[0]) {
        tl_strbuf_putc(o, lo[0]);
        range_same_len(o, lo + 1, hi + 1, L - 1, f);
        return;
    }
    char nines[48], zeros[48];
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
        range_same_len(o, lo + 1, nines, L - 1, f);
        first = false;
    }
    if (start <= end) {
        if (!first)
            tl_strbuf_putc(o, '|');
        put_class(o, start, end);
        put_any(o, L - 1, f);
        first = false;
    }
    if (!hi_nines) {
        if (!first)
            tl_strbuf_putc(o, '|');
        tl_strbuf_putc(o, hi[0]);
        range_same_len(o, zeros, hi + 1, L - 1, f);
    }
    if (alts > 1)
        tl_strbuf_putc(o, ')');
}

/* The integers K in [a, b] (0 <= a <= b) written with f fraction digits
 * (K / 10^f with a point; at least one digit before the point), one block
 * per digit count. */
static void put_range(tl_strbuf *o, i128 a, i128 b, size_t f) {
    char as[48], bs[48];
    num_i128_to_str(a, as, sizeof as);
    num_i128_to_str(b, bs, sizeof bs);
    size_t la = strlen(as), lb = strlen(bs), minl = f + 1;
    size_t from = la > minl ? la : minl, to = lb > minl ? lb : minl;
    for (size_t l = from; l <= to; l++) {
        char lo[48], hi[48];
        if (l == from) { /* a, zero-padded to l digits */
            memset(lo, '0', l - la);
            memcpy(lo + (l - la), as, la);
        } else {
            lo[0] = '1';
            memset(lo + 1, '0', l - 1);
        }
        if (l == to) {
            memset(hi, '0', l - lb);
            memcpy(hi + (l - lb), bs, lb);
        } else {
            memset(hi, '9', l);
        }
        if (l > from)
            tl_strbuf_putc(o, '|');
        range_same_len(o, lo, hi, l, f);
    }
}

/* Magnitudes [a, b] (units of 10^-d) in every spelling with 0..d fraction
 * digits: one group per fraction length f whose grid has a point in range. */
static void put_spellings(tl_strbuf *o, i128 a, i128 b, int d, bool integer) {
    if (integer) {
        put_range(o, a, b, 0);
        return;
    }
    bool first = true;
    for (int f = 0; f <= d; f++) {
        i128 unit = num_pow10(d - f);
        i128 k1 = num_floordiv(a + unit - 1, unit), k2 = num_floordiv(b, unit);
        if (k1 > k2)
            continue;
        tl_strbuf_puts(o, first ? "(" : "|(");
        put_range(o, k1, k2, (size_t)f);
        tl_strbuf_putc(o, ')');
        first = false;
    }
}

/* ( -(NEGATIVE MAGNITUDES) | NON-NEGATIVE ): exactly the values in [lo, hi]
 * (a multipleOf is not expressed). A negative zero ("-0.0") is spelt where
 * the automaton allows it: numbers whose range has negative values. */
static void put_signed_range(tl_strbuf *o, const tl_number_spec *spec) {
    bool integer = spec->kind == TL_NUMBER_INTEGER;
    tl_strbuf_putc(o, '(');
    i128 mlo, mhi;
    bool neg = num_magnitude_range(spec, true, &mlo, &mhi);
    if (neg) {
        tl_strbuf_puts(o, "-(");
        put_spellings(o, mlo, mhi, spec->decimals, integer);
        tl_strbuf_putc(o, ')');
    }
    if (num_magnitude_range(spec, false, &mlo, &mhi)) {
        if (neg)
            tl_strbuf_putc(o, '|');
        put_spellings(o, mlo, mhi, spec->decimals, integer);
    }
    tl_strbuf_putc(o, ')');
}

static bool number_regex(const tl_number_spec *spec, bool lead, const char *term, size_t term_len, tl_strbuf *out) {
    if (lead)
        tl_strbuf_puts(out, " ?");
    put_signed_range(out, spec);
    if (term_len)
        put_literal(out, term, term_len);
    return out->buf != NULL;
}

tl_status tl_number_regex(const tl_number_spec *spec, const tl_number_close *close, tl_strbuf *out,
                          tl_error *err) {
    if (!spec || spec->max_int_digits < 1 || spec->max_int_digits > TL_NUMBER_MAX_INT_DIGITS || spec->lo > spec->hi ||
        spec->decimals < 0 || spec->decimals > TL_NUMBER_MAX_DECIMALS ||
        (spec->kind == TL_NUMBER_INTEGER && (spec->lo < INT64_MIN || spec->hi > INT64_MAX || spec->decimals)))
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

/* ---- number ranges, recognised by regeneration ----
 * The smallest and largest values of each sign's part are read off the regex
 * (digits, \\., [x-y]{k}, groups); the regex is accepted only when
 * regenerating it from those bounds gives the same bytes. */

#define LANG_MAX 48

typedef struct lang {
    char mn[LANG_MAX], mx[LANG_MAX];
    size_t lmn, lmx;
    int fmax; /* most fraction digits in any alternative */
} lang;

static size_t int_len(const char *s, size_t n) {
    const char *p = memchr(s, '.', n);
    return p ? (size_t)(p - s) : n;
}

/* Compares two spellings by value: integer part by length then digits, then
 * the fractions digit by digit (missing digits are 0). */
static int numcmp(const char *a, size_t la, const char *b, size_t lb) {
    size_t ia = int_len(a, la), ib = int_len(b, lb);
    if (ia != ib)
        return ia < ib ? -1 : 1;
    int c = memcmp(a, b, ia);
    if (c)
        return c;
    const char *fa = ia < la ? a + ia + 1 : "", *fb = ib < lb ? b + ib + 1 : "";
    size_t na = ia < la ? la - ia - 1 : 0, nb = ib < lb ? lb - ib - 1 : 0;
    for (size_t i = 0; i < na || i < nb; i++) {
        char x = i < na ? fa[i] : '0', y = i < nb ? fb[i] : '0';
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

static int frac_digits(const char *s, size_t n) {
    size_t i = int_len(s, n);
    return i < n ? (int)(n - i - 1) : 0;
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
    out->fmax = 0;
    while (c->i < c->n && c->s[c->i] != '|' && c->s[c->i] != ')') {
        char ch = c->s[c->i];
        if ((ch >= '0' && ch <= '9') || ch == '\\') {
            if (ch == '\\') {
                if (!eat(c, "\\."))
                    return false;
                ch = '.';
            } else {
                c->i++;
            }
            if (!lang_append(out->mn, &out->lmn, &ch, 1) || !lang_append(out->mx, &out->lmx, &ch, 1))
                return false;
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
    int f = frac_digits(out->mn, out->lmn);
    out->fmax = f;
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
        if (alt.fmax > out->fmax)
            out->fmax = alt.fmax;
    }
    return true;
}

/* A spelling as units of 10^-d. */
static bool spelling_scaled(const char *s, size_t n, int d, i128 *v) {
    size_t il = int_len(s, n);
    int f = frac_digits(s, n);
    if (il == 0 || il > 20 || f > d)
        return false;
    i128 x = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '.')
            x = x * 10 + (s[i] - '0');
    *v = x * num_pow10(d - f);
    return true;
}

static int digits_of_i128(i128 v) {
    int n = 1;
    for (v = v < 0 ? -v : v; v >= 10; v /= 10)
        n++;
    return n;
}

/* A number regex as built by number_regex(): read the range off it, then
 * accept it only if regenerating from that range gives the same bytes. */
static bool parse_range(cursor *c, tl_regex_info *info) {
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
    if (!eat(c, ")") || !read_terminator(c, info))
        return false;
    int d = (neg && nl.fmax > pl.fmax) ? nl.fmax : pl.fmax;
    if (d > TL_NUMBER_MAX_DECIMALS)
        return false;
    i128 nmin = 0, nmax = 0, pmin = 0, pmax = 0;
    if (neg && (!spelling_scaled(nl.mn, nl.lmn, d, &nmin) || !spelling_scaled(nl.mx, nl.lmx, d, &nmax)))
        return false;
    if (pos && (!spelling_scaled(pl.mn, pl.lmn, d, &pmin) || !spelling_scaled(pl.mx, pl.lmx, d, &pmax)))
        return false;
    i128 lo = neg ? -nmax : pmin, hi = pos ? pmax : -nmin;
    /* an integer range first; a number with decimals (possibly 0) otherwise */
    for (int kind = 0; kind < 2; kind++) {
        tl_number_spec spec = {0};
        if (kind == 0) {
            if (d > 0 || lo < INT64_MIN || hi > INT64_MAX ||
                tl_number_spec_integer((int64_t)lo, (int64_t)hi, 1, &spec, NULL) != TL_OK)
                continue;
        } else {
            i128 alo = lo < 0 ? -lo : lo, ahi = hi < 0 ? -hi : hi;
            spec = (tl_number_spec){.kind = TL_NUMBER_DECIMAL, .decimals = d, .lo = lo, .hi = hi, .step = 1};
            spec.max_int_digits = digits_of_i128((alo > ahi ? alo : ahi) / num_pow10(d));
            if (spec.max_int_digits > TL_NUMBER_MAX_INT_DIGITS || lo > hi)
                return false;
        }
        tl_strbuf again = TL_STRBUF_INIT;
        bool same = number_regex(&spec, lead, info->terminator, info->terminator_len, &again) &&
                    again.len == c->n && memcmp(again.buf, c->s, c->n) == 0;
        tl_strbuf_free(&again);
        if (same) {
            info->number = spec;
            info->leading_space = lead;
            return true;
        }
    }
    return false;
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
    if (parse_range(&c, out)) {
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
