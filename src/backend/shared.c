/* shared.c: the shared batching backend (tl_backend_shared_new): one thread
 * owns the model session; any number of threads call through it.
 *
 * Calling threads enqueue evaluation jobs and block; the owner thread takes
 * every job waiting at that moment and runs their sequences as one
 * tl_session_eval_batch, so concurrent calls (tl_decide, generation steps)
 * share forward passes, and a context common to several of them is computed
 * once and then found in the one prefix cache they all share. Results are
 * bit-identical to each call run alone (the engine's batch independence). A
 * job whose caller was cancelled or whose deadline has passed is dropped
 * while still queued (past its deadline only if none of its context chunks
 * ran yet); a running job always completes (its buffers belong to the
 * waiting thread).
 *
 * Clients (tl_backend_shared_client) are light backends over the same owner
 * that carry one caller's limits (deadline, cancellation); the shared backend
 * itself is a client without limits.
 *
 * Chunked prefill: a step computes about max_step_tokens uncached tokens
 * (default 512, one forward pass). Jobs join the step in queue order while
 * they fit; a job whose uncached context (the prefix its sequences share) is
 * longer than what is left of the step contributes a chunk of it instead: the
 * context's next tokens brought into the cache with no output, the job staying
 * at its place in the queue for the next step. So a long new context is
 * computed over several steps while the others' short steps (generation,
 * decisions over cached contexts) keep running beside it, and jobs finish in
 * arrival order instead of all at the end of one huge step. Results are
 * unchanged: a chunk is a prefix computed earlier, and a cached prefix gives
 * the same bits (if it was evicted meanwhile it is recomputed).
 *
 * Gathering: a step takes the jobs waiting when it starts, so callers that
 * return while a step runs would form a second cohort, the two alternating
 * in half-full steps. After a light step (under 128 computed tokens: bound
 * by reading the weights) the owner waits a moment (a quarter of that step,
 * at most 50 ms) for its callers before starting the next, which keeps them
 * in one cohort (results unchanged: batching is bit-identical).
 *
 * Usage accounting: the engine reports usage per batch. A job alone in its
 * batch gets that exactly; jobs sharing a batch get shares proportional to
 * the tokens they presented (cached/computed split by the same ratio). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include "backend/backend.h"
#include "util/error.h"
#include "util/fileio.h"

enum {
    DEFAULT_MAX_BATCH_SEQS = 256, /* sequences per batched step when params say 0 */
    MAX_GROUP_JOBS = 256,         /* jobs merged into one step */
    DEFAULT_STEP_TOKENS = 512,    /* uncached tokens per step when params say 0 */
    MIN_CHUNK = 64                /* a context chunk is at least this long (else the job waits) */
};

/* The gather window: before a step, callers whose calls ended with the last
 * step get up to GATHER_FRACTION of that step's time (at most GATHER_MAX_S)
 * to call again and join it. */
#define GATHER_FRACTION 0.25
#define GATHER_MAX_S 0.05
/* Only after a light step: one that computed fewer tokens than this is bound
 * by reading the weights (generation, scoring over cached contexts), so more
 * callers in it come almost free; a heavier step is bound by arithmetic and
 * gains nothing from waiting. */
#define GATHER_LIGHT_TOKENS 128

typedef enum sched_job_kind {
    SCHED_EVAL,      /* seqs[0..k): next-position logits / candidate logprobs */
    SCHED_EVAL_LAST, /* seqs[0]: logits at the last k_last positions (prompt logprobs) */
    SCHED_FLUSH      /* drop the prefix cache */
} sched_job_kind;

typedef struct sched_job {
    sched_job_kind kind;
    tl_seq *seqs;
    size_t k;
    size_t k_last;      /* SCHED_EVAL_LAST */
    float *logits_last; /* SCHED_EVAL_LAST out */
    tl_usage usage;
    tl_status status;
    tl_error err;
    bool done;
    bool running;
    int priority;       /* TL_PRIORITY_* of the caller */
    int32_t common;     /* tokens all seqs share (-1: not measured yet) */
    tl_seq chunk;       /* this step's context chunk (chunk.n > 0: only that runs) */
    int64_t chunk_computed; /* tokens computed by chunks so far */
    int64_t est;        /* this step's uncached tokens as planned (-1: not planned) */
    struct sched_job *next;
} sched_job;

