/* test_number_mask.c: the automaton's allowed-token sets on every fixture
 * vocabulary, checked at each step of random walks against a brute-force
 * oracle that tries every token's text with the spec's string predicates
 * (tl_number_spec_prefix_viable / tl_number_spec_accepts). Covers digit-
 * splitting (qwen2, llama-spm) and digit-grouping (llama3, gpt-2) tokenizers,
 * leading spaces, closing tokens that carry number text (`5"`) or a tail
 * (`",`), multi-byte terminators and terminator ids. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constrain/constrain.h"
#include "tl_test.h"
#include "tok/vocab.h"

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static bool is_num_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '.'; }

typedef struct walk {
    const tl_number_spec *spec;
    const tl_number_close *close;
    size_t term_len;
    /* what the oracle tracks: the number text, whether anything was taken,
     * how much of the terminator is matched (SIZE_MAX: not started) */
    char text[64];
    size_t text_len;
    bool started;
    size_t term_pos;
    bool done;
} walk;

static bool rest_fits(const walk *w, size_t from, const char *r, size_t n) {
    size_t left = w->term_len - from;
    if (n < left)
        return memcmp(r, w->close->terminator + from, n) == 0;
    return memcmp(r, w->close->terminator + from, left) == 0 && (n == left || w->close->allow_tail);
}

/* The oracle: may token bytes b[0..n) come next? */
static bool oracle_allows(const walk *w, int32_t id, const char *b, size_t n) {
    if (w->done)
        return false;
    if (w->term_pos != SIZE_MAX)
        return n > 0 && rest_fits(w, w->term_pos, b, n);
    char cand[128];
    memcpy(cand, w->text, w->text_len);
    bool complete_now = tl_number_spec_accepts(w->spec, w->text, w->text_len, NULL);
    for (size_t i = 0; i < w->close->n_terminator_ids; i++)
        if (w->close->terminator_ids[i] == id && complete_now)
            return true;
    if (n == 0)
        return false;
    size_t i = 0;
    if (b[0] == ' ' && w->close->allow_leading_space && !w->started)
        i = 1;
    size_t num_start = i;
    while (i < n && is_num_char(b[i]))
        i++;
    size_t num_len = i - num_start;
    if (w->text_len + num_len > 60)
        return false;
    memcpy(cand + w->text_len, b + num_start, num_len);
    size_t cl = w->text_len + num_len;
    if (i == n) /* number characters only (or the leading space alone) */
        return tl_number_spec_prefix_viable(w->spec, cand, cl);
    if (!w->term_len || (num_start == 1 && num_len == 0))
        return false;
    return rest_fits(w, 0, b + i, n - i) && tl_number_spec_accepts(w->spec, cand, cl, NULL);
}

