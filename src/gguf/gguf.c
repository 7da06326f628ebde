/* gguf.c: the GGUF reader (versions 1-3): parses and validates the header,
 * metadata and tensor table of a mapped file, then serves lookups.
 *
 * Invariants the rest of typellm relies on once tl_gguf_open succeeds:
 *   - every string and tensor lies wholly inside the mapping;
 *   - keys and tensor names are valid UTF-8 without NUL bytes, and unique;
 *   - every tensor has 1..4 dims, each >= 1, ne[0] a multiple of its type's
 *     block size, an element count that fits int64, data aligned to
 *     general.alignment and not overlapping another tensor.
 * Hostile input: every count is checked against the bytes that remain before
 * anything is allocated, so memory use is bounded by a small multiple of the
 * file size; nesting of arrays is bounded so recursion cannot exhaust the stack. */
#include "gguf/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/utf8.h"

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_ARRAY_DEPTH 8 /* arrays of arrays of ... deeper than this are rejected */

struct tl_gguf {
    const uint8_t *base; /* the file bytes (mapping or caller buffer) */
    size_t len;
    bool mapped;         /* base came from mmap and is unmapped at close */
    bool owned;          /* base was read into memory (--no-mmap) and is freed at close */
    char *path;          /* name used in messages */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;

    uint64_t n_kv;
    tl_gguf_str *keys;     /* [n_kv] */
    tl_gguf_value *values; /* [n_kv] */
    size_t *kv_slots;      /* open addressing: index+1, 0 = empty; [kv_mask+1] */
    size_t kv_mask;

    uint64_t n_tensors;
    tl_gguf_tensor *tensors; /* [n_tensors], file order */
    size_t *t_slots;
    size_t t_mask;

    void **allocs; /* nested array storage, freed at close */
    size_t n_allocs, cap_allocs;

    char arch[128]; /* general.architecture, NUL-terminated, "" if absent */
};

/* ---- hashing ------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, uint64_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
    for (uint64_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool str_eq_bytes(tl_gguf_str s, const char *p, size_t n) {
    return s.len == n && (n == 0 || memcmp(s.ptr, p, n) == 0);
}

/* Table sized to a power of two >= 2n so probes stay short. */
static size_t *slots_alloc(uint64_t n, size_t *mask) {
    size_t cap = 8;
    while (cap < n * 2)
        cap <<= 1;
    *mask = cap - 1;
    return calloc(cap, sizeof(size_t));
}

/* ---- the cursor ---------------------------------------------------------- */

typedef struct cursor {
    tl_gguf *g;
    size_t pos;
    tl_error *err;
    const char *key; /* quoted key being read, for messages; NULL outside values */
} cursor;

#define FAIL_AT(c, off, ...) fail_at((c), (off), TL_ERR_FORMAT, __VA_ARGS__)

__attribute__((format(printf, 4, 5))) static tl_status fail_at(cursor *c, uint64_t off, tl_status code,
                                                               const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->key)
        return tl_error_set(c->err, code, "%s: offset %" PRIu64 ": key '%s': %s", c->g->path, off, c->key, what);
    return tl_error_set(c->err, code, "%s: offset %" PRIu64 ": %s", c->g->path, off, what);
}

static size_t remaining(const cursor *c) { return c->g->len - c->pos; }

static tl_status need(cursor *c, size_t n, const char *what) {
    if (remaining(c) < n)
        return FAIL_AT(c, c->pos, "truncated: %s needs %zu bytes, %zu remain", what, n, remaining(c));
    return TL_OK;
}

static uint64_t load_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static tl_status read_u32(cursor *c, uint32_t *out, const char *what) {
    tl_status st = need(c, 4, what);
    if (st)
        return st;
    *out = (uint32_t)load_le(c->g->base + c->pos, 4);
    c->pos += 4;
    return TL_OK;
}

static tl_status read_u64(cursor *c, uint64_t *out, const char *what) {
    tl_status st = need(c, 8, what);
    if (st)
        return st;
    *out = load_le(c->g->base + c->pos, 8);
    c->pos += 8;
    return TL_OK;
}

/* Width of counts, string/array lengths and dims: u32 in v1, u64 after. */
static size_t count_width(const cursor *c) { return c->g->version == 1 ? 4 : 8; }

static tl_status read_count(cursor *c, uint64_t *out, const char *what) {
    if (c->g->version == 1) {
        uint32_t v = 0;
        tl_status st = read_u32(c, &v, what);
        *out = v;
        return st;
    }
    return read_u64(c, out, what);
}