/* The owner thread and its queue (one per tl_backend_shared_new). */
typedef struct tl_scheduler {
    tl_session *session;    /* owned */
    int max_batch_seqs;
    int step_tokens;         /* uncached tokens per step; 0: no chunking */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the scheduler waits for jobs */
    pthread_cond_t done_cv;  /* request threads wait for their job */
    sched_job *head, *tail;
    bool stopping;
    uint64_t batches_run;
    uint64_t seqs_run;
    size_t running_seqs;     /* of the step in progress */
    double busy_s;
    /* Calls that ended with the last step, less the calls submitted since:
     * their callers (a generation's next token, a worker's next record)
     * are about to call again. */
    size_t returning;
    double last_step_s;
    void (*on_step)(void *ctx, const tl_shared_step *step);
    void *on_step_ctx;
} tl_scheduler;

/* CLOCK_REALTIME now + seconds (for pthread_cond_timedwait). */
static struct timespec realtime_after(double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return ts;
}

/* The sequences a job presents in this step: its chunk, or all of them. */
static const tl_seq *job_seqs(const sched_job *j, size_t *k) {
    *k = j->chunk.n ? 1 : j->k;
    return j->chunk.n ? &j->chunk : j->seqs;
}

static int64_t step_tokens_of(const sched_job *j) {
    size_t k;
    const tl_seq *q = job_seqs(j, &k);
    int64_t n = 0;
    for (size_t i = 0; i < k; i++)
        n += (int64_t)q[i].n;
    return n;
}

/* Adds a step's usage to a job's: a chunk counts only its computed tokens and
 * passes, and the final step's cached tokens exclude what the chunks computed,
 * so the totals read as if the job had run in one step. */
static void job_add_usage(sched_job *j, const tl_usage *u) {
    if (j->chunk.n) {
        j->usage.computed_tokens += u->computed_tokens;
        j->usage.forward_passes += u->forward_passes;
        j->chunk_computed += u->computed_tokens;
        return;
    }
    tl_usage v = *u;
    int64_t back = j->chunk_computed < v.cached_tokens ? j->chunk_computed : v.cached_tokens;
    v.cached_tokens -= back;
    tl_usage_add(&j->usage, &v);
}

/* Splits batch usage u over jobs: computed tokens by what each was planned to
 * compute (or, unplanned, by the tokens each presented), cached tokens by the
 * rest of what each presented. */
static void apportion(sched_job **jobs, size_t nj, const tl_usage *u) {
    if (nj == 1) {
        job_add_usage(jobs[0], u);
        return;
    }
    bool planned = true;
    int64_t total = 0, total_est = 0;
    for (size_t i = 0; i < nj; i++) {
        int64_t t = step_tokens_of(jobs[i]);
        planned = planned && jobs[i]->est >= 0 && jobs[i]->est <= t;
        total += t;
        total_est += jobs[i]->est;
    }
    int64_t cached_left = u->cached_tokens, computed_left = u->computed_tokens;
    for (size_t i = 0; i < nj; i++) {
        int64_t t = step_tokens_of(jobs[i]);
        int64_t e = planned ? jobs[i]->est : t, te = planned ? total_est : total;
        int64_t r = planned ? t - e : t, tr = planned ? total - total_est : total;
        tl_usage ju = {.prompt_tokens = t, .forward_passes = u->forward_passes};
        if (i + 1 == nj) {
            ju.cached_tokens = cached_left;
            ju.computed_tokens = computed_left;
        } else {
            ju.computed_tokens = te ? (int64_t)((double)u->computed_tokens * (double)e / (double)te + 0.5) : 0;
            ju.cached_tokens = tr ? (int64_t)((double)u->cached_tokens * (double)r / (double)tr + 0.5) : 0;
            if (ju.cached_tokens > t) ju.cached_tokens = t;
            cached_left -= ju.cached_tokens;
            computed_left -= ju.computed_tokens;
        }
        if (ju.cached_tokens < 0) ju.cached_tokens = 0;
        if (ju.computed_tokens < 0) ju.computed_tokens = 0;
        job_add_usage(jobs[i], &ju);
    }
}

