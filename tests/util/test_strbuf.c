/* test_strbuf.c: the project-wide buffer and error helpers. */
#include "tl_test.h"
#include "util/error.h"
#include "util/strbuf.h"

int main(void) {
    tl_strbuf sb = TL_STRBUF_INIT;
    CHECK(strcmp(tl_strbuf_cstr(&sb), "") == 0);
    CHECK(tl_strbuf_puts(&sb, "ab"));
    CHECK(tl_strbuf_printf(&sb, "%d-%s", 42, "x"));
    CHECK(sb.len == 6 && strcmp(sb.buf, "ab42-x") == 0);
    for (int i = 0; i < 10000; i++)
        CHECK(tl_strbuf_putc(&sb, 'z'));
    CHECK(sb.len == 10006 && sb.buf[sb.len] == '\0');
    tl_strbuf_clear(&sb);
    CHECK(tl_strbuf_json_string(&sb, "a\"b\\\n\x01\xff\xc3\xa9", 9));
    CHECKF(strcmp(sb.buf, "\"a\\\"b\\\\\\n\\u0001\xEF\xBF\xBD\xc3\xa9\"") == 0, "got %s", sb.buf);
    char *owned = tl_strbuf_detach(&sb);
    CHECK(owned && sb.buf == NULL);
    free(owned);
    tl_strbuf_free(&sb);

    tl_error err = {0};
    CHECK(tl_error_set(&err, TL_ERR_FORMAT, "offset %d: bad", 7) == TL_ERR_FORMAT);
    tl_error_wrap(&err, "file.gguf");
    CHECK(strcmp(err.msg, "file.gguf: offset 7: bad") == 0);
    CHECK(strcmp(tl_status_name(TL_ERR_SCHEMA), "schema") == 0);
    return TEST_DONE();
}
