/* fuzz_server_systemone.c: libFuzzer target for the /v1/systemone request
 * parser and validator, the decision schema built from a valid request, and
 * the answer shaping (fed a decide-shaped result with probabilities derived
 * from the input, so NaN/negative/missing values are exercised too). Every
 * outcome must be a 2xx parse or a 400/413/422 body; never a crash.
 * Seeds: fuzz/corpus/server_systemone/. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    so_request r;
    parse_failure f = {0};
    if (!so_request_parse((const char *)data, size, 64, &r, &f)) {
        if (f.status != 400 && f.status != 413 && f.status != 422)
            abort();
        if (!f.body)
            abort();
        json_decref(f.body);
        return 0;
    }
    json_t *schema = so_build_schema(&r);
    if (!schema)
        abort();
    /* A result in decide's shape: probabilities from the input bytes. */
    json_t *fields = json_object();
    size_t at = 0;
    for (size_t i = 0; i < r.n_questions; i++) {
        json_t *probs = json_object();
        const so_question *q = &r.questions[i];
        const char *key;
        json_t *v;
        if (q->type == SO_CHOICE) {
            json_object_foreach(q->criteria, key, v) json_object_set_new(probs, key, json_real(data[at++ % size] / 255.0));
        } else if (q->type == SO_SCORE) {
            for (size_t l = 0; l < q->n_options; l++) {
                char k[24];
                snprintf(k, sizeof k, "%zu", l);
                json_object_set_new(probs, k, json_real(data[at++ % size] / 255.0));
            }
        } else {
            json_object_set_new(probs, "true", json_real(data[at++ % size] / 255.0));
            json_object_set_new(probs, "false", json_real(data[at++ % size] / 255.0));
        }
        char fk[32];
        snprintf(fk, sizeof fk, "q%zu", i);
        json_object_set_new(fields, fk, json_pack("{s:o}", "probabilities", probs));
    }
    json_t *result = json_pack("{s:o}", "fields", fields);
    json_t *answers = NULL;
    tl_error err;
    if (!so_build_answers(&r, result, &answers, &err))
        abort();
    const char *id;
    json_t *a;
    json_object_foreach(answers, id, a) {
        json_t *c = json_object_get(a, "confidence");
        if (c && !(json_real_value(c) >= 0 && json_real_value(c) <= 1))
            abort();
    }
    json_decref(answers);
    json_decref(result);
    json_decref(schema);
    so_request_free(&r);
    return 0;
}
