/* typellm/aeon_oracle.h: the completion oracle for type-constrained decoding (Mündler et
 * al., PLDI 2025) over the Aeon fragment of aeon.h.
 *
 * A scope fixes the hole's typing context and goal type. A state is an
 * immutable snapshot of the candidate text; the engine answers, for a state,
 * whether some continuation of the text is a complete expression of the goal
 * type in the documented grammar (docs/aeon.md):
 *   LIVE     with an explicit full-source witness extending the prefix;
 *   DEAD     every derivation of the grammar was exhausted;
 *   UNKNOWN  a work, nesting, text-size or time limit stopped the search
 *            (never to be treated as DEAD).
 * Each query re-derives the worklist from the snapshot (no parser state is
 * carried between states), so states can be shared and probed in any order;
 * answers are cached per engine (bounded). */
#ifndef TYPELLM_AEON_ORACLE_H
#define TYPELLM_AEON_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aeon.h"
#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AE_MAX_UNIVERSE 64     /* distinct types the oracle reasons about */
#define AE_MAX_FRAMES 128      /* continuation frames (nesting) per query */
#define AE_MAX_TEXT 2048       /* characters of candidate text */
#define AE_CACHE_ENTRIES 512   /* cached answers per engine */
#define AE_DEFAULT_MAX_STATES 20000

typedef enum ae_verdict { AE_LIVE = 0, AE_DEAD = 1, AE_UNKNOWN = 2 } ae_verdict;
TL_API const char *ae_verdict_name(ae_verdict v);

typedef struct ae_scope ae_scope;
typedef struct ae_engine ae_engine;

/* The hole of a loaded program: its context (innermost first) and goal. The
 * finite type universe is the base types plus every arrow type occurring in
 * the goal and the components; components whose types do not fit are left out. */
TL_API tl_status ae_scope_new(const ae_program *p, ae_scope **out, tl_error *err);
TL_API void ae_scope_free(ae_scope *s);
/* A readable description of the context ("x : Int\nf : (x0:Int) -> Int\n") for prompts. */
TL_API void ae_scope_describe(const ae_scope *s, tl_strbuf *out);
TL_API const char *ae_scope_goal_text(const ae_scope *s);

typedef struct ae_oracle_limits {
    int64_t max_states;  /* grammar/inhabitation work per query; <= 0: AE_DEFAULT_MAX_STATES */
    double deadline;     /* tl_now_s() value after which queries answer UNKNOWN; 0: none */
} ae_oracle_limits;

TL_API tl_status ae_engine_new(const ae_scope *s, const ae_oracle_limits *limits, ae_engine **out, tl_error *err);
TL_API void ae_engine_free(ae_engine *e);
TL_API void ae_engine_set_deadline(ae_engine *e, double deadline);

/* An immutable text snapshot. */
typedef struct ae_state {
    size_t len;
    char text[];
} ae_state;

TL_API ae_state *ae_state_initial(void);
/* A new state with chars appended (the old one is untouched); NULL on OOM. */
TL_API ae_state *ae_state_advance(const ae_state *st, const char *chars, size_t n);
TL_API void ae_state_free(ae_state *st);

typedef struct ae_query_stats {
    int64_t work;       /* states explored */
    bool cached;        /* answered from the cache */
} ae_query_stats;

/* witness (optional) receives the full candidate text for LIVE, or the reason
 * for UNKNOWN. stats optional. */
TL_API ae_verdict ae_completion_status(ae_engine *e, const ae_state *st, tl_strbuf *witness, ae_query_stats *stats);
/* True when the text itself is a complete expression of the goal type. */
TL_API bool ae_is_accepting(ae_engine *e, const ae_state *st);


#ifdef __cplusplus
}
#endif
#endif
