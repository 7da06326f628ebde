/* cmd_serve.c: `typellm serve`: loads a model, or connects to an engine
 * that already runs (--upstream URL: a decision front end), and runs the
 * HTTP server (src/server) until SIGINT/SIGTERM. With --port 0 the kernel picks a free
 * port; the chosen one is printed as "listening on http://HOST:PORT" on
 * stdout (tests read that line). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

/* The key in a file: its first line, surrounding white space removed. */
static char *read_key_file(const char *path, tl_error *err) {
    char *data = NULL;
    size_t len = 0;
    if (tl_read_file(path, 1 << 16, &data, &len, err) != TL_OK)
        return NULL;
    char *start = data;
    while (*start == ' ' || *start == '\t' || *start == '\r' || *start == '\n')
        start++;
    size_t n = strcspn(start, "\r\n");
    while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
        n--;
    if (n == 0) {
        free(data);
        tl_error_set(err, TL_ERR_INVALID, "%s: the API key file is empty", path);
        return NULL;
    }
    memmove(data, start, n);
    data[n] = '\0';
    return data;
}

int tl_cmd_serve(int argc, char **argv) {
    const char *model_arg = NULL, *hf = NULL, *key_file = NULL, *chat_template = NULL;
    const char *upstream = NULL, *engine = "auto", *upstream_key = NULL, *tokenizer = NULL;
    double upstream_timeout = 0;
    char *template_src = NULL;
    tl_server_params p;
    memset(&p, 0, sizeof p);
    long port = 8080, threads = 0, cache_mb = 0, max_body = 0, max_questions = 0, max_tokens = 0, max_queue = 0,
         timeout = 0, n_ctx = 0;
    bool quiet = false, no_mmap = false, extend = false;
    const char *log_format = "text";
    long step_tokens = -1, max_file_mb = 0;
    p.api_key = getenv("TYPELLM_API_KEY");
    if (p.api_key && !*p.api_key)
        p.api_key = NULL;
    tl_cache_type cache_k = TL_CACHE_F32, cache_v = TL_CACHE_F32;
    const tl_opt opts[] = {
        TL_OPT_MODEL(&model_arg),
        {0, "hf", TL_OPT_STR, &hf, .metavar = "ORG/REPO:FILE",
         .help = "fetch the GGUF from Hugging Face (cached) when no model is given"},
        {0, "host", TL_OPT_STR, &p.host, .metavar = "ADDR",
         .help = "bind address: numeric IPv4/IPv6 or localhost (default 127.0.0.1: loopback only)"},
        {0, "port", TL_OPT_LONG, &port, .min = 0, .max = 65535, .metavar = "N",
         .help = "TCP port (default 8080; 0 picks a free one and prints it)"},
        {0, "api-key", TL_OPT_STR, &p.api_key, .metavar = "KEY",
         .help = "require Authorization: Bearer KEY on all endpoints but /health (default $TYPELLM_API_KEY)"},
        {0, "api-key-file", TL_OPT_STR, &key_file, .metavar = "F",
         .help = "the key from F's first line (keeps it out of the process list)"},
        TL_OPT_THREADS(&threads),
        {0, "cache-mb", TL_OPT_LONG, &cache_mb, .min = 0, .max = 1L << 30, .metavar = "N",
         .help = "prefix-cache budget in MiB (default: engine's)"},
        {0, "max-body", TL_OPT_LONG, &max_body, .min = 1, .max = 1L << 40, .metavar = "BYTES",
         .help = "request body limit (default 8388608)"},
        {0, "max-file-mb", TL_OPT_LONG, &max_file_mb, .min = 1, .max = 1L << 30, .metavar = "N",
         .help = "POST /v1/files uploads, streamed to --data-dir (default 200)"},
        {0, "max-questions", TL_OPT_LONG, &max_questions, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "questions per /v1/systemone request (default 256)"},
        {0, "max-tokens", TL_OPT_LONG, &max_tokens, .min = 1, .max = 1 << 30, .metavar = "N",
         .help = "prompt tokens per request (default: the model's context)"},
        {0, "max-queue", TL_OPT_LONG, &max_queue, .min = 1, .max = 1 << 20, .metavar = "N",
         .help = "requests in flight before 429 (default 64)"},
        {0, "timeout", TL_OPT_LONG, &timeout, .min = 1, .max = 1 << 20, .metavar = "S",
         .help = "per-request timeout in seconds (default 300)"},
        {0, "chat-template", TL_OPT_STR, &chat_template, .metavar = "NAME|FILE.jinja",
         .help = "chat template instead of the model's: chatml, llama3, llama2, gemma, phi3, or a file"},
        {0, "quiet", TL_OPT_FLAG, &quiet, .help = "no per-request log lines"},
        TL_OPT_NO_MMAP(&no_mmap),
        {0, "no-ui", TL_OPT_FLAG, &p.no_ui, .help = "no playground page at GET / (404)"},
        {0, "metrics-public", TL_OPT_FLAG, &p.metrics_public, .help = "GET /metrics without the API key"},
        {0, "log-format", TL_OPT_STR, &log_format, .metavar = "text|json",
         .help = "request log lines: text (default) or one JSON object each"},
        TL_OPT_CTX(&n_ctx),
        TL_OPT_CACHE_TYPES(&cache_k, &cache_v),
        {0, "extend-ctx", TL_OPT_FLAG, &extend,
         .help = "accept prompts longer than the model's context length: the context grows to --max-tokens"},
        {0, "data-dir", TL_OPT_STR, &p.data_dir, .metavar = "DIR",
         .help = "the Files and Batch API's files and jobs (default $TYPELLM_CACHE/server or ~/.cache/typellm/server)"},
        {0, "upstream", TL_OPT_STR, &upstream, .metavar = "URL",
         .help = "no local model: a decision front end for an engine already running at URL\n"
                 "                             (SGLang, llama.cpp's llama-server, vLLM, typellm serve)"},
        {0, "engine", TL_OPT_STR, &engine, .metavar = "E",
         .help = "with --upstream: sglang, llamacpp, vllm, or auto (default: asks the server)"},
        {0, "upstream-key", TL_OPT_STR, &upstream_key, .metavar = "K",
         .help = "with --upstream: send Authorization: Bearer K to it (default $TYPELLM_UPSTREAM_KEY)"},
        {0, "tokenizer", TL_OPT_STR, &tokenizer, .metavar = "M.gguf",
         .help = "with --upstream: the model's tokenizer and chat template here (numbers and patterns\n"
                 "                             by automaton, no /tokenize round trips)"},
        {0, "upstream-timeout", TL_OPT_DOUBLE, &upstream_timeout, .min = 0, .max = 86400, .flags = TL_OPT_GT_MIN,
         .metavar = "S", .help = "with --upstream: seconds per HTTP exchange with it (default 60; --timeout bounds the request)"},
        {0, "step-tokens", TL_OPT_LONG, &step_tokens, .min = 0, .max = 1 << 20, .metavar = "N",
         .help = "uncached tokens per scheduler step: longer new contexts run in chunks beside\n"
                 "                             the other requests (default 512; 0: no chunking)"},
        {0},
    };
    const tl_opt_cmd cmd = {"serve", "(-m M.gguf | $TYPELLM_MODEL | --hf ORG/REPO:FILE | --upstream URL) [options]",
                            "HTTP server: SGLang API, /v1/systemone, /v1/decide", .opts = opts};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    p.port = (int)port;
    p.n_threads = (int)threads;
    p.cache_mb = (size_t)cache_mb;
    p.cache_type_k = cache_k;
    p.cache_type_v = cache_v;
    p.max_body = (size_t)max_body;
    p.max_file_bytes = (size_t)max_file_mb << 20;
    p.max_questions = (int)max_questions;
    p.max_tokens = (int)max_tokens;
    p.max_queue = (int)max_queue;
    p.step_tokens = step_tokens < 0 ? 0 : step_tokens == 0 ? -1 : (int)step_tokens;
    p.request_timeout_s = (double)timeout;
    p.log = quiet ? NULL : stderr;
    if (strcmp(log_format, "text") && strcmp(log_format, "json"))
        return tl_opt_fail(&cmd, "--log-format: '%s' is not text or json", log_format);
    p.log_json = !strcmp(log_format, "json");
    char data_dir_buf[4096];
    if (!p.data_dir) {
        const char *cache = getenv("TYPELLM_CACHE"), *home = getenv("HOME");
        if (cache && *cache)
            snprintf(data_dir_buf, sizeof data_dir_buf, "%s/server", cache);
        else if (home && *home)
            snprintf(data_dir_buf, sizeof data_dir_buf, "%s/.cache/typellm/server", home);
        p.data_dir = (cache && *cache) || (home && *home) ? data_dir_buf : NULL;
    }
    if (p.host && !strcmp(p.host, "localhost"))
        p.host = "127.0.0.1";
    char *key_buf = NULL;
    tl_error err = {0};
    char *model_path = NULL;
    tl_remote_params rp = {.conn = {.base_url = upstream, .tokenizer_path = tokenizer, .timeout_s = upstream_timeout,
                                    .max_retries = -1}};
    if (upstream) {
        if (model_arg || hf)
            return tl_opt_fail(&cmd, "--upstream serves the engine at URL: give no -m/--model or --hf with it");
        if (!tl_engine_parse(engine, &rp.engine))
            return tl_opt_fail(&cmd, "--engine %s: expected sglang, llamacpp, vllm or auto", engine);
        rp.conn.api_key = upstream_key ? upstream_key : getenv("TYPELLM_UPSTREAM_KEY");
        if (rp.conn.api_key && !*rp.conn.api_key)
            rp.conn.api_key = NULL;
    } else if (tokenizer || upstream_key || upstream_timeout > 0 || strcmp(engine, "auto"))
        return tl_opt_fail(&cmd, "--engine, --upstream-key, --tokenizer and --upstream-timeout go with --upstream URL");
    else if (!tl_cli_model(model_arg) && !hf)
        return tl_opt_fail(&cmd, "give a model: -m/--model M.gguf, $TYPELLM_MODEL, --hf ORG/REPO:FILE or --upstream URL");
    int rc = 1;
    tl_model *m = NULL;
    tl_server *s = NULL;
    if (key_file) {
        if (!(key_buf = read_key_file(key_file, &err))) {
            rc = err.code == TL_ERR_INVALID ? 2 : 1;
            goto fail;
        }
        p.api_key = key_buf;
    }
    if (tl_cli_chat_template(chat_template, &p.chat_template, &template_src, &err) != TL_OK)
        goto fail;
    p.chat_template_jinja = template_src;

    /* Block the stop signals in every thread (the server's threads inherit
     * this mask); the main thread then waits for one with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (upstream) {
        /* the engine is asked what it is now: unreachable is an error here, not on the first request */
        if (tl_server_new_upstream(&rp, &p, &s, &err) != TL_OK)
            goto fail;
    } else {
        if (tl_model_resolve(model_arg, hf, &model_path, &err) != TL_OK)
            goto fail;
        p.model_path = model_path;
        if (tl_cli_model_load("serve", model_path, no_mmap, &m) != TL_OK)
            goto quiet_fail;
        /* -c past the trained context extends it with a warning, as in every
         * subcommand; --extend-ctx (as in `logits`) sizes it to the longest
         * prompt accepted, --max-tokens. */
        tl_session_params sp = {0};
        tl_cli_ctx("serve", m, n_ctx, &sp);
        if (extend && max_tokens > tl_model_n_ctx_train(m) && max_tokens > sp.n_ctx) {
            sp.n_ctx = (int32_t)max_tokens;
            sp.extend_ctx = true;
        }
        p.n_ctx = sp.n_ctx;
        p.extend_ctx = sp.extend_ctx;
        if (tl_server_new(m, &p, &s, &err) != TL_OK)
            goto fail;
    }
    if (tl_server_start(s, &err) != TL_OK)
        goto fail;
    if (upstream)
        printf("listening on http://%s:%d (upstream %s)\n", p.host ? p.host : "127.0.0.1", tl_server_port(s), upstream);
    else
        printf("listening on http://%s:%d (model %s)\n", p.host ? p.host : "127.0.0.1", tl_server_port(s),
               tl_model_name(m));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "typellm serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
    goto done;
fail:
    tl_cli_error("serve", err.msg);
quiet_fail: /* the loader printed its own error */
done:
    tl_server_free(s);
    tl_model_free(m);
    free(model_path);
    free(key_buf);
    free(template_src);
    return rc;
}
