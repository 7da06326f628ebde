/* kv_cache.c: the radix tree of KV blocks behind every session (see
 * kv_cache.h for the invariants). Lookups walk children by token content;
 * eviction scans for the least recently used unpinned leaf, which is cheap
 * next to the forward pass that any allocation precedes. */
#include <stdlib.h>
#include <string.h>

#include "engine/kv_cache.h"
#include "engine/vec_avx2.h"
#include "util/error.h"

size_t kv_row_bytes(tl_cache_type t, int64_t n) {
    switch (t) {
    case TL_CACHE_F16: return 2 * (size_t)n;
    case TL_CACHE_Q8_0: return KV_Q8_BLOCK_BYTES * (((size_t)n + KV_Q8_BLOCK - 1) / KV_Q8_BLOCK);
    default: return sizeof(float) * (size_t)n;
    }
}

tl_status kv_cache_init(kv_cache *c, const tl_model *m, size_t budget_bytes, tl_cache_type type_k,
                        tl_cache_type type_v, tl_error *err) {
    memset(c, 0, sizeof *c);
    if (!tl_cache_type_name(type_k) || !tl_cache_type_name(type_v))
        return tl_error_set(err, TL_ERR_INVALID, "KV cache types %d / %d: no such type",
                            (int)type_k, (int)type_v);
    c->layout = calloc(m->n_layer > 0 ? (size_t)m->n_layer : 1, sizeof *c->layout);
    if (!c->layout)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for the KV cache layout");
    c->m = m;
    c->type_k = type_k;
    c->type_v = type_v;
    /* every SIMD path the kernels choose requires F16C (kernels/dispatch.c
     * checks it by cpuid: clang's __builtin_cpu_supports has no "f16c") */
    c->simd_decode = tl_engine_simd();
    size_t off = 0;
    for (int32_t l = 0; l < m->n_layer; l++) {
        const tl_layer_weights *w = &m->layers[l];
        kv_layout *L = &c->layout[l];
        int64_t nk = (int64_t)w->n_head_kv * w->head_dim_k, nv = (int64_t)w->n_head_kv * w->head_dim_v;
        if (w->recurrent)
            nk = nv = 0; /* a recurrent state instead of KV rows (rstate.c) */
        L->k_row = kv_row_bytes(type_k, nk);
        L->v_row = kv_row_bytes(type_v, nv);
        L->k_off = off;
        L->v_off = off + TL_KV_BLOCK * L->k_row;
        off = L->v_off + TL_KV_BLOCK * L->v_row;
    }
    c->block_bytes = off;
    c->node_bytes = sizeof(kv_node) + c->block_bytes;
    c->budget_bytes = budget_bytes;
    c->state_floats = (size_t)m->rstate_floats;
    return TL_OK;
}

static void node_destroy(kv_node *nd) {
    free(nd->children);
    free(nd->kv);
    free(nd);
}

void kv_cache_free(kv_cache *c) {
    for (size_t i = 0; i < c->n_nodes; i++) {
        kv_rstate_drop(c, c->nodes[i]);
        node_destroy(c->nodes[i]);
    }
    free(c->nodes);
    free(c->root.children);
    free(c->layout);
    memset(c, 0, sizeof *c);
}

static void detach_child(kv_node *parent, kv_node *child) {
    for (int32_t i = 0; i < parent->n_children; i++)
        if (parent->children[i] == child) {
            /* keep sibling order: lookups prefer the older of equal matches */
            memmove(parent->children + i, parent->children + i + 1,
                    sizeof(kv_node *) * (size_t)(parent->n_children - i - 1));
            parent->n_children--;
            return;
        }
}

/* Removes a leaf from the tree and frees it. */
static void remove_leaf(kv_cache *c, kv_node *nd) {
    kv_rstate_drop(c, nd);
    detach_child(nd->parent, nd);
    size_t i = nd->index;
    c->nodes[i] = c->nodes[--c->n_nodes];
    c->nodes[i]->index = i;
    node_destroy(nd);
}

static kv_node *lru_victim(const kv_cache *c) {
    kv_node *best = NULL;
    for (size_t i = 0; i < c->n_nodes; i++) {
        kv_node *nd = c->nodes[i];
        if (nd->pins == 0 && nd->n_children == 0 && (!best || nd->last_used < best->last_used))
            best = nd;
    }
    return best;
}

