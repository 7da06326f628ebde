/* kv_cache.h: the session's KV prefix cache: a radix tree over token ids
 * whose nodes are fixed-size blocks of KV rows.
 *
 * Each node holds up to TL_KV_BLOCK consecutive tokens of some sequence and
 * their keys and values for every layer; its parent holds the block before
 * it. A sequence is a root-to-node path. Invariants:
 *  - only full nodes (TL_KV_BLOCK ready rows) have children, so a path's
 *    blocks cover positions [0, n) back to back;
 *  - rows [0, n_ready) are computed and matchable; rows [n_ready, n_planned)
 *    are being computed by the evaluation that claimed the node (at most one:
 *    everyone else copies the rows they share into a new node: copy on write);
 *  - a node with pins > 0 (on the path of an evaluation in flight, or pinned
 *    by the caller) or with children is never evicted; the rest go least
 *    recently used first when the cache is over its byte budget.
 * Reuse is exact: a row is only ever read at the position it was computed
 * for, after exactly the tokens on its path. Rows are stored in the cache's
 * element types (tl_cache_type: F32, F16, Q8_0), encoded when written and
 * decoded by every reader alike (kv_rows.c), so a row reads the same wherever
 * it came from; node_bytes, and so the budget, count the encoded bytes. */
#ifndef TL_ENGINE_KV_CACHE_H
#define TL_ENGINE_KV_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model_internal.h"
#include "typellm/model.h"

#define TL_KV_BLOCK 16 /* attention.c scores a block as two 8-lane vectors */

typedef struct kv_node kv_node;

/* A recurrent-state snapshot (hybrid models, rstate.c): the state of every
 * recurrent layer after the first `rows` tokens of its block, i.e. after
 * position block_start + rows - 1 of every path through the block. */
typedef struct kv_snap {
    int32_t rows;
    float *state;  /* tl_dnet.state_floats */
} kv_snap;

struct kv_node {
    kv_node *parent;
    kv_node **children;
    int32_t n_children, cap_children;
    int32_t tokens[TL_KV_BLOCK];
    int32_t n_ready;
    int32_t n_planned;
    int32_t pins;
    size_t index;        /* in kv_cache.nodes */
    uint64_t last_used;  /* kv_cache.tick when last on a path */
    uint8_t *kv;         /* per layer (kv_layout): TL_KV_BLOCK K rows, then TL_KV_BLOCK V rows */
    kv_snap *snaps;      /* recurrent-state snapshots taken in this block, or NULL */
    int32_t n_snaps;
};

/* Where one layer's rows sit in a node's kv, in bytes. Keys of an F32 cache
 * are stored transposed within the block (kv_k_block); every other region is
 * TL_KV_BLOCK rows of k_row / v_row bytes, each row encoded in its cache type
 * (tl_cache_type). Every region is a multiple of TL_KV_BLOCK * 2 bytes long,
 * so F32 regions stay 4-byte aligned whatever precedes them. */
typedef struct kv_layout {
    size_t k_off, v_off;  /* from the start of nd->kv */
    size_t k_row, v_row;  /* bytes of one token's row */
} kv_layout;

typedef struct kv_cache {
    kv_node root;        /* no tokens, no kv */
    kv_node **nodes;     /* every node but the root */
    size_t n_nodes, cap_nodes;
    const tl_model *m;   /* layer shapes (each layer has its own K / V row widths) */
    tl_cache_type type_k, type_v;
    bool simd_decode;    /* decode F16 / Q8_0 rows with AVX2 + F16C (the same values: speed only) */
    kv_layout *layout;   /* (m->n_layer) */
    size_t block_bytes;  /* one node's kv: TL_KV_BLOCK K and V rows of every layer */
    size_t node_bytes;   /* what one node costs, counted against the budget */
    size_t budget_bytes;
    uint64_t tick;
    bool rope_long;      /* the session's context exceeds the model's original one: layers
                            with LongRoPE factors rotate by the long ones (the rows depend on it) */
    size_t state_floats; /* recurrent state of one sequence (0: no recurrent layers) */
    size_t snap_bytes;   /* held by snapshots, counted against the budget */
} kv_cache;

/* One sequence's hold on the cache during an evaluation: the path covering
 * [0, n), how much of it was already computed, and what to undo on failure. */
typedef struct kv_seq {
    kv_node **path;
    int32_t n_path, cap_path;
    int32_t matched;          /* leading tokens whose rows were found ready */
    kv_node *extended;        /* node claimed for in-place extension, or NULL */
    int32_t extended_planned; /* its n_planned before the claim */
    int32_t first_new;        /* path index of the first node this sequence created */
    /* recurrent layers (rstate.c): the working state during an evaluation, and
     * a copy of it taken after position rsnap_pos - 1 on the way (-1: none) */
    float *rstate, *rsnap;
    int32_t rsnap_pos;
} kv_seq;

tl_status kv_cache_init(kv_cache *c, const tl_model *m, size_t budget_bytes, tl_cache_type type_k,
                        tl_cache_type type_v, tl_error *err);