static void run_eval_group(tl_scheduler *s, sched_job **jobs, size_t nj) {
    size_t total = 0, k;
    for (size_t i = 0; i < nj; i++) {
        job_seqs(jobs[i], &k);
        total += k;
    }
    tl_seq *all = malloc((total ? total : 1) * sizeof *all);
    if (!all) {
        for (size_t i = 0; i < nj; i++)
            jobs[i]->status = tl_error_set(&jobs[i]->err, TL_ERR_NOMEM, "shared backend: out of memory");
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < nj; i++) {
        const tl_seq *q = job_seqs(jobs[i], &k);
        memcpy(all + at, q, k * sizeof *all);
        at += k;
    }
    tl_usage u = {0};
    tl_error err = {0};
    tl_status st = tl_session_eval_batch(s->session, all, total, &u, &err);
    free(all);
    if (st == TL_OK) {
        apportion(jobs, nj, &u);
        for (size_t i = 0; i < nj; i++)
            jobs[i]->status = TL_OK;
        return;
    }
    if (nj == 1) {
        jobs[0]->status = st;
        jobs[0]->err = err;
        return;
    }
    /* One job's bad sequence (e.g. too long) must not fail the others: retry
     * alone (a chunk that fails fails its job: the whole would too). */
    for (size_t i = 0; i < nj; i++) {
        tl_usage ju = {0};
        const tl_seq *q = job_seqs(jobs[i], &k);
        jobs[i]->status = tl_session_eval_batch(s->session, (tl_seq *)q, k, &ju, &jobs[i]->err);
        if (jobs[i]->status == TL_OK)
            job_add_usage(jobs[i], &ju);
    }
}

