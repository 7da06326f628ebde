/* cmd_decide.c: `typellm decide`: context + ordered JSON Schema -> typed
 * values with probabilities, printed as the JSON object tl_decide returns.
 * Options live in one table-driven parser so new ones (--server URL for a
 * remote backend) are one entry each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

#define MAX_CONTEXT_BYTES ((size_t)64 << 20)
#define MAX_SCHEMA_BYTES ((size_t)16 << 20)

typedef struct decide_args {
    const char *model;        /* --model PATH */
    const char *hf;           /* --hf ORG/REPO:FILE */
    const char *schema_path;  /* --schema FILE */
    const char *context_path; /* --context FILE ("-" = stdin) */
    const char *context_text; /* --context-text STR */
    int threads;              /* --threads N (0: all cores) */
    bool values_only;         /* --values-only: print just "values" */
    tl_decide_opts opts;
    /* Remote SGLang backend (server developer): --server URL [--api-key K] [--tokenizer M.gguf]. */
    const char *server, *api_key, *tokenizer;
    double server_timeout; /* seconds per request; 0: the backend's default */
    int server_retries;    /* -1: the backend's default */
} decide_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: typellm decide (--model M.gguf | $TYPELLM_MODEL | --hf ORG/REPO:FILE) --schema S.json\n"
            "                      [--context FILE | --context-text STR]   (default: context from stdin)\n"
            "                      [--mode sequential|batch|auto] [--style chat|record] [--chat-template NAME]\n"
            "                      [--temperature T] [--seed N] [--threshold P] [--threads N] [--trace] [--values-only]\n"
            "                      [--lenient] [--strict] [--partial]\n"
            "  --schema S.json      ordered JSON Schema object: properties order = decision order\n"
            "  --mode M             sequential: each decision sees the ones before it; batch: every field\n"
            "                       sees only the context (one batched step); auto (default): waves by depends_on\n"
            "  --style S            chat (default when the model has a recognised chat template) or record\n"
            "  --chat-template NAME|FILE.jinja  render this Jinja template instead of the model's own, or\n"
            "                      force a built-in family: chatml, llama3, llama2 (mistral), gemma, phi3\n"
            "  --temperature T      0 (default) = argmax; T > 0 samples from softmax(logprob / T) over the choices\n"
            "  --seed N             sampling seed (default 0)\n"
            "  --threshold P        abstain (value null) when the chosen value's probability is below P\n"
            "  --threads N          CPU threads (default: all cores)\n"
            "  --trace              per field: the exact token ids sent and the position scored\n"
            "  --values-only        print only {\"field\": value, ...}\n"
            "  --lenient            unknown or unhonourable schema keywords are warnings, not errors\n"
            "  --strict             refuse free text (strings without enum), as \"x-strict\": true\n"
            "  --partial            when the prompt outgrows the context, return the fields decided before it\n"
            "  --server URL         decide on an SGLang server (or typellm serve) instead of a local model;\n"
            "                       --api-key K sends Authorization: Bearer K; --tokenizer M.gguf is the\n"
            "                       model's tokenizer and chat template (tokenizes locally; needed for numbers\n"
            "                       with multipleOf and patterns); SGLang sends no template, so a chat decision\n"
            "                       needs --tokenizer or --chat-template; --server-timeout S per request (60),\n"
            "                       --server-retries N on 429/5xx/timeouts/broken replies (3)\n");
}

static bool parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && end != s && !*end;
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-')
        return false;
    *out = strtoull(s, &end, 10);
    return !errno && end != s && !*end;
}

/* One option: its name, whether it takes a value, and how it is stored. */
typedef bool (*opt_setter)(decide_args *a, const char *v);
typedef struct decide_option {
    const char *name;
    bool takes_value;
    opt_setter set;
} decide_option;

static bool set_model(decide_args *a, const char *v) { return (a->model = v), true; }
static bool set_hf(decide_args *a, const char *v) { return (a->hf = v), true; }
static bool set_schema(decide_args *a, const char *v) { return (a->schema_path = v), true; }
static bool set_context(decide_args *a, const char *v) { return (a->context_path = v), true; }
static bool set_context_text(decide_args *a, const char *v) { return (a->context_text = v), true; }
static bool set_mode(decide_args *a, const char *v) { return (a->opts.mode = v), true; }
static bool set_style(decide_args *a, const char *v) { return (a->opts.style = v), true; }
static bool set_template(decide_args *a, const char *v) { return (a->opts.chat_template = v), true; }
static bool set_temperature(decide_args *a, const char *v) { return parse_double(v, &a->opts.temperature); }
static bool set_seed(decide_args *a, const char *v) { return parse_u64(v, &a->opts.seed); }
static bool set_threshold(decide_args *a, const char *v) { return parse_double(v, &a->opts.threshold); }
static bool set_threads(decide_args *a, const char *v) {
    uint64_t n;
    if (!parse_u64(v, &n) || n > 1024)
        return false;
    a->threads = (int)n;
    return true;
}
static bool set_trace(decide_args *a, const char *v) { return (a->opts.trace = true), true; }
static bool set_values_only(decide_args *a, const char *v) { return (a->values_only = true), true; }
static bool set_lenient(decide_args *a, const char *v) { return (a->opts.lenient = true), true; }
static bool set_strict(decide_args *a, const char *v) { return (a->opts.strict = true), true; }
static bool set_partial(decide_args *a, const char *v) { return (a->opts.partial = true), true; }

