/* builtins.c: the filters, tests, global functions and str/list/dict
 * methods templates call, with the semantics of Jinja2's builtins and
 * Python's str/list/dict (as an ImmutableSandboxedEnvironment exposes them:
 * methods that would modify a list or dict fail with a SecurityError). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "template/internal.h"
#include "util/error.h"

/* ---- argument access --------------------------------------------------------------- */

typedef struct args {
    size_t argc;
    const tl_val *argv;
    size_t kwc;
    const tl_str *kwn;
    const tl_val *kwv;
} args;

/* positional i or keyword name; def when absent */
static tl_val arg(const args *a, size_t i, const char *name, tl_val def) {
    if (i < a->argc)
        return a->argv[i];
    for (size_t k = 0; k < a->kwc; k++)
        if (name && tl_str_eq(a->kwn[k], name))
            return a->kwv[k];
    return def;
}

static bool present(tl_val v) { return v.t != V_UNDEF && v.t != V_NONE; }

static tl_val need_str(tl_render_state *st, uint32_t pos, tl_val v, const char *what) {
    if (v.t != V_STR)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "%s must be a string, not %s", what, tl_val_type_name(v));
    return v;
}

static tl_val substr(tl_val s, size_t a, size_t b) {
    tl_val r = s;
    r.u.s = s.u.s + a;
    r.n = (uint32_t)(b - a);
    return r;
}

static tl_val gen(tl_list *l) {
    tl_val r = tl_val_list(l);
    r.flags = VF_GEN;
    return r;
}

static tl_val tuple2(tl_render_state *st, tl_val a, tl_val b) {
    tl_list *l = tl_list_new(st, 2);
    l->v[0] = a;
    l->v[1] = b;
    l->n = 2;
    tl_val r = tl_val_list(l);
    r.flags = VF_TUPLE;
    return r;
}

const tl_list *tl_tpl_iterate(tl_render_state *st, uint32_t pos, tl_val v) {
    switch (v.t) {
    case V_LIST: return v.u.l;
    case V_DICT:
    case V_NS: {
        tl_list *l = tl_list_new(st, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++)
            l->v[l->n++] = v.u.d->k[i];
        return l;
    }
    case V_STR: {
        tl_list *l = tl_list_new(st, v.n);
        for (size_t i = 0; i < v.n;) {
            size_t j = i;
            tl_utf8_next(v.u.s, v.n, &j);
            l->v[l->n++] = substr(v, i, j);
            i = j;
        }
        return l;
    }
    case V_UNDEF: return tl_list_new(st, 0);
    default:
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "'%s' object is not iterable", tl_val_type_name(v));
    }
}

/* ---- string helpers ------------------------------------------------------------------- */

static bool in_chars(uint32_t c, tl_val chars) {
    for (size_t i = 0; i < chars.n;)
        if (tl_utf8_next(chars.u.s, chars.n, &i) == c)
            return true;
    return false;
}

/* strip: mode 1 left, 2 right, 3 both; chars NULL-like: Python whitespace */
static tl_val strip(tl_val s, int mode, tl_val chars) {
    bool ws = chars.t != V_STR;
    size_t a = 0, b = s.n;
    if (mode & 1)
        while (a < b) {
            size_t j = a;
            uint32_t c = tl_utf8_next(s.u.s, s.n, &j);
            if (ws ? !tl_py_isspace(c) : !in_chars(c, chars))
                break;
            a = j;
        }
    if (mode & 2)
        while (b > a) {
            size_t k = b - 1;
            while (k > a && ((unsigned char)s.u.s[k] & 0xC0) == 0x80)
                k--;
            size_t j = k;
            uint32_t c = tl_utf8_next(s.u.s, s.n, &j);
            if (ws ? !tl_py_isspace(c) : !in_chars(c, chars))
                break;
            b = k;
        }
    return substr(s, a, b);
}

static size_t find_sub(tl_val s, size_t from, tl_val sub) {
    if (!sub.n)
        return from <= s.n ? from : (size_t)-1;
    for (size_t i = from; i + sub.n <= s.n; i++)
        if (s.u.s[i] == sub.u.s[0] && !memcmp(s.u.s + i, sub.u.s, sub.n))
            return i;
    return (size_t)-1;
}

static size_t rfind_sub(tl_val s, tl_val sub) {
    if (sub.n > s.n)
        return (size_t)-1;
    for (size_t i = s.n - sub.n + 1; i-- > 0;)
        if (!memcmp(s.u.s + i, sub.u.s, sub.n))
            return i;
    return (size_t)-1;
}

static tl_val split(tl_render_state *st, uint32_t pos, tl_val s, tl_val sep, int64_t maxsplit, bool from_right) {
    tl_list *l = tl_list_new(st, 0);
    if (sep.t != V_STR) {
        /* runs of whitespace; leading/trailing ignored */
        size_t i = 0;
        int64_t done = 0;
        if (from_right) {
            /* rsplit(None, n): split from the right */
            size_t end = s.n;
            tl_list *rev = tl_list_new(st, 0);
            for (;;) {
                while (end > 0) {
                    size_t k = end - 1;
                    while (k > 0 && ((unsigned char)s.u.s[k] & 0xC0) == 0x80)
                        k--;
                    size_t j = k;
                    if (!tl_py_isspace(tl_utf8_next(s.u.s, s.n, &j)))
                        break;
                    end = k;
                }
                if (!end)
                    break;
                size_t start = end;
                if (maxsplit >= 0 && done >= maxsplit) {
                    tl_val rest = strip(substr(s, 0, end), 1, tl_val_none());
                    tl_list_push(st, rev, rest);
                    break;
                }
                while (start > 0) {
                    size_t k = start - 1;
                    while (k > 0 && ((unsigned char)s.u.s[k] & 0xC0) == 0x80)
                        k--;
                    size_t j = k;
                    if (tl_py_isspace(tl_utf8_next(s.u.s, s.n, &j)))
                        break;
                    start = k;
                }
                tl_list_push(st, rev, substr(s, start, end));
                done++;
                end = start;
            }
            for (size_t k = rev->n; k-- > 0;)
                tl_list_push(st, l, rev->v[k]);
            return tl_val_list(l);
        }
        for (;;) {
            while (i < s.n) {
                size_t j = i;
                if (!tl_py_isspace(tl_utf8_next(s.u.s, s.n, &j)))
                    break;
                i = j;
            }
            if (i >= s.n)
                break;
            if (maxsplit >= 0 && done >= maxsplit) {
                tl_list_push(st, l, strip(substr(s, i, s.n), 2, tl_val_none()));
                break;
            }
            size_t start = i;
            while (i < s.n) {
                size_t j = i;
                if (tl_py_isspace(tl_utf8_next(s.u.s, s.n, &j)))
                    break;
                i = j;
            }
            tl_list_push(st, l, substr(s, start, i));
            done++;
            tl_tpl_step(st, pos);
        }
        return tl_val_list(l);
    }
    if (!sep.n)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "empty separator");
    if (from_right && maxsplit >= 0) {
        tl_list *rev = tl_list_new(st, 0);
        size_t end = s.n;
        int64_t done = 0;
        while (done < maxsplit) {
            tl_val head = substr(s, 0, end);
            size_t k = rfind_sub(head, sep);
            if (k == (size_t)-1)
                break;
            tl_list_push(st, rev, substr(s, k + sep.n, end));
            end = k;
            done++;
        }
        tl_list_push(st, rev, substr(s, 0, end));
        for (size_t k = rev->n; k-- > 0;)
            tl_list_push(st, l, rev->v[k]);
        return tl_val_list(l);
    }
    size_t i = 0;
    int64_t done = 0;
    for (;;) {
        size_t k = (maxsplit >= 0 && done >= maxsplit) ? (size_t)-1 : find_sub(s, i, sep);
        if (k == (size_t)-1) {
            tl_list_push(st, l, substr(s, i, s.n));
            break;
        }
        tl_list_push(st, l, substr(s, i, k));
        i = k + sep.n;
        done++;
        tl_tpl_step(st, pos);
    }
    return tl_val_list(l);
}

