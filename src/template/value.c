/* value.c: the runtime value type with Python's semantics where templates
 * can see them: truthiness, ==, ordering, str(), repr(), json.dumps, and
 * strings measured and indexed in code points. Every value lives in the
 * render's arena; lists and dicts are never shared with the caller. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"
#include "util/error.h"

void *tl_tpl_alloc(tl_render_state *st, size_t n) {
    void *p = tl_arena_alloc(&st->arena, n);
    if (!p)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: memory limit exceeded (%zu bytes)", st->arena.limit);
    return p;
}

tl_val tl_val_str(tl_render_state *st, const char *s, size_t n) {
    if (n > UINT32_MAX)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: string longer than 4 GiB");
    char *p = tl_tpl_alloc(st, n + 1);
    if (n)
        if (n)
            memcpy(p, s, n);
    tl_val v = {.t = V_STR, .n = (uint32_t)n};
    v.u.s = p;
    return v;
}

tl_val tl_val_cstr_static(const char *s) {
    tl_val v = {.t = V_STR, .n = (uint32_t)strlen(s)};
    v.u.s = s;
    return v;
}

tl_val tl_val_int(int64_t i) {
    tl_val v = {.t = V_INT};
    v.u.i = i;
    return v;
}
tl_val tl_val_float(double f) {
    tl_val v = {.t = V_FLOAT};
    v.u.f = f;
    return v;
}
tl_val tl_val_bool(bool b) {
    tl_val v = {.t = V_BOOL};
    v.u.i = b;
    return v;
}
tl_val tl_val_none(void) { return (tl_val){.t = V_NONE}; }
tl_val tl_val_undef(const char *hint, size_t n) {
    tl_val v = {.t = V_UNDEF, .n = (uint32_t)(hint ? n : 0)};
    v.u.s = hint;
    return v;
}

tl_list *tl_list_new(tl_render_state *st, size_t cap) {
    tl_list *l = tl_tpl_alloc(st, sizeof *l);
    if (cap) {
        if (cap > (SIZE_MAX / 2) / sizeof(tl_val))
            tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: list too long");
        l->v = tl_tpl_alloc(st, cap * sizeof *l->v);
        l->cap = cap;
    }
    return l;
}

void *tl_tpl_resize(tl_render_state *st, const void *old, size_t n, size_t cap, size_t elem) {
    void *v = tl_tpl_alloc(st, cap * elem);
    if (n)
        memcpy(v, old, n * elem);
    return v;
}

void tl_list_push(tl_render_state *st, tl_list *l, tl_val v) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = tl_tpl_resize(st, l->v, l->n, l->cap, sizeof *l->v);
    }
    l->v[l->n++] = v;
}

tl_dict *tl_dict_new(tl_render_state *st, size_t cap) {
    tl_dict *d = tl_tpl_alloc(st, sizeof *d);
    if (cap) {
        d->k = tl_tpl_alloc(st, cap * sizeof *d->k);
        d->v = tl_tpl_alloc(st, cap * sizeof *d->v);
        d->cap = cap;
    }
    return d;
}

static bool key_eq(tl_val a, tl_val b) { return tl_val_equal(a, b); }

tl_val *tl_dict_get(const tl_dict *d, tl_val k) {
    for (size_t i = 0; i < d->n; i++)
        if (key_eq(d->k[i], k))
            return &d->v[i];
    return NULL;
}

tl_val *tl_dict_get_str(const tl_dict *d, const char *s, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == V_STR && d->k[i].n == n && !memcmp(d->k[i].u.s, s, n))
            return &d->v[i];
    return NULL;
}

void tl_dict_set(tl_render_state *st, tl_dict *d, tl_val k, tl_val v) {
    tl_val *p = tl_dict_get(d, k);
    if (p) {
        *p = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        d->k = tl_tpl_resize(st, d->k, d->n, cap, sizeof *d->k);
        d->v = tl_tpl_resize(st, d->v, d->n, cap, sizeof *d->v);
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
}

tl_val tl_val_list(tl_list *l) {
    tl_val v = {.t = V_LIST};
    v.u.l = l;
    return v;
}
tl_val tl_val_dict(tl_dict *d) {
    tl_val v = {.t = V_DICT};
    v.u.d = d;
    return v;
}

tl_val tl_val_from_json(tl_render_state *st, const json_t *j) {
    tl_tpl_step(st, 0);
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        tl_dict *d = tl_dict_new(st, json_object_size(j));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            /* keys are unique in a JSON object as jansson holds it: append directly */
            d->k[d->n] = tl_val_str(st, k, strlen(k));
            d->v[d->n] = tl_val_from_json(st, v);
            d->n++;
        }
        return tl_val_dict(d);
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        tl_list *l = tl_list_new(st, n);
        for (size_t i = 0; i < n; i++)
            l->v[l->n++] = tl_val_from_json(st, json_array_get(j, i));
        return tl_val_list(l);
    }
    case JSON_STRING: return tl_val_str(st, json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return tl_val_int((int64_t)json_integer_value(j));
    case JSON_REAL: return tl_val_float(json_real_value(j));
    case JSON_TRUE: return tl_val_bool(true);
    case JSON_FALSE: return tl_val_bool(false);
    default: return tl_val_none();
    }
}

