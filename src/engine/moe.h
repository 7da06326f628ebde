/* moe.h: mixture-of-experts feed-forward blocks (qwen2moe, qwen3moe, gpt-oss).
 *
 * A router matrix scores every expert for a token; the top n_used experts
 * run (each a gated FFN: down(act(gate x, up x))) and their outputs are
 * summed, weighted by the gating function's weights. What differs between
 * the families is data here:
 *   qwen3moe  softmax over all experts, top-k, weights renormalized to sum 1;
 *   qwen2moe  softmax, top-k, no renormalization, plus a shared expert gated
 *             by sigmoid(ffn_gate_inp_shexp · x);
 *   gpt-oss   router bias, top-k on the raw logits, softmax over the k chosen,
 *             per-expert biases on gate/up/down, clamped SwiGLU
 *             min(g,7)·σ(1.702·min(g,7))·(clamp(u,±7)+1).
 * In a pass of many tokens each expert runs once over exactly the tokens
 * routed to it (gathered into one matrix product per expert), so the work
 * follows the active, not the total, parameters; decode reads only the
 * routed experts' rows. Each token's output is summed over its experts in
 * rank order, so results never depend on the batch (the shared tl_matmul
 * gives each row the same bits whatever the other rows). */
#ifndef TL_ENGINE_MOE_H
#define TL_ENGINE_MOE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef enum tl_moe_gating {
    TL_MOE_SOFTMAX_NORM = 0, /* qwen3moe */
    TL_MOE_SOFTMAX,          /* qwen2moe */
    TL_MOE_TOPK_SOFTMAX,     /* gpt-oss: softmax over the selected logits */
} tl_moe_gating;

typedef enum tl_moe_act {
    TL_MOE_SWIGLU = 0,  /* silu(g) * u */
    TL_MOE_SWIGLU_OAI,  /* gpt-oss clamped variant */
} tl_moe_act;

/* A stack of n_expert matrices of one shape, expert e at data + e * stride. */
typedef struct tl_expert_mats {
    tl_matrix m;   /* expert 0 */
    size_t stride; /* bytes between experts */
} tl_expert_mats;

typedef struct tl_moe_layer {
    tl_matrix router;            /* n_embd -> n_expert */
    const float *router_b;       /* (n_expert) or NULL */
    tl_expert_mats gate, up;     /* n_embd -> n_ff_exp */
    tl_expert_mats down;         /* n_ff_exp -> n_embd */
    const float *gate_b, *up_b;  /* (n_expert x n_ff_exp) or NULL */
    const float *down_b;         /* (n_expert x n_embd) or NULL */
    /* shared expert (qwen2moe), sh_down.data NULL when absent */
    tl_matrix sh_gate, sh_up, sh_down;
    const float *sh_gate_inp;    /* (n_embd): the shared expert's sigmoid gate, or NULL */
} tl_moe_layer;

typedef struct tl_moe {
    int32_t n_expert, n_used, n_ff_exp, n_ff_shexp;
    tl_moe_gating gating;
    tl_moe_act act;
    float w_scale;               /* expert_weights_scale (1: none) */
    tl_moe_layer *layers;        /* (n_layer) */
    float *vectors;              /* owned storage of the biases */
} tl_moe;

/* Reads the expert hyperparameters (A.expert_count, A.expert_used_count,
 * A.expert_feed_forward_length, ...) and every layer's MoE tensors, checking
 * presence, shapes and types; errors name the key or the tensor. n_ff is the
 * dense feed_forward_length (the fallback n_ff_exp = n_ff / n_used). */
typedef struct tl_moe_spec {
    tl_moe_gating gating;
    tl_moe_act act;
    bool shared_expert; /* qwen2moe: ffn_{gate,up,down}_shexp + ffn_gate_inp_shexp required */
    bool biases;        /* gpt-oss: router and per-expert gate/up/down biases required */
} tl_moe_spec;

tl_status tl_moe_load(const tl_gguf *g, const char *path, const char *arch, int32_t n_layer, int32_t n_embd,
                      int32_t n_ff, const tl_moe_spec *spec, tl_moe **out, tl_error *err);
void tl_moe_free(tl_moe *moe);

/* Working memory of tl_moe_ffn, grown on demand. */
typedef struct tl_moe_scratch tl_moe_scratch;
void tl_moe_scratch_free(tl_moe_scratch *sc);

/* out[t * n_embd ...] = the MoE block of layer `layer` applied to
 * h[t * n_embd ...] for t < n_tok (not added to anything). */
tl_status tl_moe_ffn(const tl_moe *moe, int32_t layer, int32_t n_embd, tl_pool *pool, tl_moe_scratch **sc,
                     const float *h, int32_t n_tok, float *out, tl_error *err);

/* Bytes of expert weights one token reads per layer vs all experts hold
 * (for inspect and benchmarks: decode follows the first). */
double tl_moe_active_bytes(const tl_moe *moe, int32_t layer);
double tl_moe_total_bytes(const tl_moe *moe, int32_t layer);
/* Adds the weights (elements) of every expert matrix to by_type[type]. */
void tl_moe_count_types(const tl_moe *moe, int32_t n_layer, double *by_type, int n_types);

#endif