static tl_val replace(tl_render_state *st, uint32_t pos, tl_val s, tl_val old, tl_val new_, int64_t count) {
    tl_strbuf *out = tl_tpl_capture_push(st);
    size_t i = 0;
    int64_t done = 0;
    if (!old.n) {
        /* Python inserts new between every character */
        size_t n_chars = 0;
        while (i <= s.n) {
            if (count < 0 || done < count) {
                tl_tpl_put(st, out, new_.u.s, new_.n);
                done++;
            }
            if (i == s.n)
                break;
            size_t j = i;
            tl_utf8_next(s.u.s, s.n, &j);
            tl_tpl_put(st, out, s.u.s + i, j - i);
            i = j;
            n_chars++;
            tl_tpl_step(st, pos);
        }
        return tl_tpl_capture_pop(st);
    }
    for (;;) {
        size_t k = (count >= 0 && done >= count) ? (size_t)-1 : find_sub(s, i, old);
        if (k == (size_t)-1) {
            tl_tpl_put(st, out, s.u.s + i, s.n - i);
            break;
        }
        tl_tpl_put(st, out, s.u.s + i, k - i);
        tl_tpl_put(st, out, new_.u.s, new_.n);
        i = k + old.n;
        done++;
        tl_tpl_step(st, pos);
    }
    return tl_tpl_capture_pop(st);
}

/* mode: 0 lower, 1 upper, 2 title, 3 capitalize */
static tl_val change_case(tl_render_state *st, tl_val s, int mode) {
    tl_strbuf *out = tl_tpl_capture_push(st);
    bool prev_cased = false, first = true;
    for (size_t i = 0; i < s.n;) {
        size_t j = i;
        uint32_t c = tl_utf8_next(s.u.s, s.n, &j);
        uint32_t r = c;
        if (c < 0x110000) {
            bool up;
            if (mode == 0)
                up = false;
            else if (mode == 1)
                up = true;
            else if (mode == 2)
                up = !prev_cased;
            else
                up = first;
            r = (uint32_t)(up ? utf8proc_toupper((utf8proc_int32_t)c) : utf8proc_tolower((utf8proc_int32_t)c));
            utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
            prev_cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
        }
        utf8proc_uint8_t buf[4];
        utf8proc_ssize_t m = (c < 0x80 && r < 0x80) ? (buf[0] = (utf8proc_uint8_t)r, 1)
                                                      : utf8proc_encode_char((utf8proc_int32_t)r, buf);
        if (m <= 0 || (c >= 0x80 && j - i == 1)) /* invalid byte: keep it */
            tl_tpl_put(st, out, s.u.s + i, j - i);
        else
            tl_tpl_put(st, out, (const char *)buf, (size_t)m);
        first = false;
        i = j;
    }
    return tl_tpl_capture_pop(st);
}

/* Jinja's wordcount: runs of Python regex \w, i.e. letters (L*), numbers
 * (N*) and '_' (combining marks and punctuation end a word). */
