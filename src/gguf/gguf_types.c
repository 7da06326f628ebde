/* gguf_types.c: the ggml tensor type table (block geometry and names) and the
 * names of GGUF metadata value types. One table so the reader, the kernels and
 * `typellm inspect` agree on what a type id means. Block sizes follow ggml's
 * block structs (see ../shared/docs/engine.md for the layouts). */
#include "gguf/gguf.h"

typedef struct type_info {
    const char *name;
    int64_t block_elems; /* weights per block; 0 = type we cannot size */
    size_t block_bytes;  /* bytes per block */
} type_info;

static const type_info type_table[TL_TYPE_COUNT] = {
    [TL_TYPE_F32] = {"F32", 1, 4},
    [TL_TYPE_F16] = {"F16", 1, 2},
    [TL_TYPE_Q4_0] = {"Q4_0", 32, 18},  /* fp16 d + 16 B nibbles */
    [TL_TYPE_Q4_1] = {"Q4_1", 32, 20},  /* fp16 d, m + 16 B nibbles */
    [4] = {"Q4_2", 0, 0},               /* removed from ggml; ids kept for names */
    [5] = {"Q4_3", 0, 0},
    [TL_TYPE_Q5_0] = {"Q5_0", 32, 22},  /* fp16 d + u32 high bits + 16 B */
    [TL_TYPE_Q5_1] = {"Q5_1", 32, 24},  /* fp16 d, m + u32 + 16 B */
    [TL_TYPE_Q8_0] = {"Q8_0", 32, 34},  /* fp16 d + 32 int8 */
    [TL_TYPE_Q8_1] = {"Q8_1", 32, 36},  /* fp16 d, s + 32 int8 */
    [TL_TYPE_Q2_K] = {"Q2_K", 256, 84},
    [TL_TYPE_Q3_K] = {"Q3_K", 256, 110},
    [TL_TYPE_Q4_K] = {"Q4_K", 256, 144},
    [TL_TYPE_Q5_K] = {"Q5_K", 256, 176},
    [TL_TYPE_Q6_K] = {"Q6_K", 256, 210},
    [TL_TYPE_Q8_K] = {"Q8_K", 256, 292}, /* f32 d + 256 int8 + 16 int16 sums */
    [16] = {"IQ2_XXS", 0, 0},
    [17] = {"IQ2_XS", 0, 0},
    [18] = {"IQ3_XXS", 0, 0},
    [19] = {"IQ1_S", 0, 0},
    [20] = {"IQ4_NL", 0, 0},
    [21] = {"IQ3_S", 0, 0},
    [22] = {"IQ2_S", 0, 0},
    [23] = {"IQ4_XS", 0, 0},
    [TL_TYPE_I8] = {"I8", 1, 1},
    [TL_TYPE_I16] = {"I16", 1, 2},
    [TL_TYPE_I32] = {"I32", 1, 4},
    [TL_TYPE_I64] = {"I64", 1, 8},
    [TL_TYPE_F64] = {"F64", 1, 8},
    [29] = {"IQ1_M", 0, 0},
    [TL_TYPE_BF16] = {"BF16", 1, 2},
    [34] = {"TQ1_0", 0, 0},
    [35] = {"TQ2_0", 0, 0},
    [TL_TYPE_MXFP4] = {"MXFP4", 32, 17}, /* e8m0 exponent + 16 B of e2m1 nibbles */
};

static const type_info *type_lookup(tl_ggml_type t) {
    if ((unsigned)t >= TL_TYPE_COUNT)
        return NULL;
    return &type_table[t];
}

int64_t tl_type_block_elems(tl_ggml_type t) {
    const type_info *ti = type_lookup(t);
    return ti ? ti->block_elems : 0;
}

size_t tl_type_block_bytes(tl_ggml_type t) {
    const type_info *ti = type_lookup(t);
    return ti && ti->block_elems ? ti->block_bytes : 0;
}

const char *tl_type_name(tl_ggml_type t) {
    const type_info *ti = type_lookup(t);
    return ti && ti->name ? ti->name : "unknown";
}

size_t tl_type_row_bytes(tl_ggml_type t, int64_t n) {
    const type_info *ti = type_lookup(t);
    if (!ti || ti->block_elems <= 0 || n < 0 || n % ti->block_elems)
        return 0;
    uint64_t blocks = (uint64_t)(n / ti->block_elems);
    if (blocks > SIZE_MAX / ti->block_bytes)
        return 0;
    return (size_t)blocks * ti->block_bytes;
}

/* The metadata value types: name and bytes of one scalar (0: string, array). */
static const struct {
    const char *name;
    size_t size;
} vtype_table[] = {
    [TL_GGUF_U8] = {"u8", 1},       [TL_GGUF_I8] = {"i8", 1},     [TL_GGUF_U16] = {"u16", 2},
    [TL_GGUF_I16] = {"i16", 2},     [TL_GGUF_U32] = {"u32", 4},   [TL_GGUF_I32] = {"i32", 4},
    [TL_GGUF_F32] = {"f32", 4},     [TL_GGUF_BOOL] = {"bool", 1}, [TL_GGUF_STRING] = {"string", 0},
    [TL_GGUF_ARRAY] = {"array", 0}, [TL_GGUF_U64] = {"u64", 8},   [TL_GGUF_I64] = {"i64", 8},
    [TL_GGUF_F64] = {"f64", 8},
};

const char *tl_gguf_vtype_name(tl_gguf_vtype t) {
    return (unsigned)t < sizeof vtype_table / sizeof vtype_table[0] ? vtype_table[t].name : "unknown";
}

size_t tl_gguf_scalar_size(tl_gguf_vtype t) {
    return (unsigned)t < sizeof vtype_table / sizeof vtype_table[0] ? vtype_table[t].size : 0;
}
