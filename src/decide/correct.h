/* correct.h: corrections of a categorical field's distribution for the
 * biases of the model's own label distribution (docs/decide.md, Corrected
 * distributions).
 *
 * An *order* is a labelling of the field's values: position p (label A, B,
 * C, ... in that order) shows value order[p]. Order 0 is always the
 * identity, the default rendering, whose distribution is the raw one. Each
 * order is scored as its own branch over the shared prefix (everything up
 * to the choices line is the same text in every order).
 *
 *   permute / full (Zheng et al., ICLR 2024, the permutation baseline):
 *     p(v) = (1/K) sum_o q_o(pos_o(v)), q_o the softmax over the labels in
 *     order o. "permute": K cyclic shifts of the labelling (each value at K
 *     positions; K = n: every value at every position once); "full": all n!
 *     orders, so the result does not depend on the enum's order at all.
 *   pride (PriDe, same paper): the prior over label positions is estimated
 *     from K cyclic orders as the normalized geometric mean over orders of
 *     q_o(p) (a value's content term cancels when every value visits every
 *     position), or taken as given; then p(v) proportional to q_0(v) / prior(v).
 *   calibration (Zhao et al. 2021 "content-free"; Holtzman et al. 2021
 *     domain-conditional PMI): each order's q_o is divided by the same
 *     order's distribution c_o with the context replaced by a content-free
 *     input ("N/A"; PMI: no context, the question alone) and renormalized,
 *     before the orders are combined.
 *
 * Pure functions over logprobs: unit-tested on numbers (tests/decide/test_correct.c). */
#ifndef TL_DECIDE_CORRECT_H
#define TL_DECIDE_CORRECT_H

#include <stdbool.h>
#include <stddef.h>

#include "typellm/common.h"

typedef enum tl_debias {
    TL_DEBIAS_NONE = 0,
    TL_DEBIAS_PERMUTE, /* K cyclic shifts, averaged in probability space */
    TL_DEBIAS_FULL,    /* all n! orders, averaged */
    TL_DEBIAS_PRIDE    /* the position prior divided out */
} tl_debias;

typedef enum tl_calibrate {
    TL_CALIBRATE_NONE = 0,
    TL_CALIBRATE_CONTENT_FREE, /* context replaced by a content-free input (default "N/A") */
    TL_CALIBRATE_PMI           /* context removed: the question alone */
} tl_calibrate;

/* Default number of cyclic orders: min(n, TL_DEBIAS_DEFAULT_ORDERS). */
#define TL_DEBIAS_DEFAULT_ORDERS 8
/* "full" enumerates n! orders: at most this many values (720 orders). */
#define TL_DEBIAS_FULL_MAX_VALUES 6
#define TL_CALIBRATE_DEFAULT_INPUT "N/A"

/* "permute" | "full" | "pride" | "none" -> *out; false when unknown. */
bool tl_debias_parse(const char *name, tl_debias *out);
bool tl_calibrate_parse(const char *name, tl_calibrate *out);
const char *tl_debias_name(tl_debias m);
const char *tl_calibrate_name(tl_calibrate m);

/* The orders of method m over n values (k_req: wanted cyclic orders, 0 =
 * default): *orders = k x n value indices (caller frees), row 0 the
 * identity. Cyclic order o shifts the labelling by s_o = floor(o * n / k)
 * (value (p + s_o) mod n at position p); full: every permutation, in
 * lexicographic order. NONE: the identity alone. */
tl_status tl_debias_orders(tl_debias m, size_t n, size_t k_req, size_t **orders, size_t *k, tl_error *err);

/* Combines k orders' logprobs (k x n, by position; cf: k x n calibration
 * logprobs or NULL) into the corrected distribution over values, out[n].
 * prior (n, by position): PriDe's prior, read when given_prior, else
 * estimated into it (may be NULL for other methods). */
void tl_correct_combine(tl_debias m, size_t n, size_t k, const size_t *orders, const double *lp, const double *cf,
                        bool given_prior, double *prior, double *out);

#endif
