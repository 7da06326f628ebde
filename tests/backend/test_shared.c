/* test_shared.c: the shared batching backend (tl_backend_shared_new). Eight
 * threads call it at once: every result equals the same evaluation run alone
 * (bit for bit: batching must not change numbers), concurrent calls are
 * merged into shared batches (fewer batched steps than calls), a call whose
 * client has gone or whose deadline has passed is dropped while queued,
 * clients of other kinds are refused, and freeing it with no work is clean.
 * Chunked prefill: a long context runs over several steps with a short call
 * finishing between its chunks, and its logits are still those run alone.
 * Gathering: four generating callers, one of which starts ahead, end up in
 * one cohort (about one step per token, not two half-full ones).
 * (tests/decide/test_shared_decide.c: eight threads deciding.) */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "tl_test.h"
#include "typellm/typellm.h"

enum { N_THREADS = 8, N_ROUNDS = 12, N_VOCAB_MAX = 512 };

typedef struct worker {
    tl_backend *shared;
    int id;
    int32_t n_vocab;
    float *ref;   /* N_ROUNDS x n_vocab logits computed alone */
    int mismatches;
    int failures;
} worker;

/* The sequence thread `id` evaluates in round r: a shared story prefix and a tail of its own. */
static size_t make_seq(int id, int r, int32_t *ids) {
    static const int32_t prefix[] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 400, 428, 395};
    size_t n = 0;
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        ids[n++] = prefix[i];
    for (int k = 0; k <= r % 4; k++)
        ids[n++] = (int32_t)(260 + (id * 31 + r * 7 + k * 13) % 200);
    return n;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    float *logits = malloc((size_t)w->n_vocab * sizeof *logits);
    int32_t ids[32];
    for (int r = 0; r < N_ROUNDS; r++) {
        size_t n = make_seq(w->id, r, ids);
        tl_error err = {0};
        if (tl_backend_next_logits(w->shared, ids, n, logits, NULL, &err) != TL_OK) {
            w->failures++;
            continue;
        }
        if (memcmp(logits, w->ref + (size_t)r * (size_t)w->n_vocab, (size_t)w->n_vocab * sizeof *logits))
            w->mismatches++;
    }
    free(logits);
    return NULL;
}

/* A long batch (64 distinct 400-token sequences) that keeps the scheduler busy. */
typedef struct busy_job {
    tl_backend *shared;
    int32_t nv;
    tl_status status;
    int done;
} busy_job;

/* The steps the shared backend ran, as its on_step callback saw them. */
enum { MAX_STEP_LOG = 4096 };
static tl_shared_step step_log[MAX_STEP_LOG];
static size_t n_step_log;
static void record_step(void *ctx, const tl_shared_step *st) {
    (void)ctx;
    if (n_step_log < MAX_STEP_LOG)
        step_log[n_step_log++] = *st;
}

/* One small evaluation through client b. */
typedef struct order_call {
    tl_backend *b;
    char tag;
    tl_status status;
} order_call;
static void *order_main(void *arg) {
    order_call *c = arg;
    int32_t ids[4] = {1, 5 + c->tag, 9, 11};
    tl_seq s = {.ids = ids, .n = 4};
    tl_error err = {0};
    c->status = tl_backend_eval(c->b, &s, 1, NULL, &err);
    return NULL;
}

static void *busy_main(void *arg) {
    busy_job *b = arg;
    enum { K = 64, LEN = 400 };
    int32_t *ids = malloc((size_t)K * LEN * sizeof *ids);
    tl_seq seqs[K];
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < LEN; i++)
            ids[k * LEN + i] = (int32_t)(1 + (i * 37 + k * 101) % (b->nv - 1));
        seqs[k] = (tl_seq){.ids = ids + k * LEN, .n = LEN};
    }
    tl_error err = {0};
    b->status = tl_backend_eval(b->shared, seqs, K, NULL, &err);
    __atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
    free(ids);
    return NULL;
}

