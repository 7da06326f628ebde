/* test_tokenize_cases.c: behaviour beyond the fixture vectors.
 *
 *  - round trips of awkward text (code, JSON, CJK, RTL, emoji ZWJ sequences,
 *    whitespace runs, combining accents, NUL and control bytes) on every vocab;
 *  - invalid UTF-8: never a crash; SPM keeps every byte (byte fallback), BPE
 *    turns each byte that does not start a complete sequence into U+FFFD
 *    (falcon has no token for \v at all: the reference drops such bytes, so
 *    \v is left out of the shared round-trip strings);
 *  - special tokens: control texts only with parse_special, user-defined texts
 *    always, longest first, phi-3's right-strip, BOS/EOS/EOT/EOG per vocab;
 *  - tl_vocab_token_bytes and detokenize details;
 *  - load errors on hand-made GGUF files (unknown model / pre, bad arrays). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_builder.h"
#include "tl_test.h"
#include "tok/vocab.h"
#include "util/strbuf.h"

static const char *const vocab_names[] = {"llama-spm", "phi-3", "gpt-2", "llama3", "qwen3",
                                          "deepseek-coder", "starcoder", "falcon"};
#define N_VOCABS (sizeof vocab_names / sizeof vocab_names[0])
static tl_vocab *vocabs[N_VOCABS];

static tl_vocab *load_fixture_vocab(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", name);
    tl_error err = {0};
    tl_vocab *v = NULL;
    CHECKF(tl_vocab_load_file(tl_fixture(rel), &v, &err) == TL_OK, "%s: %s", name, err.msg);
    return v;
}

static tl_vocab *by_name(const char *name) {
    for (size_t i = 0; i < N_VOCABS; i++)
        if (!strcmp(vocab_names[i], name))
            return vocabs[i];
    return NULL;
}

/* tokenize + detokenize; returns the text (caller frees), NULL on error */
static char *round_trip(const tl_vocab *v, const char *s, size_t len, size_t *out_len, size_t *n_ids) {
    int32_t *ids;
    size_t n;
    tl_error err = {0};
    if (tl_vocab_tokenize(v, s, len, false, false, &ids, &n, &err) != TL_OK) {
        fprintf(stderr, "tokenize failed: %s\n", err.msg);
        return NULL;
    }
    tl_strbuf sb = TL_STRBUF_INIT;
    tl_status st = tl_vocab_detokenize(v, ids, n, true, false, &sb, &err);
    free(ids);
    if (st != TL_OK) {
        tl_strbuf_free(&sb);
        return NULL;
    }
    if (n_ids)
        *n_ids = n;
    *out_len = sb.len;
    return tl_strbuf_detach(&sb);
}

static int32_t count_id(const int32_t *ids, size_t n, int32_t id) {
    int32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ids[i] == id;
    return c;
}

