/* lex.c: template source -> tokens, with Jinja's whitespace rules applied to
 * the text between tags (trim_blocks, lstrip_blocks, '-' and '+' markers).
 *
 * The source has its newlines normalised to "\n" and one trailing newline
 * dropped before lexing (Jinja's keep_trailing_newline=False), so offsets
 * here are offsets into that normalised text; lines and columns are the
 * same as the original's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"
#include "util/error.h"

/* ---- helpers --------------------------------------------------------------- */

void tl_tpl_linecol(const char *src, size_t len, size_t pos, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t i = 0; i < pos && i < len; i++) {
        if (src[i] == '\n')
            l++, c = 1;
        else if (((unsigned char)src[i] & 0xC0) != 0x80)
            c++;
    }
    *line = l;
    *col = c;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

typedef struct lexer {
    const char *s;
    size_t n, i;
    tl_arena *a;
    tl_toklist *out;
    tl_error *err;
} lexer;

static tl_status lex_error(lexer *L, size_t pos, const char *msg) {
    int line, col;
    tl_tpl_linecol(L->s, L->n, pos, &line, &col);
    return tl_error_set(L->err, TL_ERR_FORMAT, "template:%d:%d: %s", line, col, msg);
}

static tl_status push(lexer *L, tl_tok t) {
    if (L->out->n == L->out->cap) {
        size_t cap = L->out->cap ? L->out->cap * 2 : 256;
        tl_tok *v = realloc(L->out->v, cap * sizeof *v);
        if (!v)
            return tl_error_set(L->err, TL_ERR_NOMEM, "template: out of memory");
        L->out->v = v;
        L->out->cap = cap;
    }
    L->out->v[L->out->n++] = t;
    return TL_OK;
}

static tl_status push_simple(lexer *L, tl_tok_kind k, size_t pos, const char *text, size_t len) {
    tl_tok t = {.kind = k, .pos = (uint32_t)pos, .text = text, .len = len};
    return push(L, t);
}

static size_t find(const char *s, size_t n, size_t from, const char *pat) {
    size_t m = strlen(pat);
    for (size_t i = from; i + m <= n; i++)
        if (s[i] == pat[0] && !memcmp(s + i, pat, m))
            return i;
    return (size_t)-1;
}

/* Emits the text before a tag. sign is the tag's '-', '+' or 0; lstrip
 * applies to block and comment tags (not {{). */
static tl_status emit_text(lexer *L, size_t from, size_t to, char sign, bool lstrip_tag, bool line_starting) {
    size_t end = to;
    if (sign == '-') {
        while (end > from && is_ws(L->s[end - 1]))
            end--;
    } else if (sign != '+' && lstrip_tag) {
        size_t lpos = end;
        while (lpos > from && L->s[lpos - 1] != '\n')
            lpos--;
        if (lpos > from || line_starting) {
            bool all_ws = lpos < end;
            for (size_t k = lpos; k < end; k++)
                if (!is_ws(L->s[k]))
                    all_ws = false;
            if (all_ws)
                end = lpos;
        }
    }
    if (end > from)
        return push_simple(L, TK_DATA, from, L->s + from, end - from);
    return TL_OK;
}

/* Skips what follows a tag end: all whitespace after '-', one newline after
 * a block or comment end (trim_blocks). Returns whether the consumed text ends
 * in a newline (Jinja's line_starting). */
static bool after_end(lexer *L, char sign, bool block) {
    bool nl = false;
    if (sign == '-') {
        while (L->i < L->n && is_ws(L->s[L->i]))
            nl = L->s[L->i++] == '\n';
    } else if (sign != '+' && block && L->i < L->n && L->s[L->i] == '\n') {
        L->i++;
        nl = true;
    }
    return nl;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* A string literal starting at L->i (the quote): decodes Python escapes. */
static tl_status lex_string(lexer *L) {
    size_t start = L->i;
    char q = L->s[L->i++];
    size_t j = L->i;
    while (j < L->n && L->s[j] != q) {
        if (L->s[j] == '\\' && j + 1 < L->n)
            j++;
        j++;
    }
    if (j >= L->n)
        return lex_error(L, start, "unterminated string");
    char *o = tl_arena_alloc(L->a, j - L->i + 1);
    if (!o)
        return tl_error_set(L->err, TL_ERR_NOMEM, "template: out of memory");
    size_t k = 0;
    for (size_t p = L->i; p < j; p++) {
        char c = L->s[p];
        if (c != '\\') {
            o[k++] = c;
            continue;
        }
        char e = L->s[++p];
        switch (e) {
        case '\n': break; /* line continuation */
        case '\\': o[k++] = '\\'; break;
        case '\'': o[k++] = '\''; break;
        case '"': o[k++] = '"'; break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'v': o[k++] = '\v'; break;
        case 'x': case 'u': case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int d = 0; d < nd; d++) {
                int h = p + 1 + d < j ? hexval(L->s[p + 1 + d]) : -1;
                if (h < 0)
                    return lex_error(L, p - 1, "truncated \\x, \\u or \\U escape in string");
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp > 0x10FFFF)
                return lex_error(L, p - 1, "\\U escape out of range");
            p += (size_t)nd;
            /* the escape is at most 10 bytes; UTF-8 at most 4 */
            k += put_utf8(o + k, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int d = 0; d < 2 && p + 1 < j && L->s[p + 1] >= '0' && L->s[p + 1] <= '7'; d++)
                    cp = cp * 8 + (uint32_t)(L->s[++p] - '0');
                k += put_utf8(o + k, cp);
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
        }
    }
    L->i = j + 1;
    tl_tok t = {.kind = TK_STRING, .pos = (uint32_t)start, .text = o, .len = k};
    return push(L, t);
}