static int64_t word_count(tl_val s) {
    int64_t n = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.n;) {
        uint32_t c = tl_utf8_next(s.u.s, s.n, &i);
        utf8proc_category_t cat = c < 0x110000 ? utf8proc_category((utf8proc_int32_t)c) : UTF8PROC_CATEGORY_CN;
        bool w = c == '_' || (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
                 (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
        n += w && !in_word;
        in_word = w;
    }
    return n;
}

static tl_val join(tl_render_state *st, uint32_t pos, const tl_list *items, tl_val sep) {
    tl_strbuf *out = tl_tpl_capture_push(st);
    for (size_t i = 0; i < items->n; i++) {
        if (i && sep.t == V_STR)
            tl_tpl_put(st, out, sep.u.s, sep.n);
        tl_val_str_to(st, out, items->v[i]);
        tl_tpl_step(st, pos);
    }
    return tl_tpl_capture_pop(st);
}

/* attribute lookup as filters do it: "a.b.0" walks dicts and lists */
static tl_val attr_path(tl_render_state *st, tl_val obj, tl_val attr) {
    if (attr.t == V_INT) {
        if (obj.t == V_LIST) {
            int64_t i = attr.u.i < 0 ? attr.u.i + (int64_t)obj.u.l->n : attr.u.i;
            return i >= 0 && i < (int64_t)obj.u.l->n ? obj.u.l->v[i] : tl_val_undef(NULL, 0);
        }
        return tl_val_undef(NULL, 0);
    }
    if (attr.t != V_STR)
        return tl_val_undef(NULL, 0);
    size_t i = 0;
    while (i <= attr.n) {
        size_t j = i;
        while (j < attr.n && attr.u.s[j] != '.')
            j++;
        tl_val part = substr(attr, i, j);
        if (obj.t == V_DICT || obj.t == V_NS) {
            tl_val *v = tl_dict_get(obj.u.d, part);
            obj = v ? *v : tl_val_undef(part.u.s, part.n);
        } else if (obj.t == V_LIST) {
            char *end;
            char num[32];
            size_t m = part.n < sizeof num - 1 ? part.n : sizeof num - 1;
            memcpy(num, part.u.s, m);
            num[m] = 0;
            long long k = strtoll(num, &end, 10);
            obj = (*end == 0 && m && k >= 0 && (size_t)k < obj.u.l->n) ? obj.u.l->v[k] : tl_val_undef(NULL, 0);
        } else
            return tl_val_undef(part.u.s, part.n);
        i = j + 1;
    }
    (void)st;
    return obj;
}

/* sort key comparison with Jinja's case-insensitive default */
typedef struct sort_ctx {
    tl_render_state *st;
    uint32_t pos;
    bool case_sensitive;
} sort_ctx;

static tl_val fold(tl_render_state *st, tl_val v, bool case_sensitive) {
    return (!case_sensitive && v.t == V_STR) ? change_case(st, v, 0) : v;
}

static void sort_vals(sort_ctx *c, tl_val *keys, tl_val *vals, size_t n, bool reverse) {
    /* insertion sort (stable); lists in templates are short. keys are already folded */
    for (size_t i = 1; i < n; i++) {
        tl_tpl_step(c->st, c->pos);
        for (size_t j = i; j > 0; j--) {
            int cmp = tl_val_compare(c->st, c->pos, keys[j - 1], keys[j]);
            if (reverse ? cmp >= 0 : cmp <= 0)
                break;
            tl_val t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
            t = vals[j];
            vals[j] = vals[j - 1];
            vals[j - 1] = t;
            tl_tpl_step(c->st, c->pos);
        }
    }
}

/* ---- tests ------------------------------------------------------------------------------- */

bool tl_tpl_test(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_str name, tl_val v, size_t argc,
                 const tl_val *argv) {
    tl_val a0 = argc ? argv[0] : tl_val_undef(NULL, 0);
    if (tl_str_eq(name, "defined"))
        return v.t != V_UNDEF;
    if (tl_str_eq(name, "undefined"))
        return v.t == V_UNDEF;
    if (tl_str_eq(name, "none"))
        return v.t == V_NONE;
    if (tl_str_eq(name, "string"))
        return v.t == V_STR;
    if (tl_str_eq(name, "mapping"))
        return v.t == V_DICT;
    if (tl_str_eq(name, "iterable"))
        return v.t == V_LIST || v.t == V_DICT || v.t == V_STR || v.t == V_UNDEF || v.t == V_NS;
    if (tl_str_eq(name, "sequence"))
        return v.t == V_LIST || v.t == V_DICT || v.t == V_STR || v.t == V_UNDEF;
    if (tl_str_eq(name, "number"))
        return v.t == V_INT || v.t == V_FLOAT || v.t == V_BOOL;
    if (tl_str_eq(name, "integer"))
        return v.t == V_INT;
    if (tl_str_eq(name, "float"))
        return v.t == V_FLOAT;
    if (tl_str_eq(name, "boolean"))
        return v.t == V_BOOL;
    if (tl_str_eq(name, "true"))
        return v.t == V_BOOL && v.u.i;
    if (tl_str_eq(name, "false"))
        return v.t == V_BOOL && !v.u.i;
    if (tl_str_eq(name, "callable")) /* jinja2's Undefined is callable (calling it raises) */
        return v.t == V_FUNC || v.t == V_UNDEF;
    if (tl_str_eq(name, "eq") || tl_str_eq(name, "equalto") || tl_str_eq(name, "=="))
        return tl_val_equal(v, a0);
    if (tl_str_eq(name, "ne") || tl_str_eq(name, "!="))
        return !tl_val_equal(v, a0);
    if (tl_str_eq(name, "lt") || tl_str_eq(name, "lessthan") || tl_str_eq(name, "<"))
        return tl_val_compare(st, pos, v, a0) < 0;
    if (tl_str_eq(name, "le") || tl_str_eq(name, "<="))
        return tl_val_compare(st, pos, v, a0) <= 0;
    if (tl_str_eq(name, "gt") || tl_str_eq(name, "greaterthan") || tl_str_eq(name, ">"))
        return tl_val_compare(st, pos, v, a0) > 0;
    if (tl_str_eq(name, "ge") || tl_str_eq(name, ">="))
        return tl_val_compare(st, pos, v, a0) >= 0;
    if (tl_str_eq(name, "in")) {
        if (a0.t == V_STR && v.t == V_STR)
            return find_sub(a0, 0, v) != (size_t)-1;
        if (a0.t == V_LIST) {
            for (size_t i = 0; i < a0.u.l->n; i++)
                if (tl_val_equal(a0.u.l->v[i], v))
                    return true;
            return false;
        }
        if (a0.t == V_DICT || a0.t == V_NS) {
            if (v.t == V_LIST || v.t == V_DICT || v.t == V_NS)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "unhashable type: '%s'", tl_val_type_name(v));
            return tl_dict_get(a0.u.d, v) != NULL;
        }
        return false;
    }
    if (tl_str_eq(name, "sameas"))
        return (v.t == a0.t && (v.t == V_NONE || v.t == V_UNDEF)) ||
               (v.t == a0.t && v.t == V_BOOL && v.u.i == a0.u.i) || (v.t == a0.t && v.t >= V_LIST && v.u.l == a0.u.l);
    if (tl_str_eq(name, "odd") || tl_str_eq(name, "even") || tl_str_eq(name, "divisibleby")) {
        if (v.t != V_INT && v.t != V_BOOL)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "test '%.*s' needs an integer", (int)name.n, name.s);
        if (tl_str_eq(name, "odd"))
            return (v.u.i % 2) != 0;
        if (tl_str_eq(name, "even"))
            return (v.u.i % 2) == 0;
        if ((a0.t != V_INT && a0.t != V_BOOL) || a0.u.i == 0)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "divisibleby needs a non-zero integer");
        return (v.u.i % a0.u.i) == 0;
    }
    if (tl_str_eq(name, "lower") || tl_str_eq(name, "upper")) {
        /* str.islower()/isupper(): no character of the other case, and at
         * least one cased character (so "" and "123" are neither) */
        if (v.t != V_STR)
            return false;
        bool up = tl_str_eq(name, "upper");
        tl_val same = change_case(st, v, up), other = change_case(st, v, !up);
        return same.n == v.n && !memcmp(same.u.s, v.u.s, v.n) && !(other.n == v.n && !memcmp(other.u.s, v.u.s, v.n));
    }
    if (tl_str_eq(name, "escaped"))
        return false;
    (void)sc;
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "no test named '%.*s'", (int)(name.n > 60 ? 60 : name.n), name.s);
}

/* ---- filters ------------------------------------------------------------------------------ */

static tl_val to_list(tl_render_state *st, uint32_t pos, tl_val v) {
    const tl_list *l = tl_tpl_iterate(st, pos, v);
    if (v.t == V_LIST && !v.flags)
        return v;
    tl_list *c = tl_list_new(st, l->n);
    if ((l->n * sizeof *c->v) != 0)
        memcpy(c->v, l->v, l->n * sizeof *c->v);
    c->n = l->n;
    return tl_val_list(c);
}

static tl_val tojson_filter(tl_render_state *st, uint32_t pos, tl_val v, const args *a) {
    tl_val ea = arg(a, 0, "ensure_ascii", tl_val_bool(false));
    tl_val ind = arg(a, 1, "indent", tl_val_none());
    tl_val seps = arg(a, 2, "separators", tl_val_none());
    tl_val sk = arg(a, 3, "sort_keys", tl_val_bool(false));
    int indent = -1;
    if (ind.t == V_INT || ind.t == V_BOOL)
        indent = ind.u.i < 0 ? 0 : ind.u.i > 64 ? 64 : (int)ind.u.i;
    else if (ind.t == V_STR) {
        /* an indent string: only spaces are supported */
        indent = (int)(ind.n > 64 ? 64 : ind.n);
    } else if (ind.t != V_NONE && ind.t != V_UNDEF)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "tojson: indent must be an integer");
    const char *item_sep = indent >= 0 ? "," : ", ", *key_sep = ": ";
    char seps_buf[2][64];
    if (seps.t == V_LIST && seps.u.l->n == 2 && seps.u.l->v[0].t == V_STR && seps.u.l->v[1].t == V_STR) {
        for (int k = 0; k < 2; k++) {
            tl_val s = seps.u.l->v[k];
            size_t m = s.n < 63 ? s.n : 63;
            memcpy(seps_buf[k], s.u.s, m);
            seps_buf[k][m] = 0;
        }
        item_sep = seps_buf[0];
        key_sep = seps_buf[1];
    }
    tl_strbuf *out = tl_tpl_capture_push(st);
    tl_val_tojson(st, pos, out, v, tl_val_truthy(ea), indent, item_sep, key_sep, tl_val_truthy(sk), 0);
    return tl_tpl_capture_pop(st);
}