static void test_round_trips(void) {
    static const struct {
        const char *what, *text;
        size_t len; /* 0: strlen */
    } cases[] = {
        {"code", "def fib(n):\n    if n < 2:\n        return n\n    return fib(n-1) + fib(n-2)  # O(2^n)\n", 0},
        {"json", "{\"name\": \"\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9\", \"v\": [1, 2.5e-3, -7], \"ok\": true, \"n\": null}", 0},
        {"cjk", "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple\xE5\xB7\xA5\xE4\xBD\x9C" "1314151\xE5\xA4\xA9 "
                "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x80\x82 "
                "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4", 0},
        {"rtl", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85! "
                "\xE2\x80\x8F\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD7\xA2\xD7\x95\xD7\x9C\xD7\x9D\xE2\x80\x8E.", 0},
        {"emoji zwj", "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6 "
                      "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", 0},
        {"whitespace runs", "a    b\n\n\n\nc \t \r\n  \n   \t\t\f x\xC2\xA0y\xE3\x80\x80z   ", 0},
        {"combining", "e\xCC\x81 a\xCC\x80\xCC\xA8 Z\xCC\xA4\xCD\x94\xCD\xA7\xCC\x91\xCC\x93 o\xCC\x88\xCC\x81", 0},
        {"leading spaces", "   leading and trailing  ", 0},
        {"controls", "a\0b\x01\x7F\x1B[0m\xC2\x85", 9},
        {"numbers", "3.14159 1,000,000 0xDEADBEEF 1e-9 \xD9\xA3\xD9\xA4 \xE2\x85\xA7", 0},
        {"contractions", "I'M y'all 'twas don't WE'VE it'S O'Neil's", 0},
        {"single space", " ", 0},
        {"newline", "\n", 0},
    };
    for (size_t vi = 0; vi < N_VOCABS; vi++) {
        if (!vocabs[vi])
            continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            size_t len = cases[c].len ? cases[c].len : strlen(cases[c].text), got_len = 0;
            char *got = round_trip(vocabs[vi], cases[c].text, len, &got_len, NULL);
            CHECKF(got && got_len == len && memcmp(got, cases[c].text, len) == 0, "%s: %s does not round-trip",
                   vocab_names[vi], cases[c].what);
            free(got);
        }
        /* a long run of one letter (one word, thousands of merges) */
        size_t n = 20000;
        char *big = malloc(n);
        memset(big, 'a', n);
        size_t got_len = 0, n_ids = 0;
        char *got = round_trip(vocabs[vi], big, n, &got_len, &n_ids);
        CHECKF(got && got_len == n && memcmp(got, big, n) == 0 && n_ids > 0 && n_ids < n,
               "%s: 20000 x 'a' does not round-trip", vocab_names[vi]);
        free(got);
        free(big);
    }
}

static void test_invalid_utf8(void) {
    static const struct {
        const char *in, *bpe_out; /* what byte-level BPE gives back */
    } cases[] = {
        {"\xFF\xFE", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"abc\xC3", "abc\xEF\xBF\xBD"},
        {"\xE2\x82 x", "\xEF\xBF\xBD\xEF\xBF\xBD x"},           /* truncated: each byte alone */
        {"\x80\xBF", "\xEF\xBF\xBD\xEF\xBF\xBD"},               /* stray continuations */
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* above U+10FFFF */
        {"\xED\xA0\x80", "\xED\xA0\x80"},                       /* a surrogate decodes leniently and survives */
        {"ok \xC3\xA9 \xC3(", "ok \xC3\xA9 \xEF\xBF\xBD("},
    };
    for (size_t vi = 0; vi < N_VOCABS; vi++) {
        const tl_vocab *v = vocabs[vi];
        if (!v)
            continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            size_t len = strlen(cases[c].in), got_len = 0;
            char *got = round_trip(v, cases[c].in, len, &got_len, NULL);
            const char *want = tl_vocab_kind_of(v) == TL_VOCAB_SPM ? cases[c].in : cases[c].bpe_out;
            CHECKF(got && got_len == strlen(want) && memcmp(got, want, got_len) == 0,
                   "%s: invalid UTF-8 case %zu gave the wrong text", vocab_names[vi], c);
            free(got);
        }
        /* with parse_special too, and every byte value */
        char all[256];
        for (int b = 0; b < 256; b++)
            all[b] = (char)(255 - b);
        int32_t *ids;
        size_t n;
        tl_error err = {0};
        CHECK(tl_vocab_tokenize(v, all, sizeof all, true, true, &ids, &n, &err) == TL_OK && n > 0);
        free(ids);
    }
}

static void tokenize_ok(const tl_vocab *v, const char *s, bool add_special, bool parse_special, int32_t **ids,
                        size_t *n) {
    tl_error err = {0};
    *ids = NULL;
    *n = 0;
    CHECKF(tl_vocab_tokenize(v, s, strlen(s), add_special, parse_special, ids, n, &err) == TL_OK, "%s", err.msg);
}

