/* test_model_errors.c: a file of a supported family with a tensor or a
 * hyperparameter missing or mis-shaped is refused with an error naming it,
 * and an unsupported architecture is refused naming it and the supported
 * ones. Each case patches a copy of a fixture model in place (same-length
 * edits of a name, a dimension or a value) and loads the copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tl_test.h"

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECKF(f != NULL, "cannot open %s", path);
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    if (b && fread(b, 1, *n, f) != *n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* The offset just after the only occurrence of s (a GGUF string: u64 length
 * then bytes) in the file, or 0. */
static size_t find_gguf_string(const unsigned char *b, size_t n, const char *s) {
    size_t len = strlen(s), at = 0;
    int hits = 0;
    for (size_t i = 8; i + len <= n; i++)
        if (!memcmp(b + i, s, len) && b[i - 8] == (unsigned char)len && !b[i - 7]) {
            at = i + len;
            hits++;
        }
    CHECKF(hits == 1, "'%s' found %d times", s, hits);
    return hits == 1 ? at : 0;
}

typedef enum { RENAME, DIM1, STRVAL } edit_kind;

/* Patches a copy of models/model: RENAME changes the last byte of the
 * string `what` (a tensor name or key) to 'X'; DIM1 sets the second
 * dimension of tensor `what` to value; STRVAL overwrites the string value of
 * key `what` with the same-length text in `text`. Then loads it and checks
 * the error code and that the message contains `expect`. */
static void expect_error(const char *model, edit_kind kind, const char *what, uint64_t value, const char *text,
                         tl_status code, const char *expect) {
    size_t n = 0;
    unsigned char *b = read_all(tl_fixture(model), &n);
    if (!b)
        return;
    size_t at = find_gguf_string(b, n, what);
    if (!at) {
        free(b);
        return;
    }
    if (kind == RENAME) {
        b[at - 1] = 'X';
    } else if (kind == DIM1) {
        uint32_t nd;
        memcpy(&nd, b + at, 4);
        CHECKF(nd >= 2, "%s has %u dims", what, nd);
        memcpy(b + at + 4 + 8, &value, 8);
    } else {
        uint64_t len;
        memcpy(&len, b + at + 4, 8); /* u32 type, u64 length, bytes */
        CHECKF(len == strlen(text), "value of %s is %llu bytes", what, (unsigned long long)len);
        memcpy(b + at + 12, text, strlen(text));
    }
    char path[] = "/tmp/tl_model_errors_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, b, n) == (ssize_t)n);
        close(fd);
        tl_model *m = NULL;
        tl_error err = {0};
        tl_status st = tl_model_load(path, &m, &err);
        CHECKF(st == code && strstr(err.msg, expect), "%s (%s): status %d, message '%s', expected '%s'", model, what,
               st, err.msg, expect);
        tl_model_free(m);
        unlink(path);
    }
    free(b);
}

int main(void) {
    /* unsupported architecture: named, with the supported list */
    expect_error("models/granite-gpt2-d64-bf16.gguf", STRVAL, "general.architecture", 0, "granitf", TL_ERR_UNSUPPORTED,
                 "architecture 'granitf' is not supported (supported: llama, qwen2, qwen3, gemma2, gemma3, gemma4, "
                 "phi3, smollm3, olmo2, granite, mistral3");
    /* gemma2: post-norms are required; shapes are checked */
    expect_error("models/gemma2-spm-d64-f32.gguf", RENAME, "blk.1.post_ffw_norm.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.1.post_ffw_norm.weight'");
    expect_error("models/gemma2-spm-d64-f32.gguf", DIM1, "blk.0.attn_q.weight", 96, NULL, TL_ERR_FORMAT,
                 "tensor 'blk.0.attn_q.weight' has shape [64, 96], expected [64, 128]");
    /* gemma3: per-head q/k norms */
    expect_error("models/gemma3-spm-d128-f16.gguf", RENAME, "blk.2.attn_q_norm.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.2.attn_q_norm.weight'");
    /* gemma4: the per-layer window pattern is required; the global layer's head size */
    expect_error("models/gemma4-spm-d128-bf16.gguf", RENAME, "gemma4.attention.sliding_window_pattern", 0, NULL,
                 TL_ERR_FORMAT, "missing metadata key 'gemma4.attention.sliding_window_pattern'");
    expect_error("models/gemma4-spm-d128-bf16.gguf", DIM1, "blk.5.attn_q.weight", 128, NULL, TL_ERR_FORMAT,
                 "tensor 'blk.5.attn_q.weight' has shape [128, 128], expected [128, 256]");
    /* phi3: the fused matrices' widths, LongRoPE's factor pair */
    expect_error("models/phi3-d64-bf16.gguf", DIM1, "blk.1.attn_qkv.weight", 120, NULL, TL_ERR_FORMAT,
                 "tensor 'blk.1.attn_qkv.weight' has shape [64, 120], expected [64, 128]");
    expect_error("models/phi3-d64-bf16.gguf", DIM1, "blk.0.ffn_up.weight", 192, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.0.ffn_gate.weight'");
    expect_error("models/phi3-d64-bf16.gguf", RENAME, "rope_factors_long.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'rope_factors_long.weight'");
    /* smollm3, mistral3: the ordinary tensors of their NoPE / temperature layers */
    expect_error("models/smollm3-gpt2-d64-f16.gguf", RENAME, "blk.3.ffn_up.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.3.ffn_up.weight'");
    expect_error("models/mistral3-spm-d256-q4_k_m.gguf", RENAME, "blk.1.attn_output.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.1.attn_output.weight'");
    /* olmo2: q/k norms over the whole projection, post-norms instead of pre-norms */
    expect_error("models/olmo2-gpt2-d64-q8_0.gguf", RENAME, "blk.2.attn_k_norm.weight", 0, NULL, TL_ERR_FORMAT,
                 "missing tensor 'blk.2.attn_k_norm.weight'");
    expect_error("models/olmo2-gpt2-d64-q8_0.gguf", RENAME, "blk.0.post_attention_norm.weight", 0, NULL,
                 TL_ERR_FORMAT, "missing tensor 'blk.0.post_attention_norm.weight'");
    /* granite: logit_scale is required (llama.cpp requires it too) */
    expect_error("models/granite-gpt2-d64-bf16.gguf", RENAME, "granite.logit_scale", 0, NULL, TL_ERR_FORMAT,
                 "missing metadata key 'granite.logit_scale'");
    return TEST_DONE();
}
