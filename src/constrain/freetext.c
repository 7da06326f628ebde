/* freetext.c: unconstrained generation for open fields, bounded by a
 * terminator and by maxLength (see constrain.h for the escape rules).
 *
 * The raw bytes the model writes are lexed as they arrive: in the record
 * rendering they are a JSON string body, so `\"` is a quote inside the value
 * and only an unescaped terminator ends it. A terminator or escape split
 * across tokens waits for the next token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "constrain/sample.h"
#include "util/error.h"
#include "util/utf8.h"

void tl_freetext_result_free(tl_freetext_result *r) {
    if (!r)
        return;
    free(r->value);
    free(r->ids);
    free(r->logprob_full);
    memset(r, 0, sizeof *r);
}

bool tl_freetext_escape(tl_strbuf *out, const char *s, size_t len) {
    bool ok = true;
    for (size_t i = 0; i < len && ok; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': ok = tl_strbuf_puts(out, "\\\""); break;
        case '\\': ok = tl_strbuf_puts(out, "\\\\"); break;
        case '\n': ok = tl_strbuf_puts(out, "\\n"); break;
        case '\r': ok = tl_strbuf_puts(out, "\\r"); break;
        case '\t': ok = tl_strbuf_puts(out, "\\t"); break;
        case '\b': ok = tl_strbuf_puts(out, "\\b"); break;
        case '\f': ok = tl_strbuf_puts(out, "\\f"); break;
        default:
            ok = c < 0x20 ? tl_strbuf_printf(out, "\\u%04x", c) : tl_strbuf_putc(out, (char)c);
        }
    }
    return ok;
}

/* ===== UTF-8 ============================================================ */

static void put_utf8(tl_strbuf *out, uint32_t cp) {
    char b[4];
    tl_strbuf_append(out, b, tl_utf8_encode(cp, b));
}

/* Valid UTF-8 of at most max_chars code points: invalid bytes become U+FFFD;
 * a sequence cut off at the end is dropped when drop_cut, else replaced. */
static size_t sanitize(const char *in, size_t n, size_t max_chars, bool drop_cut, tl_strbuf *out, bool *cut) {
    size_t chars = 0, i = 0;
    const unsigned char *s = (const unsigned char *)in;
    for (; i < n && chars < max_chars;) {
        int l = tl_utf8_decode(s + i, n - i, NULL, TL_UTF8_STRICT);
        if (l > 0) {
            tl_strbuf_append(out, in + i, (size_t)l);
            i += (size_t)l;
        } else if (l < 0 && drop_cut) {
            break;
        } else {
            put_utf8(out, 0xFFFD);
            i += 1;
        }
        chars++;
    }
    *cut = i < n;
    return chars;
}

/* ===== the lexer over raw output ======================================== */

typedef struct lexer {
    const char *term;
    size_t term_len;
    bool json;
    size_t pos;        /* raw bytes consumed */
    tl_strbuf value;   /* unescaped bytes so far */
    uint32_t pending_high; /* a \uD8xx waiting for its low surrogate */
    bool closed;
} lexer;

