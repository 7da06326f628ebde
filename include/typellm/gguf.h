/* typellm/gguf.h: reader for GGUF model files, versions 1, 2 and 3.
 *
 * tl_gguf_open mmaps the file, validates the whole header (every length and
 * count is checked against the bytes that remain before anything is
 * allocated), and exposes the key/value metadata and the tensor table. All
 * strings point into the mapping and are NOT NUL-terminated: use the length.
 * Errors name the byte offset and the problem, e.g.
 *   "model.gguf: offset 1234: tensor 'blk.0.attn_q.weight': data extends past end of file".
 * The tl_gguf owns the mapping; pointers from it live until tl_gguf_close. */
#ifndef TYPELLM_GGUF_H
#define TYPELLM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ggml tensor types --------------------------------------------------- */

typedef enum tl_ggml_type {
    TL_TYPE_F32 = 0,
    TL_TYPE_F16 = 1,
    TL_TYPE_Q4_0 = 2,
    TL_TYPE_Q4_1 = 3,
    TL_TYPE_Q5_0 = 6,
    TL_TYPE_Q5_1 = 7,
    TL_TYPE_Q8_0 = 8,
    TL_TYPE_Q8_1 = 9,
    TL_TYPE_Q2_K = 10,
    TL_TYPE_Q3_K = 11,
    TL_TYPE_Q4_K = 12,
    TL_TYPE_Q5_K = 13,
    TL_TYPE_Q6_K = 14,
    TL_TYPE_Q8_K = 15,
    TL_TYPE_I8 = 24,
    TL_TYPE_I16 = 25,
    TL_TYPE_I32 = 26,
    TL_TYPE_I64 = 27,
    TL_TYPE_F64 = 28,
    TL_TYPE_BF16 = 30,
    TL_TYPE_MXFP4 = 39,
    TL_TYPE_COUNT = 40
} tl_ggml_type;

/* Elements per block (1 for plain types, 32 or 256 for quantized), or 0 if unknown. */
TL_API int64_t tl_type_block_elems(tl_ggml_type t);
/* Bytes per block, or 0 if unknown. */
TL_API size_t tl_type_block_bytes(tl_ggml_type t);
/* "F32", "Q4_K", ...; "unknown" for ids the table lacks. */
TL_API const char *tl_type_name(tl_ggml_type t);
/* Bytes of a row of n elements (n must be a multiple of the block size), 0 if invalid. */
TL_API size_t tl_type_row_bytes(tl_ggml_type t, int64_t n);

/* ---- metadata values ----------------------------------------------------- */

typedef enum tl_gguf_vtype {
    TL_GGUF_U8 = 0, TL_GGUF_I8 = 1, TL_GGUF_U16 = 2, TL_GGUF_I16 = 3,
    TL_GGUF_U32 = 4, TL_GGUF_I32 = 5, TL_GGUF_F32 = 6, TL_GGUF_BOOL = 7,
    TL_GGUF_STRING = 8, TL_GGUF_ARRAY = 9, TL_GGUF_U64 = 10, TL_GGUF_I64 = 11,
    TL_GGUF_F64 = 12
} tl_gguf_vtype;

TL_API const char *tl_gguf_vtype_name(tl_gguf_vtype t); /* "u32", "string", "array", ... */
/* Bytes of one scalar of type t on disk; 0 for string, array and unknown types. */
TL_API size_t tl_gguf_scalar_size(tl_gguf_vtype t);

typedef struct tl_gguf_str {
    const char *ptr; /* into the mapping; not NUL-terminated */
    uint64_t len;
} tl_gguf_str;

typedef struct tl_gguf_value tl_gguf_value;
struct tl_gguf_value {
    tl_gguf_vtype type;
    union {
        uint64_t u;     /* U8/U16/U32/U64 and BOOL (0/1) */
        int64_t i;      /* I8/I16/I32/I64 */
        double f;       /* F32/F64 */
        tl_gguf_str s;  /* STRING */
        struct {
            tl_gguf_vtype elem;          /* element type */
            uint64_t n;                  /* element count */
            const uint8_t *raw;          /* numeric/bool elements: little-endian, packed,
                                            possibly unaligned (read with the helpers below) */
            const tl_gguf_str *strs;     /* STRING elements (n entries), else NULL */
            const tl_gguf_value *items;  /* ARRAY elements (nested arrays), else NULL */
        } arr;
    } v;
};

/* Numeric array element i as int64/double (any integer/float/bool element type). */
TL_API int64_t tl_gguf_arr_int(const tl_gguf_value *arr, uint64_t i);
TL_API double tl_gguf_arr_float(const tl_gguf_value *arr, uint64_t i);

/* ---- tensors ------------------------------------------------------------- */

