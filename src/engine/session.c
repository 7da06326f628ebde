/* session.c: sessions: a thread pool, a KV prefix cache and the evaluation
 * calls of engine.h.
 *
 * An evaluation of K sequences runs in two steps: (1) the prefix all K share
 * is brought into the cache (computing only what is not there yet); (2) every
 * sequence finds its longest cached prefix and all K uncached tails run
 * together, in passes of at most UBATCH tokens, each tail attending to its
 * own path. Output positions always run through the model (a cache holds
 * K/V rows, not logits), so a fully cached sequence recomputes its last
 * token and rewrites that row with the same bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/forward.h"
#include "util/error.h"
#include "util/sample.h" /* tl_logsumexp_f */

#define UBATCH 512           /* tokens per forward pass */
#define LOGIT_GROUP 16       /* output rows turned into logits at a time */
/* A shared prefix gets a forward pass of its own when that saves at least
 * this many token computations; a pass over a few tokens costs about as much
 * as reading every weight once, so tiny shared bits are cheaper recomputed. */
#define MIN_SHARED_SAVING 64
#define MIN_DEFAULT_CACHE_MB 256
#define MAX_DEFAULT_CACHE_MB 1024

struct tl_session {
    const tl_model *m;
    tl_pool *pool;
    int32_t n_ctx;
    kv_cache cache;
    fwd_scratch scratch;
    kv_seq *seqs;            /* (cap_seqs) */
    size_t cap_seqs;
    fwd_token *toks;         /* (cap_toks) */
    size_t cap_toks;
    float *hidden;           /* (cap_hidden, n_embd) final states of output positions */
    size_t cap_hidden;
    float *logits;           /* (LOGIT_GROUP, n_vocab) */
};

/* One sequence of a run: n_out trailing positions want final states, which
 * land in hidden rows [hidden_row, hidden_row + n_out). */
typedef struct run_seq {
    const int32_t *ids;
    int32_t n;
    int32_t n_out;
    int32_t hidden_row;
} run_seq;

static const char *const CACHE_TYPE_NAMES[] = {[TL_CACHE_F32] = "f32", [TL_CACHE_F16] = "f16",
                                                [TL_CACHE_Q8_0] = "q8_0"};
enum { N_CACHE_TYPES = sizeof CACHE_TYPE_NAMES / sizeof CACHE_TYPE_NAMES[0] };

const char *tl_cache_type_name(tl_cache_type t) {
    return (unsigned)t < N_CACHE_TYPES ? CACHE_TYPE_NAMES[t] : NULL;
}

tl_status tl_cache_type_parse(const char *name, tl_cache_type *out, tl_error *err) {
    for (int i = 0; name && i < N_CACHE_TYPES; i++)
        if (!strcasecmp(name, CACHE_TYPE_NAMES[i])) {
            *out = (tl_cache_type)i;
            return TL_OK;
        }
    return tl_error_set(err, TL_ERR_INVALID, "unknown KV cache type '%s' (allowed: " TL_CACHE_TYPE_NAMES ")",
                        name ? name : "");
}