static int hex4(const char *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char h = s[i];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Consumes what it can of raw[pos..n); stops at the terminator or at a
 * terminator / escape that the next token may complete. */
static void lex(lexer *lx, const char *raw, size_t n) {
    while (lx->pos < n && !lx->closed) {
        size_t left = n - lx->pos;
        const char *p = raw + lx->pos;
        if (lx->term_len) {
            size_t m = left < lx->term_len ? left : lx->term_len;
            if (memcmp(p, lx->term, m) == 0) {
                if (m == lx->term_len) {
                    lx->closed = true;
                    lx->pos += m;
                    return;
                }
                return; /* a start of the terminator: wait */
            }
        }
        if (lx->json && p[0] == '\\') {
            if (left < 2)
                return;
            char e = p[1];
            const char *simple = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *hit = e ? strchr(simple, e) : NULL;
            if (hit) {
                tl_strbuf_putc(&lx->value, to[hit - simple]);
                lx->pos += 2;
            } else if (e == 'u') {
                if (left < 6)
                    return;
                int cp = hex4(p + 2);
                if (cp < 0) {
                    tl_strbuf_append(&lx->value, p, 2);
                    lx->pos += 2;
                    continue;
                }
                lx->pos += 6;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    lx->pending_high = (uint32_t)cp;
                    continue;
                }
                if (cp >= 0xDC00 && cp <= 0xDFFF && lx->pending_high) {
                    put_utf8(&lx->value, 0x10000 + ((lx->pending_high - 0xD800) << 10) + ((uint32_t)cp - 0xDC00));
                    lx->pending_high = 0;
                    continue;
                }
                put_utf8(&lx->value, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : (uint32_t)cp);
            } else {
                tl_strbuf_append(&lx->value, p, 2); /* unknown escape: kept as written */
                lx->pos += 2;
            }
            if (lx->pending_high) {
                put_utf8(&lx->value, 0xFFFD);
                lx->pending_high = 0;
            }
            continue;
        }
        if (lx->pending_high) {
            put_utf8(&lx->value, 0xFFFD);
            lx->pending_high = 0;
        }
        tl_strbuf_putc(&lx->value, p[0]);
        lx->pos++;
    }
}

size_t tl_freetext_unescape(const char *raw, size_t n, const char *terminator, bool json_escapes, tl_strbuf *value,
                            bool *closed) {
    lexer lx = {terminator, terminator ? strlen(terminator) : 0, json_escapes, 0, TL_STRBUF_INIT, 0, false};
    lex(&lx, raw, n);
    if (lx.pending_high)
        put_utf8(&lx.value, 0xFFFD);
    tl_strbuf_append(value, tl_strbuf_cstr(&lx.value), lx.value.len);
    tl_strbuf_free(&lx.value);
    *closed = lx.closed;
    return lx.pos;
}

static bool is_term_id(const tl_freetext_params *p, int32_t id) {
    for (size_t i = 0; i < p->n_terminator_ids; i++)
        if (p->terminator_ids[i] == id)
            return true;
    return false;
}

static tl_status finish(lexer *lx, size_t max_chars, bool cut_by_limit, tl_freetext_result *out, tl_error *err) {
    if (lx->pending_high) {
        put_utf8(&lx->value, 0xFFFD);
        lx->pending_high = 0;
    }
    tl_strbuf clean = TL_STRBUF_INIT;
    bool cut = false;
    out->n_chars = sanitize(tl_strbuf_cstr(&lx->value), lx->value.len, max_chars, cut_by_limit, &clean, &cut);
    if (cut && out->n_chars == max_chars)
        out->truncated = true;
    out->value_len = clean.len;
    out->value = clean.buf ? tl_strbuf_detach(&clean) : calloc(1, 1);
    if (!out->value)
        return tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
    return TL_OK;
}

static size_t count_chars(const tl_strbuf *v) {
    size_t n = 0;
    for (size_t i = 0; i < v->len; i++)
        n += ((unsigned char)v->buf[i] & 0xC0) != 0x80;
    return n;
}

/* Appends token id's raw bytes (as the model writes them) to out. */
static bool append_token_bytes(const tl_vocab *v, int32_t id, tl_strbuf *out) {
    char small[256];
    size_t tb = tl_vocab_token_bytes(v, id, false, small, sizeof small);
    if (tb <= sizeof small)
        return tl_strbuf_append(out, small, tb);
    char *big = malloc(tb);
    bool ok = big != NULL;
    if (ok) {
        tl_vocab_token_bytes(v, id, false, big, tb);
        ok = tl_strbuf_append(out, big, tb);
    }
    free(big);
    return ok;
}

/* The longest token's text in code points (bounds what one step can add). */
static size_t longest_token_chars(const tl_vocab *v) {
    size_t best = 1;
    tl_strbuf t = TL_STRBUF_INIT;
    for (int32_t id = 0; id < tl_vocab_n_tokens(v); id++) {
        tl_strbuf_clear(&t);
        if (append_token_bytes(v, id, &t) && count_chars(&t) > best)
            best = count_chars(&t);
    }
    tl_strbuf_free(&t);
    return best;
}

