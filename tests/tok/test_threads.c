/* test_threads.c: one loaded vocabulary serves several threads at once.
 *
 * The engine and the server tokenize from many threads with a shared
 * tl_vocab, so tokenize/detokenize must keep all per-call state local (the
 * compiled PCRE2 patterns are shared, match data is per call). Four threads
 * tokenize the same texts repeatedly and must agree with a single-threaded
 * run every time. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tok/vocab.h"
#include "util/fileio.h"
#include "util/strbuf.h"

typedef struct job {
    const tl_vocab *v;
    const char *text;
    size_t len;
    const int32_t *want;
    size_t n_want;
    int mismatches;
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (int r = 0; r < 40; r++) {
        int32_t *ids;
        size_t n;
        tl_error err = {0};
        if (tl_vocab_tokenize(j->v, j->text, j->len, true, true, &ids, &n, &err) != TL_OK) {
            j->mismatches++;
            continue;
        }
        if (n != j->n_want || memcmp(ids, j->want, n * sizeof *ids) != 0)
            j->mismatches++;
        tl_strbuf sb = TL_STRBUF_INIT;
        if (tl_vocab_detokenize(j->v, ids, n, true, true, &sb, &err) != TL_OK)
            j->mismatches++;
        tl_strbuf_free(&sb);
        free(ids);
    }
    return NULL;
}

static void run(const char *vocab_rel, const char *text_rel) {
    tl_error err = {0};
    tl_vocab *v = NULL;
    char *text = NULL;
    size_t len = 0;
    CHECKF(tl_vocab_load_file(tl_fixture(vocab_rel), &v, &err) == TL_OK, "%s", err.msg);
    CHECKF(tl_read_file(tl_fixture(text_rel), 1 << 20, &text, &len, &err) == TL_OK, "%s", err.msg);
    if (!v || !text) {
        tl_vocab_free(v);
        free(text);
        return;
    }
    int32_t *want;
    size_t n_want;
    CHECK(tl_vocab_tokenize(v, text, len, true, true, &want, &n_want, &err) == TL_OK);
    job jobs[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (job){v, text, len, want, n_want, 0};
        CHECK(pthread_create(&th[t], NULL, worker, &jobs[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECKF(jobs[t].mismatches == 0, "%s: thread %d disagreed %d times", vocab_rel, t, jobs[t].mismatches);
    }
    free(want);
    free(text);
    tl_vocab_free(v);
}

int main(void) {
    run("vocab/ggml-vocab-qwen3.gguf", "ref/long.txt");            /* PCRE2 on collapsed text */
    run("vocab/ggml-vocab-deepseek-coder.gguf", "ref/code.txt");   /* PCRE2 UTF mode too */
    run("vocab/ggml-vocab-llama3.gguf", "ref/chat-llama3.txt");    /* hand-written splitter, specials */
    run("vocab/ggml-vocab-llama-spm.gguf", "ref/long.txt");        /* SPM */
    return TEST_DONE();
}
