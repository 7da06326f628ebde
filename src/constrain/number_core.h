/* number_core.h: the arithmetic shared by the spec predicates, the token
 * masks and the automaton (internal to src/constrain).
 *
 * A number prefix is summarised by a numstate; "magnitude" M is |value| in
 * units of 10^-decimals, so a sign fixes an interval [mlo, mhi] of allowed
 * magnitudes and every question becomes: does some block of magnitudes that
 * a completion can reach contain an allowed multiple of step? */
#ifndef TL_CONSTRAIN_NUMBER_CORE_H
#define TL_CONSTRAIN_NUMBER_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "constrain/constrain.h"

typedef __int128 i128;

typedef struct numstate {
    bool neg;   /* '-' seen */
    int li;     /* digits before the point so far */
    i128 iv;    /* their value */
    bool point; /* '.' seen */
    int lf;     /* digits after the point so far */
    i128 fv;    /* their value */
} numstate;

/* 10^e for 0 <= e <= 38 (beyond: saturates at 10^38). */
i128 num_pow10(int e);
/* Floor division for any signs (b > 0). */
i128 num_floordiv(i128 a, i128 b);
/* True when [a, b] (a <= b, a >= 0) holds a multiple of step (step >= 1). */
bool num_has_multiple(i128 a, i128 b, i128 step);
/* Allowed magnitudes for a sign; false when none. For integers a negative
 * sign excludes M = 0 ("-0"). */
bool num_magnitude_range(const tl_number_spec *s, bool neg, i128 *mlo, i128 *mhi);
/* One character; false (state unchanged) when it breaks the number's shape. */
bool num_apply_char(const tl_number_spec *s, numstate *st, char c);
/* Some completion of st is an allowed value. */
bool num_viable(const tl_number_spec *s, const numstate *st);
/* st itself is a complete allowed value. */
bool num_complete(const tl_number_spec *s, const numstate *st);
/* Magnitude of a state (fraction padded to `decimals`). */
i128 num_magnitude(const tl_number_spec *s, const numstate *st);
/* Appends a decimal rendering of v. */
void num_i128_to_str(i128 v, char *buf, size_t cap);

#endif
