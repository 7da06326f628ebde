/* typellm/aeon_sampler.h: type-constrained token sampling over a backend.
 *
 * Each step takes the model's scores for the committed sequence (one
 * next_logits call: the local engine's prefix cache makes that one token of
 * compute), ranks the whole vocabulary (temperature 0: by score; positive
 * temperature: seeded Gumbel keys, so the first allowed token in the ranking
 * is an exact draw from the distribution renormalized over allowed tokens),
 * and probes candidates in that order, in batches of top_k, until one is
 * certified LIVE by the oracle. Probes never touch the model: a trial is the
 * detokenization of the WHOLE sequence (prompt + committed + candidate), and
 * its new text is decode(seq + tok) minus decode(seq). Excluded without an
 * oracle call: special tokens, trials whose text does not extend the
 * committed text (prompt-boundary rewrites), trials ending in unfinished
 * UTF-8 or U+FFFD, zero-progress tokens (empty text, or whitespace where the
 * text is empty or already ends in whitespace: runs of blanks add nothing). EOS is allowed only where the text
 * is a complete expression of the goal type; there a token starting with `;`
 * (the end of the definition) ends the term as EOS does. With step_budget,
 * a LIVE token is taken only when the oracle's shortest completion after it
 * still fits (see the config). UNKNOWN verdicts are never
 * committed and never counted as DEAD. A probe limit aborts the attempt
 * explicitly instead of sampling from a truncated distribution. */
#ifndef TYPELLM_AEON_SAMPLER_H
#define TYPELLM_AEON_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aeon_oracle.h"
#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_aeon_sampler_config {
    double temperature;   /* 0: best certified token */
    uint64_t seed;
    int max_tokens;       /* per attempt, including EOS */
    int max_probes;       /* candidate probes per step */
    int top_k;            /* probe batch size */
    double deadline;      /* tl_now_s() value; 0: none */
    bool (*cancelled)(void *arg); /* checked between probe batches; may be NULL */
    void *cancel_arg;
    bool unconstrained;   /* the baseline: no oracle; the first token that passes the tokenization
                             checks is taken and EOS ends the text anywhere after a non-blank one */
    int64_t max_oracle_work; /* oracle states per attempt (summed over queries); <= 0: unbounded;
                                beyond: the attempt ends TL_AEON_END_ORACLE_BUDGET */
    int step_budget;      /* tokens this step and the ones after it may still use, EOS included;
                             <= 0: unbounded. sample_attempt sets it to max_tokens - step: a token is
                             taken only when the oracle's shortest completion after it, tokenized,
                             plus EOS, fits (so `if if if ...` cannot eat the budget) */
    bool canonical_names; /* also refuse a LIVE token that leaves a name cut where the tokenizer never
                             cuts it (counted noncanonical; tl_aeon_synth sets it): the exact
                             renormalized distribution over LIVE tokens when false */
} tl_aeon_sampler_config;

/* How an attempt ended. */
typedef enum tl_aeon_attempt_end {
    TL_AEON_END_COMPLETE,      /* EOS after an accepting text */
    TL_AEON_END_TOKEN_LIMIT,   /* max_tokens reached without EOS: no program */
    TL_AEON_END_PROBE_LIMIT,   /* a step used max_probes without a certified token */
    TL_AEON_END_EXHAUSTED,     /* every token of a step was rejected, excluded or unknown */
    TL_AEON_END_DEADLINE,
    TL_AEON_END_CANCELLED,
    TL_AEON_END_ORACLE_BUDGET  /* max_oracle_work states spent */
} tl_aeon_attempt_end;
TL_API const char *tl_aeon_attempt_end_name(tl_aeon_attempt_end e);

/* Counters of one step or one attempt. */
typedef struct tl_aeon_probe_counts {
    int64_t probes;        /* candidates looked at */
    int64_t rejected;      /* DEAD */
    int64_t unknown;       /* UNKNOWN (not committed, not DEAD) */
    int64_t excluded;      /* special, boundary rewrite, unfinished UTF-8, zero progress, EOS too early */
    double oracle_s;       /* time in completion_status */
    int64_t oracle_calls;  /* completion_status queries */
    int64_t oracle_work;   /* states they explored */
    int64_t over_budget;   /* LIVE, but the shortest completion does not fit in step_budget */
    int64_t noncanonical;  /* LIVE, but ending in a piece of a name at a cut the tokenizer never makes
                              ("toFl" from "to" + "Fl" for toFloat = "to" + "Float"): the model would
                              hardly ever continue it */
} tl_aeon_probe_counts;

typedef struct tl_aeon_step_result {
    int32_t token;          /* chosen token, or -1 */
    bool is_eos;
    char *delta;            /* text the token adds (malloc'd; NULL for EOS / none) */
    size_t delta_len;
    tl_aeon_attempt_end end;     /* meaningful when token < 0 */
    int32_t first_ranked;   /* the highest-ranked token of the step (for reports) */
} tl_aeon_step_result;

/* One decision: ids[0..n) is the whole committed sequence (prompt + tokens so
 * far), committed_text the generated text so far (whose oracle state is st),
 * logits the backend's next-token scores (n_vocab). counts is accumulated into. */
TL_API tl_status tl_aeon_sample_step(tl_backend *b, tl_aeon_engine *eng, const int32_t *ids, size_t n, const tl_aeon_state *st,
                         const float *logits, const tl_aeon_sampler_config *cfg, uint64_t step_seed,
                         tl_aeon_step_result *out, tl_aeon_probe_counts *counts, tl_error *err);

typedef struct tl_aeon_attempt {
    tl_aeon_attempt_end end;
    char *text;             /* generated text (malloc'd), complete only for TL_AEON_END_COMPLETE */
    size_t text_len;
    int32_t *tokens;        /* committed tokens including EOS (malloc'd) */
    int n_tokens;
    tl_aeon_probe_counts counts;
    double model_s;         /* time in next_logits */
    tl_usage usage;         /* the backend's token accounting over the attempt */
    int32_t *first_ranked;  /* per step, the top-ranked token (malloc'd, n_tokens entries) */
    double logprob;         /* the model's log-probability of the committed tokens (EOS included):
                               full-vocabulary log-softmax at temperature 1, summed */
} tl_aeon_attempt;

/* Runs one attempt from the prompt ids. */
TL_API tl_status tl_aeon_sample_attempt(tl_backend *b, tl_aeon_engine *eng, const int32_t *prompt, size_t n_prompt,
                            const tl_aeon_sampler_config *cfg, tl_aeon_attempt *out, tl_error *err);
TL_API void tl_aeon_attempt_free(tl_aeon_attempt *a);


#ifdef __cplusplus
}
#endif
#endif
