/* fuzz_gguf.c: libFuzzer target for the GGUF reader. Parses the input with
 * tl_gguf_open_memory and, when it opens, touches everything a caller can
 * reach: every key through the hash and every typed getter, every array
 * element (nested too), every tensor by index and by name, and the first and
 * last byte of each tensor's data, so an unchecked length shows up under ASan.
 * Seeds: fuzz/corpus/gguf/ (small hand-made files). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

static volatile uint64_t sink; /* keeps the reads from being optimised away */

static void touch_value(const tl_gguf_value *v, int depth) {
    if (v->type == TL_GGUF_STRING) {
        if (v->v.s.len)
            sink += (uint8_t)v->v.s.ptr[0] + (uint8_t)v->v.s.ptr[v->v.s.len - 1];
        return;
    }
    if (v->type != TL_GGUF_ARRAY) {
        sink += v->v.u;
        return;
    }
    uint64_t n = v->v.arr.n;
    for (uint64_t i = 0; i < n && i < 64; i++) {
        uint64_t j = i < 32 ? i : n - 1 - (i - 32); /* both ends of long arrays */
        if (v->v.arr.strs) {
            tl_gguf_value s = {.type = TL_GGUF_STRING};
            s.v.s = v->v.arr.strs[j];
            touch_value(&s, depth);
        } else if (v->v.arr.items) {
            if (depth < 16)
                touch_value(&v->v.arr.items[j], depth + 1);
        } else {
            sink += (uint64_t)tl_gguf_arr_int(v, j);
            double f = tl_gguf_arr_float(v, j);
            sink += f == f;
        }
    }
    sink += (uint64_t)tl_gguf_arr_int(v, n); /* out of range: must return 0 */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tl_gguf *g = NULL;
    tl_error err;
    if (tl_gguf_open_memory(data, size, "fuzz.gguf", &g, &err) != TL_OK)
        return 0;

    sink += tl_gguf_version(g) + tl_gguf_file_size(g) + tl_gguf_alignment(g) + tl_gguf_data_offset(g);
    sink += strlen(tl_gguf_arch(g)) + strlen(tl_gguf_path(g));
    char key[512];
    for (uint64_t i = 0; i < tl_gguf_n_kv(g); i++) {
        tl_gguf_str k = tl_gguf_kv_key(g, i);
        const tl_gguf_value *v = tl_gguf_kv_value(g, i);
        touch_value(v, 0);
        if (k.len >= sizeof key)
            continue;
        memcpy(key, k.ptr, k.len);
        key[k.len] = '\0';
        if (tl_gguf_get(g, key) != v)
            __builtin_trap(); /* every key must be found through the hash */
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
        float f;
        bool b;
        tl_gguf_str s;
        sink += tl_gguf_get_u32(g, key, &u32, &err) + tl_gguf_get_i32(g, key, &i32, &err) +
                tl_gguf_get_u64(g, key, &u64, &err) + tl_gguf_get_i64(g, key, &i64, &err) +
                tl_gguf_get_f32(g, key, &f, &err) + tl_gguf_get_bool(g, key, &b, &err) +
                tl_gguf_get_str(g, key, &s, &err);
        sink += tl_gguf_u32_or(g, key, 1) + (tl_gguf_f32_or(g, key, 0.f) > 0) + tl_gguf_bool_or(g, key, false);
        sink += tl_gguf_str_eq(k, key);
    }
    for (uint64_t i = 0; i < tl_gguf_n_tensors(g); i++) {
        const tl_gguf_tensor *t = tl_gguf_tensor_at(g, i);
        if (t->nbytes) {
            const uint8_t *p = t->data;
            sink += p[0] + p[t->nbytes - 1];
        }
        sink += strlen(tl_type_name(t->type)) + tl_type_row_bytes(t->type, t->ne[0]);
        if (t->name.len < sizeof key) {
            memcpy(key, t->name.ptr, t->name.len);
            key[t->name.len] = '\0';
            if (tl_gguf_find_tensor(g, key) != t)
                __builtin_trap();
        }
    }
    sink += tl_gguf_get(g, "general.architecture") != NULL;
    tl_gguf_close(g);
    return 0;
}
