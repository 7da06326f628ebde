/* test_sampler.c: type-constrained sampling with real forward passes of the
 * fixture models (stories260k-f32: trained; llama-spm-d64-f32: random).
 *   - the model's highest-ranked token is invalid for the goal: the sampler
 *     commits a lower-ranked certified token and counts the rejections;
 *   - EOS is taken only where the text is complete (even when ranked first);
 *   - a probe limit aborts explicitly;
 *   - whole attempts end in a program the independent checker accepts, or
 *     an explicit token/probe-limit end, never an ill-typed program;
 *   - positive temperature: the empirical first-token distribution matches
 *     the model's distribution renormalized over allowed tokens (chi-square). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/oracle.h"
#include "aeon/sampler.h"
#include "backend/backend.h"
#include "engine/engine.h"
#include "tl_test.h"

typedef struct fixture {
    tl_model *model;
    tl_backend *be;
    tl_aeon_program *prog;
    tl_aeon_scope *scope;
    tl_aeon_engine *eng;
} fixture;

static bool fixture_open(fixture *f, const char *model, const char *src) {
    tl_error err = {0};
    memset(f, 0, sizeof *f);
    tl_session_params sp = {.n_threads = 1};
    if (tl_model_load(tl_fixture(model), &f->model, &err) || tl_backend_local_new(f->model, &sp, &f->be, &err) ||
        tl_aeon_program_load(src, strlen(src), &f->prog, &err) || tl_aeon_scope_new(f->prog, &f->scope, &err) ||
        tl_aeon_engine_new(f->scope, NULL, &f->eng, &err)) {
        fprintf(stderr, "fixture %s: %s\n", model, err.msg);
        return false;
    }
    return true;
}

static void fixture_close(fixture *f) {
    tl_aeon_engine_free(f->eng);
    tl_aeon_scope_free(f->scope);
    tl_aeon_program_free(f->prog);
    tl_backend_free(f->be);
    tl_model_free(f->model);
}

static int32_t *tokenize(fixture *f, const char *text, size_t *n) {
    int32_t *ids = NULL;
    tl_error err;
    if (tl_backend_tokenize(f->be, text, strlen(text), true, false, &ids, n, &err))
        return NULL;
    return ids;
}

/* The text a token adds after ids (whole-sequence decode), or NULL when the
 * sampler's rules exclude it; computed here independently of sampler.c. */
static char *token_delta(fixture *f, const int32_t *ids, size_t n, int32_t tok) {
    tl_strbuf a = TL_STRBUF_INIT, b = TL_STRBUF_INIT;
    int32_t *seq = malloc(sizeof *seq * (n + 1));
    memcpy(seq, ids, sizeof *seq * n);
    seq[n] = tok;
    tl_error err;
    char *out = NULL;
    tl_token_attr at = tl_vocab_token_attr(f->be->vocab, tok);
    if (at != TL_TOKEN_CONTROL && at != TL_TOKEN_UNKNOWN && at != TL_TOKEN_UNUSED &&
        !tl_backend_detokenize(f->be, ids, n, &a, &err) && !tl_backend_detokenize(f->be, seq, n + 1, &b, &err) &&
        b.len > a.len && !memcmp(a.buf, b.buf, a.len)) {
        out = strndup(b.buf + a.len, b.len - a.len);
        /* whitespace at the start of the text makes no progress (the test only probes there) */
        if (out && strspn(out, " \t\n\r") == strlen(out)) {
            free(out);
            out = NULL;
        }
        /* unfinished UTF-8 or U+FFFD: excluded */
        for (size_t i = 0; out && out[i]; i++) {
            unsigned char c = (unsigned char)out[i];
            if (c >= 0x80) {
                free(out);
                out = NULL;
                break;
            }
        }
    }
    free(seq);
    tl_strbuf_free(&a);
    tl_strbuf_free(&b);
    return out;
}

