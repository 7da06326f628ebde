/* test_errors.c: the GGUF reader on files built in memory: every metadata value
 * type (nested arrays too) in versions 1-3, typed-getter conversions, and one
 * test per class of bad input, each checking the error code and that the message
 * names the byte offset of the problem. Also cuts a valid file at every length. */
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tl_test.h"

/* ---- a tiny GGUF writer ------------------------------------------------- */

typedef struct gb {
    uint8_t b[1 << 16];
    size_t len;
    uint32_t version;
} gb;

static void put(gb *g, const void *p, size_t n) {
    if (g->len + n > sizeof g->b) {
        fprintf(stderr, "test builder overflow\n");
        exit(2);
    }
    memcpy(g->b + g->len, p, n);
    g->len += n;
}
static void put_le(gb *g, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t byte = (uint8_t)(v >> (8 * i));
        put(g, &byte, 1);
    }
}
static void u8_(gb *g, uint8_t v) { put_le(g, v, 1); }
static void u32_(gb *g, uint32_t v) { put_le(g, v, 4); }
static void u64_(gb *g, uint64_t v) { put_le(g, v, 8); }
static void cnt(gb *g, uint64_t v) { put_le(g, v, g->version == 1 ? 4 : 8); } /* v1: u32 counts */
static void strn(gb *g, const char *s, size_t n) {
    cnt(g, n);
    put(g, s, n);
}
static void str_(gb *g, const char *s) { strn(g, s, strlen(s)); }

