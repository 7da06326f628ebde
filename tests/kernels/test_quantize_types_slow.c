/* test_quantize_types_slow.c: tl_quantize_model to every other type it
 * accepts (BF16, Q4_1, Q5_0, Q5_1, Q5_K and the K-types on rows of 256, the
 * Q5_K_M mix), with the checks of quantize_check.h. Slow under the
 * sanitizers (K-quant scale searches over whole models): release pass only. */
#include "quantize_check.h"

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/tlq-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    const char *d64 = "models/llama-spm-d64-f32.gguf";
    check_conversion(d64, "BF16", TL_TYPE_BF16, 32, NULL, NULL, 0);
    check_conversion(d64, "Q4_1", TL_TYPE_Q4_1, 3, NULL, NULL, 0);
    check_conversion(d64, "Q5_0", TL_TYPE_Q5_0, 8, NULL, NULL, 0);
    check_conversion(d64, "Q5_1", TL_TYPE_Q5_1, 9, NULL, NULL, 0);
    check_conversion(d64, "Q5_K", TL_TYPE_Q5_1, 16, NULL, NULL, 0);
    /* rows of 256/512 keep the K-types */
    const char *d256 = "models/llama-spm-d256-q4_k_m.gguf";
    check_conversion(d256, "Q4_K", TL_TYPE_Q4_K, 14, NULL, NULL, 0);
    check_conversion(d256, "Q5_K", TL_TYPE_Q5_K, 16, NULL, NULL, 0);
    check_conversion(d256, "Q6_K", TL_TYPE_Q6_K, 18, NULL, NULL, 0);
    check_conversion(d256, "Q8_0", TL_TYPE_Q8_0, 7, NULL, NULL, 0);
    static const char *const km_names[] = {"output.weight", "blk.1.attn_v", "blk.1.ffn_down"};
    static const tl_ggml_type km_types[] = {TL_TYPE_Q6_K, TL_TYPE_Q6_K, TL_TYPE_Q6_K};
    check_conversion(d256, "Q5_K_M", TL_TYPE_Q5_K, 17, km_names, km_types, 3);
    rmdir(tmpdir);
    return TEST_DONE();
}
