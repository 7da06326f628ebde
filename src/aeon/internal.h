/* internal.h: declarations shared by the files of the aeon layer only. */
#ifndef TL_AEON_INTERNAL_H
#define TL_AEON_INTERNAL_H

#include "aeon/aeon.h"

/* A type written with a name outside the fragment (List, a type variable):
 * the def using it is filtered from contexts. */
#define TL_AEON_T_UNSUPPORTED (-2)

/* Parses prog->source into prog->defs; *hole_out is the hole (NULL if none). */
tl_status tl_aeon_parse_program(tl_aeon_program *prog, tl_error *err, tl_aeon_expr **hole_out);

#endif