static void header(gb *g, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    g->len = 0;
    g->version = version;
    put(g, "GGUF", 4);
    u32_(g, version);
    cnt(g, n_tensors);
    cnt(g, n_kv);
}
static void kv_u32(gb *g, const char *key, uint32_t v) {
    str_(g, key);
    u32_(g, TL_GGUF_U32);
    u32_(g, v);
}
static void kv_str(gb *g, const char *key, const char *v) {
    str_(g, key);
    u32_(g, TL_GGUF_STRING);
    str_(g, v);
}
/* Tensor info: name, n_dims, dims, type, offset. Returns the offset of the name. */
static size_t tinfo(gb *g, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    size_t at = g->len;
    str_(g, name);
    u32_(g, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        cnt(g, ne[d]);
    u32_(g, type);
    u64_(g, off);
    return at;
}
static void pad(gb *g, size_t align) {
    while (g->len % align)
        u8_(g, 0);
}
static void zeros(gb *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        u8_(g, 0);
}

/* ---- expectations -------------------------------------------------------- */

/* Opening must fail with code; the message must contain want and, when at >= 0,
 * "offset AT". */
static void expect_fail_at(const gb *g, tl_status code, const char *want, long long at, int line) {
    tl_gguf *h = (tl_gguf *)1;
    tl_error err = {0};
    tl_status st = tl_gguf_open_memory(g->b, g->len, "mem.gguf", &h, &err);
    char off[64];
    snprintf(off, sizeof off, "offset %lld:", at);
    int ok = st == code && h == NULL && strstr(err.msg, want) && strncmp(err.msg, "mem.gguf: ", 10) == 0 &&
             (at < 0 || strstr(err.msg, off));
    tl_test_checks++;
    if (!ok) {
        tl_test_failures++;
        fprintf(stderr, "%s:%d: expected %s '%s' at %lld, got %s '%s'\n", __FILE__, line, tl_status_name(code), want,
                at, tl_status_name(st), err.msg);
    }
    if (st == TL_OK)
        tl_gguf_close(h);
}
#define EXPECT_FAIL(g, code, want, at) expect_fail_at((g), (code), (want), (at), __LINE__)

static tl_gguf *open_ok(const gb *g, int line) {
    tl_gguf *h = NULL;
    tl_error err = {0};
    tl_status st = tl_gguf_open_memory(g->b, g->len, "mem.gguf", &h, &err);
    tl_test_checks++;
    if (st != TL_OK) {
        tl_test_failures++;
        fprintf(stderr, "%s:%d: open failed: %s\n", __FILE__, line, err.msg);
        return NULL;
    }
    return h;
}
#define OPEN_OK(g) open_ok((g), __LINE__)

/* ---- valid files --------------------------------------------------------- */

/* A file with every value type, nested arrays, alignment 64 and two tensors. */
static void build_full(gb *g, uint32_t version) {
    header(g, version, 2, 18);
    kv_str(g, "general.architecture", "llama");
    kv_u32(g, "general.alignment", 64);
    str_(g, "v.u8"); u32_(g, TL_GGUF_U8); u8_(g, 200);
    str_(g, "v.i8"); u32_(g, TL_GGUF_I8); u8_(g, 0xFF); /* -1 */
    str_(g, "v.u16"); u32_(g, TL_GGUF_U16); put_le(g, 65535, 2);
    str_(g, "v.i16"); u32_(g, TL_GGUF_I16); put_le(g, 0x8000, 2); /* -32768 */
    kv_u32(g, "v.u32", 4000000000u);
    str_(g, "v.i32"); u32_(g, TL_GGUF_I32); u32_(g, (uint32_t)-7);
    str_(g, "v.f32"); u32_(g, TL_GGUF_F32); u32_(g, 0x3FC00000u); /* 1.5f */
    str_(g, "v.bool"); u32_(g, TL_GGUF_BOOL); u8_(g, 1);
    str_(g, "v.u64"); u32_(g, TL_GGUF_U64); u64_(g, UINT64_MAX);
    str_(g, "v.i64"); u32_(g, TL_GGUF_I64); u64_(g, (uint64_t)(int64_t)-5000000000LL);
    str_(g, "v.f64"); u32_(g, TL_GGUF_F64); u64_(g, 0xC004000000000000ull); /* -2.5 */
    str_(g, "v.str"); u32_(g, TL_GGUF_STRING); strn(g, "a\0b", 3);
    /* array of i16 [-1, 2, 300] */
    str_(g, "v.arr_i16"); u32_(g, TL_GGUF_ARRAY); u32_(g, TL_GGUF_I16); cnt(g, 3);
    put_le(g, 0xFFFF, 2); put_le(g, 2, 2); put_le(g, 300, 2);
    /* array of strings ["x", "", "héllo"] */
    str_(g, "v.arr_str"); u32_(g, TL_GGUF_ARRAY); u32_(g, TL_GGUF_STRING); cnt(g, 3);
    str_(g, "x"); str_(g, ""); str_(g, "h\xc3\xa9llo");
    /* array of arrays: [[1.0f, 2.0f], []] of f32, then an empty array */
    str_(g, "v.arr_arr"); u32_(g, TL_GGUF_ARRAY); u32_(g, TL_GGUF_ARRAY); cnt(g, 2);
    u32_(g, TL_GGUF_F32); cnt(g, 2); u32_(g, 0x3F800000u); u32_(g, 0x40000000u);
    u32_(g, TL_GGUF_U8); cnt(g, 0);
    /* array of bool */
    str_(g, "v.arr_bool"); u32_(g, TL_GGUF_ARRAY); u32_(g, TL_GGUF_BOOL); cnt(g, 2); u8_(g, 0); u8_(g, 1);
    uint64_t ne_a[2] = {32, 2}, ne_b[1] = {64};
    tinfo(g, "a.weight", 2, ne_a, TL_TYPE_Q8_0, 0); /* 2 rows of 34 B = 68 B */
    tinfo(g, "b", 1, ne_b, TL_TYPE_F16, 128);       /* 128 B */
    pad(g, 64);
    zeros(g, 256);
}

static void check_full(uint32_t version) {
    gb *g = calloc(1, sizeof *g);
    build_full(g, version);
    tl_gguf *h = OPEN_OK(g);
    if (!h) {
        free(g);
        return;
    }
    tl_error err = {0};
    CHECK(tl_gguf_version(h) == version && tl_gguf_alignment(h) == 64 && tl_gguf_data_offset(h) % 64 == 0);
    CHECK(tl_gguf_n_kv(h) == 18 && tl_gguf_n_tensors(h) == 2 && tl_gguf_file_size(h) == g->len);
    CHECK(strcmp(tl_gguf_arch(h), "llama") == 0 && strcmp(tl_gguf_path(h), "mem.gguf") == 0);
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    float f = 0;
    bool b = false;
    CHECK(tl_gguf_get_u32(h, "v.u8", &u32, &err) == TL_OK && u32 == 200);
    CHECK(tl_gguf_get_i32(h, "v.i8", &i32, &err) == TL_OK && i32 == -1);
    CHECK(tl_gguf_get_u32(h, "v.i8", &u32, &err) == TL_ERR_INVALID && strstr(err.msg, "'v.i8' is i8 -1"));
    CHECK(tl_gguf_get_u64(h, "v.u16", &u64, &err) == TL_OK && u64 == 65535);
    CHECK(tl_gguf_get_i64(h, "v.i16", &i64, &err) == TL_OK && i64 == -32768);
    CHECK(tl_gguf_get_u32(h, "v.u32", &u32, &err) == TL_OK && u32 == 4000000000u);
    CHECK(tl_gguf_get_i32(h, "v.u32", &i32, &err) == TL_ERR_INVALID); /* does not fit */
    CHECK(tl_gguf_get_i32(h, "v.i32", &i32, &err) == TL_OK && i32 == -7);
    CHECK(tl_gguf_get_f32(h, "v.f32", &f, &err) == TL_OK && f == 1.5f);
    CHECK(tl_gguf_get_u32(h, "v.f32", &u32, &err) == TL_ERR_INVALID);
    CHECK(tl_gguf_get_bool(h, "v.bool", &b, &err) == TL_OK && b);
    CHECK(tl_gguf_get_u32(h, "v.bool", &u32, &err) == TL_OK && u32 == 1);
    CHECK(tl_gguf_get_u64(h, "v.u64", &u64, &err) == TL_OK && u64 == UINT64_MAX);
    CHECK(tl_gguf_get_i64(h, "v.u64", &i64, &err) == TL_ERR_INVALID);
    CHECK(tl_gguf_get_u32(h, "v.u64", &u32, &err) == TL_ERR_INVALID);
    CHECK(tl_gguf_get_i64(h, "v.i64", &i64, &err) == TL_OK && i64 == -5000000000LL);
    CHECK(tl_gguf_get_i32(h, "v.i64", &i32, &err) == TL_ERR_INVALID);
    CHECK(tl_gguf_get_f32(h, "v.f64", &f, &err) == TL_OK && f == -2.5f);
    CHECK(tl_gguf_get_f32(h, "v.i32", &f, &err) == TL_OK && f == -7.0f);
    tl_gguf_str s;
    CHECK(tl_gguf_get_str(h, "v.str", &s, &err) == TL_OK && s.len == 3 && memcmp(s.ptr, "a\0b", 3) == 0);
    CHECK(tl_gguf_get_str(h, "v.u8", &s, &err) == TL_ERR_INVALID && strstr(err.msg, "u8 200"));
    CHECK(tl_gguf_get_str(h, "missing", &s, &err) == TL_ERR_INVALID && strstr(err.msg, "absent"));
    CHECK(tl_gguf_u32_or(h, "missing", 9) == 9 && tl_gguf_u32_or(h, "v.str", 9) == 9);
    CHECK(tl_gguf_f32_or(h, "v.f32", 0) == 1.5f && tl_gguf_bool_or(h, "v.u8", true) == true);

    const tl_gguf_value *a = tl_gguf_get(h, "v.arr_i16");
    CHECK(a && a->type == TL_GGUF_ARRAY && a->v.arr.elem == TL_GGUF_I16 && a->v.arr.n == 3);
    CHECK(tl_gguf_arr_int(a, 0) == -1 && tl_gguf_arr_int(a, 2) == 300 && tl_gguf_arr_float(a, 1) == 2.0);
    CHECK(tl_gguf_get_u32(h, "v.arr_i16", &u32, &err) == TL_ERR_INVALID && strstr(err.msg, "array of 3 i16"));
    a = tl_gguf_get(h, "v.arr_str");
    CHECK(a && a->v.arr.n == 3 && a->v.arr.strs && tl_gguf_str_eq(a->v.arr.strs[0], "x") &&
          a->v.arr.strs[1].len == 0 && tl_gguf_str_eq(a->v.arr.strs[2], "h\xc3\xa9llo"));
    CHECK(tl_gguf_arr_int(a, 0) == 0); /* not numeric */
    a = tl_gguf_get(h, "v.arr_arr");
    CHECK(a && a->v.arr.elem == TL_GGUF_ARRAY && a->v.arr.n == 2 && a->v.arr.items);
    if (a && a->v.arr.items) {
        const tl_gguf_value *in = &a->v.arr.items[0];
        CHECK(in->type == TL_GGUF_ARRAY && in->v.arr.elem == TL_GGUF_F32 && in->v.arr.n == 2 &&
              tl_gguf_arr_float(in, 1) == 2.0 && tl_gguf_arr_int(in, 0) == 1);
        CHECK(a->v.arr.items[1].v.arr.n == 0 && a->v.arr.items[1].v.arr.elem == TL_GGUF_U8);
    }
    a = tl_gguf_get(h, "v.arr_bool");
    CHECK(a && tl_gguf_arr_int(a, 0) == 0 && tl_gguf_arr_int(a, 1) == 1);

    const tl_gguf_tensor *t = tl_gguf_find_tensor(h, "a.weight");
    CHECK(t && t->type == TL_TYPE_Q8_0 && t->n_dims == 2 && t->ne[1] == 2 && t->ne[3] == 1 && t->nbytes == 68 &&
          (const uint8_t *)t->data == g->b + tl_gguf_data_offset(h));
    t = tl_gguf_find_tensor(h, "b");
    CHECK(t && t->nbytes == 128 && t->offset == 128 && tl_gguf_tensor_at(h, 1) == t && tl_gguf_tensor_at(h, 2) == NULL);
    CHECK(tl_gguf_kv_value(h, 18) == NULL && tl_gguf_kv_key(h, 18).len == 0);
    tl_gguf_close(h);

    /* Cut short at every length: always a clean TL_ERR_FORMAT naming an offset. */
    size_t full = g->len;
    for (size_t n = 0; n < full; n++) {
        tl_gguf *c = (tl_gguf *)1;
        tl_error e = {0};
        tl_status st = tl_gguf_open_memory(g->b, n, "cut.gguf", &c, &e);
        if (st != TL_ERR_FORMAT || c != NULL || !strstr(e.msg, "offset ")) {
            CHECKF(0, "v%u cut at %zu: %s %s", version, n, tl_status_name(st), e.msg);
            if (c && c != (tl_gguf *)1)
                tl_gguf_close(c);
            break;
        }
    }
    free(g);
}

/* A file without tensors may end before the data-section padding (vocab files do). */
static void check_vocab_only(void) {
    gb *g = calloc(1, sizeof *g);
    header(g, 3, 0, 1);
    kv_str(g, "k", "abc");
    tl_gguf *h = OPEN_OK(g);
    if (h) {
        CHECK(tl_gguf_n_tensors(h) == 0 && tl_gguf_tensor_at(h, 0) == NULL && tl_gguf_find_tensor(h, "k") == NULL);
        CHECK(strcmp(tl_gguf_arch(h), "") == 0);
        tl_gguf_close(h);
    }
    free(g);
}

/* ---- bad input, one class at a time -------------------------------------- */

static void bad_header(gb *g) {
    header(g, 3, 0, 0);
    memcpy(g->b, "GGUG", 4);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "bad magic", 0);
    header(g, 4, 0, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "unsupported GGUF version 4", 4);
    header(g, 0, 0, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "version 0", 4);
    header(g, 0x03000000u, 0, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "byte-swapped", 4);
    g->len = 0;
    EXPECT_FAIL(g, TL_ERR_FORMAT, "truncated", 0);
    header(g, 3, 0, 0);
    g->len = 10; /* tensor count cut */
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensor count", 8);
    CHECK(tl_gguf_open_memory(NULL, 0, NULL, &(tl_gguf *){0}, NULL) == TL_ERR_FORMAT);
}

