/* test_fixtures.c: opens every shared fixture GGUF (models and vocab-only files,
 * including the GGUF v1 stories model) and checks facts read independently with
 * ../shared/tools/gguf.py: version, architecture, block_count, tensor counts by
 * type, token counts, selected keys and tensor shapes. */
#include <math.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tl_test.h"
#include "util/fileio.h"

typedef struct fixture_facts {
    const char *rel;
    uint32_t version;
    const char *arch;
    int64_t block_count; /* -1: key absent */
    uint64_t n_tensors;
    uint64_t n_kv;
    uint64_t n_tokens;
    const char *tok_model;
    const char *tok_pre;   /* NULL: absent */
    int n_types;           /* entries used in by_type */
    struct { tl_ggml_type type; int count; } by_type[3];
} fixture_facts;

static const fixture_facts facts[] = {
    {"models/stories260k-f32.gguf", 3, "llama", 5, 48, 18, 512, "llama", NULL, 1, {{TL_TYPE_F32, 48}}},
    {"models/stories260k-v1-f32.gguf", 1, "llama", 5, 48, 18, 512, "llama", NULL, 1, {{TL_TYPE_F32, 48}}},
    {"models/llama-spm-d64-f32.gguf", 3, "llama", 2, 21, 21, 32000, "llama", "default", 1, {{TL_TYPE_F32, 21}}},
    {"models/llama-spm-d64-q8_0.gguf", 3, "llama", 2, 21, 23, 32000, "llama", "default", 2,
     {{TL_TYPE_Q8_0, 16}, {TL_TYPE_F32, 5}}},
    {"models/llama-spm-d256-q4_0.gguf", 3, "llama", 2, 21, 23, 32000, "llama", "default", 3,
     {{TL_TYPE_Q4_0, 15}, {TL_TYPE_Q6_K, 1}, {TL_TYPE_F32, 5}}},
    {"models/llama-spm-d256-q4_k_m.gguf", 3, "llama", 2, 21, 23, 32000, "llama", "default", 3,
     {{TL_TYPE_Q4_K, 13}, {TL_TYPE_Q6_K, 3}, {TL_TYPE_F32, 5}}},
    {"models/llama-spm-d256-q5_k_m.gguf", 3, "llama", 2, 21, 23, 32000, "llama", "default", 3,
     {{TL_TYPE_Q5_K, 13}, {TL_TYPE_Q6_K, 3}, {TL_TYPE_F32, 5}}},
    {"models/llama-spm-d320-q4_k_m.gguf", 3, "llama", 2, 21, 23, 32000, "llama", "default", 3,
     {{TL_TYPE_Q5_0, 13}, {TL_TYPE_Q8_0, 3}, {TL_TYPE_F32, 5}}},
    {"models/qwen2-d64-q8_0.gguf", 3, "qwen2", 2, 26, 22, 151669, "gpt2", "qwen2", 2,
     {{TL_TYPE_Q8_0, 15}, {TL_TYPE_F32, 11}}},
    {"models/qwen3-d64-f16.gguf", 3, "qwen3", 2, 24, 22, 151669, "gpt2", "qwen2", 2,
     {{TL_TYPE_F16, 15}, {TL_TYPE_F32, 9}}},
    {"models/llama3-d64-bf16.gguf", 3, "llama", 2, 20, 22, 128256, "gpt2", "llama-bpe", 2,
     {{TL_TYPE_BF16, 15}, {TL_TYPE_F32, 5}}},
    {"vocab/ggml-vocab-deepseek-coder.gguf", 3, "llama", 32, 0, 25, 32256, "gpt2", "deepseek-coder", 0, {{0, 0}}},
    {"vocab/ggml-vocab-falcon.gguf", 3, "falcon", 32, 0, 18, 65024, "gpt2", "falcon", 0, {{0, 0}}},
    {"vocab/ggml-vocab-gpt-2.gguf", 3, "gpt2", 12, 0, 16, 50257, "gpt2", "gpt-2", 0, {{0, 0}}},
    {"vocab/ggml-vocab-llama-spm.gguf", 3, "llama", 32, 0, 22, 32000, "llama", "default", 0, {{0, 0}}},
    {"vocab/ggml-vocab-llama3.gguf", 3, "llama", -1, 0, 11, 128256, "gpt2", "llama-bpe", 0, {{0, 0}}},
    {"vocab/ggml-vocab-phi-3.gguf", 3, "phi3", 32, 0, 26, 32064, "llama", "default", 0, {{0, 0}}},
    {"vocab/ggml-vocab-qwen3.gguf", 3, "llama", -1, 0, 11, 151669, "gpt2", "qwen2", 0, {{0, 0}}},
    {"vocab/ggml-vocab-starcoder.gguf", 3, "starcoder2", 30, 0, 19, 49152, "gpt2", "starcoder", 0, {{0, 0}}},
};