static tl_val indent_filter(tl_render_state *st, uint32_t pos, tl_val v, const args *a) {
    /* jinja2 appends "\n" to its input, which only a string accepts */
    tl_val s = need_str(st, pos, v, "indent filter input");
    tl_val w = arg(a, 0, "width", tl_val_int(4));
    bool first = tl_val_truthy(arg(a, 1, "first", tl_val_bool(false)));
    bool blank = tl_val_truthy(arg(a, 2, "blank", tl_val_bool(false)));
    tl_val ind;
    if (w.t == V_STR)
        ind = w;
    else {
        int64_t n = (w.t == V_INT || w.t == V_BOOL) ? w.u.i : 4;
        if (n < 0)
            n = 0;
        if (n > 1024)
            tl_tpl_fail(st, pos, TL_ERR_LIMIT, "template: indent width over 1024");
        char *sp = tl_tpl_alloc(st, (size_t)n + 1);
        memset(sp, ' ', (size_t)n);
        ind = (tl_val){.t = V_STR, .n = (uint32_t)n};
        ind.u.s = sp;
    }
    /* lines as str.splitlines() of s + "\n" */
    tl_strbuf *out = tl_tpl_capture_push(st);
    if (first)
        tl_tpl_put(st, out, ind.u.s, ind.n);
    size_t i = 0, line = 0;
    while (i < s.n) {
        size_t j = i;
        while (j < s.n && s.u.s[j] != '\n' && s.u.s[j] != '\r')
            j++;
        size_t next = j;
        if (next < s.n)
            next += (s.u.s[j] == '\r' && j + 1 < s.n && s.u.s[j + 1] == '\n') ? 2 : 1;
        if (line) {
            tl_tpl_put(st, out, "\n", 1);
            if (blank || j > i)
                tl_tpl_put(st, out, ind.u.s, ind.n);
        }
        tl_tpl_put(st, out, s.u.s + i, j - i);
        line++;
        i = next;
        tl_tpl_step(st, pos);
    }
    return tl_tpl_capture_pop(st);
}

/* The number a string spells, blanks around it ignored: 1 integer (*i),
 * 2 float (*f), 0 neither. */
static int parse_number(tl_val v, long long *i, double *f) {
    tl_val s = strip(v, 3, tl_val_none());
    char buf[64];
    if (!s.n || s.n >= sizeof buf)
        return 0;
    memcpy(buf, s.u.s, s.n);
    buf[s.n] = 0;
    char *end;
    *i = strtoll(buf, &end, 10);
    if (*end == 0)
        return 1;
    *f = strtod(buf, &end);
    return *end == 0 ? 2 : 0;
}

static bool apply_test_by_name(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_val item, const args *a,
                               size_t first_arg) {
    if (a->argc <= first_arg)
        return tl_val_truthy(item);
    tl_val tn = need_str(st, pos, a->argv[first_arg], "test name");
    return tl_tpl_test(st, sc, pos, (tl_str){tn.u.s, tn.n}, item, a->argc - first_arg - 1, a->argv + first_arg + 1);
}

