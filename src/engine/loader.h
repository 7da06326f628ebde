/* loader.h: checked reads of GGUF hyperparameters and tensors for the
 * per-family loaders (moe.c, deltanet.c): every miss or mismatch is an error
 * naming the file and the key or tensor, and 1-D/2-D float vectors are
 * converted into caller-provided float32 storage. */
#ifndef TL_ENGINE_LOADER_H
#define TL_ENGINE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef struct tl_loader {
    const tl_gguf *g;
    const char *path;  /* for messages */
    const char *arch;  /* key prefix */
    float *vec;        /* storage for tl_ld_vector */
    size_t vec_used, vec_cap;
} tl_loader;

/* ARCH.suffix as u32 in [lo, hi]; def when absent and not required. */
tl_status tl_ld_u32(tl_loader *L, const char *suffix, bool required, uint32_t def, uint32_t lo, uint32_t hi,
                    uint32_t *out, tl_error *err);
/* ARCH.suffix as a finite f32; def when absent. */
tl_status tl_ld_f32(tl_loader *L, const char *suffix, float def, float *out, tl_error *err);
/* Tensor `name` of shape {ne[0], ne[1], ne[2]} (trailing 1s implied); *out NULL when absent and optional. */
tl_status tl_ld_tensor(tl_loader *L, const char *name, const int64_t ne[3], bool required,
                       const tl_gguf_tensor **out, tl_error *err);
/* n_stack matrices n_in -> n_out of a type the kernels multiply (n_stack 1: a
 * plain matrix); *m is the first, *stride the bytes between them (may be NULL).
 * m->data NULL when absent and optional. */
tl_status tl_ld_matrix(tl_loader *L, const char *name, int64_t n_in, int64_t n_out, int64_t n_stack, bool required,
                       tl_matrix *m, size_t *stride, tl_error *err);
/* ne0 x ne1 values (F32/F16/BF16) converted into L->vec; *out NULL when absent and optional. */
tl_status tl_ld_vector(tl_loader *L, const char *name, int64_t ne0, int64_t ne1, bool required, const float **out,
                       tl_error *err);

#endif
