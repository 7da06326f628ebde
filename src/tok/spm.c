/* spm.c: SentencePiece-style BPE by scores (tokenizer.ggml.model = "llama").
 *
 * The text (spaces escaped to U+2581, a space prefix when asked) starts as one
 * symbol per UTF-8 character; the adjacent pair whose concatenation is a token
 * with the highest score is merged first (ties: leftmost), using a max-heap of
 * candidate pairs that are checked for staleness when popped. What remains is
 * emitted as tokens, or byte by byte as <0xXX> tokens when a symbol is not in
 * the vocabulary (so any byte string, valid UTF-8 or not, round-trips). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tok/pair_heap.h"
#include "tok/tok_internal.h"
#include "util/error.h"

typedef struct spm_symbol {
    int prev, next;   /* neighbours in the live chain, -1 at the ends */
    size_t start, n;  /* bytes [start, start + n) of the escaped text; n = 0 once merged away */
} spm_symbol;

typedef struct spm_pair {
    uint64_t order;   /* heap key, smallest first: higher score, then smaller left index */
    int left, right;
    size_t size;      /* byte length of the merged text when pushed (staleness check) */
} spm_pair;

/* One integer that sorts like (score descending, left ascending), so the heap
 * compares once per step. The float's bits are mapped to an unsigned value in
 * the same order (-0 counted as +0, since the scores compare equal). */
static inline uint64_t pair_order(float score, int left) {
    if (score == 0.0f)
        score = 0.0f;
    uint32_t bits;
    memcpy(&bits, &score, sizeof bits);
    bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u); /* ascending with score */
    return ((uint64_t)~bits << 32) | (uint32_t)left;
}

TL_PAIR_HEAP(spm_heap, spm_pair)

static int32_t token_of(const tl_vocab *v, const char *s, size_t n) {
    int64_t id = tl_strtab_find(&v->strs, s, n);
    return id >= 0 && id < v->n_tokens ? (int32_t)id : -1;
}

static bool try_pair(const tl_vocab *v, const char *text, const spm_symbol *sym, int left, int right, spm_heap *h) {
    if (left < 0 || right < 0)
        return true;
    size_t size = sym[left].n + sym[right].n;
    int32_t id = token_of(v, text + sym[left].start, size);
    if (id < 0)
        return true;
    return heap_push(h, (spm_pair){pair_order(v->scores[id], left), left, right, size});
}

tl_status tl_spm_tokenize(const tl_vocab *v, const char *text, size_t len, bool add_prefix, tl_idvec *out,
                          tl_error *err) {
    if (len == 0 && !add_prefix)
        return TL_OK;
    /* escape: ' ' -> U+2581 (3 bytes) */
    if (len > (size_t)INT_MAX / 4)
        return tl_error_set(err, TL_ERR_LIMIT, "tokenize: %zu bytes is more than one text may hold", len);
    size_t cap = 3 * len + 3; /* escaped bytes; also bounds the symbol count */
    char *esc = malloc(cap);
    spm_symbol *sym = malloc(cap * sizeof *sym);
    spm_heap heap = {NULL, 0, 0};
    tl_status st = TL_OK;
    if (!esc || !sym)
        goto oom;
    size_t n = 0;
    if (add_prefix) {
        memcpy(esc, "\xE2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(esc + n, "\xE2\x96\x81", 3);
            n += 3;
        } else {
            esc[n++] = text[i];
        }
    }
    int n_sym = 0;
    for (size_t off = 0; off < n;) {
        /* One symbol per UTF-8 character. A lead byte whose sequence is cut short
         * is a symbol alone (the reference would swallow the next bytes, which
         * can eat half of an escaped space); valid text splits identically. */
        size_t l = tl_utf8_len((unsigned char)esc[off]);
        if (l > n - off)
            l = 1;
        for (size_t k = 1; k < l; k++)
            if (((unsigned char)esc[off + k] & 0xC0) != 0x80)
                l = 1;
        sym[n_sym] = (spm_symbol){n_sym - 1, off + l == n ? -1 : n_sym + 1, off, l};
        n_sym++;
        off += l;
    }
    for (int i = 1; i < n_sym; i++)
        if (!try_pair(v, esc, sym, i - 1, i, &heap))
            goto oom;
    while (heap.n > 0) {
        spm_pair p = heap_pop(&heap);
        spm_symbol *l = &sym[p.left], *r = &sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size)
            continue; /* one side was merged since this pair was pushed */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            sym[r->next].prev = p.left;
        if (!try_pair(v, esc, sym, l->prev, p.left, &heap) || !try_pair(v, esc, sym, p.left, l->next, &heap))
            goto oom;
    }
    for (int i = n_sym > 0 ? 0 : -1; i != -1; i = sym[i].next) {
        int32_t id = token_of(v, esc + sym[i].start, sym[i].n);
        if (id >= 0) {
            if (!tl_idvec_push(out, id))
                goto oom;
            continue;
        }
        for (size_t k = 0; k < sym[i].n; k++) {
            int32_t b = v->byte_token[(unsigned char)esc[sym[i].start + k]];
            if (b < 0)
                b = v->unk; /* a vocabulary without byte tokens: the byte is unknown */
            if (b >= 0 && !tl_idvec_push(out, b))
                goto oom;
        }
    }
    goto done;
oom:
    st = tl_error_set(err, TL_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
done:
    free(esc);
    free(sym);
    free(heap.v);
    return st;
}
