/* model_internal.h: the loaded model as the engine's forward pass sees it.
 * Private to src/engine: other layers use engine.h only.
 *
 * Weight matrices are tl_matrix views into the mmap'd GGUF (never copied);
 * only the small 1-D vectors (norm weights, biases) are converted to owned
 * float32 arrays so the hot loops need not care about their stored type.
 *
 * What differs between architectures is data, not code paths scattered
 * through the forward pass: model.c's table gives each family a
 * tl_arch_desc (its fixed traits), the loader turns the file's keys into
 * the per-model and per-layer fields below (window, RoPE table, head sizes,
 * multipliers), and forward.c reads only those fields. A new family adds a
 * row to the table and, when it brings a new kind of block, a field here. */
#ifndef TL_ENGINE_MODEL_INTERNAL_H
#define TL_ENGINE_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "kernels/kernels.h"

typedef enum tl_arch {
    TL_ARCH_LLAMA = 1,
    TL_ARCH_QWEN2,
    TL_ARCH_QWEN3,
    TL_ARCH_GEMMA2,
    TL_ARCH_GEMMA3,
    TL_ARCH_GEMMA4,
    TL_ARCH_PHI3,
    TL_ARCH_SMOLLM3,
    TL_ARCH_OLMO2,
    TL_ARCH_GRANITE,
    TL_ARCH_MISTRAL3,
    TL_ARCH_QWEN2MOE,
    TL_ARCH_QWEN3MOE,
    TL_ARCH_GPT_OSS,
    TL_ARCH_QWEN35,
} tl_arch;

/* Fixed traits of an architecture (one row per family in model.c's table). */
enum {
    TL_AF_QKV_BIAS = 1u << 0,       /* attn_{q,k,v}.bias required (qwen2) */
    TL_AF_QK_NORM_HEAD = 1u << 1,   /* attn_{q,k}_norm {head_dim}: RMSNorm per head before RoPE */
    TL_AF_QK_NORM_FULL = 1u << 2,   /* attn_{q,k}_norm over the whole projection (olmo2) */
    TL_AF_POST_NORMS = 1u << 3,     /* post_attention_norm / post_ffw_norm on each block's output */
    TL_AF_NO_PRE_NORMS = 1u << 4,   /* no attn_norm / ffn_norm (olmo2) */
    TL_AF_GELU = 1u << 5,           /* GeGLU (tanh GELU) instead of SwiGLU */
    TL_AF_EMBD_SQRT = 1u << 6,      /* embeddings x sqrt(n_embd) (gemma) */
    TL_AF_V_NORM = 1u << 7,         /* V RMS-normed without weight; V = K when attn_v is absent (gemma4) */
    TL_AF_SWA_PER_LAYER = 1u << 8,  /* sliding_window_pattern is a per-layer bool array (gemma4) */
    TL_AF_MULTIPLIERS = 1u << 9,    /* granite's embedding/residual/attention/logit scales */
    TL_AF_ATTN_TEMP = 1u << 10,     /* attention.temperature_scale (mistral3, Llama 4) */
    TL_AF_SWA_OWN_ROPE = 1u << 11,  /* window layers use rope.freq_base_swa (default 10000) */
    TL_AF_SWA_PLAIN_ROPE = 1u << 12,/* window layers skip the rope scaling and its attention factor (olmo3) */
    TL_AF_SWA_SCALED = 1u << 13,    /* window layers get the rope scaling too (gemma2) */
    /* mixture-of-experts and hybrid families (moe.c, deltanet.c) */
    TL_AF_MOE = 1u << 20,           /* expert FFNs (tl_model.moe) instead of ffn_gate/up/down */
    TL_AF_O_BIAS = 1u << 21,        /* attn_output.bias required (gpt-oss) */
    TL_AF_SINKS = 1u << 22,         /* attn_sinks {n_head}: a logit per head in the softmax (gpt-oss) */
    TL_AF_FFN_NORM_POST_ATTN = 1u << 23, /* the pre-FFN norm is named post_attention_norm (gpt-oss, qwen35) */
    TL_AF_GATED_Q = 1u << 24,       /* attn_q rows per head [query; gate], output x sigmoid(gate) (qwen35) */
    TL_AF_HYBRID = 1u << 25,        /* layers with (il+1) % full_attention_interval != 0 are gated delta-net */
};

typedef struct tl_arch_desc {
    const char *name;      /* general.architecture */
    tl_arch arch;
    bool rope_neox;        /* pairs (x[i], x[i + rope_dim/2]) instead of (x[2i], x[2i+1]) */
    uint32_t flags;        /* TL_AF_* */
    /* Sliding window: swa_period is the default period P of the pattern
     * "layer il is local iff il % P < P-1"; swa_window the default window
     * (0: the window only exists when attention.sliding_window is present). */
    uint32_t swa_period;
    uint32_t swa_window;
    float attn_softcap;    /* default attn_logit_softcapping, 0: none */
    float final_softcap;   /* default final_logit_softcapping, 0: none unless the key exists */
    uint32_t nope_period;  /* layers with (il+1) % nope_period == 0 have no RoPE; 0: none */
} tl_arch_desc;

