/* vocab.c: loading a vocabulary from GGUF metadata, special tokens, and the
 * tokenize/detokenize entry points of vocab.h.
 *
 * The reference for every id is llama.cpp: its defaults (SPM bos 1 / eos 2,
 * add_space_prefix on for SPM), its fix-ups of token types (end-of-turn and
 * FIM tokens are treated as control tokens even when the file says
 * user-defined) and its special-token splitting order (longest text first,
 * each special splitting every remaining text fragment) are reproduced here.
 * SPM and BPE proper live in spm.c and bpe.c. */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"
#include "util/error.h"
#include "util/strbuf.h"

bool tl_idvec_push(tl_idvec *iv, int32_t id) {
    if (iv->n == iv->cap) {
        size_t cap = iv->cap ? iv->cap * 2 : 64;
        int32_t *v = realloc(iv->v, cap * sizeof *v);
        if (!v)
            return false;
        iv->v = v;
        iv->cap = cap;
    }
    iv->v[iv->n++] = id;
    return true;
}

/* ---- loading -------------------------------------------------------------- */

static const tl_gguf_value *get_string_array(const tl_gguf *g, const char *key, tl_error *err, tl_status *st) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    *st = TL_OK;
    if (!v)
        return NULL;
    if (v->type != TL_GGUF_ARRAY || v->v.arr.elem != TL_GGUF_STRING || !v->v.arr.strs)
        *st = tl_error_set(err, TL_ERR_FORMAT, "%s: %s is not an array of strings", tl_gguf_path(g), key);
    return v;
}

static bool is_numeric_array(const tl_gguf_value *v) {
    if (v->type != TL_GGUF_ARRAY)
        return false;
    switch (v->v.arr.elem) {
    case TL_GGUF_STRING: case TL_GGUF_ARRAY: return false;
    default: return true;
    }
}

/* A metadata value of the wrong type is a malformed file (the getter's message names the key). */
static tl_status as_format_error(tl_error *err) {
    if (err)
        err->code = TL_ERR_FORMAT;
    return TL_ERR_FORMAT;
}

/* Reads an optional token id key; absent keeps *id. Out-of-range ids (a -1
 * stored as a signed integer included) are ignored like the reference does (it
 * warns and keeps the default); a non-integer is a malformed file. */
static tl_status read_token_id(const tl_gguf *g, const char *key, int32_t n_tokens, int32_t *id, tl_error *err) {
    const tl_gguf_value *v = tl_gguf_get(g, key);
    if (!v)
        return TL_OK;
    int64_t x;
    if (tl_gguf_get_i64(g, key, &x, err) != TL_OK)
        return as_format_error(err);
    if (x >= 0 && x < n_tokens)
        *id = (int32_t)x;
    return TL_OK;
}