static void test_specials(void) {
    const tl_vocab *q = by_name("qwen3"), *l3 = by_name("llama3"), *spm = by_name("llama-spm"),
                   *phi = by_name("phi-3"), *g2 = by_name("gpt-2");
    if (!q || !l3 || !spm || !phi || !g2)
        return;
    int32_t *ids;
    size_t n;
    int32_t im_start = tl_vocab_piece_to_id(q, "<|im_start|>", 12), im_end = tl_vocab_piece_to_id(q, "<|im_end|>", 10);
    CHECK(im_start == 151644 && im_end == 151645);
    tokenize_ok(q, "<|im_start|>user\nhi<|im_end|>", false, true, &ids, &n);
    CHECK(n >= 3 && ids[0] == im_start && ids[n - 1] == im_end);
    free(ids);
    tokenize_ok(q, "<|im_start|>user\nhi<|im_end|>", false, false, &ids, &n);
    CHECK(count_id(ids, n, im_start) == 0 && count_id(ids, n, im_end) == 0 && n > 6);
    free(ids);
    /* user-defined tokens are split out even without parse_special */
    int32_t think = tl_vocab_piece_to_id(q, "<think>", 7);
    CHECK(think >= 0 && tl_vocab_token_attr(q, think) == TL_TOKEN_USER_DEFINED);
    tokenize_ok(q, "a<think>b", false, false, &ids, &n);
    CHECK(n == 3 && ids[1] == think);
    free(ids);
    /* FIM tokens are typed user-defined in the file but act as control (as in the reference) */
    int32_t fim = tl_vocab_piece_to_id(q, "<|fim_prefix|>", 14);
    CHECK(fim >= 0 && tl_vocab_token_attr(q, fim) == TL_TOKEN_CONTROL);
    tokenize_ok(q, "<|fim_prefix|>", false, false, &ids, &n);
    CHECK(count_id(ids, n, fim) == 0);
    free(ids);

    /* BOS / EOS / EOT / EOG */
    CHECK(!tl_vocab_add_bos(q) && tl_vocab_bos(q) == -1 && tl_vocab_eos(q) == im_end && tl_vocab_eot(q) == im_end);
    CHECK(tl_vocab_is_eog(q, im_end) && tl_vocab_is_eog(q, 151643) && !tl_vocab_is_eog(q, im_start) &&
          !tl_vocab_is_eog(q, -1) && !tl_vocab_is_eog(q, 9707));
    CHECK(tl_vocab_add_bos(l3) && tl_vocab_bos(l3) == 128000 && tl_vocab_eot(l3) == 128009);
    CHECK(tl_vocab_is_eog(l3, 128009) && tl_vocab_is_eog(l3, 128001) && !tl_vocab_is_eog(l3, 128000));
    tokenize_ok(l3, "Hi", true, false, &ids, &n);
    CHECK(n == 2 && ids[0] == 128000);
    free(ids);
    CHECK(tl_vocab_add_bos(spm) && !tl_vocab_add_eos(spm) && tl_vocab_bos(spm) == 1 && tl_vocab_eos(spm) == 2 &&
          tl_vocab_eot(spm) == -1 && tl_vocab_is_eog(spm, 2));
    tokenize_ok(spm, "", true, false, &ids, &n);
    CHECK(n == 1 && ids[0] == 1);
    free(ids);
    tokenize_ok(spm, "", false, false, &ids, &n);
    CHECK(n == 0 && ids != NULL);
    free(ids);
    CHECK(!tl_vocab_add_bos(g2) && tl_vocab_eot(g2) == 50256 && tl_vocab_is_eog(g2, 50256));
    CHECK(tl_vocab_eot(phi) == tl_vocab_piece_to_id(phi, "<|end|>", 7) && tl_vocab_eot(phi) >= 0);
    CHECK(tl_vocab_kind_of(spm) == TL_VOCAB_SPM && tl_vocab_kind_of(q) == TL_VOCAB_BPE);
    CHECK(!strcmp(tl_vocab_pre(q), "qwen2") && !strcmp(tl_vocab_pre(l3), "llama-bpe"));
    CHECK(tl_vocab_n_tokens(q) == 151669 && tl_vocab_chat_template(q) != NULL && tl_vocab_chat_template(g2) == NULL);

    /* SPM: the space prefix goes in front of text after a special token too */
    int32_t *a, *b;
    size_t na, nb;
    tokenize_ok(spm, "<s>Hello", false, true, &a, &na);
    tokenize_ok(spm, "Hello", false, false, &b, &nb);
    CHECK(na == nb + 1 && a[0] == 1 && memcmp(a + 1, b, nb * sizeof *b) == 0);
    free(a);
    free(b);
    /* phi-3: </s> is typed user-defined in the file, but as an end-of-generation
     * text the reference ORs the control bit in: with special parsing off it
     * stays ordinary text (node-llama-cpp 3.22.1: 263 829 29879 29958 259 289),
     * with it on it is split off and strips the whitespace after it */
    int32_t eos_text = tl_vocab_piece_to_id(phi, "</s>", 4);
    static const int32_t plain[] = {263, 829, 29879, 29958, 259, 289};
    tokenize_ok(phi, "a</s>   b", false, false, &a, &na);
    CHECK(count_id(a, na, eos_text) == 0 && na == 6 && !memcmp(a, plain, sizeof plain));
    free(a);
    tokenize_ok(phi, "a</s>   b", false, true, &a, &na);
    tokenize_ok(phi, "a</s>b", false, true, &b, &nb);
    CHECK(count_id(a, na, eos_text) == 1 && na == nb && memcmp(a, b, na * sizeof *a) == 0);
    CHECK(tl_vocab_is_eog(phi, eos_text) && tl_vocab_is_eog(spm, 2));
    free(a);
    free(b);
}