/* Remote generation under the JSON-string-body regex. With the model's
 * tokenizer here, the regex's length bound is loosened by the longest token
 * and the reply is replayed token by token exactly as the local loop runs
 * (stop at the terminator, or once maxLength characters are written, cutting
 * there), so at T=0 the value equals the local one; the tokens' raw bytes
 * also let a character cut off at the limit be dropped instead of becoming
 * U+FFFD. Without a tokenizer the regex carries the bound itself. */
static tl_status generate_remote(tl_backend *b, const int32_t *ids, size_t n, const tl_freetext_params *p,
                                 size_t max_chars, int max_tokens, tl_freetext_result *out, tl_error *err) {
    tl_strbuf re = TL_STRBUF_INIT, text = TL_STRBUF_INIT;
    int32_t *gen = NULL;
    size_t n_gen = 0;
    lexer lx = {p->terminator, p->terminator ? strlen(p->terminator) : 0, p->json_escapes, 0, TL_STRBUF_INIT, 0,
                false};
    size_t bound = b->vocab ? max_chars + longest_token_chars(b->vocab) : max_chars;
    /* the server cannot stop at a character count: bound its steps by the
     * characters wanted (a step rarely writes none) */
    if (b->vocab && (size_t)max_tokens > max_chars + 8)
        max_tokens = (int)(max_chars + 8);
    tl_status st = tl_freetext_regex(bound, p->json_escapes, p->terminator, &re, err);
    if (!st)
        st = b->ops->generate_regex(b, ids, n, tl_strbuf_cstr(&re), max_tokens, p->sample.temperature,
                                    p->sample.seed, &gen, &n_gen, &out->usage, err);
    if (!st && b->vocab) {
        size_t used = 0;
        for (; used < n_gen && !st && !out->closed && !out->truncated; used++) {
            int32_t id = gen[used];
            if (id < 0 || id >= tl_vocab_n_tokens(b->vocab)) {
                st = tl_error_set(err, TL_ERR_REMOTE, "free text: the %s backend returned token %d, not in the vocabulary",
                                  b->ops->kind, (int)id);
                break;
            }
            if (is_term_id(p, id) || tl_vocab_is_eog(b->vocab, id)) {
                out->closed = true;
                continue;
            }
            if (!append_token_bytes(b->vocab, id, &text)) {
                st = tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
                break;
            }
            lex(&lx, tl_strbuf_cstr(&text), text.len);
            if (lx.closed)
                out->closed = true;
            else if (count_chars(&lx.value) >= max_chars)
                out->truncated = true;
        }
        if (!st) {
            if (!out->closed && !out->truncated)
                out->truncated = true; /* the token limit */
            if (!lx.closed && lx.pos < text.len)
                tl_strbuf_append(&lx.value, text.buf + lx.pos, text.len - lx.pos);
            out->ids = gen;
            gen = NULL;
            out->n_ids = used;
            st = finish(&lx, max_chars, out->truncated, out, err);
        }
    } else if (!st) {
        /* a closing terminator id is not part of the value's text */
        size_t n_text = n_gen && is_term_id(p, gen[n_gen - 1]) ? n_gen - 1 : n_gen;
        st = tl_backend_detokenize(b, gen, n_text, &text, err);
        if (!st) {
            lex(&lx, tl_strbuf_cstr(&text), text.len);
            if (!lx.closed && lx.pos < text.len)
                tl_strbuf_append(&lx.value, text.buf + lx.pos, text.len - lx.pos);
            out->closed = lx.closed || (n_gen && is_term_id(p, gen[n_gen - 1]));
            out->truncated = !out->closed;
            out->ids = gen;
            gen = NULL;
            out->n_ids = n_gen;
            st = finish(&lx, max_chars, !out->closed, out, err);
        }
    }
    free(gen);
    tl_strbuf_free(&re);
    tl_strbuf_free(&text);
    tl_strbuf_free(&lx.value);
    return st;
}

/* One local generation: its lexer, sequence, stream and limits; the loop
 * below advances it one sampled token per step, so several advance together
 * on one batched evaluation (tl_freetext_generate_batch). */
