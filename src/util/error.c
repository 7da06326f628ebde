/* error.c: formatting of tl_error messages (see error.h). */
#include "util/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

tl_status tl_error_set(tl_error *err, tl_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

tl_status tl_error_wrap(tl_error *err, const char *fmt, ...) {
    if (!err)
        return TL_ERR_INTERNAL;
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    size_t plen = strlen(prefix);
    if (plen > sizeof err->msg - 3)
        plen = sizeof err->msg - 3;
    memcpy(err->msg, prefix, plen);
    memcpy(err->msg + plen, ": ", 2);
    size_t room = sizeof err->msg - plen - 3;
    size_t olen = strnlen(old, sizeof old);
    if (olen > room)
        olen = room;
    memcpy(err->msg + plen + 2, old, olen);
    err->msg[plen + 2 + olen] = '\0';
    return err->code;
}

const char *tl_status_name(tl_status s) {
    switch (s) {
    case TL_OK: return "ok";
    case TL_ERR_IO: return "io";
    case TL_ERR_FORMAT: return "format";
    case TL_ERR_UNSUPPORTED: return "unsupported";
    case TL_ERR_INVALID: return "invalid";
    case TL_ERR_NOMEM: return "nomem";
    case TL_ERR_SCHEMA: return "schema";
    case TL_ERR_LIMIT: return "limit";
    case TL_ERR_NETWORK: return "network";
    case TL_ERR_REMOTE: return "remote";
    case TL_ERR_TIMEOUT: return "timeout";
    case TL_ERR_CANCELLED: return "cancelled";
    case TL_ERR_INTERNAL: return "internal";
    }
    return "unknown";
}

const char *tl_version(void) { return TL_VERSION; }

void tl_free(void *p) { free(p); }

void tl_usage_add(tl_usage *to, const tl_usage *u) {
    if (!to || !u)
        return;
    to->prompt_tokens += u->prompt_tokens;
    to->cached_tokens += u->cached_tokens;
    to->computed_tokens += u->computed_tokens;
    to->forward_passes += u->forward_passes;
    to->output_tokens += u->output_tokens;
}