/* Tokens every sequence of j shares (all of a lone sequence). */
static int32_t job_common(const sched_job *j) {
    size_t n = j->seqs[0].n;
    for (size_t i = 1; i < j->k && n; i++) {
        size_t m = j->seqs[i].n < n ? j->seqs[i].n : n, p = 0;
        while (p < m && j->seqs[i].ids[p] == j->seqs[0].ids[p])
            p++;
        n = p;
    }
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

/* Decides j's part in a step with *left uncached tokens still free: true to
 * take it, false to leave it queued. chunks false: whole if it fits in *left
 * less reserve, or if first (the oldest job in line) and its context is too
 * short to chunk (so a call with many branches is not overtaken forever);
 * chunks true: a chunk of its context (in j->chunk) or, when first (nothing
 * is in the step yet), whole. */
static bool plan_job(tl_scheduler *s, sched_job *j, int64_t *left, bool chunks, int64_t reserve, bool first) {
    j->chunk.n = 0;
    j->est = -1;
    if (!s->step_tokens)
        return true;
    if (j->common < 0)
        j->common = job_common(j);
    /* the shared context's uncached part, then each sequence's own tail */
    int32_t common = j->common;
    size_t c = common ? tl_session_cached_prefix(s->session, j->seqs[0].ids, (size_t)common) : 0;
    int64_t ctx = (int64_t)common - (int64_t)c, work = ctx;
    for (size_t i = 0; i < j->k; i++) /* a fully cached sequence recomputes its last token */
        work += j->seqs[i].n > (size_t)common ? (int64_t)(j->seqs[i].n - (size_t)common) : ctx == 0;
    if (!chunks) {
        if (work > *left - reserve && !(first && ctx < 2 * MIN_CHUNK))
            return false;
        *left -= work;
        j->est = work;
        return true;
    }
    /* a chunk of the context, leaving at least MIN_CHUNK (and the outputs) for last */
    int64_t take = *left < ctx - MIN_CHUNK ? *left : ctx - MIN_CHUNK;
    if (take < MIN_CHUNK) {
        if (!first)
            return false;
        *left -= work;
        j->est = work;
        return true; /* nothing worth chunking: whole */
    }
    j->chunk = (tl_seq){.ids = j->seqs[0].ids, .n = c + (size_t)take};
    *left -= take;
    j->est = take;
    return true;
}

/* Removes finished jobs from the queue (under s->mu). */
static void unlink_done(tl_scheduler *s) {
    sched_job **pp = &s->head;
    s->tail = NULL;
    while (*pp) {
        if ((*pp)->done) {
            *pp = (*pp)->next;
        } else {
            s->tail = *pp;
            pp = &(*pp)->next;
        }
    }
}

static void *scheduler_main(void *arg) {
    tl_scheduler *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->work_cv, &s->mu);
        /* Callers whose calls ended with the last step mostly call again
         * within a moment (CPU work between two tokens of a generation):
         * wait a little for them, so that the callers stay one cohort in
         * full steps instead of splitting into two that alternate in
         * half-full ones (each step's weights read for half the callers).
         * Those that do not come back in time are not waited for again. */
        if (s->returning && s->last_step_s > 0) {
            double wait = GATHER_FRACTION * s->last_step_s < GATHER_MAX_S ? GATHER_FRACTION * s->last_step_s
                                                                           : GATHER_MAX_S;
            double until = tl_now_s() + wait;
            struct timespec ts = realtime_after(wait);
            while (s->returning && !s->stopping && tl_now_s() < until)
                pthread_cond_timedwait(&s->work_cv, &s->mu, &ts);
            s->returning = 0;
        }
        if (s->stopping)
            break;
        /* Take the waiting EVAL jobs of the most urgent class waiting (up
         * to the batch cap and the step's token budget), or one other job
         * when it is first in line. */
        sched_job *group[MAX_GROUP_JOBS];
        size_t ng = 0, seqs = 0;
        sched_job *first = s->head;
        if (first->kind != SCHED_EVAL) {
            group[ng++] = first;
        } else {
            int cls = TL_PRIORITY_BATCH;
            for (sched_job *j = s->head; j; j = j->next)
                if (j->kind == SCHED_EVAL && j->priority < cls)
                    cls = j->priority;
            /* Jobs stay queued until done (a chunked one keeps its place).
             * First every job that fits whole, in queue order (generation
             * steps, cached contexts), keeping room for a chunk when some job
             * does not fit; then chunks of the others' contexts, in queue
             * order, with what is left. The first job in line always gets in,
             * whole or as a chunk. */
            int64_t left = s->step_tokens, reserve = s->step_tokens / 4 > MIN_CHUNK ? s->step_tokens / 4 : MIN_CHUNK;
            bool waiting = false, oldest = true;
            for (int pass = 0; pass < 2; pass++) {
                for (sched_job *j = s->head; j && ng < MAX_GROUP_JOBS; j = j->next) {
                    if (j->kind != SCHED_EVAL || j->priority > cls || j->running ||
                        (ng > 0 && seqs + j->k > (size_t)s->max_batch_seqs))
                        continue;
                    if (s->step_tokens && ng > 0 && left < (pass ? MIN_CHUNK : 1))
                        break;
                    bool lead = pass ? ng == 0 : oldest;
                    oldest = false;
                    if (!plan_job(s, j, &left, pass, waiting ? reserve : 0, lead)) {
                        waiting = true;
                        continue;
                    }
                    j->running = true; /* picked (set again for the step below) */
                    group[ng++] = j;
                    seqs += j->chunk.n ? 1 : j->k;
                }
                if (!s->step_tokens)
                    break;
            }
        }
        size_t nseqs = 0, nbatch = 0;
        tl_usage before[MAX_GROUP_JOBS]; /* usage so far (a chunked job's accumulates) */
        for (size_t i = 0; i < ng; i++) {
            before[i] = group[i]->usage;
            group[i]->running = true;
            nseqs += group[i]->chunk.n ? 1 : group[i]->k;
            nbatch += group[i]->priority != TL_PRIORITY_INTERACTIVE;
        }
        s->running_seqs = nseqs;
        pthread_mutex_unlock(&s->mu);

        double t0 = tl_now_s();
        if (group[0]->kind == SCHED_EVAL) {
            run_eval_group(s, group, ng);
        } else if (group[0]->kind == SCHED_EVAL_LAST) {
            sched_job *j = group[0];
            j->status = tl_session_eval_last(s->session, j->seqs[0].ids, j->seqs[0].n, j->k_last, j->logits_last,
                                             &j->usage, &j->err);
        } else {
            tl_session_flush(s->session);
            group[0]->status = TL_OK;
        }

        double dt = tl_now_s() - t0;
        tl_shared_step st = {.jobs = ng, .seqs = nseqs, .batch_jobs = nbatch, .seconds = dt, .ok = true};
        for (size_t i = 0; i < ng; i++) {
            const tl_usage *a = &group[i]->usage, *b = &before[i];
            tl_usage d = {a->prompt_tokens - b->prompt_tokens, a->cached_tokens - b->cached_tokens,
                          a->computed_tokens - b->computed_tokens, a->forward_passes - b->forward_passes,
                          a->output_tokens - b->output_tokens};
            tl_usage_add(&st.usage, &d);
            st.ok = st.ok && group[i]->status == TL_OK;
        }
        if (s->on_step && group[0]->kind != SCHED_FLUSH) {
            st.cache_bytes = tl_session_cache_bytes(s->session);
            st.cache_budget = tl_session_cache_budget(s->session);
            s->on_step(s->on_step_ctx, &st);
        }

        pthread_mutex_lock(&s->mu);
        s->batches_run++;
        s->seqs_run += nseqs;
        s->running_seqs = 0;
        s->busy_s += dt;
        /* only a light step (bound by reading the weights) is worth gathering for */
        s->last_step_s = st.usage.computed_tokens < GATHER_LIGHT_TOKENS ? dt : 0;
        s->returning = 0;
        for (size_t i = 0; i < ng; i++) {
            group[i]->running = false;
            /* a chunk done: the job waits at its place for the next step */
            if (group[i]->kind == SCHED_EVAL && group[i]->chunk.n && group[i]->status == TL_OK)
                continue;
            group[i]->done = true;
            s->returning += group[i]->kind == SCHED_EVAL;
        }
        unlink_done(s);
        pthread_cond_broadcast(&s->done_cv);
    }
    /* Stopping: whatever is still queued is cancelled. */
    for (sched_job *j = s->head; j; j = j->next) {
        j->status = tl_error_set(&j->err, TL_ERR_CANCELLED, "shared backend: shutting down");
        j->done = true;
    }
    s->head = s->tail = NULL;
    pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static tl_status scheduler_new(tl_session *session, const tl_shared_params *params, tl_scheduler **out,
                               tl_error *err) {
    int max_batch_seqs = params->max_batch_seqs;
    tl_scheduler *s = calloc(1, sizeof *s);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "shared backend: out of memory");
    s->session = session;
    s->max_batch_seqs = max_batch_seqs > 0 ? max_batch_seqs : DEFAULT_MAX_BATCH_SEQS;
    s->step_tokens = params->max_step_tokens > 0 ? params->max_step_tokens
                     : params->max_step_tokens < 0 ? 0 : DEFAULT_STEP_TOKENS;
    s->on_step = params->on_step;
    s->on_step_ctx = params->on_step_ctx;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    if (pthread_create(&s->thread, NULL, scheduler_main, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        free(s);
        return tl_error_set(err, TL_ERR_INTERNAL, "shared backend: cannot start its thread");
    }
    *out = s;
    return TL_OK;
}

