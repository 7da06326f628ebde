/* fuzz_gbnf.c: the regex -> GBNF translator (src/backend/gbnf.c) on
 * arbitrary bytes. A pattern either translates to a grammar that starts with
 * the root rule, ends with a newline and has balanced quotes, brackets and
 * parentheses outside string literals, or is refused with a message that
 * names a byte offset; any crash, sanitizer report or hang is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

/* Balanced ( ) outside "..." and [...] (whose escapes are skipped). */
static int balanced(const char *g, size_t n) {
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = g[i];
        if (c == '"' || c == '[') {
            char close = c == '"' ? '"' : ']';
            for (i++; i < n && g[i] != close; i++)
                if (g[i] == '\\')
                    i++;
            if (i >= n)
                return 0;
        } else if (c == '(') {
            depth++;
        } else if (c == ')' && --depth < 0) {
            return 0;
        }
    }
    return depth == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tl_strbuf g = TL_STRBUF_INIT;
    tl_error err = {0};
    tl_status st = tl_regex_to_gbnf((const char *)data, size, &g, &err);
    if (st == TL_OK) {
        if (g.len < 10 || memcmp(g.buf, "root ::= ", 9) || g.buf[g.len - 1] != '\n' || !balanced(g.buf, g.len))
            abort();
    } else if (!strstr(err.msg, "offset ")) {
        abort();
    }
    tl_strbuf_free(&g);
    return 0;
}
