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
 * generator, so a given seed always gives the same text.
 *
 * --messages renders a conversation with the model's own chat template
 * (tl_chat_prompt_build: the same prompt the server's chat completions
 * generate from), so the text generated is the assistant's reply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "typellm/typellm.h"

#define MAX_PROMPT_BYTES (64u << 20)

/* ---- sampling ------------------------------------------------------------- */

typedef struct sampler {
    double temperature; /* 0: greedy (ties: lowest id) */
    tl_sample_filter filter;
    uint64_t state; /* util/rng.h stream */
} sampler;

/* w and order: n_vocab scratch. */
static int32_t sample(sampler *sm, const float *logits, int32_t n_vocab, double *w, int32_t *order) {
    int32_t best = tl_argmax_f(logits, n_vocab);
    if (sm->temperature <= 0.0)
        return best;
    for (int32_t i = 0; i < n_vocab; i++)
        w[i] = exp(((double)logits[i] - logits[best]) / sm->temperature);
    int32_t id = tl_sample_weights(w, n_vocab, &sm->filter, tl_rng_uniform(&sm->state), order);
    return id >= 0 ? id : best;
}

/* ---- the command ------------------------------------------------------------ */

int tl_cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *prompt_file = NULL, *prompt_text = NULL, *messages_path = NULL;
    const char *chat_template = NULL;
    json_t *vars = json_object();
    long n_gen = 128, threads = 0, n_ctx = 0, top_k = 40;
    sampler sm = {.temperature = 0.8, .filter = {.top_p = 0.95}, .state = 42};
    bool json = false, ignore_eos = false, no_mmap = false;
    tl_cache_type cache_k = TL_CACHE_F32, cache_v = TL_CACHE_F32;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model_path),
        {'p', "prompt", TL_OPT_STR, &prompt_text, .metavar = "TEXT", .help = "the prompt"},
        {'f', "file", TL_OPT_STR, &prompt_file, .metavar = "F", .alias = "prompt-file",
         .help = "read the prompt from F ('-' = stdin; also --prompt-file)"},
        {0, "messages", TL_OPT_STR, &messages_path, .metavar = "MSGS.json",
         .help = "chat: a conversation ([{\"role\", \"content\"}], '-' = stdin) rendered with the model's chat "
                 "template and the assistant's turn opened"},
        {0, "chat-template", TL_OPT_STR, &chat_template, .metavar = "NAME|FILE.jinja",
         .help = "with --messages: a built-in family (chatml, llama3, llama2, gemma, phi3) or a template file "
                 "instead of the model's"},
        {0, "var", TL_OPT_CALL, vars, .call = tl_cli_var, .metavar = "NAME=JSON",
         .help = "with --messages: a template variable, e.g. enable_thinking=false (repeatable)"},
        {'n', "n-predict", TL_OPT_LONG, &n_gen, .min = 0, .max = 1 << 30, .metavar = "N",
         .help = "tokens to generate (default 128)"},
        {0, "temperature", TL_OPT_DOUBLE, &sm.temperature, .min = 0, .max = 1e6, .metavar = "T", .alias = "temp",
         .help = "0 = greedy (default 0.8)"},
        {0, "top-k", TL_OPT_LONG, &top_k, .min = 0, .max = INT32_MAX, .metavar = "K", .help = "default 40, 0 = off"},
        {0, "top-p", TL_OPT_DOUBLE, &sm.filter.top_p, .min = 0, .max = 1, .flags = TL_OPT_GT_MIN, .metavar = "P",
         .help = "default 0.95, 1 = off"},
        {'s', "seed", TL_OPT_U64, &sm.state, .metavar = "S", .help = "sampling seed (default 42)"},
        TL_OPT_THREADS(&threads),
        TL_OPT_CTX(&n_ctx),
        TL_OPT_CACHE_TYPES(&cache_k, &cache_v),
        {0, "ignore-eos", TL_OPT_FLAG, &ignore_eos, .help = "do not stop at end-of-generation tokens"},
        {0, "json", TL_OPT_FLAG, &json, .help = "print {\"prompt\",\"generated\",\"logprobs\",\"text\"} at the end"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0},
    };
    const tl_opt_cmd cmd = {
        "generate", "-m M (-p TEXT | -f FILE | --messages MSGS.json) [-n N] [options]",
        "generate up to N tokens after the prompt (tokenized with BOS when the model asks, special tokens\n"
        "  parsed; an empty prompt is BOS alone), or after a conversation rendered with the model's chat\n"
        "  template, streamed to stdout",
        .opts = opts,
        .epilog = "  progress goes to stderr when it is a terminal, on its own line at the end when stdout is\n"
                  "  the same terminal (the streamed text is never overwritten)\n"};
    int prc = vars ? tl_opt_parse(&cmd, argc, argv, NULL, NULL) : TL_OPT_USAGE;
    model_path = tl_cli_model(model_path);
    if (prc == TL_OPT_OK && !model_path)
        prc = tl_opt_fail(&cmd, "no model: pass -m/--model PATH or set TYPELLM_MODEL");
    if (prc == TL_OPT_OK && !!prompt_file + !!prompt_text + !!messages_path != 1)
        prc = tl_opt_fail(&cmd, "give the prompt with -p/--prompt TEXT, -f/--file FILE or --messages MSGS.json "
                                "(one of them)");
    if (prc == TL_OPT_OK && !messages_path && (chat_template || json_object_size(vars)))
        prc = tl_opt_fail(&cmd, "--chat-template and --var apply to --messages");
    if (prc != TL_OPT_OK) {
        json_decref(vars);
        return tl_opt_exit(prc);
    }
    sm.filter.top_k = (int32_t)top_k;
    tl_error err = {0};
    tl_model *m = NULL;
    if (tl_cli_model_load("generate", model_path, no_mmap, &m) != TL_OK) {
        json_decref(vars);
        return 1;
    }
    const tl_vocab *v = tl_model_vocab(m);
    int32_t n_vocab = tl_model_n_vocab(m);
    int rc = 1;
    char *text = NULL, *template_src = NULL, *vars_text = NULL;
    size_t len = 0;
    int32_t *prompt = NULL, *seq = NULL;
    size_t n_prompt = 0;
    float *logits = malloc(sizeof(float) * (size_t)n_vocab);
    double *w = malloc(sizeof(double) * (size_t)n_vocab);
    int32_t *order = malloc(sizeof(int32_t) * (size_t)n_vocab);
    double *logprobs = malloc(sizeof(double) * ((size_t)n_gen + 1));
    tl_session *s = NULL;
    tl_strbuf out = TL_STRBUF_INIT;
    if (!logits || !w || !order || !logprobs) {
        tl_cli_error("generate", "out of memory");
        goto done;
    }
    const char *in_path = prompt_file ? prompt_file : messages_path;
    if (in_path && tl_read_file(in_path, MAX_PROMPT_BYTES, &text, &len, &err) != TL_OK) {
        tl_cli_error("generate", err.msg);
        goto done;
    }
    if (messages_path) {
        tl_chat_prompt_opts po = {.add_generation_prompt = true};
        tl_chat_prompt cp;
        vars_text = json_object_size(vars) ? json_dumps(vars, JSON_COMPACT) : NULL;
        po.vars_json = vars_text;
        if (tl_cli_chat_template(chat_template, &po.template_name, &template_src, &err) != TL_OK ||
            (po.template_jinja = template_src, tl_chat_prompt_build(v, text, &po, &cp, &err)) != TL_OK) {
            tl_cli_error("generate", err.msg);
            goto done;
        }
        prompt = cp.ids;
        n_prompt = cp.n_ids;
        cp.ids = NULL;
        tl_chat_prompt_free(&cp);
    } else if (tl_vocab_tokenize(v, text ? text : prompt_text, text ? len : strlen(prompt_text), true, true, &prompt,
                                 &n_prompt, &err) != TL_OK) {
        tl_cli_error("generate", err.msg);
        goto done;
    }
    if (n_prompt == 0) {
        fprintf(stderr, "typellm generate: the prompt has no tokens (and the model adds no BOS)\n");
        goto done;
    }
    seq = malloc(sizeof(int32_t) * (n_prompt + (size_t)n_gen));
    tl_session_params sp = {.n_threads = (int)threads, .cache_type_k = cache_k, .cache_type_v = cache_v};
    tl_cli_ctx("generate", m, n_ctx, &sp);
    int32_t ctx_len = sp.n_ctx > 0 ? sp.n_ctx : tl_model_n_ctx_train(m);
    if (!seq || tl_session_new(m, &sp, &s, &err) != TL_OK) {
        tl_cli_error("generate", seq ? err.msg : "out of memory");
        goto done;
    }
    memcpy(seq, prompt, sizeof(int32_t) * n_prompt);
    size_t n = n_prompt, n_out = 0;
    /* Progress on stderr's terminal: live only where it cannot overwrite the
     * streamed text (stdout elsewhere, or --json printing at the end); the
     * summary goes on its own line after the text. */
    bool tty = isatty(2), live = tty && (json || !isatty(1));
    double t0 = tl_now_s(), t_prompt = 0;
    for (long step = 0; step < n_gen; step++) {
        if (n > (size_t)ctx_len) {
            fprintf(stderr, "%stypellm generate: stopped at the context length %d (-c/--ctx-size raises it)\n",
                    json ? "" : "\n", ctx_len);
            break;
        }
        if (tl_session_eval(s, seq, n, logits, NULL, &err) != TL_OK) {
            tl_cli_error("generate", err.msg);
            goto done;
        }
        if (step == 0)
            t_prompt = tl_now_s() - t0;
        int32_t id = sample(&sm, logits, n_vocab, w, order);
        if (!ignore_eos && tl_vocab_is_eog(v, id))
            break;
        logprobs[n_out++] = (double)logits[id] - tl_logsumexp_f(logits, (size_t)n_vocab);
        seq[n++] = id;
        if (!json) {
            char buf[256];
            size_t bl = tl_vocab_token_bytes(v, id, false, buf, sizeof buf);
            fwrite(buf, 1, bl < sizeof buf ? bl : sizeof buf, stdout);
            fflush(stdout);
        }
        if (live && step > 0) {
            double dt = tl_now_s() - t0 - t_prompt;
            fprintf(stderr, "\r\033[K[%zu/%ld] %.1f tok/s", n_out, n_gen, dt > 0 ? (double)(n_out - 1) / dt : 0.0);
        }
    }
    double t_total = tl_now_s() - t0;
    if (!json) {
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (tty) {
        double dt = t_total - t_prompt;
        fprintf(stderr, "%sprompt %zu tokens %.1f tok/s, generated %zu tokens %.1f tok/s\n", live ? "\r\033[K" : "",
                n_prompt, t_prompt > 0 ? (double)n_prompt / t_prompt : 0.0, n_out,
                dt > 0 && n_out > 1 ? (double)(n_out - 1) / dt : 0.0);
    }
    if (json) {
        tl_strbuf txt = TL_STRBUF_INIT;
        if (tl_vocab_detokenize(v, seq + n_prompt, n_out, false, false, &txt, &err) != TL_OK) {
            tl_cli_error("generate", err.msg);
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
    }
    rc = fflush(stdout) ? 1 : 0;
done:
    json_decref(vars);
    free(template_src);
    free(vars_text);
    tl_strbuf_free(&out);
    tl_session_free(s);
    free(seq);
    free(prompt);
    free(text);
    free(logprobs);
    free(order);
    free(w);
    free(logits);
    tl_model_free(m);
    return rc;
}