static tl_status read_str(cursor *c, tl_gguf_str *out, const char *what) {
    size_t at = c->pos;
    uint64_t n;
    tl_status st = read_count(c, &n, what);
    if (st)
        return st;
    if (n > remaining(c))
        return FAIL_AT(c, at, "%s length %" PRIu64 " extends past end of file (%zu bytes remain)", what, n,
                       remaining(c));
    out->ptr = (const char *)c->g->base + c->pos;
    out->len = n;
    c->pos += (size_t)n;
    return TL_OK;
}


/* Strict UTF-8 (tl_utf8_check) and no NUL: names must also work as C strings.
 * Returns the index of the first bad byte or -1. */
static int64_t utf8_bad_at(const uint8_t *s, uint64_t n) {
    const void *nul = memchr(s, 0, n);
    size_t limit = nul ? (size_t)((const uint8_t *)nul - s) : (size_t)n, bad;
    if (tl_utf8_check(s, limit, &bad) != 0 || nul)
        return (int64_t)bad;
    return -1;
}

/* Quotes a name for a message, cut short and with non-printables as '?'. */
static const char *quote_name(tl_gguf_str s, char *buf, size_t cap) {
    size_t n = s.len < cap - 4 ? (size_t)s.len : cap - 4;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        buf[j++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (n < s.len) {
        buf[j++] = '.';
        buf[j++] = '.';
    }
    buf[j] = '\0';
    return buf;
}

static void *track(tl_gguf *g, void *p) {
    if (!p)
        return NULL;
    if (g->n_allocs == g->cap_allocs) {
        size_t cap = g->cap_allocs ? g->cap_allocs * 2 : 16;
        void **na = realloc(g->allocs, cap * sizeof *na);
        if (!na) {
            free(p);
            return NULL;
        }
        g->allocs = na;
        g->cap_allocs = cap;
    }
    g->allocs[g->n_allocs++] = p;
    return p;
}

/* ---- values -------------------------------------------------------------- */


static bool vtype_known(uint32_t t) { return t <= TL_GGUF_F64; }

static double f32_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static double f64_from_bits(uint64_t bits) {
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* Decodes a scalar of type t at p into v (v->type set by the caller). */
static void decode_scalar(tl_gguf_vtype t, const uint8_t *p, tl_gguf_value *v) {
    uint64_t raw = load_le(p, tl_gguf_scalar_size(t));
    switch (t) {
    case TL_GGUF_U8: case TL_GGUF_U16: case TL_GGUF_U32: case TL_GGUF_U64: v->v.u = raw; break;
    case TL_GGUF_BOOL: v->v.u = raw != 0; break;
    case TL_GGUF_I8: v->v.i = (int8_t)raw; break;
    case TL_GGUF_I16: v->v.i = (int16_t)raw; break;
    case TL_GGUF_I32: v->v.i = (int32_t)raw; break;
    case TL_GGUF_I64: v->v.i = (int64_t)raw; break;
    case TL_GGUF_F32: v->v.f = f32_from_bits((uint32_t)raw); break;
    case TL_GGUF_F64: v->v.f = f64_from_bits(raw); break;
    default: break;
    }
}

static tl_status read_value(cursor *c, tl_gguf_vtype type, tl_gguf_value *out, int depth);

/* Array body after its type word: u32 element type, count, elements. */
static tl_status read_array(cursor *c, tl_gguf_value *out, int depth) {
    tl_gguf *g = c->g;
    size_t at = c->pos;
    if (depth >= GGUF_MAX_ARRAY_DEPTH)
        return FAIL_AT(c, at, "arrays nested deeper than %d", GGUF_MAX_ARRAY_DEPTH);
    uint32_t et;
    tl_status st = read_u32(c, &et, "array element type");
    if (st)
        return st;
    if (!vtype_known(et))
        return FAIL_AT(c, at, "unknown array element type %" PRIu32, et);
    size_t count_at = c->pos;
    uint64_t n;
    if ((st = read_count(c, &n, "array length")))
        return st;
    out->type = TL_GGUF_ARRAY;
    memset(&out->v.arr, 0, sizeof out->v.arr);
    out->v.arr.elem = (tl_gguf_vtype)et;
    out->v.arr.n = n;

    /* The least each element can take, to reject absurd counts before allocating. */
    size_t min_elem = tl_gguf_scalar_size((tl_gguf_vtype)et);
    if (et == TL_GGUF_STRING)
        min_elem = count_width(c);
    else if (et == TL_GGUF_ARRAY)
        min_elem = 4 + count_width(c);
    if (n > remaining(c) / min_elem)
        return FAIL_AT(c, count_at, "array of %" PRIu64 " %s elements cannot fit in the %zu bytes that remain", n,
                       tl_gguf_vtype_name((tl_gguf_vtype)et), remaining(c));

    if (et == TL_GGUF_STRING) {
        tl_gguf_str *strs = track(g, calloc(n ? n : 1, sizeof *strs));
        if (!strs)
            return tl_error_set(c->err, TL_ERR_NOMEM, "%s: out of memory for %" PRIu64 " strings", g->path, n);
        for (uint64_t i = 0; i < n; i++)
            if ((st = read_str(c, &strs[i], "array string")))
                return st;
        out->v.arr.strs = strs;
    } else if (et == TL_GGUF_ARRAY) {
        tl_gguf_value *items = track(g, calloc(n ? n : 1, sizeof *items));
        if (!items)
            return tl_error_set(c->err, TL_ERR_NOMEM, "%s: out of memory for %" PRIu64 " arrays", g->path, n);
        for (uint64_t i = 0; i < n; i++)
            if ((st = read_value(c, TL_GGUF_ARRAY, &items[i], depth + 1)))
                return st;
        out->v.arr.items = items;
    } else {
        out->v.arr.raw = g->base + c->pos;
        c->pos += (size_t)(n * min_elem);
    }
    return TL_OK;
}

static tl_status read_value(cursor *c, tl_gguf_vtype type, tl_gguf_value *out, int depth) {
    memset(out, 0, sizeof *out);
    out->type = type;
    if (type == TL_GGUF_STRING)
        return read_str(c, &out->v.s, "string value");
    if (type == TL_GGUF_ARRAY)
        return read_array(c, out, depth);
    size_t sz = tl_gguf_scalar_size(type);
    tl_status st = need(c, sz, tl_gguf_vtype_name(type));
    if (st)
        return st;
    decode_scalar(type, c->g->base + c->pos, out);
    c->pos += sz;
    return TL_OK;
}

/* ---- metadata ------------------------------------------------------------ */

static const tl_gguf_value *kv_lookup(const tl_gguf *g, const char *key, size_t n) {
    if (!g || !g->kv_slots)
        return NULL;
    for (size_t s = hash_bytes(key, n) & g->kv_mask;; s = (s + 1) & g->kv_mask) {
        size_t idx = g->kv_slots[s];
        if (!idx)
            return NULL;
        if (str_eq_bytes(g->keys[idx - 1], key, n))
            return &g->values[idx - 1];
    }
}

static tl_status read_kvs(cursor *c) {
    tl_gguf *g = c->g;
    /* Each kv takes at least: key length + 1 key byte + type + 1 value byte. */
    size_t min_kv = count_width(c) + 1 + 4 + 1;
    if (g->n_kv > remaining(c) / min_kv)
        return FAIL_AT(c, c->pos, "%" PRIu64 " metadata entries cannot fit in the %zu bytes that remain", g->n_kv,
                       remaining(c));
    g->keys = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->keys);
    g->values = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->values);
    g->kv_slots = slots_alloc(g->n_kv, &g->kv_mask);
    if (!g->keys || !g->values || !g->kv_slots)
        return tl_error_set(c->err, TL_ERR_NOMEM, "%s: out of memory for %" PRIu64 " metadata entries", g->path,
                            g->n_kv);
    char qbuf[96];
    tl_status st;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        size_t key_at = c->pos;
        tl_gguf_str key;
        if ((st = read_str(c, &key, "key")))
            return st;
        if (key.len == 0)
            return FAIL_AT(c, key_at, "metadata entry %" PRIu64 " has an empty key", i);
        int64_t bad = utf8_bad_at((const uint8_t *)key.ptr, key.len);
        if (bad >= 0)
            return FAIL_AT(c, key_at, "key '%s' is not valid UTF-8 (or has a NUL) at byte %" PRId64,
                           quote_name(key, qbuf, sizeof qbuf), bad);
        size_t type_at = c->pos;
        uint32_t type;
        if ((st = read_u32(c, &type, "value type")))
            return st;
        if (!vtype_known(type))
            return FAIL_AT(c, type_at, "key '%s': unknown value type %" PRIu32, quote_name(key, qbuf, sizeof qbuf),
                           type);
        c->key = quote_name(key, qbuf, sizeof qbuf);
        st = read_value(c, (tl_gguf_vtype)type, &g->values[i], 0);
        c->key = NULL;
        if (st)
            return st;
        /* Insert into the hash; a hit on an equal key is a duplicate. */
        size_t s = hash_bytes(key.ptr, key.len) & g->kv_mask;
        for (; g->kv_slots[s]; s = (s + 1) & g->kv_mask)
            if (str_eq_bytes(g->keys[g->kv_slots[s] - 1], key.ptr, (size_t)key.len))
                return FAIL_AT(c, key_at, "duplicate key '%s'", quote_name(key, qbuf, sizeof qbuf));
        g->keys[i] = key;
        g->kv_slots[s] = (size_t)i + 1;
    }
    return TL_OK;
}

