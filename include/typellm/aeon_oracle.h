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

#define TL_AEON_MAX_UNIVERSE 64     /* distinct types the oracle reasons about */
#define TL_AEON_MAX_FRAMES 128      /* continuation frames (nesting) per query */
#define TL_AEON_MAX_TEXT 2048       /* characters of candidate text */
#define TL_AEON_CACHE_ENTRIES 512   /* cached answers per engine */
#define TL_AEON_DEFAULT_MAX_STATES 20000

typedef enum tl_aeon_verdict { TL_AEON_LIVE = 0, TL_AEON_DEAD = 1, TL_AEON_UNKNOWN = 2 } tl_aeon_verdict;
TL_API const char *tl_aeon_verdict_name(tl_aeon_verdict v);

typedef struct tl_aeon_scope tl_aeon_scope;
typedef struct tl_aeon_engine tl_aeon_engine;

/* The hole of a loaded program: its context (innermost first) and goal. The
 * finite type universe is the base types plus every arrow type occurring in
 * the goal and the components; components whose types do not fit are left out. */
TL_API tl_status tl_aeon_scope_new(const tl_aeon_program *p, tl_aeon_scope **out, tl_error *err);
TL_API void tl_aeon_scope_free(tl_aeon_scope *s);
/* A readable description of the context ("x : Int\nf : (x0:Int) -> Int\n") for prompts. */
TL_API void tl_aeon_scope_describe(const tl_aeon_scope *s, tl_strbuf *out);
TL_API const char *tl_aeon_scope_goal_text(const tl_aeon_scope *s);

typedef struct tl_aeon_oracle_limits {
    int64_t max_states;  /* grammar/inhabitation work per query; <= 0: TL_AEON_DEFAULT_MAX_STATES */
    double deadline;     /* tl_now_s() value after which queries answer UNKNOWN; 0: none */
} tl_aeon_oracle_limits;

TL_API tl_status tl_aeon_engine_new(const tl_aeon_scope *s, const tl_aeon_oracle_limits *limits, tl_aeon_engine **out, tl_error *err);
TL_API void tl_aeon_engine_free(tl_aeon_engine *e);
TL_API void tl_aeon_engine_set_deadline(tl_aeon_engine *e, double deadline);

/* An immutable text snapshot. */
typedef struct tl_aeon_state {
    size_t len;
    char text[];
} tl_aeon_state;

TL_API tl_aeon_state *tl_aeon_state_initial(void);
/* A new state with chars appended (the old one is untouched); NULL on OOM. */
TL_API tl_aeon_state *tl_aeon_state_advance(const tl_aeon_state *st, const char *chars, size_t n);
TL_API void tl_aeon_state_free(tl_aeon_state *st);

typedef struct tl_aeon_query_stats {
    int64_t work;       /* states explored */
    bool cached;        /* answered from the cache */
} tl_aeon_query_stats;

/* witness (optional) receives the full candidate text for LIVE, or the reason
 * for UNKNOWN. stats optional. */
TL_API tl_aeon_verdict tl_aeon_completion_status(tl_aeon_engine *e, const tl_aeon_state *st, tl_strbuf *witness, tl_aeon_query_stats *stats);
/* True when the text itself is a complete expression of the goal type. */
TL_API bool tl_aeon_is_accepting(tl_aeon_engine *e, const tl_aeon_state *st);


#ifdef __cplusplus
}
#endif
#endif