static void check_fixture(const fixture_facts *f) {
    tl_gguf *g = NULL;
    tl_error err = {0};
    tl_status st = tl_gguf_open(tl_fixture(f->rel), &g, &err);
    CHECKF(st == TL_OK, "%s: %s", f->rel, err.msg);
    if (st != TL_OK)
        return;
    CHECKF(tl_gguf_version(g) == f->version, "%s: version %u", f->rel, tl_gguf_version(g));
    CHECKF(strcmp(tl_gguf_arch(g), f->arch) == 0, "%s: arch '%s'", f->rel, tl_gguf_arch(g));
    CHECKF(tl_gguf_n_tensors(g) == f->n_tensors, "%s: %llu tensors", f->rel,
           (unsigned long long)tl_gguf_n_tensors(g));
    CHECKF(tl_gguf_n_kv(g) == f->n_kv, "%s: %llu kvs", f->rel, (unsigned long long)tl_gguf_n_kv(g));
    CHECK(tl_gguf_alignment(g) == 32);

    char key[128];
    snprintf(key, sizeof key, "%s.block_count", f->arch);
    uint32_t bc = 0;
    if (f->block_count >= 0) {
        CHECKF(tl_gguf_get_u32(g, key, &bc, &err) == TL_OK && bc == f->block_count, "%s: block_count %u", f->rel, bc);
    } else {
        CHECK(tl_gguf_get(g, key) == NULL);
        CHECK(tl_gguf_get_u32(g, key, &bc, &err) == TL_ERR_INVALID && strstr(err.msg, "absent"));
    }

    const tl_gguf_value *toks = tl_gguf_get(g, "tokenizer.ggml.tokens");
    CHECKF(toks && toks->type == TL_GGUF_ARRAY && toks->v.arr.elem == TL_GGUF_STRING &&
               toks->v.arr.n == f->n_tokens && toks->v.arr.strs,
           "%s: tokens", f->rel);
    tl_gguf_str s;
    CHECK(tl_gguf_get_str(g, "tokenizer.ggml.model", &s, &err) == TL_OK && tl_gguf_str_eq(s, f->tok_model));
    if (f->tok_pre)
        CHECK(tl_gguf_get_str(g, "tokenizer.ggml.pre", &s, &err) == TL_OK && tl_gguf_str_eq(s, f->tok_pre));
    else
        CHECK(tl_gguf_get(g, "tokenizer.ggml.pre") == NULL);

    /* Every kv is reachable through the hash by its own key. */
    for (uint64_t i = 0; i < tl_gguf_n_kv(g); i++) {
        tl_gguf_str k = tl_gguf_kv_key(g, i);
        char buf[256];
        if (k.len >= sizeof buf)
            continue;
        memcpy(buf, k.ptr, k.len);
        buf[k.len] = '\0';
        CHECKF(tl_gguf_get(g, buf) == tl_gguf_kv_value(g, i), "%s: lookup of '%s'", f->rel, buf);
    }

    /* Tensor table: counts by type, lookup by name, data inside the file. */
    int counted[TL_TYPE_COUNT] = {0};
    const uint8_t *lo = NULL;
    for (uint64_t i = 0; i < tl_gguf_n_tensors(g); i++) {
        const tl_gguf_tensor *t = tl_gguf_tensor_at(g, i);
        counted[t->type]++;
        char buf[256];
        memcpy(buf, t->name.ptr, t->name.len);
        buf[t->name.len] = '\0';
        CHECK(tl_gguf_find_tensor(g, buf) == t);
        int64_t nel = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        CHECK(t->nbytes == tl_type_row_bytes(t->type, t->ne[0]) * (size_t)(nel / t->ne[0]));
        CHECK(t->offset % tl_gguf_alignment(g) == 0);
        CHECK(tl_gguf_data_offset(g) + t->offset + t->nbytes <= tl_gguf_file_size(g));
        if (i == 0)
            lo = (const uint8_t *)t->data - t->offset;
        CHECK((const uint8_t *)t->data == lo + t->offset);
    }
    for (int k = 0; k < f->n_types; k++)
        CHECKF(counted[f->by_type[k].type] == f->by_type[k].count, "%s: %d tensors of %s", f->rel,
               counted[f->by_type[k].type], tl_type_name(f->by_type[k].type));
    CHECK(tl_gguf_find_tensor(g, "no.such.tensor") == NULL);
    tl_gguf_close(g);
}