static tl_aeon_verdict verdict_after(fixture *f, const char *text, const char *delta) {
    tl_aeon_state *s0 = tl_aeon_state_initial(), *s1 = tl_aeon_state_advance(s0, text, strlen(text));
    tl_aeon_state *s2 = tl_aeon_state_advance(s1, delta, strlen(delta));
    tl_aeon_verdict v = tl_aeon_completion_status(f->eng, s2, NULL, NULL);
    tl_aeon_state_free(s0);
    tl_aeon_state_free(s1);
    tl_aeon_state_free(s2);
    return v;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* The top-ranked token is invalid; the sampler finds a lower-ranked one. */
static void test_invalid_top(fixture *f) {
    size_t n;
    int32_t *ids = tokenize(f, "Once upon a time, there was a little", &n);
    CHECK(ids != NULL);
    if (!ids)
        return;
    int nv = f->be->n_vocab;
    float *logits = malloc(sizeof *logits * (size_t)nv);
    tl_error err;
    CHECK(tl_backend_next_logits(f->be, ids, n, logits, NULL, &err) == TL_OK);
    int top = argmax(logits, nv);
    char *d = token_delta(f, ids, n, top);
    bool top_invalid = !d || verdict_after(f, "", d) != TL_AEON_LIVE;
    CHECKF(top_invalid, "the top token '%s' is valid: pick another prompt", d ? d : "(excluded)");
    free(d);
    tl_aeon_state *s0 = tl_aeon_state_initial();
    tl_aeon_sampler_config cfg = {.temperature = 0, .max_probes = 4096, .top_k = 4};
    tl_aeon_step_result sr;
    tl_aeon_probe_counts pc = {0};
    CHECK(tl_aeon_sample_step(f->be, f->eng, ids, n, s0, logits, &cfg, 1, &sr, &pc, &err) == TL_OK);
    CHECK(sr.first_ranked == top);
    CHECK(sr.token >= 0 && sr.token != top && !sr.is_eos);
    CHECK(pc.rejected + pc.excluded >= 1 && pc.probes >= 2);
    /* it is the best-scoring certified token: every better-ranked one is invalid */
    if (sr.token >= 0) {
        CHECK(verdict_after(f, "", sr.delta) == TL_AEON_LIVE);
        int better = 0, better_valid = 0;
        for (int i = 0; i < nv; i++) {
            if (logits[i] > logits[sr.token]) {
                better++;
                char *di = token_delta(f, ids, n, i);
                if (di && !tl_vocab_is_eog(f->be->vocab, i) && verdict_after(f, "", di) == TL_AEON_LIVE)
                    better_valid++;
                free(di);
            }
        }
        CHECKF(better >= 1 && better_valid == 0, "better %d, better valid %d", better, better_valid);
        fprintf(stderr, "invalid top token %d; chose token %d '%s' after %lld probes (%lld rejected, %lld excluded)\n",
                top, sr.token, sr.delta, (long long)pc.probes, (long long)pc.rejected, (long long)pc.excluded);
    }
    free(sr.delta);
    /* probe limit: one probe cannot certify anything here */
    cfg.max_probes = 1;
    memset(&pc, 0, sizeof pc);
    CHECK(tl_aeon_sample_step(f->be, f->eng, ids, n, s0, logits, &cfg, 1, &sr, &pc, &err) == TL_OK);
    CHECK(sr.token < 0 && sr.end == TL_AEON_END_PROBE_LIMIT && pc.probes == 1);
    /* UNKNOWN is never committed nor counted as DEAD: with a work limit of 1
     * most queries stop UNKNOWN and are skipped; a token is committed only
     * when the starved search still found a witness (checked by a full engine) */
    tl_aeon_engine *starved;
    tl_aeon_oracle_limits lim = {.max_states = 1};
    CHECK(tl_aeon_engine_new(f->scope, &lim, &starved, &err) == TL_OK);
    cfg.max_probes = 100000;
    memset(&pc, 0, sizeof pc);
    CHECK(tl_aeon_sample_step(f->be, starved, ids, n, s0, logits, &cfg, 1, &sr, &pc, &err) == TL_OK);
    CHECK(pc.unknown > 0);
    CHECK(pc.unknown + pc.rejected + pc.excluded + (sr.token >= 0) == pc.probes);
    if (sr.token >= 0)
        CHECK(verdict_after(f, "", sr.delta) == TL_AEON_LIVE);
    free(sr.delta);
    tl_aeon_engine_free(starved);
    /* EOS: ranked first but the text is empty -> excluded; after "n" -> taken,
     * even with an invalid token ranked above it */
    int32_t eos = tl_vocab_eos(f->be->vocab);
    CHECK(eos >= 0);
    float *boosted = malloc(sizeof *boosted * (size_t)nv);
    memcpy(boosted, logits, sizeof *boosted * (size_t)nv);
    boosted[eos] = logits[top] + 100;
    cfg.max_probes = 4096;
    CHECK(tl_aeon_sample_step(f->be, f->eng, ids, n, s0, boosted, &cfg, 1, &sr, &pc, &err) == TL_OK);
    CHECK(sr.token >= 0 && !sr.is_eos);
    free(sr.delta);
    tl_aeon_state *sn = tl_aeon_state_advance(s0, " n", 2);
    boosted[eos] = logits[top] - 0.001f; /* second, behind the invalid top token */
    memset(&pc, 0, sizeof pc);
    CHECK(tl_aeon_sample_step(f->be, f->eng, ids, n, sn, boosted, &cfg, 1, &sr, &pc, &err) == TL_OK);
    CHECK(sr.is_eos && sr.token == eos && pc.probes == 2);
    tl_aeon_state_free(sn);
    tl_aeon_state_free(s0);
    free(boosted);
    free(logits);
    free(ids);
}

/* Whole attempts: complete and independently valid, or an explicit end. */
static void test_attempts(fixture *f, const char *name, double temperature, int max_tokens) {
    size_t n;
    int32_t *ids = tokenize(f, "def clamp (n:Int) : Int := ", &n);
    CHECK(ids != NULL);
    for (int k = 0; ids && k < 3; k++) {
        tl_aeon_sampler_config cfg = {.temperature = temperature, .seed = (uint64_t)k, .max_tokens = max_tokens,
                                 .max_probes = 4096, .top_k = 32};
        tl_aeon_attempt at;
        tl_error err;
        CHECK(tl_aeon_sample_attempt(f->be, f->eng, ids, n, &cfg, &at, &err) == TL_OK);
        CHECK(at.n_tokens <= max_tokens);
        CHECK(at.counts.probes >= at.n_tokens);
        /* the prefix cache: after the prompt, each committed token costs one token of compute */
        CHECKF(at.usage.computed_tokens <= (int64_t)n + at.n_tokens, "computed %lld for %zu + %d tokens",
               (long long)at.usage.computed_tokens, n, at.n_tokens);
        if (at.end == TL_AEON_END_COMPLETE) {
            tl_aeon_validation v;
            CHECK(tl_aeon_validate(f->prog, at.text, at.text_len, &v, &err) == TL_OK);
            CHECKF(v.parsed && v.typed, "%s: completed '%s' rejected: %s", name, at.text, v.message);
            /* it ends with EOS, or with the end of the definition (a token starting with `;`) */
            int32_t last = at.tokens[at.n_tokens - 1];
            tl_strbuf lt = TL_STRBUF_INIT;
            CHECK(tl_backend_detokenize(f->be, &last, 1, &lt, &err) == TL_OK);
            const char *c = tl_strbuf_cstr(&lt);
            while (*c == ' ' || *c == '\n' || *c == '\t' || *c == '\r')
                c++;
            CHECKF(tl_vocab_is_eog(f->be->vocab, last) || *c == ';', "%s: ends with token %d '%s'", name, last,
                   tl_strbuf_cstr(&lt));
            tl_strbuf_free(&lt);
        } else {
            CHECK(at.end == TL_AEON_END_TOKEN_LIMIT || at.end == TL_AEON_END_EXHAUSTED || at.end == TL_AEON_END_PROBE_LIMIT);
        }
        fprintf(stderr, "%s T=%.1f seed %d: %s '%s' tokens %d probes %lld rejected %lld excluded %lld unknown %lld\n",
                name, temperature, k, tl_aeon_attempt_end_name(at.end), at.text ? at.text : "", at.n_tokens,
                (long long)at.counts.probes, (long long)at.counts.rejected, (long long)at.counts.excluded,
                (long long)at.counts.unknown);
        tl_aeon_attempt_free(&at);
    }
    free(ids);
}

/* A fixed output bias on EOS, like the seed's fixture GRU with fixed output
 * biases: the real forward pass runs, then EOS is raised to the top score.
 * The sampler must still refuse EOS until the text is a complete term. */
static const tl_backend_ops *inner_ops;
static tl_status eos_biased_logits(tl_backend *b, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                                   tl_error *err) {
    tl_status st = inner_ops->next_logits(b, ids, n, logits, usage, err);
    if (st)
        return st;
    float mx = logits[0];
    for (int32_t i = 1; i < b->n_vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    logits[tl_vocab_eos(b->vocab)] = mx + 1.0f;
    return TL_OK;
}

static void test_eos_attempts(fixture *f) {
    tl_backend_ops ops = *f->be->ops;
    inner_ops = f->be->ops;
    ops.next_logits = eos_biased_logits;
    tl_backend biased = *f->be; /* same engine session and vocabulary, biased scores */
    biased.ops = &ops;
    /* the context names words a story model likes, so some attempts can end */
    fixture g = *f;
    tl_error err0;
    const char *story = "def story (she:Int) (he:Int) (they:Int) : Int := ?hole;";
    CHECK(tl_aeon_program_load(story, strlen(story), &g.prog, &err0) == TL_OK && tl_aeon_scope_new(g.prog, &g.scope, &err0) == TL_OK &&
          tl_aeon_engine_new(g.scope, NULL, &g.eng, &err0) == TL_OK);
    f = &g;
    size_t n;
    int32_t *ids = tokenize(f, "Once upon a time, there was a little girl. One day,", &n);
    int complete = 0;
    for (int k = 0; ids && k < 4; k++) {
        tl_aeon_sampler_config cfg = {.temperature = k == 0 ? 0 : 1.0, .seed = (uint64_t)k, .max_tokens = 16,
                                 .max_probes = 4096, .top_k = 8};
        tl_aeon_attempt at;
        tl_error err;
        CHECK(tl_aeon_sample_attempt(&biased, f->eng, ids, n, &cfg, &at, &err) == TL_OK);
        if (at.end == TL_AEON_END_COMPLETE) {
            complete++;
            tl_aeon_validation v;
            CHECK(tl_aeon_validate(f->prog, at.text, at.text_len, &v, &err) == TL_OK && v.typed);
            CHECK(at.tokens[at.n_tokens - 1] == tl_vocab_eos(f->be->vocab));
            if (cfg.temperature == 0) {
                /* EOS ranked first at every step but was excluded until the text was complete */
                for (int i = 0; i < at.n_tokens; i++)
                    CHECK(at.first_ranked[i] == tl_vocab_eos(f->be->vocab));
                CHECK(at.counts.excluded >= at.n_tokens - 1);
            }
            CHECK(at.counts.rejected + at.counts.excluded >= 1);
        }
        fprintf(stderr, "EOS-biased T=%.0f seed %d: %s '%s' tokens %d probes %lld rejected %lld excluded %lld\n",
                cfg.temperature, k, tl_aeon_attempt_end_name(at.end), at.text ? at.text : "", at.n_tokens,
                (long long)at.counts.probes, (long long)at.counts.rejected, (long long)at.counts.excluded);
        tl_aeon_attempt_free(&at);
    }
    CHECK(complete >= 1);
    free(ids);
    tl_aeon_engine_free(g.eng);
    tl_aeon_scope_free(g.scope);
    tl_aeon_program_free(g.prog);
}

/* Wilson-Hilferty upper quantile of chi-square(df) at z standard deviations. */
static double chi2_quantile(int df, double z) {
    double k = df;
    double t = 1 - 2 / (9 * k) + z * sqrt(2 / (9 * k));
    return k * t * t * t;
}

static void test_distribution(fixture *f) {
    size_t n;
    int32_t *ids = tokenize(f, "The number was", &n);
    CHECK(ids != NULL);
    if (!ids)
        return;
    int nv = f->be->n_vocab;
    float *logits = malloc(sizeof *logits * (size_t)nv);
    double *p = calloc((size_t)nv, sizeof *p);
    int *count = calloc((size_t)nv, sizeof *count);
    tl_error err;
    CHECK(tl_backend_next_logits(f->be, ids, n, logits, NULL, &err) == TL_OK);
    const double T = 2.0; /* flat enough for several bins with >= 5 expected draws */
    double maxl = logits[argmax(logits, nv)], z = 0;
    int n_allowed = 0;
    for (int i = 0; i < nv; i++) {
        if (tl_vocab_is_eog(f->be->vocab, i))
            continue; /* the empty text is not accepting */
        char *d = token_delta(f, ids, n, i);
        if (d && verdict_after(f, "", d) == TL_AEON_LIVE) {
            p[i] = exp((logits[i] - maxl) / T);
            z += p[i];
            n_allowed++;
        }
        free(d);
    }
    CHECK(n_allowed >= 5);
    for (int i = 0; i < nv; i++)
        p[i] /= z;
    const int N = 8000;
    tl_aeon_state *s0 = tl_aeon_state_initial();
    tl_aeon_sampler_config cfg = {.temperature = T, .max_probes = 100000, .top_k = 32};
    int bad = 0;
    for (int s = 0; s < N; s++) {
        tl_aeon_step_result sr;
        tl_aeon_probe_counts pc = {0};
        if (tl_aeon_sample_step(f->be, f->eng, ids, n, s0, logits, &cfg, 1000 + (uint64_t)s * 7919, &sr, &pc, &err) ||
            sr.token < 0 || p[sr.token] == 0) {
            bad++;
        } else {
            count[sr.token]++;
        }
        free(sr.delta);
    }
    CHECK(bad == 0);
    /* bins with expected count >= 5; the rest pooled */
    double chi2 = 0, pooled_e = 0, pooled_o = 0;
    int df = -1;
    for (int i = 0; i < nv; i++) {
        if (p[i] == 0)
            continue;
        double e = p[i] * N;
        if (e >= 5) {
            chi2 += (count[i] - e) * (count[i] - e) / e;
            df++;
        } else {
            pooled_e += e;
            pooled_o += count[i];
        }
    }
    if (pooled_e >= 5) {
        chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
        df++;
    }
    CHECK(df >= 2);
    double crit = chi2_quantile(df, 3.09); /* p = 0.001 */
    fprintf(stderr, "first-token chi-square %.2f, df %d, critical (p=0.001) %.2f, %d allowed tokens\n", chi2, df, crit,
            n_allowed);
    CHECK(chi2 < crit);
    /* a wrong target distribution (unrenormalized temperature 0.5) is rejected by the same test */
    double chi2_wrong = 0, zw = 0;
    for (int i = 0; i < nv; i++)
        zw += p[i] > 0 ? pow(p[i], 2.0) : 0;
    for (int i = 0; i < nv; i++) {
        double e = p[i] > 0 ? pow(p[i], 2.0) / zw * N : 0;
        if (e >= 5)
            chi2_wrong += (count[i] - e) * (count[i] - e) / e;
    }
    CHECK(chi2_wrong > crit);
    tl_aeon_state_free(s0);
    free(count);
    free(p);
    free(logits);
    free(ids);
}

int main(void) {
    const char *clamp = "def limit : Int := 10;\n@example(clamp 15 = 10)\ndef clamp (n:Int) : Int := ?hole;";
    fixture f;
    if (fixture_open(&f, "models/stories260k-f32.gguf", clamp)) {
        test_invalid_top(&f);
        test_attempts(&f, "stories260k", 0, 12);
        test_eos_attempts(&f);
        test_attempts(&f, "stories260k", 1.0, 12);
        test_distribution(&f);
        fixture_close(&f);
    } else {
        CHECK(0);
    }
    if (fixture_open(&f, "models/llama-spm-d64-f32.gguf", clamp)) {
        test_attempts(&f, "llama-spm-d64", 0, 8);
        test_attempts(&f, "llama-spm-d64", 0.8, 8);
        fixture_close(&f);
    } else {
        CHECK(0);
    }
    return TEST_DONE();
}