static tl_status read_bool(const tl_gguf *g, const char *key, bool *out, tl_error *err) {
    if (!tl_gguf_get(g, key))
        return TL_OK;
    return tl_gguf_get_bool(g, key, out, err) == TL_OK ? TL_OK : as_format_error(err);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int32_t find_text(const tl_vocab *v, const char *s) {
    int64_t id = tl_strtab_find(&v->strs, s, strlen(s));
    return id >= 0 && id < v->n_tokens ? (int32_t)id : -1;
}

/* Sort key of the special-token cache: longest text first, then by id. */
typedef struct special_key {
    uint32_t len;
    int32_t id;
} special_key;

static int cmp_special(const void *a, const void *b) {
    const special_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static tl_status build_specials(tl_vocab *v, tl_error *err) {
    size_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (v->attr[i] == TL_TOKEN_CONTROL || v->attr[i] == TL_TOKEN_USER_DEFINED || v->attr[i] == TL_TOKEN_UNKNOWN)
            n++;
    v->specials = malloc((n ? n : 1) * sizeof *v->specials);
    v->special_by_first = malloc((n ? n : 1) * sizeof *v->special_by_first);
    v->special_first_start = calloc(257, sizeof *v->special_first_start);
    if (!v->specials || !v->special_by_first || !v->special_first_start)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    special_key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (v->attr[i] == TL_TOKEN_CONTROL || v->attr[i] == TL_TOKEN_USER_DEFINED || v->attr[i] == TL_TOKEN_UNKNOWN)
            keys[n++] = (special_key){v->strs.lens[i], i};
    qsort(keys, n, sizeof *keys, cmp_special);
    for (size_t k = 0; k < n; k++)
        v->specials[k] = keys[k].id;
    free(keys);
    v->n_specials = n;
    /* group by first byte, keeping the longest-first order inside each group */
    for (size_t k = 0; k < n; k++) {
        const char *t = tl_strtab_str(&v->strs, (uint32_t)v->specials[k]);
        v->special_first_start[(unsigned char)t[0] + 1]++;
    }
    for (int b = 0; b < 256; b++)
        v->special_first_start[b + 1] += v->special_first_start[b];
    uint32_t fill[256];
    memcpy(fill, v->special_first_start, sizeof fill);
    for (size_t k = 0; k < n; k++) {
        const char *t = tl_strtab_str(&v->strs, (uint32_t)v->specials[k]);
        v->special_by_first[fill[(unsigned char)t[0]]++] = (int32_t)k;
    }
    return TL_OK;
}

static bool is_in(const int32_t *ids, size_t n, int32_t id) {
    for (size_t k = 0; id >= 0 && k < n; k++)
        if (ids[k] == id)
            return true;
    return false;
}

/* Removes id from the sorted ids[0..n); returns the new count. */
static size_t drop_id(int32_t *ids, size_t n, int32_t id) {
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (ids[k] != id)
            ids[u++] = ids[k];
    return u;
}

/* The reference's text-based fix-ups: end-of-turn, end-of-message and FIM
 * tokens become control tokens, and the end-of-generation set is built. */
static tl_status apply_special_fixups(tl_vocab *v, tl_error *err) {
#define FULLWIDTH_END_OF_SENTENCE "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>"
    static const char *const eot_names[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", FULLWIDTH_END_OF_SENTENCE,
                                            "<end_of_utterance>"};
    /* Texts that end generation. Each also becomes a control token (the
     * reference ORs the control bit into its attributes), so with special-token
     * parsing off its text stays ordinary text even where the file typed it
     * user-defined: phi-3's "</s>" inside ordinary text is not split off. */
    static const char *const eog_names[] = {"<|eot_id|>",   "<|im_end|>",      "<|end|>",
                                            "<|return|>",   "<|call|>",        "<|flush|>",
                                            "<|calls|>",    "<end_of_turn>",   "<|endoftext|>",
                                            "</s>",         "<|eom_id|>",      "<EOT>",
                                            "_<EOT>",       "[EOT]",           "[EOS]",
                                            "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                                            "<turn|>",      "<|tool_response>", FULLWIDTH_END_OF_SENTENCE};
#undef FULLWIDTH_END_OF_SENTENCE
    static const char *const fim_names[] = {
        "<|fim_prefix|>", "<fim-prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
        "<|fim_suffix|>", "<fim-suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>",
        "<|fim_middle|>", "<fim-middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
    };
    static const char *const fim_eog_names[] = {"<|fim_pad|>", "<fim-pad>", "<PAD>", "<|fim_repo|>", "<|repo_name|>",
                                                "<fim-repo>", "<REPO>", "<|file_sep|>"};
    if (v->eot < 0) {
        for (size_t k = 0; k < sizeof eot_names / sizeof eot_names[0] && v->eot < 0; k++)
            v->eot = find_text(v, eot_names[k]);
    }
    if (v->eot >= 0)
        v->attr[v->eot] = TL_TOKEN_CONTROL;
    if (v->eom < 0)
        v->eom = find_text(v, "<|eom_id|>");
    if (v->eom >= 0)
        v->attr[v->eom] = TL_TOKEN_CONTROL;
    for (size_t k = 0; k < sizeof fim_names / sizeof fim_names[0]; k++) {
        int32_t id = find_text(v, fim_names[k]);
        if (id >= 0)
            v->attr[id] = TL_TOKEN_CONTROL;
    }
    int32_t eog[64];
    size_t n_eog = 0;
    for (size_t k = 0; k < sizeof fim_eog_names / sizeof fim_eog_names[0]; k++) {
        int32_t id = find_text(v, fim_eog_names[k]);
        if (id >= 0) {
            v->attr[id] = TL_TOKEN_CONTROL;
            eog[n_eog++] = id;
        }
    }
    for (size_t k = 0; k < sizeof eog_names / sizeof eog_names[0]; k++) {
        int32_t id = find_text(v, eog_names[k]);
        if (id >= 0) {
            v->attr[id] = TL_TOKEN_CONTROL;
            eog[n_eog++] = id;
        }
    }
    if (v->eos >= 0)
        eog[n_eog++] = v->eos;
    if (v->eot >= 0)
        eog[n_eog++] = v->eot;
    if (v->eom >= 0)
        eog[n_eog++] = v->eom;
    qsort(eog, n_eog, sizeof eog[0], cmp_i32);
    size_t u = 0;
    for (size_t k = 0; k < n_eog; k++)
        if (u == 0 || eog[u - 1] != eog[k])
            eog[u++] = eog[k];
    /* The reference's two exceptions: harmony/solar-open vocabularies (with
     * <|return|> and <|call|>, or <|calls|> and <|flush|>) do not end on
     * <|end|>, which becomes user-defined; gemma4's (with <|tool_response>)
     * do not end on </s>, which becomes normal. */
    int32_t end_id = find_text(v, "<|end|>"), s_id = find_text(v, "</s>");
    bool has_return = is_in(eog, u, find_text(v, "<|return|>")), has_flush = is_in(eog, u, find_text(v, "<|flush|>"));
    bool has_call = is_in(eog, u, find_text(v, "<|call|>")) || is_in(eog, u, find_text(v, "<|calls|>"));
    if (is_in(eog, u, end_id) && ((has_return && has_call) || (has_call && has_flush))) {
        u = drop_id(eog, u, end_id);
        v->attr[end_id] = TL_TOKEN_USER_DEFINED;
    }
    if (is_in(eog, u, s_id) && is_in(eog, u, find_text(v, "<|tool_response>"))) {
        u = drop_id(eog, u, s_id);
        v->attr[s_id] = TL_TOKEN_NORMAL;
    }
    v->eog = malloc((u ? u : 1) * sizeof *v->eog);
    if (!v->eog)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    memcpy(v->eog, eog, u * sizeof *v->eog);
    v->n_eog = u;
    return TL_OK;
}

/* Per-model strip attributes, as the reference sets them by name. */
static void apply_strip_rules(tl_vocab *v) {
    if (strstr(v->pre, "jina-v2-de") || strstr(v->pre, "jina-v2-es") || strstr(v->pre, "jina-v2-code")) {
        int32_t id = find_text(v, "<mask>");
        if (id >= 0)
            v->strip[id] |= TL_STRIP_LEFT;
    } else if (strstr(v->model_name, "phi-3") || strstr(v->model_name, "phi3")) {
        for (size_t k = 0; k < v->n_specials; k++)
            v->strip[v->specials[k]] |= TL_STRIP_RIGHT;
        int32_t id = find_text(v, "</s>");
        if (id >= 0)
            v->strip[id] |= TL_STRIP_RIGHT;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t k = 0; k < 3; k++) {
            id = find_text(v, keep[k]);
            if (id >= 0)
                v->strip[id] &= (uint8_t)~TL_STRIP_RIGHT;
        }
    }
}

static tl_status load_merges(tl_vocab *v, const tl_gguf *g, tl_error *err) {
    tl_status st;
    const tl_gguf_value *mv = get_string_array(g, "tokenizer.ggml.merges", err, &st);
    if (st != TL_OK)
        return st;
    if (!mv)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: BPE vocabulary without tokenizer.ggml.merges", tl_gguf_path(g));
    uint64_t n = mv->v.arr.n;
    if (n > (uint64_t)INT32_MAX)
        return tl_error_set(err, TL_ERR_FORMAT, "%s: %llu merges is too many", tl_gguf_path(g), (unsigned long long)n);
    uint64_t cap = 1024;
    while (cap < n * 2 + 2)
        cap *= 2;
    v->merges = malloc(cap * sizeof *v->merges);
    if (!v->merges)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory for %llu merges", (unsigned long long)n);
    for (uint64_t i = 0; i < cap; i++)
        v->merges[i].rank = -1;
    v->merge_mask = cap - 1;
    char *buf = NULL;
    size_t buf_cap = 0;
    for (uint64_t r = 0; r < n; r++) {
        const char *s = mv->v.arr.strs[r].ptr;
        size_t len = (size_t)mv->v.arr.strs[r].len;
        /* "left right": the split is the first space after the first byte */
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
        if (!sp)
            continue; /* the reference files it under an empty pair that never matches */
        size_t ll = (size_t)(sp - s), rl = len - ll - 1;
        int64_t li = tl_strtab_find(&v->strs, s, ll);
        if (li < 0)
            li = tl_strtab_add(&v->strs, s, ll, true);
        int64_t ri = tl_strtab_find(&v->strs, sp + 1, rl);
        if (ri < 0)
            ri = tl_strtab_add(&v->strs, sp + 1, rl, true);
        if (ll + rl > buf_cap) {
            buf_cap = (ll + rl) * 2;
            char *nb = realloc(buf, buf_cap);
            if (!nb) {
                free(buf);
                return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
            }
            buf = nb;
        }
        memcpy(buf, s, ll);
        memcpy(buf + ll, sp + 1, rl);
        int64_t res = tl_strtab_find(&v->strs, buf, ll + rl);
        if (res < 0)
            res = tl_strtab_add(&v->strs, buf, ll + rl, true);
        if (li < 0 || ri < 0 || res < 0) {
            free(buf);
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
        }
        uint64_t key = ((uint64_t)li << 32) | (uint64_t)ri;
        uint64_t h = tl_tok_hash(&key, sizeof key) & v->merge_mask;
        while (v->merges[h].rank >= 0 && v->merges[h].key != key)
            h = (h + 1) & v->merge_mask;
        if (v->merges[h].rank < 0) { /* a repeated pair keeps its first (lowest) rank */
            v->merges[h].key = key;
            v->merges[h].rank = (int32_t)r;
            v->merges[h].result = (uint32_t)res;
        }
    }
    free(buf);
    return TL_OK;
}

bool tl_bpe_find_merge(const tl_vocab *v, uint32_t left, uint32_t right, int32_t *rank, uint32_t *result) {
    uint64_t key = ((uint64_t)left << 32) | right;
    uint64_t h = tl_tok_hash(&key, sizeof key) & v->merge_mask;
    for (;;) {
        const tl_bpe_merge *m = &v->merges[h];
        if (m->rank < 0)
            return false;
        if (m->key == key) {
            *rank = m->rank;
            *result = m->result;
            return true;
        }
        h = (h + 1) & v->merge_mask;
    }
}

static void copy_str(char *dst, size_t cap, tl_gguf_str s, bool lower) {
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = lower ? (char)tolower((unsigned char)s.ptr[i]) : s.ptr[i];
    dst[n] = '\0';
}

tl_status tl_vocab_load(const tl_gguf *g, tl_vocab **out, tl_error *err) {
    *out = NULL;
    const char *path = tl_gguf_path(g);
    tl_gguf_str model;
    if (!tl_gguf_get(g, "tokenizer.ggml.model"))
        return tl_error_set(err, TL_ERR_FORMAT, "%s: no tokenizer (tokenizer.ggml.model is absent)", path);
    if (tl_gguf_get_str(g, "tokenizer.ggml.model", &model, err) != TL_OK)
        return as_format_error(err);
    tl_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&v->memo_mu, NULL);
    tl_status st = TL_OK;
    if (tl_gguf_str_eq(model, "llama")) {
        v->kind = TL_VOCAB_SPM;
    } else if (tl_gguf_str_eq(model, "gpt2")) {
        v->kind = TL_VOCAB_BPE;
    } else {
        st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: unsupported tokenizer model '%.*s' (tokenizer.ggml.model)",
                          path, (int)(model.len > 64 ? 64 : model.len), model.ptr);
        goto fail;
    }
    strcpy(v->pre, "default");
    if (tl_gguf_get(g, "tokenizer.ggml.pre")) {
        tl_gguf_str pre;
        if (tl_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err) != TL_OK) {
            st = as_format_error(err);
            goto fail;
        }
        if (pre.len >= sizeof v->pre || memchr(pre.ptr, '\0', pre.len)) {
            st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: unknown pre-tokenizer '%.*s' (tokenizer.ggml.pre)", path,
                              (int)(pre.len > 64 ? 64 : pre.len), pre.ptr);
            goto fail;
        }
        copy_str(v->pre, sizeof v->pre, pre, false);
    }
    if (tl_gguf_get(g, "general.name")) {
        tl_gguf_str name;
        if (tl_gguf_get_str(g, "general.name", &name, NULL) == TL_OK)
            copy_str(v->model_name, sizeof v->model_name, name, true);
    }

    const tl_gguf_value *tokens = get_string_array(g, "tokenizer.ggml.tokens", err, &st);
    if (st != TL_OK)
        goto fail;
    if (!tokens || tokens->v.arr.n == 0) {
        st = tl_error_set(err, TL_ERR_FORMAT, "%s: tokenizer.ggml.tokens is absent or empty", path);
        goto fail;
    }
    if (tokens->v.arr.n >= (uint64_t)INT32_MAX / 2) {
        st = tl_error_set(err, TL_ERR_FORMAT, "%s: %llu tokens is too many", path,
                          (unsigned long long)tokens->v.arr.n);
        goto fail;
    }
    v->n_tokens = (int32_t)tokens->v.arr.n;
    const tl_gguf_value *scores = tl_gguf_get(g, "tokenizer.ggml.scores");
    const tl_gguf_value *types = tl_gguf_get(g, "tokenizer.ggml.token_type");
    if (scores && (!is_numeric_array(scores) || scores->v.arr.n != (uint64_t)v->n_tokens)) {
        st = tl_error_set(err, TL_ERR_FORMAT, "%s: tokenizer.ggml.scores must be %d numbers", path, v->n_tokens);
        goto fail;
    }
    if (types && (!is_numeric_array(types) || types->v.arr.n != (uint64_t)v->n_tokens)) {
        st = tl_error_set(err, TL_ERR_FORMAT, "%s: tokenizer.ggml.token_type must be %d numbers", path, v->n_tokens);
        goto fail;
    }
    v->scores = calloc((size_t)v->n_tokens, sizeof *v->scores);
    v->attr = malloc((size_t)v->n_tokens);
    v->strip = calloc((size_t)v->n_tokens, 1);
    if (!v->scores || !v->attr || !v->strip) {
        st = tl_error_set(err, TL_ERR_NOMEM, "out of memory for %d tokens", v->n_tokens);
        goto fail;
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        tl_gguf_str t = tokens->v.arr.strs[i];
        char empty_name[32];
        const char *text = t.ptr;
        size_t len = (size_t)t.len;
        if (len == 0) { /* the reference renames empty tokens so they never match */
            len = (size_t)snprintf(empty_name, sizeof empty_name, "[EMPTY_%d]", i);
            text = empty_name;
        }
        if (tl_strtab_add(&v->strs, text, len, true) != i) {
            st = tl_error_set(err, TL_ERR_NOMEM, "out of memory loading token %d", i);
            goto fail;
        }
        v->scores[i] = scores ? (float)tl_gguf_arr_float(scores, (uint64_t)i) : 0.0f;
        int64_t type = types ? tl_gguf_arr_int(types, (uint64_t)i) : TL_TOKEN_NORMAL;
        /* undefined types act like control tokens that never print (the reference's UNDEFINED) */
        v->attr[i] = (uint8_t)(type >= TL_TOKEN_NORMAL && type <= TL_TOKEN_BYTE ? type : 0);
    }

    /* defaults, then metadata */
    if (v->kind == TL_VOCAB_SPM) {
        v->bos = v->n_tokens > 1 ? 1 : -1;
        v->eos = v->n_tokens > 2 ? 2 : -1;
        v->unk = 0;
        v->add_bos = true;
        v->add_space_prefix = true;
    } else {
        v->bos = v->eos = v->unk = -1;
        if (!tl_pretok_known(v->pre)) {
            st = tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: unknown pre-tokenizer '%s' (tokenizer.ggml.pre)", path,
                              v->pre);
            goto fail;
        }
        if (!strcmp(v->pre, "llama3") || !strcmp(v->pre, "llama-v3") || !strcmp(v->pre, "llama-bpe") ||
            !strcmp(v->pre, "falcon3") || !strcmp(v->pre, "tekken")) {
            v->ignore_merges = true;
            v->add_bos = true;
        }
        if (!strcmp(v->pre, "chameleon"))
            v->add_bos = true;
    }
    v->eot = v->eom = v->pad = -1;
    if ((st = read_token_id(g, "tokenizer.ggml.bos_token_id", v->n_tokens, &v->bos, err)) ||
        (st = read_token_id(g, "tokenizer.ggml.eos_token_id", v->n_tokens, &v->eos, err)) ||
        (st = read_token_id(g, "tokenizer.ggml.eot_token_id", v->n_tokens, &v->eot, err)) ||
        (st = read_token_id(g, "tokenizer.ggml.eom_token_id", v->n_tokens, &v->eom, err)) ||
        (st = read_token_id(g, "tokenizer.ggml.unknown_token_id", v->n_tokens, &v->unk, err)) ||
        (st = read_token_id(g, "tokenizer.ggml.padding_token_id", v->n_tokens, &v->pad, err)) ||
        (st = read_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
        (st = read_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos, err)) ||
        (st = read_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err)))
        goto fail;
    if (v->unk >= v->n_tokens)
        v->unk = -1;

    if (tl_gguf_get(g, "tokenizer.chat_template")) {
        tl_gguf_str tpl;
        if (tl_gguf_get_str(g, "tokenizer.chat_template", &tpl, NULL) == TL_OK) {
            v->chat_template = malloc((size_t)tpl.len + 1);
            if (!v->chat_template) {
                st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
                goto fail;
            }
            memcpy(v->chat_template, tpl.ptr, (size_t)tpl.len);
            v->chat_template[tpl.len] = '\0';
        }
    }

    if ((st = apply_special_fixups(v, err)) != TL_OK || (st = build_specials(v, err)) != TL_OK)
        goto fail;
    apply_strip_rules(v);

    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        v->byte_token[b] = find_text(v, name);
        if (v->byte_token[b] < 0) {
            char raw = (char)b;
            int64_t id = tl_strtab_find(&v->strs, &raw, 1);
            v->byte_token[b] = id >= 0 && id < v->n_tokens ? (int32_t)id : -1;
        }
    }
    if (v->kind == TL_VOCAB_BPE) {
        if ((st = load_merges(v, g, err)) != TL_OK || (st = tl_pretok_create(v->pre, &v->pretok, err)) != TL_OK)
            goto fail;
        for (int b = 0; b < 256; b++) {
            char utf[4];
            size_t ul = tl_utf8_encode(tl_gpt2_byte_to_cpt((unsigned char)b), utf);
            v->byte_iid[b] = tl_strtab_find(&v->strs, utf, ul);
        }
    }
    *out = v;
    return TL_OK;
