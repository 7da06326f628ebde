/* decide_fixture.h: a fixture model and its local backend for the decide
 * tests (one per test file; header-only). */
#ifndef TL_TESTS_DECIDE_FIXTURE_H
#define TL_TESTS_DECIDE_FIXTURE_H

#include <jansson.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/engine.h"
#include "tl_test.h"

typedef struct fixture {
    tl_model *model;
    tl_backend *b;
} fixture;

static inline bool fixture_open(const char *rel, fixture *fx) {
    tl_error err = {0};
    memset(fx, 0, sizeof *fx);
    if (tl_model_load(tl_fixture(rel), &fx->model, &err) != TL_OK) {
        fprintf(stderr, "cannot load %s: %s\n", rel, err.msg);
        return false;
    }
    tl_session_params sp = {.n_threads = 1};
    if (tl_backend_local_new(fx->model, &sp, &fx->b, &err) != TL_OK) {
        fprintf(stderr, "backend: %s\n", err.msg);
        return false;
    }
    return true;
}

static inline void fixture_close(fixture *fx) {
    tl_backend_free(fx->b);
    tl_model_free(fx->model);
}

static inline json_t *fixture_json(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fprintf(stderr, "bad JSON in test: %s\n", je.text);
    return j;
}

#endif
