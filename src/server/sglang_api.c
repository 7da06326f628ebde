/* sglang_api.c: SGLang's native HTTP API over the embedded engine, so that
 * anything written against an SGLang server (including typellm's own SGLang
 * backend) can use typellm instead: /generate, /tokenize, /detokenize,
 * /model_info, /health_generate, /flush_cache.
 *
 * /generate runs the items of a batch in lockstep: each step presents every
 * unfinished item's whole sequence to the shared backend at once (the prefix
 * cache makes that cost one new token each), samples on this thread, and
 * records logprobs exactly as SGLang shapes them: triples
 * [logprob, token_id, text|null], log_softmax of the raw logits when greedy,
 * of logits/temperature otherwise. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/metrics.h"
#include "server/server_internal.h"
#include "typellm/common.h"
#include "typellm/util.h"

/* ---- small helpers ----------------------------------------------------------- */

static void fail_sglang(parse_failure *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_sglang(parse_failure *f, int status, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    f->status = status;
    f->body = json_pack("{s:{s:o,s:i}}", "error", "message", json_string_lossy(msg, strlen(msg)), "code", status);
}

/* Reads a list of token ids into *ids; false (with message) on a bad element. */
static bool read_id_list(const json_t *a, int32_t n_vocab, const char *what, int32_t **ids, size_t *n,
                         parse_failure *f) {
    size_t len = json_array_size(a);
    *ids = malloc((len ? len : 1) * sizeof **ids);
    *n = 0;
    if (!*ids) {
        fail_sglang(f, 413, "%s: too many ids", what);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_integer(v)) {
            fail_sglang(f, 400, "%s[%zu] must be an integer token id", what, i);
            return false;
        }
        json_int_t x = json_integer_value(v);
        if (x < 0 || x >= n_vocab) {
            fail_sglang(f, 400, "%s[%zu] = %lld is outside the vocabulary [0, %d)", what, i, (long long)x, n_vocab);
            return false;
        }
        (*ids)[(*n)++] = (int32_t)x;
    }
    return true;
}

static bool get_number(const json_t *o, const char *key, double *out, const char *where, parse_failure *f) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_number(v)) {
        fail_sglang(f, 400, "%s.%s must be a number", where, key);
        return false;
    }
    *out = json_number_value(v);
    if (!isfinite(*out)) {
        fail_sglang(f, 400, "%s.%s must be finite", where, key);
        return false;
    }
    return true;
}

