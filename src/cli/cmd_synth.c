/* cmd_synth.c: `typellm synth FILE.ae --model M.gguf`: fills the hole of an
 * Aeon program with the library's synthesis (typellm/aeon_synth.h:
 * type-constrained attempts, independent validation, the Pareto choice) and
 * prints the completed program, or an explicit exhaustion report. One
 * monotonic deadline (--budget) covers model loading, every forward pass,
 * every oracle query, validation and evaluation. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

int tl_cmd_synth(int argc, char **argv) {
    const char *file = NULL, *report_path = NULL, *model_path = NULL, *device = "cpu";
    uint64_t seed = 0;
    double temperature = 0, budget = 120;
    long max_tokens = 128, max_probes = 4096, top_k = 32, attempts = 8, max_states = 20000, threads = 2, n_ctx = 0;
    bool no_mmap = false, unconstrained = false;
    long max_oracle_work = 0;
    tl_cache_type cache_k = TL_CACHE_F32, cache_v = TL_CACHE_F32;
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
        TL_OPT_CACHE_TYPES(&cache_k, &cache_v),
        {0, "report", TL_OPT_STR, &report_path, .metavar = "FILE",
         .help = "write the JSON report there ('-' = stdout after the program)"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0, "unconstrained", TL_OPT_FLAG, &unconstrained,
         .help = "the baseline: same sampler and budgets, oracle off (plain sampling until EOS)"},
        {0, "max-oracle-work", TL_OPT_LONG, &max_oracle_work, .min = 0, .max = 1L << 50, .metavar = "N",
         .help = "oracle states per attempt (default 0 = 200 x max-states)"},
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
    tl_model *model = NULL;
    tl_backend *be = NULL;
    tl_aeon_synth_result res = {0};
    json_t *report = NULL;
    int rc = 1;
    tl_status st = TL_OK;
    if (tl_aeon_program_load_file(file, &prog, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    if (tl_cli_model_load("synth", model_path, no_mmap, &model))
        goto done;
    tl_session_params sp = {.n_threads = (int)threads, .cache_type_k = cache_k, .cache_type_v = cache_v};
    tl_cli_ctx("synth", model, n_ctx, &sp);
    if (tl_backend_local_new(model, &sp, &be, &err)) {
        tl_cli_error("synth", err.msg);
        goto done;
    }
    tl_aeon_synth_params params = {.temperature = temperature, .seed = seed, .max_tokens = (int)max_tokens,
                                   .max_probes = (int)max_probes, .top_k = (int)top_k, .attempts = (int)attempts,
                                   .max_states = max_states, .deadline = deadline,
                                   .n_ctx = sp.n_ctx > 0 ? sp.n_ctx : tl_model_n_ctx_train(model),
                                   .unconstrained = unconstrained, .max_oracle_work = max_oracle_work};
    st = tl_aeon_synth(be, prog, &params, &res, &err);
    if (st)
        tl_cli_error("synth", err.msg);
    char *text = tl_aeon_synth_result_to_json(prog, &res);
    report = text ? json_loads(text, 0, NULL) : NULL;
    tl_free(text);
    if (!report) {
        fprintf(stderr, "typellm synth: out of memory\n");
        goto done;
    }
    if (!st && res.program) {
        printf("%s", res.program);
        if (res.program[0] && res.program[strlen(res.program) - 1] != '\n')
            printf("\n");
        rc = 0;
    } else if (!st) {
        /* name what ran out, and how each attempt ended */
        json_t *ends = json_object_get(report, "ends"), *spent = json_object_get(report, "budgets_exhausted");
        char *e = ends ? json_dumps(ends, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        tl_strbuf why = TL_STRBUF_INIT;
        size_t k;
        json_t *v;
        json_array_foreach(spent, k, v) {
            const char *n = json_string_value(v);
            tl_strbuf_puts(&why, k ? ", " : "; ran out of: ");
            if (!strcmp(n, "tokens"))
                tl_strbuf_printf(&why, "tokens (--max-tokens %ld)", max_tokens);
            else if (!strcmp(n, "oracle_states"))
                tl_strbuf_puts(&why, "oracle states (--max-oracle-work)");
            else if (!strcmp(n, "probes"))
                tl_strbuf_printf(&why, "probes (--max-probes %ld)", max_probes);
            else
                tl_strbuf_printf(&why, "wall time (--budget %g s)", budget);
        }
        if (!json_array_size(spent))
            tl_strbuf_puts(&why, "; every finished term failed validation");
        fprintf(stderr, "typellm synth: no validated program (%s) after %d attempts (ends: %s)%s; see the report\n",
                res.status, res.n_attempts, e ? e : "{}", tl_strbuf_cstr(&why));
        free(e);
        tl_strbuf_free(&why);
    }
done:
    if (!report)
        report = json_pack("{s:s,s:[]}", "status", "error", "attempts");
    else if (st)
        json_object_set_new(report, "status", json_string("error"));
    json_object_set_new(report, "file", json_string(file));
    json_object_set_new(report, "model", json_string(model_path));
    json_object_set_new(report, "elapsed_s", json_real(tl_now_s() - t_start));
    json_object_set_new(report, "budget_s", json_real(budget));
    if (rc != 0 && err.msg[0])
        json_object_set_new(report, "error", json_string(err.msg));
    if (report_path) {
        char *dumped = json_dumps(report, JSON_INDENT(2) | JSON_SORT_KEYS);
        char *js = dumped ? tl_json_shorten_reals(dumped) : NULL;
        free(dumped);
        FILE *f = strcmp(report_path, "-") ? fopen(report_path, "w") : stdout;
        if (!f || !js) {
            fprintf(stderr, "typellm synth: cannot write report %s\n", report_path);
            rc = 1;
        } else {
            fprintf(f, "%s\n", js);
            if (f != stdout)
                fclose(f);
        }
        tl_free(js);
    }
    json_decref(report);
    tl_aeon_synth_result_free(&res);
    tl_backend_free(be);
    tl_model_free(model);
    tl_aeon_program_free(prog);
    return rc;
}