static size_t digits(const char *s, size_t n, size_t i) {
    /* (\d+_)*\d+ ; returns the end, or i when none */
    size_t j = i;
    if (j >= n || !is_digit(s[j]))
        return i;
    while (j < n && is_digit(s[j]))
        j++;
    while (j + 1 < n && s[j] == '_' && is_digit(s[j + 1])) {
        j++;
        while (j < n && is_digit(s[j]))
            j++;
    }
    return j;
}

static tl_status lex_number(lexer *L) {
    size_t start = L->i, j = digits(L->s, L->n, L->i);
    bool is_float = false;
    if (j + 1 < L->n && L->s[j] == '.' && is_digit(L->s[j + 1])) {
        j = digits(L->s, L->n, j + 1);
        is_float = true;
    }
    if (j < L->n && (L->s[j] == 'e' || L->s[j] == 'E')) {
        size_t k = j + 1;
        if (k < L->n && (L->s[k] == '+' || L->s[k] == '-'))
            k++;
        size_t e = digits(L->s, L->n, k);
        if (e > k) {
            j = e;
            is_float = true;
        }
    }
    char buf[128];
    size_t m = 0;
    for (size_t p = start; p < j && m + 1 < sizeof buf; p++)
        if (L->s[p] != '_')
            buf[m++] = L->s[p];
    buf[m] = 0;
    tl_tok t = {.pos = (uint32_t)start, .text = L->s + start, .len = j - start};
    if (is_float) {
        t.kind = TK_FLOAT;
        t.fval = strtod(buf, NULL);
    } else {
        t.kind = TK_INT;
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (m > 18 || v > INT64_MAX)
            return lex_error(L, start, "integer literal too large");
        t.ival = (int64_t)v;
    }
    L->i = j;
    return push(L, t);
}

static const char *const ops2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char ops1[] = "+-/*%~[](){}<>=.:|,;";

/* Tokens inside {{ }} or {% %} up to and including the end tag. */
static tl_status lex_tag(lexer *L, bool block, size_t tag_start, char *end_sign) {
    const char *close = block ? "%}" : "}}";
    int balance = 0;
    for (;;) {
        if (L->i >= L->n)
            return lex_error(L, tag_start, block ? "unclosed block tag: expected '%}'" : "unclosed '{{': expected '}}'");
        const char *p = L->s + L->i;
        size_t left = L->n - L->i;
        if (balance == 0) {
            char sign = 0;
            size_t skip = 0;
            if (left >= 3 && (p[0] == '-' || p[0] == '+') && !memcmp(p + 1, close, 2))
                sign = p[0], skip = 3;
            else if (left >= 2 && !memcmp(p, close, 2))
                skip = 2;
            if (skip) {
                tl_status st = push_simple(L, block ? TK_BLOCK_END : TK_VAR_END, L->i, p, skip);
                L->i += skip;
                *end_sign = sign;
                return st;
            }
        }
        char c = *p;
        if (is_ws(c)) {
            L->i++;
            continue;
        }
        tl_status st;
        if (is_digit(c))
            st = lex_number(L);
        else if (is_name_start(c)) {
            size_t j = L->i;
            while (j < L->n && is_name_char(L->s[j]))
                j++;
            st = push_simple(L, TK_NAME, L->i, p, j - L->i);
            L->i = j;
        } else if (c == '\'' || c == '"')
            st = lex_string(L);
        else {
            size_t m = 0;
            for (int k = 0; ops2[k]; k++)
                if (left >= 2 && p[0] == ops2[k][0] && p[1] == ops2[k][1])
                    m = 2;
            if (!m && strchr(ops1, c) && c)
                m = 1;
            if (!m) {
                char msg[64];
                snprintf(msg, sizeof msg, "unexpected character '%c'", c >= 32 && c < 127 ? c : '?');
                return lex_error(L, L->i, msg);
            }
            if (m == 1 && (c == '(' || c == '[' || c == '{'))
                balance++;
            else if (m == 1 && (c == ')' || c == ']' || c == '}')) {
                if (balance == 0)
                    return lex_error(L, L->i, "unexpected closing bracket");
                balance--;
            }
            st = push_simple(L, TK_OP, L->i, p, m);
            L->i += m;
        }
        if (st)
            return st;
    }
}

