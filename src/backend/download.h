/* download.h: which GGUF file a command runs on, fetching it from Hugging Face
 * when asked (or when nothing else is given).
 *
 * Resolution order of tl_model_resolve:
 *   1. model_path (--model PATH), if non-NULL;
 *   2. $TYPELLM_MODEL, if set and non-empty;
 *   3. hf_spec (--hf ORG/REPO:FILE[@sha256=HEX]), or TL_DEFAULT_HF_MODEL when NULL,
 *      downloaded over HTTPS with libcurl from
 *        $TYPELLM_HF_ENDPOINT (default https://huggingface.co)/ORG/REPO/resolve/main/FILE
 *      into $TYPELLM_CACHE/ORG/REPO/FILE (default ~/.cache/typellm/ORG/REPO/FILE).
 * Downloads go to FILE.part first and are resumed with an HTTP Range request
 * (also automatically, a few times, when a transfer breaks off); the size is
 * checked against Content-Range/Content-Length, and the SHA-256 against the
 * one given in the spec or, failing that, an ETag / X-Linked-ETag that is a
 * 64-hex SHA-256 (what Hugging Face sends for LFS files). Only a verified file
 * is renamed into place, so a file present in the cache is used as is.
 * $HF_TOKEN, when set, is sent as a bearer token (gated repositories).
 * A progress bar is drawn on stderr when stderr is a terminal. */
#ifndef TL_BACKEND_DOWNLOAD_H
#define TL_BACKEND_DOWNLOAD_H

#include <stddef.h>

#include "typellm/model.h"

/* tl_model_resolve and TL_DEFAULT_HF_MODEL are public: typellm/model.h. */

/* SHA-256 of n bytes as 64 lowercase hex digits + NUL. */
void tl_sha256_hex(const void *data, size_t n, char out[65]);

#endif
