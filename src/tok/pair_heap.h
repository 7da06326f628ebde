/* pair_heap.h: the min-heap of candidate merges shared by the SPM and BPE
 * tokenizers. Both order their pairs by one precomputed integer key
 * (`uint64_t order`, smallest first), so a single heap serves both; the macro
 * instantiates it for a pair type, keeping the comparison inlined in the hot
 * merge loop.
 *
 *   TL_PAIR_HEAP(heap_type, pair_type)
 *     typedef struct heap_type { pair_type *v; size_t n, cap; } heap_type;
 *     static bool heap_push(heap_type *h, pair_type p);   false on OOM
 *     static pair_type heap_pop(heap_type *h);            requires h->n > 0
 */
#ifndef TL_TOK_PAIR_HEAP_H
#define TL_TOK_PAIR_HEAP_H

#include <stdbool.h>
#include <stdlib.h>

#define TL_PAIR_HEAP(heap_type, pair_type)                                  \
    typedef struct heap_type {                                              \
        pair_type *v;                                                       \
        size_t n, cap;                                                      \
    } heap_type;                                                            \
                                                                            \
    static bool heap_push(heap_type *h, pair_type p) {                      \
        if (h->n == h->cap) {                                               \
            size_t cap = h->cap ? h->cap * 2 : 64;                          \
            pair_type *v = realloc(h->v, cap * sizeof *v);                  \
            if (!v)                                                         \
                return false;                                               \
            h->v = v;                                                       \
            h->cap = cap;                                                   \
        }                                                                   \
        size_t i = h->n++;                                                  \
        while (i > 0) {                                                     \
            size_t parent = (i - 1) / 2;                                    \
            if (!(p.order < h->v[parent].order))                            \
                break;                                                      \
            h->v[i] = h->v[parent];                                         \
            i = parent;                                                     \
        }                                                                   \
        h->v[i] = p;                                                        \
        return true;                                                        \
    }                                                                       \
                                                                            \
    static pair_type heap_pop(heap_type *h) {                               \
        pair_type top = h->v[0];                                            \
        pair_type last = h->v[--h->n];                                      \
        size_t i = 0;                                                       \
        for (;;) {                                                          \
            size_t c = 2 * i + 1;                                           \
            if (c >= h->n)                                                  \
                break;                                                      \
            if (c + 1 < h->n && h->v[c + 1].order < h->v[c].order)          \
                c++;                                                        \
            if (!(h->v[c].order < last.order))                              \
                break;                                                      \
            h->v[i] = h->v[c];                                              \
            i = c;                                                          \
        }                                                                   \
        if (h->n > 0)                                                       \
            h->v[i] = last;                                                 \
        return top;                                                         \
    }

#endif