/* ---- UTF-8 ------------------------------------------------------------------------ */

uint32_t tl_utf8_next(const char *s, size_t n, size_t *i) {
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || (size_t)len > left) {
        (*i)++;
        return c;
    }
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) {
            (*i)++;
            return c;
        }
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    *i += (size_t)len;
    return cp;
}

size_t tl_utf8_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
        } else
            tl_utf8_next(s, n, &i);
        c++;
    }
    return c;
}

size_t tl_utf8_offset(const char *s, size_t n, size_t idx) {
    size_t i = 0;
    for (size_t c = 0; c < idx && i < n; c++) {
        if ((unsigned char)s[i] < 0x80)
            i++;
        else
            tl_utf8_next(s, n, &i);
    }
    return i;
}

bool tl_py_isspace(uint32_t c) {
    if (c <= 0x20)
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ---- truthiness, equality, ordering --------------------------------------------------- */

bool tl_val_truthy(tl_val v) {
    switch (v.t) {
    case V_UNDEF:
    case V_NONE: return false;
    case V_BOOL:
    case V_INT: return v.u.i != 0;
    case V_FLOAT: return v.u.f != 0;
    case V_STR: return v.n != 0;
    case V_LIST: return (v.flags & VF_GEN) || v.u.l->n != 0;
    case V_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

static bool is_num(tl_val v) { return v.t == V_BOOL || v.t == V_INT || v.t == V_FLOAT; }
static double num_d(tl_val v) { return v.t == V_FLOAT ? v.u.f : (double)v.u.i; }

bool tl_val_equal(tl_val a, tl_val b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != V_FLOAT && b.t != V_FLOAT)
            return a.u.i == b.u.i;
        return num_d(a) == num_d(b);
    }
    if (a.t != b.t)
        return false;
    switch (a.t) {
    case V_UNDEF:
    case V_NONE: return true;
    case V_STR: return a.n == b.n && !memcmp(a.u.s, b.u.s, a.n);
    case V_LIST:
        if ((a.flags | b.flags) & VF_GEN)
            return a.u.l == b.u.l;
        if ((a.flags & VF_TUPLE) != (b.flags & VF_TUPLE) || a.u.l->n != b.u.l->n)
            return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!tl_val_equal(a.u.l->v[i], b.u.l->v[i]))
                return false;
        return true;
    case V_DICT:
        if (a.u.d->n != b.u.d->n)
            return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            tl_val *o = tl_dict_get(b.u.d, a.u.d->k[i]);
            if (!o || !tl_val_equal(a.u.d->v[i], *o))
                return false;
        }
        return true;
    case V_NS: return a.u.d == b.u.d;
    case V_FUNC: return a.u.fn == b.u.fn;
    case V_LOOP: return a.u.lp == b.u.lp;
    default: return false;
    }
}

