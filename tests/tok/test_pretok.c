/* test_pretok.c: the pre-tokenizer regex sets, including those no fixture
 * vocabulary uses. Every accepted tokenizer.ggml.pre name must compile and
 * split text into non-empty pieces that cover it exactly; a sample per family
 * is checked piece by piece (derived by hand from the regexes); an unknown
 * name is an error naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_test.h"
#include "tok/tok_internal.h"

/* Splits text with pre and joins the pieces with '|' into out. */
static bool split_join(const char *pre, const char *text, char *out, size_t cap) {
    tl_pretok *p = NULL;
    tl_error err = {0};
    if (tl_pretok_create(pre, &p, &err) != TL_OK) {
        fprintf(stderr, "%s: %s\n", pre, err.msg);
        return false;
    }
    size_t len = strlen(text);
    uint32_t *cpts = malloc((len + 1) * sizeof *cpts);
    size_t n = tl_utf8_decode_all(text, len, cpts);
    size_t *pieces = NULL, n_pieces = 0;
    bool ok = tl_pretok_split(p, cpts, n, &pieces, &n_pieces, &err) == TL_OK;
    size_t o = 0, at = 0;
    for (size_t i = 0; ok && i < n_pieces; i++) {
        if (pieces[i] == 0 || at + pieces[i] > n)
            ok = false;
        for (size_t k = 0; ok && k < pieces[i]; k++) {
            char utf[4];
            size_t ul = tl_utf8_encode(cpts[at + k], utf);
            if (o + ul + 2 >= cap) {
                ok = false;
                break;
            }
            memcpy(out + o, utf, ul);
            o += ul;
        }
        at += pieces[i];
        if (ok && i + 1 < n_pieces)
            out[o++] = '|';
    }
    out[o] = '\0';
    ok = ok && at == n;
    free(pieces);
    free(cpts);
    tl_pretok_free(p);
    return ok;
}

static void expect_split(const char *pre, const char *text, const char *want) {
    char got[1024];
    bool ok = split_join(pre, text, got, sizeof got);
    CHECKF(ok && !strcmp(got, want), "%s: \"%s\" split as \"%s\", want \"%s\"", pre, text, got, want);
}

/* Codepoint classes (the ASCII ones come from a precomputed table). */
static void test_flags(void) {
    CHECK(tl_cpt_flags('a') == TL_CPT_LETTER && tl_cpt_flags('Z') == TL_CPT_LETTER);
    CHECK(tl_cpt_flags('0') == TL_CPT_NUMBER && tl_cpt_flags('9') == TL_CPT_NUMBER);
    CHECK(tl_cpt_flags(' ') == (TL_CPT_WHITESPACE | TL_CPT_SEPARATOR));
    CHECK(tl_cpt_flags('\t') == (TL_CPT_WHITESPACE | TL_CPT_CONTROL) && tl_cpt_flags('\r') == tl_cpt_flags('\v'));
    CHECK(tl_cpt_flags(0x1C) == TL_CPT_CONTROL && tl_cpt_flags(0) == TL_CPT_CONTROL && tl_cpt_flags(0x7F) == TL_CPT_CONTROL);
    CHECK(tl_cpt_flags('$') == TL_CPT_SYMBOL && tl_cpt_flags('~') == TL_CPT_SYMBOL && tl_cpt_flags('`') == TL_CPT_SYMBOL);
    CHECK(tl_cpt_flags('!') == TL_CPT_PUNCT && tl_cpt_flags('_') == TL_CPT_PUNCT && tl_cpt_flags('}') == TL_CPT_PUNCT);
    CHECK(tl_cpt_flags(0xA0) == (TL_CPT_WHITESPACE | TL_CPT_SEPARATOR));
    CHECK(tl_cpt_flags(0x85) == (TL_CPT_WHITESPACE | TL_CPT_CONTROL));
    CHECK(tl_cpt_flags(0x3000) == (TL_CPT_WHITESPACE | TL_CPT_SEPARATOR) && tl_cpt_flags(0x200B) == TL_CPT_CONTROL);
    CHECK(tl_cpt_flags(0xE9) == TL_CPT_LETTER && tl_cpt_flags(0x4E2D) == TL_CPT_LETTER);
    CHECK(tl_cpt_flags(0x663) == TL_CPT_NUMBER && tl_cpt_flags(0x2167) == TL_CPT_NUMBER);
    CHECK(tl_cpt_flags(0x301) == TL_CPT_MARK && tl_cpt_flags(0x2581) == TL_CPT_SYMBOL);
    CHECK(tl_cpt_flags(0x1F642) == TL_CPT_SYMBOL && tl_cpt_flags(0xE0000) == TL_CPT_CONTROL);
    CHECK(tl_cpt_flags(0xD800) == TL_CPT_CONTROL && tl_cpt_flags(0x110000) == TL_CPT_CONTROL);
    CHECK(tl_cpt_flags(0x31350) == TL_CPT_LETTER); /* CJK Extension H (Unicode 15) */
}

