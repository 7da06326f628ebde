/* test_model_errors.c: a file of a supported family (dense, mixture-of-
 * experts, hybrid) with a tensor or a hyperparameter missing or mis-shaped
 * is refused with an error naming it, and an unsupported architecture is
 * refused naming it and the supported ones. One table: each case patches a
 * copy of a fixture model in place (a same-length edit of a name, a
 * dimension or a value) and loads the copy. */
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

/* One case: in models/`model`, RENAME changes the last byte of the string
 * `what` (a tensor name or key) to 'X'; DIM1 sets the second dimension of
 * tensor `what` to `value`; STRVAL overwrites the string value of key `what`
 * with the same-length `text`. The load must fail with `code` and a message
 * containing `expect`. */
typedef struct error_case {
    const char *model;
    edit_kind kind;
    const char *what;
    uint64_t value;
    const char *text;
    tl_status code;
    const char *expect;
} error_case;

#define MISSING(model, name) {model, RENAME, name, 0, NULL, TL_ERR_FORMAT, "missing tensor '" name "'"}
#define MISSING_KEY(model, key) {model, RENAME, key, 0, NULL, TL_ERR_FORMAT, "missing metadata key '" key "'"}
#define SHAPE(model, name, dim1, shape) {model, DIM1, name, dim1, NULL, TL_ERR_FORMAT, "'" name "' has shape " shape}

static const error_case CASES[] = {
    /* unsupported architecture: named, with the supported list */
    {"models/granite-gpt2-d64-bf16.gguf", STRVAL, "general.architecture", 0, "granitf", TL_ERR_UNSUPPORTED,
     "architecture 'granitf' is not supported (supported: llama, qwen2, qwen3, gemma2, gemma3, gemma4, phi3, "
     "smollm3, olmo2, granite, mistral3"},
    /* gemma2: post-norms are required; shapes are checked */
    MISSING("models/gemma2-spm-d64-f32.gguf", "blk.1.post_ffw_norm.weight"),
    SHAPE("models/gemma2-spm-d64-f32.gguf", "blk.0.attn_q.weight", 96, "[64, 96], expected [64, 128]"),
    /* gemma3: per-head q/k norms */
    MISSING("models/gemma3-spm-d128-f16.gguf", "blk.2.attn_q_norm.weight"),
    /* gemma4: the per-layer window pattern is required; the global layer's head size */
    MISSING_KEY("models/gemma4-spm-d128-bf16.gguf", "gemma4.attention.sliding_window_pattern"),
    SHAPE("models/gemma4-spm-d128-bf16.gguf", "blk.5.attn_q.weight", 128, "[128, 128], expected [128, 256]"),
    /* phi3: the fused matrices' widths, LongRoPE's factor pair */
    SHAPE("models/phi3-d64-bf16.gguf", "blk.1.attn_qkv.weight", 120, "[64, 120], expected [64, 128]"),
    {"models/phi3-d64-bf16.gguf", DIM1, "blk.0.ffn_up.weight", 192, NULL, TL_ERR_FORMAT,
     "missing tensor 'blk.0.ffn_gate.weight'"},
    MISSING("models/phi3-d64-bf16.gguf", "rope_factors_long.weight"),
    /* smollm3, mistral3: the ordinary tensors of their NoPE / temperature layers */
    MISSING("models/smollm3-gpt2-d64-f16.gguf", "blk.3.ffn_up.weight"),
    MISSING("models/mistral3-spm-d256-q4_k_m.gguf", "blk.1.attn_output.weight"),
    /* olmo2: q/k norms over the whole projection, post-norms instead of pre-norms */
    MISSING("models/olmo2-gpt2-d64-q8_0.gguf", "blk.2.attn_k_norm.weight"),
    MISSING("models/olmo2-gpt2-d64-q8_0.gguf", "blk.0.post_attention_norm.weight"),
    /* granite: logit_scale is required (llama.cpp requires it too) */
    MISSING_KEY("models/granite-gpt2-d64-bf16.gguf", "granite.logit_scale"),
    /* qwen3moe: experts, the router and their counts */
    MISSING("models/qwen3moe-d64-q8_0.gguf", "blk.1.ffn_up_exps.weight"),
    MISSING("models/qwen3moe-d64-q8_0.gguf", "blk.0.ffn_gate_inp.weight"),
    SHAPE("models/qwen3moe-d64-q8_0.gguf", "blk.0.ffn_gate_inp.weight", 7, "[64, 7], expected [64, 8]"),
    SHAPE("models/qwen3moe-d64-q8_0.gguf", "blk.1.ffn_gate_exps.weight", 32, "[64, 32, 8], expected [64, 64, 8]"),
    MISSING_KEY("models/qwen3moe-d64-q8_0.gguf", "qwen3moe.expert_count"),
    MISSING_KEY("models/qwen3moe-d64-q8_0.gguf", "qwen3moe.expert_used_count"),
    /* gpt-oss: attention sinks, biases, the window */
    MISSING("models/gpt-oss-gpt2-d64-mxfp4.gguf", "blk.1.attn_sinks.weight"),
    MISSING("models/gpt-oss-gpt2-d64-mxfp4.gguf", "blk.0.ffn_down_exps.bias"),
    SHAPE("models/gpt-oss-gpt2-d64-mxfp4.gguf", "blk.0.ffn_up_exps.bias", 4, "[64, 4], expected [64, 8]"),
    MISSING("models/gpt-oss-gpt2-d64-mxfp4.gguf", "blk.0.attn_output.bias"),
    MISSING_KEY("models/gpt-oss-gpt2-d64-mxfp4.gguf", "gpt-oss.attention.sliding_window"),
    /* qwen35 (hybrid): the recurrent layers' tensors and keys, the gated q */
    MISSING("models/qwen35-d64-q8_0.gguf", "blk.2.ssm_conv1d.weight"),
    MISSING("models/qwen35-d64-q8_0.gguf", "blk.0.ssm_a"),
    SHAPE("models/qwen35-d64-q8_0.gguf", "blk.1.attn_qkv.weight", 96, "[64, 96], expected [64, 128]"),
    SHAPE("models/qwen35-d64-q8_0.gguf", "blk.3.attn_q.weight", 128, "[64, 128], expected [64, 256]"),
    MISSING_KEY("models/qwen35-d64-q8_0.gguf", "qwen35.ssm.state_size"),
};

/* Patches a copy of the case's model, loads it, checks the error. */
static void expect_error(const error_case *c) {
    size_t n = 0;
    unsigned char *b = read_all(tl_fixture(c->model), &n);
    if (!b)
        return;
    const char *what = c->what;
    size_t at = find_gguf_string(b, n, what);
    if (!at) {
        free(b);
        return;
    }
    if (c->kind == RENAME) {
        b[at - 1] = 'X';
    } else if (c->kind == DIM1) {
        uint32_t nd;
        memcpy(&nd, b + at, 4);
        CHECKF(nd >= 2, "%s has %u dims", what, nd);
        memcpy(b + at + 4 + 8, &c->value, 8);
    } else {
        uint64_t len;
        memcpy(&len, b + at + 4, 8); /* u32 type, u64 length, bytes */
        CHECKF(len == strlen(c->text), "value of %s is %llu bytes", what, (unsigned long long)len);
        memcpy(b + at + 12, c->text, strlen(c->text));
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
        CHECKF(st == c->code && strstr(err.msg, c->expect), "%s (%s): status %d, message '%s', expected '%s'",
               c->model, what, st, err.msg, c->expect);
        tl_model_free(m);
        unlink(path);
    }
    free(b);
}

int main(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        expect_error(&CASES[i]);
    return TEST_DONE();
}
