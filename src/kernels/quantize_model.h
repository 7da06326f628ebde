/* quantize_model.h: whole-model type conversion behind `typellm quantize`.
 * Public: include/typellm/kernels.h. */
#ifndef TL_KERNELS_QUANTIZE_MODEL_H
#define TL_KERNELS_QUANTIZE_MODEL_H

#include "typellm/kernels.h"

#endif
