/* dispatch.c: picks the instruction set the kernels use, once per process:
 * the best the CPU reports (cpuid + what the OS saves, via GCC's builtins),
 * unless TL_ISA=scalar|avx2|avx512 asks for a lower one. TL_ISA=amx opts in
 * to the AMX tile kernels (matmul_amx.c) where the CPU has AMX and Linux
 * grants the tile state; they have not been measured or run yet, so they are
 * never chosen by default. Tests may switch paths with tl_kernels_force_isa
 * to compare them in one process. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "kernels/kernels_internal.h"

static int isa_chosen = -1; /* tl_isa, or -1 before the first query */

#if defined(__x86_64__) || defined(__i386__)
/* F16C straight from cpuid: clang 14 does not know "f16c" as a
 * __builtin_cpu_supports feature name, and the fuzz build uses clang. */
static bool cpu_has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static tl_isa best_supported(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#ifdef TL_EMULATE_AVX512
    /* the test build whose AVX-512 kernels run on SIMDe (on top of the AVX2 ones) */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
        return TL_ISA_AVX512;
#endif
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("fma") && cpu_has_f16c())
        return TL_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        cpu_has_f16c())
        return TL_ISA_AVX2;
#endif
    return TL_ISA_SCALAR;
}

static int isa_from_name(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "amx")) return TL_ISA_AMX;
    if (!strcmp(s, "scalar")) return TL_ISA_SCALAR;
    if (!strcmp(s, "avx2")) return TL_ISA_AVX2;
    if (!strcmp(s, "avx512")) return TL_ISA_AVX512;
    return -1;
}

/* AMX on top of AVX-512, asked for once (the permission request is a syscall). */
static bool amx_ok(void) {
    static int ok = -1;
    int v = __atomic_load_n(&ok, __ATOMIC_ACQUIRE);
    if (v < 0) {
        v = best_supported() == TL_ISA_AVX512 && tl_amx_usable();
        __atomic_store_n(&ok, v, __ATOMIC_RELEASE);
    }
    return v;
}

tl_isa tl_kernels_isa_id(void) {
    int isa = __atomic_load_n(&isa_chosen, __ATOMIC_ACQUIRE);
    if (isa >= 0) return (tl_isa)isa;
    tl_isa best = best_supported();
    int want = isa_from_name(getenv("TL_ISA"));
    if (want == TL_ISA_AMX && amx_ok())
        isa = TL_ISA_AMX;
    else
        isa = (want >= 0 && want < (int)best) ? want : (int)best;
    __atomic_store_n(&isa_chosen, isa, __ATOMIC_RELEASE);
    return (tl_isa)isa;
}

static const char *isa_name(tl_isa i) {
    return i == TL_ISA_AMX ? "amx" : i == TL_ISA_AVX512 ? "avx512" : i == TL_ISA_AVX2 ? "avx2" : "scalar";
}

const char *tl_kernels_isa(void) { return isa_name(tl_kernels_isa_id()); }

int tl_kernels_force_isa(const char *name) {
    int want = isa_from_name(name);
    if (want == TL_ISA_AMX ? !amx_ok() : (want < 0 || want > (int)best_supported())) return 0;
    __atomic_store_n(&isa_chosen, want, __ATOMIC_RELEASE);
    return 1;
}
