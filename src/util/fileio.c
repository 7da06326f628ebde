/* fileio.c: see fileio.h. */
#define _GNU_SOURCE
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"

tl_status tl_read_file(const char *path, size_t max_bytes, char **data, size_t *len, tl_error *err) {
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return tl_error_set(err, TL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (!is_stdin && fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(f);
        return tl_error_set(err, TL_ERR_IO, "%s: is a directory, not a file", path);
    }
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
    int read_errno = errno;
    if (!is_stdin) fclose(f);
    if (failed) {
        free(buf);
        return tl_error_set(err, TL_ERR_IO, "%s: cannot read: %s", path, strerror(read_errno));
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

tl_status tl_atomic_open(const char *path, tl_atomic_file *af, tl_error *err) {
    memset(af, 0, sizeof af[0]);
    /* Replace what a symbolic link points to, not the link. */
    char *final_path = NULL;
    struct stat lsb;
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode))
        final_path = realpath(path, NULL);
    if (!final_path)
        final_path = strdup(path);
    char *dir_copy = final_path ? strdup(final_path) : NULL, *base_copy = final_path ? strdup(final_path) : NULL;
    char *tmp = NULL;
    if (dir_copy && base_copy) {
        const char *dir = dirname(dir_copy), *base = basename(base_copy);
        size_t n = strlen(dir) + strlen(base) + 16;
        if ((tmp = malloc(n)))
            snprintf(tmp, n, "%s/.%s.XXXXXX", dir, base);
    }
    free(dir_copy);
    free(base_copy);
    if (!tmp) {
        free(final_path);
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tl_status st = tl_error_set(err, TL_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                                    strerror(errno));
        free(tmp);
        free(final_path);
        return st;
    }
    /* mkstemp makes 0600; a model file is as readable as any new file */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(tmp);
        free(tmp);
        free(final_path);
        return tl_error_set(err, TL_ERR_NOMEM, "%s: out of memory", path);
    }
    af->tmp_path = tmp;
    af->final_path = final_path;
    return TL_OK;
}

tl_status tl_write_file_atomic(const char *path, const char *text, size_t len, tl_error *err) {
    tl_atomic_file af;
    tl_status st = tl_atomic_open(path, &af, err);
    if (st)
        return st;
    if (len && fwrite(text, 1, len, af.f) != len) {
        tl_atomic_abort(&af);
        return tl_error_set(err, TL_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    return tl_atomic_commit(&af, err);
}

tl_status tl_atomic_commit(tl_atomic_file *af, tl_error *err) {
    tl_status st = TL_OK;
    if (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0)
        st = tl_error_set(err, TL_ERR_IO, "%s: write failed: %s", af->final_path, strerror(errno));
    if (fclose(af->f) != 0 && !st)
        st = tl_error_set(err, TL_ERR_IO, "%s: write failed: %s", af->final_path, strerror(errno));
    af->f = NULL;
    if (!st && rename(af->tmp_path, af->final_path) != 0)
        st = tl_error_set(err, TL_ERR_IO, "cannot rename %s to %s: %s", af->tmp_path, af->final_path, strerror(errno));
    if (st) {
        tl_atomic_abort(af);
        return st;
    }
    /* the rename itself is durable once the folder is synced */
    char *dir_copy = strdup(af->final_path);
    if (dir_copy) {
        int dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir_copy);
    }
    free(af->tmp_path);
    free(af->final_path);
    af->tmp_path = af->final_path = NULL;
    return TL_OK;
}

void tl_atomic_abort(tl_atomic_file *af) {
    if (af->f)
        fclose(af->f);
    if (af->tmp_path)
        unlink(af->tmp_path);
    free(af->tmp_path);
    free(af->final_path);
    memset(af, 0, sizeof af[0]);
}

bool tl_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

uint64_t tl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double tl_now_s(void) { return (double)tl_now_ns() * 1e-9; }
