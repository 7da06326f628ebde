/* lexicon.h: lexical facts of Aeon shared by the two independent readers
 * (syntax.c for whole files, oracle.c for prefixes): reserved words, string
 * escapes, UTF-8 encoding. Tables only; each reader has its own lexer. */
#ifndef TL_AEON_LEXICON_H
#define TL_AEON_LEXICON_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Words that are never identifiers. */
static const char *const tl_aeon_reserved_words[] = {
    "if", "then", "else", "let", "in", "fun", "true", "false", "unit",
    "def", "import", "open", "type", "inductive", "match", "forall",
};
#define TL_AEON_N_RESERVED (sizeof tl_aeon_reserved_words / sizeof tl_aeon_reserved_words[0])

static inline bool tl_aeon_is_reserved(const char *s) {
    for (size_t i = 0; i < TL_AEON_N_RESERVED; i++)
        if (!strcmp(s, tl_aeon_reserved_words[i]))
            return true;
    return false;
}

/* What a reserved word outside the fragment stands for, or NULL. */
static inline const char *tl_aeon_unsupported_keyword(const char *s) {
    if (!strcmp(s, "type") || !strcmp(s, "inductive"))
        return "an algebraic data type declaration";
    if (!strcmp(s, "match"))
        return "pattern matching";
    if (!strcmp(s, "forall"))
        return "polymorphism";
    return NULL;
}

/* Simple escapes \\ \" \' \n \r \t \a \b \f \v: the byte, or -1. */
static inline int tl_aeon_escape_simple(int c) {
    switch (c) {
    case '\\': return '\\';
    case '"': return '"';
    case '\'': return '\'';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'a': return '\a';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return -1;
    }
}

/* Hex escapes \xHH \uHHHH \UHHHHHHHH: the digit count, or 0. (Named \N{...}
 * and octal escapes are outside the fragment.) */
static inline int tl_aeon_escape_hex_digits(int c) { return c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0; }

static inline int tl_aeon_hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}


/* The prelude's operator types (refinements erased): the result type of
 * `l op r` for operands of type t (both sides equal), or -1.
 *   || &&: Bool;  = !=: any base type -> Bool;  < <= > >=: Int, Float, String -> Bool;
 *   +: Int, Float, String;  - * /: Int, Float;  %: Int. */
static inline int tl_aeon_binop_result_type(int op, int t) {
    /* op values are tl_aeon_binop (aeon.h); t a tl_aeon_type, base types are 0..4 */
    switch (op) {
    case 0: case 1: return t == 1 ? 1 : -1;                       /* || && */
    case 2: case 3: return t >= 0 && t <= 4 ? 1 : -1;             /* = != */
    case 4: case 5: case 6: case 7: return t == 0 || t == 2 || t == 3 ? 1 : -1;
    case 8: return t == 0 || t == 2 || t == 3 ? t : -1;           /* + */
    case 9: case 10: case 11: return t == 0 || t == 2 ? t : -1;   /* - * / */
    case 12: return t == 0 ? 0 : -1;                              /* % */
    default: return -1;
    }
}

#endif
