/* cmd_decide.c: `typellm decide`: context + ordered JSON Schema -> typed
 * values with probabilities, printed as the JSON object tl_decide returns.
 * Options are one table for the shared parser (opt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

#define MAX_CONTEXT_BYTES ((size_t)64 << 20)
#define MAX_SCHEMA_BYTES ((size_t)16 << 20)

typedef struct decide_args {
    const char *model;        /* -m/--model PATH */
    const char *hf;           /* --hf ORG/REPO:FILE */
    const char *schema_path;  /* --schema FILE */
    const char *context_path; /* -f/--context FILE ("-" = stdin) */
    const char *context_text; /* -p/--context-text STR */
    long threads;             /* -t/--threads N (0: all cores) */
    long n_ctx;               /* -c/--ctx-size N (0: the model's) */
    bool values_only;         /* --values-only: print just "values" */
    bool no_mmap;
    tl_decide_opts opts;
    /* Remote SGLang backend: --server URL [--api-key K | --api-key-file F] [--tokenizer M.gguf]. */
    const char *server, *api_key, *api_key_file, *tokenizer;
    double server_timeout; /* seconds per request; 0: the backend's default */
    long server_retries;   /* -1: the backend's default */
    const char *engine;    /* --engine sglang|llamacpp|vllm|auto (default auto) */
} decide_args;

static tl_status sglang_backend(const decide_args *a, tl_backend **b, tl_error *err) {
    tl_remote_params p = {.conn = {.base_url = a->server, .api_key = a->api_key, .tokenizer_path = a->tokenizer,
                                   .timeout_s = a->server_timeout, .max_retries = (int)a->server_retries}};
    if (!tl_engine_parse(a->engine ? a->engine : "auto", &p.engine))
        return tl_error_set(err, TL_ERR_INVALID, "--engine %s: expected sglang, llamacpp, vllm or auto", a->engine);
    return tl_backend_remote_new(&p, b, err);
}

static tl_status load_schema(const char *path, const tl_decide_opts *opts, tl_schema **out, tl_error *err) {
    char *data;
    size_t len;
    tl_status st = tl_read_file(path, MAX_SCHEMA_BYTES, &data, &len, err);
    if (st)
        return st;
    st = tl_schema_parse_opts(data, len, opts, out, err);
    tl_free(data);
    if (st == TL_ERR_SCHEMA && strstr(err->msg, ": invalid JSON: ")) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        tl_error_set(err, st, "%s:%s", path, msg); /* "S.json:3:7: invalid JSON: ..." */
    }
    return st;
}

