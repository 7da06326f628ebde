/* test_batch_route.c: the batch job's prefix-aware router (decide/batch_route.h):
 * prefix keys, groups kept on one route, the load bound, routes taken out. */
#include <stdio.h>
#include <string.h>

#include "decide/batch_route.h"
#include "tl_test.h"

static const char *SCHEMA = "{\"type\":\"object\"}";

/* A record's key: a shared instruction of group g, then its own text. */
static size_t key_of(int g, int i, uint64_t *h) {
    char text[512];
    snprintf(text, sizeof text, "%s. Record %d: a ticket about something else entirely, number %d.",
             g ? "Beta support desk: read the message below and sort it into the right queue, carefully"
               : "Acme Cloud support desk: read the customer ticket below and triage it, then answer",
             i, i * 7);
    size_t n = 0;
    batch_route_key(SCHEMA, strlen(SCHEMA), text, strlen(text), h, BATCH_ROUTE_MAX_BLOCKS, &n);
    return n;
}

static void test_keys(void) {
    uint64_t a[BATCH_ROUTE_MAX_BLOCKS], b[BATCH_ROUTE_MAX_BLOCKS], c[BATCH_ROUTE_MAX_BLOCKS];
    size_t na = key_of(0, 1, a), nb = key_of(0, 2, b), nc = key_of(1, 1, c);
    CHECK(na >= 3 && nb >= 3 && nc >= 3);
    CHECK(a[0] == b[0] && a[0] == c[0]); /* the schema */
    CHECK(a[1] == b[1]);                 /* the group's first 64 bytes */
    CHECK(a[1] != c[1]);
    CHECK(a[na - 1] != b[nb - 1]); /* the records' own text */
    uint64_t d[BATCH_ROUTE_MAX_BLOCKS];
    size_t nd = 0;
    batch_route_key("{}", 2, SCHEMA, strlen(SCHEMA), d, BATCH_ROUTE_MAX_BLOCKS, &nd);
    CHECK(d[0] != a[0]); /* another schema, another key from the start */
    char big[BATCH_ROUTE_BLOCK * (BATCH_ROUTE_MAX_BLOCKS + 8)];
    memset(big, 'x', sizeof big);
    batch_route_key(NULL, 0, big, sizeof big, d, BATCH_ROUTE_MAX_BLOCKS, &nd);
    CHECK(nd == BATCH_ROUTE_MAX_BLOCKS);
    for (size_t i = 0; i < nd; i++)
        CHECK(d[i] != 0);
}

/* Two groups interleaved, 6 in flight: each group on one route, the two apart. */
static void test_groups(void) {
    batch_router *r = batch_router_new(3);
    CHECK(r != NULL);
    int seen[2][3] = {{0}};
    int flight[6], head = 0;
    for (int i = 0; i < 60; i++) {
        uint64_t h[BATCH_ROUTE_MAX_BLOCKS];
        size_t n = key_of(i % 2, i, h);
        if (i >= 6)
            batch_router_done(r, flight[head % 6]); /* the oldest finishes */
        int route = batch_router_pick(r, h, n);
        CHECK(route >= 0 && route < 3);
        flight[head++ % 6] = route;
        seen[i % 2][route]++;
    }
    for (int g = 0; g < 2; g++) {
        int used = 0;
        for (int k = 0; k < 3; k++)
            used += seen[g][k] > 0;
        CHECKF(used == 1, "group %d on %d routes (%d %d %d)", g, used, seen[g][0], seen[g][1], seen[g][2]);
    }
    for (int k = 0; k < 3; k++)
        CHECKF(!(seen[0][k] && seen[1][k]), "both groups on route %d", k);
    batch_router_free(r);
}

/* One group only, nothing finishing: the holder takes its bounded share
 * (ceil(1.25 (in flight + 1) / 2) + 1), the rest spill to the other route,
 * which then holds the prefix too: the group balances over both. */
static void test_bound(void) {
    batch_router *r = batch_router_new(2);
    int count[2] = {0};
    uint64_t h[BATCH_ROUTE_MAX_BLOCKS];
    for (int i = 0; i < 8; i++)
        count[batch_router_pick(r, h, key_of(0, i, h))]++;
    CHECKF(count[0] == 5 && count[1] == 3, "%d / %d", count[0], count[1]);
    for (int i = 8; i < 12; i++)
        count[batch_router_pick(r, h, key_of(0, i, h))]++;
    CHECKF(count[0] == 6 && count[1] == 6, "%d / %d", count[0], count[1]);
    CHECK(batch_router_assigned(r, 0) == 6);
    batch_router_free(r);
    CHECK(batch_router_new(0) == NULL);
    CHECK(batch_router_new(BATCH_ROUTE_MAX + 1) == NULL);
}

/* A failed route is out: its group moves; none left: -1. */
static void test_fail(void) {
    batch_router *r = batch_router_new(2);
    uint64_t h[BATCH_ROUTE_MAX_BLOCKS];
    size_t n = key_of(0, 1, h);
    int first = batch_router_pick(r, h, n);
    batch_router_done(r, first);
    batch_router_fail(r, first);
    int second = batch_router_pick(r, h, n);
    CHECK(second == 1 - first);
    batch_router_done(r, second);
    CHECK(batch_router_pick(r, h, n) == second); /* the group now stays there */
    batch_router_done(r, second);
    batch_router_fail(r, second);
    CHECK(batch_router_pick(r, h, n) == -1);
    batch_router_free(r);
}

int main(void) {
    test_keys();
    test_groups();
    test_bound();
    test_fail();
    return TEST_DONE();
}
