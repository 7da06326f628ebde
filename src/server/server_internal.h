/* server_internal.h: what the server's files share: the server struct, the
 * scheduler that owns the model session, reply helpers for the two error
 * dialects (SGLang's {"error":{...}} and FastAPI/System One's {"detail":...}),
 * and the socket-free request parsers the fuzz targets drive. */
#ifndef TL_SERVER_INTERNAL_H
#define TL_SERVER_INTERNAL_H

#include <jansson.h>
#include <pthread.h>

#include "backend/backend.h"
#include "server/server.h"

/* ---- scheduler (scheduler.c) --------------------------------------------- */

typedef struct tl_scheduler tl_scheduler;

typedef enum sched_job_kind {
    SCHED_EVAL,      /* seqs[0..k): next-position logits / candidate logprobs */
    SCHED_EVAL_LAST, /* seqs[0]: logits at the last k_last positions (prompt logprobs) */
    SCHED_FLUSH      /* drop the prefix cache */
} sched_job_kind;

/* Cancellation and deadline of the request a job belongs to. */
typedef struct sched_wait {
    double deadline_s;                 /* tl_now_s() value; 0: none */
    bool (*client_gone)(void *ctx);
    void *client_ctx;
} sched_wait;

tl_status tl_scheduler_new(tl_session *session, int max_batch_seqs, tl_scheduler **out, tl_error *err);
void tl_scheduler_free(tl_scheduler *s); /* stops the thread; queued jobs get TL_ERR_CANCELLED */
/* Runs seqs through the session together with whatever other requests are
 * waiting; blocks until done, the deadline passes or the client goes.
 * usage (optional) receives this request's share. */
tl_status tl_scheduler_eval(tl_scheduler *s, tl_seq *seqs, size_t k, const sched_wait *w, tl_usage *usage,
                            tl_error *err);
/* logits: k_last x n_vocab floats at the last k_last positions of ids. */
tl_status tl_scheduler_eval_last(tl_scheduler *s, const int32_t *ids, size_t n, size_t k_last, float *logits,
                                 const sched_wait *w, tl_usage *usage, tl_error *err);
tl_status tl_scheduler_flush(tl_scheduler *s, tl_error *err);
/* Batched evaluations run so far (tests check that requests were merged). */
size_t tl_scheduler_batches_run(const tl_scheduler *s);

/* A tl_backend whose scoring goes through the scheduler (so tl_decide calls
 * from many request threads are batched together). One per request: it
 * carries that request's deadline and cancellation. */
typedef struct sched_backend_impl {
    tl_scheduler *sched;
    const tl_model *model;
    sched_wait wait;
} sched_backend_impl;
void tl_sched_backend_init(tl_backend *b, sched_backend_impl *impl, tl_scheduler *sched, const tl_model *model,
                           const sched_wait *w);

/* ---- the server ---------------------------------------------------------- */

struct tl_server {
    tl_server_params p;
    char *api_key;
    char *host;
    const tl_model *model;
    const tl_vocab *vocab;
    int32_t n_vocab;
    int32_t n_ctx;
    tl_session *session;
    tl_scheduler *sched;
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t mu;
    int in_flight;              /* requests holding a model slot */
    int streams;                /* streaming generations still running on their own threads */
    pthread_cond_t streams_cv;  /* signalled when streams drops */
    double started_s;
};

/* Takes / releases a model slot; false when max_queue are already in flight (-> 429). */
bool tl_server_slot_acquire(tl_server *s);
void tl_server_slot_release(tl_server *s);
/* Counts streaming generations so shutdown can wait for them. */
void tl_server_stream_begin(tl_server *s);
void tl_server_stream_done(tl_server *s);

/* ---- replies (reply.c) --------------------------------------------------- */

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
/* The one map from a status of the model path to HTTP (reply.c's table):
 * the typed APIs answer bad input 422, LIMIT 413; the SGLang API answers bad
 * parameters and over-long input 400, as SGLang does; TIMEOUT 504,
 * CANCELLED 499, NOMEM 503, anything else 500. */
typedef enum http_api { HTTP_API_TYPED, HTTP_API_SGLANG } http_api;
int http_status_for(tl_status st, http_api api);
/* A failed typed-API request (/v1/decide, /v1/systemone): a 422 detail list
 * at loc (taken) for bad input, else {"detail":{"error_type","message"}}
 * with the table's status and type. */
void reply_status_error(tl_http_reply *r, tl_status st, json_t *loc, const char *msg);

/* ---- parsers (socket-free; each fuzzed) ---------------------------------- */

/* A validation failure: HTTP status and the reply body to send. */
typedef struct parse_failure {
    int status;
    json_t *body;
} parse_failure;

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

/* Copies s[0..n) replacing invalid UTF-8 with U+FFFD, so jansson accepts it. */
json_t *json_string_lossy(const char *s, size_t n);

/* JSON body parse shared by the parsers: 400 with line:column on syntax errors. */
json_t *parse_json_body(const char *body, size_t len, bool fastapi_style, parse_failure *fail);

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

/* The per-request wait (deadline + cancellation) from the request. */
sched_wait server_wait_for(const tl_server *s, const tl_http_request *req);

#endif
