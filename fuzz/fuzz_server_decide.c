/* fuzz_server_decide.c: libFuzzer target for the /v1/decide request parser
 * and, for a valid request, the model-free schema check that answers bad
 * schemas with 422 before any model work (tl_decide_check_schema).
 * Seeds: fuzz/corpus/server_decide/. */
#include <stdint.h>
#include <stdlib.h>

#include "decide/decide.h"
#include "server/server_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decide_request r;
    parse_failure f = {0};
    if (!decide_request_parse((const char *)data, size, &r, &f)) {
        if ((f.status != 400 && f.status != 422) || !f.body)
            abort();
        json_decref(f.body);
        return 0;
    }
    tl_error err;
    (void)tl_decide_check_schema(r.schema, &err);
    decide_request_free(&r);
    return 0;
}
