/* avx512.h: the intrinsics and TARGET attribute of the AVX-512 kernel files
 * (matmul_avx512.c, mxfp4_avx512.c), compiled with target attributes so the
 * build needs no -march. TL_EMULATE_AVX512 is the test build for machines
 * without AVX-512 (tests/kernels/CMakeLists.txt): the same code on SIMDe's
 * portable AVX-512 (emulate_avx512.h), so its logic is checked everywhere. */
#ifndef TL_KERNELS_AVX512_H
#define TL_KERNELS_AVX512_H
#ifdef TL_EMULATE_AVX512
#include "kernels/emulate_avx512.h"
#define TARGET
#else
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")))
#endif
#endif
