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
    tl_aeon_program *p = NULL;
    tl_error err;
    if (tl_aeon_program_load(text, prog_len, &p, &err) != TL_OK) {
        if (tl_aeon_program_load(fallback, sizeof fallback - 1, &p, &err) != TL_OK)
            abort();
    }
    tl_aeon_validation v;
    tl_aeon_validate(p, text, prog_len, &v, &err); /* the program text as a candidate: must not crash */
    tl_aeon_scope *s = NULL;
    tl_aeon_engine *e = NULL;
    tl_aeon_oracle_limits lim = {.max_states = 5000};
    if (tl_aeon_scope_new(p, &s, &err) == TL_OK && tl_aeon_engine_new(s, &lim, &e, &err) == TL_OK) {
        const char *prefix = nul ? (const char *)nul + 1 : text;
        size_t plen = nul ? size - prog_len - 1 : size;
        tl_aeon_state *s0 = tl_aeon_state_initial();
        tl_aeon_state *st = tl_aeon_state_advance(s0, prefix, plen);
        tl_strbuf w = TL_STRBUF_INIT;
        if (st && tl_aeon_completion_status(e, st, &w, NULL) == TL_AEON_LIVE) {
            tl_aeon_expr *x;
            if (w.len < plen || memcmp(w.buf, prefix, plen))
                abort();
            if (tl_aeon_parse_expr(p, w.buf, w.len, &x, &err) != TL_OK || tl_aeon_check_candidate(p, x, &err) != TL_OK)
                abort();
        }
        tl_strbuf_free(&w);
        tl_aeon_state_free(st);
        tl_aeon_state_free(s0);
    }
    tl_aeon_engine_free(e);
    tl_aeon_scope_free(s);
    tl_aeon_program_free(p);
    return 0;
}
