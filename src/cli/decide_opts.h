/* decide_opts.h: the options of `typellm decide`, which `typellm batch`
 * takes too (one table, so the two commands cannot drift apart). */
#ifndef TL_CLI_DECIDE_OPTS_H
#define TL_CLI_DECIDE_OPTS_H

#include "cli/cli.h"

typedef struct decide_args {
    const char *model;        /* -m/--model PATH */
    const char *hf;           /* --hf ORG/REPO:FILE */
    const char *schema_path;  /* --schema FILE */
    const char *context_path; /* -f/--context FILE ("-" = stdin) */
    const char *context_text; /* -p/--context-text STR */
    long threads;             /* -t/--threads N (0: all cores) */
    long n_ctx;               /* -c/--ctx-size N (0: the model's) */
    tl_cache_type cache_k, cache_v; /* --cache-type-k / --cache-type-v T */
    bool values_only;         /* --values-only: print just "values" */
    bool no_mmap;
    tl_decide_opts opts;
    /* Remote backend: --server URL [--engine E] [--api-key K | --api-key-file F] [--tokenizer M.gguf]. */
    const char *server, *api_key, *api_key_file, *tokenizer;
    double server_timeout; /* seconds per request; 0: the backend's default */
    long server_retries;   /* -1: the backend's default */
    long think;            /* --think N: reasoning tokens before each decision */
    const char *engine;    /* --engine sglang|llamacpp|vllm|auto (default auto) */
} decide_args;

