/* matmul_avx2.c: AVX2 + FMA + F16C kernels (placeholder: scalar until tuned). */
#include "kernels/kernels_internal.h"

void tl_rows_float_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const float *X, int64_t n_tok, float *Y) {
    tl_rows_float_scalar(W, o0, o1, X, n_tok, Y);
}
void tl_rows_quant_avx2(const tl_matrix *W, int64_t o0, int64_t o1, const tl_act *A, float *Y) {
    tl_rows_quant_scalar(W, o0, o1, A, Y);
}
