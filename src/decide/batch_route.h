/* batch_route.h: which server a record of tl_batch_run goes to when the job
 * runs on several (tl_batch_params.n_routes > 1): prefix-aware, load-bounded
 * routing, so that records whose prompts begin alike meet the server whose
 * prefix cache already holds that beginning.
 *
 * The affinity key of a record is a chain of block hashes over the text its
 * prompt starts with: its schema (the rendered prompt opens with the
 * schema's title and description, and the instructions and questions follow
 * from the schema), then its context in BATCH_ROUTE_BLOCK-byte blocks, up to
 * BATCH_ROUTE_MAX_BLOCKS of them (an OpenAI line: its url, then its body).
 * Hash i covers everything up to the end of block i, so two records share
 * hash i exactly when they share their first i blocks (up to collisions of a
 * 64-bit hash). The router remembers, per hash, the routes that have run a
 * record with that prefix (an owner table of fixed size, direct-mapped: an
 * entry overwritten by another hash is forgotten, never wrong). A record goes
 * to the least loaded of the routes holding its longest remembered prefix
 * (a prefix of the head alone does not count: the schema's part of the
 * prompt before the context is a few tokens),
 * unless that one already runs more than its bounded share of the records in
 * flight, ceil(1.25 * (in flight + 1) / live routes) + 1 (consistent hashing
 * with bounded loads, Mirrokni et al. 2018, plus one record of slack so a
 * small job's group is not split); otherwise, and for a prefix never seen,
 * to the live route with the fewest records in flight (ties: fewest records
 * so far, then the lowest index). The route taken joins the holders of every
 * block of the record: a group that overflows is then held by two routes and
 * balanced over both, so a job whose records all share one prefix still
 * spreads over every server.
 *
 * A route whose server fails (network error or timeout) is taken out for
 * BATCH_ROUTE_OUT_S seconds, then tried again; its records are retried on
 * the others. Thread-safe: one mutex; every call is O(blocks). */
#ifndef TL_DECIDE_BATCH_ROUTE_H
#define TL_DECIDE_BATCH_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#define BATCH_ROUTE_BLOCK 64        /* bytes of prefix per hash */
#define BATCH_ROUTE_MAX_BLOCKS 64   /* hashes per record: 4 KiB of prefix */
#define BATCH_ROUTE_OUT_S 30.0      /* how long a failed route stays out */

typedef struct batch_router batch_router;

#define BATCH_ROUTE_MAX 64           /* routes a router takes */

/* NULL when out of memory or n_routes is not in 1..BATCH_ROUTE_MAX. */
batch_router *batch_router_new(int n_routes);
void batch_router_free(batch_router *r);

/* The record's prefix hashes: head[0..head_len) (its schema or url) as one
 * block, then text[0..len) in blocks; *n gets how many (<= max). */
void batch_route_key(const char *head, size_t head_len, const char *text, size_t len, uint64_t *out, size_t max,
                     size_t *n);

/* The route for a record with prefix hashes h[0..n); it counts as in flight
 * there until batch_router_done. -1 when every route is out. */
int batch_router_pick(batch_router *r, const uint64_t *h, size_t n);
/* The record sent to route has finished (ok or not). */
void batch_router_done(batch_router *r, int route);
/* route's server failed: out for BATCH_ROUTE_OUT_S seconds. */
void batch_router_fail(batch_router *r, int route);
/* Records route has been given so far (retries counted where they ran). */
uint64_t batch_router_assigned(batch_router *r, int route);

#endif