static void bad_counts(gb *g) {
    header(g, 3, 0, 1ull << 60);
    kv_u32(g, "a", 1);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "metadata entries cannot fit", 24);
    header(g, 3, 1ull << 60, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensors cannot fit", 24);
    header(g, 1, 0xFFFFFFFFu, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensors cannot fit", 16);
    /* Array counts: numeric, string and nested arrays. */
    static const uint32_t elem[] = {TL_GGUF_U64, TL_GGUF_STRING, TL_GGUF_ARRAY, TL_GGUF_U8};
    for (int k = 0; k < 4; k++) {
        header(g, 3, 0, 1);
        str_(g, "arr");
        u32_(g, TL_GGUF_ARRAY);
        u32_(g, elem[k]);
        size_t at = g->len;
        u64_(g, k == 3 ? 100 : (1ull << 62));
        zeros(g, 64);
        EXPECT_FAIL(g, TL_ERR_FORMAT, "key 'arr': ", (long long)at);
    }
}

static void bad_lengths(gb *g) {
    header(g, 3, 0, 1);
    size_t at = g->len;
    u64_(g, 1000); /* key length past the end */
    put(g, "abc", 3);
    zeros(g, 100);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "key length 1000 extends past end of file", (long long)at);
    header(g, 3, 0, 1);
    str_(g, "k");
    u32_(g, TL_GGUF_STRING);
    at = g->len;
    u64_(g, UINT64_MAX);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "string value length", (long long)at);
    header(g, 2, 0, 1);
    str_(g, "k");
    u32_(g, TL_GGUF_U64);
    u32_(g, 7); /* half a u64 */
    EXPECT_FAIL(g, TL_ERR_FORMAT, "truncated: u64", (long long)(g->len - 4));
}

