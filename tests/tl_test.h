/* tl_test.h: the few helpers every C test uses. A test is a program that
 * returns 0 when all its checks pass; CHECK prints file:line and the failed
 * expression and counts the failure (the test goes on, so one run reports
 * every failing check). Fixture paths come from TL_FIXTURES (set by CTest). */
#ifndef TL_TEST_H
#define TL_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_test_failures = 0;
static int tl_test_checks = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        tl_test_checks++;                                                             \
        if (!(cond)) {                                                                \
            tl_test_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECKF(cond, ...)                                                             \
    do {                                                                              \
        tl_test_checks++;                                                             \
        if (!(cond)) {                                                                \
            tl_test_failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

/* Builds "$TL_FIXTURES/rel" into a static buffer (one at a time). */
static inline const char *tl_fixture(const char *rel) {
    static char buf[4096];
    const char *root = getenv("TL_FIXTURES");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : "../shared/fixtures", rel);
    return buf;
}

#define TEST_DONE()                                                                   \
    (fprintf(stderr, "%d checks, %d failed\n", tl_test_checks, tl_test_failures),     \
     tl_test_failures ? 1 : 0)

#endif