/* general.alignment: any integer type whose value is a power of two that fits u32. */
static tl_status read_alignment(cursor *c) {
    tl_gguf *g = c->g;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const tl_gguf_value *v = kv_lookup(g, "general.alignment", strlen("general.alignment"));
    if (!v)
        return TL_OK;
    uint64_t a;
    if (v->type == TL_GGUF_U8 || v->type == TL_GGUF_U16 || v->type == TL_GGUF_U32 || v->type == TL_GGUF_U64)
        a = v->v.u;
    else if (v->type == TL_GGUF_I8 || v->type == TL_GGUF_I16 || v->type == TL_GGUF_I32 || v->type == TL_GGUF_I64)
        a = v->v.i < 0 ? 0 : (uint64_t)v->v.i;
    else
        return tl_error_set(c->err, TL_ERR_FORMAT, "%s: general.alignment is a %s, expected an integer", g->path,
                            tl_gguf_vtype_name(v->type));
    if (a == 0 || a > (1u << 30) || (a & (a - 1)))
        return tl_error_set(c->err, TL_ERR_FORMAT,
                            "%s: general.alignment %" PRIu64 " is not a power of two between 1 and 2^30", g->path, a);
    g->alignment = (uint32_t)a;
    return TL_OK;
}

/* ---- tensors ------------------------------------------------------------- */

