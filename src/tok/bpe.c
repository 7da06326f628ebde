/* bpe.c: byte-level BPE (tokenizer.ggml.model = "gpt2").
 *
 * Text -> codepoints -> words (pretok.c) -> each word's UTF-8 bytes spelled in
 * the GPT-2 byte alphabet -> symbols, one per alphabet character -> merges by
 * lowest rank (ties: leftmost) via a min-heap of candidate pairs -> tokens.
 * Symbols carry interned ids (tok_internal.h), so a merge lookup is one hash
 * probe on an id pair and no strings are built while merging. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tok/pair_heap.h"
#include "tok/tok_internal.h"
#include "util/error.h"

typedef struct bpe_symbol {
    int prev, next;   /* live chain within the word, -1 at the ends */
    size_t start, n;  /* bytes of the encoded word; n = 0 once merged away */
    int64_t iid;      /* interned id of the symbol's text, -1 if not interned */
} bpe_symbol;

typedef struct bpe_pair {
    uint64_t order;   /* heap key, smallest first: (rank << 32) | left, i.e. lowest rank, then leftmost */
    int left, right;
    size_t size;      /* merged byte length when pushed (staleness check) */
    uint32_t result;  /* interned id of the merged text */
} bpe_pair;

TL_PAIR_HEAP(bpe_heap, bpe_pair)

static bool try_pair(const tl_vocab *v, const bpe_symbol *sym, int left, int right, bpe_heap *h) {
    if (left < 0 || right < 0 || sym[left].iid < 0 || sym[right].iid < 0)
        return true;
    int32_t rank;
    uint32_t result;
    if (!tl_bpe_find_merge(v, (uint32_t)sym[left].iid, (uint32_t)sym[right].iid, &rank, &result))
        return true;
    uint64_t order = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)left; /* rank >= 0, left >= 0 */
    return heap_push(h, (bpe_pair){order, left, right, sym[left].n + sym[right].n, result});
}

typedef struct bpe_scratch {
    char *word;        /* encoded word bytes */
    unsigned char *raw; /* the word's original bytes, one per initial symbol */
    size_t word_cap;
    bpe_symbol *sym;
    size_t sym_cap;
    bpe_heap heap;
} bpe_scratch;

/* Merges one encoded word and appends its tokens. */
static bool bpe_word(const tl_vocab *v, bpe_scratch *sc, size_t wlen, size_t n_raw, tl_idvec *out) {
    const char *w = sc->word;
    if (v->ignore_merges) { /* Llama 3: a word that is a token is kept whole */
        int64_t id = tl_strtab_find(&v->strs, w, wlen);
        if (id >= 0 && id < v->n_tokens)
            return tl_idvec_push(out, (int32_t)id);
    }
    /* one symbol per original byte: its alphabet character is 1 or 2 bytes long */
    int n_sym = 0;
    for (size_t k = 0, off = 0; k < n_raw; k++) {
        size_t l = (unsigned char)w[off] < 0x80 ? 1 : 2;
        sc->sym[n_sym] = (bpe_symbol){n_sym - 1, k + 1 == n_raw ? -1 : n_sym + 1, off, l, v->byte_iid[sc->raw[k]]};
        n_sym++;
        off += l;
    }
    bpe_heap *h = &sc->heap;
    h->n = 0;
    for (int i = 1; i < n_sym; i++)
        if (!try_pair(v, sc->sym, i - 1, i, h))
            return false;
    while (h->n > 0) {
        bpe_pair p = heap_pop(h);
        bpe_symbol *l = &sc->sym[p.left], *r = &sc->sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size)
            continue;
        l->n += r->n;
        l->iid = p.result;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            sc->sym[r->next].prev = p.left;
        if (!try_pair(v, sc->sym, l->prev, p.left, h) || !try_pair(v, sc->sym, p.left, l->next, h))
            return false;
    }
    for (int i = n_sym > 0 ? 0 : -1; i != -1; i = sc->sym[i].next) {
        const bpe_symbol *s = &sc->sym[i];
        if (s->iid >= 0 && s->iid < v->n_tokens) {
            if (!tl_idvec_push(out, (int32_t)s->iid))
                return false;
            continue;
        }
        /* not a token: the reference tries each byte of the encoded text as a
         * one-byte token and drops the bytes that are none */
        for (size_t k = 0; k < s->n; k++) {
            int64_t id = tl_strtab_find(&v->strs, w + s->start + k, 1);
            if (id >= 0 && id < v->n_tokens && !tl_idvec_push(out, (int32_t)id))
                return false;
        }
    }
    return true;
}

/* Words repeat in real text. Within one call, a word seen before reuses the ids
 * its first occurrence produced (BPE of a word depends on the word alone). */
#define CACHE_MAX_WORD 32 /* bytes; longer words rarely repeat */
typedef struct word_entry {
    size_t raw_off, raw_len; /* the word's bytes in pool */
    size_t ids_off, ids_len; /* its ids in the output */
} word_entry;

