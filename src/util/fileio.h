/* fileio.h: whole-file reads with clear errors, and a monotonic clock
 * (declared in the public typellm/util.h). */
#ifndef TL_UTIL_FILEIO_H
#define TL_UTIL_FILEIO_H

#include "typellm/util.h"

#endif