fail:
    tl_vocab_free(v);
    return st;
}

tl_status tl_vocab_load_file(const char *path, tl_vocab **out, tl_error *err) {
    tl_gguf *g = NULL;
    *out = NULL;
    tl_status st = tl_gguf_open(path, &g, err);
    if (st != TL_OK)
        return st;
    st = tl_vocab_load(g, out, err);
    tl_gguf_close(g);
    return st;
}

void tl_vocab_free(tl_vocab *v) {
    if (!v)
        return;
    tl_strtab_free(&v->strs);
    free(v->scores);
    free(v->attr);
    free(v->strip);
    free(v->specials);
    free(v->special_first_start);
    free(v->special_by_first);
    free(v->eog);
    free(v->chat_template);
    free(v->merges);
    tl_pretok_free(v->pretok);
    for (int i = 0; i < TL_VOCAB_MEMO_SLOTS; i++)
        if (v->memo[i])
            v->memo_free[i](v->memo[i]);
    pthread_mutex_destroy(&v->memo_mu);
    free(v);
}

tl_status tl_vocab_memo(const tl_vocab *cv, tl_vocab_memo_slot slot,
                        tl_status (*build)(const tl_vocab *v, void **out, tl_error *err), void (*free_fn)(void *),
                        void **out, tl_error *err) {
    tl_vocab *v = (tl_vocab *)cv; /* the memo is a cache; the vocabulary itself is not changed */
    *out = NULL;
    if ((unsigned)slot >= TL_VOCAB_MEMO_SLOTS)
        return tl_error_set(err, TL_ERR_INVALID, "vocab: no memo slot %d", (int)slot);
    pthread_mutex_lock(&v->memo_mu);
    tl_status st = TL_OK;
    if (!v->memo[slot] && !(st = build(cv, &v->memo[slot], err)))
        v->memo_free[slot] = free_fn;
    *out = v->memo[slot];
    pthread_mutex_unlock(&v->memo_mu);
    return st;
}

