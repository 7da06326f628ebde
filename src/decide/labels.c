/* labels.c: choosing and verifying single-token and two-token labels (see labels.h). */
#include "decide/labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/strbuf.h"

void tl_label_pool_text(size_t i, char out[4]) {
    memset(out, 0, 4);
    if (i < 26) {
        out[0] = (char)('A' + i);
    } else if (i < 52) {
        out[0] = (char)('a' + (i - 26));
    } else if (i < 62) {
        out[0] = (char)('0' + (i - 52));
    } else if (i < TL_LABEL_POOL_SIZE) {
        i -= 62;
        out[0] = (char)('A' + i / 26);
        out[1] = (char)('A' + i % 26);
    }
}

void tl_label_first_text(size_t i, char out[4]) {
    memset(out, 0, 4);
    if (i < 10) {
        out[0] = (char)('0' + i);
    } else if (i < 10 + 52) {
        tl_label_pool_text(i - 10, out); /* A-Z, a-z */
    } else if (i < 10 + 52 + 26 * 26) {
        tl_label_pool_text(i - 10 + 10, out); /* AA-ZZ (the pool's digits skipped) */
    } else if (i < TL_LABEL_FIRST_POOL_SIZE) {
        snprintf(out, 4, "%zu", i - (10 + 52 + 26 * 26) + 10);
    }
}

/* The text token `id` stands for, appended to out: from the local vocabulary
 * when there is one, else as the backend detokenizes it after ctx_ids (so a
 * space that only shows inside text is kept). */
static tl_status token_text(tl_backend *b, const int32_t *ctx_ids, size_t n_ctx, int32_t id, tl_strbuf *out,
                            tl_error *err) {
    if (b->vocab) {
        char buf[64];
        size_t n = tl_vocab_token_bytes(b->vocab, id, false, buf, sizeof buf);
        if (n >= sizeof buf)
            n = sizeof buf; /* longer than any label: compares unequal */
        return tl_strbuf_append(out, buf, n) ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
    }
    int32_t *ids = malloc((n_ctx + 1) * sizeof *ids);
    if (!ids)
        return tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
    if (n_ctx)
        memcpy(ids, ctx_ids, n_ctx * sizeof *ids);
    ids[n_ctx] = id;
    tl_strbuf before = TL_STRBUF_INIT, after = TL_STRBUF_INIT;
    tl_status st = tl_backend_detokenize(b, ids, n_ctx, &before, err);
    if (!st)
        st = tl_backend_detokenize(b, ids, n_ctx + 1, &after, err);
    if (!st && after.len >= before.len && !memcmp(after.buf, tl_strbuf_cstr(&before), before.len))
        tl_strbuf_append(out, after.buf + before.len, after.len - before.len);
    tl_strbuf_free(&before);
    tl_strbuf_free(&after);
    free(ids);
    return st;
}

/* Whether text[0..len) tokenizes to before[0..n_before) followed by exactly
 * one more token that reads back (after before) as piece and is an ordinary
 * token (not a control token); *id gets that token. scratch is reused. */
static tl_status one_more_token(tl_backend *b, const char *text, size_t len, const int32_t *before, size_t n_before,
                                const char *piece, size_t piece_len, tl_strbuf *scratch, int32_t *id, bool *ok,
                                tl_error *err) {
    int32_t *ids = NULL;
    size_t n = 0;
    *ok = false;
    tl_status st = tl_backend_tokenize(b, text, len, false, true, &ids, &n, err);
    if (st)
        return st;
    bool usable = n == n_before + 1 && (!n_before || !memcmp(ids, before, n_before * sizeof *ids));
    *id = usable ? ids[n_before] : -1;
    free(ids);
    if (usable && b->vocab && tl_vocab_token_attr(b->vocab, *id) != TL_TOKEN_NORMAL &&
        tl_vocab_token_attr(b->vocab, *id) != TL_TOKEN_USER_DEFINED)
        usable = false;
    if (usable) {
        tl_strbuf_clear(scratch);
        st = token_text(b, before, n_before, *id, scratch, err);
        usable = !st && scratch->len == piece_len && !memcmp(scratch->buf, piece, piece_len);
    }
    *ok = usable;
    return st;
}

tl_status tl_labelset_fill(tl_labelset *ls, tl_backend *b, const char *tail, const char *prefix, size_t need,
                           tl_error *err) {
    if (need > TL_LABEL_MAX_USABLE)
        need = TL_LABEL_MAX_USABLE;
    if (ls->n >= need || ls->next_pool >= TL_LABEL_POOL_SIZE)
        return TL_OK;
    size_t tail_len = strlen(tail), prefix_len = strlen(prefix);
    int32_t *tail_ids = NULL;
    size_t n_tail = 0;
    tl_status st = TL_OK;
    if (tail_len)
        st = tl_backend_tokenize(b, tail, tail_len, false, true, &tail_ids, &n_tail, err);
    tl_strbuf text = TL_STRBUF_INIT, want = TL_STRBUF_INIT, got = TL_STRBUF_INIT;
    while (!st && ls->n < need && ls->next_pool < TL_LABEL_POOL_SIZE) {
        char label[4];
        tl_label_pool_text(ls->next_pool++, label);
        tl_strbuf_clear(&text);
        tl_strbuf_clear(&want);
        if (!tl_strbuf_append(&text, tail, tail_len) || !tl_strbuf_append(&want, prefix, prefix_len) ||
            !tl_strbuf_puts(&want, label) || !tl_strbuf_append(&text, want.buf, want.len)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
            break;
        }
        /* Usable: the tail's tokens unchanged, then exactly one more token that
         * reads back as the label and is not already another label's token. */
        int32_t id;
        bool usable;
        st = one_more_token(b, text.buf, text.len, tail_ids, n_tail, want.buf, want.len, &got, &id, &usable, err);
        for (size_t j = 0; !st && usable && j < ls->n; j++)
            usable = ls->id[j] != id;
        if (!st && usable) {
            memcpy(ls->text[ls->n], label, 4);
            ls->id[ls->n++] = id;
        }
    }
    tl_strbuf_free(&text);
    tl_strbuf_free(&want);
    tl_strbuf_free(&got);
    free(tail_ids);
    return st;
}