static void scheduler_free(tl_scheduler *s) {
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    free(s);
}


/* Enqueues j and waits for it; handles deadline and client departure. */
static tl_status submit_and_wait(tl_scheduler *s, sched_job *j, const tl_call_limits *w, tl_error *err) {
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return tl_error_set(err, TL_ERR_CANCELLED, "shared backend: shutting down");
    }
    j->next = NULL;
    j->priority = w ? w->priority : TL_PRIORITY_INTERACTIVE;
    j->common = -1;
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    if (s->returning)
        s->returning--;
    pthread_cond_signal(&s->work_cv);
    tl_status abandon = TL_OK;
    while (!j->done) {
        struct timespec ts = realtime_after(0.1); /* re-check cancellation every 100 ms */
        pthread_cond_timedwait(&s->done_cv, &s->mu, &ts);
        if (j->done || j->running)
            continue;
        /* a job whose context chunks have started runs to the end (its
         * computation is under way, and it is next in line); a caller gone
         * still drops it */
        if (w && w->deadline_s > 0 && tl_now_s() > w->deadline_s && !j->chunk_computed)
            abandon = TL_ERR_TIMEOUT;
        else if (w && w->cancelled) {
            pthread_mutex_unlock(&s->mu);
            bool gone = w->cancelled(w->ctx);
            pthread_mutex_lock(&s->mu);
            if (gone && !j->done && !j->running)
                abandon = TL_ERR_CANCELLED;
        }
        if (abandon != TL_OK) {
            /* Still queued: unlink it. */
            sched_job **pp = &s->head;
            while (*pp && *pp != j)
                pp = &(*pp)->next;
            if (*pp)
                *pp = j->next;
            s->tail = NULL;
            for (sched_job *q = s->head; q; q = q->next)
                s->tail = q;
            pthread_mutex_unlock(&s->mu);
            return tl_error_set(err, abandon, abandon == TL_ERR_TIMEOUT ? "timed out waiting for the model"
                                                                       : "cancelled while waiting for the model");
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (j->status != TL_OK && err)
        *err = j->err;
    return j->status;
}

static tl_status scheduler_eval(tl_scheduler *s, tl_seq *seqs, size_t k, const tl_call_limits *w, tl_usage *usage,
                                tl_error *err) {
    if (k == 0)
        return TL_OK;
    sched_job j;
    memset(&j, 0, sizeof j);
    j.kind = SCHED_EVAL;
    j.seqs = seqs;
    j.k = k;
    tl_status st = submit_and_wait(s, &j, w, err);
    if (st == TL_OK)
        tl_usage_add(usage, &j.usage);
    return st;
}

static tl_status scheduler_eval_last(tl_scheduler *s, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                     const tl_call_limits *w, tl_usage *usage, tl_error *err) {
    tl_seq seq;
    memset(&seq, 0, sizeof seq);
    seq.ids = ids;
    seq.n = n;
    sched_job j;
    memset(&j, 0, sizeof j);
    j.kind = SCHED_EVAL_LAST;
    j.seqs = &seq;
    j.k = 1;
    j.k_last = k_last;
    j.logits_last = logits;
    tl_status st = submit_and_wait(s, &j, w, err);
    if (st == TL_OK)
        tl_usage_add(usage, &j.usage);
    return st;
}

static tl_status scheduler_flush(tl_scheduler *s, tl_error *err) {
    sched_job j;
    memset(&j, 0, sizeof j);
    j.kind = SCHED_FLUSH;
    return submit_and_wait(s, &j, NULL, err);
}

/* ---- the backends: the shared one and its clients ------------------------------ */

typedef struct shared_impl {
    tl_scheduler *sched;   /* owned by the shared backend; borrowed by clients */
    tl_call_limits limits; /* this client's (none for the shared backend itself) */
    bool owner;            /* the backend tl_backend_shared_new made */
} shared_impl;

static tl_scheduler *sched_of(tl_backend *b) { return ((shared_impl *)b->impl)->sched; }
static const tl_call_limits *limits_of(tl_backend *b) { return &((shared_impl *)b->impl)->limits; }

static void shared_free(tl_backend *b) {
    shared_impl *impl = b->impl;
    if (impl && impl->owner) {
        tl_session *session = impl->sched->session;
        scheduler_free(impl->sched);
        tl_session_free(session);
    }
    free(impl);
    free(b);
}

/* Tokenizing needs no session: the calling thread does it (the vocabulary is read-only). */
static tl_status shared_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                                 int32_t **ids, size_t *n, tl_error *err) {
    return tl_vocab_tokenize(b->vocab, text, len, add_special, parse_special, ids, n, err);
}

