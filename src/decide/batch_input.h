/* batch_input.h: the record reader of tl_batch_run (typellm/batch.h):
 * JSONL lines and RFC 4180 CSV records read from a stream with a bounded
 * buffer, and the task each record becomes. Socket- and thread-free, so the
 * fuzz target (fuzz/fuzz_batch_input.c) drives it over a memory buffer. */
#ifndef TL_DECIDE_BATCH_INPUT_H
#define TL_DECIDE_BATCH_INPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "typellm/batch.h"

typedef struct batch_reader {
    FILE *f;
    bool csv;
    size_t max_bytes;     /* a record past this many bytes is read to its end but kept as too_big */
    uint64_t line;        /* physical lines consumed */
    uint64_t offset;      /* bytes consumed */
    uint64_t rows;        /* CSV data rows returned (the header excluded) */
    tl_strbuf buf;        /* the record's bytes (JSONL) or its fields' bytes, each NUL-ended (CSV) */
    size_t *field_off;    /* CSV: where field i starts in buf */
    size_t n_fields, cap_fields;
    uint64_t sum;         /* FNV-1a 64 of every byte consumed (the input fingerprint) */
} batch_reader;

/* One record as read. */
typedef struct batch_rec {
    uint64_t line;        /* 0-based line where it starts */
    uint64_t offset;      /* byte offset where it starts */
    uint64_t row;         /* CSV: 0-based data row */
    bool too_big;
    bool complete;        /* ended by a newline (false: the stream's last bytes, maybe torn) */
    char bad[160];        /* CSV syntax error ("" when none) */
} batch_rec;

void batch_reader_init(batch_reader *r, FILE *f, bool csv, size_t max_bytes);
void batch_reader_free(batch_reader *r);
/* 1: *rec read (blank lines skipped), 0: end of input, -1: read error. */
int batch_reader_next(batch_reader *r, batch_rec *rec);
/* CSV field i of the record just read (NULL past the last). */
const char *batch_reader_field(const batch_reader *r, size_t i, size_t *len);

/* What one record asks for. err_msg non-empty: the record is malformed and
 * its line is an error line (err_code says the kind). */
typedef struct batch_task {
    uint64_t index;       /* 0-based record number: output order */
    json_t *id;           /* the record's id (owned) */
    char *context;
    size_t context_len;
    json_t *schema;       /* the record's own schema, or NULL */
    json_t *custom_id;    /* OpenAI lines */
    char *url;
    char *body;           /* compact JSON */
    size_t body_len;
    char err_msg[512];
    const char *err_code;
} batch_task;

/* The names the job reads records by. */
typedef struct batch_fields {
    const char *context_field, *id_field; /* JSONL */
    long context_col, id_col;             /* CSV header positions; id_col -1: none */
    bool openai;
} batch_fields;

/* Fills *t from the JSONL record data[0..len) (openai: an OpenAI batch line);
 * when rec->too_big, len is the limit it exceeded. */
void batch_task_from_json(const char *data, size_t len, const batch_rec *rec, const batch_fields *bf,
                          batch_task *t);
/* Fills *t from the CSV record just read. */
void batch_task_from_csv(const batch_reader *r, const batch_rec *rec, const batch_fields *bf, batch_task *t);
void batch_task_clear(batch_task *t);

/* RFC 4180 field text (quoted when it holds , " CR or LF) appended to sb. */
bool batch_csv_field(tl_strbuf *sb, const char *s, size_t n);

#endif
