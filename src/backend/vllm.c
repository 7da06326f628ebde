/* vllm.c: vLLM's OpenAI-compatible server as a backend (--engine vllm).
 *
 * What is used (vllm/entrypoints/openai/protocol.py, CompletionRequest and
 * CompletionResponseChoice; see docs/engines.md for the version range):
 *  - POST /v1/completions with `prompt` a list of token-id lists: one request
 *    carries every (context, candidate) pair as its own prompt, the
 *    candidate as the last prompt token, and `prompt_logprobs` 0 returns each
 *    prompt token's log-probability under the model (full-vocabulary
 *    log-softmax of the raw logits): the last entry of
 *    choices[i].prompt_logprobs, keyed by the candidate's id, is its exact
 *    logprob. The prompts share their prefix (automatic prefix caching may
 *    serve it; versions that need the prompt's logits recompute it). So a
 *    whole wave of scoring is one request.
 *  - Generation under a regex: `structured_outputs` {"regex"} with
 *    `return_token_ids` (choices[0].token_ids).
 *  - POST /tokenize {model, prompt, add_special_tokens} -> {tokens}, POST
 *    /detokenize {model, tokens} -> {prompt}; GET /v1/models (the served
 *    name every request must carry, max_model_len), GET /version.
 * vLLM sends no chat template, so without the model's GGUF here
 * (--tokenizer) the caller names one, as for SGLang. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/remote.h"
#include "util/error.h"
#include "util/strbuf.h"

#define ENGINE "vllm"
/* One prompt per candidate: a mask over most of the vocabulary (a free string
 * step) would be tens of thousands of prompts; refused above this many. */
#define VL_MAX_PROMPTS 2048

typedef tl_remote_impl vl_impl;

static const char *version_of(const vl_impl *im) { return im->version ? im->version : "unknown version"; }

static void add_usage(const json_t *rep, tl_usage *u) {
    if (!u)
        return;
    const json_t *us = json_object_get(rep, "usage");
    json_int_t p = json_integer_value(json_object_get(us, "prompt_tokens"));
    json_int_t c = json_integer_value(json_object_get(json_object_get(us, "prompt_tokens_details"), "cached_tokens"));
    u->prompt_tokens += p;
    u->cached_tokens += c;
    u->computed_tokens += p - c;
    u->output_tokens += json_integer_value(json_object_get(us, "completion_tokens"));
    u->forward_passes += 1;
}

/* The choice of prompt i (vLLM orders choices by index; do not rely on it). */
static const json_t *choice_of(const json_t *choices, size_t i) {
    const json_t *c = json_array_get(choices, i);
    if (json_integer_value(json_object_get(c, "index")) == (json_int_t)i)
        return c;
    for (size_t k = 0; k < json_array_size(choices); k++)
        if (json_integer_value(json_object_get(json_array_get(choices, k), "index")) == (json_int_t)i)
            return json_array_get(choices, k);
    return NULL;
}