/* A small SPM vocabulary built in memory: a..e, specials "<x>" (control),
 * "<x>y" (user-defined, longer), byte tokens for '\n' only. */
static tl_status load_built(gguf_builder *gb, tl_vocab **v, tl_error *err) {
    tl_strbuf file = TL_STRBUF_INIT;
    gb_finish(gb, &file);
    tl_gguf *g = NULL;
    tl_status st = tl_gguf_open_memory(file.buf, file.len, "built.gguf", &g, err);
    if (st == TL_OK) {
        st = tl_vocab_load(g, v, err);
        tl_gguf_close(g);
    }
    tl_strbuf_free(&file);
    return st;
}

static void test_built_vocab(void) {
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "<0x0A>", "\xE2\x96\x81", "a", "b", "c",
                                       "\xE2\x96\x81" "a", "ab", "<x>", "<x>y", "y"};
    static const int32_t types[] = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 3, 4, 1};
    static const float scores[] = {0, 0, 0, 0, -1, -2, -2, -2, -0.5f, -1.5f, 0, 0, -3};
    gguf_builder gb = {TL_STRBUF_INIT, 0};
    gb_kv_str(&gb, "general.architecture", "llama");
    gb_kv_str(&gb, "tokenizer.ggml.model", "llama");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 13);
    gb_kv_i32s(&gb, "tokenizer.ggml.token_type", types, 13);
    gb_kv_f32s(&gb, "tokenizer.ggml.scores", scores, 13);
    gb_kv_bool(&gb, "tokenizer.ggml.add_bos_token", 0);
    gb_kv_u32(&gb, "tokenizer.ggml.eot_token_id", 2);
    gb_kv_u32(&gb, "tokenizer.ggml.eos_token_id", 99);            /* out of range: default (2) kept */
    gb_kv_i32s(&gb, "tokenizer.ggml.unused_array", types, 1);
    gb_key(&gb, "tokenizer.ggml.padding_token_id", 5);          /* i32 -1: no padding token */
    gb_u32(&gb.kvs, 0xFFFFFFFFu);
    tl_vocab *v = NULL;
    tl_error err = {0};
    CHECKF(load_built(&gb, &v, &err) == TL_OK, "%s", err.msg);
    if (!v)
        return;
    int32_t *ids;
    size_t n;
    /* longest special first: "<x>y" (user-defined) wins over "<x>" even with parsing on */
    tokenize_ok(v, "<x>y", false, true, &ids, &n);
    CHECK(n == 1 && ids[0] == 11);
    free(ids);
    /* "ab" merges (score -1.5) only when "▁a" (-0.5) is not available: "▁ab" -> ▁a b */
    tokenize_ok(v, "ab", false, false, &ids, &n);
    CHECK(n == 2 && ids[0] == 8 && ids[1] == 6);
    free(ids);
    /* an unknown character without a byte token becomes <unk>, a newline its byte token */
    tokenize_ok(v, "a\nz", false, false, &ids, &n);
    CHECK(n == 3 && ids[0] == 8 && ids[1] == 3 && ids[2] == 0);
    free(ids);
    CHECK(!tl_vocab_add_bos(v) && tl_vocab_eot(v) == 2 && tl_vocab_is_eog(v, 2) && tl_vocab_eos(v) == 2);
    /* token_bytes: snprintf-like with a short buffer */
    char buf[8];
    memset(buf, '#', sizeof buf);
    CHECK(tl_vocab_token_bytes(v, 8, false, buf, 1) == 2 && buf[0] == ' ' && buf[1] == '#');
    CHECK(tl_vocab_token_bytes(v, 3, false, buf, sizeof buf) == 1 && buf[0] == '\n');
    CHECK(tl_vocab_token_bytes(v, 10, false, buf, sizeof buf) == 0);
    CHECK(tl_vocab_token_bytes(v, 10, true, buf, sizeof buf) == 3 && !memcmp(buf, "<x>", 3));
    CHECK(tl_vocab_token_bytes(v, 11, false, buf, sizeof buf) == 4); /* user-defined always prints */
    CHECK(tl_vocab_token_bytes(v, 99, true, buf, sizeof buf) == 0 && tl_vocab_token_piece(v, 99, NULL) == NULL);
    tl_strbuf sb = TL_STRBUF_INIT;
    int32_t bad[] = {5, 13};
    CHECK(tl_vocab_detokenize(v, bad, 2, true, false, &sb, &err) == TL_ERR_INVALID && strstr(err.msg, "13"));
    int32_t seq[] = {1, 8, 4, 6};
    tl_strbuf_clear(&sb);
    CHECK(tl_vocab_detokenize(v, seq, 4, true, true, &sb, &err) == TL_OK && !strcmp(tl_strbuf_cstr(&sb), "<s>a b"));
    tl_strbuf_clear(&sb);
    CHECK(tl_vocab_detokenize(v, seq, 4, false, false, &sb, &err) == TL_OK && !strcmp(tl_strbuf_cstr(&sb), " a b"));
    tl_strbuf_free(&sb);
    tl_vocab_free(v);
}

