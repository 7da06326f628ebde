/* typellm/vocab.h: tokenizers that reproduce the reference token ids exactly.
 *
 * SPM (tokenizer.ggml.model = "llama") with byte fallback and add_space_prefix,
 * and byte-level BPE ("gpt2") with the pre-tokenizer named by
 * tokenizer.ggml.pre. A vocabulary with an unknown model or pre is an error
 * naming it, never a silent fallback. Special-token splitting: control tokens
 * only when parse_special, user-defined tokens always. The tl_vocab copies
 * what it needs, so the tl_gguf may be closed after tl_vocab_load. */
#ifndef TYPELLM_VOCAB_H
#define TYPELLM_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "common.h"
#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_vocab_kind { TL_VOCAB_SPM = 1, TL_VOCAB_BPE = 2 } tl_vocab_kind;

/* tokenizer.ggml.token_type values. */
typedef enum tl_token_attr {
    TL_TOKEN_NORMAL = 1, TL_TOKEN_UNKNOWN = 2, TL_TOKEN_CONTROL = 3,
    TL_TOKEN_USER_DEFINED = 4, TL_TOKEN_UNUSED = 5, TL_TOKEN_BYTE = 6
} tl_token_attr;

TL_API tl_status tl_vocab_load(const tl_gguf *g, tl_vocab **out, tl_error *err);
/* Opens path, loads the vocabulary, closes the file (weights are never touched). */
TL_API tl_status tl_vocab_load_file(const char *path, tl_vocab **out, tl_error *err);
TL_API void tl_vocab_free(tl_vocab *v);

TL_API tl_vocab_kind tl_vocab_kind_of(const tl_vocab *v);
TL_API const char *tl_vocab_pre(const tl_vocab *v);     /* "default", "qwen2", ... */
TL_API int32_t tl_vocab_n_tokens(const tl_vocab *v);

/* Special ids; -1 when the vocabulary has none. */
TL_API int32_t tl_vocab_bos(const tl_vocab *v);
TL_API int32_t tl_vocab_eos(const tl_vocab *v);
TL_API int32_t tl_vocab_eot(const tl_vocab *v);         /* end of turn (<|im_end|>, <|eot_id|>), -1 if none */
TL_API bool tl_vocab_add_bos(const tl_vocab *v);        /* tokenizer.ggml.add_bos_token (SPM default true) */
TL_API bool tl_vocab_add_eos(const tl_vocab *v);
/* True for tokens that end generation: eos, eot and other end-of-generation controls. */
TL_API bool tl_vocab_is_eog(const tl_vocab *v, int32_t id);
TL_API tl_token_attr tl_vocab_token_attr(const tl_vocab *v, int32_t id);
/* The raw vocabulary entry (e.g. "▁the", "Ġthe", "<0x0A>"); NULL for a bad id. */
TL_API const char *tl_vocab_token_piece(const tl_vocab *v, int32_t id, size_t *len);
/* Looks a raw piece up; -1 when absent. */
TL_API int32_t tl_vocab_piece_to_id(const tl_vocab *v, const char *piece, size_t len);
/* tokenizer.chat_template, or NULL. */
TL_API const char *tl_vocab_chat_template(const tl_vocab *v);

/* Tokenizes text[0..len). add_special: prepend BOS / append EOS as the metadata
 * says. parse_special: control-token texts in the input become those tokens.
 * *ids is malloc'd (caller frees, also when n_ids is 0). Invalid UTF-8 never
 * crashes: SPM keeps every byte (byte tokens), so it still round-trips; byte-level
 * BPE reads each byte that does not start a complete UTF-8 sequence as U+FFFD
 * (as the reference does), so such bytes come back as EF BF BD. */
TL_API tl_status tl_vocab_tokenize(const tl_vocab *v, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t **ids, size_t *n_ids, tl_error *err);

/* The bytes one token stands for (U+2581 -> space, byte tokens -> that byte,
 * GPT-2 byte alphabet undone); control tokens give their text only when
 * render_special. Returns the byte count written (up to cap; the full length is
 * returned even when cap is smaller, like snprintf). */
TL_API size_t tl_vocab_token_bytes(const tl_vocab *v, int32_t id, bool render_special, char *buf, size_t cap);

/* Appends the text of ids to *out (a tl_strbuf, util.h).
 * remove_leading_space: SPM's add_space_prefix undone at the start of the
 * sequence, so detokenize(tokenize(s)) == s. render_special: control tokens
 * print their text. */

TL_API tl_status tl_vocab_detokenize(const tl_vocab *v, const int32_t *ids, size_t n_ids, bool remove_leading_space,
                              bool render_special, tl_strbuf *out, tl_error *err);


#ifdef __cplusplus
}
#endif
#endif