/* The same bytes as the local backend (SPM's leading space undone). */
static tl_status shared_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    return tl_vocab_detokenize(b->vocab, ids, n, true, true, out, err);
}

static tl_status shared_eval(tl_backend *b, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err) {
    return scheduler_eval(sched_of(b), seqs, k, limits_of(b), usage, err);
}

static tl_status shared_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    tl_seq *seqs = tl_score_reqs_to_seqs(reqs, k, err);
    if (!seqs)
        return TL_ERR_NOMEM;
    tl_status st = shared_eval(b, seqs, k, usage, err);
    free(seqs);
    return st;
}

static tl_status shared_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                    tl_error *err) {
    tl_seq seq = {.ids = ids, .n = n, .logits = logits};
    return shared_eval(b, &seq, 1, usage, err);
}

static tl_status shared_eval_last(tl_backend *b, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                  tl_usage *usage, tl_error *err) {
    return scheduler_eval_last(sched_of(b), ids, n, k_last, logits, limits_of(b), usage, err);
}

static tl_status shared_flush(tl_backend *b, tl_error *err) { return scheduler_flush(sched_of(b), err); }

static const tl_backend_ops shared_ops = {
    .kind = "shared",
    .free = shared_free,
    .tokenize = shared_tokenize,
    .detokenize = shared_detokenize,
    .score = shared_score,
    .next_logits = shared_next_logits,
    .generate_regex = NULL,
    .eval = shared_eval,
    .eval_last = shared_eval_last,
    .flush = shared_flush,
};

