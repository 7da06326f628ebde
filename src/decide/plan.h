/* plan.h: which decisions run together. A plan is a list of waves; the
 * fields of one wave are scored in one batched step over the same prefix
 * (the context plus every answer of earlier waves), and their answers are
 * appended to that prefix before the next wave.
 *   sequential: one wave per field, in schema order (each sees all before it);
 *   batch:      one wave with every field (each sees only the context);
 *   auto:       topological levels of depends_on (no depends_on = batch).
 * In batch and auto modes a field also waits for its structural
 * predecessors (tl_dfield.after: the presence, length or "more" decision
 * that says whether it is asked at all), so a schema with arrays of
 * objects or null on generated values has more than one wave. */
#ifndef TL_DECIDE_PLAN_H
#define TL_DECIDE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "decide/schema.h"
#include "typellm/common.h"

typedef enum tl_dmode { TL_DMODE_AUTO = 0, TL_DMODE_SEQUENTIAL, TL_DMODE_BATCH } tl_dmode;

typedef struct tl_dplan {
    size_t n_waves;
    size_t n_order;
    size_t *order;      /* field indices, wave by wave; schema order inside a wave */
    size_t *wave_start; /* n_waves + 1 offsets into order */
} tl_dplan;

/* Parses "sequential" | "batch" | "auto" (NULL = auto). */
tl_status tl_dmode_parse(const char *name, tl_dmode *out, tl_error *err);
const char *tl_dmode_name(tl_dmode m);

/* Plans the fields not marked in done (done may be NULL); a done field counts
 * as answered for depends_on. */
tl_status tl_dplan_make(const tl_dschema *s, tl_dmode mode, const bool *done, tl_dplan *out, tl_error *err);
void tl_dplan_free(tl_dplan *p);

#endif
