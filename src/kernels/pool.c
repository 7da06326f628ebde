/* pool.c: the engine's thread pool. Workers are created once and persist;
 * each tl_pool_run hands every thread one contiguous slice of [0, n) chosen
 * only from (n, grain, thread count), so a given call always gives the same
 * thread the same items. A decode step issues hundreds of short runs, so idle
 * workers spin briefly on a generation counter before sleeping on a condition
 * variable, and the caller spins (it has work of its own first) for the rest. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels/kernels.h"

/* Spin iterations before a worker sleeps: a few tens of microseconds, longer
 * than the gap between back-to-back matmuls of one forward pass. */
#define POOL_SPIN 20000

struct tl_pool {
    int n_threads;             /* including the caller (thread 0) */
    pthread_t *workers;        /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation;    /* bumped once per run; workers wait for a change */
    atomic_int pending;        /* workers that have not finished the current run */
    atomic_int stop;
    /* the current job (written before generation is bumped) */
    tl_pool_fn fn;
    void *arg;
    int64_t n, grain;
};

typedef struct {
    tl_pool *pool;
    int thread;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Thread `thread` of T handles chunks [nc*thread/T, nc*(thread+1)/T) of grain
 * items each (the last chunk may be short). */
static void run_slice(tl_pool *p, int thread) {
    int64_t grain = p->grain;
    int64_t nc = (p->n + grain - 1) / grain;
    int64_t T = p->n_threads;
    int64_t c0 = nc * thread / T, c1 = nc * (thread + 1) / T;
    int64_t begin = c0 * grain, end = c1 * grain;
    if (end > p->n) end = p->n;
    if (begin < end) p->fn(p->arg, begin, end, thread);
}

static void *worker_main(void *v) {
    worker_arg wa = *(worker_arg *)v;
    free(v);
    tl_pool *p = wa.pool;
    unsigned seen = 0; /* no run can start before tl_pool_new returns */
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen) {
            if (++spins < POOL_SPIN) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop)) {
                pthread_cond_wait(&p->wake, &p->mu);
            }
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        run_slice(p, wa.thread);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
    }
}

tl_pool *tl_pool_new(int n_threads) {
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    if (n_threads > 256) n_threads = 256;
    tl_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) goto fail;
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (!wa) goto fail_threads;
            wa->pool = p;
            wa->thread = i;
            if (pthread_create(&p->workers[i - 1], NULL, worker_main, wa) != 0) {
                free(wa);
            fail_threads:
                /* run with the threads we got: shrink the pool */
                p->n_threads = i;
                break;
            }
        }
    }
    return p;
fail:
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p);
    return NULL;
}

void tl_pool_free(tl_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->workers[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->workers);
    free(p);
}

int tl_pool_size(const tl_pool *p) { return p ? p->n_threads : 1; }

void tl_pool_run(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!p || p->n_threads == 1 || n <= grain) {
        fn(arg, 0, n, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->grain = grain;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_slice(p, 0);
    int spins = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        /* on an oversubscribed machine a worker may be descheduled: yield */
        if (++spins < POOL_SPIN) cpu_relax();
        else sched_yield();
    }
}