tl_status tl_session_new(const tl_model *m, const tl_session_params *params, tl_session **out, tl_error *err) {
    *out = NULL;
    tl_session_params p = {0};
    if (params)
        p = *params;
    if (p.n_ctx < 0)
        return tl_error_set(err, TL_ERR_INVALID, "session n_ctx %d is negative", p.n_ctx);
    if (p.n_ctx > m->n_ctx_train && !p.extend_ctx)
        return tl_error_set(err, TL_ERR_LIMIT, "session context of %d tokens exceeds the model's context length %d",
                            p.n_ctx, m->n_ctx_train);
    tl_session *s = calloc(1, sizeof *s);
    if (!s)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    s->m = m;
    s->n_ctx = p.n_ctx ? p.n_ctx : m->n_ctx_train;
    tl_status st = kv_cache_init(&s->cache, m, 0, p.cache_type_k, p.cache_type_v, err);
    if (st != TL_OK) {
        free(s);
        return st;
    }
    /* LongRoPE picks its factors by the context size, not the position (as llama.cpp does) */
    s->cache.rope_long = s->n_ctx > m->n_ctx_orig;
    size_t budget = p.cache_mb << 20;
    if (!p.cache_mb) {
        /* enough for the whole context, within sensible bounds */
        size_t blocks = ((size_t)s->n_ctx + TL_KV_BLOCK - 1) / TL_KV_BLOCK;
        budget = blocks * s->cache.node_bytes;
        if (budget < ((size_t)MIN_DEFAULT_CACHE_MB << 20))
            budget = (size_t)MIN_DEFAULT_CACHE_MB << 20;
        if (budget > ((size_t)MAX_DEFAULT_CACHE_MB << 20))
            budget = (size_t)MAX_DEFAULT_CACHE_MB << 20;
    }
    s->cache.budget_bytes = budget;
    s->pool = tl_pool_new(p.n_threads);
    s->logits = malloc(sizeof(float) * LOGIT_GROUP * (size_t)m->n_vocab);
    if (!s->pool || !s->logits) {
        tl_session_free(s);
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for a session");
    }
    *out = s;
    return TL_OK;
}

void tl_session_free(tl_session *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->cap_seqs; i++)
        kv_seq_free(&s->seqs[i]);
    free(s->seqs);
    free(s->toks);
    free(s->hidden);
    free(s->logits);
    fwd_scratch_free(&s->scratch);
    kv_cache_free(&s->cache);
    tl_pool_free(s->pool);
    free(s);
}

const tl_model *tl_session_model(const tl_session *s) { return s->m; }
void tl_session_flush(tl_session *s) { kv_cache_trim(&s->cache, 0); }
size_t tl_session_cache_bytes(const tl_session *s) { return kv_cache_bytes(&s->cache); }
size_t tl_session_cache_budget(const tl_session *s) { return s->cache.budget_bytes; }
double tl_session_cache_token_bytes(const tl_session *s) { return (double)s->cache.node_bytes / TL_KV_BLOCK; }
int tl_session_n_threads(const tl_session *s) { return tl_pool_size(s->pool); }

size_t tl_session_cached_prefix(const tl_session *s, const int32_t *ids, size_t n) {
    if (n > INT32_MAX)
        n = INT32_MAX;
    return (size_t)kv_cache_lookup(&s->cache, ids, (int32_t)n);
}

static tl_status grow(void **buf, size_t *cap, size_t need, size_t elem, tl_error *err) {
    if (need <= *cap)
        return TL_OK;
    size_t cap2 = *cap ? *cap : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*buf, cap2 * elem);
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    *buf = p;
    *cap = cap2;
    return TL_OK;
}

/* which: the input's index in a batch of n_seqs (messages name it only in a batch). */
static tl_status check_ids(const tl_session *s, const int32_t *ids, size_t n, size_t which, size_t n_seqs,
                           tl_error *err) {
    char what[48] = "the input";
    if (n_seqs > 1)
        snprintf(what, sizeof what, "input %zu of the batch", which);
    if (n == 0)
        return tl_error_set(err, TL_ERR_INVALID, "%s is empty", what);
    if (n > (size_t)s->n_ctx)
        return tl_error_set(err, TL_ERR_LIMIT, "%s has %zu tokens, more than the context length %d%s", what, n,
                            s->n_ctx, s->n_ctx == s->m->n_ctx_train ? " the model was trained for" : "");
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->m->n_vocab)
            return tl_error_set(err, TL_ERR_INVALID, "%s: token %zu has id %d, outside [0, %d) (the vocabulary)", what, i,
                                ids[i], s->m->n_vocab);
    return TL_OK;
}

/* Acquires paths for k sequences, runs their uncached (and output) positions
 * through the model, commits. *computed and *passes are added to. */
