/* typellm/common.h: what every part of the API shares: the version, the
 * status codes, the error type, token accounting and tl_free.
 *
 * Conventions of the whole API (every header follows them):
 *  - Handles are opaque and created / freed in pairs (tl_X_new or tl_X_load
 *    with tl_X_free); freeing NULL is a no-op.
 *  - Every fallible call returns a tl_status and, given a non-NULL tl_error*,
 *    fills it with the same code and a message naming where the problem is
 *    (file offset, JSON path such as /properties/amount/minimum, line:column).
 *    On failure, out-parameters are set to NULL / 0.
 *  - Memory the library allocates for the caller (strings, id arrays) is
 *    released with tl_free; nothing else needs a particular allocator.
 *  - Threading: unless a call says otherwise, distinct handles may be used
 *    from distinct threads at once, and one handle from one thread at a time.
 *    Read-only handles (tl_model, tl_vocab, tl_gguf, tl_schema, tl_decision)
 *    may be shared by any number of threads.
 *  - The library never exits the process or prints (except where a call's
 *    documentation says so, e.g. a server's request log). */
#ifndef TYPELLM_COMMON_H
#define TYPELLM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the symbols libtypellm.so exports (everything else is hidden). */
#if defined(__GNUC__)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 1
#define TL_VERSION_PATCH 0
#define TL_VERSION "0.1.0"

/* The library's version string at run time (compare with TL_VERSION). */
TL_API const char *tl_version(void);

typedef enum tl_status {
    TL_OK = 0,
    TL_ERR_IO,          /* file or socket I/O failed */
    TL_ERR_FORMAT,      /* malformed input file or wire data (message has the offset) */
    TL_ERR_UNSUPPORTED, /* valid but outside what typellm supports (names it) */
    TL_ERR_INVALID,     /* bad argument or request */
    TL_ERR_NOMEM,       /* allocation failed */
    TL_ERR_SCHEMA,      /* bad decision schema (message has the JSON path) */
    TL_ERR_LIMIT,       /* a configured limit was exceeded (context, body, probes) */
    TL_ERR_NETWORK,     /* remote server unreachable */
    TL_ERR_REMOTE,      /* remote server answered with an error or unexpected data */
    TL_ERR_TIMEOUT,     /* deadline passed */
    TL_ERR_CANCELLED,   /* caller cancelled */
    TL_ERR_INTERNAL     /* a bug in typellm */
} tl_status;

/* A status and its message (NUL-terminated, at most 1023 bytes). Plain data:
 * declare one on the stack, pass its address, read msg after a failure. */
typedef struct tl_error {
    tl_status code;
    char msg[1024];
} tl_error;

/* "ok", "io", "format", "unsupported", "invalid", "nomem", "schema", "limit",
 * "network", "remote", "timeout", "cancelled", "internal"; "unknown" else.
 * Static strings. */
TL_API const char *tl_status_name(tl_status s);

/* Sets err (if non-NULL) and returns code, so callers can write
 *   return tl_error_set(err, TL_ERR_FORMAT, "gguf: offset %llu: bad type %u", ...);
 * The message is cut at 1023 bytes. */
TL_API tl_status tl_error_set(tl_error *err, tl_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to err's message (context added while unwinding);
 * returns err->code (TL_ERR_INTERNAL when err is NULL). */
TL_API tl_status tl_error_wrap(tl_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Token accounting of any call that runs the model; the numbers a server
 * reports as prompt_tokens / cached_tokens. Calls that take a tl_usage*
 * add to it (they never reset it), so one struct can sum several calls. */
typedef struct tl_usage {
    int64_t prompt_tokens;   /* tokens the request presented */
    int64_t cached_tokens;   /* of those, found in the prefix cache */
    int64_t computed_tokens; /* tokens actually run through the model */
    int64_t forward_passes;  /* batched forward passes run */
    int64_t output_tokens;   /* tokens generated */
} tl_usage;

/* to += u, field by field (NULL u: nothing). */
TL_API void tl_usage_add(tl_usage *to, const tl_usage *u);

/* Releases memory the library allocated for the caller (strings from
 * tl_decision_to_json, id arrays from tl_backend_tokenize, ...). NULL is a no-op. */
TL_API void tl_free(void *p);

/* Opaque handles (each documented in its header). */
typedef struct tl_gguf tl_gguf;       /* an open GGUF file (gguf.h) */
typedef struct tl_vocab tl_vocab;     /* a tokenizer (vocab.h) */
typedef struct tl_model tl_model;     /* loaded weights (model.h) */
typedef struct tl_session tl_session; /* a KV prefix cache + thread pool over a model (model.h) */
typedef struct tl_backend tl_backend; /* what decisions run on (backend.h) */

#ifdef __cplusplus
}
#endif
#endif
