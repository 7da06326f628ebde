/* number_spec.c: number specs from JSON Schema fields, and the exact
 * predicates on number text (prefix viability, acceptance) that the token
 * masks are built to agree with.
 *
 * Bounds are read as decimals, not doubles: a JSON real is turned into its
 * shortest round-trip decimal text and scaled exactly by 10^decimals, so
 * "minimum": 0.3 with 1 decimal is exactly 3 units (no 2.9999 surprises). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/number_core.h"
#include "util/error.h"

/* Magnitudes beyond this are "unbounded" (19 + 12 digits fit well below). */
#define NUM_BIG ((i128)1 << 120)

/* ===== arithmetic ======================================================= */

i128 num_pow10(int e) {
    if (e < 0)
        return 1;
    if (e > 38)
        e = 38;
    i128 p = 1;
    for (int i = 0; i < e; i++)
        p *= 10;
    return p;
}

i128 num_floordiv(i128 a, i128 b) {
    i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

bool num_has_multiple(i128 a, i128 b, i128 step) {
    if (a > b)
        return false;
    if (step <= 1)
        return true;
    i128 first = num_floordiv(a + step - 1, step) * step;
    return first <= b;
}

bool num_magnitude_range(const tl_number_spec *s, bool neg, i128 *mlo, i128 *mhi) {
    i128 lo, hi;
    if (neg) {
        if (s->lo >= 0)
            return false; /* no '-' where no value is negative (not even "-0.0") */
        lo = s->hi > 0 ? 0 : -s->hi;
        hi = -s->lo;
        if (s->kind == TL_NUMBER_INTEGER && lo < 1)
            lo = 1;
    } else {
        lo = s->lo > 0 ? s->lo : 0;
        hi = s->hi;
    }
    *mlo = lo;
    *mhi = hi;
    return lo <= hi;
}

bool num_apply_char(const tl_number_spec *s, numstate *st, char c) {
    if (c == '-') {
        if (st->neg || st->li > 0 || st->point)
            return false;
        st->neg = true;
        return true;
    }
    if (c == '.') {
        if (st->point || st->li == 0 || s->decimals == 0)
            return false;
        st->point = true;
        return true;
    }
    if (c < '0' || c > '9')
        return false;
    int d = c - '0';
    if (st->point) {
        if (st->lf + 1 > s->decimals)
            return false;
        st->fv = st->fv * 10 + d;
        st->lf++;
        return true;
    }
    if (st->li >= 1 && st->iv == 0)
        return false; /* no digits after a leading 0 */
    if (st->li + 1 > s->max_int_digits)
        return false;
    st->iv = st->iv * 10 + d;
    st->li++;
    return true;
}

/* Does the block [a, b] of magnitudes, clipped to [mlo, mhi], hold an allowed one? */
static bool block_ok(const tl_number_spec *s, i128 a, i128 b, i128 mlo, i128 mhi) {
    if (a < mlo)
        a = mlo;
    if (b > mhi)
        b = mhi;
    return num_has_multiple(a, b, s->step);
}

static bool viable_signed(const tl_number_spec *s, const numstate *st, bool neg) {
    i128 mlo, mhi;
    if (!num_magnitude_range(s, neg, &mlo, &mhi))
        return false;
    i128 S = num_pow10(s->decimals);
    if (st->point) {
        i128 W = num_pow10(s->decimals - st->lf);
        i128 base = st->iv * S + st->fv * W;
        return block_ok(s, base, base + W - 1, mlo, mhi);
    }
    if (st->li == 0) {
        /* n more digits make the integer part; first digit nonzero unless n == 1 */
        for (int n = 1; n <= s->max_int_digits; n++) {
            i128 plo = n == 1 ? 0 : num_pow10(n - 1), phi = num_pow10(n) - 1;
            if (plo * S > mhi)
                break;
            if (block_ok(s, plo * S, phi * S + S - 1, mlo, mhi))
                return true;
        }
        return false;
    }
    if (st->iv == 0) /* "0" or "-0": only the fraction can follow */
        return block_ok(s, 0, S - 1, mlo, mhi);
    for (int k = 0; st->li + k <= s->max_int_digits; k++) {
        i128 W = num_pow10(k) * S;
        i128 a = st->iv * W;
        if (a > mhi)
            break;
        if (block_ok(s, a, a + W - 1, mlo, mhi))
            return true;
    }
    return false;
}

bool num_viable(const tl_number_spec *s, const numstate *st) {
    if (st->neg)
        return viable_signed(s, st, true);
    if (viable_signed(s, st, false))
        return true;
    /* nothing typed yet: a '-' may still come */
    return st->li == 0 && !st->point && viable_signed(s, st, true);
}

i128 num_magnitude(const tl_number_spec *s, const numstate *st) {
    return st->iv * num_pow10(s->decimals) + st->fv * num_pow10(s->decimals - st->lf);
}

bool num_complete(const tl_number_spec *s, const numstate *st) {
    if (st->li == 0 || (st->point && st->lf == 0))
        return false;
    i128 mlo, mhi;
    if (!num_magnitude_range(s, st->neg, &mlo, &mhi))
        return false;
    i128 m = num_magnitude(s, st);
    return m >= mlo && m <= mhi && (s->step <= 1 || m % s->step == 0);
}

void num_i128_to_str(i128 v, char *buf, size_t cap) {
    char tmp[48];
    size_t n = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && n < sizeof tmp);
    size_t o = 0;
    if (neg && o + 1 < cap)
        buf[o++] = '-';
    while (n && o + 1 < cap)
        buf[o++] = tmp[--n];
    if (cap)
        buf[o] = '\0';
}

