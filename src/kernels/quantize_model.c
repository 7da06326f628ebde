/* quantize_model.c: converts a whole GGUF model to another weight type
 * (`typellm quantize`). Metadata is copied unchanged except general.file_type
 * (and general.alignment = 32); each 2-D weight is dequantized row by row and
 * requantized on the pool's threads; 1-D tensors and norms stay F32.
 *
 * Mixes follow llama.cpp's so files compare like for like: Q4_K_M puts Q6_K
 * on output.weight (on token_embd when the output is tied), on attn_v and
 * ffn_down of the "more bits" layers (first and last eighth, every third in
 * between); everything else Q4_K. Rows that are not a multiple of 256 fall
 * back to 32-blocks (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0), rows that are
 * not a multiple of 32 to F16. MXFP4_MOE (gpt-oss files) puts MXFP4 on the
 * expert stacks (*_exps) and Q8_0 on the rest. Routers (ffn_gate_inp) stay
 * F32 under every target, as llama.cpp keeps them, and so do the recurrent
 * layers' convolution kernels (ssm_conv1d). */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels_internal.h"
#include "kernels/quantize_model.h"
#include "kernels/gguf_writer.h"
#include "util/error.h"
#include "util/fileio.h"

typedef struct {
    const char *name;
    tl_ggml_type base;
    int mix_more_bits;  /* the _M mixes */
    uint32_t file_type; /* llama.cpp's llama_ftype */
    int mxfp4_experts;  /* *_exps tensors in MXFP4 */
} target_desc;

static const target_desc targets[] = {
    {"F32", TL_TYPE_F32, 0, 0, 0},    {"F16", TL_TYPE_F16, 0, 1, 0},    {"BF16", TL_TYPE_BF16, 0, 32, 0},
    {"Q4_0", TL_TYPE_Q4_0, 0, 2, 0},  {"Q4_1", TL_TYPE_Q4_1, 0, 3, 0},  {"Q8_0", TL_TYPE_Q8_0, 0, 7, 0},
    {"Q5_0", TL_TYPE_Q5_0, 0, 8, 0},  {"Q5_1", TL_TYPE_Q5_1, 0, 9, 0},  {"Q4_K", TL_TYPE_Q4_K, 0, 14, 0},
    {"Q4_K_S", TL_TYPE_Q4_K, 0, 14, 0}, {"Q4_K_M", TL_TYPE_Q4_K, 1, 15, 0}, {"Q5_K", TL_TYPE_Q5_K, 0, 16, 0},
    {"Q5_K_S", TL_TYPE_Q5_K, 0, 16, 0}, {"Q5_K_M", TL_TYPE_Q5_K, 1, 17, 0}, {"Q6_K", TL_TYPE_Q6_K, 0, 18, 0},
    {"MXFP4_MOE", TL_TYPE_Q8_0, 0, 38, 1},
};

const char *tl_quantize_type_names(void) {
    return "F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K (=Q4_K_S) Q4_K_M Q5_K (=Q5_K_S) Q5_K_M Q6_K MXFP4_MOE";
}

static const target_desc *find_target(const char *name) {
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (!strcmp(targets[i].name, name)) return &targets[i];
    return NULL;
}

static int name_is(tl_gguf_str s, const char *suffix_or_full, int full) {
    size_t n = strlen(suffix_or_full);
    if (full) return s.len == n && !memcmp(s.ptr, suffix_or_full, n);
    return s.len >= n && !memcmp(s.ptr + s.len - n, suffix_or_full, n);
}

static int name_contains(tl_gguf_str s, const char *part) {
    size_t n = strlen(part);
    for (uint64_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, part, n)) return 1;
    return 0;
}

