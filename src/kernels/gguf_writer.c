/* gguf_writer.c: GGUF v3 output (see gguf_writer.h). Key/values are
 * serialized when added (so a value copied from a reader is independent of
 * it); tensor offsets are laid out when the file is written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gguf_writer.h"
#include "util/fileio.h"
#include "util/error.h"
#include "util/strbuf.h"

typedef struct {
    char *key;
    size_t key_len;
    tl_strbuf val; /* u32 type + the value's bytes */
} kv_entry;

typedef struct {
    char *name;
    size_t name_len;
    uint32_t n_dims;
    int64_t ne[4];
    tl_ggml_type type;
    uint64_t nbytes;
} tensor_entry;

struct tl_gguf_writer {
    uint32_t alignment;
    kv_entry *kvs;
    size_t n_kv, cap_kv;
    tensor_entry *tensors;
    size_t n_tensors, cap_tensors;
};

tl_gguf_writer *tl_gguf_writer_new(uint32_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1))) return NULL;
    tl_gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = alignment;
    return w;
}

void tl_gguf_writer_free(tl_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        tl_strbuf_free(&w->kvs[i].val);
    }
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    free(w);
}

/* ---- value serialization -------------------------------------------------- */

static bool put_u32(tl_strbuf *sb, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return tl_strbuf_append(sb, b, 4);
}
static bool put_u64(tl_strbuf *sb, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    return tl_strbuf_append(sb, b, 8);
}
static bool put_str(tl_strbuf *sb, const char *p, uint64_t n) { return put_u64(sb, n) && tl_strbuf_append(sb, p, n); }


/* The value's bytes without its type tag (arrays: elem type, count, elements). */
static bool put_value_body(tl_strbuf *sb, const tl_gguf_value *v, int depth) {
    if (depth > 16) return false;
    switch (v->type) {
    case TL_GGUF_STRING: return put_str(sb, v->v.s.ptr, v->v.s.len);
    case TL_GGUF_ARRAY: {
        if (!put_u32(sb, v->v.arr.elem) || !put_u64(sb, v->v.arr.n)) return false;
        if (v->v.arr.elem == TL_GGUF_STRING) {
            for (uint64_t i = 0; i < v->v.arr.n; i++)
                if (!put_str(sb, v->v.arr.strs[i].ptr, v->v.arr.strs[i].len)) return false;
            return true;
        }
        if (v->v.arr.elem == TL_GGUF_ARRAY) {
            for (uint64_t i = 0; i < v->v.arr.n; i++)
                if (!put_value_body(sb, &v->v.arr.items[i], depth + 1)) return false;
            return true;
        }
        size_t es = tl_gguf_scalar_size(v->v.arr.elem);
        if (es == 0) return false;
        return tl_strbuf_append(sb, v->v.arr.raw, es * v->v.arr.n); /* already packed little-endian */
    }
    case TL_GGUF_F32: {
        float f = (float)v->v.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        return put_u32(sb, u);
    }
    case TL_GGUF_F64: {
        uint64_t u;
        memcpy(&u, &v->v.f, 8);
        return put_u64(sb, u);
    }
    default: {
        size_t n = tl_gguf_scalar_size(v->type);
        if (n == 0) return false;
        uint64_t bits = (v->type == TL_GGUF_I8 || v->type == TL_GGUF_I16 || v->type == TL_GGUF_I32 ||
                         v->type == TL_GGUF_I64) ? (uint64_t)v->v.i : v->v.u;
        uint8_t b[8];
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(bits >> (8 * i));
        return tl_strbuf_append(sb, b, n);
    }
    }
}