static void oracle_take(walk *w, int32_t id, const char *b, size_t n) {
    if (w->term_pos != SIZE_MAX) {
        w->term_pos += n;
        if (w->term_pos >= w->term_len)
            w->done = true;
        return;
    }
    for (size_t i = 0; i < w->close->n_terminator_ids; i++)
        if (w->close->terminator_ids[i] == id && n == 0) {
            w->done = true;
            return;
        }
    size_t i = 0;
    if (n && b[0] == ' ' && w->close->allow_leading_space && !w->started)
        i = 1;
    w->started = true;
    while (i < n && is_num_char(b[i]))
        w->text[w->text_len++] = b[i++];
    if (i < n) {
        w->term_pos = n - i;
        if (w->term_pos >= w->term_len)
            w->done = true;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static void random_spec_json(char *buf, size_t cap) {
    int kind = (int)(rnd() % 10);
    if (kind == 0) {
        snprintf(buf, cap, "{\"type\":\"integer\"}");
        return;
    }
    if (kind == 1) {
        snprintf(buf, cap, "{\"type\":\"number\",\"x-decimals\":%d}", (int)(rnd() % 4));
        return;
    }
    bool is_int = kind < 6;
    int dec = is_int ? 0 : (int)(rnd() % 4);
    double scale = 1;
    for (int i = 0; i < dec; i++)
        scale *= 10;
    int mag = 1 + (int)(rnd() % 7);
    int64_t top = 1;
    for (int i = 0; i < mag; i++)
        top *= 10;
    int64_t a = (int64_t)(rnd() % (uint64_t)(2 * top)) - top, b = (int64_t)(rnd() % (uint64_t)(2 * top)) - top;
    if (rnd() % 4 == 0)
        a = 0;
    if (a > b) {
        int64_t t = a;
        a = b;
        b = t;
    }
    int64_t step = rnd() % 3 == 0 ? 1 + (int64_t)(rnd() % 50) : 1;
    int o = snprintf(buf, cap, "{\"type\":\"%s\",\"%s\":%.*f,\"%s\":%.*f", is_int ? "integer" : "number",
                     rnd() % 3 ? "minimum" : "exclusiveMinimum", dec, a / scale,
                     rnd() % 3 ? "maximum" : "exclusiveMaximum", dec, b / scale);
    if (!is_int)
        o += snprintf(buf + o, cap - (size_t)o, ",\"x-decimals\":%d", dec);
    if (step > 1)
        o += snprintf(buf + o, cap - (size_t)o, ",\"multipleOf\":%.*f", dec, step / scale);
    if (rnd() % 5 == 0)
        o += snprintf(buf + o, cap - (size_t)o, ",\"x-max-digits\":%d", 1 + (int)(rnd() % 8));
    snprintf(buf + o, cap - (size_t)o, "}");
}

typedef struct vstats {
    int walks, steps, mismatches, term_steps, tails, lead_spaces;
} vstats;

static void run_vocab(const char *name, int n_walks) {
    char rel[128];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", name);
    tl_vocab *v = NULL;
    tl_error err = {0};
    if (tl_vocab_load_file(tl_fixture(rel), &v, &err) != TL_OK) {
        CHECKF(0, "%s: %s", name, err.msg);
        return;
    }
    tl_number_index *idx = NULL;
    CHECKF(tl_number_index_new(v, &idx, &err) == TL_OK, "%s: %s", name, err.msg);
    if (!idx) {
        tl_vocab_free(v);
        return;
    }
    int32_t n_tok = tl_number_index_n_tokens(idx);
    int32_t *allowed = malloc((size_t)n_tok * sizeof *allowed);
    unsigned char *mine = calloc((size_t)n_tok, 1);
    uint64_t *mask = malloc(((size_t)n_tok + 63) / 64 * sizeof *mask);
    int32_t eot = tl_vocab_eot(v) >= 0 ? tl_vocab_eot(v) : tl_vocab_eos(v);
    vstats vs = {0};
    static const char *terms[] = {"\"", "\"", "\",", "</a>", "\n"};
    for (int wk = 0; wk < n_walks; wk++) {
        char json[256];
        random_spec_json(json, sizeof json);
        tl_number_spec spec;
        if (tl_number_spec_from_json(json, strlen(json), "/x", &spec, &err) != TL_OK) {
            CHECKF(strstr(err.msg, "satisfies") || strstr(err.msg, "greater than"), "%s: %s", json, err.msg);
            continue;
        }
        tl_number_close close = {0};
        int tk = (int)(rnd() % 6);
        if (tk < 5)
            close.terminator = terms[tk];
        if (tk >= 4 && eot >= 0) {
            close.terminator_ids = &eot;
            close.n_terminator_ids = 1;
        }
        close.allow_leading_space = rnd() % 3 == 0;
        close.allow_tail = tk == 1 ? false : rnd() % 2;
        tl_number_automaton *a = NULL;
        if (tl_number_automaton_new(idx, &spec, &close, &a, &err) != TL_OK) {
            CHECKF(0, "%s %s: %s", name, json, err.msg);
            continue;
        }
        walk w = {.spec = &spec, .close = &close, .term_pos = SIZE_MAX};
        w.term_len = close.terminator ? strlen(close.terminator) : 0;
        vs.walks++;
        for (int step = 0; step < 40 && !w.done; step++) {
            vs.steps++;
            vs.term_steps += w.term_pos != SIZE_MAX;
            size_t n = tl_number_automaton_allowed(a, allowed);
            memset(mine, 0, (size_t)n_tok);
            bool dup = false;
            for (size_t i = 0; i < n; i++) {
                dup |= mine[allowed[i]] != 0;
                mine[allowed[i]] = 1;
            }
            CHECKF(!dup, "%s %s: duplicate ids in the allowed list", name, json);
            tl_number_automaton_mask(a, mask);
            int bad = 0;
            size_t n_oracle = 0;
            for (int32_t id = 0; id < n_tok; id++) {
                size_t len;
                const char *b = tl_number_index_token(idx, id, &len);
                bool want = oracle_allows(&w, id, b, len);
                n_oracle += want;
                bool bit = (mask[id >> 6] >> (id & 63)) & 1;
                if (want != (bool)mine[id] || bit != want) {
                    if (bad++ < 5)
                        fprintf(stderr, "%s %s term=%s lead=%d tail=%d text=\"%.*s\": token %d \"%.*s\" oracle %d mine %d\n",
                                name, json, close.terminator ? close.terminator : "(ids)", close.allow_leading_space,
                                close.allow_tail, (int)w.text_len, w.text, id, (int)len, b, want, mine[id]);
                }
            }
            vs.mismatches += bad != 0;
            CHECK(bad == 0);
            if (n == 0) {
                CHECKF(0, "%s %s: no allowed token at \"%.*s\"", name, json, (int)w.text_len, w.text);
                break;
            }
            /* a refused token leaves the automaton unchanged */
            int32_t no = (int32_t)(rnd() % (uint64_t)n_tok);
            if (!mine[no]) {
                tl_error e2;
                CHECK(tl_number_automaton_accept(a, no, &e2) == TL_ERR_INVALID);
            }
            /* prefer continuing to closing, so walks reach long numbers too */
            qsort(allowed, n, sizeof *allowed, cmp_i32);
            int32_t pick = allowed[rnd() % n];
            for (int tries = 0; tries < 8 && rnd() % 4; tries++) {
                size_t len;
                const char *b = tl_number_index_token(idx, pick, &len);
                if (len && is_num_char(b[len - 1]))
                    break;
                pick = allowed[rnd() % n];
            }
            CHECK(tl_number_automaton_accept(a, pick, &err) == TL_OK);
            size_t len;
            const char *b = tl_number_index_token(idx, pick, &len);
            oracle_take(&w, pick, b, len);
            CHECK(tl_number_automaton_done(a) == w.done);
        }
        CHECKF(w.done, "%s %s: walk did not close (\"%.*s\")", name, json, (int)w.text_len, w.text);
        if (w.done) {
            tl_number_value val;
            CHECK(tl_number_automaton_value(a, &val, &err) == TL_OK);
            size_t tl;
            const char *t = tl_number_automaton_text(a, &tl);
            CHECK(tl == w.text_len && memcmp(t, w.text, tl) == 0);
            CHECK(tl_number_spec_accepts(&spec, t, tl, NULL));
            size_t tail_len;
            tl_number_automaton_tail(a, &tail_len);
            vs.tails += tail_len > 0;
            CHECK(close.allow_tail || tail_len == 0);
        }
        tl_number_automaton_free(a);
    }
    fprintf(stderr,
            "%s: %d tokens, %d walks, %d steps compared with the oracle (%d inside a terminator), %d closing tails, "
            "%d mismatching steps\n",
            name, n_tok, vs.walks, vs.steps, vs.term_steps, vs.tails, vs.mismatches);
    free(allowed);
    free(mine);
    free(mask);
    tl_number_index_free(idx);
    tl_vocab_free(v);
}

/* Automaton errors: no way to close, a terminator that starts like a number,
 * tokens after the end, a value before the end. */
static void test_errors(void) {
    tl_vocab *v = NULL;
    tl_error err = {0};
    if (tl_vocab_load_file(tl_fixture("vocab/ggml-vocab-qwen3.gguf"), &v, &err) != TL_OK) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    tl_number_index *idx = NULL;
    CHECK(tl_number_index_new(v, &idx, &err) == TL_OK);
    tl_number_spec spec;
    CHECK(tl_number_spec_integer(0, 100, 1, &spec, &err) == TL_OK);
    tl_number_automaton *a = NULL;
    tl_number_close none = {0};
    CHECK(tl_number_automaton_new(idx, &spec, &none, &a, &err) == TL_ERR_INVALID && a == NULL);
    CHECK(strstr(err.msg, "no token can close") != NULL);
    tl_number_close digit = {.terminator = "5"};
    CHECK(tl_number_automaton_new(idx, &spec, &digit, &a, &err) == TL_ERR_INVALID && a == NULL);
    tl_number_close bad_id = {.terminator_ids = (int32_t[]){-5}, .n_terminator_ids = 1};
    CHECK(tl_number_automaton_new(idx, &spec, &bad_id, &a, &err) == TL_ERR_INVALID && a == NULL);
    tl_number_close quote = {.terminator = "\""};
    CHECK(tl_number_automaton_new(idx, &spec, &quote, &a, &err) == TL_OK);
    tl_number_value val;
    CHECK(tl_number_automaton_value(a, &val, &err) == TL_ERR_INVALID);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(tl_vocab_tokenize(v, "42\"", 3, false, false, &ids, &n, &err) == TL_OK);
    for (size_t i = 0; i < n; i++)
        CHECK(tl_number_automaton_accept(a, ids[i], &err) == TL_OK);
    CHECK(tl_number_automaton_done(a));
    CHECK(tl_number_automaton_value(a, &val, &err) == TL_OK && val.is_integer && val.ival == 42);
    CHECK(tl_number_automaton_accept(a, ids[0], &err) == TL_ERR_INVALID);
    CHECK(tl_number_automaton_accept(a, -1, &err) == TL_ERR_INVALID);
    free(ids);
    /* 101 is out of range: the third digit is refused */
    tl_number_automaton_reset(a);
    CHECK(tl_vocab_tokenize(v, "101", 3, false, false, &ids, &n, &err) == TL_OK && n == 3);
    CHECK(tl_number_automaton_accept(a, ids[0], &err) == TL_OK);
    CHECK(tl_number_automaton_accept(a, ids[1], &err) == TL_OK);
    CHECK(tl_number_automaton_accept(a, ids[2], &err) == TL_ERR_INVALID);
    size_t tl;
    CHECK(strcmp(tl_number_automaton_text(a, &tl), "10") == 0 && tl == 2);
    free(ids);
    tl_number_automaton_free(a);
    tl_number_index_free(idx);
    tl_vocab_free(v);
}

/* The vocabulary's shared index (tl_number_index_of): built once, the same
 * object for every caller and thread, equal to a fresh one, freed with the
 * vocabulary (the sanitizer run checks no leak). */
static const tl_number_index *shared_seen[4];
static tl_vocab *shared_vocab;
static void *take_shared(void *arg) {
    tl_error err = {0};
    if (tl_number_index_of(shared_vocab, &shared_seen[(intptr_t)arg], &err) != TL_OK)
        shared_seen[(intptr_t)arg] = NULL;
    return NULL;
}

static void test_shared_index(void) {
    tl_error err = {0};
    if (tl_vocab_load_file(tl_fixture("vocab/ggml-vocab-qwen3.gguf"), &shared_vocab, &err) != TL_OK) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    pthread_t th[4];
    for (intptr_t i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, take_shared, (void *)i) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    const tl_number_index *again = NULL;
    CHECK(tl_number_index_of(shared_vocab, &again, &err) == TL_OK);
    for (int i = 0; i < 4; i++)
        CHECK(shared_seen[i] != NULL && shared_seen[i] == again);
    tl_number_index *fresh = NULL;
    CHECK(tl_number_index_new(shared_vocab, &fresh, &err) == TL_OK);
    CHECK(fresh && again && tl_number_index_n_tokens(fresh) == tl_number_index_n_tokens(again));
    for (int32_t id = 0; fresh && again && id < tl_number_index_n_tokens(fresh); id += 97) {
        size_t a, b;
        const char *ta = tl_number_index_token(fresh, id, &a), *tb = tl_number_index_token(again, id, &b);
        CHECK(a == b && !memcmp(ta, tb, a));
    }
    tl_number_index_free(fresh);
    tl_vocab_free(shared_vocab);
}

int main(void) {
    test_errors();
    test_shared_index();
    bool sanitizer = getenv("TL_SANITIZER_RUN") != NULL;
    static const char *vocabs[] = {"qwen3", "llama3", "llama-spm", "gpt-2", "phi-3", "deepseek-coder", "falcon",
                                   "starcoder"};
    for (size_t i = 0; i < sizeof vocabs / sizeof vocabs[0]; i++)
        run_vocab(vocabs[i], sanitizer ? 4 : (i < 3 ? 25 : 10));
    return TEST_DONE();
}
