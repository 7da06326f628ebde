/* fileio.h: whole-file reads with clear errors and a monotonic clock
 * (declared in the public typellm/util.h), and atomic file writes. */
#ifndef TL_UTIL_FILEIO_H
#define TL_UTIL_FILEIO_H

#include <stdio.h>

#include "typellm/util.h"

/* ---- private to the library ---------------------------------------------- */

/* A file written atomically: the bytes go to a temporary file in the same
 * folder (".NAME.XXXXXX"), which tl_atomic_commit flushes, fsyncs and renames
 * over the final name. A crash, Ctrl-C or SIGKILL before the rename leaves the
 * old file (if any) untouched; a process that has the old file mapped keeps
 * its (now unlinked) copy. When the final name is a symbolic link, the file it
 * points to is replaced and the link kept. */
typedef struct tl_atomic_file {
    FILE *f;          /* write here */
    char *tmp_path;   /* the temporary file */
    char *final_path; /* what it becomes */
} tl_atomic_file;
tl_status tl_atomic_open(const char *path, tl_atomic_file *af, tl_error *err);
/* Flush, fsync, rename, fsync the folder; on failure the temporary is removed. */
tl_status tl_atomic_commit(tl_atomic_file *af, tl_error *err);
/* Closes and removes the temporary file (the final name is untouched). Safe on
 * a zeroed or already committed tl_atomic_file. */
void tl_atomic_abort(tl_atomic_file *af);
/* Writes text (len bytes) to path atomically, as tl_atomic_open + commit. */
tl_status tl_write_file_atomic(const char *path, const char *text, size_t len, tl_error *err);
/* True when paths a and b name the same existing file (after following links). */
bool tl_same_file(const char *a, const char *b);

#endif
