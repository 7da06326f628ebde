/* gguf.h: reader for GGUF model files, versions 1, 2 and 3.
 * The declarations are public: include/typellm/gguf.h (this private header is
 * what the layers include). */
#ifndef TL_GGUF_GGUF_H
#define TL_GGUF_GGUF_H

#include "typellm/gguf.h"

#endif