const char *tl_val_type_name(tl_val v) {
    switch (v.t) {
    case V_UNDEF: return "Undefined";
    case V_NONE: return "NoneType";
    case V_BOOL: return "bool";
    case V_INT: return "int";
    case V_FLOAT: return "float";
    case V_STR: return "str";
    case V_LIST: return v.flags & VF_GEN ? "generator" : v.flags & VF_TUPLE ? "tuple" : "list";
    case V_DICT: return "dict";
    case V_NS: return "Namespace";
    case V_FUNC: return "function";
    default: return "LoopContext";
    }
}

int tl_val_compare(tl_render_state *st, uint32_t pos, tl_val a, tl_val b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != V_FLOAT && b.t != V_FLOAT)
            return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        double x = num_d(a), y = num_d(b);
        return x < y ? -1 : x > y;
    }
    if (a.t == V_STR && b.t == V_STR) {
        size_t m = a.n < b.n ? a.n : b.n;
        int c = memcmp(a.u.s, b.u.s, m);
        return c ? (c < 0 ? -1 : 1) : (a.n < b.n ? -1 : a.n > b.n);
    }
    if (a.t == V_LIST && b.t == V_LIST && (a.flags & VF_TUPLE) == (b.flags & VF_TUPLE)) {
        size_t m = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < m; i++) {
            if (tl_val_equal(a.u.l->v[i], b.u.l->v[i]))
                continue;
            return tl_val_compare(st, pos, a.u.l->v[i], b.u.l->v[i]);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "'<' not supported between instances of '%s' and '%s'", tl_val_type_name(a),
                tl_val_type_name(b));
}

/* ---- str() and repr() ------------------------------------------------------------------ */

void tl_tpl_put(tl_render_state *st, tl_strbuf *out, const char *s, size_t n) {
    if (out->len + n > st->max_output)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: output larger than %zu bytes", st->max_output);
    if (!tl_strbuf_append(out, s, n))
        tl_tpl_fail(st, 0, TL_ERR_NOMEM, "template: out of memory");
}

static void putz(tl_render_state *st, tl_strbuf *out, const char *s) { tl_tpl_put(st, out, s, strlen(s)); }

/* Python's repr(float): the shortest digits that round-trip; fixed notation
 * for exponents in [-4, 16), else d.ddde+XX. */
static void float_repr(double f, char *buf, size_t cap, bool json) {
    if (isnan(f)) {
        snprintf(buf, cap, json ? "NaN" : "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, cap, json ? (f < 0 ? "-Infinity" : "Infinity") : (f < 0 ? "-inf" : "inf"));
        return;
    }
    char tmp[64];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp: [-]d.ddde[+-]XX */
    char digits[32];
    size_t nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    size_t o = 0;
    if (neg)
        buf[o++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            buf[o++] = '0';
            buf[o++] = '.';
            for (int k = 0; k < -exp - 1; k++)
                buf[o++] = '0';
            for (size_t k = 0; k < nd; k++)
                buf[o++] = digits[k];
        } else {
            for (int k = 0; k <= exp; k++)
                buf[o++] = (size_t)k < nd ? digits[k] : '0';
            buf[o++] = '.';
            if ((size_t)exp + 1 < nd)
                for (size_t k = (size_t)exp + 1; k < nd; k++)
                    buf[o++] = digits[k];
            else
                buf[o++] = '0';
        }
        buf[o] = 0;
    } else {
        buf[o++] = digits[0];
        if (nd > 1) {
            buf[o++] = '.';
            for (size_t k = 1; k < nd; k++)
                buf[o++] = digits[k];
        }
        snprintf(buf + o, cap - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

static void str_repr(tl_render_state *st, tl_strbuf *out, const char *s, size_t n) {
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    tl_tpl_put(st, out, &q, 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        if (c == '\\')
            esc = "\\\\";
        else if (c == (unsigned char)q)
            esc = q == '\'' ? "\\'" : "\\\"";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(hex, sizeof hex, "\\x%02x", c);
            esc = hex;
        }
        if (esc) {
            tl_tpl_put(st, out, s + i - run, run);
            run = 0;
            putz(st, out, esc);
        } else
            run++;
    }
    tl_tpl_put(st, out, s + n - run, run);
    tl_tpl_put(st, out, &q, 1);
}

static void repr_inner(tl_render_state *st, tl_strbuf *out, tl_val v, int depth);

static void str_inner(tl_render_state *st, tl_strbuf *out, tl_val v, int depth) {
    char buf[64];
    switch (v.t) {
    case V_UNDEF: return;
    case V_NONE: putz(st, out, "None"); return;
    case V_BOOL: putz(st, out, v.u.i ? "True" : "False"); return;
    case V_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)v.u.i);
        putz(st, out, buf);
        return;
    case V_FLOAT:
        float_repr(v.u.f, buf, sizeof buf, false);
        putz(st, out, buf);
        return;
    case V_STR: tl_tpl_put(st, out, v.u.s, v.n); return;
    default: repr_inner(st, out, v, depth);
    }
}