static tl_status shared_backend_make(const tl_model *m, tl_scheduler *sched, const tl_call_limits *limits, bool owner,
                                     int32_t n_ctx, tl_backend **out, tl_error *err) {
    tl_backend *b = calloc(1, sizeof *b);
    shared_impl *impl = calloc(1, sizeof *impl);
    if (!b || !impl) {
        free(b);
        free(impl);
        return tl_error_set(err, TL_ERR_NOMEM, "shared backend: out of memory");
    }
    impl->sched = sched;
    impl->owner = owner;
    if (limits)
        impl->limits = *limits;
    b->ops = &shared_ops;
    b->impl = impl;
    b->vocab = tl_model_vocab(m);
    b->n_vocab = tl_model_n_vocab(m);
    b->model_name = tl_model_name(m);
    b->chat_template = tl_vocab_chat_template(b->vocab);
    b->n_ctx = n_ctx;
    *out = b;
    return TL_OK;
}

tl_status tl_backend_shared_new(const tl_model *m, const tl_shared_params *params, tl_backend **out, tl_error *err) {
    *out = NULL;
    if (!m)
        return tl_error_set(err, TL_ERR_INVALID, "shared backend: no model");
    tl_shared_params defaults = {0};
    if (!params)
        params = &defaults;
    tl_session *session = NULL;
    tl_scheduler *sched = NULL;
    tl_status st = tl_session_new(m, &params->session, &session, err);
    if (!st)
        st = scheduler_new(session, params, &sched, err);
    if (!st)
        st = shared_backend_make(tl_session_model(session), sched, NULL, true,
                                 params->session.n_ctx ? params->session.n_ctx : tl_model_n_ctx_train(m), out, err);
    if (st) {
        scheduler_free(sched);
        tl_session_free(session);
    }
    return st;
}

tl_status tl_backend_shared_client(tl_backend *shared, const tl_call_limits *limits, tl_backend **out,
                                   tl_error *err) {
    *out = NULL;
    if (!shared || shared->ops != &shared_ops)
        return tl_error_set(err, TL_ERR_INVALID, "shared backend: a client needs a shared backend");
    return shared_backend_make(tl_session_model(sched_of(shared)->session), sched_of(shared), limits, false,
                               shared->n_ctx, out, err);
}

uint64_t tl_backend_shared_steps(const tl_backend *b) {
    if (!b || b->ops != &shared_ops)
        return 0;
    tl_scheduler *s = ((shared_impl *)b->impl)->sched;
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->batches_run;
    pthread_mutex_unlock(&s->mu);
    return n;
}

tl_status tl_backend_shared_stats(const tl_backend *b, tl_shared_stats *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    if (!b || b->ops != &shared_ops)
        return tl_error_set(err, TL_ERR_INVALID, "shared backend stats: not a shared backend");
    tl_scheduler *s = ((shared_impl *)b->impl)->sched;
    pthread_mutex_lock(&s->mu);
    out->steps = s->batches_run;
    out->seqs_run = s->seqs_run;
    out->running_seqs = s->running_seqs;
    out->busy_s = s->busy_s;
    for (sched_job *j = s->head; j; j = j->next) {
        if (j->running)
            continue;
        out->queued++;
        out->queued_batch += j->priority != TL_PRIORITY_INTERACTIVE;
    }
    pthread_mutex_unlock(&s->mu);
    return TL_OK;
}
