/* cmd_batch.c: `typellm batch`: `typellm decide` over every record of a
 * JSONL / CSV / OpenAI batch file (tl_batch_run, typellm/batch.h), records
 * in flight at once on one shared batching backend, output in input order,
 * resumable. Takes decide's options (decide_opts.h) plus its own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "typellm/batch.h"
#include "typellm/typellm.h"
#include "cli/cli.h"
#include "cli/decide_opts.h"

#define MAX_SCHEMA_BYTES ((size_t)16 << 20)

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    interrupted = 1;
    signal(sig, SIG_DFL); /* a second Ctrl-C ends the process at once (the output stays resumable) */
}

static bool stop_requested(void *ctx) {
    (void)ctx;
    return interrupted != 0;
}

/* ---- progress --------------------------------------------------------------- */

typedef struct progress_view {
    bool tty;
    double interval_s, last_s;
    bool drawn;
} progress_view;

static void fmt_duration(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void print_progress(FILE *f, const tl_batch_progress *p, const char *end) {
    uint64_t ran = p->done - p->resumed;
    double el = p->elapsed_s > 1e-9 ? p->elapsed_s : 1e-9;
    double rate = (double)ran / el;
    double reuse = p->usage.prompt_tokens ? 100.0 * (double)p->usage.cached_tokens / (double)p->usage.prompt_tokens : 0;
    char eta[32] = "?";
    if (p->total && rate > 0)
        fmt_duration((double)(p->total - (p->done < p->total ? p->done : p->total)) / rate, eta, sizeof eta);
    if (p->total)
        fprintf(f, "batch: %llu/%llu (%.0f%%)", (unsigned long long)p->done, (unsigned long long)p->total,
                100.0 * (double)p->done / (double)p->total);
    else
        fprintf(f, "batch: %llu", (unsigned long long)p->done);
    fprintf(f, "  %.1f records/s  %.0f tokens/s  cache reuse %.0f%%  ETA %s  errors %llu%s", rate,
            (double)p->usage.prompt_tokens / el, reuse, eta, (unsigned long long)p->errors, end);
    fflush(f);
}

static void on_progress(void *ctx, const tl_batch_progress *p) {
    progress_view *v = ctx;
    double now = tl_now_s();
    if (now - v->last_s < v->interval_s && p->done != p->total)
        return;
    v->last_s = now;
    v->drawn = v->tty;
    print_progress(stderr, p, v->tty ? "\033[K\r" : "\n");
}

/* ---- backends --------------------------------------------------------------- */

#define MAX_SERVERS 64

typedef struct batch_backends {
    const decide_args *a;
    const char *servers[MAX_SERVERS]; /* every --server given (the table keeps only the last) */
    int n_servers;
    int n_parallel;
    tl_backend *shared; /* local model: the one shared batching backend */
    tl_server *server;  /* OpenAI lines on a local model: the server's handlers, socket-free */
} batch_backends;

/* Worker w's backend: a client of the shared one; with several servers
 * (bp.n_routes) its backend on server index / n_parallel; with one, that
 * server (a retry after a network failure asks again). */
static tl_status new_backend(void *ctx, int index, tl_backend **out, tl_error *err) {
    batch_backends *bb = ctx;
    if (bb->shared)
        return tl_backend_shared_client(bb->shared, NULL, out, err);
    decide_args a = *bb->a;
    a.server = bb->servers[(index / bb->n_parallel) % bb->n_servers];
    return decide_remote_backend(&a, out, err);
}

/* Every --server URL / --server=URL of argv, in order. */
static int collect_servers(int argc, char **argv, const char **out) {
    int n = 0;
    for (int i = 1; i < argc && n < MAX_SERVERS; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--server") && i + 1 < argc)
            out[n++] = argv[++i];
        else if (!strncmp(argv[i], "--server=", 9))
            out[n++] = argv[i] + 9;
    }
    return n;
}

static tl_status server_request(void *ctx, tl_backend *b, const char *url, const char *body, size_t len, int *status,
                                char **reply, tl_error *err) {
    (void)b;
    batch_backends *bb = ctx;
    tl_http_request rq = {.method = "POST", .path = url, .body = body, .body_len = len};
    tl_http_reply r = {.stream_fd = -1};
    tl_server_handle(bb->server, &rq, &r);
    *status = r.status;
    *reply = tl_strbuf_detach(&r.body);
    tl_http_reply_free(&r);
    if (!*reply)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    return TL_OK;
}

/* An OpenAI line with --server: forwarded to the record's server as it is.
 * /v1/decisions is typellm serve's; another engine's 404 becomes the line's
 * error, naming the engine. */
static tl_status remote_request(void *ctx, tl_backend *b, const char *url, const char *body, size_t len, int *status,
                                char **reply, tl_error *err) {
    (void)ctx;
    tl_status st = tl_backend_forward(b, url, body, len, status, reply, err);
    if (!st && (*status == 404 || *status == 405) && !strcmp(url, "/v1/decisions")) {
        tl_backend_caps caps;
        tl_backend_capabilities(b, &caps);
        tl_free(*reply);
        *reply = NULL;
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            "/v1/decisions: the %s server answered HTTP %d: decisions over OpenAI lines need "
                            "typellm serve; for %s, give the records as JSONL with --schema",
                            caps.engine, *status, caps.engine);
    }
    return st;
}

