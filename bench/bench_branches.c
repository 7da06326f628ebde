/* bench_branches.c: what the prefix cache and branch batching save, on a
 * support thread ($TL_FIXTURES/ref/ticket-1100.ctx) with 16 yes/no questions
 * in ChatML form:
 *   (a) sequential: one conversation extended 16 times (question, the model's
 *       Yes/No answer, next question...): each step computes only its tail;
 *   (b) branches: the context once, then the 16 questions as one batch;
 *   plain: one cold prefill of as many tokens as (a) or (b) computed, and the
 *       cost of computing every request from scratch (no cache), estimated
 *       from the measured prefill rate;
 *   growth: a cached 1,000-token prompt grown by 20 tokens vs a 20-token
 *       prefill from position 0.
 * usage: bench_branches MODEL.gguf [--threads N] [--ctx FILE]
 * Build: cmake --build BUILD --target bench_branches (defined in tests/engine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"

#define N_Q 16

static const char *questions[N_Q] = {
    "Does the customer ask for a refund?",
    "Was the customer charged twice?",
    "Does the customer give a phone number?",
    "Is the customer threatening to dispute the charge?",
    "Did a package arrive damaged?",
    "Is the standing desk delivered?",
    "Does the customer mention a card number ending?",
    "Is the customer happy with the service?",
    "Did the agent promise a fix within 48 hours?",
    "Does the thread mention a shipping cost change?",
    "Is the tracking page stuck on in transit?",
    "Has the customer been a customer for more than five years?",
    "Does the customer ask for a call back?",
    "Is the issue about a software bug?",
    "Should this ticket be escalated to a supervisor?",
    "Is the customer writing in French?",
};

typedef struct ids {
    int32_t *v;
    size_t n, cap;
} ids;

static void die(const char *what, const tl_error *err) {
    fprintf(stderr, "bench_branches: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static void append_text(ids *out, const tl_vocab *v, const char *text) {
    int32_t *t = NULL;
    size_t n = 0;
    tl_error err = {0};
    if (tl_vocab_tokenize(v, text, strlen(text), false, true, &t, &n, &err) != TL_OK)
        die("tokenize", &err);
    if (out->n + n > out->cap) {
        out->cap = (out->n + n) * 2;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
        if (!out->v)
            die("out of memory", NULL);
    }
    memcpy(out->v + out->n, t, n * sizeof *t);
    out->n += n;
    free(t);
}

static int32_t single_token(const tl_vocab *v, const char *text) {
    int32_t *t = NULL;
    size_t n = 0;
    tl_error err = {0};
    if (tl_vocab_tokenize(v, text, strlen(text), false, false, &t, &n, &err) != TL_OK || n != 1)
        die("answer label is not one token", &err);
    int32_t id = t[0];
    free(t);
    return id;
}

static tl_session *new_session(const tl_model *m, int threads) {
    tl_session_params sp = {.n_threads = threads};
    tl_session *s = NULL;
    tl_error err = {0};
    if (tl_session_new(m, &sp, &s, &err) != TL_OK)
        die("session", &err);
    return s;
}

/* Seconds for a cold prefill of n tokens of seq (logits at the end). */
static double plain_prefill(tl_session *s, const int32_t *seq, size_t n) {
    tl_error err = {0};
    tl_session_flush(s);
    double t0 = tl_now_s();
    if (tl_session_eval(s, seq, n, NULL, NULL, &err) != TL_OK)
        die("prefill", &err);
    return tl_now_s() - t0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *ctx_path = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc)
            ctx_path = argv[++i];
        else
            model_path = argv[i];
    }
    char ctx_default[4096];
    if (!ctx_path) {
        const char *fx = getenv("TL_FIXTURES");
        snprintf(ctx_default, sizeof ctx_default, "%s/ref/ticket-1100.ctx", fx ? fx : "../shared/fixtures");
        ctx_path = ctx_default;
    }
    if (!model_path) {
        fprintf(stderr, "usage: bench_branches MODEL.gguf [--threads N] [--ctx FILE]\n");
        return 2;
    }
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(model_path, &m, &err) != TL_OK)
        die("model", &err);
    const tl_vocab *v = tl_model_vocab(m);
    char *ctx_text = NULL;
    size_t ctx_len = 0;
    if (tl_read_file(ctx_path, 1 << 20, &ctx_text, &ctx_len, &err) != TL_OK)
        die("context", &err);
    int32_t yes = single_token(v, "Yes"), no = single_token(v, "No");
    int32_t cands[2] = {yes, no};

    /* the shared part: system turn and the context inside the first user turn */
    ids head = {0};
    append_text(&head, v, "<|im_start|>system\nYou triage support tickets. Answer each question with Yes or No."
                          "<|im_end|>\n<|im_start|>user\n");
    append_text(&head, v, ctx_text);
    tl_session *s = new_session(m, threads);
    tl_session *cold = new_session(m, threads);
    printf("model %s (%s), %d threads, context %zu tokens, %d questions\n", tl_model_name(m),
           tl_model_type_name(m), tl_session_n_threads(s), head.n, N_Q);

    /* warm-up: page the weights in */
    plain_prefill(cold, head.v, 8);

    /* (a) sequential: one growing conversation */
    ids conv = {.cap = head.n + 4096};
    conv.v = malloc(conv.cap * sizeof *conv.v);
    memcpy(conv.v, head.v, head.n * sizeof *conv.v);
    conv.n = head.n;
    tl_usage ua = {0};
    double t0 = tl_now_s();
    for (int q = 0; q < N_Q; q++) {
        char turn[512];
        snprintf(turn, sizeof turn, "%sQuestion: %s<|im_end|>\n<|im_start|>assistant\n", q ? "<|im_start|>user\n" : "\n\n",
                 questions[q]);
        append_text(&conv, v, turn);
        double lp[2];
        tl_seq one = {.ids = conv.v, .n = conv.n, .cands = cands, .n_cands = 2, .cand_logprobs = lp};
        if (tl_session_eval_batch(s, &one, 1, &ua, &err) != TL_OK)
            die("sequential", &err);
        append_text(&conv, v, lp[0] >= lp[1] ? "Yes" : "No");
        append_text(&conv, v, "<|im_end|>\n");
    }
    double ta = tl_now_s() - t0;

    /* (b) branches: the context once, 16 questions in one batch */
    tl_session_flush(s);
    ids br[N_Q];
    tl_seq seqs[N_Q];
    double lps[N_Q][2];
    for (int q = 0; q < N_Q; q++) {
        br[q] = (ids){0};
        br[q].cap = head.n + 256;
        br[q].v = malloc(br[q].cap * sizeof(int32_t));
        memcpy(br[q].v, head.v, head.n * sizeof(int32_t));
        br[q].n = head.n;
        char turn[512];
        snprintf(turn, sizeof turn, "\n\nQuestion: %s<|im_end|>\n<|im_start|>assistant\n", questions[q]);
        append_text(&br[q], v, turn);
        seqs[q] = (tl_seq){.ids = br[q].v, .n = br[q].n, .cands = cands, .n_cands = 2, .cand_logprobs = lps[q]};
    }
    tl_usage ub = {0};
    t0 = tl_now_s();
    if (tl_session_eval_batch(s, seqs, N_Q, &ub, &err) != TL_OK)
        die("branches", &err);
    double tb = tl_now_s() - t0;

    /* plain prefills of the same token counts (a contiguous prompt from position 0) */
    double pa = plain_prefill(cold, conv.v, (size_t)ua.computed_tokens);
    double pb = plain_prefill(cold, conv.v, (size_t)ub.computed_tokens);
    double rate = (double)ua.computed_tokens / pa; /* tokens/s of a plain prefill */

    printf("\n| mode | wall s | prompt tokens | computed | reused | passes | plain prefill of computed, s | "
           "no-cache estimate, s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    printf("| (a) 16 sequential extensions | %.2f | %lld | %lld | %lld | %lld | %.2f | %.1f |\n", ta,
           (long long)ua.prompt_tokens, (long long)ua.computed_tokens, (long long)ua.cached_tokens,
           (long long)ua.forward_passes, pa, (double)ua.prompt_tokens / rate);
    printf("| (b) one batch of 16 branches | %.2f | %lld | %lld | %lld | %lld | %.2f | %.1f |\n", tb,
           (long long)ub.prompt_tokens, (long long)ub.computed_tokens, (long long)ub.cached_tokens,
           (long long)ub.forward_passes, pb, (double)ub.prompt_tokens / rate);
    printf("answers (b): ");
    for (int q = 0; q < N_Q; q++)
        printf("%s%s", q ? " " : "", lps[q][0] >= lps[q][1] ? "Y" : "N");
    printf("\n");

    /* growth: 1,000 cached tokens + 20 vs a 20-token prefill */
    size_t base = 1000 < conv.n - 20 ? 1000 : conv.n - 20;
    tl_session_flush(s);
    if (tl_session_eval(s, conv.v, base, NULL, NULL, &err) != TL_OK)
        die("growth", &err);
    float *logits = malloc(sizeof(float) * (size_t)tl_model_n_vocab(m));
    tl_usage ug = {0};
    t0 = tl_now_s();
    if (tl_session_eval(s, conv.v, base + 20, logits, &ug, &err) != TL_OK)
        die("growth", &err);
    double tg = tl_now_s() - t0;
    tl_session_flush(s);
    t0 = tl_now_s();
    if (tl_session_eval(s, conv.v, 20, logits, NULL, &err) != TL_OK)
        die("step", &err);
    double t20 = tl_now_s() - t0;
    printf("\ngrowth: %zu cached + 20 tokens: %.3f s (computed %lld); 20-token prefill from 0: %.3f s; ratio %.2f\n",
           base, tg, (long long)ug.computed_tokens, t20, tg / t20);
    printf("ratios: (a)/(plain of computed) %.2f, (b)/(plain of computed) %.2f, no-cache/(a) %.1fx, "
           "no-cache/(b) %.1fx, (a)/(b) %.2f\n",
           ta / pa, tb / pb, (double)ua.prompt_tokens / rate / ta, (double)ub.prompt_tokens / rate / tb, ta / tb);
    printf("{\"model\":\"%s\",\"type\":\"%s\",\"threads\":%d,\"ctx_tokens\":%zu,"
           "\"seq_s\":%.3f,\"seq_prompt\":%lld,\"seq_computed\":%lld,\"seq_reused\":%lld,\"seq_plain_s\":%.3f,"
           "\"batch_s\":%.3f,\"batch_prompt\":%lld,\"batch_computed\":%lld,\"batch_reused\":%lld,"
           "\"batch_plain_s\":%.3f,\"prefill_tok_s\":%.1f,\"grow20_s\":%.4f,\"step20_s\":%.4f}\n",
           tl_model_name(m), tl_model_type_name(m), tl_session_n_threads(s), head.n, ta,
           (long long)ua.prompt_tokens, (long long)ua.computed_tokens, (long long)ua.cached_tokens, pa, tb,
           (long long)ub.prompt_tokens, (long long)ub.computed_tokens, (long long)ub.cached_tokens, pb, rate, tg,
           t20);
    free(logits);
    for (int q = 0; q < N_Q; q++)
        free(br[q].v);
    free(conv.v);
    free(head.v);
    free(ctx_text);
    tl_session_free(cold);
    tl_session_free(s);
    tl_model_free(m);
    return 0;
}
