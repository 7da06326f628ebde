/* bench_numbers.c: what a number mask costs per generated token.
 *
 * For each vocabulary: the one-off index build, then the average time of
 * tl_number_automaton_allowed (the allowed-token list a generation step
 * needs) over random walks through several specs, the worst single step, and
 * the same as a bitset over the vocabulary (tl_number_automaton_mask).
 * Target: under 50 us per step on the 151k Qwen vocabulary.
 *
 *   bench/bench_numbers.sh [FIXTURES_DIR]    (builds, then runs this) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "typellm/vocab.h"
#include "typellm/util.h"

static uint64_t rng = 99;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *SPECS[] = {
    "{\"type\":\"integer\"}",
    "{\"type\":\"integer\",\"minimum\":0,\"maximum\":100}",
    "{\"type\":\"integer\",\"minimum\":-5000,\"maximum\":250000,\"multipleOf\":7}",
    "{\"type\":\"number\"}",
    "{\"type\":\"number\",\"minimum\":-1.5,\"maximum\":1000.25,\"multipleOf\":0.25}",
    "{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"x-decimals\":4}",
};

static int bench_vocab(const char *fixtures, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/vocab/ggml-vocab-%s.gguf", fixtures, name);
    tl_vocab *v = NULL;
    tl_error err = {0};
    if (tl_vocab_load_file(path, &v, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    double t0 = tl_now_s();
    tl_number_index *idx = NULL;
    if (tl_number_index_new(v, &idx, &err)) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 1;
    }
    double t_index = tl_now_s() - t0;
    int32_t n_tok = tl_number_index_n_tokens(idx);
    int32_t *allowed = malloc((size_t)n_tok * sizeof *allowed);
    uint64_t *mask = malloc(((size_t)n_tok + 63) / 64 * sizeof *mask);
    double total_ns = 0, worst_ns = 0, mask_ns = 0;
    long steps = 0, allowed_sum = 0;
    for (size_t s = 0; s < sizeof SPECS / sizeof SPECS[0]; s++) {
        tl_number_spec spec;
        if (tl_number_spec_from_json(SPECS[s], strlen(SPECS[s]), "/x", &spec, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        tl_number_close close = {.terminator = "\"", .allow_tail = true};
        tl_number_automaton *a = NULL;
        if (tl_number_automaton_new(idx, &spec, &close, &a, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (int walk = 0; walk < 200; walk++) {
            tl_number_automaton_reset(a);
            while (!tl_number_automaton_done(a)) {
                size_t n = 0;
                uint64_t best = UINT64_MAX;
                for (int rep = 0; rep < 5; rep++) {
                    uint64_t a0 = tl_now_ns();
                    n = tl_number_automaton_allowed(a, allowed);
                    uint64_t d = tl_now_ns() - a0;
                    if (d < best)
                        best = d;
                }
                total_ns += (double)best;
                uint64_t best_mask = UINT64_MAX;
                for (int rep = 0; rep < 3; rep++) {
                    uint64_t a0 = tl_now_ns();
                    tl_number_automaton_mask(a, mask);
                    uint64_t d = tl_now_ns() - a0;
                    if (d < best_mask)
                        best_mask = d;
                }
                mask_ns += (double)best_mask;
                if ((double)best > worst_ns)
                    worst_ns = (double)best;
                steps++;
                allowed_sum += (long)n;
                /* continue with a number character most of the time */
                int32_t pick = allowed[rnd() % n];
                for (int t = 0; t < 6 && rnd() % 5; t++) {
                    size_t len;
                    const char *b = tl_number_index_token(idx, pick, &len);
                    if (len && b[len - 1] >= '0' && b[len - 1] <= '9')
                        break;
                    pick = allowed[rnd() % n];
                }
                if (tl_number_automaton_accept(a, pick, &err)) {
                    fprintf(stderr, "accept: %s\n", err.msg);
                    return 1;
                }
            }
        }
        tl_number_automaton_free(a);
    }
    printf("%-10s %7d tokens  index %6.1f ms  allowed list %5.2f us/step (worst %5.1f us)  bitset %5.2f us/step  "
           "(%ld steps, %.0f allowed/step)\n",
           name, n_tok, t_index * 1e3, total_ns / steps / 1e3, worst_ns / 1e3, mask_ns / steps / 1e3, steps,
           (double)allowed_sum / steps);
    free(allowed);
    free(mask);
    tl_number_index_free(idx);
    tl_vocab_free(v);
    return 0;
}

int main(int argc, char **argv) {
    const char *fixtures = argc > 1 ? argv[1] : "../shared/fixtures";
    int rc = 0;
    rc |= bench_vocab(fixtures, "qwen3");
    rc |= bench_vocab(fixtures, "llama3");
    rc |= bench_vocab(fixtures, "llama-spm");
    return rc;
}