static bool get_int(const json_t *o, const char *key, long long *out, const char *where, parse_failure *f) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_integer(v)) {
        fail_sglang(f, 400, "%s.%s must be an integer", where, key);
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

static bool get_bool(const json_t *o, const char *key, bool *out, const char *where, parse_failure *f) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return true;
    if (!json_is_boolean(v)) {
        fail_sglang(f, 400, "%s.%s must be true or false", where, key);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

/* ---- /generate parsing ------------------------------------------------------- */

static bool parse_sampling(const json_t *o, int32_t n_vocab, int cap, const char *where, gen_params *sp,
                           parse_failure *f) {
    sp->max_new_tokens = 128;
    sp->temperature = 1.0;
    sp->top_p = 1.0;
    sp->top_k = -1;
    sp->min_p = 0.0;
    sp->skip_special_tokens = true;
    if (!o || json_is_null(o))
        return true;
    if (!json_is_object(o)) {
        fail_sglang(f, 400, "%s must be an object", where);
        return false;
    }
    long long mnt = sp->max_new_tokens, topk = sp->top_k, n = 1, seed = 0;
    if (!get_int(o, "max_new_tokens", &mnt, where, f) || !get_number(o, "temperature", &sp->temperature, where, f) ||
        !get_number(o, "top_p", &sp->top_p, where, f) || !get_int(o, "top_k", &topk, where, f) ||
        !get_number(o, "min_p", &sp->min_p, where, f) || !get_bool(o, "ignore_eos", &sp->ignore_eos, where, f) ||
        !get_bool(o, "skip_special_tokens", &sp->skip_special_tokens, where, f) || !get_int(o, "n", &n, where, f))
        return false;
    if (mnt < 0 || mnt > cap) {
        fail_sglang(f, 400, "%s.max_new_tokens must be in [0, %d], got %lld", where, cap, mnt);
        return false;
    }
    sp->max_new_tokens = (int)mnt;
    if (sp->temperature < 0) {
        fail_sglang(f, 400, "%s.temperature must be >= 0", where);
        return false;
    }
    if (!(sp->top_p > 0 && sp->top_p <= 1)) {
        fail_sglang(f, 400, "%s.top_p must be in (0, 1]", where);
        return false;
    }
    if (topk == 0 || topk < -1) {
        fail_sglang(f, 400, "%s.top_k must be -1 (all) or >= 1", where);
        return false;
    }
    sp->top_k = topk > n_vocab ? -1 : (int)topk;
    if (sp->min_p < 0 || sp->min_p > 1) {
        fail_sglang(f, 400, "%s.min_p must be in [0, 1]", where);
        return false;
    }
    if (n != 1) {
        fail_sglang(f, 400, "%s.n: only n = 1 is supported", where);
        return false;
    }
    const char *seed_keys[2] = {"sampling_seed", "seed"};
    for (int k = 0; k < 2; k++) {
        if (json_object_get(o, seed_keys[k]) && !json_is_null(json_object_get(o, seed_keys[k]))) {
            if (!get_int(o, seed_keys[k], &seed, where, f))
                return false;
            sp->seed = (uint64_t)seed;
            sp->has_seed = true;
        }
    }
    const json_t *stop = json_object_get(o, "stop");
    if (json_is_string(stop)) {
        sp->stop = calloc(1, sizeof *sp->stop);
        sp->stop[0] = strdup(json_string_value(stop));
        sp->n_stop = 1;
    } else if (json_is_array(stop)) {
        size_t ns = json_array_size(stop);
        sp->stop = calloc(ns ? ns : 1, sizeof *sp->stop);
        for (size_t i = 0; i < ns; i++) {
            const json_t *v = json_array_get(stop, i);
            if (!json_is_string(v) || json_string_length(v) == 0) {
                fail_sglang(f, 400, "%s.stop[%zu] must be a non-empty string", where, i);
                return false;
            }
            sp->stop[sp->n_stop++] = strdup(json_string_value(v));
        }
    } else if (stop && !json_is_null(stop)) {
        fail_sglang(f, 400, "%s.stop must be a string or a list of strings", where);
        return false;
    }
    const json_t *sti = json_object_get(o, "stop_token_ids");
    if (sti && !json_is_null(sti)) {
        char w[160];
        snprintf(w, sizeof w, "%s.stop_token_ids", where);
        if (!json_is_array(sti)) {
            fail_sglang(f, 400, "%s must be a list of token ids", w);
            return false;
        }
        if (!read_id_list(sti, n_vocab, w, &sp->stop_ids, &sp->n_stop_ids, f))
            return false;
    }
    const json_t *re = json_object_get(o, "regex");
    if (re && !json_is_null(re)) {
        if (!json_is_string(re)) {
            fail_sglang(f, 400, "%s.regex must be a string", where);
            return false;
        }
        sp->regex = strdup(json_string_value(re));
    }
    const char *unsupported[2] = {"json_schema", "ebnf"};
    for (int k = 0; k < 2; k++) {
        const json_t *v = json_object_get(o, unsupported[k]);
        if (v && !json_is_null(v)) {
            fail_sglang(f, 400, "%s.%s is not supported by this server; use regex", where, unsupported[k]);
            return false;
        }
    }
    return true;
}

static void gen_params_free(gen_params *sp) {
    for (size_t i = 0; i < sp->n_stop; i++)
        free(sp->stop[i]);
    free(sp->stop);
    free(sp->stop_ids);
    free(sp->regex);
}

void gen_request_free(gen_request *r) {
    for (size_t i = 0; i < r->n_items; i++) {
        free(r->items[i].text);
        free(r->items[i].ids);
        free(r->items[i].token_ids_logprob);
        gen_params_free(&r->items[i].sp);
    }
    free(r->items);
    free(r->rid);
    memset(r, 0, sizeof *r);
}

bool gen_request_parse(const char *body, size_t len, int32_t n_vocab, int cap, gen_request *out,
                       parse_failure *f) {
    memset(out, 0, sizeof *out);
    f->status = 0;
    f->body = NULL;
    json_t *root = parse_json_body(body, len, false, f);
    if (!root)
        return false;
    bool ok = gen_request_from_json(root, n_vocab, cap, out, f);
    json_decref(root);
    return ok;
}

bool gen_request_from_json(const json_t *root, int32_t n_vocab, int cap, gen_request *out, parse_failure *f) {
    memset(out, 0, sizeof *out);
    f->status = 0;
    f->body = NULL;
    bool ok = false;
    if (!json_is_object(root)) {
        fail_sglang(f, 400, "the body must be a JSON object");
        goto done;
    }
    const json_t *text = json_object_get(root, "text");
    const json_t *ids = json_object_get(root, "input_ids");
    if (json_is_null(text)) text = NULL;
    if (json_is_null(ids)) ids = NULL;
    if ((text != NULL) == (ids != NULL)) {
        fail_sglang(f, 400, "give exactly one of text and input_ids");
        goto done;
    }
    size_t n = 1;
    if (text) {
        if (json_is_array(text)) {
            out->batch = true;
            n = json_array_size(text);
        } else if (!json_is_string(text)) {
            fail_sglang(f, 400, "text must be a string or a list of strings");
            goto done;
        }
    } else {
        if (!json_is_array(ids)) {
            fail_sglang(f, 400, "input_ids must be a list of token ids or a list of such lists");
            goto done;
        }
        if (json_array_size(ids) > 0 && json_is_array(json_array_get(ids, 0))) {
            out->batch = true;
            n = json_array_size(ids);
        }
    }
    if (n == 0) {
        fail_sglang(f, 400, "an empty batch");
        goto done;
    }
    if (n > 1024) {
        fail_sglang(f, 413, "a batch of %zu items exceeds the limit of 1024", n);
        goto done;
    }
    out->items = calloc(n, sizeof *out->items);
    if (!out->items) {
        fail_sglang(f, 413, "out of memory");
        goto done;
    }
    out->n_items = n;
    const json_t *sps = json_object_get(root, "sampling_params");
    if (json_is_array(sps) && json_array_size(sps) != n) {
        fail_sglang(f, 400, "sampling_params has %zu entries for %zu prompts", json_array_size(sps), n);
        goto done;
    }
    const json_t *til = json_object_get(root, "token_ids_logprob");
    if (json_is_null(til)) til = NULL;
    bool til_nested = til && json_is_array(til) && json_array_size(til) > 0 && json_is_array(json_array_get(til, 0));
    if (til && !json_is_array(til)) {
        fail_sglang(f, 400, "token_ids_logprob must be a list of token ids or a list of such lists");
        goto done;
    }
    if (til_nested && json_array_size(til) != n) {
        fail_sglang(f, 400, "token_ids_logprob has %zu lists for %zu prompts", json_array_size(til), n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        gen_item *it = &out->items[i];
        char where[64];
        if (text) {
            const json_t *t = out->batch ? json_array_get(text, i) : text;
            if (!json_is_string(t)) {
                fail_sglang(f, 400, "text[%zu] must be a string", i);
                goto done;
            }
            it->text = strndup(json_string_value(t), json_string_length(t));
        } else {
            const json_t *l = out->batch ? json_array_get(ids, i) : ids;
            snprintf(where, sizeof where, out->batch ? "input_ids[%zu]" : "input_ids", i);
            if (!json_is_array(l)) {
                fail_sglang(f, 400, "%s must be a list of token ids", where);
                goto done;
            }
            if (!read_id_list(l, n_vocab, where, &it->ids, &it->n_ids, f))
                goto done;
            it->has_ids = true;
        }
        snprintf(where, sizeof where, json_is_array(sps) ? "sampling_params[%zu]" : "sampling_params", i);
        if (!parse_sampling(json_is_array(sps) ? json_array_get(sps, i) : sps, n_vocab, cap, where, &it->sp, f))
            goto done;
        if (til) {
            const json_t *l = til_nested ? json_array_get(til, i) : til;
            snprintf(where, sizeof where, til_nested ? "token_ids_logprob[%zu]" : "token_ids_logprob", i);
            if (!json_is_array(l)) {
                fail_sglang(f, 400, "%s must be a list of token ids", where);
                goto done;
            }
            if (!read_id_list(l, n_vocab, where, &it->token_ids_logprob, &it->n_token_ids_logprob, f))
                goto done;
            it->has_token_ids_logprob = true;
        }
    }
    long long lsl = -1, tln = 0;
    if (!get_bool(root, "return_logprob", &out->return_logprob, "body", f) ||
        !get_int(root, "logprob_start_len", &lsl, "body", f) || !get_int(root, "top_logprobs_num", &tln, "body", f) ||
        !get_bool(root, "return_text_in_logprobs", &out->return_text_in_logprobs, "body", f) ||
        !get_bool(root, "stream", &out->stream, "body", f))
        goto done;
    if (lsl < -1 || lsl > 1 << 30) {
        fail_sglang(f, 400, "logprob_start_len must be -1 or a prompt position");
        goto done;
    }
    if (tln < 0 || tln > 1000) {
        fail_sglang(f, 400, "top_logprobs_num must be in [0, 1000]");
        goto done;
    }
    out->logprob_start_len = (int)lsl;
    out->top_logprobs_num = (int)tln;
    /* The reply's size grows with tokens x logprobs asked: bound it. */
    if (out->return_logprob) {
        unsigned long long entries = 0;
        for (size_t i = 0; i < out->n_items; i++)
            entries += (unsigned long long)out->items[i].sp.max_new_tokens *
                       ((unsigned long long)out->top_logprobs_num + out->items[i].n_token_ids_logprob + 1);
        if (entries > GEN_MAX_LOGPROB_ENTRIES) {
            fail_sglang(f, 413, "max_new_tokens x (top_logprobs_num + token_ids_logprob) asks for %llu logprob "
                                "entries; the limit is %llu", entries, GEN_MAX_LOGPROB_ENTRIES);
            goto done;
        }
    }
    const json_t *rid = json_object_get(root, "rid");
    if (json_is_string(rid))
        out->rid = strdup(json_string_value(rid));
    ok = true;
done:
    if (!ok)
        gen_request_free(out);
    return ok;
}

/* ---- generation ---------------------------------------------------------------- */


/* Per-item generation state. */
typedef struct gen_state {
    gen_item *item;
    int32_t *seq;            /* prompt + generated ids */
    size_t n_prompt, n_seq, cap;
    size_t n_out;            /* generated ids */
    tl_strbuf out_bytes;     /* raw bytes of generated tokens (for regex) */
    regex_constraint *re;
    uint64_t rng; /* tl_rng_* stream (typellm/util.h) */
    bool done;
    json_t *finish_reason;
    int64_t cached_tokens;
    json_t *in_lp, *in_top, *in_ids_lp;    /* input logprob arrays */
    json_t *out_lp, *out_top, *out_ids_lp; /* output logprob arrays */
    size_t text_cut;         /* > 0: output text truncated at a stop string (bytes) */
    bool cut;
} gen_state;

static json_t *lp_triple(const tl_server *s, double lp, int32_t id, bool with_text) {
    json_t *t = json_array();
    json_array_append_new(t, isfinite(lp) ? json_real(lp) : json_real(-1e30));
    json_array_append_new(t, json_integer(id));
    if (with_text) {
        char buf[256];
        size_t n = tl_vocab_token_bytes(s->vocab, id, true, buf, sizeof buf);
        json_array_append_new(t, json_string_lossy(buf, n < sizeof buf ? n : sizeof buf));
    } else {
        json_array_append_new(t, json_null());
    }
    return t;
}

/* logprobs[v] = log_softmax(logits / T)[v] (T = 1 when greedy). */
static void log_softmax(const float *logits, int32_t n, double temp, double *out) {
    double inv = temp >= 1e-6 ? 1.0 / temp : 1.0;
    double mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        mx = fmax(mx, (double)logits[i] * inv);
    double sum = 0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)logits[i] * inv - mx);
    double lse = mx + log(sum);
    for (int32_t i = 0; i < n; i++)
        out[i] = (double)logits[i] * inv - lse;
}

/* Top-n ids by logprob (n small), best first. */
static size_t top_ids(const double *lp, int32_t nv, size_t n, int32_t *out) {
    size_t have = 0;
    for (int32_t i = 0; i < nv; i++) {
        if (have < n || lp[i] > lp[out[have - 1]]) {
            size_t at = have < n ? have++ : n - 1;
            while (at > 0 && lp[out[at - 1]] < lp[i]) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = i;
        }
    }
    return have;
}

static json_t *top_list(const tl_server *s, const double *lp, size_t n, bool with_text) {
    int32_t *ids = malloc(n * sizeof *ids);
    json_t *l = json_array();
    size_t k = ids ? top_ids(lp, s->n_vocab, n, ids) : 0;
    for (size_t i = 0; i < k; i++)
        json_array_append_new(l, lp_triple(s, lp[ids[i]], ids[i], with_text));
    free(ids);
    return l;
}

static json_t *ids_list(const tl_server *s, const double *lp, const gen_item *it, bool with_text) {
    json_t *l = json_array();
    for (size_t i = 0; i < it->n_token_ids_logprob; i++)
        json_array_append_new(l, lp_triple(s, lp[it->token_ids_logprob[i]], it->token_ids_logprob[i], with_text));
    return l;
}

/* Is token id allowed under the item's regex after the bytes so far? */
static bool regex_allows(const tl_server *s, gen_state *g, int32_t id, tl_strbuf *scratch) {
    if (tl_vocab_is_eog(s->vocab, id))
        return regex_constraint_complete(g->re, g->out_bytes.buf ? g->out_bytes.buf : "", g->out_bytes.len);
    char buf[256];
    size_t n = tl_vocab_token_bytes(s->vocab, id, false, buf, sizeof buf);
    if (n == 0 || n > sizeof buf)
        return false;
    tl_strbuf_clear(scratch);
    tl_strbuf_append(scratch, g->out_bytes.buf ? g->out_bytes.buf : "", g->out_bytes.len);
    tl_strbuf_append(scratch, buf, n);
    return regex_constraint_viable(g->re, scratch->buf, scratch->len);
}

/* Chooses the next token from lp (log_softmax at the item's temperature):
 * greedy, or top_k -> top_p -> min_p filtered sampling (tl_sample_weights),
 * always within the regex's allowed tokens. w and order are n_vocab scratch
 * arrays. Returns -1 when a regex leaves nothing allowed. */
static int32_t choose_token(const tl_server *s, gen_state *g, const double *lp, int32_t *order, double *w,
                            tl_strbuf *scratch) {
    const gen_params *sp = &g->item->sp;
    int32_t nv = s->n_vocab;
    int32_t best = 0;
    for (int32_t i = 1; i < nv; i++)
        if (lp[i] > lp[best])
            best = i;
    bool greedy = sp->temperature < 1e-6;
    if (greedy && (!g->re || regex_allows(s, g, best, scratch)))
        return best;
    for (int32_t i = 0; i < nv; i++)
        w[i] = exp(lp[i] - lp[best]); /* p_i / p_max, in [0, 1] */
    if (greedy) {
        /* Walk the weight bands best-first until a token the regex allows. */
        for (int b = 0; b < TL_SAMPLE_N_BANDS; b++) {
            size_t m = tl_sample_band(w, nv, b, order);
            for (size_t i = 0; i < m; i++)
                if (regex_allows(s, g, order[i], scratch))
                    return order[i];
        }
        return -1;
    }
    if (g->re)
        for (int32_t i = 0; i < nv; i++)
            if (w[i] > 0 && !regex_allows(s, g, i, scratch))
                w[i] = 0;
    tl_sample_filter f = {.top_k = sp->top_k, .top_p = sp->top_p, .min_p = sp->min_p};
    return tl_sample_weights(w, nv, &f, tl_rng_uniform(&g->rng), order);
}

static void detok_output(const tl_server *s, const gen_state *g, bool skip_special, tl_strbuf *out) {
    tl_error err;
    tl_strbuf_clear(out);
    tl_vocab_detokenize(s->vocab, g->seq + g->n_prompt, g->n_out, false, !skip_special, out, &err);
}

/* After appending token id: stop conditions. */
static void check_stop(const tl_server *s, gen_state *g, int32_t id, tl_strbuf *text) {
    const gen_params *sp = &g->item->sp;
    if (!sp->ignore_eos && tl_vocab_is_eog(s->vocab, id)) {
        g->done = true;
        g->finish_reason = json_pack("{s:s,s:i}", "type", "stop", "matched", id);
        return;
    }
    for (size_t i = 0; i < sp->n_stop_ids; i++)
        if (sp->stop_ids[i] == id) {
            g->done = true;
            g->finish_reason = json_pack("{s:s,s:i}", "type", "stop", "matched", id);
            return;
        }
    if (sp->n_stop) {
        detok_output(s, g, sp->skip_special_tokens, text);
        for (size_t i = 0; i < sp->n_stop; i++) {
            const char *hit = strstr(tl_strbuf_cstr(text), sp->stop[i]);
            if (hit) {
                g->done = true;
                g->cut = true;
                g->text_cut = (size_t)(hit - tl_strbuf_cstr(text));
                g->finish_reason = json_pack("{s:s,s:s}", "type", "stop", "matched", sp->stop[i]);
                return;
            }
        }
    }
    if (g->re) {
        /* A full match that no token can extend ends generation, as SGLang's FSM does. */
        const char *b = g->out_bytes.buf ? g->out_bytes.buf : "";
        if (regex_constraint_complete(g->re, b, g->out_bytes.len)) {
            /* Cheap test for extensibility: does any printable ASCII byte keep it viable? */
            tl_strbuf probe = TL_STRBUF_INIT;
            bool extensible = false;
            for (int c = 0x20; c < 0x7f && !extensible; c++) {
                tl_strbuf_clear(&probe);
                tl_strbuf_append(&probe, b, g->out_bytes.len);
                tl_strbuf_putc(&probe, (char)c);
                extensible = regex_constraint_viable(g->re, probe.buf, probe.len);
            }
            tl_strbuf_free(&probe);
            if (!extensible) {
                g->done = true;
                g->finish_reason = json_pack("{s:s,s:i}", "type", "stop", "matched", tl_vocab_eos(s->vocab));
                return;
            }
        }
    }
    if ((int)g->n_out >= sp->max_new_tokens) {
        g->done = true;
        g->finish_reason = json_pack("{s:s,s:i}", "type", "length", "length", sp->max_new_tokens);
    }
}

static bool seq_push(gen_state *g, int32_t id) {
    if (g->n_seq == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        int32_t *p = realloc(g->seq, nc * sizeof *p);
        if (!p)
            return false;
        g->seq = p;
        g->cap = nc;
    }
    g->seq[g->n_seq++] = id;
    return true;
}

/* Input logprobs for positions [start, n_prompt) of one item (SGLang: the
 * first prompt token has none). Runs as its own shared-backend job. */
static tl_status input_logprobs(tl_server *s, const gen_request *rq, gen_state *g, const sched_wait *w,
                                tl_usage *u, tl_error *err) {
    size_t n = g->n_prompt, start = (size_t)rq->logprob_start_len;
    if (start >= n)
        start = n - 1;
    size_t first_pos = start > 0 ? start - 1 : 0; /* logits at position p predict token p+1 */
    size_t k_last = n - first_pos;
    size_t max_floats = (size_t)64 << 20; /* 256 MiB of logits */
    if (k_last > max_floats / (size_t)s->n_vocab)
        return tl_error_set(err, TL_ERR_LIMIT,
                            "logprob_start_len %zu asks for %zu prompt positions; at most %zu fit this server's limit",
                            start, k_last, max_floats / (size_t)s->n_vocab);
    float *logits = malloc(k_last * (size_t)s->n_vocab * sizeof *logits);
    double *lp = malloc((size_t)s->n_vocab * sizeof *lp);
    if (!logits || !lp) {
        free(logits);
        free(lp);
        return tl_error_set(err, TL_ERR_NOMEM, "input logprobs: out of memory");
    }
    tl_status st = server_eval_last(s, w, g->seq, n, k_last, logits, u, err);
    if (st == TL_OK) {
        bool wt = rq->return_text_in_logprobs;
        for (size_t i = start; i < n; i++) {
            if (i == 0) {
                json_t *t = json_pack("[n,i,n]", g->seq[0]);
                if (wt) {
                    json_decref(t);
                    json_t *tr = lp_triple(s, 0, g->seq[0], true);
                    json_array_set_new(tr, 0, json_null());
                    t = tr;
                }
                json_array_append_new(g->in_lp, t);
                json_array_append_new(g->in_top, json_null());
                json_array_append_new(g->in_ids_lp, json_null());
                continue;
            }
            log_softmax(logits + (i - 1 - first_pos) * (size_t)s->n_vocab, s->n_vocab, g->item->sp.temperature, lp);
            json_array_append_new(g->in_lp, lp_triple(s, lp[g->seq[i]], g->seq[i], wt));
            json_array_append_new(g->in_top, rq->top_logprobs_num > 0 ? top_list(s, lp, (size_t)rq->top_logprobs_num, wt)
                                                                      : json_null());
            json_array_append_new(g->in_ids_lp, g->item->has_token_ids_logprob ? ids_list(s, lp, g->item, wt) : json_null());
        }
    }
    free(logits);
    free(lp);
    return st;
}

static json_t *item_result(const tl_server *s, const gen_request *rq, gen_state *g, double t0, size_t index,
                           bool with_index) {
    tl_strbuf text = TL_STRBUF_INIT;
    detok_output(s, g, g->item->sp.skip_special_tokens, &text);
    size_t tl = g->cut && g->text_cut < text.len ? g->text_cut : text.len;
    json_t *oids = json_array();
    for (size_t i = 0; i < g->n_out; i++)
        json_array_append_new(oids, json_integer(g->seq[g->n_prompt + i]));
    int64_t cached = g->cached_tokens;
    if (cached > (int64_t)g->n_prompt - 1)
        cached = (int64_t)g->n_prompt - 1;
    if (cached < 0)
        cached = 0;
    char idbuf[64];
    if (rq->rid && !rq->batch)
        snprintf(idbuf, sizeof idbuf, "%.60s", rq->rid);
    else
        snprintf(idbuf, sizeof idbuf, "%016llx%04zx", (unsigned long long)tl_now_ns(), index);
    json_t *meta = json_pack("{s:s,s:O,s:I,s:I,s:I,s:f}", "id", idbuf, "finish_reason",
                             g->finish_reason ? g->finish_reason : json_null(), "prompt_tokens",
                             (json_int_t)g->n_prompt, "completion_tokens", (json_int_t)g->n_out, "cached_tokens",
                             (json_int_t)cached, "e2e_latency", tl_now_s() - t0);
    if (rq->return_logprob) {
        json_object_set(meta, "input_token_logprobs", g->in_lp);
        json_object_set(meta, "output_token_logprobs", g->out_lp);
        json_object_set(meta, "input_top_logprobs", g->in_top);
        json_object_set(meta, "output_top_logprobs", g->out_top);
        json_object_set(meta, "input_token_ids_logprobs", g->in_ids_lp);
        json_object_set(meta, "output_token_ids_logprobs", g->out_ids_lp);
    }
    json_t *res = json_pack("{s:o,s:o,s:o}", "text", json_string_lossy(text.buf ? text.buf : "", tl), "output_ids",
                            oids, "meta_info", meta);
    if (with_index)
        json_object_set_new(res, "index", json_integer((json_int_t)index));
    tl_strbuf_free(&text);
    return res;
}

static void gen_state_free(gen_state *g) {
    free(g->seq);
    tl_strbuf_free(&g->out_bytes);
    regex_constraint_free(g->re);
    json_decref(g->finish_reason);
    json_decref(g->in_lp);
    json_decref(g->in_top);
    json_decref(g->in_ids_lp);
    json_decref(g->out_lp);
    json_decref(g->out_top);
    json_decref(g->out_ids_lp);
}

/* An item's reply object as /generate sends it (streams: one per token). */
tl_status gen_run(tl_server *s, gen_request *rq, const sched_wait *w, json_t **result, const gen_sink *sse,
                  int *http_status, tl_error *err) {
    double t0 = tl_now_s();
    size_t ni = rq->n_items;
    gen_state *gs = calloc(ni, sizeof *gs);
    float *logits = NULL;
    double *lp = NULL, *wts = NULL;
    int32_t *order = NULL;
    tl_seq *seqs = NULL;
    size_t *which = NULL;
    tl_strbuf scratch = TL_STRBUF_INIT, text = TL_STRBUF_INIT;
    tl_status st = TL_OK;
    *http_status = 400;
    if (!gs)
        return tl_error_set(err, TL_ERR_NOMEM, "generate: out of memory");
    uint64_t base_seed = tl_now_ns();
    unsigned long long entries = 0;
    for (size_t i = 0; i < ni; i++) {
        gen_state *g = &gs[i];
        gen_item *it = &rq->items[i];
        g->item = it;
        g->rng = it->sp.has_seed ? it->sp.seed : base_seed + i * 7919;
        g->in_lp = json_array();
        g->in_top = json_array();
        g->in_ids_lp = json_array();
        g->out_lp = json_array();
        g->out_top = json_array();
        g->out_ids_lp = json_array();
        if (it->has_ids) {
            for (size_t k = 0; k < it->n_ids; k++)
                if (!seq_push(g, it->ids[k])) {
                    st = tl_error_set(err, TL_ERR_NOMEM, "generate: out of memory");
                    goto done;
                }
        } else {
            int32_t *ids = NULL;
            size_t n = 0, bytes = strlen(it->text);
            if (bytes / s->max_token_bytes > (size_t)s->p.max_tokens) { /* cannot fit: refuse before tokenizing */
                st = tl_error_set(err, TL_ERR_LIMIT,
                                  "item %zu: the text (%zu bytes) is at least %zu tokens; the context (%d) or this "
                                  "server's prompt limit (%d) cannot hold it", i, bytes, bytes / s->max_token_bytes,
                                  s->n_ctx, s->p.max_tokens);
                *http_status = 400;
                goto done;
            }
            st = tl_vocab_tokenize(s->vocab, it->text, bytes, true, true, &ids, &n, err);
            if (st != TL_OK) {
                tl_error_wrap(err, "text[%zu]", i);
                goto done;
            }
            for (size_t k = 0; k < n; k++)
                seq_push(g, ids[k]);
            free(ids);
        }
        g->n_prompt = g->n_seq;
        if (g->n_prompt == 0) {
            st = tl_error_set(err, TL_ERR_INVALID, "item %zu: the prompt is empty", i);
            goto done;
        }
        if (g->n_prompt + (size_t)it->sp.max_new_tokens > (size_t)s->n_ctx ||
            g->n_prompt > (size_t)s->p.max_tokens) {
            st = tl_error_set(err, TL_ERR_LIMIT,
                              "item %zu: the prompt (%zu tokens) plus max_new_tokens (%d) exceeds the context (%d) "
                              "or this server's prompt limit (%d)",
                              i, g->n_prompt, it->sp.max_new_tokens, s->n_ctx, s->p.max_tokens);
            *http_status = 400;
            goto done;
        }
        size_t scored = (size_t)it->sp.max_new_tokens;
        if (rq->return_logprob && rq->logprob_start_len >= 0)
            scored += g->n_prompt - ((size_t)rq->logprob_start_len < g->n_prompt ? (size_t)rq->logprob_start_len : 0);
        if (rq->return_logprob)
            entries += (unsigned long long)scored * ((unsigned long long)rq->top_logprobs_num + it->n_token_ids_logprob + 1);
        if (entries > GEN_MAX_LOGPROB_ENTRIES) {
            st = tl_error_set(err, TL_ERR_LIMIT,
                              "(prompt positions from logprob_start_len + max_new_tokens) x items x (top_logprobs_num "
                              "+ token_ids_logprob + 1) asks for at least %llu logprob entries; the limit is %llu",
                              entries, GEN_MAX_LOGPROB_ENTRIES);
            *http_status = 413;
            goto done;
        }
        if (it->sp.regex) {
            g->re = regex_constraint_new(it->sp.regex, err);
            if (!g->re) {
                st = err ? err->code : TL_ERR_INVALID;
                tl_error_wrap(err, "sampling_params.regex");
                goto done;
            }
        }
    }
    if (ni * (size_t)s->n_vocab > ((size_t)64 << 20)) { /* 256 MiB of logits per step */
        st = tl_error_set(err, TL_ERR_LIMIT, "a batch of %zu prompts needs %zu MiB of logits per step; at most %zu "
                          "prompts fit this model", ni, ni * (size_t)s->n_vocab * 4 >> 20,
                          ((size_t)64 << 20) / (size_t)s->n_vocab);
        goto done;
    }
    *http_status = 500;
    logits = malloc(ni * (size_t)s->n_vocab * sizeof *logits);
    lp = malloc((size_t)s->n_vocab * sizeof *lp);
    wts = malloc((size_t)s->n_vocab * sizeof *wts);
    order = malloc((size_t)s->n_vocab * sizeof *order);
    seqs = calloc(ni, sizeof *seqs);
    which = calloc(ni, sizeof *which);
    if (!logits || !lp || !wts || !order || !seqs || !which) {
        st = tl_error_set(err, TL_ERR_NOMEM, "generate: out of memory");
        goto done;
    }
    /* Input logprobs first (their own eval of the prompt positions). */
    if (rq->return_logprob && rq->logprob_start_len >= 0) {
        for (size_t i = 0; i < ni; i++) {
            tl_usage u = {0};
            st = input_logprobs(s, rq, &gs[i], w, &u, err);
            if (st != TL_OK)
                goto done;
        }
    }
    /* max_new_tokens = 0: prefill only (warms the cache). */
    size_t k = 0;
    for (size_t i = 0; i < ni; i++) {
        if (gs[i].item->sp.max_new_tokens == 0) {
            memset(&seqs[k], 0, sizeof seqs[k]);
            seqs[k].ids = gs[i].seq;
            seqs[k].n = gs[i].n_seq;
            which[k++] = i;
            gs[i].done = true;
            gs[i].finish_reason = json_pack("{s:s,s:i}", "type", "length", "length", 0);
        }
    }
    if (k) {
        tl_usage u = {0};
        st = server_eval(s, w, seqs, k, &u, err);
        if (st != TL_OK)
            goto done;
        for (size_t j = 0; j < k; j++)
            gs[which[j]].cached_tokens = k == 1 ? u.cached_tokens : u.cached_tokens / (int64_t)k;
    }
    bool first_step = true;
    for (;;) {
        k = 0;
        for (size_t i = 0; i < ni; i++) {
            if (gs[i].done)
                continue;
            memset(&seqs[k], 0, sizeof seqs[k]);
            seqs[k].ids = gs[i].seq;
            seqs[k].n = gs[i].n_seq;
            seqs[k].logits = logits + k * (size_t)s->n_vocab;
            which[k++] = i;
        }
        if (k == 0)
            break;
        if (w->cancelled && w->cancelled(w->ctx)) {
            st = tl_error_set(err, TL_ERR_CANCELLED, "client went away");
            goto done;
        }
        if (w->deadline_s > 0 && tl_now_s() > w->deadline_s) {
            st = tl_error_set(err, TL_ERR_TIMEOUT, "request timed out after %zu tokens", gs[which[0]].n_out);
            goto done;
        }
        tl_usage u = {0};
        st = server_eval(s, w, seqs, k, &u, err);
        if (st != TL_OK)
            goto done;
        if (first_step) {
            metrics_first_token(s->metrics, tl_now_s() - t0);
            /* The prompt's cache hits: spread over the items (exact for one item). */
            int64_t per = k == 1 ? u.cached_tokens : u.cached_tokens / (int64_t)k;
            for (size_t j = 0; j < k; j++)
                gs[which[j]].cached_tokens = per;
            first_step = false;
        }
        for (size_t j = 0; j < k; j++) {
            gen_state *g = &gs[which[j]];
            const float *lg = logits + j * (size_t)s->n_vocab;
            log_softmax(lg, s->n_vocab, g->item->sp.temperature, lp);
            int32_t id = choose_token(s, g, lp, order, wts, &scratch);
            if (id < 0) {
                g->done = true;
                g->finish_reason = json_pack("{s:s,s:s}", "type", "abort", "message",
                                             "the regex allows no token here");
                continue;
            }
            if (!seq_push(g, id)) {
                st = tl_error_set(err, TL_ERR_NOMEM, "generate: out of memory");
                goto done;
            }
            g->n_out++;
            metrics_generated(s->metrics, 1);
            char buf[256];
            size_t nb = tl_vocab_token_bytes(s->vocab, id, false, buf, sizeof buf);
            tl_strbuf_append(&g->out_bytes, buf, nb < sizeof buf ? nb : sizeof buf);
            if (rq->return_logprob) {
                bool wt = rq->return_text_in_logprobs;
                json_array_append_new(g->out_lp, lp_triple(s, lp[id], id, wt));
                json_array_append_new(g->out_top, rq->top_logprobs_num > 0
                                                      ? top_list(s, lp, (size_t)rq->top_logprobs_num, wt)
                                                      : json_null());
                json_array_append_new(g->out_ids_lp,
                                      g->item->has_token_ids_logprob ? ids_list(s, lp, g->item, wt) : json_null());
            }
            check_stop(s, g, id, &text);
            if (sse && !sse->event(sse->ctx, which[j], item_result(s, rq, g, t0, which[j], rq->batch))) {
                st = tl_error_set(err, TL_ERR_CANCELLED, "client went away");
                goto done;
            }
        }
    }
    if (rq->batch) {
        *result = json_array();
        for (size_t i = 0; i < ni; i++)
            json_array_append_new(*result, item_result(s, rq, &gs[i], t0, i, false));
    } else {
        *result = item_result(s, rq, &gs[0], t0, 0, false);
    }
    if (sse) {
        /* Items that produced no token (max_new_tokens 0) still send one event. */
        for (size_t i = 0; i < ni; i++)
            if (!gs[i].n_out)
                sse->event(sse->ctx, i, item_result(s, rq, &gs[i], t0, i, rq->batch));
    }
    *http_status = 200;
done:
    for (size_t i = 0; i < ni; i++)
        gen_state_free(&gs[i]);
    free(gs);
    free(logits);
    free(lp);
    free(wts);
    free(order);
    free(seqs);
    free(which);
    tl_strbuf_free(&scratch);
    tl_strbuf_free(&text);
    return st;
}

/* SGLang's events: each item's reply object as a data: line. */
static bool sglang_event(void *ctx, size_t item, json_t *ev) {
    (void)item;
    return sse_send_json(ctx, ev);
}

/* A streaming /generate: runs on the stream thread, writes events to the pipe. */
typedef struct stream_job {
    tl_server *s;
    gen_request rq;
    sched_wait w;
} stream_job;

static void stream_generate(void *arg, sse_out *out) {
    stream_job *j = arg;
    gen_sink sink = {sglang_event, out};
    json_t *result = NULL;
    tl_error err = {0};
    int hs = 500;
    tl_status st = gen_run(j->s, &j->rq, &j->w, &result, &sink, &hs, &err);
    json_decref(result);
    if (st != TL_OK && st != TL_ERR_CANCELLED) {
        /* As SGLang: an error inside a stream is an event, then the end. */
        int code = generate_error_status(st, hs, HTTP_API_SGLANG);
        sse_send_json(out, json_pack("{s:{s:o,s:i}}", "error", "message", json_string_lossy(err.msg, strlen(err.msg)),
                                     "code", code));
    }
    if (st != TL_ERR_CANCELLED)
        sse_send_done(out);
    gen_request_free(&j->rq);
    free(j);
}

void handle_generate(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    gen_request rq;
    parse_failure f;
    if (!gen_request_parse(req->body, req->body_len, s->n_vocab, s->p.max_new_tokens, &rq, &f)) {
        reply_json(r, f.status, f.body);
        return;
    }
    if (!tl_server_slot_acquire(s)) {
        r->retry_after_s = 1;
        reply_sglang_error(r, 429, "the server is busy; retry shortly");
        gen_request_free(&rq);
        return;
    }
    sched_wait w = server_wait_for(s, req);
    if (rq.stream && req->allow_stream) {
        stream_job *j = calloc(1, sizeof *j);
        if (j) {
            j->s = s;
            j->rq = rq;
            j->w = w;
            j->w.cancelled = NULL; /* the pipe reports a departed client */
            if (server_stream_start(s, r, stream_generate, j))
                return; /* the stream thread owns j and the slot */
        }
        free(j);
        tl_server_slot_release(s);
        reply_sglang_error(r, 503, "cannot start a stream");
        gen_request_free(&rq);
        return;
    }
    json_t *result = NULL;
    sse_out buffered = SSE_OUT_BUFFER;
    gen_sink sink = {sglang_event, &buffered};
    tl_error err = {0};
    int hs = 500;
    tl_status st = gen_run(s, &rq, &w, &result, rq.stream ? &sink : NULL, &hs, &err);
    tl_server_slot_release(s);
    if (st != TL_OK) {
        reply_sglang_error(r, generate_error_status(st, hs, HTTP_API_SGLANG), "%s", err.msg);
    } else if (rq.stream) {
        json_decref(result);
        sse_send_done(&buffered);
        r->status = 200;
        r->content_type = "text/event-stream";
        tl_strbuf_clear(&r->body);
        tl_strbuf_append(&r->body, buffered.buf.buf ? buffered.buf.buf : "", buffered.buf.len);
    } else {
        reply_json(r, 200, result);
    }
    tl_strbuf_free(&buffered.buf);
    gen_request_free(&rq);
}

/* ---- the small endpoints -------------------------------------------------------- */

void handle_tokenize(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    parse_failure f;
    json_t *root = parse_json_body(req->body, req->body_len, false, &f);
    if (!root) {
        reply_json(r, f.status, f.body);
        return;
    }
    const json_t *prompt = json_object_get(root, "prompt");
    bool add_special = true;
    const json_t *as = json_object_get(root, "add_special_tokens");
    if (as && !json_is_boolean(as)) {
        reply_sglang_error(r, 400, "add_special_tokens must be true or false");
        json_decref(root);
        return;
    }
    if (as)
        add_special = json_is_true(as);
    bool list = json_is_array(prompt);
    if (!json_is_string(prompt) && !list) {
        reply_sglang_error(r, 400, "prompt must be a string or a list of strings");
        json_decref(root);
        return;
    }
    size_t n = list ? json_array_size(prompt) : 1;
    json_t *tokens = json_array(), *counts = json_array();
    for (size_t i = 0; i < n; i++) {
        const json_t *p = list ? json_array_get(prompt, i) : prompt;
        if (!json_is_string(p)) {
            reply_sglang_error(r, 400, "prompt[%zu] must be a string", i);
            goto out;
        }
        int32_t *ids = NULL;
        size_t nid = 0;
        tl_error err = {0};
        if (tl_vocab_tokenize(s->vocab, json_string_value(p), json_string_length(p), add_special, true, &ids, &nid,
                              &err) != TL_OK) {
            reply_sglang_error(r, 400, "prompt: %s", err.msg);
            goto out;
        }
        json_t *l = json_array();
        for (size_t k = 0; k < nid; k++)
            json_array_append_new(l, json_integer(ids[k]));
        free(ids);
        json_array_append_new(tokens, l);
        json_array_append_new(counts, json_integer((json_int_t)nid));
    }
    reply_json(r, 200, json_pack("{s:O,s:O,s:o}", "tokens", list ? tokens : json_array_get(tokens, 0), "count",
                                 list ? counts : json_array_get(counts, 0), "max_model_len",
                                 s->n_ctx > 0 ? json_integer(s->n_ctx) : json_null())); /* 0: an upstream that does not say */
out:
    json_decref(tokens);
    json_decref(counts);
    json_decref(root);
}

void handle_detokenize(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    parse_failure f;
    json_t *root = parse_json_body(req->body, req->body_len, false, &f);
    if (!root) {
        reply_json(r, f.status, f.body);
        return;
    }
    const json_t *toks = json_object_get(root, "tokens");
    bool skip = true;
    const json_t *sk = json_object_get(root, "skip_special_tokens");
    if (json_is_boolean(sk))
        skip = json_is_true(sk);
    if (!json_is_array(toks)) {
        reply_sglang_error(r, 400, "tokens must be a list of token ids");
        json_decref(root);
        return;
    }
    bool nested = json_array_size(toks) > 0 && json_is_array(json_array_get(toks, 0));
    size_t n = nested ? json_array_size(toks) : 1;
    json_t *texts = json_array();
    for (size_t i = 0; i < n; i++) {
        int32_t *ids = NULL;
        size_t nid = 0;
        char where[48];
        snprintf(where, sizeof where, nested ? "tokens[%zu]" : "tokens", i);
        const json_t *l = nested ? json_array_get(toks, i) : toks;
        if (!json_is_array(l)) {
            reply_sglang_error(r, 400, "%s must be a list of token ids", where);
            goto out;
        }
        if (!read_id_list(l, s->n_vocab, where, &ids, &nid, &f)) {
            free(ids);
            reply_json(r, f.status, f.body);
            goto out;
        }
        tl_strbuf out = TL_STRBUF_INIT;
        tl_error err = {0};
        tl_vocab_detokenize(s->vocab, ids, nid, true, !skip, &out, &err);
        json_array_append_new(texts, json_string_lossy(out.buf ? out.buf : "", out.len));
        tl_strbuf_free(&out);
        free(ids);
    }
    reply_json(r, 200, json_pack("{s:O}", "text", nested ? texts : json_array_get(texts, 0)));
out:
    json_decref(texts);
    json_decref(root);
}

/* Exactly SGLang's /model_info (python/sglang/srt/entrypoints/http_server.py,
 * v0.5): no extra fields a client could come to rely on. The chat template,
 * vocabulary size and served name are not in it; clients get the name from
 * /v1/models and the template and vocabulary from a local copy of the model. */
void handle_model_info(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    (void)req;
    const char *path = s->p.model_path ? s->p.model_path : tl_model_name(s->model);
    json_t *info = json_pack("{s:o,s:o,s:b,s:n,s:s,s:b,s:b,s:s,s:[s]}", "model_path",
                             json_string_lossy(path, strlen(path)), "tokenizer_path",
                             json_string_lossy(path, strlen(path)), "is_generation", 1, "preferred_sampling_params",
                             "weight_version", "default", "has_image_understanding", 0, "has_audio_understanding", 0,
                             "model_type", tl_model_arch(s->model), "architectures", tl_model_arch(s->model));
    reply_json(r, 200, info);
}

void handle_health_generate(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    sched_wait w = server_wait_for(s, req);
    tl_error err = {0};
    if (s->upstream) { /* the engine behind this server computes */
        if (upstream_check(s->upstream, &w, &err) != TL_OK)
            reply_sglang_error(r, 503, "health_generate failed: %s", err.msg);
        else
            reply_health_ok(r);
        return;
    }
    int32_t bos = tl_vocab_bos(s->vocab);
    int32_t id = bos >= 0 ? bos : 0;
    float *logits = malloc((size_t)s->n_vocab * sizeof *logits);
    tl_seq seq = {.ids = &id, .n = 1, .logits = logits};
    tl_status st = logits ? server_eval(s, &w, &seq, 1, NULL, &err) : TL_ERR_NOMEM;
    free(logits);
    if (st != TL_OK) {
        reply_sglang_error(r, 503, "health_generate failed: %s", err.msg);
        return;
    }
    reply_health_ok(r);
}

void handle_flush_cache(tl_server *s, const tl_http_request *req, tl_http_reply *r) {
    (void)req;
    tl_error err = {0};
    if (tl_backend_flush(s->shared, &err) != TL_OK) {
        reply_sglang_error(r, 503, "flush_cache: %s", err.msg);
        return;
    }
    r->status = 200;
    r->content_type = "text/plain";
    tl_strbuf_clear(&r->body);
    tl_strbuf_puts(&r->body, "Cache flushed.\n");
}
