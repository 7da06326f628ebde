/* cmd_generate.c: `typellm generate`: text from a prompt with the embedded
 * engine, streamed to stdout token by token (or, with --json, one object in
 * the format of ../shared/fixtures/ref/stories260k-f32.greedy-*.json:
 * {"prompt":[ids],"generated":[ids],"logprobs":[...],"text":"..."}).
 *
 * Each step evaluates the whole growing sequence; the session's prefix cache
 * finds everything but the newest token, so a step costs one token. logprobs
 * are the model's own (log-softmax of the raw logits), whatever the sampling
 * settings. Sampling: temperature 0 = greedy (ties: lowest id); otherwise
 * top-k, then top-p over the temperature-scaled distribution, with a seeded
 * generator, so a given seed always gives the same text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

#define MAX_PROMPT_BYTES (64u << 20)

static void usage(FILE *f) {
    fprintf(f, "usage: typellm generate --model M (--prompt-file P | --prompt TEXT) [-n N]\n"
               "                        [--temperature T] [--seed S] [--top-k K] [--top-p P]\n"
               "                        [--threads N] [--ignore-eos] [--json]\n"
               "  generate up to N tokens (default 128) after the prompt (tokenized with BOS when\n"
               "  the model asks, special tokens parsed; an empty prompt is BOS alone)\n"
               "  --temperature T  0 = greedy (default 0.8); --top-k K (default 40, 0 = off);\n"
               "  --top-p P (default 0.95, 1 = off); --seed S (default 42)\n"
               "  --ignore-eos     do not stop at end-of-generation tokens\n"
               "  --json           print {\"prompt\",\"generated\",\"logprobs\",\"text\"} at the end\n");
}

/* ---- sampling ------------------------------------------------------------- */

typedef struct sampler {
    double temperature;
    int32_t top_k;
    double top_p;
    uint64_t state; /* splitmix64 */
} sampler;

static double next_uniform(sampler *sm) {
    uint64_t z = (sm->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

typedef struct cand {
    int32_t id;
    float logit;
} cand;

static int by_logit_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return x->id - y->id;
}

static int32_t sample(sampler *sm, const float *logits, int32_t n_vocab, cand *scratch) {
    if (sm->temperature <= 0.0) {
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        return best;
    }
    for (int32_t i = 0; i < n_vocab; i++)
        scratch[i] = (cand){i, logits[i]};
    qsort(scratch, (size_t)n_vocab, sizeof *scratch, by_logit_desc);
    int32_t n = sm->top_k > 0 && sm->top_k < n_vocab ? sm->top_k : n_vocab;
    double mx = scratch[0].logit, sum = 0.0;
    double *p = malloc(sizeof(double) * (size_t)n);
    if (!p)
        return scratch[0].id;
    for (int32_t i = 0; i < n; i++)
        sum += (p[i] = exp((scratch[i].logit - mx) / sm->temperature));
    double cum = 0.0;
    int32_t keep = n;
    for (int32_t i = 0; i < n; i++) { /* smallest prefix with mass >= top_p */
        cum += p[i] / sum;
        if (cum >= sm->top_p) {
            keep = i + 1;
            break;
        }
    }
    double total = 0.0;
    for (int32_t i = 0; i < keep; i++)
        total += p[i];
    double r = next_uniform(sm) * total;
    int32_t pick = keep - 1;
    for (int32_t i = 0; i < keep; i++) {
        r -= p[i];
        if (r < 0) {
            pick = i;
            break;
        }
    }
    free(p);
    return scratch[pick].id;
}

static double log_softmax_at(const float *logits, int32_t n_vocab, int32_t id) {
    float mx = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > mx)
            mx = logits[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - mx);
    return (double)logits[id] - mx - log(sum);
}

/* ---- the command ------------------------------------------------------------ */