/* ---- accessors ------------------------------------------------------------ */

tl_vocab_kind tl_vocab_kind_of(const tl_vocab *v) { return v->kind; }
const char *tl_vocab_pre(const tl_vocab *v) { return v->pre; }
int32_t tl_vocab_n_tokens(const tl_vocab *v) { return v->n_tokens; }
int32_t tl_vocab_bos(const tl_vocab *v) { return v->bos; }
int32_t tl_vocab_eos(const tl_vocab *v) { return v->eos; }
int32_t tl_vocab_eot(const tl_vocab *v) { return v->eot; }
bool tl_vocab_add_bos(const tl_vocab *v) { return v->add_bos && v->bos >= 0; }
bool tl_vocab_add_eos(const tl_vocab *v) { return v->add_eos && v->eos >= 0; }
const char *tl_vocab_chat_template(const tl_vocab *v) { return v->chat_template; }

bool tl_vocab_is_eog(const tl_vocab *v, int32_t id) {
    if (id < 0)
        return false;
    return bsearch(&id, v->eog, v->n_eog, sizeof *v->eog, cmp_i32) != NULL;
}

tl_token_attr tl_vocab_token_attr(const tl_vocab *v, int32_t id) {
    if (id < 0 || id >= v->n_tokens)
        return (tl_token_attr)0;
    return (tl_token_attr)v->attr[id];
}

