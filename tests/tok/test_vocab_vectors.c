/* test_vocab_vectors.c: the tokenizer test vectors in $TL_FIXTURES/vocab.
 *
 * For every ggml-vocab-NAME.gguf, each string of NAME.gguf.inp (separated by
 * "\n__ggml_vocab_test__\n") tokenized without BOS and without special-token
 * parsing must print exactly the matching line of NAME.gguf.out (" id id ...").
 * The whole output is compared byte for byte, and every string must come back
 * from detokenize unchanged. */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tok/vocab.h"
#include "util/fileio.h"
#include "util/strbuf.h"

static const char SEP[] = "\n__ggml_vocab_test__\n";

static void check_vocab(const char *name) {
    char path[1024];
    tl_error err = {0};
    snprintf(path, sizeof path, "vocab/%s", name);
    tl_vocab *v = NULL;
    CHECKF(tl_vocab_load_file(tl_fixture(path), &v, &err) == TL_OK, "%s: %s", name, err.msg);
    char *inp = NULL, *want = NULL;
    size_t inp_len = 0, want_len = 0;
    snprintf(path, sizeof path, "vocab/%s.inp", name);
    CHECKF(tl_read_file(tl_fixture(path), 1 << 24, &inp, &inp_len, &err) == TL_OK, "%s", err.msg);
    snprintf(path, sizeof path, "vocab/%s.out", name);
    CHECKF(tl_read_file(tl_fixture(path), 1 << 24, &want, &want_len, &err) == TL_OK, "%s", err.msg);
    if (!v || !inp || !want)
        goto done;

    tl_strbuf got = TL_STRBUF_INIT;
    size_t at = 0, n_strings = 0, round_trips = 0;
    while (at < inp_len) {
        const char *end = memmem(inp + at, inp_len - at, SEP, sizeof SEP - 1);
        size_t slen = end ? (size_t)(end - (inp + at)) : inp_len - at;
        int32_t *ids;
        size_t n;
        CHECK(tl_vocab_tokenize(v, inp + at, slen, false, false, &ids, &n, &err) == TL_OK);
        for (size_t i = 0; i < n; i++)
            tl_strbuf_printf(&got, " %d", ids[i]);
        tl_strbuf_putc(&got, '\n');
        tl_strbuf text = TL_STRBUF_INIT;
        CHECK(tl_vocab_detokenize(v, ids, n, true, false, &text, &err) == TL_OK);
        if (text.len == slen && memcmp(tl_strbuf_cstr(&text), inp + at, slen) == 0)
            round_trips++;
        else
            fprintf(stderr, "%s: string %zu does not round-trip: got \"%s\"\n", name, n_strings,
                    tl_strbuf_cstr(&text));
        tl_strbuf_free(&text);
        free(ids);
        n_strings++;
        at += slen + (end ? sizeof SEP - 1 : 0);
    }
    CHECKF(got.len == want_len && memcmp(tl_strbuf_cstr(&got), want, want_len) == 0,
           "%s: output differs from %s.out", name, name);
    if (got.len != want_len || memcmp(tl_strbuf_cstr(&got), want, want_len) != 0) {
        /* name the first differing line to make a failure readable */
        size_t line = 1;
        for (size_t i = 0; i < got.len && i < want_len && got.buf[i] == want[i]; i++)
            line += want[i] == '\n';
        fprintf(stderr, "%s: first difference on line %zu\n", name, line);
    }
    CHECKF(n_strings > 10, "%s: only %zu strings", name, n_strings);
    CHECKF(round_trips == n_strings, "%s: %zu of %zu strings round-trip", name, round_trips, n_strings);
    tl_strbuf_free(&got);
done:
    free(inp);
    free(want);
    tl_vocab_free(v);
}

int main(void) {
    DIR *d = opendir(tl_fixture("vocab"));
    CHECK(d != NULL);
    int n_vocabs = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".gguf")) {
            check_vocab(e->d_name);
            n_vocabs++;
        }
    }
    if (d)
        closedir(d);
    CHECKF(n_vocabs >= 8, "found %d vocabularies", n_vocabs);
    return TEST_DONE();
}
