/* batch_route.c: prefix-aware, load-bounded routing of a batch job's records
 * over several servers (the policy and its reasons: batch_route.h). */
#include "decide/batch_route.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "typellm/util.h"
#include "util/hash.h"

#define OWNER_SLOTS ((size_t)1 << 16) /* direct-mapped owner table: 1 MiB */

typedef struct owner_slot {
    uint64_t hash;   /* 0: empty (hashes are made nonzero) */
    uint64_t routes; /* bit r: route r has run a record with this prefix */
} owner_slot;

typedef struct route_state {
    int in_flight;     /* records sent there and not done */
    uint64_t assigned; /* records sent there so far */
    double out_until;  /* tl_now_s() before which it is out; 0: live */
} route_state;

struct batch_router {
    pthread_mutex_t mu;
    int n;
    route_state *routes; /* [n] */
    owner_slot *owners;  /* [OWNER_SLOTS] */
};

batch_router *batch_router_new(int n_routes) {
    batch_router *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->n = n_routes;
    r->routes = calloc((size_t)n_routes, sizeof *r->routes);
    r->owners = calloc(OWNER_SLOTS, sizeof *r->owners);
    if (!r->routes || !r->owners || n_routes < 1 || n_routes > BATCH_ROUTE_MAX) {
        batch_router_free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void batch_router_free(batch_router *r) {
    if (!r)
        return;
    if (r->routes && r->owners)
        pthread_mutex_destroy(&r->mu);
    free(r->routes);
    free(r->owners);
    free(r);
}

void batch_route_key(const char *head, size_t head_len, const char *text, size_t len, uint64_t *out, size_t max,
                     size_t *n) {
    size_t k = 0;
    uint64_t h = tl_hash_bytes(head ? head : "", head ? head_len : 0);
    if (k < max)
        out[k++] = h | 1;
    for (size_t off = 0; k < max && off < len; off += BATCH_ROUTE_BLOCK) {
        size_t b = len - off < BATCH_ROUTE_BLOCK ? len - off : BATCH_ROUTE_BLOCK;
        h = tl_hash_continue(h, text + off, b);
        out[k++] = h | 1;
    }
    *n = k;
}

static bool live(const batch_router *r, int i, double now) { return r->routes[i].out_until <= now; }

static owner_slot *slot_of(batch_router *r, uint64_t h) { return &r->owners[(h >> 17) & (OWNER_SLOTS - 1)]; }

/* Of the live routes in mask, the one with the fewest records in flight
 * (then the fewest so far, then the lowest index); -1 if none. */
static int least_loaded(const batch_router *r, uint64_t mask, double now) {
    int best = -1;
    for (int i = 0; i < r->n; i++) {
        if (!(mask >> i & 1) || !live(r, i, now))
            continue;
        const route_state *a = &r->routes[i];
        if (best < 0 || a->in_flight < r->routes[best].in_flight ||
            (a->in_flight == r->routes[best].in_flight && a->assigned < r->routes[best].assigned))
            best = i;
    }
    return best;
}

int batch_router_pick(batch_router *r, const uint64_t *h, size_t n) {
    double now = tl_now_s();
    pthread_mutex_lock(&r->mu);
    int n_live = 0, total = 0;
    for (int i = 0; i < r->n; i++) {
        n_live += live(r, i, now);
        total += r->routes[i].in_flight;
    }
    int pick = -1;
    if (n_live) {
        /* The least loaded holder of the longest remembered prefix, within
         * its bounded share. The head alone (a schema's title and
         * description: a few tokens) is not worth an imbalance. */
        for (size_t k = n; k-- > 1 && pick < 0;) {
            const owner_slot *s = slot_of(r, h[k]);
            if (s->hash == h[k])
                pick = least_loaded(r, s->routes, now);
        }
        int bound = (5 * (total + 1) + 4 * n_live - 1) / (4 * n_live) + 1; /* ceil(1.25 (total + 1) / live) + 1 */
        if (pick < 0 || r->routes[pick].in_flight + 1 > bound)
            pick = least_loaded(r, ~0ull, now);
        for (size_t k = 0; k < n; k++) {
            owner_slot *s = slot_of(r, h[k]);
            if (s->hash != h[k])
                *s = (owner_slot){h[k], 0};
            s->routes |= 1ull << pick;
        }
        r->routes[pick].in_flight++;
        r->routes[pick].assigned++;
    }
    pthread_mutex_unlock(&r->mu);
    return pick;
}

void batch_router_done(batch_router *r, int route) {
    pthread_mutex_lock(&r->mu);
    if (route >= 0 && route < r->n && r->routes[route].in_flight > 0)
        r->routes[route].in_flight--;
    pthread_mutex_unlock(&r->mu);
}

void batch_router_fail(batch_router *r, int route) {
    pthread_mutex_lock(&r->mu);
    if (route >= 0 && route < r->n)
        r->routes[route].out_until = tl_now_s() + BATCH_ROUTE_OUT_S;
    pthread_mutex_unlock(&r->mu);
}

uint64_t batch_router_assigned(batch_router *r, int route) {
    pthread_mutex_lock(&r->mu);
    uint64_t n = route >= 0 && route < r->n ? r->routes[route].assigned : 0;
    pthread_mutex_unlock(&r->mu);
    return n;
}
