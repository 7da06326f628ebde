/* render.h: how decisions are written for the model, as text and as token ids.
 *
 * A run is one token sequence that only ever grows:
 *   BOS? OPENING CONTEXT  [QUESTION(f) LABEL ANSWER(f)]*  QUESTION(g)  -> score g's labels
 * chat style: OPENING is the first user turn's header, QUESTION(f) is
 *   `Choice(name=..., question=..., choices={"A":...})` closing the user turn
 *   and opening the assistant's, LABEL is the assistant's one-token answer and
 *   ANSWER(f) writes the value back (value="travel"), closes the assistant
 *   turn and opens the next user turn.
 * record style: a raw completion; QUESTION(f) is a record that stops
 *   mid-literal at answer=" and ANSWER(f) closes it and writes value="travel".
 *
 * Pieces are tokenized separately and their ids concatenated, so a later
 * prompt is always an exact token-prefix extension of an earlier one (no
 * re-tokenization across a piece boundary can change earlier ids). Each
 * piece is tokenized as it reads after the text just before it (a short
 * tail), so boundaries tokenize the way the whole text would. */
#ifndef TL_DECIDE_RENDER_H
#define TL_DECIDE_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "decide/chat_template.h"
#include "decide/labels.h"
#include "decide/schema.h"
#include "typellm/common.h"
#include "util/strbuf.h"

typedef enum tl_render_style { TL_STYLE_CHAT = 1, TL_STYLE_RECORD = 2 } tl_render_style;

typedef struct tl_render {
    tl_render_style style;
    const tl_chat_framing *chat; /* chat style only */
} tl_render;

/* ---- text (pure; unit-tested on strings) --------------------------------- */

/* The first user turn's header (chat) or "" (record); parsed with special tokens. */
const char *tl_render_opening(const tl_render *r);
/* Schema title/description, the context and the separator before the first
 * question; tokenized as plain text (special-token text in the context stays text). */
bool tl_render_context_text(const tl_render *r, const tl_dschema *s, const char *context, size_t len, tl_strbuf *out);
/* The question of field f; labels[i] is the label of value i. Ends right
 * where the answer token goes. *body_len (optional): bytes written before the
 * chat framing, i.e. the part holding caller text (names, questions, values),
 * which is tokenized without special tokens so it cannot inject turn markers. */
bool tl_render_question_text(const tl_render *r, const tl_dfield *f, const tl_label_text *labels, tl_strbuf *out,
                             size_t *body_len);
/* The same with the values shown in another order: label i stands for value
 * order[i] (order NULL: the identity, byte for byte the text above). Only the
 * choices and descriptions lines differ between orders; everything before
 * them (the name and the question) is the same text, so the orders share it. */
bool tl_render_question_text_order(const tl_render *r, const tl_dfield *f, const tl_label_text *labels,
                                   const size_t *order, tl_strbuf *out, size_t *body_len);
/* What follows the chosen label: the value written back and the turn or
 * record closed; *body_len as above. */
bool tl_render_answer_text(const tl_render *r, const tl_dfield *f, size_t value_idx, tl_strbuf *out,
                           size_t *body_len);
/* What follows a generated number's text (the number itself is the answer):
 * record: the closing quote and value=N; chat: the turn closed. */
bool tl_render_number_answer_text(const tl_render *r, const char *number, tl_strbuf *out, size_t *body_len);
/* Generated strings: the text before the value (chat: the opening quote;
 * record: nothing, the question ends at answer="), and what follows the
 * value: the closing quote and the record or turn closed. */
bool tl_render_string_lead_text(const tl_render *r, tl_strbuf *out);
bool tl_render_string_answer_text(const tl_render *r, tl_strbuf *out, size_t *body_len);
/* Open fields. After the open choice's label: the lead before the written
 * value (record: `"\nvalue="`, the value then sits in a JSON string literal;
 * chat: a newline, the value then runs to the end of the assistant turn). */
bool tl_render_open_lead_text(const tl_render *r, tl_strbuf *out);
/* The written value after the lead (record: JSON-escaped, then the closing
 * quote and blank line; chat: raw, then the turn closed); *body_len as above. */
bool tl_render_open_answer_text(const tl_render *r, const char *value, tl_strbuf *out, size_t *body_len);
/* The text right before the answer token (labels are verified after it), and
 * the text the answer token carries before the label. */
const char *tl_render_label_tail(const tl_render *r);
const char *tl_render_label_prefix(const tl_render *r);

/* ---- token sequences ----------------------------------------------------- */

typedef struct tl_idseq {
    int32_t *ids;
    size_t n, cap;
    tl_strbuf text; /* the rendered text the ids stand for (for tails and traces) */
} tl_idseq;

void tl_idseq_free(tl_idseq *s);
tl_status tl_idseq_copy(tl_idseq *dst, const tl_idseq *src, tl_error *err);
/* Appends one known token standing for text. */
tl_status tl_idseq_append_id(tl_idseq *s, int32_t id, const char *text, tl_error *err);
/* Appends the tokens of text as it reads after s's current text. */
tl_status tl_idseq_append_text(tl_backend *b, tl_idseq *s, const char *text, size_t len, bool parse_special,
                               tl_error *err);
/* Appends a framed piece: text[0..body_len) as plain text, the rest with
 * special tokens parsed. */
tl_status tl_idseq_append_framed(tl_backend *b, tl_idseq *s, const char *text, size_t len, size_t body_len,
                                 tl_error *err);
/* Starts a sequence: BOS if the tokenizer adds one, the opening, the context piece. */
tl_status tl_render_begin(tl_backend *b, const tl_render *r, const tl_dschema *s, const char *context, size_t len,
                          tl_idseq *out, tl_error *err);

#endif