void kv_cache_trim(kv_cache *c, size_t budget_bytes) {
    while (kv_cache_bytes(c) > budget_bytes) {
        kv_node *victim = lru_victim(c);
        if (!victim)
            return;
        remove_leaf(c, victim);
    }
}

/* A new pinned, empty child of parent. Makes room under the budget first;
 * when everything left is pinned the cache overshoots until those unpin. */
static kv_node *node_new(kv_cache *c, kv_node *parent, tl_error *err) {
    if (c->budget_bytes >= c->node_bytes)
        kv_cache_trim(c, c->budget_bytes - c->node_bytes);
    kv_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        goto oom;
    /* zeroed: attention scores whole blocks, including rows not yet written */
    nd->kv = calloc(c->block_bytes ? c->block_bytes : 1, 1);
    if (!nd->kv)
        goto oom;
    if (c->n_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? 2 * c->cap_nodes : 64;
        kv_node **nodes = realloc(c->nodes, cap * sizeof *nodes);
        if (!nodes)
            goto oom;
        c->nodes = nodes;
        c->cap_nodes = cap;
    }
    if (parent->n_children == parent->cap_children) {
        int32_t cap = parent->cap_children ? 2 * parent->cap_children : 4;
        kv_node **ch = realloc(parent->children, (size_t)cap * sizeof *ch);
        if (!ch)
            goto oom;
        parent->children = ch;
        parent->cap_children = cap;
    }
    parent->children[parent->n_children++] = nd;
    nd->parent = parent;
    nd->index = c->n_nodes;
    c->nodes[c->n_nodes++] = nd;
    nd->pins = 1;
    nd->last_used = c->tick;
    return nd;
oom:
    if (nd)
        free(nd->kv);
    free(nd);
    tl_error_set(err, TL_ERR_NOMEM, "out of memory for a KV block (%zu bytes)", c->node_bytes);
    return NULL;
}