static void bad_types(gb *g) {
    header(g, 3, 0, 1);
    str_(g, "k");
    size_t at = g->len;
    u32_(g, 13);
    u32_(g, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "key 'k': unknown value type 13", (long long)at);
    header(g, 3, 0, 1);
    str_(g, "k");
    u32_(g, TL_GGUF_ARRAY);
    at = g->len;
    u32_(g, 99);
    u64_(g, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "unknown array element type 99", (long long)at);

    uint64_t ne[2] = {32, 1};
    static const struct { uint32_t type; tl_status code; const char *want; } tt[] = {
        {33, TL_ERR_FORMAT, "unknown ggml type 33"},
        {1000, TL_ERR_FORMAT, "unknown ggml type 1000"},
        {16, TL_ERR_UNSUPPORTED, "IQ2_XXS (16) is not supported"},
        {4, TL_ERR_UNSUPPORTED, "Q4_2"},
    };
    for (int k = 0; k < 4; k++) {
        header(g, 3, 1, 0);
        size_t name_at = tinfo(g, "t", 2, ne, tt[k].type, 0);
        pad(g, 32);
        zeros(g, 1024);
        EXPECT_FAIL(g, tt[k].code, tt[k].want, (long long)(name_at + 8 + 1 + 4 + 16));
    }
}

