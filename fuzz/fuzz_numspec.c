/* fuzz_numspec.c: number field schemas and regexes from arbitrary bytes.
 * The input is read as a field schema (JSON), as a regex and as raw model
 * output for the free-text lexer. A schema that
 * parses must give a regex that parses back to the same range and decimals,
 * and a walk of the automaton over a small synthetic vocabulary (driven by
 * the input's bytes) must end on a value the spec accepts. Any crash, sanitizer
 * report, hang or failed invariant is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"

static const char *TOKENS[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "00", "10", "42", "99", "123", "999",
                               "-", ".", " ", " 7", "-1", "1.5", ".25", "5.", "\"", "5\"", "\",", "0\"}", "abc", "e",
                               "+", "\n", ""};
#define N_TOKENS ((int32_t)(sizeof TOKENS / sizeof TOKENS[0]))

static size_t token_bytes(void *ctx, int32_t id, char *buf, size_t cap) {
    size_t n = strlen(TOKENS[id]);
    memcpy(buf, TOKENS[id], n < cap ? n : cap);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tl_error err;
    tl_regex_info info;
    if (tl_regex_parse((const char *)data, size, &info, &err) == TL_OK)
        tl_regex_info_free(&info);

    /* the free-text lexer on the same bytes, both renderings */
    for (int json = 0; json < 2; json++) {
        tl_strbuf v = TL_STRBUF_INIT;
        bool closed;
        size_t used = tl_freetext_unescape((const char *)data, size, json ? "\"" : "</a>", json, &v, &closed);
        if (used > size || (closed && used == 0))
            abort();
        tl_strbuf_free(&v);
    }

    tl_number_spec spec;
    if (tl_number_spec_from_json((const char *)data, size, "/x", &spec, &err) != TL_OK)
        return 0;
    static tl_number_index *idx;
    if (!idx && tl_number_index_new_custom(N_TOKENS, token_bytes, NULL, &idx, &err) != TL_OK)
        abort();
    tl_number_close close = {.terminator = "\"", .allow_tail = size % 2, .allow_leading_space = size % 3 == 0};
    tl_strbuf re = TL_STRBUF_INIT;
    if (tl_number_regex(&spec, &close, &re, &err) != TL_OK)
        abort();
    if (tl_regex_parse(re.buf, re.len, &info, &err) != TL_OK || info.kind != TL_REGEX_NUMBER)
        abort();
    if (info.number.lo != spec.lo || info.number.hi != spec.hi || info.number.decimals != spec.decimals)
        abort();
    tl_regex_info_free(&info);
    tl_strbuf_free(&re);

    tl_number_automaton *a;
    if (tl_number_automaton_new(idx, &spec, &close, &a, &err) != TL_OK)
        abort();
    int32_t allowed[64];
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    for (int step = 0; step < 64 && !tl_number_automaton_done(a); step++) {
        size_t n = tl_number_automaton_allowed(a, allowed);
        if (n == 0)
            break; /* this tiny vocabulary may lack the one digit needed */
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        if (tl_number_automaton_accept(a, allowed[(h >> 33) % n], &err) != TL_OK)
            abort();
    }
    if (tl_number_automaton_done(a)) {
        tl_number_value v;
        if (tl_number_automaton_value(a, &v, &err) != TL_OK)
            abort();
    }
    tl_number_automaton_free(a);
    return 0;
}
