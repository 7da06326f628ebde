/* engine.h: the embedded inference engine: a loaded model and sessions that
 * run token sequences through it with a prefix cache. The API is public
 * (include/typellm/model.h, with its contracts); this private header is what
 * the layers include. */
#ifndef TL_ENGINE_ENGINE_H
#define TL_ENGINE_ENGINE_H

#include "typellm/model.h"

#endif
