/* strtab.c: interned byte strings with hashed lookup (see tok_internal.h).
 *
 * Token lookup by text is the tokenizers' hottest operation (every SPM bigram,
 * every BPE symbol), so the table is open addressing over one flat pool with a
 * multiply-fold hash that reads 8 bytes at a time. */
#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"

static inline uint64_t mix64(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t tl_tok_hash(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (len * 0xA0761D6478BD642Full);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix64(h ^ w, 0xE7037ED1A0B428DBull);
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    for (size_t i = 0; i < len; i++)
        tail |= (uint64_t)p[i] << (8 * i);
    h = mix64(h ^ tail, 0x8EBC6AF09C88C6E3ull);
    return mix64(h, 0x589965CC75374CC3ull);
}

void tl_strtab_free(tl_strtab *t) {
    free(t->pool);
    free(t->offs);
    free(t->lens);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

int64_t tl_strtab_find(const tl_strtab *t, const char *s, size_t len) {
    if (!t->slots)
        return -1;
    uint64_t i = tl_tok_hash(s, len) & t->mask;
    for (;;) {
        uint32_t slot = t->slots[i];
        if (slot == 0)
            return -1;
        uint32_t idx = slot - 1;
        if (t->lens[idx] == len && (len == 0 || memcmp(t->pool + t->offs[idx], s, len) == 0))
            return idx;
        i = (i + 1) & t->mask;
    }
}

/* Keeps the slot table at most half full. */
static bool strtab_grow_slots(tl_strtab *t) {
    uint64_t n_slots = t->slots ? (t->mask + 1) * 2 : 1024;
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return false;
    uint64_t mask = n_slots - 1;
    if (t->slots) {
        for (uint64_t s = 0; s <= t->mask; s++) {
            uint32_t slot = t->slots[s];
            if (!slot)
                continue;
            uint32_t idx = slot - 1;
            uint64_t i = tl_tok_hash(t->pool + t->offs[idx], t->lens[idx]) & mask;
            while (slots[i])
                i = (i + 1) & mask;
            slots[i] = slot;
        }
    }
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return true;
}

int64_t tl_strtab_add(tl_strtab *t, const char *s, size_t len, bool map_it) {
    if (t->n == UINT32_MAX - 1 || len > UINT32_MAX)
        return -1;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1024;
        uint64_t *offs = realloc(t->offs, (size_t)cap * sizeof *offs);
        if (!offs)
            return -1;
        t->offs = offs;
        uint32_t *lens = realloc(t->lens, (size_t)cap * sizeof *lens);
        if (!lens)
            return -1;
        t->lens = lens;
        t->cap = cap;
    }
    if (t->pool_len + len + 1 > t->pool_cap) {
        size_t cap = t->pool_cap ? t->pool_cap : 65536;
        while (cap < t->pool_len + len + 1)
            cap *= 2;
        char *pool = realloc(t->pool, cap);
        if (!pool)
            return -1;
        t->pool = pool;
        t->pool_cap = cap;
    }
    uint32_t idx = t->n;
    memcpy(t->pool + t->pool_len, s, len);
    t->pool[t->pool_len + len] = '\0';
    t->offs[idx] = t->pool_len;
    t->lens[idx] = (uint32_t)len;
    t->pool_len += len + 1;
    t->n++;
    if (!map_it)
        return idx;
    if (!t->slots || (uint64_t)(t->n) * 2 > t->mask + 1) {
        if (!strtab_grow_slots(t))
            return -1;
    }
    const char *text = t->pool + t->offs[idx];
    uint64_t i = tl_tok_hash(text, len) & t->mask;
    for (;;) {
        uint32_t slot = t->slots[i];
        if (slot == 0) {
            t->slots[i] = idx + 1;
            return idx;
        }
        uint32_t other = slot - 1;
        if (t->lens[other] == len && memcmp(t->pool + t->offs[other], text, len) == 0) {
            t->slots[i] = idx + 1; /* a later duplicate replaces the earlier one */
            return idx;
        }
        i = (i + 1) & t->mask;
    }
}
