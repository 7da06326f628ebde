/* typellm.h: the public C API of libtypellm.
 *
 * typellm turns an open autoregressive language model (any llama/qwen2/qwen3
 * GGUF) into a source of typed decisions and type-correct code. Every handle
 * is opaque and created/freed in pairs; every fallible call returns a
 * tl_status and fills an optional tl_error with a message naming where the
 * problem is. Prefix: tl_. The CLI (src/cli) and the server are built on it.
 *
 * Sections (each owned by one layer; keep declarations in its section):
 *   1. status and errors           (util)
 *   2. GGUF files                  (gguf)     -> src/gguf/gguf.h for the full reader
 *   3. vocabularies / tokenizers   (tok)
 *   4. models and sessions         (engine)
 *   5. backends                    (backend)
 *   6. decisions                   (decide)
 *   7. Aeon synthesis              (aeon)
 *   8. server                      (server)
 */
#ifndef TYPELLM_H
#define TYPELLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_VERSION "0.1.0"

/* ===== 1. status and errors ============================================ */

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

typedef struct tl_error {
    tl_status code;
    char msg[1024];
} tl_error;

const char *tl_status_name(tl_status s);

/* Token-accounting of any call that runs the model; the numbers a server
 * reports as prompt_tokens / cached_tokens. */
typedef struct tl_usage {
    int64_t prompt_tokens;   /* tokens the request presented */
    int64_t cached_tokens;   /* of those, found in the prefix cache */
    int64_t computed_tokens; /* tokens actually run through the model */
    int64_t forward_passes;  /* batched forward passes run */
    int64_t output_tokens;   /* tokens generated */
} tl_usage;

/* ===== 2. GGUF files (full reader API: src/gguf/gguf.h) ================== */

typedef struct tl_gguf tl_gguf;

/* ===== 3. vocabularies / tokenizers (src/tok/vocab.h) ==================== */

typedef struct tl_vocab tl_vocab;

/* ===== 4. models and sessions (src/engine/engine.h) ====================== */

typedef struct tl_model tl_model;
typedef struct tl_session tl_session;

/* ===== 5. backends (src/backend/backend.h) =============================== */

typedef struct tl_backend tl_backend;

/* ===== 6. decisions (src/decide/decide.h) ================================ */

/* ===== 7. Aeon synthesis (src/aeon/aeon.h) =============================== */

/* ===== 8. server (src/server/server.h) =================================== */

#ifdef __cplusplus
}
#endif
#endif
