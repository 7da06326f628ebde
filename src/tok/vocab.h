/* vocab.h: tokenizers that reproduce the reference token ids exactly.
 * The declarations are public: include/typellm/vocab.h (this private header is
 * what the layers include). */
#ifndef TL_TOK_VOCAB_H
#define TL_TOK_VOCAB_H

#include "typellm/vocab.h"

/* Data a layer above derives from a vocabulary alone (constrain's number
 * index: ~0.1 s for 151k tokens), built on first use and freed with the
 * vocabulary, so every decision over the same model shares one copy instead
 * of building its own. *out gets slot's value; when absent, build makes it
 * (under the vocabulary's lock: concurrent first users wait for one build)
 * and free_fn will free it. The value must be immutable once built (callers
 * on any thread read it). */
typedef enum tl_vocab_memo_slot { TL_VOCAB_MEMO_NUMBER_INDEX, TL_VOCAB_MEMO_SLOTS } tl_vocab_memo_slot;
tl_status tl_vocab_memo(const tl_vocab *v, tl_vocab_memo_slot slot,
                        tl_status (*build)(const tl_vocab *v, void **out, tl_error *err), void (*free_fn)(void *),
                        void **out, tl_error *err);

#endif