/* ===== text predicates ================================================== */

static bool run_text(const tl_number_spec *s, const char *text, size_t len, numstate *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < len; i++)
        if (!num_apply_char(s, st, text[i]))
            return false;
    return true;
}

bool tl_number_spec_prefix_viable(const tl_number_spec *spec, const char *prefix, size_t len) {
    numstate st;
    return run_text(spec, prefix, len, &st) && num_viable(spec, &st);
}

bool tl_number_spec_accepts(const tl_number_spec *spec, const char *text, size_t len, tl_number_value *out) {
    numstate st;
    if (!run_text(spec, text, len, &st) || !num_complete(spec, &st))
        return false;
    if (out) {
        memset(out, 0, sizeof *out);
        char buf[64];
        size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
        memcpy(buf, text, n);
        buf[n] = '\0';
        if (spec->kind == TL_NUMBER_INTEGER) {
            out->is_integer = true;
            i128 v = st.neg ? -st.iv : st.iv;
            out->ival = (int64_t)v; /* in range: the spec's bounds are within int64 */
            out->dval = (double)out->ival;
        } else {
            out->dval = strtod(buf, NULL);
        }
    }
    return true;
}

/* ===== exact decimal bounds ============================================= */

/* A JSON number as mantissa * 10^exp (mantissa up to 17 significant digits). */
typedef struct decimal {
    bool neg;
    i128 mant;
    int exp;
} decimal;

static bool decimal_from_text(const char *t, decimal *d) {
    memset(d, 0, sizeof *d);
    const char *p = t;
    if (*p == '-') {
        d->neg = true;
        p++;
    }
    int digits = 0, exp_adj = 0;
    bool seen_point = false, any = false;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9') {
            any = true;
            if (digits < 30) {
                d->mant = d->mant * 10 + (*p - '0');
                if (d->mant)
                    digits++;
                if (seen_point)
                    exp_adj--;
            } else if (!seen_point) {
                exp_adj++;
            }
        } else if (*p == '.' && !seen_point) {
            seen_point = true;
        } else {
            break;
        }
    }
    if (!any)
        return false;
    if (*p == 'e' || *p == 'E') {
        long e = strtol(p + 1, NULL, 10);
        if (e > 1000)
            e = 1000;
        if (e < -1000)
            e = -1000;
        exp_adj += (int)e;
    }
    d->exp = exp_adj;
    while (d->mant && d->mant % 10 == 0) {
        d->mant /= 10;
        d->exp++;
    }
    return true;
}

/* Shortest decimal text that reads back as x. */
static void shortest_text(double x, char *buf, size_t cap) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static bool json_decimal(const json_t *v, decimal *d) {
    char buf[64];
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        shortest_text(json_real_value(v), buf, sizeof buf);
    else
        return false;
    return decimal_from_text(buf, d);
}

/* Fraction digits the decimal needs (0 for integers). */
static int decimal_places(const decimal *d) { return d->mant == 0 || d->exp >= 0 ? 0 : -d->exp; }

/* d * 10^scale rounded down (floor) or up (ceil), saturated at +-NUM_BIG. */
static i128 decimal_scaled(const decimal *d, int scale, bool ceil_) {
    int e = d->exp + scale;
    i128 m = d->mant;
    i128 r;
    if (m == 0)
        return 0;
    if (e >= 0) {
        int digits = 0;
        for (i128 x = m; x; x /= 10)
            digits++;
        r = digits + e > 36 ? NUM_BIG : m * num_pow10(e); /* 10^36 < NUM_BIG < 2^127 */
        if (r > NUM_BIG)
            r = NUM_BIG;
        return d->neg ? -r : r;
    }
    i128 div = -e > 38 ? num_pow10(38) : num_pow10(-e);
    i128 q = m / div;
    bool exact = (m % div) == 0;
    i128 v = d->neg ? -q : q;
    if (!exact) {
        /* truncation went toward zero */
        if (d->neg && !ceil_)
            v -= 1;
        if (!d->neg && ceil_)
            v += 1;
    }
    return v;
}

