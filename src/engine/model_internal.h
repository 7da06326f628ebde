/* model_internal.h: the loaded model as the engine's forward pass sees it.
 * Private to src/engine: other layers use engine.h only.
 *
 * Weight matrices are tl_matrix views into the mmap'd GGUF (never copied);
 * only the small 1-D vectors (norm weights, biases) are converted to owned
 * float32 arrays so the hot loops need not care about their stored type. */
#ifndef TL_ENGINE_MODEL_INTERNAL_H
#define TL_ENGINE_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef enum tl_arch { TL_ARCH_LLAMA = 1, TL_ARCH_QWEN2, TL_ARCH_QWEN3, TL_ARCH_QWEN2MOE, TL_ARCH_QWEN3MOE } tl_arch;

typedef struct tl_layer_weights {
    const float *attn_norm;       /* (n_embd) */
    tl_matrix wq;                 /* n_embd -> n_head * head_dim_k */
    tl_matrix wk;                 /* n_embd -> n_head_kv * head_dim_k */
    tl_matrix wv;                 /* n_embd -> n_head_kv * head_dim_v */
    tl_matrix wo;                 /* n_head * head_dim_v -> n_embd */
    const float *bq, *bk, *bv;    /* qwen2 biases (same lengths as the outputs), else NULL */
    const float *q_norm, *k_norm; /* qwen3 per-head RMSNorm weights (head_dim_k), else NULL */
    const float *ffn_norm;        /* (n_embd) */
    tl_matrix w_gate, w_up;       /* n_embd -> n_ff */
    tl_matrix w_down;             /* n_ff -> n_embd */
} tl_layer_weights;

struct tl_model {
    tl_gguf *gguf;  /* owns the mapping every tl_matrix points into */
    tl_vocab *vocab;
    tl_arch arch;
    char arch_name[16];
    char *name;
    char type_name[16];

    int32_t n_vocab;     /* rows of token_embd */
    int32_t n_ctx_train;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim_k;  /* key_length (may differ from n_embd / n_head: qwen3) */
    int32_t head_dim_v;  /* value_length */
    int32_t n_ff;
    float norm_eps;

    /* RoPE: rotate the first rope_dim dims of each q/k head; pair i turns by
     * pos * rope_freq[i] radians; cos/sin are scaled by rope_mscale (YaRN). */
    int32_t rope_dim;
    bool rope_neox;      /* pairs (x[i], x[i + rope_dim/2]) instead of (x[2i], x[2i+1]) */
    float *rope_freq;    /* (rope_dim / 2) */
    float rope_mscale;

    tl_matrix tok_embd;  /* n_vocab rows of n_embd */
    tl_matrix output;    /* n_embd -> n_vocab (tok_embd when tied) */
    const float *output_norm;
    tl_layer_weights *layers; /* (n_layer) */
    struct tl_moe *moe;  /* expert FFNs (moe.h) replacing w_gate/w_up/w_down, or NULL */
    struct tl_dnet *dnet; /* recurrent (gated delta-net) layers of hybrid models (deltanet.h), or NULL */
    int64_t rstate_floats; /* a sequence's recurrent state over all layers (0: none) */

    float *vectors;      /* owned storage behind every const float* above */
};

/* Per-token KV row widths in floats. */
static inline int64_t tl_model_kv_k(const tl_model *m) { return (int64_t)m->n_head_kv * m->head_dim_k; }
static inline int64_t tl_model_kv_v(const tl_model *m) { return (int64_t)m->n_head_kv * m->head_dim_v; }

#endif
