/* deltanet.h: gated delta-net (linear attention) layers of hybrid models
 * (qwen35: three of every four layers; the fourth is gated full attention).
 *
 * Per token x (the layer's normed input), with heads of size d:
 *   qkv = conv1d_causal(W_qkv x) then SiLU   (kernel K over the last K tokens,
 *                                              per channel; the K-1 previous
 *                                              inputs are the conv state)
 *   q, k = L2-normalized heads of qkv, v = its value heads, z = W_z x
 *   beta = sigmoid(W_beta x), g = softplus(W_alpha x + dt_bias) * a  (a = -exp(A_log))
 *   per value head h (key head h mod n_k):
 *     S = S * exp(g);  S += k (beta (v - S^T k))^T;  o = S^T q / sqrt(d)
 *   out = W_out (RMSNorm(o) * norm * silu(z))
 * S (d x d per value head) and the conv state are the layer's recurrent
 * state: carried from token to token of one sequence instead of a KV cache.
 * The working state of a sequence lives in its kv_seq during an evaluation;
 * kv_cache.c keeps snapshots of it at the positions a later evaluation can
 * resume from (rstate in kv_cache.h). Every reduction runs in a fixed order
 * per (sequence, head), so results do not depend on the batch or threads. */
#ifndef TL_ENGINE_DELTANET_H
#define TL_ENGINE_DELTANET_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef struct fwd_token fwd_token; /* forward.h */

typedef struct tl_dnet_layer {
    bool recurrent;          /* false: a full-attention layer (the rest unused) */
    tl_matrix wqkv;          /* attn_qkv: n_embd -> conv_dim (q | k | v) */
    tl_matrix wz;            /* attn_gate: n_embd -> value_dim */
    tl_matrix wbeta, walpha; /* ssm_beta, ssm_alpha: n_embd -> n_v_heads */
    tl_matrix wout;          /* ssm_out: value_dim -> n_embd */
    const float *conv;       /* ssm_conv1d (conv_dim x kernel) */
    const float *dt_bias;    /* ssm_dt.bias (n_v_heads) */
    const float *a;          /* ssm_a (n_v_heads) = -exp(A_log) */
    const float *norm;       /* ssm_norm (head_v) */
    int64_t state_off;       /* floats into a sequence's state where this layer's starts */
} tl_dnet_layer;

typedef struct tl_dnet {
    int32_t kernel;          /* ssm.conv_kernel */
    int32_t head_k, n_k;     /* ssm.state_size, ssm.group_count */
    int32_t head_v, n_v;     /* ssm.inner_size / n_v, ssm.time_step_rank */
    int32_t key_dim, value_dim, conv_dim;
    float eps;
    int32_t n_recurrent;
    int64_t layer_floats;    /* one layer's state: (kernel-1) x conv_dim + n_v x head_v^2 */
    int64_t state_floats;    /* a sequence's state over all recurrent layers */
    tl_dnet_layer *layers;   /* (n_layer) */
    float *vectors;
} tl_dnet;

/* Reads the ssm.* hyperparameters and the tensors of every layer with
 * recurrent[l]; errors name the key or the tensor. */
tl_status tl_dnet_load(const tl_gguf *g, const char *path, const char *arch, int32_t n_layer, int32_t n_embd,
                       float eps, const bool *recurrent, tl_dnet **out, tl_error *err);
void tl_dnet_free(tl_dnet *d);

typedef struct tl_dnet_scratch tl_dnet_scratch;
void tl_dnet_scratch_free(tl_dnet_scratch *sc);

/* out[t * n_embd ...] = the recurrent layer applied to h[t * n_embd ...]
 * (the normed input) for toks[0..n_tok), advancing each token's sequence
 * state (toks of one sequence must be consecutive, in position order). */
tl_status tl_dnet_forward(const tl_dnet *d, int32_t layer, int32_t n_embd, tl_pool *pool, tl_dnet_scratch **sc,
                          const fwd_token *toks, int32_t n_tok, const float *h, float *out, tl_error *err);

#endif