static tl_status vl_score(tl_backend *b, tl_score_req *reqs, size_t k, tl_usage *usage, tl_error *err) {
    vl_impl *im = b->impl;
    size_t total = 0;
    for (size_t r = 0; r < k; r++)
        total += reqs[r].n_cands;
    if (total > VL_MAX_PROMPTS)
        return tl_error_set(err, TL_ERR_UNSUPPORTED,
                            ENGINE ": scoring %zu candidates at once (a generated string's step over most of the "
                                   "vocabulary) is more than %d prompts: over vLLM, use enums, numbers and patterns, "
                                   "or llama.cpp's server / the embedded engine for free strings",
                            total, VL_MAX_PROMPTS);
    json_t *prompts = json_array();
    total = 0;
    for (size_t r = 0; prompts && r < k; r++)
        for (size_t c = 0; c < reqs[r].n_cands; c++) {
            json_t *p = tl_remote_ids_json(reqs[r].ids, reqs[r].n);
            json_array_append_new(p, json_integer(reqs[r].cands[c]));
            json_array_append_new(prompts, p);
            total++;
        }
    json_t *req = json_pack("{s:s,s:o,s:i,s:f,s:i}", "model", im->model_name, "prompt", prompts, "max_tokens", 1,
                            "temperature", 0.0, "prompt_logprobs", 0);
    if (!req)
        return tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    json_t *rep = NULL;
    tl_status st = tl_remote_call(&im->rem, "/v1/completions", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *choices = json_object_get(rep, "choices");
    if (!json_is_array(choices) || json_array_size(choices) != total) {
        json_decref(rep);
        return tl_error_set(err, TL_ERR_REMOTE, ENGINE ": /v1/completions: expected /choices with %zu entries", total);
    }
    size_t i = 0;
    for (size_t r = 0; r < k && !st; r++)
        for (size_t c = 0; c < reqs[r].n_cands && !st; c++, i++) {
            const json_t *pl = json_object_get(choice_of(choices, i), "prompt_logprobs");
            const json_t *last = json_array_get(pl, json_array_size(pl) ? json_array_size(pl) - 1 : 0);
            char key[16];
            snprintf(key, sizeof key, "%d", (int)reqs[r].cands[c]);
            const json_t *lp = json_object_get(json_object_get(last, key), "logprob");
            if (!json_is_array(pl) || json_array_size(pl) != reqs[r].n + 1 || !json_is_number(lp))
                st = tl_error_set(err, TL_ERR_REMOTE,
                                  ENGINE ": /v1/completions: /choices/%zu/prompt_logprobs/%zu/%s/logprob is missing "
                                         "(vLLM %s: prompt_logprobs is needed)",
                                  i, reqs[r].n, key, version_of(im));
            else
                reqs[r].logprobs[c] = json_number_value(lp);
        }
    if (!st)
        add_usage(rep, usage);
    json_decref(rep);
    return st;
}

static tl_status vl_generate_regex(tl_backend *b, const int32_t *ids, size_t n, const char *regex, int max_tokens,
                                   double temperature, uint64_t seed, int32_t **out_ids, size_t *n_out,
                                   tl_usage *usage, tl_error *err) {
    vl_impl *im = b->impl;
    *out_ids = NULL;
    *n_out = 0;
    json_t *req = json_pack("{s:s,s:[o],s:i,s:f,s:I,s:{s:s},s:b}", "model", im->model_name, "prompt",
                            tl_remote_ids_json(ids, n), "max_tokens", max_tokens, "temperature", temperature, "seed",
                            (json_int_t)(seed & 0x7fffffffu), "structured_outputs", "regex", regex, "return_token_ids",
                            1);
    if (!req)
        return tl_error_set(err, TL_ERR_INVALID, ENGINE ": the regex is not valid UTF-8");
    json_t *rep = NULL;
    tl_status st = tl_remote_call(&im->rem, "/v1/completions", req, &rep, NULL, err);
    json_decref(req);
    if (st)
        return st;
    const json_t *tok = json_object_get(choice_of(json_object_get(rep, "choices"), 0), "token_ids");
    if (!json_is_array(tok))
        st = tl_error_set(err, TL_ERR_REMOTE,
                          ENGINE ": /v1/completions: /choices/0/token_ids is missing (vLLM %s: return_token_ids and "
                                 "structured_outputs need vLLM 0.10.2 or later)",
                          version_of(im));
    else
        st = tl_remote_read_ids(&im->rem, tok, "/v1/completions: /choices/0/token_ids", out_ids, n_out, err);
    if (!st) {
        add_usage(rep, usage);
        if (usage && *n_out > 1)
            usage->forward_passes += (int64_t)*n_out - 1;
    }
    json_decref(rep);
    return st;
}

static tl_status vl_tokenize(tl_backend *b, const char *text, size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, tl_error *err) {
    vl_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_tokenize(im->local_vocab, text, len, add_special, parse_special, ids, n, err);
    if (tl_remote_tok_get(&im->rem, (char)add_special, text, len, ids, n))
        return TL_OK;
    /* a server tokenizer parses special-token text, as HF tokenizers do */
    tl_status st = tl_remote_post_ids(&im->rem, "/tokenize",
                                      json_pack("{s:s,s:s%,s:b}", "model", im->model_name, "prompt", text, len,
                                                "add_special_tokens", add_special),
                                      "tokens", ids, n, err);
    if (!st)
        tl_remote_tok_put(&im->rem, (char)add_special, text, len, *ids, *n);
    return st;
}

static tl_status vl_detokenize(tl_backend *b, const int32_t *ids, size_t n, tl_strbuf *out, tl_error *err) {
    vl_impl *im = b->impl;
    if (im->local_vocab)
        return tl_vocab_detokenize(im->local_vocab, ids, n, false, true, out, err);
    return tl_remote_post_text(&im->rem, "/detokenize",
                               json_pack("{s:s,s:o}", "model", im->model_name, "tokens", tl_remote_ids_json(ids, n)),
                               "prompt", out, err);
}

#define vl_free tl_remote_backend_free

static const tl_backend_ops vllm_ops = {
    .kind = "vllm",
    .free = vl_free,
    .tokenize = vl_tokenize,
    .detokenize = vl_detokenize,
    .score = vl_score,
    .next_logits = NULL,
    .generate_regex = vl_generate_regex,
    .forward = tl_remote_backend_forward,
};

tl_status tl_backend_vllm_new(const tl_sglang_params *params, bool only_vllm, const tl_call_limits *limits,
                              tl_backend **out, tl_error *err) {
    tl_backend *b = NULL;
    tl_status st = tl_remote_backend_new(&vllm_ops, ENGINE, "/v1/completions", params, limits, &b, err);
    if (st)
        return st;
    *out = NULL; /* set again once the server has answered */
    vl_impl *im = b->impl;
    json_t *models = NULL, *ver = NULL;
    if (!st) {
        st = tl_remote_call(&im->rem, "/v1/models", NULL, &models, NULL, err);
        if (st)
            tl_error_wrap(err, ENGINE ": cannot use the server at %s", im->rem.base);
    }
    const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
    const char *name = json_string_value(json_object_get(m0, "id"));
    if (!st && !name)
        st = tl_error_set(err, TL_ERR_REMOTE, ENGINE ": %s/v1/models lacks /data/0/id (the served model name)",
                          im->rem.base);
    const char *owner = json_string_value(json_object_get(m0, "owned_by"));
    if (!st && only_vllm && (!owner || strcmp(owner, "vllm")))
        st = tl_error_set(err, TL_ERR_UNSUPPORTED, ENGINE ": %s/v1/models does not name vllm as the owner",
                          im->rem.base);
    if (!st) {
        im->model_name = strdup(name);
        b->n_ctx = (int32_t)json_integer_value(json_object_get(m0, "max_model_len"));
        tl_error verr = {0};
        if (tl_remote_call(&im->rem, "/version", NULL, &ver, NULL, &verr) == TL_OK &&
            json_is_string(json_object_get(ver, "version")))
            im->version = strdup(json_string_value(json_object_get(ver, "version")));
        if (!im->model_name)
            st = tl_error_set(err, TL_ERR_NOMEM, ENGINE ": out of memory");
    }
    if (!st && params->tokenizer_path) {
        st = tl_vocab_load_file(params->tokenizer_path, &im->local_vocab, err);
        if (st)
            tl_error_wrap(err, ENGINE ": --tokenizer %s", params->tokenizer_path);
        else if (tl_vocab_chat_template(im->local_vocab))
            im->chat_template = strdup(tl_vocab_chat_template(im->local_vocab));
    }
    json_decref(models);
    json_decref(ver);
    if (st) {
        vl_free(b);
        return st;
    }
    b->vocab = im->local_vocab;
    b->n_vocab = im->local_vocab ? tl_vocab_n_tokens(im->local_vocab) : 0;
    b->template_from_caller = im->local_vocab == NULL;
    b->model_name = im->model_name;
    b->chat_template = im->chat_template;
    b->version = im->version;
    b->caps = TL_CAP_EXACT_CANDIDATES | TL_CAP_PROMPT_LOGPROBS | TL_CAP_REGEX | TL_CAP_CACHE_REPORT;
    *out = b;
    return TL_OK;
}