/* ---- --server: the remote SGLang backend (server developer) ---- */
static bool set_server(decide_args *a, const char *v) { return (a->server = v), true; }
static bool set_api_key(decide_args *a, const char *v) { return (a->api_key = v), true; }
static bool set_tokenizer(decide_args *a, const char *v) { return (a->tokenizer = v), true; }
static bool set_server_timeout(decide_args *a, const char *v) {
    char *end = NULL;
    double t = strtod(v, &end);
    if (end == v || *end || !(t > 0 && t <= 86400))
        return false;
    a->server_timeout = t;
    return true;
}
static bool set_server_retries(decide_args *a, const char *v) {
    uint64_t n;
    if (!parse_u64(v, &n) || n > 100)
        return false;
    a->server_retries = (int)n;
    return true;
}
static tl_status sglang_backend(const decide_args *a, tl_backend **b, tl_error *err) {
    tl_sglang_params p = {.base_url = a->server, .api_key = a->api_key, .tokenizer_path = a->tokenizer,
                          .timeout_s = a->server_timeout, .max_retries = a->server_retries};
    return tl_backend_sglang_new(&p, b, err);
}
/* ---- end of --server ---- */

static const decide_option options[] = {
    {"--server", true, set_server},
    {"--api-key", true, set_api_key},
    {"--tokenizer", true, set_tokenizer},
    {"--server-timeout", true, set_server_timeout},
    {"--server-retries", true, set_server_retries},
    {"--model", true, set_model},
    {"--hf", true, set_hf},
    {"--schema", true, set_schema},
    {"--context", true, set_context},
    {"--context-text", true, set_context_text},
    {"--mode", true, set_mode},
    {"--style", true, set_style},
    {"--chat-template", true, set_template},
    {"--temperature", true, set_temperature},
    {"--seed", true, set_seed},
    {"--threshold", true, set_threshold},
    {"--threads", true, set_threads},
    {"--trace", false, set_trace},
    {"--values-only", false, set_values_only},
    {"--lenient", false, set_lenient},
    {"--strict", false, set_strict},
    {"--partial", false, set_partial},
};

/* Returns 0 when parsed, 2 on a usage error (message printed), -1 for --help. */
static int parse_args(int argc, char **argv, decide_args *a) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return -1;
        const decide_option *o = NULL;
        for (size_t k = 0; k < sizeof options / sizeof options[0] && !o; k++)
            if (!strcmp(argv[i], options[k].name))
                o = &options[k];
        if (!o) {
            fprintf(stderr, "typellm decide: unknown option '%s'\n", argv[i]);
            return 2;
        }
        const char *v = NULL;
        if (o->takes_value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "typellm decide: %s needs a value\n", o->name);
                return 2;
            }
            v = argv[++i];
        }
        if (!o->set(a, v)) {
            fprintf(stderr, "typellm decide: bad value for %s: '%s'\n", o->name, v);
            return 2;
        }
    }
    if (!a->schema_path) {
        fprintf(stderr, "typellm decide: --schema is required\n");
        return 2;
    }
    if (a->context_path && a->context_text) {
        fprintf(stderr, "typellm decide: give --context or --context-text, not both\n");
        return 2;
    }
    return 0;
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
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : 2;
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
    const char *ct = a.opts.chat_template;
    if (ct && (strchr(ct, '/') || (strlen(ct) > 6 && !strcmp(ct + strlen(ct) - 6, ".jinja")))) {
        size_t tlen;
        st = tl_read_file(ct, MAX_SCHEMA_BYTES, &template_src, &tlen, &err);
        if (!st && strlen(template_src) != tlen)
            st = tl_error_set(&err, TL_ERR_INVALID, "%s: template contains a NUL byte", ct);
        a.opts.chat_template_jinja = template_src;
        a.opts.chat_template = NULL;
    }
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
        st = tl_model_load(model_path, &model, &err);
    if (!st && !b) {
        tl_session_params sp = {.n_threads = a.threads};
        st = tl_backend_local_new(model, &sp, &b, &err);
    }
    if (!st)
        st = tl_decide(b, context, context_len, schema, &a.opts, &result, &err);
    if (!st) {
        char *text = tl_decision_to_json(result, TL_JSON_INDENT | (a.values_only ? TL_JSON_VALUES_ONLY : 0));
        if (text) {
            puts(text);
            tl_free(text);
        } else {
            st = tl_error_set(&err, TL_ERR_NOMEM, "out of memory");
        }
    }
    if (st)
        fprintf(stderr, "typellm decide: %s\n", err.msg);
    tl_decision_free(result);
    tl_schema_free(schema);
    tl_backend_free(b);
    tl_model_free(model);
    free(model_path);
    free(context);
    free(template_src);
    return st ? (st == TL_ERR_INVALID || st == TL_ERR_SCHEMA ? 2 : 1) : 0;
}
