/* fuzz_model.c: libFuzzer target for the model loader on top of the GGUF
 * reader: hyperparameter keys (scalars and per-layer arrays: KV heads, window
 * pattern), tensor shapes and types of every supported family, RoPE tables.
 * When a model loads, one token runs through a session, so a shape the
 * loader let through that the forward pass cannot handle shows up under ASan.
 * Seeds: fuzz/corpus/model/ (tiny random models of the dense families, made
 * with ../shared/tools/mkmodel.py over a 16-token vocabulary stub). */
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tl_model *m = NULL;
    tl_error err = {0};
    if (tl_model_load_memory(data, size, "fuzz.gguf", &m, &err) != TL_OK)
        return 0;
    tl_session_params sp = {.n_threads = 1, .n_ctx = 8, .cache_mb = 1};
    tl_session *s = NULL;
    if (tl_model_n_ctx_train(m) >= 8 && tl_session_new(m, &sp, &s, &err) == TL_OK) {
        int32_t ids[3] = {0, 1, 0};
        tl_session_eval(s, ids, 3, NULL, NULL, &err);
        tl_session_free(s);
    }
    tl_model_free(m);
    return 0;
}