const char *tl_vocab_token_piece(const tl_vocab *v, int32_t id, size_t *len) {
    if (id < 0 || id >= v->n_tokens) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->strs.lens[id];
    return tl_strtab_str(&v->strs, (uint32_t)id);
}

int32_t tl_vocab_piece_to_id(const tl_vocab *v, const char *piece, size_t len) {
    int64_t id = tl_strtab_find(&v->strs, piece, len);
    return id >= 0 && id < v->n_tokens ? (int32_t)id : -1;
}

/* ---- tokenize ------------------------------------------------------------- */

/* A piece of the input: plain text [off, off + len) or one special token. */
typedef struct fragment {
    int32_t token; /* -1 for text */
    size_t off, len;
} fragment;

typedef struct frag_list {
    fragment *v;
    size_t n, cap;
} frag_list;

static bool frag_push(frag_list *fl, fragment f) {
    if (fl->n == fl->cap) {
        size_t cap = fl->cap ? fl->cap * 2 : 16;
        fragment *nv = realloc(fl->v, cap * sizeof *nv);
        if (!nv)
            return false;
        fl->v = nv;
        fl->cap = cap;
    }
    fl->v[fl->n++] = f;
    return true;
}

static bool special_usable(const tl_vocab *v, int32_t id, bool parse_special) {
    return parse_special || !(v->attr[id] == TL_TOKEN_CONTROL || v->attr[id] == TL_TOKEN_UNKNOWN);
}

