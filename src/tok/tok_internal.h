/* tok_internal.h: what the tokenizer files share inside src/tok (not a contract).
 *
 * The vocabulary is copied out of the GGUF into one text pool so the file can
 * be closed. Every string the tokenizers look up (token texts and, for BPE, the
 * merge halves and results) is interned in one hash table: ids below n_tokens
 * are tokens, ids at or above are strings that only occur inside merges. The
 * tokenizers then work on interned ids and never build temporary strings. */
#ifndef TL_TOK_INTERNAL_H
#define TL_TOK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tok/vocab.h"
#include "util/utf8.h" /* tl_utf8_decode / tl_utf8_encode */

/* ---- strtab: interned byte strings --------------------------------------- */

typedef struct tl_strtab {
    char *pool;          /* all strings, each followed by a NUL */
    size_t pool_len, pool_cap;
    uint64_t *offs;      /* [n] start of string i in pool */
    uint32_t *lens;      /* [n] byte length of string i */
    uint32_t n, cap;     /* strings interned */
    uint32_t *slots;     /* open addressing: string index + 1, 0 = empty; size mask + 1 */
    uint64_t mask;
} tl_strtab;

uint64_t tl_tok_hash(const void *data, size_t len);
void tl_strtab_free(tl_strtab *t);
/* Index of the string or -1. */
int64_t tl_strtab_find(const tl_strtab *t, const char *s, size_t len);
/* Adds a string (always a new entry, even if equal text exists) and returns its index,
 * or -1 on allocation failure. map_it: make lookups of this text return this entry
 * (later calls win, as llama.cpp's token_to_id map does for duplicate texts). */
int64_t tl_strtab_add(tl_strtab *t, const char *s, size_t len, bool map_it);
static inline const char *tl_strtab_str(const tl_strtab *t, uint32_t i) { return t->pool + t->offs[i]; }

/* ---- Unicode helpers (unicode.c) ----------------------------------------- */

/* Codepoint classes as llama.cpp's unicode tables define them (general category
 * groups plus the White_Space property). */
enum {
    TL_CPT_NUMBER = 1 << 0,      /* \p{N} */
    TL_CPT_LETTER = 1 << 1,      /* \p{L} */
    TL_CPT_SEPARATOR = 1 << 2,   /* \p{Z} */
    TL_CPT_MARK = 1 << 3,        /* \p{M} */
    TL_CPT_PUNCT = 1 << 4,       /* \p{P} */
    TL_CPT_SYMBOL = 1 << 5,      /* \p{S} */
    TL_CPT_CONTROL = 1 << 6,     /* \p{C}, including unassigned */
    TL_CPT_WHITESPACE = 1 << 7,  /* White_Space (\s) */
};
unsigned tl_cpt_flags(uint32_t cpt);

/* Length of the UTF-8 sequence its lead byte announces (1 for continuation and
 * invalid bytes), as llama.cpp's unicode_len_utf8. */
static inline size_t tl_utf8_len(unsigned char c) {
    static const unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}
/* Decodes text into codepoints the way llama.cpp does: a byte that does not
 * start a complete sequence becomes U+FFFD and is skipped alone; values above
 * U+10FFFF also become U+FFFD (llama.cpp would throw). *out has room for len
 * entries. Returns the count. */
size_t tl_utf8_decode_all(const char *text, size_t len, uint32_t *out);

/* GPT-2 byte alphabet: every byte has a printable stand-in codepoint (< U+0144). */
uint32_t tl_gpt2_byte_to_cpt(unsigned char b);
/* Stand-in codepoint -> byte, or -1 when cpt is not in the alphabet. */
int tl_gpt2_cpt_to_byte(uint32_t cpt);

/* ---- pre-tokenizer (pretok.c) ---------------------------------------------- */

typedef struct tl_pretok tl_pretok;
/* NULL + error for an unknown name. */
tl_status tl_pretok_create(const char *pre_name, tl_pretok **out, tl_error *err);
void tl_pretok_free(tl_pretok *p);
/* Splits cpts[0..n) into words; *word_lens (codepoint counts, malloc'd) and *n_words. */
tl_status tl_pretok_split(const tl_pretok *p, const uint32_t *cpts, size_t n, size_t **word_lens,
                          size_t *n_words, tl_error *err);
/* True when the name is one tl_pretok_create accepts. */
bool tl_pretok_known(const char *pre_name);
/* The i-th accepted name (aliases included), NULL past the end. */
const char *tl_pretok_name_at(size_t i);

/* ---- the vocabulary ------------------------------------------------------- */

/* llama.cpp's per-token strip attributes (phi-3 and jina special tokens). */
enum { TL_STRIP_LEFT = 1, TL_STRIP_RIGHT = 2 };

typedef struct tl_bpe_merge {
    uint64_t key;      /* (left iid << 32) | right iid; 0 marks an empty slot via rank < 0 */
    int32_t rank;      /* line number in tokenizer.ggml.merges; -1 = empty slot */
    uint32_t result;   /* interned id of left+right */
} tl_bpe_merge;

struct tl_vocab {
    tl_vocab_kind kind;
    char pre[64];                /* tokenizer.ggml.pre ("default" when absent) */
    char model_name[64];         /* general.name, lower-cased (for per-model special rules) */
    int32_t n_tokens;
    tl_strtab strs;              /* entries [0, n_tokens) are the tokens, in id order */
    float *scores;               /* [n_tokens] SPM merge scores (0 when absent) */
    uint8_t *attr;               /* [n_tokens] tl_token_attr after llama.cpp's fix-ups */
    uint8_t *strip;              /* [n_tokens] TL_STRIP_* bits */
    int32_t byte_token[256];     /* SPM: <0xXX> (or the raw byte) token per byte, -1 if none */

    /* special tokens, longest text first: the candidates for splitting input */
    int32_t *specials;
    size_t n_specials;
    /* specials grouped by first byte for a quick "is any present" scan */
    uint32_t *special_first_start; /* [257] into special_by_first */
    int32_t *special_by_first;     /* indexes into specials */

    int32_t bos, eos, eot, eom, unk, pad;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    int32_t *eog;                /* sorted ids that end generation */
    size_t n_eog;
    char *chat_template;

    /* BPE */
    int64_t byte_iid[256];       /* interned id of each byte's alphabet character, -1 if none */
    tl_bpe_merge *merges;        /* open addressing on key, size merge_mask + 1 */
    uint64_t merge_mask;
    tl_pretok *pretok;

    /* tl_vocab_memo: data layers above derive from the vocabulary, built
     * once under memo_mu (a cache: the vocabulary stays logically const). */
    pthread_mutex_t memo_mu;
    void *memo[TL_VOCAB_MEMO_SLOTS];
    void (*memo_free[TL_VOCAB_MEMO_SLOTS])(void *);
};

/* SPM (spm.c) and BPE (bpe.c) on one fragment of plain text; append to *out. */
typedef struct tl_idvec {
    int32_t *v;
    size_t n, cap;
} tl_idvec;
bool tl_idvec_push(tl_idvec *iv, int32_t id);

tl_status tl_spm_tokenize(const tl_vocab *v, const char *text, size_t len, bool add_prefix, tl_idvec *out,
                          tl_error *err);
tl_status tl_bpe_tokenize(const tl_vocab *v, const char *text, size_t len, tl_idvec *out, tl_error *err);
/* Merge lookup: rank and result id of the pair, false when no merge exists. */
bool tl_bpe_find_merge(const tl_vocab *v, uint32_t left, uint32_t right, int32_t *rank, uint32_t *result);

#endif