void kv_cache_free(kv_cache *c);
static inline size_t kv_cache_bytes(const kv_cache *c) { return c->n_nodes * c->node_bytes + c->snap_bytes; }
/* Q8_0 rows: blocks of KV_Q8_BLOCK elements, each a half scale and as many int8 codes. */
enum { KV_Q8_BLOCK = 32, KV_Q8_BLOCK_BYTES = 2 + KV_Q8_BLOCK };
/* Bytes of one row of n elements encoded as t (Q8_0: whole blocks). */
size_t kv_row_bytes(tl_cache_type t, int64_t n);

/* ---- reading and writing rows (kv_rows.c) ---------------------------------- */

/* F32 keys only: stored transposed within a block, so attention scores a
 * whole block of rows with vector loads and no horizontal sums: element d of
 * row r of kv head g is at kv_k_block(...)[(g * head_dim + d) * TL_KV_BLOCK + r]. */
static inline float *kv_k_block(const kv_cache *c, const kv_node *nd, int32_t layer) {
    return (float *)(void *)(nd->kv + c->layout[layer].k_off);
}
/* F32 values only: row-major, row r is the layer's kv_v floats, kv head after kv head. */
static inline float *kv_v_row(const kv_cache *c, const kv_node *nd, int32_t layer, int32_t row) {
    return (float *)(void *)(nd->kv + c->layout[layer].v_off + (size_t)row * c->layout[layer].v_row);
}

/* Stores the keys k (n_head_kv * head_dim_k) and values v of one token as row
 * `row` of nd, encoded in the cache's types. Rows are independent: threads
 * may store different rows of a node at once. */
void kv_store_row(const kv_cache *c, kv_node *nd, int32_t layer, int32_t row, const float *k, const float *v);

/* The keys of kv head g in the block, decoded and transposed as kv_k_block
 * lays them out (element d of row r at [d * TL_KV_BLOCK + r]): a pointer into
 * the node for F32 keys, else decoded into scratch (kv_k_scratch floats). */
static inline size_t kv_k_scratch(int64_t head_dim_k) { return 2 * (size_t)TL_KV_BLOCK * (size_t)head_dim_k; }
const float *kv_k_view(const kv_cache *c, const kv_node *nd, int32_t layer, int32_t g, float *scratch);
/* The values of kv head g in the block: row r at [r * *stride], decoded into
 * scratch (TL_KV_BLOCK * head_dim_v floats) unless they are F32. */
const float *kv_v_view(const kv_cache *c, const kv_node *nd, int32_t layer, int32_t g, float *scratch,
                       int64_t *stride);
/* Whether kv_k_view / kv_v_view decode (and so need their scratch). */
static inline bool kv_decodes(const kv_cache *c) { return c->type_k != TL_CACHE_F32 || c->type_v != TL_CACHE_F32; }

/* Finds the longest ready prefix of ids[0..n) and builds (pins) a path
 * covering all n positions: matched blocks, then a claimed or copied partial
 * block, then new blocks holding the remaining tokens. */
tl_status kv_seq_acquire(kv_cache *c, const int32_t *ids, int32_t n, kv_seq *s, tl_error *err);
/* After the forward pass wrote every planned row: marks them ready, unpins. */
void kv_seq_commit(kv_cache *c, kv_seq *s);
/* After a failure: removes the blocks this sequence created, unpins. */
void kv_seq_abort(kv_cache *c, kv_seq *s);
void kv_seq_free(kv_seq *s);

/* ---- recurrent-state snapshots (rstate.c) ----------------------------------
 * A hybrid model's recurrent layers carry a state instead of KV rows, so a
 * cached prefix is only resumable where a snapshot of that state exists.
 * Evaluations store one at the end of every sequence (and, for sequences
 * with outputs, where their output positions start: what re-evaluating them
 * needs); copy-on-write copies the snapshots of the shared rows. */

/* The largest position p <= want at which s's path holds a snapshot (0: the
 * empty state); loads it into s->rstate (allocated here) and returns p. */
int32_t kv_rstate_resume(kv_cache *c, kv_seq *s, int32_t want, tl_error *err, tl_status *st);
/* Stores state as the snapshot at position pos (>= 1) of s's path. */
tl_status kv_rstate_store(kv_cache *c, kv_seq *s, int32_t pos, const float *state, tl_error *err);
/* Copies src's snapshots of rows <= rows into dst (copy on write). */
tl_status kv_rstate_copy(kv_cache *c, kv_node *dst, const kv_node *src, int32_t rows, tl_error *err);
/* Frees a node's snapshots. */
void kv_rstate_drop(kv_cache *c, kv_node *nd);

/* Length of the longest ready prefix of ids[0..n) (no side effects). */
int32_t kv_cache_lookup(const kv_cache *c, const int32_t *ids, int32_t n);
/* pins += delta along the ready path of ids[0..n); returns how many tokens it covered. */
int32_t kv_cache_pin(kv_cache *c, const int32_t *ids, int32_t n, int delta);
/* Evicts unpinned leaves, least recently used first, down to the budget
 * (down to nothing unpinned when budget is 0). */
void kv_cache_trim(kv_cache *c, size_t budget_bytes);

#endif
