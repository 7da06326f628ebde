/* cmd_synth.c: `typellm synth FILE.ae --model M.gguf`: fills the hole of an
 * Aeon program with type-constrained decoding (src/aeon/sampler.h), validates
 * each attempt independently (src/aeon/validate.c) and prints the completed
 * program chosen from the Pareto front, or an explicit exhaustion report.
 * One monotonic deadline (--budget) covers model loading, every forward pass,
 * every oracle query, validation and evaluation. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

/* The prompt: guidance from @prompt / @doc, the hole's context and goal, and the program. */
static void build_prompt(const tl_aeon_program *p, const tl_aeon_scope *scope, tl_strbuf *out) {
    const tl_aeon_def *d = &p->defs[p->hole_def];
    tl_strbuf_printf(out, "Complete the Aeon program: replace the hole ?%s in `%s` with an expression.\n",
                     p->hole->str, d->name);
    for (int i = 0; i < d->n_decos; i++)
        if (d->decos[i].text && (!strcmp(d->decos[i].name, "prompt") || !strcmp(d->decos[i].name, "doc")))
            tl_strbuf_printf(out, "%s\n", d->decos[i].text);
    tl_strbuf_puts(out, "Names in scope at the hole:\n");
    tl_strbuf ctx = TL_STRBUF_INIT;
    tl_aeon_scope_describe(scope, &ctx);
    tl_strbuf_puts(out, tl_strbuf_cstr(&ctx));
    tl_strbuf_free(&ctx);
    tl_strbuf_printf(out, "The expression must have type %s.\n\n", tl_aeon_scope_goal_text(scope));
    tl_strbuf_append(out, p->source, p->source_len);
    tl_strbuf_printf(out, "\n\n?%s := ", p->hole->str);
}

/* The program with the hole's text replaced by the candidate. */
static char *splice(const tl_aeon_program *p, const char *cand, size_t len) {
    tl_strbuf sb = TL_STRBUF_INIT;
    size_t off = (size_t)p->hole->ival;
    tl_strbuf_append(&sb, p->source, off);
    tl_strbuf_putc(&sb, '(');
    tl_strbuf_append(&sb, cand, len);
    tl_strbuf_putc(&sb, ')');
    tl_strbuf_append(&sb, p->source + off + p->hole->str_len, p->source_len - off - p->hole->str_len);
    return tl_strbuf_detach(&sb);
}

static json_t *validation_json(const tl_aeon_validation *v) {
    json_t *objs = json_array();
    for (int i = 0; i < v->n_objectives; i++)
        json_array_append_new(objs, json_real(v->objectives[i]));
    return json_pack("{s:b,s:b,s:b,s:i,s:i,s:i,s:i,s:o,s:s}", "parsed", v->parsed, "typed", v->typed,
                     "refinements_ok", v->refinements_ok, "refinement_checks", v->refinement_checks,
                     "refinement_failures", v->refinement_failures, "examples_total", v->examples_total,
                     "examples_failed", v->examples_failed, "objectives", objs, "message", v->message);
}