static void repr_inner(tl_render_state *st, tl_strbuf *out, tl_val v, int depth) {
    if (depth > st->max_depth)
        tl_tpl_fail(st, 0, TL_ERR_LIMIT, "template: value nested too deeply to print");
    tl_tpl_step(st, 0);
    switch (v.t) {
    case V_STR: str_repr(st, out, v.u.s, v.n); return;
    case V_UNDEF: return;
    case V_LIST: {
        if (v.flags & VF_GEN) {
            putz(st, out, "<generator object>");
            return;
        }
        bool tuple = v.flags & VF_TUPLE;
        putz(st, out, tuple ? "(" : "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                putz(st, out, ", ");
            repr_inner(st, out, v.u.l->v[i], depth + 1);
        }
        putz(st, out, tuple ? (v.u.l->n == 1 ? ",)" : ")") : "]");
        return;
    }
    case V_DICT:
    case V_NS: {
        putz(st, out, v.t == V_NS ? "<Namespace {" : "{");
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i)
                putz(st, out, ", ");
            repr_inner(st, out, v.u.d->k[i], depth + 1);
            putz(st, out, ": ");
            repr_inner(st, out, v.u.d->v[i], depth + 1);
        }
        putz(st, out, v.t == V_NS ? "}>" : "}");
        return;
    }
    case V_FUNC: putz(st, out, "<function>"); return;
    case V_LOOP: putz(st, out, "<LoopContext>"); return;
    default: str_inner(st, out, v, depth);
    }
}

void tl_val_str_to(tl_render_state *st, tl_strbuf *out, tl_val v) { str_inner(st, out, v, 0); }
void tl_val_repr_to(tl_render_state *st, tl_strbuf *out, tl_val v) { repr_inner(st, out, v, 0); }

tl_val tl_val_to_str(tl_render_state *st, tl_val v) {
    if (v.t == V_STR)
        return v;
    if (v.t == V_UNDEF)
        return tl_val_cstr_static("");
    tl_strbuf *b = tl_tpl_capture_push(st);
    str_inner(st, b, v, 0);
    return tl_tpl_capture_pop(st);
}

/* ---- json.dumps ------------------------------------------------------------------------- */

static void json_str(tl_render_state *st, tl_strbuf *out, const char *s, size_t n, bool ensure_ascii) {
    putz(st, out, "\"");
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        char esc[16];
        const char *e = NULL;
        size_t adv = 1;
        if (c == '"')
            e = "\\\"";
        else if (c == '\\')
            e = "\\\\";
        else if (c == '\n')
            e = "\\n";
        else if (c == '\r')
            e = "\\r";
        else if (c == '\t')
            e = "\\t";
        else if (c == '\b')
            e = "\\b";
        else if (c == '\f')
            e = "\\f";
        else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            e = esc;
        } else if (c >= 0x80 && ensure_ascii) {
            size_t j = i;
            uint32_t cp = tl_utf8_next(s, n, &j);
            adv = j - i;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else
                snprintf(esc, sizeof esc, "\\u%04x", cp);
            e = esc;
        }
        if (e) {
            tl_tpl_put(st, out, s + i - run, run);
            run = 0;
            putz(st, out, e);
            i += adv;
        } else {
            run++;
            i++;
        }
    }
    tl_tpl_put(st, out, s + n - run, run);
    putz(st, out, "\"");
}