static kv_entry *kv_slot(tl_gguf_writer *w, const char *key, size_t key_len, tl_error *err) {
    for (size_t i = 0; i < w->n_kv; i++) {
        if (w->kvs[i].key_len == key_len && !memcmp(w->kvs[i].key, key, key_len)) {
            tl_strbuf_clear(&w->kvs[i].val);
            return &w->kvs[i];
        }
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        kv_entry *k = realloc(w->kvs, cap * sizeof *k);
        if (!k) { tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory"); return NULL; }
        w->kvs = k;
        w->cap_kv = cap;
    }
    kv_entry *e = &w->kvs[w->n_kv];
    e->key = malloc(key_len + 1);
    if (!e->key) { tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory"); return NULL; }
    memcpy(e->key, key, key_len);
    e->key[key_len] = 0;
    e->key_len = key_len;
    e->val = (tl_strbuf)TL_STRBUF_INIT;
    w->n_kv++;
    return e;
}

tl_status tl_gguf_writer_set_value(tl_gguf_writer *w, const char *key, size_t key_len, const tl_gguf_value *v, tl_error *err) {
    kv_entry *e = kv_slot(w, key, key_len, err);
    if (!e) return TL_ERR_NOMEM;
    if (!put_u32(&e->val, v->type) || !put_value_body(&e->val, v, 0)) {
        return tl_error_set(err, TL_ERR_INVALID, "gguf writer: key '%.*s': cannot serialize value of type %s",
                            (int)key_len, key, tl_gguf_vtype_name(v->type));
    }
    return TL_OK;
}

tl_status tl_gguf_writer_set_u32(tl_gguf_writer *w, const char *key, uint32_t v, tl_error *err) {
    tl_gguf_value val = {.type = TL_GGUF_U32, .v.u = v};
    return tl_gguf_writer_set_value(w, key, strlen(key), &val, err);
}

tl_status tl_gguf_writer_add_tensor(tl_gguf_writer *w, const char *name, size_t name_len, uint32_t n_dims,
                                    const int64_t ne[4], tl_ggml_type type, tl_error *err) {
    if (n_dims < 1 || n_dims > 4)
        return tl_error_set(err, TL_ERR_INVALID, "gguf writer: tensor '%.*s': %u dimensions", (int)name_len, name, n_dims);
    int64_t rows = 1;
    for (uint32_t d = 1; d < n_dims; d++) rows *= ne[d];
    size_t row_bytes = tl_type_row_bytes(type, ne[0]);
    if (row_bytes == 0 || rows <= 0)
        return tl_error_set(err, TL_ERR_INVALID, "gguf writer: tensor '%.*s': %lld elements per row do not fit type %s",
                            (int)name_len, name, (long long)ne[0], tl_type_name(type));
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        tensor_entry *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) return tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory");
        w->tensors = t;
        w->cap_tensors = cap;
    }
    tensor_entry *t = &w->tensors[w->n_tensors];
    t->name = malloc(name_len + 1);
    if (!t->name) return tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory");
    memcpy(t->name, name, name_len);
    t->name[name_len] = 0;
    t->name_len = name_len;
    t->n_dims = n_dims;
    for (int d = 0; d < 4; d++) t->ne[d] = d < (int)n_dims ? ne[d] : 1;
    t->type = type;
    t->nbytes = (uint64_t)row_bytes * (uint64_t)rows;
    w->n_tensors++;
    return TL_OK;
}

/* ---- the file ------------------------------------------------------------------ */

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static tl_status write_bytes(FILE *f, const void *p, size_t n, const char *path, tl_error *err) {
    if (n && fwrite(p, 1, n, f) != n) return tl_error_set(err, TL_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return TL_OK;
}

static tl_status write_padding(FILE *f, uint64_t pos, uint32_t alignment, const char *path, tl_error *err) {
    static const uint8_t zeros[256];
    uint64_t pad = align_up(pos, alignment) - pos;
    while (pad > 0) {
        size_t n = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
        tl_status s = write_bytes(f, zeros, n, path, err);
        if (s) return s;
        pad -= n;
    }
    return TL_OK;
}

tl_status tl_gguf_writer_write(tl_gguf_writer *w, const char *path, tl_gguf_tensor_fill fill, void *ctx, tl_error *err) {
    tl_status s = tl_gguf_writer_set_u32(w, "general.alignment", w->alignment, err);
    if (s) return s;
    tl_strbuf head = TL_STRBUF_INIT;
    bool ok = tl_strbuf_append(&head, "GGUF", 4) && put_u32(&head, 3) && put_u64(&head, w->n_tensors) &&
              put_u64(&head, w->n_kv);
    for (size_t i = 0; ok && i < w->n_kv; i++) {
        ok = put_str(&head, w->kvs[i].key, w->kvs[i].key_len) &&
             tl_strbuf_append(&head, w->kvs[i].val.buf, w->kvs[i].val.len);
    }
    uint64_t offset = 0; /* from the start of the data section */
    for (size_t i = 0; ok && i < w->n_tensors; i++) {
        const tensor_entry *t = &w->tensors[i];
        ok = put_str(&head, t->name, t->name_len) && put_u32(&head, t->n_dims);
        for (uint32_t d = 0; ok && d < t->n_dims; d++) ok = put_u64(&head, (uint64_t)t->ne[d]);
        ok = ok && put_u32(&head, (uint32_t)t->type) && put_u64(&head, offset);
        offset = align_up(offset + t->nbytes, w->alignment);
    }
    if (!ok) {
        tl_strbuf_free(&head);
        return tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory");
    }
    tl_atomic_file af;
    s = tl_atomic_open(path, &af, err);
    if (s) {
        tl_strbuf_free(&head);
        return s;
    }
    FILE *f = af.f;
    s = write_bytes(f, head.buf, head.len, path, err);
    if (!s) s = write_padding(f, head.len, w->alignment, path, err);
    tl_strbuf_free(&head);
    void *buf = NULL;
    size_t buf_cap = 0;
    for (size_t i = 0; !s && i < w->n_tensors; i++) {
        const tensor_entry *t = &w->tensors[i];
        if (t->nbytes > buf_cap) {
            free(buf);
            buf = malloc(t->nbytes);
            buf_cap = buf ? t->nbytes : 0;
            if (!buf) { s = tl_error_set(err, TL_ERR_NOMEM, "gguf writer: out of memory for tensor '%s'", t->name); break; }
        }
        s = fill(ctx, i, buf, t->nbytes, err);
        if (!s) s = write_bytes(f, buf, t->nbytes, path, err);
        if (!s) s = write_padding(f, t->nbytes, w->alignment, path, err);
    }
    free(buf);
    if (s)
        tl_atomic_abort(&af); /* the old file at path, if any, is untouched */
    else
        s = tl_atomic_commit(&af, err);
    return s;
}
