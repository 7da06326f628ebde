/* utf8.h: the UTF-8 decoder and encoder (declared in the public typellm/util.h). */
#ifndef TL_UTIL_UTF8_H
#define TL_UTIL_UTF8_H

#include "typellm/util.h"

#endif