static void expect_load_error(gguf_builder *gb, tl_status want, const char *needle) {
    tl_vocab *v = NULL;
    tl_error err = {0};
    tl_status st = load_built(gb, &v, &err);
    CHECKF(st == want && v == NULL && strstr(err.msg, needle), "got %s: '%s' (want %s mentioning '%s')",
           tl_status_name(st), err.msg, tl_status_name(want), needle);
    tl_vocab_free(v);
}

static void test_load_errors(void) {
    static const char *const toks[] = {"a", "b", "ab"};
    static const char *const merges[] = {"a b"};
    static const int32_t nums[] = {1, 2, 3};
    gguf_builder gb = {TL_STRBUF_INIT, 0};
    gb_kv_str(&gb, "general.architecture", "llama");
    expect_load_error(&gb, TL_ERR_FORMAT, "tokenizer.ggml.model");

    gb_kv_str(&gb, "tokenizer.ggml.model", "bert");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    expect_load_error(&gb, TL_ERR_UNSUPPORTED, "'bert'");

    gb_kv_str(&gb, "tokenizer.ggml.model", "gpt2");
    gb_kv_str(&gb, "tokenizer.ggml.pre", "no-such-pre");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    gb_kv_strs(&gb, "tokenizer.ggml.merges", merges, 1);
    expect_load_error(&gb, TL_ERR_UNSUPPORTED, "'no-such-pre'");

    gb_kv_str(&gb, "tokenizer.ggml.model", "gpt2");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    expect_load_error(&gb, TL_ERR_FORMAT, "merges");

    gb_kv_str(&gb, "tokenizer.ggml.model", "llama");
    gb_kv_i32s(&gb, "tokenizer.ggml.tokens", nums, 3);
    expect_load_error(&gb, TL_ERR_FORMAT, "tokenizer.ggml.tokens");

    gb_kv_str(&gb, "tokenizer.ggml.model", "llama");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    gb_kv_i32s(&gb, "tokenizer.ggml.token_type", nums, 2);
    expect_load_error(&gb, TL_ERR_FORMAT, "token_type");

    gb_kv_str(&gb, "tokenizer.ggml.model", "llama");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 0);
    expect_load_error(&gb, TL_ERR_FORMAT, "empty");

    gb_kv_str(&gb, "tokenizer.ggml.model", "llama");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    gb_kv_str(&gb, "tokenizer.ggml.bos_token_id", "1");
    expect_load_error(&gb, TL_ERR_FORMAT, "bos_token_id");

    gb_kv_u32(&gb, "tokenizer.ggml.model", 7);
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    expect_load_error(&gb, TL_ERR_FORMAT, "tokenizer.ggml.model");

    /* a good BPE vocabulary with the default pre-tokenizer, for contrast */
    gb_kv_str(&gb, "tokenizer.ggml.model", "gpt2");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    gb_kv_strs(&gb, "tokenizer.ggml.merges", merges, 1);
    tl_vocab *v = NULL;
    tl_error err = {0};
    CHECKF(load_built(&gb, &v, &err) == TL_OK, "%s", err.msg);
    if (v) {
        int32_t *ids;
        size_t n;
        tokenize_ok(v, "abba", false, false, &ids, &n);
        CHECK(n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0);
        free(ids);
        CHECK(!strcmp(tl_vocab_pre(v), "default") && tl_vocab_bos(v) == -1 && !tl_vocab_add_bos(v));
    }
    tl_vocab_free(v);
}

