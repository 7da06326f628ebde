/* cmd_decide.c: `typellm decide`: context + ordered JSON Schema -> typed
 * values with probabilities, printed as the JSON object tl_decide returns.
 * Options are one table for the shared parser (opt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"
#include "cli/decide_opts.h"

#define MAX_CONTEXT_BYTES ((size_t)64 << 20)
#define MAX_SCHEMA_BYTES ((size_t)16 << 20)


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
        DECIDE_OPTS(a),
        {0},
    };
    const tl_opt_cmd cmd = {
        "decide", "(-m M.gguf | $TYPELLM_MODEL | --hf ORG/REPO:FILE | --server URL) --schema S.json [-f FILE | -p STR]",
        "typed decisions: context + ordered JSON Schema -> values with probabilities", .opts = opts,
        .epilog = "  A model is required: nothing is downloaded unless --hf names it.\n"};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    a.opts.think = (int)a.think;
    if (!a.schema_path)
        return tl_opt_fail(&cmd, "--schema is required");
    if (a.context_path && a.context_text)
        return tl_opt_fail(&cmd, "give --context or --context-text, not both");
    if (!a.server && !tl_cli_model(a.model) && !a.hf)
        return tl_opt_fail(&cmd, "give a model: -m/--model M.gguf, $TYPELLM_MODEL, --hf ORG/REPO:FILE, or --server URL");
    char *key_buf = NULL;
    if (!decide_read_key("decide", &a, &key_buf))
        return 1;
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
        st = decide_remote_backend(&a, &b, &err);
    if (!st && !b)
        st = tl_model_resolve(a.model, a.hf, &model_path, &err);
    if (!st && !b)
        st = tl_model_load_ex(model_path, a.no_mmap ? TL_MODEL_NO_MMAP : 0, &model, &err);
    if (!st && !b) {
        tl_session_params sp = {.n_threads = (int)a.threads, .cache_type_k = a.cache_k, .cache_type_v = a.cache_v};
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