static bool type_is_named(uint32_t t) {
    return t < TL_TYPE_COUNT && strcmp(tl_type_name((tl_ggml_type)t), "unknown") != 0;
}

static tl_status read_tensor_info(cursor *c, uint64_t i, size_t *name_at) {
    tl_gguf *g = c->g;
    tl_gguf_tensor *t = &g->tensors[i];
    char qbuf[96];
    tl_status st;
    *name_at = c->pos;
    if ((st = read_str(c, &t->name, "tensor name")))
        return st;
    const char *qn = quote_name(t->name, qbuf, sizeof qbuf);
    if (t->name.len == 0)
        return FAIL_AT(c, *name_at, "tensor %" PRIu64 " has an empty name", i);
    int64_t bad = utf8_bad_at((const uint8_t *)t->name.ptr, t->name.len);
    if (bad >= 0)
        return FAIL_AT(c, *name_at, "tensor name '%s' is not valid UTF-8 (or has a NUL) at byte %" PRId64, qn, bad);
    size_t dims_at = c->pos;
    if ((st = read_u32(c, &t->n_dims, "tensor n_dims")))
        return st;
    if (t->n_dims < 1 || t->n_dims > 4)
        return FAIL_AT(c, dims_at, "tensor '%s': n_dims %" PRIu32 " is outside 1..4", qn, t->n_dims);
    uint64_t nel = 1;
    for (int d = 0; d < 4; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        size_t ne_at = c->pos;
        uint64_t ne;
        if ((st = read_count(c, &ne, "tensor dimension")))
            return st;
        if (ne == 0 || ne > (uint64_t)INT64_MAX)
            return FAIL_AT(c, ne_at, "tensor '%s': dimension %" PRIu32 " is %" PRId64 " (must be >= 1)", qn, d,
                           (int64_t)ne);
        if (nel > (uint64_t)INT64_MAX / ne)
            return FAIL_AT(c, ne_at, "tensor '%s': element count overflows int64", qn);
        nel *= ne;
        t->ne[d] = (int64_t)ne;
    }
    size_t type_at = c->pos;
    uint32_t type;
    if ((st = read_u32(c, &type, "tensor type")))
        return st;
    if (!type_is_named(type))
        return FAIL_AT(c, type_at, "tensor '%s': unknown ggml type %" PRIu32, qn, type);
    t->type = (tl_ggml_type)type;
    int64_t blk = tl_type_block_elems(t->type);
    if (blk == 0)
        return fail_at(c, type_at, TL_ERR_UNSUPPORTED, "tensor '%s': ggml type %s (%" PRIu32 ") is not supported", qn,
                       tl_type_name(t->type), type);
    if (t->ne[0] % blk)
        return FAIL_AT(c, dims_at, "tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %" PRId64,
                       qn, t->ne[0], tl_type_name(t->type), blk);
    size_t row = tl_type_row_bytes(t->type, t->ne[0]);
    uint64_t rows = nel / (uint64_t)t->ne[0];
    if (row == 0 || rows > UINT64_MAX / row || rows * row > SIZE_MAX)
        return FAIL_AT(c, dims_at, "tensor '%s': byte size overflows", qn);
    t->nbytes = (size_t)(rows * row);
    return read_u64(c, &t->offset, "tensor offset");
}