static tl_status run(tl_session *s, const run_seq *rs, size_t k, int64_t *computed, int64_t *passes,
                     tl_error *err) {
    tl_status st;
    if (s->cap_seqs < k) {
        size_t old = s->cap_seqs;
        kv_seq *p = realloc(s->seqs, k * sizeof *p);
        if (!p)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        memset(p + old, 0, (k - old) * sizeof *p);
        s->seqs = p;
        s->cap_seqs = k;
    }
    size_t acquired = 0, n_tok = 0, n_hidden = 0;
    for (; acquired < k; acquired++) {
        if ((st = kv_seq_acquire(&s->cache, rs[acquired].ids, rs[acquired].n, &s->seqs[acquired], err)) != TL_OK) {
            acquired++; /* a partial acquire is undone like a full one */
            goto fail;
        }
    }
    /* recurrent layers resume only from a state snapshot: at or before the
     * first position to compute; they snapshot where these outputs start */
    for (size_t i = 0; s->cache.state_floats && i < k; i++) {
        kv_seq *q = &s->seqs[i];
        int32_t out_from = rs[i].n - rs[i].n_out, want = q->matched < out_from ? q->matched : out_from;
        q->matched = kv_rstate_resume(&s->cache, q, want, err, &st);
        if (st != TL_OK)
            goto fail;
        q->rsnap_pos = rs[i].n_out > 0 && out_from > q->matched ? out_from : -1;
    }
    for (size_t i = 0; i < k; i++) {
        int32_t from = s->seqs[i].matched, out_from = rs[i].n - rs[i].n_out;
        if (from > out_from)
            from = out_from;
        n_tok += (size_t)(rs[i].n - from);
        if ((size_t)rs[i].hidden_row + (size_t)rs[i].n_out > n_hidden)
            n_hidden = (size_t)rs[i].hidden_row + (size_t)rs[i].n_out;
    }
    if ((st = grow((void **)&s->toks, &s->cap_toks, n_tok, sizeof *s->toks, err)) != TL_OK ||
        (st = grow((void **)&s->hidden, &s->cap_hidden, n_hidden * (size_t)s->m->n_embd, sizeof(float), err)) !=
            TL_OK)
        goto fail;
    size_t t = 0;
    for (size_t i = 0; i < k; i++) {
        int32_t from = s->seqs[i].matched, out_from = rs[i].n - rs[i].n_out;
        if (from > out_from)
            from = out_from;
        for (int32_t p = from; p < rs[i].n; p++, t++)
            s->toks[t] = (fwd_token){.id = rs[i].ids[p],
                                     .pos = p,
                                     .seq = &s->seqs[i],
                                     .out = p >= out_from ? rs[i].hidden_row + (p - out_from) : -1};
    }
    for (size_t b = 0; b < n_tok; b += UBATCH) {
        int32_t len = (int32_t)(n_tok - b < UBATCH ? n_tok - b : UBATCH);
        if ((st = tl_forward(s->m, s->pool, &s->cache, &s->scratch, s->toks + b, len, s->hidden, err)) != TL_OK)
            goto fail;
        (*passes)++;
    }
    *computed += (int64_t)n_tok;
    for (size_t i = 0; s->cache.state_floats && i < k; i++) {
        kv_seq *q = &s->seqs[i];
        if ((st = kv_rstate_store(&s->cache, q, rs[i].n, q->rstate, err)) != TL_OK ||
            (q->rsnap_pos > 0 && (st = kv_rstate_store(&s->cache, q, q->rsnap_pos, q->rsnap, err)) != TL_OK))
            goto fail;
    }
    for (size_t i = 0; i < k; i++)
        kv_seq_commit(&s->cache, &s->seqs[i]);
    return TL_OK;
fail:
    while (acquired > 0) {
        acquired--;
        kv_seq_abort(&s->cache, &s->seqs[acquired]);
    }
    return st;
}

