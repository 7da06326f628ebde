/* sglang.c: the remote backend: an SGLang server (or `typellm serve`, which
 * speaks the same API) over HTTP with libcurl.
 *
 * Everything is sent as token ids (input_ids), so the server's prefix cache
 * sees exactly the sequences the decision layer built. A scoring call is one
 * POST /generate of the whole batch as a list: max_new_tokens 1, temperature
 * 0 (logprobs are then plain log_softmax), return_logprob with
 * token_ids_logprob = the candidates, logprob_start_len -1 (anything >= 0
 * would cap cache reuse). Tokenization runs on a local tokenizer GGUF when
 * one is given (no round trip), else on the server's /tokenize and
 * /detokenize, each distinct text once (a per-backend cache). Only what real
 * SGLang serves is used: /model_info (or /get_model_info), /v1/models for
 * the served name, /tokenize, /detokenize, /generate; SGLang does not send
 * the chat template, so the caller must give one (template_from_caller).
 * Retries and timeouts are remote.c's; any other surprise is a TL_ERR_REMOTE
 * naming the endpoint and the JSON path that was wrong. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/remote.h"
#include "util/error.h"
#include "util/strbuf.h"

typedef struct sglang_impl {
    tl_remote rem;
    bool remote_tokenizer; /* the server answers /tokenize and /detokenize */
    tl_vocab *local_vocab; /* from tokenizer_path, or NULL */
    char *model_name;
    char *chat_template;
} sglang_impl;

static tl_status call_json(sglang_impl *im, const char *path, json_t *j, json_t **out, long *status_out,
                           tl_error *err) {
    return tl_remote_call(&im->rem, path, j, out, status_out, err);
}

static json_t *ids_json(const int32_t *ids, size_t n) { return tl_remote_ids_json(ids, n); }

/* ---- ops ------------------------------------------------------------------ */

static tl_status sg_tokenize_remote(sglang_impl *im, const char *text, size_t len, bool add_special, int32_t **ids,
                                    size_t *n, tl_error *err);

static tl_status sg_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, tl_error *err) {
    sglang_impl *im = b->impl;
    if (im->local_vocab) /* the same model's tokenizer, here: no round trip */
        return tl_vocab_tokenize(im->local_vocab, text, len, add_special, parse_special, ids, n, err);
    if (tl_remote_tok_get(&im->rem, (char)add_special, text, len, ids, n))
        return TL_OK;
    tl_status st = sg_tokenize_remote(im, text, len, add_special, ids, n, err);
    if (!st)
        tl_remote_tok_put(&im->rem, (char)add_special, text, len, *ids, *n);
    return st;
}

static tl_status sg_tokenize_remote(sglang_impl *im, const char *text, size_t len, bool add_special, int32_t **ids,
                                    size_t *n, tl_error *err) {
    /* A server tokenizer always parses special-token text (as HF tokenizers do). */
    json_t *req = json_pack("{s:s%,s:b}", "prompt", text, len, "add_special_tokens", add_special);
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, "sglang: /tokenize: text is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = call_json(im, "/tokenize", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *toks = json_object_get(rep, "tokens");
    if (!json_is_array(toks)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /tokenize: reply lacks the list /tokens");
    }
    size_t m = json_array_size(toks);
    *ids = malloc((m ? m : 1) * sizeof **ids);
    *n = 0;
    for (size_t i = 0; *ids && i < m; i++) {
        const json_t *v = json_array_get(toks, i);
        if (!json_is_integer(v)) {
            free(*ids);
            *ids = NULL;
            json_decref(rep);
            return tl_error_set(err, TL_ERR_REMOTE, "sglang: /tokenize: /tokens/%zu is not an integer", i);
        }
        (*ids)[(*n)++] = (int32_t)json_integer_value(v);
    }
    json_decref(rep);
    return *ids ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
}

static tl_status sg_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    sglang_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_detokenize(im->local_vocab, ids, n, false, true, out, err);
    json_t *req = json_pack("{s:o,s:b}", "tokens", ids_json(ids, n), "skip_special_tokens", 0);
    json_t *rep = NULL;
    tl_status st = call_json(im, "/detokenize", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *t = json_object_get(rep, "text");
    if (!json_is_string(t)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /detokenize: reply lacks the string /text");
    }
    tl_strbuf_append(out, json_string_value(t), json_string_length(t));
    json_decref(rep);
    return TL_OK;
}