/* A tensor's data range, sorted by offset for the overlap check. */
typedef struct span {
    uint64_t offset;
    size_t index;
} span;

static int cmp_span(const void *a, const void *b) {
    uint64_t oa = ((const span *)a)->offset, ob = ((const span *)b)->offset;
    return oa < ob ? -1 : oa > ob;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static tl_status read_tensors(cursor *c) {
    tl_gguf *g = c->g;
    /* Each tensor info takes at least: name length + 1 byte + n_dims + one dim + type + offset. */
    size_t min_t = count_width(c) + 1 + 4 + count_width(c) + 4 + 8;
    if (g->n_tensors > remaining(c) / min_t)
        return FAIL_AT(c, c->pos, "%" PRIu64 " tensors cannot fit in the %zu bytes that remain", g->n_tensors,
                       remaining(c));
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    g->t_slots = slots_alloc(g->n_tensors, &g->t_mask);
    size_t *name_at = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *name_at);
    span *order = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *order);
    tl_status st = TL_OK;
    char qbuf[96];
    if (!g->tensors || !g->t_slots || !name_at || !order) {
        st = tl_error_set(c->err, TL_ERR_NOMEM, "%s: out of memory for %" PRIu64 " tensors", g->path, g->n_tensors);
        goto out;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if ((st = read_tensor_info(c, i, &name_at[i])))
            goto out;
        tl_gguf_tensor *t = &g->tensors[i];
        size_t s = hash_bytes(t->name.ptr, t->name.len) & g->t_mask;
        for (; g->t_slots[s]; s = (s + 1) & g->t_mask)
            if (str_eq_bytes(g->tensors[g->t_slots[s] - 1].name, t->name.ptr, (size_t)t->name.len)) {
                st = FAIL_AT(c, name_at[i], "duplicate tensor name '%s'", quote_name(t->name, qbuf, sizeof qbuf));
                goto out;
            }
        g->t_slots[s] = (size_t)i + 1;
    }

    /* The data section starts at the next multiple of the alignment. A file
     * without tensors may end before that padding. */
    uint64_t a = g->alignment;
    g->data_offset = (c->pos + a - 1) / a * a;
    if (g->n_tensors && g->data_offset > g->len) {
        st = FAIL_AT(c, c->pos, "data section (aligned to %" PRIu64 ") starts past end of file", a);
        goto out;
    }
    uint64_t data_len = g->data_offset <= g->len ? g->len - g->data_offset : 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        tl_gguf_tensor *t = &g->tensors[i];
        const char *qn = quote_name(t->name, qbuf, sizeof qbuf);
        if (t->offset % a) {
            st = FAIL_AT(c, name_at[i], "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                         qn, t->offset, a);
            goto out;
        }
        if (t->offset > data_len || t->nbytes > data_len - t->offset) {
            st = FAIL_AT(c, add_sat(g->data_offset, t->offset),
                         "tensor '%s': data (%zu bytes at data offset %" PRIu64 ") extends past end of file: "
                         "the file (%zu bytes) is shorter than its tensor table says (truncated, or still being written?)",
                         qn, t->nbytes, t->offset, g->len);
            goto out;
        }
        t->data = g->base + g->data_offset + t->offset;
        order[i] = (span){t->offset, (size_t)i};
    }
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_span);
    for (uint64_t k = 1; k < g->n_tensors; k++) {
        const tl_gguf_tensor *p = &g->tensors[order[k - 1].index], *t = &g->tensors[order[k].index];
        if (p->offset + p->nbytes > t->offset) {
            char qbuf2[96];
            st = FAIL_AT(c, g->data_offset + t->offset, "tensor '%s' overlaps tensor '%s'",
                         quote_name(t->name, qbuf, sizeof qbuf), quote_name(p->name, qbuf2, sizeof qbuf2));
            goto out;
        }
    }
out:
    free(name_at);
    free(order);
    return st;
}

/* ---- open / close -------------------------------------------------------- */