typedef struct ft_gen {
    const tl_freetext_params *p;
    tl_freetext_result *out;
    lexer lx;
    tl_strbuf raw;
    int32_t *seq;  /* (n + max_tokens) the prompt, then what is generated */
    size_t len;
    int32_t *cand; /* the tokens it may sample */
    size_t n_cand;
    uint64_t rng;
    size_t max_chars, max_tokens;
    bool done;
} ft_gen;

static tl_status ft_init(ft_gen *g, tl_backend *b, const int32_t *ids, size_t n, const tl_freetext_params *p,
                         tl_freetext_result *out, tl_error *err) {
    memset(g, 0, sizeof *g);
    memset(out, 0, sizeof *out);
    g->p = p;
    g->out = out;
    g->max_chars = p->max_chars ? p->max_chars : 4096;
    g->max_tokens = p->sample.max_tokens > 0 ? (size_t)p->sample.max_tokens : 4 * g->max_chars + 16;
    g->lx = (lexer){p->terminator, p->terminator ? strlen(p->terminator) : 0, p->json_escapes, 0, TL_STRBUF_INIT, 0,
                    false};
    g->raw = (tl_strbuf)TL_STRBUF_INIT;
    g->rng = p->sample.seed;
    const tl_vocab *v = b->vocab;
    int32_t n_tok = tl_vocab_n_tokens(v);
    g->seq = malloc((n + g->max_tokens) * sizeof *g->seq);
    g->cand = malloc((size_t)b->n_vocab * sizeof *g->cand);
    out->ids = malloc(g->max_tokens * sizeof *out->ids);
    out->logprob_full = malloc(g->max_tokens * sizeof(double));
    if (!g->seq || !g->cand || !out->ids || !out->logprob_full)
        return tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
    /* the candidates: every token except control/unused ones that neither end
     * generation nor are terminator ids (their text must not enter a value) */
    for (int32_t id = 0; id < b->n_vocab; id++) {
        if (id < n_tok) {
            tl_token_attr at = tl_vocab_token_attr(v, id);
            if ((at == TL_TOKEN_CONTROL || at == TL_TOKEN_UNUSED) && !tl_vocab_is_eog(v, id) && !is_term_id(p, id))
                continue;
        } else if (!is_term_id(p, id)) {
            continue; /* logits beyond the tokenizer (padding rows) */
        }
        g->cand[g->n_cand++] = id;
    }
    if (n)
        memcpy(g->seq, ids, n * sizeof *g->seq);
    g->len = n;
    g->done = g->max_tokens == 0;
    g->out->truncated = g->done;
    return TL_OK;
}

/* Samples the next token from the logits after g->seq and takes it. */
static tl_status ft_step(ft_gen *g, tl_backend *b, const float *logits, tl_error *err) {
    const tl_vocab *v = b->vocab;
    tl_freetext_result *out = g->out;
    int32_t id = tl_sample_ids(logits, g->cand, g->n_cand, g->p->sample.temperature, &g->rng);
    out->logprob_full[out->n_ids] = logits[id] - tl_logsumexp_f(logits, (size_t)b->n_vocab);
    out->ids[out->n_ids++] = id;
    g->seq[g->len++] = id;
    out->usage.output_tokens++;
    if (is_term_id(g->p, id) || (id < tl_vocab_n_tokens(v) && tl_vocab_is_eog(v, id))) {
        out->closed = g->done = true;
        return TL_OK;
    }
    if (!append_token_bytes(v, id, &g->raw))
        return tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
    lex(&g->lx, tl_strbuf_cstr(&g->raw), g->raw.len);
    if (g->lx.closed)
        out->closed = g->done = true;
    else if (count_chars(&g->lx.value) >= g->max_chars || out->n_ids == g->max_tokens)
        out->truncated = g->done = true;
    return TL_OK;
}

