/* typellm/util.h: the small helpers the API's callers need too: the growable
 * byte buffer several calls append their text to (tl_strbuf, cf. Redis sds),
 * whole-file reads with clear errors, and a monotonic clock.
 *
 * tl_strbuf invariant: buf[len] == '\0' whenever buf != NULL, so the data can
 * be handed to C string APIs; embedded NULs are allowed. A tl_strbuf is plain
 * data owned by its declarer: start it as TL_STRBUF_INIT, free it with
 * tl_strbuf_free (or take its memory with tl_strbuf_detach, then tl_free). */
#ifndef TYPELLM_UTIL_H
#define TYPELLM_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_strbuf {
    char *buf;   /* NULL until first append */
    size_t len;  /* bytes used, excluding the trailing NUL */
    size_t cap;  /* bytes allocated */
} tl_strbuf;
#define TL_STRBUF_INIT {NULL, 0, 0}

/* All appends return false only on allocation failure (buffer left intact). */
TL_API bool tl_strbuf_reserve(tl_strbuf *sb, size_t extra);
TL_API bool tl_strbuf_append(tl_strbuf *sb, const void *data, size_t n);
TL_API bool tl_strbuf_puts(tl_strbuf *sb, const char *s);
TL_API bool tl_strbuf_putc(tl_strbuf *sb, char c);
TL_API bool tl_strbuf_printf(tl_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TL_API bool tl_strbuf_vprintf(tl_strbuf *sb, const char *fmt, va_list ap);
/* Appends s as a JSON string literal (with quotes), escaping as RFC 8259 requires;
 * invalid UTF-8 bytes become U+FFFD. */
TL_API bool tl_strbuf_json_string(tl_strbuf *sb, const char *s, size_t n);
TL_API void tl_strbuf_clear(tl_strbuf *sb);             /* len = 0, keeps memory */
TL_API void tl_strbuf_free(tl_strbuf *sb);              /* releases memory, back to INIT */
TL_API char *tl_strbuf_detach(tl_strbuf *sb);           /* caller tl_free()s; never NULL unless OOM */
TL_API const char *tl_strbuf_cstr(const tl_strbuf *sb); /* "" when empty */

/* Reads the whole file (or stdin when path is "-") into a NUL-terminated
 * buffer (*data, caller tl_free()s); *len excludes the NUL. Refuses files over
 * max_bytes (TL_ERR_LIMIT); TL_ERR_IO names the path and why. */
TL_API tl_status tl_read_file(const char *path, size_t max_bytes, char **data, size_t *len, tl_error *err);

/* Monotonic time in seconds / nanoseconds (CLOCK_MONOTONIC; only differences mean anything). */
TL_API double tl_now_s(void);
TL_API uint64_t tl_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
