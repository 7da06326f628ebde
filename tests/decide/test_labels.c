/* test_labels.c: single-token labels on real tokenizers: each chosen label,
 * right after the rendering's answer position, tokenizes to exactly its one
 * token, reads back as the label, and no two labels of a set share a token;
 * small vocabularies run out of labels (the documented schema error). */
#include <stdlib.h>

#include "backend/backend.h"
#include "decide/labels.h"
#include "engine/engine.h"
#include "tl_test.h"

static void check_set(tl_backend *b, const char *tail, const char *prefix, size_t need, size_t min_found,
                      const char *what) {
    tl_labelset ls;
    memset(&ls, 0, sizeof ls);
    tl_error err = {0};
    CHECKF(tl_labelset_fill(&ls, b, tail, prefix, need, &err) == TL_OK, "%s: %s", what, err.msg);
    CHECKF(ls.n >= min_found && ls.n <= need, "%s: %zu labels", what, ls.n);
    int32_t *tail_ids = NULL;
    size_t n_tail = 0;
    CHECK(tl_backend_tokenize(b, tail, strlen(tail), false, true, &tail_ids, &n_tail, &err) == TL_OK);
    for (size_t i = 0; i < ls.n; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s%s%s", tail, prefix, ls.text[i]);
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(tl_backend_tokenize(b, text, strlen(text), false, true, &ids, &n, &err) == TL_OK);
        CHECKF(n == n_tail + 1 && ids[n_tail] == ls.id[i], "%s: label %s is not one token in context", what,
               ls.text[i]);
        char bytes[16];
        size_t nb = tl_vocab_token_bytes(b->vocab, ls.id[i], false, bytes, sizeof bytes);
        char want[16];
        snprintf(want, sizeof want, "%s%s", prefix, ls.text[i]);
        CHECKF(nb == strlen(want) && !memcmp(bytes, want, nb), "%s: token of %s reads back differently", what,
               ls.text[i]);
        for (size_t j = 0; j < i; j++)
            CHECK(ls.id[j] != ls.id[i]);
        free(ids);
    }
    /* Filling again for fewer is a no-op; the first labels are the pool's order. */
    size_t before = ls.n;
    CHECK(tl_labelset_fill(&ls, b, tail, prefix, 3, &err) == TL_OK && ls.n == before);
    free(tail_ids);
}

static void with_model(const char *rel, void (*fn)(tl_backend *)) {
    tl_model *m = NULL;
    tl_backend *b = NULL;
    tl_error err = {0};
    tl_session_params sp = {.n_threads = 1};
    if (tl_model_load(tl_fixture(rel), &m, &err) || tl_backend_local_new(m, &sp, &b, &err)) {
        CHECKF(0, "%s: %s", rel, err.msg);
        tl_model_free(m);
        return;
    }
    fn(b);
    tl_backend_free(b);
    tl_model_free(m);
}

static void qwen(tl_backend *b) {
    check_set(b, "<|im_start|>assistant\n", "", 255, 255, "qwen chat");
    check_set(b, "answer=\"", "", 255, 255, "qwen record");
    tl_labelset ls;
    memset(&ls, 0, sizeof ls);
    tl_error err = {0};
    tl_labelset_fill(&ls, b, "<|im_start|>assistant\n", "", 3, &err);
    CHECK(ls.n == 3 && !strcmp(ls.text[0], "A") && !strcmp(ls.text[2], "C"));
}

static void llama_spm(tl_backend *b) {
    check_set(b, "answer=\"", "", 255, 62, "llama-spm record");
    /* Llama 2 chat: the answer token carries the space after [/INST] ("▁B"). */
    check_set(b, " [/INST]", " ", 100, 26, "llama-spm [/INST]");
}

static void stories(tl_backend *b) {
    /* 512 tokens: far fewer than 255 single-token labels exist. */
    check_set(b, "answer=\"", "", 255, 1, "stories record");
    tl_labelset ls;
    memset(&ls, 0, sizeof ls);
    tl_error err = {0};
    tl_labelset_fill(&ls, b, "answer=\"", "", 255, &err);
    CHECKF(ls.n < 255 && ls.next_pool == TL_LABEL_POOL_SIZE, "stories: %zu labels", ls.n);
}

int main(void) {
    with_model("models/qwen2-d64-q8_0.gguf", qwen);
    with_model("models/llama-spm-d64-f32.gguf", llama_spm);
    with_model("models/stories260k-f32.gguf", stories);
    return TEST_DONE();
}
