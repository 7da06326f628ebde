/* server_internal.h: what the server's files share: the server struct, the
 * shared backend that runs the model, reply helpers for the two error
 * dialects (SGLang's {"error":{...}} and FastAPI/System One's {"detail":...}),
 * and the socket-free request parsers the fuzz targets drive. */
#ifndef TL_SERVER_INTERNAL_H
#define TL_SERVER_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "typellm/backend.h"
#include "typellm/decide.h"
#include "server/server.h"
#include "util/json_text.h"

/* The model runs behind the library's shared batching backend
 * (tl_backend_shared_new): request threads call it at once, and it merges
 * their forward passes over one prefix cache. Each request's deadline and
 * cancellation are a tl_call_limits (server_wait_for). */
typedef tl_call_limits sched_wait;

/* Batched evaluation / prompt logits on the shared backend under w. */
tl_status server_eval(tl_server *s, const sched_wait *w, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err);
tl_status server_eval_last(tl_server *s, const sched_wait *w, const int32_t *ids, size_t n, size_t k_last,
                           float *logits, tl_usage *usage, tl_error *err);

/* ---- connection deadlines (conn_guard.c) ----------------------------------- */

typedef struct conn_guard conn_guard;
typedef struct conn_entry conn_entry;
/* header_s: longest wait for a request's headers (idle keep-alive included);
 * body_s: longest upload of a body. */
conn_guard *conn_guard_new(double header_s, double body_s);
void conn_guard_free(conn_guard *g);
conn_entry *conn_guard_open(conn_guard *g, int fd); /* a connection starts (waiting for headers) */
void conn_guard_close(conn_guard *g, conn_entry *e);
void conn_guard_body(conn_guard *g, conn_entry *e);      /* headers in, body arriving */
/* This body (a file upload) may take extra_s seconds more than body_s. */
void conn_guard_body_extend(conn_guard *g, conn_entry *e, double extra_s);
void conn_guard_answering(conn_guard *g, conn_entry *e); /* request complete: no deadline here */
void conn_guard_idle(conn_guard *g, conn_entry *e);      /* reply sent: waiting for the next headers */
size_t conn_guard_cut(conn_guard *g);                    /* connections shut down so far */
/* CLOCK_REALTIME now + ms (for pthread_cond_timedwait). */
struct timespec realtime_in_ms(long ms);

/* ---- the upstream engine (upstream.c): serve --upstream ------------------ */

/* A pool of remote backends to one server, at most cap of them, made as
 * concurrent requests need them. */
typedef struct upstream_pool upstream_pool;
/* Makes the first backend (which asks the server what it is: engine AUTO
 * resolved here): the server's errors (unreachable, not an engine) stand. */
tl_status upstream_pool_new(const tl_remote_params *rp, size_t cap, upstream_pool **out, tl_error *err);
void upstream_pool_free(upstream_pool *p);
/* The first backend: the names, vocabulary and capabilities the server reports. */
const tl_backend *upstream_pool_probe(const upstream_pool *p);
const char *upstream_pool_url(const upstream_pool *p);
/* A backend for this request alone, carrying w's deadline and cancellation
 * (waits while cap are in use: TL_ERR_TIMEOUT / TL_ERR_CANCELLED); give it
 * back with upstream_release. */
tl_status upstream_acquire(upstream_pool *p, const sched_wait *w, tl_backend **out, tl_error *err);
void upstream_release(upstream_pool *p, tl_backend *b);
/* The engine computes: one candidate scored after one token under w
 * (/health_generate). */
tl_status upstream_check(upstream_pool *p, const sched_wait *w, tl_error *err);

/* ---- the server ---------------------------------------------------------- */

