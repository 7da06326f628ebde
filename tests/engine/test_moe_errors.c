/* test_moe_errors.c: mixture-of-experts (qwen3moe, gpt-oss) and hybrid
 * (qwen35) files with a missing or mis-shaped tensor or hyperparameter of
 * theirs are refused with an error naming it. Each case is a fixture with
 * one header field changed (a tensor or key renamed in place, or one
 * dimension altered), written to a temp file. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tl_test.h"

static uint8_t *file_data;
static size_t file_len;

static void read_fixture(const char *rel) {
    free(file_data);
    file_data = NULL;
    FILE *f = fopen(tl_fixture(rel), "rb");
    CHECKF(f != NULL, "cannot open %s", rel);
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    file_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    file_data = malloc(file_len);
    CHECK(fread(file_data, 1, file_len, f) == file_len);
    fclose(f);
}

/* The first occurrence of a length-prefixed (u64) string equal to s. */
static uint8_t *find_str(uint8_t *buf, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 8; i + n <= file_len; i++) {
        uint64_t len;
        memcpy(&len, buf + i - 8, 8);
        if (len == n && !memcmp(buf + i, s, n))
            return buf + i;
    }
    return NULL;
}

/* Loads a copy of the fixture changed by edit(copy); returns the error text. */
static const char *load_edited(const char *what, void (*edit)(uint8_t *, const char *, const char *), const char *a,
                               const char *b) {
    static char msg[1024];
    uint8_t *copy = malloc(file_len);
    memcpy(copy, file_data, file_len);
    edit(copy, a, b);
    char path[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/tl_moe_err_%d.gguf", tmp ? tmp : "/tmp", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(copy, 1, file_len, f) == file_len);
    if (f)
        fclose(f);
    free(copy);
    tl_model *m = NULL;
    tl_error err = {0};
    tl_status st = tl_model_load(path, &m, &err);
    CHECKF(st != TL_OK, "%s: loaded", what);
    tl_model_free(m);
    unlink(path);
    snprintf(msg, sizeof msg, "%s", err.msg);
    return msg;
}

/* Renames string a to b (same length) where it first occurs. */
static void rename_str(uint8_t *buf, const char *a, const char *b) {
    uint8_t *p = find_str(buf, a);
    CHECKF(p != NULL, "'%s' not in the fixture", a);
    if (p)
        memcpy(p, b, strlen(b));
}

/* Sets dimension 1 of tensor a's info to the number in b. */
static void set_dim1(uint8_t *buf, const char *a, const char *b) {
    uint8_t *p = find_str(buf, a);
    CHECKF(p != NULL, "'%s' not in the fixture", a);
    if (!p)
        return;
    p += strlen(a) + 4 + 8; /* name, n_dims, ne[0] */
    uint64_t v = strtoull(b, NULL, 10);
    memcpy(p, &v, 8);
}

int main(void) {
    read_fixture("models/qwen3moe-d64-q8_0.gguf");
    if (!file_data)
        return TEST_DONE();
    const char *e;
    e = load_edited("missing expert tensor", rename_str, "blk.1.ffn_up_exps.weight", "blk.1.ffn_up_exps.weighx");
    CHECKF(strstr(e, "missing tensor 'blk.1.ffn_up_exps.weight'"), "%s", e);
    e = load_edited("missing router", rename_str, "blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_inp.weighx");
    CHECKF(strstr(e, "missing tensor 'blk.0.ffn_gate_inp.weight'"), "%s", e);
    e = load_edited("router shape", set_dim1, "blk.0.ffn_gate_inp.weight", "7");
    CHECKF(strstr(e, "'blk.0.ffn_gate_inp.weight' has shape [64, 7], expected [64, 8]"), "%s", e);
    e = load_edited("expert width", set_dim1, "blk.1.ffn_gate_exps.weight", "32");
    CHECKF(strstr(e, "'blk.1.ffn_gate_exps.weight' has shape [64, 32, 8], expected [64, 64, 8]"), "%s", e);
    e = load_edited("expert count key", rename_str, "qwen3moe.expert_count", "qwen3moe.expert_counx");
    CHECKF(strstr(e, "missing metadata key 'qwen3moe.expert_count'"), "%s", e);
    e = load_edited("used count key", rename_str, "qwen3moe.expert_used_count", "qwen3moe.expert_used_counx");
    CHECKF(strstr(e, "missing metadata key 'qwen3moe.expert_used_count'"), "%s", e);

    read_fixture("models/gpt-oss-gpt2-d64-mxfp4.gguf");
    if (file_data) {
        e = load_edited("sinks", rename_str, "blk.1.attn_sinks.weight", "blk.1.attn_sinks.weighx");
        CHECKF(strstr(e, "missing tensor 'blk.1.attn_sinks.weight'"), "%s", e);
        e = load_edited("expert bias", rename_str, "blk.0.ffn_down_exps.bias", "blk.0.ffn_down_exps.biax");
        CHECKF(strstr(e, "missing tensor 'blk.0.ffn_down_exps.bias'"), "%s", e);
        e = load_edited("router bias shape", set_dim1, "blk.0.ffn_up_exps.bias", "4");
        CHECKF(strstr(e, "'blk.0.ffn_up_exps.bias' has shape [64, 4], expected [64, 8]"), "%s", e);
        e = load_edited("output bias", rename_str, "blk.0.attn_output.bias", "blk.0.attn_output.biax");
        CHECKF(strstr(e, "missing tensor 'blk.0.attn_output.bias'"), "%s", e);
        e = load_edited("window key", rename_str, "gpt-oss.attention.sliding_window", "gpt-oss.attention.sliding_windox");
        CHECKF(strstr(e, "missing metadata key 'gpt-oss.attention.sliding_window'"), "%s", e);
    }

    read_fixture("models/qwen35-d64-q8_0.gguf");
    if (file_data) {
        e = load_edited("conv kernel", rename_str, "blk.2.ssm_conv1d.weight", "blk.2.ssm_conv1d.weighx");
        CHECKF(strstr(e, "missing tensor 'blk.2.ssm_conv1d.weight'"), "%s", e);
        e = load_edited("decay", rename_str, "blk.0.ssm_a", "blk.0.ssm_b");
        CHECKF(strstr(e, "missing tensor 'blk.0.ssm_a'"), "%s", e);
        e = load_edited("qkv shape", set_dim1, "blk.1.attn_qkv.weight", "96");
        CHECKF(strstr(e, "'blk.1.attn_qkv.weight' has shape [64, 96], expected [64, 128]"), "%s", e);
        e = load_edited("gated q shape", set_dim1, "blk.3.attn_q.weight", "128");
        CHECKF(strstr(e, "'blk.3.attn_q.weight' has shape [64, 128], expected [64, 256]"), "%s", e);
        e = load_edited("state key", rename_str, "qwen35.ssm.state_size", "qwen35.ssm.state_sizx");
        CHECKF(strstr(e, "missing metadata key 'qwen35.ssm.state_size'"), "%s", e);
    }
    free(file_data);
    return TEST_DONE();
}