static int mant_digits(i128 m) {
    int n = 0;
    while (m) {
        m /= 10;
        n++;
    }
    return n;
}

/* Exact comparison of two decimals: sign, then order of magnitude, then digits. */
static int cmp_decimal(const decimal *a, const decimal *b) {
    int sa = a->mant == 0 ? 0 : a->neg ? -1 : 1, sb = b->mant == 0 ? 0 : b->neg ? -1 : 1;
    if (sa != sb || sa == 0)
        return sa < sb ? -1 : sa > sb;
    int na = mant_digits(a->mant), nb = mant_digits(b->mant);
    int oa = na + a->exp, ob = nb + b->exp;
    int mag;
    if (oa != ob) {
        mag = oa < ob ? -1 : 1;
    } else {
        i128 ma = a->mant, mb = b->mant;
        if (na < nb)
            ma *= num_pow10(nb - na);
        else
            mb *= num_pow10(na - nb);
        mag = ma < mb ? -1 : ma > mb;
    }
    return sa > 0 ? mag : -mag;
}

/* ===== schema ========================================================== */

static int digits_of(i128 v) {
    if (v < 0)
        v = -v;
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

typedef struct bound {
    bool set;
    bool exclusive;
    decimal d;
    const char *key;
} bound;

static tl_status read_bound(const json_t *field, const char *path, const char *key, bound *b, tl_error *err) {
    const json_t *v = json_object_get(field, key);
    if (!v)
        return TL_OK;
    if (!json_is_number(v))
        return tl_error_set(err, TL_ERR_SCHEMA, "%s/%s: must be a number", path, key);
    b->set = true;
    b->key = key;
    json_decimal(v, &b->d);
    return TL_OK;
}

/* Picks the tighter of an inclusive and an exclusive bound (lower when is_min). */
static void tighter(bound *incl, const bound *excl, bool is_min) {
    if (!excl->set)
        return;
    if (!incl->set) {
        *incl = *excl;
        incl->exclusive = true;
        return;
    }
    int c = cmp_decimal(&excl->d, &incl->d);
    if ((is_min && c >= 0) || (!is_min && c <= 0)) {
        *incl = *excl;
        incl->exclusive = true;
    }
}

/* Plain decimal text of d ("-0.25", "1200"); huge exponents stay as e-notation. */
static void decimal_str(const decimal *d, char *buf, size_t cap) {
    char m[44];
    num_i128_to_str(d->mant, m, sizeof m);
    size_t n = strlen(m);
    const char *sign = d->neg ? "-" : "";
    if (d->exp >= 0 && d->exp <= 20)
        snprintf(buf, cap, "%s%s%.*s", sign, m, d->exp, "00000000000000000000");
    else if (d->exp < 0 && -d->exp < (int)n)
        snprintf(buf, cap, "%s%.*s.%s", sign, (int)(n - (size_t)-d->exp), m, m + n - (size_t)-d->exp);
    else if (d->exp < 0 && -d->exp - (int)n <= 20)
        snprintf(buf, cap, "%s0.%.*s%s", sign, -d->exp - (int)n, "00000000000000000000", m);
    else
        snprintf(buf, cap, "%s%se%d", sign, m, d->exp);
}

tl_status tl_number_spec_from_schema(const json_t *field, const char *path, tl_number_spec *out, tl_error *err) {
    if (!path)
        path = "";
    memset(out, 0, sizeof *out);
    if (!json_is_object(field))
        return tl_error_set(err, TL_ERR_SCHEMA, "%s: a field schema must be an object", path);
    const json_t *type = json_object_get(field, "type");
    const char *ts = json_is_string(type) ? json_string_value(type) : NULL;
    if (!ts || (strcmp(ts, "integer") != 0 && strcmp(ts, "number") != 0))
        return tl_error_set(err, TL_ERR_SCHEMA, "%s/type: expected \"integer\" or \"number\"", path);
    bool is_int = strcmp(ts, "integer") == 0;
    if (json_object_get(field, "open"))
        return tl_error_set(err, TL_ERR_SCHEMA, "%s/open: only string fields can be open (this one is %s)", path,
                            ts);
    out->kind = is_int ? TL_NUMBER_INTEGER : TL_NUMBER_DECIMAL;

    bound mn = {0}, mx = {0}, xmn = {0}, xmx = {0};
    tl_status st;
    if ((st = read_bound(field, path, "minimum", &mn, err)) || (st = read_bound(field, path, "maximum", &mx, err)))
        return st;
    /* exclusive bounds: numbers (2019+) or booleans modifying min/max (draft 4) */
    const char *xkeys[2] = {"exclusiveMinimum", "exclusiveMaximum"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(field, xkeys[i]);
        bound *incl = i == 0 ? &mn : &mx;
        if (!v)
            continue;
        if (json_is_boolean(v)) {
            if (json_is_true(v)) {
                if (!incl->set)
                    return tl_error_set(err, TL_ERR_SCHEMA, "%s/%s: true needs %s", path, xkeys[i],
                                        i == 0 ? "minimum" : "maximum");
                incl->exclusive = true;
            }
        } else if ((st = read_bound(field, path, xkeys[i], i == 0 ? &xmn : &xmx, err))) {
            return st;
        }
    }
    tighter(&mn, &xmn, true);
    tighter(&mx, &xmx, false);
    if (mn.set && mx.set && cmp_decimal(&mn.d, &mx.d) > 0) {
        char a[128], b[128];
        decimal_str(&mn.d, a, sizeof a);
        decimal_str(&mx.d, b, sizeof b);
        return tl_error_set(err, TL_ERR_SCHEMA, "%s/%s: %s is greater than %s %s", path, mn.key, a, mx.key, b);
    }

    /* precision */
    decimal mo = {0};
    bool has_mo = false;
    const json_t *mov = json_object_get(field, "multipleOf");
    if (mov) {
        if (!json_is_number(mov))
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: must be a number", path);
        json_decimal(mov, &mo);
        if (mo.neg || mo.mant == 0)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: must be greater than 0", path);
        has_mo = true;
    }
    int decimals = 0;
    const json_t *xd = json_object_get(field, "x-decimals");
    if (xd) {
        if (!json_is_integer(xd) || json_integer_value(xd) < 0 || json_integer_value(xd) > TL_NUMBER_MAX_DECIMALS)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/x-decimals: must be an integer in 0..%d", path,
                                TL_NUMBER_MAX_DECIMALS);
        if (is_int && json_integer_value(xd) != 0)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/x-decimals: an integer has no decimals", path);
        decimals = (int)json_integer_value(xd);
    } else if (!is_int) {
        decimals = has_mo ? decimal_places(&mo) : 6;
        if (decimals > TL_NUMBER_MAX_DECIMALS)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: more than %d decimal places", path,
                                TL_NUMBER_MAX_DECIMALS);
    }
    if (has_mo) {
        if (is_int && decimal_places(&mo) > 0)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: must be an integer for an integer field",
                                path);
        if (decimal_places(&mo) > decimals)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: has %d decimal places, more than x-decimals %d",
                                path, decimal_places(&mo), decimals);
        out->step = decimal_scaled(&mo, decimals, false);
        if (out->step >= NUM_BIG || (is_int && out->step > INT64_MAX))
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/multipleOf: too large", path);
    } else {
        out->step = 1;
    }
    out->decimals = decimals;

    /* integer-part digits */
    const json_t *xm = json_object_get(field, "x-max-digits");
    int max_digits = 0;
    if (xm) {
        if (!json_is_integer(xm) || json_integer_value(xm) < 1 ||
            json_integer_value(xm) > TL_NUMBER_MAX_INT_DIGITS)
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/x-max-digits: must be an integer in 1..%d", path,
                                TL_NUMBER_MAX_INT_DIGITS);
        max_digits = (int)json_integer_value(xm);
    }

    /* scaled bounds */
    i128 lo, hi;
    if (mn.set) {
        lo = decimal_scaled(&mn.d, decimals, true);
        if (mn.exclusive && decimal_scaled(&mn.d, decimals, false) == lo)
            lo += 1;
    } else {
        lo = -NUM_BIG;
    }
    if (mx.set) {
        hi = decimal_scaled(&mx.d, decimals, false);
        if (mx.exclusive && decimal_scaled(&mx.d, decimals, true) == hi)
            hi -= 1;
    } else {
        hi = NUM_BIG;
    }
    if (is_int) {
        if (mn.set && (lo < (i128)INT64_MIN || lo > (i128)INT64_MAX))
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/%s: outside the int64 range", path, mn.key);
        if (mx.set && (hi > (i128)INT64_MAX || hi < (i128)INT64_MIN))
            return tl_error_set(err, TL_ERR_SCHEMA, "%s/%s: outside the int64 range", path, mx.key);
        if (!mn.set)
            lo = INT64_MIN;
        if (!mx.set)
            hi = INT64_MAX;
    }
    if (!max_digits) {
        if (mn.set && mx.set) {
            i128 S = num_pow10(decimals);
            i128 a = lo < 0 ? -lo : lo, b = hi < 0 ? -hi : hi;
            i128 m = (a > b ? a : b) / S;
            max_digits = m >= NUM_BIG / S ? TL_NUMBER_MAX_INT_DIGITS : digits_of(m);
            if (max_digits > TL_NUMBER_MAX_INT_DIGITS)
                max_digits = TL_NUMBER_MAX_INT_DIGITS;
        } else {
            max_digits = is_int ? TL_NUMBER_MAX_INT_DIGITS : 12;
        }
    }
    out->max_int_digits = max_digits;
    /* what the digits can write */
    i128 cap = num_pow10(max_digits + decimals) - 1;
    if (lo < -cap)
        lo = -cap;
    if (hi > cap)
        hi = cap;
    out->lo = lo;
    out->hi = hi;
    numstate empty = {0};
    if (lo > hi || !num_viable(out, &empty)) {
        tl_strbuf d = TL_STRBUF_INIT;
        tl_number_spec_describe(out, &d);
        tl_error_set(err, TL_ERR_SCHEMA, "%s: no %s satisfies the range (%s)", path, ts, tl_strbuf_cstr(&d));
        tl_strbuf_free(&d);
        return TL_ERR_SCHEMA;
    }
    return TL_OK;
}