/* One tensor with the given geometry; the error must name the tensor. */
static void one_tensor(gb *g, uint32_t version, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off,
                       size_t data, size_t *name_at) {
    header(g, version, 1, 0);
    *name_at = tinfo(g, "w", n_dims, ne, type, off);
    pad(g, 32);
    zeros(g, data);
}

static void bad_tensor_shapes(gb *g) {
    size_t at;
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    one_tensor(g, 3, 5, ne5, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensor 'w': n_dims 5 is outside 1..4", (long long)(at + 9));
    one_tensor(g, 3, 0, ne5, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "n_dims 0", (long long)(at + 9));
    uint64_t ne_zero[2] = {4, 0};
    one_tensor(g, 3, 2, ne_zero, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "dimension 1 is 0", (long long)(at + 9 + 4 + 8));
    uint64_t ne_neg[2] = {(uint64_t)-4, 1};
    one_tensor(g, 3, 2, ne_neg, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "dimension 0 is -4", (long long)(at + 9 + 4));
    uint64_t ne_big[3] = {1ull << 32, 1ull << 20, 1ull << 20};
    one_tensor(g, 3, 3, ne_big, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "element count overflows", (long long)(at + 9 + 4 + 16));
    uint64_t ne_bytes[2] = {1ull << 40, 1ull << 22}; /* 2^62 elements fit int64, 2^64 bytes do not */
    one_tensor(g, 3, 2, ne_bytes, TL_TYPE_F32, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "byte size overflows", -1);
    uint64_t ne_blk[2] = {33, 2};
    one_tensor(g, 3, 2, ne_blk, TL_TYPE_Q4_0, 0, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "row length 33 is not a multiple of the Q4_0 block size 32", (long long)(at + 9));
    uint64_t ne_k[1] = {320};
    one_tensor(g, 1, 1, ne_k, TL_TYPE_Q4_K, 0, 1024, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "Q4_K block size 256", (long long)(at + 5));
}

static void bad_tensor_data(gb *g) {
    size_t at;
    uint64_t ne[1] = {16}; /* F32: 64 bytes */
    one_tensor(g, 3, 1, ne, TL_TYPE_F32, 4, 128, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "data offset 4 is not a multiple of the alignment 32", (long long)at);
    one_tensor(g, 3, 1, ne, TL_TYPE_F32, 0, 63, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensor 'w': data (64 bytes at data offset 0) extends past end of file",
                (long long)(g->len - 63));
    one_tensor(g, 3, 1, ne, TL_TYPE_F32, 1ull << 63, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "extends past end of file", -1);
    one_tensor(g, 3, 1, ne, TL_TYPE_F32, UINT64_MAX - 31, 64, &at);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "extends past end of file", -1);

    /* Overlap: 'b' starts at 32 inside 'a' (0..64). */
    header(g, 3, 2, 0);
    tinfo(g, "a", 1, ne, TL_TYPE_F32, 0);
    tinfo(g, "b", 1, ne, TL_TYPE_F32, 32);
    pad(g, 32);
    size_t data_at = g->len;
    zeros(g, 128);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "tensor 'b' overlaps tensor 'a'", (long long)(data_at + 32));
    /* Same bytes listed in reverse order. */
    header(g, 3, 2, 0);
    tinfo(g, "b", 1, ne, TL_TYPE_F32, 32);
    tinfo(g, "a", 1, ne, TL_TYPE_F32, 0);
    pad(g, 32);
    zeros(g, 128);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "overlaps", -1);
    /* Adjacent is fine. */
    header(g, 3, 2, 0);
    tinfo(g, "b", 1, ne, TL_TYPE_F32, 64);
    tinfo(g, "a", 1, ne, TL_TYPE_F32, 0);
    pad(g, 32);
    zeros(g, 128);
    tl_gguf *h = OPEN_OK(g);
    tl_gguf_close(h);
    /* Data section padding itself past the end. */
    header(g, 3, 1, 0);
    tinfo(g, "a", 1, ne, TL_TYPE_F32, 0);
    size_t end = g->len;
    EXPECT_FAIL(g, TL_ERR_FORMAT, "data section", (long long)end);
}

