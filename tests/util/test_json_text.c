/* test_json_text.c: reals print in their shortest exact form (0.3, not
 * 0.29999999999999999), stay reals ("1.0"), and always read back to the
 * same double; strings holding digits are left alone. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "tl_test.h"
#include "util/json_text.h"
#include "util/rng.h"

static void check_real(double v, const char *want) {
    char buf[40];
    size_t n = tl_json_real_text(v, buf, sizeof buf);
    CHECKF(n > 0 && strcmp(buf, want) == 0, "%.17g -> '%s', want '%s'", v, buf, want);
}

int main(void) {
    check_real(0.3, "0.3");
    check_real(0.1 + 0.2, "0.30000000000000004");
    check_real(1.0, "1.0");
    check_real(-2.0, "-2.0");
    check_real(444444444444.0, "444444444444.0");
    check_real(120.0, "120.0"); /* fewest digits is "1.2e+02": integers below 1e16 are written out */
    check_real(-3000.0, "-3000.0");
    check_real(1e15, "1000000000000000.0");
    check_real(1e16, "1e+16");
    check_real(1.5e300, "1.5e+300");
    check_real(1e-300, "1e-300");
    check_real(0.125, "0.125");
    check_real(1.0 / 3.0, "0.3333333333333333");
    uint64_t rng = 1;
    for (int i = 0; i < 20000; i++) {
        double v = (tl_rng_uniform(&rng) - 0.5) * pow(10, (double)(int)(tl_rng_uniform(&rng) * 40) - 20);
        char buf[40];
        size_t n = tl_json_real_text(v, buf, sizeof buf);
        CHECKF(n > 0 && strtod(buf, NULL) == v, "%.17g -> '%s' does not read back", v, buf);
        /* shortest: one digit fewer no longer reads back ("N.0" reals aside) */
        size_t len = strlen(buf);
        int digits = 0; /* significant digits: from the first non-zero one */
        bool started = false;
        for (const char *p = buf; *p && *p != 'e'; p++) {
            started |= *p >= '1' && *p <= '9';
            digits += started && *p >= '0' && *p <= '9';
        }
        if (digits > 1 && !(len > 2 && !strcmp(buf + len - 2, ".0"))) {
            char shorter[400];
            snprintf(shorter, sizeof shorter, "%.*g", digits - 1, v);
            CHECKF(strtod(shorter, NULL) != v, "%.17g -> '%s': '%s' is shorter and reads back", v, buf, shorter);
        }
    }
    json_t *o = json_pack("{s:f,s:f,s:s,s:i,s:[f,f]}", "p", 0.3, "q", 0.7, "s", "0.29999999999999999", "n", 3, "a",
                          0.1, 2.5);
    char *text = tl_json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECKF(text && !strcmp(text, "{\"p\":0.3,\"q\":0.7,\"s\":\"0.29999999999999999\",\"n\":3,\"a\":[0.1,2.5]}"), "%s",
           text ? text : "(null)");
    free(text);
    json_decref(o);
    return TEST_DONE();
}
