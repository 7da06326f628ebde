/* unicode.c: the few Unicode facts the tokenizers need, defined the way the
 * reference (llama.cpp) defines them so ids come out identical: lenient UTF-8
 * decoding, category groups per codepoint (utf8proc's tables) and the GPT-2
 * byte alphabet. */
#include <utf8proc.h>

#include "tok/tok_internal.h"

size_t tl_utf8_decode_all(const char *text, size_t len, uint32_t *out) {
    size_t i = 0, n = 0;
    while (i < len) {
        uint32_t cpt;
        int l = tl_utf8_decode(text + i, len - i, &cpt, TL_UTF8_LENIENT);
        if (l <= 0) { /* stray continuation, 0xF8..0xFF, cut off or above U+10FFFF */
            out[n++] = 0xFFFD;
            i++;
            continue;
        }
        out[n++] = cpt;
        i += (size_t)l;
    }
    return n;
}

/* White_Space, the set Python's `regex` \s matches (and llama.cpp copied). */
static bool is_white_space(uint32_t c) {
    if (c <= 0x20)
        return c == 0x20 || (c >= 0x09 && c <= 0x0D);
    if (c < 0x85)
        return false;
    switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

/* tl_cpt_flags for ASCII, precomputed from the general rule below (the hot case). */
static const uint8_t ascii_flags[128] = {
    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0xC0, 0xC0, 0xC0, 0xC0, 0xC0, 0x40, 0x40,
    0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
    0x84, 0x10, 0x10, 0x10, 0x20, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x20, 0x10, 0x10, 0x10, 0x10,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x10, 0x10, 0x20, 0x20, 0x20, 0x10,
    0x10, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02,
    0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x10, 0x10, 0x10, 0x20, 0x10,
    0x20, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02,
    0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x10, 0x20, 0x10, 0x20, 0x40,
};

static unsigned cpt_flags_slow(uint32_t cpt);

unsigned tl_cpt_flags(uint32_t cpt) { return cpt < 128 ? ascii_flags[cpt] : cpt_flags_slow(cpt); }

static unsigned cpt_flags_slow(uint32_t cpt) {
    if (cpt > 0x10FFFF)
        return TL_CPT_CONTROL;
    unsigned f = is_white_space(cpt) ? TL_CPT_WHITESPACE : 0;
    switch (utf8proc_category((utf8proc_int32_t)cpt)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return f | TL_CPT_LETTER;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
        return f | TL_CPT_MARK;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return f | TL_CPT_NUMBER;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return f | TL_CPT_PUNCT;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
        return f | TL_CPT_SYMBOL;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
        return f | TL_CPT_SEPARATOR;
    default: /* Cc, Cf, Cs, Co, Cn */
        return f | TL_CPT_CONTROL;
    }
}

/* The printable bytes stand for themselves; the other 68 (0x00-0x20, 0x7F-0xA0,
 * 0xAD) are numbered from U+0100 in byte order. */
uint32_t tl_gpt2_byte_to_cpt(unsigned char b) {
    if (b <= 0x20)
        return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0)
        return 0x100 + 33 + (b - 0x7F);
    if (b == 0xAD)
        return 0x100 + 33 + 34;
    return b;
}

int tl_gpt2_cpt_to_byte(uint32_t cpt) {
    if ((cpt >= 0x21 && cpt <= 0x7E) || (cpt >= 0xA1 && cpt <= 0xAC) || (cpt >= 0xAE && cpt <= 0xFF))
        return (int)cpt;
    if (cpt >= 0x100 && cpt <= 0x120)
        return (int)(cpt - 0x100);
    if (cpt >= 0x121 && cpt <= 0x142)
        return (int)(cpt - 0x121 + 0x7F);
    if (cpt == 0x143)
        return 0xAD;
    return -1;
}
