/* forward.h: one batched forward pass of the transformer over tokens that
 * may belong to different sequences (branches), each attending to the KV
 * rows on its own cache path.
 *
 * Every per-token result depends only on that token, its position and the
 * rows on its path: never on the batch's size or order or the thread count
 * (tl_matmul guarantees it for the matrix products; norms, RoPE, attention
 * and SwiGLU here reduce in a fixed order per token). That is what makes
 * cached, uncached and batched evaluations give identical bits. */
#ifndef TL_ENGINE_FORWARD_H
#define TL_ENGINE_FORWARD_H

#include "engine/attention.h"
#include "engine/kv_cache.h"

typedef struct fwd_token {
    int32_t id;
    int32_t pos;         /* position in its sequence */
    const kv_seq *seq;   /* path covering positions [0, pos] */
    int32_t out;         /* row of hidden_out to receive the final normed state, or -1 */
} fwd_token;

/* Scratch activations, grown on demand and reused between passes. */
typedef struct fwd_scratch {
    float *buf;
    size_t cap_floats;
    float *scores;       /* per thread: (score_stride) RoPE cos/sin */
    size_t score_stride;
    size_t cap_scores;
    tl_attn_scratch att; /* attention.c's */
    struct tl_moe_scratch *moe; /* expert activations (moe.c) */
    struct tl_dnet_scratch *dnet; /* recurrent-layer activations (deltanet.c) */
    fwd_token *kept;     /* the last layer's tokens: those with out >= 0 */
    size_t cap_kept;
} fwd_scratch;

void fwd_scratch_free(fwd_scratch *sc);

/* Runs toks[0..n_tok) through every layer, writing each token's K/V rows into
 * its path, and the final RMS-normed hidden state (n_embd floats) of every
 * token with out >= 0 into hidden_out[out * n_embd]. The last layer (when it
 * is an attention layer) stores every token's K/V but finishes only the
 * tokens with out >= 0: the others' final states are never read. */
tl_status tl_forward(const tl_model *m, tl_pool *pool, kv_cache *c, fwd_scratch *sc, const fwd_token *toks,
                     int32_t n_tok, float *hidden_out, tl_error *err);

/* logits[r * n_vocab ...] = output matrix x hidden[r * n_embd ...] for r < n_rows. */
void tl_forward_logits(const tl_model *m, tl_pool *pool, const float *hidden, int32_t n_rows, float *logits);

#endif