struct tl_server {
    tl_server_params p;
    char *api_key;
    char *host;
    const tl_model *model;      /* NULL over an upstream engine */
    const tl_vocab *vocab;      /* the model's; upstream: the --tokenizer GGUF's, or NULL */
    const char *model_name;     /* what replies name as the model */
    int32_t n_vocab;
    int32_t n_ctx;              /* upstream: 0 when the server does not say */
    tl_backend *shared;         /* tl_backend_shared_new: the one session, merged batches; NULL upstream */
    upstream_pool *upstream;    /* serve --upstream: the remote engine's connections; NULL local */
    char upstream_desc[300];    /* "llamacpp server at URL" (messages) */
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t mu;
    int in_flight;              /* requests holding a model slot */
    int streams;                /* streaming generations still running on their own threads */
    pthread_cond_t streams_cv;  /* signalled when streams drops */
    uint64_t next_rid;          /* OpenAI response ids */
    double started_s;
    time_t started_wall;        /* /v1/models "created" */
    int od_max_questions;       /* /v1/decisions questions per request */
    conn_guard *guard;
    bool draining;              /* SIGTERM: finishing running requests, refusing new ones with 503 */
    int requests_open;          /* HTTP requests between their first byte handled and their reply sent */
    size_t max_token_bytes;     /* longest token's text (bytes): token-count lower bounds */
    struct server_metrics *metrics; /* GET /metrics (metrics.h); fed by every request and step */
    uint64_t next_log_id;       /* the request log's ids (atomic increments) */
    struct batch_store *batches; /* the Files and Batch API (batches_api.c); NULL without --data-dir */
};

/* Takes / releases a model slot; false when max_queue are already in flight (-> 429). */
bool tl_server_slot_acquire(tl_server *s);
void tl_server_slot_release(tl_server *s);
/* A fresh request number (OpenAI ids: chatcmpl-...). */
uint64_t tl_server_next_rid(tl_server *s);
/* Counts streaming generations so shutdown can wait for them. */
void tl_server_stream_begin(tl_server *s);
void tl_server_stream_done(tl_server *s);

/* ---- replies (reply.c) --------------------------------------------------- */

/* What every reply and stream event prints: util's tl_json_dumps (reals in
 * their shortest exact form). Caller frees. */
