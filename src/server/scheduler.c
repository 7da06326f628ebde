/* scheduler.c: the one thread that owns the model session.
 *
 * Request threads enqueue evaluation jobs and block; the scheduler takes
 * every job waiting at that moment and runs their sequences as one
 * tl_session_eval_batch, so concurrent requests share forward passes, and a
 * context common to several requests (or questions) is computed once and
 * then found in the one prefix cache all requests share. A job whose client
 * has gone or whose deadline has passed is dropped while still queued; a
 * running job always completes (its buffers belong to the waiting thread).
 *
 * Usage accounting: the engine reports usage per batch. A job alone in its
 * batch gets that exactly; jobs sharing a batch get shares proportional to
 * the tokens they presented (cached/computed split by the same ratio). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server_internal.h"
#include "util/error.h"
#include "util/fileio.h"

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
    struct sched_job *next;
} sched_job;

struct tl_scheduler {
    tl_session *session;
    int max_batch_seqs;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the scheduler waits for jobs */
    pthread_cond_t done_cv;  /* request threads wait for their job */
    sched_job *head, *tail;
    bool stopping;
    size_t batches_run;
};

static int64_t job_tokens(const sched_job *j) {
    int64_t n = 0;
    for (size_t i = 0; i < j->k; i++)
        n += (int64_t)j->seqs[i].n;
    return n;
}

/* Splits batch usage u over jobs by their presented tokens. */
static void apportion(sched_job **jobs, size_t nj, const tl_usage *u) {
    if (nj == 1) {
        jobs[0]->usage = *u;
        return;
    }
    int64_t total = 0;
    for (size_t i = 0; i < nj; i++)
        total += job_tokens(jobs[i]);
    int64_t cached_left = u->cached_tokens, computed_left = u->computed_tokens;
    for (size_t i = 0; i < nj; i++) {
        int64_t t = job_tokens(jobs[i]);
        tl_usage *ju = &jobs[i]->usage;
        ju->prompt_tokens = t;
        ju->forward_passes = u->forward_passes;
        if (i + 1 == nj) {
            ju->cached_tokens = cached_left;
            ju->computed_tokens = computed_left;
        } else {
            double share = total ? (double)t / (double)total : 0;
            ju->cached_tokens = (int64_t)((double)u->cached_tokens * share + 0.5);
            ju->computed_tokens = (int64_t)((double)u->computed_tokens * share + 0.5);
            if (ju->cached_tokens > t) ju->cached_tokens = t;
            cached_left -= ju->cached_tokens;
            computed_left -= ju->computed_tokens;
        }
        if (ju->cached_tokens < 0) ju->cached_tokens = 0;
        if (ju->computed_tokens < 0) ju->computed_tokens = 0;
    }
}

static void run_eval_group(tl_scheduler *s, sched_job **jobs, size_t nj) {
    size_t total = 0;
    for (size_t i = 0; i < nj; i++)
        total += jobs[i]->k;
    tl_seq *all = malloc((total ? total : 1) * sizeof *all);
    if (!all) {
        for (size_t i = 0; i < nj; i++)
            jobs[i]->status = tl_error_set(&jobs[i]->err, TL_ERR_NOMEM, "scheduler: out of memory");
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < nj; i++) {
        memcpy(all + at, jobs[i]->seqs, jobs[i]->k * sizeof *all);
        at += jobs[i]->k;
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
    /* One job's bad sequence (e.g. too long) must not fail the others: retry alone. */
    for (size_t i = 0; i < nj; i++) {
        memset(&jobs[i]->usage, 0, sizeof jobs[i]->usage);
        jobs[i]->status = tl_session_eval_batch(s->session, jobs[i]->seqs, jobs[i]->k, &jobs[i]->usage, &jobs[i]->err);
    }
}

static void *scheduler_main(void *arg) {
    tl_scheduler *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->work_cv, &s->mu);
        if (s->stopping)
            break;
        /* Take every waiting EVAL job (up to the batch cap), or one other job. */
        sched_job *group[256];
        size_t ng = 0, seqs = 0;
        sched_job *first = s->head;
        if (first->kind != SCHED_EVAL) {
            s->head = first->next;
            group[ng++] = first;
        } else {
            sched_job **pp = &s->head;
            while (*pp && ng < 256) {
                sched_job *j = *pp;
                if (j->kind == SCHED_EVAL && (ng == 0 || seqs + j->k <= (size_t)s->max_batch_seqs)) {
                    *pp = j->next;
                    group[ng++] = j;
                    seqs += j->k;
                } else {
                    pp = &j->next;
                }
            }
        }
        s->tail = NULL;
        for (sched_job *j = s->head; j; j = j->next)
            s->tail = j;
        for (size_t i = 0; i < ng; i++)
            group[i]->running = true;
        pthread_mutex_unlock(&s->mu);

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

        pthread_mutex_lock(&s->mu);
        s->batches_run++;
        for (size_t i = 0; i < ng; i++)
            group[i]->done = true;
        pthread_cond_broadcast(&s->done_cv);
    }
    /* Stopping: whatever is still queued is cancelled. */
    for (sched_job *j = s->head; j; j = j->next) {
        j->status = tl_error_set(&j->err, TL_ERR_CANCELLED, "server shutting down");
        j->done = true;
    }
    s->head = s->tail = NULL;
    pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

