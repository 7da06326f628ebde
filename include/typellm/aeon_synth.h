/* typellm/aeon_synth.h: whole synthesis of an Aeon hole, what `typellm synth`
 * and the Python package's Client.synth run: a prompt built from the program
 * (its @prompt / @doc guidance, the names in scope at the hole, the goal type
 * and the source), up to `attempts` type-constrained sampling attempts
 * (aeon_sampler.h) on a backend, each complete attempt validated
 * independently of the oracle (tl_aeon_validate: parse, type, refinements,
 * @example, objectives), and the term chosen from the Pareto front of the
 * validated ones (tl_aeon_pareto_pick), spliced into the program.
 *
 * One deadline covers every forward pass, oracle query and evaluation.
 * Attempt 0 runs at the given temperature; a retry after a failed attempt
 * samples (temperature 0.8 where the given one is 0: a greedy rerun would
 * repeat it), with seed + attempt index. Stops early at a term that passes
 * everything with no objective left to improve.
 *
 * Threading: one call uses the backend from the calling thread only (a
 * shared backend's client per thread, as for tl_decide) and the program:
 * validation parses each term into the program's arena (freed with the
 * program), so calls on one program run one at a time. */
#ifndef TYPELLM_AEON_SYNTH_H
#define TYPELLM_AEON_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aeon.h"
#include "aeon_sampler.h"
#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_aeon_synth_params {
    double temperature;  /* attempt 0; 0: the best certified token at each step */
    uint64_t seed;       /* sampling (attempt a uses seed + a) and the Pareto tie-break */
    int max_tokens;      /* per attempt, incl. EOS; <= 0: 128 */
    int max_probes;      /* candidate probes per step; <= 0: 4096 */
    int top_k;           /* probe batch size; <= 0: 32 */
    int attempts;        /* <= 0: 8 */
    int64_t max_states;  /* oracle work per query; <= 0: TL_AEON_DEFAULT_MAX_STATES */
    double deadline;     /* a tl_now_s() value over the whole call; 0: none */
    int32_t n_ctx;       /* the context the prompt + max_tokens must fit (the prompt's head is cut,
                            the hole comes last); 0: the backend's */
    bool unconstrained;  /* the baseline: the same sampler, prompt and budgets with the oracle off
                            (plain sampling until EOS); every finished text is still validated, so
                            only a well-typed one can be chosen */
    int64_t max_oracle_work; /* oracle states per attempt; <= 0: 200 * max_states */
} tl_aeon_synth_params;

/* One attempt and its verdicts. */
typedef struct tl_aeon_synth_attempt {
    uint64_t seed;
    double temperature;
    tl_aeon_attempt run;              /* text, tokens, probe counts, logprob, times */
    bool validated;                   /* complete within the deadline, so validation ran */
    tl_aeon_validation validation;    /* meaningful when validated */
    double elapsed_s;                 /* wall time of the attempt and its validation */
} tl_aeon_synth_attempt;

typedef struct tl_aeon_synth_result {
    const char *status;               /* "ok" (a term was chosen), "exhausted", "deadline"; static */
    int chosen;                       /* index into attempts of the chosen term, or -1 */
    char *program;                    /* the program with the hole replaced by "(term)", or NULL */
    tl_aeon_synth_attempt *attempts;  /* n_attempts entries, in the order run */
    int n_attempts;
    size_t prompt_tokens;             /* after cutting to the context */
    double elapsed_s;
    bool unconstrained;               /* the oracle was off (the params' flag) */
} tl_aeon_synth_result;

/* Runs the synthesis of p's hole on b (which must give next-token logits:
 * a local or shared backend). out is filled also when the return is an
 * error (what ran until then); free it with tl_aeon_synth_result_free either
 * way. Errors: TL_ERR_UNSUPPORTED (a remote backend), the backend's and the
 * oracle's errors, TL_ERR_NOMEM. Exhaustion and the deadline are not errors:
 * status says them and chosen is -1. */
TL_API tl_status tl_aeon_synth(tl_backend *b, tl_aeon_program *p, const tl_aeon_synth_params *params,
                               tl_aeon_synth_result *out, tl_error *err);
TL_API void tl_aeon_synth_result_free(tl_aeon_synth_result *r);

/* The report `typellm synth --report` writes: {"status", "goal", "prompt_tokens",
 * "elapsed_s", "attempts": [{"attempt", "seed", "temperature", "end", "text",
 * "tokens", "tokens_committed", "probes", "rejected_probes", "unknown_probes",
 * "excluded_probes", "over_budget_probes", "noncanonical_probes", "oracle_calls",
 * "oracle_work", "oracle_s", "model_s", "elapsed_s", "logprob", "well_typed",
 * "examples_passed", "validation"?}], "unconstrained", "ends" (attempts per end),
 * "budgets_exhausted" (what ran out: "tokens", "oracle_states", "probes",
 * "wall_time"),
 * "program"?, "chosen_attempt", "chosen_attempt_text"?} as JSON text (keys
 * sorted, two-space indent); caller tl_free()s; NULL when out of memory. */
TL_API char *tl_aeon_synth_result_to_json(const tl_aeon_program *p, const tl_aeon_synth_result *r);

/* The program text with the hole's `?name` replaced by "(term)"; caller
 * tl_free()s; NULL when out of memory. */
TL_API char *tl_aeon_program_fill(const tl_aeon_program *p, const char *term, size_t len);

#ifdef __cplusplus
}
#endif
#endif
