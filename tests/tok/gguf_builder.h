/* gguf_builder.h: writes small GGUF v3 files in memory for the tokenizer tests
 * (metadata only, no tensors), so odd and broken vocabularies can be made on
 * the spot. Layout per ../shared/docs/engine.md: "GGUF", u32 version, u64
 * tensor count, u64 kv count, then each kv as string key, u32 type, value. */
#ifndef TL_TESTS_TOK_GGUF_BUILDER_H
#define TL_TESTS_TOK_GGUF_BUILDER_H

#include <stdint.h>
#include <string.h>

#include "util/strbuf.h"

typedef struct gguf_builder {
    tl_strbuf kvs;
    uint64_t n_kv;
} gguf_builder;

static inline void gb_u32(tl_strbuf *b, uint32_t x) {
    unsigned char le[4] = {(unsigned char)x, (unsigned char)(x >> 8), (unsigned char)(x >> 16), (unsigned char)(x >> 24)};
    tl_strbuf_append(b, le, 4);
}
static inline void gb_u64(tl_strbuf *b, uint64_t x) {
    gb_u32(b, (uint32_t)x);
    gb_u32(b, (uint32_t)(x >> 32));
}
static inline void gb_str(tl_strbuf *b, const char *s) {
    gb_u64(b, strlen(s));
    tl_strbuf_append(b, s, strlen(s));
}
static inline void gb_key(gguf_builder *g, const char *key, uint32_t type) {
    gb_str(&g->kvs, key);
    gb_u32(&g->kvs, type);
    g->n_kv++;
}
static inline void gb_kv_str(gguf_builder *g, const char *key, const char *val) {
    gb_key(g, key, 8);
    gb_str(&g->kvs, val);
}
static inline void gb_kv_u32(gguf_builder *g, const char *key, uint32_t val) {
    gb_key(g, key, 4);
    gb_u32(&g->kvs, val);
}
static inline void gb_kv_bool(gguf_builder *g, const char *key, int val) {
    gb_key(g, key, 7);
    tl_strbuf_putc(&g->kvs, (char)(val ? 1 : 0));
}
static inline void gb_kv_strs(gguf_builder *g, const char *key, const char *const *vals, size_t n) {
    gb_key(g, key, 9);
    gb_u32(&g->kvs, 8);
    gb_u64(&g->kvs, n);
    for (size_t i = 0; i < n; i++)
        gb_str(&g->kvs, vals[i]);
}
static inline void gb_kv_i32s(gguf_builder *g, const char *key, const int32_t *vals, size_t n) {
    gb_key(g, key, 9);
    gb_u32(&g->kvs, 5);
    gb_u64(&g->kvs, n);
    for (size_t i = 0; i < n; i++)
        gb_u32(&g->kvs, (uint32_t)vals[i]);
}
static inline void gb_kv_f32s(gguf_builder *g, const char *key, const float *vals, size_t n) {
    gb_key(g, key, 9);
    gb_u32(&g->kvs, 6);
    gb_u64(&g->kvs, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &vals[i], 4);
        gb_u32(&g->kvs, bits);
    }
}
/* The finished file (caller frees out->buf with tl_strbuf_free); frees the builder. */
static inline void gb_finish(gguf_builder *g, tl_strbuf *out) {
    tl_strbuf_append(out, "GGUF", 4);
    gb_u32(out, 3);
    gb_u64(out, 0);
    gb_u64(out, g->n_kv);
    tl_strbuf_append(out, g->kvs.buf, g->kvs.len);
    while (out->len % 32) /* pad to the default alignment: the (empty) data section starts here */
        tl_strbuf_putc(out, 0);
    tl_strbuf_free(&g->kvs);
    g->n_kv = 0;
}

#endif
