/* form_stream.h: a multipart/form-data body parsed as it arrives, in pieces
 * of any size, with memory bounded by constants (not by the body): each
 * part's headers are read whole (up to FORM_MAX_HEADER bytes), its data is
 * handed on as it comes, holding back only the bytes that may begin the
 * next boundary. This is what lets POST /v1/files take a file far larger
 * than --max-body straight to disk (files_api.c).
 *
 * The boundary is the body's first line ("--BOUNDARY", up to
 * FORM_MAX_BOUNDARY bytes), as RFC 7578 bodies begin; the Content-Type
 * header is not needed. Socket- and file-free: the fuzz target
 * (fuzz/fuzz_server_batches.c, through POST /v1/files) drives it. */
#ifndef TL_SERVER_FORM_STREAM_H
#define TL_SERVER_FORM_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#define FORM_MAX_BOUNDARY 200  /* bytes of the first line */
#define FORM_MAX_HEADER 8192   /* bytes of one part's headers */
#define FORM_WINDOW 65536      /* data bytes scanned per step */

typedef struct form_callbacks {
    /* A part begins: its name and filename parameters ("" when absent;
     * name cut at 63 bytes, filename at 255). false stops the parse. */
    bool (*begin)(void *ctx, const char *name, const char *filename);
    /* The next data[0..n) of the current part. false stops the parse. */
    bool (*data)(void *ctx, const char *data, size_t n);
    void *ctx;
} form_callbacks;

typedef enum form_state { FORM_FIRST_LINE, FORM_HEADERS, FORM_DATA, FORM_AFTER_BOUNDARY, FORM_DONE, FORM_FAILED } form_state;

typedef struct form_stream {
    form_callbacks cb;
    form_state state;
    char delim[FORM_MAX_BOUNDARY + 2]; /* "\r\n--BOUNDARY" */
    size_t delim_len;
    char *buf;                         /* first line, headers, or data held back */
    size_t len;
    const char *why;                   /* FORM_FAILED: what was wrong (static text) */
} form_stream;

/* false (out of memory) leaves nothing to free. */
bool form_stream_init(form_stream *fs, const form_callbacks *cb);
/* Feeds the next bytes; false once the body is malformed or a callback
 * stopped it (why says which; a callback's stop leaves why NULL). Bytes
 * after the closing boundary are ignored. */
bool form_stream_feed(form_stream *fs, const char *data, size_t n);
/* After the last byte: true when the closing boundary was seen; else why. */
bool form_stream_finish(form_stream *fs);
void form_stream_free(form_stream *fs);

#endif
