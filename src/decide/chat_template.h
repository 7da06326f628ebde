/* chat_template.h: the turn framing decisions are written in.
 *
 * A model's own Jinja template (tokenizer.chat_template, or a file given
 * with --chat-template) is rendered by src/template for probe conversations
 * and the framing is read off the renderings (tl_chat_derive): the text
 * before the first user message, what closes a user turn and opens the
 * assistant's (the generation prompt, with thinking turned off), and what
 * closes an assistant turn and opens the next user turn. So a decision's
 * prompt is exactly what the template renders, and the scored position is
 * where the model gives its final answer: a generation prompt that leaves a
 * reasoning block open (<think>, gpt-oss's channel choice) is closed with the
 * family's own text, or refused.
 *
 * The five hard-coded families below remain for GGUFs without a template
 * (and can be forced by name). */
#ifndef TL_DECIDE_CHAT_TEMPLATE_H
#define TL_DECIDE_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "typellm/common.h"
#include "typellm/vocab.h"

typedef enum tl_chat_family {
    TL_CHAT_NONE = 0, /* no template, or one we do not recognise */
    TL_CHAT_CHATML,   /* <|im_start|>user\n...<|im_end|>\n (Qwen, many others) */
    TL_CHAT_LLAMA3,   /* <|start_header_id|>user<|end_header_id|>\n\n...<|eot_id|> */
    TL_CHAT_LLAMA2,   /* <s>[INST] ... [/INST] answer </s> (Llama 2, Mistral) */
    TL_CHAT_GEMMA,    /* <start_of_turn>user\n...<end_of_turn>\n */
    TL_CHAT_PHI3      /* <|user|>\n...<|end|>\n<|assistant|>\n */
} tl_chat_family;

/* The text around turns. A conversation renders as
 *   [BOS from the tokenizer] user_open CONTENT user_close assistant_open
 *   label_prefix LABEL ... assistant_close user_open ...
 * Every string is parsed with special tokens on. */
typedef struct tl_chat_framing {
    const char *name;            /* "chatml", ... */
    const char *user_open;
    const char *user_close;
    const char *assistant_open;  /* ends right where the answer's first token goes */
    const char *label_prefix;    /* text the answer token carries before the label (" " for [/INST] B) */
    const char *assistant_close;
    const char *opening;         /* text before the first user message's content; NULL: user_open */
} tl_chat_framing;

/* Family recognised from a Jinja template's text; TL_CHAT_NONE when template is NULL or unknown. */
tl_chat_family tl_chat_family_detect(const char *jinja);
/* Family by name ("chatml", "llama3", "llama2", "mistral", "gemma", "phi3"); TL_CHAT_NONE when unknown. */
tl_chat_family tl_chat_family_by_name(const char *name);
/* Framing of a family (NULL for TL_CHAT_NONE). */
const tl_chat_framing *tl_chat_framing_of(tl_chat_family f);

/* The text of token id as a template's bos_token / eos_token sees it
 * (control tokens rendered); NULL when id < 0 or v is NULL. Caller frees. */
char *tl_chat_token_text(const tl_vocab *v, int32_t id);

/* ---- framing from a Jinja template ------------------------------------------------ */

typedef struct tl_chat_derived {
    tl_chat_framing framing; /* name and strings point into this struct's own memory */
    char name[96];           /* "template:chatml" (the family its markers suggest), "template" */
    bool reasoning;          /* the template writes a reasoning block or channel */
    char thinking[128];      /* how the answer is kept out of it ("enable_thinking=false", ...), or "" */
    char *strings[4];        /* owned: opening, question close, answer close, label prefix */
    /* Think-then-decide (reasoning templates that render an assistant turn's
     * reasoning): the text after the user's message up to where reasoning
     * starts, with thinking on (Qwen3: "<|im_end|>\n<|im_start|>assistant\n<think>\n"),
     * and what the template writes between the reasoning and the answer
     * ("\n</think>\n\n"); both NULL when no rendering shows a reasoning block. */
    char *think_open, *think_close;
} tl_chat_derived;

typedef struct tl_chat_derive_opts {
    const char *source;   /* what the template is, for messages ("the model's chat template", a path) */
    const char *bos_text; /* bos_token / eos_token variables (NULL: "") */
    const char *eos_text;
    bool strip_bos;       /* the tokenizer adds BOS itself: a leading bos_text is dropped from the opening */
} tl_chat_derive_opts;

/* Derives the framing from template source jinja[0..len). Errors:
 * TL_ERR_FORMAT (syntax, with line:column), TL_ERR_INVALID (the template
 * raises or fails for a plain conversation), TL_ERR_UNSUPPORTED (the answer
 * would sit inside a reasoning block that cannot be closed) — each naming
 * o->source. */
tl_status tl_chat_derive(const char *jinja, size_t len, const tl_chat_derive_opts *o, tl_chat_derived *out,
                         tl_error *err);
void tl_chat_derived_free(tl_chat_derived *d);

#endif
