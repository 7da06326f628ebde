/* labels.h: control labels (A, B, C, ...) standing for field values.
 *
 * A value is never scored by its own text (values tokenize to different
 * lengths); it is scored by a label whose tokens are known where the answer
 * goes.
 *
 * Single-token labels (every field that has enough of them). The pools, in
 * order: A-Z, a-z, 0-9, then two-letter codes AA, AB, ... ZZ. A label is used
 * only if, right after the rendering's answer position (e.g.
 * "<|im_start|>assistant\n" or `answer="`), it tokenizes to one token whose
 * text is the label; otherwise it is skipped. Every field takes the first n
 * usable labels, so labels of a field are distinct tokens.
 *
 * Two-token labels (a field with more choices than there are single-token
 * labels, up to TL_DFIELD_MAX_VALUES). A label is a first piece from the
 * first pool (0-9, then A-Z, a-z, AA-ZZ, then 10-999) followed by a second
 * piece from the single-token pool ("0A", "7Qx", "Ab3"). A pair is used only
 * if the first piece alone is one token after the answer position, as above,
 * and the whole label tokenizes, in the same context, to exactly that token
 * followed by one more token whose text (read after the first) is the second
 * piece: the two tokens are the label's own tokenization, so the model reads
 * in the choices line the tokens it is scored on. Pairs are ordered by first
 * piece (all pairs of one first token are contiguous); every two-token field
 * takes the first n pairs. Within a field no two labels share their token
 * pair, and the pairs sharing a first token have distinct second tokens, so
 * P(label) = P(first) * P(second | first) is a distribution over distinct
 * two-token continuations. */
#ifndef TL_DECIDE_LABELS_H
#define TL_DECIDE_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "typellm/common.h"

#define TL_LABEL_POOL_SIZE (26 + 26 + 10 + 26 * 26)
#define TL_LABEL_MAX_USABLE 255
/* First pieces of two-token labels: 0-9, the letters of the pool, 10-999. */
#define TL_LABEL_FIRST_POOL_SIZE (10 + 26 + 26 + 26 * 26 + 990)
/* A label's text with its NUL ("999ZZ" is the longest). */
#define TL_LABEL_TEXT_CAP 8

typedef char tl_label_text[TL_LABEL_TEXT_CAP];

typedef struct tl_labelset {
    size_t n;                                 /* usable labels found so far */
    tl_label_text text[TL_LABEL_MAX_USABLE];  /* "A", "b", "7", "QX" */
    int32_t id[TL_LABEL_MAX_USABLE];          /* the token each stands for in context */
    size_t next_pool;                         /* next pool index to try */
} tl_labelset;

/* Two-token labels, pair i = (first[i], second[i]). Zero it before first use;
 * tl_labelpairs_free releases it. */
typedef struct tl_labelpairs {
    size_t n, cap;                /* usable pairs found so far */
    tl_label_text *text;          /* n: the whole label, "0A" */
    unsigned char *split;         /* n: length of its first piece ("0A": 1) */
    int32_t *first, *second;      /* n: its two tokens in context */
    size_t *group;                /* n: index of its first token among the distinct first tokens */
    size_t n_groups;              /* distinct first tokens used so far */
    size_t next_first, next_second; /* where the search resumes (first pool, second pool) */
    int32_t cur_first;            /* the token of first pool entry next_first, once verified (has_first) */
    bool has_first;
} tl_labelpairs;

/* The i-th pool label (i < TL_LABEL_POOL_SIZE) into out (NUL-terminated; "" past the pool). */
void tl_label_pool_text(size_t i, char out[4]);
/* The i-th first piece of a two-token label (i < TL_LABEL_FIRST_POOL_SIZE; "" past it). */
void tl_label_first_text(size_t i, char out[4]);

/* Extends ls (zeroed before first use) until it holds `need` usable labels
 * or the pool is exhausted. tail: the text right before the answer; prefix:
 * the text the answer token carries before the label (" " after [/INST]).
 * Returns TL_OK even when fewer were found: callers check ls->n. */
tl_status tl_labelset_fill(tl_labelset *ls, tl_backend *b, const char *tail, const char *prefix, size_t need,
                           tl_error *err);

/* Extends lp until it holds `need` usable pairs or the pools are exhausted
 * (tail and prefix as above; the prefix goes before the first piece).
 * Returns TL_OK even when fewer were found: callers check lp->n. */
tl_status tl_labelpairs_fill(tl_labelpairs *lp, tl_backend *b, const char *tail, const char *prefix, size_t need,
                             tl_error *err);
void tl_labelpairs_free(tl_labelpairs *lp);

#endif