tl_val tl_tpl_filter(tl_render_state *st, tl_scope *sc, uint32_t pos, tl_str name, tl_val v, size_t argc,
                     const tl_val *argv, size_t kwc, const tl_str *kwn, const tl_val *kwv) {
    args A = {argc, argv, kwc, kwn, kwv}, *a = &A;
    tl_val none = tl_val_none();
    if (tl_str_eq(name, "tojson"))
        return tojson_filter(st, pos, v, a);
    if (tl_str_eq(name, "safe") || tl_str_eq(name, "forceescape_off"))
        return v;
    if (tl_str_eq(name, "string"))
        return tl_val_to_str(st, v);
    if (tl_str_eq(name, "trim"))
        return strip(tl_val_to_str(st, v), 3, arg(a, 0, "chars", none));
    if (tl_str_eq(name, "upper"))
        return change_case(st, tl_val_to_str(st, v), 1);
    if (tl_str_eq(name, "lower"))
        return change_case(st, tl_val_to_str(st, v), 0);
    if (tl_str_eq(name, "title"))
        return change_case(st, tl_val_to_str(st, v), 2);
    if (tl_str_eq(name, "capitalize")) {
        tl_val s = change_case(st, tl_val_to_str(st, v), 0);
        return change_case(st, s, 3);
    }
    if (tl_str_eq(name, "length") || tl_str_eq(name, "count")) {
        switch (v.t) {
        case V_STR: return tl_val_int((int64_t)tl_utf8_count(v.u.s, v.n));
        case V_LIST:
            if (v.flags & VF_GEN)
                break;
            return tl_val_int((int64_t)v.u.l->n);
        case V_DICT:
        case V_NS: return tl_val_int((int64_t)v.u.d->n);
        case V_UNDEF: return tl_val_int(0);
        default: break;
        }
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "object of type '%s' has no len()", tl_val_type_name(v));
    }
    if (tl_str_eq(name, "default") || tl_str_eq(name, "d")) {
        tl_val def = arg(a, 0, "default_value", tl_val_cstr_static(""));
        bool boolean = tl_val_truthy(arg(a, 1, "boolean", tl_val_bool(false)));
        if (v.t == V_UNDEF || (boolean && !tl_val_truthy(v)))
            return def;
        return v;
    }
    if (tl_str_eq(name, "join")) {
        tl_val sep = arg(a, 0, "d", tl_val_cstr_static(""));
        tl_val attr = arg(a, 1, "attribute", none);
        const tl_list *items = tl_tpl_iterate(st, pos, v);
        if (present(attr)) {
            tl_list *m = tl_list_new(st, items->n);
            for (size_t i = 0; i < items->n; i++)
                m->v[m->n++] = attr_path(st, items->v[i], attr);
            items = m;
        }
        return join(st, pos, items, tl_val_to_str(st, sep));
    }
    if (tl_str_eq(name, "replace")) {
        tl_val s = tl_val_to_str(st, v);
        tl_val old = tl_val_to_str(st, arg(a, 0, "old", tl_val_cstr_static("")));
        tl_val nw = tl_val_to_str(st, arg(a, 1, "new", tl_val_cstr_static("")));
        tl_val cnt = arg(a, 2, "count", none);
        return replace(st, pos, s, old, nw, cnt.t == V_INT ? cnt.u.i : -1);
    }
    if (tl_str_eq(name, "items")) {
        if (v.t == V_UNDEF)
            return tl_val_list(tl_list_new(st, 0));
        if (v.t != V_DICT && v.t != V_NS)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "items filter: can only get items from a mapping, not %s",
                        tl_val_type_name(v));
        tl_list *l = tl_list_new(st, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++)
            l->v[l->n++] = tuple2(st, v.u.d->k[i], v.u.d->v[i]);
        return gen(l);
    }
    if (tl_str_eq(name, "list"))
        return to_list(st, pos, v);
    if (tl_str_eq(name, "first") || tl_str_eq(name, "last")) {
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        if (!l->n)
            return tl_val_undef(NULL, 0);
        return tl_str_eq(name, "first") ? l->v[0] : l->v[l->n - 1];
    }
    if (tl_str_eq(name, "reverse")) {
        if (v.t == V_STR) {
            const tl_list *chars = tl_tpl_iterate(st, pos, v);
            tl_strbuf *out = tl_tpl_capture_push(st);
            for (size_t i = chars->n; i-- > 0;)
                tl_tpl_put(st, out, chars->v[i].u.s, chars->v[i].n);
            return tl_tpl_capture_pop(st);
        }
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        tl_list *r = tl_list_new(st, l->n);
        for (size_t i = l->n; i-- > 0;)
            r->v[r->n++] = l->v[i];
        return gen(r);
    }
    /* jinja2's map/select/reject family iterate their input only when it is
     * true: none, undefined, false, 0, "" and empty containers give nothing */
    if (tl_str_eq(name, "map")) {
        const tl_list *l = tl_val_truthy(v) ? tl_tpl_iterate(st, pos, v) : tl_list_new(st, 0);
        tl_list *r = tl_list_new(st, l->n);
        tl_val attr = arg(a, (size_t)-1, "attribute", tl_val_undef(NULL, 0));
        if (attr.t != V_UNDEF) {
            tl_val def = arg(a, (size_t)-1, "default", tl_val_undef(NULL, 0));
            for (size_t i = 0; i < l->n; i++) {
                tl_val x = attr_path(st, l->v[i], attr);
                r->v[r->n++] = x.t == V_UNDEF && def.t != V_UNDEF ? def : x;
            }
            return gen(r);
        }
        if (!argc)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "map needs a filter name or attribute=");
        tl_val fname = need_str(st, pos, argv[0], "map filter name");
        for (size_t i = 0; i < l->n; i++)
            r->v[r->n++] = tl_tpl_filter(st, sc, pos, (tl_str){fname.u.s, fname.n}, l->v[i], argc - 1, argv + 1,
                                         kwc, kwn, kwv);
        return gen(r);
    }
    if (tl_str_eq(name, "select") || tl_str_eq(name, "reject") || tl_str_eq(name, "selectattr") ||
        tl_str_eq(name, "rejectattr")) {
        bool want = name.s[0] == 's';
        bool by_attr = name.n > 6;
        const tl_list *l = tl_val_truthy(v) ? tl_tpl_iterate(st, pos, v) : tl_list_new(st, 0);
        tl_list *r = tl_list_new(st, 0);
        if (by_attr && !argc)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "%.*s needs an attribute name", (int)name.n, name.s);
        for (size_t i = 0; i < l->n; i++) {
            tl_val x = by_attr ? attr_path(st, l->v[i], argv[0]) : l->v[i];
            if (apply_test_by_name(st, sc, pos, x, a, by_attr ? 1 : 0) == want)
                tl_list_push(st, r, l->v[i]);
        }
        return gen(r);
    }
    if (tl_str_eq(name, "unique")) {
        bool cs = tl_val_truthy(arg(a, 0, "case_sensitive", tl_val_bool(false)));
        tl_val attr = arg(a, 1, "attribute", none);
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        tl_list *r = tl_list_new(st, 0), *seen = tl_list_new(st, 0);
        for (size_t i = 0; i < l->n; i++) {
            tl_val key = fold(st, present(attr) ? attr_path(st, l->v[i], attr) : l->v[i], cs);
            bool dup = false;
            for (size_t k = 0; k < seen->n && !dup; k++)
                dup = tl_val_equal(seen->v[k], key);
            tl_tpl_step(st, pos);
            if (!dup) {
                tl_list_push(st, seen, key);
                tl_list_push(st, r, l->v[i]);
            }
        }
        return gen(r);
    }
    if (tl_str_eq(name, "sort") || tl_str_eq(name, "min") || tl_str_eq(name, "max")) {
        bool is_sort = tl_str_eq(name, "sort");
        bool reverse = is_sort && tl_val_truthy(arg(a, 0, "reverse", tl_val_bool(false)));
        bool cs = tl_val_truthy(arg(a, is_sort ? 1 : 0, "case_sensitive", tl_val_bool(false)));
        tl_val attr = arg(a, is_sort ? 2 : 1, "attribute", none);
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        size_t n = l->n;
        tl_val *keys = tl_tpl_alloc(st, (n + 1) * sizeof *keys), *vals = tl_tpl_alloc(st, (n + 1) * sizeof *vals);
        for (size_t i = 0; i < n; i++) {
            vals[i] = l->v[i];
            keys[i] = fold(st, present(attr) ? attr_path(st, l->v[i], attr) : l->v[i], cs);
        }
        sort_ctx c = {st, pos, cs};
        sort_vals(&c, keys, vals, n, reverse);
        if (!is_sort) {
            if (!n)
                return tl_val_undef(NULL, 0);
            return tl_str_eq(name, "min") ? vals[0] : vals[n - 1];
        }
        tl_list *r = tl_list_new(st, n);
        if ((n * sizeof *vals) != 0)
            memcpy(r->v, vals, n * sizeof *vals);
        r->n = n;
        return tl_val_list(r);
    }
    if (tl_str_eq(name, "dictsort")) {
        if (v.t != V_DICT && v.t != V_NS)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "dictsort needs a mapping, not %s", tl_val_type_name(v));
        bool cs = tl_val_truthy(arg(a, 0, "case_sensitive", tl_val_bool(false)));
        tl_val by = arg(a, 1, "by", tl_val_cstr_static("key"));
        bool reverse = tl_val_truthy(arg(a, 2, "reverse", tl_val_bool(false)));
        bool by_value = by.t == V_STR && by.n == 5 && !memcmp(by.u.s, "value", 5);
        size_t n = v.u.d->n;
        tl_val *keys = tl_tpl_alloc(st, (n + 1) * sizeof *keys), *vals = tl_tpl_alloc(st, (n + 1) * sizeof *vals);
        for (size_t i = 0; i < n; i++) {
            vals[i] = tuple2(st, v.u.d->k[i], v.u.d->v[i]);
            keys[i] = fold(st, by_value ? v.u.d->v[i] : v.u.d->k[i], cs);
        }
        sort_ctx c = {st, pos, cs};
        sort_vals(&c, keys, vals, n, reverse);
        tl_list *r = tl_list_new(st, n);
        if ((n * sizeof *vals) != 0)
            memcpy(r->v, vals, n * sizeof *vals);
        r->n = n;
        return tl_val_list(r);
    }
    if (tl_str_eq(name, "indent"))
        return indent_filter(st, pos, v, a);
    if ((tl_str_eq(name, "int") || tl_str_eq(name, "float")) && v.t == V_UNDEF)
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "the %.*s filter's input is undefined", (int)name.n, name.s);
    if (tl_str_eq(name, "int")) {
        tl_val def = arg(a, 0, "default", tl_val_int(0));
        if (v.t == V_INT)
            return v;
        if (v.t == V_BOOL)
            return tl_val_int(v.u.i);
        if (v.t == V_FLOAT)
            return isfinite(v.u.f) && fabs(v.u.f) < 9.2e18 ? tl_val_int((int64_t)v.u.f) : def;
        double f;
        long long x;
        int kind = v.t == V_STR ? parse_number(v, &x, &f) : 0;
        if (kind == 1)
            return tl_val_int(x);
        if (kind == 2 && isfinite(f) && fabs(f) < 9.2e18)
            return tl_val_int((int64_t)f);
        return def;
    }
    if (tl_str_eq(name, "float")) {
        tl_val def = arg(a, 0, "default", tl_val_float(0));
        if (v.t == V_FLOAT)
            return v;
        if (v.t == V_INT || v.t == V_BOOL)
            return tl_val_float((double)v.u.i);
        double f;
        long long x;
        int kind = v.t == V_STR ? parse_number(v, &x, &f) : 0;
        if (kind)
            return tl_val_float(kind == 1 ? (double)x : f);
        return def;
    }
    if (tl_str_eq(name, "abs")) {
        if (v.t == V_INT || v.t == V_BOOL)
            return tl_val_int(v.u.i < 0 && v.u.i != INT64_MIN ? -v.u.i : v.u.i);
        if (v.t == V_FLOAT)
            return tl_val_float(fabs(v.u.f));
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "bad operand type for abs(): '%s'", tl_val_type_name(v));
    }
    if (tl_str_eq(name, "round")) {
        tl_val p = arg(a, 0, "precision", tl_val_int(0));
        tl_val m = arg(a, 1, "method", tl_val_cstr_static("common"));
        if (v.t != V_FLOAT && v.t != V_INT && v.t != V_BOOL)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "type %s doesn't define __round__ method", tl_val_type_name(v));
        double x = v.t == V_FLOAT ? v.u.f : (double)v.u.i;
        double k = pow(10, (double)(p.t == V_INT ? p.u.i : 0));
        double y = x * k;
        if (m.t == V_STR && tl_str_eq((tl_str){m.u.s, m.n}, "floor"))
            y = floor(y);
        else if (m.t == V_STR && tl_str_eq((tl_str){m.u.s, m.n}, "ceil"))
            y = ceil(y);
        else
            y = round(y);
        return tl_val_float(y / k);
    }
    if (tl_str_eq(name, "sum")) {
        tl_val attr = arg(a, 0, "attribute", none);
        tl_val acc = arg(a, 1, "start", tl_val_int(0));
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        for (size_t i = 0; i < l->n; i++) {
            tl_val x = present(attr) ? attr_path(st, l->v[i], attr) : l->v[i];
            if ((acc.t == V_INT || acc.t == V_BOOL) && (x.t == V_INT || x.t == V_BOOL))
                acc = tl_val_int(acc.u.i + x.u.i);
            else if ((acc.t == V_INT || acc.t == V_FLOAT || acc.t == V_BOOL) &&
                     (x.t == V_INT || x.t == V_FLOAT || x.t == V_BOOL))
                acc = tl_val_float((acc.t == V_FLOAT ? acc.u.f : (double)acc.u.i) +
                                   (x.t == V_FLOAT ? x.u.f : (double)x.u.i));
            else
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "sum: unsupported operand types");
        }
        return acc;
    }
    if (tl_str_eq(name, "escape") || tl_str_eq(name, "e") || tl_str_eq(name, "forceescape")) {
        tl_val s = tl_val_to_str(st, v);
        tl_strbuf *out = tl_tpl_capture_push(st);
        for (size_t i = 0; i < s.n; i++) {
            char c = s.u.s[i];
            const char *r = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;" :
                            c == '\'' ? "&#39;" : NULL;
            if (r)
                tl_tpl_put(st, out, r, strlen(r));
            else
                tl_tpl_put(st, out, &c, 1);
        }
        return tl_tpl_capture_pop(st);
    }
    if (tl_str_eq(name, "wordcount"))
        return tl_val_int(word_count(tl_val_to_str(st, v)));
    if (tl_str_eq(name, "batch")) {
        tl_val sz = arg(a, 0, "linecount", tl_val_int(1));
        if (sz.t != V_INT || sz.u.i <= 0)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "batch needs a positive size");
        const tl_list *l = tl_tpl_iterate(st, pos, v);
        tl_list *r = tl_list_new(st, 0), *cur = NULL;
        for (size_t i = 0; i < l->n; i++) {
            if (!cur || (int64_t)cur->n == sz.u.i) {
                cur = tl_list_new(st, 0);
                tl_list_push(st, r, tl_val_list(cur));
            }
            tl_list_push(st, cur, l->v[i]);
        }
        return tl_val_list(r);
    }
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "no filter named '%.*s'", (int)(name.n > 60 ? 60 : name.n), name.s);
}

