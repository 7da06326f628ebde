/* test_n_ctx.c: every in-process backend reports the context it accepts
 * (tl_backend_n_ctx): the model's by default, the session's n_ctx when set,
 * beyond the trained context only with extend_ctx; a shared backend's clients
 * report their shared backend's. A decision sized against 0 ("unknown") would
 * only learn it cannot fit after model work. */
#include <string.h>

#include "tl_test.h"
#include "typellm/typellm.h"

/* local, shared and a shared client over m with session n_ctx / extend: each reports want */
static void check_all(const tl_model *m, int32_t n_ctx, bool extend, int32_t want) {
    tl_error err = {0};
    tl_session_params sp = {.n_threads = 1, .n_ctx = n_ctx, .extend_ctx = extend};
    tl_backend *local = NULL, *shared = NULL, *client = NULL;
    CHECKF(tl_backend_local_new(m, &sp, &local, &err) == TL_OK, "%s", err.msg);
    tl_shared_params shp = {.session = sp};
    CHECKF(tl_backend_shared_new(m, &shp, &shared, &err) == TL_OK, "%s", err.msg);
    CHECKF(shared && tl_backend_shared_client(shared, NULL, &client, &err) == TL_OK, "%s", err.msg);
    CHECKF(tl_backend_n_ctx(local) == want, "local: n_ctx %d, want %d", tl_backend_n_ctx(local), want);
    CHECKF(tl_backend_n_ctx(shared) == want, "shared: n_ctx %d, want %d", tl_backend_n_ctx(shared), want);
    CHECKF(tl_backend_n_ctx(client) == want, "client: n_ctx %d, want %d", tl_backend_n_ctx(client), want);
    tl_backend_free(client);
    tl_backend_free(shared);
    tl_backend_free(local);
}

int main(void) {
    tl_model *m = NULL;
    tl_error err = {0};
    if (tl_model_load(tl_fixture("models/qwen2-d64-q8_0.gguf"), &m, &err) != TL_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int32_t train = tl_model_n_ctx_train(m);
    CHECK(train == 4096);
    check_all(m, 0, false, train);
    check_all(m, 1024, false, 1024);
    check_all(m, 16384, true, 16384);
    /* past the trained context without extend_ctx: refused, naming both lengths */
    tl_shared_params shp = {.session = {.n_threads = 1, .n_ctx = 16384}};
    tl_backend *b = NULL;
    CHECK(tl_backend_shared_new(m, &shp, &b, &err) == TL_ERR_LIMIT && !b);
    CHECKF(strstr(err.msg, "16384") && strstr(err.msg, "4096"), "%s", err.msg);
    CHECK(tl_backend_n_ctx(NULL) == 0);
    tl_model_free(m);
    return TEST_DONE();
}
