/* bench_tokenize.c: tokenizer throughput per fixture vocabulary.
 *
 * Tokenizes $TL_FIXTURES/ref/long.txt (about 4 KB of English prose) N times
 * (default 1000) with every ggml-vocab-*.gguf in $TL_FIXTURES/vocab, no BOS, no
 * special parsing, one thread, and prints tokens per second (by process CPU
 * time, which stays meaningful on a shared machine, and by wall-clock time),
 * input MB per second and the vocabulary load time. Run it through
 * bench_tokenize.sh. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typellm/typellm.h"

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *root = getenv("TL_FIXTURES");
    if (!root)
        root = "../shared/fixtures";
    int reps = argc > 1 ? atoi(argv[1]) : 1000;
    if (reps < 1)
        reps = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/ref/long.txt", root);
    char *text;
    size_t len;
    tl_error err = {0};
    if (tl_read_file(path, 1 << 24, &text, &len, &err) != TL_OK) {
        fprintf(stderr, "bench_tokenize: %s\n", err.msg);
        return 1;
    }
    snprintf(path, sizeof path, "%s/vocab", root);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "bench_tokenize: cannot open %s\n", path);
        return 1;
    }
    char *names[64];
    int n_names = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n_names < 64) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".gguf"))
            names[n_names++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n_names; i++) /* sort by name for a stable table */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    printf("long.txt: %zu bytes, %d repetitions per vocabulary\n", len, reps);
    printf("%-32s %7s %7s %13s %13s %8s  %s\n", "vocab", "load_s", "tokens", "tok/s(cpu)", "tok/s(wall)",
           "MB/s", "pre");
    int rc = 0;
    for (int i = 0; i < n_names; i++) {
        snprintf(path, sizeof path, "%s/vocab/%s", root, names[i]);
        tl_vocab *v;
        double t0 = tl_now_s();
        if (tl_vocab_load_file(path, &v, &err) != TL_OK) {
            fprintf(stderr, "bench_tokenize: %s\n", err.msg);
            rc = 1;
            continue;
        }
        double load_s = tl_now_s() - t0;
        int32_t *ids;
        size_t n = 0;
        tl_vocab_tokenize(v, text, len, false, false, &ids, &n, &err); /* warm-up */
        free(ids);
        t0 = tl_now_s();
        double c0 = cpu_seconds();
        size_t total = 0;
        for (int r = 0; r < reps; r++) {
            if (tl_vocab_tokenize(v, text, len, false, false, &ids, &n, &err) != TL_OK) {
                fprintf(stderr, "bench_tokenize: %s\n", err.msg);
                rc = 1;
                break;
            }
            total += n;
            free(ids);
        }
        double dt = tl_now_s() - t0, dc = cpu_seconds() - c0;
        printf("%-32s %7.3f %7zu %13.0f %13.0f %8.2f  %s\n", names[i], load_s, n, (double)total / dc,
               (double)total / dt, (double)len * reps / dc / 1e6, tl_vocab_pre(v));
        tl_vocab_free(v);
        free(names[i]);
    }
    free(text);
    return rc;
}