int tl_cmd_synth(int argc, char **argv) {
    const char *file = NULL, *report_path = NULL, *model_path = NULL, *device = "cpu";
    uint64_t seed = 0;
    double temperature = 0, budget = 120;
    long max_tokens = 128, max_probes = 4096, top_k = 32, attempts = 8, max_states = 20000, threads = 2, n_ctx = 0;
    bool no_mmap = false;
    const tl_opt opts[] = {
        {'m', "model", TL_OPT_STR, &model_path, .metavar = "PATH",
         .help = "GGUF model (env AEON_TC_MODEL, then TYPELLM_MODEL)"},
        {0, "device", TL_OPT_STR, &device, .metavar = "cpu", .help = "only cpu is supported (env AEON_TC_DEVICE)"},
        {'s', "seed", TL_OPT_U64, &seed, .metavar = "N", .help = "sampling and Pareto seed (env AEON_SEED, default 0)"},
        {0, "temperature", TL_OPT_DOUBLE, &temperature, .min = 0, .max = 1e6, .metavar = "T", .alias = "temp",
         .help = "0 = best certified token (env AEON_TC_TEMPERATURE, default 0)"},
        {0, "max-tokens", TL_OPT_LONG, &max_tokens, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "tokens per attempt incl. EOS (env AEON_TC_MAX_TOKENS, default 128)"},
        {0, "max-probes", TL_OPT_LONG, &max_probes, .min = 1, .max = 1L << 40, .metavar = "N",
         .help = "candidate probes per step (env AEON_TC_MAX_PROBES, default 4096)"},
        {0, "top-k", TL_OPT_LONG, &top_k, .min = 1, .max = 1 << 24, .metavar = "N",
         .help = "probe batch size (env AEON_TC_TOP_K, default 32)"},
        {0, "max-states", TL_OPT_LONG, &max_states, .min = 0, .max = 1L << 40, .metavar = "N",
         .help = "oracle work per query (env AEON_TC_MAX_STATES, default 20000)"},
        {0, "attempts", TL_OPT_LONG, &attempts, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "attempts incl. refinement retries (env AEON_TC_ATTEMPTS, default 8)"},
        {0, "budget", TL_OPT_DOUBLE, &budget, .min = 0, .max = 1e9, .flags = TL_OPT_GT_MIN, .metavar = "SECONDS",
         .help = "one deadline over everything (default 120)"},
        {'t', "threads", TL_OPT_LONG, &threads, .min = 0, .max = 1024, .metavar = "N",
         .help = "engine threads (default 2; 0 = all cores)"},
        TL_OPT_CTX(&n_ctx),
        {0, "report", TL_OPT_STR, &report_path, .metavar = "FILE",
         .help = "write the JSON report there ('-' = stdout after the program)"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0},
    };
    const tl_opt_cmd cmd = {"synth", "FILE.ae -m M.gguf [options]",
                            "fill the typed hole of an Aeon program with a well-typed term", .opts = opts, .max_positional = 1,
                            .epilog = "  exit status: 0 a validated program was printed, 1 exhaustion or error, 2 usage\n"};
    static const struct {
        const char *opt, *env;
    } env_opts[] = {{"model", "TYPELLM_MODEL"},        {"model", "AEON_TC_MODEL"},
                    {"device", "AEON_TC_DEVICE"},      {"seed", "AEON_SEED"},
                    {"temperature", "AEON_TC_TEMPERATURE"}, {"max-tokens", "AEON_TC_MAX_TOKENS"},
                    {"max-probes", "AEON_TC_MAX_PROBES"}, {"top-k", "AEON_TC_TOP_K"},
                    {"attempts", "AEON_TC_ATTEMPTS"},  {"max-states", "AEON_TC_MAX_STATES"}};
    for (size_t k = 0; k < sizeof env_opts / sizeof env_opts[0]; k++)
        if (tl_opt_env(&cmd, env_opts[k].opt, env_opts[k].env) != TL_OPT_OK)
            return 2;
    const char *pos[1];
    int n_pos = 0;
    int prc = tl_opt_parse(&cmd, argc, argv, pos, &n_pos);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    file = n_pos ? pos[0] : NULL;
    if (!file || !model_path)
        return tl_opt_fail(&cmd, "%s",
                           !file ? "no .ae file given" : "no model: pass -m/--model or set AEON_TC_MODEL or TYPELLM_MODEL");
    if (strcmp(device, "cpu")) {
        fprintf(stderr, "typellm synth: device '%s' is not supported: the embedded engine runs on cpu only\n", device);
        return 1;
    }
    double t_start = tl_now_s(), deadline = t_start + budget;
    tl_error err = {0};
    tl_aeon_program *prog = NULL;
    tl_aeon_scope *scope = NULL;
    tl_aeon_engine *eng = NULL;
    tl_model *model = NULL;
    tl_backend *be = NULL;
    int32_t *prompt_ids = NULL;
    size_t n_prompt = 0;
    tl_aeon_validation *vals = calloc((size_t)attempts, sizeof *vals);
    char **texts = calloc((size_t)attempts, sizeof *texts);
    size_t *text_lens = calloc((size_t)attempts, sizeof *text_lens);
    json_t *report = json_object(), *jattempts = json_array();
    int rc = 1, n_done = 0;
    const char *status = "error";
    tl_strbuf prompt = TL_STRBUF_INIT;
    if (!vals || !texts || !text_lens) {
        fprintf(stderr, "typellm synth: out of memory\n");
        goto done;
    }
    if (tl_aeon_program_load_file(file, &prog, &err) || tl_aeon_scope_new(prog, &scope, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    tl_aeon_oracle_limits lim = {.max_states = max_states, .deadline = deadline};
    if (tl_aeon_engine_new(scope, &lim, &eng, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    if (tl_cli_model_load("synth", model_path, no_mmap, &model))
        goto done;
    tl_session_params sp = {.n_threads = (int)threads};
    tl_cli_ctx("synth", model, n_ctx, &sp);
    if (tl_backend_local_new(model, &sp, &be, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    build_prompt(prog, scope, &prompt);
    if (tl_backend_tokenize(be, prompt.buf, prompt.len, true, false, &prompt_ids, &n_prompt, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    int32_t ctx_len = sp.n_ctx > 0 ? sp.n_ctx : tl_model_n_ctx_train(model);
    if (ctx_len > 0 && n_prompt + (size_t)max_tokens + 1 > (size_t)ctx_len) {
        /* keep the prompt's tail: the hole and its context come last */
        size_t keep = (size_t)ctx_len > (size_t)max_tokens + 2 ? (size_t)ctx_len - (size_t)max_tokens - 1 : 1;
        if (keep < n_prompt) {
            memmove(prompt_ids + 1, prompt_ids + (n_prompt - keep + 1), sizeof *prompt_ids * (keep - 1));
            n_prompt = keep;
        }
    }
    status = "exhausted";
    for (int a = 0; a < attempts; a++) {
        if (tl_now_s() > deadline) {
            status = "deadline";
            break;
        }
        /* Retries after a failed attempt sample: a greedy rerun would repeat it. */
        double temp = temperature > 0 || a == 0 ? temperature : 0.8;
        tl_aeon_sampler_config cfg = {.temperature = temp, .seed = seed + (uint64_t)a, .max_tokens = max_tokens,
                                 .max_probes = max_probes, .top_k = top_k, .deadline = deadline};
        tl_aeon_attempt at;
        if (tl_aeon_sample_attempt(be, eng, prompt_ids, n_prompt, &cfg, &at, &err)) {
            fprintf(stderr, "typellm synth: attempt %d: %s\n", a, err.msg);
            goto done;
        }
        json_t *jt = json_array();
        for (int i = 0; i < at.n_tokens; i++)
            json_array_append_new(jt, json_integer(at.tokens[i]));
        json_t *ja = json_pack("{s:i,s:I,s:f,s:s,s:s#,s:o,s:i,s:I,s:I,s:I,s:I,s:f,s:f}", "attempt", a, "seed",
                               (json_int_t)(seed + (uint64_t)a), "temperature", temp, "end", tl_aeon_attempt_end_name(at.end),
                               "text", at.text ? at.text : "", at.text ? (int)at.text_len : 0, "tokens", jt,
                               "tokens_committed", at.n_tokens, "probes", (json_int_t)at.counts.probes,
                               "rejected_probes", (json_int_t)at.counts.rejected, "unknown_probes",
                               (json_int_t)at.counts.unknown, "excluded_probes", (json_int_t)at.counts.excluded,
                               "oracle_s", at.counts.oracle_s, "model_s", at.model_s);
        bool at_complete = at.end == TL_AEON_END_COMPLETE && tl_now_s() <= deadline;
        if (at_complete) {
            tl_aeon_validate(prog, at.text, at.text_len, &vals[n_done], &err);
            json_object_set_new(ja, "validation", validation_json(&vals[n_done]));
            texts[n_done] = at.text;
            text_lens[n_done] = at.text_len;
            at.text = NULL;
            n_done++;
        }
        json_array_append_new(jattempts, ja);
        tl_aeon_attempt_free(&at);
        const tl_aeon_validation *last = n_done ? &vals[n_done - 1] : NULL;
        bool completed_now = json_array_size(jattempts) > 0 && at_complete;
        if (completed_now && last->typed && last->refinements_ok && last->examples_failed == 0 &&
            last->n_objectives == 0)
            break; /* nothing left to improve */
    }
    int pick = n_done ? tl_aeon_pareto_pick(vals, n_done, seed) : -1;
    if (pick >= 0 && tl_now_s() <= deadline) {
        char *program = splice(prog, texts[pick], text_lens[pick]);
        printf("%s", program ? program : "");
        if (program && program[0] && program[strlen(program) - 1] != '\n')
            printf("\n");
        json_object_set_new(report, "program", json_string(program ? program : ""));
        json_object_set_new(report, "chosen_attempt_text", json_stringn(texts[pick], text_lens[pick]));
        free(program);
        status = "ok";
        rc = 0;
    } else {
        if (pick >= 0)
            status = "deadline";
        fprintf(stderr, "typellm synth: no validated program (%s) after %zu attempts; see the report\n", status,
                json_array_size(jattempts));
    }
done:
    json_object_set_new(report, "status", json_string(status));
    json_object_set_new(report, "file", json_string(file ? file : ""));
    json_object_set_new(report, "model", json_string(model_path ? model_path : ""));
    if (scope)
        json_object_set_new(report, "goal", json_string(tl_aeon_scope_goal_text(scope)));
    json_object_set_new(report, "attempts", jattempts);
    json_object_set_new(report, "prompt_tokens", json_integer((json_int_t)n_prompt));
    json_object_set_new(report, "elapsed_s", json_real(tl_now_s() - t_start));
    json_object_set_new(report, "budget_s", json_real(budget));
    if (rc != 0 && err.msg[0])
        json_object_set_new(report, "error", json_string(err.msg));
    if (report_path) {
        char *js = json_dumps(report, JSON_INDENT(2) | JSON_SORT_KEYS);
        FILE *f = strcmp(report_path, "-") ? fopen(report_path, "w") : stdout;
        if (!f || !js) {
            fprintf(stderr, "typellm synth: cannot write report %s\n", report_path);
            rc = 1;
        } else {
            fprintf(f, "%s\n", js);
            if (f != stdout)
                fclose(f);
        }
        free(js);
    }
    json_decref(report);
    for (int i = 0; texts && i < attempts; i++)
        free(texts[i]);
    free(texts);
    free(text_lens);
    free(vals);
    free(prompt_ids);
    tl_strbuf_free(&prompt);
    tl_backend_free(be);
    tl_model_free(model);
    tl_aeon_engine_free(eng);
    tl_aeon_scope_free(scope);
    tl_aeon_program_free(prog);
    return rc;
}
