/* number_index.c: the per-vocabulary token index and the number automaton.
 *
 * Why an index: a mask must cost microseconds on a 150k vocabulary, so no
 * step may look at every token. Each token is classified once by the shape
 * of its bytes:
 *   - plain digit runs of length 1..4, with or without one leading space:
 *     kept in value order (dig[lead][L]), so a step turns the range into
 *     intervals of values per possible final length and emits those ids;
 *   - other number-only tokens ("-", ".", "5.", "-12", 5+ digit runs): a
 *     short list checked one by one;
 *   - tokens that may close a value: number characters (possibly none) then
 *     other bytes, bucketed by the first of those bytes, so an automaton
 *     picks the few that can start its terminator once, at creation;
 *   - everything else never appears in a number mask.
 * Qwen2 splits digits one per token, llama3 groups up to three; both land in
 * the digit tables. */
#include <stdlib.h>
#include <string.h>

#include "constrain/number_core.h"
#include "util/error.h"

#define DIG_MAX_LEN 4 /* digit runs up to this length get value tables */

typedef struct closer {
    int32_t id;
    uint32_t num_len; /* bytes of number characters (leading space included) before the rest */
    uint8_t first;    /* the first byte of the rest (the bucket) */
} closer;

struct tl_number_index {
    int32_t n_tokens;
    char *bytes;    /* all token bytes back to back */
    uint32_t *off;  /* token i: bytes[off[i] .. off[i+1]) ; n_tokens + 1 entries */
    /* dig[lead][L]: ids of tokens that are exactly (lead ? " " : "") + L digits,
     * sorted by value; first[lead][L][v] .. first[lead][L][v+1] index them. */
    int32_t *dig_ids[2][DIG_MAX_LEN + 1];
    int32_t *dig_first[2][DIG_MAX_LEN + 1];
    size_t dig_count[2][DIG_MAX_LEN + 1];
    int32_t *misc; /* other tokens made only of number characters (and a leading space) */
    size_t n_misc;
    closer *closers; /* sorted by the first byte after the number characters */
    size_t n_closers;
    uint32_t bucket[257]; /* closers[bucket[c] .. bucket[c+1]) have rest starting with byte c */
};

static bool is_num_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '.'; }