/* A normal BPE token whose text is not valid UTF-8 (fuzzer find: token_bytes
 * decoded it into a one-codepoint buffer) prints its bytes as they are. */
static void test_invalid_token_text(void) {
    static const char *const toks[] = {"a", "\xE2" "a\xC3", "\xC4\xA0" "b"};
    static const char *const merges[] = {"a b"};
    gguf_builder gb = {TL_STRBUF_INIT, 0};
    gb_kv_str(&gb, "tokenizer.ggml.model", "gpt2");
    gb_kv_strs(&gb, "tokenizer.ggml.tokens", toks, 3);
    gb_kv_strs(&gb, "tokenizer.ggml.merges", merges, 1);
    tl_vocab *v = NULL;
    tl_error err = {0};
    CHECKF(load_built(&gb, &v, &err) == TL_OK, "%s", err.msg);
    if (!v)
        return;
    char buf[16];
    CHECK(tl_vocab_token_bytes(v, 1, false, buf, sizeof buf) == 3 && !memcmp(buf, "\xE2" "a\xC3", 3));
    CHECK(tl_vocab_token_bytes(v, 2, false, buf, sizeof buf) == 2 && !memcmp(buf, " b", 2));
    tl_vocab_free(v);
}

int main(void) {
    for (size_t i = 0; i < N_VOCABS; i++)
        vocabs[i] = load_fixture_vocab(vocab_names[i]);
    test_round_trips();
    test_invalid_utf8();
    test_specials();
    test_built_vocab();
    test_load_errors();
    test_invalid_token_text();
    for (size_t i = 0; i < N_VOCABS; i++)
        tl_vocab_free(vocabs[i]);
    return TEST_DONE();
}
