/* attention.h: grouped-query attention of a batch of tokens over the KV rows
 * on each token's own cache path (forward.c calls it once per layer).
 *
 * Every result depends only on the token's query, its position and the rows
 * on its path, reduced in a fixed order: never on the batch, the other
 * tokens or the thread count (so cached, uncached and branch evaluations give
 * identical bits). The per-family variations are parameters, filled per
 * layer by the caller; all zero / NULL except scale is plain causal
 * softmax attention. */
#ifndef TL_ENGINE_ATTENTION_H
#define TL_ENGINE_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kv_cache.h"

typedef struct fwd_token fwd_token; /* forward.h */

typedef struct tl_attn_params {
    float scale;        /* multiplies q·k before anything else (1/sqrt(head_dim_k) by default) */
    float softcap;      /* > 0: a scaled score s becomes softcap * tanh(s / softcap) (gemma 2); 0: off */
    int32_t window;     /* > 0: a query at position p sees keys at positions (p - window, p] only
                           (sliding window); 0: every position <= p */
    const float *sinks; /* NULL, or one logit per query head (n_head) that joins the softmax
                           denominator without a value row (gpt-oss attention sinks) */
} tl_attn_params;

/* scale = 1/sqrt(the layer's head_dim_k), everything else off. */
tl_attn_params tl_attn_default(const tl_model *m, int32_t layer);

/* Per-session working memory of tl_attention, grown on demand. */
typedef struct tl_attn_scratch {
    float *buf;
    size_t cap_floats;
    int32_t *tiles;
    size_t cap_tiles;
} tl_attn_scratch;

void tl_attn_scratch_free(tl_attn_scratch *s);

/* One layer: for each token t and query head h,
 *   out[t * out_stride + h * head_dim_v ...] =
 *       sum_j softmax_j(score(q_h · k_j)) v_j   over the visible positions j
 * of kv head h / (n_head / n_head_kv) on toks[t]'s path. q is
 * (n_tok, n_head * head_dim_k) after RoPE; the path's K/V rows for every
 * position <= toks[t].pos must already be in the cache. */
tl_status tl_attention(tl_pool *pool, const tl_model *m, const kv_cache *c, int32_t layer,
                       const tl_attn_params *p, const fwd_token *toks, int32_t n_tok, const float *q,
                       float *out, int64_t out_stride, tl_attn_scratch *sc, tl_error *err);

#endif