/* ---- methods -------------------------------------------------------------------------------- */

static const char *const str_methods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
                                          "endswith", "replace", "upper", "lower", "title", "capitalize", "find",
                                          "rfind", "index", "count", "join", "isdigit", "isalpha", "isalnum",
                                          "isspace", "isupper", "islower", "format", "removeprefix", "removesuffix",
                                          NULL};
static const char *const list_methods[] = {"index", "count", "append", "pop", "extend", "insert", "remove",
                                           "clear", "sort", "reverse", "copy", NULL};
static const char *const dict_methods[] = {"items", "keys", "values", "get", "copy", "pop", "popitem", "update",
                                           "setdefault", "clear", NULL};

static bool in_names(const char *const *names, tl_str n) {
    for (int i = 0; names[i]; i++)
        if (tl_str_eq(n, names[i]))
            return true;
    return false;
}

bool tl_tpl_has_method(tl_val self, tl_str name) {
    switch (self.t) {
    case V_STR: return in_names(str_methods, name);
    case V_LIST: return in_names(list_methods, name);
    case V_DICT: return in_names(dict_methods, name);
    default: return false;
    }
}

static bool prefix_match(tl_render_state *st, uint32_t pos, tl_val s, tl_val p, bool suffix) {
    if (p.t == V_LIST && (p.flags & VF_TUPLE)) {
        for (size_t i = 0; i < p.u.l->n; i++)
            if (prefix_match(st, pos, s, p.u.l->v[i], suffix))
                return true;
        return false;
    }
    need_str(st, pos, p, suffix ? "endswith argument" : "startswith argument");
    if (p.n > s.n)
        return false;
    return !memcmp(suffix ? s.u.s + s.n - p.n : s.u.s, p.u.s, p.n);
}

