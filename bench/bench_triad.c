/* bench_triad.c: this machine's memory bandwidth, STREAM style (see
 * bench/bench_bandwidth.sh, which builds and runs it).
 *
 *   bench_triad [THREADS] [MB_PER_ARRAY] [REPS]
 *
 * Build: cc -O3 -march=native -pthread bench/bench_triad.c (vectorized loops).
 * triad: a[i] = b[i] + s * c[i] over three arrays of doubles, each far larger
 * than the last-level cache, counted as STREAM counts it (24 bytes per
 * element: two reads and a write; the write-allocate read is not counted);
 * read: the sum of one array (8 bytes per element), the access pattern of a
 * decode step reading weights. Each thread touches its own slice first (so it
 * is local to it) and then runs every repetition between barriers; the best
 * repetition is reported, in GB/s (1e9 bytes). One JSON line per kernel:
 *   {"kernel":"triad","threads":T,"mb_per_array":M,"gb_s":X}
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct slice {
    double *a, *b, *c;
    size_t lo, hi;
    int reps;
    pthread_barrier_t *bar;
    double *times_triad, *times_read; /* per rep, written by thread 0 */
    double sink;
} slice;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    slice *w = arg;
    for (size_t i = w->lo; i < w->hi; i++) {
        w->a[i] = 0.0;
        w->b[i] = 1.0 + (double)(i & 7);
        w->c[i] = 2.0;
    }
    const double s = 3.0;
    double acc = 0;
    for (int r = 0; r < w->reps; r++) {
        pthread_barrier_wait(w->bar);
        double t0 = now_s();
        for (size_t i = w->lo; i < w->hi; i++)
            w->a[i] = w->b[i] + s * w->c[i];
        pthread_barrier_wait(w->bar);
        if (w->times_triad)
            w->times_triad[r] = now_s() - t0;
        pthread_barrier_wait(w->bar);
        t0 = now_s();
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0; /* independent chains */
        size_t i = w->lo;
        for (; i + 8 <= w->hi; i += 8) {
            s0 += w->a[i];
            s1 += w->a[i + 1];
            s2 += w->a[i + 2];
            s3 += w->a[i + 3];
            s4 += w->a[i + 4];
            s5 += w->a[i + 5];
            s6 += w->a[i + 6];
            s7 += w->a[i + 7];
        }
        for (; i < w->hi; i++)
            s0 += w->a[i];
        acc += s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
        pthread_barrier_wait(w->bar);
        if (w->times_read)
            w->times_read[r] = now_s() - t0;
    }
    w->sink = acc;
    return NULL;
}

static double best(const double *t, int n) {
    double b = t[0];
    for (int i = 1; i < n; i++)
        b = t[i] < b ? t[i] : b;
    return b;
}

int main(int argc, char **argv) {
    long threads = argc > 1 ? atol(argv[1]) : sysconf(_SC_NPROCESSORS_ONLN);
    long mb = argc > 2 ? atol(argv[2]) : 256;
    int reps = argc > 3 ? atoi(argv[3]) : 10;
    if (threads < 1 || threads > 1024 || mb < 1 || mb > (1L << 20) || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: bench_triad [THREADS 1..1024] [MB_PER_ARRAY] [REPS]\n");
        return 2;
    }
    size_t n = (size_t)mb * 1024 * 1024 / sizeof(double);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    double *tt = calloc((size_t)reps, sizeof *tt), *tr = calloc((size_t)reps, sizeof *tr);
    slice *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    if (!a || !b || !c || !tt || !tr || !ws || !th) {
        fprintf(stderr, "bench_triad: out of memory for 3 x %ld MB\n", mb);
        return 1;
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    for (long t = 0; t < threads; t++) {
        ws[t] = (slice){.a = a, .b = b, .c = c, .lo = n * (size_t)t / (size_t)threads,
                        .hi = n * (size_t)(t + 1) / (size_t)threads, .reps = reps, .bar = &bar,
                        .times_triad = t == 0 ? tt : NULL, .times_read = t == 0 ? tr : NULL};
        if (t > 0)
            pthread_create(&th[t], NULL, worker, &ws[t]);
    }
    worker(&ws[0]);
    double sink = ws[0].sink;
    for (long t = 1; t < threads; t++) {
        pthread_join(th[t], NULL);
        sink += ws[t].sink;
    }
    double triad = 24.0 * (double)n / best(tt, reps) / 1e9, read = 8.0 * (double)n / best(tr, reps) / 1e9;
    printf("{\"kernel\":\"triad\",\"threads\":%ld,\"mb_per_array\":%ld,\"gb_s\":%.2f}\n", threads, mb, triad);
    printf("{\"kernel\":\"read\",\"threads\":%ld,\"mb_per_array\":%ld,\"gb_s\":%.2f}\n", threads, mb, read);
    if (sink == 12345.678) /* keeps the read loop */
        fprintf(stderr, "!\n");
    pthread_barrier_destroy(&bar);
    free(a);
    free(b);
    free(c);
    free(tt);
    free(tr);
    free(ws);
    free(th);
    return 0;
}
