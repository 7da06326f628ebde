/* typellm/kernels.h: the public face of the numeric core: which instruction
 * set the matrix kernels use, and whole-model type conversion (what
 * `typellm quantize` runs). */
#ifndef TYPELLM_KERNELS_H
#define TYPELLM_KERNELS_H

#include <stdint.h>

#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which instruction set the matrix kernels use ("avx512", "avx2", "scalar");
 * TL_ISA=scalar|avx2|avx512 in the environment forces a path. Static string. */
TL_API const char *tl_kernels_isa(void);

typedef struct tl_quantize_stats {
    uint64_t tensors_by_type[TL_TYPE_COUNT]; /* output tensors of each type */
    uint64_t bytes_in, bytes_out;            /* tensor data */
} tl_quantize_stats;

/* Space-separated list of the accepted type names, for usage messages. */
TL_API const char *tl_quantize_type_names(void);

/* Reads in_path, writes out_path as GGUF v3 with weights of type_name
 * (a ggml type such as "Q8_0", or the mixes "Q4_K_M" / "Q5_K_M"), using
 * n_threads (<= 0: all cores). stats (optional, zeroed by the caller) counts
 * the output tensors by type. A failed write removes out_path. */
TL_API tl_status tl_quantize_model(const char *in_path, const char *out_path, const char *type_name, int n_threads,
                            tl_quantize_stats *stats, tl_error *err);


#ifdef __cplusplus
}
#endif
#endif
