/* render.c: decision prompts as text and as growing token sequences (see render.h). */
#include "decide/render.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Bytes of already-rendered text a new piece is tokenized after: enough to
 * cover any merge across the boundary (tokens are far shorter), small enough
 * to cost nothing. */
#define TAIL_BYTES 32

/* ---- text ---------------------------------------------------------------- */

const char *tl_render_opening(const tl_render *r) {
    if (r->style != TL_STYLE_CHAT)
        return "";
    return r->chat->opening ? r->chat->opening : r->chat->user_open;
}

const char *tl_render_label_tail(const tl_render *r) {
    if (r->style == TL_STYLE_RECORD)
        return "answer=\"";
    /* Llama 2 has no assistant header: the answer follows [/INST] directly. */
    return r->chat->assistant_open[0] ? r->chat->assistant_open : r->chat->user_close;
}

const char *tl_render_label_prefix(const tl_render *r) { return r->style == TL_STYLE_CHAT ? r->chat->label_prefix : ""; }

bool tl_render_context_text(const tl_render *r, const tl_dschema *s, const char *context, size_t len, tl_strbuf *out) {
    bool ok = true;
    if (s->title)
        ok &= tl_strbuf_printf(out, "# %s\n", s->title);
    if (s->description)
        ok &= tl_strbuf_printf(out, "%s\n\n", s->description);
    if (r->style == TL_STYLE_RECORD)
        ok &= tl_strbuf_puts(out, "Input:\n");
    /* Trailing blank space would only blur the separator that follows. */
    while (len && (context[len - 1] == '\n' || context[len - 1] == '\r' || context[len - 1] == ' ' ||
                   context[len - 1] == '\t'))
        len--;
    ok &= tl_strbuf_append(out, context, len);
    bool numbers = false, open = false;
    for (size_t i = 0; i < s->n_fields; i++) {
        numbers |= tl_dfield_generated(&s->fields[i]);
        open |= s->fields[i].open;
    }
    bool strings = false;
    for (size_t i = 0; i < s->n_fields; i++)
        strings |= s->fields[i].kind == TL_DFIELD_STRING;
    if (r->style == TL_STYLE_CHAT)
        ok &= tl_strbuf_puts(out, numbers ? "\n\nAnswer each Choice with the label of one of its choices, and each "
                                            "Number with a number."
                                          : "\n\nAnswer each Choice with the label of one of its choices.");
    else
        ok &= tl_strbuf_puts(out, "\n\nEach record below answers one question about the input with the label of one "
                                  "of its choices.");
    if (strings)
        ok &= tl_strbuf_puts(out, r->style == TL_STYLE_CHAT ? " Answer each String with a JSON string."
                                                            : " A string answer is written as the value itself.");
    /* open fields: the open label is followed by the value itself */
    if (open)
        ok &= tl_strbuf_puts(out, r->style == TL_STYLE_CHAT
                                      ? " When no choice fits and the Choice has an open label, answer that label, "
                                        "then the value on the next line."
                                      : " When no choice fits and the record has an open label, the answer is that "
                                        "label and the value follows.");
    ok &= tl_strbuf_puts(out, "\n\n");
    return ok;
}

/* The value shown at label position p: order[p], or p without an order. */
static size_t value_at(const size_t *order, size_t p) { return order ? order[p] : p; }

/* {"A":"meal","B":"travel"} */
static bool put_choices(const tl_dfield *f, const tl_label_text *labels, const size_t *order, tl_strbuf *out) {
    bool ok = tl_strbuf_putc(out, '{');
    for (size_t i = 0; i < f->n_values; i++)
        ok &= tl_strbuf_printf(out, "%s\"%s\":%s", i ? "," : "", labels[i], f->value_json[value_at(order, i)]);
    return ok && tl_strbuf_putc(out, '}');
}

