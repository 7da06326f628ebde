/* test_aeon_verdicts.c: a differential table of typellm's reader, checker,
 * oracle and evaluator against Aeon's own verdicts. Each entry says where
 * Aeon's verdict comes from: Aeon's grammar (aeon/sugar/aeon_sugar.lark),
 * its prelude (aeon/prelude/prelude.py: operator types, and the Python
 * lambdas its evaluator runs), a program Aeon's checker was run on (issue
 * 35's let case, the solutions of ../shared/fixtures/aeon-tasks, which its
 * README says Aeon's checker accepted). Candidates are checked two ways:
 * tl_aeon_check_candidate (the independent checker) and the oracle (LIVE and
 * accepting exactly when Aeon accepts), so neither may return a term Aeon
 * rejects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aeon/aeon.h"
#include "aeon/oracle.h"
#include "tl_test.h"

#define CONTEXT "def c (n:Int) (m:Int) (b:Bool) (x:Float) (s:String) (f:(k:Int) -> Int) : "

typedef struct verdict_case {
    const char *goal, *text;
    bool aeon_accepts;
    const char *source;
} verdict_case;

static const verdict_case candidates[] = {
    /* issue 35: Aeon's checker rejects the first and accepts it without the let */
    {"Int", "(if n < 3 then (let w := 10 in 0 * 10) + 11 else 3) * 1000", false, "issue 35, Aeon's checker"},
    {"Int", "(if n < 3 then (0 * 10) + 11 else 3) * 1000", true, "issue 35, Aeon's checker"},
    {"Int", "(if n < 3 then (0 * 10) + (let w := 10 in w) else 3) * 1000", false,
     "inferred from issue 35 (a let in the other operand; not run in Aeon)"},
    /* t44_random_func's solution, accepted by Aeon: a let operand outside any if */
    {"Float", "(let acc := toFloat n in acc - acc) - (if m != n then 10.0 + 3.5 else 0.5 - 0.5)", true,
     "aeon-tasks t44 solution, Aeon's checker"},
    {"Int", "let t := n * 3 in if t > 20 then 20 else t", true, "aeon-tasks t19 solution, Aeon's checker"},
    {"Bool", "let d := n - m in d < 5 && 0 - 5 < d", true, "aeon-tasks t20 solution, Aeon's checker"},
    {"Int", "n * (n + 1) / 2", true, "aeon-tasks t08 solution, Aeon's checker"},
    {"Bool", "(n % 4 = 0 && n % 100 != 0) || n % 400 = 0", true, "aeon-tasks t27 solution, Aeon's checker"},
    /* the grammar: operands of + - * / % are applications/atoms; if and let need parentheses */
    {"Int", "1 + if b then 1 else 2", false, "aeon_sugar.lark: expression_plus + expression_fact"},
    {"Int", "1 + let a := 1 in a", false, "aeon_sugar.lark: expression_plus + expression_fact"},
    {"Int", "(if b then 1 else 2) + 1", true, "aeon_sugar.lark: non_dot_simple ( expression )"},
    {"Int", "f (if b then 1 else 2)", true,
     "aeon_sugar.lark: app_arg; inferred from issue 35 (no let), not run in Aeon"},
    /* comparisons and equality are non-associative; ! binds looser than comparisons */
    {"Bool", "n < m < 3", false, "aeon_sugar.lark: expression_bool is plus < plus"},
    {"Bool", "b = b = b", false, "aeon_sugar.lark: expression_eq is not = not"},
    {"Bool", "!b = b", true, "aeon_sugar.lark: (!b) = b"},
    {"Bool", "!n < 3", true, "aeon_sugar.lark: expression_not is ! expression_not | expression_bool"},
    {"Bool", "b || b && n < 3", true, "aeon_sugar.lark: || over &&"},
    /* operator types from the prelude */
    {"Int", "n % 2", true, "prelude.py: % : (x:Int) -> (y:Int) -> Int"},
    {"Float", "x % 2.0", false, "prelude.py: % : (x:Int) -> (y:Int) -> Int"},
    {"Int", "n / 2", true, "prelude.py: / : forall a:B, (x:a) -> (y:a) -> a"},
    {"Float", "x + n", false, "prelude.py: + : forall a:B, (x:a) -> (y:a) -> a (one a)"},
    {"String", "s + \"a\"", true, "prelude.py: + : forall a:B, (x:a) -> (y:a) -> a"},
    {"Bool", "b && n", false, "prelude.py: && : (x:Bool) -> (y:Bool) -> Bool"},
    {"Float", "toFloat n / 2.0", true, "prelude.py: toFloat"},
    /* application */
    {"Int", "f n m", false, "typing: f : (k:Int) -> Int takes one argument"},
    {"Int", "fun k => k", false, "typing: an abstraction needs an arrow type"},
};