void tl_labelpairs_free(tl_labelpairs *lp) {
    free(lp->text);
    free(lp->split);
    free(lp->first);
    free(lp->second);
    free(lp->group);
    memset(lp, 0, sizeof *lp);
}

/* *array (elements of size bytes) resized to cap elements; false when out of memory. */
static bool resize(void *array, size_t cap, size_t size) {
    void **p = array, *q = realloc(*p, cap * size);
    if (q)
        *p = q;
    return q != NULL;
}

static bool pairs_grow(tl_labelpairs *lp) {
    if (lp->n < lp->cap)
        return true;
    size_t cap = lp->cap ? 2 * lp->cap : 256;
    if (!resize(&lp->text, cap, sizeof *lp->text) || !resize(&lp->split, cap, sizeof *lp->split) ||
        !resize(&lp->first, cap, sizeof *lp->first) || !resize(&lp->second, cap, sizeof *lp->second) ||
        !resize(&lp->group, cap, sizeof *lp->group))
        return false;
    lp->cap = cap;
    return true;
}

tl_status tl_labelpairs_fill(tl_labelpairs *lp, tl_backend *b, const char *tail, const char *prefix, size_t need,
                             tl_error *err) {
    if (lp->n >= need || lp->next_first >= TL_LABEL_FIRST_POOL_SIZE)
        return TL_OK;
    size_t tail_len = strlen(tail), prefix_len = strlen(prefix);
    int32_t *ctx = NULL; /* the tail's tokens, then the current first token */
    size_t n_tail = 0;
    tl_status st = TL_OK;
    if (tail_len)
        st = tl_backend_tokenize(b, tail, tail_len, false, true, &ctx, &n_tail, err);
    int32_t *grown = st ? NULL : realloc(ctx, (n_tail + 1) * sizeof *ctx);
    if (!st && !grown)
        st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
    if (grown)
        ctx = grown;
    tl_strbuf text = TL_STRBUF_INIT, want = TL_STRBUF_INIT, got = TL_STRBUF_INIT;
    while (!st && lp->n < need && lp->next_first < TL_LABEL_FIRST_POOL_SIZE) {
        char first[4], second[4];
        tl_label_first_text(lp->next_first, first);
        tl_strbuf_clear(&text);
        tl_strbuf_clear(&want);
        if (!tl_strbuf_append(&text, tail, tail_len) || !tl_strbuf_append(&want, prefix, prefix_len) ||
            !tl_strbuf_puts(&want, first) || !tl_strbuf_append(&text, want.buf, want.len)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
            break;
        }
        if (!lp->has_first) {
            /* the first piece: one token after the answer position, not a
             * first token of an earlier group */
            int32_t id;
            bool usable;
            st = one_more_token(b, text.buf, text.len, ctx, n_tail, want.buf, want.len, &got, &id, &usable, err);
            for (size_t j = 0; !st && usable && j < lp->n; j++)
                usable = lp->first[j] != id;
            if (st || !usable) {
                lp->next_first++;
                continue;
            }
            lp->cur_first = id;
            lp->has_first = true;
            lp->next_second = 0;
        }
        if (lp->next_second >= TL_LABEL_POOL_SIZE) {
            lp->next_first++;
            lp->has_first = false;
            continue;
        }
        ctx[n_tail] = lp->cur_first;
        tl_label_pool_text(lp->next_second++, second);
        size_t second_len = strlen(second);
        if (!tl_strbuf_append(&text, second, second_len)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
            break;
        }
        /* the whole label: the first token, then one more that reads as the second piece */
        int32_t id;
        bool usable;
        st = one_more_token(b, text.buf, text.len, ctx, n_tail + 1, second, second_len, &got, &id, &usable, err);
        for (size_t j = lp->n; !st && usable && j > 0 && lp->first[j - 1] == lp->cur_first; j--)
            usable = lp->second[j - 1] != id;
        if (st || !usable)
            continue;
        if (!pairs_grow(lp)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
            break;
        }
        bool new_group = !lp->n || lp->first[lp->n - 1] != lp->cur_first;
        snprintf(lp->text[lp->n], TL_LABEL_TEXT_CAP, "%s%s", first, second);
        lp->split[lp->n] = (unsigned char)strlen(first);
        lp->first[lp->n] = lp->cur_first;
        lp->second[lp->n] = id;
        lp->group[lp->n] = new_group ? lp->n_groups++ : lp->group[lp->n - 1];
        lp->n++;
    }
    tl_strbuf_free(&text);
    tl_strbuf_free(&want);
    tl_strbuf_free(&got);
    free(ctx);
    return st;
}
