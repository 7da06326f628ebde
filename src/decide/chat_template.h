/* chat_template.h: the chat-template families decisions are framed in.
 *
 * Real GGUF files carry a Jinja template (tokenizer.chat_template), but
 * nearly all of them are one of a handful of families; recognising the family
 * from marker strings in the template text gives the exact turn framing
 * without a Jinja interpreter. A family may also be forced by name. */
#ifndef TL_DECIDE_CHAT_TEMPLATE_H
#define TL_DECIDE_CHAT_TEMPLATE_H

#include <stdbool.h>

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
} tl_chat_framing;

/* Family recognised from a Jinja template's text; TL_CHAT_NONE when template is NULL or unknown. */
tl_chat_family tl_chat_family_detect(const char *jinja);
/* Family by name ("chatml", "llama3", "llama2", "mistral", "gemma", "phi3"); TL_CHAT_NONE when unknown. */
tl_chat_family tl_chat_family_by_name(const char *name);
/* Framing of a family (NULL for TL_CHAT_NONE). */
const tl_chat_framing *tl_chat_framing_of(tl_chat_family f);

#endif