/* One long evaluation (chunked by the scheduler) with its logits and usage. */
typedef struct long_call {
    tl_backend *b;
    const int32_t *ids;
    size_t n;
    float *logits;
    tl_usage usage;
    tl_status status;
    int done;
} long_call;
static void *long_main(void *arg) {
    long_call *c = arg;
    tl_seq q = {.ids = c->ids, .n = c->n, .logits = c->logits};
    tl_error err = {0};
    c->status = tl_backend_eval(c->b, &q, 1, &c->usage, &err);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* on_step of the chunking backend: logs the step; after its first one, holds
 * the scheduler until another call is queued (up to 10 s), so that call is
 * planned beside the second chunk whatever the machine's load. */
typedef struct gate {
    tl_backend *b;
    int steps;
} gate;
static void gate_step(void *ctx, const tl_shared_step *st) {
    gate *g = ctx;
    record_step(NULL, st);
    if (++g->steps != 1)
        return;
    tl_shared_stats stt;
    tl_error err = {0};
    for (int i = 0; i < 10000; i++) {
        if (tl_backend_shared_stats(g->b, &stt, &err) == TL_OK && stt.queued >= 1)
            return;
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
}

static bool always_gone(void *ctx) {
    (void)ctx;
    return true;
}

/* A caller generating: its sequence grows by one token a round, the full
 * logits read after each (a light step: one new token per caller). */
enum { G_THREADS = 4, G_ROUNDS = 12, G_PROMPT = 16 };
typedef struct gather_caller {
    tl_backend *shared;
    int id;
    int failures;
} gather_caller;

static void *gather_main(void *arg) {
    gather_caller *c = arg;
    int32_t ids[G_PROMPT + G_ROUNDS];
    int32_t nv = tl_backend_n_vocab(c->shared);
    float *logits = malloc((size_t)nv * sizeof *logits);
    ids[0] = 1;
    for (int i = 1; i < G_PROMPT + G_ROUNDS; i++)
        ids[i] = (int32_t)(300 + (c->id * 7919 + i * 31) % 5000);
    for (int r = 0; r < G_ROUNDS; r++) {
        tl_seq q = {.ids = ids, .n = (size_t)(G_PROMPT + r), .logits = logits};
        tl_error err = {0};
        if (!logits || tl_backend_eval(c->shared, &q, 1, NULL, &err) != TL_OK)
            c->failures++;
    }
    free(logits);
    return NULL;
}

static void test_gather(const tl_model *m) {
    tl_error err = {0};
    tl_backend *shared = NULL;
    tl_shared_params shp = {.session = {.n_threads = 1}};
    CHECK(tl_backend_shared_new(m, &shp, &shared, &err) == TL_OK);
    gather_caller cs[G_THREADS];
    pthread_t th[G_THREADS];
    for (int t = 0; t < G_THREADS; t++) {
        cs[t] = (gather_caller){shared, t, 0};
        pthread_create(&th[t], NULL, gather_main, &cs[t]);
        if (t == 0) /* the first caller's first step runs alone: the others arrive during it */
            nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    int failures = 0;
    for (int t = 0; t < G_THREADS; t++) {
        pthread_join(th[t], NULL);
        failures += cs[t].failures;
    }
    size_t steps = (size_t)tl_backend_shared_steps(shared);
    CHECK(failures == 0);
    CHECKF(steps <= G_ROUNDS + G_ROUNDS / 2, "%zu steps for %d callers x %d rounds: the callers did not gather", steps,
           G_THREADS, G_ROUNDS);
    fprintf(stderr, "gather: %d callers x %d rounds in %zu steps\n", G_THREADS, G_ROUNDS, steps);
    tl_backend_free(shared);
}

int main(void) {
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(tl_fixture("models/stories260k-f32.gguf"), &m, &err) != TL_OK) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    int32_t nv = tl_model_n_vocab(m);
    CHECK(nv <= N_VOCAB_MAX);
    tl_session_params sp = {.n_threads = 1};
    tl_session *alone = NULL;
    CHECK(tl_session_new(m, &sp, &alone, &err) == TL_OK);

    /* References: each sequence alone, from an empty cache. */
    worker ws[N_THREADS];
    int32_t ids[32];
    for (int t = 0; t < N_THREADS; t++) {
        ws[t] = (worker){.id = t, .n_vocab = nv};
        ws[t].ref = malloc((size_t)N_ROUNDS * (size_t)nv * sizeof(float));
        for (int r = 0; r < N_ROUNDS; r++) {
            size_t n = make_seq(t, r, ids);
            tl_session_flush(alone);
            CHECK(tl_session_eval(alone, ids, n, ws[t].ref + (size_t)r * (size_t)nv, NULL, &err) == TL_OK);
        }
    }

    tl_backend *shared = NULL;
    tl_shared_params shp = {.session = sp, .on_step = record_step};
    CHECK(tl_backend_shared_new(m, &shp, &shared, &err) == TL_OK);
    CHECK(!strcmp(tl_backend_kind(shared), "shared") && tl_backend_n_vocab(shared) == nv);
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        ws[t].shared = shared;
        pthread_create(&th[t], NULL, worker_main, &ws[t]);
    }
    int mismatches = 0, failures = 0;
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        mismatches += ws[t].mismatches;
        failures += ws[t].failures;
        free(ws[t].ref);
    }
    size_t batches = (size_t)tl_backend_shared_steps(shared);
    CHECKF(failures == 0, "%d evaluations failed", failures);
    CHECKF(mismatches == 0, "%d results differ from the same evaluation alone", mismatches);
    CHECKF(batches < (size_t)(N_THREADS * N_ROUNDS), "%zu batches for %d jobs: concurrent jobs were not merged",
           batches, N_THREADS * N_ROUNDS);
    fprintf(stderr, "%d jobs ran in %zu batches\n", N_THREADS * N_ROUNDS, batches);

    /* Cancellation and deadlines apply while a call waits: occupy the
     * backend with a long batch on another thread, then call through clients
     * whose caller is gone / whose deadline has passed. If the long batch is
     * still running when they return, they must have been dropped from the queue. */
    tl_backend_flush(shared, &err);
    busy_job bj = {.shared = shared, .nv = nv};
    pthread_t bt;
    pthread_create(&bt, NULL, busy_main, &bj);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int32_t small[3] = {1, 403, 407};
    tl_seq s1 = {.ids = small, .n = 3};
    tl_call_limits gone = {.cancelled = always_gone};
    tl_call_limits late = {.deadline_s = tl_now_s() - 1};
    tl_backend *gone_client = NULL, *late_client = NULL;
    CHECK(tl_backend_shared_client(shared, &gone, &gone_client, &err) == TL_OK);
    CHECK(tl_backend_shared_client(shared, &late, &late_client, &err) == TL_OK);
    tl_status a = tl_backend_eval(gone_client, &s1, 1, NULL, &err);
    bool busy_after_a = !__atomic_load_n(&bj.done, __ATOMIC_SEQ_CST);
    tl_status b = tl_backend_eval(late_client, &s1, 1, NULL, &err);
    bool busy_after_b = !__atomic_load_n(&bj.done, __ATOMIC_SEQ_CST);
    CHECKF(a == TL_ERR_CANCELLED || (a == TL_OK && !busy_after_a), "gone client: %s", tl_status_name(a));
    CHECKF(b == TL_ERR_TIMEOUT || (b == TL_OK && !busy_after_b), "deadline: %s", tl_status_name(b));
    fprintf(stderr, "while busy: gone -> %s, late -> %s\n", tl_status_name(a), tl_status_name(b));
    pthread_join(bt, NULL);
    CHECK(bj.status == TL_OK);
    CHECK(tl_backend_flush(shared, &err) == TL_OK);
    tl_backend_free(gone_client);
    tl_backend_free(late_client);

    /* Priorities: while a long batch runs, a batch-class call and then an
     * interactive one queue up; the interactive one must run first (the
     * step after the long one takes only the most urgent class waiting). */
    {
        tl_call_limits lo = {.priority = TL_PRIORITY_BATCH}, hi = {.priority = TL_PRIORITY_INTERACTIVE};
        tl_backend *lo_client = NULL, *hi_client = NULL;
        CHECK(tl_backend_shared_client(shared, &lo, &lo_client, &err) == TL_OK);
        CHECK(tl_backend_shared_client(shared, &hi, &hi_client, &err) == TL_OK);
        busy_job bj2 = {.shared = shared, .nv = nv};
        pthread_t bt2;
        pthread_create(&bt2, NULL, busy_main, &bj2);
        tl_shared_stats stt;
        for (int i = 0; i < 200; i++) { /* until the long batch is running */
            CHECK(tl_backend_shared_stats(shared, &stt, &err) == TL_OK);
            if (stt.running_seqs > 0)
                break;
            nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
        }
        order_call calls[2] = {{.b = lo_client, .tag = 'b'}, {.b = hi_client, .tag = 'i'}};
        pthread_t ct[2];
        for (int c = 0; c < 2; c++) {
            pthread_create(&ct[c], NULL, order_main, &calls[c]);
            for (int i = 0; i < 200; i++) { /* queued in this order */
                CHECK(tl_backend_shared_stats(shared, &stt, &err) == TL_OK);
                if (stt.queued >= (size_t)c + 1)
                    break;
                nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
            }
        }
        bool long_running = !__atomic_load_n(&bj2.done, __ATOMIC_SEQ_CST);
        CHECKF(stt.queued == 2 && stt.queued_batch == 1, "queued %zu (batch %zu)", stt.queued, stt.queued_batch);
        for (int c = 0; c < 2; c++)
            pthread_join(ct[c], NULL);
        pthread_join(bt2, NULL);
        CHECK(calls[0].status == TL_OK && calls[1].status == TL_OK);
        /* The scheduler thread logged each step before waking its callers. */
        size_t at = n_step_log;
        CHECKF(at >= 3, "%zu steps logged", at);
        if (long_running && at >= 3) {
            const tl_shared_step *l = &step_log[at - 3], *a = &step_log[at - 2], *b2 = &step_log[at - 1];
            CHECKF(l->seqs == 64 && l->ok, "the long step: %zu seqs", l->seqs);
            CHECKF(a->jobs == 1 && a->batch_jobs == 0, "the step after it: %zu jobs, %zu of batch class", a->jobs,
                   a->batch_jobs);
            CHECKF(b2->jobs == 1 && b2->batch_jobs == 1, "the last step: %zu jobs, %zu of batch class", b2->jobs,
                   b2->batch_jobs);
            CHECK(l->seconds > 0 && l->usage.computed_tokens > 0);
        } else
            fprintf(stderr, "priority check skipped: the long batch ended before both calls queued\n");
        tl_backend_free(lo_client);
        tl_backend_free(hi_client);
    }

    /* Chunked prefill: 96 tokens a step, a 480-token sequence: at least five
     * steps; a short call made while it runs finishes before it (in a step
     * between its chunks); both give the bits they give alone, and the long
     * call's usage reads as one evaluation from an empty cache. */
    {
        enum { LONG = 480 };
        tl_backend *ch = NULL;
        gate g = {0};
        tl_shared_params chp = {.session = sp, .on_step = gate_step, .on_step_ctx = &g, .max_step_tokens = 96};
        CHECK(tl_backend_shared_new(m, &chp, &ch, &err) == TL_OK);
        g.b = ch;
        int32_t *lids = malloc(LONG * sizeof *lids);
        for (int i = 0; i < LONG; i++)
            lids[i] = (int32_t)(1 + (i * 53 + 7) % (nv - 1));
        float *ref_long = malloc((size_t)nv * sizeof(float)), *ref_short = malloc((size_t)nv * sizeof(float));
        float *got_short = malloc((size_t)nv * sizeof(float));
        long_call lc = {.b = ch, .ids = lids, .n = LONG, .logits = malloc((size_t)nv * sizeof(float))};
        int32_t sids[5] = {1, 403, 407, 261, 378};
        tl_session_flush(alone);
        CHECK(tl_session_eval(alone, lids, LONG, ref_long, NULL, &err) == TL_OK);
        tl_session_flush(alone);
        CHECK(tl_session_eval(alone, sids, 5, ref_short, NULL, &err) == TL_OK);
        size_t log0 = n_step_log;
        pthread_t lt;
        pthread_create(&lt, NULL, long_main, &lc);
        tl_shared_stats stt;
        for (int i = 0; i < 400; i++) { /* until its first chunk runs */
            CHECK(tl_backend_shared_stats(ch, &stt, &err) == TL_OK);
            if (stt.steps > 0 || stt.running_seqs > 0)
                break;
            nanosleep(&(struct timespec){0, 1 * 1000 * 1000}, NULL);
        }
        CHECK(tl_backend_next_logits(ch, sids, 5, got_short, NULL, &err) == TL_OK);
        bool long_still_running = !__atomic_load_n(&lc.done, __ATOMIC_SEQ_CST);
        pthread_join(lt, NULL);
        CHECK(lc.status == TL_OK);
        CHECKF(!memcmp(lc.logits, ref_long, (size_t)nv * sizeof(float)), "the chunked long call's logits differ");
        CHECKF(!memcmp(got_short, ref_short, (size_t)nv * sizeof(float)), "the short call's logits differ");
        CHECKF(long_still_running, "the short call waited for the whole long context");
        CHECKF(lc.usage.prompt_tokens == LONG && lc.usage.computed_tokens == LONG && lc.usage.cached_tokens == 0,
               "long usage: prompt %lld computed %lld cached %lld", (long long)lc.usage.prompt_tokens,
               (long long)lc.usage.computed_tokens, (long long)lc.usage.cached_tokens);
        size_t steps = n_step_log - log0;
        int64_t computed = 0;
        for (size_t i = log0; i < n_step_log; i++)
            computed += step_log[i].usage.computed_tokens;
        CHECKF(steps >= 5, "%zu steps for a 480-token context at 96 a step", steps);
        CHECKF(steps >= 3 && step_log[log0 + 1].jobs == 2, "the second step had %zu jobs (the short call and a chunk)",
               steps >= 2 ? step_log[log0 + 1].jobs : 0);
        CHECKF(computed == LONG + 5, "the steps computed %lld tokens", (long long)computed);
        fprintf(stderr, "chunked: %zu steps, the short call %s\n", steps,
                long_still_running ? "ran between chunks" : "waited");
        free(lc.logits);
        free(lids);
        free(ref_long);
        free(ref_short);
        free(got_short);
        tl_backend_free(ch);
    }

    /* A client needs a shared backend; remote-only calls are refused on it. */
    tl_backend *local = NULL, *bad = (tl_backend *)1;
    CHECK(tl_backend_local_new(m, &sp, &local, &err) == TL_OK);
    CHECK(tl_backend_shared_client(local, NULL, &bad, &err) == TL_ERR_INVALID && bad == NULL);
    CHECK(tl_backend_shared_steps(local) == 0);
    tl_backend_free(local);

    tl_backend_free(shared);
    tl_session_free(alone);
    tl_model_free(m);
    tl_model *d64 = NULL;
    if (tl_model_load(tl_fixture("models/qwen2-d64-q8_0.gguf"), &d64, &err) == TL_OK) /* 151k-token logits */
        test_gather(d64);
    else
        CHECKF(0, "load: %s", err.msg);
    tl_model_free(d64);
    return TEST_DONE();
}