static void bad_names(gb *g) {
    header(g, 3, 0, 2);
    kv_u32(g, "dup", 1);
    size_t at = g->len;
    kv_u32(g, "dup", 2);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "duplicate key 'dup'", (long long)at);

    uint64_t ne[1] = {8};
    header(g, 3, 2, 0);
    tinfo(g, "t", 1, ne, TL_TYPE_F32, 0);
    at = tinfo(g, "t", 1, ne, TL_TYPE_F32, 32);
    pad(g, 32);
    zeros(g, 64);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "duplicate tensor name 't'", (long long)at);

    static const char *bad[] = {"a\xff", "\xc0\x80", "\xed\xa0\x80", "a\0b", "\xf4\x90\x80\x80", "\xe2\x82"};
    static const size_t bad_len[] = {2, 2, 3, 3, 4, 2};
    for (int k = 0; k < 6; k++) {
        header(g, 3, 0, 1);
        at = g->len;
        strn(g, bad[k], bad_len[k]);
        u32_(g, TL_GGUF_U8);
        u8_(g, 0);
        EXPECT_FAIL(g, TL_ERR_FORMAT, "is not valid UTF-8", (long long)at);
        header(g, 3, 1, 0);
        at = g->len;
        strn(g, bad[k], bad_len[k]);
        u32_(g, 1);
        cnt(g, 8);
        u32_(g, TL_TYPE_F32);
        u64_(g, 0);
        pad(g, 32);
        zeros(g, 32);
        EXPECT_FAIL(g, TL_ERR_FORMAT, "tensor name", (long long)at);
    }
    header(g, 3, 0, 1);
    at = g->len;
    kv_u32(g, "", 1);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "empty key", (long long)at);
}

