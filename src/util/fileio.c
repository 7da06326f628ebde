/* fileio.c: see fileio.h. */
#define _GNU_SOURCE
#include "util/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"

tl_status tl_read_file(const char *path, size_t max_bytes, char **data, size_t *len, tl_error *err) {
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        if (!is_stdin) fclose(f);
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max_bytes + 1) {
                free(buf);
                if (!is_stdin) fclose(f);
                return tl_error_set(err, TL_ERR_LIMIT, "%s: larger than the limit of %zu bytes", path, max_bytes);
            }
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                if (!is_stdin) fclose(f);
                return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    bool failed = ferror(f);
    if (!is_stdin) fclose(f);
    if (failed) {
        free(buf);
        return tl_error_set(err, TL_ERR_IO, "%s: read error", path);
    }
    if (n > max_bytes) {
        free(buf);
        return tl_error_set(err, TL_ERR_LIMIT, "%s: larger than the limit of %zu bytes", path, max_bytes);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return TL_OK;
}

uint64_t tl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double tl_now_s(void) { return (double)tl_now_ns() * 1e-9; }
