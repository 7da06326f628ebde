/* typellm/aeon.h: the Aeon fragment front end: reading an .ae file, the hole's typing
 * context and goal, a whole-program type checker and a small interpreter.
 *
 * This is the "independent" path of the layer: oracle.c decides prefixes with
 * its own lexer and typed prefix parser, and the tests check every LIVE
 * witness it produces with the parser + checker here. Refinements are parsed
 * and kept, erased for typing, and checked only by evaluation (validate.c).
 *
 * Memory: an ae_program owns an arena; every AST node, name and type lives
 * until ae_program_free. Types are interned small integers (ae_type). */
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

/* ---- arena ---------------------------------------------------------------- */

typedef struct ae_arena_chunk ae_arena_chunk;
typedef struct ae_arena {
    ae_arena_chunk *head;
    size_t total;  /* bytes handed out, for limits */
} ae_arena;

TL_API void *ae_alloc(ae_arena *a, size_t n); /* zeroed; NULL on OOM */
TL_API char *ae_strndup(ae_arena *a, const char *s, size_t n);
TL_API void ae_arena_free(ae_arena *a);

/* ---- types ---------------------------------------------------------------- */

typedef int32_t ae_type; /* index into ae_types; -1 = none/unknown */
enum { AE_T_INT = 0, AE_T_BOOL = 1, AE_T_FLOAT = 2, AE_T_STRING = 3, AE_T_UNIT = 4, AE_N_BASE = 5 };
#define AE_MAX_TYPES 256

typedef struct ae_types {
    int n;
    struct { bool arrow; ae_type arg, res; } t[AE_MAX_TYPES];
} ae_types;

TL_API void ae_types_init(ae_types *tt);
/* Interns (arg) -> res; -1 when the table is full. */
TL_API ae_type ae_type_arrow(ae_types *tt, ae_type arg, ae_type res);
TL_API bool ae_type_is_arrow(const ae_types *tt, ae_type t);
/* Writes Aeon surface syntax, e.g. "(x0:Int) -> Bool". */
TL_API void ae_type_print(const ae_types *tt, ae_type t, tl_strbuf *out);

/* ---- syntax --------------------------------------------------------------- */

typedef enum ae_expr_kind {
    AE_E_INT, AE_E_FLOAT, AE_E_BOOL, AE_E_STRING, AE_E_UNIT, AE_E_VAR, AE_E_HOLE,
    AE_E_APP, AE_E_BINOP, AE_E_NOT, AE_E_IF, AE_E_LET, AE_E_FUN, AE_E_ANNOT
} ae_expr_kind;

typedef enum ae_binop {
    AE_OP_OR, AE_OP_AND, AE_OP_EQ, AE_OP_NE, AE_OP_LT, AE_OP_LE, AE_OP_GT, AE_OP_GE,
    AE_OP_ADD, AE_OP_SUB, AE_OP_MUL, AE_OP_DIV, AE_OP_MOD
} ae_binop;

typedef struct ae_expr ae_expr;
struct ae_expr {
    ae_expr_kind kind;
    int line, col;
    int64_t ival;      /* AE_E_INT, AE_E_BOOL; AE_E_HOLE: byte offset of `?name` in the source */
    double fval;       /* AE_E_FLOAT */
    const char *str;   /* AE_E_STRING (decoded), AE_E_VAR / LET / FUN / HOLE name */
    size_t str_len;    /* AE_E_STRING byte length; AE_E_HOLE: length of `?name` */
    ae_binop op;       /* AE_E_BINOP */
    ae_expr *a, *b, *c;/* APP: fn a, arg b; BINOP a op b; NOT a; IF a b c; LET value a body b; FUN body a; ANNOT a */
    ae_type ty;        /* ANNOT / LET / FUN binder annotation (-1 when absent) */
};

/* A type as written: the erased type plus an optional refinement
 * {binder:T | pred}. */
typedef struct ae_rtype {
    ae_type ty;
    const char *binder; /* NULL when unrefined */
    ae_expr *pred;
} ae_rtype;

typedef struct ae_param {
    const char *name;
    ae_rtype rt;
} ae_param;

typedef struct ae_decorator {
    const char *name;   /* "example", "minimize_int", "prompt", ... */
    int line, col;
    ae_expr *arg;       /* the (first) argument as an expression, or NULL */
    const char *text;   /* string argument (prompt, doc), or NULL */
} ae_decorator;

typedef struct ae_def {
    const char *name;
    int line, col;
    ae_param *params;
    int n_params;
    ae_rtype result;
    ae_expr *body;
    ae_decorator *decos;
    int n_decos;
    ae_type fn_type;        /* params -> result, erased; -1 if unsupported */
    const char *unsupported;/* why this def is filtered from contexts (NULL: usable) */
} ae_def;