static inline char *server_json_dumps(const json_t *j, size_t flags) { return tl_json_dumps(j, flags); }
/* 200 with an empty text/plain body (/health, /health_generate). */
void reply_health_ok(tl_http_reply *r);
/* Serializes j (stolen) as the body with status. */
void reply_json(tl_http_reply *r, int status, json_t *j);
/* SGLang-style error: {"error":{"message":msg,"code":status}}. */
void reply_sglang_error(tl_http_reply *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* FastAPI-style validation error with one detail entry; loc is a json array (stolen). */
void reply_detail_error(tl_http_reply *r, int status, json_t *loc, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* {"detail":{"error_type":type,"message":msg}} (auth, limits, overload). */
void reply_typed_error(tl_http_reply *r, int status, const char *error_type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* OpenAI-style error: {"error":{"message","type","param"|null,"code"|null}}. */
void reply_openai_error(tl_http_reply *r, int status, const char *type, const char *param, const char *code,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
json_t *openai_error_body(const char *type, const char *param, const char *code, const char *msg);
/* OpenAI's error type for an HTTP status: invalid_request_error (4xx),
 * rate_limit_error (429), timeout_error (504), server_error (other 5xx). */
const char *openai_error_type(int status);
/* The same as a parse failure (type invalid_request_error). */
typedef struct parse_failure parse_failure;
void fail_openai(parse_failure *f, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The one map from a library status to HTTP (reply.c's table), per dialect:
 * the typed APIs (/v1/decide, /v1/systemone) answer bad input 422, LIMIT 413;
 * the SGLang API bad parameters and over-long input 400, as SGLang does;
 * OpenAI's endpoints every bad request 400 (an over-long input with code
 * context_length_exceeded), as OpenAI does; all: TIMEOUT 504, CANCELLED 499,
 * NOMEM 503, an upstream engine's failure (NETWORK, REMOTE) 502,
 * anything else 500. */
typedef enum http_api { HTTP_API_TYPED, HTTP_API_SGLANG, HTTP_API_OPENAI } http_api;
int http_status_for(tl_status st, http_api api);
/* A generation request's status in api's dialect (SGLang /generate, OpenAI
 * completions and chat): phase 400 = raised while checking the request,
 * before any work, so any client-error status is the request's fault (400);
 * phase 413 = over a size cap on the work asked for (OpenAI: 400); otherwise
 * the table's column. */
int generate_error_status(tl_status st, int phase, http_api api);
/* A failed typed-API request (/v1/decide, /v1/systemone): a 422 detail list
 * at loc (taken) for bad input, else {"detail":{"error_type","message"}}
 * with the table's status and type. */
void reply_status_error(tl_http_reply *r, tl_status st, json_t *loc, const char *msg);
/* A failed OpenAI-dialect request: the table's status and code, the type
 * openai_error_type gives; param (may be NULL) names the request field at
 * fault for client errors. */
void reply_openai_status_error(tl_http_reply *r, tl_status st, const char *param, const char *msg);

/* ---- parsers (socket-free; each fuzzed) ---------------------------------- */

/* A validation failure: HTTP status and the reply body to send. */
struct parse_failure {
    int status;
    json_t *body;
};

/* /v1/systemone. */
typedef enum so_qtype { SO_NOUL, SO_CHOICE, SO_SCORE } so_qtype;
typedef struct so_question {
    char *id;                /* caller's key (never shown to the model) */
    so_qtype type;
    char *instructions;      /* compacted to text; "" when absent */
    json_t *criteria;        /* borrowed from the request: object (noul/choice) / array (score) / NULL */
    size_t n_options;        /* choice: options; score: levels; noul: 2 */
} so_question;
typedef struct so_request {
    json_t *root;            /* the parsed body (owns criteria) */
    char *state;             /* compacted state text */
    size_t state_len;
    char *model;             /* as sent, or NULL */
    so_question *questions;
    size_t n_questions;
} so_request;
/* Parses and validates; on failure fills *fail (status 400/413/422 and body). */
bool so_request_parse(const char *body, size_t len, int max_questions, so_request *out, parse_failure *fail);
void so_request_free(so_request *r);
/* The tl_decide schema for the request's questions (one property per
 * question, keyed by a neutral name "q<i>", x-name shown to the model). */
json_t *so_build_schema(const so_request *r);
/* From tl_decide's result to the System One answers object. */
bool so_build_answers(const so_request *r, const json_t *decide_result, json_t **answers, tl_error *err);
/* TypeSafe's confidence formulas (p: n probabilities). */
double so_choice_confidence(const double *p, size_t n);
double so_score_confidence(const double *p, size_t n);

/* /v1/decisions (openai_decisions.c). */
#define OD_MAX_OPTIONS 255   /* choices / levels per question (the decision core's limit; System One's too) */
#define OD_MAX_QUESTIONS 400 /* questions per request (OpenAI's limit; --max-questions lowers it) */
typedef enum od_qtype { OD_PREDICATE, OD_CHOICE, OD_SCORE } od_qtype;
typedef struct od_question {
    od_qtype type;
    char *name;              /* or NULL (answered as null) */
    char *instructions;      /* text parts joined; JSON parts compacted */
    const json_t *options;   /* borrowed from the request: choices / levels array; NULL for predicates */
    size_t n_options;
} od_question;
/* Extension fields of /v1/decide and /v1/decisions (corrections.c): the
 * corrected-distribution options of tl_decide_opts, borrowed from the body. */
typedef struct decide_corrections {
    const char *debias;       /* "permute" | "full" | "pride" | "none" | NULL */
    const char *calibrate;    /* "content-free" | "pmi" | "none" | NULL */
    const char *content_free; /* the content-free input, or NULL */
    int think;                /* reasoning tokens before each decision */
} decide_corrections;
/* Reads "debias", "calibrate", "content_free", "think" of body object root;
 * false with *key naming the bad one and *msg why. */
bool decide_corrections_parse(const json_t *root, decide_corrections *out, const char **key, const char **msg);
void decide_corrections_apply(const decide_corrections *c, tl_decide_opts *o);

typedef struct od_request {
    json_t *root;            /* the parsed body (owns options) */
    char *model;
    char *input;             /* the rendered input (the shared context) */
    size_t input_len;
    od_question *questions;
    size_t n_questions;
    bool return_prompt_token_ids; /* extension (as SGLang): the rendered prompt and label ids per answer */
    decide_corrections corr;      /* extension: corrected distributions (raw_probabilities in the answers) */
} od_request;
/* Parses and validates; on failure fills *fail (OpenAI error body, 400). */
bool od_request_parse(const char *body, size_t len, int max_questions, od_request *out, parse_failure *fail);
void od_request_free(od_request *r);
json_t *od_build_schema(const od_request *r);
bool od_build_answers(const od_request *r, const json_t *decide_result, json_t **answers, tl_error *err);
/* From one field of tl_decide's result: its probabilities for keys[0..n)
 * renormalized (never NaN), and its label mass (the full-vocabulary
 * probability of its labels at the answer position). */
bool decision_read_probs(const json_t *field, const char *const *keys, size_t n, double *p, tl_error *err);
double decision_label_mass(const json_t *field);
/* Question i of a typed-API decision (the schema's field "q<i>"), read the
 * way System One and /v1/decisions both answer: p[0..n) its probabilities
 * over keys (renormalized), best the most probable (ties: the first), mean
 * the expected level sum k * p[k] (score questions), and the field itself
 * (label mass, trace). TL_ERR_INTERNAL when the result lacks the field. */
typedef struct question_answer {
    const json_t *field;
    size_t best;
    double mean;
} question_answer;
bool decision_question_answer(const json_t *result, size_t i, const char *const *keys, size_t n, double *p,
                              question_answer *qa, tl_error *err);

/* /generate. One item of a (possibly batched) request. */
typedef struct gen_params {
    int max_new_tokens;
    double temperature, top_p, min_p;
    int top_k;
    char **stop;             /* stop strings */
    size_t n_stop;
    int32_t *stop_ids;
    size_t n_stop_ids;
    bool ignore_eos;
    bool skip_special_tokens;
    char *regex;             /* or NULL */
    uint64_t seed;
    bool has_seed;
} gen_params;
typedef struct gen_item {
    char *text;              /* one of text / ids */
    int32_t *ids;
    size_t n_ids;
    bool has_ids;
    gen_params sp;
    int32_t *token_ids_logprob;  /* NULL: not asked */
    size_t n_token_ids_logprob;
    bool has_token_ids_logprob;
} gen_item;
typedef struct gen_request {
    gen_item *items;
    size_t n_items;
    bool batch;              /* reply is a list */
    bool return_logprob;
    int logprob_start_len;   /* -1: outputs only */
    int top_logprobs_num;
    bool return_text_in_logprobs;
    bool stream;
    char *rid;
} gen_request;
bool gen_request_parse(const char *body, size_t len, int32_t n_vocab, int max_new_tokens_cap, gen_request *out,
                       parse_failure *fail);
/* The same from a parsed body (the OpenAI endpoints build one). */
bool gen_request_from_json(const json_t *root, int32_t n_vocab, int max_new_tokens_cap, gen_request *out,
                           parse_failure *fail);
/* Logprob entries one request may ask for: (prompt positions scored +
 * max_new_tokens) x (top_logprobs_num + token_ids_logprob + 1), summed over
 * items. Bounds the reply's size and the memory that builds it. */
#define GEN_MAX_LOGPROB_ENTRIES 4000000ull

/* ---- server-sent events (stream.c) ----------------------------------------- */

/* Where a stream's events go: a pipe (fd >= 0) or, socket-free, a buffer. */
typedef struct sse_out {
    int fd;
    tl_strbuf buf;
} sse_out;
#define SSE_OUT_BUFFER {.fd = -1, .buf = TL_STRBUF_INIT}
/* `data: JSON` (ev stolen) / `data: [DONE]`; false when the reader is gone. */
bool sse_send_json(sse_out *o, json_t *ev);
bool sse_send_done(sse_out *o);
/* Starts run(job, out) on a detached thread writing into a pipe and makes r
 * a streaming reply reading from it. The caller holds a model slot, which
 * the thread releases when run returns (run frees job). false: nothing was
 * started; the caller still owns job and the slot. */
bool server_stream_start(tl_server *s, tl_http_reply *r, void (*run)(void *job, sse_out *out), void *job);

/* Generation (sglang_api.c), shared by /generate and the OpenAI endpoints. */
typedef struct gen_sink {
    /* Called after every generated token with that item's reply object so
     * far (ev stolen; for a batch it carries "index"); false: stop (client gone). */
    bool (*event)(void *ctx, size_t item, json_t *ev);
    void *ctx;
} gen_sink;
/* Runs rq; *result is /generate's reply (an object, or a list for a batch).
 * *http_status: the phase an error arose in, for generate_error_status
 * (400 checking the request, 413 over the logprob-entries cap, 500 running). */
tl_status gen_run(tl_server *s, gen_request *rq, const sched_wait *w, json_t **result, const gen_sink *sink,
                  int *http_status, tl_error *err);
void gen_request_free(gen_request *r);

/* /v1/decide. */
typedef struct decide_request {
    json_t *root;
    char *context;
    size_t context_len;
    const json_t *schema;    /* borrowed from root */
    char *mode;              /* NULL: auto */
    char *style;
    double temperature;
    uint64_t seed;
    double threshold;
    bool trace;              /* "trace": true: decide's --trace, and each token's text ("pieces") */
    decide_corrections corr;
} decide_request;
bool decide_request_parse(const char *body, size_t len, decide_request *out, parse_failure *fail);
void decide_request_free(decide_request *r);

/* /generate's `regex` constraint (regex_constraint.c): PCRE2 partial
 * matching decides, per token, whether generated text + the token's bytes
 * can still become a full match. */
typedef struct regex_constraint regex_constraint;
/* NULL with a message in err on a bad pattern. */
regex_constraint *regex_constraint_new(const char *pattern, tl_error *err);
void regex_constraint_free(regex_constraint *rc);
/* text[0..n) can be extended to a full match (or is one). */
bool regex_constraint_viable(const regex_constraint *rc, const char *text, size_t n);
/* text[0..n) is a full match. */
bool regex_constraint_complete(const regex_constraint *rc, const char *text, size_t n);

/* JSON body parse shared by the parsers: 400 with line:column on syntax errors. */
json_t *parse_json_body(const char *body, size_t len, bool fastapi_style, parse_failure *fail);
/* The same with OpenAI's error body (400 invalid_request_error). */
json_t *parse_json_body_openai(const char *body, size_t len, parse_failure *fail);

/* ---- handlers ------------------------------------------------------------- */
void handle_generate(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_tokenize(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_detokenize(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_model_info(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_health_generate(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_flush_cache(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_systemone(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_models(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_decide(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_decisions(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_chat_completions(tl_server *s, const tl_http_request *req, tl_http_reply *r);
/* ui.c: the playground (GET /, /ui/app.js, /ui/style.css, /ui/examples.json) and GET /metrics. */
void handle_ui_page(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_ui_script(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_ui_style(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_ui_examples(tl_server *s, const tl_http_request *req, tl_http_reply *r);
void handle_metrics(tl_server *s, const tl_http_request *req, tl_http_reply *r);
/* The route table's paths (metrics' endpoint labels): index of path, or -1. */
int server_route_index(const char *path);
const char *server_route_path(size_t i);
size_t server_n_routes(void);
/* The chat (chat = true) or completions request parser alone, through the
 * /generate request it becomes (fuzzing): false with *f filled on bad input. */
bool oai_request_check(const tl_server *s, const char *body, size_t len, bool chat, parse_failure *f);
void handle_completions(tl_server *s, const tl_http_request *req, tl_http_reply *r);

/* Tokens of text[0..n) (no BOS, special-token text not parsed); upstream
 * without a tokenizer here, only the lower bound below (the server is not
 * asked before the request holds a slot: the decision's own tokenizing meets
 * the upstream's context limit). When the
 * byte length alone proves it exceeds --max-tokens (n / the vocabulary's
 * longest token), returns TL_ERR_LIMIT with *n_tok = that lower bound and
 * does not tokenize, so an oversized text costs no tokenizer memory. */
tl_status server_count_tokens(const tl_server *s, const char *text, size_t n, size_t *n_tok, tl_error *err);
/* The request's prompt text (what: "state", "input") against --max-tokens
 * before any model work: TL_ERR_LIMIT naming what, its token count (or the
 * lower bound) and the limit; a tokenizer error prefixed with what. */
tl_status server_check_prompt(const tl_server *s, const char *what, const char *text, size_t n, tl_error *err);

/* tl_decide through the shared backend under the request's deadline and
 * cancellation (decide_api.c): what every decision endpoint runs. The result
 * is the decision's JSON document (tl_decision_to_json). */
tl_status server_decide(tl_server *s, const tl_http_request *req, const char *context, size_t context_len,
                        const json_t *schema, const tl_decide_opts *opts, json_t **result, tl_error *err);

/* The schema checks tl_decide makes before it needs the model (early 4xx). */
tl_status server_check_schema(const json_t *schema, tl_error *err);

/* ---- OpenAI Files and Batch API (files_api.c, batches_api.c) ----------------- */

/* /v1/files... and /v1/batches...: the paths handle_files_batches answers. */
bool files_batches_path(const char *path);
void handle_files_batches(tl_server *s, const tl_http_request *req, tl_http_reply *r);
/* Opens p.data_dir and resumes the batches an earlier server left unfinished. */
tl_status batch_store_open(tl_server *s, tl_error *err);
/* A POST /v1/files body taken as it arrives (the transport calls these
 * instead of collecting the body; files_api.c): begin when its headers are
 * in (declared: its Content-Length, 0 if none; NULL: out of memory), feed
 * every piece (false: the upload has failed, too large or malformed; the
 * rest of the body may be dropped), end after the last one (replies, as
 * tl_server_handle would, and frees); cancel when the client is gone
 * (frees; nothing is kept). */
#define FILES_DEFAULT_MAX_BYTES ((uint64_t)200 << 20)
typedef struct files_upload files_upload;
files_upload *files_upload_begin(tl_server *s, uint64_t declared);
bool files_upload_feed(files_upload *u, const char *data, size_t n);
void files_upload_end(files_upload *u, tl_http_reply *r);
void files_upload_cancel(files_upload *u);
/* Whether a request with this authorization may use path (the API key, when the server has one). */
bool server_authorized(const tl_server *s, const char *path, const char *authorization);
/* Stops the batch runners (their records in flight finish; the output stays
 * resumable) and frees the store. Idempotent. */
void batch_store_close(tl_server *s);

/* A backend for one request's decision: a client of the shared backend, or
 * upstream a pooled connection, under w; give it back with server_backend_done. */
tl_status server_backend_take(tl_server *s, const sched_wait *w, tl_backend **out, tl_error *err);
void server_backend_done(tl_server *s, tl_backend *b);

/* The per-request wait (deadline + cancellation) from the request. */
sched_wait server_wait_for(const tl_server *s, const tl_http_request *req);

#endif