typedef struct tl_gguf_tensor {
    tl_gguf_str name;
    uint32_t n_dims;   /* 1..4 */
    int64_t ne[4];     /* ne[0] = contiguous row length; unused dims are 1 */
    tl_ggml_type type;
    uint64_t offset;   /* from the start of the data section */
    size_t nbytes;
    const void *data;  /* into the mapping */
} tl_gguf_tensor;

/* ---- the file ------------------------------------------------------------ */

/* Opens and validates path (mmap, read-only). A mapped file must not be
 * truncated or rewritten in place while open: the next access to a page past
 * the new end raises SIGBUS (replace files by rename instead, as
 * `typellm quantize` does, or open with TL_GGUF_NO_MMAP). A file shorter than
 * its tensor table says is an error that says so. */
TL_API tl_status tl_gguf_open(const char *path, tl_gguf **out, tl_error *err);
/* tl_gguf_open with flags: TL_GGUF_NO_MMAP reads the whole file into memory
 * (slower to start, more resident memory, immune to the file changing). */
enum { TL_GGUF_NO_MMAP = 1 };
TL_API tl_status tl_gguf_open_ex(const char *path, unsigned flags, tl_gguf **out, tl_error *err);
/* Same over a caller-owned buffer (kept alive by the caller); used by the fuzzer
 * and tests. name is used in error messages. */
TL_API tl_status tl_gguf_open_memory(const void *data, size_t len, const char *name, tl_gguf **out, tl_error *err);
TL_API void tl_gguf_close(tl_gguf *g);

TL_API uint32_t tl_gguf_version(const tl_gguf *g);
TL_API uint64_t tl_gguf_file_size(const tl_gguf *g);
TL_API uint32_t tl_gguf_alignment(const tl_gguf *g);
/* Start of the tensor data: the end of the tensor table rounded up to the alignment.
 * A file without tensors (vocab-only) may end before it. */
TL_API uint64_t tl_gguf_data_offset(const tl_gguf *g);
TL_API const char *tl_gguf_path(const tl_gguf *g);

TL_API uint64_t tl_gguf_n_kv(const tl_gguf *g);
TL_API tl_gguf_str tl_gguf_kv_key(const tl_gguf *g, uint64_t i);
TL_API const tl_gguf_value *tl_gguf_kv_value(const tl_gguf *g, uint64_t i);
/* NULL when the key is absent. Lookup is O(1) average (hashed at open). */
TL_API const tl_gguf_value *tl_gguf_get(const tl_gguf *g, const char *key);

/* Typed getters: TL_OK and *out set; TL_ERR_INVALID (message names the key and
 * the actual type) when the key is absent or cannot be converted. Integer getters
 * accept any integer width (and bool) whose value fits the requested type. */
TL_API tl_status tl_gguf_get_u32(const tl_gguf *g, const char *key, uint32_t *out, tl_error *err);
TL_API tl_status tl_gguf_get_i32(const tl_gguf *g, const char *key, int32_t *out, tl_error *err);
TL_API tl_status tl_gguf_get_u64(const tl_gguf *g, const char *key, uint64_t *out, tl_error *err);
TL_API tl_status tl_gguf_get_i64(const tl_gguf *g, const char *key, int64_t *out, tl_error *err);
TL_API tl_status tl_gguf_get_f32(const tl_gguf *g, const char *key, float *out, tl_error *err);  /* f32/f64/ints */
TL_API tl_status tl_gguf_get_bool(const tl_gguf *g, const char *key, bool *out, tl_error *err);
TL_API tl_status tl_gguf_get_str(const tl_gguf *g, const char *key, tl_gguf_str *out, tl_error *err);
/* Convenience: returns the value or def when the key is absent (still TL_ERR_INVALID
 * in *err-free form: a present key of an unconvertible type returns def). */
TL_API uint32_t tl_gguf_u32_or(const tl_gguf *g, const char *key, uint32_t def);
TL_API float tl_gguf_f32_or(const tl_gguf *g, const char *key, float def);
TL_API bool tl_gguf_bool_or(const tl_gguf *g, const char *key, bool def);
/* True and *out set when key is a string equal to... (helper for arch checks). */
TL_API bool tl_gguf_str_eq(tl_gguf_str s, const char *cstr);

/* general.architecture as a NUL-terminated string in a static-per-handle buffer ("" if absent). */
TL_API const char *tl_gguf_arch(const tl_gguf *g);

TL_API uint64_t tl_gguf_n_tensors(const tl_gguf *g);
TL_API const tl_gguf_tensor *tl_gguf_tensor_at(const tl_gguf *g, uint64_t i);
/* NULL when absent. O(1) average. */
TL_API const tl_gguf_tensor *tl_gguf_find_tensor(const tl_gguf *g, const char *name);


#ifdef __cplusplus
}
#endif
#endif
