/* decide_opts.c: what `typellm decide` and `typellm batch` share beyond their option table. */
#include "cli/decide_opts.h"

#include <string.h>

tl_status decide_remote_backend(const decide_args *a, tl_backend **b, tl_error *err) {
    tl_remote_params p = {.conn = {.base_url = a->server, .api_key = a->api_key, .tokenizer_path = a->tokenizer,
                                   .timeout_s = a->server_timeout, .max_retries = (int)a->server_retries}};
    if (!tl_engine_parse(a->engine ? a->engine : "auto", &p.engine))
        return tl_error_set(err, TL_ERR_INVALID, "--engine %s: expected sglang, llamacpp, vllm or auto", a->engine);
    return tl_backend_remote_new(&p, b, err);
}

bool decide_read_key(const char *cmd, decide_args *a, char **buf) {
    *buf = NULL;
    if (!a->api_key_file)
        return true;
    tl_error kerr = {0};
    char *data = NULL;
    size_t len = 0;
    if (tl_read_file(a->api_key_file, 1 << 16, &data, &len, &kerr) != TL_OK) {
        tl_cli_error(cmd, kerr.msg);
        return false;
    }
    data[strcspn(data, "\r\n")] = '\0';
    a->api_key = *buf = data;
    return true;
}
