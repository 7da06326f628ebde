/* test_form_stream.c: the streaming multipart/form-data parser
 * (server/form_stream.h): the same parts and bytes whatever the pieces the
 * body arrives in (whole, 1 byte, 7 bytes, a boundary split across pieces),
 * data larger than the window passes through, and each malformed body is
 * refused with its message. */
#include <stdlib.h>
#include <string.h>

#include "server/form_stream.h"
#include "tl_test.h"
#include "util/strbuf.h"

typedef struct seen {
    tl_strbuf log; /* "[name|filename]data..." per part */
    int stop_after; /* begin calls before begin says stop (0: never) */
    int begins;
} seen;

static bool on_begin(void *ctx, const char *name, const char *filename) {
    seen *s = ctx;
    s->begins++;
    tl_strbuf_printf(&s->log, "[%s|%s]", name, filename);
    return !(s->stop_after && s->begins >= s->stop_after);
}

static bool on_data(void *ctx, const char *data, size_t n) {
    seen *s = ctx;
    return tl_strbuf_append(&s->log, data, n);
}

/* Parses body in pieces of `piece` bytes (0: whole); *why gets the failure ("" when ok). */
static char *parse(const char *body, size_t len, size_t piece, const char **why, int stop_after) {
    seen s = {TL_STRBUF_INIT, stop_after, 0};
    form_callbacks cb = {on_begin, on_data, &s};
    form_stream fs;
    CHECK(form_stream_init(&fs, &cb));
    bool ok = true;
    for (size_t off = 0; ok && off < len;) {
        size_t k = piece && piece < len - off ? piece : len - off;
        ok = form_stream_feed(&fs, body + off, k);
        off += k;
    }
    ok = ok && form_stream_finish(&fs);
    *why = ok ? "" : fs.why ? fs.why : "(stopped)";
    form_stream_free(&fs);
    tl_strbuf_puts(&s.log, "");
    return tl_strbuf_detach(&s.log);
}

static const char BODY[] =
    "--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
    "Content-Type: application/jsonl\r\n\r\n{\"a\":1}\r\n--Xy not it\r\n-XyZ\r\n\r\n"
    "--XyZ\r\nContent-Disposition: form-data; name=\"extra\"\r\n\r\n\r\n--XyZ--\r\nthe epilogue";
static const char WANT[] = "[purpose|]batch[file|in.jsonl]{\"a\":1}\r\n--Xy not it\r\n-XyZ\r\n[extra|]";

static void test_pieces(void) {
    size_t pieces[] = {0, 1, 2, 7, 8, 64};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        const char *why;
        char *got = parse(BODY, sizeof BODY - 1, pieces[i], &why, 0);
        CHECKF(!strcmp(why, "") && !strcmp(got, WANT), "pieces of %zu: %s / %s", pieces[i], why, got);
        free(got);
    }
}

static void test_large(void) {
    size_t n = 3 * FORM_WINDOW + 17;
    tl_strbuf b = TL_STRBUF_INIT;
    tl_strbuf_puts(&b, "--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n");
    for (size_t i = 0; i < n; i++)
        tl_strbuf_putc(&b, (char)('a' + i % 26));
    tl_strbuf_puts(&b, "\r\n--B--\r\n");
    const char *why;
    char *got = parse(b.buf, b.len, 4099, &why, 0);
    CHECK(!strcmp(why, "") && strlen(got) == n + strlen("[file|]"));
    CHECK(got[strlen("[file|]") + n - 1] == (char)('a' + (n - 1) % 26));
    free(got);
    tl_strbuf_free(&b);
}

static void test_errors(void) {
    struct {
        const char *body, *why;
    } cases[] = {
        {"", "the body is not multipart/form-data (it must start with --BOUNDARY)"},
        {"{\"json\": 1}", "the body is not multipart/form-data (it must start with --BOUNDARY)"},
        {"--\r\n", "the body is not multipart/form-data (it must start with --BOUNDARY)"},
        {"--B\r\nContent-Disposition: form-data; name=\"file\"\r\n", "a form part has no end of headers"},
        {"--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc\r\n--C--", "a form part has no closing boundary"},
        {"--B\r\nX: y\r\n\r\nabc\r\n--Bxx", "a boundary is followed by neither CRLF nor --"},
        {"--B\r\nX: y\r\n\r\nabc\r\n--B", "a boundary is followed by neither CRLF nor --"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why;
        free(parse(cases[i].body, strlen(cases[i].body), 1 + i % 3, &why, 0));
        CHECKF(!strcmp(why, cases[i].why), "case %zu: '%s'", i, why);
    }
    char *first = malloc(FORM_MAX_BOUNDARY + 10);
    memset(first, 'b', FORM_MAX_BOUNDARY + 10);
    first[0] = first[1] = '-';
    const char *why;
    free(parse(first, FORM_MAX_BOUNDARY + 10, 0, &why, 0));
    CHECK(!strcmp(why, "the body is not multipart/form-data (it must start with --BOUNDARY)"));
    free(first);
    tl_strbuf h = TL_STRBUF_INIT;
    tl_strbuf_puts(&h, "--B\r\n");
    for (int i = 0; i < FORM_MAX_HEADER; i++)
        tl_strbuf_putc(&h, 'h');
    free(parse(h.buf, h.len, 1000, &why, 0));
    CHECK(!strcmp(why, "a form part's headers are longer than 8192 bytes"));
    tl_strbuf_free(&h);
    free(parse(BODY, sizeof BODY - 1, 5, &why, 2)); /* a callback stops it */
    CHECK(!strcmp(why, "(stopped)"));
}

int main(void) {
    test_pieces();
    test_large();
    test_errors();
    return TEST_DONE();
}
