/* batch_store.h: what files_api.c and batches_api.c share: the data
 * directory's layout and its atomic writes.
 *
 *   DATA/files/FILE_ID.json    the file object ({"id", "object": "file", "bytes", ...})
 *   DATA/files/FILE_ID.data    its bytes
 *   DATA/batches/BATCH_ID.json the batch object as GET /v1/batches/ID answers it
 *   DATA/batches/BATCH_ID.out.jsonl (+ .typellm-batch) tl_batch_run's output, resumable
 *
 * Every object file is written whole (temp + rename); a file's bytes are
 * written before its object, so an object always names complete bytes. */
#ifndef TL_SERVER_BATCH_STORE_H
#define TL_SERVER_BATCH_STORE_H

#include <jansson.h>

#include "server/server_internal.h"

#define STORE_MAX_OBJECT_BYTES ((size_t)1 << 20)

/* DATA/SUB/NAME (malloc'd). */
char *store_path(const tl_server *s, const char *sub, const char *name);
/* A fresh id: prefix + 24 hex digits. */
void store_new_id(const char *prefix, char *out, size_t cap);
/* j (not stolen) written atomically to path. */
tl_status store_write_json(const char *path, const json_t *j, tl_error *err);
/* The JSON object at path, or NULL. */
json_t *store_read_json(const char *path);
/* A new file object for the bytes at src_path (moved into the store):
 * *id_out gets its id. */
tl_status files_adopt(tl_server *s, const char *src_path, const char *filename, const char *purpose, char *id_out,
                      size_t id_cap, tl_error *err);
/* The path of file id's bytes when it exists (malloc'd), its object in *obj
 * (may be NULL; caller decrefs). */
char *files_data_path(tl_server *s, const char *id, json_t **obj);
/* /v1/files routes (files_api.c) and /v1/batches routes (batches_api.c). */
void handle_files(tl_server *s, const tl_http_request *req, tl_http_reply *r, const char *rest);
void handle_batches(tl_server *s, const tl_http_request *req, tl_http_reply *r, const char *rest);

#endif