/* {% raw %} ... {% endraw %} starting right after "{%" + sign: returns true
 * (and sets *name_end past "%}") when this tag is a raw opener. */
static bool raw_opener(lexer *L, size_t i, size_t *tag_end, char *end_sign) {
    while (i < L->n && is_ws(L->s[i]))
        i++;
    if (L->n - i < 3 || memcmp(L->s + i, "raw", 3) || (i + 3 < L->n && is_name_char(L->s[i + 3])))
        return false;
    i += 3;
    while (i < L->n && is_ws(L->s[i]))
        i++;
    char sign = 0;
    if (i < L->n && (L->s[i] == '-' || L->s[i] == '+'))
        sign = L->s[i++];
    if (L->n - i < 2 || memcmp(L->s + i, "%}", 2))
        return false;
    *tag_end = i + 2;
    *end_sign = sign;
    return true;
}

/* Finds "{%[-+]? endraw [-+]?%}" from L->i: sets its start, the sign after
 * "{%", the sign before "%}" and the end. */
static bool find_endraw(lexer *L, size_t *start, char *open_sign, size_t *end, char *close_sign) {
    for (size_t i = L->i; (i = find(L->s, L->n, i, "{%")) != (size_t)-1; i++) {
        size_t j = i + 2;
        char os = 0;
        if (j < L->n && (L->s[j] == '-' || L->s[j] == '+'))
            os = L->s[j++];
        while (j < L->n && is_ws(L->s[j]))
            j++;
        if (L->n - j < 6 || memcmp(L->s + j, "endraw", 6))
            continue;
        j += 6;
        while (j < L->n && is_ws(L->s[j]))
            j++;
        char cs = 0;
        if (j < L->n && (L->s[j] == '-' || L->s[j] == '+'))
            cs = L->s[j++];
        if (L->n - j < 2 || memcmp(L->s + j, "%}", 2))
            continue;
        *start = i;
        *open_sign = os;
        *end = j + 2;
        *close_sign = cs;
        return true;
    }
    return false;
}

tl_status tl_tpl_lex(const char *src, size_t len, tl_arena *a, tl_toklist *out, tl_error *err) {
    lexer L = {.s = src, .n = len, .a = a, .out = out, .err = err};
    bool line_starting = true;
    tl_status st = TL_OK;
    while (L.i < L.n && !st) {
        size_t b = L.i, t = (size_t)-1;
        for (size_t k = L.i; k + 1 < L.n; k++)
            if (L.s[k] == '{' && (L.s[k + 1] == '{' || L.s[k + 1] == '%' || L.s[k + 1] == '#')) {
                t = k;
                break;
            }
        if (t == (size_t)-1) {
            st = push_simple(&L, TK_DATA, b, L.s + b, L.n - b);
            break;
        }
        char kind = L.s[t + 1];
        char sign = t + 2 < L.n && (L.s[t + 2] == '-' || L.s[t + 2] == '+') ? L.s[t + 2] : 0;
        size_t after = t + 2 + (sign ? 1 : 0);
        if ((st = emit_text(&L, b, t, sign, kind != '{', line_starting)))
            break;
        char end_sign = 0;
        size_t raw_end;
        if (kind == '#') {
            size_t e = find(L.s, L.n, after, "#}");
            if (e == (size_t)-1) {
                st = lex_error(&L, t, "unclosed comment: expected '#}'");
                break;
            }
            if (e > after && (L.s[e - 1] == '-' || L.s[e - 1] == '+'))
                end_sign = L.s[e - 1];
            L.i = e + 2;
            line_starting = after_end(&L, end_sign, true);
        } else if (kind == '%' && raw_opener(&L, after, &raw_end, &end_sign)) {
            L.i = raw_end;
            after_end(&L, end_sign, true);
            size_t rs, re;
            char os, cs;
            if (!find_endraw(&L, &rs, &os, &re, &cs)) {
                st = lex_error(&L, t, "unclosed raw block: expected '{% endraw %}'");
                break;
            }
            if ((st = emit_text(&L, L.i, rs, os, true, false)))
                break;
            L.i = re;
            line_starting = after_end(&L, cs, true);
        } else {
            bool block = kind == '%';
            if ((st = push_simple(&L, block ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, t, L.s + t, 2)))
                break;
            L.i = after;
            if ((st = lex_tag(&L, block, t, &end_sign)))
                break;
            line_starting = after_end(&L, end_sign, block);
        }
    }
    if (!st)
        st = push_simple(&L, TK_EOF, L.n, L.s + L.n, 0);
    return st;
}
