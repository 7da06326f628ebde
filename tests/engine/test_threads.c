/* test_threads.c: results must not depend on the thread count: logits after
 * a reference prompt are bit-identical with 1, 2 and 3 threads, for every
 * architecture and a float and a quantized weight type. */
#include <jansson.h>
#include <string.h>

#include "engine/engine.h"
#include "tl_test.h"

static int32_t *ref_tokens(const char *ref, size_t *n) {
    json_t *j = json_load_file(tl_fixture(ref), 0, NULL);
    CHECKF(j != NULL, "cannot read %s", ref);
    if (!j)
        return NULL;
    json_t *t = json_object_get(j, "tokens");
    *n = json_array_size(t);
    int32_t *ids = malloc(*n * sizeof *ids);
    for (size_t i = 0; i < *n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(t, i));
    json_decref(j);
    return ids;
}

static void check_model(const char *model, const char *ref) {
    char path[4096];
    snprintf(path, sizeof path, "%s", tl_fixture(model));
    tl_model *m = NULL;
    tl_error err = {0};
    CHECKF(tl_model_load(path, &m, &err) == TL_OK, "%s: %s", model, err.msg);
    if (!m)
        return;
    size_t n = 0;
    int32_t *ids = ref_tokens(ref, &n);
    size_t nv = (size_t)tl_model_n_vocab(m), k_last = 3;
    float *base = NULL;
    for (int threads = 1; threads <= 3 && ids; threads++) {
        tl_session_params sp = {.n_threads = threads};
        tl_session *s = NULL;
        CHECK(tl_session_new(m, &sp, &s, &err) == TL_OK);
        CHECK(tl_session_n_threads(s) == threads);
        float *logits = malloc(k_last * nv * sizeof *logits);
        CHECKF(tl_session_eval_last(s, ids, n, k_last, logits, NULL, &err) == TL_OK, "%s", err.msg);
        if (!base)
            base = logits;
        else {
            CHECKF(!memcmp(base, logits, k_last * nv * sizeof *logits), "%s: %d threads differ from 1", model,
                   threads);
            free(logits);
        }
        tl_session_free(s);
    }
    free(base);
    free(ids);
    tl_model_free(m);
}

int main(void) {
    check_model("models/qwen3-d64-f16.gguf", "ref/qwen3-d64-f16.code.json");
    check_model("models/qwen2-d64-q8_0.gguf", "ref/qwen2-d64-q8_0.fox.json");
    check_model("models/llama3-d64-bf16.gguf", "ref/llama3-d64-bf16.story.json");
    check_model("models/llama-spm-d256-q4_k_m.gguf", "ref/llama-spm-d256-q4_k_m.receipt.json");
    check_model("models/stories260k-f32.gguf", "ref/stories260k-f32.code.json");
    /* issue 14's dense families: windows, soft-caps, fused matrices, NoPE, multipliers */
    check_model("models/gemma2-spm-d64-f32.gguf", "ref/gemma2-spm-d64-f32.code.json");
    check_model("models/gemma3-spm-d128-f16.gguf", "ref/gemma3-spm-d128-f16.code.json");
    check_model("models/gemma4-spm-d128-bf16.gguf", "ref/gemma4-spm-d128-bf16.code.json");
    check_model("models/phi3-d64-bf16.gguf", "ref/phi3-d64-bf16.code.json");
    check_model("models/smollm3-gpt2-d64-f16.gguf", "ref/smollm3-gpt2-d64-f16.code.json");
    check_model("models/olmo2-gpt2-d64-q8_0.gguf", "ref/olmo2-gpt2-d64-q8_0.code.json");
    check_model("models/granite-gpt2-d64-bf16.gguf", "ref/granite-gpt2-d64-bf16.code.json");
    check_model("models/mistral3-spm-d256-q4_k_m.gguf", "ref/mistral3-spm-d256-q4_k_m.code.json");
    /* mixture of experts: routing, grouped expert products and the combine */
    check_model("models/qwen3moe-d64-q8_0.gguf", "ref/qwen3moe-d64-q8_0.long.json");
    check_model("models/gpt-oss-gpt2-d64-mxfp4.gguf", "ref/gpt-oss-gpt2-d64-mxfp4.code.json");
    /* hybrid: delta-net recurrences split by (sequence, head) over the threads */
    check_model("models/qwen35-d64-q8_0.gguf", "ref/qwen35-d64-q8_0.code.json");
    return TEST_DONE();
}
