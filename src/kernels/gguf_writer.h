/* gguf_writer.h: a small GGUF v3 writer, enough to write a model back out
 * (metadata copied from a reader plus new tensors) -- what `typellm quantize`
 * needs. Tensor data is produced by a callback at write time, so a model
 * never has to be held in memory at once.
 *
 * File layout written: header, key/values, tensor infos, zero padding to the
 * alignment, then each tensor's bytes padded to the alignment. */
#ifndef TL_KERNELS_GGUF_WRITER_H
#define TL_KERNELS_GGUF_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "gguf/gguf.h"

typedef struct tl_gguf_writer tl_gguf_writer;

/* alignment: a power of two (GGUF's default is 32); written as general.alignment. */
tl_gguf_writer *tl_gguf_writer_new(uint32_t alignment);
void tl_gguf_writer_free(tl_gguf_writer *w);

/* Key/values in the order added; a key added twice keeps the last value.
 * Values from a reader are deep-copied (the reader may close afterwards). */
tl_status tl_gguf_writer_set_value(tl_gguf_writer *w, const char *key, size_t key_len, const tl_gguf_value *v, tl_error *err);
tl_status tl_gguf_writer_set_u32(tl_gguf_writer *w, const char *key, uint32_t v, tl_error *err);

/* Produces the nbytes of a tensor into dst (nbytes of room); returns TL_OK or an error. */
typedef tl_status (*tl_gguf_tensor_fill)(void *ctx, uint64_t index, void *dst, size_t nbytes, tl_error *err);

/* Adds a tensor (ne[0] = row length; dims beyond n_dims ignored). */
tl_status tl_gguf_writer_add_tensor(tl_gguf_writer *w, const char *name, size_t name_len, uint32_t n_dims,
                                    const int64_t ne[4], tl_ggml_type type, tl_error *err);

/* Writes the file atomically (util/fileio.h: a temporary beside path, fsync,
 * rename), so a failure or a kill midway never leaves a partial file at path;
 * fill(ctx, i, ...) is called once per tensor in order. */
tl_status tl_gguf_writer_write(tl_gguf_writer *w, const char *path, tl_gguf_tensor_fill fill, void *ctx, tl_error *err);

#endif
