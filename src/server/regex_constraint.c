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
#include "typellm/common.h"

struct regex_constraint {
    pcre2_code *code;      /* UTF mode: what a full match means */
    pcre2_code *bytes;     /* the same pattern over bytes (NULL if it has no byte form) */
    pcre2_match_data *md;  /* single-thread use: one constraint per request item */
    pcre2_match_data *md_bytes;
    pcre2_match_context *mctx; /* bounded work per match: a pathological pattern cannot hang a request */
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
    rc->mctx = pcre2_match_context_create(NULL);
    if (rc->mctx) {
        pcre2_set_match_limit(rc->mctx, 100000);
        pcre2_set_depth_limit(rc->mctx, 10000);
    }
    /* Byte form: decides partial matches that end inside a multi-byte
     * character, which UTF mode always reports as partial. */
    tl_strbuf w2 = TL_STRBUF_INIT;
    tl_strbuf_printf(&w2, "(?:%s)\\z", pattern);
    rc->bytes = pcre2_compile((PCRE2_SPTR)tl_strbuf_cstr(&w2), w2.len, PCRE2_ANCHORED, &ec, &eo, NULL);
    tl_strbuf_free(&w2);
    if (rc->bytes)
        rc->md_bytes = pcre2_match_data_create_from_pattern(rc->bytes, NULL);
    return rc;
}

void regex_constraint_free(regex_constraint *rc) {
    if (!rc)
        return;
    pcre2_match_data_free(rc->md);
    pcre2_code_free(rc->code);
    pcre2_match_data_free(rc->md_bytes);
    pcre2_code_free(rc->bytes);
    pcre2_match_context_free(rc->mctx);
    free(rc);
}

bool regex_constraint_viable(const regex_constraint *rc, const char *text, size_t n) {
    if (n == 0) /* PCRE2 reports no partial match on an empty subject */
        return true;
    int state = tl_utf8_check(text, n, NULL);
    if (state < 0)
        return false;
    if (state == 1) {
        if (!rc->bytes)
            return false;
        int r = pcre2_match(rc->bytes, (PCRE2_SPTR)text, n, 0, PCRE2_PARTIAL_HARD, rc->md_bytes, rc->mctx);
        return r == PCRE2_ERROR_PARTIAL; /* a full match cannot end mid-character */
    }
    int r = pcre2_match(rc->code, (PCRE2_SPTR)text, n, 0, PCRE2_PARTIAL_HARD, rc->md, rc->mctx);
    return r >= 0 || r == PCRE2_ERROR_PARTIAL;
}

bool regex_constraint_complete(const regex_constraint *rc, const char *text, size_t n) {
    return pcre2_match(rc->code, (PCRE2_SPTR)text, n, 0, 0, rc->md, rc->mctx) >= 0;
}