static tl_status parse(tl_gguf *g, tl_error *err) {
    cursor c = {g, 0, err, NULL};
    tl_status st = need(&c, 4, "magic");
    if (st)
        return st;
    if (memcmp(g->base, "GGUF", 4) != 0)
        return FAIL_AT(&c, 0, "bad magic (not a GGUF file)");
    c.pos = 4;
    if ((st = read_u32(&c, &g->version, "version")))
        return st;
    if (g->version < 1 || g->version > 3) {
        if (g->version >= 0x01000000u)
            return FAIL_AT(&c, 4, "version %" PRIu32 " looks byte-swapped (big-endian GGUF is not supported)",
                           g->version);
        return FAIL_AT(&c, 4, "unsupported GGUF version %" PRIu32 " (expected 1, 2 or 3)", g->version);
    }
    if ((st = read_count(&c, &g->n_tensors, "tensor count")) || (st = read_count(&c, &g->n_kv, "metadata count")))
        return st;
    if ((st = read_kvs(&c)) || (st = read_alignment(&c)) || (st = read_tensors(&c)))
        return st;

    const tl_gguf_value *a = kv_lookup(g, "general.architecture", strlen("general.architecture"));
    if (a && a->type == TL_GGUF_STRING && a->v.s.len < sizeof g->arch && !memchr(a->v.s.ptr, 0, a->v.s.len)) {
        memcpy(g->arch, a->v.s.ptr, a->v.s.len);
        g->arch[a->v.s.len] = '\0';
    }
    return TL_OK;
}

static tl_status open_common(tl_gguf *g, tl_gguf **out, tl_error *err) {
    tl_status st = parse(g, err);
    if (st) {
        tl_gguf_close(g);
        return st;
    }
    *out = g;
    return TL_OK;
}

tl_status tl_gguf_open_memory(const void *data, size_t len, const char *name, tl_gguf **out, tl_error *err) {
    *out = NULL;
    tl_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(name ? name : "<memory>"))) {
        free(g);
        return tl_error_set(err, TL_ERR_NOMEM, "gguf: out of memory");
    }
    g->base = data;
    g->len = data ? len : 0;
    return open_common(g, out, err);
}

/* Reads len bytes of fd into a new buffer (no mapping: the file may later be
 * replaced or truncated without affecting us). */
static tl_status read_all(int fd, const char *path, size_t len, uint8_t **out, tl_error *err) {
    uint8_t *buf = malloc(len);
    if (!buf)
        return tl_error_set(err, TL_ERR_NOMEM, "%s: cannot allocate %zu bytes to read the model into memory", path, len);
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            free(buf);
            return e ? tl_error_set(err, TL_ERR_IO, "%s: read error at offset %zu: %s", path, got, strerror(e))
                     : tl_error_set(err, TL_ERR_IO, "%s: the file shrank to %zu bytes while being read", path, got);
        }
        got += (size_t)r;
    }
    *out = buf;
    return TL_OK;
}

tl_status tl_gguf_open_ex(const char *path, unsigned flags, tl_gguf **out, tl_error *err) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tl_error_set(err, TL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tl_error_set(err, TL_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tl_error_set(err, TL_ERR_IO, "%s: %s, not a GGUF file", path,
                            S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
    }
    tl_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        close(fd);
        return tl_error_set(err, TL_ERR_NOMEM, "gguf: out of memory");
    }
    g->len = (size_t)sb.st_size;
    if (g->len > 0 && (flags & TL_GGUF_NO_MMAP)) {
        uint8_t *buf = NULL;
        tl_status st = read_all(fd, path, g->len, &buf, err);
        close(fd);
        if (st) {
            tl_gguf_close(g);
            return st;
        }
        g->base = buf;
        g->owned = true;
        return open_common(g, out, err);
    }
    if (g->len > 0) {
        void *m = mmap(NULL, g->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            tl_gguf_close(g);
            return tl_error_set(err, TL_ERR_IO, "%s: cannot mmap %zu bytes: %s", path, (size_t)sb.st_size,
                                strerror(e));
        }
        g->base = m;
        g->mapped = true;
    }
    close(fd);
    return open_common(g, out, err);
}

tl_status tl_gguf_open(const char *path, tl_gguf **out, tl_error *err) { return tl_gguf_open_ex(path, 0, out, err); }

void tl_gguf_close(tl_gguf *g) {
    if (!g)
        return;
    if (g->mapped)
        munmap((void *)g->base, g->len);
    if (g->owned)
        free((void *)g->base);
    for (size_t i = 0; i < g->n_allocs; i++)
        free(g->allocs[i]);
    free(g->allocs);
    free(g->keys);
    free(g->values);
    free(g->kv_slots);
    free(g->tensors);
    free(g->t_slots);
    free(g->path);
    free(g);
}

/* ---- accessors ----------------------------------------------------------- */

uint32_t tl_gguf_version(const tl_gguf *g) { return g->version; }
uint64_t tl_gguf_file_size(const tl_gguf *g) { return g->len; }
uint32_t tl_gguf_alignment(const tl_gguf *g) { return g->alignment; }
uint64_t tl_gguf_data_offset(const tl_gguf *g) { return g->data_offset; }
const char *tl_gguf_path(const tl_gguf *g) { return g->path; }
const char *tl_gguf_arch(const tl_gguf *g) { return g->arch; }

