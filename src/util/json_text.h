/* json_text.h: JSON text as typellm prints it (CLI and HTTP replies alike).
 * jansson prints a real with a fixed number of significant digits: 17 keeps
 * every value exact but shows 0.3 as 0.29999999999999999, fewer digits round
 * some values. tl_json_dumps prints each real in the shortest form that reads
 * back to the same double (0.3, 444444444444.0, 1e-300), and keeps reals
 * recognisable as reals ("1.0", never "1"). */
#ifndef TL_UTIL_JSON_TEXT_H
#define TL_UTIL_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

#include "typellm/util.h"

/* json_dumps(j, flags) with shortest round-trip reals; malloc'd, NULL on
 * failure. Any JSON_REAL_PRECISION in flags is ignored. */
char *tl_json_dumps(const json_t *j, size_t flags);

/* A JSON string of s[0..n) with each invalid UTF-8 byte replaced by U+FFFD
 * and NUL kept (json_stringn refuses invalid UTF-8): for text from a model,
 * a request or a file. Named like the jansson constructors it stands beside;
 * NULL only when out of memory. */
json_t *json_string_lossy(const char *s, size_t n);

/* tl_json_real_text and tl_json_shorten_reals (no jansson types) are public:
 * typellm/util.h. */

#endif