/* Programs the whole-file reader must load or refuse as Aeon's parser does. */
static const struct {
    const char *src;
    bool aeon_accepts;
    const char *source;
} files[] = {
    {"@example(c (-1) = 0 - 1)\ndef c (n:Int) : Int := ?hole;", true,
     "aeon_sugar.lark: expression : \"-\" expression_i"},
    {"@example(c (-5 + 3) = 0 - 8)\ndef c (n:Int) : Int := ?hole;", true, "aeon_sugar.lark: - applies to all of 5 + 3"},
    {"@example(c (1 + -2) = 0)\ndef c (n:Int) : Int := ?hole;", false,
     "aeon_sugar.lark: a minus only starts an expression"},
    {"@example(c (- -1) = 1)\ndef c (n:Int) : Int := ?hole;", false, "aeon_sugar.lark: expression_i has no leading -"},
};

/* @example verdicts of Aeon's evaluator (the prelude's Python lambdas) with c := n. */
static const struct {
    const char *example;
    bool holds;
    const char *source;
} evals[] = {
    {"c 7 / 2 = 3", false, "prelude.py: x / y is Python's true division: 3.5"},
    {"c 6 / 2 = 3", true, "prelude.py: 6 / 2 is 3.0, and 3.0 == 3 in Python"},
    {"c 7 / 2 * 2 = 7", true, "prelude.py: (7 / 2) * 2 is 7.0"},
    {"c (0 - 7) % 2 = 1", true, "prelude.py: Python's %: the divisor's sign"},
    {"c 7 % (0 - 2) = 0 - 1", true, "prelude.py: Python's %"},
    {"c (-7) / 2 < 0 - 3", true, "prelude.py: -3.5 < -3"},
    {"c (-3) = 0 - 3", true, "aeon_sugar.lark: unary minus"},
};

static tl_aeon_program *load(const char *src) {
    tl_aeon_program *p = NULL;
    tl_error err = {0};
    if (tl_aeon_program_load(src, strlen(src), &p, &err))
        return NULL;
    return p;
}

static void test_candidates(void) {
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        const verdict_case *vc = &candidates[i];
        char src[512];
        snprintf(src, sizeof src, CONTEXT "%s := ?hole;", vc->goal);
        tl_aeon_program *p = load(src);
        CHECKF(p != NULL, "%s: the context does not load", vc->text);
        if (!p)
            continue;
        tl_error err = {0};
        tl_aeon_expr *e = NULL;
        bool checker = tl_aeon_parse_expr(p, vc->text, strlen(vc->text), &e, &err) == TL_OK &&
                       tl_aeon_check_candidate(p, e, &err) == TL_OK;
        CHECKF(checker == vc->aeon_accepts, "checker %s '%s' : %s, Aeon %s (%s)%s%s", checker ? "accepts" : "rejects",
               vc->text, vc->goal, vc->aeon_accepts ? "accepts" : "rejects", vc->source, checker ? "" : ": ",
               checker ? "" : err.msg);
        tl_aeon_scope *scope = NULL;
        tl_aeon_engine *eng = NULL;
        CHECK(tl_aeon_scope_new(p, &scope, &err) == TL_OK && tl_aeon_engine_new(scope, NULL, &eng, &err) == TL_OK);
        if (eng) {
            tl_aeon_state *s0 = tl_aeon_state_initial();
            tl_aeon_state *st = tl_aeon_state_advance(s0, vc->text, strlen(vc->text));
            bool oracle = st && tl_aeon_is_accepting(eng, st);
            CHECKF(oracle == vc->aeon_accepts, "oracle %s '%s' : %s, Aeon %s (%s)", oracle ? "accepts" : "rejects",
                   vc->text, vc->goal, vc->aeon_accepts ? "accepts" : "rejects", vc->source);
            tl_aeon_state_free(st);
            tl_aeon_state_free(s0);
        }
        tl_aeon_engine_free(eng);
        tl_aeon_scope_free(scope);
        tl_aeon_program_free(p);
    }
}

static void test_files(void) {
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tl_aeon_program *p = load(files[i].src);
        CHECKF((p != NULL) == files[i].aeon_accepts, "reader %s %s, Aeon %s (%s)", p ? "loads" : "refuses",
               files[i].src, files[i].aeon_accepts ? "parses it" : "refuses it", files[i].source);
        tl_aeon_program_free(p);
    }
}

static void test_evals(void) {
    for (size_t i = 0; i < sizeof evals / sizeof evals[0]; i++) {
        char src[256];
        snprintf(src, sizeof src, "@example(%s)\ndef c (n:Int) : Int := ?hole;", evals[i].example);
        tl_aeon_program *p = load(src);
        CHECKF(p != NULL, "%s does not load", evals[i].example);
        if (!p)
            continue;
        tl_aeon_validation v;
        tl_error err;
        CHECK(tl_aeon_validate(p, "n", 1, &v, &err) == TL_OK);
        CHECKF(v.typed && v.examples_total == 1 && (v.examples_failed == 0) == evals[i].holds,
               "@example(%s) %s, in Aeon it %s (%s)", evals[i].example, v.examples_failed ? "fails" : "holds",
               evals[i].holds ? "holds" : "fails", evals[i].source);
        tl_aeon_program_free(p);
    }
}

int main(void) {
    test_candidates();
    test_files();
    test_evals();
    return TEST_DONE();
}