/* Splits text into fragments at special-token texts, the reference's way: for
 * each special (longest first), every text fragment is cut at each of its
 * occurrences, left to right. Specials absent from the whole text are skipped
 * up front (a fragment is a substring, so they cannot occur in one). */
static tl_status split_specials(const tl_vocab *v, const char *text, size_t len, bool parse_special, frag_list *out,
                                tl_error *err) {
    out->n = 0;
    if (len == 0)
        return TL_OK;
    if (!frag_push(out, (fragment){-1, 0, len}))
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    if (v->n_specials == 0)
        return TL_OK;
    /* which specials occur at all */
    uint8_t *present = calloc(v->n_specials, 1); /* by index into v->specials */
    if (!present)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    size_t n_present = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        for (uint32_t k = v->special_first_start[c]; k < v->special_first_start[c + 1]; k++) {
            int32_t sk = v->special_by_first[k], id = v->specials[sk];
            uint32_t tl = v->strs.lens[id];
            if (!present[sk] && tl <= len - i && memcmp(text + i, tl_strtab_str(&v->strs, (uint32_t)id), tl) == 0 &&
                special_usable(v, id, parse_special)) {
                present[sk] = 1;
                n_present++;
            }
        }
    }
    tl_status st = TL_OK;
    frag_list next = {NULL, 0, 0};
    for (size_t s = 0; s < v->n_specials && n_present > 0; s++) {
        int32_t id = v->specials[s];
        if (!present[s])
            continue;
        n_present--;
        const char *stext = tl_strtab_str(&v->strs, (uint32_t)id);
        size_t slen = v->strs.lens[id];
        next.n = 0;
        for (size_t f = 0; f < out->n; f++) {
            fragment fr = out->v[f];
            if (fr.token >= 0) {
                if (!frag_push(&next, fr))
                    goto oom;
                continue;
            }
            size_t off = fr.off, flen = fr.len;
            for (;;) {
                const char *m = flen >= slen ? memmem(text + off, flen, stext, slen) : NULL;
                if (!m) {
                    if (flen > 0 && !frag_push(&next, (fragment){-1, off, flen}))
                        goto oom;
                    break;
                }
                size_t moff = (size_t)(m - text);
                size_t left_len = moff - off;
                if (v->strip[id] & TL_STRIP_LEFT)
                    while (left_len > 0 && isspace((unsigned char)text[off + left_len - 1]))
                        left_len--;
                if (left_len > 0 && !frag_push(&next, (fragment){-1, off, left_len}))
                    goto oom;
                if (!frag_push(&next, (fragment){id, 0, 0}))
                    goto oom;
                size_t right = moff + slen, right_len = off + flen - right;
                if (v->strip[id] & TL_STRIP_RIGHT)
                    while (right_len > 0 && isspace((unsigned char)text[right])) {
                        right++;
                        right_len--;
                    }
                off = right;
                flen = right_len;
                if (flen == 0)
                    break;
            }
        }
        frag_list t = *out;
        *out = next;
        next = t;
    }
    goto done;