/* One name visible at the hole, innermost first. */
typedef struct ae_binding {
    const char *name;
    ae_type ty;
} ae_binding;

typedef struct ae_program {
    ae_arena arena;
    ae_types types;
    const char *source;      /* the file text (owned) */
    size_t source_len;
    ae_def *defs;
    int n_defs;
    /* The hole, filled by ae_program_load. */
    int hole_def;            /* index into defs */
    ae_expr *hole;           /* the AE_E_HOLE node */
    ae_type goal;            /* erased goal type */
    ae_binding *context;     /* hole's typing context, innermost first, shadowed names removed */
    int n_context;
    int n_filtered;          /* components left out as unsupported */
} ae_program;

/* Reads and checks an .ae file: parse (errors give line:column), collect the
 * hole's context and goal, type-check every def (defs that fail or use
 * unsupported types are marked unsupported and left out of the context; a
 * problem in the hole's own def is an error). Constructs outside the fragment
 * (ADTs, polymorphism, match, several holes, ...) are TL_ERR_UNSUPPORTED
 * naming the construct and its line:column. */
TL_API tl_status ae_program_load_file(const char *path, ae_program **out, tl_error *err);
TL_API tl_status ae_program_load(const char *source, size_t len, ae_program **out, tl_error *err);
TL_API void ae_program_free(ae_program *p);

/* Parses one expression (a candidate for the hole) into the program's arena;
 * the whole text must be consumed. */
TL_API tl_status ae_parse_expr(ae_program *p, const char *text, size_t len, ae_expr **out, tl_error *err);

/* Type-checks e against `goal` in the hole's context (refinements erased):
 * the independent check of oracle witnesses and final candidates. */
TL_API tl_status ae_check_candidate(ae_program *p, const ae_expr *e, tl_error *err);

/* ---- evaluation ----------------------------------------------------------- */

typedef enum ae_value_kind { AE_V_INT, AE_V_BOOL, AE_V_FLOAT, AE_V_STRING, AE_V_UNIT, AE_V_CLOSURE, AE_V_BUILTIN } ae_value_kind;
typedef struct ae_value ae_value;

/* Evaluates a closed expression (may call the program's defs) with the hole
 * filled by `candidate`; fuel bounds evaluation steps (a runaway recursion is
 * an error, not a hang). A runtime error (division by zero, overflow, fuel)
 * is TL_ERR_INVALID / TL_ERR_LIMIT with line:column. */
typedef struct ae_scalar {
    ae_value_kind kind;
    int64_t i;        /* Int, Bool */
    double f;         /* Float */
    const char *s;    /* String (inputs only: results do not outlive the evaluation) */
    size_t s_len;
} ae_scalar;
TL_API tl_status ae_eval_closed(ae_program *p, const ae_expr *e, const ae_expr *candidate, int64_t fuel,
                         ae_scalar *out, tl_error *err);
/* Calls the hole's def on arguments and returns its result (for refinement
 * checks on sample inputs); args are scalars of the param types. */
TL_API tl_status ae_eval_call_hole_def(ae_program *p, const ae_scalar *args, const ae_expr *candidate, int64_t fuel,
                                ae_scalar *out, tl_error *err);
/* Evaluates a refinement predicate with `binder` bound to v (and the def's
 * params bound to args when non-NULL). */
TL_API tl_status ae_eval_pred(ae_program *p, const ae_rtype *rt, const ae_scalar *v, const ae_scalar *args,
                       const ae_expr *candidate, int64_t fuel, bool *holds, tl_error *err);

/* ---- validation (validate.c) ---------------------------------------------- */

#define AE_MAX_OBJECTIVES 8
typedef struct ae_validation {
    bool parsed, typed, refinements_ok;
    int examples_total, examples_failed;
    int refinement_checks, refinement_failures;
    int n_objectives;
    double objectives[AE_MAX_OBJECTIVES]; /* all "lower is better" (maximize negated) */
    char message[512];                    /* first failure */
} ae_validation;

/* Parses, types (independently of the oracle), checks refinements and
 * @examples by evaluation and scores objectives. Returns TL_OK when it could
 * run; v->typed etc. say the verdicts. */
TL_API tl_status ae_validate(ae_program *p, const char *candidate, size_t len, ae_validation *v, tl_error *err);
/* Index of the chosen candidate among n valid ones: the Pareto front over
 * (examples_failed, objectives...), ties broken by seed. */
TL_API int ae_pareto_pick(const ae_validation *vs, int n, uint64_t seed);


#ifdef __cplusplus
}
#endif
#endif
