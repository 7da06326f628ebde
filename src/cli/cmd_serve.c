/* cmd_serve.c: `typellm serve`: loads a model and runs the HTTP server
 * (src/server) until SIGINT/SIGTERM. With --port 0 the kernel picks a free
 * port; the chosen one is printed as "listening on http://HOST:PORT" on
 * stdout (tests read that line). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typellm/typellm.h"
#include "cli/cli.h"

static void serve_usage(FILE *f) {
    fprintf(f,
            "usage: typellm serve (--model M.gguf | $TYPELLM_MODEL | --hf ORG/REPO:FILE) [options]\n"
            "  --hf ORG/REPO:FILE   fetch the GGUF from Hugging Face (cached) when no --model is given\n"
            "  --host ADDR          bind address (default 127.0.0.1: loopback only)\n"
            "  --port N             TCP port (default 8080; 0 picks a free one and prints it)\n"
            "  --api-key KEY        require Authorization: Bearer KEY (all endpoints but /health)\n"
            "  --threads N          engine threads (default: all cores)\n"
            "  --cache-mb N         prefix-cache budget in MiB (default: engine's)\n"
            "  --max-body BYTES     request body limit (default 8388608)\n"
            "  --max-questions N    questions per /v1/systemone request (default 256)\n"
            "  --max-tokens N       prompt tokens per request (default: the model's context)\n"
            "  --max-queue N        requests in flight before 429 (default 64)\n"
            "  --timeout S          per-request timeout in seconds (default 300)\n"
            "  --quiet              no per-request log lines\n");
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int tl_cmd_serve(int argc, char **argv) {
    const char *model_arg = NULL, *hf = NULL;
    tl_server_params p;
    memset(&p, 0, sizeof p);
    p.port = 8080;
    p.log = stderr;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            serve_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--quiet")) {
            p.log = NULL;
            continue;
        }
        if (!v) {
            fprintf(stderr, "typellm serve: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) model_arg = v;
        else if (!strcmp(a, "--hf")) hf = v;
        else if (!strcmp(a, "--host")) p.host = v;
        else if (!strcmp(a, "--api-key")) p.api_key = v;
        else if (!strcmp(a, "--port") && parse_long(v, 0, 65535, &n)) p.port = (int)n;
        else if (!strcmp(a, "--threads") && parse_long(v, 0, 1024, &n)) p.n_threads = (int)n;
        else if (!strcmp(a, "--cache-mb") && parse_long(v, 0, 1L << 30, &n)) p.cache_mb = (size_t)n;
        else if (!strcmp(a, "--max-body") && parse_long(v, 1, 1L << 40, &n)) p.max_body = (size_t)n;
        else if (!strcmp(a, "--max-questions") && parse_long(v, 1, 1 << 20, &n)) p.max_questions = (int)n;
        else if (!strcmp(a, "--max-tokens") && parse_long(v, 1, 1 << 30, &n)) p.max_tokens = (int)n;
        else if (!strcmp(a, "--max-queue") && parse_long(v, 1, 1 << 20, &n)) p.max_queue = (int)n;
        else if (!strcmp(a, "--timeout") && parse_long(v, 1, 1 << 20, &n)) p.request_timeout_s = (double)n;
        else {
            fprintf(stderr, "typellm serve: bad option or value: %s %s\n", a, v);
            serve_usage(stderr);
            return 2;
        }
    }
    tl_error err = {0};
    char *model_path = NULL;
    if (!model_arg && !hf && !getenv("TYPELLM_MODEL")) {
        fprintf(stderr, "typellm serve: give a model: --model M.gguf, $TYPELLM_MODEL or --hf ORG/REPO:FILE\n");
        serve_usage(stderr);
        return 2;
    }
    if (tl_model_resolve(model_arg, hf, &model_path, &err) != TL_OK) {
        fprintf(stderr, "typellm serve: %s\n", err.msg);
        return 1;
    }
    p.model_path = model_path;

    /* Block the stop signals in every thread (the server's threads inherit
     * this mask); the main thread then waits for one with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    tl_model *m = NULL;
    if (tl_model_load(model_path, &m, &err) != TL_OK) {
        fprintf(stderr, "typellm serve: %s\n", err.msg);
        free(model_path);
        return 1;
    }
    tl_server *s = NULL;
    if (tl_server_new(m, &p, &s, &err) != TL_OK || tl_server_start(s, &err) != TL_OK) {
        fprintf(stderr, "typellm serve: %s\n", err.msg);
        tl_server_free(s);
        tl_model_free(m);
        free(model_path);
        return 1;
    }
    printf("listening on http://%s:%d (model %s)\n", p.host ? p.host : "127.0.0.1", tl_server_port(s),
           tl_model_name(m));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "typellm serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    tl_server_free(s);
    tl_model_free(m);
    free(model_path);
    return 0;
}
