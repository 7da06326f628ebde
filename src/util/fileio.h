/* fileio.h: whole-file reads with clear errors, and a monotonic clock. */
#ifndef TL_UTIL_FILEIO_H
#define TL_UTIL_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "typellm.h"

/* Reads the whole file (or stdin when path is "-") into a NUL-terminated
 * malloc'd buffer; *len excludes the NUL. Refuses files over max_bytes. */
tl_status tl_read_file(const char *path, size_t max_bytes, char **data, size_t *len, tl_error *err);

/* Monotonic time in seconds / nanoseconds. */
double tl_now_s(void);
uint64_t tl_now_ns(void);

#endif
