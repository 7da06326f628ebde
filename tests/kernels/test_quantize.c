/* test_quantize.c: whole-model conversion (tl_quantize_model, behind
 * `typellm quantize`) on real fixture models, for the types the engine
 * benchmarks use plus the K-quant fallbacks and the Q4_K_M mix (see
 * quantize_check.h for what is verified), and the errors: unknown type,
 * missing input, unwritable output. */
#include "quantize_check.h"

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/tlq-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }

    /* d64: rows of 64 and 192 -- K-types fall back to 32-blocks (Q4_K -> Q5_0,
     * Q6_K -> Q8_0); test_quantize_types_slow.c covers the other types */
    const char *d64 = "models/llama-spm-d64-f32.gguf";
    check_conversion(d64, "F16", TL_TYPE_F16, 1, NULL, NULL, 0);
    check_conversion(d64, "Q8_0", TL_TYPE_Q8_0, 7, NULL, NULL, 0);
    check_conversion(d64, "Q4_0", TL_TYPE_Q4_0, 2, NULL, NULL, 0);
    check_conversion(d64, "Q4_K", TL_TYPE_Q5_0, 14, NULL, NULL, 0);
    check_conversion(d64, "Q6_K", TL_TYPE_Q8_0, 18, NULL, NULL, 0);

    /* d256 (Q4_K + Q6_K input, 2 layers, rows of 256 and 512): requantize,
     * keeping K-types. Q4_K_M gives Q6_K to output.weight and to attn_v /
     * ffn_down of the "more bits" layers: with 2 layers that is layer 1 only
     * (i >= 7n/8). */
    const char *d256 = "models/llama-spm-d256-q4_k_m.gguf";
    static const char *const km_names[] = {"output.weight", "blk.1.attn_v", "blk.1.ffn_down"};
    static const tl_ggml_type km_types[] = {TL_TYPE_Q6_K, TL_TYPE_Q6_K, TL_TYPE_Q6_K};
    check_conversion(d256, "Q4_K_M", TL_TYPE_Q4_K, 15, km_names, km_types, 3);

    /* gpt-oss (MXFP4 experts + Q8_0): MXFP4_MOE keeps the expert stacks in
     * MXFP4 (3-D tensors, rows of every expert), the rest Q8_0, routers and
     * the 2-D expert biases F32 */
    const char *oss = "models/gpt-oss-gpt2-d64-mxfp4.gguf";
    static const char *const oss_names[] = {
        "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight",
        "blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight",
        "blk.0.ffn_gate_inp", "blk.1.ffn_gate_inp", "_exps.bias"};
    static const tl_ggml_type oss_types[] = {TL_TYPE_MXFP4, TL_TYPE_MXFP4, TL_TYPE_MXFP4, TL_TYPE_MXFP4,
                                             TL_TYPE_MXFP4, TL_TYPE_MXFP4, TL_TYPE_F32,   TL_TYPE_F32,
                                             TL_TYPE_F32};
    check_conversion(oss, "MXFP4_MOE", TL_TYPE_Q8_0, 38, oss_names, oss_types, 9);

    /* errors */
    tl_error err = {0};
    char out[512];
    snprintf(out, sizeof out, "%s/never.gguf", tmpdir);
    CHECK(tl_quantize_model(tl_fixture(d64), out, "Q3_X", 1, NULL, &err) == TL_ERR_INVALID);
    CHECKF(strstr(err.msg, "Q3_X") != NULL, "message: %s", err.msg);
    CHECK(tl_quantize_model(tl_fixture("models/does-not-exist.gguf"), out, "Q8_0", 1, NULL, &err) != TL_OK);
    CHECK(access(out, F_OK) != 0);
    snprintf(out, sizeof out, "%s/no-such-dir/x.gguf", tmpdir);
    CHECK(tl_quantize_model(tl_fixture(d64), out, "Q8_0", 1, NULL, &err) == TL_ERR_IO);
    CHECKF(strstr(err.msg, "no-such-dir") != NULL, "message: %s", err.msg);
    rmdir(tmpdir);
    return TEST_DONE();
}