/* Layer index from "blk.N.", or -1. */
static int layer_of(tl_gguf_str s) {
    if (s.len < 5 || memcmp(s.ptr, "blk.", 4)) return -1;
    int n = 0;
    uint64_t i = 4;
    if (i >= s.len || s.ptr[i] < '0' || s.ptr[i] > '9') return -1;
    for (; i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9' && n < 100000; i++) n = n * 10 + (s.ptr[i] - '0');
    return n;
}

static int use_more_bits(int layer, int n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}


/* The type a tensor gets, or TL_TYPE_COUNT to copy it unchanged. */
static tl_ggml_type choose_type(const tl_gguf_tensor *T, const target_desc *tgt, int n_layer, int has_output) {
    if (!tl_kernels_supports(T->type)) return TL_TYPE_COUNT; /* e.g. I32 tables: keep */
    if (T->n_dims < 2 || name_contains(T->name, "norm") || name_contains(T->name, "ffn_gate_inp") ||
        name_contains(T->name, "ssm_conv1d") || /* llama.cpp's conv op reads F32 kernels only */
        !name_is(T->name, ".weight", 0)) /* biases (gpt-oss experts' are 2-D) */
        return TL_TYPE_F32;
    tl_ggml_type t = tgt->base;
    if (tgt->mxfp4_experts && name_contains(T->name, "_exps.")) t = TL_TYPE_MXFP4;
    if (tgt->mix_more_bits) {
        int layer = layer_of(T->name);
        if (name_is(T->name, "output.weight", 1) || (!has_output && name_is(T->name, "token_embd.weight", 1)))
            t = TL_TYPE_Q6_K;
        else if ((name_is(T->name, "attn_v.weight", 0) || name_is(T->name, "ffn_down.weight", 0)) && layer >= 0 &&
                 use_more_bits(layer, n_layer))
            t = TL_TYPE_Q6_K;
    }
    int64_t n = T->ne[0];
    if (n % tl_kernels_block_elems(t)) {
        switch (t) {
        case TL_TYPE_Q4_K: t = TL_TYPE_Q5_0; break;
        case TL_TYPE_Q5_K: t = TL_TYPE_Q5_1; break;
        case TL_TYPE_Q6_K: t = TL_TYPE_Q8_0; break;
        default: break;
        }
        if (n % tl_kernels_block_elems(t)) t = TL_TYPE_F16;
    }
    return t;
}

typedef struct {
    tl_gguf *in;
    tl_pool *pool;
    tl_ggml_type *types;  /* per tensor; TL_TYPE_COUNT = copy */
    /* current tensor, for the row workers */
    const tl_gguf_tensor *src;
    tl_ggml_type dst_type;
    uint8_t *dst;
    int64_t n;
    size_t src_rb, dst_rb;
    int failed;
} quant_ctx;

static void quant_rows(void *v, int64_t r0, int64_t r1, int thread) {
    quant_ctx *q = v;
    float *row = malloc(sizeof(float) * (size_t)q->n);
    if (!row) { q->failed = 1; return; }
    for (int64_t r = r0; r < r1; r++) {
        tl_dequant_row(q->src->type, (const uint8_t *)q->src->data + (size_t)r * q->src_rb, row, q->n);
        tl_quantize_row(q->dst_type, row, q->dst + (size_t)r * q->dst_rb, q->n);
    }
    free(row);
}

static tl_status fill_tensor(void *ctx, uint64_t i, void *dst, size_t nbytes, tl_error *err) {
    quant_ctx *q = ctx;
    const tl_gguf_tensor *T = tl_gguf_tensor_at(q->in, i);
    if (q->types[i] == TL_TYPE_COUNT) {
        memcpy(dst, T->data, nbytes < T->nbytes ? nbytes : T->nbytes);
        return TL_OK;
    }
    q->src = T;
    q->dst_type = q->types[i];
    q->dst = dst;
    q->n = T->ne[0];
    q->src_rb = tl_type_row_bytes(T->type, T->ne[0]);
    q->dst_rb = tl_type_row_bytes(q->dst_type, T->ne[0]);
    q->failed = 0;
    int64_t rows = (int64_t)(nbytes / q->dst_rb);
    tl_pool_run(q->pool, rows, 16, quant_rows, q);
    if (q->failed) return tl_error_set(err, TL_ERR_NOMEM, "quantize: out of memory converting '%.*s'", (int)T->name.len, T->name.ptr);
    return TL_OK;
}

tl_status tl_quantize_model(const char *in_path, const char *out_path, const char *type_name, int n_threads,
                            tl_quantize_stats *stats, tl_error *err) {
    const target_desc *tgt = find_target(type_name);
    if (!tgt) return tl_error_set(err, TL_ERR_INVALID, "quantize: unknown type '%s' (known: %s)", type_name, tl_quantize_type_names());
    /* The output is written beside its name and renamed over it at the end,
     * so overwriting a model in use is safe; writing over the input is
     * refused all the same: it is almost always a typo. */
    if (tl_same_file(in_path, out_path))
        return tl_error_set(err, TL_ERR_INVALID, "quantize: %s and %s are the same file; write to another name",
                            in_path, out_path);
    tl_gguf *in = NULL;
    tl_status s = tl_gguf_open(in_path, &in, err);
    if (s) return s;
    uint64_t nt = tl_gguf_n_tensors(in);
    quant_ctx q = {in, NULL, NULL, NULL, TL_TYPE_F32, NULL, 0, 0, 0, 0};
    tl_gguf_writer *w = tl_gguf_writer_new(32);
    q.types = calloc(nt ? nt : 1, sizeof *q.types);
    q.pool = tl_pool_new(n_threads);
    if (!w || !q.types || !q.pool) {
        s = tl_error_set(err, TL_ERR_NOMEM, "quantize: out of memory");
        goto done;
    }
    /* metadata: everything but the keys this file redefines */
    for (uint64_t i = 0; i < tl_gguf_n_kv(in) && !s; i++) {
        tl_gguf_str key = tl_gguf_kv_key(in, i);
        if (name_is(key, "general.alignment", 1) || name_is(key, "general.file_type", 1)) continue;
        s = tl_gguf_writer_set_value(w, key.ptr, key.len, tl_gguf_kv_value(in, i), err);
    }
    if (s) goto done;
    s = tl_gguf_writer_set_u32(w, "general.file_type", tgt->file_type, err);
    if (!s && tgt->base != TL_TYPE_F32 && tgt->base != TL_TYPE_F16 && tgt->base != TL_TYPE_BF16)
        s = tl_gguf_writer_set_u32(w, "general.quantization_version", 2, err);
    if (s) goto done;

    char key[256];
    snprintf(key, sizeof key, "%s.block_count", tl_gguf_arch(in));
    int n_layer = (int)tl_gguf_u32_or(in, key, 0);
    int has_output = tl_gguf_find_tensor(in, "output.weight") != NULL;
    for (uint64_t i = 0; i < nt && !s; i++) {
        const tl_gguf_tensor *T = tl_gguf_tensor_at(in, i);
        q.types[i] = choose_type(T, tgt, n_layer, has_output);
        tl_ggml_type out_type = q.types[i] == TL_TYPE_COUNT ? T->type : q.types[i];
        s = tl_gguf_writer_add_tensor(w, T->name.ptr, T->name.len, T->n_dims, T->ne, out_type, err);
        if (stats) {
            if (out_type < TL_TYPE_COUNT) stats->tensors_by_type[out_type]++;
            stats->bytes_in += T->nbytes;
            stats->bytes_out += tl_type_row_bytes(out_type, T->ne[0]) * (uint64_t)(T->ne[1] * T->ne[2] * T->ne[3]);
        }
    }
    if (!s) s = tl_gguf_writer_write(w, out_path, fill_tensor, &q, err);
done:
    tl_pool_free(q.pool);
    free(q.types);
    tl_gguf_writer_free(w);
    tl_gguf_close(in);
    return s;
}