tl_status tl_number_spec_from_json(const char *text, size_t len, const char *path, tl_number_spec *out,
                                   tl_error *err) {
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return tl_error_set(err, TL_ERR_SCHEMA, "%s: JSON error at line %d:%d: %s", path ? path : "", je.line,
                            je.column, je.text);
    tl_status st = tl_number_spec_from_schema(j, path, out, err);
    json_decref(j);
    return st;
}

tl_status tl_number_spec_integer(int64_t lo, int64_t hi, int64_t step, tl_number_spec *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    if (lo > hi)
        return tl_error_set(err, TL_ERR_SCHEMA, "integer range [%lld, %lld] is empty", (long long)lo,
                            (long long)hi);
    if (step < 1)
        return tl_error_set(err, TL_ERR_SCHEMA, "integer step %lld must be >= 1", (long long)step);
    out->kind = TL_NUMBER_INTEGER;
    out->lo = lo;
    out->hi = hi;
    out->step = step;
    i128 a = lo < 0 ? -(i128)lo : lo, b = hi < 0 ? -(i128)hi : hi;
    out->max_int_digits = digits_of(a > b ? a : b);
    numstate empty = {0};
    if (!num_viable(out, &empty))
        return tl_error_set(err, TL_ERR_SCHEMA, "no multiple of %lld in [%lld, %lld]", (long long)step,
                            (long long)lo, (long long)hi);
    return TL_OK;
}