/* The value, once done (st: how the generation went). */
static tl_status ft_finish(ft_gen *g, tl_status st, tl_error *err) {
    tl_freetext_result *out = g->out;
    if (!st) {
        if (!g->lx.closed && g->lx.pos < g->raw.len) /* a start of a terminator or escape that never completed is text */
            tl_strbuf_append(&g->lx.value, g->raw.buf + g->lx.pos, g->raw.len - g->lx.pos);
        st = finish(&g->lx, g->max_chars, out->truncated, out, err);
    }
    if (st) {
        tl_usage u = out->usage;
        tl_freetext_result_free(out);
        out->usage = u;
    }
    tl_strbuf_free(&g->raw);
    tl_strbuf_free(&g->lx.value);
    free(g->seq);
    free(g->cand);
    return st;
}

tl_status tl_freetext_generate(tl_backend *b, const int32_t *ids, size_t n, const tl_freetext_params *p,
                               tl_freetext_result *out, tl_error *err) {
    memset(out, 0, sizeof *out);
    if (!b || !p || (!ids && n))
        return tl_error_set(err, TL_ERR_INVALID, "free text: missing backend, params or ids");
    if (!b->ops->next_logits) {
        size_t max_chars = p->max_chars ? p->max_chars : 4096;
        size_t max_tokens = p->sample.max_tokens > 0 ? (size_t)p->sample.max_tokens : 4 * max_chars + 16;
        if (!b->ops->generate_regex)
            return tl_error_set(err, TL_ERR_UNSUPPORTED, "free text: the %s backend has neither logits nor regex",
                                b->ops->kind);
        return generate_remote(b, ids, n, p, max_chars, (int)max_tokens, out, err);
    }
    if (!b->vocab)
        return tl_error_set(err, TL_ERR_INVALID, "free text: the backend has no vocabulary");
    ft_gen g;
    float *logits = malloc((size_t)b->n_vocab * sizeof *logits);
    tl_status st = ft_init(&g, b, ids, n, p, out, err);
    if (!st && !logits)
        st = tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
    while (!st && !g.done)
        if (!(st = tl_backend_next_logits(b, g.seq, g.len, logits, &out->usage, err)))
            st = ft_step(&g, b, logits, err);
    free(logits);
    return ft_finish(&g, st, err);
}

tl_status tl_freetext_generate_batch(tl_backend *b, size_t k, const int32_t *const *ids, const size_t *n,
                                     const tl_freetext_params *p, tl_freetext_result *out, tl_usage *usage,
                                     tl_error *err) {
    if (!b || (k && (!ids || !n || !p || !out)))
        return tl_error_set(err, TL_ERR_INVALID, "free text: missing backend, params or ids");
    if (!b->ops->eval || !b->vocab) { /* remote: one after another */
        tl_status st = TL_OK;
        for (size_t i = 0; i < k; i++)
            memset(&out[i], 0, sizeof out[i]);
        for (size_t i = 0; i < k && !st; i++) {
            st = tl_freetext_generate(b, ids[i], n[i], &p[i], &out[i], err);
            if (usage)
                tl_usage_add(usage, &out[i].usage);
        }
        return st;
    }
    ft_gen *g = calloc(k ? k : 1, sizeof *g);
    tl_seq *seqs = calloc(k ? k : 1, sizeof *seqs);
    float *logits = malloc((k ? k : 1) * (size_t)b->n_vocab * sizeof *logits);
    size_t *who = calloc(k ? k : 1, sizeof *who), inited = 0;
    tl_status st = g && seqs && logits && who ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "free text: out of memory");
    for (; !st && inited < k; inited++)
        st = ft_init(&g[inited], b, ids[inited], n[inited], &p[inited], &out[inited], err);
    while (!st) {
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (!g[i].done) {
                seqs[m] = (tl_seq){.ids = g[i].seq, .n = g[i].len, .logits = logits + m * (size_t)b->n_vocab};
                who[m++] = i;
            }
        if (!m)
            break;
        /* the sequences' logits are the bits each would get alone (engine.h) */
        st = tl_backend_eval(b, seqs, m, usage, err);
        for (size_t j = 0; j < m && !st; j++)
            st = ft_step(&g[who[j]], b, seqs[j].logits, err);
    }
    for (size_t i = 0; i < inited; i++) {
        tl_status s2 = ft_finish(&g[i], st, err);
        st = st ? st : s2;
    }
    free(g);
    free(seqs);
    free(logits);
    free(who);
    return st;
}
