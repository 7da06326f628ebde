/* test_shared_decide.c: eight threads deciding at once on one shared
 * backend (tl_backend_shared_new), through the public API only. Each gets
 * results bit-identical to the same decision run alone on a fresh local
 * backend (every choice's logprob and probability compared with ==, values
 * and labels as JSON), and the shared backend ran fewer batched steps than
 * the scoring calls the decisions made: their forward passes were merged.
 * Half the threads decide directly on the shared backend, half through a
 * client with (generous) limits. */
#include <pthread.h>

#include "tl_test.h"
#include "typellm/typellm.h"

enum { N_THREADS = 8, N_ROUNDS = 2 };

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"system\":{\"type\":\"string\",\"enum\":[\"database\",\"payments\",\"frontend\",\"network\"]},"
    "\"customer_facing\":{\"type\":\"boolean\"},"
    "\"severity\":{\"type\":\"integer\",\"enum\":[1,2,3,4]},"
    "\"urgency\":{\"type\":\"number\",\"format\":\"score\"}}}";
enum { N_FIELDS = 4 };

/* Contexts share a long prefix (one cache entry for all) and differ at the end. */
static void make_context(int t, int r, char *buf, size_t cap) {
    snprintf(buf, cap,
             "Incident log. The checkout service returned errors for some customers after a deploy; "
             "engineers looked at the database, the payment provider and the load balancer. Note %d: "
             "%s",
             t * N_ROUNDS + r,
             (t + r) % 3 == 0 ? "payments-api timed out." : (t + r) % 3 == 1 ? "the database CPU was high." : "the CDN dropped packets.");
}

typedef struct worker {
    tl_backend *shared;
    const tl_schema *schema;
    const tl_decide_opts *opts;
    int id;
    pthread_barrier_t *start;
    tl_decision *got[N_ROUNDS];
    int failures;
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    tl_backend *b = w->shared, *client = NULL;
    tl_error err = {0};
    if (w->id % 2) {
        tl_call_limits lim = {.deadline_s = tl_now_s() + 600};
        if (tl_backend_shared_client(w->shared, &lim, &client, &err) != TL_OK) {
            w->failures++;
            return NULL;
        }
        b = client;
    }
    pthread_barrier_wait(w->start);
    for (int r = 0; r < N_ROUNDS; r++) {
        char ctx[512];
        make_context(w->id, r, ctx, sizeof ctx);
        if (tl_decide(b, ctx, strlen(ctx), w->schema, w->opts, &w->got[r], &err) != TL_OK) {
            fprintf(stderr, "thread %d: %s\n", w->id, err.msg);
            w->failures++;
        }
    }
    tl_backend_free(client);
    return NULL;
}

/* Same values, labels, choices and bit-identical numbers. */
static int compare(const tl_decision *a, const tl_decision *b) {
    int diffs = 0;
    if (tl_decision_n_fields(a) != tl_decision_n_fields(b))
        return 1;
    for (size_t i = 0; i < tl_decision_n_fields(a); i++) {
        char *va = tl_value_to_json(tl_decision_field_value(a, i)), *vb = tl_value_to_json(tl_decision_field_value(b, i));
        diffs += strcmp(va, vb) != 0;
        tl_free(va);
        tl_free(vb);
        diffs += tl_decision_field_chosen(a, i) != tl_decision_field_chosen(b, i);
        diffs += tl_decision_field_label_mass(a, i) != tl_decision_field_label_mass(b, i);
        size_t nc = tl_decision_field_n_choices(a, i);
        diffs += nc != tl_decision_field_n_choices(b, i);
        for (size_t j = 0; j < nc; j++) {
            diffs += tl_decision_choice_logprob(a, i, j) != tl_decision_choice_logprob(b, i, j);
            diffs += tl_decision_choice_probability(a, i, j) != tl_decision_choice_probability(b, i, j);
        }
    }
    return diffs;
}

int main(void) {
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(tl_fixture("models/qwen2-d64-q8_0.gguf"), &m, &err) != TL_OK) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    tl_schema *schema = NULL;
    CHECK(tl_schema_parse(SCHEMA, strlen(SCHEMA), &schema, &err) == TL_OK);
    tl_decide_opts opts = {.mode = "sequential"};
    tl_shared_params sp = {.session = {.n_threads = 1}};
    tl_backend *shared = NULL;
    CHECK(tl_backend_shared_new(m, &sp, &shared, &err) == TL_OK);

    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N_THREADS);
    worker ws[N_THREADS];
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        ws[t] = (worker){.shared = shared, .schema = schema, .opts = &opts, .id = t, .start = &start};
        pthread_create(&th[t], NULL, worker_main, &ws[t]);
    }
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(th[t], NULL);
    uint64_t steps = tl_backend_shared_steps(shared);
    pthread_barrier_destroy(&start);

    /* Each decision alone, on a fresh local backend (empty cache). */
    int failures = 0, mismatches = 0;
    int64_t score_calls = 0;
    tl_session_params one = {.n_threads = 1};
    for (int t = 0; t < N_THREADS; t++) {
        failures += ws[t].failures;
        for (int r = 0; r < N_ROUNDS; r++) {
            if (!ws[t].got[r])
                continue;
            char ctx[512];
            make_context(t, r, ctx, sizeof ctx);
            tl_backend *alone = NULL;
            tl_decision *ref = NULL;
            CHECK(tl_backend_local_new(m, &one, &alone, &err) == TL_OK);
            CHECKF(tl_decide(alone, ctx, strlen(ctx), schema, &opts, &ref, &err) == TL_OK, "%s", err.msg);
            if (ref) {
                int d = compare(ws[t].got[r], ref);
                CHECKF(d == 0, "thread %d round %d: %d differences from the decision alone", t, r, d);
                mismatches += d != 0;
            }
            score_calls += N_FIELDS; /* sequential: one scoring call per field */
            tl_decision_free(ref);
            tl_backend_free(alone);
            tl_decision_free(ws[t].got[r]);
        }
    }
    CHECKF(failures == 0, "%d decisions failed", failures);
    CHECKF((int64_t)steps < score_calls, "%llu batched steps for %lld scoring calls: nothing was merged",
           (unsigned long long)steps, (long long)score_calls);
    fprintf(stderr, "%d decisions (%lld scoring calls) ran in %llu batched steps; %d differ from alone\n",
            N_THREADS * N_ROUNDS, (long long)score_calls, (unsigned long long)steps, mismatches);

    tl_backend_free(shared);
    tl_schema_free(schema);
    tl_model_free(m);
    return TEST_DONE();
}
