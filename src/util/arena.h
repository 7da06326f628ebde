/* arena.h: a bump allocator for data that dies all at once (a parsed
 * template's AST, the values of one render). Allocations are zeroed and
 * 16-byte aligned; nothing is freed until tl_arena_free. A limit bounds the
 * bytes handed out, so input-driven growth fails cleanly instead of
 * exhausting memory. Not thread-safe: one arena per owner. */
#ifndef TL_UTIL_ARENA_H
#define TL_UTIL_ARENA_H

#include <stddef.h>

typedef struct tl_arena_chunk tl_arena_chunk;
typedef struct tl_arena {
    tl_arena_chunk *head;
    size_t used;  /* bytes handed out */
    size_t limit; /* 0: unbounded */
} tl_arena;

/* Zeroed memory, or NULL when out of memory or past the limit. */
void *tl_arena_alloc(tl_arena *a, size_t n);
/* A NUL-terminated copy of s[0..n) in the arena, or NULL. */
char *tl_arena_strndup(tl_arena *a, const char *s, size_t n);
/* Frees every chunk; the arena is empty (limit kept) and reusable. */
void tl_arena_free(tl_arena *a);

#endif
