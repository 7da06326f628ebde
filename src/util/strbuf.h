/* strbuf.h: the growable byte buffer used project-wide instead of ad-hoc
 * buffers (cf. Redis sds). Invariant: buf[len] == '\0' whenever buf != NULL,
 * so data can be handed to C string APIs; embedded NULs are allowed. */
#ifndef TL_UTIL_STRBUF_H
#define TL_UTIL_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct tl_strbuf {
    char *buf;   /* NULL until first append */
    size_t len;  /* bytes used, excluding the trailing NUL */
    size_t cap;  /* bytes allocated */
} tl_strbuf;

#define TL_STRBUF_INIT {NULL, 0, 0}

/* All appends return false only on allocation failure (buffer left intact). */
bool tl_strbuf_reserve(tl_strbuf *sb, size_t extra);
bool tl_strbuf_append(tl_strbuf *sb, const void *data, size_t n);
bool tl_strbuf_puts(tl_strbuf *sb, const char *s);
bool tl_strbuf_putc(tl_strbuf *sb, char c);
bool tl_strbuf_printf(tl_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool tl_strbuf_vprintf(tl_strbuf *sb, const char *fmt, va_list ap);
/* Appends s as a JSON string literal (with quotes), escaping as RFC 8259 requires;
 * invalid UTF-8 bytes become U+FFFD. */
bool tl_strbuf_json_string(tl_strbuf *sb, const char *s, size_t n);
void tl_strbuf_clear(tl_strbuf *sb);           /* len = 0, keeps memory */
void tl_strbuf_free(tl_strbuf *sb);            /* releases memory, back to INIT */
char *tl_strbuf_detach(tl_strbuf *sb);         /* caller frees; never NULL unless OOM */
const char *tl_strbuf_cstr(const tl_strbuf *sb); /* "" when empty */

#endif