/* Values, shapes and data of the stories model, identical in its v1 and v3 files. */
static void check_stories(const char *rel, uint64_t data_offset) {
    tl_gguf *g = NULL;
    tl_error err = {0};
    if (tl_gguf_open(tl_fixture(rel), &g, &err) != TL_OK) {
        CHECKF(0, "%s: %s", rel, err.msg);
        return;
    }
    CHECK(tl_gguf_data_offset(g) == data_offset);
    uint32_t u = 0;
    CHECK(tl_gguf_get_u32(g, "llama.embedding_length", &u, &err) == TL_OK && u == 64);
    CHECK(tl_gguf_u32_or(g, "llama.feed_forward_length", 0) == 172);
    CHECK(tl_gguf_u32_or(g, "llama.attention.head_count_kv", 0) == 4);
    CHECK(tl_gguf_u32_or(g, "llama.rope.freq_base", 7) == 7); /* absent -> default */
    float eps = 0;
    CHECK(tl_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps, &err) == TL_OK &&
          fabsf(eps - 1e-5f) < 1e-9f);
    /* Any integer width that fits converts; a string does not. */
    int32_t i32 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    float f = 0;
    CHECK(tl_gguf_get_i32(g, "tokenizer.ggml.eos_token_id", &i32, &err) == TL_OK && i32 == 2);
    CHECK(tl_gguf_get_i64(g, "tokenizer.ggml.bos_token_id", &i64, &err) == TL_OK && i64 == 1);
    CHECK(tl_gguf_get_u64(g, "llama.context_length", &u64, &err) == TL_OK && u64 == 512);
    CHECK(tl_gguf_get_f32(g, "llama.context_length", &f, &err) == TL_OK && f == 512.0f);
    CHECK(tl_gguf_get_u32(g, "general.name", &u, &err) == TL_ERR_INVALID && strstr(err.msg, "general.name") &&
          strstr(err.msg, "string"));
    bool b = true;
    CHECK(tl_gguf_get_bool(g, "tokenizer.ggml.padding_token_id", &b, &err) == TL_OK && b == false);
    CHECK(tl_gguf_get_bool(g, "llama.context_length", &b, &err) == TL_ERR_INVALID);
    tl_gguf_str s;
    CHECK(tl_gguf_get_str(g, "general.name", &s, &err) == TL_OK && tl_gguf_str_eq(s, "tinyllamas-stories-260k"));

    const tl_gguf_value *toks = tl_gguf_get(g, "tokenizer.ggml.tokens");
    CHECK(toks && tl_gguf_str_eq(toks->v.arr.strs[1], "<s>") && tl_gguf_str_eq(toks->v.arr.strs[2], "</s>"));
    const tl_gguf_value *types = tl_gguf_get(g, "tokenizer.ggml.token_type");
    CHECK(types && types->v.arr.elem == TL_GGUF_I32 && tl_gguf_arr_int(types, 0) == 2 &&
          tl_gguf_arr_int(types, 1) == 3 && tl_gguf_arr_int(types, 511) == 1);
    CHECK(tl_gguf_arr_int(types, 512) == 0); /* out of range */
    const tl_gguf_value *scores = tl_gguf_get(g, "tokenizer.ggml.scores");
    CHECK(scores && scores->v.arr.elem == TL_GGUF_F32 && tl_gguf_arr_float(scores, 0) == 0.0);

    const tl_gguf_tensor *emb = tl_gguf_find_tensor(g, "token_embd.weight");
    CHECK(emb && emb->n_dims == 2 && emb->ne[0] == 64 && emb->ne[1] == 512 && emb->ne[2] == 1 &&
          emb->type == TL_TYPE_F32 && emb->offset == 0 && emb->nbytes == 64 * 512 * 4);
    const tl_gguf_tensor *k = tl_gguf_find_tensor(g, "blk.0.attn_k.weight");
    CHECK(k && k->ne[0] == 64 && k->ne[1] == 32 && k->offset == 147456);
    const tl_gguf_tensor *out = tl_gguf_find_tensor(g, "output.weight");
    CHECK(out && out->offset == 1040128 && tl_gguf_data_offset(g) + out->offset + out->nbytes == tl_gguf_file_size(g));
    tl_gguf_close(g);
}

