/* vocab.h: tokenizers that reproduce the reference token ids exactly.
 * The declarations are public: include/typellm/vocab.h (this private header is
 * what the layers include). */
#ifndef TL_TOK_VOCAB_H
#define TL_TOK_VOCAB_H

#include "typellm/vocab.h"

#endif