static void bad_alignment(gb *g) {
    static const uint32_t bad[] = {0, 3, 48, 0x80000000u};
    for (int k = 0; k < 4; k++) {
        header(g, 3, 0, 1);
        kv_u32(g, "general.alignment", bad[k]);
        EXPECT_FAIL(g, TL_ERR_FORMAT, "general.alignment", -1);
    }
    header(g, 3, 0, 1);
    kv_str(g, "general.alignment", "32");
    EXPECT_FAIL(g, TL_ERR_FORMAT, "general.alignment is a string", -1);
    header(g, 3, 0, 1);
    kv_u32(g, "general.alignment", 1);
    tl_gguf *h = OPEN_OK(g);
    CHECK(h && tl_gguf_alignment(h) == 1);
    tl_gguf_close(h);
}

static void bad_nesting(gb *g) {
    header(g, 3, 0, 1);
    str_(g, "deep");
    u32_(g, TL_GGUF_ARRAY);
    size_t at = 0;
    for (int d = 0; d < 20; d++) {
        if (d == 8)
            at = g->len;
        u32_(g, TL_GGUF_ARRAY);
        cnt(g, 1);
    }
    u32_(g, TL_GGUF_U8);
    cnt(g, 0);
    EXPECT_FAIL(g, TL_ERR_FORMAT, "nested deeper than 8", (long long)at);
}

int main(void) {
    check_full(1);
    check_full(2);
    check_full(3);
    check_vocab_only();
    gb *g = calloc(1, sizeof *g);
    bad_header(g);
    bad_counts(g);
    bad_lengths(g);
    bad_types(g);
    bad_tensor_shapes(g);
    bad_tensor_data(g);
    bad_names(g);
    bad_alignment(g);
    bad_nesting(g);
    free(g);
    return TEST_DONE();
}
