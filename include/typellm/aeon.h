/* typellm/aeon.h: the Aeon fragment front end: reading an .ae file, the hole's typing
 * context and goal, a whole-program type checker and a small interpreter.
 *
 * This is the "independent" path of the layer: oracle.c decides prefixes with
 * its own lexer and typed prefix parser, and the tests check every LIVE
 * witness it produces with the parser + checker here. Refinements are parsed
 * and kept, erased for typing, and checked only by evaluation (validate.c).
 *
 * Memory: a tl_aeon_program owns an arena (the library's private bump
 * allocator); every AST node, name and type lives until tl_aeon_program_free. Types are interned small integers (tl_aeon_type). */
#ifndef TYPELLM_AEON_H
#define TYPELLM_AEON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- types ---------------------------------------------------------------- */

typedef int32_t tl_aeon_type; /* index into tl_aeon_types; -1 = none/unknown */
enum { TL_AEON_T_INT = 0, TL_AEON_T_BOOL = 1, TL_AEON_T_FLOAT = 2, TL_AEON_T_STRING = 3, TL_AEON_T_UNIT = 4, TL_AEON_N_BASE = 5 };
#define TL_AEON_MAX_TYPES 256

typedef struct tl_aeon_types {
    int n;
    struct { bool arrow; tl_aeon_type arg, res; } t[TL_AEON_MAX_TYPES];
} tl_aeon_types;

TL_API void tl_aeon_types_init(tl_aeon_types *tt);
/* Interns (arg) -> res; -1 when the table is full. */
TL_API tl_aeon_type tl_aeon_type_arrow(tl_aeon_types *tt, tl_aeon_type arg, tl_aeon_type res);
TL_API bool tl_aeon_type_is_arrow(const tl_aeon_types *tt, tl_aeon_type t);
/* Writes Aeon surface syntax, e.g. "(x0:Int) -> Bool". */
TL_API void tl_aeon_type_print(const tl_aeon_types *tt, tl_aeon_type t, tl_strbuf *out);

/* ---- syntax --------------------------------------------------------------- */

typedef enum tl_aeon_expr_kind {
    TL_AEON_E_INT, TL_AEON_E_FLOAT, TL_AEON_E_BOOL, TL_AEON_E_STRING, TL_AEON_E_UNIT, TL_AEON_E_VAR, TL_AEON_E_HOLE,
    TL_AEON_E_APP, TL_AEON_E_BINOP, TL_AEON_E_NOT, TL_AEON_E_IF, TL_AEON_E_LET, TL_AEON_E_FUN, TL_AEON_E_ANNOT,
    TL_AEON_E_NEG /* Aeon's prefix minus: `- e` negates the whole expression after it (Int or Float) */
} tl_aeon_expr_kind;

typedef enum tl_aeon_binop {
    TL_AEON_OP_OR, TL_AEON_OP_AND, TL_AEON_OP_EQ, TL_AEON_OP_NE, TL_AEON_OP_LT, TL_AEON_OP_LE, TL_AEON_OP_GT, TL_AEON_OP_GE,
    TL_AEON_OP_ADD, TL_AEON_OP_SUB, TL_AEON_OP_MUL, TL_AEON_OP_DIV, TL_AEON_OP_MOD
} tl_aeon_binop;

typedef struct tl_aeon_expr tl_aeon_expr;
struct tl_aeon_expr {
    tl_aeon_expr_kind kind;
    int line, col;
    int64_t ival;      /* TL_AEON_E_INT, TL_AEON_E_BOOL; TL_AEON_E_HOLE: byte offset of `?name` in the source;
                          TL_AEON_E_IF: 1 when the if is written in parentheses `(if ...)` */
    double fval;       /* TL_AEON_E_FLOAT */
    const char *str;   /* TL_AEON_E_STRING (decoded), TL_AEON_E_VAR / LET / FUN / HOLE name */
    size_t str_len;    /* TL_AEON_E_STRING byte length; TL_AEON_E_HOLE: length of `?name` */
    tl_aeon_binop op;       /* TL_AEON_E_BINOP */
    tl_aeon_expr *a, *b, *c;/* APP: fn a, arg b; BINOP a op b; NOT a; NEG a; IF a b c; LET value a body b; FUN body a; ANNOT a */
    tl_aeon_type ty;        /* ANNOT / LET / FUN binder annotation (-1 when absent) */
};

/* A type as written: the erased type plus an optional refinement
 * {binder:T | pred}. */
typedef struct tl_aeon_rtype {
    tl_aeon_type ty;
    const char *binder; /* NULL when unrefined */
    tl_aeon_expr *pred;
} tl_aeon_rtype;

typedef struct tl_aeon_param {
    const char *name;
    tl_aeon_rtype rt;
} tl_aeon_param;

typedef struct tl_aeon_decorator {
    const char *name;   /* "example", "minimize_int", "prompt", ... */
    int line, col;
    tl_aeon_expr *arg;       /* the (first) argument as an expression, or NULL */
    const char *text;   /* string argument (prompt, doc), or NULL */
} tl_aeon_decorator;

typedef struct tl_aeon_def {
    const char *name;
    int line, col;
    tl_aeon_param *params;
    int n_params;
    tl_aeon_rtype result;
    tl_aeon_expr *body;
    tl_aeon_decorator *decos;
    int n_decos;
    tl_aeon_type fn_type;        /* params -> result, erased; -1 if unsupported */
    const char *unsupported;/* why this def is filtered from contexts (NULL: usable) */
} tl_aeon_def;