int main(void) {
    test_flags();
    /* every name compiles and covers a mixed text exactly */
    const char *mixed = "Hello, y'all! 12345 \xE4\xB8\xAD\xE6\x96\x87 caf\xC3\xA9\n\n  \t x \xF0\x9F\x99\x82 <b>~|$ 3.14 ";
    size_t n_names = 0;
    for (const char *name; (name = tl_pretok_name_at(n_names)); n_names++) {
        char got[1024];
        CHECKF(split_join(name, mixed, got, sizeof got), "%s: split failed", name);
        CHECK(tl_pretok_known(name));
    }
    CHECKF(n_names >= 40, "only %zu pre-tokenizer names", n_names);

    tl_pretok *p = NULL;
    tl_error err = {0};
    CHECK(tl_pretok_create("no-such-pre", &p, &err) == TL_ERR_UNSUPPORTED && p == NULL &&
          strstr(err.msg, "'no-such-pre'"));
    CHECK(!tl_pretok_known("no-such-pre"));

    expect_split("llama-bpe", "Hello world!!\n\n  x", "Hello| world|!!\n\n| | x");
    expect_split("llama-bpe", "12345 I'M", "123|45| I|'M");
    expect_split("qwen2", "12345 I'M", "1|2|3|4|5| I|'M");
    expect_split("qwen2", "Hello world!!\n\n  x", "Hello| world|!!\n\n| | x");
    expect_split("gpt-2", "I'M it's  1234 ok?!", "I|'|M| it|'s| | 1234| ok|?!");
    expect_split("starcoder", "abc123 x", "abc|1|2|3| x");
    expect_split("falcon", "1234567 a.b", "123|456|7| a|.|b");
    expect_split("default", "1234567 a.b", "123|456|7| a|.|b");
    expect_split("deepseek-coder", "a\nb, 12", "a|\n|b|,| |1|2");
    expect_split("deepseek-llm", "Hello, \xE4\xB8\x96\xE7\x95\x8C", "Hello|,| |\xE4\xB8\x96\xE7\x95\x8C");
    expect_split("deepseek-v3", "1234 \xE4\xB8\x96\xE7\x95\x8C!", "123|4| |\xE4\xB8\x96\xE7\x95\x8C|!");
    expect_split("poro-chat", "Hello, world.", "Hello|,| world|.");
    expect_split("tekken", "HelloWorld ABCdef", "Hello|World| ABCdef");
    expect_split("gpt-4o", "HelloWorld I'M 12345", "Hello|World| I'M| |123|45");
    expect_split("seed-coder", "I'M 12", "I|'M| |1|2");
    expect_split("grok-2", "12345 I'M", "1|2|3|4|5| I|'M");
    /* later regexes split the sentinel again, as in the reference */
    expect_split("chameleon", "<sentinel:12> ab1", "<|sentinel|:|1|2|>| ab|1");
    return TEST_DONE();
}
