/* error.h: the one error type used across typellm. The type, the status codes
 * and tl_error_set / tl_error_wrap are public (typellm/common.h); this private
 * header is what the layers include.
 *
 * Every fallible function returns a tl_status and, when given a non-NULL
 * tl_error*, fills it with a code and a message that names the offending
 * location (file offset, JSON path such as /properties/amount/minimum,
 * source line:column). The library never calls exit(); callers decide. */
#ifndef TL_UTIL_ERROR_H
#define TL_UTIL_ERROR_H

#include "typellm/common.h"

#endif
