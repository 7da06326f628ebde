/* fuzz_aeon.c: libFuzzer target over the .ae reader and the completion oracle.
 * Input: PROGRAM [\0 PREFIX]. The program is loaded (parse, context, checks);
 * when it has a usable hole, PREFIX (or, without one, the program text
 * itself) is asked of the oracle, and every LIVE witness must extend the
 * prefix and pass the independent parser + checker: a disagreement aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/oracle.h"

static const char fallback[] = "def limit : Int := 10;\ndef f (g:(x:Int) -> Bool) (s:String) (n:Int) : Int := ?h;";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const uint8_t *nul = memchr(data, 0, size);
    size_t prog_len = nul ? (size_t)(nul - data) : size;
    ae_program *p = NULL;
    tl_error err;
    if (ae_program_load(text, prog_len, &p, &err) != TL_OK) {
        if (ae_program_load(fallback, sizeof fallback - 1, &p, &err) != TL_OK)
            abort();
    }
    ae_validation v;
    ae_validate(p, text, prog_len, &v, &err); /* the program text as a candidate: must not crash */
    ae_scope *s = NULL;
    ae_engine *e = NULL;
    ae_oracle_limits lim = {.max_states = 5000};
    if (ae_scope_new(p, &s, &err) == TL_OK && ae_engine_new(s, &lim, &e, &err) == TL_OK) {
        const char *prefix = nul ? (const char *)nul + 1 : text;
        size_t plen = nul ? size - prog_len - 1 : size;
        ae_state *s0 = ae_state_initial();
        ae_state *st = ae_state_advance(s0, prefix, plen);
        tl_strbuf w = TL_STRBUF_INIT;
        if (st && ae_completion_status(e, st, &w, NULL) == AE_LIVE) {
            ae_expr *x;
            if (w.len < plen || memcmp(w.buf, prefix, plen))
                abort();
            if (ae_parse_expr(p, w.buf, w.len, &x, &err) != TL_OK || ae_check_candidate(p, x, &err) != TL_OK)
                abort();
        }
        tl_strbuf_free(&w);
        ae_state_free(st);
        ae_state_free(s0);
    }
    ae_engine_free(e);
    ae_scope_free(s);
    ae_program_free(p);
    return 0;
}