/* Adds meta_info's token counts to usage. */
static void add_usage(const json_t *meta, tl_usage *u) {
    if (!u)
        return;
    json_int_t p = json_integer_value(json_object_get(meta, "prompt_tokens"));
    json_int_t c = json_integer_value(json_object_get(meta, "cached_tokens"));
    json_int_t o = json_integer_value(json_object_get(meta, "completion_tokens"));
    u->prompt_tokens += p;
    u->cached_tokens += c;
    u->computed_tokens += p - c;
    u->output_tokens += o;
}

static tl_status sg_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    sglang_impl *im = b->impl;
    json_t *ids = json_array(), *cands = json_array();
    for (size_t i = 0; i < k; i++) {
        json_array_append_new(ids, ids_json(reqs[i].ids, reqs[i].n));
        json_array_append_new(cands, ids_json(reqs[i].cands, reqs[i].n_cands));
    }
    json_t *req = json_pack("{s:o,s:{s:i,s:f},s:b,s:o,s:i}", "input_ids", ids, "sampling_params", "max_new_tokens", 1,
                            "temperature", 0.0, "return_logprob", 1, "token_ids_logprob", cands, "logprob_start_len", -1);
    json_t *rep = NULL;
    tl_status st = call_json(im, "/generate", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    if (!json_is_array(rep) || json_array_size(rep) != k) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: expected a list of %zu results", k);
    }
    for (size_t i = 0; i < k && st == TL_OK; i++) {
        const json_t *meta = json_object_get(json_array_get(rep, i), "meta_info");
        const json_t *pos = json_array_get(json_object_get(meta, "output_token_ids_logprobs"), 0);
        if (!json_is_array(pos)) {
            st = tl_error_set(err, TL_ERR_REMOTE,
                              "sglang: /generate: /%zu/meta_info/output_token_ids_logprobs/0 is missing (the server "
                              "must support token_ids_logprob)",
                              i);
            break;
        }
        for (size_t c = 0; c < reqs[i].n_cands; c++)
            reqs[i].logprobs[c] = NAN;
        for (size_t e = 0; e < json_array_size(pos); e++) {
            const json_t *t = json_array_get(pos, e);
            const json_t *lp = json_array_get(t, 0);
            const json_t *id = json_array_get(t, 1);
            if (!json_is_number(lp) || !json_is_integer(id)) {
                st = tl_error_set(err, TL_ERR_REMOTE,
                                  "sglang: /generate: /%zu/meta_info/output_token_ids_logprobs/0/%zu is not "
                                  "[logprob, id, text]",
                                  i, e);
                break;
            }
            for (size_t c = 0; c < reqs[i].n_cands; c++)
                if (reqs[i].cands[c] == (int32_t)json_integer_value(id))
                    reqs[i].logprobs[c] = json_number_value(lp);
        }
        for (size_t c = 0; st == TL_OK && c < reqs[i].n_cands; c++)
            if (isnan(reqs[i].logprobs[c]))
                st = tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: result %zu has no logprob for token %d", i,
                                  reqs[i].cands[c]);
        add_usage(meta, usage);
    }
    if (usage && st == TL_OK)
        usage->forward_passes += 1;
    json_decref(rep);
    return st;
}

static tl_status sg_generate_regex(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                   double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                   tl_usage *usage, tl_error *err) {
    sglang_impl *im = b->impl;
    json_t *req = json_pack("{s:o,s:{s:i,s:f,s:s,s:I}}", "input_ids", ids_json(ids, n), "sampling_params",
                            "max_new_tokens", max_tokens, "temperature", temperature, "regex", regex, "sampling_seed",
                            (json_int_t)(seed & 0x7fffffffffffffffull));
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, "sglang: regex is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = call_json(im, "/generate", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *oids = json_object_get(rep, "output_ids");
    if (!json_is_array(oids)) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, "sglang: /generate: reply lacks the list /output_ids");
    }
    size_t m = json_array_size(oids);
    *out_ids = malloc((m ? m : 1) * sizeof **out_ids);
    *n_out = 0;
    for (size_t i = 0; *out_ids && i < m; i++)
        (*out_ids)[(*n_out)++] = (int32_t)json_integer_value(json_array_get(oids, i));
    add_usage(json_object_get(rep, "meta_info"), usage);
    if (usage)
        usage->forward_passes += (int64_t)m;
    json_decref(rep);
    return *out_ids ? TL_OK : tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
}

static void sg_free(tl_backend *b) {
    if (!b)
        return;
    sglang_impl *im = b->impl;
    if (im) {
        tl_remote_free(&im->rem);
        tl_vocab_free(im->local_vocab);
        free(im->model_name);
        free(im->chat_template);
        free(im);
    }
    free(b);
}