tl_status tl_scheduler_new(tl_session *session, int max_batch_seqs, tl_scheduler **out, tl_error *err) {
    tl_scheduler *s = calloc(1, sizeof *s);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "scheduler: out of memory");
    s->session = session;
    s->max_batch_seqs = max_batch_seqs > 0 ? max_batch_seqs : 256;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    if (pthread_create(&s->thread, NULL, scheduler_main, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        free(s);
        return tl_error_set(err, TL_ERR_INTERNAL, "scheduler: cannot start its thread");
    }
    *out = s;
    return TL_OK;
}

void tl_scheduler_free(tl_scheduler *s) {
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

size_t tl_scheduler_batches_run(const tl_scheduler *s) { return s->batches_run; }

/* Enqueues j and waits for it; handles deadline and client departure. */
static tl_status submit_and_wait(tl_scheduler *s, sched_job *j, const sched_wait *w, tl_error *err) {
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return tl_error_set(err, TL_ERR_CANCELLED, "server shutting down");
    }
    j->next = NULL;
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    pthread_cond_signal(&s->work_cv);
    tl_status abandon = TL_OK;
    while (!j->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000; /* re-check cancellation every 100 ms */
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->done_cv, &s->mu, &ts);
        if (j->done || j->running)
            continue;
        if (w && w->deadline_s > 0 && tl_now_s() > w->deadline_s)
            abandon = TL_ERR_TIMEOUT;
        else if (w && w->client_gone) {
            pthread_mutex_unlock(&s->mu);
            bool gone = w->client_gone(w->client_ctx);
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
            return tl_error_set(err, abandon, abandon == TL_ERR_TIMEOUT ? "request timed out waiting for the model"
                                                                       : "client went away");
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (j->status != TL_OK && err)
        *err = j->err;
    return j->status;
}

tl_status tl_scheduler_eval(tl_scheduler *s, tl_seq *seqs, size_t k, const sched_wait *w, tl_usage *usage,
                            tl_error *err) {
    if (k == 0)
        return TL_OK;
    sched_job j;
    memset(&j, 0, sizeof j);
    j.kind = SCHED_EVAL;
    j.seqs = seqs;
    j.k = k;
    tl_status st = submit_and_wait(s, &j, w, err);
    if (st == TL_OK && usage) {
        usage->prompt_tokens += j.usage.prompt_tokens;
        usage->cached_tokens += j.usage.cached_tokens;
        usage->computed_tokens += j.usage.computed_tokens;
        usage->forward_passes += j.usage.forward_passes;
        usage->output_tokens += j.usage.output_tokens;
    }
    return st;
}

tl_status tl_scheduler_eval_last(tl_scheduler *s, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                 const sched_wait *w, tl_usage *usage, tl_error *err) {
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
    if (st == TL_OK && usage) {
        usage->prompt_tokens += j.usage.prompt_tokens;
        usage->cached_tokens += j.usage.cached_tokens;
        usage->computed_tokens += j.usage.computed_tokens;
        usage->forward_passes += j.usage.forward_passes;
    }
    return st;
}

tl_status tl_scheduler_flush(tl_scheduler *s, tl_error *err) {
    sched_job j;
    memset(&j, 0, sizeof j);
    j.kind = SCHED_FLUSH;
    return submit_and_wait(s, &j, NULL, err);
}

/* ---- the scheduler-backed tl_backend ------------------------------------------ */

static void sb_free(tl_backend *b) { (void)b; }

static tl_status sb_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, tl_error *err) {
    return tl_vocab_tokenize(b->vocab, text, len, add_special, parse_special, ids, n, err);
}

static tl_status sb_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    return tl_vocab_detokenize(b->vocab, ids, n, false, true, out, err);
}

static tl_status sb_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    sched_backend_impl *impl = b->impl;
    tl_seq *seqs = calloc(k ? k : 1, sizeof *seqs);
    if (!seqs)
        return tl_error_set(err, TL_ERR_NOMEM, "score: out of memory");
    for (size_t i = 0; i < k; i++) {
        seqs[i].ids = reqs[i].ids;
        seqs[i].n = reqs[i].n;
        seqs[i].cands = reqs[i].cands;
        seqs[i].n_cands = reqs[i].n_cands;
        seqs[i].cand_logprobs = reqs[i].logprobs;
    }
    tl_status st = tl_scheduler_eval(impl->sched, seqs, k, &impl->wait, usage, err);
    free(seqs);
    return st;
}

static tl_status sb_next_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                tl_error *err) {
    sched_backend_impl *impl = b->impl;
    tl_seq seq;
    memset(&seq, 0, sizeof seq);
    seq.ids = ids;
    seq.n = n;
    seq.logits = logits;
    return tl_scheduler_eval(impl->sched, &seq, 1, &impl->wait, usage, err);
}

static const tl_backend_ops sched_backend_ops = {
    .kind = "local",
    .free = sb_free,
    .tokenize = sb_tokenize,
    .detokenize = sb_detokenize,
    .score = sb_score,
    .next_logits = sb_next_logits,
    .generate_regex = NULL,
};

void tl_sched_backend_init(tl_backend *b, sched_backend_impl *impl, tl_scheduler *sched, const tl_model *model,
                           const sched_wait *w) {
    memset(b, 0, sizeof *b);
    impl->sched = sched;
    impl->model = model;
    impl->wait = w ? *w : (sched_wait){0};
    b->ops = &sched_backend_ops;
    b->vocab = tl_model_vocab(model);
    b->n_vocab = tl_model_n_vocab(model);
    b->model_name = tl_model_name(model);
    b->chat_template = tl_vocab_chat_template(b->vocab);
    b->impl = impl;
}