/* Shapes and types of tensors in the quantized and head_dim != dim/heads models. */
static void check_shapes(void) {
    tl_gguf *g = NULL;
    tl_error err = {0};
    if (tl_gguf_open(tl_fixture("models/llama-spm-d320-q4_k_m.gguf"), &g, &err) == TL_OK) {
        const tl_gguf_tensor *t = tl_gguf_find_tensor(g, "token_embd.weight");
        CHECK(t && t->type == TL_TYPE_Q5_0 && t->ne[0] == 320 && t->ne[1] == 32000 && t->offset == 10881280 &&
              t->nbytes == (size_t)32000 * (320 / 32) * 22);
        t = tl_gguf_find_tensor(g, "output.weight");
        CHECK(t && t->type == TL_TYPE_Q8_0 && t->nbytes == (size_t)32000 * 10 * 34);
        tl_gguf_close(g);
    } else {
        CHECKF(0, "%s", err.msg);
    }
    if (tl_gguf_open(tl_fixture("models/qwen3-d64-f16.gguf"), &g, &err) == TL_OK) {
        CHECK(tl_gguf_u32_or(g, "qwen3.attention.key_length", 0) == 32);
        CHECK(tl_gguf_f32_or(g, "qwen3.rope.freq_base", 0) == 1000000.0f);
        CHECK(tl_gguf_bool_or(g, "tokenizer.ggml.add_bos_token", true) == false);
        tl_gguf_str tpl;
        CHECK(tl_gguf_get_str(g, "tokenizer.chat_template", &tpl, &err) == TL_OK && tpl.len > 100);
        const tl_gguf_tensor *t = tl_gguf_find_tensor(g, "token_embd.weight");
        CHECK(t && t->type == TL_TYPE_F16 && t->ne[1] == 151669 && t->nbytes == (size_t)64 * 151669 * 2);
        t = tl_gguf_find_tensor(g, "output_norm.weight");
        CHECK(t && t->n_dims == 1 && t->ne[0] == 64 && t->ne[1] == 1 && t->offset == 19413632);
        const tl_gguf_value *merges = tl_gguf_get(g, "tokenizer.ggml.merges");
        CHECK(merges && merges->v.arr.n == 151387 && tl_gguf_str_eq(merges->v.arr.strs[2], "i n"));
        tl_gguf_close(g);
    } else {
        CHECKF(0, "%s", err.msg);
    }
}

