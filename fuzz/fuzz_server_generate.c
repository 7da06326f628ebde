/* fuzz_server_generate.c: libFuzzer target for the SGLang /generate request
 * parser (text or input_ids, single or batch, sampling_params object or list,
 * token_ids_logprob flat or nested, logprob options) and, when a request
 * carries a `regex`, its compilation and partial matching against the
 * request's own text. Bad input must give a 400/413 body, never a crash.
 * Seeds: fuzz/corpus/server_generate/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gen_request r;
    parse_failure f = {0};
    if (!gen_request_parse((const char *)data, size, 1000, 4096, &r, &f)) {
        if ((f.status != 400 && f.status != 413) || !f.body)
            abort();
        json_decref(f.body);
        return 0;
    }
    for (size_t i = 0; i < r.n_items; i++) {
        const gen_item *it = &r.items[i];
        if (it->has_ids)
            for (size_t k = 0; k < it->n_ids; k++)
                if (it->ids[k] < 0 || it->ids[k] >= 1000)
                    abort();
        if (it->sp.regex) {
            tl_error err;
            regex_constraint *rc = regex_constraint_new(it->sp.regex, &err);
            if (rc) {
                const char *t = it->text ? it->text : "";
                size_t n = strlen(t);
                for (size_t k = 0; k <= n && k < 64; k++) {
                    regex_constraint_viable(rc, t, k);
                    regex_constraint_complete(rc, t, k);
                }
                regex_constraint_free(rc);
            }
        }
    }
    gen_request_free(&r);
    return 0;
}