static void account(tl_usage *usage, int64_t prompt, int64_t computed, int64_t passes) {
    if (!usage)
        return;
    usage->prompt_tokens += prompt;
    usage->computed_tokens += computed;
    usage->cached_tokens += prompt > computed ? prompt - computed : 0;
    usage->forward_passes += passes;
}

/* log-softmax of one logits row at the candidate ids; the normalizer in double. */
static void cand_logprobs(const float *row, int32_t n_vocab, const tl_seq *q) {
    double lse = tl_logsumexp_f(row, (size_t)n_vocab);
    for (size_t c = 0; c < q->n_cands; c++)
        q->cand_logprobs[c] = (double)row[q->cands[c]] - lse;
}

static int compare_seq_ids(const void *a, const void *b) {
    const tl_seq *x = *(const tl_seq *const *)a, *y = *(const tl_seq *const *)b;
    size_t n = x->n < y->n ? x->n : y->n;
    for (size_t i = 0; i < n; i++)
        if (x->ids[i] != y->ids[i])
            return x->ids[i] < y->ids[i] ? -1 : 1;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* Brings every prefix that two or more of the k sequences share into the
 * cache, each computed once. In id order, the prefix sequences i and i+1
 * share (length lcp[i]) is a node of the batch's prefix tree. A round runs,
 * as one batch, the uncached nodes that contain no other uncached node; their
 * uncached parts are disjoint (what two of them share is a node between them
 * in that order, itself uncached and contained in both). Then the next
 * round, until every shared node is cached: one pass for a common context,
 * one more per level of nesting (e.g. requests of different contexts merged
 * into one batch, each with its branches). Nodes saving fewer than
 * MIN_SHARED_SAVING token computations are left to the tails' pass. */
static tl_status prefill_shared(tl_session *s, const tl_seq *seqs, size_t k, int64_t *computed, int64_t *passes,
                                tl_error *err) {
    tl_status st = TL_OK;
    const tl_seq **order = malloc(k * sizeof *order);
    int32_t *lcp = malloc(k * sizeof *lcp);     /* lcp[i]: order[i] vs order[i+1] */
    size_t *pending = malloc(k * sizeof *pending); /* pair indices */
    bool *blocked = malloc(k * sizeof *blocked);
    run_seq *rs = malloc(k * sizeof *rs);
    if (!order || !lcp || !pending || !blocked || !rs) {
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < k; i++)
        order[i] = &seqs[i];
    qsort(order, k, sizeof *order, compare_seq_ids);
    for (size_t i = 0; i + 1 < k; i++) {
        size_t n = order[i]->n < order[i + 1]->n ? order[i]->n : order[i + 1]->n, j = 0;
        while (j < n && order[i]->ids[j] == order[i + 1]->ids[j])
            j++;
        lcp[i] = (int32_t)j;
    }
    for (size_t round = 0; round < k; round++) {
        size_t n_pending = 0;
        for (size_t i = 0; i + 1 < k; i++) {
            if (lcp[i] == 0)
                continue;
            int32_t cached = kv_cache_lookup(&s->cache, order[i]->ids, lcp[i]);
            if (cached >= lcp[i])
                continue;
            /* worth a pass of its own only if it saves enough recomputation:
             * (sequences sharing it - 1) x its uncached tokens */
            size_t lo = i, hi = i + 1;
            while (lo > 0 && lcp[lo - 1] >= lcp[i])
                lo--;
            while (hi + 1 < k && lcp[hi] >= lcp[i])
                hi++;
            if ((hi - lo) * (size_t)(lcp[i] - cached) < MIN_SHARED_SAVING)
                continue;
            /* the same node seen from an earlier pair: same length, nothing shorter between */
            bool dup = false;
            int32_t mn = lcp[i];
            for (size_t b = n_pending, cur = i; b > 0 && !dup && mn >= lcp[i]; b--) {
                size_t p = pending[b - 1];
                for (size_t j = p; j < cur; j++)
                    mn = lcp[j] < mn ? lcp[j] : mn;
                cur = p;
                dup = lcp[p] == lcp[i] && mn >= lcp[i];
            }
            if (!dup)
                pending[n_pending++] = i;
        }
        if (!n_pending)
            break;
        /* X waits if an uncached Y shorter than X is a prefix of X:
         * min(lcp between them) >= len(Y) */
        for (size_t a = 0; a < n_pending; a++)
            blocked[a] = false;
        for (size_t a = 0; a < n_pending; a++) {
            size_t x = pending[a];
            for (int dir = -1; dir <= 1; dir += 2) {
                int32_t mn = lcp[x]; /* min of lcp[] from x to the current y */
                size_t cur = x;
                for (size_t b = a; dir < 0 ? b > 0 : b + 1 < n_pending;) {
                    b = dir < 0 ? b - 1 : b + 1;
                    size_t y = pending[b];
                    for (size_t j = dir < 0 ? y : cur + 1; j <= (dir < 0 ? cur - 1 : y); j++)
                        mn = lcp[j] < mn ? lcp[j] : mn;
                    cur = y;
                    if (lcp[y] < lcp[x] && mn >= lcp[y]) {
                        blocked[a] = true;
                        break;
                    }
                    if (mn == 0)
                        break;
                }
            }
        }
        size_t n_run = 0;
        for (size_t a = 0; a < n_pending; a++)
            if (!blocked[a])
                rs[n_run++] = (run_seq){.ids = order[pending[a]]->ids, .n = lcp[pending[a]], .n_out = 0};
        if ((st = run(s, rs, n_run, computed, passes, err)) != TL_OK)
            break;
    }
done:
    free(rs);
    free(blocked);
    free(pending);
    free(lcp);
    free(order);
    return st;
}

tl_status tl_session_eval_batch(tl_session *s, tl_seq *seqs, size_t k, tl_usage *usage, tl_error *err) {
    tl_status st;
    if (k == 0)
        return TL_OK;
    if (k > (size_t)INT32_MAX / 2)
        return tl_error_set(err, TL_ERR_LIMIT, "%zu sequences in one batch", k);
    int64_t prompt = 0, computed = 0, passes = 0;
    for (size_t i = 0; i < k; i++) {
        if ((st = check_ids(s, seqs[i].ids, seqs[i].n, i, k, err)) != TL_OK)
            return st;
        if (seqs[i].n_cands && (!seqs[i].cands || !seqs[i].cand_logprobs))
            return tl_error_set(err, TL_ERR_INVALID, "sequence %zu: candidates without cands/cand_logprobs", i);
        for (size_t c = 0; c < seqs[i].n_cands; c++)
            if (seqs[i].cands[c] < 0 || seqs[i].cands[c] >= s->m->n_vocab)
                return tl_error_set(err, TL_ERR_INVALID, "sequence %zu: candidate %zu has id %d, outside [0, %d)", i,
                                    c, seqs[i].cands[c], s->m->n_vocab);
        prompt += (int64_t)seqs[i].n;
    }
    /* (1) every prefix several sequences share, computed once */
    if (k > 1 && (st = prefill_shared(s, seqs, k, &computed, &passes, err)) != TL_OK)
        return st;
    /* (2) every tail in one batch */
    run_seq *rs = calloc(k, sizeof *rs);
    if (!rs)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    int32_t rows = 0;
    for (size_t i = 0; i < k; i++) {
        bool wants = seqs[i].logits || seqs[i].n_cands;
        rs[i] = (run_seq){.ids = seqs[i].ids, .n = (int32_t)seqs[i].n, .n_out = wants ? 1 : 0, .hidden_row = rows};
        rows += wants;
    }
    st = run(s, rs, k, &computed, &passes, err);
    if (st == TL_OK) {
        /* logits a group of rows at a time (row results do not depend on grouping) */
        int32_t n_vocab = s->m->n_vocab;
        size_t i = 0;
        for (int32_t r0 = 0; r0 < rows; r0 += LOGIT_GROUP) {
            int32_t n_rows = rows - r0 < LOGIT_GROUP ? rows - r0 : LOGIT_GROUP;
            tl_forward_logits(s->m, s->pool, s->hidden + (size_t)r0 * s->m->n_embd, n_rows, s->logits);
            for (; i < k && (rs[i].n_out == 0 || rs[i].hidden_row < r0 + n_rows); i++) {
                if (!rs[i].n_out)
                    continue;
                const float *row = s->logits + (size_t)(rs[i].hidden_row - r0) * n_vocab;
                if (seqs[i].logits)
                    memcpy(seqs[i].logits, row, sizeof(float) * (size_t)n_vocab);
                if (seqs[i].n_cands)
                    cand_logprobs(row, n_vocab, &seqs[i]);
            }
        }
    }
    free(rs);
    kv_cache_trim(&s->cache, s->cache.budget_bytes);
    if (st == TL_OK)
        account(usage, prompt, computed, passes);
    return st;
}

tl_status tl_session_eval(tl_session *s, const int32_t *ids, size_t n, float *logits, tl_usage *usage,
                          tl_error *err) {
    tl_seq q = {.ids = ids, .n = n, .logits = logits};
    if (!logits) {
        /* cache only: no output position needed */
        tl_status st = check_ids(s, ids, n, 0, 1, err);
        if (st != TL_OK)
            return st;
        int64_t computed = 0, passes = 0;
        run_seq rs = {.ids = ids, .n = (int32_t)n, .n_out = 0, .hidden_row = 0};
        st = run(s, &rs, 1, &computed, &passes, err);
        kv_cache_trim(&s->cache, s->cache.budget_bytes);
        if (st == TL_OK)
            account(usage, (int64_t)n, computed, passes);
        return st;
    }
    return tl_session_eval_batch(s, &q, 1, usage, err);
}

tl_status tl_session_eval_last(tl_session *s, const int32_t *ids, size_t n, size_t k_last, float *logits,
                               tl_usage *usage, tl_error *err) {
    tl_status st = check_ids(s, ids, n, 0, 1, err);
    if (st != TL_OK)
        return st;
    if (k_last == 0 || k_last > n)
        return tl_error_set(err, TL_ERR_INVALID, "asked for the last %zu positions of %zu tokens", k_last, n);
    int64_t computed = 0, passes = 0;
    run_seq rs = {.ids = ids, .n = (int32_t)n, .n_out = (int32_t)k_last, .hidden_row = 0};
    st = run(s, &rs, 1, &computed, &passes, err);
    if (st == TL_OK)
        tl_forward_logits(s->m, s->pool, s->hidden, (int32_t)k_last, logits);
    kv_cache_trim(&s->cache, s->cache.budget_bytes);
    if (st == TL_OK)
        account(usage, (int64_t)n, computed, passes);
    return st;
}

tl_status tl_session_pin(tl_session *s, const int32_t *ids, size_t n, tl_usage *usage, tl_error *err) {
    tl_status st = check_ids(s, ids, n, 0, 1, err);
    if (st != TL_OK)
        return st;
    int64_t computed = 0, passes = 0;
    run_seq rs = {.ids = ids, .n = (int32_t)n, .n_out = 0, .hidden_row = 0};
    if ((st = run(s, &rs, 1, &computed, &passes, err)) != TL_OK)
        return st;
    kv_cache_pin(&s->cache, ids, (int32_t)n, +1); /* before trimming, so it stays */
    kv_cache_trim(&s->cache, s->cache.budget_bytes);
    account(usage, (int64_t)n, computed, passes);
    return TL_OK;
}

void tl_session_unpin(tl_session *s, const int32_t *ids, size_t n) {
    if (n > (size_t)s->n_ctx)
        return;
    kv_cache_pin(&s->cache, ids, (int32_t)n, -1);
    kv_cache_trim(&s->cache, s->cache.budget_bytes);
}