int tl_cmd_decide(int argc, char **argv) {
    decide_args a = {.server_retries = -1};
    a.api_key = getenv("TYPELLM_API_KEY");
    if (a.api_key && !*a.api_key)
        a.api_key = NULL;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&a.model),
        {0, "hf", TL_OPT_STR, &a.hf, .metavar = "ORG/REPO:FILE",
         .help = "download the model from Hugging Face (cached), e.g. --hf " TL_DEFAULT_HF_MODEL},
        {0, "schema", TL_OPT_STR, &a.schema_path, .metavar = "S.json",
         .help = "ordered JSON Schema object: properties order = decision order (required)"},
        {'f', "context", TL_OPT_STR, &a.context_path, .metavar = "FILE",
         .help = "the context ('-' = stdin, the default)"},
        {'p', "context-text", TL_OPT_STR, &a.context_text, .metavar = "STR", .help = "the context as an argument"},
        {0, "mode", TL_OPT_STR, &a.opts.mode, .metavar = "M",
         .help = "sequential: each decision sees the ones before it; batch: every field sees only the\n"
                 "                             context (one batched step); auto (default): waves by depends_on"},
        {0, "style", TL_OPT_STR, &a.opts.style, .metavar = "S",
         .help = "chat (default when the model has a recognised chat template) or record"},
        {0, "chat-template", TL_OPT_STR, &a.opts.chat_template, .metavar = "NAME|FILE.jinja",
         .help = "render this Jinja template instead of the model's own, or force a built-in family:\n"
                 "                             chatml, llama3, llama2 (mistral), gemma, phi3"},
        {0, "temperature", TL_OPT_DOUBLE, &a.opts.temperature, .min = 0, .max = 1e6, .metavar = "T", .alias = "temp",
         .help = "0 (default) = argmax; T > 0 samples from softmax(logprob / T) over the choices"},
        {'s', "seed", TL_OPT_U64, &a.opts.seed, .metavar = "N", .help = "sampling seed (default 0)"},
        {0, "threshold", TL_OPT_DOUBLE, &a.opts.threshold, .min = 0, .max = 1, .metavar = "P",
         .help = "abstain (value null) when the chosen value's probability is below P"},
        TL_OPT_THREADS(&a.threads),
        TL_OPT_CTX(&a.n_ctx),
        {0, "trace", TL_OPT_FLAG, &a.opts.trace, .help = "per field: the exact token ids sent and the position scored"},
        {0, "values-only", TL_OPT_FLAG, &a.values_only, .help = "print only {\"field\": value, ...}"},
        {0, "lenient", TL_OPT_FLAG, &a.opts.lenient,
         .help = "unknown or unhonourable schema keywords are warnings, not errors"},
        {0, "strict", TL_OPT_FLAG, &a.opts.strict, .help = "refuse free text (strings without enum), as \"x-strict\": true"},
        {0, "partial", TL_OPT_FLAG, &a.opts.partial,
         .help = "when the prompt outgrows the context, return the fields decided before it"},
        TL_OPT_NO_MMAP(&a.no_mmap),
        {0, "server", TL_OPT_STR, &a.server, .metavar = "URL",
         .help = "decide on a server (SGLang, llama.cpp, vLLM, typellm serve) instead of a local model"},
        {0, "api-key", TL_OPT_STR, &a.api_key, .metavar = "K",
         .help = "with --server: send Authorization: Bearer K (default $TYPELLM_API_KEY)"},
        {0, "api-key-file", TL_OPT_STR, &a.api_key_file, .metavar = "F", .help = "with --server: the key from F"},
        {0, "tokenizer", TL_OPT_STR, &a.tokenizer, .metavar = "M.gguf",
         .help = "with --server: the model's tokenizer and chat template (tokenizes locally; needed for\n"
                 "                             numbers with multipleOf and patterns; SGLang sends no template, so a\n"
                 "                             chat decision needs --tokenizer or --chat-template)"},
        {0, "server-timeout", TL_OPT_DOUBLE, &a.server_timeout, .min = 0, .max = 86400, .flags = TL_OPT_GT_MIN,
         .metavar = "S", .help = "with --server: seconds per request (default 60)"},
        {0, "server-retries", TL_OPT_LONG, &a.server_retries, .min = 0, .max = 100, .metavar = "N",
         .help = "with --server: retries on 429/5xx/timeouts/broken replies (default 3)"},
        {0, "engine", TL_OPT_STR, &a.engine, .metavar = "E",
         .help = "with --server: sglang, llamacpp (llama.cpp's llama-server), vllm, or auto (default:\n"
                 "                             asks the server: llama.cpp's /props, SGLang's /model_info, vLLM)"},
        {0},
    };
    const tl_opt_cmd cmd = {
        "decide", "(-m M.gguf | $TYPELLM_MODEL | --hf ORG/REPO:FILE | --server URL) --schema S.json [-f FILE | -p STR]",
        "typed decisions: context + ordered JSON Schema -> values with probabilities", .opts = opts,
        .epilog = "  A model is required: nothing is downloaded unless --hf names it.\n"};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    if (!a.schema_path)
        return tl_opt_fail(&cmd, "--schema is required");
    if (a.context_path && a.context_text)
        return tl_opt_fail(&cmd, "give --context or --context-text, not both");
    if (!a.server && !tl_cli_model(a.model) && !a.hf)
        return tl_opt_fail(&cmd, "give a model: -m/--model M.gguf, $TYPELLM_MODEL, --hf ORG/REPO:FILE, or --server URL");
    char *key_buf = NULL;
    if (a.api_key_file) {
        tl_error kerr = {0};
        char *data = NULL;
        size_t len = 0;
        if (tl_read_file(a.api_key_file, 1 << 16, &data, &len, &kerr) != TL_OK) {
            tl_cli_error("decide", kerr.msg);
            return 1;
        }
        data[strcspn(data, "\r\n")] = '\0';
        a.api_key = key_buf = data;
    }
    tl_error err = {0};
    tl_schema *schema = NULL;
    tl_decision *result = NULL;
    char *context = NULL, *model_path = NULL;
    size_t context_len = 0;
    tl_model *model = NULL;
    tl_backend *b = NULL;
    char *template_src = NULL;
    tl_status st = TL_OK;
    st = tl_cli_chat_template(a.opts.chat_template, &a.opts.chat_template, &template_src, &err);
    a.opts.chat_template_jinja = template_src;
    if (!st)
        st = load_schema(a.schema_path, &a.opts, &schema, &err);
    if (!st) {
        if (a.context_text) {
            context_len = strlen(a.context_text);
            context = strdup(a.context_text);
            if (!context)
                st = tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
        } else {
            st = tl_read_file(a.context_path ? a.context_path : "-", MAX_CONTEXT_BYTES, &context, &context_len, &err);
        }
    }
    if (!st && a.server) /* --server: remote backend, no local model */
        st = sglang_backend(&a, &b, &err);
    if (!st && !b)
        st = tl_model_resolve(a.model, a.hf, &model_path, &err);
    if (!st && !b)
        st = tl_model_load_ex(model_path, a.no_mmap ? TL_MODEL_NO_MMAP : 0, &model, &err);
    if (!st && !b) {
        tl_session_params sp = {.n_threads = (int)a.threads};
        tl_cli_ctx("decide", model, a.n_ctx, &sp);
        st = tl_backend_local_new(model, &sp, &b, &err);
    }
    if (!st)
        st = tl_decide(b, context, context_len, schema, &a.opts, &result, &err);
    if (!st) {
        /* Reals in their shortest exact form: 0.3, not 0.29999999999999999. */
        char *text = tl_decision_to_json(result, TL_JSON_INDENT | (a.values_only ? TL_JSON_VALUES_ONLY : 0));
        if (text) {
            puts(text);
            tl_free(text);
        } else {
            st = tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
        }
    }
    if (st)
        tl_cli_error("decide", err.msg);
    tl_decision_free(result);
    tl_schema_free(schema);
    tl_backend_free(b);
    tl_model_free(model);
    free(model_path);
    free(context);
    free(key_buf);
    free(template_src);
    return st ? (st == TL_ERR_INVALID || st == TL_ERR_SCHEMA ? 2 : 1) : 0;
}