oom:
    st = tl_error_set(err, TL_ERR_NOMEM, "out of memory");
done:
    free(next.v);
    free(present);
    return st;
}

tl_status tl_vocab_tokenize(const tl_vocab *v, const char *text, size_t len, bool add_special, bool parse_special,
                            int32_t **ids, size_t *n_ids, tl_error *err) {
    *ids = NULL;
    *n_ids = 0;
    if (!text && len > 0)
        return tl_error_set(err, TL_ERR_INVALID, "tokenize: NULL text");
    tl_idvec out = {NULL, 0, 0};
    frag_list frags = {NULL, 0, 0};
    tl_status st = split_specials(v, text, len, parse_special, &frags, err);
    if (st != TL_OK)
        goto fail;
    if (add_special && tl_vocab_add_bos(v) && !tl_idvec_push(&out, v->bos))
        goto oom;
    bool prev_special = true; /* SPM: a text fragment at the start or after a special gets the space prefix */
    for (size_t f = 0; f < frags.n; f++) {
        const fragment *fr = &frags.v[f];
        if (fr->token >= 0) {
            if (!tl_idvec_push(&out, fr->token))
                goto oom;
            prev_special = true;
            continue;
        }
        if (v->kind == TL_VOCAB_SPM)
            st = tl_spm_tokenize(v, text + fr->off, fr->len, v->add_space_prefix && prev_special, &out, err);
        else
            st = tl_bpe_tokenize(v, text + fr->off, fr->len, &out, err);
        if (st != TL_OK)
            goto fail;
        prev_special = false;
    }
    if (add_special && tl_vocab_add_eos(v) && !tl_idvec_push(&out, v->eos))
        goto oom;
    free(frags.v);
    if (!out.v && !(out.v = malloc(sizeof *out.v))) /* callers may always free *ids */
        goto oom;
    *ids = out.v;
    *n_ids = out.n;
    return TL_OK;
oom:
    st = tl_error_set(err, TL_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
fail:
    free(frags.v);
    free(out.v);
    return st;
}

/* ---- detokenize ----------------------------------------------------------- */

static size_t put(char *buf, size_t cap, size_t at, const void *src, size_t n) {
    if (at < cap)
        memcpy(buf + at, src, at + n <= cap ? n : cap - at);
    return at + n;
}

size_t tl_vocab_token_bytes(const tl_vocab *v, int32_t id, bool render_special, char *buf, size_t cap) {
    if (id < 0 || id >= v->n_tokens)
        return 0;
    uint8_t attr = v->attr[id];
    const char *t = tl_strtab_str(&v->strs, (uint32_t)id);
    size_t tl = v->strs.lens[id];
    if (attr == TL_TOKEN_CONTROL || attr == TL_TOKEN_UNKNOWN)
        return render_special ? put(buf, cap, 0, t, tl) : 0;
    if (attr == TL_TOKEN_USER_DEFINED)
        return put(buf, cap, 0, t, tl);
    size_t n = 0;
    if (v->kind == TL_VOCAB_SPM) {
        if (attr == TL_TOKEN_BYTE) {
            /* "<0xXX>" */
            unsigned b = 0;
            for (size_t i = 3; i < 5 && i < tl; i++) {
                char c = t[i];
                b = b * 16 + (unsigned)(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
            }
            char byte = (char)b;
            return put(buf, cap, 0, &byte, 1);
        }
        if (attr != TL_TOKEN_NORMAL)
            return 0;
        for (size_t i = 0; i < tl;) {
            if (i + 3 <= tl && memcmp(t + i, "\xE2\x96\x81", 3) == 0) {
                n = put(buf, cap, n, " ", 1);
                i += 3;
            } else {
                n = put(buf, cap, n, t + i, 1);
                i++;
            }
        }
        return n;
    }
    if (attr != TL_TOKEN_NORMAL)
        return 0;
    /* byte-level BPE: each codepoint of the piece stands for one byte */
    for (size_t i = 0; i < tl;) {
        uint32_t cpts[4]; /* adv bytes decode to at most adv codepoints */
        size_t adv = tl_utf8_len((unsigned char)t[i]);
        if (adv > tl - i)
            adv = tl - i;
        size_t n_cpts = tl_utf8_decode_all(t + i, adv, cpts);
        int b = n_cpts == 1 && adv == tl_utf8_len((unsigned char)t[i]) ? tl_gpt2_cpt_to_byte(cpts[0]) : -1;
        if (b >= 0) {
            char byte = (char)b;
            n = put(buf, cap, n, &byte, 1);
        } else {
            n = put(buf, cap, n, t + i, adv); /* not in the byte alphabet: keep the text */
        }
        i += adv;
    }
    return n;
}

tl_status tl_vocab_detokenize(const tl_vocab *v, const int32_t *ids, size_t n_ids, bool remove_leading_space,
                              bool render_special, struct tl_strbuf *out, tl_error *err) {
    bool strip_space = remove_leading_space && v->add_space_prefix;
    char small[256];
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= v->n_tokens)
            return tl_error_set(err, TL_ERR_INVALID, "detokenize: id %d at position %zu is outside the vocabulary (0..%d)",
                                id, i, v->n_tokens - 1);
        size_t n = tl_vocab_token_bytes(v, id, render_special, small, sizeof small);
        const char *p = small;
        char *big = NULL;
        if (n > sizeof small) {
            big = malloc(n);
            if (!big)
                return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
            tl_vocab_token_bytes(v, id, render_special, big, n);
            p = big;
        }
        /* the prefix space belongs to the first text token (after any BOS) */
        if (strip_space && n > 0 && id != v->bos) {
            if (p[0] == ' ') {
                p++;
                n--;
            }
            strip_space = false;
        }
        bool ok = tl_strbuf_append(out, p, n);
        free(big);
        if (!ok)
            return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    }
    return TL_OK;
}
