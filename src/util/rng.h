/* rng.h: the seeded random stream (splitmix64) (declared in the public typellm/util.h). */
#ifndef TL_UTIL_RNG_H
#define TL_UTIL_RNG_H

#include "typellm/util.h"

#endif