typedef struct word_cache {
    uint32_t *slots;         /* entry index + 1, 0 = empty */
    uint64_t mask;
    word_entry *entries;
    size_t n;
    unsigned char *pool;     /* n_words * CACHE_MAX_WORD bytes at most */
    size_t pool_len;
} word_cache;

static bool cache_init(word_cache *c, size_t n_words) {
    uint64_t n_slots = 16;
    while (n_slots < 2 * (uint64_t)n_words)
        n_slots *= 2;
    c->slots = calloc(n_slots, sizeof *c->slots);
    c->mask = n_slots - 1;
    c->entries = malloc(n_words * sizeof *c->entries);
    c->pool = malloc(n_words * CACHE_MAX_WORD);
    c->n = c->pool_len = 0;
    return c->slots && c->entries && c->pool;
}

static void cache_free(word_cache *c) {
    free(c->slots);
    free(c->entries);
    free(c->pool);
}

/* The slot where raw is or would go. */
static uint64_t cache_slot(const word_cache *c, const unsigned char *raw, size_t n) {
    uint64_t i = tl_tok_hash(raw, n) & c->mask;
    for (;; i = (i + 1) & c->mask) {
        uint32_t e = c->slots[i];
        if (!e)
            return i;
        const word_entry *we = &c->entries[e - 1];
        if (we->raw_len == n && memcmp(c->pool + we->raw_off, raw, n) == 0)
            return i;
    }
}

tl_status tl_bpe_tokenize(const tl_vocab *v, const char *text, size_t len, tl_idvec *out, tl_error *err) {
    if (len == 0)
        return TL_OK;
    if (len > (size_t)INT_MAX / 8)
        return tl_error_set(err, TL_ERR_LIMIT, "tokenize: %zu bytes is more than one text may hold", len);
    uint32_t *cpts = malloc(len * sizeof *cpts);
    size_t *word_lens = NULL, n_words = 0;
    bpe_scratch sc = {0};
    word_cache cache = {0};
    tl_status st = TL_OK;
    if (!cpts)
        goto oom;
    size_t n = tl_utf8_decode_all(text, len, cpts);
    st = tl_pretok_split(v->pretok, cpts, n, &word_lens, &n_words, err);
    if (st != TL_OK)
        goto done;
    if (!cache_init(&cache, n_words + 1))
        goto oom;
    size_t at = 0;
    for (size_t wi = 0; wi < n_words; wi++) {
        size_t wn = word_lens[wi];
        /* each codepoint: up to 4 UTF-8 bytes, each spelled with up to 2 bytes */
        if (wn * 8 > sc.word_cap) {
            sc.word_cap = wn * 8 * 2;
            char *nw = realloc(sc.word, sc.word_cap);
            unsigned char *nr = realloc(sc.raw, sc.word_cap);
            bpe_symbol *ns = realloc(sc.sym, sc.word_cap * sizeof *ns);
            if (nw)
                sc.word = nw;
            if (nr)
                sc.raw = nr;
            if (ns)
                sc.sym = ns;
            if (!nw || !nr || !ns)
                goto oom;
        }
        size_t wlen = 0, n_raw = 0;
        for (size_t k = 0; k < wn; k++) {
            char utf[4];
            size_t ul = tl_utf8_encode(cpts[at + k], utf);
            for (size_t b = 0; b < ul; b++) {
                sc.raw[n_raw++] = (unsigned char)utf[b];
                wlen += tl_utf8_encode(tl_gpt2_byte_to_cpt((unsigned char)utf[b]), sc.word + wlen);
            }
        }
        at += wn;
        uint64_t slot = 0;
        if (n_raw <= CACHE_MAX_WORD) {
            slot = cache_slot(&cache, sc.raw, n_raw);
            if (cache.slots[slot]) {
                const word_entry *we = &cache.entries[cache.slots[slot] - 1];
                for (size_t k = 0; k < we->ids_len; k++)
                    if (!tl_idvec_push(out, out->v[we->ids_off + k]))
                        goto oom;
                continue;
            }
        }
        size_t ids_before = out->n;
        if (!bpe_word(v, &sc, wlen, n_raw, out))
            goto oom;
        if (n_raw <= CACHE_MAX_WORD) {
            memcpy(cache.pool + cache.pool_len, sc.raw, n_raw);
            cache.entries[cache.n] = (word_entry){cache.pool_len, n_raw, ids_before, out->n - ids_before};
            cache.pool_len += n_raw;
            cache.slots[slot] = (uint32_t)++cache.n;
        }
    }
    goto done;
oom:
    st = tl_error_set(err, TL_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
done:
    free(cpts);
    free(word_lens);
    free(sc.word);
    free(sc.raw);
    free(sc.sym);
    free(sc.heap.v);
    cache_free(&cache);
    return st;
}