/* One name visible at the hole, innermost first. */
typedef struct tl_aeon_binding {
    const char *name;
    tl_aeon_type ty;
} tl_aeon_binding;

struct tl_arena; /* private to the library */
typedef struct tl_aeon_program {
    struct tl_arena *arena;  /* owns the nodes, names and source text */
    tl_aeon_types types;
    const char *source;      /* the file text (owned) */
    size_t source_len;
    tl_aeon_def *defs;
    int n_defs;
    /* The hole, filled by tl_aeon_program_load. */
    int hole_def;            /* index into defs */
    tl_aeon_expr *hole;           /* the TL_AEON_E_HOLE node */
    tl_aeon_type goal;            /* erased goal type */
    tl_aeon_binding *context;     /* hole's typing context, innermost first, shadowed names removed */
    int n_context;
    int n_filtered;          /* components left out as unsupported */
} tl_aeon_program;

/* Reads and checks an .ae file: parse (errors give line:column), collect the
 * hole's context and goal, type-check every def (defs that fail or use
 * unsupported types are marked unsupported and left out of the context; a
 * problem in the hole's own def is an error). Constructs outside the fragment
 * (ADTs, polymorphism, match, several holes, ...) are TL_ERR_UNSUPPORTED
 * naming the construct and its line:column. */
TL_API tl_status tl_aeon_program_load_file(const char *path, tl_aeon_program **out, tl_error *err);
TL_API tl_status tl_aeon_program_load(const char *source, size_t len, tl_aeon_program **out, tl_error *err);
TL_API void tl_aeon_program_free(tl_aeon_program *p);

/* Parses one expression (a candidate for the hole) into the program's arena;
 * the whole text must be consumed. */
TL_API tl_status tl_aeon_parse_expr(tl_aeon_program *p, const char *text, size_t len, tl_aeon_expr **out, tl_error *err);

/* Type-checks e against `goal` in the hole's context (refinements erased):
 * the independent check of oracle witnesses and final candidates. */
TL_API tl_status tl_aeon_check_candidate(tl_aeon_program *p, const tl_aeon_expr *e, tl_error *err);

/* ---- evaluation ----------------------------------------------------------- */

typedef enum tl_aeon_value_kind { TL_AEON_V_INT, TL_AEON_V_BOOL, TL_AEON_V_FLOAT, TL_AEON_V_STRING, TL_AEON_V_UNIT, TL_AEON_V_CLOSURE, TL_AEON_V_BUILTIN } tl_aeon_value_kind;
typedef struct tl_aeon_value tl_aeon_value;

/* Evaluates a closed expression (may call the program's defs) with the hole
 * filled by `candidate`; fuel bounds evaluation steps (a runaway recursion is
 * an error, not a hang). A runtime error (division by zero, overflow, fuel)
 * is TL_ERR_INVALID / TL_ERR_LIMIT with line:column. */
typedef struct tl_aeon_scalar {
    tl_aeon_value_kind kind;
    int64_t i;        /* Int, Bool */
    double f;         /* Float */
    const char *s;    /* String (inputs only: results do not outlive the evaluation) */
    size_t s_len;
} tl_aeon_scalar;
TL_API tl_status tl_aeon_eval_closed(tl_aeon_program *p, const tl_aeon_expr *e, const tl_aeon_expr *candidate, int64_t fuel,
                         tl_aeon_scalar *out, tl_error *err);
/* Calls the hole's def on arguments and returns its result (for refinement
 * checks on sample inputs); args are scalars of the param types. */
TL_API tl_status tl_aeon_eval_call_hole_def(tl_aeon_program *p, const tl_aeon_scalar *args, const tl_aeon_expr *candidate, int64_t fuel,
                                tl_aeon_scalar *out, tl_error *err);
/* Evaluates a refinement predicate with `binder` bound to v (and the def's
 * params bound to args when non-NULL). */
TL_API tl_status tl_aeon_eval_pred(tl_aeon_program *p, const tl_aeon_rtype *rt, const tl_aeon_scalar *v, const tl_aeon_scalar *args,
                       const tl_aeon_expr *candidate, int64_t fuel, bool *holds, tl_error *err);

/* ---- validation (validate.c) ---------------------------------------------- */

#define TL_AEON_MAX_OBJECTIVES 8
typedef struct tl_aeon_validation {
    bool parsed, typed, refinements_ok;
    int examples_total, examples_failed;
    int refinement_checks, refinement_failures;
    int n_objectives;
    double objectives[TL_AEON_MAX_OBJECTIVES]; /* all "lower is better" (maximize negated) */
    char message[512];                    /* first failure */
} tl_aeon_validation;

/* Parses, types (independently of the oracle), checks refinements and
 * @examples by evaluation and scores objectives. Returns TL_OK when it could
 * run; v->typed etc. say the verdicts. */
TL_API tl_status tl_aeon_validate(tl_aeon_program *p, const char *candidate, size_t len, tl_aeon_validation *v, tl_error *err);
/* Index of the chosen candidate among n valid ones: the Pareto front over
 * (examples_failed, objectives...), ties broken by seed. */
TL_API int tl_aeon_pareto_pick(const tl_aeon_validation *vs, int n, uint64_t seed);
/* Index of the chosen one of n validated candidates: among those that typed
 * and kept their refinements, the Pareto front over (examples_failed,
 * objectives...), then the highest logprob[i], then the lowest index; -1
 * when none typed. */
TL_API int tl_aeon_rank_pick(const tl_aeon_validation *vs, const double *logprob, int n);


#ifdef __cplusplus
}
#endif
#endif