/* {"A":"food and drink"}, only the values that have a description. */
static bool put_descriptions(const tl_dfield *f, const tl_label_text *labels, const size_t *order, tl_strbuf *out) {
    bool ok = tl_strbuf_putc(out, '{'), first = true;
    for (size_t i = 0; i < f->n_values; i++) {
        const char *d = f->value_descs[value_at(order, i)];
        if (!d)
            continue;
        ok &= tl_strbuf_printf(out, "%s\"%s\":", first ? "" : ",", labels[i]);
        ok &= tl_strbuf_json_string(out, d, strlen(d));
        first = false;
    }
    return ok && tl_strbuf_putc(out, '}');
}

static bool has_descriptions(const tl_dfield *f) {
    for (size_t i = 0; i < f->n_values; i++)
        if (f->value_descs[i])
            return true;
    return false;
}

bool tl_render_question_text(const tl_render *r, const tl_dfield *f, const tl_label_text *labels, tl_strbuf *out,
                             size_t *body_len) {
    return tl_render_question_text_order(r, f, labels, NULL, out, body_len);
}

bool tl_render_question_text_order(const tl_render *r, const tl_dfield *f, const tl_label_text *labels,
                                   const size_t *order, tl_strbuf *out, size_t *body_len) {
    size_t start = out->len;
    bool chat = r->style == TL_STYLE_CHAT;
    const char *indent = chat ? "  " : "";
    const char *sep = chat ? ",\n" : "\n";
    bool generated = tl_dfield_generated(f);
    bool str = f->kind == TL_DFIELD_STRING;
    bool ok = tl_strbuf_puts(out, !chat ? "field " : str ? "String(\n" : generated ? "Number(\n" : "Choice(\n");
    ok &= tl_strbuf_printf(out, "%sname=", indent);
    ok &= tl_strbuf_json_string(out, f->name, strlen(f->name));
    ok &= tl_strbuf_printf(out, "%s%squestion=", sep, indent);
    ok &= tl_strbuf_json_string(out, f->question, strlen(f->question));
    if (generated) {
        /* e.g. type="integer in [1, 10]" */
        tl_strbuf desc = TL_STRBUF_INIT;
        if (str) {
            /* e.g. type="string of 1 to 40 characters matching ^[A-Z]{3}$" */
            tl_strbuf_printf(&desc, "string of %zu to %zu characters", f->min_length, f->max_length);
            if (f->pattern)
                tl_strbuf_printf(&desc, " matching %s", f->pattern);
        } else {
            tl_number_spec_describe(&f->number, &desc);
        }
        ok &= tl_strbuf_printf(out, "%s%stype=", sep, indent);
        ok &= tl_strbuf_json_string(out, tl_strbuf_cstr(&desc), desc.len);
        tl_strbuf_free(&desc);
    } else {
        ok &= tl_strbuf_printf(out, "%s%schoices=", sep, indent);
        ok &= put_choices(f, labels, order, out);
    }
    if (!generated && has_descriptions(f)) {
        ok &= tl_strbuf_printf(out, "%s%sdescriptions=", sep, indent);
        ok &= put_descriptions(f, labels, order, out);
    }
    if (f->open) {
        /* open={"C":"other"}: the label that lets the model write the value */
        ok &= tl_strbuf_printf(out, "%s%sopen={\"%s\":", sep, indent, labels[f->n_values]);
        ok &= tl_strbuf_json_string(out, f->open_name, strlen(f->open_name));
        ok &= tl_strbuf_putc(out, '}');
    }
    if (chat) {
        ok &= tl_strbuf_puts(out, "\n)");
        if (body_len)
            *body_len = out->len - start;
        ok &= tl_strbuf_puts(out, r->chat->user_close);
        ok &= tl_strbuf_puts(out, r->chat->assistant_open);
    } else {
        ok &= tl_strbuf_puts(out, "\nanswer=\"");
        if (body_len)
            *body_len = out->len - start;
    }
    return ok;
}