/* The architectures typellm runs, and a ", "-separated list of their names. */
const tl_arch_desc *tl_arch_find(const char *name);
const char *tl_arch_supported_list(void);

/* One RoPE table: pair i of the first dim dims turns by pos * freq[i]
 * radians; cos and sin are multiplied by mscale (YaRN, attn_factor). */
typedef struct tl_rope {
    int32_t dim;
    float *freq;           /* (dim / 2), owned */
    float mscale;
} tl_rope;

#define TL_MAX_ROPES 4

typedef struct tl_layer_weights {
    /* attention shape of this layer (gemma4 differs between window and global layers) */
    int32_t n_head_kv;
    int32_t head_dim_k, head_dim_v;
    int32_t window;               /* keys at p0 <= pos - window are hidden; 0: full attention */
    int8_t rope, rope_long;       /* indices into tl_model.ropes (rope_long when the session's
                                     context exceeds the original one: LongRoPE); -1: no RoPE */
    float attn_scale;             /* multiplies q·k */

    const float *attn_norm;       /* (n_embd), NULL: none (olmo2) */
    tl_matrix wqkv;               /* fused n_embd -> q | k | v (phi3), else type 0 / data NULL */
    tl_matrix wq;                 /* n_embd -> n_head * head_dim_k */
    tl_matrix wk;                 /* n_embd -> n_head_kv * head_dim_k */
    tl_matrix wv;                 /* n_embd -> n_head_kv * head_dim_v; data NULL: V = K (gemma4) */
    tl_matrix wo;                 /* n_head * head_dim_v -> n_embd */
    const float *bq, *bk, *bv;    /* qwen2 biases (same lengths as the outputs), else NULL */
    const float *q_norm, *k_norm; /* per-head (head_dim_k) or whole (olmo2: q_out / k_out), else NULL */
    const float *post_attn_norm;  /* (n_embd) gemma / olmo2, else NULL */
    const float *ffn_norm;        /* (n_embd), NULL: none */
    tl_matrix w_gate, w_up;       /* n_embd -> n_ff; fused (phi3): w_gate.data NULL, w_up n_embd -> 2 n_ff */
    tl_matrix w_down;             /* n_ff -> n_embd */
    const float *post_ffn_norm;   /* (n_embd), else NULL */
    float out_scale;              /* the whole residual stream x this after the layer (gemma4), else 1 */
    bool recurrent;               /* a gated delta-net layer (tl_model.dnet): no attention, no KV rows */
    const float *bo;              /* attn_output.bias (n_embd) or NULL */
    const float *sinks;           /* attn_sinks (n_head) or NULL */
} tl_layer_weights;

struct tl_model {
    tl_gguf *gguf;  /* owns the mapping every tl_matrix points into */
    tl_vocab *vocab;
    tl_arch arch;
    const tl_arch_desc *desc;
    char arch_name[16];
    char *name;
    char type_name[16];

    int32_t n_vocab;     /* rows of token_embd */
    int32_t n_ctx_train;
    int32_t n_ctx_orig;  /* rope.scaling.original_context_length (LongRoPE switch, attention temperature) */
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;   /* the largest of the layers' */
    int32_t head_dim_k;  /* key_length of full-attention layers (may differ from n_embd / n_head) */
    int32_t head_dim_v;
    int32_t n_ff;
    float norm_eps;

    bool rope_neox;
    tl_rope ropes[TL_MAX_ROPES];
    int32_t n_ropes;

    /* multipliers (1 / 0 when the architecture has none) */
    float embd_scale;      /* token embeddings x this */
    float residual_scale;  /* each block's output x this before the residual add */
    float logit_scale;     /* logits / this */
    float attn_softcap;    /* scores -> c tanh(s / c); 0: none */
    float final_softcap;   /* logits -> c tanh(l / c); 0: none */
    float attn_temp_scale; /* q x (1 + attn_temp_scale ln(floor(pos / n_ctx_orig) + 1)); 0: none */

    /* widest layer: sizes scratch */
    int64_t max_q, max_kv_k, max_kv_v; /* floats per token */

    tl_matrix tok_embd;  /* n_vocab rows of n_embd */
    tl_matrix output;    /* n_embd -> n_vocab (tok_embd when tied) */
    const float *output_norm;
    tl_layer_weights *layers; /* (n_layer) */
    struct tl_moe *moe;  /* expert FFNs (moe.h) replacing w_gate/w_up/w_down, or NULL */
    struct tl_dnet *dnet; /* recurrent (gated delta-net) layers of hybrid models (deltanet.h), or NULL */
    int64_t rstate_floats; /* a sequence's recurrent state over all layers (0: none) */

    float *vectors;      /* owned storage behind every const float* above */
};

/* Widest per-token KV row of any layer, in floats. */
static inline int64_t tl_model_kv_k(const tl_model *m) { return m->max_kv_k; }
static inline int64_t tl_model_kv_v(const tl_model *m) { return m->max_kv_v; }

#endif