static int32_t common_prefix(const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
    int32_t n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* The child of nd sharing the most ready tokens with ids[0..want), first of equals. */
static kv_node *best_child(const kv_node *nd, const int32_t *ids, int32_t want, int32_t *best_len) {
    kv_node *best = NULL;
    *best_len = 0;
    for (int32_t i = 0; i < nd->n_children; i++) {
        kv_node *ch = nd->children[i];
        int32_t l = common_prefix(ch->tokens, ch->n_ready, ids, want);
        if (l > *best_len) {
            *best_len = l;
            best = ch;
        }
    }
    return best;
}

static tl_status path_push(kv_cache *c, kv_seq *s, kv_node *nd, bool pin, tl_error *err) {
    if (s->n_path == s->cap_path) {
        int32_t cap = s->cap_path ? 2 * s->cap_path : 16;
        kv_node **p = realloc(s->path, (size_t)cap * sizeof *p);
        if (!p)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        s->path = p;
        s->cap_path = cap;
    }
    s->path[s->n_path++] = nd;
    if (pin)
        nd->pins++;
    nd->last_used = c->tick;
    return TL_OK;
}

int32_t kv_cache_lookup(const kv_cache *c, const int32_t *ids, int32_t n) {
    const kv_node *nd = &c->root;
    int32_t pos = 0;
    while (pos < n) {
        int32_t want = n - pos < TL_KV_BLOCK ? n - pos : TL_KV_BLOCK, l;
        const kv_node *ch = best_child(nd, ids + pos, want, &l);
        pos += l;
        if (!ch || l < TL_KV_BLOCK)
            break;
        nd = ch;
    }
    return pos;
}

int32_t kv_cache_pin(kv_cache *c, const int32_t *ids, int32_t n, int delta) {
    kv_node *nd = &c->root;
    int32_t pos = 0;
    while (pos < n) {
        int32_t want = n - pos < TL_KV_BLOCK ? n - pos : TL_KV_BLOCK, l;
        kv_node *ch = best_child(nd, ids + pos, want, &l);
        if (!ch)
            break;
        ch->pins += delta;
        if (ch->pins < 0)
            ch->pins = 0;
        pos += l;
        if (l < TL_KV_BLOCK)
            break;
        nd = ch;
    }
    return pos;
}

tl_status kv_seq_acquire(kv_cache *c, const int32_t *ids, int32_t n, kv_seq *s, tl_error *err) {
    s->n_path = 0;
    s->matched = 0;
    s->extended = NULL;
    s->first_new = -1;
    c->tick++;
    kv_node *nd = &c->root, *write = NULL; /* write: the partial block new tokens go into */
    int32_t pos = 0;
    tl_status st;
    while (pos < n) {
        int32_t want = n - pos < TL_KV_BLOCK ? n - pos : TL_KV_BLOCK, l;
        kv_node *ch = best_child(nd, ids + pos, want, &l);
        if (!ch)
            break;
        if (l == want) { /* the whole stretch is ready in this block */
            if ((st = path_push(c, s, ch, true, err)) != TL_OK)
                return st;
            pos += l;
            nd = ch;
            continue;
        }
        if (l == ch->n_ready && ch->n_planned == ch->n_ready && ch->n_children == 0) {
            /* a partial leaf nobody else is filling: extend it in place */
            if ((st = path_push(c, s, ch, true, err)) != TL_OK)
                return st;
            s->extended = ch;
            s->extended_planned = ch->n_planned;
            write = ch;
        } else {
            /* diverges inside a block others use: copy the shared rows */
            ch->pins++; /* keep the source while making room */
            kv_node *cp = node_new(c, nd, err);
            ch->pins--;
            if (!cp)
                return TL_ERR_NOMEM;
            cp->pins = 0; /* path_push pins it */
            if ((st = path_push(c, s, cp, true, err)) != TL_OK) {
                remove_leaf(c, cp);
                return st;
            }
            s->first_new = s->n_path - 1;
            /* whole blocks (keys are transposed); rows >= l are overwritten before use */
            memcpy(cp->kv, ch->kv, c->block_bytes);
            memcpy(cp->tokens, ch->tokens, sizeof(int32_t) * (size_t)l);
            if (c->state_floats && (st = kv_rstate_copy(c, cp, ch, l, err)) != TL_OK)
                return st; /* the caller's abort removes cp */
            cp->n_planned = l; /* n_ready stays 0 until commit: nobody matches it before */
            write = cp;
        }
        pos += l;
        break;
    }
    s->matched = pos;
    while (pos < n) {
        if (!write || write->n_planned == TL_KV_BLOCK) {
            kv_node *parent = s->n_path ? s->path[s->n_path - 1] : &c->root;
            write = node_new(c, parent, err);
            if (!write)
                return TL_ERR_NOMEM;
            write->pins = 0;
            if ((st = path_push(c, s, write, true, err)) != TL_OK) {
                remove_leaf(c, write);
                return st;
            }
            if (s->first_new < 0)
                s->first_new = s->n_path - 1;
        }
        int32_t take = TL_KV_BLOCK - write->n_planned;
        if (take > n - pos)
            take = n - pos;
        memcpy(write->tokens + write->n_planned, ids + pos, sizeof(int32_t) * (size_t)take);
        write->n_planned += take;
        pos += take;
    }
    return TL_OK;
}

void kv_seq_commit(kv_cache *c, kv_seq *s) {
    (void)c;
    for (int32_t i = 0; i < s->n_path; i++) {
        kv_node *nd = s->path[i];
        nd->n_ready = nd->n_planned;
        nd->pins--;
    }
    s->n_path = 0;
    s->extended = NULL;
}

void kv_seq_abort(kv_cache *c, kv_seq *s) {
    for (int32_t i = s->n_path - 1; i >= 0; i--) {
        kv_node *nd = s->path[i];
        nd->pins--;
        if (s->first_new >= 0 && i >= s->first_new && nd->n_children == 0 && nd->pins == 0)
            remove_leaf(c, nd);
    }
    if (s->extended)
        s->extended->n_planned = s->extended_planned;
    s->n_path = 0;
    s->extended = NULL;
}

void kv_seq_free(kv_seq *s) {
    free(s->path);
    free(s->rstate);
    free(s->rsnap);
    memset(s, 0, sizeof *s);
}
