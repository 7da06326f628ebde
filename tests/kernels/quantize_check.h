/* quantize_check.h: the check shared by test_quantize.c and
 * test_quantize_types_slow.c: convert a fixture model with tl_quantize_model,
 * reopen the output with the GGUF reader and verify that every input key is
 * carried over with the same value, general.file_type / alignment are set,
 * tensors keep names and shapes, norms stay F32, each tensor has the expected
 * type, and every weight decodes to the original within the format's error. */
#ifndef TL_TESTS_KERNELS_QUANTIZE_CHECK_H
#define TL_TESTS_KERNELS_QUANTIZE_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "kernels/quantize_model.h"
#include "tl_test.h"

static char tmpdir[256];

/* Relative RMS error a type may add on these (Gaussian) weights. */
static double rms_bound(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_F32: return 0;
    case TL_TYPE_F16: return 1e-3;
    case TL_TYPE_BF16: return 5e-3;
    case TL_TYPE_Q8_0: return 0.012;
    case TL_TYPE_Q6_K: return 0.03;
    case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: case TL_TYPE_Q5_K: return 0.06;
    default: return 0.13;
    }
}

static int values_equal(const tl_gguf_value *a, const tl_gguf_value *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case TL_GGUF_STRING: return a->v.s.len == b->v.s.len && !memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len);
    case TL_GGUF_F32: case TL_GGUF_F64: return a->v.f == b->v.f;
    case TL_GGUF_ARRAY:
        if (a->v.arr.elem != b->v.arr.elem || a->v.arr.n != b->v.arr.n) return 0;
        if (a->v.arr.elem == TL_GGUF_STRING) {
            for (uint64_t i = 0; i < a->v.arr.n; i++)
                if (a->v.arr.strs[i].len != b->v.arr.strs[i].len ||
                    memcmp(a->v.arr.strs[i].ptr, b->v.arr.strs[i].ptr, a->v.arr.strs[i].len)) return 0;
            return 1;
        }
        if (a->v.arr.elem == TL_GGUF_ARRAY) return 1; /* nested: not in fixtures */
        for (uint64_t i = 0; i < a->v.arr.n; i++)
            if (tl_gguf_arr_float(a, i) != tl_gguf_arr_float(b, i)) return 0;
        return 1;
    default: return a->v.u == b->v.u;
    }
}

static void check_conversion(const char *fixture, const char *type_name, tl_ggml_type base, uint32_t file_type,
                             const char *const *expect_names, const tl_ggml_type *expect_types, int n_expect) {
    char out[512];
    snprintf(out, sizeof out, "%s/out-%s.gguf", tmpdir, type_name);
    tl_error err = {0};
    tl_quantize_stats stats;
    memset(&stats, 0, sizeof stats);
    tl_status s = tl_quantize_model(tl_fixture(fixture), out, type_name, 2, &stats, &err);
    CHECKF(s == TL_OK, "quantize %s to %s: %s", fixture, type_name, err.msg);
    if (s) return;
    tl_gguf *in = NULL, *q = NULL;
    CHECK(tl_gguf_open(tl_fixture(fixture), &in, &err) == TL_OK);
    s = tl_gguf_open(out, &q, &err);
    CHECKF(s == TL_OK, "reopen %s: %s", out, err.msg);
    if (s) { tl_gguf_close(in); return; }

    CHECK(tl_gguf_version(q) == 3);
    CHECK(tl_gguf_alignment(q) == 32);
    uint32_t ft = 999;
    CHECK(tl_gguf_get_u32(q, "general.file_type", &ft, &err) == TL_OK);
    CHECKF(ft == file_type, "%s: general.file_type %u, want %u", type_name, ft, file_type);
    /* metadata carried over */
    for (uint64_t i = 0; i < tl_gguf_n_kv(in); i++) {
        tl_gguf_str k = tl_gguf_kv_key(in, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        if (!strcmp(key, "general.file_type") || !strcmp(key, "general.alignment")) continue;
        const tl_gguf_value *v = tl_gguf_get(q, key);
        CHECKF(v && values_equal(tl_gguf_kv_value(in, i), v), "%s: key %s not carried over", type_name, key);
    }
    /* tensors */
    CHECK(tl_gguf_n_tensors(q) == tl_gguf_n_tensors(in));
    int64_t worst_tensor = -1;
    double worst = 0;
    for (uint64_t i = 0; i < tl_gguf_n_tensors(in) && i < tl_gguf_n_tensors(q); i++) {
        const tl_gguf_tensor *A = tl_gguf_tensor_at(in, i), *B = tl_gguf_tensor_at(q, i);
        CHECK(A->name.len == B->name.len && !memcmp(A->name.ptr, B->name.ptr, A->name.len));
        CHECK(A->n_dims == B->n_dims && !memcmp(A->ne, B->ne, sizeof A->ne));
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)A->name.len, A->name.ptr);
        tl_ggml_type want = base;
        if (A->n_dims == 1 || strstr(name, "norm")) want = TL_TYPE_F32;
        for (int e = 0; e < n_expect; e++)
            if (!strcmp(name, expect_names[e]) ||
                ((!strncmp(expect_names[e], "blk.", 4) || expect_names[e][0] == '_') && strstr(name, expect_names[e])))
                want = expect_types[e];
        CHECKF(B->type == want, "%s: tensor %s has type %s, want %s", type_name, name, tl_type_name(B->type), tl_type_name(want));
        /* values: relative RMS error over the tensor */
        int64_t n = A->ne[0], rows = A->ne[1] * A->ne[2] * A->ne[3];
        size_t ra = tl_type_row_bytes(A->type, n), rb = tl_type_row_bytes(B->type, n);
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        double se = 0, sx = 0;
        for (int64_t r = 0; r < rows; r++) {
            tl_dequant_row(A->type, (const uint8_t *)A->data + (size_t)r * ra, x, n);
            tl_dequant_row(B->type, (const uint8_t *)B->data + (size_t)r * rb, y, n);
            for (int64_t j = 0; j < n; j++) { se += (double)(x[j] - y[j]) * (x[j] - y[j]); sx += (double)x[j] * x[j]; }
        }
        double rel = sx > 0 ? sqrt(se / sx) : sqrt(se);
        CHECKF(rel <= rms_bound(B->type), "%s: tensor %s (%s): relative RMS error %g", type_name, name,
               tl_type_name(B->type), rel);
        if (rel > worst) { worst = rel; worst_tensor = (int64_t)i; }
        free(x);
        free(y);
    }
    fprintf(stderr, "%s -> %s: %.1f MB -> %.1f MB, worst relative RMS %.4f (tensor %lld)\n", fixture, type_name,
            stats.bytes_in / 1e6, stats.bytes_out / 1e6, worst, (long long)worst_tensor);
    tl_gguf_close(q);
    tl_gguf_close(in);
    unlink(out);
}

#endif
