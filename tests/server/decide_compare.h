/* decide_compare.h: comparing a decision made elsewhere (a server, a remote
 * backend) with the local engine's (header-only, for the server tests). */
#ifndef TL_TESTS_SERVER_DECIDE_COMPARE_H
#define TL_TESTS_SERVER_DECIDE_COMPARE_H

#include <jansson.h>
#include <math.h>

#include "tl_test.h"

/* Every field of local is in remote with the same value and probabilities
 * within tol; tol 0: identical probabilities and candidates. */
static inline void compare_results(const json_t *local, const json_t *remote, const char *what, double tol) {
    const char *name;
    json_t *lf;
    json_object_foreach(json_object_get((json_t *)local, "fields"), name, lf) {
        json_t *rf = json_object_get(json_object_get(remote, "fields"), name);
        CHECKF(rf != NULL, "%s: field %s missing remotely", what, name);
        if (!rf)
            continue;
        CHECKF(json_equal(json_object_get(lf, "value"), json_object_get(rf, "value")), "%s/%s: values differ", what,
               name);
        if (tol == 0)
            CHECKF(json_equal(json_object_get(lf, "candidates"), json_object_get(rf, "candidates")),
                   "%s/%s: candidates differ", what, name);
        const char *v;
        json_t *lp;
        json_object_foreach(json_object_get(lf, "probabilities"), v, lp) {
            json_t *rp = json_object_get(json_object_get(rf, "probabilities"), v);
            double d = rp ? fabs(json_number_value(lp) - json_number_value(rp)) : 1;
            CHECKF(tol == 0 ? d == 0 : d < tol, "%s/%s/%s: |local - remote| = %g", what, name, v, d);
        }
    }
}

#endif