bool tl_render_answer_text(const tl_render *r, const tl_dfield *f, size_t value_idx, tl_strbuf *out,
                           size_t *body_len) {
    if (value_idx >= f->n_values) /* generated fields (numbers) have no declared values */
        return false;
    size_t start = out->len;
    if (r->style == TL_STYLE_RECORD) {
        bool ok = tl_strbuf_printf(out, "\"\nvalue=%s\n\n", f->value_json[value_idx]);
        if (body_len)
            *body_len = out->len - start;
        return ok;
    }
    bool ok = tl_strbuf_printf(out, "\nvalue=%s", f->value_json[value_idx]);
    if (body_len)
        *body_len = out->len - start;
    return ok && tl_strbuf_puts(out, r->chat->assistant_close) && tl_strbuf_puts(out, r->chat->user_open);
}

bool tl_render_string_lead_text(const tl_render *r, tl_strbuf *out) {
    return r->style == TL_STYLE_RECORD ? true : tl_strbuf_putc(out, '"');
}

bool tl_render_string_answer_text(const tl_render *r, tl_strbuf *out, size_t *body_len) {
    size_t start = out->len;
    bool ok = tl_strbuf_puts(out, r->style == TL_STYLE_RECORD ? "\"\n\n" : "\"");
    if (body_len)
        *body_len = out->len - start;
    if (r->style == TL_STYLE_RECORD)
        return ok;
    return ok && tl_strbuf_puts(out, r->chat->assistant_close) && tl_strbuf_puts(out, r->chat->user_open);
}

bool tl_render_open_lead_text(const tl_render *r, tl_strbuf *out) {
    return tl_strbuf_puts(out, r->style == TL_STYLE_RECORD ? "\"\nvalue=\"" : "\n");
}

bool tl_render_open_answer_text(const tl_render *r, const char *value, tl_strbuf *out, size_t *body_len) {
    size_t start = out->len;
    if (r->style == TL_STYLE_RECORD) {
        bool ok = tl_freetext_escape(out, value, strlen(value)) && tl_strbuf_puts(out, "\"\n\n");
        if (body_len)
            *body_len = out->len - start;
        return ok;
    }
    bool ok = tl_strbuf_puts(out, value);
    if (body_len)
        *body_len = out->len - start;
    return ok && tl_strbuf_puts(out, r->chat->assistant_close) && tl_strbuf_puts(out, r->chat->user_open);
}

/* ---- token sequences ----------------------------------------------------- */

void tl_idseq_free(tl_idseq *s) {
    free(s->ids);
    tl_strbuf_free(&s->text);
    memset(s, 0, sizeof *s);
}

static tl_status idseq_reserve(tl_idseq *s, size_t extra, tl_error *err) {
    if (s->n + extra <= s->cap)
        return TL_OK;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->n + extra)
        cap *= 2;
    int32_t *p = realloc(s->ids, cap * sizeof *p);
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
    s->ids = p;
    s->cap = cap;
    return TL_OK;
}

tl_status tl_idseq_copy(tl_idseq *dst, const tl_idseq *src, tl_error *err) {
    dst->n = 0;
    tl_strbuf_clear(&dst->text);
    tl_status st = idseq_reserve(dst, src->n, err);
    if (st)
        return st;
    if (src->n)
        memcpy(dst->ids, src->ids, src->n * sizeof *dst->ids);
    dst->n = src->n;
    if (!tl_strbuf_append(&dst->text, src->text.buf, src->text.len))
        return tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
    return TL_OK;
}

tl_status tl_idseq_append_id(tl_idseq *s, int32_t id, const char *text, tl_error *err) {
    tl_status st = idseq_reserve(s, 1, err);
    if (st)
        return st;
    s->ids[s->n++] = id;
    if (!tl_strbuf_puts(&s->text, text))
        return tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
    return TL_OK;
}

static tl_status append_ids(tl_idseq *s, const int32_t *ids, size_t n, tl_error *err) {
    tl_status st = idseq_reserve(s, n, err);
    if (st)
        return st;
    if (n)
        memcpy(s->ids + s->n, ids, n * sizeof *ids);
    s->n += n;
    return TL_OK;
}

