/* utf8.h: the one UTF-8 decoder and encoder of the project. Validation of
 * GGUF strings, JSON escaping, regex-constrained generation, free-text
 * sanitising, the Aeon sampler and the tokenizers all decode through
 * tl_utf8_decode, so "valid UTF-8" means the same thing in every layer.
 *
 * Strict mode is RFC 3629: no overlong forms, no surrogates (U+D800..DFFF),
 * nothing above U+10FFFF; the second byte's range is checked as soon as it is
 * present, so a cut-off prefix is reported as cut only when it can still
 * become a well-formed character. TL_UTF8_LENIENT is llama.cpp's tokenizer
 * decoding (any lead 0xC0..0xF7 with continuation bytes, surrogates and
 * overlongs accepted, above U+10FFFF rejected): the tokenizers need it to give
 * the reference's token ids for malformed text. */
#ifndef TL_UTIL_UTF8_H
#define TL_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

enum {
    TL_UTF8_STRICT = 0,
    TL_UTF8_LENIENT = 1,
};

/* tl_utf8_decode's result when s[0..n) is a proper prefix of a well-formed
 * character: more bytes may complete it. */
#define TL_UTF8_CUT (-1)

/* Decodes one character from s[0..n) (n >= 1). Returns its length 1..4 and
 * stores the code point in *cp (cp may be NULL); 0 when s does not start a
 * well-formed character; TL_UTF8_CUT when it is cut off by n. */
int tl_utf8_decode(const void *s, size_t n, uint32_t *cp, int mode);

/* Strict check of a whole buffer: 0 when s[0..n) is well-formed, 1 when it is
 * well-formed except that it ends inside a character (a token can carry part
 * of one), -1 when it is invalid. *bad_at (may be NULL) receives the offset of
 * the first byte that is not part of a complete, valid character (n if none). */
int tl_utf8_check(const void *s, size_t n, size_t *bad_at);

/* Writes cp as 1..4 bytes into out (room for 4); returns the length.
 * Surrogates are encoded like any value; callers that must not produce them
 * replace them first. */
size_t tl_utf8_encode(uint32_t cp, char *out);

#endif
