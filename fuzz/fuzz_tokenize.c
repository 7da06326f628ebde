/* fuzz_tokenize.c: libFuzzer target for the tokenizers.
 *
 * Arbitrary bytes are tokenized with fixture vocabularies covering both
 * algorithms and every matching engine (SPM; BPE through the hand-written
 * Llama-3 and GPT-2 splitters, PCRE2 on collapsed text, PCRE2 in UTF mode),
 * with and without special-token parsing, then detokenized. Besides "no
 * crash, no sanitizer report", two properties are checked where they hold:
 * SPM gives any text back byte for byte (unless it holds a literal U+2581, SPM's
 * own spelling of a space), and byte-level BPE gives valid UTF-8 back byte for
 * byte (both when no special-token text can interfere).
 * Vocabularies come from $TL_FIXTURES (default ../shared/fixtures). An input
 * starting with 0xFF is instead a GGUF file whose vocabulary gets loaded, so
 * the loader meets hostile metadata too. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/vocab.h"
#include "util/strbuf.h"

static const char *const names[] = {"llama-spm", "qwen3", "llama3", "deepseek-coder", "falcon", "gpt-2"};
#define N_VOCABS (sizeof names / sizeof names[0])
static tl_vocab *vocabs[N_VOCABS];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *root = getenv("TL_FIXTURES");
    if (!root)
        root = "../shared/fixtures";
    for (size_t i = 0; i < N_VOCABS; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", root, names[i]);
        tl_error err = {0};
        if (tl_vocab_load_file(path, &vocabs[i], &err) != TL_OK) {
            fprintf(stderr, "fuzz_tokenize: %s\n", err.msg);
            abort();
        }
    }
    return 0;
}

/* Strict UTF-8 validity (no overlongs, no surrogates, <= U+10FFFF). */
static bool valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cpt, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cpt = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cpt = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cpt = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cpt = (cpt << 6) | (s[i + k] & 0x3F);
        }
        if (cpt < min || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* First byte 0xFF: the rest is a GGUF file whose vocabulary is loaded (any
 * error is fine) and, if it loads, used on a few fixed strings. */
static void fuzz_vocab_file(const uint8_t *data, size_t size) {
    tl_gguf *g = NULL;
    tl_vocab *v = NULL;
    tl_error err = {0};
    if (tl_gguf_open_memory(data, size, "fuzz.gguf", &g, &err) != TL_OK)
        return;
    if (tl_vocab_load(g, &v, &err) == TL_OK) {
        static const char *const texts[] = {"", " ", "Hello world", "<s>a</s> <|im_start|>x\n\n 12345 !!",
                                            "\xE4\xB8\xAD\xFF\xC3 \xF0\x9F\x99\x82"};
        for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
            for (int mode = 0; mode < 4; mode++) {
                int32_t *ids = NULL;
                size_t n = 0;
                if (tl_vocab_tokenize(v, texts[t], strlen(texts[t]), mode & 1, mode & 2, &ids, &n, &err) != TL_OK)
                    abort();
                tl_strbuf out = TL_STRBUF_INIT;
                if (tl_vocab_detokenize(v, ids, n, true, mode & 1, &out, &err) != TL_OK)
                    abort();
                tl_strbuf_free(&out);
                free(ids);
            }
        char buf[64];
        for (int32_t id = -1; id <= tl_vocab_n_tokens(v); id++) {
            tl_vocab_token_bytes(v, id, true, buf, sizeof buf);
            tl_vocab_is_eog(v, id);
        }
        tl_vocab_free(v);
    }
    tl_gguf_close(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (data[0] == 0xFF) {
        fuzz_vocab_file(data + 1, size - 1);
        return 0;
    }
    unsigned ctl = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const tl_vocab *v = vocabs[(ctl & 0x0F) % N_VOCABS];
    bool parse_special = ctl & 0x10, add_special = ctl & 0x20;
    int32_t *ids = NULL;
    size_t n = 0;
    tl_error err = {0};
    if (tl_vocab_tokenize(v, text, len, add_special, parse_special, &ids, &n, &err) != TL_OK)
        abort(); /* tokenizing never fails short of running out of memory */
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tl_vocab_n_tokens(v))
            abort();
    tl_strbuf out = TL_STRBUF_INIT;
    if (tl_vocab_detokenize(v, ids, n, true, ctl & 0x40, &out, &err) != TL_OK)
        abort();
    /* special-token texts ('<' in these vocabs, and deepseek-coder's one-character
     * user-defined tokens) and falcon's missing byte tokens make round trips lossy by design */
    bool plain = !memchr(text, '<', len) && !add_special && !(ctl & 0x40);
    /* SPM spells spaces as U+2581, so a literal U+2581 comes back as a space */
    if (tl_vocab_kind_of(v) == TL_VOCAB_SPM && memmem(text, len, "\xE2\x96\x81", 3))
        plain = false;
    bool is_spm = tl_vocab_kind_of(v) == TL_VOCAB_SPM;
    bool lossless_bpe = v == vocabs[1] || v == vocabs[2] || v == vocabs[5];
    if (plain && (is_spm || (lossless_bpe && valid_utf8((const unsigned char *)text, len)))) {
        if (out.len != len || (len && memcmp(out.buf, text, len) != 0))
            abort();
    }
    tl_strbuf_free(&out);
    free(ids);
    return 0;
}