static bool str_all(tl_val s, int kind) {
    if (!s.n)
        return false;
    bool cased = false;
    for (size_t i = 0; i < s.n;) {
        uint32_t c = tl_utf8_next(s.u.s, s.n, &i);
        utf8proc_category_t cat = c < 0x110000 ? utf8proc_category((utf8proc_int32_t)c) : UTF8PROC_CATEGORY_CN;
        bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        bool digit = cat == UTF8PROC_CATEGORY_ND;
        switch (kind) {
        case 0: if (!digit) return false; break;
        case 1: if (!letter) return false; break;
        case 2: if (!letter && !digit) return false; break;
        case 3: if (!tl_py_isspace(c)) return false; break;
        case 4: if (cat == UTF8PROC_CATEGORY_LL) return false; if (cat == UTF8PROC_CATEGORY_LU) cased = true; break;
        default: if (cat == UTF8PROC_CATEGORY_LU) return false; if (cat == UTF8PROC_CATEGORY_LL) cased = true; break;
        }
    }
    return kind < 4 ? true : cased;
}

/* str.format with {} / {0} / {name} fields (no format specs) */
static tl_val str_format(tl_render_state *st, uint32_t pos, tl_val s, const args *a) {
    tl_strbuf *out = tl_tpl_capture_push(st);
    size_t auto_i = 0;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.u.s[i];
        if (c == '{' && i + 1 < s.n && s.u.s[i + 1] == '{') {
            tl_tpl_put(st, out, "{", 1);
            i++;
            continue;
        }
        if (c == '}' && i + 1 < s.n && s.u.s[i + 1] == '}') {
            tl_tpl_put(st, out, "}", 1);
            i++;
            continue;
        }
        if (c != '{') {
            tl_tpl_put(st, out, &c, 1);
            continue;
        }
        size_t j = i + 1;
        while (j < s.n && s.u.s[j] != '}')
            j++;
        if (j >= s.n)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "Single '{' encountered in format string");
        tl_val field = substr(s, i + 1, j);
        tl_val v;
        if (!field.n)
            v = auto_i < a->argc ? a->argv[auto_i++] : tl_val_undef(NULL, 0);
        else if (field.u.s[0] >= '0' && field.u.s[0] <= '9') {
            size_t k = (size_t)atoi(field.u.s);
            v = k < a->argc ? a->argv[k] : tl_val_undef(NULL, 0);
        } else {
            v = tl_val_undef(NULL, 0);
            for (size_t k = 0; k < a->kwc; k++)
                if (a->kwn[k].n == field.n && !memcmp(a->kwn[k].s, field.u.s, field.n))
                    v = a->kwv[k];
        }
        if (v.t == V_UNDEF)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "format: no argument for field '{%.*s}'", (int)field.n, field.u.s);
        tl_val_str_to(st, out, v);
        i = j;
    }
    return tl_tpl_capture_pop(st);
}

tl_val tl_tpl_method(tl_render_state *st, uint32_t pos, tl_val self, tl_str name, size_t argc, const tl_val *argv,
                     size_t kwc, const tl_str *kwn, const tl_val *kwv) {
    args A = {argc, argv, kwc, kwn, kwv}, *a = &A;
    tl_val none = tl_val_none();
    if (self.t == V_STR) {
        if (tl_str_eq(name, "strip") || tl_str_eq(name, "lstrip") || tl_str_eq(name, "rstrip")) {
            int mode = name.s[0] == 'l' ? 1 : name.s[0] == 'r' ? 2 : 3;
            tl_val chars = arg(a, 0, "chars", none);
            if (chars.t != V_STR && chars.t != V_NONE)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "%.*s arg must be None or str", (int)name.n, name.s);
            return strip(self, mode, chars);
        }
        if (tl_str_eq(name, "split") || tl_str_eq(name, "rsplit")) {
            tl_val sep = arg(a, 0, "sep", none);
            tl_val mx = arg(a, 1, "maxsplit", tl_val_int(-1));
            if (sep.t != V_STR && sep.t != V_NONE)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "must be str or None, not %s", tl_val_type_name(sep));
            return split(st, pos, self, sep, mx.t == V_INT ? mx.u.i : -1, name.s[0] == 'r');
        }
        if (tl_str_eq(name, "splitlines")) {
            bool keep = tl_val_truthy(arg(a, 0, "keepends", tl_val_bool(false)));
            tl_list *l = tl_list_new(st, 0);
            size_t i = 0;
            while (i < self.n) {
                size_t j = i;
                while (j < self.n && self.u.s[j] != '\n' && self.u.s[j] != '\r')
                    j++;
                size_t next = j;
                if (next < self.n)
                    next += (self.u.s[j] == '\r' && j + 1 < self.n && self.u.s[j + 1] == '\n') ? 2 : 1;
                tl_list_push(st, l, substr(self, i, keep ? next : j));
                i = next;
            }
            return tl_val_list(l);
        }
        if (tl_str_eq(name, "startswith") || tl_str_eq(name, "endswith"))
            return tl_val_bool(prefix_match(st, pos, self, arg(a, 0, "prefix", tl_val_cstr_static("")),
                                            name.s[0] == 'e'));
        if (tl_str_eq(name, "replace")) {
            tl_val old = need_str(st, pos, arg(a, 0, "old", none), "replace argument");
            tl_val nw = need_str(st, pos, arg(a, 1, "new", none), "replace argument");
            tl_val cnt = arg(a, 2, "count", tl_val_int(-1));
            return replace(st, pos, self, old, nw, cnt.t == V_INT ? cnt.u.i : -1);
        }
        if (tl_str_eq(name, "upper"))
            return change_case(st, self, 1);
        if (tl_str_eq(name, "lower"))
            return change_case(st, self, 0);
        if (tl_str_eq(name, "title"))
            return change_case(st, self, 2);
        if (tl_str_eq(name, "capitalize"))
            return change_case(st, change_case(st, self, 0), 3);
        if (tl_str_eq(name, "find") || tl_str_eq(name, "rfind") || tl_str_eq(name, "index") ||
            tl_str_eq(name, "count")) {
            tl_val sub = need_str(st, pos, arg(a, 0, "sub", none), "substring");
            if (tl_str_eq(name, "count")) {
                int64_t c = 0;
                if (!sub.n)
                    return tl_val_int((int64_t)tl_utf8_count(self.u.s, self.n) + 1);
                for (size_t i = 0; (i = find_sub(self, i, sub)) != (size_t)-1; i += sub.n)
                    c++;
                return tl_val_int(c);
            }
            size_t k = name.s[0] == 'r' ? rfind_sub(self, sub) : find_sub(self, 0, sub);
            if (k == (size_t)-1) {
                if (name.s[0] == 'i')
                    tl_tpl_fail(st, pos, TL_ERR_INVALID, "substring not found");
                return tl_val_int(-1);
            }
            return tl_val_int((int64_t)tl_utf8_count(self.u.s, k));
        }
        if (tl_str_eq(name, "join"))
            return join(st, pos, tl_tpl_iterate(st, pos, arg(a, 0, "iterable", none)), self);
        if (tl_str_eq(name, "isdigit"))
            return tl_val_bool(str_all(self, 0));
        if (tl_str_eq(name, "isalpha"))
            return tl_val_bool(str_all(self, 1));
        if (tl_str_eq(name, "isalnum"))
            return tl_val_bool(str_all(self, 2));
        if (tl_str_eq(name, "isspace"))
            return tl_val_bool(str_all(self, 3));
        if (tl_str_eq(name, "isupper"))
            return tl_val_bool(str_all(self, 4));
        if (tl_str_eq(name, "islower"))
            return tl_val_bool(str_all(self, 5));
        if (tl_str_eq(name, "format"))
            return str_format(st, pos, self, a);
        if (tl_str_eq(name, "removeprefix") || tl_str_eq(name, "removesuffix")) {
            tl_val p = need_str(st, pos, arg(a, 0, "prefix", none), "argument");
            bool suffix = name.s[6] == 's';
            if (prefix_match(st, pos, self, p, suffix))
                return suffix ? substr(self, 0, self.n - p.n) : substr(self, p.n, self.n);
            return self;
        }
    } else if (self.t == V_LIST) {
        if (tl_str_eq(name, "index") || tl_str_eq(name, "count")) {
            tl_val x = arg(a, 0, "value", tl_val_undef(NULL, 0));
            int64_t c = 0;
            for (size_t i = 0; i < self.u.l->n; i++)
                if (tl_val_equal(self.u.l->v[i], x)) {
                    if (name.s[0] == 'i')
                        return tl_val_int((int64_t)i);
                    c++;
                }
            if (name.s[0] == 'i')
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "value is not in list");
            return tl_val_int(c);
        }
        if (tl_str_eq(name, "copy"))
            return to_list(st, pos, self);
    } else if (self.t == V_DICT) {
        const tl_dict *d = self.u.d;
        if (tl_str_eq(name, "items") || tl_str_eq(name, "keys") || tl_str_eq(name, "values")) {
            tl_list *l = tl_list_new(st, d->n);
            for (size_t i = 0; i < d->n; i++)
                l->v[l->n++] = name.s[0] == 'i' ? tuple2(st, d->k[i], d->v[i]) : name.s[0] == 'k' ? d->k[i] : d->v[i];
            return tl_val_list(l);
        }
        if (tl_str_eq(name, "get")) {
            tl_val *v = tl_dict_get(d, arg(a, 0, "key", none));
            return v ? *v : arg(a, 1, "default", none);
        }
        if (tl_str_eq(name, "copy")) {
            tl_dict *c = tl_dict_new(st, d->n);
            if ((d->n * sizeof *c->k) != 0)
                memcpy(c->k, d->k, d->n * sizeof *c->k);
            if ((d->n * sizeof *c->v) != 0)
                memcpy(c->v, d->v, d->n * sizeof *c->v);
            c->n = d->n;
            return tl_val_dict(c);
        }
    }
    if (tl_tpl_has_method(self, name))
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "SecurityError: access to attribute '%.*s' of '%s' object is unsafe.",
                    (int)name.n, name.s, tl_val_type_name(self));
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "'%s' object has no attribute '%.*s'", tl_val_type_name(self), (int)name.n,
                name.s);
}

