/* kernels.h: the numeric core of the engine: a thread pool, quantized row
 * formats (dequantize / quantize) and the matrix-times-activations product.
 *
 * Invariants every implementation keeps (the decision layer relies on them):
 *  - Determinism: results are bit-identical whatever the thread count.
 *  - Batch independence: row t of tl_matmul's output depends only on row t of
 *    X (never on n_tok or the other rows), so a token computed alone, in a
 *    batch of branches, or after a cached prefix gives the same bits.
 *  - ISA dispatch at run time (AVX-512/VNNI/BF16, AVX2, scalar); TL_ISA=scalar
 *    (or avx2, avx512) in the environment forces a path, so CI tests each;
 *    TL_ISA=amx opts in to the AMX tiles (not the default: unmeasured). */
#ifndef TL_KERNELS_KERNELS_H
#define TL_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "typellm/kernels.h"

/* ---- thread pool --------------------------------------------------------- */

typedef struct tl_pool tl_pool;

/* n_threads <= 0 means the number of online cores. */
tl_pool *tl_pool_new(int n_threads);
void tl_pool_free(tl_pool *p);
int tl_pool_size(const tl_pool *p);
/* Calls fn(arg, begin, end, thread) over a deterministic split of [0, n) into
 * chunks of at least grain items; returns when all are done. The calling
 * thread takes part. Not reentrant from inside fn. */
typedef void (*tl_pool_fn)(void *arg, int64_t begin, int64_t end, int thread);
void tl_pool_run(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg);
/* Like tl_pool_run, but the chunks of grain items are handed out one at a
 * time to whichever thread is free (thread: the one running the call), so a
 * slower or descheduled core takes fewer. Only for work whose every item's
 * result is independent of which call, chunk or thread computes it. */
void tl_pool_run_dynamic(tl_pool *p, int64_t n, int64_t grain, tl_pool_fn fn, void *arg);

/* ---- rows ---------------------------------------------------------------- */

/* tl_kernels_isa (which instruction set the kernels use) is public: typellm/kernels.h. */
/* True when the engine can multiply by weights of this type. */
int tl_kernels_supports(tl_ggml_type t);
/* Switches every later kernel call to the named path ("scalar", "avx2",
 * "avx512", "amx"); returns 0 (and changes nothing) if the CPU lacks it. For tests
 * and benchmarks comparing paths; not to be called while kernels run. */
int tl_kernels_force_isa(const char *name);

/* dst[0..n) = dequantized src (one row; n a multiple of the type's block). */
void tl_dequant_row(tl_ggml_type t, const void *src, float *dst, int64_t n);
/* Quantizes one row; returns bytes written (tl_type_row_bytes(t, n)), 0 if the
 * type cannot be produced. Types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4,
 * Q4_K, Q5_K, Q6_K. */
size_t tl_quantize_row(tl_ggml_type t, const float *src, void *dst, int64_t n);

/* ---- matrix product ------------------------------------------------------ */

typedef struct tl_matrix {
    tl_ggml_type type;
    int64_t n_in;      /* row length (ne[0]) */
    int64_t n_out;     /* number of rows (ne[1]) */
    size_t row_bytes;  /* bytes per stored row */
    const void *data;  /* n_out rows, usually in the mmap'd file */
} tl_matrix;

/* Y[t*n_out + o] = sum_i W[o][i] * X[t*n_in + i] for t in [0, n_tok).
 * X and Y are row-major float32. See the invariants above. */
void tl_matmul(tl_pool *p, const tl_matrix *W, const float *X, int64_t n_tok, float *Y);

/* Y[i] = W[i] x X for i < n, every W[i] with the same n_in (a layer's q/k/v,
 * or gate/up): the activations are quantized once for all of them and one
 * pool run covers every output row. Each Y[i] gets exactly the bits
 * tl_matmul(p, W[i], X, n_tok, Y[i]) gives. n <= 8. */
void tl_matmul_multi(tl_pool *p, const tl_matrix *const *W, int n, const float *X, int64_t n_tok, float *const *Y);

/* ---- oracle (oracle.c; a test instrument) ------------------------------- */

/* TL_ORACLE_OFF: the kernels as above. TL_ORACLE_EXACT: every tl_matmul /
 * tl_matmul_multi dequantizes W to F32 and multiplies on the float path (the
 * F32 forward of the dequantized weights; force the scalar ISA for the
 * oracle proper). TL_ORACLE_OWN_ACT: the same, with X first rounded as
 * typellm's integer kernels round it (Q8_0; none for float weights): what
 * they must reproduce. TL_ORACLE_PEER_ACT: X rounded as llama.cpp's CPU
 * kernel for W's type rounds it (F16, BF16, Q8_0, Q8_K), estimating that
 * peer's error. Process-wide; switch only while no kernel runs. Slow: tests only. */
typedef enum { TL_ORACLE_OFF, TL_ORACLE_EXACT, TL_ORACLE_OWN_ACT, TL_ORACLE_PEER_ACT } tl_oracle_mode;
void tl_kernels_set_oracle(tl_oracle_mode mode);
tl_oracle_mode tl_kernels_oracle(void);
void tl_oracle_matmul(const tl_matrix *W, const float *X, int64_t n_tok, float *Y);

#endif