/* The table's entries over decide_args a (no terminator). */
#define DECIDE_OPTS(a) \
        TL_OPT_MODEL(&(a).model),                                                                                      \
        {0, "hf", TL_OPT_STR, &(a).hf, .metavar = "ORG/REPO:FILE",                                                     \
         .help = "download the model from Hugging Face (cached), e.g. --hf " TL_DEFAULT_HF_MODEL},                     \
        {0, "schema", TL_OPT_STR, &(a).schema_path, .metavar = "S.json",                                               \
         .help = "ordered JSON Schema object: properties order = decision order (required)"},                          \
        {'f', "context", TL_OPT_STR, &(a).context_path, .metavar = "FILE",                                             \
         .help = "the context ('-' = stdin, the default)"},                                                            \
        {'p', "context-text", TL_OPT_STR, &(a).context_text, .metavar = "STR", .help = "the context as an argument"},  \
        {0, "mode", TL_OPT_STR, &(a).opts.mode, .metavar = "M",                                                        \
         .help = "sequential: each decision sees the ones before it; batch: every field sees only the\n"               \
                 "                             context (one batched step); auto (default): waves by depends_on"},      \
        {0, "style", TL_OPT_STR, &(a).opts.style, .metavar = "S",                                                      \
         .help = "chat (default when the model has a recognised chat template) or record"},                            \
        {0, "chat-template", TL_OPT_STR, &(a).opts.chat_template, .metavar = "NAME|FILE.jinja",                        \
         .help = "render this Jinja template instead of the model's own, or force a built-in family:\n"                \
                 "                             chatml, llama3, llama2 (mistral), gemma, phi3"},                        \
        {0, "temperature", TL_OPT_DOUBLE, &(a).opts.temperature, .min = 0, .max = 1e6, .metavar = "T", .alias = "temp", \
         .help = "0 (default) = argmax; T > 0 samples from softmax(logprob / T) over the choices"},                    \
        {'s', "seed", TL_OPT_U64, &(a).opts.seed, .metavar = "N", .help = "sampling seed (default 0)"},                \
        {0, "threshold", TL_OPT_DOUBLE, &(a).opts.threshold, .min = 0, .max = 1, .metavar = "P",                       \
         .help = "abstain (value null) when the chosen value's probability is below P"},                               \
        TL_OPT_THREADS(&(a).threads),                                                                                  \
        TL_OPT_CTX(&(a).n_ctx),                                                                                        \
        TL_OPT_CACHE_TYPES(&(a).cache_k, &(a).cache_v),                                                                \
        {0, "trace", TL_OPT_FLAG, &(a).opts.trace, .help = "per field: the exact token ids sent and the position scored"}, \
        {0, "values-only", TL_OPT_FLAG, &(a).values_only, .help = "print only {\"field\": value, ...}"},               \
        {0, "lenient", TL_OPT_FLAG, &(a).opts.lenient,                                                                 \
         .help = "unknown or unhonourable schema keywords are warnings, not errors"},                                  \
        {0, "strict", TL_OPT_FLAG, &(a).opts.strict, .help = "refuse free text (strings without enum), as \"x-strict\": true"}, \
        {0, "partial", TL_OPT_FLAG, &(a).opts.partial,                                                                 \
         .help = "when the prompt outgrows the context, return the fields decided before it"},                         \
        {0, "debias", TL_OPT_STR, &(a).opts.debias, .metavar = "M",                                                    \
         .help = "label-order debiasing of every choice field without x-debias: permute (cyclic\n"                     \
                 "                             orders, averaged), full (all n! orders), pride (position prior divided out)"}, \
        {0, "calibrate", TL_OPT_STR, &(a).opts.calibrate, .metavar = "M",                                              \
         .help = "calibration of every choice field without x-calibrate: content-free (divide by the\n"                \
                 "                             distribution given a content-free input) or pmi (given the question alone)"}, \
        {0, "content-free", TL_OPT_STR, &(a).opts.content_free, .metavar = "STR",                                      \
         .help = "the content-free input of --calibrate content-free (default \"N/A\")"},                               \
        {0, "think", TL_OPT_LONG, &(a).think, .min = 0, .max = 65536, .metavar = "N",                                  \
         .help = "reasoning templates: up to N reasoning tokens before each decision (default 0)"},                    \
        TL_OPT_NO_MMAP(&(a).no_mmap),                                                                                  \
        {0, "server", TL_OPT_STR, &(a).server, .metavar = "URL",                                                       \
         .help = "decide on a server (SGLang, llama.cpp, vLLM, typellm serve) instead of a local model"},                            \
        {0, "api-key", TL_OPT_STR, &(a).api_key, .metavar = "K",                                                       \
         .help = "with --server: send Authorization: Bearer K (default $TYPELLM_API_KEY)"},                            \
        {0, "api-key-file", TL_OPT_STR, &(a).api_key_file, .metavar = "F", .help = "with --server: the key from F"},   \
        {0, "tokenizer", TL_OPT_STR, &(a).tokenizer, .metavar = "M.gguf",                                              \
         .help = "with --server: the model's tokenizer and chat template (tokenizes locally; needed for\n"             \
                 "                             numbers with multipleOf and patterns; SGLang sends no template, so a\n" \
                 "                             chat decision needs --tokenizer or --chat-template)"},                  \
        {0, "server-timeout", TL_OPT_DOUBLE, &(a).server_timeout, .min = 0, .max = 86400, .flags = TL_OPT_GT_MIN,      \
         .metavar = "S", .help = "with --server: seconds per request (default 60)"},                                   \
        {0, "server-retries", TL_OPT_LONG, &(a).server_retries, .min = 0, .max = 100, .metavar = "N",                  \
         .help = "with --server: retries on 429/5xx/timeouts/broken replies (default 3)"},                                                                                                            \
        {0, "engine", TL_OPT_STR, &(a).engine, .metavar = "E",                                                         \
         .help = "with --server: sglang, llamacpp (llama.cpp's llama-server), vllm, or auto (default:\n"              \
                 "                             asks the server: llama.cpp's /props, SGLang's /model_info, vLLM)"}


/* --server URL: the remote backend (--engine) from a's --api-key, --tokenizer, --server-timeout, --server-retries. */
tl_status decide_remote_backend(const decide_args *a, tl_backend **b, tl_error *err);
/* --api-key-file F: reads the key into *buf (freed by the caller) and points
 * a->api_key at it; false after printing the error as cmd. */
bool decide_read_key(const char *cmd, decide_args *a, char **buf);

#endif