uint64_t tl_gguf_n_kv(const tl_gguf *g) { return g->n_kv; }

tl_gguf_str tl_gguf_kv_key(const tl_gguf *g, uint64_t i) {
    if (i >= g->n_kv)
        return (tl_gguf_str){"", 0};
    return g->keys[i];
}

const tl_gguf_value *tl_gguf_kv_value(const tl_gguf *g, uint64_t i) { return i < g->n_kv ? &g->values[i] : NULL; }

const tl_gguf_value *tl_gguf_get(const tl_gguf *g, const char *key) {
    return key ? kv_lookup(g, key, strlen(key)) : NULL;
}

uint64_t tl_gguf_n_tensors(const tl_gguf *g) { return g->n_tensors; }

const tl_gguf_tensor *tl_gguf_tensor_at(const tl_gguf *g, uint64_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const tl_gguf_tensor *tl_gguf_find_tensor(const tl_gguf *g, const char *name) {
    if (!g || !name || !g->t_slots)
        return NULL;
    size_t n = strlen(name);
    for (size_t s = hash_bytes(name, n) & g->t_mask;; s = (s + 1) & g->t_mask) {
        size_t idx = g->t_slots[s];
        if (!idx)
            return NULL;
        if (str_eq_bytes(g->tensors[idx - 1].name, name, n))
            return &g->tensors[idx - 1];
    }
}

bool tl_gguf_str_eq(tl_gguf_str s, const char *cstr) { return cstr && str_eq_bytes(s, cstr, strlen(cstr)); }

/* ---- array elements ------------------------------------------------------ */

static bool arr_elem(const tl_gguf_value *arr, uint64_t i, tl_gguf_value *out) {
    if (!arr || arr->type != TL_GGUF_ARRAY || i >= arr->v.arr.n || !arr->v.arr.raw)
        return false;
    size_t sz = tl_gguf_scalar_size(arr->v.arr.elem);
    if (!sz)
        return false;
    out->type = arr->v.arr.elem;
    decode_scalar(arr->v.arr.elem, arr->v.arr.raw + i * sz, out);
    return true;
}

/* double -> int64 without undefined behaviour: saturates, NaN -> 0. */
static int64_t f_to_i64(double f) {
    if (f != f)
        return 0;
    if (f >= 9223372036854775807.0)
        return INT64_MAX;
    if (f <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

int64_t tl_gguf_arr_int(const tl_gguf_value *arr, uint64_t i) {
    tl_gguf_value e;
    if (!arr_elem(arr, i, &e))
        return 0;
    switch (e.type) {
    case TL_GGUF_U8: case TL_GGUF_U16: case TL_GGUF_U32: case TL_GGUF_BOOL: return (int64_t)e.v.u;
    case TL_GGUF_U64: return e.v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e.v.u;
    case TL_GGUF_F32: case TL_GGUF_F64: return f_to_i64(e.v.f);
    default: return e.v.i;
    }
}

double tl_gguf_arr_float(const tl_gguf_value *arr, uint64_t i) {
    tl_gguf_value e;
    if (!arr_elem(arr, i, &e))
        return 0.0;
    switch (e.type) {
    case TL_GGUF_U8: case TL_GGUF_U16: case TL_GGUF_U32: case TL_GGUF_U64: case TL_GGUF_BOOL: return (double)e.v.u;
    case TL_GGUF_F32: case TL_GGUF_F64: return e.v.f;
    default: return (double)e.v.i;
    }
}

/* ---- typed getters ------------------------------------------------------- */

static bool is_unsigned(tl_gguf_vtype t) {
    return t == TL_GGUF_U8 || t == TL_GGUF_U16 || t == TL_GGUF_U32 || t == TL_GGUF_U64 || t == TL_GGUF_BOOL;
}
static bool is_signed(tl_gguf_vtype t) {
    return t == TL_GGUF_I8 || t == TL_GGUF_I16 || t == TL_GGUF_I32 || t == TL_GGUF_I64;
}

/* Describes a value for an error message: "i64 -5", "string", "array of u32". */
static void describe(const tl_gguf_value *v, char *buf, size_t cap) {
    if (is_unsigned(v->type))
        snprintf(buf, cap, "%s %" PRIu64, tl_gguf_vtype_name(v->type), v->v.u);
    else if (is_signed(v->type))
        snprintf(buf, cap, "%s %" PRId64, tl_gguf_vtype_name(v->type), v->v.i);
    else if (v->type == TL_GGUF_F32 || v->type == TL_GGUF_F64)
        snprintf(buf, cap, "%s %g", tl_gguf_vtype_name(v->type), v->v.f);
    else if (v->type == TL_GGUF_ARRAY)
        snprintf(buf, cap, "array of %" PRIu64 " %s", v->v.arr.n, tl_gguf_vtype_name(v->v.arr.elem));
    else
        snprintf(buf, cap, "%s", tl_gguf_vtype_name(v->type));
}

static tl_status get_fail(const tl_gguf *g, const char *key, const tl_gguf_value *v, const char *want,
                          tl_error *err) {
    if (!v)
        return tl_error_set(err, TL_ERR_INVALID, "%s: key '%s' is absent (expected %s)", g ? g->path : "gguf",
                            key ? key : "(null)", want);
    char d[128];
    describe(v, d, sizeof d);
    return tl_error_set(err, TL_ERR_INVALID, "%s: key '%s' is %s, not convertible to %s", g->path, key, d, want);
}

/* Integer value of v as a signed 128-bit-free pair: ok when v is an integer or bool. */
static bool int_of(const tl_gguf_value *v, bool *neg, uint64_t *mag) {
    if (is_unsigned(v->type)) {
        *neg = false;
        *mag = v->v.u;
        return true;
    }
    if (is_signed(v->type)) {
        *neg = v->v.i < 0;
        *mag = *neg ? (uint64_t)0 - (uint64_t)v->v.i : (uint64_t)v->v.i;
        return true;
    }
    return false;
}

tl_status tl_gguf_get_u64(const tl_gguf *g, const char *key, uint64_t *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    bool neg;
    uint64_t m;
    if (!v || !int_of(v, &neg, &m) || neg)
        return get_fail(g, key, v, "u64", err);
    *out = m;
    return TL_OK;
}

tl_status tl_gguf_get_u32(const tl_gguf *g, const char *key, uint32_t *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    bool neg;
    uint64_t m;
    if (!v || !int_of(v, &neg, &m) || neg || m > UINT32_MAX)
        return get_fail(g, key, v, "u32", err);
    *out = (uint32_t)m;
    return TL_OK;
}

tl_status tl_gguf_get_i64(const tl_gguf *g, const char *key, int64_t *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    bool neg;
    uint64_t m;
    if (!v || !int_of(v, &neg, &m) || (!neg && m > (uint64_t)INT64_MAX))
        return get_fail(g, key, v, "i64", err);
    *out = neg ? (int64_t)(0 - m) : (int64_t)m; /* two's complement wrap is exact for m <= 2^63 */
    return TL_OK;
}

tl_status tl_gguf_get_i32(const tl_gguf *g, const char *key, int32_t *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    bool neg;
    uint64_t m;
    if (!v || !int_of(v, &neg, &m) || (!neg && m > INT32_MAX) || (neg && m > (uint64_t)INT32_MAX + 1))
        return get_fail(g, key, v, "i32", err);
    *out = neg ? (int32_t)(-(int64_t)m) : (int32_t)m;
    return TL_OK;
}

tl_status tl_gguf_get_f32(const tl_gguf *g, const char *key, float *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    if (v && (v->type == TL_GGUF_F32 || v->type == TL_GGUF_F64)) {
        *out = (float)v->v.f;
        return TL_OK;
    }
    if (v && v->type != TL_GGUF_BOOL && is_unsigned(v->type)) {
        *out = (float)v->v.u;
        return TL_OK;
    }
    if (v && is_signed(v->type)) {
        *out = (float)v->v.i;
        return TL_OK;
    }
    return get_fail(g, key, v, "f32", err);
}

tl_status tl_gguf_get_bool(const tl_gguf *g, const char *key, bool *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    bool neg;
    uint64_t m;
    /* bool, or an integer 0/1 (some writers store flags as u8/i32). */
    if (!v || !int_of(v, &neg, &m) || neg || m > 1)
        return get_fail(g, key, v, "bool", err);
    *out = m == 1;
    return TL_OK;
}

tl_status tl_gguf_get_str(const tl_gguf *g, const char *key, tl_gguf_str *out, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    if (!v || v->type != TL_GGUF_STRING)
        return get_fail(g, key, v, "string", err);
    *out = v->v.s;
    return TL_OK;
}

uint32_t tl_gguf_u32_or(const tl_gguf *g, const char *key, uint32_t def) {
    uint32_t v = 0;
    return tl_gguf_get_u32(g, key, &v, NULL) == TL_OK ? v : def;
}

float tl_gguf_f32_or(const tl_gguf *g, const char *key, float def) {
    float v = 0;
    return tl_gguf_get_f32(g, key, &v, NULL) == TL_OK ? v : def;
}

bool tl_gguf_bool_or(const tl_gguf *g, const char *key, bool def) {
    bool v = false;
    return tl_gguf_get_bool(g, key, &v, NULL) == TL_OK ? v : def;
}
