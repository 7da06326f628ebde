/* rstate.c: snapshots of hybrid models' recurrent state in the prefix cache
 * (see kv_cache.h). A snapshot belongs to the block holding the position it
 * was taken after; it stays valid as long as the block does (rows are only
 * ever appended to a block), and goes when the block is evicted. Snapshots
 * are written between forward passes, never during one. */
#include <stdlib.h>
#include <string.h>

#include "engine/kv_cache.h"
#include "util/error.h"

static size_t snap_bytes(const kv_cache *c) { return sizeof(float) * c->state_floats + sizeof(kv_snap); }

int32_t kv_rstate_resume(kv_cache *c, kv_seq *s, int32_t want, tl_error *err, tl_status *st) {
    *st = TL_OK;
    if (!s->rstate) {
        s->rstate = malloc(sizeof(float) * c->state_floats);
        s->rsnap = malloc(sizeof(float) * c->state_floats);
        if (!s->rstate || !s->rsnap) {
            *st = tl_error_set(err, TL_ERR_NOMEM, "out of memory for a recurrent state (%zu floats)", c->state_floats);
            return 0;
        }
    }
    s->rsnap_pos = -1;
    for (int32_t i = (want - 1) / TL_KV_BLOCK; want > 0 && i >= 0; i--) {
        const kv_node *nd = s->path[i];
        const kv_snap *best = NULL;
        for (int32_t j = 0; j < nd->n_snaps; j++) {
            const kv_snap *sn = &nd->snaps[j];
            if (i * TL_KV_BLOCK + sn->rows <= want && (!best || sn->rows > best->rows))
                best = sn;
        }
        if (best) {
            memcpy(s->rstate, best->state, sizeof(float) * c->state_floats);
            return i * TL_KV_BLOCK + best->rows;
        }
    }
    memset(s->rstate, 0, sizeof(float) * c->state_floats);
    return 0;
}

static tl_status add_snap(kv_cache *c, kv_node *nd, int32_t rows, const float *state, tl_error *err) {
    for (int32_t j = 0; j < nd->n_snaps; j++)
        if (nd->snaps[j].rows == rows)
            return TL_OK; /* the same tokens give the same state */
    kv_snap *sn = realloc(nd->snaps, sizeof *sn * (size_t)(nd->n_snaps + 1));
    if (!sn)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for a recurrent-state snapshot");
    nd->snaps = sn;
    float *copy = malloc(sizeof(float) * c->state_floats);
    if (!copy)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for a recurrent-state snapshot");
    memcpy(copy, state, sizeof(float) * c->state_floats);
    sn[nd->n_snaps++] = (kv_snap){.rows = rows, .state = copy};
    c->snap_bytes += snap_bytes(c);
    return TL_OK;
}

tl_status kv_rstate_store(kv_cache *c, kv_seq *s, int32_t pos, const float *state, tl_error *err) {
    int32_t i = (pos - 1) / TL_KV_BLOCK;
    if (pos < 1 || i >= s->n_path)
        return tl_error_set(err, TL_ERR_INTERNAL, "recurrent snapshot at %d outside the path", pos);
    return add_snap(c, s->path[i], pos - i * TL_KV_BLOCK, state, err);
}

tl_status kv_rstate_copy(kv_cache *c, kv_node *dst, const kv_node *src, int32_t rows, tl_error *err) {
    for (int32_t j = 0; j < src->n_snaps; j++)
        if (src->snaps[j].rows <= rows) {
            tl_status st = add_snap(c, dst, src->snaps[j].rows, src->snaps[j].state, err);
            if (st != TL_OK)
                return st;
        }
    return TL_OK;
}

void kv_rstate_drop(kv_cache *c, kv_node *nd) {
    for (int32_t j = 0; j < nd->n_snaps; j++)
        free(nd->snaps[j].state);
    c->snap_bytes -= (size_t)nd->n_snaps * snap_bytes(c);
    free(nd->snaps);
    nd->snaps = NULL;
    nd->n_snaps = 0;
}