static void json_newline(tl_render_state *st, tl_strbuf *out, int indent, int level) {
    putz(st, out, "\n");
    for (int k = 0; k < indent * level; k++)
        putz(st, out, " ");
}

static void json_key(tl_render_state *st, uint32_t pos, tl_strbuf *out, tl_val k, bool ensure_ascii) {
    char buf[64];
    switch (k.t) {
    case V_STR: json_str(st, out, k.u.s, k.n, ensure_ascii); return;
    case V_INT: snprintf(buf, sizeof buf, "\"%lld\"", (long long)k.u.i); break;
    case V_BOOL: snprintf(buf, sizeof buf, "\"%s\"", k.u.i ? "true" : "false"); break;
    case V_NONE: snprintf(buf, sizeof buf, "\"null\""); break;
    case V_FLOAT: {
        char f[48];
        float_repr(k.u.f, f, sizeof f, true);
        snprintf(buf, sizeof buf, "\"%s\"", f);
        break;
    }
    default:
        tl_tpl_fail(st, pos, TL_ERR_INVALID, "keys must be str, int, float, bool or None, not %s",
                    tl_val_type_name(k));
    }
    putz(st, out, buf);
}

void tl_val_tojson(tl_render_state *st, uint32_t pos, tl_strbuf *out, tl_val v, bool ensure_ascii, int indent,
                   const char *item_sep, const char *key_sep, bool sort_keys, int level) {
    if (level > st->max_depth)
        tl_tpl_fail(st, pos, TL_ERR_LIMIT, "template: value nested too deeply for tojson");
    tl_tpl_step(st, pos);
    char buf[64];
    switch (v.t) {
    case V_NONE: putz(st, out, "null"); return;
    case V_BOOL: putz(st, out, v.u.i ? "true" : "false"); return;
    case V_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)v.u.i);
        putz(st, out, buf);
        return;
    case V_FLOAT:
        float_repr(v.u.f, buf, sizeof buf, true);
        putz(st, out, buf);
        return;
    case V_STR: json_str(st, out, v.u.s, v.n, ensure_ascii); return;
    case V_LIST: {
        if (v.flags & VF_GEN)
            break;
        if (!v.u.l->n) {
            putz(st, out, "[]");
            return;
        }
        putz(st, out, "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                putz(st, out, item_sep);
            if (indent >= 0)
                json_newline(st, out, indent, level + 1);
            tl_val_tojson(st, pos, out, v.u.l->v[i], ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent >= 0)
            json_newline(st, out, indent, level);
        putz(st, out, "]");
        return;
    }
    case V_DICT: {
        const tl_dict *d = v.u.d;
        if (!d->n) {
            putz(st, out, "{}");
            return;
        }
        size_t *order = tl_tpl_alloc(st, d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++)
            order[i] = i;
        if (sort_keys) /* insertion sort: stable, and dicts in templates are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && tl_val_compare(st, pos, d->k[order[j - 1]], d->k[order[j]]) > 0; j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        putz(st, out, "{");
        for (size_t i = 0; i < d->n; i++) {
            if (i)
                putz(st, out, item_sep);
            if (indent >= 0)
                json_newline(st, out, indent, level + 1);
            json_key(st, pos, out, d->k[order[i]], ensure_ascii);
            putz(st, out, key_sep);
            tl_val_tojson(st, pos, out, d->v[order[i]], ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent >= 0)
            json_newline(st, out, indent, level);
        putz(st, out, "}");
        return;
    }
    default: break;
    }
    tl_tpl_fail(st, pos, TL_ERR_INVALID, "Object of type %s is not JSON serializable", tl_val_type_name(v));
}
