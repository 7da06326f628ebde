/* arena.c: the bump allocator of arena.h. Chunks double up to 8 MiB, so a
 * render or a parse costs a handful of mallocs however many values it makes. */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tl_arena_chunk {
    tl_arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *tl_arena_alloc(tl_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (a->limit && (n > a->limit || a->used > a->limit - n))
        return NULL;
    tl_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = 64 * 1024;
        if (c && c->cap < (8u << 20))
            cap = c->cap * 2;
        if (cap < n)
            cap = n;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *tl_arena_strndup(tl_arena *a, const char *s, size_t n) {
    char *p = n < SIZE_MAX ? tl_arena_alloc(a, n + 1) : NULL;
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void tl_arena_free(tl_arena *a) {
    tl_arena_chunk *c = a->head;
    while (c) {
        tl_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}

