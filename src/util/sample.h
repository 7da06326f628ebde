/* sample.h: the token sampler and log-sum-exp (declared in the public typellm/util.h). */
#ifndef TL_UTIL_SAMPLE_H
#define TL_UTIL_SAMPLE_H

#include "typellm/util.h"

#endif