/* ---- the command -------------------------------------------------------------- */

static bool parse_format(const char *s, tl_batch_format *f) {
    static const char *const names[] = {"auto", "jsonl", "csv", "openai"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *f = (tl_batch_format)i;
            return true;
        }
    return false;
}

int tl_cmd_batch(int argc, char **argv) {
    decide_args a = {.server_retries = -1};
    a.api_key = getenv("TYPELLM_API_KEY");
    if (a.api_key && !*a.api_key)
        a.api_key = NULL;
    const char *input = NULL, *output = NULL, *format = "auto";
    tl_batch_params bp = {0};
    long parallel = 0, max_record = 0, cache_mb = 0;
    double log_every = 10;
    bool no_progress = false;
    const tl_opt opts[] = {
        DECIDE_OPTS(a),
        {'i', "input", TL_OPT_STR, &input, .metavar = "IN", .help = "records: .jsonl, .csv, or OpenAI batch lines"},
        {'o', "output", TL_OPT_STR, &output, .metavar = "OUT",
         .help = "one line per record, in input order (.csv: CSV); resumed when it exists"},
        {0, "format", TL_OPT_STR, &format, .metavar = "F", .help = "auto (default), jsonl, csv or openai"},
        {0, "context-field", TL_OPT_STR, &bp.context_field, .metavar = "K",
         .help = "JSONL: the member holding the context (default context)"},
        {0, "id-field", TL_OPT_STR, &bp.id_field, .metavar = "K", .help = "JSONL: the member holding the id (default id)"},
        {0, "context-column", TL_OPT_STR, &bp.context_column, .metavar = "C",
         .help = "CSV: the header of the context column (default context)"},
        {0, "id-column", TL_OPT_STR, &bp.id_column, .metavar = "C", .help = "CSV: the id column (default id, if any)"},
        {0, "parallel", TL_OPT_LONG, &parallel, .min = 1, .max = 1024, .metavar = "N",
         .help = "records in flight, merged into batched forward passes (default 16)"},
        {0, "overwrite", TL_OPT_FLAG, &bp.overwrite, .help = "start over instead of resuming OUT"},
        {0, "max-record-bytes", TL_OPT_LONG, &max_record, .min = 1, .max = 1L << 30, .metavar = "N",
         .help = "longer records get an error line (default 16 MiB)"},
        {0, "cache-mb", TL_OPT_LONG, &cache_mb, .min = 0, .max = 1L << 30, .metavar = "N",
         .help = "prefix-cache budget in MiB (default: the engine's)"},
        {0, "no-progress", TL_OPT_FLAG, &no_progress, .help = "no progress line / log lines"},
        /* --server URL (decide's) may be given several times: the records spread over them */
        {0, "log-every", TL_OPT_DOUBLE, &log_every, .min = 0.01, .max = 86400, .metavar = "S",
         .help = "off a terminal: a progress log line every S seconds (default 10)"},
        {0},
    };
    const tl_opt_cmd cmd = {
        "batch",
        "(-m M.gguf | --server URL) [--schema S.json] -i IN.jsonl|IN.csv -o OUT.jsonl|OUT.csv [decide options]",
        "typed decisions over every record of a file, resumable", .opts = opts,
        .epilog = "  Records: JSONL {\"id\", \"context\", \"schema\"?}, CSV with a header row, or OpenAI batch lines\n"
                  "  {\"custom_id\", \"method\", \"url\", \"body\"} (/v1/decisions, /v1/chat/completions, /v1/completions;\n"
                  "  with --server, sent to the server as they are).\n"
                  "  Rerunning the same command after a crash or Ctrl-C continues where it stopped.\n"
                  "  --server may be given several times: the records spread over the servers, a dead one skipped.\n"
                  "  --schema is optional when every record brings its own \"schema\".\n"};
    int prc = tl_opt_parse(&cmd, argc, argv, NULL, NULL);
    if (prc != TL_OPT_OK)
        return tl_opt_exit(prc);
    a.opts.think = (int)a.think;
    if (!input || !output)
        return tl_opt_fail(&cmd, "give the input (-i IN) and the output (-o OUT)");
    if (a.context_path || a.context_text)
        return tl_opt_fail(&cmd, "the contexts come from the input's records, not --context / --context-text");
    if (!parse_format(format, &bp.format))
        return tl_opt_fail(&cmd, "--format: '%s' is not one of auto, jsonl, csv, openai", format);
    if (!a.server && !tl_cli_model(a.model) && !a.hf)
        return tl_opt_fail(&cmd, "give a model: -m/--model M.gguf, $TYPELLM_MODEL, --hf ORG/REPO:FILE, or --server URL");
    char *key_buf = NULL;
    if (!decide_read_key("batch", &a, &key_buf))
        return 1;
    tl_error err = {0};
    tl_status st = TL_OK;
    char *schema = NULL, *template_src = NULL, *model_path = NULL;
    size_t schema_len = 0;
    tl_model *model = NULL;
    batch_backends bb = {.a = &a};
    bb.n_servers = collect_servers(argc, argv, bb.servers);
    st = tl_cli_chat_template(a.opts.chat_template, &a.opts.chat_template, &template_src, &err);
    a.opts.chat_template_jinja = template_src;
    if (!st && a.schema_path)
        st = tl_read_file(a.schema_path, MAX_SCHEMA_BYTES, &schema, &schema_len, &err);
    if (!st && bp.format == TL_BATCH_AUTO)
        st = tl_batch_detect_format(input, &bp.format, &err);
    if (!st && !a.server)
        st = tl_model_resolve(a.model, a.hf, &model_path, &err);
    if (!st && !a.server)
        st = tl_model_load_ex(model_path, a.no_mmap ? TL_MODEL_NO_MMAP : 0, &model, &err);
    long n_par = parallel ? parallel : 16;
    bb.n_parallel = (int)n_par;
    if (!st && model && bp.format == TL_BATCH_OPENAI) {
        tl_session_params sp = {.n_threads = (int)a.threads};
        tl_cli_ctx("batch", model, a.n_ctx, &sp);
        tl_server_params prm = {.model_path = model_path, .n_threads = (int)a.threads, .max_queue = (int)n_par + 8,
                                .cache_mb = (size_t)cache_mb, .cache_type_k = a.cache_k, .cache_type_v = a.cache_v,
                                .max_tokens = sp.n_ctx, .chat_template = a.opts.chat_template,
                                .chat_template_jinja = template_src};
        st = tl_server_new(model, &prm, &bb.server, &err);
    } else if (!st && model) {
        tl_shared_params sh = {.session = {.n_threads = (int)a.threads, .cache_mb = (size_t)cache_mb,
                                           .cache_type_k = a.cache_k, .cache_type_v = a.cache_v}};
        tl_cli_ctx("batch", model, a.n_ctx, &sh.session);
        st = tl_backend_shared_new(model, &sh, &bb.shared, &err);
    }
    tl_batch_progress sum = {0};
    if (!st) {
        char extra[512];
        snprintf(extra, sizeof extra, "model=%s", model ? tl_model_name(model) : "remote");
        progress_view pv = {.tty = isatty(2) != 0, .interval_s = isatty(2) ? 0.25 : log_every};
        bp.input_path = input;
        bp.output_path = output;
        bp.schema_json = schema;
        bp.schema_len = schema_len;
        bp.opts = &a.opts;
        bp.values_only = a.values_only;
        bp.n_parallel = (int)n_par;
        bp.max_record_bytes = (size_t)max_record;
        bp.fingerprint_extra = extra;
        bp.new_backend = bb.server ? NULL : new_backend;
        bp.backend_ctx = &bb;
        bp.n_routes = bb.shared ? 0 : bb.n_servers;
        bp.request = bb.server ? server_request : remote_request;
        bp.request_ctx = &bb;
        bp.on_progress = no_progress ? NULL : on_progress;
        bp.progress_ctx = &pv;
        bp.stop = stop_requested;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        st = tl_batch_run(&bp, &sum, &err);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (pv.drawn)
            fputc('\n', stderr);
        if (!st || sum.done > sum.resumed) {
            print_progress(stderr, &sum, "\n");
            fprintf(stderr, "batch: %llu records written (%llu resumed from an earlier run), %llu errors, %.1f s -> %s\n",
                    (unsigned long long)(sum.done - sum.resumed), (unsigned long long)sum.resumed,
                    (unsigned long long)sum.errors, sum.elapsed_s, output);
        }
        if (!st && sum.stopped)
            fprintf(stderr, "batch: interrupted after %llu of %llu records; rerun the same command to resume\n",
                    (unsigned long long)sum.done, (unsigned long long)sum.total);
    }
    if (st == TL_ERR_SCHEMA && a.schema_path && strstr(err.msg, ": invalid JSON: ")) {
        char msg[sizeof err.msg];
        memcpy(msg, err.msg, sizeof msg);
        tl_error_set(&err, st, "%s:%s", a.schema_path, msg); /* "S.json:3:7: invalid JSON: ..." */
    }
    if (st)
        tl_cli_error("batch", err.msg);
    tl_server_free(bb.server);
    tl_backend_free(bb.shared);
    tl_model_free(model);
    free(model_path);
    tl_free(schema);
    free(key_buf);
    free(template_src);
    if (st)
        return st == TL_ERR_INVALID || st == TL_ERR_SCHEMA ? 2 : 1;
    return sum.stopped ? 130 : 0;
}
