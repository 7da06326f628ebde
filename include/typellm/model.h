/* typellm/model.h: the embedded inference engine: a loaded model and sessions that
 * run token sequences through it with a prefix cache.
 *
 * A tl_model is immutable after load (mmap'd weights, hyperparameters, the
 * vocabulary) and may be shared by sessions on different threads. A
 * tl_session owns a KV prefix cache keyed by token ids and a thread pool; one
 * thread uses a session at a time.
 *
 * Every evaluation looks up the longest cached prefix of each sequence,
 * computes only the rest, and leaves the tokens cached for later calls (exact
 * reuse: no position shifting), so cached and uncached results agree. */
#ifndef TYPELLM_MODEL_H
#define TYPELLM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "vocab.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model --------------------------------------------------------------- */

/* Loads a GGUF of a supported architecture (model.c's table). Unsupported
 * architectures (the message lists the supported ones), tensor types, missing
 * tensors, wrong shapes and bad hyperparameters are errors naming them. */
TL_API tl_status tl_model_load(const char *path, tl_model **out, tl_error *err);
/* tl_model_load with flags: TL_MODEL_NO_MMAP reads the weights into memory
 * instead of mapping the file, for users who replace or truncate model files
 * under a running process (a mapped file changed in place kills the process
 * with SIGBUS on the next forward pass; replacing it by rename is safe). */
enum { TL_MODEL_NO_MMAP = 1 };
TL_API tl_status tl_model_load_ex(const char *path, unsigned flags, tl_model **out, tl_error *err);
/* Same over a caller-owned buffer that outlives the model (the fuzzer's);
 * name stands for the path in messages. */
TL_API tl_status tl_model_load_memory(const void *data, size_t len, const char *name, tl_model **out,
                                      tl_error *err);
TL_API void tl_model_free(tl_model *m);

TL_API const tl_vocab *tl_model_vocab(const tl_model *m);
TL_API const tl_gguf *tl_model_gguf(const tl_model *m);
TL_API int32_t tl_model_n_vocab(const tl_model *m);
TL_API int32_t tl_model_n_ctx_train(const tl_model *m);
TL_API const char *tl_model_arch(const tl_model *m);   /* general.architecture: "llama", "gemma3", ... */
TL_API const char *tl_model_name(const tl_model *m);   /* general.name or the file's base name */
/* Dominant weight type of the matrices ("Q8_0", "Q4_K", ...). */
TL_API const char *tl_model_type_name(const tl_model *m);

/* What the engine makes of the architecture (for `typellm inspect`): zero /
 * false where the model has no such part. */
typedef struct tl_model_features {
    int32_t window;          /* sliding window in tokens (0: none) */
    int32_t n_window_layers; /* layers that attend only inside it */
    int32_t n_nope_layers;   /* layers without RoPE */
    float attn_softcap, final_softcap;
    float embd_scale, residual_scale, logit_scale; /* 1: none */
    float attn_temp_scale;   /* Llama-4 attention temperature */
    bool qkv_bias, qk_norm, post_norms, fused_qkv, fused_gate_up, gelu, v_norm;
    bool longrope;           /* short/long RoPE factors chosen by the context size */
    int32_t n_rope_tables;   /* distinct RoPE tables (window layers' own base, ...) */
    int32_t n_expert, n_expert_used; /* mixture of experts (0: dense) */
} tl_model_features;

TL_API void tl_model_get_features(const tl_model *m, tl_model_features *f);

/* ---- sessions ------------------------------------------------------------ */

/* Element type of the cached keys or values (llama.cpp's --cache-type-k /
 * --cache-type-v, same names and encodings). F32 is exact; F16 is an IEEE
 * half per element; Q8_0 cuts each row (one token's keys or values of a
 * layer, kv head after kv head) into blocks of 32 consecutive elements, each
 * stored as a half scale d = max|x| / 127 and 32 int8 codes round(x / d). A
 * row whose width is not a multiple of 32 ends with a block zero-padded to 32
 * (its scale from its own elements). Rows are encoded when computed and every
 * reader, the pass that computed them included, sees the decoded values: the
 * results stay bit-identical whether a prefix came from the cache or not, for
 * a given pair of types. */
typedef enum tl_cache_type { TL_CACHE_F32 = 0, TL_CACHE_F16 = 1, TL_CACHE_Q8_0 = 2 } tl_cache_type;
#define TL_CACHE_TYPE_NAMES "f32, f16, q8_0" /* for messages: every name tl_cache_type_parse takes */
/* "f32", "f16", "q8_0" (NULL for a value outside the enum). */
TL_API const char *tl_cache_type_name(tl_cache_type t);
/* The type named name (as tl_cache_type_name writes it, any case); TL_ERR_INVALID
 * listing the allowed names otherwise. */
TL_API tl_status tl_cache_type_parse(const char *name, tl_cache_type *out, tl_error *err);

typedef struct tl_session_params {
    int n_threads;    /* <= 0: number of cores */
    size_t cache_mb;  /* KV prefix-cache budget; 0: default */
    int32_t n_ctx;    /* longest sequence accepted; 0: the model's context length */
    bool extend_ctx;  /* allow n_ctx beyond the model's trained context length (RoPE
                         extrapolates, quality drops); otherwise that is an error */
    tl_cache_type cache_type_k; /* element type of the cached keys (default F32) */
    tl_cache_type cache_type_v; /* and values */
} tl_session_params;