static const tl_backend_ops sglang_ops = {
    .kind = "sglang",
    .free = sg_free,
    .tokenize = sg_tokenize,
    .detokenize = sg_detokenize,
    .score = sg_score,
    .next_logits = NULL,
    .generate_regex = sg_generate_regex,
    .forward = tl_remote_backend_forward,
};

tl_status tl_backend_sglang_new(const tl_sglang_params *params, tl_backend **out, tl_error *err) {
    return tl_backend_sglang_new_limited(params, NULL, out, err);
}

tl_status tl_backend_sglang_new_limited(const tl_sglang_params *params, const tl_call_limits *limits, tl_backend **out,
                                        tl_error *err) {
    *out = NULL;
    if (!params)
        return tl_error_set(err, TL_ERR_INVALID, "sglang: no parameters");
    tl_backend *b = calloc(1, sizeof *b);
    sglang_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        return tl_error_set(err, TL_ERR_NOMEM, "sglang: out of memory");
    }
    b->ops = &sglang_ops;
    b->impl = im;
    tl_status st = tl_remote_init(&im->rem, "sglang", "/generate", params->base_url, params->api_key,
                                  params->timeout_s, params->max_retries, &b->requests, err);
    if (!st)
        tl_remote_set_limits(&im->rem, limits);
    if (!st && params->tokenizer_path) {
        st = tl_vocab_load_file(params->tokenizer_path, &im->local_vocab, err);
        if (st)
            tl_error_wrap(err, "sglang: --tokenizer %s", params->tokenizer_path);
    }
    /* Who is there: /model_info (older servers: /get_model_info). */
    json_t *info = NULL;
    long status = 0;
    if (!st) {
        st = call_json(im, "/model_info", NULL, &info, &status, err);
        if (st && status == 404)
            st = call_json(im, "/get_model_info", NULL, &info, &status, err);
        if (st)
            tl_error_wrap(err, "sglang: cannot use the server at %s", im->rem.base);
    }
    if (!st) {
        /* SGLang's /model_info names the path it loaded; the served name
         * (what OpenAI-style replies call the model) is /v1/models' id. */
        const char *path = json_string_value(json_object_get(info, "model_path"));
        json_t *models = NULL;
        tl_error merr = {0};
        const char *name = NULL;
        if (call_json(im, "/v1/models", NULL, &models, NULL, &merr) == TL_OK)
            name = json_string_value(json_object_get(json_array_get(json_object_get(models, "data"), 0), "id"));
        im->model_name = strdup(name ? name : path ? path : "sglang");
        json_decref(models);
        const char *tmpl = im->local_vocab ? tl_vocab_chat_template(im->local_vocab) : NULL;
        im->chat_template = tmpl ? strdup(tmpl) : NULL;
        b->n_vocab = im->local_vocab ? tl_vocab_n_tokens(im->local_vocab) : 0; /* 0: unknown, ids unchecked */
        json_decref(info);
        if (!im->local_vocab) {
            /* Probe the tokenizer endpoint (it answers with the same list for any text). */
            json_t *probe = json_pack("{s:s,s:b}", "prompt", "a", "add_special_tokens", 0), *rep = NULL;
            tl_error perr = {0};
            long pst = 0;
            im->remote_tokenizer = call_json(im, "/tokenize", probe, &rep, &pst, &perr) == TL_OK &&
                                   json_is_array(json_object_get(rep, "tokens"));
            json_decref(probe);
            json_decref(rep);
            if (!im->remote_tokenizer)
                st = tl_error_set(err, TL_ERR_UNSUPPORTED,
                                  "sglang: %s has no /tokenize (%s); pass --tokenizer M.gguf with the same model's "
                                  "tokenizer",
                                  im->rem.base, perr.msg[0] ? perr.msg : "unexpected reply");
        }
    }
    if (st) {
        sg_free(b);
        return st;
    }
    b->vocab = im->local_vocab;
    /* With the model's own GGUF here, its template (or its lack of one) is
     * known; otherwise only the caller can say. */
    b->template_from_caller = im->local_vocab == NULL;
    b->model_name = im->model_name;
    b->chat_template = im->chat_template;
    b->caps = TL_CAP_EXACT_CANDIDATES | TL_CAP_PROMPT_LOGPROBS | TL_CAP_REGEX | TL_CAP_CACHE_REPORT;
    *out = b;
    return TL_OK;
}
