/* sampler.h: type-constrained token sampling over a backend.
 * The declarations are public: include/typellm/aeon_sampler.h (this private header is
 * what the layers include). */
#ifndef TL_AEON_SAMPLER_H
#define TL_AEON_SAMPLER_H

#include "backend/backend.h"
#include "typellm/aeon_sampler.h"

#endif