static void scaled_str(i128 v, int decimals, char *buf, size_t cap) {
    char digits[64];
    bool neg = v < 0;
    num_i128_to_str(neg ? -v : v, digits, sizeof digits);
    size_t n = strlen(digits);
    if (decimals == 0) {
        snprintf(buf, cap, "%s%s", neg ? "-" : "", digits);
        return;
    }
    char padded[96];
    size_t pad = n <= (size_t)decimals ? (size_t)decimals + 1 - n : 0;
    memset(padded, '0', pad);
    memcpy(padded + pad, digits, n + 1);
    n += pad;
    size_t ip = n - (size_t)decimals;
    snprintf(buf, cap, "%s%.*s.%s", neg ? "-" : "", (int)ip, padded, padded + ip);
}

void tl_number_spec_describe(const tl_number_spec *spec, tl_strbuf *out) {
    char a[96], b[96], c[96];
    scaled_str(spec->lo, spec->decimals, a, sizeof a);
    scaled_str(spec->hi, spec->decimals, b, sizeof b);
    tl_strbuf_printf(out, "%s in [%s, %s]", spec->kind == TL_NUMBER_INTEGER ? "integer" : "number", a, b);
    if (spec->step > 1) {
        scaled_str(spec->step, spec->decimals, c, sizeof c);
        tl_strbuf_printf(out, ", multiple of %s", c);
    }
    if (spec->kind == TL_NUMBER_DECIMAL)
        tl_strbuf_printf(out, " with up to %d decimals", spec->decimals);
}