tl_status tl_idseq_append_text(tl_backend *b, tl_idseq *s, const char *text, size_t len, bool parse_special,
                               tl_error *err) {
    if (!len)
        return TL_OK;
    /* The tail: the last TAIL_BYTES of rendered text, starting on a UTF-8 character. */
    size_t tail_len = s->text.len < TAIL_BYTES ? s->text.len : TAIL_BYTES;
    const char *tail = s->text.buf ? s->text.buf + s->text.len - tail_len : "";
    while (tail_len && ((unsigned char)*tail & 0xC0) == 0x80)
        tail++, tail_len--;

    int32_t *full = NULL, *tail_ids = NULL;
    size_t n_full = 0, n_tail = 0;
    tl_status st = TL_OK;
    bool diffed = false;
    if (tail_len) {
        tl_strbuf both = TL_STRBUF_INIT;
        if (!tl_strbuf_append(&both, tail, tail_len) || !tl_strbuf_append(&both, text, len)) {
            tl_strbuf_free(&both);
            return tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
        }
        st = tl_backend_tokenize(b, both.buf, both.len, false, parse_special, &full, &n_full, err);
        tl_strbuf_free(&both);
        if (!st)
            st = tl_backend_tokenize(b, tail, tail_len, false, parse_special, &tail_ids, &n_tail, err);
        /* The piece's own tokens are what the tail+piece tokenization adds,
         * provided the tail's tokens survive unchanged. */
        if (!st && n_full > n_tail && !memcmp(full, tail_ids, n_tail * sizeof *full)) {
            st = append_ids(s, full + n_tail, n_full - n_tail, err);
            diffed = true;
        }
    }
    if (!st && !diffed) {
        free(full);
        full = NULL;
        st = tl_backend_tokenize(b, text, len, false, parse_special, &full, &n_full, err);
        if (!st)
            st = append_ids(s, full, n_full, err);
    }
    free(full);
    free(tail_ids);
    if (!st && !tl_strbuf_append(&s->text, text, len))
        st = tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
    return st;
}

bool tl_render_number_answer_text(const tl_render *r, const char *number, tl_strbuf *out, size_t *body_len) {
    size_t start = out->len;
    if (r->style == TL_STYLE_RECORD) {
        bool ok = tl_strbuf_printf(out, "\"\nvalue=%s\n\n", number);
        if (body_len)
            *body_len = out->len - start;
        return ok;
    }
    if (body_len)
        *body_len = 0;
    return tl_strbuf_puts(out, r->chat->assistant_close) && tl_strbuf_puts(out, r->chat->user_open);
}

tl_status tl_idseq_append_framed(tl_backend *b, tl_idseq *s, const char *text, size_t len, size_t body_len,
                                 tl_error *err) {
    tl_status st = tl_idseq_append_text(b, s, text, body_len, false, err);
    return st ? st : tl_idseq_append_text(b, s, text + body_len, len - body_len, true, err);
}

/* The BOS id the tokenizer prepends, or -1. */
static tl_status bos_id(tl_backend *b, int32_t *out, tl_error *err) {
    *out = -1;
    if (b->vocab) {
        if (tl_vocab_add_bos(b->vocab))
            *out = tl_vocab_bos(b->vocab);
        return TL_OK;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    tl_status st = tl_backend_tokenize(b, "", 0, true, false, &ids, &n, err);
    if (!st && n >= 1 && n <= 2)
        *out = ids[0];
    free(ids);
    return st;
}

tl_status tl_render_begin(tl_backend *b, const tl_render *r, const tl_dschema *s, const char *context, size_t len,
                          tl_idseq *out, tl_error *err) {
    out->n = 0;
    tl_strbuf_clear(&out->text);
    int32_t bos;
    tl_status st = bos_id(b, &bos, err);
    if (!st && bos >= 0)
        st = tl_idseq_append_id(out, bos, "", err);
    const char *opening = tl_render_opening(r);
    if (!st)
        st = tl_idseq_append_text(b, out, opening, strlen(opening), true, err);
    tl_strbuf ctx = TL_STRBUF_INIT;
    if (!st && !tl_render_context_text(r, s, context, len, &ctx))
        st = tl_error_set(err, TL_ERR_NOMEM, "render: out of memory");
    if (!st)
        st = tl_idseq_append_text(b, out, ctx.buf, ctx.len, false, err);
    tl_strbuf_free(&ctx);
    return st;
}