TL_API tl_status tl_session_new(const tl_model *m, const tl_session_params *params, tl_session **out, tl_error *err);
TL_API void tl_session_free(tl_session *s);
TL_API const tl_model *tl_session_model(const tl_session *s);
/* Drops every unpinned cached token. */
TL_API void tl_session_flush(tl_session *s);

/* One sequence of a batched evaluation. Inputs: ids/n (the whole sequence,
 * cached prefix included). Outputs (each optional; NULL to skip), all about
 * the position after the last token:
 *   logits         n_vocab raw logits;
 *   cand_logprobs  log-softmax over the full vocabulary at cands[0..n_cands). */
typedef struct tl_seq {
    const int32_t *ids;
    size_t n;
    float *logits;
    const int32_t *cands;
    size_t n_cands;
    double *cand_logprobs;
} tl_seq;

/* Evaluates k sequences in one batched forward pass over their uncached
 * tails; a prefix shared by several of them (e.g. a common context with K
 * question branches) is computed once. usage (optional) is accumulated into:
 * prompt_tokens += sum of n; computed_tokens += tokens run through the model;
 * cached_tokens += the difference; forward_passes += passes (one per level of
 * shared prefixes that was not cached yet, plus one per 512 tail tokens).
 * Results are bit-identical to evaluating each sequence alone from an empty
 * cache, whatever the batch, the cache state or the thread count. A sequence
 * longer than the session's n_ctx is TL_ERR_LIMIT; an empty one or an id
 * outside the vocabulary TL_ERR_INVALID (nothing is evaluated then). */
TL_API tl_status tl_session_eval_batch(tl_session *s, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err);

/* k = 1 convenience: logits (n_vocab) after ids[0..n); logits NULL only
 * brings ids into the cache (nothing recomputed when it is there already). */
TL_API tl_status tl_session_eval(tl_session *s, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                          tl_error *err);

/* Logits at each of the last k_last positions of ids (k_last x n_vocab), for
 * `typellm logits` and prompt logprobs. */
TL_API tl_status tl_session_eval_last(tl_session *s, const int32_t *ids, size_t n, size_t k_last, float *logits,
                               tl_usage *usage, tl_error *err);

/* ---- cache control and introspection -------------------------------------- */

/* Caches ids[0..n) (computing what is missing) and pins it: a pinned prefix is
 * never evicted until the matching tl_session_unpin. Pins nest. */
TL_API tl_status tl_session_pin(tl_session *s, const int32_t *ids, size_t n, tl_usage *usage, tl_error *err);
TL_API void tl_session_unpin(tl_session *s, const int32_t *ids, size_t n);
/* Length of the longest prefix of ids[0..n) whose KV rows are cached. */
TL_API size_t tl_session_cached_prefix(const tl_session *s, const int32_t *ids, size_t n);
/* Bytes the KV cache holds now, and its budget (what cache_mb set, or the
 * default: the model's whole context, clamped to 256..1024 MB). The cache is
 * trimmed to the budget after every call; only pinned or in-flight blocks can
 * keep it above. */
TL_API size_t tl_session_cache_bytes(const tl_session *s);
TL_API size_t tl_session_cache_budget(const tl_session *s);
/* Bytes the cache spends per cached token: a block's keys and values of every
 * layer in the session's cache types, plus its share of the block's
 * bookkeeping (what the budget counts). */
TL_API double tl_session_cache_token_bytes(const tl_session *s);
TL_API int tl_session_n_threads(const tl_session *s);



/* ---- which model file ------------------------------------------------------ */

/* The small instruct model fetched when neither a path, $TYPELLM_MODEL nor an
 * hf spec is given (Qwen2.5-0.5B-Instruct, Q8_0: about 0.5 GB, ChatML). */
#define TL_DEFAULT_HF_MODEL "Qwen/Qwen2.5-0.5B-Instruct-GGUF:qwen2.5-0.5b-instruct-q8_0.gguf"
#define TL_DEFAULT_HF_ENDPOINT "https://huggingface.co"

/* Sets *resolved_path (caller tl_free()s) to a readable local GGUF path:
 *   1. model_path, if non-NULL;
 *   2. $TYPELLM_MODEL, if set and non-empty;
 *   3. hf_spec ("ORG/REPO:FILE[@sha256=HEX]"), or TL_DEFAULT_HF_MODEL when NULL,
 *      downloaded over HTTPS from $TYPELLM_HF_ENDPOINT (default
 *      TL_DEFAULT_HF_ENDPOINT) into $TYPELLM_CACHE/ORG/REPO/FILE (default
 *      ~/.cache/typellm/...), resumed when broken off, size and SHA-256
 *      verified before it is renamed into place; $HF_TOKEN is sent when set.
 *      A progress bar is drawn on stderr when stderr is a terminal.
 * Errors: TL_ERR_IO (a given path is unreadable, cache not writable),
 * TL_ERR_INVALID (malformed spec), TL_ERR_NETWORK (server unreachable),
 * TL_ERR_REMOTE (HTTP error status, size or SHA-256 mismatch).
 * Threading: any thread; concurrent downloads of one file are not coordinated. */
TL_API tl_status tl_model_resolve(const char *model_path_or_null, const char *hf_spec_or_null, char **resolved_path,
                                  tl_error *err);

#ifdef __cplusplus
}
#endif
#endif