/* ---- globals ---------------------------------------------------------------------------------- */

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_COUNT };
static const char *const global_names[G_COUNT] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};
static tl_func global_funcs[G_COUNT] = {
    {.kind = FN_BUILTIN, .builtin = G_RANGE},    {.kind = FN_BUILTIN, .builtin = G_NAMESPACE},
    {.kind = FN_BUILTIN, .builtin = G_DICT},     {.kind = FN_BUILTIN, .builtin = G_RAISE},
    {.kind = FN_BUILTIN, .builtin = G_STRFTIME},
};

bool tl_tpl_global(tl_str name, tl_val *out) {
    for (int i = 0; i < G_COUNT; i++)
        if (tl_str_eq(name, global_names[i])) {
            *out = (tl_val){.t = V_FUNC};
            out->u.fn = &global_funcs[i];
            return true;
        }
    return false;
}

tl_val tl_tpl_call_builtin(tl_render_state *st, uint32_t pos, int which, size_t argc, const tl_val *argv, size_t kwc,
                           const tl_str *kwn, const tl_val *kwv) {
    switch (which) {
    case G_RANGE: {
        int64_t p[3] = {0, 0, 1};
        if (argc < 1 || argc > 3)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "range expected 1 to 3 arguments, got %zu", argc);
        for (size_t i = 0; i < argc; i++)
            if (argv[i].t != V_INT && argv[i].t != V_BOOL)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "range: '%s' object cannot be interpreted as an integer",
                            tl_val_type_name(argv[i]));
        if (argc == 1)
            p[1] = argv[0].u.i;
        else {
            p[0] = argv[0].u.i;
            p[1] = argv[1].u.i;
            if (argc == 3)
                p[2] = argv[2].u.i;
        }
        if (p[2] == 0)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "range() arg 3 must not be zero");
        /* refuse up front what the work bound would stop anyway */
        double count = ((double)p[1] - (double)p[0]) / (double)p[2];
        if (count > (double)(st->max_steps - st->steps))
            tl_tpl_fail(st, pos, TL_ERR_LIMIT, "template: work limit exceeded (range of %.0f items)", count);
        tl_list *l = tl_list_new(st, 0);
        for (int64_t i = p[0]; p[2] > 0 ? i < p[1] : i > p[1]; i += p[2]) {
            tl_tpl_step(st, pos);
            tl_list_push(st, l, tl_val_int(i));
            if ((p[2] > 0 && i > INT64_MAX - p[2]) || (p[2] < 0 && i < INT64_MIN - p[2]))
                break;
        }
        return tl_val_list(l);
    }
    case G_NAMESPACE:
    case G_DICT: {
        tl_dict *d = tl_dict_new(st, kwc);
        for (size_t i = 0; i < argc; i++) {
            if (argv[i].t != V_DICT && argv[i].t != V_NS)
                tl_tpl_fail(st, pos, TL_ERR_INVALID, "%s() positional arguments must be mappings",
                            which == G_DICT ? "dict" : "namespace");
            for (size_t k = 0; k < argv[i].u.d->n; k++)
                tl_dict_set(st, d, argv[i].u.d->k[k], argv[i].u.d->v[k]);
        }
        for (size_t k = 0; k < kwc; k++)
            tl_dict_set(st, d, tl_val_str(st, kwn[k].s, kwn[k].n), kwv[k]);
        tl_val r = tl_val_dict(d);
        if (which == G_NAMESPACE)
            r.t = V_NS;
        return r;
    }
    case G_RAISE: {
        tl_val msg = argc ? tl_val_to_str(st, argv[0]) : tl_val_cstr_static("");
        tl_tpl_raise(st, msg.u.s, msg.n);
    }
    case G_STRFTIME: {
        if (argc != 1 || argv[0].t != V_STR)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "strftime_now takes one format string");
        time_t now = st->fixed_now ? (time_t)st->now_unix : time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char fmt[256], buf[512];
        if (argv[0].n >= sizeof fmt)
            tl_tpl_fail(st, pos, TL_ERR_INVALID, "strftime_now: format longer than 255 bytes");
        memcpy(fmt, argv[0].u.s, argv[0].n);
        fmt[argv[0].n] = 0;
        size_t n = strftime(buf, sizeof buf, fmt, &tm);
        return tl_val_str(st, buf, n);
    }
    default: tl_tpl_fail(st, pos, TL_ERR_INTERNAL, "bad builtin");
    }
}
