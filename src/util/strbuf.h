/* strbuf.h: the growable byte buffer used project-wide instead of ad-hoc
 * buffers (cf. Redis sds). Public: declared in typellm/util.h. */
#ifndef TL_UTIL_STRBUF_H
#define TL_UTIL_STRBUF_H

#include "typellm/util.h"

#endif
