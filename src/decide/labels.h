/* labels.h: single-token control labels (A, B, C, ...) for field values.
 *
 * A value is never scored by its own text (values tokenize to different
 * lengths); it is scored by a label that is exactly one token where the
 * answer goes. The pools, in order: A-Z, a-z, 0-9, then two-letter codes
 * AA, AB, ... ZZ. A label is used only if, right after the rendering's
 * answer position (e.g. "<|im_start|>assistant\n" or `answer="`), it
 * tokenizes to one token whose text is the label; otherwise it is skipped.
 * Every field takes the first n usable labels, so labels of a field are
 * distinct tokens. */
#ifndef TL_DECIDE_LABELS_H
#define TL_DECIDE_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "typellm/common.h"

#define TL_LABEL_POOL_SIZE (26 + 26 + 10 + 26 * 26)
#define TL_LABEL_MAX_USABLE 255

typedef struct tl_labelset {
    size_t n;                                 /* usable labels found so far */
    char text[TL_LABEL_MAX_USABLE][4];        /* "A", "b", "7", "QX" */
    int32_t id[TL_LABEL_MAX_USABLE];          /* the token each stands for in context */
    size_t next_pool;                         /* next pool index to try */
} tl_labelset;

/* The i-th pool label (i < TL_LABEL_POOL_SIZE) into out (NUL-terminated). */
void tl_label_pool_text(size_t i, char out[4]);

/* Extends ls (zeroed before first use) until it holds `need` usable labels
 * or the pool is exhausted. tail: the text right before the answer; prefix:
 * the text the answer token carries before the label (" " after [/INST]).
 * Returns TL_OK even when fewer were found: callers check ls->n. */
tl_status tl_labelset_fill(tl_labelset *ls, tl_backend *b, const char *tail, const char *prefix, size_t need,
                           tl_error *err);

#endif
