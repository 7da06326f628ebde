/* typellm/batch.h: decisions over a dataset (`typellm batch`, the server's
 * OpenAI Batch API). A file of records in, one output line per record out,
 * in input order, resumable after a crash.
 *
 * Input (streamed, never loaded whole; records up to max_record_bytes):
 *   - JSONL records: {"id": ..., "context": "...", "schema"?: {...}} or any
 *     object, with context_field / id_field naming the members;
 *   - CSV (RFC 4180, header row): context_column / id_column;
 *   - the OpenAI batch line format {"custom_id","method","url","body"},
 *     run through params.request (url /v1/decisions, /v1/chat/completions,
 *     /v1/completions: the bodies the server takes).
 * Output: per record, the JSON object tl_decision_to_json gives (compact),
 * with "id" first (the record's id, else its 0-based line number); a record
 * that fails gets {"id", "error": {"message", "code"}} and the job goes on.
 * OpenAI lines get OpenAI's batch output shape {"id", "custom_id",
 * "response": {"status_code", "request_id", "body"}, "error"}. An output path
 * ending in .csv gets CSV: id, then per field its value and probability
 * (FIELD, FIELD_p), then error.
 *
 * Resume: every line is written whole with one write(2) and synced once a
 * second, and OUTPUT.typellm-batch (written atomically before the first
 * line) records fingerprints of the input, schema and options. Running the
 * same job again continues after the last complete line (a torn last line is
 * cut and redone); a changed input, schema or option is refused
 * (TL_ERR_INVALID naming it) unless overwrite.
 *
 * Threads: n_parallel workers, each with its own backend from
 * params.new_backend (e.g. clients of one shared backend, whose batching
 * merges their forward passes; or one per server, n_routes); output order
 * is kept with a reorder window of a few records per worker, so memory is
 * bounded by the configuration, not the file. */
#ifndef TYPELLM_BATCH_H
#define TYPELLM_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "common.h"
#include "decide.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_batch_format {
    TL_BATCH_AUTO = 0, /* .csv: CSV; else JSONL, OpenAI lines when the first record has "custom_id" and "body" */
    TL_BATCH_JSONL = 1,
    TL_BATCH_CSV = 2,
    TL_BATCH_OPENAI = 3
} tl_batch_format;

/* Where a job stands (on_progress and the final summary). */
typedef struct tl_batch_progress {
    uint64_t total;     /* records in the input (0: unknown, input from a pipe) */
    uint64_t done;      /* records in the output, those of earlier runs included */
    uint64_t resumed;   /* of done, written by an earlier run */
    uint64_t errors;    /* error lines written by this run */
    tl_usage usage;     /* tokens of this run's records */
    double elapsed_s;   /* this run */
    bool stopped;       /* stop() ended the job before the input did */
} tl_batch_progress;

typedef struct tl_batch_params {
    const char *input_path;  /* "-": stdin (no total, no resume) */
    const char *output_path; /* ".csv": CSV output */
    tl_batch_format format;
    /* The schema of records that bring none (JSON text; NULL: every record
     * must bring its own "schema"). */
    const char *schema_json;
    size_t schema_len;
    const tl_decide_opts *opts;  /* NULL: defaults */
    const char *context_field;   /* JSONL; NULL: "context" */
    const char *id_field;        /* JSONL; NULL: "id" */
    const char *context_column;  /* CSV; NULL: "context" */
    const char *id_column;       /* CSV; NULL: "id" (when the header has it) */
    bool values_only;            /* lines carry only the values: {"id", field: value, ...} */
    bool overwrite;              /* start over even when an output exists */
    int n_parallel;              /* records in flight; <= 0: 16 */
    size_t max_record_bytes;     /* longer records get an error line; 0: 16 MiB */
    /* Extra text that must match for a resume (e.g. the model's identity). */
    const char *fingerprint_extra;
    /* A backend for worker i (0 <= i < n_parallel), freed by the job with
     * tl_backend_free. Required unless every record is an OpenAI line. When
     * a record fails with TL_ERR_NETWORK / TL_ERR_TIMEOUT (a server down),
     * the worker asks for i + a * n_parallel (attempt a = 1, 2, 3: e.g. the
     * next server) and retries the record there. */
    tl_status (*new_backend)(void *ctx, int worker, tl_backend **out, tl_error *err);
    void *backend_ctx;
    /* > 1: the backends are n_routes servers and each record is routed to
     * one by its prefix (its schema, then its context's first bytes; an
     * OpenAI line's url and body): records that begin alike go to the same
     * server, whose prefix cache then holds that beginning, within a bounded
     * share of the records in flight; a server that cannot be reached is
     * taken out for 30 s and its records retried on the others. Worker i's
     * backend on route r is new_backend(ctx, i + r * n_parallel). */
    int n_routes;
    /* Runs one OpenAI line (POST url with body[0..len)) on worker's backend
     * (NULL when new_backend is NULL): *status the HTTP status, *reply its
     * JSON body (malloc'd). Required for the OpenAI format. */
    tl_status (*request)(void *ctx, tl_backend *b, const char *url, const char *body, size_t len, int *status,
                         char **reply, tl_error *err);
    void *request_ctx;
    const char *request_id_prefix; /* OpenAI output ids: PREFIX + line ("batch_req_"; NULL: that) */
    /* After each line written (on the writing worker, under the job's lock:
     * keep it short). */
    void (*on_progress)(void *ctx, const tl_batch_progress *p);
    void *progress_ctx;
    /* Polled before each record is taken: true stops taking new ones; the
     * records in flight finish and are written. */
    bool (*stop)(void *ctx);
    void *stop_ctx;
} tl_batch_params;

/* Runs the job. *summary (may be NULL) gets the final progress. Errors:
 * TL_ERR_IO (files), TL_ERR_INVALID (bad params, an output that is another
 * job's or of a changed input / schema / options: the message says which and
 * that overwrite starts over), TL_ERR_SCHEMA (the schema), TL_ERR_FORMAT (a
 * CSV header without the context column). Record failures are output lines,
 * not errors. */
TL_API tl_status tl_batch_run(const tl_batch_params *params, tl_batch_progress *summary, tl_error *err);

/* The format TL_BATCH_AUTO resolves to for path (reads its first record). */
TL_API tl_status tl_batch_detect_format(const char *path, tl_batch_format *out, tl_error *err);

#ifdef __cplusplus
}
#endif
#endif
