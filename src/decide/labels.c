/* labels.c: choosing and verifying single-token labels (see labels.h). */
#include "decide/labels.h"

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
        tl_strbuf_clear(&got);
        if (!tl_strbuf_append(&text, tail, tail_len) || !tl_strbuf_append(&want, prefix, prefix_len) ||
            !tl_strbuf_puts(&want, label) || !tl_strbuf_append(&text, want.buf, want.len)) {
            st = tl_error_set(err, TL_ERR_NOMEM, "labels: out of memory");
            break;
        }
        int32_t *ids = NULL;
        size_t n = 0;
        st = tl_backend_tokenize(b, text.buf, text.len, false, true, &ids, &n, err);
        if (st)
            break;
        /* Usable: the tail's tokens unchanged, then exactly one more token... */
        bool usable = n == n_tail + 1 && (!n_tail || !memcmp(ids, tail_ids, n_tail * sizeof *ids));
        int32_t id = usable ? ids[n_tail] : -1;
        free(ids);
        /* ...that reads back as the label and is not already another label's token. */
        if (usable && b->vocab && tl_vocab_token_attr(b->vocab, id) != TL_TOKEN_NORMAL &&
            tl_vocab_token_attr(b->vocab, id) != TL_TOKEN_USER_DEFINED)
            usable = false;
        if (usable) {
            st = token_text(b, tail_ids, n_tail, id, &got, err);
            usable = !st && got.len == want.len && !memcmp(got.buf, want.buf, want.len);
        }
        for (size_t j = 0; usable && j < ls->n; j++)
            usable = ls->id[j] != id;
        if (usable) {
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
