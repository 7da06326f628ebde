/* pool.c: the engine's thread pool. Workers are created once and persist.
 * Each tl_pool_run splits [0, n) into one contiguous slice per thread, chosen
 * only from (n, grain, thread count); slice i is always run as fn(.., i), so
 * per-thread scratch indexed by `thread` and every result are the same
 * whoever executes it.
 *
 * Who executes a slice: worker i claims slice i when it sees the new job; the
 * caller runs slice 0 and then claims any slice whose worker has not started
 * it yet (a worker that is asleep or descheduled on a busy machine would
 * otherwise stall the whole step). A slice is claimed by one compare-and-swap
 * of its generation stamp, so it runs exactly once. A decode step issues
 * hundreds of short runs, so idle workers spin briefly before sleeping on a
 * condition variable; the caller only signals when someone sleeps.
 *
 * tl_pool_run_dynamic keeps all of this but makes a slice a loop: each
 * thread that runs one takes the next unclaimed chunk (one atomic counter)
 * until none is left, so the threads finish together even when one core is
 * slower (a busy or virtual machine). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernels/kernels.h"

/* Spin iterations before a worker sleeps: a few hundred microseconds, longer
 * than the gap between back-to-back matmuls of one forward pass. */
#define POOL_SPIN 20000

struct tl_pool {
    int n_threads;             /* including the caller (thread 0) */
    pthread_t *workers;        /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation;    /* bumped once per run; workers wait for a change */
    atomic_uint *claimed;      /* [n_threads] generation for which slice i was claimed */
    atomic_int remaining;      /* slices 1.. not finished in the current run */
    atomic_int sleepers;       /* workers blocked on `wake` */
    atomic_int stop;
    /* the current job (written before generation is bumped; stable until every
     * slice of it has finished, which the caller waits for) */
    tl_pool_fn fn;
    void *arg;
    int64_t n, grain;
    int dynamic;               /* chunks handed out through next_chunk */
    atomic_llong next_chunk;
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

/* Slice `thread` of T: chunks [nc*thread/T, nc*(thread+1)/T) of grain items
 * (the last chunk may be short). */
static void run_slice(tl_pool *p, int thread) {
    int64_t grain = p->grain;
    int64_t nc = (p->n + grain - 1) / grain;
    if (p->dynamic) {
        for (int64_t c; (c = atomic_fetch_add_explicit(&p->next_chunk, 1, memory_order_relaxed)) < nc;)
            p->fn(p->arg, c * grain, c * grain + grain < p->n ? c * grain + grain : p->n, thread);
        return;
    }
    int64_t T = p->n_threads;
    int64_t c0 = nc * thread / T, c1 = nc * (thread + 1) / T;
    int64_t begin = c0 * grain, end = c1 * grain;
    if (end > p->n) end = p->n;
    if (begin < end) p->fn(p->arg, begin, end, thread);
}

/* Claims slice i for run g; true if this caller won it. Stamps only move
 * forward (compared as serial numbers, so wrap-around is harmless): every
 * slice of a finished run carries a stamp >= that run's, so a worker that
 * woke up late, still holding an old g, can never claim anything. */
static int claim(tl_pool *p, int i, unsigned g) {
    unsigned old = atomic_load(&p->claimed[i]);
    while ((int)(g - old) > 0) {
        if (atomic_compare_exchange_weak(&p->claimed[i], &old, g)) return 1;
    }
    return 0;
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
            if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
            if (++spins < POOL_SPIN) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop)) {
                pthread_cond_wait(&p->wake, &p->mu);
            }
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        /* The job fields are those of run g only while run g is unfinished; a
         * successful claim keeps it unfinished until this slice is done. */
        if (claim(p, wa.thread, g)) {
            run_slice(p, wa.thread);
            atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_release);
        }
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
    p->claimed = calloc((size_t)n_threads, sizeof *p->claimed);
    if (!p->claimed) {
        free(p);
        return NULL;
    }
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->next_chunk, 0);
    for (int i = 0; i < n_threads; i++) atomic_init(&p->claimed[i], 0);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            p->n_threads = 1; /* run on the caller alone */
            return p;
        }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (wa) {
                wa->pool = p;
                wa->thread = i;
            }
            if (!wa || pthread_create(&p->workers[i - 1], NULL, worker_main, wa) != 0) {
                free(wa);
                p->n_threads = i; /* run with the threads we got */
                break;
            }
        }
    }
    return p;
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
    free(p->claimed);
    free(p);
}

int tl_pool_size(const tl_pool *p) { return p ? p->n_threads : 1; }

static void pool_run(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg, int dynamic) {
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
    p->dynamic = dynamic;
    atomic_store_explicit(&p->next_chunk, 0, memory_order_relaxed);
    atomic_store(&p->remaining, p->n_threads - 1);
    unsigned g = atomic_fetch_add(&p->generation, 1) + 1; /* publishes the job */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    run_slice(p, 0);
    /* take over the slices no worker has started */
    for (int i = 1; i < p->n_threads; i++) {
        if (claim(p, i, g)) {
            run_slice(p, i);
            atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_release);
        }
    }
    int spins = 0;
    while (atomic_load_explicit(&p->remaining, memory_order_acquire) != 0) {
        /* a worker is running a slice; on an oversubscribed machine it may be descheduled */
        if (++spins < POOL_SPIN) cpu_relax();
        else sched_yield();
    }
}

void tl_pool_run(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg) {
    pool_run(p, n, grain, fn, arg, 0);
}

void tl_pool_run_dynamic(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg) {
    pool_run(p, n, grain, fn, arg, 1);
}