int tl_cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *prompt_file = NULL, *prompt_text = NULL;
    long n_gen = 128, threads = 0;
    sampler sm = {.temperature = 0.8, .top_k = 40, .top_p = 0.95, .state = 42};
    bool json = false, ignore_eos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") && has) {
            model_path = argv[++i];
        } else if (!strcmp(a, "--prompt-file") && has) {
            prompt_file = argv[++i];
        } else if (!strcmp(a, "--prompt") && has) {
            prompt_text = argv[++i];
        } else if ((!strcmp(a, "-n") || !strcmp(a, "--n-predict")) && has) {
            if (!tl_cli_long("generate", a, argv[++i], &n_gen)) return 2;
        } else if (!strcmp(a, "--temperature") && has) {
            if (!tl_cli_double("generate", a, argv[++i], &sm.temperature)) return 2;
        } else if (!strcmp(a, "--top-k") && has) {
            long top_k;
            if (!tl_cli_long("generate", a, argv[++i], &top_k)) return 2;
            sm.top_k = (int32_t)top_k;
        } else if (!strcmp(a, "--top-p") && has) {
            if (!tl_cli_double("generate", a, argv[++i], &sm.top_p)) return 2;
        } else if (!strcmp(a, "--seed") && has) {
            sm.state = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--threads") && has) {
            if (!tl_cli_long("generate", a, argv[++i], &threads)) return 2;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--ignore-eos")) {
            ignore_eos = true;
        } else {
            fprintf(stderr, "typellm generate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model_path || (!prompt_file == !prompt_text) || n_gen < 0 || threads < 0 || threads > 1024 ||
        !(sm.temperature >= 0) || !(sm.top_p > 0 && sm.top_p <= 1) || sm.top_k < 0) {
        usage(stderr);
        return 2;
    }
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_model_load(model_path, &m, &err) != TL_OK) {
        fprintf(stderr, "typellm generate: %s\n", err.msg);
        return 1;
    }
    const tl_vocab *v = tl_model_vocab(m);
    int32_t n_vocab = tl_model_n_vocab(m);
    int rc = 1;
    char *text = NULL;
    size_t len = 0;
    int32_t *prompt = NULL, *seq = NULL;
    size_t n_prompt = 0;
    float *logits = malloc(sizeof(float) * (size_t)n_vocab);
    cand *scratch = malloc(sizeof(cand) * (size_t)n_vocab);
    double *logprobs = malloc(sizeof(double) * ((size_t)n_gen + 1));
    tl_session *s = NULL;
    tl_strbuf out = TL_STRBUF_INIT;
    if (!logits || !scratch || !logprobs) {
        fprintf(stderr, "typellm generate: out of memory\n");
        goto done;
    }
    if (prompt_file && tl_read_file(prompt_file, MAX_PROMPT_BYTES, &text, &len, &err) != TL_OK) {
        fprintf(stderr, "typellm generate: %s\n", err.msg);
        goto done;
    }
    if (tl_vocab_tokenize(v, text ? text : prompt_text, text ? len : strlen(prompt_text), true, true, &prompt,
                          &n_prompt, &err) != TL_OK) {
        fprintf(stderr, "typellm generate: %s\n", err.msg);
        goto done;
    }
    if (n_prompt == 0) {
        fprintf(stderr, "typellm generate: the prompt has no tokens (and the model adds no BOS)\n");
        goto done;
    }
    seq = malloc(sizeof(int32_t) * (n_prompt + (size_t)n_gen));
    tl_session_params sp = {.n_threads = (int)threads};
    if (!seq || tl_session_new(m, &sp, &s, &err) != TL_OK) {
        fprintf(stderr, "typellm generate: %s\n", seq ? err.msg : "out of memory");
        goto done;
    }
    memcpy(seq, prompt, sizeof(int32_t) * n_prompt);
    size_t n = n_prompt, n_out = 0;
    bool tty = isatty(2);
    double t0 = tl_now_s(), t_prompt = 0;
    for (long step = 0; step < n_gen; step++) {
        if (n > (size_t)tl_model_n_ctx_train(m)) {
            fprintf(stderr, "typellm generate: stopped at the context length %d\n", tl_model_n_ctx_train(m));
            break;
        }
        if (tl_session_eval(s, seq, n, logits, NULL, &err) != TL_OK) {
            fprintf(stderr, "typellm generate: %s\n", err.msg);
            goto done;
        }
        if (step == 0)
            t_prompt = tl_now_s() - t0;
        int32_t id = sample(&sm, logits, n_vocab, scratch);
        if (!ignore_eos && tl_vocab_is_eog(v, id))
            break;
        logprobs[n_out++] = log_softmax_at(logits, n_vocab, id);
        seq[n++] = id;
        if (!json) {
            char buf[256];
            size_t bl = tl_vocab_token_bytes(v, id, false, buf, sizeof buf);
            fwrite(buf, 1, bl < sizeof buf ? bl : sizeof buf, stdout);
            fflush(stdout);
        }
        if (tty && step > 0) {
            double dt = tl_now_s() - t0 - t_prompt;
            fprintf(stderr, "\r\033[K[%zu/%ld] %.1f tok/s", n_out, n_gen, dt > 0 ? (double)(n_out - 1) / dt : 0.0);
        }
    }
    double t_total = tl_now_s() - t0;
    if (tty) {
        double dt = t_total - t_prompt;
        fprintf(stderr, "\r\033[Kprompt %zu tokens %.1f tok/s, generated %zu tokens %.1f tok/s\n", n_prompt,
                t_prompt > 0 ? (double)n_prompt / t_prompt : 0.0, n_out,
                dt > 0 && n_out > 1 ? (double)(n_out - 1) / dt : 0.0);
    }
    if (json) {
        tl_strbuf txt = TL_STRBUF_INIT;
        if (tl_vocab_detokenize(v, seq + n_prompt, n_out, false, false, &txt, &err) != TL_OK) {
            fprintf(stderr, "typellm generate: %s\n", err.msg);
            tl_strbuf_free(&txt);
            goto done;
        }
        tl_strbuf_puts(&out, "{\"prompt\":[");
        for (size_t i = 0; i < n_prompt; i++)
            tl_strbuf_printf(&out, "%s%d", i ? "," : "", seq[i]);
        tl_strbuf_puts(&out, "],\"generated\":[");
        for (size_t i = 0; i < n_out; i++)
            tl_strbuf_printf(&out, "%s%d", i ? "," : "", seq[n_prompt + i]);
        tl_strbuf_puts(&out, "],\"logprobs\":[");
        for (size_t i = 0; i < n_out; i++)
            tl_strbuf_printf(&out, "%s%.6f", i ? "," : "", logprobs[i]);
        tl_strbuf_puts(&out, "],\"text\":");
        tl_strbuf_json_string(&out, txt.buf ? txt.buf : "", txt.len);
        tl_strbuf_puts(&out, "}\n");
        tl_strbuf_free(&txt);
        fwrite(out.buf, 1, out.len, stdout);
    } else {
        fputc('\n', stdout);
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    tl_strbuf_free(&out);
    tl_session_free(s);
    free(seq);
    free(prompt);
    free(text);
    free(logprobs);
    free(scratch);
    free(logits);
    tl_model_free(m);
    return rc;
}
