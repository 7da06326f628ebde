/* test_random_schemas.c: random schemas covering every keyword typellm
 * decides (tests/decide/random_schemas.py) are decided on a fixture model in
 * every mode and style, greedy and sampled, and every "values" object is
 * validated against its schema by an independent validator
 * (tests/decide/validate_values.py: python3-jsonschema, formats checked).
 * 0 invalid results, 0 failed decisions. Open enums are validated as what
 * they are, the enum or a string of at most maxLength. CI decides
 * RANDOM_SCHEMAS (200) on a small fixture model (SPM, 4k context);
 * test_random_schemas_slow runs 2,000 over three. */
#include <stdio.h>
#include <stdlib.h>

#include "decide/decide.h"
#include "decide_fixture.h"

#ifndef RANDOM_SCHEMAS
#define RANDOM_SCHEMAS 200
#endif
#ifndef RANDOM_MODELS
#define RANDOM_MODELS {"models/llama-spm-d64-f32.gguf"}
#endif

static const char *CONTEXT = "Order 4471 from Jane (pro plan), 2024-03-05: two blue mugs, 12.50 EUR, shipped north. "
                             "She is annoyed; reference AB123, contact jane@example.com, host 10.0.0.7.";

int main(void) {
    const char *src = getenv("TL_SRC");
    const char *models[] = RANDOM_MODELS;
    size_t n_models = sizeof models / sizeof models[0];
    char cmd[4096], out_path[] = "/tmp/tl_random_schemas_XXXXXX";
    int fd = mkstemp(out_path);
    CHECK(src && fd >= 0);
    if (!src || fd < 0)
        return TEST_DONE();
    FILE *out = fdopen(fd, "w");
    size_t decided = 0, failed = 0, per_model = (RANDOM_SCHEMAS + n_models - 1) / n_models;
    static const char *modes[] = {"sequential", "batch", "auto"}, *styles[] = {"chat", "record"};
    for (size_t mi = 0; mi < n_models; mi++) {
        fixture fx;
        if (!fixture_open(models[mi], &fx)) {
            CHECK(0);
            continue;
        }
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/decide/random_schemas.py' %zu %zu", src, per_model, 1000 + mi);
        FILE *gen = popen(cmd, "r");
        CHECK(gen != NULL);
        char *line = NULL;
        size_t cap = 0;
        size_t k = 0;
        while (gen && getline(&line, &cap, gen) > 0) {
            json_error_t je;
            json_t *schema = json_loads(line, 0, &je);
            CHECKF(schema != NULL, "generator output: %s", je.text);
            if (!schema)
                continue;
            tl_decide_opts o = {.mode = modes[k % 3],
                                .style = fx.b->chat_template && (k / 3) % 2 == 0 ? styles[0] : styles[1],
                                .temperature = k % 4 == 3 ? 1.5 : 0,
                                .seed = k};
            json_t *res = NULL;
            tl_error err = {0};
            tl_status st = tl_decide_json(fx.b, CONTEXT, strlen(CONTEXT), schema, &o, &res, &err);
            if (st) {
                failed++;
                CHECKF(0, "%s schema %zu (%s/%s): %s\n  %s", models[mi], k, o.mode, o.style, err.msg, line);
            } else {
                json_t *rec = json_pack("{s:s+, s:O, s:O}", "name", models[mi], "", "schema", schema, "values",
                                        json_object_get(res, "values"));
                char *txt = json_dumps(rec, JSON_COMPACT);
                fprintf(out, "%s\n", txt);
                free(txt);
                json_decref(rec);
                decided++;
            }
            json_decref(res);
            json_decref(schema);
            k++;
        }
        free(line);
        if (gen)
            CHECK(pclose(gen) == 0);
        fixture_close(&fx);
    }
    fclose(out);
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/decide/validate_values.py' '%s'", src, out_path);
    int rc = system(cmd);
    CHECKF(rc == 0, "validator: %d", rc);
    printf("random schemas: %zu decided, %zu failed (validator exit %d)\n", decided, failed, rc);
    remove(out_path);
    return TEST_DONE();
}
