/* regex_constraint.c: the `regex` sampling parameter of /generate.
 *
 * SGLang compiles a regex into a token automaton; we get the same token-level
 * guarantee from PCRE2's partial matching: a token is allowed when the text
 * generated so far plus the token's bytes is still a prefix of some full
 * match (PCRE2_PARTIAL_HARD reports "could match with more input"), and the
 * end of generation is allowed once the text is a full match. This covers
 * every pattern typellm itself sends (number and enum regexes) and any other
 * PCRE-compatible pattern. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"
#include "util/error.h"

struct regex_constraint {
    pcre2_code *code;
    pcre2_match_data *md; /* guarded by single-thread use: one constraint per request item */
};

regex_constraint *regex_constraint_new(const char *pattern, tl_error *err) {
    /* Anchor both ends: the whole output must match, as in SGLang. */
    tl_strbuf wrapped = TL_STRBUF_INIT;
    tl_strbuf_printf(&wrapped, "(?:%s)\\z", pattern);
    int ec = 0;
    PCRE2_SIZE eo = 0;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)tl_strbuf_cstr(&wrapped), wrapped.len,
                                     PCRE2_ANCHORED | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
    tl_strbuf_free(&wrapped);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        size_t at = eo >= 4 ? eo - 4 : 0; /* offset into the caller's pattern (we prepended "(?:") */
        tl_error_set(err, TL_ERR_INVALID, "regex: offset %zu: %s", at, (const char *)msg);
        return NULL;
    }
    regex_constraint *rc = calloc(1, sizeof *rc);
    if (!rc) {
        pcre2_code_free(code);
        tl_error_set(err, TL_ERR_NOMEM, "regex: out of memory");
        return NULL;
    }
    rc->code = code;
    rc->md = pcre2_match_data_create_from_pattern(code, NULL);
    return rc;
}

void regex_constraint_free(regex_constraint *rc) {
    if (!rc)
        return;
    pcre2_match_data_free(rc->md);
    pcre2_code_free(rc->code);
    free(rc);
}

bool regex_constraint_viable(const regex_constraint *rc, const char *text, size_t n) {
    if (n == 0) /* PCRE2 reports no partial match on an empty subject */
        return true;
    int r = pcre2_match(rc->code, (PCRE2_SPTR)text, n, 0, PCRE2_PARTIAL_HARD, rc->md, NULL);
    return r >= 0 || r == PCRE2_ERROR_PARTIAL;
}

bool regex_constraint_complete(const regex_constraint *rc, const char *text, size_t n) {
    return pcre2_match(rc->code, (PCRE2_SPTR)text, n, 0, 0, rc->md, NULL) >= 0;
}