/* Length of the longest prefix shaped like [ ]?-?[0-9]*(\.[0-9]*)? */
static size_t numeric_prefix(const char *b, size_t n) {
    size_t i = 0;
    if (i < n && b[i] == ' ')
        i++;
    if (i < n && b[i] == '-')
        i++;
    while (i < n && b[i] >= '0' && b[i] <= '9')
        i++;
    if (i < n && b[i] == '.') {
        i++;
        while (i < n && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    return i;
}

static size_t vocab_token_bytes(void *ctx, int32_t id, char *buf, size_t cap) {
    const tl_vocab *v = ctx;
    tl_token_attr at = tl_vocab_token_attr(v, id);
    if (at == TL_TOKEN_CONTROL || at == TL_TOKEN_UNUSED)
        return 0;
    return tl_vocab_token_bytes(v, id, false, buf, cap);
}

tl_status tl_number_index_new(const tl_vocab *v, tl_number_index **out, tl_error *err) {
    return tl_number_index_new_custom(tl_vocab_n_tokens(v), vocab_token_bytes, (void *)v, out, err);
}

static tl_status build_for_memo(const tl_vocab *v, void **out, tl_error *err) {
    tl_number_index *idx = NULL;
    tl_status st = tl_number_index_new(v, &idx, err);
    *out = idx;
    return st;
}

static void free_for_memo(void *idx) { tl_number_index_free(idx); }

tl_status tl_number_index_of(const tl_vocab *v, const tl_number_index **out, tl_error *err) {
    void *idx = NULL;
    tl_status st = tl_vocab_memo(v, TL_VOCAB_MEMO_NUMBER_INDEX, build_for_memo, free_for_memo, &idx, err);
    *out = idx;
    return st;
}

void tl_number_index_free(tl_number_index *idx) {
    if (!idx)
        return;
    free(idx->bytes);
    free(idx->off);
    for (int l = 0; l < 2; l++)
        for (int L = 0; L <= DIG_MAX_LEN; L++) {
            free(idx->dig_ids[l][L]);
            free(idx->dig_first[l][L]);
        }
    free(idx->misc);
    free(idx->closers);
    free(idx);
}

int32_t tl_number_index_n_tokens(const tl_number_index *idx) { return idx->n_tokens; }

const char *tl_number_index_token(const tl_number_index *idx, int32_t id, size_t *len) {
    if (id < 0 || id >= idx->n_tokens) {
        *len = 0;
        return "";
    }
    *len = idx->off[id + 1] - idx->off[id];
    return idx->bytes + idx->off[id];
}

static int cmp_closer(const void *x, const void *y) {
    const closer *a = x, *b = y;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

tl_status tl_number_index_new_custom(int32_t n_tokens, tl_token_bytes_fn token_bytes, void *ctx,
                                     tl_number_index **out, tl_error *err) {
    *out = NULL;
    if (n_tokens <= 0 || n_tokens > (1 << 24))
        return tl_error_set(err, TL_ERR_INVALID, "number index: vocabulary size %d out of range", (int)n_tokens);
    tl_number_index *idx = calloc(1, sizeof *idx);
    if (!idx)
        return tl_error_set(err, TL_ERR_NOMEM, "number index: out of memory");
    idx->n_tokens = n_tokens;
    idx->off = malloc(((size_t)n_tokens + 1) * sizeof *idx->off);
    tl_strbuf all = TL_STRBUF_INIT;
    char small[256];
    tl_status st = TL_OK;
    if (!idx->off)
        goto nomem;
    /* 1. bytes of every token */
    for (int32_t id = 0; id < n_tokens; id++) {
        idx->off[id] = (uint32_t)all.len;
        size_t n = token_bytes(ctx, id, small, sizeof small);
        if (n > sizeof small) {
            char *big = malloc(n);
            if (!big)
                goto nomem;
            token_bytes(ctx, id, big, n);
            bool ok = tl_strbuf_append(&all, big, n);
            free(big);
            if (!ok)
                goto nomem;
        } else if (n && !tl_strbuf_append(&all, small, n)) {
            goto nomem;
        }
        if (all.len > UINT32_MAX / 2) {
            st = tl_error_set(err, TL_ERR_LIMIT, "number index: token bytes exceed 2 GiB");
            goto fail;
        }
    }
    idx->off[n_tokens] = (uint32_t)all.len;
    idx->bytes = all.buf ? tl_strbuf_detach(&all) : calloc(1, 1);
    if (!idx->bytes)
        goto nomem;

    /* 2. classify: count, then fill */
    size_t n_misc = 0, n_closers = 0;
    for (int pass = 0; pass < 2; pass++) {
        n_misc = n_closers = 0;
        size_t fill[2][DIG_MAX_LEN + 1] = {{0}};
        for (int32_t id = 0; id < n_tokens; id++) {
            size_t len;
            const char *b = tl_number_index_token(idx, id, &len);
            if (len == 0)
                continue;
            size_t p = numeric_prefix(b, len);
            if (b[0] == ' ') {
                /* the same token read as "the rest starts here" (a terminator that begins with a space) */
                if (pass == 1)
                    idx->closers[n_closers] = (closer){id, 0, (uint8_t)b[0]};
                n_closers++;
            }
            if (p < len) {
                if (p == 0 || b[0] != ' ' || p > 1) {
                    if (pass == 1)
                        idx->closers[n_closers] = (closer){id, (uint32_t)p, (uint8_t)b[p]};
                    n_closers++;
                }
                continue;
            }
            /* number characters only */
            int lead = b[0] == ' ';
            size_t L = len - (size_t)lead;
            bool digits = L >= 1 && L <= DIG_MAX_LEN;
            for (size_t i = (size_t)lead; digits && i < len; i++)
                digits = b[i] >= '0' && b[i] <= '9';
            if (digits) {
                if (pass == 1) {
                    int v = 0;
                    for (size_t i = (size_t)lead; i < len; i++)
                        v = v * 10 + (b[i] - '0');
                    /* placed by counting sort on v below */
                    idx->dig_ids[lead][L][fill[lead][L]] = v; /* value first; ids set after */
                }
                fill[lead][L]++;
            } else {
                if (pass == 1)
                    idx->misc[n_misc] = id;
                n_misc++;
            }
        }
        if (pass == 0) {
            idx->misc = malloc((n_misc ? n_misc : 1) * sizeof *idx->misc);
            idx->closers = malloc((n_closers ? n_closers : 1) * sizeof *idx->closers);
            if (!idx->misc || !idx->closers)
                goto nomem;
            for (int l = 0; l < 2; l++)
                for (int L = 1; L <= DIG_MAX_LEN; L++) {
                    idx->dig_count[l][L] = fill[l][L];
                    if (!fill[l][L])
                        continue;
                    size_t nv = (size_t)num_pow10(L);
                    idx->dig_ids[l][L] = malloc(fill[l][L] * sizeof(int32_t));
                    idx->dig_first[l][L] = calloc(nv + 1, sizeof(int32_t));
                    if (!idx->dig_ids[l][L] || !idx->dig_first[l][L])
                        goto nomem;
                }
        }
    }
    idx->n_misc = n_misc;
    idx->n_closers = n_closers;

    /* 3. digit tables: counting sort by value (ids in ascending order per value) */
    for (int l = 0; l < 2; l++)
        for (int L = 1; L <= DIG_MAX_LEN; L++) {
            size_t cnt = idx->dig_count[l][L];
            if (!cnt)
                continue;
            size_t nv = (size_t)num_pow10(L);
            int32_t *first = idx->dig_first[l][L];
            int32_t *vals = idx->dig_ids[l][L];
            for (size_t i = 0; i < cnt; i++)
                first[vals[i] + 1]++;
            for (size_t v = 0; v < nv; v++)
                first[v + 1] += first[v];
            int32_t *pos = malloc(nv * sizeof *pos);
            if (!pos)
                goto nomem;
            memcpy(pos, first, nv * sizeof *pos);
            /* walk the vocabulary again in id order to place ids */
            for (int32_t id = 0; id < n_tokens; id++) {
                size_t len;
                const char *b = tl_number_index_token(idx, id, &len);
                if ((size_t)l + (size_t)L != len || (l && b[0] != ' ') || (!l && b[0] == ' '))
                    continue;
                int v = 0;
                bool ok = true;
                for (size_t i = (size_t)l; i < len && ok; i++) {
                    ok = b[i] >= '0' && b[i] <= '9';
                    v = v * 10 + (b[i] - '0');
                }
                if (ok)
                    vals[pos[v]++] = id;
            }
            free(pos);
        }

    /* 4. closers bucketed by the first byte after the number characters */
    qsort(idx->closers, idx->n_closers, sizeof *idx->closers, cmp_closer);
    {
        size_t j = 0;
        for (int c = 0; c < 256; c++) {
            idx->bucket[c] = (uint32_t)j;
            while (j < idx->n_closers) {
                if (idx->closers[j].first != c)
                    break;
                j++;
            }
        }
        idx->bucket[256] = (uint32_t)j;
    }
    *out = idx;
    return TL_OK;
nomem:
    st = tl_error_set(err, TL_ERR_NOMEM, "number index: out of memory");
fail:
    tl_strbuf_free(&all);
    tl_number_index_free(idx);
    return st;
}

/* ===== the automaton ==================================================== */

enum { PH_NUM, PH_TERM, PH_DONE };

struct tl_number_automaton {
    const tl_number_index *idx;
    const tl_number_spec *spec;
    char *term;              /* terminator bytes (NULL: none) */
    size_t term_len;
    int32_t *term_ids;       /* terminator ids not already among pure_closers */
    size_t n_term_ids;
    bool allow_lead, allow_tail;
    int32_t *pure_closers;   /* tokens that are (a start of) the terminator with no number characters */
    size_t n_pure;
    const closer **num_closers; /* number characters then (a start of) the terminator */
    size_t n_numc;
    /* state */
    int phase;
    numstate st;
    bool started;            /* a byte (space or number character) has been taken */
    size_t term_pos;         /* PH_TERM: terminator bytes matched */
    bool closed_by_id;
    char text[64];
    size_t text_len;
    tl_strbuf tail;
};

/* Does `rest` fit the terminator from position `from`: a proper prefix of what
 * is left, or all of it followed by a tail (when allowed)? */
static bool rest_fits(const tl_number_automaton *a, size_t from, const char *rest, size_t n) {
    size_t left = a->term_len - from;
    if (n < left)
        return memcmp(rest, a->term + from, n) == 0;
    if (memcmp(rest, a->term + from, left) != 0)
        return false;
    return n == left || a->allow_tail;
}

tl_status tl_number_automaton_new(const tl_number_index *idx, const tl_number_spec *spec,
                                  const tl_number_close *close, tl_number_automaton **out, tl_error *err) {
    *out = NULL;
    tl_number_automaton *a = calloc(1, sizeof *a);
    if (!a)
        return tl_error_set(err, TL_ERR_NOMEM, "number automaton: out of memory");
    a->idx = idx;
    a->spec = spec;
    a->allow_lead = close->allow_leading_space;
    a->allow_tail = close->allow_tail;
    tl_status st = TL_OK;
    if (close->terminator) {
        size_t tl = close->terminator_len ? close->terminator_len : strlen(close->terminator);
        if (tl) {
            if (is_num_char(close->terminator[0])) {
                st = tl_error_set(err, TL_ERR_INVALID,
                                  "number automaton: terminator may not start with a digit, '-' or '.'");
                goto fail;
            }
            a->term = malloc(tl);
            if (!a->term)
                goto nomem;
            memcpy(a->term, close->terminator, tl);
            a->term_len = tl;
        }
    }
    if (a->term_len) {
        unsigned char c0 = (unsigned char)a->term[0];
        size_t lo = idx->bucket[c0], hi = idx->bucket[c0 + 1];
        a->pure_closers = malloc((hi - lo + 1) * sizeof *a->pure_closers);
        a->num_closers = malloc((hi - lo + 1) * sizeof *a->num_closers);
        if (!a->pure_closers || !a->num_closers)
            goto nomem;
        for (size_t j = lo; j < hi; j++) {
            const closer *cl = &idx->closers[j];
            size_t len;
            const char *b = tl_number_index_token(idx, cl->id, &len);
            if (!rest_fits(a, 0, b + cl->num_len, len - cl->num_len))
                continue;
            if (cl->num_len == 0)
                a->pure_closers[a->n_pure++] = cl->id;
            else
                a->num_closers[a->n_numc++] = cl;
        }
    }
    if (close->n_terminator_ids) {
        a->term_ids = malloc(close->n_terminator_ids * sizeof *a->term_ids);
        if (!a->term_ids)
            goto nomem;
        for (size_t i = 0; i < close->n_terminator_ids; i++) {
            int32_t id = close->terminator_ids[i];
            bool dup = id < 0 || id >= idx->n_tokens;
            for (size_t j = 0; j < a->n_pure && !dup; j++)
                dup = a->pure_closers[j] == id;
            for (size_t j = 0; j < a->n_term_ids && !dup; j++)
                dup = a->term_ids[j] == id;
            if (!dup)
                a->term_ids[a->n_term_ids++] = id;
        }
    }
    if (!a->n_pure && !a->n_term_ids) {
        st = tl_error_set(err, TL_ERR_INVALID,
                          "number automaton: no token can close the value (give a terminator string that some "
                          "token starts with, or terminator ids)");
        goto fail;
    }
    tl_number_automaton_reset(a);
    *out = a;
    return TL_OK;
nomem:
    st = tl_error_set(err, TL_ERR_NOMEM, "number automaton: out of memory");
fail:
    tl_number_automaton_free(a);
    return st;
}

void tl_number_automaton_free(tl_number_automaton *a) {
    if (!a)
        return;
    free(a->term);
    free(a->term_ids);
    free(a->pure_closers);
    free(a->num_closers);
    tl_strbuf_free(&a->tail);
    free(a);
}

void tl_number_automaton_reset(tl_number_automaton *a) {
    a->phase = PH_NUM;
    memset(&a->st, 0, sizeof a->st);
    a->started = false;
    a->term_pos = 0;
    a->closed_by_id = false;
    a->text_len = 0;
    a->text[0] = '\0';
    tl_strbuf_clear(&a->tail);
}

/* Number characters (and a leading space where allowed) of one token from
 * the current state; false when they break the shape. */
static bool sim_numeric(const tl_number_automaton *a, const char *b, size_t n, numstate *st, bool *started) {
    for (size_t i = 0; i < n; i++) {
        if (b[i] == ' ' && i == 0 && a->allow_lead && !*started) {
            *started = true;
            continue;
        }
        if (!num_apply_char(a->spec, st, b[i]))
            return false;
        *started = true;
    }
    return true;
}

/* ---- the fast path for digit-run tokens ---- */

#define VBITS_WORDS ((10000 + 63) / 64)

static void bits_set_range(uint64_t *vb, int64_t a, int64_t b) {
    for (int64_t v = a; v <= b;) {
        if ((v & 63) == 0 && v + 63 <= b) {
            vb[v >> 6] = ~(uint64_t)0;
            v += 64;
        } else {
            vb[v >> 6] |= (uint64_t)1 << (v & 63);
            v++;
        }
    }
}

/* Marks every v in [vmin, vmax] whose block of magnitudes [C0 + v*W, C0 + v*W + W - 1]
 * holds an allowed magnitude (in [mlo, mhi], a multiple of step). */
static void mark_blocks(const tl_number_spec *s, uint64_t *vb, i128 C0, i128 W, i128 vmin, i128 vmax, i128 mlo,
                        i128 mhi) {
    i128 a = num_floordiv(mlo - C0, W), b = num_floordiv(mhi - C0, W);
    if (a < vmin)
        a = vmin;
    if (b > vmax)
        b = vmax;
    if (a > b)
        return;
    i128 step = s->step;
    if (step <= 1) {
        bits_set_range(vb, (int64_t)a, (int64_t)b);
        return;
    }
    if (step <= W) {
        /* every whole block holds a multiple; only the clipped end blocks need a look */
        for (int e = 0; e < 2; e++) {
            i128 v = e ? b : a;
            i128 lo = C0 + v * W, hi = lo + W - 1;
            if (lo < mlo)
                lo = mlo;
            if (hi > mhi)
                hi = mhi;
            if (num_has_multiple(lo, hi, step))
                vb[(int64_t)v >> 6] |= (uint64_t)1 << ((int64_t)v & 63);
        }
        if (a + 1 <= b - 1)
            bits_set_range(vb, (int64_t)(a + 1), (int64_t)(b - 1));
        return;
    }
    /* blocks narrower than step hold at most one multiple each: visit the multiples */
    i128 lo = C0 + a * W, hi = C0 + b * W + W - 1;
    if (lo < mlo)
        lo = mlo;
    if (hi > mhi)
        hi = mhi;
    for (i128 x = num_floordiv(lo + step - 1, step) * step; x <= hi; x += step) {
        i128 v = num_floordiv(x - C0, W);
        vb[(int64_t)v >> 6] |= (uint64_t)1 << ((int64_t)v & 63);
    }
}

/* Marks the values v of L-digit tokens (lead: with a leading space) allowed now. */
static bool digit_values(const tl_number_automaton *a, int lead, int L, uint64_t *vb) {
    const tl_number_spec *s = a->spec;
    const numstate *st = &a->st;
    if (lead && (!a->allow_lead || a->started))
        return false;
    i128 mlo, mhi;
    if (!num_magnitude_range(s, st->neg, &mlo, &mhi))
        return false;
    i128 S = num_pow10(s->decimals), P = num_pow10(L);
    memset(vb, 0, (size_t)((P + 63) / 64) * sizeof *vb);
    if (st->point) {
        if (lead || st->lf + L > s->decimals)
            return false;
        i128 W = num_pow10(s->decimals - st->lf - L);
        mark_blocks(s, vb, st->iv * S + st->fv * P * W, W, 0, P - 1, mlo, mhi);
        return true;
    }
    if (st->li == 0) {
        if (L > s->max_int_digits)
            return false;
        for (int k = 0; L + k <= s->max_int_digits; k++) {
            i128 W = num_pow10(k) * S;
            if ((P / 10) * W > mhi)
                break;
            mark_blocks(s, vb, 0, W, L == 1 ? 1 : P / 10, P - 1, mlo, mhi);
        }
        if (L == 1) {
            numstate z = *st;
            z.li = 1;
            if (num_viable(s, &z))
                vb[0] |= 1;
        }
        return true;
    }
    if (lead || st->iv == 0 || st->li + L > s->max_int_digits)
        return false;
    for (int k = 0; st->li + L + k <= s->max_int_digits; k++) {
        i128 W = num_pow10(k) * S;
        i128 C0 = st->iv * P * W;
        if (C0 > mhi)
            break;
        mark_blocks(s, vb, C0, W, 0, P - 1, mlo, mhi);
    }
    return true;
}

/* Where allowed ids go: a list (out) or a bitset (mask). */
typedef struct sink {
    int32_t *out;
    uint64_t *mask;
    size_t n;
} sink;

static inline void emit(sink *k, int32_t id) {
    if (k->out)
        k->out[k->n] = id;
    else
        k->mask[id >> 6] |= (uint64_t)1 << (id & 63);
    k->n++;
}

static void emit_all(sink *k, const int32_t *ids, size_t n) {
    if (k->out && n)
        memcpy(k->out + k->n, ids, n * sizeof *ids);
    else
        for (size_t i = 0; i < n && !k->out; i++)
            k->mask[ids[i] >> 6] |= (uint64_t)1 << (ids[i] & 63);
    k->n += n;
}

static size_t collect(const tl_number_automaton *a, sink *k) {
    const tl_number_index *idx = a->idx;
    if (a->phase == PH_DONE)
        return 0;
    if (a->phase == PH_TERM) {
        /* mid-way through a multi-byte terminator: rare, so a plain scan */
        for (int32_t id = 0; id < idx->n_tokens; id++) {
            size_t len;
            const char *b = tl_number_index_token(idx, id, &len);
            if (len && rest_fits(a, a->term_pos, b, len))
                emit(k, id);
        }
        return k->n;
    }
    uint64_t vb[VBITS_WORDS];
    for (int lead = 0; lead < 2; lead++)
        for (int L = 1; L <= DIG_MAX_LEN; L++) {
            if (!idx->dig_count[lead][L] || !digit_values(a, lead, L, vb))
                continue;
            const int32_t *first = idx->dig_first[lead][L], *ids = idx->dig_ids[lead][L];
            size_t words = (size_t)((num_pow10(L) + 63) / 64);
            for (size_t w = 0; w < words; w++)
                for (uint64_t bits = vb[w]; bits; bits &= bits - 1) {
                    size_t v = w * 64 + (size_t)__builtin_ctzll(bits);
                    for (int32_t j = first[v]; j < first[v + 1]; j++)
                        emit(k, ids[j]);
                }
        }
    for (size_t i = 0; i < idx->n_misc; i++) {
        size_t len;
        const char *b = tl_number_index_token(idx, idx->misc[i], &len);
        numstate st = a->st;
        bool started = a->started;
        if (sim_numeric(a, b, len, &st, &started) && num_viable(a->spec, &st))
            emit(k, idx->misc[i]);
    }
    if (num_complete(a->spec, &a->st)) {
        emit_all(k, a->pure_closers, a->n_pure);
        emit_all(k, a->term_ids, a->n_term_ids);
    }
    for (size_t i = 0; i < a->n_numc; i++) {
        const closer *cl = a->num_closers[i];
        size_t len;
        const char *b = tl_number_index_token(idx, cl->id, &len);
        numstate st = a->st;
        bool started = a->started;
        if (sim_numeric(a, b, cl->num_len, &st, &started) && num_complete(a->spec, &st))
            emit(k, cl->id);
    }
    return k->n;
}

size_t tl_number_automaton_allowed(const tl_number_automaton *a, int32_t *out) {
    sink k = {out, NULL, 0};
    return collect(a, &k);
}

void tl_number_automaton_mask(const tl_number_automaton *a, uint64_t *mask) {
    memset(mask, 0, ((size_t)a->idx->n_tokens + 63) / 64 * sizeof *mask);
    sink k = {NULL, mask, 0};
    collect(a, &k);
}

tl_status tl_number_automaton_accept(tl_number_automaton *a, int32_t id, tl_error *err) {
    if (a->phase == PH_DONE)
        return tl_error_set(err, TL_ERR_INVALID, "number automaton: token %d after the value closed", (int)id);
    if (id < 0 || id >= a->idx->n_tokens)
        return tl_error_set(err, TL_ERR_INVALID, "number automaton: token id %d out of range", (int)id);
    if (a->phase == PH_NUM && num_complete(a->spec, &a->st))
        for (size_t i = 0; i < a->n_term_ids; i++)
            if (a->term_ids[i] == id) {
                a->phase = PH_DONE;
                a->closed_by_id = true;
                return TL_OK;
            }
    size_t len;
    const char *b = tl_number_index_token(a->idx, id, &len);
    numstate st = a->st;
    bool started = a->started;
    int phase = a->phase;
    size_t term_pos = a->term_pos, text_len = a->text_len, tail_from = len;
    char text[sizeof a->text];
    memcpy(text, a->text, sizeof text);
    for (size_t i = 0; i < len; i++) {
        char c = b[i];
        if (phase == PH_NUM) {
            if (c == ' ' && a->allow_lead && !started) {
                started = true;
                continue;
            }
            if (num_apply_char(a->spec, &st, c)) {
                started = true;
                if (text_len + 1 < sizeof text)
                    text[text_len++] = c;
                continue;
            }
            if (a->term_len && c == a->term[0] && num_complete(a->spec, &st)) {
                phase = PH_TERM;
                term_pos = 0;
            } else {
                goto refuse;
            }
        }
        if (phase == PH_TERM) {
            if (c != a->term[term_pos])
                goto refuse;
            if (++term_pos == a->term_len) {
                phase = PH_DONE;
                tail_from = i + 1;
                break;
            }
        }
    }
    if (len == 0 || (phase == PH_NUM && !num_viable(a->spec, &st)) || (tail_from < len && !a->allow_tail))
        goto refuse;
    a->st = st;
    a->started = started;
    a->phase = phase;
    a->term_pos = term_pos;
    memcpy(a->text, text, sizeof text);
    a->text_len = text_len;
    a->text[text_len] = '\0';
    if (tail_from < len)
        tl_strbuf_append(&a->tail, b + tail_from, len - tail_from);
    return TL_OK;
refuse:
    return tl_error_set(err, TL_ERR_INVALID, "number automaton: token %d does not continue \"%.*s\"", (int)id,
                        (int)a->text_len, a->text);
}

bool tl_number_automaton_done(const tl_number_automaton *a) { return a->phase == PH_DONE; }

bool tl_number_automaton_closed_by_id(const tl_number_automaton *a) { return a->closed_by_id; }

const char *tl_number_automaton_text(const tl_number_automaton *a, size_t *len) {
    if (len)
        *len = a->text_len;
    return a->text;
}

const char *tl_number_automaton_tail(const tl_number_automaton *a, size_t *len) {
    if (len)
        *len = a->tail.len;
    return tl_strbuf_cstr(&a->tail);
}

tl_status tl_number_automaton_value(const tl_number_automaton *a, tl_number_value *out, tl_error *err) {
    if (a->phase != PH_DONE)
        return tl_error_set(err, TL_ERR_INVALID, "number automaton: value not closed yet (\"%.*s\")",
                            (int)a->text_len, a->text);
    if (!tl_number_spec_accepts(a->spec, a->text, a->text_len, out))
        return tl_error_set(err, TL_ERR_INTERNAL, "number automaton: closed on \"%s\" outside the spec", a->text);
    return TL_OK;
}
