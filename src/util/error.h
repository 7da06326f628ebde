/* error.h: the one error type used across typellm.
 *
 * Every fallible function returns a tl_status and, when given a non-NULL
 * tl_error*, fills it with a code and a message that names the offending
 * location (file offset, JSON path such as /properties/amount/minimum,
 * source line:column). The library never calls exit(); callers decide. */
#ifndef TL_UTIL_ERROR_H
#define TL_UTIL_ERROR_H

#include "typellm.h"

/* Sets err (if non-NULL) and returns code, so callers can write
 *   return tl_error_set(err, TL_ERR_FORMAT, "gguf: offset %llu: bad type %u", ...); */
tl_status tl_error_set(tl_error *err, tl_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (for adding context while unwinding). */
tl_status tl_error_wrap(tl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