static void check_type_table(void) {
    CHECK(tl_type_block_elems(TL_TYPE_Q4_K) == 256 && tl_type_block_bytes(TL_TYPE_Q4_K) == 144);
    CHECK(tl_type_block_elems(TL_TYPE_Q8_0) == 32 && tl_type_block_bytes(TL_TYPE_Q8_0) == 34);
    CHECK(tl_type_block_bytes(TL_TYPE_BF16) == 2 && tl_type_block_bytes(TL_TYPE_F64) == 8);
    CHECK(tl_type_row_bytes(TL_TYPE_Q6_K, 512) == 420);
    CHECK(tl_type_row_bytes(TL_TYPE_Q6_K, 100) == 0);
    CHECK(tl_type_row_bytes((tl_ggml_type)16, 256) == 0); /* IQ2_XXS: named, not sized */
    CHECK(strcmp(tl_type_name(TL_TYPE_Q5_K), "Q5_K") == 0 && strcmp(tl_type_name((tl_ggml_type)33), "unknown") == 0);
    CHECK(strcmp(tl_type_name((tl_ggml_type)-1), "unknown") == 0);
    CHECK(strcmp(tl_gguf_vtype_name(TL_GGUF_F64), "f64") == 0);
}

/* Every header byte of the v1 and v3 stories files overwritten with 0xFF, one at a
 * time (every 3rd byte of the long token table): each open either succeeds with
 * all tensors inside the buffer or fails with TL_ERR_FORMAT / TL_ERR_UNSUPPORTED
 * naming an offset. Crashes show up here and under the sanitizers. */
static void check_mutations(const char *rel) {
    char *data = NULL;
    size_t len = 0;
    tl_error err = {0};
    if (tl_read_file(tl_fixture(rel), 8 << 20, &data, &len, &err) != TL_OK) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    tl_gguf *g = NULL;
    CHECK(tl_gguf_open_memory(data, len, rel, &g, &err) == TL_OK);
    size_t header = g ? (size_t)tl_gguf_data_offset(g) : 0;
    tl_gguf_close(g);
    int failed = 0, opened = 0;
    for (size_t pos = 0; pos < header; pos += pos < 64 ? 1 : 3) {
        char saved = data[pos];
        data[pos] = (char)0xFF;
        tl_status st = tl_gguf_open_memory(data, len, rel, &g, &err);
        if (st == TL_OK) {
            opened++;
            for (uint64_t i = 0; i < tl_gguf_n_tensors(g); i++) {
                const tl_gguf_tensor *t = tl_gguf_tensor_at(g, i);
                CHECK((const char *)t->data >= data && (const char *)t->data + t->nbytes <= data + len);
            }
            tl_gguf_close(g);
        } else {
            failed++;
            if (!((st == TL_ERR_FORMAT || st == TL_ERR_UNSUPPORTED) && strstr(err.msg, ": offset ")))
                CHECKF(0, "%s byte %zu: %s %s", rel, pos, tl_status_name(st), err.msg);
        }
        data[pos] = saved;
    }
    CHECKF(failed > 100 && opened > 100, "%s: %d failed, %d opened", rel, failed, opened);
    free(data);
}

int main(void) {
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
        check_fixture(&facts[i]);
    check_stories("models/stories260k-f32.gguf", 14144);
    check_stories("models/stories260k-v1-f32.gguf", 11456);
    check_shapes();
    check_type_table();
    check_mutations("models/stories260k-f32.gguf");
    check_mutations("models/stories260k-v1-f32.gguf");

    tl_gguf *g = (tl_gguf *)1;
    tl_error err = {0};
    CHECK(tl_gguf_open("/nonexistent/x.gguf", &g, &err) == TL_ERR_IO && g == NULL && strstr(err.msg, "/nonexistent"));
    CHECK(tl_gguf_open(tl_fixture("models"), &g, &err) == TL_ERR_IO);
    return TEST_DONE();
}
